// cuzk kernels: NTTs over Fr and the Groth16 H polynomial (bellperson's semantics).
//
// Orders: the inverse transforms are decimation-in-frequency (natural in -> bit-reversed out),
// the forward transform decimation-in-time (bit-reversed in -> natural out), so no explicit
// bit-reversal pass is needed:
//   X <- iNTT_DIF(X)                 (coefficients, bit-reversed)
//   X[j] *= g^brev(j) / m            (coset shift folded with 1/m; table in bit-reversed order;
//                                     applied by the iNTT's last kernel as it writes X out)
//   X <- NTT_DIT(X)                  (evaluations on the coset g*<omega>, natural)
//   for a and b; c is only inverse-transformed (C <- iNTT_DIF(c), unscaled, bit-reversed): then
//   A <- A*B / (g^m - 1)
//   A <- iNTT_DIF(A)                 (bit-reversed)
//   h[i] = A[brev(i)] * g^-i / m - C[brev(i)] / (m (g^m - 1))   (gathered in place in C's
//                                     buffer, natural order), i < m-1
// Six transforms, not seven: Z = g^m - 1 is one constant on the coset, so the inverse coset
// transform of (A*B - C~)/Z, C~ being c on the coset, is iNTT_coset(A*B)/Z - c's coefficients/Z
// (the coset NTT of c and its inverse cancel). Exact in the field: H is the same vector as
// bellperson's (a, b, c satisfying the constraints or not).
// Per log_m tables (cached per device): omega^k (k < m/2; omega^-k = -omega^(m/2-k)), and
// g^brev(j)/m and g^-i/m as two-level tables: ~m/2 scalars.
#include "common.cuh"
#include "field.cuh"
#include <algorithm>

