//! Native witness generation for Filecoin's circuits: the foundations.
//!
//! The witness of a PoRep, SnapDeals or PoSt partition is a pure function of its public
//! inputs and vanilla proofs, but [`WitnessCs`](crate::WitnessCs) computes it by running
//! bellperson's gadgets, which build linear combinations only to throw them away (SHA-256's
//! `UInt32::addmany` alone is ~86% of the time). A native generator writes the same compact
//! witness, value for value and in the circuit's allocation order, without any gadget.
//! This room holds what every generator builds on:
//!
//! - `paths` and `diff` (re-exported from [`crate::compiled`], where the witness tools live):
//!   [`PathCs`], a development constraint system recording the namespace path of every
//!   allocation ([`AllocationPaths`]); the differential tool, the first input and aux index
//!   where two witnesses differ, with its path ([`first_differences`], [`assert_same_witness`]);
//! - [`gadgets`]: the gadget twins — native functions that append to a witness exactly what
//!   bellperson's, neptune's and storage-proofs' gadgets allocate (booleans with their constant
//!   folding, `UInt32`, SHA-256, bit decompositions and packing, Poseidon, the insertion
//!   gadgets and PoR paths);
//! - the generators, one per circuit family, used by the Filecoin jobs through the witness
//!   path's generated route (validated against the gadgets per compiled circuit first;
//!   `EngineConfig::native_witness`): [`post`] (Winning and Window PoSt,
//!   `FallbackPoStCircuit`), [`porep`] (PoRep C2, `StackedCircuit`) and [`update`]
//!   (SnapDeals, `EmptySectorUpdateCircuit`).
//!
//! Which bellperson, neptune and storage-proofs versions are mirrored, and how to re-validate
//! after a bump: `gadgets/NOTES.md`.

// A development API until the generators use it: hidden from the docs.
#![doc(hidden)]

use bellpepper_core::ConstraintSystem;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::compiled::WitnessCs;
use crate::error::{Error, Result};

pub use crate::compiled::{diff, paths};
// What kept validations are tied to; computed by build.rs (`CUZK_GENERATOR_DIGEST`), compiled
// here only for its test.
#[cfg(test)]
mod digest;
pub mod gadgets;
pub mod porep;
pub mod post;
pub mod update;

pub use diff::{assert_same_witness, first_differences, Difference, Differences, Place, WitnessValues};
pub use paths::{AllocationPaths, PathCs};

/// A generator's independent units (challenges, sector slots) on `threads` threads of the
/// current rayon pool, into `cs`: `write(cs, unit)` writes one unit's aux values and returns
/// its public inputs; on one thread straight into `cs`, else in `threads` runs of consecutive
/// units, each into a system of its own, merged into `cs` in order (`WitnessCs::extend`, a
/// bitmap word at a time). Inputs and aux land as the sequential generator's.
pub(crate) fn in_runs<T: Sync>(
    units: &[T],
    threads: usize,
    cs: &mut WitnessCs,
    write: impl Fn(&mut WitnessCs, &T) -> Result<Vec<Scalar>> + Sync,
) -> Result<()> {
    let alloc_inputs = |cs: &mut WitnessCs, inputs: Vec<Scalar>| -> Result<()> {
        for v in inputs {
            cs.alloc_input(|| "input", || Ok(v))?;
        }
        Ok(())
    };
    if threads <= 1 {
        for unit in units {
            let inputs = write(cs, unit)?;
            alloc_inputs(cs, inputs)?;
        }
        return Ok(());
    }
    let per_run = units.len().div_ceil(threads).max(1);
    let runs = units
        .par_chunks(per_run)
        .map(|run| {
            let mut part = WitnessCs::new();
            part.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            for unit in run {
                let inputs = write(&mut part, unit)?;
                alloc_inputs(&mut part, inputs)?;
            }
            Ok(part)
        })
        .collect::<Result<Vec<_>>>()?;
    for part in &runs {
        cs.extend(part);
    }
    Ok(())
}

/// A Merkle path as `MerkleProofTrait::as_options` gives it, every value present, as the PoR
/// twins take it (`gadgets::Level`s).
///
/// # Errors
/// [`Error::InvalidArgument`] (naming `what`) for a missing sibling or index.
pub(crate) fn levels(options: &[(Vec<Option<Scalar>>, Option<usize>)], what: &str) -> Result<Vec<gadgets::Level>> {
    options
        .iter()
        .map(|(siblings, index)| {
            let siblings = siblings.iter().copied().collect::<Option<Vec<_>>>();
            match (siblings, index) {
                (Some(s), Some(i)) => Ok((s, *i)),
                _ => Err(Error::InvalidArgument(format!(
                    "{what}: a vanilla proof's path has a missing value"
                ))),
            }
        })
        .collect()
}
