//! # cuzk — Groth16 on BLS12-381, fast on NVIDIA GPUs, byte-compatible with bellperson
//!
//! ## Bird's-eye view
//! A proof walks one way: a circuit is **synthesized** into a [`ProvingAssignment`] whose
//! a/b/c vectors live in buffers from a [`PinnedPool`]; a prover **backend** computes
//! H = (A·B − C)/Z by NTTs and the five multi-scalar multiplications (H, L, A, B in G1, B in
//! G2), handing a/b/c back to the pool as soon as H is done; the CPU adds the randomisers r, s
//! and the [`Proof`] comes out as bellperson's 192 bytes. With the same r and s, the bytes are
//! exactly bellperson's.
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
//! ## Code map
//! - [`pool`]: [`PinnedPool`], [`PinnedBuffer`], [`PinnedVec`], host-allocator backends.
//! - [`assignment`]: [`ProvingAssignment`] (the `ConstraintSystem` synthesis fills), density
//!   trackers, the capacity-hint cache.
//! - [`params`]: [`Parameters`] in bellperson's file format, [`VerifyingKey`].
//! - [`proof`]: [`Proof`], its encoding, [`verify_proof`].
//! - [`prover`]: [`Prover`], [`prove`], the [`Backend`](prover::Backend) seam, the CPU
//!   backend (`prover::cpu`: NTT and MSM) and, with the `cuda` feature, the CUDA backend
//!   (`prover::cuda`: FFI to `kernels/`, device-resident parameters).
//! - [`error`]: the crate's [`Error`].
//!
//! ## Invariants
//! - A pool pointer is never freed by the global allocator: pool memory goes back only to the
//!   backend that allocated it; growing a pinned vector moves to another pool buffer.
//! - Every checkout is an allocation, a reuse or a counted, logged fallback — never silent.
//!   Growing a pinned vector is a checkout like any other: with `allow_fallback = false` and
//!   no room in the pool, synthesis fails with [`Error::PoolExhausted`] (or
//!   [`Error::Allocation`]) at its end, every pool buffer already returned — no silent move to
//!   the heap, no abort, no panic.
//! - Host out-of-memory in the pool, a pinned vector or an assignment is an
//!   [`Error::Allocation`], never an abort; a circuit's misuse of the constraint system (a
//!   variable it never allocated, a change after synthesis) is an error, never a panic.
//! - Every pool byte is counted once: in use or idle.
//! - After `prove` returns (success or error), every a/b/c buffer is back in its pool.
//! - Parameters are immutable and carry a process-unique id, so a device-resident copy can
//!   never go stale.
//! - Unsafe code lives in `pool::backend`, `pool::vec`, `pool::PinnedBuffer`, `pool::cuda`
//!   (driver calls), `prover::cpu::msm` (the blst calls) and `prover::cuda` (the kernel FFI),
//!   each block with a `SAFETY:` comment.

#![warn(missing_docs)]

pub mod assignment;
pub mod error;
pub mod params;
pub mod pool;
pub mod proof;
pub mod prover;
pub mod testing;

pub use assignment::{CapacityHint, CapacityHints, DensityTracker, ProvingAssignment};
pub use error::{Error, Result};
pub use params::{Parameters, PointCheck, VerifyingKey};
pub use pool::{HeapAllocator, HostAllocator, PinnedBuffer, PinnedPool, PinnedVec, PoolConfig, PoolStats, WhenFull};
pub use proof::{verify_proof, PreparedVerifyingKey, Proof};
pub use prover::{prove, prove_with_randomness, BackendChoice, Prover, Timings};

pub use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
pub use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
