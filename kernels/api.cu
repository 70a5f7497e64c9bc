// cuzk kernels: the extern "C" API (cuzk_kernels.h), thin wrappers over the rooms behind it —
// context.cu (devices, memory, faults), bases.cu, batch.cu (MSMs), h.cu (H and its MSM) — each
// behind one guard so that no C++ exception crosses the C boundary.
#include "internal.cuh"
#include <memory>
#include <new>

using namespace cuzk;

#define API_GUARD(...)                                                                \
    try {                                                                             \
        __VA_ARGS__                                                                   \
    } catch (const std::bad_alloc &) {                                                \
        return arg_err(CUZK_K_ERR_INTERNAL, "host allocation failed (std::bad_alloc)"); \
    } catch (...) {                                                                   \
        return arg_err(CUZK_K_ERR_INTERNAL, "internal C++ exception");                \
    }

extern "C" {

cuzk_kresult cuzk_k_device_count(int *out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "device_count: out is NULL");
    *out = 0;
    int c = 0;
    CUZK_CK(cudaGetDeviceCount(&c));
    *out = c;
    return ok();
}

cuzk_kresult cuzk_k_device_probe(int device, cuzk_k_device_info *out)
{
    API_GUARD(return device_probe(device, out);)
}

cuzk_kresult cuzk_k_device_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    API_GUARD(return device_mem_info(device, free_bytes, total_bytes);)
}

cuzk_kresult cuzk_k_bases_upload_g1(int device, const void *host_points, size_t n, cuzk_k_bases **out)
{
    API_GUARD(return bases_upload(device, 1, sizeof(affine_t<fp_t>), host_points, n, out);)
}

cuzk_kresult cuzk_k_bases_upload_g2(int device, const void *host_points, size_t n, cuzk_k_bases **out)
{
    API_GUARD(return bases_upload(device, 2, sizeof(affine_t<fp2_t>), host_points, n, out);)
}

cuzk_kresult cuzk_k_bases_free(cuzk_k_bases *bases)
{
    if (!bases) return ok();
    API_GUARD(return bases_free(bases);)
}

cuzk_kresult cuzk_k_bases_host_g1(int device, const void *host_points, size_t n, cuzk_k_bases **out)
{
    API_GUARD(return bases_host(device, 1, sizeof(affine_t<fp_t>), host_points, n, out);)
}

cuzk_kresult cuzk_k_bases_host_g2(int device, const void *host_points, size_t n, cuzk_k_bases **out)
{
    API_GUARD(return bases_host(device, 2, sizeof(affine_t<fp2_t>), host_points, n, out);)
}

int cuzk_k_bases_streamed(const cuzk_k_bases *bases) { return bases && bases->h ? 1 : 0; }

size_t cuzk_k_bases_len(const cuzk_k_bases *bases) { return bases ? bases->n : 0; }
int cuzk_k_bases_device(const cuzk_k_bases *bases) { return bases ? bases->device : -1; }

