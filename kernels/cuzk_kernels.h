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
 * Host buffers may be pageable or pinned (pinned is ~9x faster to copy).
 *
 * Every call is synchronous, ON EVERY EXIT PATH, errors included: before a function returns,
 * all work it queued on the device's streams has finished. So when it returns, whatever the
 * result, no copy still reads the caller's host buffers (they may be freed, unpinned or
 * rewritten at once), no copy still writes the caller's outputs, and every device buffer the
 * call allocated has been freed back to cuzk's own memory pool.
 *
 * What a call leaves behind: on success, the outputs. On failure, nothing of its own (device
 * buffers freed, events destroyed, outputs not written unless documented) and no pending
 * CUDA "last error" on the calling thread (a later call never reports an older failure).
 * After a sticky error (illegal address, ECC, launch failure: codes 214, 700, 702, 709, 710,
 * 714-719, 999) the device's context is unusable for the rest of the process; every later
 * call on it fails too.
 *
 * CUDA state of the calling thread: a call makes the device's primary context current while
 * it runs and puts back the context that was current before (or none). It never changes the
 * device's default memory pool: scratch memory comes from a pool of cuzk's own per device,
 * which keeps freed memory for the next call until cuzk_k_device_release_caches trims it.
 * Environment knobs (CUZK_K_PROFILE, CUZK_K_WINDOW_BITS, CUZK_K_MAX_PART) are read once per
 * device, when its context is made (the first call on it: cuzk_k_device_probe), never later.
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
    int32_t phase;  /* on failure: the CUZK_K_PHASE_* the call was in (0 = before any) */
    int32_t index;  /* and its index (NTT step, batch job), as for fault injection below */
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

/* The working-set model: device bytes a proof needs besides its parameters, per element of its
 * evaluation domain (conservative). The H phase peaks at 128 (a, b, c and the twiddles); the
 * resident MSMs' scratch takes about 330 per scalar (classified scalars 40, the sort's keys and
 * values 256 at 16 windows, the device copy of the scalars 32). The Rust side decides from it
 * whether parameters stay resident or stream (src/prover/kernel_contract.rs mirrors it; a test
 * pins the two). */
#define CUZK_K_WORKING_BYTES_PER_DOMAIN_ELEMENT 400

/* Opaque device-resident bases (an SRS vector kept on one GPU). */
typedef struct cuzk_k_bases cuzk_k_bases;

/* Number of CUDA devices (0 if the driver is missing: that returns an error code too). */
cuzk_kresult cuzk_k_device_count(int *out);

/* What cuzk_k_device_probe found. */
typedef struct cuzk_k_device_info {
    int cc_major, cc_minor;  /* compute capability */
    int sm_count;
    int binary_version;      /* of the code the driver picked for this GPU: 10*major+minor */
    int ptx_version;         /* PTX version it was built from (0 if SASS only) */
    size_t free_bytes, total_bytes;
    char name[256];
} cuzk_k_device_info;

/* Checks that `device` can run cuzk: makes its context (streams, memory pool), checks that the
 * build holds code for its architecture (cudaErrorNoKernelImageForDevice otherwise), launches
 * a real kernel and reads its result back. Fills *out on success. */
cuzk_kresult cuzk_k_device_probe(int device, cuzk_k_device_info *out);

/* cudaMemGetInfo of `device` (without changing the calling thread's context). */
cuzk_kresult cuzk_k_device_mem_info(int device, size_t *free_bytes, size_t *total_bytes);

/* Copy n affine points (blst_p1_affine[n] / blst_p2_affine[n]) to device `device` and keep
 * them there. n may be 0. *out receives the handle (NULL on error). */
cuzk_kresult cuzk_k_bases_upload_g1(int device, const void *host_points, size_t n, cuzk_k_bases **out);
cuzk_kresult cuzk_k_bases_upload_g2(int device, const void *host_points, size_t n, cuzk_k_bases **out);
/* Streamed bases, for a GPU that cannot hold them: the handle keeps only the caller's host
 * pointer (which must stay valid and unchanged until cuzk_k_bases_free), page-locks that memory
 * once (cudaHostRegister; memory already registered elsewhere is used as it is), and every MSM
 * over it copies the points it needs to the device in chunks, double-buffered on the copy stream
 * while the previous chunk computes. Results are identical to resident bases. The chunk size
 * follows from the device's memory limit (cuzk_k_device_set_limit) or, without one, its free
 * memory. */
