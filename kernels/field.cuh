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

// ---- Fp product, one Karatsuba level -----------------------------------------------------
// sppark's Fp product interleaves a 12x12-limb schoolbook product with the Montgomery
// reduction: 12 * (24 + 1 + 24) = 588 integer multiply-adds, and the pair rounds are bound by
// that pipe (kernels/NOTES.md). Here the 24-limb product takes three 6x6-limb products
// (subtractive Karatsuba: 3 * 72 = 216 multiply-adds instead of 288; the extra work is
// additions, which run on another pipe), then sppark's reduction of the wide value
// (mul_by_1 of the low half plus the high half, as its own squaring does).

// r[0..11] = a[0..5] * b[0..5]. Each row b[i] is split into two carry chains: the products of
// the even limbs of a land at words i .. i+5 and those of the odd limbs at i+1 .. i+6, so
// neither chain overlaps itself; the two accumulators are added at the end.
DEVI void mul_6x6(uint32_t r[12], const uint32_t a[6], const uint32_t b[6])
{
    uint32_t ev[12], od[13];
    asm("mul.lo.u32 %0, %6, %9;  mul.hi.u32 %1, %6, %9;"
        "mul.lo.u32 %2, %7, %9;  mul.hi.u32 %3, %7, %9;"
        "mul.lo.u32 %4, %8, %9;  mul.hi.u32 %5, %8, %9;"
        : "=r"(ev[0]), "=r"(ev[1]), "=r"(ev[2]), "=r"(ev[3]), "=r"(ev[4]), "=r"(ev[5])
        : "r"(a[0]), "r"(a[2]), "r"(a[4]), "r"(b[0]));
    asm("mul.lo.u32 %0, %6, %9;  mul.hi.u32 %1, %6, %9;"
        "mul.lo.u32 %2, %7, %9;  mul.hi.u32 %3, %7, %9;"
        "mul.lo.u32 %4, %8, %9;  mul.hi.u32 %5, %8, %9;"
        : "=r"(od[1]), "=r"(od[2]), "=r"(od[3]), "=r"(od[4]), "=r"(od[5]), "=r"(od[6])
        : "r"(a[1]), "r"(a[3]), "r"(a[5]), "r"(b[0]));
    ev[6] = 0;
    od[7] = 0;
#pragma unroll
    for (int i = 1; i < 6; i++) {
        asm("mad.lo.cc.u32  %0, %7, %10, %0;  madc.hi.cc.u32 %1, %7, %10, %1;"
            "madc.lo.cc.u32 %2, %8, %10, %2;  madc.hi.cc.u32 %3, %8, %10, %3;"
            "madc.lo.cc.u32 %4, %9, %10, %4;  madc.hi.cc.u32 %5, %9, %10, %5;"
            "addc.u32 %6, 0, 0;"
            : "+r"(ev[i]), "+r"(ev[i + 1]), "+r"(ev[i + 2]), "+r"(ev[i + 3]), "+r"(ev[i + 4]),
              "+r"(ev[i + 5]), "=r"(ev[i + 6])
            : "r"(a[0]), "r"(a[2]), "r"(a[4]), "r"(b[i]));
        asm("mad.lo.cc.u32  %0, %7, %10, %0;  madc.hi.cc.u32 %1, %7, %10, %1;"
            "madc.lo.cc.u32 %2, %8, %10, %2;  madc.hi.cc.u32 %3, %8, %10, %3;"
            "madc.lo.cc.u32 %4, %9, %10, %4;  madc.hi.cc.u32 %5, %9, %10, %5;"
            "addc.u32 %6, 0, 0;"
            : "+r"(od[i + 1]), "+r"(od[i + 2]), "+r"(od[i + 3]), "+r"(od[i + 4]), "+r"(od[i + 5]),
              "+r"(od[i + 6]), "=r"(od[i + 7])
            : "r"(a[1]), "r"(a[3]), "r"(a[5]), "r"(b[i]));
    }
    // od[12] is 0: the odd-limb part of a times b is below 2^384.
    r[0] = ev[0];
    asm("add.cc.u32  %0, %11, %22;  addc.cc.u32 %1, %12, %23;  addc.cc.u32 %2, %13, %24;"
        "addc.cc.u32 %3, %14, %25;  addc.cc.u32 %4, %15, %26;  addc.cc.u32 %5, %16, %27;"
        "addc.cc.u32 %6, %17, %28;  addc.cc.u32 %7, %18, %29;  addc.cc.u32 %8, %19, %30;"
        "addc.cc.u32 %9, %20, %31;  addc.u32    %10, %21, %32;"
        : "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
          "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11])
        : "r"(ev[1]), "r"(ev[2]), "r"(ev[3]), "r"(ev[4]), "r"(ev[5]), "r"(ev[6]), "r"(ev[7]),
          "r"(ev[8]), "r"(ev[9]), "r"(ev[10]), "r"(ev[11]),
          "r"(od[1]), "r"(od[2]), "r"(od[3]), "r"(od[4]), "r"(od[5]), "r"(od[6]), "r"(od[7]),
          "r"(od[8]), "r"(od[9]), "r"(od[10]), "r"(od[11]));
}

