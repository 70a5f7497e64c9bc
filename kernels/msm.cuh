// cuzk kernels: multi-scalar multiplication (G1 and G2), templated on the base field F.
//
// Pipeline (all on the device, bases resident):
//  1. classify: Montgomery -> canonical; density bitmap -> base index (rank of the bit);
//     zero scalars dropped, scalars == 1 appended to a "ones" index list, the rest appended
//     (canonical scalar + base index) to a "big" list (warp-aggregated atomics).
//  2. ones: grid-stride mixed additions + block tree reductions (no buckets at all).
//  3. big: signed c-bit windows (digits in [-2^(c-1)+1, 2^(c-1)], bucket |d|-1, sign in the
//     top bit of the point index), one (key = window:bucket, value = point) pair per window and
//     scalar; cub radix sort by key; run-length encode; each run (bucket) is cut into tasks of
//     at most T points summed by one thread with mixed additions (hot buckets, e.g. many equal
//     scalars, are spread over many tasks and re-combined by one block each); bucket sums
//     reduced per window with the running-sum trick in K chunks per window; windows combined
//     by Horner (c doublings per window) in one thread.
//  4. result = ones + big, converted XYZZ -> Jacobian (no inversion).
// This header is included by one translation unit per group; kernels live in an anonymous
// namespace so that the two instantiations never collide at link time.
#pragma once
#include "common.cuh"
#include "curve.cuh"
#include <cub/cub.cuh>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cstdlib>
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

constexpr int CLASSIFY_TPB = 256;

__global__ void k_popcount(const uint64_t *bits, uint32_t *out, size_t nwords)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nwords) out[i] = __popcll(bits[i]);
}

__global__ void k_classify(const fr_t *scal, size_t i0, size_t cnt, const uint64_t *dens,
                           const uint32_t *rank, uint32_t base_offset, uint32_t *ones_idx,
                           uint32_t *big_idx, uint4 *big_sc, uint32_t *counters)
{
#ifdef __CUDA_ARCH__
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const unsigned lane = threadIdx.x & 31;
    for (size_t base = (size_t)blockIdx.x * blockDim.x; base < cnt; base += stride) {
        size_t li = base + threadIdx.x;
        size_t i = i0 + li;
        int kind = 0;
        uint32_t bidx = 0;
        fr_t s;
        if (li < cnt) {
            bool sel = true;
            size_t j = i;
            if (dens) {
                uint64_t w = dens[i >> 6];
                unsigned b = (unsigned)(i & 63);
                sel = (w >> b) & 1;
                j = rank[i >> 6] + __popcll(w & ((1ull << b) - 1));
            }
            if (sel) {
                s = scal[li];
                s.from();
                bool one = s[0] == 1;
#pragma unroll
                for (int k = 1; k < 8; k++) one &= s[k] == 0;
                kind = s.is_zero() ? 0 : (one ? 1 : 2);
                bidx = base_offset + (uint32_t)j;
            }
        }
        unsigned m1 = __ballot_sync(0xffffffffu, kind == 1);
        unsigned m2 = __ballot_sync(0xffffffffu, kind == 2);
        uint32_t b1 = 0, b2 = 0;
        if (lane == 0) {
            if (m1) b1 = atomicAdd(&counters[0], __popc(m1));
            if (m2) b2 = atomicAdd(&counters[1], __popc(m2));
        }
        b1 = __shfl_sync(0xffffffffu, b1, 0);
        b2 = __shfl_sync(0xffffffffu, b2, 0);
        unsigned lt = (1u << lane) - 1;
        if (kind == 1) ones_idx[b1 + __popc(m1 & lt)] = bidx;
        if (kind == 2) {
            uint32_t k = b2 + __popc(m2 & lt);
            big_idx[k] = bidx;
            big_sc[2 * k] = make_uint4(s[0], s[1], s[2], s[3]);
            big_sc[2 * k + 1] = make_uint4(s[4], s[5], s[6], s[7]);
        }
    }
#endif
}

__global__ void k_digits(const uint4 *big_sc, const uint32_t *big_idx, uint32_t nbig, int c,
                         int nwin, uint32_t *keys, uint32_t *vals)
{
    const uint32_t sentinel = (uint32_t)nwin << (c - 1);
    const uint32_t half = 1u << (c - 1);
    const uint32_t mask = (1u << c) - 1;
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < nbig; k += gridDim.x * blockDim.x) {
        uint4 lo = big_sc[2 * k], hi = big_sc[2 * k + 1];
        uint32_t s[10] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w, 0, 0};
        uint32_t bidx = big_idx[k];
        uint32_t carry = 0;
        for (int w = 0; w < nwin; w++) {
            int off = w * c;
            int word = off >> 5, sh = off & 31;
            uint64_t two = ((uint64_t)s[word + 1] << 32) | s[word];
            uint32_t d = (uint32_t)(two >> sh) & mask;
            d += carry;
            uint32_t key, val;
            if (d > half) {  // negative digit d - 2^c
                uint32_t a = (1u << c) - d;  // |digit|, in [0, 2^(c-1))
                carry = 1;
                key = a == 0 ? sentinel : (((uint32_t)w << (c - 1)) | (a - 1));
                val = bidx | 0x80000000u;
            } else {
                carry = 0;
                key = d == 0 ? sentinel : (((uint32_t)w << (c - 1)) | (d - 1));
                val = bidx;
            }
            keys[(size_t)w * nbig + k] = key;
            vals[(size_t)w * nbig + k] = val;
        }
    }
}

