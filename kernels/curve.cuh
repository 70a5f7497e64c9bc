// cuzk kernels: short-Weierstrass (a = 0) point arithmetic over a field F (fp_t or fp2_t).
//
// affine_t: blst_p1_affine / blst_p2_affine layout; (0,0) is the point at infinity.
// xyzz_t:   extended Jacobian (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2); ZZ = 0 is infinity, so an
//           all-zero buffer (cudaMemset 0) is a valid array of infinities.
// jac_t:    blst_p1 / blst_p2 layout (x = X/Z^2, y = Y/Z^3); Z = 0 is infinity.
// Formulas: EFD "xyzz" (madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the
// exceptional cases (P == Q, P == -Q, infinities) handled explicitly.
#pragma once
#include "field.cuh"

template <class F> struct affine_t { F x, y; };
template <class F> struct xyzz_t { F X, Y, ZZ, ZZZ; };
template <class F> struct jac_t { F X, Y, Z; };

static_assert(sizeof(affine_t<fp_t>) == 96, "G1 affine is 96 bytes");
static_assert(sizeof(affine_t<fp2_t>) == 192, "G2 affine is 192 bytes");
static_assert(sizeof(jac_t<fp_t>) == 144, "G1 jacobian is 144 bytes");
static_assert(sizeof(jac_t<fp2_t>) == 288, "G2 jacobian is 288 bytes");
// msm/plan.h sizes memory in field elements: an affine point is 2, an XYZZ point 4.
static_assert(sizeof(affine_t<fp2_t>) == 2 * sizeof(fp2_t) && sizeof(xyzz_t<fp_t>) == 4 * sizeof(fp_t) &&
                  sizeof(xyzz_t<fp2_t>) == 4 * sizeof(fp2_t) && sizeof(fp_t) == 48 && sizeof(fp2_t) == 96,
              "points are plain arrays of field elements");

#ifdef __CUDA_ARCH__

// For G1 the general addition and the doublings are out-of-line (non-template overloads at the
// end of this file): they run in the cold kernels (bucket reduction, combine, Horner) and in the
// rare P == Q branch, and inlining them everywhere tripled nvcc's compile time. For G2 they stay
// inline: with Fp2 multiplication already out-of-line, a third level of out-of-line calls
// (add -> dbl -> Fp2 mul) produced misaligned local-memory accesses (compute-sanitizer,
// nvcc 13.0, sm_90) — see NOTES.md.
template <class F> DEVI void xyzz_dbl(xyzz_t<F>& p);
template <class F> DEVI void xyzz_set_dbl_affine(xyzz_t<F>& p, const F& x, const F& y);
template <class F> DEVI void xyzz_add(xyzz_t<F>& p, const xyzz_t<F>& q);
__device__ __noinline__ void xyzz_dbl(xyzz_t<fp_t>& p);
__device__ __noinline__ void xyzz_set_dbl_affine(xyzz_t<fp_t>& p, const fp_t& x, const fp_t& y);
__device__ __noinline__ void xyzz_add(xyzz_t<fp_t>& p, const xyzz_t<fp_t>& q);

template <class F> DEVI bool aff_is_inf(const affine_t<F>& p) { return f_is_zero(p.x) & f_is_zero(p.y); }
template <class F> DEVI bool xyzz_is_inf(const xyzz_t<F>& p) { return f_is_zero(p.ZZ); }
template <class F> DEVI void xyzz_set_inf(xyzz_t<F>& p)
{
    f_set_zero(p.X); f_set_zero(p.Y); f_set_zero(p.ZZ); f_set_zero(p.ZZZ);
}

// p = 2p
template <class F> DEVI void xyzz_dbl_impl(xyzz_t<F>& p)
{
    F U = f_dbl(p.Y);
    F V = f_sqr(U);
    F W = f_mul(U, V);
    F S = f_mul(p.X, V);
    F X2 = f_sqr(p.X);
    F M = f_add(f_dbl(X2), X2);
    F X3 = f_sub(f_sub(f_sqr(M), S), S);
    F Y3 = f_sub(f_mul(M, f_sub(S, X3)), f_mul(W, p.Y));
    p.X = X3;
    p.Y = Y3;
    p.ZZ = f_mul(V, p.ZZ);
    p.ZZZ = f_mul(W, p.ZZZ);
}

