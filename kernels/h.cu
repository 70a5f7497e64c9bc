// cuzk kernels: H (the NTT-based quotient of a*b - c, ntt.cu) and its MSM over the H bases, with
// the next batch's scalar vector (and over streamed bases its first chunk) staged while the H
// MSM computes.
#include "internal.cuh"
#include <memory>
#include <algorithm>

namespace cuzk {
namespace {

cuzk_kresult check_h_args(const void *a, const void *b, const void *c, size_t n, uint32_t log_m)
{
    if (log_m < 1 || log_m > 31) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: log_m must be in 1..31");
    if (n > ((size_t)1 << log_m)) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: n > 2^log_m");
    if (n && (!a || !b || !c)) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: a, b or c is NULL");
    return ok();
}

// The staged vector: st.buf gets a copy of n scalars at h, queued on the copy stream (behind
// what is queued there); st.h / st.n are set when it is made. A failed allocation is not an
// error: the vector is then not staged and the batch uploads it.
cuzk_kresult stage_vector(dev_ctx *ctx, cuzk_k_staged &st, const void *h, size_t n)
{
    if (st.buf.alloc(ctx, n * 32) != cudaSuccess) {
        CUZK_CLEAR_LAST_ERROR();
        return ok();
    }
    event_list evs;
    cudaEvent_t allocated;
    CUZK_CK(evs.add(&allocated));
    CUZK_CK(cudaEventRecord(allocated, ctx->s_comp));  // the buffer is the compute stream's
    CUZK_CK(cudaStreamWaitEvent(ctx->s_copy, allocated, 0));
    CUZK_CK(h2d(ctx, st.buf.p, h, n * 32, ctx->s_copy));
    st.h = h;
    st.n = n;
    return ok();
}

// The witness path's aux for the batch: expanded on the device from the compact witness once
// the H MSM is done (so the dense aux never sits beside a, b, c or h) and handed to the staged
// handle under `key` (the jobs name it by that pointer; no host copy of it exists, so the
// handle is marked device-only).
struct pre_staged {
    const void *key;
    size_t n;
    device_z *z;
    cuzk_kresult hand_to(dev_ctx *ctx, cuzk_k_staged &st) const
    {
        dbuf aux;
        CUZK_TRY(expand_aux(ctx, *z, aux));
        st.buf.swap(aux);
        st.h = key;
        st.n = n;
        st.device_only = true;
        return ok();
    }
};

// H and its MSM over streamed bases, with the copies queued ahead of need: the H MSM's first
// chunk behind a, b and c (it copies during the NTTs instead of after them); the staged vector
// behind that, when the device keeps room for chunks of 2^24 bases beside it (it copies while
// the H MSM computes); and, with `next` (the batch's first large streamed job), that job's first
// chunk during the H MSM's last chunk, kept in the staged handle for the batch. st receives the
// handle, or stays empty when nothing was staged.
cuzk_kresult h_msm_streamed(dev_ctx *ctx, const cuzk_k_bases *h_bases, const abc_input &in, uint32_t log_m,
                            void *h_out, void *out_jacobian, const void *stage, size_t stage_n,
                            const cuzk_k_msm_job *next, std::unique_ptr<cuzk_k_staged> &st, const pre_staged *pre)
{
    cudaStream_t sc = ctx->s_copy;
    const size_t m = (size_t)1 << log_m, fr = 32, pt = sizeof(affine_t<fp_t>);
    size_t room = 0;
    CUZK_TRY(headroom(ctx, &room));
    // compute_h holds a, b and c (m scalars each; two at a time when evaluated on the device)
    // beside the NTT tables; the H MSM holds h.
    const size_t tables = ntt_tables_to_make(ctx, log_m), slack = (size_t)64 << 20;
    const size_t during = tables + (in.eval ? 2 : 3) * m * fr + slack, after = tables + m * fr;
    const size_t left = room > after ? room - after : 0, bytes = stage_n * fr;
    const bool stage_it = stage_n && left > bytes &&
                          (ctx->mem.chunk_points || stream_chunk_bases_g1(ctx, left - bytes) >= std::min(m - 1, (size_t)1 << 24));
    st.reset(new cuzk_k_staged{h_bases->device});
    // H's first chunk, carried into msm_stream: no larger than the chunk it will plan then (so
    // it takes it), and within what the device has beside a, b and c.
    stream_carry hc;
    event_list evs;
    // Declared after hc (and st, the caller's): on every path the copy stream is joined before
    // the buffers it writes go back.
    copy_join join{sc};
    CUZK_CK(evs.add(&hc.copied));
    queued_copy qc{};
    size_t cap = stream_chunk_bases_g1(ctx, left - (stage_it ? bytes : 0)) / 16 * 15;
    cap = std::min(cap, room > during ? (room - during) / pt : 0);
    if (cap >= 4096) {
        const stream_piece p = next_piece(nullptr, m - 1, 0, 0, cap);
        if (hc.buf.alloc(ctx, p.nb * pt) == cudaSuccess) {
            hc.h = h_bases->h;
            hc.cap = cap;
            hc.piece = p;
            qc = queued_copy{hc.buf.p, h_bases->h, p.nb * pt, hc.copied};
        } else {
            CUZK_CLEAR_LAST_ERROR();
        }
    }
    dbuf d_h;
    CUZK_TRY(compute_h_dev(ctx, in, log_m, d_h, h_out, qc.dst ? &qc : nullptr));
    CUZK_PHASE(ctx, CUZK_K_PHASE_H_MSM, 0);
    if (stage_it) CUZK_TRY(stage_vector(ctx, *st, stage, stage_n));
    const bool carry_next = next && next->bases && next->bases->h && next->bases->device == h_bases->device &&
                            next->n >= STREAM_CARRY_MIN;
    stream_next nx{};
    if (carry_next) {
        CUZK_CK(st->evs.add(&st->carry.copied));
        nx = next_of(*next);
    }
    CUZK_TRY(msm_stream<fp_t>(ctx, h_bases->h, h_bases->n, 0, d_h.p, m - 1, nullptr, out_jacobian, &hc,
                              carry_next ? &st->carry : nullptr, carry_next ? &nx : nullptr));
    CUZK_CK(cudaStreamSynchronize(sc));
    if (pre) {
        d_h.release();
        CUZK_TRY(pre->hand_to(ctx, *st));
    }
    if (!st->buf.p && !st->carry.h) st.reset();
    return ok();
}

// H and its MSM on ctx; with stage_n > 0 also a device copy of `stage` for the batch that
// follows, queued on the copy stream behind H's own copies so that it runs while the H MSM
// computes; with `pre`, that vector is the witness's aux, expanded once the H MSM is done. Over
// resident H bases the copy is made only when the device keeps, beside it, what the H MSM may
// take at most (its sort: 256 bytes a scalar at c = 16; a slice of pair rounds: 2^26 entries);
// over streamed ones see h_msm_streamed. Otherwise st stays empty and the batch uploads as
// before.
cuzk_kresult h_msm_on(dev_ctx *ctx, const cuzk_k_bases *h_bases, const abc_input &in, uint32_t log_m, void *h_out,
                      void *out_jacobian, const void *stage, size_t stage_n, const cuzk_k_msm_job *next,
                      std::unique_ptr<cuzk_k_staged> &st, const pre_staged *pre)
{
    const size_t m = (size_t)1 << log_m;
    if (h_bases->h) return h_msm_streamed(ctx, h_bases, in, log_m, h_out, out_jacobian, stage, stage_n, next, st, pre);
    dbuf d_h;
    CUZK_TRY(compute_h_dev(ctx, in, log_m, d_h, h_out));
    CUZK_PHASE(ctx, CUZK_K_PHASE_H_MSM, 0);
    copy_join join{ctx->s_copy};  // the staged copy is written on the copy stream
    size_t room = 0;
    if (!pre && stage_n && headroom(ctx, &room).code == 0 && room >= stage_n * 32 + h_msm_scratch_bound(m)) {
        st.reset(new cuzk_k_staged{h_bases->device});
        CUZK_TRY(stage_vector(ctx, *st, stage, stage_n));
        if (!st->buf.p) st.reset();
    }
    CUZK_TRY(msm_run<fp_t>(ctx, h_bases->d, h_bases->n, 0, d_h.p, nullptr, m - 1, nullptr, out_jacobian, false));
    CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
    if (pre) {
        d_h.release();
        st.reset(new cuzk_k_staged{h_bases->device});
        CUZK_TRY(pre->hand_to(ctx, *st));
    }
    return ok();
}

cuzk_kresult check_h_bases(const cuzk_k_bases *h_bases, const void *out_jacobian, uint32_t log_m)
{
    if (!h_bases || !out_jacobian) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm: h_bases or out is NULL");
    if (h_bases->group != 1) return arg_err(CUZK_K_ERR_WRONG_GROUP, "compute_h_msm: H bases must be G1");
    if (log_m < 1 || log_m > 31) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h: log_m must be in 1..31");
    if (h_bases->n < ((size_t)1 << log_m) - 1) return arg_err(CUZK_K_ERR_RANGE, "compute_h_msm: fewer than m-1 H bases");
    return ok();
}

}  // namespace

// H and its MSM over host a, b, c (see h_msm_on).
cuzk_kresult compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b, const void *c, size_t n,
                           uint32_t log_m, void *h_out, void *out_jacobian, const void *stage, size_t stage_n,
                           const cuzk_k_msm_job *next, cuzk_k_staged **staged)
{
    CUZK_TRY(check_h_bases(h_bases, out_jacobian, log_m));
    CUZK_TRY(check_h_args(a, b, c, n, log_m));
    return run_on(h_bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        std::unique_ptr<cuzk_k_staged> st;
        CUZK_TRY(h_msm_on(ctx, h_bases, host_abc(a, b, c, n), log_m, h_out, out_jacobian, staged ? stage : nullptr,
                          staged ? stage_n : 0, staged ? next : nullptr, st, nullptr));
        if (staged) *staged = st.release();
        return ok();
    });
}

