// cuzk kernels: host-side plumbing shared by all translation units (errors, per-device
// context, stream-ordered device buffers). No kernels here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>
#include <cuda_runtime.h>
#include "cuzk_kernels.h"

namespace cuzk {

inline cuzk_kresult ok() { return cuzk_kresult{0, "ok"}; }
inline cuzk_kresult cuda_err(cudaError_t e) { return cuzk_kresult{(int32_t)e, cudaGetErrorString(e)}; }
inline cuzk_kresult arg_err(int32_t code, const char *msg) { return cuzk_kresult{code, msg}; }

// Contract breakers, for proving that the fault tests catch a broken contract: fault-injection
// builds only, set from CUZK_K_FAULT_BREAK=sync|clear at context creation. `sync`: calls no
// longer wait for their streams before returning; `clear`: failed calls leave CUDA's last error.
#ifdef CUZK_FAULT_INJECTION
extern bool g_break_sync, g_break_clear;
#define CUZK_CLEAR_LAST_ERROR()                                        \
    do {                                                               \
        if (!::cuzk::g_break_clear) (void)cudaGetLastError();          \
    } while (0)
#define CUZK_SYNC_ON_EXIT() (!::cuzk::g_break_sync)
#else
#define CUZK_CLEAR_LAST_ERROR() ((void)cudaGetLastError())
#define CUZK_SYNC_ON_EXIT() true
#endif

// A failed runtime call also records itself as the thread's "last error"; clearing it here
// means a later cudaGetLastError (after a kernel launch) never reports this old failure.
#define CUZK_CK(call)                                                  \
    do {                                                               \
        cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                       \
            CUZK_CLEAR_LAST_ERROR();                                   \
            return ::cuzk::cuda_err(e_);                               \
        }                                                              \
    } while (0)
#define CUZK_CKL() CUZK_CK(cudaGetLastError())
#define CUZK_TRY(expr)                                                 \
    do {                                                               \
        cuzk_kresult r_ = (expr);                                      \
        if (r_.code != 0) return r_;                                   \
    } while (0)

// CUZK_PHASE(ctx, phase, index) records where a call is (run_on copies it into a failed
// result). With -DCUZK_FAULT_INJECTION (the crate's `fault-injection` feature, tests only) it
// also returns the armed CUDA error when the armed phase and index are reached, once.
#ifdef CUZK_FAULT_INJECTION
bool fault_hit(int phase, int index, cudaError_t *code);
#define CUZK_PHASE(ctx, ph, ix)                                        \
    do {                                                               \
        (ctx)->phase = (ph);                                           \
        (ctx)->index = (ix);                                           \
        cudaError_t f_;                                                \
        if (::cuzk::fault_hit((ph), (ix), &f_)) return ::cuzk::cuda_err(f_); \
    } while (0)
#else
#define CUZK_PHASE(ctx, ph, ix)                                        \
    do {                                                               \
        (ctx)->phase = (ph);                                           \
        (ctx)->index = (ix);                                           \
    } while (0)
#endif

struct ntt_tables;  // ntt.cu

// Settings read from the environment once, when a device context is made (the device probe),
// never on the proving path (getenv races a caller's setenv).
struct knobs {
    int window_bits = 0;  // CUZK_K_WINDOW_BITS: force the MSM window (4..20), 0 = cost model
    size_t max_part = 0;  // CUZK_K_MAX_PART: cap the big-scalar part size (tests), 0 = none
    bool profile = false; // CUZK_K_PROFILE: print phase times to stderr
    bool affine = true;   // CUZK_K_AFFINE=0: no affine pair rounds before the bucket walk (A/B runs)
    size_t slice = 0;     // CUZK_K_SLICE: entries per accumulation slice (tests: many slices), 0 = by memory
    double h2d_gbps = 0;  // CUZK_K_EMULATE_H2D_GBPS: host->device copies paced to this link rate (GB/s;
                          // benchmarks emulating a slower bus, e.g. 25 for PCIe Gen4 x16), 0 = as fast as they go
};

// An emulated host->device link (knobs::h2d_gbps): one per device, a serial timeline every
// paced copy reserves its slot on, so copies on both streams share the link as on real hardware.
struct h2d_link {
    std::mutex mu;
    double free_at = 0;  // seconds (steady clock) when the link is free again
};

// Device memory cuzk holds on one device, counted by cuzk itself (pool buffers in use, NTT
// tables, resident bases), and the limit it keeps to (cuzk_k_device_set_limit). Guarded by the
// context's `mu` (every call holds it).
struct mem_account {
    size_t limit = 0;         // 0 = none (the device's own memory is the limit)
    size_t chunk_points = 0;  // streamed MSMs: force this many bases per chunk (0 = from the limit)
    size_t used = 0, peak = 0;
    // Reserve `bytes` (cudaErrorMemoryAllocation past the limit, as a full device would say).
    cudaError_t take(size_t bytes)
    {
        if (limit && (bytes > limit || used > limit - bytes)) return cudaErrorMemoryAllocation;
        used += bytes;
        if (used > peak) peak = used;
        return cudaSuccess;
    }
    void give(size_t bytes) { used = bytes > used ? 0 : used - bytes; }
};

