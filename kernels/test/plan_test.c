/* Unit test of the MSM plan (msm/plan.h), host-only: no GPU, no CUDA toolkit.
 * Built and run by tests/kernel_plan.rs (`cargo test`); standalone:
 *   cc -O2 -I kernels kernels/test/plan_test.c -o plan_test && ./plan_test
 * Prints one line per failed check and exits 1 if any failed. */
#include "msm/plan.h"
#include <stdio.h>
#include <stdint.h>

static int failures, checks;
#define CHECK(cond, ...)                                      \
    do {                                                      \
        checks++;                                             \
        if (!(cond)) {                                        \
            failures++;                                       \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                              \
            printf("\n");                                     \
        }                                                     \
    } while (0)

static const size_t G1 = 48, G2 = 96;
static const size_t HUGE_ROOM = (size_t)1 << 40; /* 1 TiB: any window fits */

/* The first model's cost, written from its definition: windows x (entries + 2.8 x buckets). */
static double base_cost(size_t nbig, int c)
{
    const int nwin = (256 + c - 1) / c;
    return (double)nwin * ((double)nbig + 2.8 * (double)((size_t)1 << (c - 1)));
}

static void windows_cover_the_scalar(void)
{
    int c;
    for (c = CUZK_PLAN_C_MIN; c <= CUZK_PLAN_C_MAX; c++) {
        const int w = cuzk_plan_window_count(c);
        CHECK(w * c >= 256 && (w - 1) * c < 256, "c = %d: %d windows", c, w);
    }
    CHECK(cuzk_plan_window_count(16) == 16 && cuzk_plan_window_count(20) == 13, "16 and 20 bits");
}

static void forced_window_wins_when_valid(void)
{
    int f;
    for (f = CUZK_PLAN_C_MIN; f <= CUZK_PLAN_C_MAX; f++)
        CHECK(cuzk_plan_choose_c(G1, 1000, f, 0) == f && cuzk_plan_choose_c(G2, (size_t)1 << 27, f, 0) == f,
              "forced %d", f);
    /* out of range: ignored, the model decides */
    CHECK(cuzk_plan_choose_c(G1, 1000, 3, 0) == cuzk_plan_choose_c(G1, 1000, 0, 0), "forced 3");
    CHECK(cuzk_plan_choose_c(G1, 1000, 21, 0) == cuzk_plan_choose_c(G1, 1000, 0, 0), "forced 21");
    CHECK(cuzk_plan_choose_c(G1, 1000, -1, 0) == cuzk_plan_choose_c(G1, 1000, 0, 0), "forced -1");
}

static void narrow_windows_minimise_the_first_model(void)
{
    size_t nbig;
    int prev = CUZK_PLAN_C_MIN;
    for (nbig = 1; nbig < CUZK_PLAN_WIDE_MIN_BIG; nbig = nbig * 3 / 2 + 1) {
        const int c = cuzk_plan_choose_c(G1, nbig, 0, HUGE_ROOM);
        int k;
        CHECK(c >= CUZK_PLAN_C_MIN && c <= CUZK_PLAN_C_BASE_MAX, "nbig %zu: c = %d", nbig, c);
        for (k = CUZK_PLAN_C_MIN; k <= CUZK_PLAN_C_BASE_MAX; k++)
            CHECK(base_cost(nbig, c) <= base_cost(nbig, k), "nbig %zu: c = %d costs more than %d", nbig, c, k);
        CHECK(c >= prev, "nbig %zu: c = %d after %d (more scalars, narrower windows)", nbig, c, prev);
        CHECK(c == cuzk_plan_choose_c(G2, nbig, 0, HUGE_ROOM), "nbig %zu: G1 and G2 differ below the wide range", nbig);
        prev = c;
    }
    /* the model's documented points: 16 bits from about 2^20 big scalars on, through 2^24 */
    CHECK(cuzk_plan_choose_c(G1, (size_t)1 << 21, 0, HUGE_ROOM) == 16, "2^21");
    CHECK(cuzk_plan_choose_c(G1, (size_t)1 << 24, 0, HUGE_ROOM) == 16, "2^24 G1");
    CHECK(cuzk_plan_choose_c(G2, (size_t)1 << 24, 0, HUGE_ROOM) == 16, "2^24 G2");
    CHECK(cuzk_plan_choose_c(G1, 1 << 12, 0, HUGE_ROOM) < 16, "2^12");
}

