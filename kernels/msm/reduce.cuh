// cuzk kernels, MSM: reductions. A block's tree reduction of XYZZ points, and the bucket and
// window reduction after accumulation: each window's buckets summed with the running-sum trick
// in K chunks (folded while a window has more chunks than its block can take), the windows of
// each part of the big list added.
#pragma once
#include "common.cuh"
#include "curve.cuh"
#include <algorithm>

namespace cuzk {
namespace {

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

// acc[i] += part[i] for i < n: a part's window sums into the MSM's, or a streamed chunk's
// buckets into the buckets kept across its chunks (msm/stream.cuh).
template <class F>
__global__ void k_add_points(xyzz_t<F> *acc, const xyzz_t<F> *part, size_t n)
{
#ifdef __CUDA_ARCH__
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        xyzz_t<F> a = acc[i];
        xyzz_add(a, part[i]);
        acc[i] = a;
    }
#endif
}

template <class F> constexpr int red_tpb() { return sizeof(F) == 48 ? 128 : 64; }

// One part's buckets (nwin windows of B, as accumulated; freed here once read) reduced to window
// sums, which are added to win[0, nwin): each window's buckets in K chunks of Lc (W = the chunk's
// weighted sum, U = its plain sum), chunks folded 16 to one while a window has more than its
// block can take, then one block per window.
template <class F>
cuzk_kresult reduce_buckets(dev_ctx *ctx, dbuf &d_buckets, uint32_t B, int nwin, xyzz_t<F> *win)
{
    constexpr int TPB = red_tpb<F>();
    cudaStream_t s = ctx->s_comp;
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
    k_add_points<F><<<(nwin + 63) / 64, 64, 0, s>>>(win, d_winp.as<xyzz_t<F>>(), (size_t)nwin);
    CUZK_CKL();
    return ok();
}

}  // namespace
}  // namespace cuzk
