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

pub use crate::compiled::{diff, paths};
pub mod gadgets;
pub mod porep;
pub mod post;
pub mod update;

pub use diff::{assert_same_witness, first_differences, Difference, Differences, Place, WitnessValues};
pub use paths::{AllocationPaths, PathCs};