template <class F, int TPB>
__device__ __forceinline__ void block_reduce(xyzz_t<F> &acc)
{
#ifdef __CUDA_ARCH__
    __shared__ __align__(16) unsigned char smem[TPB * sizeof(xyzz_t<F>)];
    xyzz_t<F> *sh = reinterpret_cast<xyzz_t<F> *>(smem);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = TPB / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            xyzz_t<F> a = sh[threadIdx.x];
            xyzz_add(a, sh[threadIdx.x + s]);
            sh[threadIdx.x] = a;
        }
        __syncthreads();
    }
    acc = sh[0];
    __syncthreads();
#endif
}

template <class F, int TPB>
__global__ void __launch_bounds__(TPB) k_combine(const xyzz_t<F> *task_res, const uint32_t *toff,
                          const uint32_t *uniq, const uint32_t *multi_list,
                          const uint32_t *multi_count, xyzz_t<F> *buckets)
{
#ifdef __CUDA_ARCH__
    uint32_t cnt = *multi_count;
    for (uint32_t j = blockIdx.x; j < cnt; j += gridDim.x) {
        uint32_t r = multi_list[j];
        uint32_t a = toff[r], b = toff[r + 1];
        xyzz_t<F> acc;
        xyzz_set_inf(acc);
        for (uint32_t t = a + threadIdx.x; t < b; t += TPB) xyzz_add(acc, task_res[t]);
        block_reduce<F, TPB>(acc);
        if (threadIdx.x == 0) buckets[uniq[r]] = acc;
    }
#endif
}

// Entry e of a sorted (key, point) array: either a base index with the sign in the top bit
// (IDX: src = the bases, vals = the sort's values) or an affine point (src[e], vals unused).
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
// inline for both groups (G2's f_mul is an out-of-line call elsewhere; inline, the G2 rounds ran
// ~1% faster at 2^24, kernels/NOTES.md).
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
// W = sum_t (t+1) * S[kL+t], U = sum_t S[kL+t].
template <class F>
__global__ void k_bucket_chunks(const xyzz_t<F> *buckets, uint32_t B, uint32_t K, uint32_t nwin,
                                xyzz_t<F> *W, xyzz_t<F> *U)
{
#ifdef __CUDA_ARCH__
    uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nwin * K) return;
    uint32_t w = id / K, k = id % K, L = B / K;
    const xyzz_t<F> *b = buckets + (size_t)w * B + (size_t)k * L;
    xyzz_t<F> run, acc;
    xyzz_set_inf(run);
    xyzz_set_inf(acc);
    for (int t = (int)L - 1; t >= 0; t--) {
        xyzz_add(run, b[t]);
        xyzz_add(acc, run);
    }
    W[id] = acc;
    U[id] = run;
#endif
}

// Thread (w, g): chunks g*G .. g*G+G-1 of window w (chunk k stands for L buckets, as W and U
// above) folded into one chunk of L*G buckets: W'_g = sum_t W[gG+t] + L * sum_t t*U[gG+t],
// U'_g = sum_t U[gG+t], so that sum_k W_k + L * sum_k k*U_k = sum_g W'_g + (L*G) * sum_g g*U'_g.
// With c = 20 a window has 2^15 chunks after k_bucket_chunks: folded twice, k_window_reduce's
// single block per window runs 1 chunk a thread instead of 256 in sequence.
template <class F>
__global__ void k_fold_chunks(const xyzz_t<F> *W, const xyzz_t<F> *U, uint32_t K, uint32_t G, int logL,
                              uint32_t nwin, xyzz_t<F> *W2, xyzz_t<F> *U2)
{
#ifdef __CUDA_ARCH__
    const uint32_t Kp = K / G;
    uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nwin * Kp) return;
    const size_t base = (size_t)(id / Kp) * K + (size_t)(id % Kp) * G;
    xyzz_t<F> run, acc, ws;
    xyzz_set_inf(run);
    xyzz_set_inf(acc);
    xyzz_set_inf(ws);
    // sum_t t*U_t = sum_{t>=1} (sum_{t'>=t} U_t'): the running sums from the top, U_0 last.
    for (int t = (int)G - 1; t >= 1; t--) {
        xyzz_add(run, U[base + t]);
        xyzz_add(acc, run);
        xyzz_add(ws, W[base + t]);
    }
    xyzz_add(run, U[base]);
    xyzz_add(ws, W[base]);
    for (int i = 0; i < logL; i++) xyzz_dbl(acc);
    xyzz_add(ws, acc);
    W2[id] = ws;
    U2[id] = run;
#endif
}

