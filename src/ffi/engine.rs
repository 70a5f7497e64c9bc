//! `cuzk_engine`: the proving engine (synthesis overlapped with GPU proving, a paced dispatch,
//! one memory budget), and `cuzk_job`: a batch submitted to it.
//!
//! Through the ABI a job is a batch of assignments synthesized already (`cuzk_assignment`,
//! from an R1CS and a witness or from raw buffers), best made in the engine's own pool
//! (`cuzk_engine_pool`) so their bytes are the ones the engine's budget counts.

use std::ffi::{c_char, c_void};
use std::time::Duration;

use super::assignment::cuzk_assignment;
use super::boundary::{arg, call, call_value, call_void, into_handle, take_handle, AbiResult, Out};
use super::job::{self, JobCore, JobHandleKind, Running};
use super::params::cuzk_params;
use super::pool::{
    cuzk_pool, cuzk_pool_memory, cuzk_pool_statistics, heap_memory, CUZK_MAX_WAIT_MS, CUZK_POOL_MEMORY_BEST_AVAILABLE,
};
use super::prover::{backend_choice, cuzk_backend, proof_buffer, take_assignments, write_proofs, CUZK_BACKEND_AUTO};
use super::scalar;
use super::status::{cuzk_status, enum_arg, AbiError, Named};
use crate::engine::{
    Engine, EngineBackend, EngineConfig, Job, JobHandle, PacerMode, Partition, PiConfig, Progress, ProgressCallback,
};
use crate::pool::HeapAllocator;
use crate::prover::BackendChoice;

/// Named here too: `cuzk_job_on_progress` takes it.
pub use super::progress::cuzk_job_progress_callback;

/// How the engine paces dispatches: one of the `CUZK_PACER_MODE_*` values; any other value
/// is refused with `CUZK_STATUS_INVALID_ARGUMENT`.
#[allow(non_camel_case_types)]
pub type cuzk_pacer_mode = u32;
/// A PI controller keeps `pacer_depth` synthesized partitions waiting for a GPU.
pub const CUZK_PACER_MODE_PI: cuzk_pacer_mode = 0;
/// At most `pacer_depth` partitions in synthesis or waiting.
pub const CUZK_PACER_MODE_BOUNDED_QUEUE: cuzk_pacer_mode = 1;

/// The most GPUs an engine proves on (`num_gpus`): more than one host holds.
pub const CUZK_MAX_GPUS: u32 = 64;
/// The most GPU workers per backend (`gpu_workers_per_backend`).
pub const CUZK_MAX_GPU_WORKERS_PER_BACKEND: u32 = 16;
/// The most synthesis threads (`synthesis_workers`).
pub const CUZK_MAX_SYNTHESIS_WORKERS: u32 = 1024;

/// How an engine is built. Start from `cuzk_engine_config_default` and change fields; a 0
/// means "the default" where a field says so. `cuzk_engine_new` and `cuzk_filecoin_configure`
/// refuse, with `CUZK_STATUS_INVALID_ARGUMENT` and a message naming the field, an enum field
/// holding none of its constants and a count past its `CUZK_MAX_*` bound.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_engine_config {
    /// Threads that synthesize (0: the host's cores; at most `CUZK_MAX_SYNTHESIS_WORKERS`).
    /// Through the ABI jobs arrive synthesized, so these threads are idle unless Rust code
    /// shares the engine.
    pub synthesis_workers: u32,
    /// GPU worker threads per backend (0: 1; at most `CUZK_MAX_GPU_WORKERS_PER_BACKEND`).
    pub gpu_workers_per_backend: u32,
    /// The backend (a `CUZK_BACKEND_*` value): `CUZK_BACKEND_GPU` proves on GPUs `first_gpu` ..
    /// `first_gpu + num_gpus − 1`.
    pub backend: cuzk_backend,
    /// The first GPU (with `CUZK_BACKEND_GPU`).
    pub first_gpu: u32,
    /// How many GPUs from `first_gpu` (with `CUZK_BACKEND_GPU`; 0: 1; at most `CUZK_MAX_GPUS`).
    pub num_gpus: u32,
    /// The memory budget for host bytes: partitions in flight, synthesis in flight, the
    /// parameter sets the engine holds and the pool's idle buffers; also the pool's cap (0:
    /// half the host's memory).
    pub budget_bytes: u64,
    /// How long a partition waits for room in the budget before its job fails (0: 600 000 ms;
    /// at most `CUZK_MAX_WAIT_MS`).
    pub budget_timeout_ms: u64,
    /// The pacer's mode (a `CUZK_PACER_MODE_*` value).
    pub pacer: cuzk_pacer_mode,
    /// The PI target depth or the bounded queue's depth (0: 2 for PI, 4 for the queue).
    pub pacer_depth: u32,
    /// The pool's memory (a `CUZK_POOL_MEMORY_*` value).
    pub memory: cuzk_pool_memory,
    /// Nonzero: circuit partitions (the Filecoin calls' jobs) are synthesized in full, nothing
    /// is recorded. 0: the default — the witness path (the first partition of a circuit type
    /// and shape records its constraints, later ones compute only a compact witness; same
    /// bytes), unless the environment has `CUZK_WITNESS_PATH=0`. Jobs of assignments arrive
    /// synthesized either way.
    pub witness_path_off: u32,
}

