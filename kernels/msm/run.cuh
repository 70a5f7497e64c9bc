// cuzk kernels, MSM: the resident driver, msm_run<F> (F = Fp for G1, Fp2 for G2).
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
//     reduced per window with the running-sum trick in K chunks per window.
//  4. the window sums and the ones' sum go back to the host, which combines the windows by
//     Horner (host_final.cu) and adds the ones: result = ones + big, in Jacobian coordinates.
// Included by one translation unit per group (msm_g1.cu, msm_g2.cu); kernels live in anonymous
// namespaces so that the two instantiations never collide at link time.
#pragma once
#include "common.cuh"
#include "curve.cuh"
#include "msm/scalars.cuh"
#include "msm/accumulate.cuh"
#include "msm/reduce.cuh"
#include "msm/plan.h"
#include <cub/cub.cuh>
#include <vector>
#include <algorithm>
#include <cstring>

namespace cuzk {

template <class F>
cuzk_kresult msm_run(dev_ctx *ctx, const void *d_bases_v, size_t bases_len, size_t base_offset,
                     const void *d_scalars, const void *h_scalars, size_t n,
                     const uint64_t *h_density, void *out_jacobian, bool accumulate,
                     const uint64_t *d_density, kept_buckets *kept)
{
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
            CUZK_CK(h2d(ctx, d_dens.p, h_density, nwords * 8, s));
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
            CUZK_CK(h2d(ctx, dst, static_cast<const fr_t *>(h_scalars) + i0,
                                    cnt * sizeof(fr_t), sc));
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
    if (n1) CUZK_TRY(sum_ones<F>(ctx, bases, d_ones_idx.as<uint32_t>(), n1, d_ones_part, d_ones_res));

    prof.mark("ones");
    // ---- big: bucket method ----
    dbuf d_win;
    int c = 0, nwin = 0;
    if (nbig && kept && !kept->c) return arg_err(CUZK_K_ERR_RANGE, "msm: kept buckets not allocated");
    if (nbig) {
        if (kept) {
            c = kept->c;
            kept->nbig += nbig;
        } else {
            size_t room = 0;
            if (!ctx->k.window_bits && nbig >= CUZK_PLAN_WIDE_MIN_BIG) CUZK_TRY(headroom(ctx, &room));
            c = cuzk_plan_choose_c(sizeof(F), nbig, ctx->k.window_bits, room);
        }
        nwin = cuzk_plan_window_count(c);
        const uint32_t B = 1u << (c - 1);
        const uint32_t sentinel = (uint32_t)nwin << (c - 1);
        int end_bit = 0;
        while ((1ull << end_bit) <= sentinel) end_bit++;
        // The big list in parts (cuzk_plan_max_part), the parts' window sums added.
        size_t part = cuzk_plan_max_part((size_t)nwin);
        if (ctx->k.max_part > 0) part = std::min<size_t>(part, ctx->k.max_part);
        if (!kept) {
            CUZK_CK(d_win.alloc(ctx, (size_t)nwin * sizeof(xyzz_t<F>)));
            CUZK_CK(cudaMemsetAsync(d_win.p, 0, (size_t)nwin * sizeof(xyzz_t<F>), s));
        }
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
        CUZK_CK(d_mcnt.alloc(ctx, 16));
        k_find_sentinel<<<1, 1, 0, s>>>(kb.Current(), (uint32_t)N, sentinel, d_nv.as<uint32_t>());
        CUZK_CKL();
        uint32_t nvalid = 0;
        CUZK_CK(cudaMemcpyAsync(&nvalid, d_nv.p, 4, cudaMemcpyDeviceToHost, s));
        CUZK_CK(cudaStreamSynchronize(s));
        // The sort's other halves are dead: their memory goes to the buckets and the pair rounds.
        if (nvalid) {
            if (kb.Current() == d_k0.as<uint32_t>()) { d_k1.release(); d_v1.release(); }
            else { d_k0.release(); d_v0.release(); }
        }
        // This sort's buckets (written once each; with kept buckets, added to them after).
        CUZK_CK(d_buckets.alloc(ctx, (size_t)nwin * B * sizeof(xyzz_t<F>)));
        CUZK_CK(cudaMemsetAsync(d_buckets.p, 0, (size_t)nwin * B * sizeof(xyzz_t<F>), s));
        if (nvalid)
            CUZK_TRY(accumulate_sorted<F>(ctx, bases, kb.Current(), vb.Current(), nvalid, d_tmp.p, t_rle, t_scan,
                                          d_nv.as<uint32_t>(), d_buckets.as<xyzz_t<F>>(), d_mcnt.as<uint32_t>(),
                                          prof));
        prof.mark("accumulate");
        kb = cub::DoubleBuffer<uint32_t>();
        vb = cub::DoubleBuffer<uint32_t>();
        d_k0.release(); d_v0.release(); d_k1.release(); d_v1.release();

        if (kept) {
            // One coalesced pass: every bucket of this sort into the kept one at its index.
            const size_t nb = (size_t)nwin * B;
            const unsigned g = (unsigned)std::min<size_t>((nb + 127) / 128, (size_t)ctx->sm_count * 16);
            k_add_points<F><<<g, 128, 0, s>>>(kept->buckets.as<xyzz_t<F>>(), d_buckets.as<xyzz_t<F>>(), nb);
            CUZK_CKL();
            prof.mark("add_kept");
        } else {
            CUZK_TRY(reduce_buckets<F>(ctx, d_buckets, B, nwin, d_win.as<xyzz_t<F>>()));
            prof.mark("bucket_reduce");
        }
        }  // parts
        d_big_sc.release();
        d_big_idx.release();
    }
    // The window sums and the ones' sum come back; Horner's (nwin - 1) * c doublings run on the
    // host (host_final.cu), where they take microseconds instead of milliseconds in one GPU thread.
    // (Kept buckets: no window sums here; kept_buckets_finish reduces them after the last chunk.)
    const bool wins = nbig && !kept;
    std::vector<xyzz_t<F>> h_win((size_t)nwin + 1);
    if (wins)
        CUZK_CK(cudaMemcpyAsync(h_win.data(), d_win.p, (size_t)nwin * sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, s));
    if (n1)
        CUZK_CK(cudaMemcpyAsync(&h_win[nwin], d_ones_res.p, sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    prof.mark("final");
    if (sizeof(F) == 48)
        host_final_g1(wins ? h_win.data() : nullptr, nwin, c, n1 ? &h_win[nwin] : nullptr, out_jacobian, accumulate);
    else
        host_final_g2(wins ? h_win.data() : nullptr, nwin, c, n1 ? &h_win[nwin] : nullptr, out_jacobian, accumulate);
    return ok();
}

}  // namespace cuzk