namespace cuzk {

struct ntt_tables {
    uint32_t log_m = 0;
    fr_t *tw = nullptr;     // omega^k, k < m/2 (the inverse's omega^-k from it: twiddle_at)
    // Coset factors as two-level tables (v = hi[e >> lo_log] * lo[e & mask]): m/2^lo_log +
    // 2^lo_log values instead of m, one extra multiplication per element.
    //   coset scale g^brev(j) / m:  cs_hi (with the 1/m), cs_lo
    //   inverse coset g^-i / m:     ics_hi (with the 1/m), ics_lo
    int lo_log = 0;
    fr_t *small = nullptr;  // one allocation holding the four tables
    fr_t *cs_hi = nullptr, *cs_lo = nullptr, *ics_hi = nullptr, *ics_lo = nullptr;
    fr_t *consts = nullptr; // see k_consts
    size_t bytes = 0;       // device bytes of this set (counted in the context)
};

namespace {

constexpr int SH_LOG = 10;  // stages fused in shared memory (2^10 scalars = 32 KiB per block)

// consts layout: [0,32) omega^(2^t), [32,64) omega^-(2^t), [64,96) g^(2^t), [96,128) g^-(2^t),
// [128] 1/m, [129] 1/(g^m - 1), [130] 1/(m (g^m - 1))
__global__ void k_consts(fr_t *out, int L)
{
#ifdef __CUDA_ARCH__
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    // Scalar::ROOT_OF_UNITY and ROOT_OF_UNITY_INV of blstrs (Montgomery limbs), order 2^32.
    fr_t w = fr_from_u64x4(0xb9b58d8c5f0e466aULL, 0x5b1b4c801819d7ecULL, 0x0af53ae352a31e64ULL,
                           0x5bf3adda19e9b27bULL);
    fr_t wi = fr_from_u64x4(0x4256481adcf3219aULL, 0x45f37b7f96b6cad3ULL, 0xf9c3f1d75f7a3b27ULL,
                            0x2d2fc049658afd43ULL);
    for (int i = L; i < 32; i++) { w.sqr(); wi.sqr(); }
    fr_t one = fr_t::one();
    fr_t g = one + one;          // 2
    g = g + g + g + one;         // 7
    fr_t gi = fr_inverse(g);
    fr_t mm = one;
    for (int i = 0; i < L; i++) mm = mm + mm;
    fr_t minv = fr_inverse(mm);
    for (int t = 0; t < 32; t++) {
        out[t] = w; out[32 + t] = wi; out[64 + t] = g; out[96 + t] = gi;
        if (t < L) {  // g^(2^L) must stay in g after the loop for Z
            w.sqr(); wi.sqr(); g.sqr(); gi.sqr();
        }
    }
    // after L squarings g holds g^m
    out[128] = minv;
    out[129] = fr_inverse(g - one);
    out[130] = out[128] * out[129];
#endif
}

// dst[j] = scale * prod_{bit t of e(j)} pows[t], e(j) = j or brev_L(j)
__global__ void k_pow_table(fr_t *dst, size_t count, const fr_t *pows, const fr_t *scale, int L,
                            bool bitrev)
{
#ifdef __CUDA_ARCH__
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < count;
         j += (size_t)gridDim.x * blockDim.x) {
        uint32_t e = bitrev ? (__brev((uint32_t)j) >> (32 - L)) : (uint32_t)j;
        fr_t v = scale ? *scale : fr_t::one();
        for (int t = 0; e; t++, e >>= 1)
            if (e & 1) v = v * pows[t];
        dst[j] = v;
    }
#endif
}

// The twiddle omega^k (forward, DIT) or omega^-k (inverse, DIF) for k < m/2 from the one table
// of omega^k: omega^-k = omega^(m-k) = -omega^(m/2-k) for k > 0 (omega^(m/2) = -1). One table
// of m/2 scalars instead of two (2 GiB less at 2^27: what a 16 GiB card needs).
template <bool FWD>
__device__ __forceinline__ fr_t twiddle_at(const fr_t *tw, size_t k, int L)
{
    if (FWD || k == 0) return tw[k];
    return -tw[((size_t)1 << (L - 1)) - k];
}

// Scalars in shared memory as two planes of 16-byte halves: a warp reading 32 consecutive
// scalars then reads 512 contiguous bytes per plane, which the banks serve without conflicts
// (whole 32-byte scalars at a 32-byte stride gave two-way conflicts on every 16-byte access).
struct sh_planes {
    uint4 *lo, *hi;
    __device__ __forceinline__ fr_t get(uint32_t e) const
    {
        fr_t v;
        uint4 *q = reinterpret_cast<uint4 *>(&v);
        q[0] = lo[e];
        q[1] = hi[e];
        return v;
    }
    __device__ __forceinline__ void set(uint32_t e, const fr_t &v) const
    {
        const uint4 *q = reinterpret_cast<const uint4 *>(&v);
        lo[e] = q[0];
        hi[e] = q[1];
    }
};

// The coset scale g^brev(j) / m of scalar j from the two-level tables (see ntt_tables).
struct coset_tabs {
    const fr_t *hi = nullptr, *lo = nullptr;
    int lo_log = 0;
    __device__ __forceinline__ fr_t at(size_t j, int L) const
    {
        const uint32_t e = __brev((uint32_t)j) >> (32 - L);
        return hi[e >> lo_log] * lo[e & ((1u << lo_log) - 1)];
    }
};

// Stages lh = S-1 .. 0 (DIF) or 0 .. S-1 (DIT) inside blocks of 2^S contiguous scalars. With
// cs.hi set (DIF only: the last pass of the inverse transform) each scalar leaves scaled by its
// coset factor, which saves the separate pass over the vector.
template <bool DIT>
__global__ void __launch_bounds__(1 << (SH_LOG - 1), 2)
    k_shared_stages(fr_t *x, const fr_t *tw, int L, int S, coset_tabs cs)
{
#ifdef __CUDA_ARCH__
    __shared__ uint4 smem[2 << SH_LOG];
    const sh_planes sh{smem, smem + ((size_t)1 << S)};
    const uint32_t half = 1u << (S - 1);
    const uint32_t tid = threadIdx.x;
    fr_t *blk = x + ((size_t)blockIdx.x << S);
    sh.set(tid, blk[tid]);
    sh.set(tid + half, blk[tid + half]);
    // The twiddle of each stage is loaded one stage ahead, so its latency hides behind the
    // previous stage's products and barrier.
    auto twiddle = [&](int lh) { return twiddle_at<DIT>(tw, (size_t)(tid & ((1u << lh) - 1)) << (L - 1 - lh), L); };
    fr_t w_next = twiddle(DIT ? 0 : S - 1);
    __syncthreads();
    for (int st = 0; st < S; st++) {
        int lh = DIT ? st : (S - 1 - st);
        uint32_t h = 1u << lh;
        uint32_t j = tid & (h - 1);
        uint32_t i = ((tid >> lh) << (lh + 1)) | j;
        fr_t w = w_next;
        if (st + 1 < S) w_next = twiddle(DIT ? lh + 1 : lh - 1);
        fr_t u = sh.get(i), v = sh.get(i + h);
        if (DIT) {
            v = v * w;
            sh.set(i, u + v);
            sh.set(i + h, u - v);
        } else {
            sh.set(i, u + v);
            sh.set(i + h, (u - v) * w);
        }
        __syncthreads();
    }
    if (!DIT && cs.hi) {
        const size_t j0 = ((size_t)blockIdx.x << S) + tid;
        blk[tid] = sh.get(tid) * cs.at(j0, L);
        blk[tid + half] = sh.get(tid + half) * cs.at(j0 + half, L);
        return;
    }
    blk[tid] = sh.get(tid);
    blk[tid + half] = sh.get(tid + half);
#endif
}

// Stages lh in [lo, lo+k) (DIF: descending, DIT: ascending) on strided sub-transforms:
// elements base + c + jj * 2^lo (jj < 2^k) for GC consecutive columns c per block, in shared
// memory (GC * 2^k scalars, dynamic: a pass of fewer stages takes less and fits more blocks), one
// global read + write per k stages.
constexpr int GC = 8, GK = 7;  // at most 8 * 2^7 * 32 B = 32 KiB
template <bool DIT>
__global__ void __launch_bounds__(GC << (GK - 1), 2) k_ntt_group(fr_t *x, const fr_t *tw, int L, int lo, int k)
{
#ifdef __CUDA_ARCH__
    extern __shared__ uint4 dsmem[];
    const sh_planes sh{dsmem, dsmem + (GC << k)};
    const size_t s = (size_t)1 << lo;
    const size_t ncg = s / GC;
    const size_t g = blockIdx.x / ncg, cg = blockIdx.x % ncg;
    const size_t base = (g << (lo + k)) + cg * GC;
    const uint32_t nel = GC << k, nthr = GC << (k - 1);
    const uint32_t tid = threadIdx.x;
    for (uint32_t e = tid; e < nel; e += nthr) {
        uint32_t col = e % GC, jj = e / GC;
        sh.set(e, x[base + col + (size_t)jj * s]);
    }
    const uint32_t col = tid % GC, p = tid / GC;
    const size_t c = cg * GC + col;
    // Twiddles one stage ahead (as in k_shared_stages): at 2^26 the top stages' twiddles come
    // from DRAM, and a load per stage behind the barrier exposed its latency.
    auto twiddle = [&](int r) {
        return twiddle_at<DIT>(tw, (c + (size_t)(p & ((1u << r) - 1)) * s) << (L - 1 - (lo + r)), L);
    };
    fr_t w_next = twiddle(DIT ? 0 : k - 1);
    __syncthreads();
    for (int st = 0; st < k; st++) {
        int r = DIT ? st : (k - 1 - st);
        uint32_t hh = 1u << r;
        uint32_t jlo = ((p >> r) << (r + 1)) | (p & (hh - 1));
        fr_t w = w_next;
        if (st + 1 < k) w_next = twiddle(DIT ? r + 1 : r - 1);
        uint32_t a = jlo * GC + col, b = (jlo + hh) * GC + col;
        fr_t u = sh.get(a), v = sh.get(b);
        if (DIT) {
            v = v * w;
            sh.set(a, u + v);
            sh.set(b, u - v);
        } else {
            sh.set(a, u + v);
            sh.set(b, (u - v) * w);
        }
        __syncthreads();
    }
    for (uint32_t e = tid; e < nel; e += nthr) {
        uint32_t cl = e % GC, jj = e / GC;
        x[base + cl + (size_t)jj * s] = sh.get(e);
    }
#endif
}

// a = a * b / Z on the coset (zinv = 1/(g^m - 1)).
__global__ void k_mul_z(fr_t *a, const fr_t *b, const fr_t *zinv, size_t m)
{
#ifdef __CUDA_ARCH__
    fr_t z = *zinv;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += (size_t)gridDim.x * blockDim.x)
        a[i] = a[i] * b[i] * z;
#endif
}