// One block per window: window sum = sum_k W[k] + L * sum_k k*U[k] over K chunks.
// Thread j owns chunks [jM, jM+M): acc_j = sum (k - jM) U_k, V_j = sum U_k, ws_j = sum W_k.
// sum_k k U_k = sum_j acc_j + M * sum_j j V_j, and sum_j j V_j = sum_{j>=1} S_j with S_j the
// suffix sums of V (a log-depth scan in shared memory). Then one tree reduction of
// y_j = L * (acc_j + M * S_j[j>=1]) + ws_j. Sequential depth ~ 3M + 3 log2(TPB) + log2(LM).
template <class F, int TPB>
__global__ void __launch_bounds__(TPB) k_window_reduce(const xyzz_t<F> *W, const xyzz_t<F> *U,
                                                       uint32_t K, int logL, xyzz_t<F> *win)
{
#ifdef __CUDA_ARCH__
    __shared__ __align__(16) unsigned char smem[TPB * sizeof(xyzz_t<F>)];
    xyzz_t<F> *sv = reinterpret_cast<xyzz_t<F> *>(smem);
    const uint32_t w = blockIdx.x, j = threadIdx.x;
    const uint32_t M = K >= TPB ? K / TPB : 1;
    int logM = 0;
    while ((1u << logM) < M) logM++;
    xyzz_t<F> acc, run, ws;
    xyzz_set_inf(acc); xyzz_set_inf(run); xyzz_set_inf(ws);
    for (int t = (int)M - 1; t >= 0; t--) {
        uint32_t k = j * M + (uint32_t)t;
        if (k >= K) continue;
        xyzz_add(acc, run);
        xyzz_add(run, U[(size_t)w * K + k]);
        xyzz_add(ws, W[(size_t)w * K + k]);
    }
    // suffix scan of run (= V_j)
    sv[j] = run;
    __syncthreads();
    for (uint32_t d = 1; d < TPB; d <<= 1) {
        xyzz_t<F> o;
        bool has = j + d < TPB;
        if (has) o = sv[j + d];
        __syncthreads();
        if (has) { xyzz_t<F> mine = sv[j]; xyzz_add(mine, o); sv[j] = mine; }
        __syncthreads();
    }
    xyzz_t<F> y;
    if (j >= 1) {
        y = sv[j];
        for (int i = 0; i < logM; i++) xyzz_dbl(y);
    } else {
        xyzz_set_inf(y);
    }
    __syncthreads();
    xyzz_add(y, acc);
    for (int i = 0; i < logL; i++) xyzz_dbl(y);
    xyzz_add(y, ws);
    block_reduce<F, TPB>(y);
    if (j == 0) win[w] = y;
#endif
}

template <class F>
__global__ void k_add_windows(xyzz_t<F> *win, const xyzz_t<F> *part, int nwin)
{
#ifdef __CUDA_ARCH__
    int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < nwin) {
        xyzz_t<F> a = win[w];
        xyzz_add(a, part[w]);
        win[w] = a;
    }
#endif
}

// Window size. Up to 16 bits: the first cost model, nwin * (points + 2.8 * buckets), which picks
// c = 16 (16 windows) from about 2^20 big scalars on. Past 16 (from 2^25 big scalars on), a model
// fitted on the H200 with the pair rounds (`harness msm 24` / `msm 26` with CUZK_K_WINDOW_BITS
// 16..20, kernels/NOTES.md): an entry of the sorted lists costs about the same at any c while a
// bucket holds many of them, and more (up to +15%) when a bucket holds only 32-64 (e = entries
// per bucket; the rounds merge less); a bucket of the reduction (k_bucket_chunks and the folds)
// costs bucket_cost<F>() entries. cost(c) = nwin * (nbig * (1 + 5/e) + bucket_cost * 2^(c-1)).
// It picks c = 20 (13 windows) at 2^26 big scalars: G1 438 -> 385 ms, G2 1299 -> 1129 ms.
// A c > 16 is taken only if its sort arrays and buckets fit `room` (what the device or the
// memory limit still has) with 512 MiB to spare: a wider window never turns an MSM that fits
// into one that does not (c = 20 needs less memory than c = 16 from about 2^25 big scalars on
// in G1, 2^26 in G2).
// CUZK_K_WINDOW_BITS (read once into the device context) forces c, for benchmarking and tests.
template <class F> constexpr double bucket_cost() { return sizeof(F) == 48 ? 4.0 : 3.5; }
constexpr int C_BASE_MAX = 16, C_MAX = 20;
constexpr size_t WIDE_MIN_BIG = (size_t)1 << 25;  // 2^24: c = 16 measured as fast as 18-20

inline int window_count(int c) { return (256 + c - 1) / c; }

// Device bytes of the sort's four arrays and the buckets for nbig big scalars at window c.
// Big scalars per part of the sort: its (key, value) arrays are indexed with 32-bit ints (cub),
// so the big list goes in parts of at most 2^31 / nwin scalars (2^27 at c = 16).
inline size_t max_part(size_t nwin) { return 0x7fffffffu / nwin; }

template <class F> size_t window_mem(size_t nbig, int c)
{
    const size_t nwin = (size_t)window_count(c);
    const size_t part = std::min<size_t>(nbig, max_part(nwin));
    return nwin * part * 16 + nwin * ((size_t)1 << (c - 1)) * sizeof(xyzz_t<F>);
}

