//! The proving engine: synthesis overlapped with GPU proving (issue 9).
//!
//! An [`Engine`] owns a pinned pool, a dedicated pool of synthesis threads, a dispatcher paced
//! by the [`pacer`] and GPU worker threads per backend, each proving through a [`Prover`]
//! (`Prover::prove_synthesized`: one code path proves, with or without the engine). Jobs —
//! batches of partitions with parameters, a priority and r/s — are submitted without blocking;
//! their partitions stream through one memory [`budget`] (reserve → synthesize → wait for a
//! GPU → prove → release), so a job larger than the budget never holds and waits. The budget
//! also counts the parameter sets the engine holds (a cache: each set once), the circuits'
//! synthesis in flight and the pool's idle buffers; under pressure idle buffers and idle
//! parameter sets are evicted.
//!
//! ```no_run
//! # fn main() -> cuzk::Result<()> {
//! # let (params, circuits): (cuzk::Parameters, Vec<cuzk::testing::Synthetic>) = todo!();
//! use cuzk::engine::{Engine, EngineConfig, Job};
//! let engine = Engine::new(EngineConfig::default())?;
//! let handle = engine.submit(Job::from_circuits(params, circuits).with_priority(1));
//! println!("{:?}", engine.stats().pacer);
//! let proofs = handle.wait()?;
//! # Ok(()) }
//! ```
//!
//! - [`runtime`]: [`Engine`], [`EngineConfig`], [`EngineStats`] (the threads and their walk).
//! - [`job`]: [`Job`], [`Partition`], [`JobHandle`], [`Progress`].
//! - [`budget`]: the one memory budget and how a partition's bytes are estimated.
//! - [`pacer`]: when the next partition may be dispatched.
//!
//! [`Prover`]: crate::Prover

pub mod budget;
pub mod job;
pub mod pacer;
pub mod runtime;

pub use budget::{assignment_bytes, params_hint, partition_bytes, synthesis_bytes};
pub use job::{Job, JobHandle, Partition, Progress, ProgressCallback};
pub use pacer::{Pacer, PacerMode, PacerState, PiConfig};
pub use runtime::{Engine, EngineBackend, EngineConfig, EngineStats, ParamSetStats, WorkerStats};
