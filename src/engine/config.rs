//! The engine's configuration: [`EngineConfig`] and the backends it proves on.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::pacer::{PacerMode, PiConfig};
use crate::error::{Error, Result};
use crate::pool::HostAllocator;
use crate::prover::{Backend, BackendChoice};

/// A backend the engine proves on.
#[derive(Clone)]
pub enum EngineBackend {
    /// A backend [`Prover::with_backend`](crate::Prover::with_backend) makes (`Gpu(n)` for device `n`).
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

/// How an [`Engine`](super::Engine) is built. `EngineConfig::default()` and change fields.
pub struct EngineConfig {
    /// Threads that synthesize partitions (1 ..=
    /// [`MAX_SYNTHESIS_WORKERS`](Self::MAX_SYNTHESIS_WORKERS)). Default: the host's cores.
    pub synthesis_workers: usize,
    /// The dispatch pacer. Default: PI with [`PiConfig::default`]; an `in_flight_cap` of `None`
    /// becomes `target + synthesis workers` (see the module docs).
    pub pacer: PacerMode,
    /// The memory budget in bytes for the partitions in flight (a/b/c, aux, inputs); also the
    /// pool's cap. Default: half the host's memory.
    pub budget_bytes: usize,
    /// How long a dispatch waits for room in the budget before its job fails (at most
    /// [`MAX_BUDGET_TIMEOUT`](Self::MAX_BUDGET_TIMEOUT)). Default 10 min.
    pub budget_timeout: Duration,
    /// GPU worker threads per backend (1 ..=
    /// [`MAX_GPU_WORKERS_PER_BACKEND`](Self::MAX_GPU_WORKERS_PER_BACKEND)). Default 1.
    pub gpu_workers_per_backend: usize,
    /// The backends to prove on, one set of GPU workers each (1 ..=
    /// [`MAX_BACKENDS`](Self::MAX_BACKENDS)). Default: one
    /// [`BackendChoice::Auto`].
    pub backends: Vec<EngineBackend>,
    /// The memory the pool allocates from. Default `None`: [`PinnedPool::best_available`](crate::PinnedPool::best_available)
    /// (CUDA pinned memory in a `cuda` build with a GPU, else the heap).
    pub pool_allocator: Option<Box<dyn HostAllocator>>,
    /// The pool's `max_reuse_factor` (≥ 1). Default 1: a stream of one circuit type and size
    /// reuses its buffers exactly, and a reservation is exactly what a partition checks out
    /// (a larger factor makes every reservation that much larger; see
    /// [`partition_bytes`](super::budget::partition_bytes)).
    pub pool_reuse_factor: f64,
    /// Bytes reserved per constraint (of the partition's capacity hint) for the circuit's own
    /// memory while it synthesizes, released when its synthesis ends (see
    /// [`synthesis_bytes`](super::budget::synthesis_bytes)). Default 0: cuzk counts exactly
    /// what it allocates itself (a/b/c, aux, inputs, density bits: [`partition_bytes`](super::budget::partition_bytes)) but
    /// cannot know a circuit's gadgets and witness computation, which range from nothing
    /// (circuits whose witness is computed before synthesis, like the synthetic ones the
    /// engine's benchmark streams) to several times a/b/c; a guess would either starve the
    /// GPUs of partitions in flight or undercount. Measure one synthesis of your circuit (peak
    /// resident memory minus [`partition_bytes`](super::budget::partition_bytes), over its constraints) and set it.
    pub synthesis_bytes_per_constraint: usize,
    /// Whether circuit partitions ([`Partition::circuit`](super::Partition::circuit)) take the
    /// witness path: the first of a circuit type and shape is synthesized in full and records
    /// its compiled circuit, the next ones are synthesized witness-only (see
    /// [`crate::compiled`]); same proof bytes. Default: on, unless `CUZK_WITNESS_PATH=0`.
    pub witness_path: bool,
    /// Whether partitions that come with a native witness generator (Filecoin's PoRep C2,
    /// SnapDeals, Winning and Window PoSt) have their witness written by it on the witness path, once it is validated
    /// against the gadgets for the compiled circuit (see [`Prover::with_native_witness`](crate::Prover::with_native_witness)); same
    /// proof bytes. Default: on, unless `CUZK_NATIVE_WITNESS=0`.
    pub native_witness: bool,
    /// Whether the parameter sets the Filecoin entry points load live on this engine's GPUs
    /// **without their host copy** ([`Engine::keep_parameters_on_device`](super::Engine::keep_parameters_on_device)):
    /// at the first proof of a kind, the set is uploaded to every GPU for good and its host
    /// copy (tens of GiB for 32 GiB sectors) leaves memory once the proofs that hold it end. Where a
    /// backend cannot keep it (the CPU; a GPU too small, which streams it) the host copy stays,
    /// with a warning. A set kept so is lost with its GPU; `evict_parameters` then a proof
    /// loads it again. Other callers keep their own sets with `keep_parameters_on_device`.
    /// Default: off.
    pub params_on_device: bool,
    /// A directory to keep compiled circuits in across restarts
    /// ([`CompiledCircuits::with_dir`](crate::compiled::CompiledCircuits::with_dir)). Default
    /// `None`: in memory only.
    pub compiled_dir: Option<PathBuf>,
    /// Jobs of at least this priority are **urgent** (e.g. Filecoin's Winning PoSt, which must
    /// finish within an epoch): their partitions are dispatched at once — past the pacer, its
    /// in-flight cap and the busy synthesis workers (on a thread of their own, at most one per
    /// GPU worker at a time), still within the budget — and a GPU worker that finishes while
    /// one is being synthesized waits for it instead of starting lower-priority work, so an
    /// urgent partition starts on a GPU after at most the partitions already on the GPUs (or
    /// its own synthesis, if longer). Default `None`: no job is urgent.
    pub urgent_priority: Option<i32>,
    /// The most witness partitions of one circuit and parameter set a GPU worker proves
    /// together where its GPU **streams** that set (too large for its memory: see
    /// [`Placement::Streamed`](crate::prover::Placement::Streamed)), so each streamed chunk of
    /// the L, A and B bases crosses the bus once for all of them instead of once a partition;
    /// the pacer then keeps that many waiting. Partitions of urgent jobs go alone; a set on the
    /// device is proved one partition at a time whatever this says. An urgent partition that
    /// arrives meanwhile waits for the partition under way, not the batch: the batch stops
    /// between two partitions and the rest wait again. 1: never together. Default 4 (1 ..=
    /// [`MAX_STREAM_BATCH`](Self::MAX_STREAM_BATCH)).
    pub stream_batch: usize,
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
            .field("witness_path", &self.witness_path)
            .field("native_witness", &self.native_witness)
            .field("params_on_device", &self.params_on_device)
            .field("compiled_dir", &self.compiled_dir)
            .field("urgent_priority", &self.urgent_priority)
            .field("stream_batch", &self.stream_batch)
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
            witness_path: crate::prover::witness_path_default(),
            native_witness: crate::prover::native_witness_default(),
            params_on_device: false,
            compiled_dir: None,
            urgent_priority: None,
            stream_batch: 4,
        }
    }
}

