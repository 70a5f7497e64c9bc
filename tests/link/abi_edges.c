/* The C ABI's edge promises, from C (tests/link/run.sh runs it; tests/ffi.rs and
 * tests/ffi_engine.rs check the same from Rust):
 *   1. a circuit without constraints proves with its own parameters, and the proof verifies;
 *   2. an engine refuses, with CUZK_STATUS_BUDGET_EXHAUSTED, an assignment (made in another
 *      pool) larger than its whole budget, and its statistics count nothing past the limit;
 *   3. a parameter save that cannot write says "cannot write parameters to PATH";
 *   4. parameters whose delta is the point at infinity are refused at load
 *      (CUZK_STATUS_UNSAFE_PARAMETERS).
 * Usage: abi_edges WORKDIR (a writable directory). Exit status 0 when every promise holds. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

static int failures = 0;

static void check(bool ok, const char *what, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "ok" : "FAILED", what, detail ? " - " : "", detail ? detail : "");
  if (!ok) failures++;
}

static bool starts_with(const char *s, const char *prefix) {
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* x * x = y with y public: variables 0 = one, 1 = y, 2 = x. */
static struct cuzk_r1cs *square_r1cs(void) {
  struct cuzk_r1cs_term a = {0, 2, {1}}, b = {0, 2, {1}}, c = {0, 1, {1}};
  struct cuzk_r1cs *r1cs = NULL;
  if (cuzk_r1cs_new(1, 1, 1, &a, 1, &b, 1, &c, 1, &r1cs, NULL) != CUZK_STATUS_OK) return NULL;
  return r1cs;
}