cuzk_kresult cuzk_k_bases_host_g1(int device, const void *host_points, size_t n, cuzk_k_bases **out);
cuzk_kresult cuzk_k_bases_host_g2(int device, const void *host_points, size_t n, cuzk_k_bases **out);
/* 1 for streamed bases, 0 for resident ones (and NULL). */
int cuzk_k_bases_streamed(const cuzk_k_bases *bases);
/* Free (NULL is allowed); streamed bases unregister the host memory they registered. */
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

/* Staging: the H call also copies the scalar vector the batch that follows will read (a
 * proof's aux assignment), so that its upload runs while the H MSM computes instead of
 * before the batch's first job (~10 ms per 2^24 pinned scalars).
 * cuzk_k_compute_h_msm_staged is cuzk_k_compute_h_msm plus that copy: stage_n scalars at
 * stage_scalars (may be 0). Over streamed H bases the H MSM's first chunk is also copied during
 * the NTTs, and with next_job (may be NULL; only its bases, base_offset, host_scalars, n and
 * density_bits are read) over streamed bases, the first chunk of that job's bases is copied
 * during the H MSM's last chunk and kept for the batch: its first large streamed job uses it
 * if it is that job (bases, offset, density and chunk match), and it goes back either way.
 * *staged receives a handle to what was kept, or NULL when nothing was: too little device
 * memory beside what the H MSM may need (the batch then uploads as usual; NULL is not an
 * error). The copies have finished when the call returns, as every copy does; only the device
 * buffers outlive the call, counted in the device's memory (cuzk_k_device_mem_stats) until
 * cuzk_k_staged_free (the carried chunk: until the batch has used it). */
typedef struct cuzk_k_staged cuzk_k_staged;
cuzk_kresult cuzk_k_compute_h_msm_staged(const cuzk_k_bases *h_bases, const void *a, const void *b,
                                         const void *c, size_t n, uint32_t log_m, void *h_out,
                                         void *out_jacobian, const void *stage_scalars, size_t stage_n,
                                         const cuzk_k_msm_job *next_job, cuzk_k_staged **staged);
/* cuzk_k_msm_batch, where every job whose host_scalars and n equal the staged vector's reads the
 * staged device copy instead of uploading them. That host memory must not have changed since
 * the staging call. staged may be NULL (= cuzk_k_msm_batch); it stays valid after the call. A
 * device-only staged vector (cuzk_k_compute_h_msm_witness) has no host copy: a job naming its
 * key with another length is refused (CUZK_K_ERR_RANGE). */
cuzk_kresult cuzk_k_msm_batch_staged(const cuzk_k_msm_job *jobs, size_t count, const cuzk_k_staged *staged);
/* Frees the staged device copy (NULL is allowed). */
cuzk_kresult cuzk_k_staged_free(cuzk_k_staged *staged);
/* The witness path: a compiled circuit resident on the device, and a, b, c evaluated there from
 * a compact witness (kernels/NOTES.md, "The witness path").
 *
 * A circuit: A, B, C over z = (inputs, aux), `rows` rows each (the circuit's constraints, then
 * one per input), column j < num_inputs = input j, else aux j - num_inputs; packed
 * (src/compiled/packed.rs): each term one word `column << 2 | tag`, tag 0 = +1, 1 = -1, 2 = a
 * constant whose index into constants (num_constants scalars, Montgomery) is the next word;
 * `lens` the words of each row; `group_starts` the first word of each group of 32 rows, then
 * num_words. Uploaded once into counted device memory (cudaErrorMemoryAllocation past the
 * limit), checked on the device on upload: every group's lengths add up to its span, from 0 to
 * num_words; every row's words parse (no tag 3, a constant's index word inside the row and
 * < num_constants); every column < inputs + aux (CUZK_K_ERR_RANGE otherwise). Sizes: rows <
 * 2^31, num_words < 2^32 a matrix, inputs + aux <= 2^30. */
typedef struct cuzk_k_packed_desc {
    const uint16_t *lens;         /* rows */
    const uint32_t *group_starts; /* ceil(rows / 32) + 1 */
    const uint32_t *words;        /* num_words */
    size_t num_words;
} cuzk_k_packed_desc;
typedef struct cuzk_k_circuit_desc {
    size_t rows, num_inputs, num_aux;
    cuzk_k_packed_desc a, b, c;
    const void *constants;
    size_t num_constants;
} cuzk_k_circuit_desc;
typedef struct cuzk_k_circuit cuzk_k_circuit;
cuzk_kresult cuzk_k_circuit_upload(int device, const cuzk_k_circuit_desc *desc, cuzk_k_circuit **out);
/* The same in pieces, so the host never holds the packed form whole: begin allocates the counted
 * block for the sizes (the checks of the sizes as above); put copies `bytes` from src to byte
 * `offset` of one part (CUZK_K_ERR_RANGE past its end, or once finished), and src may be reused
 * when it returns; finish checks the whole on the device as cuzk_k_circuit_upload does and makes
 * the circuit usable (CUZK_K_ERR_RANGE from every call that reads one not finished). Free it
 * with cuzk_k_circuit_free, finished or not. */
