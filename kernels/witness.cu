// cuzk kernels: the witness path — a compiled circuit resident on the device (A, B, C in CSR
// over z = (inputs, aux) and its table of constants), a compact witness expanded on the device,
// and a, b, c = A·z, B·z, C·z evaluated there (SpMV), so that a, b, c never exist on the host.
//
// Invariants (kernels/NOTES.md, "The witness path"):
// - A circuit is checked once, on upload: row offsets non-decreasing and ending at the term
//   count, every column < inputs + aux, every coefficient code < 2 + constants. The SpMV then
//   reads nothing out of bounds.
// - A witness is checked while it is expanded: every "other" value it points at exists (the
//   per-word counts agree with the bitmap); a witness that does not is refused (RANGE).
// - Values stay in Montgomery form (blst_fr) throughout: the aux the MSMs read is the same
//   vector the host would have uploaded, bit for bit.
#include "internal.cuh"
#include <memory>
#include <algorithm>

namespace cuzk {
namespace {

constexpr size_t ALIGN = 256;
inline size_t up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

__global__ void k_check_rows(const uint32_t *rs, size_t rows, size_t nnz, int *bad)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < rows; r += (size_t)gridDim.x * blockDim.x) {
        if (rs[r] > rs[r + 1] || rs[r + 1] > nnz) atomicOr(bad, 1);
        if (r == 0 && rs[0] != 0) atomicOr(bad, 1);
        if (r + 1 == rows && rs[rows] != nnz) atomicOr(bad, 1);
    }
}

__global__ void k_check_terms(const uint32_t *col, const uint32_t *code, size_t nnz, size_t cols, size_t codes,
                              int *bad)
{
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < nnz; t += (size_t)gridDim.x * blockDim.x)
        if (col[t] >= cols || code[t] >= codes) atomicOr(bad, 2);
}

// Aux value j from the compact form: a bit (mask set) is 0 or 1, anything else the next of
// `others`, found from the count before its word. An index past `others` marks the witness bad
// (and writes zero).
__global__ void k_expand(fr_t *aux, size_t n, const uint64_t *mask, const uint64_t *vals, const uint32_t *before,
                         const fr_t *others, size_t n_others, int *bad)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        const size_t w = j >> 6;
        const unsigned b = (unsigned)(j & 63);
        const uint64_t mw = mask[w];
        if ((mw >> b) & 1) {
            aux[j] = fr_t::one(((vals[w] >> b) & 1) ? 0 : 1);
            continue;
        }
        const size_t k = (size_t)before[w] + (size_t)__popcll(~mw & ((1ull << b) - 1));
        if (k < n_others) {
            aux[j] = others[k];
        } else {
            atomicOr(bad, 1);
            aux[j].zero();
        }
    }
}

