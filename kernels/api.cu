// cuzk kernels: the extern "C" API (cuzk_kernels.h): device contexts, resident bases, wrappers.
#include "common.cuh"
#include "field.cuh"
#include "curve.cuh"
#include <memory>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
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
};

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

namespace {

cuzk_kresult trim_pool(dev_ctx *ctx)
{
    CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
    CUZK_CK(cudaMemPoolTrimTo(ctx->pool, 0));
    return ok();
}

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

// Scalars to the device (on the compute stream) for a streamed MSM.
cuzk_kresult scalars_to_device(dev_ctx *ctx, const void *h, size_t n, dbuf &d)
{
    if (!n) return ok();
    CUZK_CK(d.alloc(ctx, n * 32));
    CUZK_CK(cudaMemcpyAsync(d.p, h, n * 32, cudaMemcpyHostToDevice, ctx->s_comp));
    return ok();
}

template <class F>
cuzk_kresult msm_api(int group, const cuzk_k_bases *bases, size_t base_offset, const void *scalars,
                     size_t n, const uint64_t *density, void *out)
{
    if (!bases || !out) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: bases or out is NULL");
    if (!scalars && n) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: scalars is NULL");
    if (bases->group != group) return arg_err(CUZK_K_ERR_WRONG_GROUP, "msm: bases of the other group");
    return run_on(bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        CUZK_PHASE(ctx, CUZK_K_PHASE_MSM, 0);
        if (!bases->h) return msm_run<F>(ctx, bases->d, bases->n, base_offset, nullptr, scalars, n, density, out, false);
        dbuf d_sc;
        CUZK_TRY(scalars_to_device(ctx, scalars, n, d_sc));
        return msm_stream<F>(ctx, bases->h, bases->n, base_offset, d_sc.p, n, density, out);
    });
}

// One job of a batch: d = its scalars on the device (or nullptr: h = the host scalars, for a
// job with none), on resident or streamed bases.
// Streamed jobs may take their first chunk from `in` and fill `out` for `next`.
cuzk_kresult run_job(dev_ctx *ctx, const cuzk_k_msm_job &j, const void *d, stream_carry *in = nullptr,
                     stream_carry *out = nullptr, const stream_next *next = nullptr)
{
    const void *h = d ? nullptr : j.host_scalars;
    if (j.bases->h) {
        if (j.bases->group == 1)
            return msm_stream<fp_t>(ctx, j.bases->h, j.bases->n, j.base_offset, d, j.n, j.density_bits,
                                    j.out_jacobian, in, out, next);
        return msm_stream<fp2_t>(ctx, j.bases->h, j.bases->n, j.base_offset, d, j.n, j.density_bits,
                                 j.out_jacobian, in, out, next);
    }
    if (j.bases->group == 1)
        return msm_run<fp_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian, false);
    return msm_run<fp2_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian, false);
}

// The stream_next describing a job over streamed bases (its first chunk can be carried in).
stream_next next_of(const cuzk_k_msm_job &j)
{
    const size_t elem = j.bases->group == 1 ? sizeof(affine_t<fp_t>) : sizeof(affine_t<fp2_t>);
    return stream_next{static_cast<const char *>(j.bases->h) + j.base_offset * elem, j.n, j.density_bits, elem};
}

