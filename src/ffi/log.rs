//! An optional log callback: the `log` crate's records forwarded to a C function.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Once, RwLock};

use super::boundary::{call, AbiResult};
use super::status::{cuzk_status, AbiError};

/// Severity of a log record (the `log` crate's levels). Also the most verbose level a
/// callback asks for.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cuzk_log_level {
    /// Nothing (as a maximum: no records).
    Off = 0,
    /// Errors.
    Error = 1,
    /// Warnings (e.g. a pool falling back to unpinned memory).
    Warn = 2,
    /// Progress (e.g. one line per proof).
    Info = 3,
    /// Details (pool allocations, backend choice).
    Debug = 4,
    /// Everything.
    Trace = 5,
}

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
            log::Level::Error => cuzk_log_level::Error,
            log::Level::Warn => cuzk_log_level::Warn,
            log::Level::Info => cuzk_log_level::Info,
            log::Level::Debug => cuzk_log_level::Debug,
            log::Level::Trace => cuzk_log_level::Trace,
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

fn filter(level: cuzk_log_level) -> log::LevelFilter {
    match level {
        cuzk_log_level::Off => log::LevelFilter::Off,
        cuzk_log_level::Error => log::LevelFilter::Error,
        cuzk_log_level::Warn => log::LevelFilter::Warn,
        cuzk_log_level::Info => log::LevelFilter::Info,
        cuzk_log_level::Debug => log::LevelFilter::Debug,
        cuzk_log_level::Trace => log::LevelFilter::Trace,
    }
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
        filter(max_level)
    } else {
        log::LevelFilter::Off
    });
    Ok(())
}

/// Whether the process-wide logger is the forwarder.
fn log_is_ours() -> bool {
    std::ptr::addr_eq(log::logger() as *const dyn log::Log, &FORWARDER as *const Forwarder)
}
