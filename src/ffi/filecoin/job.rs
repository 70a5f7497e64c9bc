//! `cuzk_filecoin_job`: a Filecoin proof submitted by a `cuzk_filecoin_submit_*` call (wait,
//! cancel, progress polled or by callback, free, as `cuzk_job`).

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "filecoin")]
use crate::ffi::boundary::into_handle;
use crate::ffi::boundary::{arg, call, call_value, call_void, take_handle, AbiResult, Out};
use crate::ffi::bytes::cuzk_bytes;
use crate::ffi::progress::cuzk_job_progress_callback;
#[cfg(feature = "filecoin")]
use crate::ffi::progress::{progress_callback, silenced};
use crate::ffi::status::cuzk_status;

/// A Filecoin proof submitted to an engine. Opaque; thread-safe: `cuzk_filecoin_job_cancel`,
/// `cuzk_filecoin_job_progress` and `cuzk_filecoin_job_on_progress` reach it while another
/// thread blocks in `cuzk_filecoin_job_wait`.
#[allow(non_camel_case_types)]
pub struct cuzk_filecoin_job {
    #[cfg(feature = "filecoin")]
    job: crate::filecoin::ProofJob,
    /// Set by the one `cuzk_filecoin_job_wait` that takes the result.
    waited: AtomicBool,
}

/// Where a proof call's result goes: its bytes (blocking), or its job (submit).
#[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
pub(super) enum Deliver {
    Bytes(Out<cuzk_bytes>),
    Job(Out<*mut cuzk_filecoin_job>),
}

impl Deliver {
    pub(super) fn bytes(out: *mut cuzk_bytes) -> AbiResult<Self> {
        Ok(Self::Bytes(Out::new(out, "out")?))
    }

    pub(super) fn job(out: *mut *mut cuzk_filecoin_job) -> AbiResult<Self> {
        Ok(Self::Job(Out::new(out, "out")?))
    }
}

/// Hands a submitted job to C: waits for its bytes (blocking calls) or writes its handle.
#[cfg(feature = "filecoin")]
pub(super) fn deliver(how: Deliver, job: crate::Result<crate::filecoin::ProofJob>) -> AbiResult {
    let job = job?;
    match how {
        Deliver::Bytes(out) => {
            let proof = job.wait()?.proof;
            // SAFETY: checked non-NULL, writable per the entry point's contract.
            unsafe { out.write(cuzk_bytes::from_vec(proof)) };
        }
        Deliver::Job(out) => {
            let handle = into_handle(cuzk_filecoin_job {
                job,
                waited: AtomicBool::new(false),
            });
            // SAFETY: checked non-NULL, writable per the entry point's contract.
            unsafe { out.write(handle) };
        }
    }
    Ok(())
}

/// Blocks until the job is over, checks its proofs against the parameters' verifying key, and
/// writes the proof bytes to `*out` (192 per partition, in order; free with
/// `cuzk_bytes_free`); or returns why it failed (`CUZK_STATUS_CANCELLED` after
/// `cuzk_filecoin_job_cancel`, a partition's error, ...). The result can be taken once: a
/// second call is `CUZK_STATUS_INVALID_ARGUMENT`. Thread-safe.
///
/// # Safety
/// `job` live; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_job_wait(
    job: *const cuzk_filecoin_job,
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: live per the contract.
        let job = unsafe { arg(job, "job") }?;
        if job.waited.swap(true, Ordering::AcqRel) {
            return Err(crate::ffi::status::AbiError::invalid(
                "the job's result was taken already by cuzk_filecoin_job_wait",
            ));
        }
        #[cfg(feature = "filecoin")]
        {
            let proof = job.job.take_output()?.proof;
            // SAFETY: checked non-NULL, writable per the contract.
            unsafe { out.write(cuzk_bytes::from_vec(proof)) };
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = out;
            super::unsupported()
        }
    })
}