cuzk_kresult msm_batch(const cuzk_k_msm_job *jobs, size_t count, const cuzk_k_staged *staged)
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
    if (staged && staged->device != jobs[0].bases->device)
        return arg_err(CUZK_K_ERR_MIXED_DEVICES, "msm_batch: staged scalars on another device");
    // A job reading the staged vector uses its device copy and uploads nothing.
    auto staged_for = [&](const cuzk_k_msm_job &j) -> const void * {
        return staged && j.n && j.host_scalars == staged->h && j.n == staged->n ? staged->buf.p : nullptr;
    };
    // The scalar vectors the jobs read, each once: a proof's L, A, B_G1 and B_G2 share its aux
    // vector (and A, B its inputs), so one upload serves four jobs.
    struct vec { const void *h; size_t n; };
    std::vector<vec> uniq;
    std::vector<size_t> vec_of(count, 0);
    bool streamed = false;
    size_t largest = 0, total = 0;
    for (size_t i = 0; i < count; i++) {
        const cuzk_k_msm_job &j = jobs[i];
        streamed |= j.bases->h != nullptr;
        if (!j.n || staged_for(j)) continue;
        size_t k = 0;
        while (k < uniq.size() && !(uniq[k].h == j.host_scalars && uniq[k].n == j.n)) k++;
        if (k == uniq.size()) {
            uniq.push_back(vec{j.host_scalars, j.n});
            total += j.n * 32;
            largest = std::max(largest, j.n * 32);
        }
        vec_of[i] = k;
    }
    // Uploading every vector up front is the fast path when they fit in the two job-sized
    // buffers of the general path below (so it never needs more device memory than that one)
    // and no job streams its bases (their chunks need the memory).
    if (!streamed && total <= 2 * largest) {
        return run_on(jobs[0].bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
            cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
            std::unique_ptr<dbuf[]> bufs(new dbuf[uniq.size()]);
            copy_join join{sc};  // bufs are written on the copy stream: join it before they are freed
            event_list evs;
            std::vector<cudaEvent_t> copied(uniq.size());
            ctx->phase = CUZK_K_PHASE_MSM_JOB;
            ctx->index = 0;
            for (size_t k = 0; k < uniq.size(); k++) {
                CUZK_CK(bufs[k].alloc(ctx, uniq[k].n * 32));
                CUZK_CK(evs.add(&copied[k]));
            }
            cudaEvent_t allocated;
            CUZK_CK(evs.add(&allocated));
            CUZK_CK(cudaEventRecord(allocated, s));
            CUZK_CK(cudaStreamWaitEvent(sc, allocated, 0));
            // All copies queued now, in the order of first use: each runs while the jobs before
            // its first reader compute.
            for (size_t k = 0; k < uniq.size(); k++) {
                CUZK_CK(cudaMemcpyAsync(bufs[k].p, uniq[k].h, uniq[k].n * 32, cudaMemcpyHostToDevice, sc));
                CUZK_CK(cudaEventRecord(copied[k], sc));
            }
            for (size_t i = 0; i < count; i++) {
                const cuzk_k_msm_job &j = jobs[i];
                CUZK_PHASE(ctx, CUZK_K_PHASE_MSM_JOB, (int)i);
                const void *d = staged_for(j);
                if (j.n && !d) {
                    CUZK_CK(cudaStreamWaitEvent(s, copied[vec_of[i]], 0));
                    d = bufs[vec_of[i]].p;
                }
                CUZK_TRY(run_job(ctx, j, d));
            }
            CUZK_CK(cudaStreamSynchronize(sc));
            return ok();
        });
    }
    return run_on(jobs[0].bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
        dbuf buf[2];
        // Streamed jobs hand the next large streamed job its first chunk, copied during their
        // last one (a proof's L, A, B_G1 and B_G2 over aux; the inputs' jobs in between are
        // too small to hide a copy and are skipped over).
        stream_carry carry[2];
        event_list carry_evs;
        CUZK_CK(carry_evs.add(&carry[0].copied));
        CUZK_CK(carry_evs.add(&carry[1].copied));
        int cur = 0;                   // carry[cur]: the next large streamed job's first chunk, if any
        const size_t big = STREAM_CARRY_MIN;
        // The first large streamed job's first chunk may come from the H call (staged->carry).
        stream_carry *first_in = staged && staged->carry.h ? &staged->carry : nullptr;
        copy_join join{sc};  // buf and carry are written on the copy stream: join it before they are freed
        cudaEvent_t ev[3] = {};
        struct ev_guard {
            cudaEvent_t *e;
            ~ev_guard() { for (int i = 0; i < 3; i++) if (e[i]) cudaEventDestroy(e[i]); }
        } guard{ev};
        for (int k = 0; k < 3; k++) CUZK_CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
        // queue the copy of job i's scalars into buf[i % 2] on the copy stream, unless that
        // buffer already holds them (a proof's jobs alternate between the aux and the inputs
        // vector, so each is uploaded once). A job over streamed bases is not fetched ahead
        // (its chunks need the device memory): its scalars are copied when it starts.
        std::vector<bool> fetched(count + 1, false);
        struct held_vec { const void *h = nullptr; size_t n = 0; } held[2];
        auto holds = [&](int slot, const cuzk_k_msm_job &j) {
            return buf[slot].p && held[slot].h == j.host_scalars && held[slot].n == j.n;
        };
        auto prefetch = [&](size_t i) -> cuzk_kresult {
            if (i >= count || jobs[i].n == 0 || fetched[i] || staged_for(jobs[i])) return ok();
            fetched[i] = true;
            if (holds((int)(i % 2), jobs[i])) return ok();  // ev[i % 2] still marks its copy
            dbuf &b = buf[i % 2];
            held[i % 2] = held_vec{};
            CUZK_CK(b.alloc(ctx, jobs[i].n * 32));
            held[i % 2] = held_vec{jobs[i].host_scalars, jobs[i].n};
            CUZK_CK(cudaEventRecord(ev[2], s));
            CUZK_CK(cudaStreamWaitEvent(sc, ev[2], 0));
            CUZK_CK(cudaMemcpyAsync(b.p, jobs[i].host_scalars, jobs[i].n * 32, cudaMemcpyHostToDevice, sc));
            CUZK_CK(cudaEventRecord(ev[i % 2], sc));
            return ok();
        };
        ctx->phase = CUZK_K_PHASE_MSM_JOB;
        CUZK_TRY(prefetch(0));
        for (size_t i = 0; i < count; i++) {
            const cuzk_k_msm_job &j = jobs[i];
            CUZK_TRY(prefetch(i));  // a streamed job's own scalars, not fetched ahead
            if (i + 1 < count && !jobs[i + 1].bases->h && !j.bases->h) CUZK_TRY(prefetch(i + 1));
            CUZK_PHASE(ctx, CUZK_K_PHASE_MSM_JOB, (int)i);
            const void *d = staged_for(j);
            if (j.n && !d) {
                CUZK_CK(cudaStreamWaitEvent(s, ev[i % 2], 0));
                d = buf[i % 2].p;
            }
            if (j.bases->h && j.n >= big) {
                size_t t = i + 1;
                while (t < count && !(jobs[t].bases->h && jobs[t].n >= big)) t++;
                stream_next nx{};
                if (t < count) nx = next_of(jobs[t]);
                stream_carry *in = first_in ? first_in : &carry[cur];
                first_in = nullptr;
                CUZK_TRY(run_job(ctx, j, d, in, &carry[1 - cur], t < count ? &nx : nullptr));
                in->clear();
                cur = 1 - cur;
            } else {
                CUZK_TRY(run_job(ctx, j, d));
            }
            // After a streamed job its buffer goes back (the next jobs' chunks need the device
            // memory), unless the next job of its slot reads the same vector.
            if (j.bases->h && !(i + 2 < count && holds((int)(i % 2), jobs[i + 2]))) {
                buf[i % 2].release();
                held[i % 2] = held_vec{};
            }
        }
        CUZK_CK(cudaStreamSynchronize(sc));
        return ok();
    });
}