/// A snapshot of an engine. Times are nanoseconds (0: not known yet).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct cuzk_engine_statistics {
    /// Partitions submitted and not yet dispatched to synthesis.
    pub pending: u64,
    /// Partitions being synthesized.
    pub in_synthesis: u64,
    /// Synthesized partitions waiting for a GPU worker.
    pub waiting: u64,
    /// Partitions being proved.
    pub on_gpu: u64,
    /// Jobs not yet over.
    pub jobs_active: u64,
    /// Jobs whose proofs all came back.
    pub jobs_done: u64,
    /// Jobs that failed or were cancelled.
    pub jobs_failed: u64,
    /// Partitions proved.
    pub partitions_done: u64,
    /// Partitions whose own synthesis or proof failed.
    pub partitions_failed: u64,
    /// Partitions dropped unproved because their job failed or was cancelled.
    pub partitions_dropped: u64,
    /// Bytes reserved in the budget now.
    pub budget_used: u64,
    /// The most bytes reserved at once. Above `budget_limit` only by bytes that existed before
    /// the budget counted them: submitted assignments (each alone fits the budget, or its job
    /// is refused), parameter sets, a partition that grew past its reservation.
    pub budget_peak: u64,
    /// The budget.
    pub budget_limit: u64,
    /// Of `budget_used`: bytes reserved for circuits' own memory while they synthesize.
    pub synthesis_reserved: u64,
    /// Parameter sets the engine holds.
    pub params_sets: u64,
    /// Of `budget_used`: the host bytes of those sets, each set once.
    pub params_host_bytes: u64,
    /// Device bytes of those sets resident on non-CPU backends (an upper bound: a backend
    /// also evicts under its own memory limit).
    pub params_device_bytes: u64,
    /// Dispatches that found no room in the budget and nothing to evict, and waited.
    pub budget_waits: u64,
    /// Idle pool bytes freed under budget pressure.
    pub evicted_pool_bytes: u64,
    /// Parameter sets evicted under budget pressure.
    pub evicted_params: u64,
    /// Host bytes those evictions freed (sets no one else held).
    pub evicted_params_host_bytes: u64,
    /// Moving average of a partition's synthesis time.
    pub synthesis_ema_ns: u64,
    /// Moving average of a partition's proving time.
    pub gpu_ema_ns: u64,
    /// GPU workers.
    pub gpu_workers: u32,
    /// GPU workers whose backend is lost (they take no more partitions).
    pub gpu_workers_lost: u32,
    /// Mean over GPU workers of the fraction of the engine's lifetime spent proving.
    pub gpu_busy_fraction: f64,
    /// Dispatches per second the pacer aims at (0: not pacing by rate).
    pub pacer_dispatch_rate: f64,
    /// The pacer's target depth (or queue bound).
    pub pacer_target_depth: u64,
    /// The most partitions allowed in synthesis and waiting together.
    pub pacer_in_flight_cap: u64,
    /// Time since the engine started.
    pub uptime_ns: u64,
    /// The engine's pool.
    pub pool: cuzk_pool_statistics,
    /// Circuit partitions synthesized witness-only (the witness path).
    pub witness_partitions: u64,
    /// Circuit partitions synthesized in full (the first of a type and shape, which records,
    /// and fallbacks included).
    pub full_partitions: u64,
    /// Compiled circuits recorded.
    pub compiled_recorded: u64,
    /// Witnesses refused by their compiled circuit and synthesized in full instead.
    pub witness_fallbacks: u64,
    /// Of `budget_used`: the bytes of the compiled circuits the engine holds, each once.
    pub compiled_bytes: u64,
}

