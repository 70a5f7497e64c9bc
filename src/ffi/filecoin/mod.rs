//! `cuzk_filecoin_*`: Filecoin proofs (PoRep C2, SnapDeals, Window PoSt whole or one partition,
//! Winning PoSt) from the bytes filecoin-ffi takes, proved by cuzk as jobs of an engine (the
//! process-wide Filecoin engine unless a call names one); proof bytes come back in a
//! `cuzk_bytes` the caller frees with `cuzk_bytes_free`. Each proof has a blocking call and a
//! `cuzk_filecoin_submit_*` twin that returns a `cuzk_filecoin_job` at once (see [`job`]);
//! the blocking call is that twin and `cuzk_filecoin_job_wait`, so both check the same inputs
//! in the same order and give the same statuses.
//!
//! The functions exist in every build; a library built without the `filecoin` feature
//! answers `CUZK_STATUS_UNSUPPORTED` (`cuzk_filecoin_available()` tells beforehand). Proof
//! type numbers are Filecoin's registered-proof values, as go-state-types' `abi` package has
//! them (`abi.RegisteredPoStProof`, `abi.RegisteredUpdateProof`).
//!
//! One file per proof family, as in `src/filecoin/`: [`seal`] (PoRep C2), [`snap`]
//! (SnapDeals), [`post`] (Window and Winning PoSt), and [`job`] (the submitted jobs); this
//! module holds what they share: proof-type decoding, the priorities, the engine and priority
//! options, and the process-wide engine's configuration.

pub mod job;
pub mod post;
pub mod seal;
pub mod snap;

use std::ffi::c_char;

pub use self::post::*;
pub use self::seal::*;
pub use self::snap::*;
pub use crate::ffi::bytes::{cuzk_byte_slice, cuzk_bytes, cuzk_bytes_free};

use crate::ffi::boundary::{arg, call, call_value, AbiResult};
#[cfg(feature = "filecoin")]
use crate::ffi::engine::cuzk_engine;
use crate::ffi::engine_config::cuzk_engine_config;
use crate::ffi::status::{cuzk_status, AbiError};

/// The `priority` argument that means "the proof kind's priority" (`CUZK_PRIORITY_*`).
pub const CUZK_PRIORITY_DEFAULT: i32 = i32::MIN;
/// Winning PoSt's default engine priority (it must land within an epoch: first).
pub const CUZK_PRIORITY_WINNING_POST: i32 = 300;
/// Window PoSt's default engine priority.
pub const CUZK_PRIORITY_WINDOW_POST: i32 = 200;
/// PoRep commit phase 2's default engine priority.
pub const CUZK_PRIORITY_SEAL_COMMIT: i32 = 100;
/// SnapDeals' default engine priority.
pub const CUZK_PRIORITY_SNAP_DEALS: i32 = 100;

/// Whether the library was built with the `filecoin` feature (the `cuzk_filecoin_*` proving
/// functions work). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_filecoin_available() -> bool {
    call_value(false, || cfg!(feature = "filecoin"))
}

/// Writes the 32-byte prover id filecoin-ffi's Go side makes from a miner actor id
/// (`toProverID`: the payload of the ID address, the unsigned LEB128 varint of `miner_id`,
/// zero-padded) to `out` (32 writable bytes). Available in every build. Thread-safe.
///
/// # Safety
/// `out` points to 32 writable bytes; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_prover_id(miner_id: u64, out: *mut u8, err: *mut *mut c_char) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract, 32 writable bytes (NULL is refused).
        let out = unsafe { crate::ffi::boundary::slice_out(out, 32, "out")? };
        out.copy_from_slice(&crate::prover_id::prover_id_from_miner_id(miner_id));
        Ok(())
    })
}

#[cfg(not(feature = "filecoin"))]
pub(super) fn unsupported<T>() -> AbiResult<T> {
    Err(AbiError::Core(crate::error::Error::Unsupported(
        "cuzk was built without the `filecoin` feature (rebuild with `--features filecoin`)".into(),
    )))
}

