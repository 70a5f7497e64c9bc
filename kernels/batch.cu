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
    CUZK_CK(h2d(ctx, d.p, h, n * 32, ctx->s_comp));
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

cuzk_kresult msm_aux_many(const cuzk_k_bases *bases, size_t base_offset, const uint64_t *density,
                          const cuzk_k_dwitness *const *ws, size_t k, void *const *outs)
{
    if (!bases || (k && (!ws || !outs))) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_aux_many: bases, witnesses or outs is NULL");
    if (k == 0) return ok();
    for (size_t i = 0; i < k; i++) {
        if (!ws[i] || !outs[i]) return arg_err(CUZK_K_ERR_NULL_ARG, "msm_aux_many: a witness or out is NULL");
        if (ws[i]->device != bases->device)
            return arg_err(CUZK_K_ERR_MIXED_DEVICES, "msm_aux_many: a witness on another device");
        if (ws[i]->z.num_aux != ws[0]->z.num_aux)
            return arg_err(CUZK_K_ERR_RANGE, "msm_aux_many: witnesses of different aux counts");
    }
    const size_t n = ws[0]->z.num_aux;
    std::vector<const device_z *> zs(k);
    for (size_t i = 0; i < k; i++) zs[i] = &ws[i]->z;
    return run_on(bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        CUZK_PHASE(ctx, CUZK_K_PHASE_MSM, 0);
        if (bases->h) {
            if (bases->group == 1)
                return msm_stream_many<fp_t>(ctx, bases->h, bases->n, base_offset, zs.data(), k, n, density, outs);
            return msm_stream_many<fp2_t>(ctx, bases->h, bases->n, base_offset, zs.data(), k, n, density, outs);
        }
        // Resident bases: each witness's aux expanded whole, then one MSM each.
        dbuf aux;
        CUZK_CK(aux.alloc(ctx, n * 32));
        for (size_t i = 0; i < k; i++) {
            CUZK_PHASE(ctx, CUZK_K_PHASE_MSM, (int)i);
            CUZK_TRY(expand_aux_range(ctx, *zs[i], 0, n, aux.p));
            if (bases->group == 1)
                CUZK_TRY(msm_run<fp_t>(ctx, bases->d, bases->n, base_offset, aux.p, nullptr, n, density, outs[i], false));
            else
                CUZK_TRY(msm_run<fp2_t>(ctx, bases->d, bases->n, base_offset, aux.p, nullptr, n, density, outs[i], false));
        }
        return ok();
    });
}

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

namespace {

// The jobs of one batch and the vector the H call staged for it, if any.
struct batch {
    const cuzk_k_msm_job *jobs;
    size_t count;
    const cuzk_k_staged *staged;
    // A job reading the staged vector uses its device copy and uploads nothing.
    const void *staged_for(const cuzk_k_msm_job &j) const
    {
        return staged && j.n && j.host_scalars == staged->h && j.n == staged->n ? staged->buf.p : nullptr;
    }
};

// A host scalar vector that jobs read (matched by pointer and length).
struct scalar_vec {
    const void *h = nullptr;
    size_t n = 0;
};
inline bool reads(const cuzk_k_msm_job &j, const scalar_vec &v) { return j.host_scalars == v.h && j.n == v.n; }

// The distinct vectors the jobs read (a proof's L, A, B_G1 and B_G2 share its aux vector, and A,
// B its inputs), in order of first use, and the one each job reads.
struct batch_vectors {
    std::vector<scalar_vec> uniq;
    std::vector<size_t> vec_of;
    size_t total = 0, largest = 0;  // bytes
    bool streamed = false;          // some job's bases are streamed
    explicit batch_vectors(const batch &b) : vec_of(b.count, 0)
    {
        for (size_t i = 0; i < b.count; i++) {
            const cuzk_k_msm_job &j = b.jobs[i];
            streamed |= j.bases->h != nullptr;
            if (!j.n || b.staged_for(j)) continue;
            size_t k = 0;
            while (k < uniq.size() && !reads(j, uniq[k])) k++;
            if (k == uniq.size()) {
                uniq.push_back(scalar_vec{j.host_scalars, j.n});
                total += j.n * 32;
                largest = std::max(largest, j.n * 32);
            }
            vec_of[i] = k;
        }
    }
};

// Scalar sources: where each job of the batch finds its scalars on the device. Both give a job
// the staged vector when it reads that one, upload every other vector once for all its
// readers, and queue the copies on the copy stream so that they run while earlier jobs compute.
// The loop (run_jobs) calls start once, then for each job before (its copies may be queued),
// scalars (the compute stream waits for them) and after (its buffer may go back).

// Every vector uploaded up front into a buffer of its own, in order of first use. The source
// when no job streams its bases and the vectors fit in the two job-sized buffers of
// pingpong_scalars (so it never needs more device memory than that one).
struct preloaded_scalars {
    const batch_vectors &v;
    std::unique_ptr<dbuf[]> bufs;
    std::vector<cudaEvent_t> copied;
    event_list evs;
    copy_join join;  // last member: the copy stream is joined before the buffers go back