// One per device; `mu` serialises all work on the device.
struct dev_ctx {
    std::mutex mu;
    int device = -1;
    int sm_count = 0;
    cudaStream_t s_comp = nullptr;  // compute stream
    cudaStream_t s_copy = nullptr;  // host->device copy stream
    cudaMemPool_t pool = nullptr;   // our own stream-ordered pool (the default pool is the caller's)
    knobs k;
    int phase = 0, index = 0;       // where the running call is (CUZK_PHASE)
    ntt_tables *tables[32] = {};    // NTT tables per log_m (ntt.cu owns them)
    mem_account mem;
    h2d_link link;
};

// A host->device copy of `bytes` on stream s. With an emulated link rate (knobs::h2d_gbps) the
// stream also waits, after the copy, until the copy's slot on the device's link timeline ends:
// a host function reserves the slot when the copy is about to start (bytes / rate, after the
// slots before it), another sleeps out what the real copy did not take. So every upload of 1 MiB
// or more crosses at most that fast, overlapping compute as before. Benchmarks only: never set
// in production, where the copy is a plain cudaMemcpyAsync.
cudaError_t h2d(dev_ctx *ctx, void *dst, const void *src, size_t bytes, cudaStream_t s);

// cudaMalloc / cudaFree counted in ctx->mem (for memory that outlives a call: tables, bases).
cudaError_t counted_malloc(dev_ctx *ctx, void **p, size_t bytes);
void counted_free(dev_ctx *ctx, void *p, size_t bytes);

// Look up (create on first use) the context of `device`. Does not change the thread's
// current device: run_on() does that, and puts it back.
cuzk_kresult get_ctx(int device, dev_ctx **out);

// A stream-ordered device buffer from the context's pool, allocated and freed on the compute
// stream. Anything the copy stream writes into one must be joined (copy_join) before the
// buffer is destroyed.
// Counted in ctx->mem from alloc to release.
struct dbuf {
    void *p = nullptr;
    cudaStream_t s = nullptr;
    dev_ctx *owner = nullptr;
    size_t bytes = 0;
    dbuf() = default;
    dbuf(const dbuf &) = delete;
    dbuf &operator=(const dbuf &) = delete;
    ~dbuf() { release(); }
    cudaError_t alloc(dev_ctx *ctx, size_t n)
    {
        release();
        if (n == 0) n = 256;
        cudaError_t e = ctx->mem.take(n);
        if (e != cudaSuccess) return e;
        s = ctx->s_comp;
        e = cudaMallocFromPoolAsync(&p, n, ctx->pool, s);
        if (e != cudaSuccess) {
            ctx->mem.give(n);
            p = nullptr;
            return e;
        }
        owner = ctx;
        bytes = n;
        return cudaSuccess;
    }
    void release()
    {
        if (p) {
            cudaFreeAsync(p, s);
            owner->mem.give(bytes);
        }
        p = nullptr;
        bytes = 0;
    }
    template <class T> T *as() const { return static_cast<T *>(p); }
    // Exchange two buffers (both of one stream and context, or empty).
    void swap(dbuf &o)
    {
        std::swap(p, o.p);
        std::swap(s, o.s);
        std::swap(owner, o.owner);
        std::swap(bytes, o.bytes);
    }
};

// Declared after the buffers a function copies into on the copy stream: on every exit (error
// paths included) waits for that stream, so no buffer is freed, and no host buffer handed
// back to the caller, while a copy still touches it.
struct copy_join {
    cudaStream_t sc;
    bool on = true;
    ~copy_join()
    {
        if (on && CUZK_SYNC_ON_EXIT()) cudaStreamSynchronize(sc);
    }
};

// Events created for one call, destroyed with it.
struct event_list {
    std::vector<cudaEvent_t> ev;
    ~event_list() { for (auto e : ev) cudaEventDestroy(e); }
    cudaError_t add(cudaEvent_t *out)
    {
        cudaEvent_t e;
        cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        if (r != cudaSuccess) return r;
        ev.push_back(e);
        *out = e;
        return cudaSuccess;
    }
};

