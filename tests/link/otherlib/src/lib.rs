//! A tiny Rust static library with a C function, using the parts of std that clash first
//! when two Rust static libraries share a binary: the allocator, threads, panics.

use std::panic::catch_unwind;

/// The sum of `values[0..len]`, computed on another thread through a heap vector; 0 for NULL.
/// A panic inside is caught (and reported as `u64::MAX`).
///
/// # Safety
/// `values` is NULL or holds `len` readable `u64`s.
#[no_mangle]
pub unsafe extern "C" fn otherlib_sum(values: *const u64, len: usize) -> u64 {
    if values.is_null() {
        return 0;
    }
    // SAFETY: per the contract.
    let v: Vec<u64> = unsafe { std::slice::from_raw_parts(values, len) }.to_vec();
    catch_unwind(|| {
        std::thread::spawn(move || v.iter().fold(0u64, |a, b| a.wrapping_add(*b)))
            .join()
            .unwrap_or(u64::MAX)
    })
    .unwrap_or(u64::MAX)
}

/// Panics inside and catches it: returns 1 when the panic machinery worked.
#[no_mangle]
pub extern "C" fn otherlib_panic_is_caught() -> i32 {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let caught = catch_unwind(|| panic!("otherlib: deliberate")).is_err();
    std::panic::set_hook(prev);
    i32::from(caught)
}

/// Writes the compressed BLS12-381 G1 generator (48 bytes) that this library's blst computes
/// as 2·G − G (a point double, a negation and an addition, so blst's arithmetic runs, not a
/// constant copy) into `out`; returns 1 on success, 0 for NULL.
///
/// # Safety
/// `out` is NULL or has room for 48 bytes.
#[no_mangle]
pub unsafe extern "C" fn otherlib_blst_g1_generator(out: *mut u8) -> i32 {
    if out.is_null() {
        return 0;
    }
    // SAFETY: blst's C functions read and write the points passed by reference; every point
    // here is a valid, initialised local.
    unsafe {
        let g = *blst::blst_p1_generator();
        let mut twice = blst::blst_p1::default();
        blst::blst_p1_double(&mut twice, &g);
        let mut minus_g = g;
        blst::blst_p1_cneg(&mut minus_g, true);
        let mut back = blst::blst_p1::default();
        blst::blst_p1_add_or_double(&mut back, &twice, &minus_g);
        // SAFETY: per the contract, `out` has room for 48 bytes.
        blst::blst_p1_compress(out, &back);
    }
    1
}