cuzk_kresult cuzk_k_msm_g1(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian)
{
    API_GUARD(return msm_one(1, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_g2(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian)
{
    API_GUARD(return msm_one(2, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_batch(const cuzk_k_msm_job *jobs, size_t count)
{
    API_GUARD(return msm_batch(jobs, count, nullptr);)
}

cuzk_kresult cuzk_k_msm_batch_staged(const cuzk_k_msm_job *jobs, size_t count, const cuzk_k_staged *staged)
{
    API_GUARD(return msm_batch(jobs, count, staged);)
}

cuzk_kresult cuzk_k_staged_free(cuzk_k_staged *staged)
{
    if (!staged) return ok();
    std::unique_ptr<cuzk_k_staged> own(staged);
    API_GUARD(return run_on(own->device, [&](dev_ctx *) -> cuzk_kresult {
        own->buf.release();
        return ok();
    });)
}

cuzk_kresult cuzk_k_compute_h(int device, const void *a, const void *b, const void *c, size_t n,
                              uint32_t log_m, void *h_out)
{
    API_GUARD(return compute_h(device, a, b, c, n, log_m, h_out);)
}

cuzk_kresult cuzk_k_compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b,
                                  const void *c, size_t n, uint32_t log_m, void *h_out,
                                  void *out_jacobian)
{
    API_GUARD(return compute_h_msm(h_bases, a, b, c, n, log_m, h_out, out_jacobian, nullptr, 0, nullptr, nullptr);)
}

cuzk_kresult cuzk_k_compute_h_msm_staged(const cuzk_k_bases *h_bases, const void *a, const void *b,
                                         const void *c, size_t n, uint32_t log_m, void *h_out,
                                         void *out_jacobian, const void *stage_scalars, size_t stage_n,
                                         const cuzk_k_msm_job *next_job, cuzk_k_staged **staged)
{
    if (!staged) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm_staged: staged is NULL");
    *staged = nullptr;
    if (!stage_scalars && stage_n) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm_staged: stage_scalars is NULL");
    API_GUARD(return compute_h_msm(h_bases, a, b, c, n, log_m, h_out, out_jacobian, stage_scalars, stage_n, next_job,
                                   staged);)
}

cuzk_kresult cuzk_k_circuit_upload(int device, const cuzk_k_circuit_desc *desc, cuzk_k_circuit **out)
{
    API_GUARD(return circuit_upload(device, desc, out);)
}

cuzk_kresult cuzk_k_circuit_begin(int device, const cuzk_k_circuit_sizes *sizes, cuzk_k_circuit **out)
{
    API_GUARD(return circuit_begin(device, sizes, out);)
}

cuzk_kresult cuzk_k_circuit_put(cuzk_k_circuit *circuit, int part, size_t offset, const void *src, size_t bytes)
{
    API_GUARD(return circuit_put(circuit, part, offset, src, bytes);)
}

cuzk_kresult cuzk_k_circuit_finish(cuzk_k_circuit *circuit)
{
    API_GUARD(return circuit_finish(circuit);)
}

cuzk_kresult cuzk_k_dwitness_upload(const cuzk_k_circuit *circuit, const cuzk_k_witness *witness,
                                    cuzk_k_dwitness **out)
{
    API_GUARD(return dwitness_upload(circuit, witness, out);)
}

cuzk_kresult cuzk_k_dwitness_free(cuzk_k_dwitness *witness)
{
    if (!witness) return ok();
    API_GUARD(return dwitness_free(witness);)
}

cuzk_kresult cuzk_k_compute_h_msm_dwitness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                           const cuzk_k_dwitness *witness, uint32_t log_m, void *h_out,
                                           void *out_jacobian)
{
    API_GUARD(return compute_h_msm_dwitness(h_bases, circuit, witness, log_m, h_out, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_aux_many(const cuzk_k_bases *bases, size_t base_offset, const uint64_t *density,
                                 const cuzk_k_dwitness *const *witnesses, size_t k, void *const *outs)
{
    API_GUARD(return msm_aux_many(bases, base_offset, density, witnesses, k, outs);)
}

cuzk_kresult cuzk_k_circuit_free(cuzk_k_circuit *circuit)
{
    if (!circuit) return ok();
    API_GUARD(return circuit_free(circuit);)
}

size_t cuzk_k_circuit_bytes(const cuzk_k_circuit *circuit) { return circuit ? circuit->bytes : 0; }

cuzk_kresult cuzk_k_compute_h_msm_witness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                          const cuzk_k_witness *witness, uint32_t log_m, void *h_out,
                                          void *out_jacobian, const void *aux_key, const cuzk_k_msm_job *next_job,
                                          cuzk_k_staged **staged)
{
    API_GUARD(return compute_h_msm_witness(h_bases, circuit, witness, log_m, h_out, out_jacobian, aux_key, next_job,
                                           staged);)
}

cuzk_kresult cuzk_k_circuit_evaluate(const cuzk_k_circuit *circuit, const cuzk_k_witness *witness, void *a_out,
                                     void *b_out, void *c_out, void *aux_out)
{
    API_GUARD(return circuit_evaluate(circuit, witness, a_out, b_out, c_out, aux_out);)
}

cuzk_kresult cuzk_k_device_set_limit(int device, size_t limit_bytes, size_t stream_chunk_points)
{
    API_GUARD(return device_set_limit(device, limit_bytes, stream_chunk_points);)
}

cuzk_kresult cuzk_k_device_mem_stats(int device, int reset_peak, cuzk_k_mem_stats *out)
{
    API_GUARD(return device_mem_stats(device, reset_peak, out);)
}

cuzk_kresult cuzk_k_device_release_caches(int device)
{
    API_GUARD(return device_release_caches(device);)
}

#ifdef CUZK_FAULT_INJECTION
cuzk_kresult cuzk_k_fault_arm(int phase, int index, int code, int count)
{
    fault_arm(phase, index, code, count);
    return ok();
}

int cuzk_k_fault_streams_busy(int device) { return fault_streams_busy(device) ? 1 : 0; }

int cuzk_k_fault_fired(void) { return fault_fired(); }
#endif

}  // extern "C"