    preloaded_scalars(const batch_vectors &vectors, cudaStream_t sc) : v(vectors), join{sc} {}

    cuzk_kresult start(dev_ctx *ctx, const batch &)
    {
        bufs.reset(new dbuf[v.uniq.size()]);
        copied.resize(v.uniq.size());
        for (size_t k = 0; k < v.uniq.size(); k++) {
            CUZK_CK(bufs[k].alloc(ctx, v.uniq[k].n * 32));
            CUZK_CK(evs.add(&copied[k]));
        }
        cudaEvent_t allocated;
        CUZK_CK(evs.add(&allocated));
        CUZK_CK(cudaEventRecord(allocated, ctx->s_comp));
        CUZK_CK(cudaStreamWaitEvent(ctx->s_copy, allocated, 0));
        for (size_t k = 0; k < v.uniq.size(); k++) {
            CUZK_CK(h2d(ctx, bufs[k].p, v.uniq[k].h, v.uniq[k].n * 32, ctx->s_copy));
            CUZK_CK(cudaEventRecord(copied[k], ctx->s_copy));
        }
        return ok();
    }
    cuzk_kresult before(dev_ctx *, const batch &, size_t) { return ok(); }
    cuzk_kresult scalars(dev_ctx *ctx, const batch &b, size_t i, const void **d)
    {
        *d = b.staged_for(b.jobs[i]);
        if (b.jobs[i].n && !*d) {
            CUZK_CK(cudaStreamWaitEvent(ctx->s_comp, copied[v.vec_of[i]], 0));
            *d = bufs[v.vec_of[i]].p;
        }
        return ok();
    }
    void after(const batch &, size_t) {}
};

// Two job-sized buffers: job i's scalars go into buf[i % 2] while job i - 1 computes, unless
// that buffer already holds them (a proof's jobs alternate between its aux and its inputs
// vector, so each is uploaded once). A job over streamed bases is not fetched ahead (its chunks
// need the device memory): its scalars are copied when it starts, and its buffer goes back after
// it unless the next job of its slot reads the same vector.
struct pingpong_scalars {
    dbuf buf[2];
    scalar_vec held[2];
    std::vector<bool> fetched;
    cudaEvent_t copied[2] = {}, allocated = {};
    event_list evs;
    copy_join join;  // last member: the copy stream is joined before the buffers go back

    pingpong_scalars(size_t count, cudaStream_t sc) : fetched(count + 1, false), join{sc} {}