impl EngineConfig {
    /// The most synthesis threads an engine starts ([`EngineConfig::synthesis_workers`]): four
    /// times the largest hosts' cores; more threads only share the same cores.
    pub const MAX_SYNTHESIS_WORKERS: usize = 1024;
    /// The most GPU workers per backend ([`EngineConfig::gpu_workers_per_backend`]): past two or
    /// three a GPU gains nothing, and each worker holds device memory.
    pub const MAX_GPU_WORKERS_PER_BACKEND: usize = 16;
    /// The most backends ([`EngineConfig::backends`]): more GPUs than one host holds.
    pub const MAX_BACKENDS: usize = 64;
    /// The most partitions proved together ([`EngineConfig::stream_batch`]).
    pub const MAX_STREAM_BATCH: usize = 16;
    /// The longest [`EngineConfig::budget_timeout`]: 30 days (a wait's deadline must be a time
    /// the clock can hold).
    pub const MAX_BUDGET_TIMEOUT: Duration = Duration::from_secs(30 * 24 * 3600);

    /// Checks the counts against their bounds (the `MAX_*` constants above; each count at
    /// least 1), before anything is allocated or started: [`Engine::new`](super::Engine::new)
    /// calls it, and so does the Filecoin engine's `configure` (feature `filecoin`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first field out of range and its bounds.
    pub fn validate(&self) -> Result<()> {
        let count = |field: &str, value: usize, max: usize| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(Error::InvalidArgument(format!(
                    "engine config: {field} must be in 1..={max}, found {value}"
                )))
            }
        };
        count("synthesis_workers", self.synthesis_workers, Self::MAX_SYNTHESIS_WORKERS)?;
        count(
            "gpu_workers_per_backend",
            self.gpu_workers_per_backend,
            Self::MAX_GPU_WORKERS_PER_BACKEND,
        )?;
        count("backends (one per GPU)", self.backends.len(), Self::MAX_BACKENDS)?;
        count("stream_batch", self.stream_batch, Self::MAX_STREAM_BATCH)?;
        if self.budget_timeout > Self::MAX_BUDGET_TIMEOUT {
            return Err(Error::InvalidArgument(format!(
                "engine config: budget_timeout must be at most {} s (30 days), found {} s",
                Self::MAX_BUDGET_TIMEOUT.as_secs(),
                self.budget_timeout.as_secs()
            )));
        }
        Ok(())
    }
}

/// The host's memory in bytes, from `/proc/meminfo` (Linux).
pub(super) fn host_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
