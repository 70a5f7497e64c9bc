//! The C ABI's enums and counts at their edges, called as a C program would: an enum argument
//! or field holding none of its constants, and counts past their bounds, are
//! `CUZK_STATUS_INVALID_ARGUMENT` naming the field (never undefined behaviour, an abort or a
//! hang); the Rust `EngineConfig` refuses the same counts with an error naming the field.
//! Counts the header allows but memory cannot hold (a constraint system's constraints and
//! variables, the development setup of one) cost nothing until used and are then
//! `CUZK_STATUS_ALLOCATION`, never an abort; a Window PoSt's vanilla proofs come in sector
//! order. `tests/link/abi_edges_jobs.c` checks the same from C.

mod common;

use std::ffi::CString;
use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use cuzk::engine::{Engine, EngineBackend, EngineConfig};
use cuzk::ffi::assignment::*;
use cuzk::ffi::engine::*;
use cuzk::ffi::filecoin::cuzk_filecoin_configure;
use cuzk::ffi::log::*;
use cuzk::ffi::params::*;
use cuzk::ffi::pool::*;
use cuzk::ffi::prover::*;
use cuzk::ffi::status::cuzk_status;
use cuzk::BackendChoice;

use common::ffi::{call, ok, term};

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

/// The host's memory and swap in bytes (`/proc/meminfo`), where it can be read.
fn host_memory_and_swap() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<u64> {
        info.lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) * 1024)
}

/// A constraint system of these counts and terms (A = B = `ab`, C empty), or the refusal.
fn r1cs(public: usize, aux: usize, constraints: usize, ab: &[cuzk_r1cs_term]) -> (*mut cuzk_r1cs, cuzk_status, String) {
    let mut r1cs = null_mut();
    let (status, msg) = call(|e| unsafe {
        cuzk_r1cs_new(
            public,
            aux,
            constraints,
            ab.as_ptr(),
            ab.len(),
            ab.as_ptr(),
            ab.len(),
            null(),
            0,
            &mut r1cs,
            e,
        )
    });
    (r1cs, status, msg)
}

/// Before: `cuzk_r1cs_new` allocated a row per constraint, and 2^30 or 2^32 − 1 of them
/// aborted the process (SIGABRT). The counts cost nothing now: only terms take memory.
#[test]
fn a_constraint_system_of_2_to_the_32_constraints_without_terms_costs_nothing() {
    let start = Instant::now();
    for constraints in [1usize << 30, u32::MAX as usize] {
        let (r, status, msg) = r1cs(0, 0, constraints, &[]);
        assert_eq!(status, cuzk_status::Ok, "{constraints} constraints: {msg}");
        // Every constraint without terms holds (0 · 0 = 0), found without walking them.
        let (mut satisfied, mut first) = (false, 0usize);
        ok(|e| unsafe { cuzk_r1cs_is_satisfied(r, null(), 0, null(), 0, &mut satisfied, &mut first, e) });
        assert!(satisfied);
        assert_eq!(first, constraints, "all hold: the number of constraints");
        unsafe { cuzk_r1cs_free(r) };
    }
    // One term in the last row of 2^32 − 1: 1 · 1 ≠ 0 there, and only there.
    let last = u32::MAX - 1;
    let (r, status, msg) = r1cs(0, 0, u32::MAX as usize, &[term(last, 0, 1)]);
    assert_eq!(status, cuzk_status::Ok, "{msg}");
    let (mut satisfied, mut first) = (true, 0usize);
    ok(|e| unsafe { cuzk_r1cs_is_satisfied(r, null(), 0, null(), 0, &mut satisfied, &mut first, e) });
    assert!(!satisfied);
    assert_eq!(first, last as usize);
    unsafe { cuzk_r1cs_free(r) };
    // The same with 2^32 − 1 variables (the one, no public input, 2^32 − 2 aux).
    let (r, status, msg) = r1cs(0, u32::MAX as usize - 1, u32::MAX as usize, &[term(last, last, 1)]);
    assert_eq!(status, cuzk_status::Ok, "{msg}");
    unsafe { cuzk_r1cs_free(r) };
    assert!(start.elapsed() < Duration::from_secs(10), "no walk over the counts");

    // Past the bounds: refused, naming what.
    for (public, aux, constraints, what) in [
        (0, 0, 1usize << 32, "constraints"),
        (0, u32::MAX as usize, 1, "variables"),
        (usize::MAX, 1, 1, "variables"),
    ] {
        let (r, status, msg) = r1cs(public, aux, constraints, &[]);
        assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
        assert!(msg.contains(what), "{msg}");
        assert!(r.is_null());
    }
    // A term past the counts is refused as before.
    let (_, status, msg) = r1cs(0, 0, 4, &[term(4, 0, 1)]);
    assert_eq!(status, cuzk_status::InvalidArgument);
    assert!(msg.contains("constraint 4 out of range (4 constraints)"), "{msg}");
}

