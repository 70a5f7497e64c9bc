//! `cuzk_prover`: proves batches of assignments; and `cuzk_verify`.

use std::ffi::c_char;
use std::time::Duration;

use super::assignment::cuzk_assignment;
use super::boundary::{
    arg, call, call_value, copied, into_handle, room, slice, slice_out, take_handle, AbiResult, Out,
};
use super::params::cuzk_params;
use super::pool::cuzk_pool;
use super::scalar;
use super::status::{cuzk_status, enum_arg, AbiError, Named};
use crate::assignment::ProvingAssignment;
use crate::params::VerifyingKey;
use crate::proof::{verify_proof, PreparedVerifyingKey, Proof};
use crate::prover::{BackendChoice, Prover, Timings};

/// Bytes of one proof (bellperson's encoding: compressed A ‖ B ‖ C).
pub const CUZK_PROOF_BYTES: usize = 192;

/// The caller's buffer for `count` proofs: [`AbiError::BufferTooSmall`] when it is shorter
/// than `count` · [`CUZK_PROOF_BYTES`] (checked before any work, so nothing is lost).
///
/// # Safety
/// `p` NULL or `len` writable bytes, unaliased for `'a`.
pub(crate) unsafe fn proof_buffer<'a>(p: *mut u8, len: usize, count: usize) -> AbiResult<&'a mut [u8]> {
    let needed = count.saturating_mul(CUZK_PROOF_BYTES);
    if len < needed {
        return Err(AbiError::BufferTooSmall {
            what: "proofs_out",
            needed,
            found: len,
        });
    }
    // SAFETY: the caller's contract.
    unsafe { slice_out(p, len, "proofs_out") }
}

/// Writes `proofs` into `dst`, [`CUZK_PROOF_BYTES`] each, in order.
pub(crate) fn write_proofs(dst: &mut [u8], proofs: &[Proof]) {
    for (chunk, proof) in dst.chunks_exact_mut(CUZK_PROOF_BYTES).zip(proofs) {
        chunk.copy_from_slice(&proof.to_bytes());
    }
}

/// Which backend a prover uses: one of the `CUZK_BACKEND_*` values; any other value is
/// refused with `CUZK_STATUS_INVALID_ARGUMENT`.
#[allow(non_camel_case_types)]
pub type cuzk_backend = u32;
/// GPU 0 when the library is built with CUDA and finds a usable GPU, else the CPU (decided
/// once per process and shared by every `Auto` prover).
pub const CUZK_BACKEND_AUTO: cuzk_backend = 0;
/// The host's cores.
pub const CUZK_BACKEND_CPU: cuzk_backend = 1;
/// The GPU named by `gpu_index`; `CUZK_STATUS_NO_GPU` if it is not usable.
pub const CUZK_BACKEND_GPU: cuzk_backend = 2;

/// `backend` (GPU `gpu` for `CUZK_BACKEND_GPU`), or why not.
pub(crate) fn backend_choice(what: &str, backend: cuzk_backend, gpu: usize) -> AbiResult<BackendChoice> {
    type MakeBackend = fn(usize) -> BackendChoice;
    let kinds: [Named<MakeBackend>; 3] = [
        ("CUZK_BACKEND_AUTO", |_| BackendChoice::Auto),
        ("CUZK_BACKEND_CPU", |_| BackendChoice::Cpu),
        ("CUZK_BACKEND_GPU", BackendChoice::Gpu),
    ];
    Ok(enum_arg(what, backend, &kinds)?(gpu))
}

/// Where the time of a `cuzk_prove` call went, in nanoseconds, summed over the batch.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct cuzk_timings {
    /// Synthesis (0 here: assignments are made before `cuzk_prove`).
    pub synthesis_ns: u64,
    /// H = (A·B − C)/Z by NTTs (on the GPU, with the H MSM fused in).
    pub h_ns: u64,
    /// The H MSM.
    pub msm_h_ns: u64,
    /// The L MSM.
    pub msm_l_ns: u64,
    /// The A MSM.
    pub msm_a_ns: u64,
    /// The B MSM in G1.
    pub msm_b_g1_ns: u64,
    /// The B MSM in G2.
    pub msm_b_g2_ns: u64,
    /// The L, A, B MSMs as one batched call (GPU; then the four above are 0).
    pub msm_batch_ns: u64,
    /// Randomising with r, s and encoding.
    pub tail_ns: u64,
    /// The whole call.
    pub total_ns: u64,
}

