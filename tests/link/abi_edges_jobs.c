/* The C ABI's bad inputs and job lifecycles, from C (tests/link/run.sh runs it, also under
 * valgrind; tests/ffi_edges.rs checks the enum and count edges from Rust):
 *   1. enum values out of range (cuzk_engine_config's backend / pacer / memory, the backend of
 *      cuzk_prover_new, the check of cuzk_params_load, a pool's memory, the log level) are
 *      CUZK_STATUS_INVALID_ARGUMENT naming the field, from cuzk_engine_new and
 *      cuzk_filecoin_configure alike;
 *   2. counts past their bounds (gpu_workers_per_backend, synthesis_workers, num_gpus,
 *      budget_timeout_ms, a pool's wait_ms) are INVALID_ARGUMENT at once (no abort, no hang);
 *      counts within them that memory cannot hold cost nothing until used, then ALLOCATION: a
 *      constraint system of 2^30 or 2^32 - 1 constraints without terms is made at once, and
 *      the development setup of one with 2^32 - 2 aux variables is ALLOCATION at once (where
 *      the host's memory and swap are below the 768 GiB its parameters would take);
 *   3. a job's lifecycle under concurrent calls: submit -> on_progress, then wait from two
 *      threads, progress polled and cancel from others; freed; and an engine freed mid-job:
 *      exactly one finished event with done + failed == total, the second wait refused, no
 *      callback once cuzk_job_free has returned;
 *   4. with the `filecoin` library: a Window PoSt's vanilla proofs out of ascending sector
 *      order (or a sector twice) are INVALID_ARGUMENT naming the first out of order; and with
 *      a winning PoSt fixture (argv[2]: the vanilla proof's
 *      bytes, argv[3]: the parameter cache): SnapDeals with an unknown update proof, zero or
 *      wrong partition counts, undecodable vanilla bytes, empty / non-minimal / trailing-byte
 *      CIDs; PoSt with zero sectors, too many, a Winning type on the Window call, a truncated
 *      and a bit-flipped vanilla proof; and the lifecycle of a real Winning PoSt job. Without
 *      the feature the proof calls answer CUZK_STATUS_UNSUPPORTED. With CUZK_EDGES_NO_PROOFS
 *      set (non-empty), the calls that prove (the bit flips, the real job) are left out: CI
 *      runs it so under valgrind.
 * Usage: abi_edges_jobs ROUNDS [VANILLA PARAM_CACHE]. Exit status 0 when every promise holds. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuzk.h"

static int failures = 0;

static void check(bool ok, const char *what, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "ok" : "FAILED", what, detail ? " - " : "", detail ? detail : "");
  if (!ok) failures++;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* A refusal: status `want`, a message containing `needle`; the message is freed. */
static void refused(enum cuzk_status st, char *err, enum cuzk_status want, const char *needle, const char *what) {
  char detail[512];
  snprintf(detail, sizeof detail, "status %d: %s", (int)st, err ? err : "(no message)");
  check(st == want && err && (!needle || strstr(err, needle)), what, detail);
  cuzk_string_free(err);
}

static struct cuzk_engine_config cpu_config(void) {
  struct cuzk_engine_config c = cuzk_engine_config_default();
  c.backend = CUZK_BACKEND_CPU;
  c.memory = CUZK_POOL_MEMORY_HEAP;
  c.synthesis_workers = 1;
  c.budget_bytes = 1 << 28;
  return c;
}

/* Both calls that take an engine configuration refuse `c`, naming `field`. */
static void config_refused(const struct cuzk_engine_config *c, const char *field, const char *what) {
  struct cuzk_engine *engine = NULL;
  char *err = NULL;
  time_t start = time(NULL);
  enum cuzk_status st = cuzk_engine_new(c, &engine, &err);
  char label[256];
  snprintf(label, sizeof label, "cuzk_engine_new: %s", what);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, field, label);
  check(engine == NULL, "and no engine is written", NULL);
  cuzk_engine_free(engine);
  err = NULL;
  st = cuzk_filecoin_configure(c, &err);
  snprintf(label, sizeof label, "cuzk_filecoin_configure: %s", what);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, field, label);
  check(time(NULL) - start < 10, "refused at once", NULL);
}

