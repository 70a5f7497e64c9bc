// cuzk kernels: what the API's translation units share — the opaque handles behind
// cuzk_kernels.h (bases, staged vectors), run_on (every call's frame on its device), and each
// room's entry points: context.cu (device contexts, memory, faults), bases.cu, batch.cu (MSM
// calls), h.cu (H and its MSM). api.cu wraps them in the extern "C" functions.
#pragma once
#include "common.cuh"
#include "field.cuh"
#include "curve.cuh"
#include <mutex>
#include <cuda.h>

struct cuzk_k_bases {
    int device;
    int group;  // 1 = G1, 2 = G2
    size_t n;
    void *d;                  // device copy (resident), or nullptr when streamed from h
    const void *h = nullptr;  // streamed: the caller's host points
    bool registered = false;  // h was page-locked by us (cudaHostRegister), unregister on free
};

// What the H call copied to the device for the batch that follows (see
// cuzk_k_compute_h_msm_staged): a scalar vector, and over streamed bases the first chunk of the
// batch's first large streamed job. Owns its device buffers until cuzk_k_staged_free; the chunk
// goes back as soon as a batch has run that job (or found it is not that job's).
struct cuzk_k_staged {
    int device;
    const void *h = nullptr;  // the caller's host vector it copies (matched by pointer and length)
    size_t n = 0;
    cuzk::dbuf buf;
    mutable cuzk::stream_carry carry;  // consumed by the batch (msm_stream releases it)
    cuzk::event_list evs;              // carry.copied
    bool device_only = false;          // h is only a name: no host copy exists (the witness path)
};

// A witness kept on one device across calls (witness.cu): its z as the SpMV reads it.
struct cuzk_k_dwitness {
    int device;
    cuzk::device_z z;
};

// A compiled circuit resident on one device (witness.cu): A, B, C packed over z = (inputs,
// aux) and the table of constants, in one counted block, checked on upload.
struct cuzk_k_circuit {
    int device;
    size_t rows = 0, num_inputs = 0, num_aux = 0, num_constants = 0;
    struct packed {  // see cuzk_k_packed_desc
        uint16_t *lens = nullptr;
        uint32_t *group_starts = nullptr, *words = nullptr;
        size_t num_words = 0;
    } m[3];
    void *constants = nullptr;  // num_constants scalars (Montgomery)
    void *block = nullptr;      // the counted allocation holding all of the above
    size_t bytes = 0;
    size_t part_off[CUZK_K_CIRCUIT_PARTS] = {}, part_bytes[CUZK_K_CIRCUIT_PARTS] = {};  // in block
    bool ready = false;         // finished: checked on the device, usable
};

