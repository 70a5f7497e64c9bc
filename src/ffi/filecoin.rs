//! `cuzk_filecoin_*`: Filecoin proofs (PoRep C2, SnapDeals, Window PoSt whole or one partition,
//! Winning PoSt) from the bytes filecoin-ffi takes, proved by cuzk as jobs of an engine (the
//! process-wide Filecoin engine unless a call names one); proof bytes come back in a
//! `cuzk_bytes` the caller frees with `cuzk_bytes_free`. Each proof has a blocking call and a
//! `cuzk_filecoin_submit_*` twin that returns a `cuzk_filecoin_job` at once (see
//! [`filecoin_job`](super::filecoin_job)).
//!
//! The functions exist in every build; a library built without the `filecoin` feature
//! answers `CUZK_STATUS_UNSUPPORTED` (`cuzk_filecoin_available()` tells beforehand). Proof
//! type numbers are Filecoin's registered-proof values, as go-state-types' `abi` package has
//! them (`abi.RegisteredPoStProof`, `abi.RegisteredUpdateProof`).

use std::ffi::c_char;

use super::boundary::{call, call_value, call_void, slice, AbiResult};
use super::engine::cuzk_engine;
#[cfg(feature = "filecoin")]
use super::filecoin_job::deliver;
use super::filecoin_job::{cuzk_filecoin_job, Deliver};
use super::status::{cuzk_status, AbiError};

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

/// Bytes the library allocated and hands to the caller (proof bytes): `len` bytes at `data`
/// (`data` is NULL when `len` is 0). Free with `cuzk_bytes_free`, once.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct cuzk_bytes {
    /// The bytes.
    pub data: *mut u8,
    /// How many.
    pub len: usize,
}

/// A byte string the caller passes (one vanilla proof): `len` bytes at `data`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_byte_slice {
    /// The bytes (may be NULL when `len` is 0).
    pub data: *const u8,
    /// How many.
    pub len: usize,
}

impl cuzk_bytes {
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(super) fn from_vec(v: Vec<u8>) -> Self {
        let len = v.len();
        if len == 0 {
            return Self {
                data: std::ptr::null_mut(),
                len: 0,
            };
        }
        let data = Box::into_raw(v.into_boxed_slice()).cast::<u8>();
        Self { data, len }
    }
}

/// Frees bytes the library returned. A `cuzk_bytes` with NULL `data` is accepted and ignored.
///
/// # Safety
/// `bytes` came from this library (unchanged) and was not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_bytes_free(bytes: cuzk_bytes) {
    call_void(|| {
        if !bytes.data.is_null() {
            // SAFETY: per the contract, `data`/`len` are a boxed slice made by `from_vec`.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(bytes.data, bytes.len)) });
        }
    })
}

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
        let out = unsafe { super::boundary::slice_out(out, 32, "out")? };
        out.copy_from_slice(&crate::prover_id::prover_id_from_miner_id(miner_id));
        Ok(())
    })
}

fn bytes32(p: *const u8, name: &'static str) -> AbiResult<[u8; 32]> {
    if p.is_null() {
        return Err(AbiError::Null(name));
    }
    // SAFETY: non-NULL; the caller guarantees 32 readable bytes per the entry point's contract.
    let s = unsafe { slice(p, 32, name)? };
    let mut out = [0u8; 32];
    out.copy_from_slice(s);
    Ok(out)
}

/// The vanilla proofs as owned byte strings.
///
/// # Safety
/// `p` points to `n` `cuzk_byte_slice`s (or is NULL with `n == 0`), each `len` readable bytes.
unsafe fn vanilla(p: *const cuzk_byte_slice, n: usize) -> AbiResult<Vec<Vec<u8>>> {
    // SAFETY: per this function's contract.
    let items = unsafe { slice(p, n, "vanilla_proofs")? };
    items
        .iter()
        .map(|item| {
            // SAFETY: per this function's contract.
            unsafe { slice(item.data, item.len, "vanilla_proofs[i].data") }.map(<[u8]>::to_vec)
        })
        .collect()
}

#[cfg(not(feature = "filecoin"))]
pub(super) fn unsupported<T>() -> AbiResult<T> {
    Err(AbiError::Core(crate::error::Error::Unsupported(
        "cuzk was built without the `filecoin` feature (rebuild with `--features filecoin`)".into(),
    )))
}

