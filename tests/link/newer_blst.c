/* A program that calls a blst function only blst >= 0.3.17 has (cuzk's blst is 0.3.17,
 * otherlib's 0.3.14). tests/link/run.sh links it against cuzk's static library and otherlib,
 * and expects the link to fail with exactly one complaint: blst_fp_from_be_bytes undefined.
 * cuzk's blst is its own (local symbols), not a provider for its neighbours: a program that
 * wants blst brings its own. Against cargo's raw staticlib the same program links, taking
 * that one function from cuzk's copy of blst and the rest from whichever archive comes
 * first: the mix the static library must rule out. */
#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t l[6]; } blst_fp;
void blst_fp_from_be_bytes(blst_fp *ret, const uint8_t *in, size_t len);

int main(void) {
  uint8_t one[1] = {1};
  blst_fp x;
  blst_fp_from_be_bytes(&x, one, sizeof one);
  return x.l[0] == 0;
}
