/* cuzk kernels, MSM: the plan of one MSM — its window size, the parts of its big-scalar list,
 * the device memory they take, and the chunk size of a streamed MSM. Host-only plain C (valid
 * C++ too), so it is unit-tested without a GPU: tests/kernel_plan.rs compiles and runs
 * kernels/test/plan_test.c. The drivers (msm/run.cuh, msm/stream.cuh) call it with the field's
 * size in bytes: 48 for G1 (Fp), 96 for G2 (Fp2).
 *
 * Window size c (bits; 256/c windows, 2^(c-1) buckets a window with signed digits):
 *  - up to 16 bits, the cost model nwin * (points + 2.8 * buckets), which picks c = 16 from
 *    about 2^20 big scalars on;
 *  - past 16 bits (from CUZK_PLAN_WIDE_MIN_BIG big scalars on), a model fitted on the H200 with
 *    the pair rounds (kernels/NOTES.md): a sorted entry costs about the same at any c while a
 *    bucket holds many, and up to 15% more when it holds only 32-64 (e = entries per bucket: the
 *    rounds merge less); a bucket of the reduction costs bucket_cost entries:
 *    cost(c) = nwin * (nbig * (1 + 5/e) + bucket_cost * 2^(c-1)). It picks c = 20 (13 windows)
 *    at 2^26 big scalars. A wider window is taken only if its sort arrays and buckets fit the
 *    room the caller has (what the device or the memory limit still holds) with
 *    CUZK_PLAN_WIDE_SPARE to spare: a wider window never turns an MSM that fits into one that
 *    does not;
 *  - CUZK_K_WINDOW_BITS (the caller's `forced`, 4..20) overrides both, for benchmarks and tests.
 */
#ifndef CUZK_MSM_PLAN_H
#define CUZK_MSM_PLAN_H

#include <stddef.h>

#define CUZK_PLAN_C_MIN 4
#define CUZK_PLAN_C_BASE_MAX 16
#define CUZK_PLAN_C_MAX 20
/* Big scalars from which a window wider than 16 bits is considered (at 2^24, c = 16 measured as
 * fast as 18-20). */
#define CUZK_PLAN_WIDE_MIN_BIG ((size_t)1 << 25)
/* Device bytes a wider window must leave free beside its arrays. */
#define CUZK_PLAN_WIDE_SPARE ((size_t)512 << 20)
/* A streamed MSM keeps this much of its memory for the bucket arrays and cub's scratch. */
#define CUZK_PLAN_STREAM_RESERVE ((size_t)768 << 20)
/* Bases per streamed chunk at least (and chunks are whole 64-base density words). */
#define CUZK_PLAN_STREAM_MIN_CHUNK ((size_t)4096)

/* Windows of c bits over a 256-bit scalar. */
static inline int cuzk_plan_window_count(int c) { return (256 + c - 1) / c; }

/* Big scalars per part of the sort: its (key, value) arrays are indexed with 32-bit ints (cub),
 * so the big list goes in parts of at most 2^31 / nwin scalars (2^27 at c = 16). */
static inline size_t cuzk_plan_max_part(size_t nwin) { return (size_t)0x7fffffffu / nwin; }

/* Device bytes of the sort's four arrays (4 bytes an entry, an entry a window and scalar) and the
 * buckets (XYZZ points: 4 field elements) for nbig big scalars at window c. */
static inline size_t cuzk_plan_window_mem(size_t field_bytes, size_t nbig, int c)
{
    const size_t nwin = (size_t)cuzk_plan_window_count(c);
    const size_t max_part = cuzk_plan_max_part(nwin);
    const size_t part = nbig < max_part ? nbig : max_part;
    return nwin * part * 16 + nwin * ((size_t)1 << (c - 1)) * 4 * field_bytes;
}

/* The reduction's cost of a bucket, in sorted entries (fitted per group). */
static inline double cuzk_plan_bucket_cost(size_t field_bytes) { return field_bytes == 48 ? 4.0 : 3.5; }

static inline double cuzk_plan_wide_cost(size_t field_bytes, size_t nbig, int c)
{
    const double buckets = (double)(1u << (c - 1)), per_bucket = (double)nbig / buckets;
    return (double)cuzk_plan_window_count(c) *
           ((double)nbig * (1.0 + 5.0 / per_bucket) + cuzk_plan_bucket_cost(field_bytes) * buckets);
}

/* The window size for nbig big scalars: `forced` when it is in 4..20, else the models above;
 * `room` is the device memory at hand (only read for nbig >= CUZK_PLAN_WIDE_MIN_BIG). */