    bool holds(int slot, const cuzk_k_msm_job &j) const { return buf[slot].p && reads(j, held[slot]); }
    cuzk_kresult prefetch(dev_ctx *ctx, const batch &b, size_t i)
    {
        if (i >= b.count || b.jobs[i].n == 0 || fetched[i] || b.staged_for(b.jobs[i])) return ok();
        fetched[i] = true;
        const int slot = (int)(i % 2);
        if (holds(slot, b.jobs[i])) return ok();  // copied[slot] still marks its copy
        held[slot] = scalar_vec{};
        CUZK_CK(buf[slot].alloc(ctx, b.jobs[i].n * 32));
        held[slot] = scalar_vec{b.jobs[i].host_scalars, b.jobs[i].n};
        CUZK_CK(cudaEventRecord(allocated, ctx->s_comp));
        CUZK_CK(cudaStreamWaitEvent(ctx->s_copy, allocated, 0));
        CUZK_CK(h2d(ctx, buf[slot].p, b.jobs[i].host_scalars, b.jobs[i].n * 32, ctx->s_copy));
        CUZK_CK(cudaEventRecord(copied[slot], ctx->s_copy));
        return ok();
    }
    cuzk_kresult start(dev_ctx *ctx, const batch &b)
    {
        CUZK_CK(evs.add(&copied[0]));
        CUZK_CK(evs.add(&copied[1]));
        CUZK_CK(evs.add(&allocated));
        return prefetch(ctx, b, 0);
    }
    cuzk_kresult before(dev_ctx *ctx, const batch &b, size_t i)
    {
        CUZK_TRY(prefetch(ctx, b, i));  // a streamed job's own scalars, not fetched ahead
        if (i + 1 < b.count && !b.jobs[i + 1].bases->h && !b.jobs[i].bases->h) CUZK_TRY(prefetch(ctx, b, i + 1));
        return ok();
    }
    cuzk_kresult scalars(dev_ctx *ctx, const batch &b, size_t i, const void **d)
    {
        *d = b.staged_for(b.jobs[i]);
        if (b.jobs[i].n && !*d) {
            CUZK_CK(cudaStreamWaitEvent(ctx->s_comp, copied[i % 2], 0));
            *d = buf[i % 2].p;
        }
        return ok();
    }
    void after(const batch &b, size_t i)
    {
        const int slot = (int)(i % 2);
        if (b.jobs[i].bases->h && !(i + 2 < b.count && holds(slot, b.jobs[i + 2]))) {
            buf[slot].release();
            held[slot] = scalar_vec{};
        }
    }
};

// The batch's one job loop, over either source. Streamed jobs hand the next large streamed job
// its first chunk, copied during their last one (a proof's L, A, B_G1 and B_G2 over aux; the
// inputs' jobs in between are too small to hide a copy and are skipped over); the first large
// streamed job's first chunk may come from the H call (staged->carry).
template <class Source>
cuzk_kresult run_jobs(dev_ctx *ctx, const batch &b, Source &src)
{
    stream_carry carry[2];
    event_list carry_evs;
    CUZK_CK(carry_evs.add(&carry[0].copied));
    CUZK_CK(carry_evs.add(&carry[1].copied));
    int cur = 0;  // carry[cur]: the next large streamed job's first chunk, if any
    stream_carry *first_in = b.staged && b.staged->carry.h ? &b.staged->carry : nullptr;
    copy_join join{ctx->s_copy};  // carry is written on the copy stream: join it before it is freed
    ctx->phase = CUZK_K_PHASE_MSM_JOB;
    ctx->index = 0;
    CUZK_TRY(src.start(ctx, b));
    for (size_t i = 0; i < b.count; i++) {
        const cuzk_k_msm_job &j = b.jobs[i];
        CUZK_TRY(src.before(ctx, b, i));
        CUZK_PHASE(ctx, CUZK_K_PHASE_MSM_JOB, (int)i);
        const void *d = nullptr;
        CUZK_TRY(src.scalars(ctx, b, i, &d));
        if (j.bases->h && j.n >= STREAM_CARRY_MIN) {
            size_t t = i + 1;
            while (t < b.count && !(b.jobs[t].bases->h && b.jobs[t].n >= STREAM_CARRY_MIN)) t++;
            stream_next nx{};
            if (t < b.count) nx = next_of(b.jobs[t]);
            stream_carry *in = first_in ? first_in : &carry[cur];
            first_in = nullptr;
            CUZK_TRY(run_job(ctx, j, d, in, &carry[1 - cur], t < b.count ? &nx : nullptr));
            in->clear();
            cur = 1 - cur;
        } else {
            CUZK_TRY(run_job(ctx, j, d));
        }
        src.after(b, i);
    }
    CUZK_CK(cudaStreamSynchronize(ctx->s_copy));
    return ok();
}

}  // namespace

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
    for (size_t i = 0; staged && staged->device_only && i < count; i++)
        if (jobs[i].n && jobs[i].host_scalars == staged->h && jobs[i].n != staged->n)
            return arg_err(CUZK_K_ERR_RANGE, "msm_batch: a job reads the device-only staged vector with another length");
    const batch b{jobs, count, staged};
    const batch_vectors vectors(b);
    const bool preload = !vectors.streamed && vectors.total <= 2 * vectors.largest;
    return run_on(jobs[0].bases->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        if (preload) {
            preloaded_scalars src(vectors, ctx->s_copy);
            return run_jobs(ctx, b, src);
        }
        pingpong_scalars src(count, ctx->s_copy);
        return run_jobs(ctx, b, src);
    });
}

}  // namespace cuzk
