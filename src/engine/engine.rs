//! The public [`Engine`]: built from an [`EngineConfig`], it takes [`Job`]s, reports
//! [`EngineStats`], and stops its threads when dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::budget::{partition_bytes, pool_requests, Budget};
use super::config::{EngineBackend, EngineConfig};
use super::dispatch::dispatcher;
use super::job::{Job, JobHandle};
use super::pacer::{Pacer, PacerMode};
use super::param_cache::ParamCache;
use super::shared::Shared;
use super::state::{secs, Counters, State, WorkerBooks};
use super::stats::{EngineStats, ParamSetStats, WorkerStats};
use super::worker::gpu_worker;
use crate::assignment::{CapacityHint, CapacityHints, ProvingAssignment};
use crate::compiled::CompiledCircuits;
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::{PinnedPool, PoolConfig, PoolStats, WhenFull};
use crate::proof::Proof;
use crate::prover::{Placement, Prover};

/// The proving engine: see the [module docs](crate::engine).
pub struct Engine {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    workers: usize,
    /// [`EngineConfig::params_on_device`].
    params_on_device: bool,
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
        config.validate()?;
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
            witness_path,
            native_witness,
            params_on_device,
            compiled_dir,
            urgent_priority,
            stream_batch,
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
        let mut base = Prover::new()
            .with_pool(pool.clone())
            .with_witness_path(witness_path)
            .with_native_witness(native_witness);
        if let Some(dir) = compiled_dir {
            base = base.with_compiled_dir(dir);
        }
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
                    proving: None,
                    partitions: 0,
                    lost: false,
                    streams: false,
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
                urgent_in_synthesis: 0,
                urgent_pool_waits: 0,
                gpu_waiting: 0,
                on_gpu: 0,
                shutdown: false,
                next_id: 0,
                synthesis_ema: None,
                gpu_ema: None,
                counters: Counters::default(),
                live_workers: workers.len(),
                workers,
                params: ParamCache::new(backends.len()),
                synthesis_reserved: 0,
                synthesis_requests: Vec::new(),
                synthesis_priorities: Vec::new(),
                gpu_requests: Vec::new(),
                compiled_charged: 0,
                evaluation: Default::default(),
                witnesses_in_flight: 0,
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
            urgent_priority,
            stream_batch,
        });
        let mut engine = Engine {
            shared: shared.clone(),
            threads: Vec::new(),
            workers: gpu_workers,
            params_on_device,
        };
        let synth = Arc::new(synth);
        let s = shared.clone();
        let t = std::thread::Builder::new()
            .name("cuzk-dispatch".into())
            .spawn(move || dispatcher(s, synth))
            .map_err(|e| spawn_error("the dispatcher", e))?;
        engine.threads.push(t);
        for (w, (b, prover)) in provers.into_iter().enumerate() {
            let s = shared.clone();
            let t = std::thread::Builder::new()
                .name(format!("cuzk-gpu-{b}-{w}"))
                .spawn(move || gpu_worker(&s, w, prover))
                .map_err(|e| spawn_error("a GPU worker", e))?;
            engine.threads.push(t);
        }
        log::info!(
            "engine: {synthesis_workers} synthesis workers, {gpu_workers} GPU workers on {} backends, budget {} MiB, pool {}, urgent priority {}, streamed sets {stream_batch} partitions at a time",
            backends.len(),
            budget_bytes >> 20,
            engine.shared.pool.backend_name(),
            urgent_priority.map_or("none".to_string(), |p| format!("≥ {p}"))
        );
        Ok(engine)
    }

    /// Submits a job without blocking; its proofs come from [`JobHandle::wait`]. A job that
    /// cannot be run (no partition, r/s of the wrong length, a partition synthesized already
    /// that with its parameters' host bytes is larger than the whole budget —
    /// [`Error::BudgetExhausted`] —, the engine shutting down) gets a handle that is already
    /// over, with the reason.
    pub fn submit(&self, job: Job) -> JobHandle {
        self.shared.submit(job)
    }

    /// Submits `job` and waits for its proofs.
    ///
    /// # Errors
    /// See [`JobHandle::wait`].
    pub fn prove(&self, job: Job) -> Result<Vec<Proof>> {
        self.submit(job).wait()
    }

    /// Pins ahead of the stream: checks out the buffers of up to `partitions` partitions sized
    /// by `hint` (e.g. [`params_hint`](super::budget::params_hint) of the parameters, or the
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
            st.params.epochs().to_vec()
        };
        self.shared.dispatch_cv.notify_all();
        for (b, prover) in self.shared.backend_provers.iter().enumerate() {
            prover.prepare(params)?;
            let mut st = self.shared.state.lock();
            st.params.mark_resident(b, params.id(), epochs[b]);
        }
        Ok(())
    }

    /// Uploads `params` to every backend of the engine for good and holds the set **without its
    /// host copy**, which it returns: once the caller drops `params` and its other clones, the
    /// query vectors (tens of GiB for a Filecoin partition) leave host memory, and the engine
    /// charges nothing for them in its budget. Jobs then prove with either clone (same id).
    ///
    /// All or nothing: when a backend refuses (the CPU, a set that would be streamed, a lost
    /// device), the backends that kept it already evict it again (a copy they held before
    /// goes too: the next proof there uploads it) and the error says which backend refused;
    /// `params` stays as it was (held, when it was held). A set kept this
    /// way lives on the devices until [`remove_parameters`](Self::remove_parameters); a lost
    /// device loses it, and its jobs then fail with a clear error instead of falling back to
    /// the CPU — load the set again to prove with it elsewhere.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a set without its host copy, or a backend that cannot
    /// keep it ([`Prover::prepare_device_only`]); device errors of the upload.
    pub fn keep_parameters_on_device(&self, params: &Parameters) -> Result<Parameters> {
        params.require_host_copy("keeping parameters on the device")?;
        let epochs = self.shared.state.lock().params.epochs().to_vec();
        let provers = &self.shared.backend_provers;
        let mut released = None;
        for (b, prover) in provers.iter().enumerate() {
            match prover.prepare_device_only(params) {
                Ok(r) => released = Some(r),
                Err(e) => {
                    for kept in &provers[..b] {
                        kept.evict_params(params);
                    }
                    return Err(match e {
                        Error::InvalidArgument(m) => Error::InvalidArgument(format!(
                            "engine backend {b} ({}) cannot keep parameters {} on its device: {m}",
                            prover.backend_name(),
                            params.id()
                        )),
                        other => other,
                    });
                }
            }
        }
        let released = released.ok_or_else(|| Error::InvalidArgument("the engine has no backend".into()))?;
        {
            let mut st = self.shared.state.lock();
            // Held before: its charge leaves the budget; new: held at no charge.
            st.hold_params(&released);
            for (b, epoch) in epochs.iter().enumerate() {
                st.params.mark_resident(b, params.id(), *epoch);
            }
        }
        self.shared.dispatch_cv.notify_all();
        log::info!(
            "engine: parameters {} kept on {} backend(s) without their host copy",
            params.id(),
            provers.len()
        );
        Ok(released)
    }

    /// [`EngineConfig::params_on_device`]: whether the Filecoin entry points keep the sets
    /// they load on this engine's GPUs without their host copy.
    pub fn params_on_device(&self) -> bool {
        self.params_on_device
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

    /// [`remove_parameters`](Self::remove_parameters), or, while jobs of the engine use the set,
    /// a removal when the last of them ends (its backends then evict their copies: a set kept
    /// on the devices by [`keep_parameters_on_device`](Self::keep_parameters_on_device) does
    /// not stay there for good). Returns true when the set was removed now; false when it
    /// goes later, or when the engine does not hold it.
    pub fn remove_parameters_when_idle(&self, params: &Parameters) -> bool {
        if self.remove_parameters(params) {
            return true;
        }
        let mut st = self.shared.state.lock();
        // Checked under the lock: its last job may have ended since remove_parameters looked.
        if st.params_users(params.id()) == 0 {
            drop(st);
            return self.remove_parameters(params);
        }
        if st.params.remove_when_idle(params.id()) {
            log::info!(
                "engine: parameters {} removed once the jobs using them end",
                params.id()
            );
        }
        false
    }

    /// The set `id` when the engine holds it (with or without its host copy).
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn held_parameters(&self, id: u64) -> Option<Parameters> {
        self.shared.state.lock().params.get(id).map(|e| e.params.clone())
    }

    /// The set `id` when the engine keeps it on its devices without its host copy
    /// ([`keep_parameters_on_device`](Self::keep_parameters_on_device)): the clone to prove
    /// with on this engine, which no other engine can prove with.
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn kept_on_device(&self, id: u64) -> Option<Parameters> {
        let st = self.shared.state.lock();
        st.params
            .get(id)
            .filter(|e| !e.params.has_host_copy() && !e.remove_when_idle)
            .map(|e| e.params.clone())
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

    /// The compiled circuits the engine's witness path records and uses (charged to the
    /// budget once each: [`EngineStats::compiled_bytes`]).
    pub fn compiled_circuits(&self) -> &CompiledCircuits {
        self.shared.synth_prover.compiled_circuits()
    }

    /// Each backend's GPU ([`EngineConfig::backends`](super::EngineConfig::backends) order)
    /// with its memory read now; `None` for the CPU.
    pub fn devices(&self) -> Vec<Option<crate::prover::DeviceStatus>> {
        self.shared.backend_provers.iter().map(|p| p.device()).collect()
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
                let busy = w.busy + w.proving.map_or(Duration::ZERO, |(s, _)| s.elapsed());
                WorkerStats {
                    backend: w.backend,
                    backend_name: w.name,
                    busy,
                    busy_fraction: (busy.as_secs_f64() / up).min(1.0),
                    partitions: w.partitions,
                    proving_job: w.proving.map(|(_, job)| job),
                    lost: w.lost,
                }
            })
            .collect();
        // Per set, the non-CPU backends holding it on the device and streamed: as each
        // backend says, else where the engine prepared it.
        let placements = |id: u64| {
            let (mut device, mut streamed) = (0, 0);
            for (p, ids) in self.shared.backend_provers.iter().zip(st.params.resident()) {
                if p.backend_name() == "cpu" || !ids.contains(&id) {
                    continue;
                }
                match p.placement(id) {
                    Some(Placement::Streamed) => streamed += 1,
                    Some(Placement::Absent) => {}
                    Some(Placement::Device) | None => device += 1,
                }
            }
            (device, streamed)
        };
        let mut params_device_bytes = 0;
        let mut params: Vec<(u64, ParamSetStats)> = st
            .params
            .iter()
            .map(|(&id, e)| {
                let (resident_backends, streamed_backends) = placements(id);
                params_device_bytes += resident_backends * e.params.device_bytes();
                let stats = ParamSetStats {
                    id,
                    host_bytes: e.host_bytes,
                    resident_backends,
                    streamed_backends,
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
            compiled_bytes: st.compiled_charged,
            evaluation_reserved: st.evaluation.bytes(),
            compiled_circuits: self.shared.synth_prover.compiled_circuits().len(),
            witness: self.shared.synth_prover.witness_stats(),
            params_sets: st.params.len(),
            params_host_bytes: st.params.host_bytes(),
            params_device_bytes,
            budget_waits: st.counters.budget_waits,
            evicted_pool_bytes: st.counters.evicted_pool_bytes,
            evicted_params: st.counters.evicted_params,
            evicted_params_host_bytes: st.counters.evicted_params_host_bytes,
            pending: st.jobs.values().map(|j| j.pending.len()).sum(),
            in_synthesis: st.in_synthesis(),
            waiting: st.ready.len(),
            urgent_in_synthesis: st.urgent_in_synthesis,
            urgent_dispatched: st.counters.urgent_dispatched,
            gpu_holds: st.counters.gpu_holds,
            gpu_holds_released: st.counters.gpu_holds_released,
            verification_retries: st.counters.verification_retries,
            batches: st.counters.batches,
            batched_partitions: st.counters.batched_partitions,
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