/// An engine. Opaque; thread-safe (submit, stats and job calls from any thread).
#[allow(non_camel_case_types)]
pub struct cuzk_engine {
    pub(super) inner: Engine,
}

/// A job submitted to an engine. Opaque; thread-safe.
#[allow(non_camel_case_types)]
pub struct cuzk_job {
    core: JobCore<Submitted>,
}

/// A batch as its handle holds it: the engine's job and its partition count (what
/// `cuzk_job_progress` reports as the total).
pub(super) struct Submitted {
    handle: JobHandle,
    total: usize,
}

impl JobHandleKind for cuzk_job {
    type Job = Submitted;
    fn core(&self) -> &JobCore<Submitted> {
        &self.core
    }
}

impl Running for Submitted {
    fn id(&self) -> u64 {
        self.handle.id()
    }
    fn cancel(&self) -> bool {
        self.handle.cancel()
    }
    fn progress(&self) -> Progress {
        Progress {
            total: self.total,
            ..self.handle.progress()
        }
    }
    fn on_progress(&self, callback: ProgressCallback) {
        self.handle.on_progress(callback)
    }
}

/// The documented defaults. Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_engine_config_default() -> cuzk_engine_config {
    call_value(default_config(), default_config)
}

fn default_config() -> cuzk_engine_config {
    cuzk_engine_config {
        synthesis_workers: 0,
        gpu_workers_per_backend: 0,
        backend: CUZK_BACKEND_AUTO,
        first_gpu: 0,
        num_gpus: 0,
        budget_bytes: 0,
        budget_timeout_ms: 0,
        pacer: CUZK_PACER_MODE_PI,
        pacer_depth: 0,
        memory: CUZK_POOL_MEMORY_BEST_AVAILABLE,
        witness_path_off: 0,
    }
}

/// The engine configuration `c` asks for, or why it cannot be one: an enum field holding none
/// of its constants, a count past its bound (checked here, before anything is sized by it).
pub(super) fn engine_config(c: &cuzk_engine_config) -> AbiResult<EngineConfig> {
    let default = EngineConfig::default();
    let nonzero = |v: u32, d: usize| if v == 0 { d } else { v as usize };
    let bounded = |field: &str, v: u32, max: u32| {
        if v > max {
            Err(AbiError::invalid(format!(
                "`{field}` must be at most {max} (0: the default), found {v}"
            )))
        } else {
            Ok(v)
        }
    };
    bounded("synthesis_workers", c.synthesis_workers, CUZK_MAX_SYNTHESIS_WORKERS)?;
    bounded(
        "gpu_workers_per_backend",
        c.gpu_workers_per_backend,
        CUZK_MAX_GPU_WORKERS_PER_BACKEND,
    )?;
    bounded("num_gpus", c.num_gpus, CUZK_MAX_GPUS)?;
    if c.budget_timeout_ms > CUZK_MAX_WAIT_MS {
        return Err(AbiError::invalid(format!(
            "`budget_timeout_ms` must be at most {CUZK_MAX_WAIT_MS} (30 days), found {}",
            c.budget_timeout_ms
        )));
    }
    let first = backend_choice("backend", c.backend, c.first_gpu as usize)?;
    let backends = match first {
        BackendChoice::Gpu(g) => (0..nonzero(c.num_gpus, 1))
            .map(|i| EngineBackend::Choice(BackendChoice::Gpu(g + i)))
            .collect(),
        other => vec![EngineBackend::Choice(other)],
    };
    type MakePacer = fn(usize) -> PacerMode;
    let pacer_kinds: [Named<MakePacer>; 2] = [
        ("CUZK_PACER_MODE_PI", |depth| {
            let mut pi = PiConfig::default();
            if depth > 0 {
                pi.target_depth = depth;
            }
            PacerMode::Pi(pi)
        }),
        ("CUZK_PACER_MODE_BOUNDED_QUEUE", |depth| PacerMode::BoundedQueue {
            depth: if depth == 0 { 4 } else { depth },
        }),
    ];
    let pacer = enum_arg("pacer", c.pacer, &pacer_kinds)?(c.pacer_depth as usize);
    let config = EngineConfig {
        synthesis_workers: nonzero(c.synthesis_workers, default.synthesis_workers),
        pacer,
        budget_bytes: if c.budget_bytes == 0 {
            default.budget_bytes
        } else {
            usize::try_from(c.budget_bytes).unwrap_or(usize::MAX)
        },
        budget_timeout: if c.budget_timeout_ms == 0 {
            default.budget_timeout
        } else {
            Duration::from_millis(c.budget_timeout_ms)
        },
        gpu_workers_per_backend: nonzero(c.gpu_workers_per_backend, 1),
        backends,
        pool_allocator: if heap_memory(c.memory)? {
            Some(Box::new(HeapAllocator))
        } else {
            None
        },
        witness_path: c.witness_path_off == 0 && default.witness_path,
        ..default
    };
    config.validate()?;
    Ok(config)
}

