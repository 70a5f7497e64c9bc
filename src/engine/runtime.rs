//! The [`Engine`]: synthesis workers, a paced dispatcher, one memory budget and GPU workers
//! around [`Prover`]s that share one pool and one capacity-hint cache.
//!
//! ## A partition's walk
//! `pending → (dispatch: budget reserved) → in synthesis → waiting → on a GPU → done`.
//!
//! - **Dispatch.** One dispatcher thread picks the next partition (highest job priority, then
//!   the oldest job, then partition order) and dispatches it when the [`Pacer`] says so, a
//!   synthesis worker is free, and the [`budget`](super::budget) has room for its bytes (its
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

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use ff::Field;
use parking_lot::{Condvar, Mutex};

use super::budget::{assignment_bytes, params_hint, partition_bytes, pool_requests, synthesis_bytes, Budget};
use super::job::{Canceller, Job, JobHandle, JobShared, Partition, PartitionKind, Randomness, SynthesizeFn};
use super::pacer::{Pacer, PacerMode, PacerState, PiConfig};
use crate::assignment::{CapacityHint, CapacityHints, ProvingAssignment};
use crate::error::{panic_message, Error, Result};
use crate::params::Parameters;
use crate::pool::{HostAllocator, PinnedPool, PoolConfig, PoolStats, WhenFull};
use crate::proof::Proof;
use crate::prover::{Backend, BackendChoice, Prover};

/// Smoothing factor of the engine's moving averages of synthesis and GPU time (the pacer
/// keeps its own EMA of GPU time with its own factor).
const EMA_ALPHA: f64 = 0.2;

/// A backend the engine proves on.
#[derive(Clone)]
pub enum EngineBackend {
    /// A backend [`Prover::with_backend`] makes (`Gpu(n)` for device `n`).
    Choice(BackendChoice),
    /// A backend made by the caller (e.g. `CudaBackend::shared(d)`).
    Custom(Arc<dyn Backend>),
}

impl std::fmt::Debug for EngineBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Choice(c) => f.debug_tuple("Choice").field(c).finish(),
            Self::Custom(b) => f.debug_tuple("Custom").field(&b.name()).finish(),
        }
    }
}

/// How an [`Engine`] is built. `EngineConfig::default()` and change fields.
pub struct EngineConfig {
    /// Threads that synthesize partitions (at least 1). Default: the host's cores.
    pub synthesis_workers: usize,
    /// The dispatch pacer. Default: PI with [`PiConfig::default`]; an `in_flight_cap` of `None`
    /// becomes `target + synthesis workers` (see the module docs).
    pub pacer: PacerMode,
    /// The memory budget in bytes for the partitions in flight (a/b/c, aux, inputs); also the
    /// pool's cap. Default: half the host's memory.
    pub budget_bytes: usize,
    /// How long a dispatch waits for room in the budget before its job fails. Default 10 min.
    pub budget_timeout: Duration,
    /// GPU worker threads per backend (at least 1). Default 1.
    pub gpu_workers_per_backend: usize,
    /// The backends to prove on, one set of GPU workers each (at least one). Default: one
    /// [`BackendChoice::Auto`].
    pub backends: Vec<EngineBackend>,
    /// The memory the pool allocates from. Default `None`: [`PinnedPool::best_available`]
    /// (CUDA pinned memory in a `cuda` build with a GPU, else the heap).
    pub pool_allocator: Option<Box<dyn HostAllocator>>,
    /// The pool's `max_reuse_factor` (≥ 1). Default 1: a stream of one circuit type and size
    /// reuses its buffers exactly, and a reservation is exactly what a partition checks out
    /// (a larger factor makes every reservation that much larger; see
    /// [`partition_bytes`]).
    pub pool_reuse_factor: f64,
    /// Bytes reserved per constraint (of the partition's capacity hint) for the circuit's own
    /// memory while it synthesizes, released when its synthesis ends (see
    /// [`synthesis_bytes`]). Default 0: cuzk counts exactly
    /// what it allocates itself (a/b/c, aux, inputs, density bits: [`partition_bytes`]) but
    /// cannot know a circuit's gadgets and witness computation, which range from nothing
    /// (circuits whose witness is computed before synthesis, like the synthetic ones the
    /// engine's benchmark streams) to several times a/b/c; a guess would either starve the
    /// GPUs of partitions in flight or undercount. Measure one synthesis of your circuit (peak
    /// resident memory minus [`partition_bytes`], over its constraints) and set it.
    pub synthesis_bytes_per_constraint: usize,
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("synthesis_workers", &self.synthesis_workers)
            .field("pacer", &self.pacer)
            .field("budget_bytes", &self.budget_bytes)
            .field("budget_timeout", &self.budget_timeout)
            .field("gpu_workers_per_backend", &self.gpu_workers_per_backend)
            .field("backends", &self.backends)
            .field("pool_allocator", &self.pool_allocator.as_ref().map(|a| a.name()))
            .field("pool_reuse_factor", &self.pool_reuse_factor)
            .field("synthesis_bytes_per_constraint", &self.synthesis_bytes_per_constraint)
            .finish()
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            synthesis_workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pacer: PacerMode::Pi(PiConfig::default()),
            budget_bytes: host_memory().map_or(16 << 30, |m| m / 2),
            budget_timeout: Duration::from_secs(600),
            gpu_workers_per_backend: 1,
            backends: vec![EngineBackend::Choice(BackendChoice::Auto)],
            pool_allocator: None,
            pool_reuse_factor: 1.0,
            synthesis_bytes_per_constraint: 0,
        }
    }
}

/// The host's memory in bytes, from `/proc/meminfo` (Linux).
fn host_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// One GPU worker's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerStats {
    /// Index of its backend in [`EngineConfig::backends`].
    pub backend: usize,
    /// The backend's name.
    pub backend_name: &'static str,
    /// Time spent proving since the engine started (a proof under way counts up to now).
    pub busy: Duration,
    /// `busy` over the time since the engine started.
    pub busy_fraction: f64,
    /// Partitions it finished (proved or failed).
    pub partitions: u64,
    /// Whether its backend is lost (a sticky GPU error): the worker stopped taking partitions.
    pub lost: bool,
}

/// One parameter set in the engine's cache ([`EngineStats::params`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSetStats {
    /// [`Parameters::id`].
    pub id: u64,
    /// Host bytes charged to the budget.
    pub host_bytes: usize,
    /// Non-CPU backends it is (at most) resident on (see [`EngineStats::params_device_bytes`]).
    pub resident_backends: usize,
    /// Partitions of the engine's jobs using it (pending or in flight); 0: idle, evictable.
    pub partitions: usize,
    /// Time since a job used it last (submission, dispatch or proof).
    pub idle_for: Duration,
}

