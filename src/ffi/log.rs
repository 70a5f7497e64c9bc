//! An optional log callback: the `log` crate's records forwarded to a C function.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Once, RwLock};

use super::boundary::{call, AbiResult};
use super::status::{cuzk_status, enum_arg, AbiError};

/// Severity of a log record (the `log` crate's levels), one of the `CUZK_LOG_LEVEL_*` values.
/// Also the most verbose level a callback asks for (any other value is refused with
/// `CUZK_STATUS_INVALID_ARGUMENT`).
#[allow(non_camel_case_types)]
pub type cuzk_log_level = u32;
/// Nothing (as a maximum: no records).
pub const CUZK_LOG_LEVEL_OFF: cuzk_log_level = 0;
/// Errors.
pub const CUZK_LOG_LEVEL_ERROR: cuzk_log_level = 1;
/// Warnings (e.g. a pool falling back to unpinned memory).
pub const CUZK_LOG_LEVEL_WARN: cuzk_log_level = 2;
/// Progress (e.g. one line per proof).
pub const CUZK_LOG_LEVEL_INFO: cuzk_log_level = 3;
/// Details (pool allocations, backend choice).
pub const CUZK_LOG_LEVEL_DEBUG: cuzk_log_level = 4;
/// Everything.
pub const CUZK_LOG_LEVEL_TRACE: cuzk_log_level = 5;

/// A log callback: `user_data` as given to `cuzk_set_log_callback`; `target` (the Rust
/// module, e.g. "cuzk::pool") and `message` are NUL-terminated UTF-8 valid only during the
/// call. It may be called from any thread, several at once; it must not call back into cuzk.
#[allow(non_camel_case_types)]
pub type cuzk_log_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, level: cuzk_log_level, target: *const c_char, message: *const c_char),
>;

struct Sink {
    callback: unsafe extern "C" fn(*mut c_void, cuzk_log_level, *const c_char, *const c_char),
    user_data: *mut c_void,
}

// SAFETY: the header requires the callback and its user data to be usable from any thread.
unsafe impl Send for Sink {}
// SAFETY: as above; the library only passes the pointer back, never dereferences it.
unsafe impl Sync for Sink {}

struct Forwarder {
    sink: RwLock<Option<Sink>>,
}

static FORWARDER: Forwarder = Forwarder {
    sink: RwLock::new(None),
};

impl log::Log for Forwarder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        self.sink.read().map(|s| s.is_some()).unwrap_or(false)
    }

    fn log(&self, record: &log::Record<'_>) {
        let Ok(sink) = self.sink.read() else { return };
        let Some(sink) = sink.as_ref() else { return };
        let level = match record.level() {
            log::Level::Error => CUZK_LOG_LEVEL_ERROR,
            log::Level::Warn => CUZK_LOG_LEVEL_WARN,
            log::Level::Info => CUZK_LOG_LEVEL_INFO,
            log::Level::Debug => CUZK_LOG_LEVEL_DEBUG,
            log::Level::Trace => CUZK_LOG_LEVEL_TRACE,
        };
        let clean = |s: String| CString::new(s.replace('\0', "\u{FFFD}")).unwrap_or_default();
        let target = clean(record.target().to_string());
        let message = clean(record.args().to_string());
        // SAFETY: the callback and user data are what the caller registered, callable from
        // any thread; the strings outlive the call.
        unsafe { (sink.callback)(sink.user_data, level, target.as_ptr(), message.as_ptr()) };
    }

    fn flush(&self) {}
}

fn filter(level: cuzk_log_level) -> AbiResult<log::LevelFilter> {
    use log::LevelFilter as F;
    enum_arg(
        "max_level",
        level,
        &[
            ("CUZK_LOG_LEVEL_OFF", F::Off),
            ("CUZK_LOG_LEVEL_ERROR", F::Error),
            ("CUZK_LOG_LEVEL_WARN", F::Warn),
            ("CUZK_LOG_LEVEL_INFO", F::Info),
            ("CUZK_LOG_LEVEL_DEBUG", F::Debug),
            ("CUZK_LOG_LEVEL_TRACE", F::Trace),
        ],
    )
}

/// Sends the library's log records up to `max_level` to `callback` with `user_data`; a NULL
/// `callback` stops forwarding. Replaces any previous callback: once this returns, the old
/// one is no longer called (calls in flight finish first). Logging is a process-wide
/// setting; without a callback nothing is logged.
///
/// Fails with `CUZK_STATUS_INVALID_ARGUMENT` if another Rust logger was installed in this
/// process first (a Rust program linking cuzk as a crate uses its own logger instead).
/// Thread-safe, but must not be called from inside the callback.
///
/// # Safety
/// `callback` (when not NULL) is safe to call with `user_data` from any thread until it is
/// replaced; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_set_log_callback(
    callback: cuzk_log_callback,
    user_data: *mut c_void,
    max_level: cuzk_log_level,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || install(callback, user_data, max_level))
}

fn install(callback: cuzk_log_callback, user_data: *mut c_void, max_level: cuzk_log_level) -> AbiResult {
    // Checked first, even with a NULL callback: a bad level changes nothing.
    let max_level = filter(max_level)?;
    static INSTALL: Once = Once::new();
    let mut installed = Ok(());
    INSTALL.call_once(|| installed = log::set_logger(&FORWARDER));
    if installed.is_err() || !log_is_ours() {
        return Err(AbiError::invalid(
            "another logger is installed in this process; cuzk's records go there",
        ));
    }
    let mut sink = FORWARDER.sink.write().unwrap_or_else(|p| p.into_inner());
    *sink = callback.map(|callback| Sink { callback, user_data });
    log::set_max_level(if sink.is_some() {
        max_level
    } else {
        log::LevelFilter::Off
    });
    Ok(())
}

/// Whether the process-wide logger is the forwarder.
fn log_is_ours() -> bool {
    std::ptr::addr_eq(log::logger() as *const dyn log::Log, &FORWARDER as *const Forwarder)
}