cuzk_kresult check_h_args(const void *a, const void *b, const void *c, size_t n, uint32_t log_m)
{
    if (log_m < 1 || log_m > 31) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: log_m must be in 1..31");
    if (n > ((size_t)1 << log_m)) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: n > 2^log_m");
    if (n && (!a || !b || !c)) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: a, b or c is NULL");
    return ok();
}

// The staged vector: st.buf gets a copy of n scalars at h, queued on the copy stream (behind
// what is queued there); st.h / st.n are set when it is made. A failed allocation is not an
// error: the vector is then not staged and the batch uploads it.
cuzk_kresult stage_vector(dev_ctx *ctx, cuzk_k_staged &st, const void *h, size_t n)
{
    if (st.buf.alloc(ctx, n * 32) != cudaSuccess) {
        CUZK_CLEAR_LAST_ERROR();
        return ok();
    }
    event_list evs;
    cudaEvent_t allocated;
    CUZK_CK(evs.add(&allocated));
    CUZK_CK(cudaEventRecord(allocated, ctx->s_comp));  // the buffer is the compute stream's
    CUZK_CK(cudaStreamWaitEvent(ctx->s_copy, allocated, 0));
    CUZK_CK(cudaMemcpyAsync(st.buf.p, h, n * 32, cudaMemcpyHostToDevice, ctx->s_copy));
    st.h = h;
    st.n = n;
    return ok();
}