static void enum_and_count_edges(void) {
  struct cuzk_engine_config c = cpu_config();
  c.backend = 7;
  config_refused(&c, "backend", "backend = 7");
  c = cpu_config();
  c.pacer = 9;
  config_refused(&c, "pacer", "pacer = 9");
  c = cpu_config();
  c.memory = 5;
  config_refused(&c, "memory", "memory = 5");
  c = cpu_config();
  c.gpu_workers_per_backend = UINT32_MAX;
  config_refused(&c, "gpu_workers_per_backend", "gpu_workers_per_backend = UINT32_MAX");
  c = cpu_config();
  c.gpu_workers_per_backend = CUZK_MAX_GPU_WORKERS_PER_BACKEND + 1;
  config_refused(&c, "gpu_workers_per_backend", "gpu_workers_per_backend = CUZK_MAX_GPU_WORKERS_PER_BACKEND + 1");
  c = cpu_config();
  c.synthesis_workers = UINT32_MAX;
  config_refused(&c, "synthesis_workers", "synthesis_workers = UINT32_MAX");
  c = cpu_config();
  c.backend = CUZK_BACKEND_GPU;
  c.num_gpus = UINT32_MAX;
  config_refused(&c, "num_gpus", "num_gpus = UINT32_MAX (GPU backend)");
  c = cpu_config();
  c.budget_timeout_ms = UINT64_MAX;
  config_refused(&c, "budget_timeout_ms", "budget_timeout_ms = UINT64_MAX");

  char *err = NULL;
  struct cuzk_prover *prover = NULL;
  enum cuzk_status st = cuzk_prover_new(7, 0, NULL, &prover, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "backend", "cuzk_prover_new(7, ...)");
  check(prover == NULL, "and no prover is written", NULL);
  err = NULL;
  struct cuzk_params *params = NULL;
  st = cuzk_params_load("/nonexistent/params", 2, &params, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "check", "cuzk_params_load(path, 2, ...)");
  err = NULL;
  struct cuzk_pool_config pc = cuzk_pool_config_default();
  pc.memory = 2;
  struct cuzk_pool *pool = NULL;
  st = cuzk_pool_new(&pc, &pool, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "memory", "cuzk_pool_new with memory = 2");
  err = NULL;
  pc = cuzk_pool_config_default();
  pc.memory = CUZK_POOL_MEMORY_HEAP;
  pc.wait_ms = UINT64_MAX;
  st = cuzk_pool_new(&pc, &pool, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "wait_ms", "cuzk_pool_new with wait_ms = UINT64_MAX");
  check(pool == NULL, "and no pool is written", NULL);
  err = NULL;
  st = cuzk_set_log_callback(NULL, NULL, 6, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "max_level", "cuzk_set_log_callback(NULL, NULL, 6)");
}

/* The host's memory and swap in bytes (/proc/meminfo; 0 where it cannot be read). */
static unsigned long long host_memory_and_swap(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  unsigned long long total = 0, kib = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "MemTotal: %llu kB", &kib) == 1 || sscanf(line, "SwapTotal: %llu kB", &kib) == 1) total += kib;
  }
  if (f) fclose(f);
  return total * 1024;
}

