// cuzk kernels, MSM: bucket accumulation over the sorted (key, point) lists. Affine pair rounds
// while they merge enough (batched inversions), then the segmented walk (each run of a bucket cut
// into tasks of at most T points, hot buckets spread over many tasks and re-combined), cut into
// slices at bucket boundaries so the rounds' buffers fit; and the plain sum of the scalars equal
// to 1 (no buckets at all).
#pragma once
#include "common.cuh"
#include "curve.cuh"
#include "msm/reduce.cuh"
#include <cub/cub.cuh>
#include <vector>
#include <algorithm>
#include <cstdio>

// Tuning knobs, fixed at compile time (benchmarks build variants with -D).
#ifndef CUZK_AFF_K1
#define CUZK_AFF_K1 32
#endif
#ifndef CUZK_AFF_MINB1
#define CUZK_AFF_MINB1 4
#endif
#ifndef CUZK_AFF_K2
#define CUZK_AFF_K2 32
#endif
#ifndef CUZK_AFF_MINB2
#define CUZK_AFF_MINB2 1
#endif
#ifndef CUZK_SEG_MINB
#define CUZK_SEG_MINB 1
#endif


namespace cuzk {
namespace {

template <class F, bool IDX>
__device__ __forceinline__ affine_t<F> load_entry(const affine_t<F> *src, const uint32_t *vals, uint32_t e)
{
#ifdef __CUDA_ARCH__
    if (!IDX) return src[e];
    uint32_t v = vals[e];
    affine_t<F> p = src[v & 0x7fffffffu];
    if ((v >> 31) && !aff_is_inf(p)) p.y = f_neg(p.y);
    return p;
#else
    return affine_t<F>{};
#endif
}

template <class F, bool IDX>
__device__ __forceinline__ F load_x(const affine_t<F> *src, const uint32_t *vals, uint32_t e)
{
#ifdef __CUDA_ARCH__
    return IDX ? src[vals[e] & 0x7fffffffu].x : src[e].x;
#else
    return F{};
#endif
}

// Segmented accumulation: thread t sums the sorted entries [t*T, min((t+1)*T, nvalid)) run by
// run. Runs strictly inside the segment are complete buckets (written directly); the first and
// the last run of a segment may continue in a neighbour, so they go to P[2t] / P[2t+1] (a
// single-run segment writes its sum to P[2t] and an infinity with the same key to P[2t+1], so
// equal keys stay contiguous in P). Every thread does exactly T additions: no divergence from
// uneven bucket sizes, and hot buckets cost nothing extra. The entries are base indices (IDX)
// or the affine points the pair rounds left (see k_pair_round).
template <class F, bool IDX>
__global__ void __launch_bounds__(128, CUZK_SEG_MINB) k_seg_accum(const affine_t<F> *src, const uint32_t *keys,
                                                   const uint32_t *vals, uint32_t nvalid, uint32_t T,
                                                   uint32_t nseg, xyzz_t<F> *buckets, uint32_t *pkey,
                                                   xyzz_t<F> *pval)
{
#ifdef __CUDA_ARCH__
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseg) return;
    uint32_t start = t * T, end = min(start + T, nvalid);
    uint32_t cur = keys[start];
    bool first = true;
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (uint32_t e = start; e < end; e++) {
        uint32_t k = keys[e];
        if (k != cur) {
            if (first) { pkey[2 * t] = cur; pval[2 * t] = acc; first = false; }
            else buckets[cur] = acc;
            xyzz_set_inf(acc);
            cur = k;
        }
        affine_t<F> p = load_entry<F, IDX>(src, vals, e);
        if (!aff_is_inf(p)) xyzz_add_affine(acc, p.x, p.y);
    }
    if (first) {
        pkey[2 * t] = cur; pval[2 * t] = acc;
        xyzz_set_inf(acc);
    }
    pkey[2 * t + 1] = cur;
    pval[2 * t + 1] = acc;
#endif
}

// ---- affine pair rounds (before the segmented walk) ----
// A round pairs the sorted entries (2p, 2p+1). A pair with equal keys becomes one entry, their
// affine sum; any other pair passes through as it is, so the output stays sorted by key and each
// bucket's run about halves. An affine addition costs 3 products plus a share of one inversion;
// the inversions of a block's 128 x AFF_K pairs are batched (Montgomery's trick: prefix products
// per thread, a product tree over the block in shared memory, one inversion by warp 0), about 3
// more products per addition, against 10 for the xyzz mixed addition of the walk. The products are
// inline for both groups (G2's f_mul is an out-of-line call elsewhere; these rounds are hot enough
// that the inline product pays for its code size).
constexpr int AFF_TPB = 128;
// Pairs per thread (the inversions of 128 x K pairs share one) and the launch bounds' blocks per
// SM, per group: measured on the H200 at 2^24 (kernels/NOTES.md).
template <class F> constexpr int aff_k() { return sizeof(F) == 48 ? CUZK_AFF_K1 : CUZK_AFF_K2; }
template <class F> constexpr int aff_minb() { return sizeof(F) == 48 ? CUZK_AFF_MINB1 : CUZK_AFF_MINB2; }

#ifdef __CUDA_ARCH__
// 1/a, a != 0. Warp-collective (sppark's reciprocal pairs neighbouring lanes): every lane of
// the warp must call it.
DEVI fp_t f_inv(const fp_t &a) { return a.reciprocal(); }
DEVI fp2_t f_inv(const fp2_t &a)
{
    fp_t n = a.c0 * a.c0 + a.c1 * a.c1;  // the norm; 1/(a0 + a1 u) = (a0 - a1 u) / n
    fp_t ni = n.reciprocal();
    fp2_t r;
    r.c0 = a.c0 * ni;
    r.c1 = -(a.c1 * ni);
    return r;
}

// How a merging pair (P, Q) adds: 1 = general (d = xQ - xP), 2 = doubling (d = 2y), 0 = no
// inversion (an infinity among them, or P == -Q, or a doubling of a point with y = 0: d = 1).
template <class F> DEVI int pair_kind(const affine_t<F> &P, const affine_t<F> &Q, F &d)
{
    if (aff_is_inf(P) || aff_is_inf(Q)) return 0;
    d = f_sub(Q.x, P.x);
    if (!f_is_zero(d)) return 1;
    if (f_is_zero(f_sub(Q.y, P.y)) && !f_is_zero(P.y)) {
        d = f_dbl(P.y);
        return 2;
    }
    return 0;
}
#endif

// cnt[p] = entries pair p leaves (1 if it merges or is the odd last entry, else 2); cnt[npairs] = 0.
__global__ void k_pair_count(const uint32_t *keys, uint32_t n, uint32_t npairs, uint32_t *cnt)
{
    uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p > npairs) return;
    if (p == npairs) { cnt[p] = 0; return; }
    uint32_t e1 = 2 * p + 1;
    cnt[p] = e1 < n ? (keys[2 * p] == keys[e1] ? 1u : 2u) : 1u;
}