// MSM over device-resident data (msm_g1.cu / msm_g2.cu). d_scalars: device Montgomery
// scalars, or nullptr with h_scalars set (host, copied in chunks overlapping the scan).
// h_density: host bitmap or nullptr. out: host Jacobian (blst_p1 / blst_p2), overwritten; or,
// with accumulate, the result is added to the Jacobian already in *out.
// d_density: the same density words already on the device (streamed chunks: a host copy here
// would wait behind the next chunk's bases on the copy engine), or nullptr.
// kept: buckets that outlive the call (a streamed MSM's, msm/stream.cuh), or nullptr. With them
// the big scalars are sorted at kept->c and added into kept->buckets, which are not reduced
// here: *out receives only the ones' sum, and kept_buckets_finish adds the rest.
struct kept_buckets {
    dbuf buckets;  // window_count(c) * 2^(c-1) XYZZ points, infinity (zero) at first
    int c = 0;     // 0: none allocated
    size_t nbig = 0;  // big scalars added so far
};
template <class F>
cuzk_kresult msm_run(dev_ctx *ctx, const void *d_bases, size_t bases_len, size_t base_offset,
                     const void *d_scalars, const void *h_scalars, size_t n,
                     const uint64_t *h_density, void *out_jacobian, bool accumulate,
                     const uint64_t *d_density = nullptr, kept_buckets *kept = nullptr);

// The last step of an MSM on the host (host_final.cu, blst): out = sum_j 2^(c j) win[j] + ones
// (win: nwin window sums, ones: one point or nullptr, both xyzz_t in the device layout), or
// with accumulate out += that. out is a blst_p1 (g1) / blst_p2 (g2) in Jacobian coordinates.
void host_final_g1(const void *win, int nwin, int c, const void *ones, void *out, bool accumulate);
void host_final_g2(const void *win, int nwin, int c, const void *ones, void *out, bool accumulate);

// What cuzk may still allocate on the context's device: the limit less what it holds, or with
// no limit the device's free memory plus what the pool keeps unused (context.cu).
cuzk_kresult headroom(dev_ctx *ctx, size_t *out);

// Device bytes an H MSM over m - 1 scalars may take beside its inputs, at most (msm_g1.cu).
size_t h_msm_scratch_bound(size_t m);

// A piece of a streamed MSM: scalars [i0, i0 + cnt) (whole density words), bases [b0, b0 + nb).
struct stream_piece { size_t i0, cnt, b0, nb; };

// Selected bases in density word w of an n-scalar MSM (all of the word without a density).
inline size_t word_selected(const uint64_t *density, size_t n, size_t w)
{
    if (!density) return n - w * 64 < 64 ? n - w * 64 : 64;
    uint64_t v = density[w];
    if (w == (n - 1) / 64 && (n & 63)) v &= (1ull << (n & 63)) - 1;
    return (size_t)__builtin_popcountll(v);
}

// The streamed piece that starts at density word w0 (base b0): whole words while it selects at
// most `cap` bases and holds at most 4 * cap scalars (always at least one word).
inline stream_piece next_piece(const uint64_t *density, size_t n, size_t w0, size_t b0, size_t cap)
{
    const size_t nwords = (n + 63) / 64;
    stream_piece cur{w0 * 64, 0, b0, 0};
    for (size_t w = w0; w < nwords; w++) {
        size_t sw = word_selected(density, n, w), cw = n - w * 64 < 64 ? n - w * 64 : 64;
        if (cur.cnt && (cur.nb + sw > cap || cur.cnt + cw > 4 * cap)) break;
        cur.cnt += cw;
        cur.nb += sw;
    }
    return cur;
}

// The pieces of a streamed MSM from density word w and base b on (msm_stream's plan).
inline std::vector<stream_piece> plan_pieces(const uint64_t *density, size_t n, size_t w, size_t b, size_t cap)
{
    std::vector<stream_piece> plan;
    const size_t nwords = (n + 63) / 64;
    while (w < nwords) {
        const stream_piece p = next_piece(density, n, w, b, cap);
        plan.push_back(p);
        w = (p.i0 + p.cnt + 63) / 64;
        b += p.nb;
    }
    return plan;
}

// Scalars of a streamed job worth carrying its first chunk in (copied during the job before).
constexpr size_t STREAM_CARRY_MIN = 4096;
// Bases per chunk of a streamed G1 MSM with `avail` bytes at hand (msm_stream's own rule).
size_t stream_chunk_bases_g1(const dev_ctx *ctx, size_t avail);

// The first chunk of a batch's next streamed MSM, copied while the current one computes its
// last chunk (msm_stream's `in` / `out`). Its copy runs on the copy stream; `copied` (owned by
// the caller) is recorded after it. The buffer is the compute stream's (dbuf).
struct stream_carry {
    dbuf buf;
    const void *h = nullptr;   // host address of the first base copied; nullptr = empty
    size_t cap = 0;            // the piece's cap (bases), which its receiver re-plans with
    stream_piece piece{0, 0, 0, 0};
    cudaEvent_t copied = nullptr;
    void clear() { buf.release(); h = nullptr; cap = 0; piece = stream_piece{0, 0, 0, 0}; }
};
// The MSM a stream_carry is filled for: its host bases (at its base offset), scalars, density.
struct stream_next {
    const void *h_bases;
    size_t n;
    const uint64_t *density;
    size_t elem;  // bytes per base
};

