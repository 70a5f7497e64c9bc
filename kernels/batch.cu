// cuzk kernels: MSM calls — one MSM, or a batch of G1 and G2 jobs on one device whose scalar
// vectors are uploaded once each and ahead of need.
#include "internal.cuh"
#include <memory>
#include <vector>
#include <algorithm>

namespace cuzk {
namespace {

// Scalars to the device (on the compute stream) for a streamed MSM.
cuzk_kresult scalars_to_device(dev_ctx *ctx, const void *h, size_t n, dbuf &d)
{
    if (!n) return ok();
    CUZK_CK(d.alloc(ctx, n * 32));
    CUZK_CK(cudaMemcpyAsync(d.p, h, n * 32, cudaMemcpyHostToDevice, ctx->s_comp));
    return ok();
}

template <class F>
cuzk_kresult msm_api(int group, const cuzk_k_bases *bases, size_t base_offset, const void *scalars,
                     size_t n, const uint64_t *density, void *out)
{
    if (!bases || !out) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: bases or out is NULL");
    if (!scalars && n) return arg_err(CUZK_K_ERR_NULL_ARG, "msm: scalars is NULL");
    if (bases->group != group) return arg_err(CUZK_K_ERR_WRONG_GROUP, "msm: bases of the other group");
    return run_on(bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        CUZK_PHASE(ctx, CUZK_K_PHASE_MSM, 0);
        if (!bases->h) return msm_run<F>(ctx, bases->d, bases->n, base_offset, nullptr, scalars, n, density, out, false);
        dbuf d_sc;
        CUZK_TRY(scalars_to_device(ctx, scalars, n, d_sc));
        return msm_stream<F>(ctx, bases->h, bases->n, base_offset, d_sc.p, n, density, out);
    });
}

// One job of a batch: d = its scalars on the device (or nullptr: h = the host scalars, for a
// job with none), on resident or streamed bases.
// Streamed jobs may take their first chunk from `in` and fill `out` for `next`.
cuzk_kresult run_job(dev_ctx *ctx, const cuzk_k_msm_job &j, const void *d, stream_carry *in = nullptr,
                     stream_carry *out = nullptr, const stream_next *next = nullptr)
{
    const void *h = d ? nullptr : j.host_scalars;
    if (j.bases->h) {
        if (j.bases->group == 1)
            return msm_stream<fp_t>(ctx, j.bases->h, j.bases->n, j.base_offset, d, j.n, j.density_bits,
                                    j.out_jacobian, in, out, next);
        return msm_stream<fp2_t>(ctx, j.bases->h, j.bases->n, j.base_offset, d, j.n, j.density_bits,
                                 j.out_jacobian, in, out, next);
    }
    if (j.bases->group == 1)
        return msm_run<fp_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian, false);
    return msm_run<fp2_t>(ctx, j.bases->d, j.bases->n, j.base_offset, d, h, j.n, j.density_bits, j.out_jacobian, false);
}

}  // namespace

cuzk_kresult msm_one(int group, const cuzk_k_bases *bases, size_t base_offset, const void *scalars, size_t n,
                     const uint64_t *density, void *out)
{
    if (group == 1) return msm_api<fp_t>(1, bases, base_offset, scalars, n, density, out);
    return msm_api<fp2_t>(2, bases, base_offset, scalars, n, density, out);
}

// The stream_next describing a job over streamed bases (its first chunk can be carried in).
stream_next next_of(const cuzk_k_msm_job &j)
{
    const size_t elem = j.bases->group == 1 ? sizeof(affine_t<fp_t>) : sizeof(affine_t<fp2_t>);
    return stream_next{static_cast<const char *>(j.bases->h) + j.base_offset * elem, j.n, j.density_bits, elem};
}