static void memory_count_edges(void) {
  const size_t big = UINT32_MAX;
  const size_t counts[2] = {(size_t)1 << 30, big};
  for (int i = 0; i < 2; i++) {
    struct cuzk_r1cs *r1cs = NULL;
    char *err = NULL;
    time_t start = time(NULL);
    enum cuzk_status st = cuzk_r1cs_new(0, 0, counts[i], NULL, 0, NULL, 0, NULL, 0, &r1cs, &err);
    bool satisfied = false;
    size_t first = 0;
    if (st == CUZK_STATUS_OK) st = cuzk_r1cs_is_satisfied(r1cs, NULL, 0, NULL, 0, &satisfied, &first, &err);
    check(st == CUZK_STATUS_OK && satisfied && first == counts[i] && time(NULL) - start < 10,
          i == 0 ? "an R1CS of 2^30 constraints without terms: made at once, every constraint holds"
                 : "an R1CS of 2^32 - 1 constraints without terms: made at once, every constraint holds",
          err);
    cuzk_string_free(err);
    cuzk_r1cs_free(r1cs);
  }
  struct cuzk_r1cs *r1cs = NULL;
  char *err = NULL;
  enum cuzk_status st = cuzk_r1cs_new(0, 0, big + 1, NULL, 0, NULL, 0, NULL, 0, &r1cs, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "constraints", "an R1CS of 2^32 constraints");
  err = NULL;
  st = cuzk_r1cs_new(0, big - 1, big, NULL, 0, NULL, 0, NULL, 0, &r1cs, &err);
  check(st == CUZK_STATUS_OK, "an R1CS of 2^32 - 1 constraints and 2^32 - 2 aux variables", err);
  cuzk_string_free(err);
  if (st != CUZK_STATUS_OK) return;
  /* H (2^32 - 1 points of 96 bytes) and L (2^32 - 2) alone: some 768 GiB. */
  if (host_memory_and_swap() == 0 || host_memory_and_swap() >= 96ull << 33) {
    printf("the development setup of 2^32 - 2 aux variables: skipped (the host's memory could hold it)\n");
  } else {
    struct cuzk_params *params = NULL;
    time_t start = time(NULL);
    err = NULL;
    st = cuzk_params_generate_insecure_for_development(r1cs, 1, &params, &err);
    check(time(NULL) - start < 10, "its development setup is refused at once", NULL);
    check(params == NULL, "and no parameters are written", NULL);
    refused(st, err, CUZK_STATUS_ALLOCATION, "memory and swap",
            "the development setup of 2^32 - 1 constraints and 2^32 - 2 aux variables is ALLOCATION");
  }
  cuzk_r1cs_free(r1cs);
}

/* ---- job lifecycles ---------------------------------------------------------------------- */

/* What a job's progress callback saw. */
struct watch {
  atomic_int events;
  atomic_int finished_events;
  atomic_int after_free;
  atomic_bool freed;
  atomic_int bad_counts;
  atomic_ullong done, failed, total;
};

static void on_progress(void *user, uint64_t id, uint64_t done, uint64_t failed, uint64_t total, bool finished) {
  (void)id;
  struct watch *w = user;
  if (atomic_load(&w->freed)) atomic_fetch_add(&w->after_free, 1);
  atomic_fetch_add(&w->events, 1);
  if (done + failed > total) atomic_fetch_add(&w->bad_counts, 1);
  if (finished) {
    atomic_fetch_add(&w->finished_events, 1);
    atomic_store(&w->done, done);
    atomic_store(&w->failed, failed);
    atomic_store(&w->total, total);
  }
}

/* The calls a lifecycle makes, for either job kind. */
struct job_ops {
  enum cuzk_status (*wait)(const void *job, char **err);
  enum cuzk_status (*progress)(const void *job, uint64_t *done, uint64_t *total, bool *finished, char **err);
  bool (*cancel)(const void *job);
  void (*free)(void *job);
};

static enum cuzk_status engine_job_wait(const void *job, char **err) {
  uint8_t proofs[64 * CUZK_PROOF_BYTES];
  return cuzk_job_wait(job, proofs, sizeof proofs, err);
}
static enum cuzk_status engine_job_progress(const void *job, uint64_t *d, uint64_t *t, bool *f, char **err) {
  return cuzk_job_progress(job, d, t, f, err);
}
static bool engine_job_cancel(const void *job) { return cuzk_job_cancel(job); }
static void engine_job_free(void *job) { cuzk_job_free(job); }
static const struct job_ops ENGINE_JOB = {engine_job_wait, engine_job_progress, engine_job_cancel, engine_job_free};

static enum cuzk_status filecoin_job_wait(const void *job, char **err) {
  struct cuzk_bytes out = {NULL, 0};
  enum cuzk_status st = cuzk_filecoin_job_wait(job, &out, err);
  cuzk_bytes_free(out);
  return st;
}
static enum cuzk_status filecoin_job_progress(const void *job, uint64_t *d, uint64_t *t, bool *f, char **err) {
  return cuzk_filecoin_job_progress(job, d, t, f, err);
}
static bool filecoin_job_cancel(const void *job) { return cuzk_filecoin_job_cancel(job); }
static void filecoin_job_free(void *job) { cuzk_filecoin_job_free(job); }
static const struct job_ops FILECOIN_JOB = {filecoin_job_wait, filecoin_job_progress, filecoin_job_cancel,
                                            filecoin_job_free};