static inline int cuzk_plan_choose_c(size_t field_bytes, size_t nbig, int forced, size_t room)
{
    int c, best_c = CUZK_PLAN_C_MIN;
    double best = 1e300;
    if (forced >= CUZK_PLAN_C_MIN && forced <= CUZK_PLAN_C_MAX) return forced;
    for (c = CUZK_PLAN_C_MIN; c <= CUZK_PLAN_C_BASE_MAX; c++) {
        const double cost = (double)cuzk_plan_window_count(c) * ((double)nbig + 2.8 * (double)(1u << (c - 1)));
        if (cost < best) {
            best = cost;
            best_c = c;
        }
    }
    if (best_c < CUZK_PLAN_C_BASE_MAX || nbig < CUZK_PLAN_WIDE_MIN_BIG) return best_c;
    best = cuzk_plan_wide_cost(field_bytes, nbig, CUZK_PLAN_C_BASE_MAX);
    for (c = CUZK_PLAN_C_BASE_MAX + 1; c <= CUZK_PLAN_C_MAX; c++) {
        const double cost = cuzk_plan_wide_cost(field_bytes, nbig, c);
        if (cuzk_plan_window_count(c) == cuzk_plan_window_count(c - 1)) continue; /* more buckets, no fewer windows */
        if (cost < best && cuzk_plan_window_mem(field_bytes, nbig, c) + CUZK_PLAN_WIDE_SPARE <= room) {
            best = cost;
            best_c = c;
        }
    }
    return best_c;
}

/* Device bytes of the buckets of one MSM at window c (XYZZ points: 4 field elements each). */
static inline size_t cuzk_plan_bucket_mem(size_t field_bytes, int c)
{
    return (size_t)cuzk_plan_window_count(c) * ((size_t)1 << (c - 1)) * 4 * field_bytes;
}

/* The window of a streamed MSM whose buckets are kept across its chunks (msm/stream.cuh): every
 * chunk's sorted entries go to fresh buckets, which one coalesced pass adds into the kept ones;
 * those are reduced once, after the last chunk. nbig big scalars over `chunks` chunks; a bucket
 * gets e = nbig / chunks / 2^(c-1) entries from one chunk (the pair rounds' and the walk's cost
 * per entry, as in the wide model, grows when e is small); each chunk pays about an entry a
 * bucket for the addition, the reduction bucket_cost a bucket once:
 * cost(c) = nwin * (nbig * (1 + 5/e) + (chunks + bucket_cost) * 2^(c-1)), c in 4..20, the
 * buckets within max_bytes (c = 4 if none is). `forced` as in cuzk_plan_choose_c. At 2^27 dense
 * scalars in 7 chunks it picks 19 (14 windows; 20, the resident MSM's 13, costs 0.5% more and
 * twice the buckets) where each chunk alone picks 16. */
static inline int cuzk_plan_choose_c_kept(size_t field_bytes, size_t nbig, size_t chunks, int forced,
                                          size_t max_bytes)
{
    int c, best_c = CUZK_PLAN_C_MIN;
    double best = 1e300;
    if (forced >= CUZK_PLAN_C_MIN && forced <= CUZK_PLAN_C_MAX) return forced;
    if (chunks == 0) chunks = 1;
    for (c = CUZK_PLAN_C_MIN; c <= CUZK_PLAN_C_MAX; c++) {
        const double buckets = (double)((size_t)1 << (c - 1));
        const double e = (double)nbig / (double)chunks / buckets;
        double cost;
        if (c > CUZK_PLAN_C_MIN && cuzk_plan_window_count(c) == cuzk_plan_window_count(c - 1)) continue;
        if (cuzk_plan_bucket_mem(field_bytes, c) > max_bytes) break; /* wider only takes more */
        cost = (double)cuzk_plan_window_count(c) *
               ((double)nbig * (1.0 + 5.0 / (e > 1e-9 ? e : 1e-9)) +
                ((double)chunks + cuzk_plan_bucket_cost(field_bytes)) * buckets);
        if (cost < best) {
            best = cost;
            best_c = c;
        }
    }
    return best_c;
}

/* Device bytes a streamed chunk needs per base (and per scalar, up to 4 scalars a base): two
 * staging copies of the affine base (2 field elements), the classified scalar lists (40 bytes a
 * scalar) and the sort's keys and values (4 arrays x 4 bytes x 16 windows at c = 16). */
static inline size_t cuzk_plan_stream_bytes_per_base(size_t field_bytes) { return 2 * 2 * field_bytes + 4 * 40 + 256; }

/* Bases per chunk of a streamed MSM with `avail` device bytes at hand (less the reserve), or
 * `forced_points` (CUZK's chunk_points) when non-zero; whole density words, at least
 * CUZK_PLAN_STREAM_MIN_CHUNK. */
static inline size_t cuzk_plan_stream_chunk_bases(size_t field_bytes, size_t forced_points, size_t avail)
{
    size_t c = forced_points;
    if (!c)
        c = avail > CUZK_PLAN_STREAM_RESERVE
                ? (avail - CUZK_PLAN_STREAM_RESERVE) / cuzk_plan_stream_bytes_per_base(field_bytes)
                : 0;
    c &= ~(size_t)63;
    return c > CUZK_PLAN_STREAM_MIN_CHUNK ? c : CUZK_PLAN_STREAM_MIN_CHUNK;
}

#endif /* CUZK_MSM_PLAN_H */