// H's coefficients in natural order, written over c (both inputs bit-reversed, L >= 1):
// h[i] = x[brev(i)] * g^-i / m - c[brev(i)] * zm, zm = 1/(m (g^m - 1)), the g^-i / m factor from
// the two-level tables. In place: bit reversal pairs the indices, and the thread of a pair's
// lower index reads both of its c's before it writes either.
__global__ void k_gather_h(fr_t *c, const fr_t *x, const fr_t *hi, const fr_t *lo, int lo_log, int L,
                           const fr_t *zm_p, size_t m)
{
#ifdef __CUDA_ARCH__
    const uint32_t mask = (1u << lo_log) - 1;
    const fr_t zm = *zm_p;
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < m; t += (size_t)gridDim.x * blockDim.x) {
        const uint32_t i = (uint32_t)t, j = __brev(i) >> (32 - L);
        if (j < i) continue;
        const fr_t xi = x[i], xj = x[j], ci = c[i], cj = c[j];
        c[i] = xj * (hi[i >> lo_log] * lo[i & mask]) - cj * zm;
        if (j != i) c[j] = xi * (hi[j >> lo_log] * lo[j & mask]) - ci * zm;
    }
#endif
}

inline unsigned grid_for(size_t n, int tpb, int sms)
{
    size_t g = (n + tpb - 1) / tpb;
    return (unsigned)std::min<size_t>(std::max<size_t>(g, 1), (size_t)sms * 32);
}

