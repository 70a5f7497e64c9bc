// cuzk kernels: the witness path — a compiled circuit resident on the device (A, B, C packed
// over z = (inputs, aux), and its table of constants), a compact witness read there as it is,
// a, b, c = A·z, B·z, C·z evaluated from it (SpMV), so that a, b, c never exist on the host, and
// the aux expanded for the MSMs once H no longer needs the memory.
//
// Invariants (kernels/NOTES.md, "The witness path"):
// - A circuit is checked once, on upload: each group's row lengths add up to its span, the
//   spans run from 0 to the word count, every row's words parse, every column < inputs + aux,
//   every constant index < constants. The SpMV then reads nothing out of bounds.
// - A witness is checked on arrival: every "other" value it points at exists (the per-word
//   counts agree with the bitmap); a witness that does not is refused (RANGE).
// - Values stay in Montgomery form (blst_fr) throughout: the aux the MSMs read is the same
//   vector the host would have uploaded, bit for bit.
#include "internal.cuh"
#include <memory>
#include <algorithm>

namespace cuzk {
namespace {

constexpr size_t ALIGN = 256;
inline size_t up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

// Row r's first word and length, for the warp's 32 rows r0 .. r0 + 31 (r0 a multiple of 32,
// every lane present): the group's first word plus the lengths of the rows before r in it.
__device__ __forceinline__ uint32_t row_start(const cuzk_k_circuit::packed &mx, size_t rows, size_t r0,
                                              uint32_t *len)
{
    const unsigned lane = threadIdx.x & 31;
    const size_t r = r0 + lane;
    const uint32_t l = r < rows ? mx.lens[r] : 0;
    uint32_t incl = l;
    for (unsigned d = 1; d < 32; d <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
    }
    *len = l;
    return (r0 < rows ? mx.group_starts[r0 / 32] : 0) + incl - l;
}

// Every group's lengths add up to its span; the spans start at 0 and end at num_words.
__global__ void k_check_groups(cuzk_k_circuit::packed mx, size_t rows, int *bad)
{
    const size_t groups = (rows + 31) / 32;
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups; g += (size_t)gridDim.x * blockDim.x) {
        uint64_t sum = 0;
        for (size_t r = g * 32; r < rows && r < g * 32 + 32; r++) sum += mx.lens[r];
        if ((uint64_t)mx.group_starts[g] + sum != (uint64_t)mx.group_starts[g + 1]) atomicOr(bad, 1);
        if (g == 0 && mx.group_starts[0] != 0) atomicOr(bad, 1);
        if (g + 1 == groups && mx.group_starts[groups] != mx.num_words) atomicOr(bad, 1);
    }
}

// Every row's words parse: inside the matrix, no tag 3, a constant's index word inside the row
// and < constants, every column < cols. One warp-aligned thread a row, as the SpMV.
__global__ void k_check_words(cuzk_k_circuit::packed mx, size_t rows, size_t cols, size_t constants, int *bad)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t r0 = blockIdx.x * (size_t)blockDim.x + (threadIdx.x & ~31u); r0 < rows; r0 += stride) {
        uint32_t len;
        const uint32_t start = row_start(mx, rows, r0, &len);
        if ((uint64_t)start + len > mx.num_words) {
            atomicOr(bad, 2);
            continue;
        }
        for (uint32_t t = start; t < start + len; t++) {
            const uint32_t w = mx.words[t], tag = w & 3;
            if ((w >> 2) >= cols || tag == 3) atomicOr(bad, 2);
            if (tag == 2 && (++t >= start + len || mx.words[t] >= constants)) atomicOr(bad, 2);
        }
    }
}

// A witness's others: for each word of the bitmap, the last other value it points at exists.
__global__ void k_check_witness(size_t n, const uint64_t *mask, const uint32_t *before, size_t n_others, int *bad)
{
    const size_t words = (n + 63) / 64;
    for (size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x; w < words; w += (size_t)gridDim.x * blockDim.x) {
        const unsigned valid = w + 1 < words || n % 64 == 0 ? 64 : (unsigned)(n % 64);
        const uint64_t in = valid == 64 ? ~0ull : (1ull << valid) - 1;
        const unsigned cnt = (unsigned)__popcll(~mask[w] & in);
        if (cnt && (size_t)before[w] + cnt > n_others) atomicOr(bad, 1);
    }
}

