//! The proving engine: synthesis overlapped with GPU proving.
//!
//! An [`Engine`] runs synthesis workers and GPU workers (each proving through a [`Prover`],
//! sharing one pinned pool and hint cache); jobs of partitions are submitted without blocking,
//! dispatched by the [`pacer`], and stream through one memory [`budget`] (reserve → synthesize
//! → wait for a GPU → prove → release). A partition's walk, the budget, eviction and failures
//! are described once, in `docs/ARCHITECTURE.md` ("The engine") in the repository.
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
//! Circuit partitions take the witness path by default ([`crate::compiled`], "Who uses it"):
//! the first of a circuit type and shape is synthesized in full and records its compiled
//! circuit; later ones hold only a compact witness until their proof
//! ([`EngineConfig::witness_path`], [`EngineStats::witness`]).
//!
//! [`Job`], [`JobHandle`] and [`Progress`] are in [`job`]; [`EngineConfig`] and
//! [`EngineStats`] configure and report it.
//!
//! [`Prover`]: crate::Prover

pub mod budget;
mod config;
mod dispatch;
#[allow(clippy::module_inception)]
mod engine;
pub mod job;
pub mod pacer;
mod param_cache;
mod shared;
mod state;
mod stats;
mod worker;

pub use config::{EngineBackend, EngineConfig};
pub use engine::Engine;
pub use job::{Job, JobHandle, Partition, Progress, ProgressCallback};
pub use pacer::{PacerMode, PacerState, PiConfig};
pub use stats::{EngineStats, ParamSetStats, WorkerStats};