// p = 2q (q affine, not infinity)
template <class F> DEVI void xyzz_set_dbl_affine_impl(xyzz_t<F>& p, const F& x, const F& y)
{
    F U = f_dbl(y);
    F V = f_sqr(U);
    F W = f_mul(U, V);
    F S = f_mul(x, V);
    F X2 = f_sqr(x);
    F M = f_add(f_dbl(X2), X2);
    F X3 = f_sub(f_sub(f_sqr(M), S), S);
    p.Y = f_sub(f_mul(M, f_sub(S, X3)), f_mul(W, y));
    p.X = X3;
    p.ZZ = V;
    p.ZZZ = W;
}

// p += (x, y), the affine point not infinity.
template <class F> DEVI void xyzz_add_affine(xyzz_t<F>& p, const F& x, const F& y)
{
    if (xyzz_is_inf(p)) {
        p.X = x; p.Y = y; f_set_one(p.ZZ); f_set_one(p.ZZZ);
        return;
    }
    F U2 = f_mul(x, p.ZZ);
    F S2 = f_mul(y, p.ZZZ);
    F P = f_sub(U2, p.X);
    F R = f_sub(S2, p.Y);
    if (f_is_zero(P)) {
        if (f_is_zero(R)) xyzz_set_dbl_affine(p, x, y);
        else xyzz_set_inf(p);
        return;
    }
    F PP = f_sqr(P);
    F PPP = f_mul(P, PP);
    F Q = f_mul(p.X, PP);
    F X3 = f_sub(f_sub(f_sub(f_sqr(R), PPP), Q), Q);
    p.Y = f_sub(f_mul(R, f_sub(Q, X3)), f_mul(p.Y, PPP));
    p.X = X3;
    p.ZZ = f_mul(p.ZZ, PP);
    p.ZZZ = f_mul(p.ZZZ, PPP);
}

// p += q (general).
template <class F> DEVI void xyzz_add_impl(xyzz_t<F>& p, const xyzz_t<F>& q)
{
    if (xyzz_is_inf(q)) return;
    if (xyzz_is_inf(p)) { p = q; return; }
    F U1 = f_mul(p.X, q.ZZ);
    F U2 = f_mul(q.X, p.ZZ);
    F S1 = f_mul(p.Y, q.ZZZ);
    F S2 = f_mul(q.Y, p.ZZZ);
    F P = f_sub(U2, U1);
    F R = f_sub(S2, S1);
    if (f_is_zero(P)) {
        if (f_is_zero(R)) xyzz_dbl(p);
        else xyzz_set_inf(p);
        return;
    }
    F PP = f_sqr(P);
    F PPP = f_mul(P, PP);
    F Q = f_mul(U1, PP);
    F X3 = f_sub(f_sub(f_sub(f_sqr(R), PPP), Q), Q);
    p.Y = f_sub(f_mul(R, f_sub(Q, X3)), f_mul(S1, PPP));
    p.X = X3;
    p.ZZ = f_mul(f_mul(p.ZZ, q.ZZ), PP);
    p.ZZZ = f_mul(f_mul(p.ZZZ, q.ZZZ), PPP);
}

template <class F> DEVI void xyzz_dbl(xyzz_t<F>& p) { xyzz_dbl_impl(p); }
template <class F> DEVI void xyzz_set_dbl_affine(xyzz_t<F>& p, const F& x, const F& y) { xyzz_set_dbl_affine_impl(p, x, y); }
template <class F> DEVI void xyzz_add(xyzz_t<F>& p, const xyzz_t<F>& q) { xyzz_add_impl(p, q); }
__device__ __noinline__ void xyzz_dbl(xyzz_t<fp_t>& p) { xyzz_dbl_impl(p); }
__device__ __noinline__ void xyzz_set_dbl_affine(xyzz_t<fp_t>& p, const fp_t& x, const fp_t& y) { xyzz_set_dbl_affine_impl(p, x, y); }
__device__ __noinline__ void xyzz_add(xyzz_t<fp_t>& p, const xyzz_t<fp_t>& q) { xyzz_add_impl(p, q); }

#endif  // __CUDA_ARCH__