struct racer {
  const struct job_ops *ops;
  void *job;
  long delay_ms;
  enum cuzk_status status;
  int polls_bad;
};

static void *race_wait(void *p) {
  struct racer *r = p;
  sleep_ms(r->delay_ms);
  char *err = NULL;
  r->status = r->ops->wait(r->job, &err);
  cuzk_string_free(err);
  return NULL;
}

static void *race_progress(void *p) {
  struct racer *r = p;
  for (int i = 0; i < 200; i++) {
    uint64_t done = 0, total = 0;
    bool finished = false;
    if (r->ops->progress(r->job, &done, &total, &finished, NULL) != CUZK_STATUS_OK || done > total) r->polls_bad++;
    if (finished) break;
    sleep_ms(1);
  }
  return NULL;
}

static void *race_cancel(void *p) {
  struct racer *r = p;
  sleep_ms(r->delay_ms);
  r->ops->cancel(r->job);
  return NULL;
}

/* Waits (at most 20 s) for the finished event. */
static void await_finished(struct watch *w) {
  for (int i = 0; i < 2000 && atomic_load(&w->finished_events) == 0; i++) sleep_ms(10);
}

/* The promises after a job is over and its handle freed. */
static void lifecycle_promises(struct watch *w, uint64_t total, const char *what) {
  sleep_ms(20); /* a callback that would come late has had its chance */
  char detail[256];
  snprintf(detail, sizeof detail, "finished events %d, done %llu + failed %llu of %llu (expected %llu), after free %d",
           atomic_load(&w->finished_events), (unsigned long long)atomic_load(&w->done),
           (unsigned long long)atomic_load(&w->failed), (unsigned long long)atomic_load(&w->total),
           (unsigned long long)total, atomic_load(&w->after_free));
  char label[256];
  snprintf(label, sizeof label, "%s: one finished event, done + failed == total, nothing after free", what);
  check(atomic_load(&w->finished_events) == 1 && atomic_load(&w->done) + atomic_load(&w->failed) == total &&
            atomic_load(&w->total) == total && atomic_load(&w->after_free) == 0 && atomic_load(&w->bad_counts) == 0,
        label, detail);
}

/* submit -> on_progress, then two waits, a poller and a canceller at once; then free. */
static void race(const struct job_ops *ops, void *job, struct watch *w, uint64_t total, long cancel_ms, const char *what) {
  struct racer waiters[2] = {{ops, job, 0, CUZK_STATUS_OK, 0}, {ops, job, 1, CUZK_STATUS_OK, 0}};
  struct racer poller = {ops, job, 0, CUZK_STATUS_OK, 0}, canceller = {ops, job, cancel_ms, CUZK_STATUS_OK, 0};
  pthread_t t[4];
  pthread_create(&t[0], NULL, race_wait, &waiters[0]);
  pthread_create(&t[1], NULL, race_wait, &waiters[1]);
  pthread_create(&t[2], NULL, race_progress, &poller);
  pthread_create(&t[3], NULL, race_cancel, &canceller);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  int taken = 0, refused_once = 0;
  for (int i = 0; i < 2; i++) {
    if (waiters[i].status == CUZK_STATUS_INVALID_ARGUMENT) refused_once++;
    else if (waiters[i].status == CUZK_STATUS_OK || waiters[i].status == CUZK_STATUS_CANCELLED) taken++;
  }
  char detail[128];
  snprintf(detail, sizeof detail, "statuses %d and %d, bad polls %d", (int)waiters[0].status, (int)waiters[1].status,
           poller.polls_bad);
  char label[256];
  snprintf(label, sizeof label, "%s: one wait takes the result (OK or CANCELLED), the other is refused", what);
  check(taken == 1 && refused_once == 1 && poller.polls_bad == 0, label, detail);
  await_finished(w);
  /* A third wait after the job is over is refused too. */
  char *err = NULL;
  enum cuzk_status st = ops->wait(job, &err);
  snprintf(label, sizeof label, "%s: a wait after the result was taken", what);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, NULL, label);
  ops->free(job);
  atomic_store(&w->freed, true);
  lifecycle_promises(w, total, what);
}