/// Starts an engine (its threads and pool). On success `*out` holds it (free with
/// `cuzk_engine_free`). Thread-safe.
///
/// # Safety
/// `config` live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_engine_new(
    config: *const cuzk_engine_config,
    out: *mut *mut cuzk_engine,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: live per the contract.
        let config = unsafe { arg(config, "config") }?;
        let inner = Engine::new(engine_config(config)?)?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_engine { inner })) };
        Ok(())
    })
}

/// Stops an engine: jobs not yet over fail with `CUZK_STATUS_CANCELLED` (`cuzk_job_wait`
/// reports it), proofs under way finish, its threads are joined. NULL is
/// accepted. Not to be called while another thread uses the engine (its jobs may outlive it).
///
/// # Safety
/// `engine` is NULL or from `cuzk_engine_new`, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_engine_free(engine: *mut cuzk_engine) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(engine) }))
}

/// A handle on the engine's pool (free it with `cuzk_pool_free`; the pool lives on while the
/// engine or any handle holds it): make a job's assignments there, so their bytes are the
/// ones the engine's budget counts. Thread-safe.
///
/// # Safety
/// `engine` live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_engine_pool(
    engine: *const cuzk_engine,
    out: *mut *mut cuzk_pool,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: live per the contract.
        let engine = unsafe { arg(engine, "engine") }?;
        let inner = engine.inner.pool().clone();
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_pool { inner })) };
        Ok(())
    })
}

/// Submits a job of `count` (≥ 1) assignments proved with `params`, without blocking; on
/// success `*out` holds the job (wait with `cuzk_job_wait`, free with `cuzk_job_free`).
/// Higher `priority` goes to a GPU first. `r` and `s` are both NULL (drawn from the operating
/// system's RNG) or both hold `count` canonical 32-byte scalars (the same r, s give
/// `cuzk_prove`'s bytes).
///
/// Ownership: every assignment in the array is **consumed whatever the status**, as by
/// `cuzk_prove`. Their bytes are charged to the engine's budget at once, past the room left if
/// need be (they exist already: new dispatches wait, and `budget_peak` shows the excess); a
/// job with an assignment that, with the parameters' host bytes, is larger than the whole
/// budget is refused: `CUZK_STATUS_BUDGET_EXHAUSTED` from `cuzk_job_wait`.
/// Thread-safe.
///
/// # Safety
/// `engine`, `params` live; `assignments` holds `count` handles; `r`, `s` NULL or
/// `count * 32` bytes; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_engine_submit(
    engine: *const cuzk_engine,
    params: *const cuzk_params,
    assignments: *const *mut cuzk_assignment,
    count: usize,
    r: *const u8,
    s: *const u8,
    priority: i32,
    out: *mut *mut cuzk_job,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // Taken first, so they are consumed on every path below.
        // SAFETY: per the contract.
        let taken = unsafe { take_assignments(assignments, count) }?;
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        let (engine, params) = unsafe { (arg(engine, "engine")?, arg(params, "params")?) };
        if count == 0 {
            return Err(AbiError::invalid("an empty job: nothing to prove"));
        }
        let partitions = taken.into_iter().map(Partition::synthesized).collect();
        let mut job = Job::new(params.inner.clone(), partitions).with_priority(priority);
        match (r.is_null(), s.is_null()) {
            (true, true) => {}
            (false, false) => {
                // SAFETY: per the contract.
                let (r, s) = unsafe { (scalar::read_all(r, count, "r")?, scalar::read_all(s, count, "s")?) };
                job = job.with_randomness(r, s);
            }
            _ => return Err(AbiError::invalid("r and s must both be NULL or both be given")),
        }
        let handle = engine.inner.submit(job);
        let job = cuzk_job {
            core: JobCore::new(Submitted { handle, total: count }),
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(job)) };
        Ok(())
    })
}

