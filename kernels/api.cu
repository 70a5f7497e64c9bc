// cuzk kernels: the extern "C" API (cuzk_kernels.h): device contexts, resident bases, wrappers.
#include "common.cuh"
#include "field.cuh"
#include "curve.cuh"
#include <new>
#include <cstdio>
#include <cstdlib>
#include <vector>

struct cuzk_k_bases {
    int device;
    int group;  // 1 = G1, 2 = G2
    size_t n;
    void *d;
};

namespace cuzk {
namespace {
std::mutex g_mu;
std::vector<dev_ctx *> g_ctx;  // never freed (process lifetime)
}  // namespace

cuzk_kresult get_ctx(int device, dev_ctx **out)
{
    int count = 0;
    CUZK_CK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count) return arg_err(CUZK_K_ERR_BAD_DEVICE, "no such CUDA device");
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_ctx.size() < (size_t)count) g_ctx.resize(count, nullptr);
    CUZK_CK(cudaSetDevice(device));
    if (!g_ctx[device]) {
        dev_ctx *c = new dev_ctx;
        c->device = device;
        cudaError_t e = cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s_comp, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s_copy, cudaStreamNonBlocking);
        cudaMemPool_t pool;
        if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, device);
        if (e == cudaSuccess) {
            uint64_t thr = UINT64_MAX;  // keep freed pool memory for the next proof
            e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
        }
        if (e != cudaSuccess) {
            if (c->s_comp) cudaStreamDestroy(c->s_comp);
            if (c->s_copy) cudaStreamDestroy(c->s_copy);
            delete c;
            return cuda_err(e);
        }
        g_ctx[device] = c;
    }
    *out = g_ctx[device];
    return ok();
}

profiler::profiler(const char *w, cudaStream_t st) : s(st), what(w)
{
    static int enabled = -1;
    if (enabled < 0) {
        const char *e = getenv("CUZK_K_PROFILE");
        enabled = (e && *e && *e != '0') ? 1 : 0;
    }
    on = enabled == 1;
    mark("start");
}

profiler::~profiler()
{
    if (!on) return;
    if (n > 0 && cudaEventSynchronize(ev[n - 1]) == cudaSuccess) {
        fprintf(stderr, "[cuzk prof] %s:", what);
        for (int i = 1; i < n; i++) {
            float ms = 0;
            cudaEventElapsedTime(&ms, ev[i - 1], ev[i]);
            fprintf(stderr, " %s %.2f", name[i], ms);
        }
        float tot = 0;
        cudaEventElapsedTime(&tot, ev[0], ev[n - 1]);
        fprintf(stderr, " | total %.2f ms\n", tot);
    }
    for (int i = 0; i < n; i++) cudaEventDestroy(ev[i]);
}

