//! `cuzk_params`: Groth16 parameters (bellperson's file format), and the insecure
//! development generator for R1CS circuits.

use std::ffi::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::assignment::{cuzk_r1cs, R1csCircuit};
use super::boundary::{arg, c_str, call, call_void, into_handle, slice_out, take_handle, Out};
use super::status::{cuzk_status, enum_arg, AbiError};
use crate::params::dev::development_domain;
use crate::params::{Parameters, PointCheck};

/// How thoroughly `cuzk_params_load` checks the points of the query vectors (the verifying
/// key is always fully checked): one of the `CUZK_POINT_CHECK_*` values; any other value is
/// refused with `CUZK_STATUS_INVALID_ARGUMENT`.
#[allow(non_camel_case_types)]
pub type cuzk_point_check = u32;
/// On the curve and not at infinity (what bellperson's unchecked read guarantees). Fast.
pub const CUZK_POINT_CHECK_ON_CURVE: cuzk_point_check = 0;
/// Also in the prime-order subgroup: a scalar multiplication per point (slow).
pub const CUZK_POINT_CHECK_SUBGROUP: cuzk_point_check = 1;

/// The sizes a set of parameters expects of a circuit.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct cuzk_params_sizes {
    /// Public inputs, the leading constant "one" included (so 1 + the inputs a verifier
    /// passes).
    pub num_inputs: u64,
    /// Private (aux) variables.
    pub num_aux: u64,
    /// The evaluation domain size m (a power of two ≥ constraints + public inputs + 1).
    pub domain_size: u64,
    /// H query points (m − 1).
    pub h_len: u64,
    /// L query points (one per aux variable).
    pub l_len: u64,
    /// A query points (every input, then the aux variables used in A).
    pub a_len: u64,
    /// B query points in G1 (and, equally many, in G2): the inputs, then the aux variables,
    /// used in B.
    pub b_len: u64,
    /// Bytes `cuzk_params_verifying_key` writes.
    pub verifying_key_bytes: u64,
    /// A process-unique id of these parameters.
    pub id: u64,
}

/// Groth16 parameters. Opaque; immutable, so thread-safe: any number of threads may prove
/// and query with one `const cuzk_params *` at once.
#[allow(non_camel_case_types)]
pub struct cuzk_params {
    pub(crate) inner: Parameters,
}

fn vk_bytes(p: &Parameters) -> Vec<u8> {
    let mut out = Vec::new();
    p.vk().write(&mut out).expect("writing to a Vec cannot fail");
    out
}

/// Loads parameters from the file at `path` (NUL-terminated; bellperson's format), checking
/// points as `check` says. On success `*out` holds them, to be freed with
/// `cuzk_params_free`. Parameters whose δ (G1 or G2) is the point at infinity — a subverted
/// setup, with which anyone can forge proofs — are refused here with
/// `CUZK_STATUS_UNSAFE_PARAMETERS`, so no loaded set can make such proofs; `cuzk_verify`
/// answers `valid = false` for a verifying key with δ at infinity. Thread-safe.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_load(
    path: *const c_char,
    check: cuzk_point_check,
    out: *mut *mut cuzk_params,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let path = unsafe { c_str(path, "path") }?;
        let out = Out::new(out, "out")?;
        let check = enum_arg(
            "check",
            check,
            &[
                ("CUZK_POINT_CHECK_ON_CURVE", PointCheck::OnCurve),
                ("CUZK_POINT_CHECK_SUBGROUP", PointCheck::Subgroup),
            ],
        )?;
        let inner = Parameters::load(Path::new(std::ffi::OsStr::from_bytes(path.to_bytes())), check)?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_params { inner })) };
        Ok(())
    })
}

/// Writes the parameters to the file at `path` (created or replaced) in bellperson's format,
/// which `cuzk_params_load` and bellperson read back. A file that cannot be created or
/// written (a full disk, a directory, no permission) fails with `CUZK_STATUS_PARAMS_IO` and
/// a message "cannot write parameters to PATH: REASON". Thread-safe.
///
/// # Safety
/// `params` is live; `path` a NUL-terminated string; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_save(
    params: *const cuzk_params,
    path: *const c_char,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let params = unsafe { arg(params, "params") }?;
        // SAFETY: per the contract.
        let path = Path::new(std::ffi::OsStr::from_bytes(unsafe { c_str(path, "path") }?.to_bytes()));
        params.inner.save(path)?;
        Ok(())
    })
}