// One round over n entries (npairs = ceil(n/2) pairs); pos = exclusive sum of k_pair_count.
// Thread t of block b takes the pairs b*128*K + k*128 + t, k < K (coalesced).
template <class F, bool IDX>
__global__ void __launch_bounds__(AFF_TPB, aff_minb<F>()) k_pair_round(const affine_t<F> *src, const uint32_t *keys,
                                                        const uint32_t *vals, uint32_t n, uint32_t npairs,
                                                        const uint32_t *pos, uint32_t *okeys,
                                                        affine_t<F> *opts)
{
#ifdef __CUDA_ARCH__
    constexpr int AFF_K = aff_k<F>();
    __shared__ __align__(16) unsigned char smem[2 * AFF_TPB * sizeof(F)];
    F *node = reinterpret_cast<F *>(smem);  // product tree, heap order: node[1] root, leaves at TPB + t
    const uint32_t t = threadIdx.x;
    const uint32_t base = blockIdx.x * AFF_TPB * AFF_K + t;
    F pre[AFF_K];  // pre[k]: product of this thread's d over its pairs 0..k
    F acc;
    f_set_one(acc);
    for (int k = 0; k < AFF_K; k++) {
        uint32_t p = base + (uint32_t)k * AFF_TPB;
        if (p < npairs && 2 * p + 1 < n && keys[2 * p] == keys[2 * p + 1]) {
            // x alone decides the common case (x != 0 is never the infinity (0, 0), and distinct
            // x need no y); the rest loads the whole points.
            F x0 = load_x<F, IDX>(src, vals, 2 * p), x1 = load_x<F, IDX>(src, vals, 2 * p + 1);
            F d = f_sub(x1, x0);
            if (f_is_zero(d) || f_is_zero(x0) || f_is_zero(x1)) {
                affine_t<F> P = load_entry<F, IDX>(src, vals, 2 * p), Q = load_entry<F, IDX>(src, vals, 2 * p + 1);
                if (pair_kind(P, Q, d)) acc = f_mul_inl(acc, d);
            } else {
                acc = f_mul_inl(acc, d);
            }
        }
        pre[k] = acc;
    }
    node[AFF_TPB + t] = acc;
    for (uint32_t L = AFF_TPB / 2; L >= 1; L >>= 1) {
        __syncthreads();
        if (t < L) node[L + t] = f_mul_inl(node[2 * (L + t)], node[2 * (L + t) + 1]);
    }
    __syncthreads();
    if (t < 32) {  // the whole of warp 0: the inversion is warp-collective
        F r = f_inv(node[1]);
        if (t == 0) node[1] = r;
    }
    for (uint32_t L = 1; L < AFF_TPB; L <<= 1) {
        __syncthreads();
        if (t < L) {
            uint32_t j = L + t;
            F a = node[2 * j], b = node[2 * j + 1], iv = node[j];
            node[2 * j] = f_mul_inl(iv, b);
            node[2 * j + 1] = f_mul_inl(iv, a);
        }
    }
    __syncthreads();
    F inv_run = node[AFF_TPB + t];  // 1 / (product of this thread's d)
    for (int k = AFF_K - 1; k >= 0; k--) {
        uint32_t p = base + (uint32_t)k * AFF_TPB;
        if (p >= npairs) continue;
        const uint32_t e0 = 2 * p, e1 = 2 * p + 1, o = pos[p];
        const uint32_t k0 = keys[e0];
        affine_t<F> P = load_entry<F, IDX>(src, vals, e0);
        if (e1 >= n || keys[e1] != k0) {
            okeys[o] = k0;
            opts[o] = P;
            if (e1 < n) {
                okeys[o + 1] = keys[e1];
                opts[o + 1] = load_entry<F, IDX>(src, vals, e1);
            }
            continue;
        }
        affine_t<F> Q = load_entry<F, IDX>(src, vals, e1), R;
        F d;
        int kind = pair_kind(P, Q, d);
        if (kind) {
            F inv = k > 0 ? f_mul_inl(inv_run, pre[k - 1]) : inv_run;
            inv_run = f_mul_inl(inv_run, d);
            F num;  // lambda's numerator: yQ - yP, or 3 xP^2 for a doubling
            if (kind == 1) {
                num = f_sub(Q.y, P.y);
            } else {
                F x2 = f_sqr_inl(P.x);
                num = f_add(f_dbl(x2), x2);
            }
            F lam = f_mul_inl(num, inv);
            R.x = f_sub(f_sub(f_sqr_inl(lam), P.x), Q.x);  // Q.x == P.x for a doubling
            R.y = f_sub(f_mul_inl(lam, f_sub(P.x, R.x)), P.y);
        } else if (aff_is_inf(P)) {
            R = Q;
        } else if (aff_is_inf(Q)) {
            R = P;
        } else {  // P == -Q, or 2P with y = 0: infinity
            f_set_zero(R.x);
            f_set_zero(R.y);
        }
        okeys[o] = k0;
        opts[o] = R;
    }
#endif
}