// The strided stages above the shared-memory ones go in the fewest passes of at most GK stages,
// split evenly: at 2^26 (16 stages) 6 + 5 + 5, not 7 + 7 + 2, whose short last pass would run
// blocks of 16 threads (a nearly empty device: a pass of 2 stages costs about what one of 7 does).
inline int passes(int stages) { return (stages + GK - 1) / GK; }

// DIF in two steps: the strided passes, then the shared-memory stages (which apply cs, the
// coset scale, on the way out when set: see k_shared_stages).
cuzk_kresult ntt_dif_strided(dev_ctx *ctx, fr_t *x, const fr_t *tw, int L)
{
    cudaStream_t s = ctx->s_comp;
    int S = std::min(L, SH_LOG);
    for (int hi = L, np = passes(L - S); hi > S; np--) {  // stages [lo, hi) in one pass
        int k = (hi - S + np - 1) / np, lo = hi - k;
        size_t blocks = ((size_t)1 << (L - lo - k)) * (((size_t)1 << lo) / GC);
        k_ntt_group<false><<<(unsigned)blocks, GC << (k - 1), (GC << k) * sizeof(fr_t), s>>>(x, tw, L, lo, k);
        CUZK_CKL();
        hi = lo;
    }
    return ok();
}

cuzk_kresult ntt_dif_last(dev_ctx *ctx, fr_t *x, const fr_t *tw, int L, coset_tabs cs)
{
    int S = std::min(L, SH_LOG);
    k_shared_stages<false><<<(unsigned)((size_t)1 << (L - S)), 1u << (S - 1), 0, ctx->s_comp>>>(x, tw, L, S, cs);
    CUZK_CKL();
    return ok();
}

cuzk_kresult ntt_dit(dev_ctx *ctx, fr_t *x, const fr_t *tw, int L)
{
    cudaStream_t s = ctx->s_comp;
    int S = std::min(L, SH_LOG);
    k_shared_stages<true><<<(unsigned)((size_t)1 << (L - S)), 1u << (S - 1), 0, s>>>(x, tw, L, S, coset_tabs{});
    CUZK_CKL();
    for (int lo = S, np = passes(L - S); lo < L; np--) {
        int k = (L - lo + np - 1) / np;
        size_t blocks = ((size_t)1 << (L - lo - k)) * (((size_t)1 << lo) / GC);
        k_ntt_group<true><<<(unsigned)blocks, GC << (k - 1), (GC << k) * sizeof(fr_t), s>>>(x, tw, L, lo, k);
        CUZK_CKL();
        lo += k;
    }
    return ok();
}

void destroy_tables(dev_ctx *ctx, ntt_tables *t)
{
    if (!t) return;
    size_t m = (size_t)1 << t->log_m;
    counted_free(ctx, t->tw, (m / 2) * sizeof(fr_t));
    counted_free(ctx, t->small, (2 * ((m >> t->lo_log) + ((size_t)1 << t->lo_log))) * sizeof(fr_t));
    counted_free(ctx, t->consts, 160 * sizeof(fr_t));
    delete t;
}

