//! What the two job handles share: `cuzk_job` (a batch of assignments, [`engine`](super::engine))
//! and `cuzk_filecoin_job` (a Filecoin proof, [`filecoin::job`](super::filecoin::job)) each hold
//! a [`JobCore`], and their `*_cancel`, `*_progress`, `*_on_progress` and `*_free` functions
//! are the ones here; only their waits differ (what the result is and where it goes), and
//! take the result through [`JobCore::claim`].

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use super::boundary::{arg, call, call_value, call_void, take_handle, AbiResult, Out};
use super::progress::{cuzk_job_progress_callback, progress_callback, silenced};
use super::status::{cuzk_status, AbiError};
use crate::engine::{Progress, ProgressCallback};

/// A job of an engine as a handle sees it.
pub(super) trait Running {
    /// The engine's id of the job.
    fn id(&self) -> u64;
    /// Cancels it; whether it was still running.
    fn cancel(&self) -> bool;
    /// Its progress as `*_progress` reports it.
    fn progress(&self) -> Progress;
    /// Registers its progress callback (replacing the previous one).
    fn on_progress(&self, callback: ProgressCallback);
}

/// A job handle's state: the job, kept for the handle's whole life (cancel and progress reach
/// it while another thread blocks in the wait, and progress keeps its real counts after), and
/// whether the one wait that takes the result has come.
pub(super) struct JobCore<J> {
    pub(super) job: J,
    waited: AtomicBool,
}

impl<J> JobCore<J> {
    pub(super) fn new(job: J) -> Self {
        Self {
            job,
            waited: AtomicBool::new(false),
        }
    }

    /// The job, for the wait that takes its result (`wait` names that function); a second
    /// wait is refused.
    pub(super) fn claim(&self, wait: &str) -> AbiResult<&J> {
        if self.waited.swap(true, Ordering::AcqRel) {
            return Err(AbiError::invalid(format!(
                "the job's result was taken already by {wait}"
            )));
        }
        Ok(&self.job)
    }
}

/// A handle kind: what holds a [`JobCore`].
pub(super) trait JobHandleKind {
    /// Its job.
    type Job: Running;
    /// Its state.
    fn core(&self) -> &JobCore<Self::Job>;
}

/// `cuzk_*job_cancel`: false for NULL.
///
/// # Safety
/// `job` NULL or live.
pub(super) unsafe fn cancel<H: JobHandleKind>(job: *const H) -> bool {
    call_value(false, || {
        // SAFETY: NULL or live per the contract.
        unsafe { job.as_ref() }.is_some_and(|job| job.core().job.cancel())
    })
}

/// `cuzk_*job_progress`.
///
/// # Safety
/// `job` live; `done`, `total`, `finished` writable; `err` NULL or writable.
pub(super) unsafe fn progress<H: JobHandleKind>(
    job: *const H,
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
        let p = job.core().job.progress();
        // SAFETY: non-NULL, writable per the contract.
        unsafe {
            done.write(p.done as u64);
            total.write(p.total as u64);
            finished.write(p.finished);
        }
        Ok(())
    })
}

/// `cuzk_*job_on_progress`.
///
/// # Safety
/// `job` live; `callback` NULL or safe to call from any thread with `user_data`; `err` NULL or
/// writable.
pub(super) unsafe fn on_progress<H: JobHandleKind>(
    job: *const H,
    callback: cuzk_job_progress_callback,
    user_data: *mut c_void,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: live per the contract.
        let job = &unsafe { arg(job, "job") }?.core().job;
        // SAFETY: the callback's contract is the caller's, per this function's.
        let callback = unsafe { progress_callback(job.id(), callback, user_data) };
        job.on_progress(callback);
        Ok(())
    })
}

/// `cuzk_*job_free`: a job not yet over is cancelled; its progress callback is never called
/// once this returns.
///
/// # Safety
/// `job` is NULL or a handle of this kind from the library, not freed before.
pub(super) unsafe fn free<H: JobHandleKind>(job: *mut H) {
    call_void(|| {
        // SAFETY: per the contract.
        if let Some(job) = unsafe { take_handle(job) } {
            // Waits for a callback under way; the old one is not called again.
            job.core().job.on_progress(silenced());
            job.core().job.cancel();
        }
    })
}
