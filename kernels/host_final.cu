// cuzk kernels: the last step of an MSM, on the host (blst).
//
// The window sums W_0 .. W_{nwin-1} of the bucket method are combined as
// sum_j 2^(c j) W_j (Horner: (nwin - 1) * c doublings in one chain). On the GPU that chain
// runs in one thread at ~10 us per doubling (2.4 ms for G1 and 6.6 ms for G2 at c = 16, per
// MSM, with the rest of the device idle); blst does it on the CPU in well under 0.1 ms. The
// window sums come back in the device's xyzz layout (X, Y, ZZ, ZZZ in Montgomery form, blst's
// limbs), so nothing is converted but the representation: xyzz -> Jacobian is
// (X * ZZ, Y * ZZZ, ZZ).
//
// Host code only (no kernels): it includes blst's own header, not sppark's, so it lives in a
// file of its own.
#include <cstdint>
#include <cstring>
#include <blst.h>

namespace cuzk {

namespace {

struct g1 {
    using fp = blst_fp;
    using point = blst_p1;
    static void mul(fp *r, const fp *a, const fp *b) { blst_fp_mul(r, a, b); }
    static void dbl(point *p) { blst_p1_double(p, p); }
    static void add(point *p, const point *q) { blst_p1_add_or_double(p, p, q); }
};

struct g2 {
    using fp = blst_fp2;
    using point = blst_p2;
    static void mul(fp *r, const fp *a, const fp *b) { blst_fp2_mul(r, a, b); }
    static void dbl(point *p) { blst_p2_double(p, p); }
    static void add(point *p, const point *q) { blst_p2_add_or_double(p, p, q); }
};

template <class G> struct xyzz { typename G::fp X, Y, ZZ, ZZZ; };

// xyzz -> Jacobian; an infinity (ZZ = 0) becomes Z = 0, which blst reads as infinity.
template <class G> typename G::point to_jac(const xyzz<G> &p)
{
    typename G::point r;
    G::mul(&r.x, &p.X, &p.ZZ);
    G::mul(&r.y, &p.Y, &p.ZZZ);
    r.z = p.ZZ;
    return r;
}

template <class G>
void final_sum(const void *win_v, int nwin, int c, const void *ones_v, void *out_v, bool accumulate)
{
    const xyzz<G> *win = static_cast<const xyzz<G> *>(win_v);
    typename G::point res;
    std::memset(&res, 0, sizeof(res));  // Z = 0: infinity
    if (win && nwin > 0) {
        res = to_jac<G>(win[nwin - 1]);
        for (int w = nwin - 2; w >= 0; w--) {
            for (int i = 0; i < c; i++) G::dbl(&res);
            typename G::point t = to_jac<G>(win[w]);
            G::add(&res, &t);
        }
    }
    if (ones_v) {
        typename G::point t = to_jac<G>(*static_cast<const xyzz<G> *>(ones_v));
        G::add(&res, &t);
    }
    typename G::point *out = static_cast<typename G::point *>(out_v);
    if (accumulate) G::add(out, &res);
    else *out = res;
}

}  // namespace

static_assert(sizeof(xyzz<g1>) == 4 * 48, "G1 xyzz is four Fp");
static_assert(sizeof(xyzz<g2>) == 4 * 96, "G2 xyzz is four Fp2");

void host_final_g1(const void *win, int nwin, int c, const void *ones, void *out, bool accumulate)
{
    final_sum<g1>(win, nwin, c, ones, out, accumulate);
}

void host_final_g2(const void *win, int nwin, int c, const void *ones, void *out, bool accumulate)
{
    final_sum<g2>(win, nwin, c, ones, out, accumulate);
}

}  // namespace cuzk