/// Blocks until the job is over and writes its `count` proofs (192 bytes each, in the order
/// submitted) to `proofs_out` (`proofs_out_len` ≥ 192 · count bytes); or returns why it
/// failed (its partition's error, cancelled, budget exhausted, ...). The result can be taken
/// once: a second call is `CUZK_STATUS_INVALID_ARGUMENT`. A buffer too small is reported
/// before waiting and leaves the result in place. Thread-safe.
///
/// # Safety
/// `job` live; `proofs_out` `proofs_out_len` writable bytes; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_job_wait(
    job: *const cuzk_job,
    proofs_out: *mut u8,
    proofs_out_len: usize,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: live per the contract.
        let job = unsafe { arg(job, "job") }?;
        // SAFETY: per the contract.
        let dst = unsafe { proof_buffer(proofs_out, proofs_out_len, job.core.job.total) }?;
        let job = job.core.claim("cuzk_job_wait")?;
        write_proofs(dst, &job.handle.take_result()?);
        Ok(())
    })
}

/// Cancels the job: partitions not yet on a GPU are dropped (their buffers back to the pool),
/// `cuzk_job_wait` then reports the cancellation. Returns whether the job was still running
/// (false for NULL or a job already over). Works while another thread blocks in
/// `cuzk_job_wait` on the job (that wait then returns `CUZK_STATUS_CANCELLED`). Thread-safe.
///
/// # Safety
/// `job` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn cuzk_job_cancel(job: *const cuzk_job) -> bool {
    // SAFETY: per the contract.
    unsafe { job::cancel(job) }
}

/// The job's progress: `*done` partitions proved of `*total`, `*finished` whether it is over.
/// Also while another thread waits for the job, and after (the real counts). Thread-safe.
///
/// # Safety
/// `job` live; `done`, `total`, `finished` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_job_progress(
    job: *const cuzk_job,
    done: *mut u64,
    total: *mut u64,
    finished: *mut bool,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: per the contract.
    unsafe { job::progress(job, done, total, finished, err) }
}

/// Calls `callback(user_data, job id, done, failed, total, finished)` after each partition of
/// the job is proved or fails, and once when the job is over (`finished` true, the last call).
/// Called on an engine thread (a worker or the dispatcher; or a thread that cancels the job or
/// frees the engine),
/// with the job's lock held: it must return quickly and not block (the engine thread waits
/// for it), and must not call `cuzk_job_*` on this job. If the job is over already it is
/// called once, now, on this thread. A second registration replaces the first; after
/// `cuzk_job_free` returns it is never called. A NULL `callback` removes the registration.
/// `user_data` must stay valid until the last call (`finished`) or `cuzk_job_free`. Also
/// after `cuzk_job_wait` (the job is over then: one call, now). Thread-safe.
///
/// # Safety
/// `job` live; `callback` NULL or safe to call from any thread with `user_data`; `err` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_job_on_progress(
    job: *const cuzk_job,
    callback: cuzk_job_progress_callback,
    user_data: *mut c_void,
    err: *mut *mut c_char,
) -> cuzk_status {
    // SAFETY: per the contract.
    unsafe { job::on_progress(job, callback, user_data, err) }
}