/* x * x = y with y public: variables 0 = one, 1 = y, 2 = x. */
static struct cuzk_r1cs *square_r1cs(void) {
  struct cuzk_r1cs_term a = {0, 2, {1}}, b = {0, 2, {1}}, c = {0, 1, {1}};
  struct cuzk_r1cs *r1cs = NULL;
  if (cuzk_r1cs_new(1, 1, 1, &a, 1, &b, 1, &c, 1, &r1cs, NULL) != CUZK_STATUS_OK) return NULL;
  return r1cs;
}

/* A job of `n` (<= 64) proofs of x * x = y on `engine`, its callback registered; NULL on failure. */
static struct cuzk_job *submit(struct cuzk_engine *engine, const struct cuzk_r1cs *r1cs, const struct cuzk_params *params,
                               size_t n, struct watch *w) {
  struct cuzk_assignment *batch[64];
  uint8_t x[32] = {3}, y[32] = {9};
  for (size_t i = 0; i < n; i++)
    if (cuzk_assignment_new_r1cs(r1cs, NULL, y, 1, x, 1, &batch[i], NULL) != CUZK_STATUS_OK) return NULL;
  struct cuzk_job *job = NULL;
  char *err = NULL;
  if (cuzk_engine_submit(engine, params, batch, n, NULL, NULL, 0, &job, &err) != CUZK_STATUS_OK ||
      cuzk_job_on_progress(job, on_progress, w, &err) != CUZK_STATUS_OK) {
    check(false, "submit and on_progress", err);
    cuzk_string_free(err);
    cuzk_job_free(job);
    return NULL;
  }
  return job;
}

static void engine_lifecycles(int rounds) {
  struct cuzk_r1cs *r1cs = square_r1cs();
  struct cuzk_params *params = NULL;
  if (!r1cs || cuzk_params_generate_insecure_for_development(r1cs, 9, &params, NULL) != CUZK_STATUS_OK) {
    check(false, "build x * x = y", NULL);
    return;
  }
  const size_t n = 8;
  for (int round = 0; round < rounds; round++) {
    struct cuzk_engine_config c = cpu_config();
    struct cuzk_engine *engine = NULL;
    if (cuzk_engine_new(&c, &engine, NULL) != CUZK_STATUS_OK) {
      check(false, "engine", NULL);
      break;
    }
    /* Concurrent waits, polls and a cancel (at 0, 1, 2 ms: before, during, after). */
    struct watch w1 = {0};
    struct cuzk_job *job = submit(engine, r1cs, params, n, &w1);
    if (job) race(&ENGINE_JOB, job, &w1, n, round % 3, "engine job, concurrent calls");
    /* Freed at once, while running: the free cancels it; no callback after. */
    struct watch w2 = {0};
    job = submit(engine, r1cs, params, n, &w2);
    if (job) {
      cuzk_job_free(job);
      atomic_store(&w2.freed, true);
      sleep_ms(20);
      check(atomic_load(&w2.after_free) == 0 && atomic_load(&w2.finished_events) <= 1,
            "engine job freed while running: no callback after free, at most one finished event", NULL);
    }
    /* The engine freed mid-job: the job ends (CANCELLED or done), one finished event. */
    struct watch w3 = {0};
    job = submit(engine, r1cs, params, n, &w3);
    cuzk_engine_free(engine);
    if (job) {
      char *err = NULL;
      enum cuzk_status st = engine_job_wait(job, &err);
      check(st == CUZK_STATUS_OK || st == CUZK_STATUS_CANCELLED, "a job whose engine was freed mid-job: OK or CANCELLED",
            err);
      cuzk_string_free(err);
      await_finished(&w3);
      cuzk_job_free(job);
      atomic_store(&w3.freed, true);
      lifecycle_promises(&w3, n, "engine freed mid-job");
    }
  }
  cuzk_params_free(params);
  cuzk_r1cs_free(r1cs);
}