template <class F> int choose_c(size_t nbig, int forced, size_t room)
{
    if (forced >= 4 && forced <= C_MAX) return forced;
    int best_c = 4;
    double best = 1e300;
    for (int c = 4; c <= C_BASE_MAX; c++) {
        double cost = (double)window_count(c) * ((double)nbig + 2.8 * (double)(1u << (c - 1)));
        if (cost < best) { best = cost; best_c = c; }
    }
    if (best_c < C_BASE_MAX || nbig < WIDE_MIN_BIG) return best_c;
    auto wide_cost = [&](int c) {
        const double B = (double)(1u << (c - 1)), e = (double)nbig / B;
        return (double)window_count(c) * ((double)nbig * (1.0 + 5.0 / e) + bucket_cost<F>() * B);
    };
    best = wide_cost(C_BASE_MAX);
    for (int c = C_BASE_MAX + 1; c <= C_MAX; c++) {
        if (window_count(c) == window_count(c - 1)) continue;  // more buckets, no fewer windows
        if (wide_cost(c) < best && window_mem<F>(nbig, c) + ((size_t)512 << 20) <= room) {
            best = wide_cost(c);
            best_c = c;
        }
    }
    return best_c;
}

template <class F> constexpr int red_tpb() { return sizeof(F) == 48 ? 128 : 64; }

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

}  // namespace

// Selected bases of an n-scalar MSM (n without a density).
inline size_t selected_count(const uint64_t *density, size_t n)
{
    size_t nsel = 0;
    for (size_t w = 0; w < (n + 63) / 64; w++) nsel += word_selected(density, n, w);
    return nsel;
}