static void wide_windows_only_where_they_fit(void)
{
    const size_t n26 = (size_t)1 << 26;
    int g;
    /* 2^26 big scalars, room to spare: the wide model picks 20 bits (13 windows) in both groups */
    CHECK(cuzk_plan_choose_c(G1, n26, 0, HUGE_ROOM) == 20, "2^26 G1: %d", cuzk_plan_choose_c(G1, n26, 0, HUGE_ROOM));
    CHECK(cuzk_plan_choose_c(G2, n26, 0, HUGE_ROOM) == 20, "2^26 G2: %d", cuzk_plan_choose_c(G2, n26, 0, HUGE_ROOM));
    /* no room: never wider than 16 */
    CHECK(cuzk_plan_choose_c(G1, n26, 0, 0) == 16 && cuzk_plan_choose_c(G2, n26, 0, 0) == 16, "2^26, no room");
    /* whatever the room, a window past 16 bits fits it with the spare */
    for (g = 0; g < 2; g++) {
        const size_t fb = g ? G2 : G1;
        size_t nbig, room;
        for (nbig = CUZK_PLAN_WIDE_MIN_BIG; nbig <= ((size_t)1 << 29); nbig *= 2)
            for (room = (size_t)1 << 30; room <= ((size_t)1 << 38); room += room / 2) {
                const int c = cuzk_plan_choose_c(fb, nbig, 0, room);
                CHECK(c >= 16 && c <= CUZK_PLAN_C_MAX, "c = %d", c);
                if (c > 16)
                    CHECK(cuzk_plan_window_mem(fb, nbig, c) + CUZK_PLAN_WIDE_SPARE <= room,
                          "fb %zu nbig %zu room %zu: c = %d does not fit", fb, nbig, room, c);
            }
    }
    /* just below the wide range the room is never read */
    CHECK(cuzk_plan_choose_c(G1, CUZK_PLAN_WIDE_MIN_BIG - 1, 0, HUGE_ROOM) == 16, "below the wide range");
}

static void memory_of_a_window(void)
{
    const size_t n25 = (size_t)1 << 25, n26 = (size_t)1 << 26;
    /* sort arrays: 16 bytes an entry, an entry a window and scalar; buckets: 4 field elements */
    CHECK(cuzk_plan_window_mem(G1, 1000, 16) == 16 * 1000 * 16 + 16 * ((size_t)1 << 15) * 192, "G1 1000 @16");
    CHECK(cuzk_plan_window_mem(G2, 1000, 8) == 32 * 1000 * 16 + 32 * 128 * 384, "G2 1000 @8");
    /* a part of the sort holds at most 2^31 - 1 entries */
    CHECK(cuzk_plan_max_part(16) * 16 <= 0x7fffffffu && (cuzk_plan_max_part(16) + 1) * 16 > 0x7fffffffu, "max part");
    CHECK(cuzk_plan_window_mem(G1, (size_t)1 << 30, 16) == cuzk_plan_window_mem(G1, cuzk_plan_max_part(16), 16),
          "parts cap the sort's arrays");
    /* 20 bits need less memory than 16 from 2^25 big scalars on in G1, from 2^26 in G2 */
    CHECK(cuzk_plan_window_mem(G1, n25, 20) < cuzk_plan_window_mem(G1, n25, 16), "G1 2^25");
    CHECK(cuzk_plan_window_mem(G2, n25, 20) > cuzk_plan_window_mem(G2, n25, 16), "G2 2^25");
    CHECK(cuzk_plan_window_mem(G2, n26, 20) < cuzk_plan_window_mem(G2, n26, 16), "G2 2^26");
}

static void stream_chunks(void)
{
    const size_t gib = (size_t)1 << 30;
    size_t avail;
    int g;
    /* forced: whole density words, at least the minimum */
    CHECK(cuzk_plan_stream_chunk_bases(G1, 100000, 0) == 100000 / 64 * 64, "forced 100000");
    CHECK(cuzk_plan_stream_chunk_bases(G1, 100, 0) == CUZK_PLAN_STREAM_MIN_CHUNK, "forced 100");
    /* nothing beyond the reserve: the minimum */
    CHECK(cuzk_plan_stream_chunk_bases(G2, 0, CUZK_PLAN_STREAM_RESERVE) == CUZK_PLAN_STREAM_MIN_CHUNK, "no memory");
    for (g = 0; g < 2; g++) {
        const size_t fb = g ? G2 : G1;
        for (avail = gib; avail <= 64 * gib; avail *= 2) {
            const size_t c = cuzk_plan_stream_chunk_bases(fb, 0, avail);
            const size_t per = cuzk_plan_stream_bytes_per_base(fb);
            CHECK(c % 64 == 0 && c >= CUZK_PLAN_STREAM_MIN_CHUNK, "avail %zu: %zu", avail, c);
            CHECK(c * per + CUZK_PLAN_STREAM_RESERVE <= avail, "avail %zu: %zu bases overflow", avail, c);
            CHECK((c + 64) * per + CUZK_PLAN_STREAM_RESERVE > avail, "avail %zu: %zu bases leave a word unused", avail, c);
        }
    }
    /* two staged copies of an affine base, 40 bytes a scalar (4 a base), the sort's 256 */
    CHECK(cuzk_plan_stream_bytes_per_base(G1) == 2 * 96 + 160 + 256, "G1 bytes per base");
    CHECK(cuzk_plan_stream_bytes_per_base(G2) == 2 * 192 + 160 + 256, "G2 bytes per base");
}