/* ---- Filecoin ---------------------------------------------------------------------------- */

static const uint8_t RANDOMNESS[32] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
                                       3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};

typedef enum cuzk_status (*post_submit)(const struct cuzk_engine *, int32_t, uint64_t, const uint8_t *, const uint8_t *,
                                        const struct cuzk_byte_slice *, size_t, struct cuzk_filecoin_job **, char **);

/* A submitted (and waited) proof that must fail: not OK, not a panic, with a message. */
static void fails(enum cuzk_status st, struct cuzk_filecoin_job *job, char *err, const char *what) {
  if (st == CUZK_STATUS_OK) {
    err = NULL;
    st = filecoin_job_wait(job, &err);
  }
  char detail[600];
  snprintf(detail, sizeof detail, "status %d: %s", (int)st, err ? err : "(no message)");
  check(st != CUZK_STATUS_OK && st != CUZK_STATUS_PANIC && err, what, detail);
  cuzk_string_free(err);
  cuzk_filecoin_job_free(job);
}

static void snap_edges(const struct cuzk_engine *engine) {
  uint8_t comm[32] = {1}, junk[64];
  memset(junk, 0x5a, sizeof junk);
  struct cuzk_byte_slice one = {junk, sizeof junk}, three[3] = {{junk, 64}, {junk, 64}, {junk, 64}};
  struct cuzk_filecoin_job *job = NULL;
  char *err = NULL;
  enum cuzk_status st = cuzk_filecoin_submit_snap_prove(engine, CUZK_PRIORITY_DEFAULT, 77, &one, 1, comm, comm, comm, &job, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "update proof", "SnapDeals: an unknown update proof (77)");
  err = NULL;
  st = cuzk_filecoin_submit_snap_prove(engine, CUZK_PRIORITY_DEFAULT, 0, NULL, 0, comm, comm, comm, &job, &err);
  fails(st, job, err, "SnapDeals: zero partition proofs");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_snap_prove(engine, CUZK_PRIORITY_DEFAULT, 0, three, 3, comm, comm, comm, &job, &err);
  fails(st, job, err, "SnapDeals: a wrong partition count (3 for 2 KiB)");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_snap_prove(engine, CUZK_PRIORITY_DEFAULT, 0, &one, 1, comm, comm, comm, &job, &err);
  fails(st, job, err, "SnapDeals: vanilla bytes that do not decode");
  job = NULL, err = NULL;
  struct cuzk_byte_slice truncated = {junk, 3};
  st = cuzk_filecoin_submit_snap_prove(engine, CUZK_PRIORITY_DEFAULT, 0, &truncated, 1, comm, comm, comm, &job, &err);
  fails(st, job, err, "SnapDeals: a truncated vanilla proof (3 bytes)");

  /* CIDs: a sealed CommR CID is 0x01, codec 0xf102, multihash 0xb401, length 32, digest. */
  uint8_t sealed[40] = {0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20};
  uint8_t trailing[41] = {0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20};
  uint8_t non_minimal[41] = {0x01, 0x82, 0xe2, 0x83, 0x00, 0x81, 0xe8, 0x02, 0x20};
  struct {
    const uint8_t *key;
    size_t len;
    const char *needle, *what;
  } cids[] = {
      {sealed, 0, "key", "SnapDeals CIDs: an empty key CID"},
      {non_minimal, sizeof non_minimal, "minimally", "SnapDeals CIDs: a non-minimal varint in the key CID"},
      {trailing, sizeof trailing, "after the digest", "SnapDeals CIDs: a trailing byte after the key CID"},
  };
  for (size_t i = 0; i < sizeof cids / sizeof cids[0]; i++) {
    job = NULL, err = NULL;
    st = cuzk_filecoin_submit_snap_prove_cids(engine, CUZK_PRIORITY_DEFAULT, 0, &one, 1, cids[i].key, cids[i].len, sealed,
                                              sizeof sealed, sealed, sizeof sealed, &job, &err);
    refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, cids[i].needle, cids[i].what);
    check(job == NULL, "and no job is written", NULL);
  }
}