#[cfg(feature = "filecoin")]
fn post_type(v: u64) -> AbiResult<crate::filecoin::RegisteredPoStProof> {
    crate::filecoin::post_proof_from_abi(v).ok_or_else(|| {
        AbiError::invalid(format!(
            "{v} is not a registered PoSt proof (abi.RegisteredPoStProof 0..=14)"
        ))
    })
}

#[cfg(feature = "filecoin")]
fn update_type(v: u64) -> AbiResult<crate::filecoin::RegisteredUpdateProof> {
    crate::filecoin::update_proof_from_abi(v).ok_or_else(|| {
        AbiError::invalid(format!(
            "{v} is not a registered update proof (abi.RegisteredUpdateProof 0..=4)"
        ))
    })
}

/// The engine and priority every proof call takes first: `engine` NULL for the process-wide
/// Filecoin engine (started at the first proof; `cuzk_filecoin_configure` configures it),
/// `priority` `CUZK_PRIORITY_DEFAULT` for the proof kind's (`CUZK_PRIORITY_WINNING_POST` >
/// `CUZK_PRIORITY_WINDOW_POST` > `CUZK_PRIORITY_SEAL_COMMIT` = `CUZK_PRIORITY_SNAP_DEALS`).
///
/// # Safety
/// `engine` NULL or live for the call.
#[cfg(feature = "filecoin")]
unsafe fn options<'a>(engine: *const cuzk_engine, priority: i32) -> crate::filecoin::Options<'a> {
    crate::filecoin::Options {
        // SAFETY: NULL or live per the caller's contract.
        engine: unsafe { engine.as_ref() }.map(|e| &e.inner),
        priority: (priority != CUZK_PRIORITY_DEFAULT).then_some(priority),
        rng: None,
    }
}

