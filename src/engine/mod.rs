//! The proving engine: synthesis overlapped with GPU proving.
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
//! ## Code map
//! - `engine`: [`Engine`] itself (new, submit, stats, drop); `config`: [`EngineConfig`];
//!   `stats`: [`EngineStats`].
//! - `state`: the shared state (jobs, partitions in each stage, counters, workers' books) and
//!   the bookkeeping that finishes a job; `param_cache`: the parameter sets the engine holds.
//! - `dispatch`: the dispatcher and its admission of a partition into the budget; `worker`:
//!   synthesis and the GPU workers.
//! - [`job`]: [`Job`], [`Partition`], [`JobHandle`], [`Progress`].
//! - [`budget`]: the one memory budget and how a partition's bytes are estimated.
//! - [`pacer`]: when the next partition may be dispatched.
//!
//! ## A partition's walk
//! `pending → (dispatch: budget reserved) → in synthesis → waiting → on a GPU → done`.
//!
//! - **Dispatch.** One dispatcher thread picks the next partition (highest job priority, then
//!   the oldest job, then partition order) and dispatches it when the [`Pacer`] says so, a
//!   synthesis worker is free, and the [`budget`] has room for its bytes (its
//!   pool buffers, heap parts and synthesis estimate) beside the bytes reserved (partitions,
//!   synthesis in flight, the parameter sets the engine holds) and the idle pool bytes it
//!   will not reuse. Without room it evicts, one step at a time: idle pool buffers no pending
//!   size reuses, other idle buffers largest first, idle parameter sets (see the budget's
//!   docs); nothing in use. When nothing can be freed it waits (up to
//!   [`EngineConfig::budget_timeout`], then the job fails with [`Error::BudgetExhausted`]). A
//!   partition that cannot fit even beside nothing but its own parameters fails its job at
//!   once. A job larger than the budget streams: each partition reserves, synthesizes, waits
//!   for a GPU, is proved and releases — never hold-and-wait.
//! - **Parameters.** The engine holds each distinct set its jobs use ([`Parameters::id`],
//!   shared by clones) from the first submission that uses it, charged once in the budget,
//!   until it is evicted under pressure or [`Engine::remove_parameters`] drops it;
//!   [`Engine::add_parameters`] preloads one. [`EngineStats::params`] lists them.
//! - **Synthesis** runs on a dedicated thread pool of [`EngineConfig::synthesis_workers`]
//!   threads, through [`Prover::synthesize_for`] (pinned buffers from the engine's pool, sized
//!   by the shared hint cache; a circuit type with no hint yet is sized from its parameters,
//!   so even the first synthesis is pinned and never grows). Its reservation (synthesis
//!   estimate included) is then trued up to the bytes the assignment really holds.
//! - **GPU workers** ([`EngineConfig::gpu_workers_per_backend`] threads per backend) take the
//!   highest-priority waiting partition and prove it with [`Prover::prove_synthesized`]: one
//!   code path proves, whether through the engine or not.
//!
//! ## The in-flight cap (PI mode)
//! The pacer keeps `target_depth` synthesized partitions waiting and caps `waiting + in
//! synthesis`. Its own default cap, `target + GPU workers`, assumes a synthesis no longer than
//! a proof. On the H200 host a 2^24 synthesis takes 4–9 s on one core and its proof 0.49 s:
//! keeping the GPU busy needs about `gpu_workers × synthesis time / GPU time` ≈ 10–18
//! partitions in synthesis at once. So unless the configuration sets one, the engine sets the
//! cap to `target + synthesis workers` (at least `target + GPU workers`): every synthesis
//! worker may be busy while `target` partitions wait. The pacer's rate control, not the cap,
//! then decides how many are in flight (about the drain rate times the synthesis time), and
//! the budget bounds their bytes.
//!
//! ## Failures
//! A partition that fails (synthesis error, a shape that does not match the parameters, a
//! backend error, a panic in the circuit or a worker) fails its job with the reason: its other
//! partitions not yet on a GPU are dropped (buffers and budget freed), those on a GPU finish
//! and are discarded. [`JobHandle::wait`] returns once no partition of the job is left in
//! the engine, so every buffer of the job is back in the pool by then. Other jobs go on.
//!
//! [`Prover`]: crate::Prover
//! [`Prover::synthesize_for`]: crate::Prover::synthesize_for
//! [`Prover::prove_synthesized`]: crate::Prover::prove_synthesized
//! [`Parameters::id`]: crate::Parameters::id
//! [`Error::BudgetExhausted`]: crate::Error::BudgetExhausted

pub mod budget;
mod config;
mod dispatch;
#[allow(clippy::module_inception)]
mod engine;
pub mod job;
pub mod pacer;
mod param_cache;
mod state;
mod stats;
mod worker;

pub use budget::{assignment_bytes, params_hint, partition_bytes, synthesis_bytes};
pub use config::{EngineBackend, EngineConfig};
pub use engine::Engine;
pub use job::{Job, JobHandle, Partition, Progress, ProgressCallback};
pub use pacer::{Pacer, PacerMode, PacerState, PiConfig};
pub use stats::{EngineStats, ParamSetStats, WorkerStats};