#[cfg(feature = "filecoin")]
fn post_type(v: u64) -> AbiResult<crate::filecoin::RegisteredPoStProof> {
    use crate::filecoin::RegisteredPoStProof::*;
    const ALL: [crate::filecoin::RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    usize::try_from(v)
        .ok()
        .and_then(|i| ALL.get(i).copied())
        .ok_or_else(|| {
            AbiError::invalid(format!(
                "{v} is not a registered PoSt proof (abi.RegisteredPoStProof 0..=14)"
            ))
        })
}

#[cfg(feature = "filecoin")]
fn update_type(v: u64) -> AbiResult<crate::filecoin::RegisteredUpdateProof> {
    use crate::filecoin::RegisteredUpdateProof::*;
    const ALL: [crate::filecoin::RegisteredUpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    usize::try_from(v)
        .ok()
        .and_then(|i| ALL.get(i).copied())
        .ok_or_else(|| {
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
    call(err, || {
        let how = Deliver::bytes(out)?;
        // SAFETY: per the contract.
        unsafe {
            seal(
                engine,
                priority,
                phase1_output,
                phase1_output_len,
                sector_id,
                prover_id,
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
        // SAFETY: per the contract.
        unsafe {
            seal(
                engine,
                priority,
                phase1_output,
                phase1_output_len,
                sector_id,
                prover_id,
                how,
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
    how: Deliver,
) -> AbiResult {
    // SAFETY: per the contract.
    let c1 = unsafe { slice(phase1_output, phase1_output_len, "phase1_output")? };
    let prover_id = bytes32(prover_id, "prover_id")?;
    #[cfg(feature = "filecoin")]
    {
        // SAFETY: per the contract.
        let options = unsafe { options(engine, priority) };
        deliver(
            how,
            crate::filecoin::submit_seal_commit_phase2(c1, prover_id, sector_id, options),
        )
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (engine, priority, c1, prover_id, sector_id, how);
        unsupported()
    }
}

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
    call(err, || {
        let how = Deliver::bytes(out)?;
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
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
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
                how,
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
    call(err, || {
        let how = Deliver::bytes(out)?;
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
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
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
                how,
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
    how: Deliver,
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
        deliver(how, job)
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (engine, priority, update_proof, proofs, comms, how);
        unsupported()
    }
}

/// Which PoSt.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
enum PoSt {
    Window,
    /// One partition of a Window PoSt, at this index.
    WindowPartition(u64),
    Winning,
}

/// The body every PoSt entry point shares.
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
    how: Deliver,
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
        deliver(how, job)
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (which, engine, priority, post_proof, randomness, prover_id, proofs, how);
        unsupported()
    }
}

/// Window PoSt from vanilla proofs, as filecoin-ffi's `generate_window_post_with_vanilla`:
/// `post_proof` an `abi.RegisteredPoStProof` Window value (5..=9, or 10..=14 for the V1_1
/// ones); `randomness` and `prover_id` 32 bytes each; `vanilla_proofs` the `n` per-sector
/// vanilla proofs (filecoin-ffi's `generate_single_vanilla_proof`), in sector order. Blocks;
/// on success `*out` holds the proof bytes (192 per partition, in order). `engine`,
/// `priority`: as for `cuzk_filecoin_seal_commit_phase2`. Thread-safe.
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
    call(err, || {
        let how = Deliver::bytes(out)?;
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
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
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
                how,
            )
        }
    })
}

/// One partition of a Window PoSt, as filecoin-ffi's
/// `generate_single_partition_window_post_with_vanilla` (Curio's
/// `GenerateSinglePartitionWindowPoStWithVanilla`): `vanilla_proofs` are the `n` vanilla
/// proofs of that partition's sectors only, in sector order (at most the partition's sector
/// count), `partition_index` its index in the deadline (below 3000). Blocks; on success
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
    call(err, || {
        let how = Deliver::bytes(out)?;
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
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
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
                how,
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
    call(err, || {
        let how = Deliver::bytes(out)?;
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
                how,
            )
        }
    })
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
        let how = Deliver::job(out)?;
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
                how,
            )
        }
    })
}

#[cfg(test)]
mod tests {
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
    fn bytes_round_trip_and_free() {
        let b = cuzk_bytes::from_vec(vec![1, 2, 3]);
        assert_eq!(b.len, 3);
        // SAFETY: made above, freed once.
        unsafe { cuzk_bytes_free(b) };
        // SAFETY: NULL data is accepted.
        unsafe { cuzk_bytes_free(cuzk_bytes::from_vec(Vec::new())) };
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