// d = |hi - lo| for two 6-limb halves; returns all ones if hi < lo, else 0.
DEVI uint32_t absdiff_6(uint32_t d[6], const uint32_t lo[6], const uint32_t hi[6])
{
    uint32_t m;
    asm("sub.cc.u32  %0, %7, %13;  subc.cc.u32 %1, %8, %14;  subc.cc.u32 %2, %9, %15;"
        "subc.cc.u32 %3, %10, %16; subc.cc.u32 %4, %11, %17; subc.cc.u32 %5, %12, %18;"
        "subc.u32    %6, 0, 0;"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(m)
        : "r"(hi[0]), "r"(hi[1]), "r"(hi[2]), "r"(hi[3]), "r"(hi[4]), "r"(hi[5]),
          "r"(lo[0]), "r"(lo[1]), "r"(lo[2]), "r"(lo[3]), "r"(lo[4]), "r"(lo[5]));
    // two's complement negation when negative: (d ^ m) - m
#pragma unroll
    for (int i = 0; i < 6; i++) d[i] ^= m;
    asm("sub.cc.u32  %0, %0, %6;  subc.cc.u32 %1, %1, %6;  subc.cc.u32 %2, %2, %6;"
        "subc.cc.u32 %3, %3, %6;  subc.cc.u32 %4, %4, %6;  subc.u32    %5, %5, %6;"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5])
        : "r"(m));
    return m;
}

