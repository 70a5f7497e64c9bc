//! `cuzk_filecoin_[submit_]{window_post,window_post_partition,winning_post}`: Window PoSt
//! (whole or one partition) and Winning PoSt from vanilla proofs.

use std::ffi::c_char;

#[cfg(feature = "filecoin")]
use super::job::hand_out;
use super::job::{cuzk_filecoin_job, submit_and_wait};
#[cfg(not(feature = "filecoin"))]
use super::unsupported;
#[cfg(feature = "filecoin")]
use super::{options, post_type};
use crate::ffi::boundary::{call, AbiResult, Out};
use crate::ffi::bytes::{bytes32, cuzk_byte_slice, cuzk_bytes, vanilla};
use crate::ffi::engine::cuzk_engine;
use crate::ffi::status::cuzk_status;

/// Which PoSt.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
enum PoSt {
    Window,
    /// One partition of a Window PoSt, at this index.
    WindowPartition(u64),
    Winning,
}

/// The body of the three PoSt submit calls (each blocking call is its submit call and a wait).
///
/// # Safety
/// As the entry points'.
#[allow(clippy::too_many_arguments)]
unsafe fn post(
    which: PoSt,
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: Out<*mut cuzk_filecoin_job>,
) -> AbiResult {
    let randomness = bytes32(randomness, "randomness")?;
    let prover_id = bytes32(prover_id, "prover_id")?;
    // SAFETY: per the contract.
    let proofs = unsafe { vanilla(vanilla_proofs, n)? };
    #[cfg(feature = "filecoin")]
    {
        use crate::filecoin as fc;
        let typ = post_type(post_proof)?;
        // SAFETY: per the contract.
        let options = unsafe { options(engine, priority) };
        let job = match which {
            PoSt::Window => fc::submit_window_post_with_vanilla(typ, &randomness, prover_id, &proofs, options),
            PoSt::WindowPartition(k) => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                fc::submit_single_partition_window_post_with_vanilla(typ, &randomness, prover_id, &proofs, k, options)
            }
            PoSt::Winning => fc::submit_winning_post_with_vanilla(typ, &randomness, prover_id, &proofs, options),
        };
        hand_out(out, job)
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (which, engine, priority, post_proof, randomness, prover_id, proofs, out);
        unsupported()
    }
}

/// Window PoSt from vanilla proofs, as filecoin-ffi's `generate_window_post_with_vanilla`:
/// `post_proof` an `abi.RegisteredPoStProof` Window value (5..=9, or 10..=14 for the V1_1
/// ones); `randomness` and `prover_id` 32 bytes each; `vanilla_proofs` the `n` per-sector
/// vanilla proofs (filecoin-ffi's `generate_single_vanilla_proof`), in ascending sector number
/// order, each sector once — the order filecoin-proofs' `verify_window_post` and the miner
/// actor read the sectors in; any other order is `CUZK_STATUS_INVALID_ARGUMENT` naming the
/// first vanilla proof out of it (a proof of the sectors in another order would not verify
/// on chain). Blocks; on success `*out` holds the proof bytes (192 per partition, in order).
/// `engine`, `priority`: as for `cuzk_filecoin_seal_commit_phase2`. Thread-safe.
///
/// # Safety
/// `engine` NULL or live; `randomness`, `prover_id` 32 readable bytes each; `vanilla_proofs`
/// `n` slices of readable bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_window_post(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_window_post(
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_window_post` without blocking: on success `*out` holds the job. Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_window_post`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_window_post(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        unsafe {
            post(
                PoSt::Window,
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                out,
            )
        }
    })
}

/// One partition of a Window PoSt, as filecoin-ffi's
/// `generate_single_partition_window_post_with_vanilla` (Curio's
/// `GenerateSinglePartitionWindowPoStWithVanilla`): `vanilla_proofs` are the `n` vanilla
/// proofs of that partition's sectors only, in ascending sector number order as for
/// `cuzk_filecoin_window_post` (at most the partition's sector count), `partition_index` its
/// index in the Window PoSt (one SubmitWindowedPoSt message's partitions, from 0): below
/// `min(25000 / sectors per partition, 3000)` — 10 for 32 and 64 GiB — else
/// `CUZK_STATUS_INVALID_ARGUMENT`, before anything is built. Blocks; on success
/// `*out` holds the partition's 192-byte proof (filecoin-ffi's `PartitionProof` bytes; the
/// partitions' proofs concatenated in index order are the Window PoSt, as filecoin-proofs'
/// `merge_window_post_partition_proofs` makes it). Otherwise as `cuzk_filecoin_window_post`.
/// Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_window_post`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_window_post_partition(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    partition_index: u64,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_window_post_partition(
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                partition_index,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_window_post_partition` without blocking: on success `*out` holds the job.
/// Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_window_post`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_window_post_partition(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    partition_index: u64,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        let which = PoSt::WindowPartition(partition_index);
        // SAFETY: per the contract.
        unsafe {
            post(
                which,
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                out,
            )
        }
    })
}

/// Winning PoSt from vanilla proofs, as filecoin-ffi's `generate_winning_post_with_vanilla`:
/// `post_proof` an `abi.RegisteredPoStProof` Winning value (0..=4); the rest as for
/// `cuzk_filecoin_window_post`. Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_window_post`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_winning_post(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_winning_post(
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_winning_post` without blocking: on success `*out` holds the job.
/// Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_window_post`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_winning_post(
    engine: *const cuzk_engine,
    priority: i32,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        unsafe {
            post(
                PoSt::Winning,
                engine,
                priority,
                post_proof,
                randomness,
                prover_id,
                vanilla_proofs,
                n,
                out,
            )
        }
    })
}
