//! Strings the library hands to C: error messages, freed with `cuzk_string_free`.

use std::ffi::{c_char, CString};

use super::boundary::call_void;

/// Frees a string the library returned (an error message from an `err` out-parameter).
/// NULL is accepted and ignored. Each string is freed exactly once. Thread-safe.
///
/// # Safety
/// `s` is NULL or a string from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_string_free(s: *mut c_char) {
    call_void(|| {
        if !s.is_null() {
            // SAFETY: per the contract, made by `CString::into_raw` in `boundary::c_string`.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}