// out[r] = sum over row r's terms of coefficient * z[column], for r < rows; 0 for rows..m.
// One thread a row (most rows hold a few terms).
__global__ void k_spmv(fr_t *out, size_t rows, size_t m, const uint32_t *rs, const uint32_t *col,
                       const uint32_t *code, const fr_t *consts, const fr_t *inputs, uint32_t n_in, const fr_t *aux)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < m; r += (size_t)gridDim.x * blockDim.x) {
        fr_t acc;
        acc.zero();
        if (r < rows) {
            const uint32_t end = rs[r + 1];
            for (uint32_t t = rs[r]; t < end; t++) {
                const uint32_t c = col[t], k = code[t];
                const fr_t v = c < n_in ? inputs[c] : aux[c - n_in];
                if (k == 0)
                    acc += v;
                else if (k == 1)
                    acc -= v;
                else
                    acc += v * consts[k - 2];
            }
        }
        out[r] = acc;
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

cuzk_kresult circuit_upload(int device, const cuzk_k_circuit_desc *d, cuzk_k_circuit **out)
{
    if (!out) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: out is NULL");
    *out = nullptr;
    if (!d) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: desc is NULL");
    const cuzk_k_csr_desc *ms[3] = {&d->a, &d->b, &d->c};
    if (d->rows == 0 || d->rows > 0x7fffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_upload: rows must be in 1..2^31-1");
    if (d->num_inputs == 0 || d->num_inputs + d->num_aux > 0xffffffffu)
        return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_upload: inputs + aux must be in 1..2^32-1");
    if (d->num_constants > 0xffffffffu - 2) return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_upload: too many constants");
    if (d->num_constants && !d->constants) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: constants is NULL");
    for (const cuzk_k_csr_desc *m : ms) {
        if (!m->row_starts) return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: row_starts is NULL");
        if (m->nnz && (!m->columns || !m->coefficients))
            return arg_err(CUZK_K_ERR_NULL_ARG, "circuit_upload: columns or coefficients is NULL");
        if (m->nnz > 0xffffffffu) return arg_err(CUZK_K_ERR_TOO_LARGE, "circuit_upload: more than 2^32-1 terms");
    }
    // One counted block: per matrix row offsets, columns, codes; then the constants.
    size_t off[3][3], total = 0;
    for (int k = 0; k < 3; k++) {
        off[k][0] = total;
        total += up((d->rows + 1) * 4);
        off[k][1] = total;
        total += up(ms[k]->nnz * 4);
        off[k][2] = total;
        total += up(ms[k]->nnz * 4);
    }
    const size_t consts_off = total;
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
        std::unique_ptr<cuzk_k_circuit> c(new cuzk_k_circuit{});
        c->device = device;
        c->block = p;
        c->bytes = total;
        struct free_on_error {
            dev_ctx *ctx;
            cuzk_k_circuit *c;
            ~free_on_error()
            {
                if (c) counted_free(ctx, c->block, c->bytes);
            }
        } guard{ctx, c.get()};
        char *base = static_cast<char *>(p);
        c->rows = d->rows;
        c->num_inputs = d->num_inputs;
        c->num_aux = d->num_aux;
        c->num_constants = d->num_constants;
        c->constants = base + consts_off;
        for (int k = 0; k < 3; k++) {
            c->m[k].nnz = ms[k]->nnz;
            c->m[k].row_starts = reinterpret_cast<uint32_t *>(base + off[k][0]);
            c->m[k].columns = reinterpret_cast<uint32_t *>(base + off[k][1]);
            c->m[k].codes = reinterpret_cast<uint32_t *>(base + off[k][2]);
            CUZK_CK(cudaMemcpyAsync(c->m[k].row_starts, ms[k]->row_starts, (d->rows + 1) * 4, cudaMemcpyHostToDevice,
                                    ctx->s_comp));
            if (ms[k]->nnz) {
                CUZK_CK(cudaMemcpyAsync(c->m[k].columns, ms[k]->columns, ms[k]->nnz * 4, cudaMemcpyHostToDevice,
                                        ctx->s_comp));
                CUZK_CK(cudaMemcpyAsync(c->m[k].codes, ms[k]->coefficients, ms[k]->nnz * 4, cudaMemcpyHostToDevice,
                                        ctx->s_comp));
            }
        }
        if (d->num_constants)
            CUZK_CK(cudaMemcpyAsync(c->constants, d->constants, d->num_constants * 32, cudaMemcpyHostToDevice,
                                    ctx->s_comp));
        dbuf flag;
        CUZK_CK(flag.alloc(ctx, sizeof(int)));
        CUZK_CK(cudaMemsetAsync(flag.p, 0, sizeof(int), ctx->s_comp));
        const size_t cols = d->num_inputs + d->num_aux, codes = 2 + d->num_constants;
        for (int k = 0; k < 3; k++) {
            k_check_rows<<<blocks_for(d->rows, ctx->sm_count), 256, 0, ctx->s_comp>>>(c->m[k].row_starts, d->rows,
                                                                                     c->m[k].nnz, flag.as<int>());
            CUZK_CKL();
            if (c->m[k].nnz) {
                k_check_terms<<<blocks_for(c->m[k].nnz, ctx->sm_count), 256, 0, ctx->s_comp>>>(
                    c->m[k].columns, c->m[k].codes, c->m[k].nnz, cols, codes, flag.as<int>());
                CUZK_CKL();
            }
        }
        int bad = 0;
        CUZK_TRY(read_flag(ctx, flag, &bad));
        if (bad & 1) return arg_err(CUZK_K_ERR_RANGE, "circuit_upload: row offsets not increasing or not ending at nnz");
        if (bad & 2) return arg_err(CUZK_K_ERR_RANGE, "circuit_upload: a column or coefficient code out of range");
        CUZK_PHASE(ctx, CUZK_K_PHASE_UPLOAD, 0);
        guard.c = nullptr;
        *out = c.release();
        return ok();
    });
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
    CUZK_CK(z.inputs.alloc(ctx, w->num_inputs * 32));
    CUZK_CK(cudaMemcpyAsync(z.inputs.p, w->inputs, w->num_inputs * 32, cudaMemcpyHostToDevice, s));
    CUZK_CK(z.aux.alloc(ctx, n * 32));
    if (!n) return ok();
    if (!w->bit_mask) {
        CUZK_CK(cudaMemcpyAsync(z.aux.p, w->others, n * 32, cudaMemcpyHostToDevice, s));
        return ok();
    }
    const size_t words = (n + 63) / 64;
    dbuf mask, vals, before, others, flag;
    CUZK_CK(mask.alloc(ctx, words * 8));
    CUZK_CK(vals.alloc(ctx, words * 8));
    CUZK_CK(before.alloc(ctx, words * 4));
    CUZK_CK(others.alloc(ctx, w->num_others * 32));
    CUZK_CK(flag.alloc(ctx, sizeof(int)));
    CUZK_CK(cudaMemcpyAsync(mask.p, w->bit_mask, words * 8, cudaMemcpyHostToDevice, s));
    CUZK_CK(cudaMemcpyAsync(vals.p, w->bit_values, words * 8, cudaMemcpyHostToDevice, s));
    CUZK_CK(cudaMemcpyAsync(before.p, w->others_before, words * 4, cudaMemcpyHostToDevice, s));
    if (w->num_others) CUZK_CK(cudaMemcpyAsync(others.p, w->others, w->num_others * 32, cudaMemcpyHostToDevice, s));
    CUZK_CK(cudaMemsetAsync(flag.p, 0, sizeof(int), s));
    k_expand<<<blocks_for(n, ctx->sm_count), 256, 0, s>>>(z.aux.as<fr_t>(), n, mask.as<uint64_t>(), vals.as<uint64_t>(),
                                                          before.as<uint32_t>(), others.as<fr_t>(), w->num_others,
                                                          flag.as<int>());
    CUZK_CKL();
    int bad = 0;
    CUZK_TRY(read_flag(ctx, flag, &bad));
    if (bad) return arg_err(CUZK_K_ERR_RANGE, "witness: others_before does not agree with bit_mask");
    return ok();
}

cuzk_kresult evaluate_matrix(dev_ctx *ctx, const abc_eval &e, int k, void *out_v, size_t m)
{
    fr_t *out = static_cast<fr_t *>(out_v);
    const cuzk_k_circuit *c = e.circuit;
    const auto &mx = c->m[k];
    k_spmv<<<blocks_for(m, ctx->sm_count), 256, 0, ctx->s_comp>>>(
        out, c->rows, m, mx.row_starts, mx.columns, mx.codes, static_cast<const fr_t *>(c->constants),
        e.z->inputs.as<fr_t>(), (uint32_t)c->num_inputs, e.z->aux.as<fr_t>());
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
        if (aux_out && c->num_aux)
            CUZK_CK(cudaMemcpyAsync(aux_out, z.aux.p, c->num_aux * 32, cudaMemcpyDeviceToHost, ctx->s_comp));
        CUZK_CK(cudaStreamSynchronize(ctx->s_comp));
        return ok();
    });
}

}  // namespace cuzk
