//! `prove()`: circuits (or synthesized assignments) and parameters in, proofs out.
//!
//! A proof is made in three steps: synthesis fills a [`ProvingAssignment`]; a [`Backend`]
//! computes the five commitments (H, L, A, B in G1, B in G2) and hands a/b/c back to the
//! pool as soon as H no longer needs them; the CPU adds the randomisers r, s. With the same
//! r and s the result is the bytes bellperson's `create_proof` gives.
//!
//! The rooms: [`Prover`] and every way into a proof (`prover`); the witness path's policy
//! (`policy`) and the host evaluation of a witness (`witness`); the backend seam ([`Backend`],
//! [`Commitments`], the CPU fallback: `backend`); which backend ([`BackendChoice`]: `choice`);
//! [`Timings`]; the checks and randomisers around the backend (`groth16`); the backends
//! ([`cpu`], `cuda`) and what they share ([`msm_plan`], [`kernel_contract`]).
//!
//! [`ProvingAssignment`]: crate::assignment::ProvingAssignment

mod backend;
mod choice;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod groth16;
pub mod kernel_contract;
pub mod msm_plan;
mod policy;
#[allow(clippy::module_inception)]
mod prover;
mod timings;
pub(crate) mod witness;

#[cfg(all(feature = "cuda", feature = "fault-injection"))]
pub(crate) use backend::with_cpu_fallback;
pub use backend::{Backend, Commitments, DeviceStatus, Placement};
pub use choice::BackendChoice;
pub(crate) use groth16::check_assignment;
pub use groth16::draw_randomness;
pub use policy::WitnessStats;
pub(crate) use policy::{native_witness_default, witness_path_default, Generator, Synthesis, WitnessEstimate};
pub use prover::{prove, prove_with_randomness, Prover};
pub use timings::Timings;
