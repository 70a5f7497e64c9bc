// cuzk kernels, MSM: the streamed driver, msm_stream<F>: bases stay in (page-locked) host memory
// and go to the device in chunks, double-buffered on the copy stream, each chunk's MSM run by
// msm_run and added to the result; a batch's next streamed MSM can take its first chunk copied
// during this one's last.
#pragma once
#include "msm/run.cuh"
#include "msm/plan.h"
#include <vector>
#include <algorithm>
#include <cstring>
#include <cstdio>

namespace cuzk {

// ---- buckets kept across a streamed MSM's chunks ----
// Each chunk's big scalars are sorted at one window c, chosen for the whole MSM (its big count
// over its chunks: cuzk_plan_choose_c_kept), accumulated into fresh buckets as a whole MSM's
// are, which one coalesced pass then adds into the kept buckets (msm_run with `kept`); those are
// reduced once, after the last chunk. Chunk by chunk, each chunk would pick its own c from its
// own big count (at 2^27 dense scalars in 7 chunks: 16 windows instead of 14) and reduce its
// own buckets. (Adding each run's sum into the kept bucket inside the walk instead costs a
// general addition in its divergent loop: measured slower, docs/BENCHMARKS.md.)

// Big scalars among the selected of n device scalars (d_density: device words or nullptr).
inline cuzk_kresult count_big(dev_ctx *ctx, const void *d_scalars, size_t n, const uint64_t *d_density, size_t *out)
{
    *out = 0;
    if (!n) return ok();
    cudaStream_t s = ctx->s_comp;
    dbuf d_cnt;
    CUZK_CK(d_cnt.alloc(ctx, 8));
    CUZK_CK(cudaMemsetAsync(d_cnt.p, 0, 8, s));
    const unsigned g = (unsigned)std::min<size_t>((n + 255) / 256, (size_t)ctx->sm_count * 8);
    k_count_big<<<g, 256, 0, s>>>(static_cast<const fr_t *>(d_scalars), n, d_density, d_cnt.as<unsigned long long>());
    CUZK_CKL();
    unsigned long long h = 0;
    CUZK_CK(cudaMemcpyAsync(&h, d_cnt.p, 8, cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    *out = (size_t)h;
    return ok();
}

// Allocates kept's buckets at window c (infinity: zero).
template <class F>
cuzk_kresult kept_buckets_begin(dev_ctx *ctx, int c, kept_buckets &kept)
{
    kept.buckets.release();
    kept.c = c;
    kept.nbig = 0;
    const size_t bytes = cuzk_plan_bucket_mem(sizeof(F), c);
    CUZK_CK(kept.buckets.alloc(ctx, bytes));
    CUZK_CK(cudaMemsetAsync(kept.buckets.p, 0, bytes, ctx->s_comp));
    return ok();
}

// After the last chunk: the buckets reduced to window sums (the buckets go back), combined on
// the host and added to out (a host Jacobian).
template <class F>
cuzk_kresult kept_buckets_finish(dev_ctx *ctx, kept_buckets &kept, void *out_jacobian)
{
    if (!kept.c || !kept.nbig) {
        kept.buckets.release();
        return ok();
    }
    cudaStream_t s = ctx->s_comp;
    const int nwin = cuzk_plan_window_count(kept.c);
    dbuf d_win;
    CUZK_CK(d_win.alloc(ctx, (size_t)nwin * sizeof(xyzz_t<F>)));
    CUZK_CK(cudaMemsetAsync(d_win.p, 0, (size_t)nwin * sizeof(xyzz_t<F>), s));
    CUZK_TRY(reduce_buckets<F>(ctx, kept.buckets, 1u << (kept.c - 1), nwin, d_win.as<xyzz_t<F>>()));
    std::vector<xyzz_t<F>> h_win((size_t)nwin);
    CUZK_CK(cudaMemcpyAsync(h_win.data(), d_win.p, (size_t)nwin * sizeof(xyzz_t<F>), cudaMemcpyDeviceToHost, s));
    CUZK_CK(cudaStreamSynchronize(s));
    if (sizeof(F) == 48) host_final_g1(h_win.data(), nwin, kept.c, nullptr, out_jacobian, true);
    else host_final_g2(h_win.data(), nwin, kept.c, nullptr, out_jacobian, true);
    kept.c = 0;
    return ok();
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
    size_t chunk_mem = cuzk_plan_stream_chunk_bases(sizeof(F), ctx->mem.chunk_points, avail);
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
    if (carried) plan.push_back(in->piece);
    for (const stream_piece &p : plan_pieces(h_density, n, carried ? (in->piece.cnt + 63) / 64 : 0,
                                             carried ? in->piece.nb : 0, chunk))
        plan.push_back(p);

    profiler prof(sizeof(F) == 48 ? "msm_stream_g1" : "msm_stream_g2", s, ctx->k.profile);
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
    // chunk's msm_run that small copy would queue behind the next chunk's bases, and the chunk
    // would wait for a whole chunk copy before it could start.
    dbuf d_dens;
    if (h_density) {
        CUZK_CK(d_dens.alloc(ctx, nwords * 8));
        CUZK_CK(h2d(ctx, d_dens.p, h_density, nwords * 8, s));
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
        CUZK_CK(h2d(ctx, stage[j % 2].p, h_bases + base_offset + p.b0, p.nb * sizeof(affine_t<F>), sc));
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
        CUZK_CK(h2d(ctx, out->buf.p, next->h_bases, p.nb * next->elem, sc));
        CUZK_CK(cudaEventRecord(out->copied, sc));
        out->h = next->h_bases;
        out->cap = cap;
        out->piece = p;
        return ok();
    };
    CUZK_TRY(queue_copy(first));
    // The whole MSM's window and its kept buckets (counted while the first chunk copies). The
    // kept buckets and a chunk's fresh ones take what the chunk plan set aside for the windows
    // a narrower c would sort, the sort's dead halves (the fresh buckets come after them) and
    // half the plan's reserve: where they would not fit, a narrower window.
    kept_buckets kept;
    {
        size_t nbig = 0;
        CUZK_TRY(count_big(ctx, d_scalars, n, h_density ? d_dens.as<uint64_t>() : nullptr, &nbig));
        if (nbig) {
            size_t cap = ~(size_t)0;
            int c;
            for (;;) {
                c = cuzk_plan_choose_c_kept(sizeof(F), nbig, plan.size(), ctx->k.window_bits, cap);
                const int nwin = cuzk_plan_window_count(c);
                const size_t big_chunk = std::min(stage_pts, nbig / plan.size());
                const size_t room = CUZK_PLAN_STREAM_RESERVE / 2 + (nwin < 16 ? (size_t)(16 - nwin) * 16 * stage_pts : 0) +
                                    (size_t)8 * nwin * big_chunk;
                const size_t need = 2 * cuzk_plan_bucket_mem(sizeof(F), c);
                if (need <= room || c == CUZK_PLAN_C_MIN || ctx->k.window_bits) break;
                cap = need - 1;
            }
            CUZK_TRY(kept_buckets_begin<F>(ctx, c, kept));
        }
        if (ctx->k.profile)
            fprintf(stderr, "cuzk kernels: streamed MSM of %zu bases (%zu big): %zu chunks%s, window %d kept\n", nsel,
                    nbig, plan.size(), carried ? ", the first carried in" : "", kept.c);
    }
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
                            true, h_density ? d_dens.as<uint64_t>() + p.i0 / 64 : nullptr,
                            kept.c ? &kept : nullptr));
        if (k < first) in->clear();  // its chunk is done: the memory goes back
    }
    prof.mark("chunks");
    CUZK_TRY(kept_buckets_finish<F>(ctx, kept, out_jacobian));
    prof.mark("reduce");
    return ok();
}