// Aux values i0 .. i0 + cnt from the compact form into out[0 .. cnt): a bit (mask set) is 0 or
// 1, anything else the next of `others`, found from the count before its word. An index past
// `others` (a witness not checked on arrival) writes zero and, with `bad`, marks it.
__global__ void k_expand(fr_t *out, size_t i0, size_t cnt, const uint64_t *mask, const uint64_t *vals,
                         const uint32_t *before, const fr_t *others, size_t n_others, int *bad)
{
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < cnt; t += (size_t)gridDim.x * blockDim.x) {
        const size_t j = i0 + t, w = j >> 6;
        const unsigned b = (unsigned)(j & 63);
        const uint64_t mw = mask[w];
        if ((mw >> b) & 1) {
            out[t] = fr_t::one(((vals[w] >> b) & 1) ? 0 : 1);
            continue;
        }
        const size_t k = (size_t)before[w] + (size_t)__popcll(~mw & ((1ull << b) - 1));
        if (k < n_others) {
            out[t] = others[k];
        } else {
            if (bad) atomicOr(bad, 1);
            out[t].zero();
        }
    }
}

// z as the SpMV reads it: inputs dense; aux compact (mask non-null) or dense (others).
struct z_view {
    const fr_t *inputs;
    uint32_t n_in;
    const uint64_t *mask, *vals;
    const uint32_t *before;
    const fr_t *others;
};

// acc += coefficient · z[col], the coefficient +1 (tag 0), -1 (tag 1) or k (tag 2); a 0/1 aux
// value costs at most one addition, no multiplication.
__device__ __forceinline__ void add_term(fr_t &acc, const z_view &z, uint32_t col, uint32_t tag, const fr_t *k)
{
    fr_t v;
    if (col < z.n_in) {
        v = z.inputs[col];
    } else if (!z.mask) {
        v = z.others[col - z.n_in];
    } else {
        const uint32_t j = col - z.n_in, w = j >> 6, b = j & 63;
        const uint64_t mw = z.mask[w];
        if ((mw >> b) & 1) {
            if (!((z.vals[w] >> b) & 1)) return;  // zero
            if (tag == 0)
                acc += fr_t::one();
            else if (tag == 1)
                acc -= fr_t::one();
            else
                acc += *k;
            return;
        }
        v = z.others[(size_t)z.before[w] + (size_t)__popcll(~mw & ((1ull << b) - 1))];
    }
    if (tag == 0)
        acc += v;
    else if (tag == 1)
        acc -= v;
    else
        acc += v * *k;
}

// out[r] = sum over row r's terms of coefficient * z[column], for r < rows; 0 for rows..m.
// One thread a row (most rows hold a few terms), the warp's 32 rows one group.
__global__ void k_spmv(fr_t *out, size_t rows, size_t m, cuzk_k_circuit::packed mx, const fr_t *consts, z_view z)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t r0 = blockIdx.x * (size_t)blockDim.x + (threadIdx.x & ~31u); r0 < m; r0 += stride) {
        const size_t r = r0 + (threadIdx.x & 31);
        uint32_t len;
        const uint32_t start = row_start(mx, rows, r0, &len);
        fr_t acc;
        acc.zero();
        for (uint32_t t = start; t < start + len; t++) {
            const uint32_t w = mx.words[t], tag = w & 3;
            const fr_t *k = nullptr;
            if (tag == 2) k = consts + mx.words[++t];
            add_term(acc, z, w >> 2, tag, k);
        }
        if (r < m) out[r] = acc;
    }
}

unsigned blocks_for(size_t n, int sms)
{
    size_t b = (n + 255) / 256;
    return (unsigned)std::max<size_t>(1, std::min<size_t>(b, (size_t)sms * 32));
}