/// Frees a job handle; a job not yet over is cancelled first (nobody can take its proofs any
/// more). Its progress callback (`cuzk_job_on_progress`) is never called once this returns.
/// NULL is accepted. Not to be called while another thread uses the handle, nor from its
/// progress callback.
///
/// # Safety
/// `job` is NULL or from `cuzk_engine_submit`, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_job_free(job: *mut cuzk_job) {
    // SAFETY: per the contract.
    unsafe { job::free(job) }
}

/// A snapshot of the engine's queues, pacer, budget, pool and GPU workers. Thread-safe.
///
/// # Safety
/// `engine` live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_engine_stats(
    engine: *const cuzk_engine,
    out: *mut cuzk_engine_statistics,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: live per the contract.
        let engine = unsafe { arg(engine, "engine") }?;
        let s = engine.inner.stats();
        let n = |v: usize| v as u64;
        let ns = |d: Option<Duration>| d.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let workers = s.workers.len();
        let busy = s.workers.iter().map(|w| w.busy_fraction).sum::<f64>() / workers.max(1) as f64;
        let stats = cuzk_engine_statistics {
            pending: n(s.pending),
            in_synthesis: n(s.in_synthesis),
            waiting: n(s.waiting),
            on_gpu: n(s.on_gpu),
            jobs_active: n(s.jobs_active),
            jobs_done: s.jobs_done,
            jobs_failed: s.jobs_failed,
            partitions_done: s.partitions_done,
            partitions_failed: s.partitions_failed,
            partitions_dropped: s.partitions_dropped,
            budget_used: n(s.budget_used),
            budget_peak: n(s.budget_peak),
            budget_limit: n(s.budget_limit),
            synthesis_reserved: n(s.synthesis_reserved),
            params_sets: n(s.params_sets),
            params_host_bytes: n(s.params_host_bytes),
            params_device_bytes: n(s.params_device_bytes),
            budget_waits: s.budget_waits,
            evicted_pool_bytes: n(s.evicted_pool_bytes),
            evicted_params: s.evicted_params,
            evicted_params_host_bytes: n(s.evicted_params_host_bytes),
            synthesis_ema_ns: ns(s.synthesis_time_ema),
            gpu_ema_ns: ns(s.gpu_time_ema),
            gpu_workers: u32::try_from(workers).unwrap_or(u32::MAX),
            gpu_workers_lost: s.workers.iter().filter(|w| w.lost).count() as u32,
            gpu_busy_fraction: busy,
            pacer_dispatch_rate: s.pacer.dispatch_rate.unwrap_or(0.0),
            pacer_target_depth: n(s.pacer.target_depth),
            pacer_in_flight_cap: n(s.pacer.in_flight_cap),
            uptime_ns: ns(Some(s.uptime)),
            pool: s.pool.into(),
            witness_partitions: s.witness.witness,
            full_partitions: s.witness.full,
            compiled_recorded: s.witness.recorded,
            witness_fallbacks: s.witness.fallbacks,
            compiled_bytes: n(s.compiled_bytes),
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(stats) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_witness_path_is_the_default_unless_the_config_turns_it_off() {
        let mut c = default_config();
        assert_eq!(c.witness_path_off, 0);
        assert_eq!(
            engine_config(&c).unwrap().witness_path,
            EngineConfig::default().witness_path
        );
        c.witness_path_off = 1;
        assert!(!engine_config(&c).unwrap().witness_path);
    }

    #[test]
    fn the_headers_bounds_are_the_engines() {
        assert_eq!(CUZK_MAX_GPUS as usize, EngineConfig::MAX_BACKENDS);
        assert_eq!(
            CUZK_MAX_GPU_WORKERS_PER_BACKEND as usize,
            EngineConfig::MAX_GPU_WORKERS_PER_BACKEND
        );
        assert_eq!(CUZK_MAX_SYNTHESIS_WORKERS as usize, EngineConfig::MAX_SYNTHESIS_WORKERS);
        assert_eq!(
            Duration::from_millis(CUZK_MAX_WAIT_MS),
            EngineConfig::MAX_BUDGET_TIMEOUT
        );
    }
}
