//! The C ABI's enums and counts at their edges, called as a C program would: an enum argument
//! or field holding none of its constants, and counts past their bounds, are
//! `CUZK_STATUS_INVALID_ARGUMENT` naming the field (never undefined behaviour, an abort or a
//! hang); the Rust `EngineConfig` refuses the same counts with an error naming the field.
//! `tests/link/abi_edges.c` checks the same from C.

mod common;

use std::ffi::CString;
use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use cuzk::engine::{Engine, EngineBackend, EngineConfig};
use cuzk::ffi::engine::*;
use cuzk::ffi::filecoin::cuzk_filecoin_configure;
use cuzk::ffi::log::*;
use cuzk::ffi::params::*;
use cuzk::ffi::pool::*;
use cuzk::ffi::prover::*;
use cuzk::ffi::status::cuzk_status;
use cuzk::BackendChoice;

use common::ffi::{call, ok};

/// A CPU engine configuration that builds (heap memory, one synthesis worker).
fn cpu_config() -> cuzk_engine_config {
    let mut c = cuzk_engine_config_default();
    c.backend = CUZK_BACKEND_CPU;
    c.memory = CUZK_POOL_MEMORY_HEAP;
    c.synthesis_workers = 1;
    c.budget_bytes = 1 << 26;
    c
}

/// `config` is refused at once by both calls that take it, with a message naming `field`.
fn refused(config: &cuzk_engine_config, field: &str) {
    let start = Instant::now();
    let mut engine = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_engine_new(config, &mut engine, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "cuzk_engine_new, {field}: {msg}");
    assert!(msg.contains(field), "the message names `{field}`: {msg}");
    assert!(engine.is_null());
    let (status, msg) = call(|e| unsafe { cuzk_filecoin_configure(config, e) });
    assert_eq!(
        status,
        cuzk_status::InvalidArgument,
        "cuzk_filecoin_configure, {field}: {msg}"
    );
    assert!(msg.contains(field), "the message names `{field}`: {msg}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "refused at once, not after a start"
    );
}

