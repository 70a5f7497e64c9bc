// cuzk kernels: G1 MSM instantiation (F = Fp).
#include "msm/stream.cuh"
namespace cuzk {
template cuzk_kresult msm_run<fp_t>(dev_ctx *, const void *, size_t, size_t, const void *,
                                    const void *, size_t, const uint64_t *, void *, bool,
                                    const uint64_t *, kept_buckets *);
template cuzk_kresult msm_stream<fp_t>(dev_ctx *, const void *, size_t, size_t, const void *, size_t,
                                       const uint64_t *, void *, stream_carry *, stream_carry *,
                                       const stream_next *);
template cuzk_kresult msm_stream_many<fp_t>(dev_ctx *, const void *, size_t, size_t, const device_z *const *,
                                            size_t, size_t, const uint64_t *, void *const *);
// What the H MSM (m - 1 scalars, G1) may take at most: its sort (4 arrays x 4 bytes x 16
// windows at c = 16) and one slice of pair rounds.
size_t h_msm_scratch_bound(size_t m)
{
    return 256 * m + rounds_slice_entries<fp_t>() * rounds_bytes_per_entry<fp_t>();
}
size_t stream_chunk_bases_g1(const dev_ctx *ctx, size_t avail)
{
    return cuzk_plan_stream_chunk_bases(sizeof(fp_t), ctx->mem.chunk_points, avail);
}
}