impl From<&Timings> for cuzk_timings {
    fn from(t: &Timings) -> Self {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Self {
            synthesis_ns: ns(t.synthesis),
            h_ns: ns(t.h),
            msm_h_ns: ns(t.msm_h),
            msm_l_ns: ns(t.msm_l),
            msm_a_ns: ns(t.msm_a),
            msm_b_g1_ns: ns(t.msm_b_g1),
            msm_b_g2_ns: ns(t.msm_b_g2),
            msm_batch_ns: ns(t.msm_batch),
            tail_ns: ns(t.tail),
            total_ns: ns(t.total),
        }
    }
}

/// A prover: a backend and an optional pool. Opaque; thread-safe: several threads may call
/// `cuzk_prove` on one prover at once.
#[allow(non_camel_case_types)]
pub struct cuzk_prover {
    pub(crate) inner: Prover,
}

/// Makes a prover on `backend` (`gpu_index` is used only with `CUZK_BACKEND_GPU`). `pool`
/// (may be NULL) is kept by the prover (the caller may free its own handle at once). On
/// success `*out` holds the prover (free with `cuzk_prover_free`). Thread-safe.
///
/// # Safety
/// `pool` NULL or live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_prover_new(
    backend: cuzk_backend,
    gpu_index: u32,
    pool: *const cuzk_pool,
    out: *mut *mut cuzk_prover,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        let choice = backend_choice("backend", backend, gpu_index as usize)?;
        let mut inner = Prover::new().with_backend(choice)?;
        // SAFETY: NULL or live per the contract.
        if let Some(pool) = unsafe { pool.as_ref() } {
            inner = inner.with_pool(pool.inner.clone());
        }
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_prover { inner })) };
        Ok(())
    })
}

/// Frees a prover. NULL is accepted. Not to be called while another thread uses it.
///
/// # Safety
/// `prover` is NULL or from `cuzk_prover_new`, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_prover_free(prover: *mut cuzk_prover) {
    // SAFETY: per the contract.
    super::boundary::call_void(|| drop(unsafe { take_handle(prover) }))
}