// MSM over bases kept in (registered) host memory: h_bases[base_offset ..] go to the device
// in chunks, double-buffered on the copy stream, each chunk's MSM added up on the device.
// d_scalars: n device scalars. Same selection semantics as msm_run. In a batch: `in` may hold
// this MSM's first chunk (used if it matches, released after that chunk); with `next`, `out`
// receives the next MSM's first chunk, copied during this one's last chunk.
template <class F>
cuzk_kresult msm_stream(dev_ctx *ctx, const void *h_bases, size_t bases_len, size_t base_offset,
                        const void *d_scalars, size_t n, const uint64_t *h_density,
                        void *out_jacobian, stream_carry *in = nullptr, stream_carry *out = nullptr,
                        const stream_next *next = nullptr);

struct device_z;
// msm_stream over the aux of k witnesses on the device, each chunk of bases crossing once for
// all of them (msm/stream.cuh); outs[i]: the i-th witness's result.
template <class F>
cuzk_kresult msm_stream_many(dev_ctx *ctx, const void *h_bases, size_t bases_len, size_t base_offset,
                             const device_z *const *zs, size_t k, size_t n, const uint64_t *h_density,
                             void *const *outs);

// H computation (ntt.cu). Leaves h (m-1 scalars, natural order, Montgomery) in *d_h, which
// the caller owns (allocated on ctx->s_comp). If h_out != nullptr, copies h there too.
// `then` (may be nullptr): a copy queued on the copy stream right behind a, b and c's, so it
// runs during the NTTs (the streamed H MSM's first chunk); its event is recorded after it.
struct queued_copy {
    void *dst;  // allocated on the compute stream before the call
    const void *src;
    size_t bytes;
    cudaEvent_t done;
};
// The witness path's z on the device (witness.cu): the inputs and the aux as the witness gave
// it — compact (bitmap, bits, per-word counts, others) or dense (others = every value).
struct device_z {
    dbuf inputs, mask, vals, before, others;
    size_t num_aux = 0, num_others = 0;
    bool compact = false;
};
// Aux values i0 .. i0 + cnt of z, expanded (Montgomery) into out on the compute stream; z was
// checked on arrival (witness_to_device), so every value exists (witness.cu).
cuzk_kresult expand_aux_range(dev_ctx *ctx, const device_z &z, size_t i0, size_t cnt, void *out);
// a, b, c evaluated on the device: the resident circuit's matrices over z (witness.cu).
struct abc_eval {
    const cuzk_k_circuit *circuit;
    const device_z *z;
};
// Where compute_h_dev finds a, b and c: n host scalars each, copied in on the copy stream; or,
// with `eval`, evaluated into the device buffers on the compute stream (n = the circuit's rows).
struct abc_input {
    const void *host[3] = {};
    size_t n = 0;
    const abc_eval *eval = nullptr;
};
inline abc_input host_abc(const void *a, const void *b, const void *c, size_t n)
{
    abc_input in;
    in.host[0] = a;
    in.host[1] = b;
    in.host[2] = c;
    in.n = n;
    return in;
}
// Matrix k (0 = A, 1 = B, 2 = C) of e's circuit times z into out[0 .. m), zero past its rows.
cuzk_kresult evaluate_matrix(dev_ctx *ctx, const abc_eval &e, int k, void *out, size_t m);  // out: m scalars
cuzk_kresult compute_h_dev(dev_ctx *ctx, const abc_input &in, uint32_t log_m, dbuf &d_h, void *h_out,
                           const queued_copy *then = nullptr);
// Device bytes of the NTT tables for 2^log_m that compute_h_dev allocates (and keeps) on first
// use; 0 when they are already there.
size_t ntt_tables_to_make(const dev_ctx *ctx, uint32_t log_m);
void free_ntt_tables(dev_ctx *ctx);

// Optional phase profiler: with CUZK_K_PROFILE=1 (read at context creation), events are recorded on
// a stream at named points and the phase times are printed to stderr at the end of the call.
struct profiler {
    bool on = false;
    cudaStream_t s = nullptr;
    const char *what = "";
    int n = 0;
    cudaEvent_t ev[32];
    const char *name[32];
    profiler(const char *w, cudaStream_t st, bool enabled);
    void mark(const char *nm)
    {
        if (!on || n >= 32) return;
        if (cudaEventCreate(&ev[n]) != cudaSuccess) { on = false; return; }
        cudaEventRecord(ev[n], s);
        name[n++] = nm;
    }
    ~profiler();
};

}  // namespace cuzk
