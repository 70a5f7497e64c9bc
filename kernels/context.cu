// cuzk kernels: device contexts (streams, the memory pool, knobs read once), the memory
// account every device allocation goes through (limit, headroom), the profiler, the device
// probe and statistics, and the test-only fault hooks.
#include "internal.cuh"
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

namespace cuzk {
namespace {
std::mutex g_mu;
std::vector<dev_ctx *> g_ctx;  // never freed (process lifetime)
#ifdef CUZK_FAULT_INJECTION
std::mutex g_fault_mu;
std::once_flag g_break_once;
int g_fault_phase = 0, g_fault_index = -1, g_fault_code = 0, g_fault_left = 0, g_fault_fired = 0;
#endif

knobs read_knobs()
{
    knobs k;
    const char *e = getenv("CUZK_K_WINDOW_BITS");
    if (e && *e) k.window_bits = atoi(e);
    e = getenv("CUZK_K_MAX_PART");
    if (e && *e && atol(e) > 0) k.max_part = (size_t)atol(e);
    e = getenv("CUZK_K_PROFILE");
    k.profile = e && *e && *e != '0';
    e = getenv("CUZK_K_AFFINE");
    k.affine = !(e && *e == '0');
    e = getenv("CUZK_K_SLICE");
    if (e && *e && atol(e) > 0) k.slice = (size_t)atol(e);
    e = getenv("CUZK_K_EMULATE_H2D_GBPS");
    if (e && *e && atof(e) > 0) {
        k.h2d_gbps = atof(e);
        fprintf(stderr, "cuzk kernels: host->device copies paced to an emulated %.1f GB/s link (CUZK_K_EMULATE_H2D_GBPS)\n",
                k.h2d_gbps);
    }
#ifdef CUZK_FAULT_INJECTION
    std::call_once(g_break_once, [] {
        const char *b = getenv("CUZK_K_FAULT_BREAK");
        if (b && !strcmp(b, "sync")) g_break_sync = true;
        if (b && !strcmp(b, "clear")) g_break_clear = true;
        if (g_break_sync || g_break_clear)
            fprintf(stderr, "cuzk kernels: CUZK_K_FAULT_BREAK=%s: the call contract is broken on purpose\n", b);
    });
#endif
    return k;
}

double steady_seconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One paced copy: its link, its duration at the emulated rate, and (set when it starts) when
// its slot ends.
struct paced_copy {
    h2d_link *link;
    double secs;
    double end = 0;
};

void CUDART_CB pace_start(void *p)
{
    paced_copy *c = static_cast<paced_copy *>(p);
    std::lock_guard<std::mutex> lk(c->link->mu);
    const double start = std::max(steady_seconds(), c->link->free_at);
    c->end = start + c->secs;
    c->link->free_at = c->end;
}

void CUDART_CB pace_end(void *p)
{
    std::unique_ptr<paced_copy> c(static_cast<paced_copy *>(p));
    const double left = c->end - steady_seconds();
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

__global__ void k_probe(uint32_t *out, uint32_t v)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = v ^ 0x5a5a5a5au;
}

}  // namespace

#ifdef CUZK_FAULT_INJECTION
bool g_break_sync = false, g_break_clear = false;

bool fault_hit(int phase, int index, cudaError_t *code)
{
    std::lock_guard<std::mutex> lk(g_fault_mu);
    if (g_fault_phase != phase || (g_fault_index >= 0 && g_fault_index != index)) return false;
    *code = (cudaError_t)g_fault_code;
    if (--g_fault_left <= 0) g_fault_phase = 0;
    g_fault_fired++;
    return true;
}
#endif

// Needs the device current on this thread (run_on makes it so).
cuzk_kresult get_ctx(int device, dev_ctx **out)
{
    int count = 0;
    CUZK_CK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count) return arg_err(CUZK_K_ERR_BAD_DEVICE, "no such CUDA device");
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_ctx.size() < (size_t)count) g_ctx.resize(count, nullptr);
    if (!g_ctx[device]) {
        dev_ctx *c = new dev_ctx;
        c->device = device;
        c->k = read_knobs();
        cudaError_t e = cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s_comp, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->s_copy, cudaStreamNonBlocking);
        if (e == cudaSuccess) {
            // Our own pool: the device's default pool, and its settings, belong to the caller.
            cudaMemPoolProps props = {};
            props.allocType = cudaMemAllocationTypePinned;
            props.handleTypes = cudaMemHandleTypeNone;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = device;
            e = cudaMemPoolCreate(&c->pool, &props);
        }
        if (e == cudaSuccess) {
            // Keep freed memory for the next proof; cuzk_k_device_release_caches (and the
            // out-of-memory path in Rust) trims it.
            uint64_t thr = UINT64_MAX;
            e = cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &thr);
        }
        if (e != cudaSuccess) {
            CUZK_CLEAR_LAST_ERROR();
            if (c->s_comp) cudaStreamDestroy(c->s_comp);
            if (c->s_copy) cudaStreamDestroy(c->s_copy);
            if (c->pool) cudaMemPoolDestroy(c->pool);
            delete c;
            return cuda_err(e);
        }
        g_ctx[device] = c;
    }
    *out = g_ctx[device];
    return ok();
}