/// Before: the development setup of a constraint system with 2^32 − 2 aux variables (or
/// 2^32 − 1 constraints) allocated its arrays infallibly and aborted. Parameters that cannot
/// fit in the host's memory are `CUZK_STATUS_ALLOCATION` now, at once; a domain past the
/// field's 2^32 is an invalid argument.
#[test]
fn development_parameters_larger_than_the_host_are_an_allocation_status() {
    let big = u32::MAX as usize;
    let host = host_memory_and_swap();
    // (public, aux, constraints, the parameters' bytes at least: 96 per H, IC, L, A point).
    let cases = [
        (0, big - 1, 1, 96 * (1 + (1u64 << 32))),
        (0, 0, big, 96 * (1u64 << 32)),
        (0, big - 1, big, 96 * (2u64 << 32)),
    ];
    for (public, aux, constraints, at_least) in cases {
        let what = format!("{public} public, {aux} aux, {constraints} constraints");
        if host.map_or(true, |h| h >= at_least) {
            eprintln!("{what}: skipped: the host's memory ({host:?} bytes) could hold {at_least}");
            continue;
        }
        let (r, status, msg) = r1cs(public, aux, constraints, &[]);
        assert_eq!(status, cuzk_status::Ok, "{what}: {msg}");
        let start = Instant::now();
        let mut params = null_mut();
        let (status, msg) = call(|e| unsafe { cuzk_params_generate_insecure_for_development(r, 1, &mut params, e) });
        assert_eq!(status, cuzk_status::Allocation, "{what}: {msg}");
        assert!(msg.contains("memory and swap"), "{what}: {msg}");
        assert!(params.is_null());
        assert!(start.elapsed() < Duration::from_secs(10), "{what}: refused at once");
        unsafe { cuzk_r1cs_free(r) };
    }
    // 2^32 − 1 constraints and an input's constraint: a domain of 2^33.
    let (r, status, msg) = r1cs(1, 0, big, &[]);
    assert_eq!(status, cuzk_status::Ok, "{msg}");
    let mut params = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_params_generate_insecure_for_development(r, 1, &mut params, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("domain beyond the field's 2^32"), "{msg}");
    unsafe { cuzk_r1cs_free(r) };
}

/// A witness of 2^30 constraints into a pool of 64 MiB: the pool's refusal, not an abort.
#[test]
fn an_assignment_of_2_to_the_30_constraints_is_refused_by_its_pool() {
    let (r, status, msg) = r1cs(0, 0, 1 << 30, &[]);
    assert_eq!(status, cuzk_status::Ok, "{msg}");
    let mut c = cuzk_pool_config_default();
    c.memory = CUZK_POOL_MEMORY_HEAP;
    c.max_bytes = 64 << 20;
    c.wait_ms = 0;
    let mut pool = null_mut();
    ok(|e| unsafe { cuzk_pool_new(&c, &mut pool, e) });
    let mut asg = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_assignment_new_r1cs(r, pool, null(), 0, null(), 0, &mut asg, e) });
    assert!(
        matches!(status, cuzk_status::PoolExhausted | cuzk_status::Allocation),
        "{status:?}: {msg}"
    );
    assert!(asg.is_null());
    unsafe {
        cuzk_pool_free(pool);
        cuzk_r1cs_free(r);
    }
}

/// A Window PoSt's vanilla proofs out of ascending sector order (or a sector twice) are
/// refused before anything is built, naming the first out of order: before, they were proved
/// in the order given, as public inputs the chain's verifier never reads. The vanilla proofs
/// here are the smallest bincode `FallbackPoStSectorProof`s (a sector id, a zero comm_r, no
/// sector proofs): enough to be read, not to be proved.
#[cfg(feature = "filecoin")]
#[test]
fn window_post_vanilla_proofs_out_of_sector_order_are_refused() {
    use cuzk::ffi::bytes::{cuzk_byte_slice, cuzk_bytes};
    use cuzk::ffi::filecoin::*;

    let vanilla = |id: u64| -> Vec<u8> { [&id.to_le_bytes()[..], &[0u8; 32], &0u64.to_le_bytes()].concat() };
    let window_2kib = 10; // abi.RegisteredPoStProof StackedDrgWindow2KiBV1_2
    let submit = |ids: &[u64], partition: Option<u64>| -> (cuzk_status, String) {
        let proofs: Vec<Vec<u8>> = ids.iter().map(|&id| vanilla(id)).collect();
        let slices: Vec<cuzk_byte_slice> = proofs
            .iter()
            .map(|p| cuzk_byte_slice {
                data: p.as_ptr(),
                len: p.len(),
            })
            .collect();
        let mut out = cuzk_bytes {
            data: null_mut(),
            len: 0,
        };
        let (randomness, prover_id) = ([1u8; 32], [0u8; 32]);
        let r = call(|e| unsafe {
            match partition {
                None => cuzk_filecoin_window_post(
                    null(),
                    CUZK_PRIORITY_DEFAULT,
                    window_2kib,
                    randomness.as_ptr(),
                    prover_id.as_ptr(),
                    slices.as_ptr(),
                    slices.len(),
                    &mut out,
                    e,
                ),
                Some(k) => cuzk_filecoin_window_post_partition(
                    null(),
                    CUZK_PRIORITY_DEFAULT,
                    window_2kib,
                    randomness.as_ptr(),
                    prover_id.as_ptr(),
                    slices.as_ptr(),
                    slices.len(),
                    k,
                    &mut out,
                    e,
                ),
            }
        });
        assert!(out.data.is_null(), "nothing written on failure");
        r
    };
    for (ids, partition, first) in [
        (
            &[102, 100, 101][..],
            None,
            "vanilla proof 1 is of sector 100, after sector 102",
        ),
        (
            &[100, 101, 101],
            None,
            "vanilla proof 2 is of sector 101, after sector 101",
        ),
        (&[7, 5], Some(0), "vanilla proof 1 is of sector 5, after sector 7"),
    ] {
        let (status, msg) = submit(ids, partition);
        assert_eq!(status, cuzk_status::InvalidArgument, "{ids:?}: {msg}");
        assert!(
            msg.contains(first) && msg.contains("ascending sector number order"),
            "{ids:?}: {msg}"
        );
    }
    // In order they are read and get as far as filecoin-proofs, which finds them empty.
    for (ids, partition) in [(&[100, 101, 102][..], None), (&[5, 7], Some(0))] {
        let (status, msg) = submit(ids, partition);
        assert_ne!(status, cuzk_status::Ok, "{ids:?}");
        assert!(!msg.contains("ascending"), "{ids:?}: {msg}");
    }
}
