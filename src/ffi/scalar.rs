//! Scalars at the ABI: 32 bytes little-endian canonical (`Scalar::to_bytes_le`), and the
//! helpers to and from the in-memory (Montgomery) form that raw a/b/c buffers hold.

use std::ffi::c_char;

use blst::blst_fr;
use blstrs::Scalar;

use super::boundary::{call, room, slice, AbiResult, Out};
use super::status::{cuzk_status, AbiError};

/// Bytes of one scalar at the ABI, in either form.
pub const CUZK_SCALAR_BYTES: usize = 32;

/// The scalar field's modulus r, little-endian limbs.
const MODULUS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// Whether the limbs (least significant first) hold a value below r.
fn below_modulus(l: &[u64; 4]) -> bool {
    for i in (0..4).rev() {
        if l[i] != MODULUS[i] {
            return l[i] < MODULUS[i];
        }
    }
    false
}

/// Whether a value in memory form is reduced (what every `Scalar` the crate makes is).
pub(crate) fn is_reduced(s: &Scalar) -> bool {
    below_modulus(&blst_fr::from(*s).l)
}

/// Decodes one canonical little-endian scalar.
pub(crate) fn from_le(bytes: &[u8], what: &str, index: usize) -> AbiResult<Scalar> {
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| AbiError::invalid(format!("{what} {index}: expected 32 bytes, found {}", bytes.len())))?;
    Option::from(Scalar::from_bytes_le(&arr)).ok_or_else(|| {
        AbiError::invalid(format!(
            "{what} {index}: not a canonical scalar (value ≥ the field modulus)"
        ))
    })
}

/// Decodes `bytes` (a whole number of 32-byte canonical scalars).
pub(crate) fn all_from_le(bytes: &[u8], what: &str) -> AbiResult<Vec<Scalar>> {
    let mut out = room(bytes.len() / CUZK_SCALAR_BYTES)?;
    for (i, b) in bytes.chunks_exact(CUZK_SCALAR_BYTES).enumerate() {
        out.push(from_le(b, what, i)?);
    }
    Ok(out)
}

fn to_memory_bytes(s: Scalar) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (dst, limb) in out.chunks_exact_mut(8).zip(blst_fr::from(s).l) {
        dst.copy_from_slice(&limb.to_ne_bytes());
    }
    out
}

fn from_memory_bytes(b: &[u8; 32], index: usize) -> AbiResult<Scalar> {
    let mut l = [0u64; 4];
    for (limb, src) in l.iter_mut().zip(b.chunks_exact(8)) {
        *limb = u64::from_ne_bytes(src.try_into().expect("chunks of 8"));
    }
    if !below_modulus(&l) {
        return Err(AbiError::invalid(format!(
            "scalar {index}: not a reduced Montgomery value (≥ the field modulus)"
        )));
    }
    Ok(Scalar::from(blst_fr { l }))
}

/// Converts `count` scalars element by element from `input` to `output` (which may be the
/// same pointer, for in-place conversion).
///
/// # Safety
/// As the public converters document.
unsafe fn convert(
    input: *const u8,
    count: usize,
    output: *mut u8,
    f: impl Fn(&[u8; 32], usize) -> AbiResult<[u8; 32]>,
) -> AbiResult {
    let bytes = count
        .checked_mul(CUZK_SCALAR_BYTES)
        .ok_or_else(|| AbiError::invalid(format!("{count} scalars overflow")))?;
    if count > 0 && input.is_null() {
        return Err(AbiError::Null("input"));
    }
    if count > 0 && output.is_null() {
        return Err(AbiError::Null("output"));
    }
    // Validate everything first so that nothing is written on failure.
    let mut converted = room(count)?;
    for i in 0..count {
        // SAFETY: the caller guarantees `count * 32` readable bytes at `input`; an unaligned
        // read of a byte array copies it out, so `output` may alias `input`.
        let b: [u8; 32] = unsafe { input.add(i * CUZK_SCALAR_BYTES).cast::<[u8; 32]>().read_unaligned() };
        converted.push(f(&b, i)?);
    }
    debug_assert_eq!(converted.len() * CUZK_SCALAR_BYTES, bytes);
    for (i, c) in converted.into_iter().enumerate() {
        // SAFETY: the caller guarantees `count * 32` writable bytes at `output`; no reference
        // to the input is alive.
        unsafe { output.add(i * CUZK_SCALAR_BYTES).cast::<[u8; 32]>().write_unaligned(c) };
    }
    Ok(())
}

/// Converts `count` canonical scalars (32 bytes little-endian each, values below the field
/// modulus r) into the in-memory form raw a/b/c buffers hold: four 64-bit limbs, least
/// significant first, each in host byte order, of the Montgomery value x·2^256 mod r.
///
/// `output` may equal `input` (in place); other overlaps are not allowed. Nothing is written
/// unless every input is canonical. NULL is accepted for both when `count` is 0.
/// Thread-safe.
///
/// # Safety
/// `input` holds `count * 32` readable bytes, `output` `count * 32` writable bytes; `err` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_scalars_to_montgomery(
    input: *const u8,
    count: usize,
    output: *mut u8,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: forwarded caller guarantees.
        unsafe {
            convert(input, count, output, |b, i| {
                Ok(to_memory_bytes(from_le(b, "scalar", i)?))
            })
        }
    })
}

/// The inverse of `cuzk_scalars_to_montgomery`: in-memory (Montgomery) form to canonical
/// 32-byte little-endian. Values not below the modulus are an error. Same aliasing rules.
/// Thread-safe.
///
/// # Safety
/// As `cuzk_scalars_to_montgomery`.
#[no_mangle]
pub unsafe extern "C" fn cuzk_scalars_from_montgomery(
    input: *const u8,
    count: usize,
    output: *mut u8,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: forwarded caller guarantees.
        unsafe { convert(input, count, output, |b, i| Ok(from_memory_bytes(b, i)?.to_bytes_le())) }
    })
}

/// Writes the canonical encoding of the integer `value` (negative values as r − |value|) to
/// `out` (32 bytes). Handy for small constants such as R1CS coefficients. Thread-safe.
///
/// # Safety
/// `out` is NULL or 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn cuzk_scalar_from_i64(value: i64, out: *mut u8) -> cuzk_status {
    call(std::ptr::null_mut(), || {
        let out = Out::new(out.cast::<[u8; 32]>(), "out")?;
        let s = Scalar::from(value.unsigned_abs());
        let s = if value < 0 { -s } else { s };
        // SAFETY: the caller guarantees 32 writable bytes (byte arrays need no alignment).
        unsafe { out.write(s.to_bytes_le()) };
        Ok(())
    })
}

/// Reads `count` canonical scalars at `p`.
///
/// # Safety
/// `p` is NULL (only with `count == 0`) or holds `count * 32` readable bytes.
pub(crate) unsafe fn read_all(p: *const u8, count: usize, name: &'static str) -> AbiResult<Vec<Scalar>> {
    let bytes = count
        .checked_mul(CUZK_SCALAR_BYTES)
        .ok_or_else(|| AbiError::invalid(format!("`{name}`: {count} scalars overflow")))?;
    // SAFETY: forwarded caller guarantee.
    let b = unsafe { slice(p, bytes, name) }?;
    all_from_le(b, name)
}