cuzk_kresult get_tables(dev_ctx *ctx, uint32_t L, ntt_tables **out)
{
    if (ctx->tables[L]) { *out = ctx->tables[L]; return ok(); }
    cudaStream_t s = ctx->s_comp;
    size_t m = (size_t)1 << L;
    ntt_tables *t = new ntt_tables;
    t->log_m = L;
    t->lo_log = (int)(L + 1) / 2;
    const size_t nlo = (size_t)1 << t->lo_log, nhi = m >> t->lo_log;
    cudaError_t e = cudaSuccess;
    if (e == cudaSuccess) e = counted_malloc(ctx, (void **)&t->tw, (m / 2) * sizeof(fr_t));
    if (e == cudaSuccess) e = counted_malloc(ctx, (void **)&t->small, 2 * (nhi + nlo) * sizeof(fr_t));
    if (e == cudaSuccess) e = counted_malloc(ctx, (void **)&t->consts, 160 * sizeof(fr_t));
    if (e != cudaSuccess) { CUZK_CLEAR_LAST_ERROR(); destroy_tables(ctx, t); return cuda_err(e); }
    t->cs_hi = t->small;
    t->cs_lo = t->cs_hi + nhi;
    t->ics_hi = t->cs_lo + nlo;
    t->ics_lo = t->ics_hi + nhi;
    int sms = ctx->sm_count;
    k_consts<<<1, 1, 0, s>>>(t->consts, (int)L);
    e = cudaGetLastError();
    if (e == cudaSuccess) {
        k_pow_table<<<grid_for(m / 2, 256, sms), 256, 0, s>>>(t->tw, m / 2, t->consts + 0, nullptr, (int)L, false);
        e = cudaGetLastError();
    }
    // hi[j] = g^(j * 2^lo_log) / m (powers g^(2^(t + lo_log))), lo[j] = g^j; and with g^-1.
    const fr_t *minv = t->consts + 128;
    const int lo = t->lo_log;
    if (e == cudaSuccess) {
        k_pow_table<<<grid_for(nhi, 256, sms), 256, 0, s>>>(t->cs_hi, nhi, t->consts + 64 + lo, minv, (int)L, false);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
        k_pow_table<<<grid_for(nlo, 256, sms), 256, 0, s>>>(t->cs_lo, nlo, t->consts + 64, nullptr, (int)L, false);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
        k_pow_table<<<grid_for(nhi, 256, sms), 256, 0, s>>>(t->ics_hi, nhi, t->consts + 96 + lo, minv, (int)L, false);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
        k_pow_table<<<grid_for(nlo, 256, sms), 256, 0, s>>>(t->ics_lo, nlo, t->consts + 96, nullptr, (int)L, false);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) { CUZK_CLEAR_LAST_ERROR(); destroy_tables(ctx, t); return cuda_err(e); }
    ctx->tables[L] = t;
    *out = t;
    return ok();
}

}  // namespace

void free_ntt_tables(dev_ctx *ctx)
{
    for (auto &t : ctx->tables) { destroy_tables(ctx, t); t = nullptr; }
}

size_t ntt_tables_to_make(const dev_ctx *ctx, uint32_t log_m)
{
    if (ctx->tables[log_m]) return 0;
    const size_t m = (size_t)1 << log_m;
    const size_t lo = (size_t)1 << ((log_m + 1) / 2);
    return (m / 2 + 2 * ((m / lo) + lo) + 160) * sizeof(fr_t);
}

