// cuzk kernels: bases on a device — resident (uploaded once into counted device memory) or
// streamed (the caller's host points, page-locked here, copied in chunks by each MSM).
#include "internal.cuh"
#include <algorithm>

namespace cuzk {

cuzk_kresult bases_upload(int device, int group, size_t elem, const void *host, size_t n,
                          cuzk_k_bases **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_upload: out is NULL");
    *out = nullptr;
    if (!host && n) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_upload: host_points is NULL");
    if (n > 0x7fffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "bases_upload: more than 2^31-1 points");
    return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_UPLOAD;
        void *d = nullptr;
        size_t bytes = std::max<size_t>(n * elem, 256);
        cudaError_t e = counted_malloc(ctx, &d, bytes);
        if (e == cudaErrorMemoryAllocation) {  // our pool may hold freed memory: give it back, retry
            CUZK_CLEAR_LAST_ERROR();
            CUZK_TRY(trim_pool(ctx));
            e = counted_malloc(ctx, &d, bytes);
        }
        CUZK_CK(e);
        struct free_on_error {
            dev_ctx *ctx;
            void *d;
            size_t bytes;
            ~free_on_error() { counted_free(ctx, d, bytes); }
        } guard{ctx, d, bytes};
        if (n) CUZK_CK(cudaMemcpy(d, host, n * elem, cudaMemcpyHostToDevice));
        CUZK_PHASE(ctx, CUZK_K_PHASE_UPLOAD, 0);
        *out = new cuzk_k_bases{device, group, n, d};
        guard.d = nullptr;
        return ok();
    });
}

// Streamed bases: the caller's host points, page-locked here once (cudaHostRegister) so the
// chunk copies run at full PCIe speed. Memory some other handle already registered is used
// as it is (and left registered on free).
cuzk_kresult bases_host(int device, int group, size_t elem, const void *host, size_t n, cuzk_k_bases **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_host: out is NULL");
    *out = nullptr;
    if (!host && n) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_host: host_points is NULL");
    if (n > 0x7fffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "bases_host: more than 2^31-1 points");
    return run_on(device, [&](dev_ctx *) -> cuzk_kresult {
        bool registered = false;
        if (n) {
            cudaError_t e = cudaHostRegister(const_cast<void *>(host), n * elem, cudaHostRegisterPortable);
            if (e == cudaErrorHostMemoryAlreadyRegistered) {
                CUZK_CLEAR_LAST_ERROR();
            } else {
                CUZK_CK(e);
                registered = true;
            }
        }
        *out = new cuzk_k_bases{device, group, n, nullptr, host, registered};
        return ok();
    });
}

cuzk_kresult bases_free(cuzk_k_bases *bases)
{
    if (!bases) return ok();
    cuzk_kresult r = run_on(bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        if (bases->registered) CUZK_CK(cudaHostUnregister(const_cast<void *>(bases->h)));
        if (bases->d) counted_free(ctx, bases->d, std::max<size_t>(bases->n * (bases->group == 1 ? 96 : 192), 256));
        return ok();
    });
    delete bases;
    return r;
}

}  // namespace cuzk