// Slice bounds of a sorted key array: out[j] = the first index after the run that holds entry
// j*S - 1 (0 < j < nsl), out[0] = 0, out[nsl] = n. Buckets never straddle two slices.
__global__ void k_slice_bounds(const uint32_t *keys, uint32_t n, uint32_t S, uint32_t nsl, uint32_t *out)
{
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > nsl) return;
    if (j == 0) { out[0] = 0; return; }
    if (j == nsl || (size_t)j * S >= n) { out[j] = n; return; }
    const uint32_t x = keys[j * S - 1];
    uint32_t lo = j * S, hi = n;  // first index with key > x
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    out[j] = lo;
}

// nvalid = index of the first sentinel key in the sorted array (or n).
__global__ void k_find_sentinel(const uint32_t *keys, uint32_t n, uint32_t sentinel, uint32_t *out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    uint32_t lo = 0, hi = n;  // first index with key >= sentinel
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < sentinel) lo = mid + 1;
        else hi = mid;
    }
    *out = lo;
}

// One thread per run of equal keys in P: short runs summed here, long ones listed for k_combine.
template <class F>
__global__ void k_combine_short(const xyzz_t<F> *pval, const uint32_t *offs, const uint32_t *uniq,
                                uint32_t nruns, xyzz_t<F> *buckets, uint32_t *multi_list,
                                uint32_t *multi_count)
{
#ifdef __CUDA_ARCH__
    uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nruns) return;
    uint32_t a = offs[r], b = offs[r + 1];
    if (b - a > 32) { multi_list[atomicAdd(multi_count, 1u)] = r; return; }
    xyzz_t<F> acc = pval[a];
    for (uint32_t i = a + 1; i < b; i++) xyzz_add(acc, pval[i]);
    buckets[uniq[r]] = acc;
