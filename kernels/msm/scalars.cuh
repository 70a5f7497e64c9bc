// cuzk kernels, MSM: the scalars' side. Classification (Montgomery -> canonical, the density
// bitmap -> base index by the rank of its bit; zero scalars dropped, scalars equal to 1 listed
// apart, the rest listed with their base index) and the signed c-bit window digits of the big
// ones, as (key = window:bucket, value = point) pairs for the sort.
#pragma once
#include "common.cuh"
#include "curve.cuh"

namespace cuzk {
namespace {

constexpr int CLASSIFY_TPB = 256;

__global__ void k_popcount(const uint64_t *bits, uint32_t *out, size_t nwords)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nwords) out[i] = __popcll(bits[i]);
}

// A selected scalar's kind, s turned canonical in place: 0 zero, 1 one, 2 any other (big).
__device__ __forceinline__ int scalar_kind(fr_t &s)
{
#ifdef __CUDA_ARCH__
    s.from();
    bool one = s[0] == 1;
#pragma unroll
    for (int k = 1; k < 8; k++) one &= s[k] == 0;
    return s.is_zero() ? 0 : (one ? 1 : 2);
#else
    return 0;
#endif
}

// The big scalars among the selected of scal[0, n) (dens: the density words or nullptr), added
// to *count.
__global__ void k_count_big(const fr_t *scal, size_t n, const uint64_t *dens, unsigned long long *count)
{
#ifdef __CUDA_ARCH__
    unsigned long long mine = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (dens && !((dens[i >> 6] >> (i & 63)) & 1)) continue;
        fr_t s = scal[i];
        mine += scalar_kind(s) == 2;
    }
    if (mine) atomicAdd(count, mine);
#endif
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
                kind = scalar_kind(s);
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

}  // namespace
}  // namespace cuzk

namespace cuzk {
// Selected bases of an n-scalar MSM (n without a density).
inline size_t selected_count(const uint64_t *density, size_t n)
{
    size_t nsel = 0;
    for (size_t w = 0; w < (n + 63) / 64; w++) nsel += word_selected(density, n, w);
    return nsel;
}
}  // namespace cuzk