namespace {

cuzk_kresult trim_pool(int device)
{
    cudaMemPool_t pool;
    CUZK_CK(cudaDeviceGetDefaultMemPool(&pool, device));
    CUZK_CK(cudaMemPoolTrimTo(pool, 0));
    return ok();
}

cuzk_kresult bases_upload(int device, int group, size_t elem, const void *host, size_t n,
                          cuzk_k_bases **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_upload: out is NULL");
    *out = nullptr;
    if (!host && n) return arg_err(CUZK_K_ERR_NULL_ARG, "bases_upload: host_points is NULL");
    if (n > 0x7fffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "bases_upload: more than 2^31-1 points");
    dev_ctx *ctx;
    CUZK_TRY(get_ctx(device, &ctx));
    std::lock_guard<std::mutex> lk(ctx->mu);
    CUZK_CK(cudaSetDevice(device));
    void *d = nullptr;
    size_t bytes = std::max<size_t>(n * elem, 256);
    cudaError_t e = cudaMalloc(&d, bytes);
    if (e == cudaErrorMemoryAllocation) {  // the pool may hold freed memory: give it back, retry
        cudaGetLastError();
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        CUZK_TRY(trim_pool(device));
        e = cudaMalloc(&d, bytes);
    }
    CUZK_CK(e);
    if (n) {
        e = cudaMemcpy(d, host, n * elem, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) { cudaFree(d); return cuda_err(e); }
    }
    cuzk_k_bases *b = new cuzk_k_bases{device, group, n, d};
    *out = b;
    return ok();
}

template <class F>
cuzk_kresult msm_api(int group, const cuzk_k_bases *bases, size_t base_offset, const void *scalars,
                     size_t n, const uint64_t *density, void *out)
{
    if (!bases || !out) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: bases or out is NULL");
    if (!scalars && n) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: scalars is NULL");
    if (bases->group != group) return arg_err(CUZK_K_ERR_WRONG_GROUP, "msm: bases of the other group");
    dev_ctx *ctx;
    CUZK_TRY(get_ctx(bases->device, &ctx));
    std::lock_guard<std::mutex> lk(ctx->mu);
    CUZK_CK(cudaSetDevice(bases->device));
    return msm_run<F>(ctx, bases->d, bases->n, base_offset, nullptr, scalars, n, density, out);
}

cuzk_kresult msm_batch(const cuzk_k_msm_job *jobs, size_t count)
{
    if (!count) return ok();
    if (!jobs) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: jobs is NULL");
    for (size_t i = 0; i < count; i++) {
        const cuzk_k_msm_job &j = jobs[i];
        if (!j.bases || !j.out_jacobian) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: bases or out is NULL");
        if (!j.host_scalars && j.n) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: scalars is NULL");
        if (j.bases->device != jobs[0].bases->device)
            return arg_err(CUZK_K_ERR_MIXED_DEVICES, "msm_batch: jobs on different devices");
    }
    const int device = jobs[0].bases->device;
    dev_ctx *ctx;
    CUZK_TRY(get_ctx(device, &ctx));
    std::lock_guard<std::mutex> lk(ctx->mu);
    CUZK_CK(cudaSetDevice(device));
    cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
    dbuf buf[2];
    cudaEvent_t ev[3] = {};
    struct ev_guard {
        cudaEvent_t *e;
        ~ev_guard() { for (int i = 0; i < 3; i++) if (e[i]) cudaEventDestroy(e[i]); }
    } guard{ev};
    for (int k = 0; k < 3; k++) CUZK_CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
    // on every exit, make the compute stream (where buf is freed) wait for the copy stream
    struct join_guard {
        cudaStream_t s, sc;
        cudaEvent_t e;
        ~join_guard() { cudaEventRecord(e, sc); cudaStreamWaitEvent(s, e, 0); }
    } join{s, sc, ev[2]};
    // queue the copy of job i's scalars into buf[i % 2] on the copy stream
    auto prefetch = [&](size_t i) -> cuzk_kresult {
        if (i >= count || jobs[i].n == 0) return ok();
        dbuf &b = buf[i % 2];
        CUZK_CK(b.alloc(jobs[i].n * 32, s));
        CUZK_CK(cudaEventRecord(ev[2], s));
        CUZK_CK(cudaStreamWaitEvent(sc, ev[2], 0));
        CUZK_CK(cudaMemcpyAsync(b.p, jobs[i].host_scalars, jobs[i].n * 32, cudaMemcpyHostToDevice, sc));
        CUZK_CK(cudaEventRecord(ev[i % 2], sc));
        return ok();
    };
    CUZK_TRY(prefetch(0));
    for (size_t i = 0; i < count; i++) {
        const cuzk_k_msm_job &j = jobs[i];
        CUZK_TRY(prefetch(i + 1));
        if (j.n) CUZK_CK(cudaStreamWaitEvent(s, ev[i % 2], 0));
        const void *d = j.n ? buf[i % 2].p : nullptr;
        const void *h = j.n ? nullptr : j.host_scalars;
        if (j.bases->group == 1)
            CUZK_TRY(msm_run<fp_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian));
        else
            CUZK_TRY(msm_run<fp2_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian));
    }
    CUZK_CK(cudaStreamSynchronize(sc));
    return ok();
}