typedef struct cuzk_k_circuit_sizes {
    size_t rows, num_inputs, num_aux, num_constants;
    size_t num_words[3]; /* A, B, C */
} cuzk_k_circuit_sizes;
#define CUZK_K_CIRCUIT_PART_LENS(k) (3 * (k))             /* rows u16 */
#define CUZK_K_CIRCUIT_PART_GROUP_STARTS(k) (3 * (k) + 1) /* ceil(rows / 32) + 1 u32 */
#define CUZK_K_CIRCUIT_PART_WORDS(k) (3 * (k) + 2)        /* num_words[k] u32 */
#define CUZK_K_CIRCUIT_PART_CONSTANTS 9                   /* num_constants scalars */
#define CUZK_K_CIRCUIT_PARTS 10
cuzk_kresult cuzk_k_circuit_begin(int device, const cuzk_k_circuit_sizes *sizes, cuzk_k_circuit **out);
cuzk_kresult cuzk_k_circuit_put(cuzk_k_circuit *circuit, int part, size_t offset, const void *src, size_t bytes);
cuzk_kresult cuzk_k_circuit_finish(cuzk_k_circuit *circuit);
cuzk_kresult cuzk_k_circuit_free(cuzk_k_circuit *circuit); /* NULL is allowed */
size_t cuzk_k_circuit_bytes(const cuzk_k_circuit *circuit); /* counted device bytes it holds */

/* A witness: the inputs dense (num_inputs scalars, the one first); the aux compact — value j is
 * a bit when bit j%64 of bit_mask[j/64] is set, its value then bit j%64 of bit_values[j/64];
 * every other value is others[others_before[j/64] + (non-bits before j in its word)] — or, with
 * bit_mask NULL, dense: others holds all num_aux values (num_others = num_aux). An index past
 * num_others is refused (CUZK_K_ERR_RANGE). Scalars in Montgomery form. */
typedef struct cuzk_k_witness {
    const void *inputs;
    size_t num_inputs;
    size_t num_aux;
    const uint64_t *bit_mask;        /* ceil(num_aux / 64) words, or NULL (dense) */
    const uint64_t *bit_values;      /* ceil(num_aux / 64) words */
    const uint32_t *others_before;   /* ceil(num_aux / 64) counts */
    const void *others;
    size_t num_others;
} cuzk_k_witness;

/* cuzk_k_compute_h_msm_staged with a, b, c = A z, B z, C z evaluated on the device: the witness
 * is copied in compact (and checked there), each of a, b, c is made from it just before its
 * transform (c after a and b are multiplied: two vectors of 2^log_m at a time, not three), and
 * after the H MSM the aux is expanded and kept for the batch in *staged (never NULL on success)
 * as a device-only vector named aux_key: the batch's jobs over aux pass host_scalars = aux_key and n = num_aux,
 * and no host copy of aux is ever read. circuit and h_bases on one device; rows <= 2^log_m. */
cuzk_kresult cuzk_k_compute_h_msm_witness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                          const cuzk_k_witness *witness, uint32_t log_m, void *h_out,
                                          void *out_jacobian, const void *aux_key, const cuzk_k_msm_job *next_job,
                                          cuzk_k_staged **staged);
/* A sector's partitions proved together over streamed parameters (issue 47): each witness kept
 * on the device across calls in its compact form (copied in and checked as
 * cuzk_k_compute_h_msm_witness does, against the circuit's counts); H and its MSM for each; then
 * each aux MSM (L, A, B_G1, B_G2 over aux) once for all of them, so a streamed chunk of bases
 * crosses PCIe once for the k witnesses instead of once each. */
typedef struct cuzk_k_dwitness cuzk_k_dwitness;
cuzk_kresult cuzk_k_dwitness_upload(const cuzk_k_circuit *circuit, const cuzk_k_witness *witness,
                                    cuzk_k_dwitness **out);
cuzk_kresult cuzk_k_dwitness_free(cuzk_k_dwitness *witness); /* NULL is allowed */
/* H and its MSM from a device witness (a, b, c by SpMV over its compact form); no staged vector. */
cuzk_kresult cuzk_k_compute_h_msm_dwitness(const cuzk_k_bases *h_bases, const cuzk_k_circuit *circuit,
                                           const cuzk_k_dwitness *witness, uint32_t log_m, void *h_out,
                                           void *out_jacobian);