/// A snapshot of the engine ([`Engine::stats`]).
#[derive(Debug, Clone)]
pub struct EngineStats {
    /// Partitions submitted and not yet dispatched.
    pub pending: usize,
    /// Partitions dispatched and being synthesized.
    pub in_synthesis: usize,
    /// Synthesized partitions waiting for a GPU worker.
    pub waiting: usize,
    /// Partitions being proved.
    pub on_gpu: usize,
    /// Jobs not yet over.
    pub jobs_active: usize,
    /// Jobs whose proofs all came back.
    pub jobs_done: u64,
    /// Jobs that failed or were cancelled (not those refused at submission, which never
    /// entered the engine).
    pub jobs_failed: u64,
    /// Partitions proved.
    pub partitions_done: u64,
    /// Partitions whose own synthesis or proof failed.
    pub partitions_failed: u64,
    /// Partitions dropped unproved because their job failed or was cancelled.
    pub partitions_dropped: u64,
    /// The pacer's state.
    pub pacer: PacerState,
    /// The pool's counters.
    pub pool: PoolStats,
    /// Per GPU worker.
    pub workers: Vec<WorkerStats>,
    /// Moving average of a partition's synthesis time.
    pub synthesis_time_ema: Option<Duration>,
    /// Moving average of a partition's proving (GPU worker) time.
    pub gpu_time_ema: Option<Duration>,
    /// Bytes reserved in the budget now: partitions, synthesis in flight, parameter sets (the
    /// pool's idle buffers are not reserved; see [`budget`](super::budget)).
    pub budget_used: usize,
    /// Of `budget_used`: bytes reserved for circuits' own memory while they synthesize
    /// ([`EngineConfig::synthesis_bytes_per_constraint`]).
    pub synthesis_reserved: usize,
    /// Parameter sets the engine holds.
    pub params_sets: usize,
    /// Per set the engine holds, least recently used first.
    pub params: Vec<ParamSetStats>,
    /// Of `budget_used`: the host bytes of those sets, each set once.
    pub params_host_bytes: usize,
    /// Device bytes of the sets the engine holds that it proved with (or prepared) on each
    /// non-CPU backend since that backend's last eviction, summed over backends. An upper
    /// bound: a backend evicts idle sets under its own memory limit and streams sets too large
    /// to be resident (`CudaBackend::resident_bytes` is exact for one backend).
    pub params_device_bytes: usize,
    /// Dispatches that found no room in the budget and nothing to evict, and waited (counted
    /// once per wait, when the wait starts).
    pub budget_waits: u64,
    /// Idle pool bytes freed under budget pressure.
    pub evicted_pool_bytes: usize,
    /// Parameter sets evicted under budget pressure.
    pub evicted_params: u64,
    /// Host bytes those evictions freed: sets that no one else held (a set the caller still
    /// holds a clone of leaves the budget, but its memory stays with the caller).
    pub evicted_params_host_bytes: usize,
    /// The most bytes ever reserved at once. Above `budget_limit` only by bytes that existed
    /// before the budget counted them: partitions submitted synthesized already (each one
    /// alone fits the budget, or its job is refused), parameter sets, a partition that grew
    /// past its reservation.
    pub budget_peak: usize,
    /// The budget.
    pub budget_limit: usize,
    /// Time since the engine started.
    pub uptime: Duration,
}

/// A partition not yet dispatched.
struct Pending {
    index: usize,
    circuit_type: &'static str,
    synthesize: SynthesizeFn,
}

/// A synthesized partition waiting for a GPU worker.
struct Ready {
    job: u64,
    index: usize,
    priority: i32,
    assignment: ProvingAssignment,
    params: Parameters,
    r: Scalar,
    s: Scalar,
    /// Bytes it holds in the budget.
    reserved: usize,
    /// Whether the pacer dispatched it (pre-synthesized partitions skip the pacer).
    paced: bool,
}

impl Ready {
    /// Higher sorts first: priority, then the older job, then partition order.
    fn key(&self) -> (i32, std::cmp::Reverse<u64>, std::cmp::Reverse<usize>) {
        (
            self.priority,
            std::cmp::Reverse(self.job),
            std::cmp::Reverse(self.index),
        )
    }
}

struct JobEntry {
    shared: Arc<JobShared>,
    priority: i32,
    label: String,
    params: Parameters,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    pending: VecDeque<Pending>,
    proofs: Vec<Option<Proof>>,
    /// Partitions proved.
    done: usize,
    /// Partitions still in the engine (pending, in synthesis, waiting, on a GPU).
    outstanding: usize,
    error: Option<Error>,
    submitted: Instant,
    synthesis_time: Duration,
    gpu_time: Duration,
    /// Partitions that left the engine unproved (failed or dropped).
    unproved: usize,
    /// Since when its next partition waits for budget room.
    blocked_since: Option<Instant>,
    /// Whether that wait is counted in `budget_waits` already.
    budget_waited: bool,
}

#[derive(Default)]
struct Counters {
    jobs_done: u64,
    jobs_failed: u64,
    done: u64,
    failed: u64,
    dropped: u64,
    budget_waits: u64,
    evicted_pool_bytes: usize,
    evicted_params: u64,
    evicted_params_host_bytes: usize,
}

/// A parameter set the engine holds, charged once in the budget.
struct ParamEntry {
    params: Parameters,
    /// Bytes charged: its host bytes when the engine took it.
    host_bytes: usize,
    /// The engine's use clock at its last submission, dispatch or proof (LRU order).
    last_use: u64,
    /// When that was.
    last_used: Instant,
}

struct WorkerBooks {
    backend: usize,
    name: &'static str,
    busy: Duration,
    since: Option<Instant>,
    partitions: u64,
    lost: bool,
}

struct State {
    jobs: HashMap<u64, JobEntry>,
    ready: Vec<Ready>,
    pacer: Pacer,
    budget: Budget,
    in_synthesis: usize,
    on_gpu: usize,
    shutdown: bool,
    next_id: u64,
    synthesis_ema: Option<f64>,
    gpu_ema: Option<f64>,
    counters: Counters,
    workers: Vec<WorkerBooks>,
    /// GPU workers whose backend is not lost; at 0 every job fails and new ones are refused.
    live_workers: usize,
    /// The parameter cache, by [`Parameters::id`] (shared by clones).
    params: HashMap<u64, ParamEntry>,
    /// The use clock of the parameter cache.
    clock: u64,
    /// Bytes reserved for synthesis in flight (part of the budget's reservations).
    synthesis_reserved: usize,
    /// The pool requests of the partitions in synthesis (which may not have checked out yet)
    /// and the a/b/c buffer sizes of those on a GPU (which give a/b/c back to the pool once H
    /// is computed): idle buffers of their sizes are counted in their reservations, not as
    /// idle.
    synthesis_requests: Vec<[usize; 4]>,
    gpu_requests: Vec<[usize; 4]>,
    /// Per backend: the sets proved with (or prepared) there since its last eviction.
    resident: Vec<HashSet<u64>>,
    /// Per backend: evictions so far (a proof that started before one does not mark its set).
    evict_epoch: Vec<u64>,
}

/// Notifications to make once the engine's lock is released (callbacks may call back into
/// the engine).
#[derive(Default)]
struct Deferred {
    progressed: Vec<(Arc<JobShared>, usize, usize)>,
    finished: Vec<(Arc<JobShared>, Result<Vec<Proof>>, usize)>,
}