profiler::profiler(const char *w, cudaStream_t st, bool enabled) : on(enabled), s(st), what(w)
{
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

cudaError_t h2d(dev_ctx *ctx, void *dst, const void *src, size_t bytes, cudaStream_t s)
{
    if (ctx->k.h2d_gbps <= 0 || bytes < ((size_t)1 << 20))
        return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
    paced_copy *c = new paced_copy{&ctx->link, (double)bytes / (ctx->k.h2d_gbps * 1e9)};
    cudaError_t e = cudaLaunchHostFunc(s, pace_start, c);
    if (e != cudaSuccess) {
        delete c;
        return e;
    }
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
    // Queued whatever the copy's outcome: it frees c (pace_start may still read it).
    const cudaError_t e2 = cudaLaunchHostFunc(s, pace_end, c);
    return e != cudaSuccess ? e : e2;
}

cudaError_t counted_malloc(dev_ctx *ctx, void **p, size_t bytes)
{
    *p = nullptr;
    cudaError_t e = ctx->mem.take(bytes);
    if (e != cudaSuccess) return e;
    e = cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
        ctx->mem.give(bytes);
        *p = nullptr;
    }
    return e;
}

void counted_free(dev_ctx *ctx, void *p, size_t bytes)
{
    if (!p) return;
    cudaFree(p);
    ctx->mem.give(bytes);
}

cuzk_kresult trim_pool(dev_ctx *ctx)
{
    CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
    CUZK_CK(cudaMemPoolTrimTo(ctx->pool, 0));
    return ok();
}

// Device memory this call may still take: under the limit, or the device's free memory plus
// what cuzk's pool holds unused.
cuzk_kresult headroom(dev_ctx *ctx, size_t *out)
{
    if (ctx->mem.limit) {
        *out = ctx->mem.limit > ctx->mem.used ? ctx->mem.limit - ctx->mem.used : 0;
        return ok();
    }
    size_t fr = 0, tot = 0;
    CUZK_CK(cudaMemGetInfo(&fr, &tot));
    cuuint64_t reserved = 0, in_use = 0;
    CUZK_CK(cudaMemPoolGetAttribute(ctx->pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    CUZK_CK(cudaMemPoolGetAttribute(ctx->pool, cudaMemPoolAttrUsedMemCurrent, &in_use));
    *out = fr + (size_t)(reserved > in_use ? reserved - in_use : 0);
    return ok();
}

cuzk_kresult device_probe(int device, cuzk_k_device_info *out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "device_probe: out is NULL");
    cuzk_k_device_info info = {};
    cuzk_kresult r = run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        cudaDeviceProp p;
        CUZK_CK(cudaGetDeviceProperties(&p, device));
        info.cc_major = p.major;
        info.cc_minor = p.minor;
        info.sm_count = p.multiProcessorCount;
        snprintf(info.name, sizeof info.name, "%s", p.name);
        CUZK_CK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
        // Is there code for this GPU in the build (SASS for its architecture, or PTX the
        // driver can compile)? cudaErrorNoKernelImageForDevice / InvalidDeviceFunction if not.
        cudaFuncAttributes fa;
        CUZK_CK(cudaFuncGetAttributes(&fa, k_probe));
        info.binary_version = fa.binaryVersion;
        info.ptx_version = fa.ptxVersion;
        // And a real launch, through the stream cuzk uses.
        dbuf d;
        CUZK_CK(d.alloc(ctx, 4));
        k_probe<<<1, 32, 0, ctx->s_comp>>>(d.as<uint32_t>(), 0x12345678u);
        CUZK_CKL();
        uint32_t v = 0;
        CUZK_CK(cudaMemcpyAsync(&v, d.p, 4, cudaMemcpyDeviceToHost, ctx->s_comp));
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        if (v != (0x12345678u ^ 0x5a5a5a5au)) return arg_err(CUZK_K_ERR_INTERNAL, "device_probe: the probe kernel wrote a wrong value");
        return ok();
    });
    if (r.code == 0) *out = info;
    return r;
}

