//! What [`Engine::stats`](super::Engine::stats) reports: the engine's queues, budget,
//! parameter sets and GPU workers.

use std::time::Duration;

use super::pacer::PacerState;
use crate::pool::PoolStats;
use crate::prover::WitnessStats;

/// One GPU worker's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerStats {
    /// Index of its backend in [`EngineConfig::backends`](super::EngineConfig::backends).
    pub backend: usize,
    /// The backend's name.
    pub backend_name: &'static str,
    /// Time spent proving since the engine started (a proof under way counts up to now).
    pub busy: Duration,
    /// `busy` over the time since the engine started.
    pub busy_fraction: f64,
    /// Partitions it finished (proved or failed).
    pub partitions: u64,
    /// The id ([`JobHandle::id`](super::JobHandle::id)) of the job whose partition it proves
    /// now; `None` between proofs.
    pub proving_job: Option<u64>,
    /// Whether its backend is lost (a sticky GPU error): the worker stopped taking partitions.
    pub lost: bool,
}

/// One parameter set in the engine's cache ([`EngineStats::params`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSetStats {
    /// [`Parameters::id`](crate::Parameters::id).
    pub id: u64,
    /// Host bytes charged to the budget.
    pub host_bytes: usize,
    /// Non-CPU backends holding it on the device: as the backend says
    /// ([`Backend::placement`](crate::prover::Backend::placement)), or, for a backend that does
    /// not say, those the engine prepared it on.
    pub resident_backends: usize,
    /// Non-CPU backends holding it streamed: its query vectors in page-locked host memory,
    /// crossing PCIe for every proof, because it does not fit beside a proof under that
    /// device's memory (chosen by the backend, no setting).
    pub streamed_backends: usize,
    /// Partitions of the engine's jobs using it (pending or in flight); 0: idle, evictable.
    pub partitions: usize,
    /// Time since a job used it last (submission, dispatch or proof).
    pub idle_for: Duration,
}

/// A snapshot of the engine ([`Engine::stats`](super::Engine::stats)).
#[derive(Debug, Clone)]
pub struct EngineStats {
    /// Partitions submitted and not yet dispatched.
    pub pending: usize,
    /// Partitions dispatched and being synthesized.
    pub in_synthesis: usize,
    /// Synthesized partitions waiting for a GPU worker.
    pub waiting: usize,
    /// Partitions of urgent jobs ([`EngineConfig::urgent_priority`](super::EngineConfig::urgent_priority))
    /// being synthesized (also counted in `in_synthesis`).
    pub urgent_in_synthesis: usize,
    /// Partitions of urgent jobs dispatched since the start (past the pacer).
    pub urgent_dispatched: u64,
    /// Times a GPU worker waited for an urgent partition's synthesis instead of starting
    /// lower-priority work that was ready.
    pub gpu_holds: u64,
    /// Times a holding GPU worker went back to the ready lower-priority work because a pool
    /// checkout waited for room during the urgent synthesis (the bytes it waits for may be
    /// held by that work): an urgent job never waits on bytes only that work frees.
    pub gpu_holds_released: u64,
    /// Partitions proved again by full synthesis because their proof failed verification
    /// (Filecoin's check against the verifying key). Where the retry's proof passes, the
    /// compiled circuit is dropped (from memory and its file) and the native generator turned
    /// off: a fast route that makes wrong proofs is used once. Where it fails too, the request
    /// was at fault (its job fails) and both stay.
    pub verification_retries: u64,
    /// Times a GPU worker proved several partitions together (a streamed parameter set:
    /// [`EngineConfig::stream_batch`](super::EngineConfig::stream_batch)).
    pub batches: u64,
    /// The partitions proved in those batches (also counted in `partitions_done` or
    /// `partitions_failed`).
    pub batched_partitions: u64,
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
    /// ([`EngineConfig::synthesis_bytes_per_constraint`](super::EngineConfig::synthesis_bytes_per_constraint)).
    pub synthesis_reserved: usize,
    /// Of `budget_used`: the bytes of the compiled circuits the engine holds (recorded or
    /// loaded by its witness path), each once, for the life of the engine.
    pub compiled_bytes: usize,
    /// Of `budget_used`: the bytes held for host evaluations of witnesses — the pool checkouts
    /// (a, b, c and the expanded aux) of one witness proof per witness partition in flight, up
    /// to one per GPU worker, where a backend evaluates them on the host; they only grow while
    /// the engine has jobs, and go with its last (see [`budget`](super::budget)).
    pub evaluation_reserved: usize,
    /// Compiled circuits the engine holds.
    pub compiled_circuits: usize,
    /// What the witness path did, counted per synthesis of a circuit partition (and of the
    /// engine's [`prover`](super::Engine::prover)): partitions synthesized witness-only and in
    /// full, compiled circuits recorded, witnesses refused (each an error; its type and shape
    /// synthesized in full from then on).
    pub witness: WitnessStats,
    /// Parameter sets the engine holds.
    pub params_sets: usize,
    /// Per set the engine holds, least recently used first.
    pub params: Vec<ParamSetStats>,
    /// Of `budget_used`: the host bytes of those sets, each set once.
    pub params_host_bytes: usize,
    /// Device bytes of the sets the engine holds on the device of each non-CPU backend
    /// (`resident_backends` of each set times its bytes). A backend that does not say where
    /// it holds a set counts every set the engine prepared on it since its last eviction.
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