// H and its MSM with a, b, c evaluated on the device from the resident circuit and the compact
// witness; the aux, expanded after the H MSM, is kept for the batch as a device-only staged
// vector named by aux_key.
cuzk_kresult compute_h_msm_witness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                   const cuzk_k_witness *w, uint32_t log_m, void *h_out, void *out_jacobian,
                                   const void *aux_key, const cuzk_k_msm_job *next, cuzk_k_staged **staged)
{
    if (!staged) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm_witness: staged is NULL");
    *staged = nullptr;
    CUZK_TRY(check_h_bases(h_bases, out_jacobian, log_m));
    CUZK_TRY(check_witness(circuit, w));
    if (!aux_key) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm_witness: aux_key is NULL");
    if (circuit->device != h_bases->device)
        return arg_err(CUZK_K_ERR_MIXED_DEVICES, "compute_h_msm_witness: circuit and bases on different devices");
    if (circuit->rows > ((size_t)1 << log_m)) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h_msm_witness: rows > 2^log_m");
    return run_on(h_bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_ABC_COPY;
        device_z z;
        CUZK_TRY(witness_to_device(ctx, w, z));
        const abc_eval e{circuit, &z};
        abc_input in;
        in.n = circuit->rows;
        in.eval = &e;
        const pre_staged pre{aux_key, circuit->num_aux, &z};
        std::unique_ptr<cuzk_k_staged> st;
        CUZK_TRY(h_msm_on(ctx, h_bases, in, log_m, h_out, out_jacobian, nullptr, 0, next, st, &pre));
        *staged = st.release();
        return ok();
    });
}

