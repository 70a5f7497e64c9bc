//! `cuzk_pool`: the pinned pool, and `cuzk_buffer`: a buffer checked out of it.

use std::ffi::c_char;
use std::time::Duration;

use super::boundary::{arg, call, call_value, call_void, into_handle, take_handle, AbiResult, Out};
use super::status::{cuzk_status, enum_arg, AbiError};
use crate::pool::{PinnedBuffer, PinnedPool, PoolConfig, PoolStats, WhenFull};

/// Which memory a pool hands out: one of the `CUZK_POOL_MEMORY_*` values; any other value is
/// refused with `CUZK_STATUS_INVALID_ARGUMENT`.
#[allow(non_camel_case_types)]
pub type cuzk_pool_memory = u32;
/// CUDA pinned (page-locked) memory of GPU 0 when the library is built with CUDA and a GPU is
/// usable, else ordinary page-aligned memory (logged as a warning).
pub const CUZK_POOL_MEMORY_BEST_AVAILABLE: cuzk_pool_memory = 0;
/// Ordinary page-aligned heap memory (never pinned).
pub const CUZK_POOL_MEMORY_HEAP: cuzk_pool_memory = 1;

/// Which memory: whether it is the heap (else the best available), or why not.
pub(crate) fn heap_memory(memory: cuzk_pool_memory) -> AbiResult<bool> {
    enum_arg(
        "memory",
        memory,
        &[
            ("CUZK_POOL_MEMORY_BEST_AVAILABLE", false),
            ("CUZK_POOL_MEMORY_HEAP", true),
        ],
    )
}

/// The longest wait a pool or an engine accepts (`cuzk_pool_config.wait_ms`,
/// `cuzk_engine_config.budget_timeout_ms`): 30 days (a deadline the clock cannot hold would
/// fail every wait).
pub const CUZK_MAX_WAIT_MS: u64 = 2_592_000_000;

/// How a pool behaves. Start from `cuzk_pool_config_default` and change fields.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_pool_config {
    /// Which memory the pool hands out.
    pub memory: cuzk_pool_memory,
    /// Most bytes the pool holds, idle and in use together; 0 means no cap.
    pub max_bytes: u64,
    /// A checkout may reuse an idle buffer of up to this many times the request (≥ 1).
    pub max_reuse_factor: f64,
    /// When the cap leaves no room: wait this many milliseconds for buffers to come back
    /// (0: fail at once; at most `CUZK_MAX_WAIT_MS`, 30 days: more is
    /// `CUZK_STATUS_INVALID_ARGUMENT`).
    pub wait_ms: u64,
    /// Serve from unpinned memory when the cap or the allocator cannot (counted in
    /// `cuzk_pool_statistics.fallbacks`, logged).
    pub allow_fallback: bool,
}

/// A snapshot of a pool's counters. Every checkout is one of an allocation, a reuse or a
/// fallback: `allocations + reuses + fallbacks == checkouts`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct cuzk_pool_statistics {
    /// Successful checkouts.
    pub checkouts: u64,
    /// Checkouts served by a new allocation.
    pub allocations: u64,
    /// Checkouts served by an idle buffer.
    pub reuses: u64,
    /// Checkouts served by unpinned fallback memory.
    pub fallbacks: u64,
    /// Checkouts that failed.
    pub failures: u64,
    /// Checkouts that had to wait for returned buffers.
    pub waits: u64,
    /// Buffers handed back to the allocator.
    pub frees: u64,
    /// Pool bytes checked out now (0 once every buffer and assignment is back).
    pub bytes_in_use: u64,
    /// Pool bytes idle, ready for reuse.
    pub bytes_idle: u64,
    /// Most pool bytes held at once.
    pub peak_bytes: u64,
    /// Unpinned fallback bytes checked out now.
    pub fallback_bytes_in_use: u64,
    /// Idle buffers.
    pub idle_buffers: u64,
    /// Nanoseconds spent allocating.
    pub alloc_ns: u64,
    /// Nanoseconds spent freeing.
    pub free_ns: u64,
}

impl From<PoolStats> for cuzk_pool_statistics {
    fn from(s: PoolStats) -> Self {
        let n = |v: usize| v as u64;
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Self {
            checkouts: s.checkouts,
            allocations: s.allocations,
            reuses: s.reuses,
            fallbacks: s.fallbacks,
            failures: s.failures,
            waits: s.waits,
            frees: s.frees,
            bytes_in_use: n(s.bytes_in_use),
            bytes_idle: n(s.bytes_idle),
            peak_bytes: n(s.peak_bytes),
            fallback_bytes_in_use: n(s.fallback_bytes_in_use),
            idle_buffers: n(s.idle_buffers),
            alloc_ns: ns(s.alloc_time),
            free_ns: ns(s.free_time),
        }
    }
}

/// A pool of (pinned) host buffers. Opaque; thread-safe: every function taking a
/// `const cuzk_pool *` may be called from several threads at once.
#[allow(non_camel_case_types)]
pub struct cuzk_pool {
    pub(crate) inner: PinnedPool,
}

/// A buffer checked out of a pool, until it is checked in or handed to an assignment.
/// Opaque; not thread-safe (one owner at a time).
#[allow(non_camel_case_types)]
pub struct cuzk_buffer {
    pub(crate) inner: PinnedBuffer,
}