/// Cancels the job: its partitions not yet on a GPU are dropped; `cuzk_filecoin_job_wait`
/// then returns `CUZK_STATUS_CANCELLED`. Returns whether it was still running (false for NULL
/// or a job already over). Thread-safe.
///
/// # Safety
/// `job` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_job_cancel(job: *const cuzk_filecoin_job) -> bool {
    call_value(false, || {
        // SAFETY: NULL or live per the contract.
        let Some(job) = (unsafe { job.as_ref() }) else {
            return false;
        };
        #[cfg(feature = "filecoin")]
        {
            job.job.cancel()
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = job;
            false
        }
    })
}

/// The job's progress: `*done` partitions proved of `*total`, `*finished` whether the engine
/// is done with it (`cuzk_filecoin_job_wait` then only verifies). Also while another thread
/// waits, and after. Thread-safe.
///
/// # Safety
/// `job` live; `done`, `total`, `finished` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_job_progress(
    job: *const cuzk_filecoin_job,
    done: *mut u64,
    total: *mut u64,
    finished: *mut bool,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let (done, total, finished) = (
            Out::new(done, "done")?,
            Out::new(total, "total")?,
            Out::new(finished, "finished")?,
        );
        // SAFETY: live per the contract.
        let job = unsafe { arg(job, "job") }?;
        #[cfg(feature = "filecoin")]
        let p = job.job.progress();
        #[cfg(not(feature = "filecoin"))]
        let p = {
            let _ = job;
            crate::engine::Progress {
                done: 0,
                failed: 0,
                total: 0,
                finished: true,
            }
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe {
            done.write(p.done as u64);
            total.write(p.total as u64);
            finished.write(p.finished);
        }
        Ok(())
    })
}

/// Calls `callback(user_data, job id, done, failed, total, finished)` after each partition of
/// the job is proved or fails, and once when the engine is done with the job (`finished` true,
/// the last call; `cuzk_filecoin_job_wait` then only verifies the proofs, and may still fail).
/// The contract is `cuzk_job_on_progress`'s: called on an engine thread (a worker or the
/// dispatcher; or a thread that cancels the job or frees the engine) with the job's lock held,
/// so it must return quickly, not block, and not call `cuzk_filecoin_job_*` on this job; if
/// the engine is done with the job already it is called once, now, on this thread (also after
/// `cuzk_filecoin_job_wait`). A second registration replaces the first; a NULL `callback`
/// removes it; after `cuzk_filecoin_job_free` returns it is never called. `user_data` must
/// stay valid until the last call (`finished`) or `cuzk_filecoin_job_free`. Thread-safe.
///
/// # Safety
/// `job` live; `callback` NULL or safe to call from any thread with `user_data`; `err` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_job_on_progress(
    job: *const cuzk_filecoin_job,
    callback: cuzk_job_progress_callback,
    user_data: *mut c_void,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: live per the contract.
        let job = unsafe { arg(job, "job") }?;
        #[cfg(feature = "filecoin")]
        {
            // SAFETY: the callback's contract is the caller's, per this function's.
            let callback = unsafe { progress_callback(job.job.id(), callback, user_data) };
            job.job.on_progress(callback);
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (job, callback, user_data);
            super::unsupported()
        }
    })
}

/// Frees a job handle; a job not yet over is cancelled first (nobody can take its proof any
/// more). Its progress callback (`cuzk_filecoin_job_on_progress`) is never called once this
/// returns. NULL is accepted. Not to be called while another thread uses the handle, nor from
/// its progress callback.
///
/// # Safety
/// `job` is NULL or from a `cuzk_filecoin_submit_*` call, not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_filecoin_job_free(job: *mut cuzk_filecoin_job) {
    call_void(|| {
        // SAFETY: per the contract.
        if let Some(job) = unsafe { take_handle(job) } {
            #[cfg(feature = "filecoin")]
            {
                // Waits for a callback under way; the old one is not called again.
                job.job.on_progress(silenced());
                job.job.cancel();
            }
            drop(job);
        }
    })
}
