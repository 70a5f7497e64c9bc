//! Byte buffers across the ABI: `cuzk_bytes`, bytes the library hands out (freed with
//! `cuzk_bytes_free`), and `cuzk_byte_slice`, a byte string the caller passes; with the
//! readers of fixed-size and listed byte arguments.

use super::boundary::{call_void, copied, room, slice, AbiResult};
use super::status::AbiError;

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
    pub(crate) fn from_vec(v: Vec<u8>) -> Self {
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

pub(crate) fn bytes32(p: *const u8, name: &'static str) -> AbiResult<[u8; 32]> {
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
pub(crate) unsafe fn vanilla(p: *const cuzk_byte_slice, n: usize) -> AbiResult<Vec<Vec<u8>>> {
    // SAFETY: per this function's contract.
    let items = unsafe { slice(p, n, "vanilla_proofs")? };
    let mut out = room(items.len())?;
    for item in items {
        // SAFETY: per this function's contract.
        out.push(copied(unsafe {
            slice(item.data, item.len, "vanilla_proofs[i].data")
        }?)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_free() {
        let b = cuzk_bytes::from_vec(vec![1, 2, 3]);
        assert_eq!(b.len, 3);
        // SAFETY: made above, freed once.
        unsafe { cuzk_bytes_free(b) };
        // SAFETY: NULL data is accepted.
        unsafe { cuzk_bytes_free(cuzk_bytes::from_vec(Vec::new())) };
    }
}