/// A field set out of range and the name the refusal must carry.
type Edge = (&'static str, fn(&mut cuzk_engine_config));

#[test]
fn engine_config_enums_and_counts_out_of_range_are_invalid_arguments() {
    let edges: [Edge; 12] = [
        ("backend", |c| c.backend = 7),
        ("backend", |c| c.backend = u32::MAX),
        ("pacer", |c| c.pacer = 9),
        ("memory", |c| c.memory = 5),
        ("gpu_workers_per_backend", |c| c.gpu_workers_per_backend = u32::MAX),
        ("gpu_workers_per_backend", |c| {
            c.gpu_workers_per_backend = CUZK_MAX_GPU_WORKERS_PER_BACKEND + 1
        }),
        ("synthesis_workers", |c| c.synthesis_workers = u32::MAX),
        ("synthesis_workers", |c| {
            c.synthesis_workers = CUZK_MAX_SYNTHESIS_WORKERS + 1
        }),
        ("num_gpus", |c| {
            c.backend = CUZK_BACKEND_GPU;
            c.num_gpus = u32::MAX
        }),
        ("num_gpus", |c| c.num_gpus = CUZK_MAX_GPUS + 1),
        ("budget_timeout_ms", |c| c.budget_timeout_ms = u64::MAX),
        ("budget_timeout_ms", |c| c.budget_timeout_ms = CUZK_MAX_WAIT_MS + 1),
    ];
    for (field, set) in edges {
        let mut c = cpu_config();
        set(&mut c);
        refused(&c, field);
    }
    // The message lists the constants.
    let mut c = cpu_config();
    c.pacer = 2;
    let (_, msg) = call(|e| unsafe { cuzk_engine_new(&c, &mut null_mut(), e) });
    assert!(
        msg.contains("CUZK_PACER_MODE_PI (0)") && msg.contains("CUZK_PACER_MODE_BOUNDED_QUEUE (1)"),
        "{msg}"
    );
}

#[test]
fn engine_config_values_at_their_bounds_build() {
    let mut c = cpu_config();
    c.pacer = CUZK_PACER_MODE_BOUNDED_QUEUE;
    c.gpu_workers_per_backend = CUZK_MAX_GPU_WORKERS_PER_BACKEND;
    c.budget_timeout_ms = CUZK_MAX_WAIT_MS;
    let mut engine = null_mut();
    ok(|e| unsafe { cuzk_engine_new(&c, &mut engine, e) });
    let mut stats = cuzk_engine_statistics::default();
    ok(|e| unsafe { cuzk_engine_stats(engine, &mut stats, e) });
    assert_eq!(stats.gpu_workers, CUZK_MAX_GPU_WORKERS_PER_BACKEND);
    unsafe { cuzk_engine_free(engine) };
}

#[test]
fn the_rust_engine_config_refuses_counts_past_their_bounds_naming_them() {
    let cpu = || EngineConfig {
        synthesis_workers: 1,
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        budget_bytes: 1 << 26,
        ..EngineConfig::default()
    };
    let cases: [(&str, EngineConfig); 6] = [
        (
            "gpu_workers_per_backend",
            EngineConfig {
                gpu_workers_per_backend: usize::MAX,
                ..cpu()
            },
        ),
        (
            "gpu_workers_per_backend",
            EngineConfig {
                gpu_workers_per_backend: EngineConfig::MAX_GPU_WORKERS_PER_BACKEND + 1,
                ..cpu()
            },
        ),
        (
            "synthesis_workers",
            EngineConfig {
                synthesis_workers: usize::MAX,
                ..cpu()
            },
        ),
        (
            "backends",
            EngineConfig {
                backends: vec![EngineBackend::Choice(BackendChoice::Cpu); EngineConfig::MAX_BACKENDS + 1],
                ..cpu()
            },
        ),
        (
            "budget_timeout",
            EngineConfig {
                budget_timeout: Duration::MAX,
                ..cpu()
            },
        ),
        (
            "synthesis_workers",
            EngineConfig {
                synthesis_workers: 0,
                ..cpu()
            },
        ),
    ];
    for (field, config) in cases {
        let e = config.validate().expect_err(field);
        assert!(e.to_string().contains(field), "{field}: {e}");
        let e = Engine::new(config).expect_err(field);
        assert!(matches!(e, cuzk::Error::InvalidArgument(_)), "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    #[cfg(feature = "filecoin")]
    {
        let config = EngineConfig {
            gpu_workers_per_backend: usize::MAX,
            ..cpu()
        };
        let e = cuzk::filecoin::configure(config).expect_err("configure checks the counts");
        assert!(e.to_string().contains("gpu_workers_per_backend"), "{e}");
    }
    assert!(cpu().validate().is_ok());
}

#[test]
fn enum_arguments_out_of_range_are_invalid_arguments() {
    let mut prover = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_prover_new(7, 0, null(), &mut prover, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("backend") && msg.contains("CUZK_BACKEND_GPU (2)"), "{msg}");
    assert!(prover.is_null());

    // The check comes before the file is opened.
    let path = CString::new("/nonexistent/params").unwrap();
    let mut params = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_params_load(path.as_ptr(), 2, &mut params, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("check"), "{msg}");
    let (status, _) = call(|e| unsafe { cuzk_params_load(path.as_ptr(), CUZK_POINT_CHECK_SUBGROUP, &mut params, e) });
    assert_eq!(status, cuzk_status::ParamsIo, "an in-range value goes on to the file");

    let mut c = cuzk_pool_config_default();
    c.memory = 2;
    let mut pool = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_pool_new(&c, &mut pool, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("memory"), "{msg}");
    assert!(pool.is_null());

    let (status, msg) = call(|e| unsafe { cuzk_set_log_callback(None, null_mut(), 6, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(
        msg.contains("max_level") && msg.contains("CUZK_LOG_LEVEL_TRACE (5)"),
        "{msg}"
    );
    ok(|e| unsafe { cuzk_set_log_callback(None, null_mut(), CUZK_LOG_LEVEL_TRACE, e) });
}

#[test]
fn a_pool_wait_past_what_the_clock_holds_is_refused_at_new() {
    // Before: the pool was made, and every checkout panicked computing its deadline.
    let mut c = cuzk_pool_config_default();
    c.memory = CUZK_POOL_MEMORY_HEAP;
    c.wait_ms = u64::MAX;
    let mut pool = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_pool_new(&c, &mut pool, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("wait_ms"), "{msg}");
    c.wait_ms = CUZK_MAX_WAIT_MS;
    ok(|e| unsafe { cuzk_pool_new(&c, &mut pool, e) });
    let (mut buf, mut ptr) = (null_mut(), null_mut());
    ok(|e| unsafe { cuzk_pool_checkout(pool, 64, &mut buf, &mut ptr, null_mut(), null_mut(), e) });
    unsafe {
        cuzk_buffer_checkin(buf);
        cuzk_pool_free(pool);
    }
}