impl Deferred {
    fn run(self) {
        for (job, done, failed) in self.progressed {
            job.note_done(done, failed);
        }
        for (job, result, done) in self.finished {
            job.finish(result, done);
        }
    }
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the dispatcher: a submission, a synthesis or proof done, budget released, shutdown.
    dispatch_cv: Condvar,
    /// Wakes GPU workers: a partition ready, shutdown.
    gpu_cv: Condvar,
    start: Instant,
    pool: PinnedPool,
    /// Synthesizes (never proves): the pool and the hints every GPU worker's prover shares.
    synth_prover: Prover,
    hints: CapacityHints,
    reuse_factor: f64,
    budget_timeout: Duration,
    synthesis_workers: usize,
    synthesis_per_constraint: usize,
    /// One prover per backend (for preparing and evicting parameters).
    backend_provers: Vec<Prover>,
}

fn ema(old: Option<f64>, sample: Duration) -> Option<f64> {
    let x = sample.as_secs_f64();
    Some(old.map_or(x, |e| EMA_ALPHA * x + (1.0 - EMA_ALPHA) * e))
}

fn secs(x: Option<f64>) -> Option<Duration> {
    x.and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// Runs `f` on a worker thread, a panic in it becoming [`Error::Panicked`] (`what` failed):
/// the partition fails, the worker goes on.
fn unless_panic<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(Error::Panicked(format!("{}: {}", what(), panic_message(&*p)))))
}

impl State {
    /// One partition of job `id` left the engine; finishes the job when it was the last.
    fn partition_left(&mut self, id: u64, deferred: &mut Deferred) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        job.outstanding = job.outstanding.saturating_sub(1);
        if job.outstanding == 0 {
            self.finalize(id, deferred);
        }
    }

    /// Removes job `id` and reports its outcome.
    fn finalize(&mut self, id: u64, deferred: &mut Deferred) {
        let Some(mut job) = self.jobs.remove(&id) else {
            return;
        };
        let wall = job.submitted.elapsed();
        let result = match job.error.take() {
            Some(e) => {
                self.counters.jobs_failed += 1;
                log::info!(
                    "engine: job {id} '{}' failed after {:.2} s: {e}",
                    job.label,
                    wall.as_secs_f64()
                );
                Err(e)
            }
            None => {
                let proofs: Option<Vec<Proof>> = job.proofs.iter().copied().collect();
                match proofs {
                    Some(proofs) => {
                        self.counters.jobs_done += 1;
                        log::info!(
                            "engine: job {id} '{}' done: {} proofs in {:.2} s (synthesis {:.2} s, proving {:.2} s, summed over partitions)",
                            job.label,
                            proofs.len(),
                            wall.as_secs_f64(),
                            job.synthesis_time.as_secs_f64(),
                            job.gpu_time.as_secs_f64()
                        );
                        Ok(proofs)
                    }
                    None => {
                        self.counters.jobs_failed += 1;
                        Err(Error::Cancelled(format!(
                            "job {id}: partitions left the engine unproved"
                        )))
                    }
                }
            }
        };
        deferred.finished.push((job.shared.clone(), result, job.done));
    }

    /// Fails job `id` with `err` (the first error wins): drops its pending partitions and its
    /// partitions waiting for a GPU (their buffers back to the pool, then their budget
    /// released). Partitions in synthesis or on a GPU are dropped when they come back.
    fn fail_job(&mut self, id: u64, err: Error, now: Duration, deferred: &mut Deferred) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.error.is_none() {
            log::debug!("engine: job {id} '{}' fails: {err}", job.label);
            job.error = Some(err);
        }
        let pending = std::mem::take(&mut job.pending).len();
        job.outstanding -= pending;
        job.unproved += pending;
        self.counters.dropped += pending as u64;
        let mut i = 0;
        while i < self.ready.len() {
            if self.ready[i].job != id {
                i += 1;
                continue;
            }
            let item = self.ready.swap_remove(i);
            if item.paced {
                // Leaves the pacer's waiting count (no GPU time is reported for it).
                self.pacer.on_gpu_start(now);
            }
            let reserved = item.reserved;
            drop(item); // buffers back to the pool before the budget says they are free
            self.budget.release(reserved);
            self.counters.dropped += 1;
            if let Some(job) = self.jobs.get_mut(&id) {
                job.outstanding -= 1;
                job.unproved += 1;
            }
        }
        match self.jobs.get(&id) {
            Some(j) if j.outstanding == 0 => self.finalize(id, deferred),
            Some(j) => deferred.progressed.push((j.shared.clone(), j.done, j.unproved)),
            None => {}
        }
    }

    /// One partition of job `id` left the engine unproved (failed, or dropped after its job
    /// failed); the caller then calls [`State::partition_left`].
    fn note_unproved(&mut self, id: u64, deferred: &mut Deferred) {
        if let Some(job) = self.jobs.get_mut(&id) {
            job.unproved += 1;
            deferred.progressed.push((job.shared.clone(), job.done, job.unproved));
        }
    }

    /// Holds `params` in the parameter cache (charging its host bytes once, even past the
    /// limit: they exist already) and marks it used now.
    fn hold_params(&mut self, params: &Parameters) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(entry) = self.params.get_mut(&params.id()) {
            entry.last_use = clock;
            entry.last_used = Instant::now();
            if entry.host_bytes > 0 && !params.has_host_copy() {
                // The same set without its host copy (`Prover::prepare_device_only`): the engine
                // lets its host copy go (jobs in flight keep theirs until they end).
                self.budget.release(entry.host_bytes);
                entry.host_bytes = 0;
                entry.params = params.clone();
            }
            return;
        }
        let host_bytes = params.host_bytes();
        self.budget.force_reserve(host_bytes);
        log::info!(
            "engine: holds parameters {} ({} MiB on the host, charged to the budget)",
            params.id(),
            host_bytes >> 20
        );
        self.params.insert(
            params.id(),
            ParamEntry {
                params: params.clone(),
                host_bytes,
                last_use: clock,
                last_used: Instant::now(),
            },
        );
    }

    /// Marks parameter set `id` used now.
    fn touch_params(&mut self, id: u64) {
        self.clock += 1;
        if let Some(entry) = self.params.get_mut(&id) {
            entry.last_use = self.clock;
            entry.last_used = Instant::now();
        }
    }

    /// Partitions of the engine's jobs (pending, in synthesis, waiting, on a GPU) that use
    /// parameter set `id`.
    fn params_users(&self, id: u64) -> usize {
        self.jobs
            .values()
            .filter(|j| j.params.id() == id)
            .map(|j| j.outstanding)
            .sum()
    }

    /// The idle parameter set to evict first: no job of the engine uses it, it frees host
    /// bytes; sets only the engine holds (their host copy goes with them) before sets a caller
    /// also holds, then least recently used first.
    fn eviction_candidate(&self) -> Option<u64> {
        self.params
            .iter()
            .filter(|(&id, e)| e.host_bytes > 0 && !self.jobs.values().any(|j| j.params.id() == id))
            .min_by_key(|(_, e)| (e.params.host_copy_holders() > 1, e.last_use))
            .map(|(&id, _)| id)
    }

    /// Takes set `id` out of the cache and its charge out of the budget. The caller evicts the
    /// set's resident copies ([`Prover::evict_params`]), so its residency marks go too.
    fn drop_params(&mut self, id: u64) -> Option<ParamEntry> {
        let entry = self.params.remove(&id)?;
        self.budget.release(entry.host_bytes);
        for set in &mut self.resident {
            set.remove(&id);
        }
        for epoch in &mut self.evict_epoch {
            *epoch += 1;
        }
        Some(entry)
    }

    /// The job whose next partition is dispatched next: highest priority, then oldest.
    fn head_job(&self) -> Option<u64> {
        self.jobs
            .iter()
            .filter(|(_, j)| j.error.is_none() && !j.pending.is_empty())
            .max_by_key(|(&id, j)| (j.priority, std::cmp::Reverse(id)))
            .map(|(&id, _)| id)
    }
}