DEVI fp_t fp_mul_kara(const fp_t& x, const fp_t& y)
{
    uint32_t a[12], b[12];
#pragma unroll
    for (int i = 0; i < 12; i++) { a[i] = x[i]; b[i] = y[i]; }
    uint32_t L[12], H[12], M[12], da[6], db[6];
    mul_6x6(L, a, b);
    mul_6x6(H, a + 6, b + 6);
    uint32_t sa = absdiff_6(da, a, a + 6);
    uint32_t sb = absdiff_6(db, b, b + 6);
    mul_6x6(M, da, db);
    // a0*b1 + a1*b0 = L + H - (a1 - a0)(b1 - b0); the product's sign is sa ^ sb.
    // ns = all ones when M is to be subtracted: mid = L + H + (M ^ ns) + (ns & 1), 13 words.
    uint32_t ns = ~(sa ^ sb);
    uint32_t mid[13];
    asm("add.cc.u32  %0, %13, %25;  addc.cc.u32 %1, %14, %26;  addc.cc.u32 %2, %15, %27;"
        "addc.cc.u32 %3, %16, %28;  addc.cc.u32 %4, %17, %29;  addc.cc.u32 %5, %18, %30;"
        "addc.cc.u32 %6, %19, %31;  addc.cc.u32 %7, %20, %32;  addc.cc.u32 %8, %21, %33;"
        "addc.cc.u32 %9, %22, %34;  addc.cc.u32 %10, %23, %35; addc.cc.u32 %11, %24, %36;"
        "addc.u32    %12, 0, 0;"
        : "=r"(mid[0]), "=r"(mid[1]), "=r"(mid[2]), "=r"(mid[3]), "=r"(mid[4]), "=r"(mid[5]),
          "=r"(mid[6]), "=r"(mid[7]), "=r"(mid[8]), "=r"(mid[9]), "=r"(mid[10]), "=r"(mid[11]),
          "=r"(mid[12])
        : "r"(L[0]), "r"(L[1]), "r"(L[2]), "r"(L[3]), "r"(L[4]), "r"(L[5]), "r"(L[6]),
          "r"(L[7]), "r"(L[8]), "r"(L[9]), "r"(L[10]), "r"(L[11]),
          "r"(H[0]), "r"(H[1]), "r"(H[2]), "r"(H[3]), "r"(H[4]), "r"(H[5]), "r"(H[6]),
          "r"(H[7]), "r"(H[8]), "r"(H[9]), "r"(H[10]), "r"(H[11]));
    {
        uint32_t one = ns & 1, c;
#pragma unroll
        for (int i = 0; i < 12; i++) M[i] ^= ns;
        // set the carry flag to `one`, then add the 13 words
        asm("add.cc.u32  %13, %26, 0xffffffff;"
            "addc.cc.u32 %0, %0, %14;   addc.cc.u32 %1, %1, %15;   addc.cc.u32 %2, %2, %16;"
            "addc.cc.u32 %3, %3, %17;   addc.cc.u32 %4, %4, %18;   addc.cc.u32 %5, %5, %19;"
            "addc.cc.u32 %6, %6, %20;   addc.cc.u32 %7, %7, %21;   addc.cc.u32 %8, %8, %22;"
            "addc.cc.u32 %9, %9, %23;   addc.cc.u32 %10, %10, %24; addc.cc.u32 %11, %11, %25;"
            "addc.u32    %12, %12, %27;"
            : "+r"(mid[0]), "+r"(mid[1]), "+r"(mid[2]), "+r"(mid[3]), "+r"(mid[4]), "+r"(mid[5]),
              "+r"(mid[6]), "+r"(mid[7]), "+r"(mid[8]), "+r"(mid[9]), "+r"(mid[10]),
              "+r"(mid[11]), "+r"(mid[12]), "=r"(c)
            : "r"(M[0]), "r"(M[1]), "r"(M[2]), "r"(M[3]), "r"(M[4]), "r"(M[5]), "r"(M[6]),
              "r"(M[7]), "r"(M[8]), "r"(M[9]), "r"(M[10]), "r"(M[11]), "r"(one), "r"(ns));
    }
    // T = L + mid * 2^192 + H * 2^384 (L and H do not overlap): add mid at word 6.
    fp_t lo, hi;
#pragma unroll
    for (int i = 0; i < 6; i++) lo[i] = L[i];
    asm("add.cc.u32  %0, %0, %18;  addc.cc.u32 %1, %1, %19;  addc.cc.u32 %2, %2, %20;"
        "addc.cc.u32 %3, %3, %21;  addc.cc.u32 %4, %4, %22;  addc.cc.u32 %5, %5, %23;"
        "addc.cc.u32 %6, %6, %24;  addc.cc.u32 %7, %7, %25;  addc.cc.u32 %8, %8, %26;"
        "addc.cc.u32 %9, %9, %27;  addc.cc.u32 %10, %10, %28; addc.cc.u32 %11, %11, %29;"
        "addc.cc.u32 %12, %12, %30; addc.cc.u32 %13, %13, 0; addc.cc.u32 %14, %14, 0;"
        "addc.cc.u32 %15, %15, 0;  addc.cc.u32 %16, %16, 0;  addc.u32 %17, %17, 0;"
        : "+r"(L[6]), "+r"(L[7]), "+r"(L[8]), "+r"(L[9]), "+r"(L[10]), "+r"(L[11]),
          "+r"(H[0]), "+r"(H[1]), "+r"(H[2]), "+r"(H[3]), "+r"(H[4]), "+r"(H[5]), "+r"(H[6]),
          "+r"(H[7]), "+r"(H[8]), "+r"(H[9]), "+r"(H[10]), "+r"(H[11])
        : "r"(mid[0]), "r"(mid[1]), "r"(mid[2]), "r"(mid[3]), "r"(mid[4]), "r"(mid[5]),
          "r"(mid[6]), "r"(mid[7]), "r"(mid[8]), "r"(mid[9]), "r"(mid[10]), "r"(mid[11]),
          "r"(mid[12]));
#pragma unroll
    for (int i = 0; i < 6; i++) lo[6 + i] = L[6 + i];
#pragma unroll
    for (int i = 0; i < 12; i++) hi[i] = H[i];
    // T * 2^-384 mod p = lo * 2^-384 + hi (hi < p since T < p^2); from() is the Montgomery
    // reduction of lo (result <= p), the sum is reduced once.
    lo.from();
    return lo + hi;
}

// ---- Fp ---------------------------------------------------------------------------------
DEVI fp_t f_add(const fp_t& a, const fp_t& b) { return a + b; }
DEVI fp_t f_sub(const fp_t& a, const fp_t& b) { return a - b; }
#ifndef CUZK_FP_KARA
#define CUZK_FP_KARA 0
#endif
DEVI fp_t fp_mul(const fp_t& a, const fp_t& b)
{
#if CUZK_FP_KARA
    return fp_mul_kara(a, b);
#else
    return a * b;
#endif
}
DEVI fp_t f_mul(const fp_t& a, const fp_t& b) { return fp_mul(a, b); }
DEVI fp_t f_sqr(const fp_t& a) { fp_t t = a; t.sqr(); return t; }
DEVI fp_t f_mul_inl(const fp_t& a, const fp_t& b) { return fp_mul(a, b); }
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
DEVI fp2_t f_mul_inl(const fp2_t& a, const fp2_t& b)
{
    fp_t t0 = fp_mul(a.c0, b.c0);
    fp_t t1 = fp_mul(a.c1, b.c1);
    fp_t t2 = fp_mul(a.c0 + a.c1, b.c0 + b.c1);
    fp2_t r;
    r.c0 = t0 - t1;
    r.c1 = t2 - t0 - t1;
    return r;
}
DEVI fp2_t f_sqr_inl(const fp2_t& a)
{
    fp2_t r;
    fp_t t = fp_mul(a.c0, a.c1);
    r.c0 = fp_mul(a.c0 + a.c1, a.c0 - a.c1);
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
