// cuzk kernels: field glue.
//
// Device side: Fp / Fr come from sppark's ff/bls12-381.hpp (mont_t: 32-bit limbs, Montgomery
// form, fully reduced, memory layout identical to blst's vec384 / vec256 = blst_fp / blst_fr).
// Fp2 is ours (two fp_t, Karatsuba; sppark's fp2_t is a two-lanes-per-element design that
// does not fit one-thread-per-point code).
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
// ---- 768-bit intermediates for the Fp2 product (lazy reduction) ---------------------------
// Karatsuba over Fp needs three products but only two reductions if the products are kept
// unreduced: a0 b0 - a1 b1 and (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 are reduced once each.
// A 12 x 12-limb product costs about half of a Montgomery product (whose other half is the
// reduction), so the Fp2 product drops from 3 full products to 3 half ones plus 2 reductions.
#ifndef CUZK_FP2_LAZY
#define CUZK_FP2_LAZY 1
#endif
struct wide_fp { uint32_t w[24]; };  // little-endian 768-bit integer

// Plain (not modular) 12-limb sum; a, b < 2p < 2^382, so it never carries out.
DEVI fp_t fp_add_plain(const fp_t& a, const fp_t& b)
{
    fp_t r;
    asm("add.cc.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
    for (int i = 1; i < 11; i++) asm("addc.cc.u32 %0, %1, %2;" : "=r"(r[i]) : "r"(a[i]), "r"(b[i]));
    asm("addc.u32 %0, %1, %2;" : "=r"(r[11]) : "r"(a[11]), "r"(b[11]));
    return r;
}

// r = a * b as integers (a, b < 2^384). Limb products a_j b_i land on words i+j (low half) and
// i+j+1 (high half); those of even j and of odd j go to two accumulators E and O so that each
// row's low/high halves form one carry chain (mad.lo.cc / madc.hi.cc of the same operands,
// which ptxas fuses into one wide multiply-add), and E + O at the end.
DEVI void wide_mul(wide_fp& r, const fp_t& a, const fp_t& b)
{
    uint32_t* E = r.w;
    uint32_t O[24];
    // row 0: plain products, no overlap within E or within O
#pragma unroll
    for (int j = 0; j < 12; j += 2)
        asm("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;" : "=r"(E[j]), "=r"(E[j + 1]) : "r"(a[j]), "r"(b[0]));
#pragma unroll
    for (int j = 1; j < 12; j += 2)
        asm("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;" : "=r"(O[j]), "=r"(O[j + 1]) : "r"(a[j]), "r"(b[0]));
    E[12] = 0;
#pragma unroll
    for (int i = 1; i < 12; i++) {
        const uint32_t bi = b[i];
        // even j: words i .. i+11, carry into i+12 (not yet written: E's value after row i is
        // below 2^(32(i+13)), so nothing carries past it)
        asm("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(E[i]), "+r"(E[i + 1]) : "r"(a[0]), "r"(bi));
#pragma unroll
        for (int j = 2; j < 12; j += 2)
            asm("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(E[i + j]), "+r"(E[i + j + 1]) : "r"(a[j]), "r"(bi));
        asm("addc.u32 %0, 0, 0;" : "=r"(E[i + 12]));
        // odd j: words i+1 .. i+12; word i+12 is new (high half of a_11 b_i plus the carry);
        // O's value after row i is below 2^(32(i+13)), so the chain never carries out
        asm("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(O[i + 1]), "+r"(O[i + 2]) : "r"(a[1]), "r"(bi));
#pragma unroll
        for (int j = 3; j < 11; j += 2)
            asm("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(O[i + j]), "+r"(O[i + j + 1]) : "r"(a[j]), "r"(bi));
        asm("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.u32 %1, %2, %3, 0;"
            : "+r"(O[i + 11]), "=r"(O[i + 12]) : "r"(a[11]), "r"(bi));
    }
    // E += O (O[0] is zero: words 1..23); the sum is a * b < 2^768
    asm("add.cc.u32 %0, %0, %1;" : "+r"(E[1]) : "r"(O[1]));
#pragma unroll
    for (int k = 2; k < 23; k++) asm("addc.cc.u32 %0, %0, %1;" : "+r"(E[k]) : "r"(O[k]));
    asm("addc.u32 %0, %0, %1;" : "+r"(E[23]) : "r"(O[23]));
}

// r -= b (768-bit), returns the borrow (1 if r < b before).
DEVI uint32_t wide_sub(wide_fp& r, const wide_fp& b)
{
    uint32_t borrow;
    asm("sub.cc.u32 %0, %0, %1;" : "+r"(r.w[0]) : "r"(b.w[0]));
#pragma unroll
    for (int k = 1; k < 24; k++) asm("subc.cc.u32 %0, %0, %1;" : "+r"(r.w[k]) : "r"(b.w[k]));
    asm("subc.u32 %0, 0, 0;" : "=r"(borrow));
    return borrow & 1;
}

// r += b (768-bit; the caller knows the sum fits).
DEVI void wide_add(wide_fp& r, const wide_fp& b)
{
    asm("add.cc.u32 %0, %0, %1;" : "+r"(r.w[0]) : "r"(b.w[0]));
#pragma unroll
    for (int k = 1; k < 23; k++) asm("addc.cc.u32 %0, %0, %1;" : "+r"(r.w[k]) : "r"(b.w[k]));
    asm("addc.u32 %0, %0, %1;" : "+r"(r.w[23]) : "r"(b.w[23]));
}

// Montgomery reduction of T = lo + 2^384 hi with hi < p: T / 2^384 mod p = REDC(lo) + hi, where
// REDC(lo) (sppark's from(): lo / 2^384 mod p, at most p) plus hi (< p) is reduced by the
// modular addition.
DEVI fp_t wide_redc(const wide_fp& t)
{
    fp_t lo, hi;
#pragma unroll
    for (int k = 0; k < 12; k++) { lo[k] = t.w[k]; hi[k] = t.w[12 + k]; }
    lo.from();
    return lo + hi;
}

// The Fp2 product and square, inline; f_mul / f_sqr below are their out-of-line versions.
DEVI fp2_t f_mul_inl(const fp2_t& a, const fp2_t& b)
{
#if CUZK_FP2_LAZY
    // c0 = a0 b0 - a1 b1 in (-p^2, p^2): plus p 2^384 if negative, so its high half is below p.
    // c1 = (a0 + a1)(b0 + b1) - (a0 b0 + a1 b1) = a0 b1 + a1 b0 < 2p^2: high half below p/4.
    // Order chosen for register pressure: at most two 768-bit values live outside wide_mul.
    wide_fp t0, t1;
    wide_mul(t0, a.c0, b.c0);
    wide_mul(t1, a.c1, b.c1);
    const uint32_t neg = wide_sub(t0, t1);  // t0 = a0 b0 - a1 b1 (mod 2^768)
    wide_add(t1, t1);
    wide_add(t1, t0);                       // t1 = a0 b0 + a1 b1 (mod 2^768: exact, < 2p^2)
    {
        // t0.w[12..23] += p if neg (the sum is below p 2^384: no carry out)
        const uint32_t m = 0u - neg;
        asm("add.cc.u32 %0, %0, %1;" : "+r"(t0.w[12]) : "r"(device::BLS12_381_P[0] & m));
#pragma unroll
        for (int k = 1; k < 11; k++)
            asm("addc.cc.u32 %0, %0, %1;" : "+r"(t0.w[12 + k]) : "r"(device::BLS12_381_P[k] & m));
        asm("addc.u32 %0, %0, %1;" : "+r"(t0.w[23]) : "r"(device::BLS12_381_P[11] & m));
    }
    fp2_t r;
    r.c0 = wide_redc(t0);
    wide_mul(t0, fp_add_plain(a.c0, a.c1), fp_add_plain(b.c0, b.c1));
    wide_sub(t0, t1);
    r.c1 = wide_redc(t0);
    return r;
#else
    fp_t t0 = a.c0 * b.c0;
    fp_t t1 = a.c1 * b.c1;
    fp_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
    fp2_t r;
    r.c0 = t0 - t1;
    r.c1 = t2 - t0 - t1;
    return r;
#endif
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