impl Shared {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn dispatcher(self: Arc<Self>, synth: Arc<rayon::ThreadPool>) {
        let mut st = self.state.lock();
        loop {
            if st.shutdown {
                return;
            }
            let Some(id) = st.head_job() else {
                self.dispatch_cv.wait(&mut st);
                continue;
            };
            if st.in_synthesis >= self.synthesis_workers {
                self.dispatch_cv.wait(&mut st);
                continue;
            }
            let now = self.now();
            // Liveness: with nothing in flight no event will come, so the pacer's "not until an
            // event" (e.g. a start whose first partitions failed before any GPU time was known)
            // must not stall the engine.
            let idle = st.in_synthesis == 0 && st.ready.is_empty() && st.on_gpu == 0;
            match st.pacer.next_dispatch_at(now) {
                None if !idle => {
                    self.dispatch_cv.wait(&mut st);
                    continue;
                }
                Some(at) if at > now && !idle => {
                    self.dispatch_cv.wait_for(&mut st, at - now);
                    continue;
                }
                _ => {}
            }

            // The budget.
            let state = &mut *st;
            let job = state.jobs.get_mut(&id).expect("head job exists");
            let Some(next) = job.pending.front() else {
                continue;
            };
            let domain = job.params.domain_size();
            let hint = match self.hints.get(next.circuit_type, Some(domain)) {
                Some(h) => h,
                None => {
                    // First of its type at this size: sized from the parameters, pinned at once.
                    let h = params_hint(&job.params);
                    self.hints.record(next.circuit_type, h);
                    h
                }
            };
            let synth_bytes = synthesis_bytes(hint, self.synthesis_per_constraint);
            let need = partition_bytes(hint, self.reuse_factor).saturating_add(synth_bytes);
            let own_params = state.params.get(&job.params.id()).map_or(0, |e| e.host_bytes);
            let limit = state.budget.limit();
            if need.saturating_add(own_params) > limit {
                let err = Error::BudgetExhausted {
                    requested: need.saturating_add(own_params),
                    reserved: state.budget.reserved(),
                    limit,
                    waited: Duration::ZERO,
                };
                let mut deferred = Deferred::default();
                state.fail_job(id, err, now, &mut deferred);
                drop(st);
                deferred.run();
                st = self.state.lock();
                continue;
            }
            // Room beside what is reserved and the idle pool bytes neither it nor a partition
            // in synthesis (which may not have checked out yet) would reuse.
            let requests = pool_requests(hint);
            let claims: Vec<usize> = state
                .synthesis_requests
                .iter()
                .chain(&state.gpu_requests)
                .flatten()
                .chain(&requests)
                .copied()
                .collect();
            let idle = self.pool.stats().bytes_idle;
            let other_idle = idle.saturating_sub(self.pool.idle_reusable_bytes(&claims));
            if !state.budget.try_reserve_beside(need, other_idle) {
                let job = state.jobs.get_mut(&id).expect("head job exists");
                let since = *job.blocked_since.get_or_insert_with(Instant::now);
                let waited = since.elapsed();
                if waited >= self.budget_timeout {
                    let err = Error::BudgetExhausted {
                        requested: need,
                        reserved: state.budget.reserved(),
                        limit,
                        waited,
                    };
                    let mut deferred = Deferred::default();
                    state.fail_job(id, err, now, &mut deferred);
                    drop(st);
                    deferred.run();
                    st = self.state.lock();
                    continue;
                }
                let excess =
                    (state.budget.reserved().saturating_add(need).saturating_add(other_idle)).saturating_sub(limit);
                if self.make_room(&mut st, excess, other_idle) {
                    continue;
                }
                if let Some(job) = st.jobs.get_mut(&id) {
                    if !job.budget_waited {
                        job.budget_waited = true;
                        st.counters.budget_waits += 1;
                    }
                }
                log::debug!(
                    "engine: job {id} waits for budget room: {need} bytes needed, {} of {limit} reserved, {other_idle} idle in the pool",
                    st.budget.reserved()
                );
                self.dispatch_cv
                    .wait_for(&mut st, self.budget_timeout.saturating_sub(waited));
                continue;
            }
            let job = state.jobs.get_mut(&id).expect("head job exists");
            job.blocked_since = None;
            job.budget_waited = false;
            let next = job.pending.pop_front().expect("front checked above");
            let params = job.params.clone();
            state.touch_params(params.id());
            state.pacer.on_dispatch(now);
            state.in_synthesis += 1;
            state.synthesis_reserved += synth_bytes;
            state.synthesis_requests.push(requests);
            log::debug!(
                "engine: job {id} partition {} dispatched ({need} bytes reserved, {synth_bytes} of them for its synthesis, {} in synthesis)",
                next.index,
                state.in_synthesis
            );
            let shared = self.clone();
            synth.spawn(move || shared.synthesize(id, next, params, need, synth_bytes, requests));
        }
    }