cuzk_kresult compute_h_dev(dev_ctx *ctx, const abc_input &in, uint32_t log_m, dbuf &d_h, void *h_out,
                           const queued_copy *then)
{
    const size_t n = in.n;
    const int L = (int)log_m;
    const size_t m = (size_t)1 << L;
    cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
    const int sms = ctx->sm_count;
    ntt_tables *T = nullptr;
    ctx->phase = CUZK_K_PHASE_ABC_COPY;
    ctx->index = 0;
    CUZK_TRY(get_tables(ctx, log_m, &T));

    profiler prof("compute_h", s, ctx->k.profile);
    // Evaluated on the device, c is made in b's buffer once a·b is taken: two buffers.
    dbuf dx[3];
    for (int k = 0; k < (in.eval ? 2 : 3); k++) CUZK_CK(dx[k].alloc(ctx, m * sizeof(fr_t)));
    copy_join join{sc};  // a, b, c are copied into dx on the copy stream
    cudaEvent_t ev[4] = {};
    struct ev_guard {
        cudaEvent_t *e;
        ~ev_guard() { for (int i = 0; i < 4; i++) if (e[i]) cudaEventDestroy(e[i]); }
    } guard{ev};
    for (int k = 0; k < 4; k++) CUZK_CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
    CUZK_CK(cudaEventRecord(ev[3], s));  // allocations done
    CUZK_CK(cudaStreamWaitEvent(sc, ev[3], 0));
    // All three copies are queued at once on the copy stream; each transform waits for its own.
    // Evaluated on the device instead, each vector is made on the compute stream just before
    // its transform (below), and the copy stream carries only `then`.
    for (int k = 0; k < 3 && !in.eval; k++) {
        fr_t *x = dx[k].as<fr_t>();
        if (n) CUZK_CK(h2d(ctx, x, in.host[k], n * sizeof(fr_t), sc));
        if (n < m) CUZK_CK(cudaMemsetAsync(x + n, 0, (m - n) * sizeof(fr_t), sc));
        CUZK_CK(cudaEventRecord(ev[k], sc));
    }
    if (then) {
        CUZK_CK(h2d(ctx, then->dst, then->src, then->bytes, sc));
        CUZK_CK(cudaEventRecord(then->done, sc));
    }
    CUZK_PHASE(ctx, CUZK_K_PHASE_ABC_COPY, 0);
    // c's buffer: b's when evaluated on the device (c is made once A·B/Z is taken).
    dbuf &dc = dx[in.eval ? 1 : 2];
    for (int k = 0; k < 3; k++) {
        fr_t *x = (k == 2 ? dc : dx[k]).as<fr_t>();
        if (k == 2) {
            CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, CUZK_K_NTT_STEP_POINTWISE);
            k_mul_z<<<grid_for(m, 256, sms), 256, 0, s>>>(dx[0].as<fr_t>(), dx[1].as<fr_t>(), T->consts + 129, m);
            CUZK_CKL();
            if (!in.eval) dx[1].release();
            prof.mark("pointwise");
        }
        if (in.eval) {
            CUZK_TRY(evaluate_matrix(ctx, *in.eval, k, x, m));
            prof.mark(k == 0 ? "spmv_a" : k == 1 ? "spmv_b" : "spmv_c");
        } else {
            CUZK_CK(cudaStreamWaitEvent(s, ev[k], 0));
            prof.mark(k == 0 ? "wait_a" : k == 1 ? "wait_b" : "wait_c");
        }
        CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, 3 * k);
        CUZK_TRY(ntt_dif_strided(ctx, x, T->tw, L));
        CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, 3 * k + 1);
        if (k == 2) {  // c: coefficients only (bit-reversed, unscaled)
            CUZK_TRY(ntt_dif_last(ctx, x, T->tw, L, coset_tabs{}));
            prof.mark("intt");
            break;
        }
        CUZK_TRY(ntt_dif_last(ctx, x, T->tw, L, coset_tabs{T->cs_hi, T->cs_lo, T->lo_log}));
        CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, 3 * k + 2);
        CUZK_TRY(ntt_dit(ctx, x, T->tw, L));
        prof.mark("intt+coset+ntt");
    }
    CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, CUZK_K_NTT_STEP_INVERSE);
    CUZK_TRY(ntt_dif_strided(ctx, dx[0].as<fr_t>(), T->tw, L));
    CUZK_TRY(ntt_dif_last(ctx, dx[0].as<fr_t>(), T->tw, L, coset_tabs{}));
    CUZK_PHASE(ctx, CUZK_K_PHASE_NTT, CUZK_K_NTT_STEP_GATHER);
    if (m > 1) {
        k_gather_h<<<grid_for(m, 256, sms), 256, 0, s>>>(dc.as<fr_t>(), dx[0].as<fr_t>(), T->ics_hi, T->ics_lo,
                                                         T->lo_log, L, T->consts + 130, m);
        CUZK_CKL();
    }
    d_h.swap(dc);  // H's m - 1 coefficients (and one more, zero for a satisfied system)
    dx[0].release();
    prof.mark("intt+gather");
    if (h_out && m > 1)
        CUZK_CK(cudaMemcpyAsync(h_out, d_h.p, (m - 1) * sizeof(fr_t), cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    prof.mark("d2h");
    return ok();
}

}  // namespace cuzk
