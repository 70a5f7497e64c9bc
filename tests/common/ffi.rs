//! Calling the C ABI from Rust the way a C program does: error out-parameters read and freed,
//! and the toy circuit (x³ + x + 5 = y) as an R1CS with its dev parameters and assignments.

use std::ffi::{c_char, CStr};
use std::ptr::null_mut;

use blstrs::Scalar;
use cuzk::ffi::assignment::*;
use cuzk::ffi::params::*;
use cuzk::ffi::pool::cuzk_pool;
use cuzk::ffi::scalar::*;
use cuzk::ffi::status::cuzk_status;
use cuzk::ffi::*;

/// Runs an ABI call with an error out-parameter; returns the status and the message.
pub fn call(f: impl FnOnce(*mut *mut c_char) -> cuzk_status) -> (cuzk_status, String) {
    let mut err: *mut c_char = null_mut();
    let status = f(&mut err);
    let msg = if err.is_null() {
        String::new()
    } else {
        // SAFETY: a message from the library, freed once.
        let m = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
        unsafe { cuzk_string_free(err) };
        m
    };
    assert_eq!(
        status == cuzk_status::Ok,
        msg.is_empty(),
        "a message comes with every failure only: {msg}"
    );
    (status, msg)
}

/// Runs an ABI call that must succeed.
pub fn ok(f: impl FnOnce(*mut *mut c_char) -> cuzk_status) {
    let (status, msg) = call(f);
    assert_eq!(status, cuzk_status::Ok, "{msg}");
}

/// One R1CS term: `coeff` times variable `variable` in constraint `constraint`.
pub fn term(constraint: u32, variable: u32, coeff: i64) -> cuzk_r1cs_term {
    let mut t = cuzk_r1cs_term {
        constraint,
        variable,
        coeff: [0; 32],
    };
    assert_eq!(
        unsafe { cuzk_scalar_from_i64(coeff, t.coeff.as_mut_ptr()) },
        cuzk_status::Ok
    );
    t
}

/// x³ + x + 5 = y: variables 0 = one, 1 = y (public), 2 = x, 3 = x², 4 = x³.
pub fn toy_r1cs() -> *mut cuzk_r1cs {
    let a = [
        term(0, 2, 1),
        term(1, 3, 1),
        term(2, 4, 1),
        term(2, 2, 1),
        term(2, 0, 5),
    ];
    let b = [term(0, 2, 1), term(1, 2, 1), term(2, 0, 1)];
    let c = [term(0, 3, 1), term(1, 4, 1), term(2, 1, 1)];
    let mut r1cs = null_mut();
    ok(|e| unsafe { cuzk_r1cs_new(1, 3, 3, a.as_ptr(), 5, b.as_ptr(), 3, c.as_ptr(), 3, &mut r1cs, e) });
    r1cs
}

/// The toy circuit's public y and its auxiliary x, x², x³ for `x`.
pub fn toy_witness(x: u64) -> (Scalar, [Scalar; 3]) {
    let x = Scalar::from(x);
    (x * x * x + x + Scalar::from(5), [x, x * x, x * x * x])
}

/// An assignment of the toy circuit for `x`, made in `pool` (NULL: on the heap).
pub fn toy_assignment(r1cs: *const cuzk_r1cs, pool: *const cuzk_pool, x: u64) -> *mut cuzk_assignment {
    let (y, aux) = toy_witness(x);
    let public = y.to_bytes_le();
    let aux: Vec<u8> = aux.iter().flat_map(|s| s.to_bytes_le()).collect();
    let mut asg = null_mut();
    ok(|e| unsafe { cuzk_assignment_new_r1cs(r1cs, pool, public.as_ptr(), 1, aux.as_ptr(), 3, &mut asg, e) });
    asg
}

/// Development parameters for `r1cs` from `seed` (insecure: tests only).
pub fn dev_params(r1cs: *const cuzk_r1cs, seed: u64) -> *mut cuzk_params {
    let mut params = null_mut();
    ok(|e| unsafe { cuzk_params_generate_insecure_for_development(r1cs, seed, &mut params, e) });
    params
}