cuzk_kresult read_flag(dev_ctx *ctx, const dbuf &flag, int *out)
{
    CUZK_CK(cudaMemcpyAsync(out, flag.p, sizeof(int), cudaMemcpyDeviceToHost, ctx->s_comp));
    CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
    return ok();
}

}  // namespace

cuzk_kresult circuit_begin(int device, const cuzk_k_circuit_sizes *d, cuzk_k_circuit **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_begin: out is NULL");
    *out = nullptr;
    if (!d) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_begin: sizes is NULL");
    if (d->rows == 0 || d->rows > 0x7fffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_begin: rows must be in 1..2^31-1");
    if (d->num_inputs == 0 || d->num_inputs + d->num_aux > ((size_t)1 << 30))
        return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_begin: inputs + aux must be in 1..2^30");
    if (d->num_constants > 0xffffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_begin: too many constants");
    for (int k = 0; k < 3; k++)
        if (d->num_words[k] > 0xffffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_begin: more than 2^32-1 words");
    // One counted block: per matrix lengths, group starts, words; then the constants.
    const size_t groups = (d->rows + 31) / 32;
    std::unique_ptr<cuzk_k_circuit> c(new cuzk_k_circuit{});
    size_t total = 0;
    for (int k = 0; k < 3; k++) {
        const size_t sizes[3] = {d->rows * 2, (groups + 1) * 4, d->num_words[k] * 4};
        for (int q = 0; q < 3; q++) {
            c->part_off[3 * k + q] = total;
            c->part_bytes[3 * k + q] = sizes[q];
            total += up(sizes[q]);
        }
    }
    c->part_off[9] = total;
    c->part_bytes[9] = d->num_constants * 32;
    total += up(d->num_constants * 32);
    return run_on(device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_UPLOAD;
        void *p = nullptr;
        cudaError_t e = counted_malloc(ctx, &p, total);
        if (e == cudaErrorMemoryAllocation) {
            CUZK_CLEAR_LAST_ERROR();
            CUZK_TRY(trim_pool(ctx));
            e = counted_malloc(ctx, &p, total);
        }
        CUZK_CK(e);
        c->device = device;
        c->block = p;
        c->bytes = total;
        char *base = static_cast<char *>(p);
        c->rows = d->rows;
        c->num_inputs = d->num_inputs;
        c->num_aux = d->num_aux;
        c->num_constants = d->num_constants;
        c->constants = base + c->part_off[9];
        for (int k = 0; k < 3; k++) {
            c->m[k].num_words = d->num_words[k];
            c->m[k].lens = reinterpret_cast<uint16_t *>(base + c->part_off[3 * k]);
            c->m[k].group_starts = reinterpret_cast<uint32_t *>(base + c->part_off[3 * k + 1]);
            c->m[k].words = reinterpret_cast<uint32_t *>(base + c->part_off[3 * k + 2]);
        }
        *out = c.release();
        return ok();
    });
}

cuzk_kresult circuit_put(cuzk_k_circuit *c, int part, size_t offset, const void *src, size_t bytes)
{
    if (!c || (bytes && !src)) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_put: circuit or src is NULL");
    if (c->ready) return arg_err(CUZK_K_ERR_RANGE, "circuit_put: the circuit is finished");
    if (part < 0 || part >= CUZK_K_CIRCUIT_PARTS) return arg_err(CUZK_K_ERR_RANGE, "circuit_put: no such part");
    if (offset > c->part_bytes[part] || bytes > c->part_bytes[part] - offset)
        return arg_err(CUZK_K_ERR_RANGE, "circuit_put: past the end of the part");
    if (!bytes) return ok();
    return run_on(c->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_UPLOAD;
        // Waited for by run_on before it returns: the caller may reuse src at once.
        CUZK_CK(h2d(ctx, static_cast<char *>(c->block) + c->part_off[part] + offset, src, bytes, ctx->s_comp));
        return ok();
    });
}

cuzk_kresult circuit_finish(cuzk_k_circuit *c)
{
    if (!c) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_finish: circuit is NULL");
    if (c->ready) return ok();
    return run_on(c->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_UPLOAD;
        dbuf flag;
        CUZK_CK(flag.alloc(ctx, sizeof(int)));
        CUZK_CK(cudaMemsetAsync(flag.p, 0, sizeof(int), ctx->s_comp));
        const size_t cols = c->num_inputs + c->num_aux, groups = (c->rows + 31) / 32;
        for (int k = 0; k < 3; k++) {
            k_check_groups<<<blocks_for(groups, ctx->sm_count), 256, 0, ctx->s_comp>>>(c->m[k], c->rows, flag.as<int>());
            CUZK_CKL();
            k_check_words<<<blocks_for(c->rows, ctx->sm_count), 256, 0, ctx->s_comp>>>(c->m[k], c->rows, cols,
                                                                                     c->num_constants, flag.as<int>());
            CUZK_CKL();
        }
        int bad = 0;
        CUZK_TRY(read_flag(ctx, flag, &bad));
        if (bad & 1) return arg_err(CUZK_K_ERR_RANGE, "circuit_finish: row lengths do not add up to the group starts");
        if (bad & 2) return arg_err(CUZK_K_ERR_RANGE, "circuit_finish: a word past its matrix, a bad tag, column or constant index");
        CUZK_PHASE(ctx, CUZK_K_PHASE_UPLOAD, 0);
        c->ready = true;
        return ok();
    });
}