template <class F>
cuzk_kresult msm_run(dev_ctx *ctx, const void *d_bases_v, size_t bases_len, size_t base_offset,
                     const void *d_scalars, const void *h_scalars, size_t n,
                     const uint64_t *h_density, void *out_jacobian, bool accumulate,
                     const uint64_t *d_density)
{
    constexpr int TPB = red_tpb<F>();
    cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
    const affine_t<F> *bases = static_cast<const affine_t<F> *>(d_bases_v);

    if (n > 0x7fffffffu || bases_len > 0x7fffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "msm: more than 2^31-1 scalars or bases");
    // selected count and range check
    size_t nwords = (n + 63) / 64;
    size_t nsel = selected_count(h_density, n);
    if (base_offset > bases_len || nsel > bases_len - base_offset)
        return arg_err(CUZK_K_ERR_RANGE, "msm: base_offset + selected scalars > bases_len");
    if (n == 0 || nsel == 0) {
        if (!accumulate) memset(out_jacobian, 0, sizeof(jac_t<F>));  // Z = 0: infinity
        return ok();
    }

    profiler prof(sizeof(F) == 48 ? "msm_g1" : "msm_g2", s, ctx->k.profile);
    // ---- allocations (all on s) ----
    dbuf d_dens, d_rank, d_pop, d_sc, d_ones_idx, d_big_idx, d_big_sc, d_cnt;
    if (h_density) {
        if (!d_density) CUZK_CK(d_dens.alloc(ctx, nwords * 8));
        CUZK_CK(d_rank.alloc(ctx, nwords * 4 + 4));
        CUZK_CK(d_pop.alloc(ctx, nwords * 4 + 4));
    }
    if (!d_scalars) CUZK_CK(d_sc.alloc(ctx, n * sizeof(fr_t)));
    CUZK_CK(d_ones_idx.alloc(ctx, n * 4));
    CUZK_CK(d_big_idx.alloc(ctx, n * 4));
    CUZK_CK(d_big_sc.alloc(ctx, n * 32));
    CUZK_CK(d_cnt.alloc(ctx, 16));
    copy_join join{sc, !d_scalars};  // the chunked scalar copies below write d_sc on the copy stream
    CUZK_CK(cudaMemsetAsync(d_cnt.p, 0, 16, s));

    const uint64_t *dens = h_density ? d_density : nullptr;  // set below when it is copied here
    if (h_density) {
        if (!d_density) {
            CUZK_CK(cudaMemcpyAsync(d_dens.p, h_density, nwords * 8, cudaMemcpyHostToDevice, s));
            dens = d_dens.as<uint64_t>();
        }
        k_popcount<<<(unsigned)((nwords + 255) / 256), 256, 0, s>>>(dens, d_pop.as<uint32_t>(), nwords);
        CUZK_CKL();
        size_t tmp = 0;
        CUZK_CK(cub::DeviceScan::ExclusiveSum(nullptr, tmp, d_pop.as<uint32_t>(),
                                              d_rank.as<uint32_t>(), (int)nwords, s));
        dbuf d_tmp;
        CUZK_CK(d_tmp.alloc(ctx, tmp));
        CUZK_CK(cub::DeviceScan::ExclusiveSum(d_tmp.p, tmp, d_pop.as<uint32_t>(),
                                              d_rank.as<uint32_t>(), (int)nwords, s));
    }

    // ---- scalars: chunked copy (copy stream) overlapped with classification ----
    event_list evs;
    const size_t CHUNK = (size_t)1 << 22;
    unsigned cls_grid = (unsigned)std::max(1, ctx->sm_count * 8);
    if (!d_scalars) {
        cudaEvent_t e0;
        CUZK_CK(evs.add(&e0));
        CUZK_CK(cudaEventRecord(e0, s));  // allocations done
        CUZK_CK(cudaStreamWaitEvent(sc, e0, 0));
    }
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t cnt = std::min(CHUNK, n - i0);
        const fr_t *src;
        if (!d_scalars) {
            fr_t *dst = d_sc.as<fr_t>() + i0;
            CUZK_CK(cudaMemcpyAsync(dst, static_cast<const fr_t *>(h_scalars) + i0,
                                    cnt * sizeof(fr_t), cudaMemcpyHostToDevice, sc));
            cudaEvent_t e;
            CUZK_CK(evs.add(&e));
            CUZK_CK(cudaEventRecord(e, sc));
            CUZK_CK(cudaStreamWaitEvent(s, e, 0));
            src = dst;
        } else {
            src = static_cast<const fr_t *>(d_scalars) + i0;
        }
        unsigned g = (unsigned)std::min<size_t>(cls_grid, (cnt + CLASSIFY_TPB - 1) / CLASSIFY_TPB);
        k_classify<<<g, CLASSIFY_TPB, 0, s>>>(src, i0, cnt, dens,
                                              d_rank.as<uint32_t>(), (uint32_t)base_offset,
                                              d_ones_idx.as<uint32_t>(), d_big_idx.as<uint32_t>(),
                                              d_big_sc.as<uint4>(), d_cnt.as<uint32_t>());
        CUZK_CKL();
    }
    prof.mark("upload+classify");
    uint32_t hcnt[2];
    CUZK_CK(cudaMemcpyAsync(hcnt, d_cnt.p, 8, cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    d_sc.release();
    d_dens.release();
    d_rank.release();
    const uint32_t n1 = hcnt[0], nbig = hcnt[1];

    // ---- ones ----
    dbuf d_ones_part, d_ones_res;
    if (n1) {
        // One full wave of resident blocks: a grid of a fixed 4 blocks per SM ran as 1 1/3
        // waves where only 3 fit (the last third of the work on a quarter of the device).
        int nb = 0;
        CUZK_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k_sum_list<F, TPB>, TPB, 0));
        unsigned G = (unsigned)std::min<size_t>((n1 + TPB - 1) / TPB, (size_t)ctx->sm_count * std::max(nb, 1));
        CUZK_CK(d_ones_part.alloc(ctx, G * sizeof(xyzz_t<F>)));
        CUZK_CK(d_ones_res.alloc(ctx, sizeof(xyzz_t<F>)));
        k_sum_list<F, TPB><<<G, TPB, 0, s>>>(bases, d_ones_idx.as<uint32_t>(), n1,
                                             d_ones_part.as<xyzz_t<F>>());
        CUZK_CKL();
        k_sum_xyzz<F, TPB><<<1, TPB, 0, s>>>(d_ones_part.as<xyzz_t<F>>(), G,
                                             d_ones_res.as<xyzz_t<F>>());
        CUZK_CKL();
    }

    prof.mark("ones");
    // ---- big: bucket method ----
    dbuf d_win;
    int c = 0, nwin = 0;
    if (nbig) {
        size_t room = 0;
        if (!ctx->k.window_bits && nbig >= WIDE_MIN_BIG) CUZK_TRY(headroom(ctx, &room));
        c = choose_c<F>(nbig, ctx->k.window_bits, room);
        nwin = window_count(c);
        const uint32_t B = 1u << (c - 1);
        const uint32_t sentinel = (uint32_t)nwin << (c - 1);
        int end_bit = 0;
        while ((1ull << end_bit) <= sentinel) end_bit++;
        // The big list in parts (max_part), the parts' window sums added.
        size_t part = max_part((size_t)nwin);
        if (ctx->k.max_part > 0) part = std::min<size_t>(part, ctx->k.max_part);
        CUZK_CK(d_win.alloc(ctx, (size_t)nwin * sizeof(xyzz_t<F>)));
        CUZK_CK(cudaMemsetAsync(d_win.p, 0, (size_t)nwin * sizeof(xyzz_t<F>), s));
        for (uint32_t p0 = 0; p0 < nbig; p0 += (uint32_t)part) {
        const uint32_t npart = (uint32_t)std::min<size_t>(part, nbig - p0);
        const size_t N = (size_t)nwin * npart;

        dbuf d_k0, d_v0, d_k1, d_v1;
        CUZK_CK(d_k0.alloc(ctx, N * 4));
        CUZK_CK(d_v0.alloc(ctx, N * 4));
        CUZK_CK(d_k1.alloc(ctx, N * 4));
        CUZK_CK(d_v1.alloc(ctx, N * 4));
        {
            unsigned g = (unsigned)std::min<size_t>((npart + 255) / 256, (size_t)ctx->sm_count * 16);
            k_digits<<<g, 256, 0, s>>>(d_big_sc.as<uint4>() + 2 * (size_t)p0, d_big_idx.as<uint32_t>() + p0,
                                       npart, c, nwin, d_k0.as<uint32_t>(), d_v0.as<uint32_t>());
            CUZK_CKL();
        }
        prof.mark("digits");

        cub::DoubleBuffer<uint32_t> kb(d_k0.as<uint32_t>(), d_k1.as<uint32_t>());
        cub::DoubleBuffer<uint32_t> vb(d_v0.as<uint32_t>(), d_v1.as<uint32_t>());
        dbuf d_nv, d_tmp;
        CUZK_CK(d_nv.alloc(ctx, 16));
        size_t t_sort = 0, t_rle = 0, t_scan = 0;
        const int maxp = (int)std::min<size_t>(2 * N + 2, 0x7fffffff);  // bound for the P arrays
        CUZK_CK(cub::DeviceRadixSort::SortPairs(nullptr, t_sort, kb, vb, (int)N, 0, end_bit, s));
        CUZK_CK(cub::DeviceRunLengthEncode::Encode(nullptr, t_rle, kb.Current(), kb.Current(), kb.Current(),
                                                   d_nv.as<uint32_t>(), maxp, s));
        CUZK_CK(cub::DeviceScan::ExclusiveSum(nullptr, t_scan, kb.Current(), kb.Current(), maxp, s));
        CUZK_CK(d_tmp.alloc(ctx, std::max(t_sort, std::max(t_rle, t_scan))));
        CUZK_CK(cub::DeviceRadixSort::SortPairs(d_tmp.p, t_sort, kb, vb, (int)N, 0, end_bit, s));
        prof.mark("sort");

        dbuf d_buckets, d_mcnt;
        CUZK_CK(d_buckets.alloc(ctx, (size_t)nwin * B * sizeof(xyzz_t<F>)));
        CUZK_CK(d_mcnt.alloc(ctx, 16));
        CUZK_CK(cudaMemsetAsync(d_buckets.p, 0, (size_t)nwin * B * sizeof(xyzz_t<F>), s));
        k_find_sentinel<<<1, 1, 0, s>>>(kb.Current(), (uint32_t)N, sentinel, d_nv.as<uint32_t>());
        CUZK_CKL();
        uint32_t nvalid = 0;
        CUZK_CK(cudaMemcpyAsync(&nvalid, d_nv.p, 4, cudaMemcpyDeviceToHost, s));
        CUZK_CK(cudaStreamSynchronize(s));
        if (nvalid) {
            // The sort's other halves are dead: their memory goes to the pair rounds.
            if (kb.Current() == d_k0.as<uint32_t>()) { d_k1.release(); d_v1.release(); }
            else { d_k0.release(); d_v0.release(); }
            CUZK_TRY(accumulate_sorted<F>(ctx, bases, kb.Current(), vb.Current(), nvalid, d_tmp.p, t_rle, t_scan,
                                          d_nv.as<uint32_t>(), d_buckets.as<xyzz_t<F>>(), d_mcnt.as<uint32_t>(),
                                          prof));
        }
        prof.mark("accumulate");
        kb = cub::DoubleBuffer<uint32_t>();
        vb = cub::DoubleBuffer<uint32_t>();
        d_k0.release(); d_v0.release(); d_k1.release(); d_v1.release();

        const uint32_t Lc = std::min<uint32_t>(16, B);  // buckets per level-1 thread
        uint32_t K = B / Lc;
        int logL = 0;
        while ((1u << logL) < Lc) logL++;
        dbuf d_W, d_U;
        CUZK_CK(d_W.alloc(ctx, (size_t)nwin * K * sizeof(xyzz_t<F>)));
        CUZK_CK(d_U.alloc(ctx, (size_t)nwin * K * sizeof(xyzz_t<F>)));
        dbuf d_winp;
        CUZK_CK(d_winp.alloc(ctx, (size_t)nwin * sizeof(xyzz_t<F>)));
        k_bucket_chunks<F><<<(nwin * K + 127) / 128, 128, 0, s>>>(d_buckets.as<xyzz_t<F>>(), B, K, nwin,
                                                              d_W.as<xyzz_t<F>>(), d_U.as<xyzz_t<F>>());
        CUZK_CKL();
        d_buckets.release();
        // More than 16 chunks a thread for the one block per window: fold 16 chunks into one
        // (c > 16 for G1, c >= 16 for G2) until it is not.
        while (K > 16u * TPB) {
            const uint32_t G = 16, Kp = K / G;
            dbuf d_W2, d_U2;
            CUZK_CK(d_W2.alloc(ctx, (size_t)nwin * Kp * sizeof(xyzz_t<F>)));
            CUZK_CK(d_U2.alloc(ctx, (size_t)nwin * Kp * sizeof(xyzz_t<F>)));
            k_fold_chunks<F><<<(nwin * Kp + 127) / 128, 128, 0, s>>>(d_W.as<xyzz_t<F>>(), d_U.as<xyzz_t<F>>(), K, G,
                                                                  logL, nwin, d_W2.as<xyzz_t<F>>(),
                                                                  d_U2.as<xyzz_t<F>>());
            CUZK_CKL();
            d_W.swap(d_W2);
            d_U.swap(d_U2);
            K = Kp;
            logL += 4;
        }
        k_window_reduce<F, TPB><<<nwin, TPB, 0, s>>>(d_W.as<xyzz_t<F>>(), d_U.as<xyzz_t<F>>(), K, logL,
                                                    d_winp.as<xyzz_t<F>>());
        CUZK_CKL();
        k_add_windows<F><<<(nwin + 63) / 64, 64, 0, s>>>(d_win.as<xyzz_t<F>>(), d_winp.as<xyzz_t<F>>(), nwin);
        CUZK_CKL();
        prof.mark("bucket_reduce");
        }  // parts
        d_big_sc.release();
        d_big_idx.release();
    }
    // The window sums and the ones' sum come back; Horner's (nwin - 1) * c doublings run on the
    // host (host_final.cu), where they take microseconds instead of milliseconds in one GPU thread.
    std::vector<xyzz_t<F>> h_win((size_t)nwin + 1);
    if (nbig)
        CUZK_CK(cudaMemcpyAsync(h_win.data(), d_win.p, (size_t)nwin * sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, s));
    if (n1)
        CUZK_CK(cudaMemcpyAsync(&h_win[nwin], d_ones_res.p, sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    prof.mark("final");
    if (sizeof(F) == 48)
        host_final_g1(nbig ? h_win.data() : nullptr, nwin, c, n1 ? &h_win[nwin] : nullptr, out_jacobian, accumulate);
    else
        host_final_g2(nbig ? h_win.data() : nullptr, nwin, c, n1 ? &h_win[nwin] : nullptr, out_jacobian, accumulate);
    return ok();
}

// Device bytes a streamed chunk needs per base (and per scalar, up to 4 scalars a base): two
// staging copies of the base, the classified scalar lists (40 bytes a scalar) and the sort's
// keys and values (4 arrays x 4 bytes x 16 windows at c = 16).
template <class F> constexpr size_t stream_bytes_per_base() { return 2 * sizeof(affine_t<F>) + 4 * 40 + 256; }

// Bases per chunk of a streamed MSM with `avail` bytes of device memory at hand (less a reserve
// for the bucket arrays and cub's scratch; at least 2^12), or CUZK's forced chunk_points.
template <class F> size_t stream_chunk_bases(const dev_ctx *ctx, size_t avail)
{
    size_t c = ctx->mem.chunk_points;
    if (!c) c = avail > STREAM_RESERVE ? (avail - STREAM_RESERVE) / stream_bytes_per_base<F>() : 0;
    return std::max<size_t>(c & ~(size_t)63, 4096);
}

template <class F>
cuzk_kresult msm_stream(dev_ctx *ctx, const void *h_bases_v, size_t bases_len, size_t base_offset,
                        const void *d_scalars, size_t n, const uint64_t *h_density,
                        void *out_jacobian, stream_carry *in, stream_carry *out, const stream_next *next)
{
    cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
    const affine_t<F> *h_bases = static_cast<const affine_t<F> *>(h_bases_v);
    if (n > 0x7fffffffu || bases_len > 0x7fffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "msm: more than 2^31-1 scalars or bases");
    const size_t nwords = (n + 63) / 64;
    size_t nsel = selected_count(h_density, n);
    if (base_offset > bases_len || nsel > bases_len - base_offset)
        return arg_err(CUZK_K_ERR_RANGE, "msm: base_offset + selected scalars > bases_len");
    // The carried first chunk is used only if it is this MSM's (same bases, same piece) and no
    // larger than a chunk of this MSM (its compute needs a chunk's working memory).
    bool carried = false;
    if (in && in->h && in->buf.p && nsel) {
        stream_piece p = next_piece(h_density, n, 0, 0, in->cap);
        carried = in->h == (const void *)(h_bases + base_offset) && p.cnt == in->piece.cnt &&
                  p.nb == in->piece.nb && p.nb <= nsel && p.nb * sizeof(affine_t<F>) <= in->buf.bytes;
    }
    if (nsel == 0) {
        if (in) in->clear();
        memset(out_jacobian, 0, sizeof(jac_t<F>));
        return ok();
    }

    // Chunk size: what the memory limit (or the device) leaves (a carried chunk's buffer counts
    // as free: it is one of the two staging buffers).
    size_t avail = 0;
    CUZK_TRY(headroom(ctx, &avail));
    if (carried) avail += in->buf.bytes;
    size_t chunk_mem = stream_chunk_bases<F>(ctx, avail);
    if (carried && in->piece.nb > chunk_mem) carried = false;
    if (in && !carried) in->clear();
    // Chunks of about equal size (the last one is not a sliver, so it can hide the next MSM's
    // first copy).
    size_t chunk = chunk_mem;
    {
        size_t rest = nsel - (carried ? in->piece.nb : 0), k = (rest + chunk - 1) / chunk;
        if (k > 1) chunk = std::min<size_t>(chunk, ((rest + k - 1) / k + 63) & ~(size_t)63);
    }
    chunk = std::min<size_t>(chunk, (nsel + 63) & ~(size_t)63);

    // Chunks: ranges of whole density words, each selecting at most `chunk` bases and holding
    // at most 4 * chunk scalars; the carried piece first.
    std::vector<stream_piece> plan;
    {
        size_t w = 0, b = 0;
        if (carried) {
            plan.push_back(in->piece);
            w = (in->piece.cnt + 63) / 64;
            b = in->piece.nb;
        }
        while (w < nwords) {
            stream_piece p = next_piece(h_density, n, w, b, chunk);
            plan.push_back(p);
            w = (p.i0 + p.cnt + 63) / 64;
            b += p.nb;
        }
    }

    profiler prof(sizeof(F) == 48 ? "msm_stream_g1" : "msm_stream_g2", s, ctx->k.profile);
    if (ctx->k.profile)
        fprintf(stderr, "cuzk kernels: streamed MSM of %zu bases: %zu chunks%s\n", nsel, plan.size(),
                carried ? ", the first carried in" : "");
    // Chunk k's bases: the carried buffer (k = 0 when carried), else stage[j % 2] with
    // j = k - (carried ? 1 : 0).
    const size_t first = carried ? 1 : 0;
    size_t stage_pts = 0;
    for (size_t k = first; k < plan.size(); k++) stage_pts = std::max(stage_pts, plan[k].nb);
    // stage[1] is allocated at its first use: by then a carried chunk's buffer has gone back.
    dbuf stage[2];
    if (plan.size() > first) CUZK_CK(stage[0].alloc(ctx, stage_pts * sizeof(affine_t<F>)));
    memset(out_jacobian, 0, sizeof(jac_t<F>));  // Z = 0: infinity; each chunk adds its sum
    // The density words go to the device once, now, while the copy engine is idle: inside a
    // chunk's msm_run that small copy would queue behind the next chunk's bases (60 ms a
    // chunk at 2^26, measured).
    dbuf d_dens;
    if (h_density) {
        CUZK_CK(d_dens.alloc(ctx, nwords * 8));
        CUZK_CK(cudaMemcpyAsync(d_dens.p, h_density, nwords * 8, cudaMemcpyHostToDevice, s));
    }
    copy_join join{sc};  // the staging buffers are written on the copy stream
    event_list evs;
    cudaEvent_t e_alloc, e_copied[2];
    CUZK_CK(evs.add(&e_alloc));
    CUZK_CK(evs.add(&e_copied[0]));
    CUZK_CK(evs.add(&e_copied[1]));
    CUZK_CK(cudaEventRecord(e_alloc, s));
    CUZK_CK(cudaStreamWaitEvent(sc, e_alloc, 0));
    auto queue_copy = [&](size_t k) -> cuzk_kresult {
        if (k < first || k >= plan.size() || plan[k].nb == 0) return ok();
        const stream_piece &p = plan[k];
        const size_t j = k - first;
        if (!stage[j % 2].p) {
            CUZK_CK(stage[j % 2].alloc(ctx, stage_pts * sizeof(affine_t<F>)));
            CUZK_CK(cudaEventRecord(e_alloc, s));
            CUZK_CK(cudaStreamWaitEvent(sc, e_alloc, 0));
        }
        CUZK_CK(cudaMemcpyAsync(stage[j % 2].p, h_bases + base_offset + p.b0, p.nb * sizeof(affine_t<F>),
                                cudaMemcpyHostToDevice, sc));
        CUZK_CK(cudaEventRecord(e_copied[j % 2], sc));
        return ok();
    };
    // The next MSM's first chunk into `out`, during this MSM's last chunk: the buffer is a
    // chunk's size (the stage buffer no chunk uses any more goes back first, so the memory
    // stays within two chunk buffers).
    auto queue_carry = [&](size_t last) -> cuzk_kresult {
        if (!out || !next || !next->n) return ok();
        out->clear();
        // At most a buffer of this MSM, and a little under its chunk so that the next MSM
        // (planned after, with about the same memory) takes it.
        const size_t bytes = std::max(stage_pts, carried ? in->piece.nb : (size_t)0) * sizeof(affine_t<F>);
        const size_t cap = std::min(bytes / next->elem, chunk_mem / 16 * 15);
        if (cap < 64) return ok();
        stream_piece p = next_piece(next->density, next->n, 0, 0, cap);
        if (p.nb == 0 || p.nb > cap) return ok();
        if (last >= first + 1) stage[(last - first + 1) % 2].release();  // free: its chunk is done
        if (!try_alloc(out->buf, ctx, p.nb * next->elem)) return ok();
        CUZK_CK(cudaEventRecord(e_alloc, s));
        CUZK_CK(cudaStreamWaitEvent(sc, e_alloc, 0));
        CUZK_CK(cudaMemcpyAsync(out->buf.p, next->h_bases, p.nb * next->elem, cudaMemcpyHostToDevice, sc));
        CUZK_CK(cudaEventRecord(out->copied, sc));
        out->h = next->h_bases;
        out->cap = cap;
        out->piece = p;
        return ok();
    };
    CUZK_TRY(queue_copy(first));
    for (size_t k = 0; k < plan.size(); k++) {
        // Chunk k-1's MSM has returned (msm_run ends with a synchronize): its staging buffer
        // is free for chunk k+1's bases, which now copy while chunk k computes.
        CUZK_TRY(queue_copy(k + 1));
        if (k + 1 == plan.size()) CUZK_TRY(queue_carry(k));
        const stream_piece &p = plan[k];
        if (p.nb == 0) continue;
        const void *bases;
        if (k < first) {
            CUZK_CK(cudaStreamWaitEvent(s, in->copied, 0));
            bases = in->buf.p;
        } else {
            CUZK_CK(cudaStreamWaitEvent(s, e_copied[(k - first) % 2], 0));
            bases = stage[(k - first) % 2].p;
        }
        CUZK_TRY(msm_run<F>(ctx, bases, p.nb, 0, static_cast<const fr_t *>(d_scalars) + p.i0,
                            nullptr, p.cnt, h_density ? h_density + p.i0 / 64 : nullptr, out_jacobian,
                            true, h_density ? d_dens.as<uint64_t>() + p.i0 / 64 : nullptr));
        if (k < first) in->clear();  // its chunk is done: the memory goes back
    }
    prof.mark("chunks");
    return ok();
}

}  // namespace cuzk