/// Frees parameters. NULL is accepted. Not to be called while another thread uses them.
///
/// # Safety
/// `params` is NULL or from this library and not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_free(params: *mut cuzk_params) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(params) }))
}

/// Writes the sizes the parameters expect to `*out`. Thread-safe.
///
/// # Safety
/// `params` is live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_info(
    params: *const cuzk_params,
    out: *mut cuzk_params_sizes,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let p = &unsafe { arg(params, "params") }?.inner;
        let out = Out::new(out, "out")?;
        let n = |v: usize| v as u64;
        let info = cuzk_params_sizes {
            num_inputs: n(p.num_inputs()),
            num_aux: n(p.num_aux()),
            domain_size: n(p.domain_size()),
            h_len: n(p.query_lengths().h),
            l_len: n(p.query_lengths().l),
            a_len: n(p.query_lengths().a),
            b_len: n(p.query_lengths().b),
            verifying_key_bytes: n(vk_bytes(p).len()),
            id: p.id(),
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// Writes the verifying key in bellperson's format (what `cuzk_verify` takes) to `out`,
/// which holds `out_len` bytes; `cuzk_params_info` tells the size. `*out_written` (may be
/// NULL) gets the bytes written. `CUZK_STATUS_BUFFER_TOO_SMALL` when `out_len` is short
/// (nothing written). Thread-safe.
///
/// # Safety
/// `params` is live; `out` holds `out_len` writable bytes; `out_written`, `err` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_verifying_key(
    params: *const cuzk_params,
    out: *mut u8,
    out_len: usize,
    out_written: *mut usize,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let p = &unsafe { arg(params, "params") }?.inner;
        let bytes = vk_bytes(p);
        if out_len < bytes.len() {
            return Err(AbiError::BufferTooSmall {
                what: "verifying key",
                needed: bytes.len(),
                found: out_len,
            });
        }
        // SAFETY: per the contract.
        let dst = unsafe { slice_out(out, out_len, "out") }?;
        dst[..bytes.len()].copy_from_slice(&bytes);
        if !out_written.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { out_written.write(bytes.len()) };
        }
        Ok(())
    })
}

/// **INSECURE — development only.** Runs a Groth16 setup for the constraint system `r1cs`
/// with toxic waste derived from `seed`: anyone who knows the seed can forge proofs. Proofs
/// made with these parameters verify, so a caller can prove a circuit it wrote; production
/// parameters must come from a trusted-setup ceremony. Cost grows with the circuit (one
/// scalar multiplication per constraint and variable): fine up to some 2^16 constraints.
/// Memory: parameters larger than the host's memory and swap (some 96 bytes per constraint
/// and per variable) are `CUZK_STATUS_ALLOCATION` at once, before any work, and so is an
/// array of the setup the allocator refuses (never an abort); a domain past 2^32
/// (constraints + public inputs + 1) is `CUZK_STATUS_INVALID_ARGUMENT`.
/// On success `*out` holds the parameters (free with `cuzk_params_free`). Thread-safe.
///
/// # Safety
/// `r1cs` is live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_params_generate_insecure_for_development(
    r1cs: *const cuzk_r1cs,
    seed: u64,
    out: *mut *mut cuzk_params,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let r1cs = unsafe { arg(r1cs, "r1cs") }?;
        let out = Out::new(out, "out")?;
        // Refused from the counts before the synthesis walks them.
        let (constraints, public, aux) = r1cs.counts();
        development_domain(constraints.saturating_add(public).saturating_add(1), public + 1, aux)?;
        let inner = Parameters::generate_insecure_for_development(R1csCircuit::shape_only(r1cs), seed)?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_params { inner })) };
        Ok(())
    })
}