cuzk_kresult check_h_args(const void *a, const void *b, const void *c, size_t n, uint32_t log_m)
{
    if (log_m < 1 || log_m > 31) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: log_m must be in 1..31");
    if (n > ((size_t)1 << log_m)) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: n > 2^log_m");
    if (n && (!a || !b || !c)) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: a, b or c is NULL");
    return ok();
}

}  // namespace
}  // namespace cuzk

using namespace cuzk;

#define API_GUARD(body)                                                               \
    try {                                                                             \
        body                                                                          \
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
    API_GUARD({
        dev_ctx *ctx;
        cuzk_kresult r = get_ctx(bases->device, &ctx);
        if (r.code == 0) {
            std::lock_guard<std::mutex> lk(ctx->mu);
            cudaSetDevice(bases->device);
            cudaError_t e = cudaFree(bases->d);
            delete bases;
            if (e != cudaSuccess) return cuda_err(e);
            return ok();
        }
        delete bases;
        return r;
    })
}

size_t cuzk_k_bases_len(const cuzk_k_bases *bases) { return bases ? bases->n : 0; }
int cuzk_k_bases_device(const cuzk_k_bases *bases) { return bases ? bases->device : -1; }

cuzk_kresult cuzk_k_msm_g1(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian)
{
    API_GUARD(return msm_api<fp_t>(1, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_g2(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian)
{
    API_GUARD(return msm_api<fp2_t>(2, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_batch(const cuzk_k_msm_job *jobs, size_t count)
{
    API_GUARD(return msm_batch(jobs, count);)
}

cuzk_kresult cuzk_k_compute_h(int device, const void *a, const void *b, const void *c, size_t n,
                              uint32_t log_m, void *h_out)
{
    API_GUARD({
        CUZK_TRY(check_h_args(a, b, c, n, log_m));
        if (!h_out) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: h_out is NULL");
        dev_ctx *ctx;
        CUZK_TRY(get_ctx(device, &ctx));
        std::lock_guard<std::mutex> lk(ctx->mu);
        CUZK_CK(cudaSetDevice(device));
        dbuf d_h;
        CUZK_TRY(compute_h_dev(ctx, a, b, c, n, log_m, d_h, h_out));
        return ok();
    })
}

cuzk_kresult cuzk_k_compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b,
                                  const void *c, size_t n, uint32_t log_m, void *h_out,
                                  void *out_jacobian)
{
    API_GUARD({
        if (!h_bases || !out_jacobian) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm: h_bases or out is NULL");
        if (h_bases->group != 1) return arg_err(CUZK_K_ERR_WRONG_GROUP, "compute_h_msm: H bases must be G1");
        CUZK_TRY(check_h_args(a, b, c, n, log_m));
        size_t m = (size_t)1 << log_m;
        if (h_bases->n < m - 1) return arg_err(CUZK_K_ERR_RANGE, "compute_h_msm: fewer than m-1 H bases");
        dev_ctx *ctx;
        CUZK_TRY(get_ctx(h_bases->device, &ctx));
        std::lock_guard<std::mutex> lk(ctx->mu);
        CUZK_CK(cudaSetDevice(h_bases->device));
        dbuf d_h;
        CUZK_TRY(compute_h_dev(ctx, a, b, c, n, log_m, d_h, h_out));
        return msm_run<fp_t>(ctx, h_bases->d, h_bases->n, 0, d_h.p, nullptr, m - 1, nullptr, out_jacobian);
    })
}

cuzk_kresult cuzk_k_device_release_caches(int device)
{
    API_GUARD({
        dev_ctx *ctx;
        CUZK_TRY(get_ctx(device, &ctx));
        std::lock_guard<std::mutex> lk(ctx->mu);
        CUZK_CK(cudaSetDevice(device));
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
        free_ntt_tables(ctx);
        CUZK_TRY(trim_pool(device));
        return ok();
    })
}

}  // extern "C"