#endif
}

template <class F, int TPB>
__global__ void __launch_bounds__(TPB) k_sum_list(const affine_t<F> *bases, const uint32_t *idx,
                                                  uint32_t cnt, xyzz_t<F> *out)
{
#ifdef __CUDA_ARCH__
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (uint32_t i = blockIdx.x * TPB + threadIdx.x; i < cnt; i += gridDim.x * TPB) {
        affine_t<F> p = load_entry<F, true>(bases, idx, i);
        if (!aff_is_inf(p)) xyzz_add_affine(acc, p.x, p.y);
    }
    block_reduce<F, TPB>(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
#endif
}

template <class F, int TPB>
__global__ void __launch_bounds__(TPB) k_sum_xyzz(const xyzz_t<F> *in, uint32_t cnt, xyzz_t<F> *out)
{
#ifdef __CUDA_ARCH__
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (uint32_t i = threadIdx.x; i < cnt; i += TPB) xyzz_add(acc, in[i]);
    block_reduce<F, TPB>(acc);
    if (threadIdx.x == 0) *out = acc;
#endif
}

// Thread (w, k): buckets k*L .. k*L+L-1 of window w (bucket p holds digit p+1).

// A buffer the pair rounds can do without: on failure (the device or the limit is full) the
// error is cleared and the caller falls back to the plain walk.
inline bool try_alloc(dbuf &b, dev_ctx *ctx, size_t n)
{
    if (b.alloc(ctx, n) == cudaSuccess) return true;
    CUZK_CLEAR_LAST_ERROR();
    return false;
}

// The segmented walk and the combination of its partial sums over one sorted slice (n entries,
// base indices if IDX, else affine points); writes the slice's buckets.
template <class F, bool IDX>
cuzk_kresult walk_slice(dev_ctx *ctx, const affine_t<F> *src, const uint32_t *keys, const uint32_t *vals,
                        uint32_t n, void *tmp, size_t t_rle, size_t t_scan, uint32_t *d_nv,
                        xyzz_t<F> *buckets, uint32_t *mcnt)
{
    constexpr int TPB = red_tpb<F>();
    cudaStream_t s = ctx->s_comp;
    // segment length T: all resident threads busy for whole waves, T <= 1024
    int nb = 0;
    CUZK_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_seg_accum<F, IDX>, 128, 0));
    size_t resident = (size_t)ctx->sm_count * std::max(nb, 1) * 128;
    size_t waves = (n + resident * 1024 - 1) / (resident * 1024);
    uint32_t T = (uint32_t)std::max<size_t>(8, (n + resident * waves - 1) / (resident * waves));
    uint32_t nseg = (n + T - 1) / T;
    const size_t np = (size_t)2 * nseg;
    dbuf d_pkey, d_pval, d_u2, d_c2, d_o2, d_multi;
    CUZK_CK(d_pkey.alloc(ctx, np * 4));
    CUZK_CK(d_pval.alloc(ctx, np * sizeof(xyzz_t<F>)));
    CUZK_CK(d_u2.alloc(ctx, (np + 2) * 4));
    CUZK_CK(d_c2.alloc(ctx, (np + 2) * 4));
    CUZK_CK(d_o2.alloc(ctx, (np + 2) * 4));
    CUZK_CK(d_multi.alloc(ctx, (np + 2) * 4));
    CUZK_CK(cudaMemsetAsync(d_c2.p, 0, (np + 2) * 4, s));
    CUZK_CK(cudaMemsetAsync(mcnt, 0, 16, s));
    k_seg_accum<F, IDX><<<(nseg + 127) / 128, 128, 0, s>>>(src, keys, vals, n, T, nseg, buckets,
                                                           d_pkey.as<uint32_t>(), d_pval.as<xyzz_t<F>>());
    CUZK_CKL();
    // combine the partial sums of runs cut by segment boundaries
    CUZK_CK(cub::DeviceRunLengthEncode::Encode(tmp, t_rle, d_pkey.as<uint32_t>(), d_u2.as<uint32_t>(),
                                               d_c2.as<uint32_t>(), d_nv, (int)np, s));
    uint32_t nr2 = 0;
    CUZK_CK(cudaMemcpyAsync(&nr2, d_nv, 4, cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    CUZK_CK(cub::DeviceScan::ExclusiveSum(tmp, t_scan, d_c2.as<uint32_t>(), d_o2.as<uint32_t>(),
                                          (int)(nr2 + 1), s));
    k_combine_short<F><<<(nr2 + 127) / 128, 128, 0, s>>>(d_pval.as<xyzz_t<F>>(), d_o2.as<uint32_t>(),
                                                        d_u2.as<uint32_t>(), nr2, buckets,
                                                        d_multi.as<uint32_t>(), mcnt);
    CUZK_CKL();
    unsigned g = std::max(1u, std::min<unsigned>(nr2, (unsigned)ctx->sm_count * 4));
    k_combine<F, TPB><<<g, TPB, 0, s>>>(d_pval.as<xyzz_t<F>>(), d_o2.as<uint32_t>(), d_u2.as<uint32_t>(),
                                       d_multi.as<uint32_t>(), mcnt, buckets);
    CUZK_CKL();
    return ok();
}

// Bytes the pair rounds need per entry of a slice: the first round's output (at most 4/5 of the
// entries, else no round runs) and the second's (at most 4/5 of that), points and keys, plus
// the pair counts and their sums.
template <class F> constexpr size_t rounds_bytes_per_entry()
{
    return (sizeof(affine_t<F>) + 4) * 36 / 25 + 4;
}
// Entries of one slice of pair rounds at most (~10 GB of round buffers).
template <class F> constexpr size_t rounds_slice_entries() { return sizeof(F) == 48 ? (size_t)1 << 26 : (size_t)1 << 25; }

// One sorted slice: pair rounds while at least one entry in five merges (and their buffers can
// be had), then the walk over what is left.
template <class F>
cuzk_kresult accumulate_slice(dev_ctx *ctx, const affine_t<F> *bases, const uint32_t *keys, const uint32_t *vals,
                              uint32_t n, bool rounds_on, void *tmp, size_t t_rle, size_t t_scan, uint32_t *d_nv,
                              xyzz_t<F> *buckets, uint32_t *mcnt, profiler &prof, bool marks)
{
    cudaStream_t s = ctx->s_comp;
    dbuf bk[2], bp[2], d_cnt, d_pos;
    int rounds = 0;
    const uint32_t *ck = keys;
    const affine_t<F> *cp = nullptr;
    uint32_t cn = n;
    const uint32_t np0 = (n + 1) / 2;
    // A round pays off only on a full device: K pairs a thread in sequence leave a round of
    // less than two waves mostly idle (2^20 proofs ran slower with every round taken). Below
    // that, the walk (evenly spread, any run length) is the better finisher.
    size_t min_pairs = 0;
    if (rounds_on) {
        int nb = 0;
        CUZK_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_pair_round<F, true>, AFF_TPB, 0));
        min_pairs = (size_t)2 * ctx->sm_count * std::max(nb, 1) * AFF_TPB * aff_k<F>();
        if (ctx->k.slice) min_pairs = 2048;  // tests: rounds in every slice, however small
    }
    if (rounds_on && np0 >= min_pairs && try_alloc(d_cnt, ctx, ((size_t)np0 + 1) * 4) &&
        try_alloc(d_pos, ctx, ((size_t)np0 + 1) * 4)) {
        while (rounds < 16) {
            const uint32_t npairs = (cn + 1) / 2;
            if (npairs < min_pairs) break;
            k_pair_count<<<(npairs + 256) / 256, 256, 0, s>>>(ck, cn, npairs, d_cnt.as<uint32_t>());
            CUZK_CKL();
            size_t ts = t_scan;
            CUZK_CK(cub::DeviceScan::ExclusiveSum(tmp, ts, d_cnt.as<uint32_t>(), d_pos.as<uint32_t>(),
                                                  (int)(npairs + 1), s));
            uint32_t nout = 0;
            CUZK_CK(cudaMemcpyAsync(&nout, d_pos.as<uint32_t>() + npairs, 4, cudaMemcpyDeviceToHost, s));
            CUZK_CK(cudaStreamSynchronize(s));
            if ((uint64_t)nout * 5 > (uint64_t)cn * 4) break;  // fewer than one entry in five merges
            dbuf &ok_ = bk[rounds & 1], &op = bp[rounds & 1];
            // Outputs shrink round by round: each buffer's first size is enough for its later rounds.
            if (!op.p && !(try_alloc(ok_, ctx, (size_t)nout * 4) && try_alloc(op, ctx, (size_t)nout * sizeof(affine_t<F>)))) {
                ok_.release();
                op.release();
                break;
            }
            constexpr unsigned per_block = AFF_TPB * aff_k<F>();
            const unsigned blocks = (unsigned)((npairs + per_block - 1) / per_block);
            if (rounds == 0)
                k_pair_round<F, true><<<blocks, AFF_TPB, 0, s>>>(bases, ck, vals, cn, npairs, d_pos.as<uint32_t>(),
                                                                 ok_.as<uint32_t>(), op.as<affine_t<F>>());
            else
                k_pair_round<F, false><<<blocks, AFF_TPB, 0, s>>>(cp, ck, nullptr, cn, npairs, d_pos.as<uint32_t>(),
                                                                  ok_.as<uint32_t>(), op.as<affine_t<F>>());
            CUZK_CKL();
            ck = ok_.as<uint32_t>();
            cp = op.as<affine_t<F>>();
            cn = nout;
            rounds++;
        }
    }
    d_cnt.release();
    d_pos.release();
    if (ctx->k.profile)
        fprintf(stderr, "cuzk kernels: slice of %u entries: %d pair rounds, %u entries left for the walk\n", n,
                rounds, cn);
    if (marks) prof.mark("pair_rounds");
    if (rounds == 0) return walk_slice<F, true>(ctx, bases, keys, vals, n, tmp, t_rle, t_scan, d_nv, buckets, mcnt);
    return walk_slice<F, false>(ctx, cp, ck, nullptr, cn, tmp, t_rle, t_scan, d_nv, buckets, mcnt);
}