/// Configures the process-wide Filecoin engine (the one the proof calls use when their
/// `engine` is NULL), which starts with it at the first such proof; without this call it
/// starts from `cuzk_engine_config_default()`'s values with a budget of three quarters of the
/// host's memory, changed by the environment variables `CUZK_FILECOIN_GPUS` (`cpu`, `auto`,
/// or device numbers `0,1`), `CUZK_FILECOIN_BUDGET` (bytes or `96GiB`) and
/// `CUZK_FILECOIN_SYNTHESIS_THREADS`. Either way Winning PoSt is urgent: it is dispatched past
/// the pacer and the next free GPU waits for it. Fails with `CUZK_STATUS_INVALID_ARGUMENT` once the
/// engine has started, and for a field `cuzk_engine_new` would refuse (an enum out of range, a
/// count past its `CUZK_MAX_*` bound: checked here, in every build, not at the first proof).
/// Thread-safe.
///
/// # Safety
/// `config` live; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_configure(
    config: *const cuzk_engine_config,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: live per the contract.
        let config = unsafe { arg(config, "config") }?;
        // Checked in every build: a bad field is INVALID_ARGUMENT, here and not at the first proof.
        let config = crate::ffi::engine_config::engine_config(config)?;
        #[cfg(feature = "filecoin")]
        {
            let mut config = config;
            // As the environment's configuration: Winning PoSt is urgent.
            config.urgent_priority = Some(crate::filecoin::PRIORITY_WINNING_POST);
            crate::filecoin::configure(config)?;
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = config;
            unsupported()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::job::cuzk_filecoin_job;
    use super::*;

    #[test]
    fn prover_id_matches_the_library_one() {
        for id in [0, 1, 127, 128, 1000, 1 << 40, u64::MAX] {
            let mut out = [0xaau8; 32];
            // SAFETY: 32 writable bytes; NULL err.
            let status = unsafe { cuzk_filecoin_prover_id(id, out.as_mut_ptr(), std::ptr::null_mut()) };
            assert_eq!(status, cuzk_status::Ok);
            assert_eq!(out, crate::prover_id::prover_id_from_miner_id(id));
        }
    }

    #[test]
    fn null_and_bad_arguments_are_statuses() {
        let mut out = cuzk_bytes {
            data: std::ptr::null_mut(),
            len: 0,
        };
        let id = [0u8; 32];
        // SAFETY: NULL phase1_output with a length is refused before any read.
        let status = unsafe {
            cuzk_filecoin_seal_commit_phase2(
                std::ptr::null(),
                CUZK_PRIORITY_DEFAULT,
                std::ptr::null(),
                10,
                1,
                id.as_ptr(),
                &mut out,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, cuzk_status::NullArgument);
        let json = b"{}";
        // SAFETY: valid pointers; the JSON does not decode (or the feature is off).
        let status = unsafe {
            cuzk_filecoin_seal_commit_phase2(
                std::ptr::null(),
                CUZK_PRIORITY_DEFAULT,
                json.as_ptr(),
                json.len(),
                1,
                id.as_ptr(),
                &mut out,
                std::ptr::null_mut(),
            )
        };
        let expected = if cfg!(feature = "filecoin") {
            cuzk_status::InvalidArgument
        } else {
            cuzk_status::Unsupported
        };
        assert_eq!(status, expected);
        let comm = [1u8; 32];
        // SAFETY: an update proof type out of range (or the feature is off); no vanilla proofs.
        let status = unsafe {
            cuzk_filecoin_snap_prove(
                std::ptr::null(),
                CUZK_PRIORITY_DEFAULT,
                77,
                std::ptr::null(),
                0,
                comm.as_ptr(),
                comm.as_ptr(),
                comm.as_ptr(),
                &mut out,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, expected);
        // SAFETY: NULL randomness is refused.
        let status = unsafe {
            cuzk_filecoin_winning_post(
                std::ptr::null(),
                CUZK_PRIORITY_DEFAULT,
                0,
                std::ptr::null(),
                id.as_ptr(),
                std::ptr::null(),
                0,
                &mut out,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, cuzk_status::NullArgument);
        assert!(out.data.is_null(), "out is written only on success");
        assert_eq!(cuzk_filecoin_available(), cfg!(feature = "filecoin"));
        // A bad CID is refused naming it (or the feature is off); no job is written.
        let mut job: *mut cuzk_filecoin_job = std::ptr::null_mut();
        let cid = [1u8, 0x55, 0x12, 0x20];
        let mut msg: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid pointers and lengths; one update proof type (2 KiB).
        let status = unsafe {
            cuzk_filecoin_submit_snap_prove_cids(
                std::ptr::null(),
                CUZK_PRIORITY_DEFAULT,
                0,
                std::ptr::null(),
                0,
                cid.as_ptr(),
                cid.len(),
                cid.as_ptr(),
                cid.len(),
                cid.as_ptr(),
                cid.len(),
                &mut job,
                &mut msg,
            )
        };
        assert_eq!(status, expected);
        assert!(job.is_null());
        // SAFETY: the message the call wrote.
        let text = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy().into_owned();
        // SAFETY: freed once.
        unsafe { crate::ffi::cuzk_string_free(msg) };
        if cfg!(feature = "filecoin") {
            assert!(text.contains("key") && text.contains("codec 0x55"), "{text}");
        }
    }

    #[cfg(feature = "filecoin")]
    #[test]
    fn the_priority_constants_are_the_librarys() {
        use crate::filecoin as fc;
        assert_eq!(CUZK_PRIORITY_WINNING_POST, fc::PRIORITY_WINNING_POST);
        assert_eq!(CUZK_PRIORITY_WINDOW_POST, fc::PRIORITY_WINDOW_POST);
        assert_eq!(CUZK_PRIORITY_SEAL_COMMIT, fc::PRIORITY_SEAL_COMMIT);
        assert_eq!(CUZK_PRIORITY_SNAP_DEALS, fc::PRIORITY_SNAP_DEALS);
    }
}