cuzk_kresult device_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes) return arg_err(CUZK_K_ERR_NULL_ARG, "device_mem_info: NULL out");
    size_t f = 0, t = 0;
    cuzk_kresult r = run_on(device, [&](dev_ctx *) -> cuzk_kresult {
        CUZK_CK(cudaMemGetInfo(&f, &t));
        return ok();
    });
    if (r.code == 0) { *free_bytes = f; *total_bytes = t; }
    return r;
}

cuzk_kresult device_set_limit(int device, size_t limit_bytes, size_t stream_chunk_points)
{
    return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->mem.limit = limit_bytes;
        ctx->mem.chunk_points = stream_chunk_points;
        return ok();
    });
}

cuzk_kresult device_mem_stats(int device, int reset_peak, cuzk_k_mem_stats *out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "device_mem_stats: out is NULL");
    cuzk_k_mem_stats st = {};
    cuzk_kresult r = run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        st.limit = ctx->mem.limit;
        st.used = ctx->mem.used;
        st.peak = ctx->mem.peak;
        cuuint64_t v = 0;
        CUZK_CK(cudaMemPoolGetAttribute(ctx->pool, cudaMemPoolAttrReservedMemCurrent, &v));
        st.pool_reserved = (size_t)v;
        CUZK_CK(cudaMemPoolGetAttribute(ctx->pool, cudaMemPoolAttrReservedMemHigh, &v));
        st.pool_reserved_high = (size_t)v;
        if (reset_peak) {
            ctx->mem.peak = ctx->mem.used;
            v = 0;
            CUZK_CK(cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReservedMemHigh, &v));
        }
        return ok();
    });
    if (r.code == 0) *out = st;
    return r;
}

cuzk_kresult device_release_caches(int device)
{
    return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
        free_ntt_tables(ctx);
        return trim_pool(ctx);
    });
}

#ifdef CUZK_FAULT_INJECTION
void fault_arm(int phase, int index, int code, int count)
{
    std::lock_guard<std::mutex> lk(g_fault_mu);
    g_fault_phase = count > 0 ? phase : 0;
    g_fault_index = index;
    g_fault_code = code;
    g_fault_left = count;
}

bool fault_streams_busy(int device)
{
    dev_ctx *ctx = nullptr;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (device < 0 || (size_t)device >= g_ctx.size() || !g_ctx[device]) return false;
        ctx = g_ctx[device];
    }
    std::lock_guard<std::mutex> lk(ctx->mu);
    bool busy = cudaStreamQuery(ctx->s_copy) == cudaErrorNotReady || cudaStreamQuery(ctx->s_comp) == cudaErrorNotReady;
    (void)cudaGetLastError();
    return busy;
}

int fault_fired()
{
    std::lock_guard<std::mutex> lk(g_fault_mu);
    return g_fault_fired;
}
#endif

}  // namespace cuzk
