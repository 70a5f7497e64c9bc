/*
 * new -> prove -> free, in a loop, for valgrind: every handle kind, both assignment routes,
 * an error message per round, and the pool's bytes in use back to zero after each prove.
 * Usage: leak_loop [rounds]   (exit status 0 when every round holds)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

#define TRY(call)                                                                   \
  do {                                                                              \
    char *err = NULL;                                                               \
    enum cuzk_status st_ = (call);                                                  \
    if (st_ != CUZK_STATUS_OK) {                                                    \
      fprintf(stderr, "%s: status %d: %s\n", #call, (int)st_, err ? err : "");      \
      cuzk_string_free(err);                                                        \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static void scalar(int64_t v, uint8_t out[32]) {
  if (cuzk_scalar_from_i64(v, out) != CUZK_STATUS_OK) exit(1);
}

static struct cuzk_r1cs_term term(uint32_t row, uint32_t var, int64_t coeff) {
  struct cuzk_r1cs_term t = {row, var, {0}};
  scalar(coeff, t.coeff);
  return t;
}

/* A pool buffer holding `n` scalars (given as small integers) in memory form. */
static struct cuzk_buffer *filled(const struct cuzk_pool *pool, const int64_t *values, size_t n) {
  struct cuzk_buffer *buf = NULL;
  uint8_t *ptr = NULL;
  TRY(cuzk_pool_checkout(pool, n * 32, &buf, &ptr, NULL, NULL, &err));
  for (size_t i = 0; i < n; i++) scalar(values[i], ptr + 32 * i);
  TRY(cuzk_scalars_to_montgomery(ptr, n, ptr, &err));
  return buf;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 10;
  /* x^3 + x + 5 = y: variables one, y, x, x^2, x^3. */
  struct cuzk_r1cs_term a[] = {term(0, 2, 1), term(1, 3, 1), term(2, 4, 1), term(2, 2, 1), term(2, 0, 5)};
  struct cuzk_r1cs_term b[] = {term(0, 2, 1), term(1, 2, 1), term(2, 0, 1)};
  struct cuzk_r1cs_term c[] = {term(0, 3, 1), term(1, 4, 1), term(2, 1, 1)};
  for (int round = 0; round < rounds; round++) {
    struct cuzk_r1cs *r1cs = NULL;
    TRY(cuzk_r1cs_new(1, 3, 3, a, 5, b, 3, c, 3, &r1cs, &err));
    struct cuzk_params *params = NULL;
    TRY(cuzk_params_generate_insecure_for_development(r1cs, (uint64_t)round, &params, &err));
    struct cuzk_pool_config config = cuzk_pool_config_default();
    config.memory = CUZK_POOL_MEMORY_HEAP;
    struct cuzk_pool *pool = NULL;
    TRY(cuzk_pool_new(&config, &pool, &err));
    struct cuzk_prover *prover = NULL;
    TRY(cuzk_prover_new(CUZK_BACKEND_CPU, 0, pool, &prover, &err));

    const int64_t x = 2 + round, y = x * x * x + x + 5;
    uint8_t pub[32], aux[96];
    scalar(y, pub);
    scalar(x, aux);
    scalar(x * x, aux + 32);
    scalar(x * x * x, aux + 64);
    struct cuzk_assignment *batch[2] = {NULL, NULL};
    TRY(cuzk_assignment_new_r1cs(r1cs, pool, pub, 1, aux, 3, &batch[0], &err));
    /* Raw: rows of the three constraints, then the input rows (one, y). */
    const int64_t ra[] = {x, x * x, x * x * x + x + 5, 1, y}, rb[] = {x, x, 1, 0, 0}, rc[] = {x * x, x * x * x, y, 0, 0};
    const uint64_t a_aux = 7, b_in = 1, b_aux = 1;
    struct cuzk_raw_assignment raw = {filled(pool, ra, 5), filled(pool, rb, 5), filled(pool, rc, 5), 5, pub, 1, aux, 3,
                                      &a_aux, &b_in, &b_aux};
    TRY(cuzk_assignment_new_raw(&raw, &batch[1], &err));

    uint8_t proofs[2 * CUZK_PROOF_BYTES];
    TRY(cuzk_prove(prover, params, batch, 2, NULL, NULL, proofs, sizeof proofs, NULL, &err));

    struct cuzk_params_sizes info;
    TRY(cuzk_params_info(params, &info, &err));
    uint8_t *vk = malloc(info.verifying_key_bytes);
    TRY(cuzk_params_verifying_key(params, vk, info.verifying_key_bytes, NULL, &err));
    for (int i = 0; i < 2; i++) {
      bool valid = false;
      TRY(cuzk_verify(vk, info.verifying_key_bytes, proofs + i * CUZK_PROOF_BYTES, CUZK_PROOF_BYTES, pub, 1, &valid, &err));
      if (!valid) {
        fprintf(stderr, "round %d: proof %d does not verify\n", round, i);
        return 1;
      }
    }
    free(vk);

    /* An error path: its message is allocated and must be freed. */
    char *err = NULL;
    if (cuzk_prove(prover, params, batch, 0, NULL, NULL, proofs, sizeof proofs, NULL, &err) == CUZK_STATUS_OK || !err) {
      fprintf(stderr, "round %d: an empty batch proved\n", round);
      return 1;
    }
    cuzk_string_free(err);
    /* A buffer checked out and in again; an assignment freed without proving. */
    struct cuzk_buffer *spare = filled(pool, ra, 5);
    cuzk_buffer_checkin(spare);
    struct cuzk_assignment *unused = NULL;
    TRY(cuzk_assignment_new_r1cs(r1cs, pool, pub, 1, aux, 3, &unused, &err));
    cuzk_assignment_free(unused);

    struct cuzk_pool_statistics stats;
    TRY(cuzk_pool_stats(pool, &stats, &err));
    if (stats.bytes_in_use != 0 || stats.fallback_bytes_in_use != 0) {
      fprintf(stderr, "round %d: %llu pool bytes still in use\n", round, (unsigned long long)stats.bytes_in_use);
      return 1;
    }
    cuzk_prover_free(prover);
    cuzk_pool_free(pool);
    cuzk_params_free(params);
    cuzk_r1cs_free(r1cs);
  }
  printf("leak_loop: %d rounds OK, pool bytes in use back to 0 each round\n", rounds);
  return 0;
}