    /// The pool request sizes of the pending partitions (each circuit type and domain once):
    /// the "current sizes" an idle buffer must fit to be kept under pressure.
    fn pending_requests(&self, st: &State) -> Vec<usize> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for job in st.jobs.values().filter(|j| j.error.is_none()) {
            let domain = job.params.domain_size();
            for p in &job.pending {
                if !seen.insert((p.circuit_type, domain)) {
                    continue;
                }
                let hint = self
                    .hints
                    .get(p.circuit_type, Some(domain))
                    .unwrap_or_else(|| params_hint(&job.params));
                out.extend(pool_requests(hint));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Frees memory for a dispatch `excess` bytes short of room, of which `other_idle` are
    /// idle pool bytes it would not reuse: one step of the eviction order (see
    /// [`budget`](super::budget)), the first that frees anything. Returns whether one did.
    fn make_room(&self, st: &mut parking_lot::MutexGuard<'_, State>, excess: usize, other_idle: usize) -> bool {
        // 1. Idle buffers that no pending partition's sizes would reuse.
        let sizes = self.pending_requests(st);
        let freed = parking_lot::MutexGuard::unlocked(st, || self.pool.shrink_unreusable(&sizes));
        if freed > 0 {
            st.counters.evicted_pool_bytes += freed;
            log::debug!("engine: under pressure, freed {freed} idle pool bytes no pending size reuses");
            return true;
        }
        // 2. Other idle buffers, largest first, as many bytes as are missing.
        if other_idle > 0 {
            let idle = self.pool.stats().bytes_idle;
            let target = idle.saturating_sub(excess.min(other_idle));
            let freed = parking_lot::MutexGuard::unlocked(st, || self.pool.shrink(target));
            if freed > 0 {
                st.counters.evicted_pool_bytes += freed;
                log::debug!("engine: under pressure, freed {freed} idle pool bytes (largest first)");
                return true;
            }
        }
        // 3. An idle parameter set, with its resident copies (other sets stay resident).
        let Some(pid) = st.eviction_candidate() else {
            return false;
        };
        let Some(entry) = st.drop_params(pid) else {
            return false;
        };
        st.counters.evicted_params += 1;
        let freed = parking_lot::MutexGuard::unlocked(st, || {
            for prover in &self.backend_provers {
                prover.evict_params(&entry.params);
            }
            let alone = entry.params.host_copy_holders() == 1;
            let bytes = entry.host_bytes;
            drop(entry);
            if alone {
                bytes
            } else {
                0
            }
        });
        st.counters.evicted_params_host_bytes += freed;
        log::info!("engine: under pressure, evicted idle parameters {pid} ({freed} host bytes freed)");
        true
    }

    fn synthesize(
        &self,
        id: u64,
        partition: Pending,
        params: Parameters,
        reserved: usize,
        synth_bytes: usize,
        requests: [usize; 4],
    ) {
        let start = Instant::now();
        let Pending { index, synthesize, .. } = partition;
        let result = unless_panic(
            || format!("synthesis of partition {index}"),
            || synthesize(&self.synth_prover, &params),
        );
        let elapsed = start.elapsed();
        let mut deferred = Deferred::default();
        let mut st = self.state.lock();
        let now = self.now();
        st.in_synthesis -= 1;
        st.synthesis_reserved -= synth_bytes;
        if let Some(i) = st.synthesis_requests.iter().position(|r| *r == requests) {
            st.synthesis_requests.swap_remove(i);
        }
        st.synthesis_ema = ema(st.synthesis_ema, elapsed);
        let alive = st.jobs.get(&id).is_some_and(|j| j.error.is_none()) && !st.shutdown;
        // A clone of the parameters not handed on is dropped before the job's waiter wakes, so
        // the engine's cache knows who else holds the set.
        let mut leftover = None;
        match result {
            Ok(assignment) if alive => {
                let held = assignment_bytes(&assignment);
                let reserved = st.budget.adjust(reserved, held);
                st.pacer.on_synthesis_done(now);
                let job = st.jobs.get_mut(&id).expect("alive job exists");
                job.synthesis_time += elapsed;
                let item = Ready {
                    job: id,
                    index,
                    priority: job.priority,
                    params,
                    r: job.r[index],
                    s: job.s[index],
                    assignment,
                    reserved,
                    paced: true,
                };
                log::debug!(
                    "engine: job {id} partition {index} synthesized in {:.1} ms ({held} bytes)",
                    elapsed.as_secs_f64() * 1e3
                );
                st.ready.push(item);
                self.gpu_cv.notify_one();
            }
            Ok(assignment) => {
                leftover = Some(params);
                st.pacer.on_synthesis_failed(now);
                drop(assignment); // buffers back before the budget says they are free
                st.budget.release(reserved);
                st.counters.dropped += 1;
                st.note_unproved(id, &mut deferred);
                st.partition_left(id, &mut deferred);
            }
            Err(e) => {
                leftover = Some(params);
                st.pacer.on_synthesis_failed(now);
                st.budget.release(reserved);
                st.counters.failed += 1;
                log::info!("engine: job {id} partition {index} failed in synthesis: {e}");
                st.note_unproved(id, &mut deferred);
                st.fail_job(id, e, now, &mut deferred);
                st.partition_left(id, &mut deferred);
            }
        }
        drop(st);
        drop(leftover);
        self.dispatch_cv.notify_all();
        deferred.run();
    }

    fn gpu_worker(&self, worker: usize, prover: Prover) {
        loop {
            let mut st = self.state.lock();
            if prover.is_backend_lost() {
                self.retire(&mut st, worker, &prover);
                return;
            }
            let item = loop {
                if st.shutdown {
                    return;
                }
                let best = st.ready.iter().enumerate().max_by_key(|(_, r)| r.key()).map(|(i, _)| i);
                match best {
                    Some(i) => break st.ready.swap_remove(i),
                    None => self.gpu_cv.wait(&mut st),
                }
            };
            let now = self.now();
            if item.paced {
                st.pacer.on_gpu_start(now);
            }
            st.on_gpu += 1;
            st.workers[worker].since = Some(Instant::now());
            let a = &item.assignment;
            let abc = [a.a.capacity(), a.b.capacity(), a.c.capacity(), 0].map(|n| n * std::mem::size_of::<Scalar>());
            st.gpu_requests.push(abc);
            let backend = st.workers[worker].backend;
            let epoch = st.evict_epoch[backend];
            drop(st);
            self.dispatch_cv.notify_all();

            let Ready {
                job: id,
                index,
                assignment,
                params,
                r,
                s,
                reserved,
                ..
            } = item;
            let start = Instant::now();
            // The assignment is dropped inside (its buffers back to the pool) on every path.
            let result = unless_panic(
                || format!("proving partition {index} on {}", prover.backend_name()),
                || prover.prove_synthesized(vec![assignment], &params, &[r], &[s]),
            );
            let elapsed = start.elapsed();

            let mut deferred = Deferred::default();
            let mut st = self.state.lock();
            let now = self.now();
            st.on_gpu -= 1;
            if let Some(i) = st.gpu_requests.iter().position(|r| *r == abc) {
                st.gpu_requests.swap_remove(i);
            }
            st.pacer.on_gpu_done(now, elapsed);
            st.gpu_ema = ema(st.gpu_ema, elapsed);
            let books = &mut st.workers[worker];
            books.busy += elapsed;
            books.since = None;
            books.partitions += 1;
            st.budget.release(reserved);
            st.touch_params(params.id());
            if result.is_ok() && st.evict_epoch[backend] == epoch && st.params.contains_key(&params.id()) {
                st.resident[backend].insert(params.id());
            }
            let alive = st.jobs.get(&id).is_some_and(|j| j.error.is_none());
            match result {
                Ok((mut proofs, _)) if alive => {
                    st.counters.done += 1;
                    let job = st.jobs.get_mut(&id).expect("alive job exists");
                    job.gpu_time += elapsed;
                    job.proofs[index] = proofs.pop();
                    job.done += 1;
                    deferred.progressed.push((job.shared.clone(), job.done, job.unproved));
                    log::debug!(
                        "engine: job {id} partition {index} proved on {} in {:.1} ms",
                        prover.backend_name(),
                        elapsed.as_secs_f64() * 1e3
                    );
                }
                Ok(_) => {
                    st.counters.dropped += 1;
                    st.note_unproved(id, &mut deferred);
                }
                Err(e) => {
                    st.counters.failed += 1;
                    st.note_unproved(id, &mut deferred);
                    log::info!(
                        "engine: job {id} partition {index} failed on {}: {e}",
                        prover.backend_name()
                    );
                    st.fail_job(id, e, now, &mut deferred);
                }
            }
            st.partition_left(id, &mut deferred);
            drop(st);
            // Before the job's waiter wakes (see `synthesize`).
            drop(params);
            self.dispatch_cv.notify_all();
            deferred.run();
        }
    }

    /// Worker `worker`'s backend is lost: it takes no more partitions. When it was the last,
    /// every job fails (nothing could prove its partitions) and new jobs are refused.
    fn retire(&self, st: &mut parking_lot::MutexGuard<'_, State>, worker: usize, prover: &Prover) {
        log::error!(
            "engine: GPU worker {worker} stops: its {} backend is lost",
            prover.backend_name()
        );
        st.workers[worker].lost = true;
        st.live_workers -= 1;
        if st.live_workers > 0 {
            return;
        }
        let mut deferred = Deferred::default();
        let now = self.now();
        let ids: Vec<u64> = st.jobs.keys().copied().collect();
        for id in ids {
            let err = Error::NoGpu("every GPU worker's backend of this engine is lost".into());
            st.fail_job(id, err, now, &mut deferred);
        }
        parking_lot::MutexGuard::unlocked(st, || {
            self.dispatch_cv.notify_all();
            deferred.run();
        });
    }

    fn shutdown(&self) {
        let mut deferred = Deferred::default();
        let mut st = self.state.lock();
        st.shutdown = true;
        let now = self.now();
        let ids: Vec<u64> = st.jobs.keys().copied().collect();
        for id in ids {
            st.fail_job(id, Error::Cancelled("the engine shut down".into()), now, &mut deferred);
            // Partitions still in synthesis or on a GPU come back to a job that is gone.
            st.finalize(id, &mut deferred);
        }
        drop(st);
        self.dispatch_cv.notify_all();
        self.gpu_cv.notify_all();
        deferred.run();
    }
}

impl Canceller for Shared {
    fn cancel(&self, id: u64) -> bool {
        let mut deferred = Deferred::default();
        let mut st = self.state.lock();
        let running = st.jobs.get(&id).is_some_and(|j| j.error.is_none());
        if running {
            let now = self.now();
            log::info!("engine: job {id} cancelled");
            st.fail_job(
                id,
                Error::Cancelled(format!("job {id} cancelled by its handle")),
                now,
                &mut deferred,
            );
        }
        drop(st);
        self.dispatch_cv.notify_all();
        deferred.run();
        running
    }
}

/// The proving engine: see the [module docs](self).
pub struct Engine {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    workers: usize,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("synthesis_workers", &self.shared.synthesis_workers)
            .field("gpu_workers", &self.workers)
            .field("pool", &self.shared.pool)
            .finish()
    }
}

/// The bytes of the first partition synthesized already that, with its parameter set's host
/// bytes, is larger than a budget of `limit` — the test a circuit's partition meets at its
/// dispatch; `None` when every one fits.
fn oversized_partition(partitions: &[Partition], params: &Parameters, limit: usize) -> Option<usize> {
    partitions.iter().find_map(|p| match &p.kind {
        PartitionKind::Synthesized(a) => {
            let need = assignment_bytes(a).saturating_add(params.host_bytes());
            (need > limit).then_some(need)
        }
        PartitionKind::Circuit { .. } => None,
    })
}

fn spawn_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("engine: cannot start {what}: {e}"))
}