cuzk_kresult circuit_upload(int device, const cuzk_k_circuit_desc *d, cuzk_k_circuit **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: out is NULL");
    *out = nullptr;
    if (!d) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: desc is NULL");
    const cuzk_k_packed_desc *ms[3] = {&d->a, &d->b, &d->c};
    if (d->num_constants && !d->constants) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: constants is NULL");
    for (const cuzk_k_packed_desc *m : ms) {
        if (!m->lens || !m->group_starts) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: lens or group_starts is NULL");
        if (m->num_words && !m->words) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: words is NULL");
    }
    const cuzk_k_circuit_sizes sizes{d->rows, d->num_inputs, d->num_aux, d->num_constants,
                                     {d->a.num_words, d->b.num_words, d->c.num_words}};
    cuzk_k_circuit *c = nullptr;
    CUZK_TRY(circuit_begin(device, &sizes, &c));
    std::unique_ptr<cuzk_k_circuit, cuzk_kresult (*)(cuzk_k_circuit *)> own(c, circuit_free);
    const size_t groups = (d->rows + 31) / 32;
    for (int k = 0; k < 3; k++) {
        CUZK_TRY(circuit_put(c, CUZK_K_CIRCUIT_PART_LENS(k), 0, ms[k]->lens, d->rows * 2));
        CUZK_TRY(circuit_put(c, CUZK_K_CIRCUIT_PART_GROUP_STARTS(k), 0, ms[k]->group_starts, (groups + 1) * 4));
        CUZK_TRY(circuit_put(c, CUZK_K_CIRCUIT_PART_WORDS(k), 0, ms[k]->words, ms[k]->num_words * 4));
    }
    CUZK_TRY(circuit_put(c, CUZK_K_CIRCUIT_PART_CONSTANTS, 0, d->constants, d->num_constants * 32));
    CUZK_TRY(circuit_finish(c));
    *out = own.release();
    return ok();
}

cuzk_kresult circuit_free(cuzk_k_circuit *c)
{
    if (!c) return ok();
    std::unique_ptr<cuzk_k_circuit> own(c);
    return run_on(c->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        counted_free(ctx, c->block, c->bytes);
        return ok();
    });
}