static void empty_circuit(void) {
  struct cuzk_r1cs *r1cs = NULL;
  struct cuzk_params *params = NULL;
  struct cuzk_prover *prover = NULL;
  struct cuzk_assignment *asg = NULL;
  struct cuzk_params_sizes sizes;
  uint8_t proof[CUZK_PROOF_BYTES], vk[4096];
  size_t vk_len = 0;
  bool valid = false;
  char *err = NULL;
  enum cuzk_status st = cuzk_r1cs_new(0, 0, 0, NULL, 0, NULL, 0, NULL, 0, &r1cs, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_params_generate_insecure_for_development(r1cs, 5, &params, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_params_info(params, &sizes, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_prover_new(CUZK_BACKEND_AUTO, 0, NULL, &prover, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_assignment_new_r1cs(r1cs, NULL, NULL, 0, NULL, 0, &asg, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_prove(prover, params, &asg, 1, NULL, NULL, proof, sizeof proof, NULL, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_params_verifying_key(params, vk, sizeof vk, &vk_len, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_verify(vk, vk_len, proof, sizeof proof, NULL, 0, &valid, &err);
  check(st == CUZK_STATUS_OK && valid && sizes.domain_size == 1,
        "a circuit without constraints proves with its own parameters (domain 1) and verifies", err);
  cuzk_string_free(err);
  cuzk_prover_free(prover);
  cuzk_params_free(params);
  cuzk_r1cs_free(r1cs);
}

static void budget_refusal(struct cuzk_r1cs *r1cs, const struct cuzk_params *params) {
  struct cuzk_engine_config config = cuzk_engine_config_default();
  config.backend = CUZK_BACKEND_CPU;
  config.memory = CUZK_POOL_MEMORY_HEAP;
  config.synthesis_workers = 1;
  config.budget_bytes = 1;
  config.budget_timeout_ms = 200;
  struct cuzk_engine *engine = NULL;
  struct cuzk_assignment *asg = NULL;
  struct cuzk_job *job = NULL;
  struct cuzk_engine_statistics stats;
  uint8_t x[32] = {3}, y[32] = {9}, proof[CUZK_PROOF_BYTES];
  char *err = NULL;
  enum cuzk_status st = cuzk_engine_new(&config, &engine, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_assignment_new_r1cs(r1cs, NULL, y, 1, x, 1, &asg, &err);
  if (st == CUZK_STATUS_OK) st = cuzk_engine_submit(engine, params, &asg, 1, NULL, NULL, 0, &job, &err);
  if (st != CUZK_STATUS_OK) {
    check(false, "engine set-up", err);
  } else {
    st = cuzk_job_wait(job, proof, sizeof proof, &err);
    check(st == CUZK_STATUS_BUDGET_EXHAUSTED && err && strstr(err, "budget"),
          "an assignment larger than the engine's budget is refused with BUDGET_EXHAUSTED", err);
    cuzk_string_free(err);
    err = NULL;
    st = cuzk_engine_stats(engine, &stats, &err);
    check(st == CUZK_STATUS_OK && stats.budget_limit == 1 && stats.budget_peak <= stats.budget_limit,
          "and the engine's budget peak stays under its limit", err);
  }
  cuzk_string_free(err);
  cuzk_job_free(job);
  cuzk_engine_free(engine);
}

static void save_errors(const struct cuzk_params *params, const char *dir) {
  char *err = NULL;
  /* A directory cannot be written as a file. */
  enum cuzk_status st = cuzk_params_save(params, dir, &err);
  char expected[4096];
  snprintf(expected, sizeof expected, "cannot write parameters to %s: ", dir);
  check(st == CUZK_STATUS_PARAMS_IO && starts_with(err, expected), "a save into a directory says 'cannot write'", err);
  cuzk_string_free(err);
  err = NULL;
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    fclose(full);
    st = cuzk_params_save(params, "/dev/full", &err);
    check(st == CUZK_STATUS_PARAMS_IO && starts_with(err, "cannot write parameters to /dev/full: "),
          "a save to a full device says 'cannot write'", err);
    cuzk_string_free(err);
  }
}

static void delta_at_infinity(const struct cuzk_params *params, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/params", dir);
  char *err = NULL;
  if (cuzk_params_save(params, path, &err) != CUZK_STATUS_OK) {
    check(false, "save parameters", err);
    cuzk_string_free(err);
    return;
  }
  FILE *f = fopen(path, "r+b");
  /* bellperson's layout: alpha_g1 (96 bytes, uncompressed), beta_g1 (96), beta_g2 (192),
   * gamma_g2 (192), then delta_g1 (96): infinity is the flag byte 0x40 and zeros. */
  uint8_t infinity[96] = {0x40};
  bool written = f && fseek(f, 96 + 96 + 192 + 192, SEEK_SET) == 0 && fwrite(infinity, 1, sizeof infinity, f) == sizeof infinity;
  if (f) fclose(f);
  if (!written) {
    check(false, "rewrite delta_g1", path);
    return;
  }
  struct cuzk_params *loaded = NULL;
  enum cuzk_status st = cuzk_params_load(path, CUZK_POINT_CHECK_ON_CURVE, &loaded, &err);
  check(st == CUZK_STATUS_UNSAFE_PARAMETERS && loaded == NULL && err && strstr(err, "delta"),
        "parameters with delta at infinity are refused at load", err);
  cuzk_string_free(err);
  cuzk_params_free(loaded);
  remove(path);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: abi_edges WORKDIR\n");
    return 2;
  }
  empty_circuit();
  struct cuzk_r1cs *r1cs = square_r1cs();
  struct cuzk_params *params = NULL;
  if (!r1cs || cuzk_params_generate_insecure_for_development(r1cs, 9, &params, NULL) != CUZK_STATUS_OK) {
    fprintf(stderr, "abi_edges: cannot build the x * x = y circuit\n");
    return 1;
  }
  budget_refusal(r1cs, params);
  save_errors(params, argv[1]);
  delta_at_infinity(params, argv[1]);
  cuzk_params_free(params);
  cuzk_r1cs_free(r1cs);
  if (failures) {
    fprintf(stderr, "abi_edges: %d promise(s) broken\n", failures);
    return 1;
  }
  printf("abi_edges: OK\n");
  return 0;
}