static void post_edges(const struct cuzk_engine *engine, const uint8_t *vanilla, size_t len) {
  uint8_t prover_id[32];
  cuzk_filecoin_prover_id(1000, prover_id, NULL);
  struct cuzk_byte_slice one = {vanilla, len}, two[2] = {{vanilla, len}, {vanilla, len}};
  struct cuzk_filecoin_job *job = NULL;
  char *err = NULL;
  enum cuzk_status st =
      cuzk_filecoin_submit_window_post(engine, CUZK_PRIORITY_DEFAULT, 5, RANDOMNESS, prover_id, NULL, 0, &job, &err);
  fails(st, job, err, "Window PoSt: zero sectors");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_winning_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, NULL, 0, &job, &err);
  fails(st, job, err, "Winning PoSt: zero sectors");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_winning_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, two, 2, &job, &err);
  fails(st, job, err, "Winning PoSt: too many sectors (2 for 2 KiB)");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_window_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, &one, 1, &job, &err);
  fails(st, job, err, "a Winning type on the Window call");
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_winning_post(engine, CUZK_PRIORITY_DEFAULT, 15, RANDOMNESS, prover_id, &one, 1, &job, &err);
  refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, "registered PoSt proof", "Winning PoSt: an unknown PoSt type (15)");
  job = NULL, err = NULL;
  struct cuzk_byte_slice truncated = {vanilla, len / 2};
  st = cuzk_filecoin_submit_winning_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, &truncated, 1, &job, &err);
  fails(st, job, err, "Winning PoSt: a truncated vanilla proof");
  const char *no_proofs = getenv("CUZK_EDGES_NO_PROOFS");
  if (no_proofs && *no_proofs) {
    /* Under valgrind (CI): every call's refusal above, without the minutes of real proofs. */
    printf("filecoin: CUZK_EDGES_NO_PROOFS: the bit flips and the real job are skipped\n");
    return;
  }
  /* A flipped bit in comm_r (after the 8-byte sector id) changes the public input: no proof can
   * verify. Elsewhere (a Merkle root the circuit does not read, a path bit) a flip may leave a
   * proof that still verifies: then it is a valid proof; either way no panic and no bad bytes. */
  const size_t flips[3] = {8 + 5, len / 2, len - 5};
  for (int i = 0; i < 3; i++) {
    uint8_t *flipped = malloc(len);
    memcpy(flipped, vanilla, len);
    flipped[flips[i]] ^= 0x10;
    struct cuzk_byte_slice bad = {flipped, len};
    struct cuzk_bytes proof = {NULL, 0};
    err = NULL;
    st = cuzk_filecoin_winning_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, &bad, 1, &proof, &err);
    char detail[600];
    snprintf(detail, sizeof detail, "byte %zu: status %d: %s", flips[i], (int)st, err ? err : "(a proof that verified)");
    if (i == 0)
      check(st != CUZK_STATUS_OK && st != CUZK_STATUS_PANIC && err, "Winning PoSt: a bit flipped in comm_r fails", detail);
    else
      check(st != CUZK_STATUS_PANIC && (st == CUZK_STATUS_OK ? proof.len == CUZK_PROOF_BYTES : err != NULL),
            "Winning PoSt: a bit flipped elsewhere: an error or a proof that verified, no panic", detail);
    cuzk_string_free(err);
    cuzk_bytes_free(proof);
    free(flipped);
  }

  /* A real proof's lifecycle, raced. */
  struct watch w = {0};
  job = NULL, err = NULL;
  st = cuzk_filecoin_submit_winning_post(engine, CUZK_PRIORITY_DEFAULT, 0, RANDOMNESS, prover_id, &one, 1, &job, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_filecoin_job_on_progress(job, on_progress, &w, &err);
  if (st != CUZK_STATUS_OK) {
    check(false, "Winning PoSt: submit and on_progress", err);
    cuzk_string_free(err);
    cuzk_filecoin_job_free(job);
    return;
  }
  uint64_t done = 0, total = 0;
  bool finished = false;
  cuzk_filecoin_job_progress(job, &done, &total, &finished, NULL);
  race(&FILECOIN_JOB, job, &w, total, 50, "Winning PoSt job, concurrent calls");
}

