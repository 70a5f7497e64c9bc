//! # cuzk — Groth16 on BLS12-381, fast on NVIDIA GPUs, byte-compatible with bellperson
//!
//! A circuit is **synthesized** into a [`ProvingAssignment`] whose a/b/c vectors live in
//! buffers from a [`PinnedPool`]; a [`Prover`]'s backend (CPU, or CUDA with the `cuda` feature)
//! computes H and the five MSMs and hands a/b/c back to the pool; the [`Proof`] comes out as
//! bellperson's 192 bytes — with the same r and s, exactly bellperson's bytes. The [`engine`]
//! streams many partitions through synthesis and the GPUs under one memory budget.
//!
//! ```no_run
//! # fn main() -> cuzk::Result<()> {
//! # let (params, circuit): (cuzk::Parameters, cuzk::testing::Synthetic) = todo!();
//! use cuzk::{PinnedPool, PoolConfig, Prover};
//! let prover = Prover::new().with_pool(PinnedPool::heap(PoolConfig::default()));
//! let proofs = prover.prove(vec![circuit], &params, &mut rand::rngs::OsRng)?;
//! # Ok(()) }
//! ```
//!
//! The bird's-eye view, the code map and the invariants that hold across the modules are
//! described once, in `docs/ARCHITECTURE.md` in the repository; the modules, from the ground up
//! (each uses only those above it), in one line each:
//!
//! - [`error`]: the crate's [`Error`].
//! - [`curve`]: G1 and G2 over blst, for the CPU prover, the development setup and the tests.
//! - [`prover_id`]: Filecoin's prover id of a miner actor.
//! - [`pool`]: [`PinnedPool`], [`PinnedBuffer`], [`PinnedVec`], host-allocator backends.
//! - `r1cs` (internal): a circuit's R1CS as one full synthesis records it — density trackers,
//!   CSR matrices, their hash and storage, the recorder.
//! - [`assignment`]: [`ProvingAssignment`], the capacity-hint cache.
//! - [`params`]: [`Parameters`] in bellperson's file format, [`VerifyingKey`], development
//!   parameters.
//! - [`proof`]: [`Proof`], its encoding, [`verify_proof`].
//! - [`compiled`]: witness-only proving: a recording made a [`CompiledCircuit`], a compact
//!   witness per proof, a/b/c evaluated from the two.
//! - [`prover`]: [`Prover`] (every way into a proof funnels into one loop), [`prove`], the
//!   witness-path policy, the CPU backend and (feature `cuda`) the CUDA backend.
//! - [`engine`]: synthesis overlapped with GPU proving under one memory budget.
//! - `filecoin` (feature `filecoin`): Filecoin's PoRep C2, SnapDeals and PoSt proofs.
//! - [`ffi`]: the C ABI (`include/cuzk.h`), a front door.
//! - `daemon` (feature `daemon`): `cuzk-daemon`, Curio's proving protocol (`cuzk.v1`) over
//!   gRPC on the Filecoin layer, the other front door.
//!
//! Neither front door imports the other, nothing below them imports them, and the modules
//! import each other without a circle (`tests/layering.rs` reads the code and fails otherwise).

#![warn(missing_docs)]

pub mod assignment;
pub mod byte_size;
pub mod compiled;
pub mod curve;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod engine;
pub mod error;
pub mod ffi;
#[cfg(feature = "filecoin")]
pub mod filecoin;
pub mod params;
pub mod pool;
pub mod proof;
pub mod prover;
pub mod prover_id;
mod r1cs;
mod rng;
// Synthetic circuits and arbitrary-point parameters for cuzk's own tests, examples and
// benchmarks (and a caller's, at their own risk): kept public so that integration tests and
// examples can use them, hidden from the docs because they are not part of the supported API.
#[doc(hidden)]
pub mod testing;

pub use assignment::{CapacityHint, CapacityHints, DensityTracker, ProvingAssignment};
pub use compiled::{CompiledCircuit, CompiledCircuits, Witness, WitnessCs};
pub use error::{Error, Result};
pub use params::{Parameters, PointCheck, QueryLengths, VerifyingKey};
pub use pool::{HeapAllocator, HostAllocator, PinnedBuffer, PinnedPool, PinnedVec, PoolConfig, PoolStats, WhenFull};
pub use proof::{verify_proof, PreparedVerifyingKey, Proof};
pub use prover::{prove, prove_with_randomness, BackendChoice, Prover, Timings, WitnessStats};

pub use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
pub use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