/* One MSM over the aux of k device witnesses (all of one aux count, on the bases' device):
 * bases from base_offset, density over aux (NULL: every value), outs[i] the i-th result
 * (blst_p1 or blst_p2 by the bases' group). Streamed bases cross once for all k. */
cuzk_kresult cuzk_k_msm_aux_many(const cuzk_k_bases *bases, size_t base_offset, const uint64_t *density,
                                 const cuzk_k_dwitness *const *witnesses, size_t k, void *const *outs);
/* a, b, c (rows scalars each) and the expanded aux (num_aux scalars) of a witness, evaluated on
 * the device and copied out; any output may be NULL (tests, benchmarks). */
cuzk_kresult cuzk_k_circuit_evaluate(const cuzk_k_circuit *circuit, const cuzk_k_witness *witness, void *a_out,
                                     void *b_out, void *c_out, void *aux_out);

/* Device memory accounting. cuzk counts the device memory it holds on each device (scratch
 * buffers in use, NTT tables, resident bases) and, with a limit set, fails an allocation past it
 * with cudaErrorMemoryAllocation, as a GPU with that much memory would. limit_bytes 0 = none.
 * stream_chunk_points > 0 forces the number of bases per chunk of streamed MSMs (tests). */
cuzk_kresult cuzk_k_device_set_limit(int device, size_t limit_bytes, size_t stream_chunk_points);
typedef struct cuzk_k_mem_stats {
    size_t limit;               /* 0 = none */
    size_t used;                /* counted bytes held now */
    size_t peak;                /* highest `used` since the last reset */
    size_t pool_reserved;       /* bytes cuzk's memory pool holds from the device now */
    size_t pool_reserved_high;  /* its high-water mark since the last reset */
} cuzk_k_mem_stats;
/* Fills *out; reset_peak != 0 then restarts both high-water marks from now. */
cuzk_kresult cuzk_k_device_mem_stats(int device, int reset_peak, cuzk_k_mem_stats *out);

/* Free the per-device caches of `device`: NTT twiddle / coset tables and every byte cuzk's
 * memory pool keeps in reserve. Resident bases (cuzk_k_bases) are freed only by
 * cuzk_k_bases_free. Together they bring the device back to what it used before cuzk. */
cuzk_kresult cuzk_k_device_release_caches(int device);

/* Fault injection: compiled only with -DCUZK_FAULT_INJECTION (the crate's `fault-injection`
 * feature, for tests); absent from normal builds. cuzk_k_fault_arm makes the next `count` times
 * a call reaches (phase, index) fail there with CUDA error `code`, as if a CUDA call had
 * failed; index -1 matches any index. The same phases name where a failed call was (cuzk_kresult's
 * phase and index), in every build. Phases and their indices: */
#define CUZK_K_PHASE_UPLOAD   1 /* bases upload, after the copy (index 0) */
#define CUZK_K_PHASE_ABC_COPY 2 /* compute_h: all three a/b/c copies queued, none waited (0) */
#define CUZK_K_PHASE_NTT      3 /* compute_h steps: 3k = iNTT of a/b (k = 0,1), 3k+1 its last
                                   stages with the coset scale, 3k+2 coset NTT; then 9 (below);
                                   6 and 7 c's iNTT and its last stages (8 is unused: c is not
                                   taken to the coset); then 10 and 11: */
#define CUZK_K_NTT_STEP_POINTWISE 9  /*   A*B/Z */
#define CUZK_K_NTT_STEP_INVERSE   10 /*   the final inverse NTT */
#define CUZK_K_NTT_STEP_GATHER    11 /*   H's coefficients gathered, c's subtracted */
#define CUZK_K_PHASE_H_MSM    4 /* compute_h_msm: before the H MSM (0) */
#define CUZK_K_PHASE_MSM_JOB  5 /* msm_batch: job `index`, with job index+1's copy in flight */
#define CUZK_K_PHASE_MSM      6 /* msm_g1 / msm_g2 (0) */
#ifdef CUZK_FAULT_INJECTION
cuzk_kresult cuzk_k_fault_arm(int phase, int index, int code, int count); /* count 0 disarms */
int cuzk_k_fault_fired(void);                                  /* faults fired so far */
int cuzk_k_fault_streams_busy(int device); /* 1 if work is still queued on cuzk's streams */
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUZK_KERNELS_H */