/* The smallest bincode FallbackPoStSectorProof: a sector id (8 bytes, little-endian), a zero
 * comm_r (32 bytes), no sector proofs (a length of 8 zero bytes). Read, never proved. */
static void tiny_vanilla(uint8_t out[48], uint64_t id) {
  memset(out, 0, 48);
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(id >> (8 * i));
}

static void window_post_order_edges(const struct cuzk_engine *engine) {
  uint8_t prover_id[32] = {0}, bytes[3][48];
  const uint64_t ids[3][3] = {{102, 100, 101}, {100, 101, 101}, {100, 101, 102}};
  const char *needles[2] = {"vanilla proof 1 is of sector 100, after sector 102",
                            "vanilla proof 2 is of sector 101, after sector 101"};
  for (int c = 0; c < 3; c++) {
    struct cuzk_byte_slice slices[3];
    for (int i = 0; i < 3; i++) {
      tiny_vanilla(bytes[i], ids[c][i]);
      slices[i].data = bytes[i];
      slices[i].len = 48;
    }
    struct cuzk_filecoin_job *job = NULL;
    char *err = NULL;
    enum cuzk_status st =
        cuzk_filecoin_submit_window_post(engine, CUZK_PRIORITY_DEFAULT, 10, RANDOMNESS, prover_id, slices, 3, &job, &err);
    if (c < 2) {
      refused(st, err, CUZK_STATUS_INVALID_ARGUMENT, needles[c],
              c == 0 ? "Window PoSt: sectors 102, 100, 101 (out of order)" : "Window PoSt: sector 101 twice");
      check(job == NULL, "and no job is written", NULL);
    } else {
      check(st != CUZK_STATUS_OK && st != CUZK_STATUS_PANIC && err && !strstr(err, "ascending"),
            "Window PoSt: sectors 100, 101, 102 in order pass the order check (and fail later: no sector proofs)", err);
      cuzk_string_free(err);
      cuzk_filecoin_job_free(job);
    }
  }
}

static void filecoin_edges(const char *vanilla_path, const char *param_cache) {
  struct cuzk_bytes out = {NULL, 0};
  char *err = NULL;
  if (!cuzk_filecoin_available()) {
    uint8_t comm[32] = {1};
    enum cuzk_status st = cuzk_filecoin_snap_prove(NULL, CUZK_PRIORITY_DEFAULT, 0, NULL, 0, comm, comm, comm, &out, &err);
    refused(st, err, CUZK_STATUS_UNSUPPORTED, "filecoin", "without the feature the proof calls are UNSUPPORTED");
    return;
  }
  if (!vanilla_path) {
    printf("filecoin: no fixture given: the PoSt edges are skipped\n");
  }
  setenv("FIL_PROOFS_PARAMETER_CACHE", param_cache ? param_cache : ".", 1);
  struct cuzk_engine_config c = cpu_config();
  c.budget_bytes = 4ull << 30;
  struct cuzk_engine *engine = NULL;
  if (cuzk_engine_new(&c, &engine, &err) != CUZK_STATUS_OK) {
    check(false, "filecoin engine", err);
    cuzk_string_free(err);
    return;
  }
  snap_edges(engine);
  window_post_order_edges(engine);
  if (vanilla_path) {
    FILE *f = fopen(vanilla_path, "rb");
    uint8_t *vanilla = malloc(1 << 20);
    size_t len = f ? fread(vanilla, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    check(len > 0, "read the vanilla proof fixture", vanilla_path);
    if (len > 0) post_edges(engine, vanilla, len);
    free(vanilla);
  }
  cuzk_engine_free(engine);
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: abi_edges_jobs ROUNDS [VANILLA PARAM_CACHE]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* every line out before a crash */
  enum_and_count_edges();
  memory_count_edges();
  engine_lifecycles(atoi(argv[1]));
  filecoin_edges(argc == 4 ? argv[2] : NULL, argc == 4 ? argv[3] : NULL);
  if (failures) {
    fprintf(stderr, "abi_edges_jobs: %d promise(s) broken\n", failures);
    return 1;
  }
  printf("abi_edges_jobs: OK\n");
  return 0;
}
