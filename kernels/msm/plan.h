// cuzk kernels, MSM: the window-size plan.
#pragma once
#include "common.cuh"
#include "curve.cuh"
#include <algorithm>

namespace cuzk {
namespace {

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

}  // namespace
}  // namespace cuzk
