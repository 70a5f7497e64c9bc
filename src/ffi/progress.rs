//! A job's progress callback across the ABI: its C type, taken by `cuzk_job_on_progress` and
//! `cuzk_filecoin_job_on_progress` alike, and the adapter that makes an engine
//! [`ProgressCallback`] of it (the callback called from engine threads, a panic kept on this
//! side).

use std::ffi::c_void;

use super::boundary::call_void;
use crate::engine::ProgressCallback;

/// A job's progress callback: `user_data` as given to `cuzk_job_on_progress` (or
/// `cuzk_filecoin_job_on_progress`), the job's id (unique within its engine), `done`
/// partitions proved and `failed` partitions left unproved (failed, or dropped because the job
/// failed or was cancelled) of `total`, and whether the job is over (then
/// `done + failed == total`; that call is the last).
#[allow(non_camel_case_types)]
pub type cuzk_job_progress_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, job_id: u64, done: u64, failed: u64, total: u64, finished: bool),
>;

/// A registered callback and its user data.
struct ProgressSink {
    callback: unsafe extern "C" fn(*mut c_void, u64, u64, u64, u64, bool),
    user_data: *mut c_void,
}

// SAFETY: the `*_on_progress` entry points require the callback and its user data to be usable
// from any thread; the library only passes the pointer back, never dereferences it.
unsafe impl Send for ProgressSink {}

/// What the job of `job_id` registers with the engine for `callback` and `user_data`: a call
/// of `callback` per engine event; nothing for a NULL `callback` (so registering it removes
/// the previous one).
///
/// # Safety
/// `callback` NULL or safe to call with `user_data` from any thread for as long as the job may
/// call it (until its final event, or until the registration is replaced).
pub(super) unsafe fn progress_callback(
    job_id: u64,
    callback: cuzk_job_progress_callback,
    user_data: *mut c_void,
) -> ProgressCallback {
    let Some(callback) = callback else {
        return silenced();
    };
    let sink = ProgressSink { callback, user_data };
    Box::new(move |p| {
        let sink = &sink;
        // A panic must not unwind into the engine thread's caller, nor across C.
        call_void(|| {
            // SAFETY: per this function's contract.
            unsafe {
                (sink.callback)(
                    sink.user_data,
                    job_id,
                    p.done as u64,
                    p.failed as u64,
                    p.total as u64,
                    p.finished,
                )
            }
        })
    })
}

/// What a job's `*_free` registers before it cancels the job: waits for a callback under way
/// to return, after which the old one is never called again.
pub(super) fn silenced() -> ProgressCallback {
    Box::new(|_| {})
}