namespace cuzk {

// Runs body(ctx) on `device` with its lock held, then, on every path, waits for both streams
// (so no copy still reads the caller's host buffers and every stream-ordered free has
// happened), clears the thread's last CUDA error, and gives the thread back the CUDA context
// it had (the caller's, or none).
template <class Body>
cuzk_kresult run_on(int device, Body body)
{
    CUZK_CLEAR_LAST_ERROR();
    int count = 0;
    CUZK_CK(cudaGetDeviceCount(&count));  // initialises the driver
    if (device < 0 || device >= count) return arg_err(CUZK_K_ERR_BAD_DEVICE, "no such CUDA device");
    CUcontext saved = nullptr;
    if (cuCtxGetCurrent(&saved) != CUDA_SUCCESS) saved = nullptr;
    struct restore_ctx {
        CUcontext c;
        ~restore_ctx()
        {
            CUZK_CLEAR_LAST_ERROR();
            cuCtxSetCurrent(c);
        }
    } restore{saved};
    CUZK_CK(cudaSetDevice(device));
    dev_ctx *ctx;
    CUZK_TRY(get_ctx(device, &ctx));
    std::lock_guard<std::mutex> lk(ctx->mu);
    ctx->phase = ctx->index = 0;
    cuzk_kresult r = body(ctx);
    cudaError_t e1 = CUZK_SYNC_ON_EXIT() ? cudaStreamSynchronize(ctx->s_copy) : cudaSuccess;
    cudaError_t e2 = CUZK_SYNC_ON_EXIT() ? cudaStreamSynchronize(ctx->s_comp) : cudaSuccess;
    if (r.code == 0 && e1 != cudaSuccess) r = cuda_err(e1);
    if (r.code == 0 && e2 != cudaSuccess) r = cuda_err(e2);
    if (r.code != 0) {
        r.phase = ctx->phase;
        r.index = ctx->index;
    }
    CUZK_CLEAR_LAST_ERROR();
    return r;
}

// ---- context.cu ----
// Gives the device's pooled memory back to the driver (after the compute stream is idle).
cuzk_kresult trim_pool(dev_ctx *ctx);
cuzk_kresult device_probe(int device, cuzk_k_device_info *out);
cuzk_kresult device_mem_info(int device, size_t *free_bytes, size_t *total_bytes);
cuzk_kresult device_set_limit(int device, size_t limit_bytes, size_t stream_chunk_points);
cuzk_kresult device_mem_stats(int device, int reset_peak, cuzk_k_mem_stats *out);
cuzk_kresult device_release_caches(int device);
#ifdef CUZK_FAULT_INJECTION
void fault_arm(int phase, int index, int code, int count);
bool fault_streams_busy(int device);
int fault_fired();
#endif

// ---- bases.cu ----
// group: 1 = G1, 2 = G2; elem: the affine point's bytes.
cuzk_kresult bases_upload(int device, int group, size_t elem, const void *host, size_t n, cuzk_k_bases **out);
cuzk_kresult bases_host(int device, int group, size_t elem, const void *host, size_t n, cuzk_k_bases **out);
cuzk_kresult bases_free(cuzk_k_bases *bases);  // deletes the handle, on every path

// ---- batch.cu ----
// One MSM of the group's bases (1 = G1, 2 = G2).
cuzk_kresult msm_one(int group, const cuzk_k_bases *bases, size_t base_offset, const void *scalars, size_t n,
                     const uint64_t *density, void *out);
cuzk_kresult msm_batch(const cuzk_k_msm_job *jobs, size_t count, const cuzk_k_staged *staged);
// The stream_next describing a job over streamed bases (its first chunk can be carried in).
stream_next next_of(const cuzk_k_msm_job &j);

// ---- h.cu ----
cuzk_kresult compute_h(int device, const void *a, const void *b, const void *c, size_t n, uint32_t log_m,
                       void *h_out);
cuzk_kresult compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b, const void *c, size_t n,
                           uint32_t log_m, void *h_out, void *out_jacobian, const void *stage, size_t stage_n,
                           const cuzk_k_msm_job *next, cuzk_k_staged **staged);

// ---- witness.cu ----
cuzk_kresult circuit_upload(int device, const cuzk_k_circuit_desc *desc, cuzk_k_circuit **out);
cuzk_kresult circuit_begin(int device, const cuzk_k_circuit_sizes *sizes, cuzk_k_circuit **out);
cuzk_kresult circuit_put(cuzk_k_circuit *c, int part, size_t offset, const void *src, size_t bytes);
cuzk_kresult circuit_finish(cuzk_k_circuit *c);
cuzk_kresult circuit_free(cuzk_k_circuit *circuit);  // deletes the handle, on every path
// The witness's sizes and pointers against the circuit (host-side; the expansion checks the rest).
cuzk_kresult check_witness(const cuzk_k_circuit *circuit, const cuzk_k_witness *w);
// The witness on the device: inputs and the compact aux copied, checked (on the compute stream,
// waited for); the SpMV reads the compact form.
cuzk_kresult witness_to_device(dev_ctx *ctx, const cuzk_k_witness *w, device_z &z);
// z's aux expanded into `out` (num_aux scalars); the compact copy is freed.
cuzk_kresult expand_aux(dev_ctx *ctx, device_z &z, dbuf &out);
cuzk_kresult circuit_evaluate(const cuzk_k_circuit *circuit, const cuzk_k_witness *w, void *a_out, void *b_out,
                              void *c_out, void *aux_out);
cuzk_kresult dwitness_upload(const cuzk_k_circuit *circuit, const cuzk_k_witness *w, cuzk_k_dwitness **out);
cuzk_kresult dwitness_free(cuzk_k_dwitness *w);
cuzk_kresult compute_h_msm_dwitness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                    const cuzk_k_dwitness *w, uint32_t log_m, void *h_out, void *out_jacobian);
cuzk_kresult msm_aux_many(const cuzk_k_bases *bases, size_t base_offset, const uint64_t *density,
                          const cuzk_k_dwitness *const *ws, size_t k, void *const *outs);
cuzk_kresult compute_h_msm_witness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                   const cuzk_k_witness *w, uint32_t log_m, void *h_out, void *out_jacobian,
                                   const void *aux_key, const cuzk_k_msm_job *next, cuzk_k_staged **staged);

}  // namespace cuzk
