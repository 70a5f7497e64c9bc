//! `cuzk_filecoin_*`: Filecoin proofs (PoRep C2, SnapDeals, Window and Winning PoSt) from the
//! bytes filecoin-ffi takes, proved by cuzk; proof bytes come back in a `cuzk_bytes` the
//! caller frees with `cuzk_bytes_free`.
//!
//! The functions exist in every build; a library built without the `filecoin` feature
//! answers `CUZK_STATUS_UNSUPPORTED` (`cuzk_filecoin_available()` tells beforehand). Proof
//! type numbers are Filecoin's registered-proof values, as go-state-types' `abi` package has
//! them (`abi.RegisteredPoStProof`, `abi.RegisteredUpdateProof`).

use std::ffi::c_char;

use super::boundary::{call, call_value, call_void, slice, AbiResult, Out};
use super::prover::cuzk_prover;
use super::status::{cuzk_status, AbiError};
#[cfg(feature = "filecoin")]
use crate::prover::Prover;

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
    fn from_vec(v: Vec<u8>) -> Self {
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

#[cfg(feature = "filecoin")]
fn prover_of(p: *const cuzk_prover) -> Prover {
    // SAFETY: NULL or a live prover per every entry point's contract.
    match unsafe { p.as_ref() } {
        Some(p) => p.inner.clone(),
        None => {
            // One process-wide Auto prover, so its capacity hints carry over between calls.
            static DEFAULT: std::sync::OnceLock<Prover> = std::sync::OnceLock::new();
            DEFAULT.get_or_init(Prover::new).clone()
        }
    }
}

#[cfg(not(feature = "filecoin"))]
fn unsupported<T>() -> AbiResult<T> {
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

/// PoRep commit phase 2, as filecoin-ffi's `seal_commit_phase2`: `phase1_output` is the
/// commit-phase-1 output as filecoin-ffi returns it (filecoin-proofs-api's JSON; it names its
/// registered seal proof), `prover_id` 32 bytes (see `cuzk_filecoin_prover_id`). On success
/// `*out` holds the proof bytes (192 per partition, in order; free with `cuzk_bytes_free`).
/// `prover` may be NULL (then an `Auto` prover: the GPU when there is one). Parameters come
/// from filecoin-proofs' cache (`FIL_PROOFS_PARAMETER_CACHE`); a missing or truncated file
/// fails with `CUZK_STATUS_PARAMS_IO` / `CUZK_STATUS_PARAMS_TRUNCATED` and a message naming
/// it. Thread-safe.
///
/// # Safety
/// `prover` NULL or live; `phase1_output` `phase1_output_len` readable bytes; `prover_id` 32
/// readable bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_seal_commit_phase2(
    prover: *const cuzk_prover,
    phase1_output: *const u8,
    phase1_output_len: usize,
    sector_id: u64,
    prover_id: *const u8,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        let c1 = unsafe { slice(phase1_output, phase1_output_len, "phase1_output")? };
        let prover_id = bytes32(prover_id, "prover_id")?;
        #[cfg(feature = "filecoin")]
        {
            let proof = crate::filecoin::seal_commit_phase2(c1, prover_id, sector_id, &prover_of(prover))?;
            // SAFETY: checked non-NULL, writable per the contract.
            unsafe { out.write(cuzk_bytes::from_vec(proof)) };
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (prover, c1, prover_id, sector_id, out);
            unsupported()
        }
    })
}

/// SnapDeals: the empty-sector-update proof from its vanilla partition proofs, as
/// filecoin-ffi's `generate_empty_sector_update_proof_with_vanilla`: `update_proof` is an
/// `abi.RegisteredUpdateProof` value (0 = 2 KiB ... 3 = 32 GiB, 4 = 64 GiB); `vanilla_proofs`
/// the `n` partition proofs filecoin-ffi's `generate_empty_sector_update_partition_proofs`
/// returns, in order; the commitments 32 bytes each. On success `*out` holds the proof bytes.
/// `prover` may be NULL. Thread-safe.
///
/// # Safety
/// `prover` NULL or live; `vanilla_proofs` `n` slices of readable bytes; the commitments 32
/// readable bytes each; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_snap_prove(
    prover: *const cuzk_prover,
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
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        let proofs = unsafe { vanilla(vanilla_proofs, n)? };
        let comms = [
            bytes32(comm_r_old, "comm_r_old")?,
            bytes32(comm_r_new, "comm_r_new")?,
            bytes32(comm_d_new, "comm_d_new")?,
        ];
        #[cfg(feature = "filecoin")]
        {
            let proof = crate::filecoin::generate_empty_sector_update_proof_with_vanilla(
                update_type(update_proof)?,
                &proofs,
                comms[0],
                comms[1],
                comms[2],
                &prover_of(prover),
            )?;
            // SAFETY: checked non-NULL, writable per the contract.
            unsafe { out.write(cuzk_bytes::from_vec(proof)) };
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (prover, update_proof, proofs, comms, out);
            unsupported()
        }
    })
}

/// Which PoSt.
#[cfg(feature = "filecoin")]
#[derive(Clone, Copy)]
enum PoSt {
    Window,
    Winning,
}

/// The body both PoSt entry points share.
///
/// # Safety
/// As the entry points'.
#[allow(clippy::too_many_arguments)]
unsafe fn post(
    #[cfg(feature = "filecoin")] which: PoSt,
    prover: *const cuzk_prover,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut cuzk_bytes,
) -> AbiResult {
    let out = Out::new(out, "out")?;
    let randomness = bytes32(randomness, "randomness")?;
    let prover_id = bytes32(prover_id, "prover_id")?;
    // SAFETY: per the contract.
    let proofs = unsafe { vanilla(vanilla_proofs, n)? };
    #[cfg(feature = "filecoin")]
    {
        let typ = post_type(post_proof)?;
        let prover = prover_of(prover);
        let proof = match which {
            PoSt::Window => {
                crate::filecoin::generate_window_post_with_vanilla(typ, &randomness, prover_id, &proofs, &prover)?
            }
            PoSt::Winning => {
                crate::filecoin::generate_winning_post_with_vanilla(typ, &randomness, prover_id, &proofs, &prover)?
            }
        };
        // SAFETY: checked non-NULL, writable per the contract.
        unsafe { out.write(cuzk_bytes::from_vec(proof)) };
        Ok(())
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = (prover, post_proof, randomness, prover_id, proofs, out);
        unsupported()
    }
}

/// Window PoSt from vanilla proofs, as filecoin-ffi's `generate_window_post_with_vanilla`:
/// `post_proof` an `abi.RegisteredPoStProof` Window value (5..=9, or 10..=14 for the V1_1
/// ones); `randomness` and `prover_id` 32 bytes each; `vanilla_proofs` the `n` per-sector
/// vanilla proofs (filecoin-ffi's `generate_single_vanilla_proof`), in sector order. On
/// success `*out` holds the proof bytes (192 per partition, in order). `prover` may be NULL.
/// Thread-safe.
///
/// # Safety
/// `prover` NULL or live; `randomness`, `prover_id` 32 readable bytes each; `vanilla_proofs`
/// `n` slices of readable bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_window_post(
    prover: *const cuzk_prover,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        unsafe {
            post(
                #[cfg(feature = "filecoin")]
                PoSt::Window,
                prover,
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
pub unsafe extern "C" fn cuzk_filecoin_winning_post(
    prover: *const cuzk_prover,
    post_proof: u64,
    randomness: *const u8,
    prover_id: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    n: usize,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        unsafe {
            post(
                #[cfg(feature = "filecoin")]
                PoSt::Winning,
                prover,
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
    }
}
