//! `cuzk_filecoin_[submit_]snap_prove[_cids]`: SnapDeals (empty-sector-update) proofs from their
//! vanilla partition proofs, the commitments as 32-byte values or as binary CIDs.

use std::ffi::c_char;

#[cfg(feature = "filecoin")]
use super::job::hand_out;
use super::job::{cuzk_filecoin_job, submit_and_wait};
#[cfg(not(feature = "filecoin"))]
use super::unsupported;
#[cfg(feature = "filecoin")]
use super::{options, update_type};
use crate::ffi::boundary::{call, slice, AbiResult, Out};
use crate::ffi::bytes::{bytes32, cuzk_byte_slice, cuzk_bytes, vanilla};
use crate::ffi::engine::cuzk_engine;
use crate::ffi::status::cuzk_status;

/// SnapDeals: the empty-sector-update proof from its vanilla partition proofs, as
/// filecoin-ffi's `generate_empty_sector_update_proof_with_vanilla`: `update_proof` is an
/// `abi.RegisteredUpdateProof` value (0 = 2 KiB ... 3 = 32 GiB, 4 = 64 GiB); `vanilla_proofs`
/// the `n` partition proofs filecoin-ffi's `generate_empty_sector_update_partition_proofs`
/// returns, in order; the commitments 32 bytes each. Blocks; on success `*out` holds the proof
/// bytes. `engine`, `priority`: as for `cuzk_filecoin_seal_commit_phase2`. Thread-safe.
///
/// # Safety
/// `engine` NULL or live; `vanilla_proofs` `n` slices of readable bytes; the commitments 32
/// readable bytes each; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_snap_prove(
    engine: *const cuzk_engine,
    priority: i32,
    update_proof: u64,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    comm_r_old: *const u8,
    comm_r_new: *const u8,
    comm_d_new: *const u8,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_snap_prove(
                engine,
                priority,
                update_proof,
                vanilla_proofs,
                n,
                comm_r_old,
                comm_r_new,
                comm_d_new,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_snap_prove` without blocking: on success `*out` holds the job. Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_snap_prove`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_snap_prove(
    engine: *const cuzk_engine,
    priority: i32,
    update_proof: u64,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    comm_r_old: *const u8,
    comm_r_new: *const u8,
    comm_d_new: *const u8,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        let comms = [comm_r_old, comm_r_new, comm_d_new];
        // SAFETY: per the contract.
        unsafe {
            snap(
                engine,
                priority,
                update_proof,
                vanilla_proofs,
                n,
                Comms::Raw(comms),
                out,
            )
        }
    })
}

/// The SnapDeals proof as Curio's `GenerateUpdateProofWithVanilla(proofType, key, sealed,
/// unsealed cid.Cid, vproofs)` asks for it: the commitments as binary CIDs (Go's
/// `cid.Cid.Bytes()`): `key` the sector key's CommR and `sealed` the updated replica's
/// (codec fil-commitment-sealed 0xf102, multihash poseidon-bls12_381-a2-fc1 0xb401),
/// `unsealed` the new data's CommD (fil-commitment-unsealed 0xf101, sha2-256-trunc254-padded
/// 0x1012), each with a 32-byte digest. Any other CID is `CUZK_STATUS_INVALID_ARGUMENT` with a
/// message naming the CID and the problem. Otherwise as `cuzk_filecoin_snap_prove`.
/// Thread-safe.
///
/// # Safety
/// `engine` NULL or live; `vanilla_proofs` `n` slices of readable bytes; each CID `*_len`
/// readable bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_snap_prove_cids(
    engine: *const cuzk_engine,
    priority: i32,
    update_proof: u64,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    key: *const u8,
    key_len: usize,
    sealed: *const u8,
    sealed_len: usize,
    unsealed: *const u8,
    unsealed_len: usize,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: the submit call's contract is this one's.
    unsafe {
        submit_and_wait(out, err, |job, err| {
            cuzk_filecoin_submit_snap_prove_cids(
                engine,
                priority,
                update_proof,
                vanilla_proofs,
                n,
                key,
                key_len,
                sealed,
                sealed_len,
                unsealed,
                unsealed_len,
                job,
                err,
            )
        })
    }
}

/// `cuzk_filecoin_snap_prove_cids` without blocking: on success `*out` holds the job.
/// Thread-safe.
///
/// # Safety
/// As `cuzk_filecoin_snap_prove_cids`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_filecoin_submit_snap_prove_cids(
    engine: *const cuzk_engine,
    priority: i32,
    update_proof: u64,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    key: *const u8,
    key_len: usize,
    sealed: *const u8,
    sealed_len: usize,
    unsealed: *const u8,
    unsealed_len: usize,
    out: *mut *mut cuzk_filecoin_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        let cids = [(key, key_len), (sealed, sealed_len), (unsealed, unsealed_len)];
        // SAFETY: per the contract.
        unsafe {
            snap(
                engine,
                priority,
                update_proof,
                vanilla_proofs,
                n,
                Comms::Cids(cids),
                out,
            )
        }
    })
}

/// A SnapDeals proof's commitments as C passes them.
enum Comms {
    /// 32 bytes each: comm_r_old, comm_r_new, comm_d_new.
    Raw([*const u8; 3]),
    /// Binary CIDs with their lengths: key, sealed, unsealed.
    Cids([(*const u8, usize); 3]),
}

/// # Safety
/// As the entry points'.
unsafe fn snap(
    engine: *const cuzk_engine,
    priority: i32,
    update_proof: u64,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    comms: Comms,
    out: Out<*mut cuzk_filecoin_job>,
) -> AbiResult {
    // SAFETY: per the contract.
    let proofs = unsafe { vanilla(vanilla_proofs, n)? };
    let comms = match comms {
        Comms::Raw([r_old, r_new, d_new]) => Ok([
            bytes32(r_old, "comm_r_old")?,
            bytes32(r_new, "comm_r_new")?,
            bytes32(d_new, "comm_d_new")?,
        ]),
        Comms::Cids([(k, kl), (s, sl), (u, ul)]) => {
            // SAFETY: per the contract.
            let cids = unsafe { [slice(k, kl, "key")?, slice(s, sl, "sealed")?, slice(u, ul, "unsealed")?] };
            Err(cids)
        }
    };
    #[cfg(feature = "filecoin")]
    {
        let typ = update_type(update_proof)?;
        // SAFETY: per the contract.
        let options = unsafe { options(engine, priority) };
        let job = match comms {
            Ok([r_old, r_new, d_new]) => crate::filecoin::submit_empty_sector_update_proof_with_vanilla(
                typ, &proofs, r_old, r_new, d_new, options,
            ),
            Err([key, sealed, unsealed]) => {
                crate::filecoin::submit_update_proof_with_vanilla(typ, key, sealed, unsealed, &proofs, options)
            }
        };
        hand_out(out, job)
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (engine, priority, update_proof, proofs, comms, out);
        unsupported()
    }
}
