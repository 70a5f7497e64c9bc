//! What the native witness generators' tests share (tests/native_porep.rs,
//! tests/native_update.rs): an empty system holding the "one", and a comparison that names the
//! first difference by its namespace path.
#![allow(dead_code)]

use cuzk::filecoin::native::{first_differences, AllocationPaths};
use cuzk::{Circuit, ConstraintSystem, Scalar, Witness, WitnessCs};
use ff::Field;

/// A `WitnessCs` holding the "one" input, as the witness path hands it to a generator.
pub fn start() -> WitnessCs {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    cs
}

/// Panics unless `got` equals `expected`, naming the first difference by its namespace path
/// (recorded from `circuit()` only then: a path is a string per value).
pub fn assert_same<C: Circuit<Scalar>>(what: &str, expected: &Witness, got: &Witness, circuit: impl Fn() -> C) {
    let d = first_differences(expected, got);
    if !d.is_empty() {
        let paths = AllocationPaths::record(circuit()).unwrap();
        panic!("{what}: {}", d.named(&paths));
    }
}
