//! `cuzk_filecoin_job`: a Filecoin proof submitted by a `cuzk_filecoin_submit_*` call (wait,
//! cancel, progress polled or by callback, free: the job core `cuzk_job` has too, in
//! `ffi::job`), and `submit_and_wait`, which makes each blocking proof call its
//! `cuzk_filecoin_submit_*` twin and a wait.

use std::ffi::{c_char, c_void};

use crate::ffi::boundary::{arg, call, Out};
#[cfg(feature = "filecoin")]
use crate::ffi::boundary::{into_handle, AbiResult};
use crate::ffi::bytes::cuzk_bytes;
use crate::ffi::job::{self, JobCore, JobHandleKind, Running};
use crate::ffi::progress::cuzk_job_progress_callback;
use crate::ffi::status::cuzk_status;
#[cfg(feature = "filecoin")]
use crate::filecoin::ProofJob;

/// A Filecoin proof submitted to an engine. Opaque; thread-safe: `cuzk_filecoin_job_cancel`,
/// `cuzk_filecoin_job_progress` and `cuzk_filecoin_job_on_progress` reach it while another
/// thread blocks in `cuzk_filecoin_job_wait`.
#[allow(non_camel_case_types)]
pub struct cuzk_filecoin_job {
    core: JobCore<ProofJob>,
}

/// Without the `filecoin` feature no proof is submitted: a job that cannot exist.
#[cfg(not(feature = "filecoin"))]
pub(crate) enum ProofJob {}

impl JobHandleKind for cuzk_filecoin_job {
    type Job = ProofJob;
    fn core(&self) -> &JobCore<ProofJob> {
        &self.core
    }
}

#[cfg(feature = "filecoin")]
impl Running for ProofJob {
    fn id(&self) -> u64 {
        ProofJob::id(self)
    }
    fn cancel(&self) -> bool {
        ProofJob::cancel(self)
    }
    fn progress(&self) -> crate::engine::Progress {
        ProofJob::progress(self)
    }
    fn on_progress(&self, callback: crate::engine::ProgressCallback) {
        ProofJob::on_progress(self, callback)
    }
}

#[cfg(not(feature = "filecoin"))]
impl Running for ProofJob {
    fn id(&self) -> u64 {
        match *self {}
    }
    fn cancel(&self) -> bool {
        match *self {}
    }
    fn progress(&self) -> crate::engine::Progress {
        match *self {}
    }
    fn on_progress(&self, _: crate::engine::ProgressCallback) {
        match *self {}
    }
}

/// Writes a submitted job's handle to `out` (the end of every `cuzk_filecoin_submit_*`).
#[cfg(feature = "filecoin")]
pub(super) fn hand_out(out: Out<*mut cuzk_filecoin_job>, job: crate::Result<ProofJob>) -> AbiResult {
    let handle = into_handle(cuzk_filecoin_job {
        core: JobCore::new(job?),
    });
    // SAFETY: checked non-NULL, writable per the entry point's contract.
    unsafe { out.write(handle) };
    Ok(())
}

/// A blocking proof call: `out` is checked first, then `submit` (the call's
/// `cuzk_filecoin_submit_*` twin, given a job slot and `err`) submits the job, which is
/// waited for (`cuzk_filecoin_job_wait`: the proofs checked against the verifying key, the
/// bytes written to `*out`) and freed. The status and message are the submit's, else the
/// wait's.
///
/// # Safety
/// `out` NULL or writable; `err` NULL or writable; `submit` safe to call with a writable job
/// slot and `err`.
pub(super) unsafe fn submit_and_wait(
    out: *mut cuzk_bytes,
    err: *mut *mut c_char,
    submit: impl FnOnce(*mut *mut cuzk_filecoin_job, *mut *mut c_char) -> cuzk_status,
) -> cuzk_status {
    let checked = call(err, || Out::new(out, "out").map(drop));
    if checked != cuzk_status::Ok {
        return checked;
    }
    let mut job = std::ptr::null_mut();
    let status = submit(&mut job, err);
    if status != cuzk_status::Ok {
        return status;
    }
    // SAFETY: the job the submit call made; `out` non-NULL and writable per the contract.
    let status = unsafe { cuzk_filecoin_job_wait(job, out, err) };
    // SAFETY: made above, freed once.
    unsafe { cuzk_filecoin_job_free(job) };
    status
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
        let job = unsafe { arg(job, "job") }?.core.claim("cuzk_filecoin_job_wait")?;
        #[cfg(feature = "filecoin")]
        {
            let proof = job.take_output()?.proof;
            // SAFETY: checked non-NULL, writable per the contract.
            unsafe { out.write(cuzk_bytes::from_vec(proof)) };
            Ok(())
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = out;
            match *job {}
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
    // SAFETY: per the contract.
    unsafe { job::cancel(job) }
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
    // SAFETY: per the contract.
    unsafe { job::progress(job, done, total, finished, err) }
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
    // SAFETY: per the contract.
    unsafe { job::on_progress(job, callback, user_data, err) }
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
    // SAFETY: per the contract.
    unsafe { job::free(job) }
}
