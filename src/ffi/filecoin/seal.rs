//! `cuzk_filecoin_[submit_]seal_commit_phase2`: PoRep commit phase 2 (C2) from filecoin-ffi's
//! commit-phase-1 output.

use std::ffi::c_char;

#[cfg(feature = "filecoin")]
use super::job::hand_out;
use super::job::{cuzk_filecoin_job, submit_and_wait};
#[cfg(feature = "filecoin")]
use super::options;
#[cfg(not(feature = "filecoin"))]
use super::unsupported;
use crate::ffi::boundary::{call, slice, AbiResult, Out};
use crate::ffi::bytes::{bytes32, cuzk_bytes};
use crate::ffi::engine::cuzk_engine;
use crate::ffi::status::cuzk_status;

/// PoRep commit phase 2, as filecoin-ffi's `seal_commit_phase2`: `phase1_output` is the
/// commit-phase-1 output as filecoin-ffi returns it (filecoin-proofs-api's JSON; it names its
/// registered seal proof), `prover_id` 32 bytes (see `cuzk_filecoin_prover_id`). Blocks; on
/// success `*out` holds the proof bytes (192 per partition, in order; free with
/// `cuzk_bytes_free`). `engine` and `priority`: see the header's Filecoin notes (NULL and
/// `CUZK_PRIORITY_DEFAULT`: the process-wide engine, the kind's priority). Parameters come
/// from filecoin-proofs' cache (`FIL_PROOFS_PARAMETER_CACHE`); a missing or truncated file
/// fails with `CUZK_STATUS_PARAMS_IO` / `CUZK_STATUS_PARAMS_TRUNCATED` and a message naming
/// it. Thread-safe.
///
/// # Safety
/// `engine` NULL or live; `phase1_output` `phase1_output_len` readable bytes; `prover_id` 32
/// readable bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_seal_commit_phase2(
    engine: *const cuzk_engine,
    priority: i32,
    phase1_output: *const u8,
    phase1_output_len: usize,
    sector_id: u64,
    prover_id: *const u8,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_seal_commit_phase2(
                engine,
                priority,
                phase1_output,
                phase1_output_len,
                sector_id,
                prover_id,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_seal_commit_phase2` without blocking: on success `*out` holds the job
/// (`cuzk_filecoin_job_wait` gives the bytes; free it with `cuzk_filecoin_job_free`). Inputs
/// are checked and the parameters loaded before it returns. Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_seal_commit_phase2`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_seal_commit_phase2(
    engine: *const cuzk_engine,
    priority: i32,
    phase1_output: *const u8,
    phase1_output_len: usize,
    sector_id: u64,
    prover_id: *const u8,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        unsafe {
            seal(
                engine,
                priority,
                phase1_output,
                phase1_output_len,
                sector_id,
                prover_id,
                out,
            )
        }
    })
}

/// # Safety
/// As the entry points'.
unsafe fn seal(
    engine: *const cuzk_engine,
    priority: i32,
    phase1_output: *const u8,
    phase1_output_len: usize,
    sector_id: u64,
    prover_id: *const u8,
    out: Out<*mut cuzk_filecoin_job>,
) -> AbiResult {
    // SAFETY: per the contract.
    let c1 = unsafe { slice(phase1_output, phase1_output_len, "phase1_output")? };
    let prover_id = bytes32(prover_id, "prover_id")?;
    #[cfg(feature = "filecoin")]
    {
        // SAFETY: per the contract.
        let options = unsafe { options(engine, priority) };
        hand_out(
            out,
            crate::filecoin::submit_seal_commit_phase2(c1, prover_id, sector_id, options),
        )
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (engine, priority, c1, prover_id, sector_id, out);
        unsupported()
    }
}
