/* cuzk's static library and a second Rust static library (otherlib: another rustc where the
 * machine has one, its own older blst) in one C program, linked in either order: both work,
 * each on its own Rust runtime and its own blst. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuzk.h"

uint64_t otherlib_sum(const uint64_t *values, size_t len);
int otherlib_panic_is_caught(void);
int otherlib_blst_g1_generator(uint8_t out[48]);

/* The compressed BLS12-381 G1 generator (the curve's specification). */
static const uint8_t G1_GENERATOR[48] = {
    0x97, 0xf1, 0xd3, 0xa7, 0x31, 0x97, 0xd7, 0x94, 0x26, 0x95, 0x63, 0x8c, 0x4f, 0xa9, 0xac, 0x0f,
    0xc3, 0x68, 0x8c, 0x4f, 0x97, 0x74, 0xb9, 0x05, 0xa1, 0x4e, 0x3a, 0x3f, 0x17, 0x1b, 0xac, 0x58,
    0x6c, 0x55, 0xe8, 0x3f, 0xf9, 0x7a, 0x1a, 0xef, 0xfb, 0x3a, 0xf0, 0x0a, 0xdb, 0x22, 0xc6, 0xbb};

int main(void) {
  uint64_t v[] = {1, 2, 3, 4};
  if (otherlib_sum(v, 4) != 10 || otherlib_panic_is_caught() != 1) {
    fprintf(stderr, "otherlib misbehaves\n");
    return 1;
  }
  uint8_t g[48] = {0};
  if (otherlib_blst_g1_generator(g) != 1 || memcmp(g, G1_GENERATOR, sizeof g) != 0) {
    fprintf(stderr, "otherlib's blst computes a wrong G1 generator\n");
    return 1;
  }
  /* cuzk: a Montgomery round trip and an error with its message, then a tiny proof. */
  uint8_t s[32], m[32], back[32];
  if (cuzk_scalar_from_i64(-7, s) != CUZK_STATUS_OK) return 1;
  char *err = NULL;
  if (cuzk_scalars_to_montgomery(s, 1, m, &err) != CUZK_STATUS_OK) return 1;
  if (cuzk_scalars_from_montgomery(m, 1, back, &err) != CUZK_STATUS_OK || memcmp(s, back, 32) != 0) return 1;
  if (cuzk_params_load("/nonexistent/params", CUZK_POINT_CHECK_ON_CURVE, NULL, &err) != CUZK_STATUS_NULL_ARGUMENT) return 1;
  cuzk_string_free(err);
  err = NULL;
  struct cuzk_params *p = NULL;
  if (cuzk_params_load("/nonexistent/params", CUZK_POINT_CHECK_ON_CURVE, &p, &err) != CUZK_STATUS_PARAMS_IO || !err) return 1;
  printf("expected error: %s\n", err);
  cuzk_string_free(err);

  /* a * 1 = b with a public. */
  struct cuzk_r1cs_term ta = {0, 1, {1}}, tb = {0, 0, {1}}, tc = {0, 2, {1}};
  struct cuzk_r1cs *r1cs = NULL;
  struct cuzk_params *params = NULL;
  struct cuzk_prover *prover = NULL;
  struct cuzk_assignment *asg = NULL;
  uint8_t w[32] = {9}, proof[CUZK_PROOF_BYTES], vk[4096];
  size_t vk_len = 0;
  bool valid = false;
  if (cuzk_r1cs_new(1, 1, 1, &ta, 1, &tb, 1, &tc, 1, &r1cs, NULL) ||
      cuzk_params_generate_insecure_for_development(r1cs, 5, &params, NULL) ||
      cuzk_prover_new(CUZK_BACKEND_CPU, 0, NULL, &prover, NULL) ||
      cuzk_assignment_new_r1cs(r1cs, NULL, w, 1, w, 1, &asg, NULL) ||
      cuzk_prove(prover, params, &asg, 1, NULL, NULL, proof, sizeof proof, NULL, NULL) ||
      cuzk_params_verifying_key(params, vk, sizeof vk, &vk_len, NULL) ||
      cuzk_verify(vk, vk_len, proof, sizeof proof, w, 1, &valid, NULL) || !valid) {
    fprintf(stderr, "cuzk misbehaves\n");
    return 1;
  }
  cuzk_prover_free(prover);
  cuzk_params_free(params);
  cuzk_r1cs_free(r1cs);
  printf("two Rust static libraries in one program: OK (cuzk %s)\n", cuzk_version());
  return 0;
}