/// The prover's backend, "cpu" or "cuda" (a static string; "" for NULL). Thread-safe.
///
/// # Safety
/// `prover` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn cuzk_prover_backend_name(prover: *const cuzk_prover) -> *const c_char {
    call_value(c"".as_ptr(), || {
        // SAFETY: NULL or live per the contract.
        match unsafe { prover.as_ref() }.map(|p| p.inner.backend_name()) {
            Some("cpu") => c"cpu".as_ptr(),
            Some("cuda") => c"cuda".as_ptr(),
            Some(_) => c"other".as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// Takes ownership of every distinct non-NULL assignment in the array (all of them, even when
/// the call then fails).
///
/// # Safety
/// `p` holds `count` pointers, each NULL or a live assignment.
pub(crate) unsafe fn take_assignments(
    p: *const *mut cuzk_assignment,
    count: usize,
) -> AbiResult<Vec<ProvingAssignment>> {
    // SAFETY: per the contract.
    let ptrs = unsafe { slice(p, count, "assignments") }?;
    let room_for_all = copied(ptrs).and_then(|sorted| Ok((sorted, room(count)?)));
    let (mut sorted, mut taken) = match room_for_all {
        Ok(r) => r,
        Err(e) => {
            // No memory to sort them: each distinct one freed all the same (consumed).
            for (i, &a) in ptrs.iter().enumerate() {
                if !ptrs[..i].contains(&a) {
                    // SAFETY: a live handle per the contract, taken once (its first place).
                    drop(unsafe { take_handle(a) });
                }
            }
            return Err(e);
        }
    };
    sorted.sort();
    let has_dup = sorted.windows(2).any(|w| !w[0].is_null() && w[0] == w[1]);
    sorted.dedup();
    // SAFETY: each distinct pointer is a live handle per the contract, taken once.
    taken.extend(sorted.into_iter().filter_map(|a| unsafe { take_handle(a) }));
    if has_dup {
        return Err(AbiError::invalid("an assignment appears twice in the batch"));
    }
    if taken.len() != count {
        return Err(AbiError::Null("assignments[i]"));
    }
    // Back in the caller's order.
    let mut by_addr: Vec<(usize, Box<cuzk_assignment>)> = room(count)?;
    by_addr.extend(taken.into_iter().map(|b| (&*b as *const _ as usize, b)));
    let mut ordered = room(count)?;
    for &p in ptrs {
        let i = by_addr
            .iter()
            .position(|(a, _)| *a == p as usize)
            .expect("every pointer was taken");
        ordered.push(by_addr.swap_remove(i).1.inner);
    }
    Ok(ordered)
}

/// Proves a batch: `count` assignments (an array of handles) with `params`, writing
/// `count` proofs of 192 bytes each, in order, to `proofs_out` (`proofs_out_len` bytes, at
/// least 192 · count). Blocks until done.
///
/// Randomness: `r` and `s` either both NULL (drawn from the operating system's RNG, as a
/// zero-knowledge proof needs) or both hold `count` canonical 32-byte scalars (for
/// reproducible proofs: the same r, s give bellperson's bytes). `timings` (may be NULL) gets
/// where the time went.
///
/// Ownership: every assignment in the array is **consumed whatever the status** (its
/// buffers go back to their pool); do not free or reuse them. Thread-safe: several threads
/// may prove with one prover and one `params` at once.
///
/// # Safety
/// `prover`, `params` live; `assignments` holds `count` handles; `r`, `s` NULL or
/// `count * 32` bytes; `proofs_out` `proofs_out_len` writable bytes; `timings`, `err` NULL
/// or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_prove(
    prover: *const cuzk_prover,
    params: *const cuzk_params,
    assignments: *const *mut cuzk_assignment,
    count: usize,
    r: *const u8,
    s: *const u8,
    proofs_out: *mut u8,
    proofs_out_len: usize,
    timings: *mut cuzk_timings,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // Taken first, so they are consumed on every path below.
        // SAFETY: per the contract.
        let taken = unsafe { take_assignments(assignments, count) }?;
        // SAFETY: per the contract.
        let (prover, params) = unsafe { (arg(prover, "prover")?, arg(params, "params")?) };
        // SAFETY: per the contract.
        let dst = unsafe { proof_buffer(proofs_out, proofs_out_len, count) }?;
        let (r, s) = match (r.is_null(), s.is_null()) {
            (true, true) => crate::prover::draw_randomness(count, &mut rand_core::OsRng),
            // SAFETY: per the contract.
            (false, false) => unsafe { (scalar::read_all(r, count, "r")?, scalar::read_all(s, count, "s")?) },
            _ => return Err(AbiError::invalid("r and s must both be NULL or both be given")),
        };
        let (proofs, t) = prover.inner.prove_synthesized(taken, &params.inner, &r, &s)?;
        write_proofs(dst, &proofs);
        if !timings.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { timings.write((&t).into()) };
        }
        Ok(())
    })
}

/// Verifies a 192-byte proof against a verifying key (bellperson's format, as
/// `cuzk_params_verifying_key` writes it) and `num_public` public inputs (canonical 32-byte
/// scalars, without the constant one). `*out_valid` is true when the proof verifies and
/// false when it does not (also for a key whose δ is the point at infinity: it vouches for
/// nothing); a malformed key or proof, or the wrong number of inputs, is an error status
/// instead. Thread-safe.
///
/// # Safety
/// `vk` holds `vk_len` bytes, `proof` `proof_len`, `public_inputs` `num_public * 32` (NULL
/// allowed for 0); `out_valid` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_verify(
    vk: *const u8,
    vk_len: usize,
    proof: *const u8,
    proof_len: usize,
    public_inputs: *const u8,
    num_public: usize,
    out_valid: *mut bool,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out_valid, "out_valid")?;
        // SAFETY: per the contract.
        let (vk, proof, inputs) = unsafe {
            (
                slice(vk, vk_len, "vk")?,
                slice(proof, proof_len, "proof")?,
                scalar::read_all(public_inputs, num_public, "public_inputs")?,
            )
        };
        let vk = VerifyingKey::from_bytes(vk)?;
        let proof = Proof::from_bytes(proof)?;
        let valid = verify_proof(&PreparedVerifyingKey::new(&vk), &proof, &inputs)?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(valid) };
        Ok(())
    })
}