// Bucket accumulation over the sorted (key, value) array [0, nvalid): cut into slices at bucket
// boundaries, so that the pair rounds' buffers stay within the device (or the limit), each slice
// accumulated on its own.
template <class F>
cuzk_kresult accumulate_sorted(dev_ctx *ctx, const affine_t<F> *bases, const uint32_t *keys, const uint32_t *vals,
                               uint32_t nvalid, void *tmp, size_t t_rle, size_t t_scan, uint32_t *d_nv,
                               xyzz_t<F> *buckets, uint32_t *mcnt, profiler &prof)
{
    cudaStream_t s = ctx->s_comp;
    bool rounds_on = ctx->k.affine;
    size_t S = nvalid;
    if (rounds_on) {
        // ~10 GB of round buffers per slice at most (2^26 G1 entries, 2^25 G2), less where the
        // device or the memory limit has less (headroom: the one measure of what is left)
        size_t cap = rounds_slice_entries<F>(), avail = 0;
        CUZK_TRY(headroom(ctx, &avail));
        cap = std::min(cap, avail / rounds_bytes_per_entry<F>());
        if (cap < ((size_t)1 << 16)) rounds_on = false;
        else S = std::min(S, cap);
    }
    if (ctx->k.slice) S = std::min<size_t>(nvalid, std::max<size_t>(ctx->k.slice, 4096));  // tests
    const uint32_t nsl = (uint32_t)((nvalid + S - 1) / S);
    std::vector<uint32_t> bounds{0, nvalid};
    if (nsl > 1) {
        dbuf d_b;
        CUZK_CK(d_b.alloc(ctx, ((size_t)nsl + 1) * 4));
        k_slice_bounds<<<(nsl + 128) / 128, 128, 0, s>>>(keys, nvalid, (uint32_t)S, nsl, d_b.as<uint32_t>());
        CUZK_CKL();
        bounds.resize((size_t)nsl + 1);
        CUZK_CK(cudaMemcpyAsync(bounds.data(), d_b.p, bounds.size() * 4, cudaMemcpyDeviceToHost, s));
        CUZK_CK(cudaStreamSynchronize(s));
    }
    for (size_t j = 0; j + 1 < bounds.size(); j++) {
        const uint32_t b0 = bounds[j], b1 = std::max(bounds[j + 1], b0);
        if (b1 == b0) continue;
        const bool marks = bounds.size() <= 9;
        CUZK_TRY(accumulate_slice<F>(ctx, bases, keys + b0, vals + b0, b1 - b0, rounds_on, tmp, t_rle, t_scan,
                                     d_nv, buckets, mcnt, prof, marks));
        if (marks) prof.mark("walk");
    }
    return ok();
}


