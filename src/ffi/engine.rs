//! `cuzk_engine`: the proving engine (synthesis overlapped with GPU proving, a paced dispatch,
//! one memory budget), and `cuzk_job`: a batch submitted to it.
//!
//! Through the ABI a job is a batch of assignments synthesized already (`cuzk_assignment`,
//! from an R1CS and a witness or from raw buffers), best made in the engine's own pool
//! (`cuzk_engine_pool`) so their bytes are the ones the engine's budget counts.

use std::ffi::{c_char, c_void};
use std::time::Duration;

use super::assignment::cuzk_assignment;
use super::boundary::{arg, call, call_void, into_handle, room, take_handle, Out};
use super::engine_config::engine_config;
use super::job::{self, JobCore, JobHandleKind, Running};
use super::params::cuzk_params;
use super::pool::{cuzk_pool, cuzk_pool_statistics};
use super::prover::{proof_buffer, take_assignments, write_proofs};
use super::scalar;
use super::status::{cuzk_status, AbiError};
use crate::engine::{Engine, Job, JobHandle, Partition, Progress, ProgressCallback};

/// Named here too: `cuzk_engine_new` takes it.
pub use super::engine_config::*;
/// Named here too: `cuzk_job_on_progress` takes it.
pub use super::progress::cuzk_job_progress_callback;

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
    /// Device bytes of those sets on the devices of non-CPU backends (each set times the
    /// GPUs holding it there).
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
    /// and those of a type whose witness was refused included).
    pub full_partitions: u64,
    /// Compiled circuits recorded.
    pub compiled_recorded: u64,
    /// Witnesses refused by their compiled circuit: each failed its job
    /// (`CUZK_STATUS_WITNESS_MISMATCH`), and its type and shape is synthesized in full from
    /// then on.
    pub witness_fallbacks: u64,
    /// Of `budget_used`: the bytes of the compiled circuits the engine holds, each once.
    pub compiled_bytes: u64,
    /// (parameter set, GPU) pairs whose set is on that GPU's device. Each GPU chooses from its
    /// memory, with no setting: on the device when the set fits beside a proof's working set,
    /// else streamed.
    pub params_on_device: u64,
    /// (parameter set, GPU) pairs whose set that GPU streams: its query vectors stay in
    /// page-locked host memory and cross PCIe for every proof.
    pub params_streamed: u64,
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
        let mut partitions = room(count)?;
        partitions.extend(taken.into_iter().map(Partition::synthesized));
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
            params_on_device: n(s.params.iter().map(|p| p.resident_backends).sum()),
            params_streamed: n(s.params.iter().map(|p| p.streamed_backends).sum()),
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(stats) };
        Ok(())
    })
}