/// The default configuration: best available memory, no cap, reuse factor 2, wait 60 s,
/// no fallback. Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_pool_config_default() -> cuzk_pool_config {
    const DOCUMENTED: cuzk_pool_config = cuzk_pool_config {
        memory: CUZK_POOL_MEMORY_BEST_AVAILABLE,
        max_bytes: 0,
        max_reuse_factor: 2.0,
        wait_ms: 60_000,
        allow_fallback: false,
    };
    call_value(DOCUMENTED, || {
        let d = PoolConfig::default();
        cuzk_pool_config {
            memory: CUZK_POOL_MEMORY_BEST_AVAILABLE,
            max_bytes: 0,
            max_reuse_factor: d.max_reuse_factor,
            wait_ms: match d.when_full {
                WhenFull::Wait(t) => u64::try_from(t.as_millis()).unwrap_or(u64::MAX),
                WhenFull::Fail => 0,
            },
            allow_fallback: d.allow_fallback,
        }
    })
}

/// Makes a pool. `config` NULL means `cuzk_pool_config_default()`. On success `*out` holds
/// the pool, to be freed with `cuzk_pool_free`. Thread-safe.
///
/// # Safety
/// `config` is NULL or readable; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_pool_new(
    config: *const cuzk_pool_config,
    out: *mut *mut cuzk_pool,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        // SAFETY: NULL or readable per the contract.
        let c = unsafe { config.as_ref() }
            .copied()
            .unwrap_or_else(|| cuzk_pool_config_default());
        if !(c.max_reuse_factor >= 1.0 && c.max_reuse_factor.is_finite()) {
            return Err(AbiError::invalid(format!(
                "max_reuse_factor must be a finite number ≥ 1, found {}",
                c.max_reuse_factor
            )));
        }
        if c.wait_ms > CUZK_MAX_WAIT_MS {
            return Err(AbiError::invalid(format!(
                "wait_ms must be at most {CUZK_MAX_WAIT_MS} (30 days), found {}",
                c.wait_ms
            )));
        }
        let config = PoolConfig {
            max_bytes: if c.max_bytes == 0 {
                usize::MAX
            } else {
                usize::try_from(c.max_bytes).unwrap_or(usize::MAX)
            },
            max_reuse_factor: c.max_reuse_factor,
            when_full: if c.wait_ms == 0 {
                WhenFull::Fail
            } else {
                WhenFull::Wait(Duration::from_millis(c.wait_ms))
            },
            allow_fallback: c.allow_fallback,
        };
        let inner = if heap_memory(c.memory)? {
            PinnedPool::heap(config)
        } else {
            PinnedPool::best_available(config)
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { out.write(into_handle(cuzk_pool { inner })) };
        Ok(())
    })
}

/// Frees the handle. NULL is accepted. Memory still checked out (buffers, assignments, a
/// prover's reference) stays valid: the pool's memory is released when the last of them is
/// gone. Not to be called while another thread uses the same handle.
///
/// # Safety
/// `pool` is NULL or a pool from `cuzk_pool_new` not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_pool_free(pool: *mut cuzk_pool) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(pool) }))
}

/// Checks out a buffer of at least `bytes` bytes (page-aligned; the contents are
/// unspecified). On success `*out` is the buffer handle, `*out_ptr` its memory (valid until
/// the buffer is checked in or handed over), `*out_capacity` its usable size (≥ `bytes`) and
/// `*out_pinned` whether it is page-locked. `out_capacity` and `out_pinned` may be NULL.
/// Give it back with `cuzk_buffer_checkin`, or pass it to `cuzk_assignment_new_raw`.
/// Thread-safe.
///
/// # Safety
/// `pool` is a live pool; `out`, `out_ptr` writable; `out_capacity`, `out_pinned`, `err` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_pool_checkout(
    pool: *const cuzk_pool,
    bytes: usize,
    out: *mut *mut cuzk_buffer,
    out_ptr: *mut *mut u8,
    out_capacity: *mut usize,
    out_pinned: *mut bool,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let pool = unsafe { arg(pool, "pool") }?;
        let out = Out::new(out, "out")?;
        let out_ptr = Out::new(out_ptr, "out_ptr")?;
        let mut buffer = pool.inner.checkout(bytes)?;
        let ptr = buffer.as_mut_ptr();
        // SAFETY: all written pointers are non-NULL (checked or tested here) and writable per
        // the contract.
        unsafe {
            if !out_capacity.is_null() {
                out_capacity.write(buffer.capacity());
            }
            if !out_pinned.is_null() {
                out_pinned.write(buffer.is_pinned());
            }
            out_ptr.write(ptr);
            out.write(into_handle(cuzk_buffer { inner: buffer }));
        }
        Ok(())
    })
}

/// Returns a buffer to its pool. NULL is accepted. The buffer's memory must not be used
/// afterwards. Called by the buffer's one owner (no other thread may use it).
///
/// # Safety
/// `buffer` is NULL or a buffer from `cuzk_pool_checkout` not checked in or handed over.
#[no_mangle]
pub unsafe extern "C" fn cuzk_buffer_checkin(buffer: *mut cuzk_buffer) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(buffer) }))
}

/// Writes a snapshot of the pool's counters to `*out`. Thread-safe.
///
/// # Safety
/// `pool` is a live pool; `out` writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_pool_stats(
    pool: *const cuzk_pool,
    out: *mut cuzk_pool_statistics,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let pool = unsafe { arg(pool, "pool") }?;
        let out = Out::new(out, "out")?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(pool.inner.stats().into()) };
        Ok(())
    })
}

/// Frees idle buffers, largest first, until at most `target_idle_bytes` are idle; `*out_freed`
/// (may be NULL) gets the number of bytes freed. Thread-safe.
///
/// # Safety
/// `pool` is a live pool; `out_freed`, `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_pool_shrink(
    pool: *const cuzk_pool,
    target_idle_bytes: usize,
    out_freed: *mut usize,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let pool = unsafe { arg(pool, "pool") }?;
        let freed = pool.inner.shrink(target_idle_bytes);
        if !out_freed.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { out_freed.write(freed) };
        }
        Ok(())
    })
}