cuzk_kresult check_witness(const cuzk_k_circuit *c, const cuzk_k_witness *w)
{
    if (!c || !w) return arg_err(CUZK_K_ERR_NULL_ARG, "witness: circuit or witness is NULL");
    if (!c->ready) return arg_err(CUZK_K_ERR_RANGE, "witness: the circuit's upload is not finished");
    if (w->num_inputs != c->num_inputs || w->num_aux != c->num_aux)
        return arg_err(CUZK_K_ERR_RANGE, "witness: inputs or aux count differs from the circuit's");
    if (!w->inputs) return arg_err(CUZK_K_ERR_NULL_ARG, "witness: inputs is NULL");
    if (w->bit_mask) {
        if (w->num_aux && (!w->bit_values || !w->others_before))
            return arg_err(CUZK_K_ERR_NULL_ARG, "witness: bit_values or others_before is NULL");
        if (w->num_others > w->num_aux) return arg_err(CUZK_K_ERR_RANGE, "witness: more others than aux");
    } else if (w->num_others != w->num_aux) {
        return arg_err(CUZK_K_ERR_RANGE, "witness: a dense witness holds all aux values in others");
    }
    if (w->num_others && !w->others) return arg_err(CUZK_K_ERR_NULL_ARG, "witness: others is NULL");
    return ok();
}

cuzk_kresult witness_to_device(dev_ctx *ctx, const cuzk_k_witness *w, device_z &z)
{
    cudaStream_t s = ctx->s_comp;
    const size_t n = w->num_aux;
    z.num_aux = n;
    z.compact = w->bit_mask != nullptr;
    z.num_others = w->num_others;
    CUZK_CK(z.inputs.alloc(ctx, w->num_inputs * 32));
    CUZK_CK(h2d(ctx, z.inputs.p, w->inputs, w->num_inputs * 32, s));
    CUZK_CK(z.others.alloc(ctx, w->num_others * 32));
    if (w->num_others) CUZK_CK(h2d(ctx, z.others.p, w->others, w->num_others * 32, s));
    if (!n || !z.compact) return ok();
    const size_t words = (n + 63) / 64;
    dbuf flag;
    CUZK_CK(z.mask.alloc(ctx, words * 8));
    CUZK_CK(z.vals.alloc(ctx, words * 8));
    CUZK_CK(z.before.alloc(ctx, words * 4));
    CUZK_CK(flag.alloc(ctx, sizeof(int)));
    CUZK_CK(h2d(ctx, z.mask.p, w->bit_mask, words * 8, s));
    CUZK_CK(h2d(ctx, z.vals.p, w->bit_values, words * 8, s));
    CUZK_CK(h2d(ctx, z.before.p, w->others_before, words * 4, s));
    CUZK_CK(cudaMemsetAsync(flag.p, 0, sizeof(int), s));
    k_check_witness<<<blocks_for(words, ctx->sm_count), 256, 0, s>>>(n, z.mask.as<uint64_t>(), z.before.as<uint32_t>(),
                                                                     w->num_others, flag.as<int>());
    CUZK_CKL();
    int bad = 0;
    CUZK_TRY(read_flag(ctx, flag, &bad));
    if (bad) return arg_err(CUZK_K_ERR_RANGE, "witness: others_before does not agree with bit_mask");
    return ok();
}

cuzk_kresult dwitness_upload(const cuzk_k_circuit *c, const cuzk_k_witness *w, cuzk_k_dwitness **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "dwitness_upload: out is NULL");
    *out = nullptr;
    CUZK_TRY(check_witness(c, w));
    std::unique_ptr<cuzk_k_dwitness> d(new cuzk_k_dwitness{c->device, {}});
    cuzk_kresult r = run_on(c->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        ctx->phase = CUZK_K_PHASE_ABC_COPY;
        return witness_to_device(ctx, w, d->z);
    });
    if (r.code != 0) {
        dwitness_free(d.release());  // its buffers go back under the device's lock
        return r;
    }
    *out = d.release();
    return ok();
}

cuzk_kresult dwitness_free(cuzk_k_dwitness *w)
{
    if (!w) return ok();
    std::unique_ptr<cuzk_k_dwitness> own(w);
    return run_on(own->device, [&](dev_ctx *) -> cuzk_kresult {
        for (dbuf *b : {&own->z.inputs, &own->z.mask, &own->z.vals, &own->z.before, &own->z.others}) b->release();
        return ok();
    });
}

