/*
 * The classic toy circuit through cuzk's C ABI: knowledge of x with x^3 + x + 5 = y,
 * y public. Builds the R1CS by hand, generates INSECURE development parameters, proves,
 * verifies, and checks that a wrong y is rejected. Exit status 0 when all holds.
 *
 * Variables: 0 = the constant one, 1 = y (public), 2 = x, 3 = x^2, 4 = x^3.
 * Constraints:  x * x = x^2;  x^2 * x = x^3;  (x^3 + x + 5) * 1 = y.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

static void fail(const char *what, enum cuzk_status status, char *err) {
  fprintf(stderr, "toy: %s failed: status %d: %s\n", what, (int)status, err ? err : "(no message)");
  cuzk_string_free(err);
  exit(1);
}

/* Runs a fallible call whose last argument is `&err`. */
#define TRY(call)                                   \
  do {                                              \
    char *err = NULL;                               \
    enum cuzk_status status_ = (call);              \
    if (status_ != CUZK_STATUS_OK) fail(#call, status_, err); \
  } while (0)

static void on_log(void *user, cuzk_log_level level, const char *target, const char *message) {
  (void)user;
  fprintf(stderr, "[cuzk %d %s] %s\n", (int)level, target, message);
}

static struct cuzk_r1cs_term term(uint32_t constraint, uint32_t variable, int64_t coeff) {
  struct cuzk_r1cs_term t;
  t.constraint = constraint;
  t.variable = variable;
  if (cuzk_scalar_from_i64(coeff, t.coeff) != CUZK_STATUS_OK) exit(1);
  return t;
}

/* A small non-negative integer as a canonical scalar. */
static void scalar(uint64_t v, uint8_t out[32]) {
  if (cuzk_scalar_from_i64((int64_t)v, out) != CUZK_STATUS_OK) exit(1);
}

int main(void) {
  if (cuzk_abi_version() != CUZK_ABI_VERSION) {
    fprintf(stderr, "toy: header ABI %u, library ABI %u\n", CUZK_ABI_VERSION, cuzk_abi_version());
    return 1;
  }
  printf("cuzk %s (ABI %u)\n", cuzk_version(), cuzk_abi_version());
  TRY(cuzk_set_log_callback(on_log, NULL, CUZK_LOG_LEVEL_WARN, &err));

  struct cuzk_r1cs_term a[] = {term(0, 2, 1), term(1, 3, 1), term(2, 4, 1), term(2, 2, 1), term(2, 0, 5)};
  struct cuzk_r1cs_term b[] = {term(0, 2, 1), term(1, 2, 1), term(2, 0, 1)};
  struct cuzk_r1cs_term c[] = {term(0, 3, 1), term(1, 4, 1), term(2, 1, 1)};
  struct cuzk_r1cs *r1cs = NULL;
  TRY(cuzk_r1cs_new(1, 3, 3, a, 5, b, 3, c, 3, &r1cs, &err));

  struct cuzk_params *params = NULL;
  TRY(cuzk_params_generate_insecure_for_development(r1cs, 1234, &params, &err));
  struct cuzk_params_sizes info;
  TRY(cuzk_params_info(params, &info, &err));
  uint8_t *vk = malloc(info.verifying_key_bytes);
  size_t vk_len = 0;
  TRY(cuzk_params_verifying_key(params, vk, info.verifying_key_bytes, &vk_len, &err));

  struct cuzk_pool_config config = cuzk_pool_config_default();
  struct cuzk_pool *pool = NULL;
  TRY(cuzk_pool_new(&config, &pool, &err));
  struct cuzk_prover *prover = NULL;
  TRY(cuzk_prover_new(CUZK_BACKEND_AUTO, 0, pool, &prover, &err));
  printf("backend: %s\n", cuzk_prover_backend_name(prover));

  /* The witness: x = 3, so y = 27 + 3 + 5 = 35. */
  const uint64_t x = 3, y = x * x * x + x + 5;
  uint8_t public_input[32], aux[3 * 32];
  scalar(y, public_input);
  scalar(x, aux);
  scalar(x * x, aux + 32);
  scalar(x * x * x, aux + 64);
  bool satisfied = false;
  TRY(cuzk_r1cs_is_satisfied(r1cs, public_input, 1, aux, 3, &satisfied, NULL, &err));
  if (!satisfied) {
    fprintf(stderr, "toy: the witness does not satisfy the constraints\n");
    return 1;
  }

  struct cuzk_assignment *assignment = NULL;
  TRY(cuzk_assignment_new_r1cs(r1cs, pool, public_input, 1, aux, 3, &assignment, &err));
  uint8_t proof[CUZK_PROOF_BYTES];
  struct cuzk_timings timings;
  /* r and s NULL: drawn from the OS. The assignment is consumed. */
  TRY(cuzk_prove(prover, params, &assignment, 1, NULL, NULL, proof, sizeof proof, &timings, &err));
  printf("proved in %.3f ms\n", (double)timings.total_ns / 1e6);

  bool valid = false;
  TRY(cuzk_verify(vk, vk_len, proof, sizeof proof, public_input, 1, &valid, &err));
  printf("verify with y = %llu: %s\n", (unsigned long long)y, valid ? "valid" : "INVALID");
  if (!valid) return 1;

  uint8_t wrong_y[32];
  scalar(y + 1, wrong_y);
  TRY(cuzk_verify(vk, vk_len, proof, sizeof proof, wrong_y, 1, &valid, &err));
  printf("verify with y = %llu: %s\n", (unsigned long long)(y + 1), valid ? "VALID (wrong!)" : "rejected");
  if (valid) return 1;

  struct cuzk_pool_statistics stats;
  TRY(cuzk_pool_stats(pool, &stats, &err));
  printf("pool: %llu checkouts, %llu bytes in use\n", (unsigned long long)stats.checkouts,
         (unsigned long long)stats.bytes_in_use);
  if (stats.bytes_in_use != 0) return 1;

  cuzk_prover_free(prover);
  cuzk_pool_free(pool);
  cuzk_params_free(params);
  cuzk_r1cs_free(r1cs);
  free(vk);
  TRY(cuzk_set_log_callback(NULL, NULL, CUZK_LOG_LEVEL_OFF, &err));
  printf("toy: OK\n");
  return 0;
}