// msm_stream over the aux of `k` witnesses kept on the device (a sector's partitions, one
// parameter set): each chunk of bases crosses PCIe once for all of them; per witness, the
// chunk's slice of its aux is expanded from the compact form (expand_aux_range) into one
// scratch vector and summed into outs[i] (jac_t<F> each). n = the aux count; same selection
// semantics as msm_stream; no chunk carried in or out. Each witness keeps its buckets across the
// chunks (its window from its count of values other than 0 and 1, an upper bound of its big
// scalars; the k sets and a chunk's fresh one within an eighth of the headroom). Chunks are
// planned with half of what is left: the scratch vector (at most 4 scalars a base) takes from
// the other half.
template <class F>
cuzk_kresult msm_stream_many(dev_ctx *ctx, const void *h_bases_v, size_t bases_len, size_t base_offset,
                             const device_z *const *zs, size_t k, size_t n, const uint64_t *h_density,
                             void *const *outs)
{
    cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
    const affine_t<F> *h_bases = static_cast<const affine_t<F> *>(h_bases_v);
    if (n > 0x7fffffffu || bases_len > 0x7fffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "msm: more than 2^31-1 scalars or bases");
    const size_t nwords = (n + 63) / 64;
    const size_t nsel = selected_count(h_density, n);
    if (base_offset > bases_len || nsel > bases_len - base_offset)
        return arg_err(CUZK_K_ERR_RANGE, "msm: base_offset + selected scalars > bases_len");
    for (size_t i = 0; i < k; i++) {
        if (zs[i]->num_aux != n) return arg_err(CUZK_K_ERR_RANGE, "msm_stream_many: a witness of another aux count");
        memset(outs[i], 0, sizeof(jac_t<F>));  // Z = 0: infinity; each chunk adds its sum
    }
    if (nsel == 0 || k == 0) return ok();

    size_t avail = 0;
    CUZK_TRY(headroom(ctx, &avail));
    // The chunk count the buckets' windows are chosen for: the plan's without the buckets.
    const size_t est_chunk = cuzk_plan_stream_chunk_bases(sizeof(F), ctx->mem.chunk_points, avail / 2);
    const size_t est_chunks = (nsel + est_chunk - 1) / est_chunk;
    std::vector<kept_buckets> kept(k);
    size_t kept_bytes = 0, fresh_bytes = 0;  // the k kept sets, and one chunk's fresh set
    for (size_t i = 0; i < k; i++) {
        const size_t nbig = std::min(zs[i]->num_others, nsel);
        if (!nbig) continue;
        const int c = cuzk_plan_choose_c_kept(sizeof(F), nbig, est_chunks, ctx->k.window_bits, avail / 8 / (k + 1));
        CUZK_TRY(kept_buckets_begin<F>(ctx, c, kept[i]));
        kept_bytes += cuzk_plan_bucket_mem(sizeof(F), c);
        fresh_bytes = std::max(fresh_bytes, cuzk_plan_bucket_mem(sizeof(F), c));
    }
    const size_t left = avail > kept_bytes + fresh_bytes ? avail - kept_bytes - fresh_bytes : 0;
    const size_t chunk_mem = cuzk_plan_stream_chunk_bases(sizeof(F), ctx->mem.chunk_points, left / 2);
    size_t chunk = chunk_mem;
    {
        const size_t parts = (nsel + chunk - 1) / chunk;
        if (parts > 1) chunk = std::min<size_t>(chunk, ((nsel + parts - 1) / parts + 63) & ~(size_t)63);
    }
    chunk = std::min<size_t>(chunk, (nsel + 63) & ~(size_t)63);
    const std::vector<stream_piece> plan = plan_pieces(h_density, n, 0, 0, chunk);

    profiler prof(sizeof(F) == 48 ? "msm_stream_many_g1" : "msm_stream_many_g2", s, ctx->k.profile);
    if (ctx->k.profile)
        fprintf(stderr, "cuzk kernels: streamed MSM of %zu bases for %zu witnesses: %zu chunks\n", nsel, k,
                plan.size());
    size_t stage_pts = 0, most_cnt = 0;
    for (const stream_piece &p : plan) {
        stage_pts = std::max(stage_pts, p.nb);
        most_cnt = std::max(most_cnt, p.cnt);
    }
    dbuf stage[2], scalars, d_dens;
    CUZK_CK(stage[0].alloc(ctx, stage_pts * sizeof(affine_t<F>)));
    CUZK_CK(stage[1].alloc(ctx, stage_pts * sizeof(affine_t<F>)));
    CUZK_CK(scalars.alloc(ctx, most_cnt * sizeof(fr_t)));
    if (h_density) {
        CUZK_CK(d_dens.alloc(ctx, nwords * 8));
        CUZK_CK(h2d(ctx, d_dens.p, h_density, nwords * 8, s));
    }
    copy_join join{sc};  // the staging buffers are written on the copy stream
    event_list evs;
    cudaEvent_t e_alloc, e_copied[2];
    CUZK_CK(evs.add(&e_alloc));
    CUZK_CK(evs.add(&e_copied[0]));
    CUZK_CK(evs.add(&e_copied[1]));
    CUZK_CK(cudaEventRecord(e_alloc, s));
    CUZK_CK(cudaStreamWaitEvent(sc, e_alloc, 0));
    auto queue_copy = [&](size_t c) -> cuzk_kresult {
        if (c >= plan.size() || plan[c].nb == 0) return ok();
        CUZK_CK(h2d(ctx, stage[c % 2].p, h_bases + base_offset + plan[c].b0, plan[c].nb * sizeof(affine_t<F>), sc));
        CUZK_CK(cudaEventRecord(e_copied[c % 2], sc));
        return ok();
    };
    CUZK_TRY(queue_copy(0));
    for (size_t c = 0; c < plan.size(); c++) {
        // Chunk c-1's MSMs have returned (msm_run ends with a synchronize): its staging
        // buffer takes chunk c+1's bases while chunk c computes.
        CUZK_TRY(queue_copy(c + 1));
        const stream_piece &p = plan[c];
        if (p.nb == 0) continue;
        CUZK_CK(cudaStreamWaitEvent(s, e_copied[c % 2], 0));
        for (size_t i = 0; i < k; i++) {
            CUZK_TRY(expand_aux_range(ctx, *zs[i], p.i0, p.cnt, scalars.p));
            CUZK_TRY(msm_run<F>(ctx, stage[c % 2].p, p.nb, 0, scalars.p, nullptr, p.cnt,
                                h_density ? h_density + p.i0 / 64 : nullptr, outs[i], true,
                                h_density ? d_dens.as<uint64_t>() + p.i0 / 64 : nullptr,
                                kept[i].c ? &kept[i] : nullptr));
        }
    }
    prof.mark("chunks");
    for (size_t i = 0; i < k; i++) CUZK_TRY(kept_buckets_finish<F>(ctx, kept[i], outs[i]));
    prof.mark("reduce");
    return ok();
}

}  // namespace cuzk