impl Engine {
    /// Starts an engine: its pool, synthesis threads, dispatcher and GPU workers.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for zero workers, no backend, a zero budget, a reuse factor
    /// below 1, pacer constants out of range, or threads that cannot start; the backends'
    /// errors ([`Error::NoGpu`], [`Error::Cuda`]) for a `BackendChoice` that is not usable.
    pub fn new(config: EngineConfig) -> Result<Self> {
        let EngineConfig {
            synthesis_workers,
            pacer,
            budget_bytes,
            budget_timeout,
            gpu_workers_per_backend,
            backends,
            pool_allocator,
            pool_reuse_factor,
            synthesis_bytes_per_constraint,
        } = config;
        if synthesis_workers == 0 || gpu_workers_per_backend == 0 || backends.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "engine: needs at least one synthesis worker, one GPU worker per backend and one backend; found {synthesis_workers}, {gpu_workers_per_backend}, {}",
                backends.len()
            )));
        }
        if budget_bytes == 0 || !(pool_reuse_factor.is_finite() && pool_reuse_factor >= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "engine: the budget must be > 0 and the reuse factor ≥ 1; found {budget_bytes} bytes, {pool_reuse_factor}"
            )));
        }
        let gpu_workers = backends.len() * gpu_workers_per_backend;
        let pacer = match pacer {
            PacerMode::Pi(mut pi) if pi.in_flight_cap.is_none() => {
                let target = pi.target_depth;
                pi.in_flight_cap = Some(target.saturating_add(synthesis_workers.max(gpu_workers)));
                PacerMode::Pi(pi)
            }
            other => other,
        };
        let pacer = Pacer::new(pacer, gpu_workers)?;

        let pool_config = PoolConfig {
            max_bytes: budget_bytes,
            max_reuse_factor: pool_reuse_factor,
            // Never used by a reserved partition (see `budget`); a safety net for circuits that
            // grow past their parameters.
            when_full: WhenFull::Wait(budget_timeout),
            allow_fallback: false,
        };
        let pool = match pool_allocator {
            Some(a) => PinnedPool::with_backend(a, pool_config),
            None => PinnedPool::best_available(pool_config),
        };
        let base = Prover::new().with_pool(pool.clone());
        let mut provers = Vec::with_capacity(gpu_workers);
        let mut workers = Vec::with_capacity(gpu_workers);
        let mut backend_provers = Vec::with_capacity(backends.len());
        for (b, backend) in backends.iter().enumerate() {
            let prover = match backend {
                EngineBackend::Choice(choice) => base.clone().with_backend(*choice)?,
                EngineBackend::Custom(arc) => base.clone().with_custom_backend(arc.clone()),
            };
            for _ in 0..gpu_workers_per_backend {
                workers.push(WorkerBooks {
                    backend: b,
                    name: prover.backend_name(),
                    busy: Duration::ZERO,
                    since: None,
                    partitions: 0,
                    lost: false,
                });
                provers.push((b, prover.clone()));
            }
            backend_provers.push(prover);
        }
        let synth = rayon::ThreadPoolBuilder::new()
            .num_threads(synthesis_workers)
            .thread_name(|i| format!("cuzk-synth-{i}"))
            .build()
            .map_err(|e| spawn_error("synthesis threads", e))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                jobs: HashMap::new(),
                ready: Vec::new(),
                pacer,
                budget: Budget::new(budget_bytes),
                in_synthesis: 0,
                on_gpu: 0,
                shutdown: false,
                next_id: 0,
                synthesis_ema: None,
                gpu_ema: None,
                counters: Counters::default(),
                live_workers: workers.len(),
                workers,
                params: HashMap::new(),
                clock: 0,
                synthesis_reserved: 0,
                synthesis_requests: Vec::new(),
                gpu_requests: Vec::new(),
                resident: vec![HashSet::new(); backends.len()],
                evict_epoch: vec![0; backends.len()],
            }),
            dispatch_cv: Condvar::new(),
            gpu_cv: Condvar::new(),
            start: Instant::now(),
            hints: base.hints().clone(),
            synth_prover: base,
            pool,
            reuse_factor: pool_reuse_factor,
            budget_timeout,
            synthesis_workers,
            synthesis_per_constraint: synthesis_bytes_per_constraint,
            backend_provers,
        });
        let mut engine = Engine {
            shared: shared.clone(),
            threads: Vec::new(),
            workers: gpu_workers,
        };
        let synth = Arc::new(synth);
        let s = shared.clone();
        let t = std::thread::Builder::new()
            .name("cuzk-dispatch".into())
            .spawn(move || s.dispatcher(synth))
            .map_err(|e| spawn_error("the dispatcher", e))?;
        engine.threads.push(t);
        for (w, (b, prover)) in provers.into_iter().enumerate() {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("cuzk-gpu-{b}-{w}"))
                .spawn(move || s.gpu_worker(w, prover))
                .map_err(|e| spawn_error("a GPU worker", e))?;
            engine.threads.push(t);
        }
        log::info!(
            "engine: {synthesis_workers} synthesis workers, {gpu_workers} GPU workers on {} backends, budget {} MiB, pool {}",
            backends.len(),
            budget_bytes >> 20,
            engine.shared.pool.backend_name()
        );
        Ok(engine)
    }

    /// Submits a job without blocking; its proofs come from [`JobHandle::wait`]. A job that
    /// cannot be run (no partition, r/s of the wrong length, a partition synthesized already
    /// that with its parameters' host bytes is larger than the whole budget —
    /// [`Error::BudgetExhausted`] —, the engine shutting down) gets a handle that is already
    /// over, with the reason.
    pub fn submit(&self, job: Job) -> JobHandle {
        let Job {
            params,
            partitions,
            priority,
            randomness,
            label,
        } = job;
        let n = partitions.len();
        let mut st = self.shared.state.lock();
        let id = st.next_id;
        st.next_id += 1;
        let shared_job = JobShared::new(id, n);
        let handle = JobHandle {
            shared: shared_job.clone(),
            engine: {
                let weak: Weak<dyn Canceller> = Arc::downgrade(&self.shared) as Weak<Shared>;
                weak
            },
        };
        let (r, s) = match randomness {
            Randomness::OsRng => {
                let mut rng = rand_core::OsRng;
                let r = (0..n).map(|_| Scalar::random(&mut rng)).collect();
                let s = (0..n).map(|_| Scalar::random(&mut rng)).collect();
                (r, s)
            }
            Randomness::Given { r, s } => (r, s),
        };
        let invalid = if n == 0 {
            Some(Error::InvalidArgument("empty job: nothing to prove".into()))
        } else if r.len() != n || s.len() != n {
            Some(Error::InvalidArgument(format!(
                "{n} partitions need {n} values of r and of s; found {} and {}",
                r.len(),
                s.len()
            )))
        } else if let Some(requested) = oversized_partition(&partitions, &params, st.budget.limit()) {
            // The circuit path refuses such a partition at its dispatch; one synthesized
            // already is refused here, before its bytes are counted, so the budget's limit
            // holds for both.
            Some(Error::BudgetExhausted {
                requested,
                reserved: st.budget.reserved(),
                limit: st.budget.limit(),
                waited: Duration::ZERO,
            })
        } else if st.shutdown {
            Some(Error::Cancelled("the engine shut down".into()))
        } else if st.live_workers == 0 {
            Some(Error::NoGpu("every GPU worker's backend of this engine is lost".into()))
        } else {
            None
        };
        if let Some(e) = invalid {
            drop(st);
            log::info!("engine: job {id} '{label}' refused: {e}");
            shared_job.finish(Err(e), 0);
            return handle;
        }
        let mut entry = JobEntry {
            shared: shared_job,
            priority,
            label,
            params: params.clone(),
            r,
            s,
            pending: VecDeque::new(),
            proofs: vec![None; n],
            done: 0,
            outstanding: n,
            error: None,
            submitted: Instant::now(),
            synthesis_time: Duration::ZERO,
            gpu_time: Duration::ZERO,
            unproved: 0,
            blocked_since: None,
            budget_waited: false,
        };
        st.hold_params(&params);
        let mut presynthesized = 0;
        for (index, p) in partitions.into_iter().enumerate() {
            match p.kind {
                PartitionKind::Circuit {
                    circuit_type,
                    synthesize,
                } => entry.pending.push_back(Pending {
                    index,
                    circuit_type,
                    synthesize,
                }),
                PartitionKind::Synthesized(assignment) => {
                    let assignment = *assignment;
                    let reserved = assignment_bytes(&assignment);
                    st.budget.force_reserve(reserved);
                    st.ready.push(Ready {
                        job: id,
                        index,
                        priority,
                        assignment,
                        params: params.clone(),
                        r: entry.r[index],
                        s: entry.s[index],
                        reserved,
                        paced: false,
                    });
                    presynthesized += 1;
                }
            }
        }
        log::info!(
            "engine: job {id} '{}' submitted: {n} partitions ({presynthesized} synthesized already) of domain 2^{}, priority {priority}",
            entry.label,
            params.domain_size().trailing_zeros()
        );
        st.jobs.insert(id, entry);
        drop(st);
        self.shared.dispatch_cv.notify_all();
        if presynthesized > 0 {
            self.shared.gpu_cv.notify_all();
        }
        handle
    }

    /// Submits `job` and waits for its proofs.
    ///
    /// # Errors
    /// See [`JobHandle::wait`].
    pub fn prove(&self, job: Job) -> Result<Vec<Proof>> {
        self.submit(job).wait()
    }

    /// Pins ahead of the stream: checks out the buffers of up to `partitions` partitions sized
    /// by `hint` (e.g. [`params_hint`] of the parameters, or the
    /// hint a first synthesis recorded), all at once, and returns them to the pool idle, so the
    /// stream's partitions reuse them instead of pinning on the synthesis path (pinning costs
    /// about 0.76 s/GiB on the H200 host and stalls the GPU workers' CUDA calls). The bytes are
    /// reserved in the budget while held; stops at the budget. Returns the number of
    /// partitions' buffers now idle in the pool (at most `partitions`).
    ///
    /// # Errors
    /// The pool's checkout errors (the backend cannot pin).
    pub fn prewarm(&self, hint: CapacityHint, partitions: usize) -> Result<usize> {
        let need = partition_bytes(hint, self.shared.reuse_factor);
        let requests = pool_requests(hint);
        let mut held = Vec::new();
        let mut result = Ok(());
        for _ in 0..partitions {
            let pool = &self.shared.pool;
            let other_idle = pool
                .stats()
                .bytes_idle
                .saturating_sub(pool.idle_reusable_bytes(&requests));
            if !self.shared.state.lock().budget.try_reserve_beside(need, other_idle) {
                break;
            }
            match ProvingAssignment::new_with_pinned(&self.shared.pool, Some(hint)) {
                Ok(a) => held.push(a),
                Err(e) => {
                    self.shared.state.lock().budget.release(need);
                    result = Err(e);
                    break;
                }
            }
        }
        let n = held.len();
        drop(held); // back to the pool, idle, before the budget says the bytes are free
        self.shared.state.lock().budget.release(n * need);
        self.shared.dispatch_cv.notify_all();
        log::info!(
            "engine: prewarmed {n} partitions' buffers ({} MiB idle in the pool)",
            self.shared.pool.stats().bytes_idle >> 20
        );
        result.map(|()| n)
    }

    /// Holds `params` in the engine's parameter cache ahead of its jobs: its host bytes are
    /// charged to the budget now (once; even past the limit, since they exist already: later
    /// dispatches then evict or wait), and every backend gets it ready
    /// ([`Prover::prepare`]: the CUDA backend uploads it). A set already held is only marked
    /// used. Jobs hold their set the same way when submitted;
    /// [`remove_parameters`](Self::remove_parameters) or eviction under pressure drops it.
    ///
    /// # Errors
    /// A backend's `prepare` error (the set stays held and charged; its proofs may still run,
    /// e.g. streamed).
    pub fn add_parameters(&self, params: &Parameters) -> Result<()> {
        let epochs = {
            let mut st = self.shared.state.lock();
            st.hold_params(params);
            st.evict_epoch.clone()
        };
        self.shared.dispatch_cv.notify_all();
        for (b, prover) in self.shared.backend_provers.iter().enumerate() {
            prover.prepare(params)?;
            let mut st = self.shared.state.lock();
            if st.evict_epoch[b] == epochs[b] && st.params.contains_key(&params.id()) {
                st.resident[b].insert(params.id());
            }
        }
        Ok(())
    }

    /// Drops `params` from the engine's parameter cache: its charge leaves the budget and the
    /// backends evict its resident copies ([`Prover::evict_params`]; other sets stay
    /// resident). Returns false, changing nothing, when the engine does not hold the set or a
    /// job of the engine still uses it (nothing in use is dropped).
    pub fn remove_parameters(&self, params: &Parameters) -> bool {
        let entry = {
            let mut st = self.shared.state.lock();
            if st.params_users(params.id()) > 0 {
                return false;
            }
            match st.drop_params(params.id()) {
                Some(e) => e,
                None => return false,
            }
        };
        for prover in &self.shared.backend_provers {
            prover.evict_params(params);
        }
        log::info!("engine: parameters {} removed", params.id());
        drop(entry);
        self.shared.dispatch_cv.notify_all();
        true
    }

    /// The engine's pool.
    pub fn pool(&self) -> &PinnedPool {
        &self.shared.pool
    }

    /// A prover that synthesizes into the engine's pool with the engine's hints (for
    /// partitions submitted as [`Partition::synthesized`](super::Partition::synthesized)).
    /// The bytes of such an assignment enter the budget only when its job is submitted: made
    /// while the engine streams at its budget, they take pool room the budget has promised
    /// to others, whose checkouts then wait for it. Make them while the engine is idle, or
    /// submit them at once.
    pub fn prover(&self) -> &Prover {
        &self.shared.synth_prover
    }

    /// The capacity-hint cache every synthesis of the engine uses.
    pub fn hints(&self) -> &CapacityHints {
        &self.shared.hints
    }

    /// A snapshot of the engine's state.
    pub fn stats(&self) -> EngineStats {
        let st = self.shared.state.lock();
        let uptime = self.shared.now();
        let up = uptime.as_secs_f64().max(1e-9);
        let workers = st
            .workers
            .iter()
            .map(|w| {
                let busy = w.busy + w.since.map_or(Duration::ZERO, |s| s.elapsed());
                WorkerStats {
                    backend: w.backend,
                    backend_name: w.name,
                    busy,
                    busy_fraction: (busy.as_secs_f64() / up).min(1.0),
                    partitions: w.partitions,
                    lost: w.lost,
                }
            })
            .collect();
        let params_device_bytes = self
            .shared
            .backend_provers
            .iter()
            .zip(&st.resident)
            .filter(|(p, _)| p.backend_name() != "cpu")
            .flat_map(|(_, ids)| ids.iter())
            .filter_map(|id| st.params.get(id))
            .map(|e| e.params.device_bytes())
            .sum();
        let mut params: Vec<(u64, ParamSetStats)> = st
            .params
            .iter()
            .map(|(&id, e)| {
                let resident_backends = self
                    .shared
                    .backend_provers
                    .iter()
                    .zip(&st.resident)
                    .filter(|(p, ids)| p.backend_name() != "cpu" && ids.contains(&id))
                    .count();
                let stats = ParamSetStats {
                    id,
                    host_bytes: e.host_bytes,
                    resident_backends,
                    partitions: st.params_users(id),
                    idle_for: e.last_used.elapsed(),
                };
                (e.last_use, stats)
            })
            .collect();
        params.sort_by_key(|(at, _)| *at);
        let stats = EngineStats {
            params: params.into_iter().map(|(_, p)| p).collect(),
            synthesis_reserved: st.synthesis_reserved,
            params_sets: st.params.len(),
            params_host_bytes: st.params.values().map(|e| e.host_bytes).sum(),
            params_device_bytes,
            budget_waits: st.counters.budget_waits,
            evicted_pool_bytes: st.counters.evicted_pool_bytes,
            evicted_params: st.counters.evicted_params,
            evicted_params_host_bytes: st.counters.evicted_params_host_bytes,
            pending: st.jobs.values().map(|j| j.pending.len()).sum(),
            in_synthesis: st.in_synthesis,
            waiting: st.ready.len(),
            on_gpu: st.on_gpu,
            jobs_active: st.jobs.len(),
            jobs_done: st.counters.jobs_done,
            jobs_failed: st.counters.jobs_failed,
            partitions_done: st.counters.done,
            partitions_failed: st.counters.failed,
            partitions_dropped: st.counters.dropped,
            pacer: st.pacer.state(),
            pool: PoolStats::default(),
            workers,
            synthesis_time_ema: secs(st.synthesis_ema),
            gpu_time_ema: secs(st.gpu_ema),
            budget_used: st.budget.reserved(),
            budget_peak: st.budget.peak(),
            budget_limit: st.budget.limit(),
            uptime,
        };
        drop(st);
        EngineStats {
            pool: self.shared.pool.stats(),
            ..stats
        }
    }
}

impl Drop for Engine {
    /// Cancels every job not yet over ([`Error::Cancelled`]), lets the proofs under way
    /// finish, and joins the engine's threads (syntheses under way end on their own).
    fn drop(&mut self) {
        self.shared.shutdown();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                log::error!("engine: a thread panicked while shutting down");
            }
        }
    }
}