// H and its MSM over streamed bases, with the copies queued ahead of need: the H MSM's first
// chunk behind a, b and c (it copies during the NTTs instead of after them); the staged vector
// behind that, when the device keeps room for chunks of 2^24 bases beside it (it copies while
// the H MSM computes); and, with `next` (the batch's first large streamed job), that job's first
// chunk during the H MSM's last chunk, kept in the staged handle for the batch. st receives the
// handle, or stays empty when nothing was staged.
cuzk_kresult h_msm_streamed(dev_ctx *ctx, const cuzk_k_bases *h_bases, const void *a, const void *b, const void *c,
                            size_t n, uint32_t log_m, void *h_out, void *out_jacobian, const void *stage,
                            size_t stage_n, const cuzk_k_msm_job *next, std::unique_ptr<cuzk_k_staged> &st)
{
    cudaStream_t sc = ctx->s_copy;
    const size_t m = (size_t)1 << log_m, fr = 32, pt = sizeof(affine_t<fp_t>);
    size_t room = 0;
    CUZK_TRY(headroom(ctx, &room));
    // compute_h holds a, b and c (m scalars each) beside the NTT tables; the H MSM holds h.
    const size_t tables = ntt_tables_to_make(ctx, log_m), slack = (size_t)64 << 20;
    const size_t during = tables + 3 * m * fr + slack, after = tables + m * fr;
    const size_t left = room > after ? room - after : 0, bytes = stage_n * fr;
    const bool stage_it = stage_n && left > bytes &&
                          (ctx->mem.chunk_points || stream_chunk_bases_g1(ctx, left - bytes) >= std::min(m - 1, (size_t)1 << 24));
    st.reset(new cuzk_k_staged{h_bases->device});
    // H's first chunk, carried into msm_stream: no larger than the chunk it will plan then (so
    // it takes it), and within what the device has beside a, b and c.
    stream_carry hc;
    event_list evs;
    // Declared after hc (and st, the caller's): on every path the copy stream is joined before
    // the buffers it writes go back.
    copy_join join{sc};
    CUZK_CK(evs.add(&hc.copied));
    queued_copy qc{};
    size_t cap = stream_chunk_bases_g1(ctx, left - (stage_it ? bytes : 0)) / 16 * 15;
    cap = std::min(cap, room > during ? (room - during) / pt : 0);
    if (cap >= 4096) {
        const stream_piece p = next_piece(nullptr, m - 1, 0, 0, cap);
        if (hc.buf.alloc(ctx, p.nb * pt) == cudaSuccess) {
            hc.h = h_bases->h;
            hc.cap = cap;
            hc.piece = p;
            qc = queued_copy{hc.buf.p, h_bases->h, p.nb * pt, hc.copied};
        } else {
            CUZK_CLEAR_LAST_ERROR();
        }
    }
    dbuf d_h;
    CUZK_TRY(compute_h_dev(ctx, a, b, c, n, log_m, d_h, h_out, qc.dst ? &qc : nullptr));
    CUZK_PHASE(ctx, CUZK_K_PHASE_H_MSM, 0);
    if (stage_it) CUZK_TRY(stage_vector(ctx, *st, stage, stage_n));
    const bool carry_next = next && next->bases && next->bases->h && next->bases->device == h_bases->device &&
                            next->n >= STREAM_CARRY_MIN;
    stream_next nx{};
    if (carry_next) {
        CUZK_CK(st->evs.add(&st->carry.copied));
        nx = next_of(*next);
    }
    CUZK_TRY(msm_stream<fp_t>(ctx, h_bases->h, h_bases->n, 0, d_h.p, m - 1, nullptr, out_jacobian, &hc,
                              carry_next ? &st->carry : nullptr, carry_next ? &nx : nullptr));
    CUZK_CK(cudaStreamSynchronize(sc));
    if (!st->buf.p && !st->carry.h) st.reset();
    return ok();
}

// H and its MSM; with stage_n > 0 also a device copy of stage_scalars for the batch that
// follows, queued on the copy stream behind H's own copies so that it runs while the H MSM
// computes. Over resident H bases the copy is made only when the device keeps, beside it, what
// the H MSM may take at most (its sort: 256 bytes a scalar at c = 16; a slice of pair rounds:
// 2^26 entries); over streamed ones see h_msm_streamed. Otherwise *staged stays NULL and the
// batch uploads as before.
cuzk_kresult compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b, const void *c, size_t n,
                           uint32_t log_m, void *h_out, void *out_jacobian, const void *stage, size_t stage_n,
                           const cuzk_k_msm_job *next, cuzk_k_staged **staged)
{
    if (!h_bases || !out_jacobian) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm: h_bases or out is NULL");
    if (h_bases->group != 1) return arg_err(CUZK_K_ERR_WRONG_GROUP, "compute_h_msm: H bases must be G1");
    CUZK_TRY(check_h_args(a, b, c, n, log_m));
    size_t m = (size_t)1 << log_m;
    if (h_bases->n < m - 1) return arg_err(CUZK_K_ERR_RANGE, "compute_h_msm: fewer than m-1 H bases");
    return run_on(h_bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        if (h_bases->h) {
            std::unique_ptr<cuzk_k_staged> st;
            CUZK_TRY(h_msm_streamed(ctx, h_bases, a, b, c, n, log_m, h_out, out_jacobian, staged ? stage : nullptr,
                                    staged ? stage_n : 0, staged ? next : nullptr, st));
            if (staged) *staged = st.release();
            return ok();
        }
        dbuf d_h;
        CUZK_TRY(compute_h_dev(ctx, a, b, c, n, log_m, d_h, h_out));
        CUZK_PHASE(ctx, CUZK_K_PHASE_H_MSM, 0);
        std::unique_ptr<cuzk_k_staged> st;
        copy_join join{ctx->s_copy};  // the staged copy is written on the copy stream
        size_t room = 0;
        if (stage_n && headroom(ctx, &room).code == 0 && room >= stage_n * 32 + h_msm_scratch_bound(m)) {
            st.reset(new cuzk_k_staged{h_bases->device});
            CUZK_TRY(stage_vector(ctx, *st, stage, stage_n));
            if (!st->buf.p) st.reset();
        }
        CUZK_TRY(msm_run<fp_t>(ctx, h_bases->d, h_bases->n, 0, d_h.p, nullptr, m - 1, nullptr, out_jacobian, false));
        CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
        if (staged) *staged = st.release();
        return ok();
    });
}

}  // namespace

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
}  // namespace cuzk

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
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "device_probe: out is NULL");
    API_GUARD({
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
    })
}

