// cuzk kernels: field glue.
//
// Device side: Fp / Fr come from sppark's ff/bls12-381.hpp (mont_t: 32-bit limbs, Montgomery
// form, fully reduced, memory layout identical to blst's vec384 / vec256 = blst_fp / blst_fr).
// Fp2 is ours (two fp_t, products as sppark dot products; sppark's fp2_t is a
// two-lanes-per-element design that does not fit one-thread-per-point code).
//
// Host side: sppark maps the same names to blst's C++ types (same size); host code here only
// sizes buffers and passes pointers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

// Both passes include sppark's header: the host pass needs the declarations of its
// __constant__ tables (nvcc registers them from the host side) and gets blst's host types
// (blst_t.hpp, from blst/src), which have the same qualified names and sizes.
#include <ff/bls12-381.hpp>
typedef bls12_381::fp_t fp_t;
typedef bls12_381::fr_t fr_t;

struct __align__(16) fp2_t {
    fp_t c0, c1;
};

static_assert(sizeof(fp_t) == 48, "fp_t size");
static_assert(sizeof(fr_t) == 32, "fr_t size");
static_assert(sizeof(fp2_t) == 96, "fp2_t size");

#ifdef __CUDA_ARCH__
#define DEVI __device__ __forceinline__

// ---- Fp ---------------------------------------------------------------------------------
DEVI fp_t f_add(const fp_t& a, const fp_t& b) { return a + b; }
DEVI fp_t f_sub(const fp_t& a, const fp_t& b) { return a - b; }
DEVI fp_t f_mul(const fp_t& a, const fp_t& b) { return a * b; }
DEVI fp_t f_sqr(const fp_t& a) { fp_t t = a; t.sqr(); return t; }
DEVI fp_t f_mul_inl(const fp_t& a, const fp_t& b) { return a * b; }
DEVI fp_t f_sqr_inl(const fp_t& a) { return f_sqr(a); }
DEVI fp_t f_dbl(const fp_t& a) { return a + a; }
DEVI fp_t f_neg(const fp_t& a) { return -a; }
DEVI bool f_is_zero(const fp_t& a) { return a.is_zero(); }
DEVI void f_set_zero(fp_t& a) { a.zero(); }
DEVI void f_set_one(fp_t& a) { a = fp_t::one(); }

// ---- Fp2 = Fp[u]/(u^2+1) ----------------------------------------------------------------
DEVI fp2_t f_add(const fp2_t& a, const fp2_t& b) { fp2_t r; r.c0 = a.c0 + b.c0; r.c1 = a.c1 + b.c1; return r; }
DEVI fp2_t f_sub(const fp2_t& a, const fp2_t& b) { fp2_t r; r.c0 = a.c0 - b.c0; r.c1 = a.c1 - b.c1; return r; }
DEVI fp2_t f_dbl(const fp2_t& a) { fp2_t r; r.c0 = a.c0 + a.c0; r.c1 = a.c1 + a.c1; return r; }
DEVI fp2_t f_neg(const fp2_t& a) { fp2_t r; r.c0 = -a.c0; r.c1 = -a.c1; return r; }
// The Fp2 product and square, inline; f_mul / f_sqr below are their out-of-line versions.
// c0 = a0 b0 - a1 b1 and c1 = a0 b1 + a1 b0, each one sppark dot_product (a sum of two
// products with a single interleaved Montgomery reduction; inputs below p, -0 = 0): as many
// multiply-adds as Karatsuba's three full products, but no modular additions around them and
// fewer live registers, which makes the G2 MSM measurably faster (kernels/NOTES.md has the numbers).
DEVI fp2_t f_mul_inl(const fp2_t& a, const fp2_t& b)
{
    fp2_t r;
    r.c0 = fp_t::dot_product(a.c0, b.c0, -a.c1, b.c1);
    r.c1 = fp_t::dot_product(a.c0, b.c1, a.c1, b.c0);
    return r;
}
DEVI fp2_t f_sqr_inl(const fp2_t& a)
{
    fp2_t r;
    fp_t t = a.c0 * a.c1;
    r.c0 = (a.c0 + a.c1) * (a.c0 - a.c1);
    r.c1 = t + t;
    return r;
}
// Not inlined: keeps the G2 kernels' code (and nvcc's compile time) manageable.
__device__ __noinline__ fp2_t f_mul(const fp2_t& a, const fp2_t& b) { return f_mul_inl(a, b); }
__device__ __noinline__ fp2_t f_sqr(const fp2_t& a) { return f_sqr_inl(a); }
DEVI bool f_is_zero(const fp2_t& a) { return a.c0.is_zero() & a.c1.is_zero(); }
DEVI void f_set_zero(fp2_t& a) { a.c0.zero(); a.c1.zero(); }
DEVI void f_set_one(fp2_t& a) { a.c0 = fp_t::one(); a.c1.zero(); }

// ---- Fr helpers -------------------------------------------------------------------------
// x^e for a 256-bit exponent given as 4 little-endian 64-bit limbs (variable time, one thread).
DEVI fr_t fr_pow_u256(fr_t x, const uint64_t e[4])
{
    fr_t r = fr_t::one();
    for (int i = 255; i >= 0; i--) {
        r.sqr();
        if ((e[i >> 6] >> (i & 63)) & 1) r = r * x;
    }
    return r;
}
// 1/x by Fermat (x != 0).
DEVI fr_t fr_inverse(const fr_t& x)
{
    const uint64_t rm2[4] = {0xfffffffeffffffffULL, 0x53bda402fffe5bfeULL,
                             0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
    return fr_pow_u256(x, rm2);
}
DEVI fr_t fr_from_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    fr_t r;
    r[0] = (uint32_t)a; r[1] = (uint32_t)(a >> 32);
    r[2] = (uint32_t)b; r[3] = (uint32_t)(b >> 32);
    r[4] = (uint32_t)c; r[5] = (uint32_t)(c >> 32);
    r[6] = (uint32_t)d; r[7] = (uint32_t)(d >> 32);
    return r;
}
#endif  // __CUDA_ARCH__