/* The kept-buckets model, written from its definition: windows x (entries x (1 + 5/e) + (chunks
 * + bucket cost) x buckets), e = a bucket's entries from one chunk. */
static double kept_cost(size_t fb, size_t nbig, size_t chunks, int c)
{
    const int nwin = (256 + c - 1) / c;
    const double buckets = (double)((size_t)1 << (c - 1)), e = (double)nbig / (double)chunks / buckets;
    return (double)nwin * ((double)nbig * (1.0 + 5.0 / e) + ((double)chunks + (fb == G1 ? 4.0 : 3.5)) * buckets);
}

static void kept_buckets_window(void)
{
    const size_t n27 = ((size_t)1 << 27) - 1;
    const size_t sizes[] = {1000, 100000, (size_t)2600000, (size_t)1 << 24, n27};
    const size_t chunk_counts[] = {1, 3, 7, 10};
    size_t i, j;
    int g, f, k;
    /* the buckets' bytes: 4 field elements a bucket, 2^(c-1) a window */
    CHECK(cuzk_plan_bucket_mem(G1, 16) == 16 * ((size_t)1 << 15) * 192, "G1 @16");
    CHECK(cuzk_plan_bucket_mem(G2, 20) == 13 * ((size_t)1 << 19) * 384, "G2 @20");
    for (f = CUZK_PLAN_C_MIN; f <= CUZK_PLAN_C_MAX; f++)
        CHECK(cuzk_plan_choose_c_kept(G1, n27, 7, f, 0) == f, "forced %d", f);
    /* the H MSM of a 2^27 proof streamed in 7 chunks: 14 or 13 windows (the resident MSM's
     * 13); each chunk alone (19 M big scalars) would take 16 */
    CHECK(cuzk_plan_choose_c_kept(G1, n27, 7, 0, HUGE_ROOM) >= 19, "2^27 in 7: %d",
          cuzk_plan_choose_c_kept(G1, n27, 7, 0, HUGE_ROOM));
    CHECK(cuzk_plan_choose_c(G1, n27 / 7, 0, HUGE_ROOM) == 16, "a chunk alone");
    /* few big scalars a chunk (a Filecoin aux MSM: ~2% of 130 M in 6 chunks): narrower */
    CHECK(cuzk_plan_choose_c_kept(G1, 2600000, 6, 0, HUGE_ROOM) < 16, "2.6 M in 6: %d",
          cuzk_plan_choose_c_kept(G1, 2600000, 6, 0, HUGE_ROOM));
    for (g = 0; g < 2; g++) {
        const size_t fb = g ? G2 : G1;
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (j = 0; j < sizeof chunk_counts / sizeof chunk_counts[0]; j++) {
                const size_t nbig = sizes[i], chunks = chunk_counts[j];
                const size_t rooms[] = {HUGE_ROOM, cuzk_plan_bucket_mem(fb, 16), cuzk_plan_bucket_mem(fb, 12) + 1, 0};
                size_t r;
                for (r = 0; r < sizeof rooms / sizeof rooms[0]; r++) {
                    const int c = cuzk_plan_choose_c_kept(fb, nbig, chunks, 0, rooms[r]);
                    CHECK(c >= CUZK_PLAN_C_MIN && c <= CUZK_PLAN_C_MAX, "c = %d", c);
                    CHECK(c == CUZK_PLAN_C_MIN || cuzk_plan_bucket_mem(fb, c) <= rooms[r],
                          "nbig %zu, room %zu: c = %d does not fit", nbig, rooms[r], c);
                    /* no window that fits and lowers the windows is cheaper */
                    for (k = CUZK_PLAN_C_MIN; k <= CUZK_PLAN_C_MAX; k++)
                        if (cuzk_plan_bucket_mem(fb, k) <= rooms[r] && (k == CUZK_PLAN_C_MIN ||
                            cuzk_plan_window_count(k) != cuzk_plan_window_count(k - 1)))
                            CHECK(kept_cost(fb, nbig, chunks, c) <= kept_cost(fb, nbig, chunks, k),
                                  "nbig %zu in %zu: c = %d costs more than %d", nbig, chunks, c, k);
                }
            }
    }
}

int main(void)
{
    windows_cover_the_scalar();
    forced_window_wins_when_valid();
    narrow_windows_minimise_the_first_model();
    wide_windows_only_where_they_fit();
    memory_of_a_window();
    stream_chunks();
    kept_buckets_window();
    printf("plan_test: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