cuzk_kresult cuzk_k_device_mem_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes) return arg_err(CUZK_K_ERR_NULL_ARG, "device_mem_info: NULL out");
    API_GUARD({
        size_t f = 0, t = 0;
        cuzk_kresult r = run_on(device, [&](dev_ctx *) -> cuzk_kresult {
            CUZK_CK(cudaMemGetInfo(&f, &t));
            return ok();
        });
        if (r.code == 0) { *free_bytes = f; *total_bytes = t; }
        return r;
    })
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
        cuzk_kresult r = run_on(bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
            if (bases->registered) CUZK_CK(cudaHostUnregister(const_cast<void *>(bases->h)));
            if (bases->d) counted_free(ctx, bases->d, std::max<size_t>(bases->n * (bases->group == 1 ? 96 : 192), 256));
            return ok();
        });
        delete bases;
        return r;
    })
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
    API_GUARD(return msm_api<fp_t>(1, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
}

cuzk_kresult cuzk_k_msm_g2(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian)
{
    API_GUARD(return msm_api<fp2_t>(2, bases, base_offset, host_scalars, n, density_bits, out_jacobian);)
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
    API_GUARD({
        CUZK_TRY(check_h_args(a, b, c, n, log_m));
        if (!h_out) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: h_out is NULL");
        return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
            dbuf d_h;
            return compute_h_dev(ctx, a, b, c, n, log_m, d_h, h_out);
        });
    })
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

cuzk_kresult cuzk_k_device_set_limit(int device, size_t limit_bytes, size_t stream_chunk_points)
{
    API_GUARD({
        return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
            ctx->mem.limit = limit_bytes;
            ctx->mem.chunk_points = stream_chunk_points;
            return ok();
        });
    })
}

cuzk_kresult cuzk_k_device_mem_stats(int device, int reset_peak, cuzk_k_mem_stats *out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "device_mem_stats: out is NULL");
    API_GUARD({
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
    })
}

cuzk_kresult cuzk_k_device_release_caches(int device)
{
    API_GUARD({
        return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
            CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
            CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
            free_ntt_tables(ctx);
            return trim_pool(ctx);
        });
    })
}

#ifdef CUZK_FAULT_INJECTION
cuzk_kresult cuzk_k_fault_arm(int phase, int index, int code, int count)
{
    std::lock_guard<std::mutex> lk(g_fault_mu);
    g_fault_phase = count > 0 ? phase : 0;
    g_fault_index = index;
    g_fault_code = code;
    g_fault_left = count;
    return ok();
}

int cuzk_k_fault_streams_busy(int device)
{
    dev_ctx *ctx = nullptr;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (device < 0 || (size_t)device >= g_ctx.size() || !g_ctx[device]) return 0;
        ctx = g_ctx[device];
    }
    std::lock_guard<std::mutex> lk(ctx->mu);
    bool busy = cudaStreamQuery(ctx->s_copy) == cudaErrorNotReady || cudaStreamQuery(ctx->s_comp) == cudaErrorNotReady;
    (void)cudaGetLastError();
    return busy ? 1 : 0;
}

int cuzk_k_fault_fired(void)
{
    std::lock_guard<std::mutex> lk(g_fault_mu);
    return g_fault_fired;
}
#endif

}  // extern "C"