// H and its MSM from a witness kept on the device (a sector's partitions proved together): a, b,
// c by SpMV over its compact form, no staged vector (the batch's aux MSMs expand the aux a
// chunk at a time: msm_aux_many).
cuzk_kresult compute_h_msm_dwitness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                    const cuzk_k_dwitness *w, uint32_t log_m, void *h_out, void *out_jacobian)
{
    CUZK_TRY(check_h_bases(h_bases, out_jacobian, log_m));
    if (!circuit || !w) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h_msm_dwitness: circuit or witness is NULL");
    if (circuit->device != h_bases->device || w->device != h_bases->device)
        return arg_err(CUZK_K_ERR_MIXED_DEVICES, "compute_h_msm_dwitness: circuit, witness and bases on different devices");
    if (!circuit->ready) return arg_err(CUZK_K_ERR_RANGE, "compute_h_msm_dwitness: the circuit's upload is not finished");
    if (w->z.num_aux != circuit->num_aux)
        return arg_err(CUZK_K_ERR_RANGE, "compute_h_msm_dwitness: a witness of another circuit's aux count");
    if (circuit->rows > ((size_t)1 << log_m)) return arg_err(CUZK_K_ERR_BAD_LOG_M, "compute_h_msm_dwitness: rows > 2^log_m");
    return run_on(h_bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_ABC_COPY;
        const abc_eval e{circuit, &w->z};
        abc_input in;
        in.n = circuit->rows;
        in.eval = &e;
        std::unique_ptr<cuzk_k_staged> st;
        return h_msm_on(ctx, h_bases, in, log_m, h_out, out_jacobian, nullptr, 0, nullptr, st, nullptr);
    });
}

cuzk_kresult compute_h(int device, const void *a, const void *b, const void *c, size_t n, uint32_t log_m,
                       void *h_out)
{
    CUZK_TRY(check_h_args(a, b, c, n, log_m));
    if (!h_out) return arg_err(CUZK_K_ERR_NULL_ARG, "compute_h: h_out is NULL");
    return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        dbuf d_h;
        return compute_h_dev(ctx, host_abc(a, b, c, n), log_m, d_h, h_out);
    });
}

}  // namespace cuzk
