/*
 * cuzk GPU kernels: extern "C" API (BLS12-381, Groth16 prover building blocks).
 *
 * Layouts (all little-endian 64-bit limbs, Montgomery form, exactly blst's):
 *   scalar      = blst_fr          (4 x u64, R = 2^256)                 32 bytes
 *   G1 affine   = blst_p1_affine   (x, y; each 6 x u64, R = 2^384)      96 bytes, (0,0) = infinity
 *   G2 affine   = blst_p2_affine   (x.c0, x.c1, y.c0, y.c1)            192 bytes, all zero = infinity
 *   G1 result   = blst_p1          (X, Y, Z Jacobian)                  144 bytes, Z = 0 = infinity
 *   G2 result   = blst_p2                                              288 bytes
 *
 * Every function returns cuzk_kresult by value: code 0 = success; code > 0 = a cudaError_t
 * value with cudaGetErrorString's text; code < 0 = an argument / internal error (static text).
 * Nothing throws or aborts across this boundary. `message` always points to static storage.
 *
 * Threading: every call may come from any host thread. Work on one device is serialised by a
 * per-device lock (one call at a time per GPU); calls on different devices run concurrently.
 * All functions are synchronous: when they return, outputs are written and inputs may be
 * reused. Host buffers may be pageable or pinned (pinned is ~9x faster to copy).
 */
#ifndef CUZK_KERNELS_H
#define CUZK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cuzk_kresult {
    int32_t code;
    const char *message;
} cuzk_kresult;

/* Negative (argument / internal) codes. */
#define CUZK_K_ERR_NULL_ARG      (-1)
#define CUZK_K_ERR_BAD_DEVICE    (-2)
#define CUZK_K_ERR_RANGE         (-3)  /* base_offset + needed bases > bases_len, sizes */
#define CUZK_K_ERR_WRONG_GROUP   (-4)  /* G1 bases passed to a G2 MSM or vice versa */
#define CUZK_K_ERR_TOO_LARGE     (-5)  /* more than 2^31 - 1 points / 2^31 scalars */
#define CUZK_K_ERR_BAD_LOG_M     (-6)  /* log_m not in 1..31 or n > 2^log_m */
#define CUZK_K_ERR_INTERNAL      (-7)  /* a C++ exception (e.g. std::bad_alloc) was caught */
#define CUZK_K_ERR_MIXED_DEVICES (-8)  /* msm_batch jobs on different devices */

/* Opaque device-resident bases (an SRS vector kept on one GPU). */
typedef struct cuzk_k_bases cuzk_k_bases;

/* Number of CUDA devices (0 if the driver is missing: that returns an error code too). */
cuzk_kresult cuzk_k_device_count(int *out);

/* Copy n affine points (blst_p1_affine[n] / blst_p2_affine[n]) to device `device` and keep
 * them there. n may be 0. *out receives the handle (NULL on error). */
cuzk_kresult cuzk_k_bases_upload_g1(int device, const void *host_points, size_t n, cuzk_k_bases **out);
cuzk_kresult cuzk_k_bases_upload_g2(int device, const void *host_points, size_t n, cuzk_k_bases **out);
/* Free (NULL is allowed). */
cuzk_kresult cuzk_k_bases_free(cuzk_k_bases *bases);
/* Number of points (0 for NULL). */
size_t cuzk_k_bases_len(const cuzk_k_bases *bases);
/* Device ordinal of the bases (-1 for NULL). */
int cuzk_k_bases_device(const cuzk_k_bases *bases);

/* MSM. out = sum over selected i of scalars[i] * bases[base_offset + j(i)], written as
 * blst_p1 (G1) / blst_p2 (G2) to out_jacobian.
 *   density_bits == NULL: every i < n is selected and j(i) = i.
 *   otherwise: i is selected iff bit (i % 64) of density_bits[i / 64] is set (ceil(n/64) words),
 *   and j(i) = number of selected indices before i (bellperson's DensityTracker semantics).
 * Needs base_offset + (number selected) <= bases_len, else CUZK_K_ERR_RANGE.
 * n < 2^31. Scalars must be valid (reduced) blst_fr values (Montgomery form); they are not
 * checked. Zero scalars are skipped, scalars equal to one are summed
 * by a plain reduction, the rest go through a signed-window bucket (Pippenger) MSM. */
cuzk_kresult cuzk_k_msm_g1(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian);
cuzk_kresult cuzk_k_msm_g2(const cuzk_k_bases *bases, size_t base_offset, const void *host_scalars,
                           size_t n, const uint64_t *density_bits, void *out_jacobian);

/* Several MSMs (G1 and/or G2, all bases on one device) in one call, run in order. While job i
 * computes, the scalars of job i+1 are copied to the device on a second stream, so with pinned
 * host scalars the upload (~10 ms per 2^24 scalars) is hidden. Same semantics per job as
 * cuzk_k_msm_g1/g2 (the group is taken from the job's bases). Stops at the first failing job. */
typedef struct cuzk_k_msm_job {
    const cuzk_k_bases *bases;
    size_t base_offset;
    const void *host_scalars;
    size_t n;
    const uint64_t *density_bits; /* may be NULL */
    void *out_jacobian;           /* blst_p1 or blst_p2, by the bases' group */
} cuzk_k_msm_job;
cuzk_kresult cuzk_k_msm_batch(const cuzk_k_msm_job *jobs, size_t count);

/* H polynomial, exactly as bellperson computes it. a, b, c: n <= 2^log_m host scalars each
 * (Montgomery; zero-padded to m = 2^log_m on the device). With omega = ROOT_OF_UNITY^(2^(32-log_m))
 * and g = 7:  a,b,c <- IFFT(.); a,b,c <- coset FFT with shift g; t = (a*b - c) / (g^m - 1);
 * h = inverse coset FFT(t). Writes h[0 .. m-2] (m - 1 scalars, Montgomery) to h_out.
 * 1 <= log_m <= 31 (device memory bounds it in practice: ~ 7.5 * 32 * m bytes). */
cuzk_kresult cuzk_k_compute_h(int device, const void *a, const void *b, const void *c, size_t n,
                              uint32_t log_m, void *h_out);

/* H then its MSM without h leaving the device:
 * out_jacobian (blst_p1) = sum_{i < m-1} h[i] * h_bases[i]; requires bases_len >= m - 1.
 * h_out may be NULL; if not, h[0 .. m-2] is also written there. Runs on h_bases' device. */
cuzk_kresult cuzk_k_compute_h_msm(const cuzk_k_bases *h_bases, const void *a, const void *b,
                                  const void *c, size_t n, uint32_t log_m, void *h_out,
                                  void *out_jacobian);

/* Free the per-device caches (NTT twiddle / coset tables, memory pool) of `device`. Optional. */
cuzk_kresult cuzk_k_device_release_caches(int device);

#ifdef __cplusplus
}
#endif

#endif /* CUZK_KERNELS_H */