cuzk_kresult expand_aux(dev_ctx *ctx, device_z &z, dbuf &out)
{
    const size_t n = z.num_aux;
    if (!z.compact || !n) {
        out.swap(z.others);  // dense: the values are the aux (an empty aux: an empty buffer)
        if (!out.p) CUZK_CK(out.alloc(ctx, n * 32));
        return ok();
    }
    CUZK_CK(out.alloc(ctx, n * 32));
    CUZK_TRY(expand_aux_range(ctx, z, 0, n, out.p));
    // The compact buffers go back now.
    z.mask.release();
    z.vals.release();
    z.before.release();
    z.others.release();
    return ok();
}

cuzk_kresult expand_aux_range(dev_ctx *ctx, const device_z &z, size_t i0, size_t cnt, void *out)
{
    if (!cnt) return ok();
    if (i0 > z.num_aux || cnt > z.num_aux - i0) return arg_err(CUZK_K_ERR_RANGE, "expand_aux_range: past the aux");
    if (!z.compact) {  // dense: the values are the aux
        CUZK_CK(cudaMemcpyAsync(out, z.others.as<fr_t>() + i0, cnt * 32, cudaMemcpyDeviceToDevice, ctx->s_comp));
        return ok();
    }
    // Checked on arrival (witness_to_device): every index exists, no flag needed.
    k_expand<<<blocks_for(cnt, ctx->sm_count), 256, 0, ctx->s_comp>>>(
        static_cast<fr_t *>(out), i0, cnt, z.mask.as<uint64_t>(), z.vals.as<uint64_t>(), z.before.as<uint32_t>(),
        z.others.as<fr_t>(), z.num_others, nullptr);
    CUZK_CKL();
    return ok();
}

cuzk_kresult evaluate_matrix(dev_ctx *ctx, const abc_eval &e, int k, void *out_v, size_t m)
{
    fr_t *out = static_cast<fr_t *>(out_v);
    const cuzk_k_circuit *c = e.circuit;
    const device_z &z = *e.z;
    const z_view zv{z.inputs.as<fr_t>(), (uint32_t)c->num_inputs,
                    z.compact ? z.mask.as<uint64_t>() : nullptr,
                    z.vals.as<uint64_t>(), z.before.as<uint32_t>(), z.others.as<fr_t>()};
    k_spmv<<<blocks_for(m, ctx->sm_count), 256, 0, ctx->s_comp>>>(out, c->rows, m, c->m[k],
                                                                  static_cast<const fr_t *>(c->constants), zv);
    CUZK_CKL();
    return ok();
}

cuzk_kresult circuit_evaluate(const cuzk_k_circuit *c, const cuzk_k_witness *w, void *a_out, void *b_out,
                              void *c_out, void *aux_out)
{
    CUZK_TRY(check_witness(c, w));
    return run_on(c->device, [&](dev_ctx *ctx) -> cuzk_kresult {
        device_z z;
        CUZK_TRY(witness_to_device(ctx, w, z));
        const abc_eval e{c, &z};
        void *outs[3] = {a_out, b_out, c_out};
        dbuf d;
        if (a_out || b_out || c_out) CUZK_CK(d.alloc(ctx, c->rows * 32));
        for (int k = 0; k < 3; k++) {
            if (!outs[k]) continue;
            CUZK_TRY(evaluate_matrix(ctx, e, k, d.as<fr_t>(), c->rows));
            CUZK_CK(cudaMemcpyAsync(outs[k], d.p, c->rows * 32, cudaMemcpyDeviceToHost, ctx->s_comp));
            CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        }
        if (aux_out && c->num_aux) {
            dbuf aux;
            CUZK_TRY(expand_aux(ctx, z, aux));
            CUZK_CK(cudaMemcpyAsync(aux_out, aux.p, c->num_aux * 32, cudaMemcpyDeviceToHost, ctx->s_comp));
            CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        }
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        return ok();
    });
}

}  // namespace cuzk