// The sum of the n1 bases whose scalar is 1 (their indices in idx, sign bits as in the sorted
// values) into d_res (one XYZZ point), through d_part (one partial sum a block).
template <class F>
cuzk_kresult sum_ones(dev_ctx *ctx, const affine_t<F> *bases, const uint32_t *idx, uint32_t n1, dbuf &d_part,
                      dbuf &d_res)
{
    constexpr int TPB = red_tpb<F>();
    cudaStream_t s = ctx->s_comp;
    // One full wave of resident blocks: a grid of a fixed 4 blocks per SM ran as 1 1/3
    // waves where only 3 fit (the last third of the work on a quarter of the device).
    int nb = 0;
    CUZK_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_sum_list<F, TPB>, TPB, 0));
    unsigned G = (unsigned)std::min<size_t>((n1 + TPB - 1) / TPB, (size_t)ctx->sm_count * std::max(nb, 1));
    CUZK_CK(d_part.alloc(ctx, G * sizeof(xyzz_t<F>)));
    CUZK_CK(d_res.alloc(ctx, sizeof(xyzz_t<F>)));
    k_sum_list<F, TPB><<<G, TPB, 0, s>>>(bases, idx, n1, d_part.as<xyzz_t<F>>());
    CUZK_CKL();
    k_sum_xyzz<F, TPB><<<1, TPB, 0, s>>>(d_part.as<xyzz_t<F>>(), G, d_res.as<xyzz_t<F>>());
    CUZK_CKL();
    return ok();
}

}  // namespace
}  // namespace cuzk
