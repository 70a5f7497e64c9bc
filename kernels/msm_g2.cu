// cuzk kernels: G2 MSM instantiation (F = Fp2).
#include "msm/stream.cuh"
namespace cuzk {
template cuzk_kresult msm_run<fp2_t>(dev_ctx *, const void *, size_t, size_t, const void *,
                                     const void *, size_t, const uint64_t *, void *, bool,
                                     const uint64_t *, kept_buckets *);
template cuzk_kresult msm_stream<fp2_t>(dev_ctx *, const void *, size_t, size_t, const void *, size_t,
                                       const uint64_t *, void *, stream_carry *, stream_carry *,
                                       const stream_next *);
template cuzk_kresult msm_stream_many<fp2_t>(dev_ctx *, const void *, size_t, size_t, const device_z *const *,
                                            size_t, size_t, const uint64_t *, void *const *);
}