cuzk_kresult msm_batch(const cuzk_k_msm_job *jobs, size_t count, const cuzk_k_staged *staged)
{
    if (!count) return ok();
    if (!jobs) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: jobs is NULL");
    for (size_t i = 0; i < count; i++) {
        const cuzk_k_msm_job &j = jobs[i];
        if (!j.bases || !j.out_jacobian) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: bases or out is NULL");
        if (!j.host_scalars && j.n) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_batch: scalars is NULL");
        if (j.bases->device != jobs[0].bases->device)
            return arg_err(CUZK_K_ERR_MIXED_DEVICES, "msm_batch: jobs on different devices");
    }
    if (staged && staged->device != jobs[0].bases->device)
        return arg_err(CUZK_K_ERR_MIXED_DEVICES, "msm_batch: staged scalars on another device");
    // A job reading the staged vector uses its device copy and uploads nothing.
    auto staged_for = [&](const cuzk_k_msm_job &j) -> const void * {
        return staged && j.n && j.host_scalars == staged->h && j.n == staged->n ? staged->buf.p : nullptr;
    };
    // The scalar vectors the jobs read, each once: a proof's L, A, B_G1 and B_G2 share its aux
    // vector (and A, B its inputs), so one upload serves four jobs.
    struct vec { const void *h; size_t n; };
    std::vector<vec> uniq;
    std::vector<size_t> vec_of(count, 0);
    bool streamed = false;
    size_t largest = 0, total = 0;
    for (size_t i = 0; i < count; i++) {
        const cuzk_k_msm_job &j = jobs[i];
        streamed |= j.bases->h != nullptr;
        if (!j.n || staged_for(j)) continue;
        size_t k = 0;
        while (k < uniq.size() && !(uniq[k].h == j.host_scalars && uniq[k].n == j.n)) k++;
        if (k == uniq.size()) {
            uniq.push_back(vec{j.host_scalars, j.n});
            total += j.n * 32;
            largest = std::max(largest, j.n * 32);
        }
        vec_of[i] = k;
    }
    // Uploading every vector up front is the fast path when they fit in the two job-sized
    // buffers of the general path below (so it never needs more device memory than that one)
    // and no job streams its bases (their chunks need the memory).
    if (!streamed && total <= 2 * largest) {
        return run_on(jobs[0].bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
            cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
            std::unique_ptr<dbuf[]> bufs(new dbuf[uniq.size()]);
            copy_join join{sc};  // bufs are written on the copy stream: join it before they are freed
            event_list evs;
            std::vector<cudaEvent_t> copied(uniq.size());
            ctx->phase = CUZK_K_PHASE_MSM_JOB;
            ctx->index = 0;
            for (size_t k = 0; k < uniq.size(); k++) {
                CUZK_CK(bufs[k].alloc(ctx, uniq[k].n * 32));
                CUZK_CK(evs.add(&copied[k]));
            }
            cudaEvent_t allocated;
            CUZK_CK(evs.add(&allocated));
            CUZK_CK(cudaEventRecord(allocated, s));
            CUZK_CK(cudaStreamWaitEvent(sc, allocated, 0));
            // All copies queued now, in the order of first use: each runs while the jobs before
            // its first reader compute.
            for (size_t k = 0; k < uniq.size(); k++) {
                CUZK_CK(cudaMemcpyAsync(bufs[k].p, uniq[k].h, uniq[k].n * 32, cudaMemcpyHostToDevice, sc));
                CUZK_CK(cudaEventRecord(copied[k], sc));
            }
            for (size_t i = 0; i < count; i++) {
                const cuzk_k_msm_job &j = jobs[i];
                CUZK_PHASE(ctx, CUZK_K_PHASE_MSM_JOB, (int)i);
                const void *d = staged_for(j);
                if (j.n && !d) {
                    CUZK_CK(cudaStreamWaitEvent(s, copied[vec_of[i]], 0));
                    d = bufs[vec_of[i]].p;
                }
                CUZK_TRY(run_job(ctx, j, d));
            }
            CUZK_CK(cudaStreamSynchronize(sc));
            return ok();
        });
    }
    return run_on(jobs[0].bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        cudaStream_t s = ctx->s_comp, sc = ctx->s_copy;
        dbuf buf[2];
        // Streamed jobs hand the next large streamed job its first chunk, copied during their
        // last one (a proof's L, A, B_G1 and B_G2 over aux; the inputs' jobs in between are
        // too small to hide a copy and are skipped over).
        stream_carry carry[2];
        event_list carry_evs;
        CUZK_CK(carry_evs.add(&carry[0].copied));
        CUZK_CK(carry_evs.add(&carry[1].copied));
        int cur = 0;                   // carry[cur]: the next large streamed job's first chunk, if any
        const size_t big = STREAM_CARRY_MIN;
        // The first large streamed job's first chunk may come from the H call (staged->carry).
        stream_carry *first_in = staged && staged->carry.h ? &staged->carry : nullptr;
        copy_join join{sc};  // buf and carry are written on the copy stream: join it before they are freed
        cudaEvent_t ev[3] = {};
        struct ev_guard {
            cudaEvent_t *e;
            ~ev_guard() { for (int i = 0; i < 3; i++) if (e[i]) cudaEventDestroy(e[i]); }
        } guard{ev};
        for (int k = 0; k < 3; k++) CUZK_CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
        // queue the copy of job i's scalars into buf[i % 2] on the copy stream, unless that
        // buffer already holds them (a proof's jobs alternate between the aux and the inputs
        // vector, so each is uploaded once). A job over streamed bases is not fetched ahead
        // (its chunks need the device memory): its scalars are copied when it starts.
        std::vector<bool> fetched(count + 1, false);
        struct held_vec { const void *h = nullptr; size_t n = 0; } held[2];
        auto holds = [&](int slot, const cuzk_k_msm_job &j) {
            return buf[slot].p && held[slot].h == j.host_scalars && held[slot].n == j.n;
        };
        auto prefetch = [&](size_t i) -> cuzk_kresult {
            if (i >= count || jobs[i].n == 0 || fetched[i] || staged_for(jobs[i])) return ok();
            fetched[i] = true;
            if (holds((int)(i % 2), jobs[i])) return ok();  // ev[i % 2] still marks its copy
            dbuf &b = buf[i % 2];
            held[i % 2] = held_vec{};
            CUZK_CK(b.alloc(ctx, jobs[i].n * 32));
            held[i % 2] = held_vec{jobs[i].host_scalars, jobs[i].n};
            CUZK_CK(cudaEventRecord(ev[2], s));
            CUZK_CK(cudaStreamWaitEvent(sc, ev[2], 0));
            CUZK_CK(cudaMemcpyAsync(b.p, jobs[i].host_scalars, jobs[i].n * 32, cudaMemcpyHostToDevice, sc));
            CUZK_CK(cudaEventRecord(ev[i % 2], sc));
            return ok();
        };
        ctx->phase = CUZK_K_PHASE_MSM_JOB;
        CUZK_TRY(prefetch(0));
        for (size_t i = 0; i < count; i++) {
            const cuzk_k_msm_job &j = jobs[i];
            CUZK_TRY(prefetch(i));  // a streamed job's own scalars, not fetched ahead
            if (i + 1 < count && !jobs[i + 1].bases->h && !j.bases->h) CUZK_TRY(prefetch(i + 1));
            CUZK_PHASE(ctx, CUZK_K_PHASE_MSM_JOB, (int)i);
            const void *d = staged_for(j);
            if (j.n && !d) {
                CUZK_CK(cudaStreamWaitEvent(s, ev[i % 2], 0));
                d = buf[i % 2].p;
            }
            if (j.bases->h && j.n >= big) {
                size_t t = i + 1;
                while (t < count && !(jobs[t].bases->h && jobs[t].n >= big)) t++;
                stream_next nx{};
                if (t < count) nx = next_of(jobs[t]);
                stream_carry *in = first_in ? first_in : &carry[cur];
                first_in = nullptr;
                CUZK_TRY(run_job(ctx, j, d, in, &carry[1 - cur], t < count ? &nx : nullptr));
                in->clear();
                cur = 1 - cur;
            } else {
                CUZK_TRY(run_job(ctx, j, d));
            }
            // After a streamed job its buffer goes back (the next jobs' chunks need the device
            // memory), unless the next job of its slot reads the same vector.
            if (j.bases->h && !(i + 2 < count && holds((int)(i % 2), jobs[i + 2]))) {
                buf[i % 2].release();
                held[i % 2] = held_vec{};
            }
        }
        CUZK_CK(cudaStreamSynchronize(sc));
        return ok();
    });
}

}  // namespace cuzk
