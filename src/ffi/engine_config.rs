//! `cuzk_engine_config`: how an engine is built through the ABI, and its translation into an
//! [`EngineConfig`]: enum fields decoded from their integers, counts checked against their
//! `CUZK_MAX_*` bounds before anything is sized by them (`cuzk_engine_new` and
//! `cuzk_filecoin_configure` share it).

use std::time::Duration;

use super::boundary::{call_value, AbiResult};
use super::pool::{cuzk_pool_memory, heap_memory, CUZK_MAX_WAIT_MS, CUZK_POOL_MEMORY_BEST_AVAILABLE};
use super::prover::{backend_choice, cuzk_backend, CUZK_BACKEND_AUTO};
use super::status::{enum_arg, AbiError, Named};
use crate::engine::{EngineBackend, EngineConfig, PacerMode, PiConfig};
use crate::pool::HeapAllocator;
use crate::prover::BackendChoice;

/// How the engine paces dispatches: one of the `CUZK_PACER_MODE_*` values; any other value
/// is refused with `CUZK_STATUS_INVALID_ARGUMENT`.
#[allow(non_camel_case_types)]
pub type cuzk_pacer_mode = u32;
/// A PI controller keeps `pacer_depth` synthesized partitions waiting for a GPU.
pub const CUZK_PACER_MODE_PI: cuzk_pacer_mode = 0;
/// At most `pacer_depth` partitions in synthesis or waiting.
pub const CUZK_PACER_MODE_BOUNDED_QUEUE: cuzk_pacer_mode = 1;

/// The most GPUs an engine proves on (`num_gpus`): more than one host holds.
pub const CUZK_MAX_GPUS: u32 = 64;
/// The most GPU workers per backend (`gpu_workers_per_backend`).
pub const CUZK_MAX_GPU_WORKERS_PER_BACKEND: u32 = 16;
/// The most synthesis threads (`synthesis_workers`).
pub const CUZK_MAX_SYNTHESIS_WORKERS: u32 = 1024;

/// How an engine is built. Start from `cuzk_engine_config_default` and change fields; a 0
/// means "the default" where a field says so. `cuzk_engine_new` and `cuzk_filecoin_configure`
/// refuse, with `CUZK_STATUS_INVALID_ARGUMENT` and a message naming the field, an enum field
/// holding none of its constants and a count past its `CUZK_MAX_*` bound.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_engine_config {
    /// Threads that synthesize (0: the host's cores; at most `CUZK_MAX_SYNTHESIS_WORKERS`).
    /// Through the ABI jobs arrive synthesized, so these threads are idle unless Rust code
    /// shares the engine.
    pub synthesis_workers: u32,
    /// GPU worker threads per backend (0: 1; at most `CUZK_MAX_GPU_WORKERS_PER_BACKEND`).
    pub gpu_workers_per_backend: u32,
    /// The backend (a `CUZK_BACKEND_*` value): `CUZK_BACKEND_GPU` proves on GPUs `first_gpu` ..
    /// `first_gpu + num_gpus − 1`.
    pub backend: cuzk_backend,
    /// The first GPU (with `CUZK_BACKEND_GPU`).
    pub first_gpu: u32,
    /// How many GPUs from `first_gpu` (with `CUZK_BACKEND_GPU`; 0: 1; at most `CUZK_MAX_GPUS`).
    pub num_gpus: u32,
    /// The memory budget for host bytes: partitions in flight, synthesis in flight, the
    /// parameter sets the engine holds and the pool's idle buffers; also the pool's cap (0:
    /// half the host's memory).
    pub budget_bytes: u64,
    /// How long a partition waits for room in the budget before its job fails (0: 600 000 ms;
    /// at most `CUZK_MAX_WAIT_MS`).
    pub budget_timeout_ms: u64,
    /// The pacer's mode (a `CUZK_PACER_MODE_*` value).
    pub pacer: cuzk_pacer_mode,
    /// The PI target depth or the bounded queue's depth (0: 2 for PI, 4 for the queue).
    pub pacer_depth: u32,
    /// The pool's memory (a `CUZK_POOL_MEMORY_*` value).
    pub memory: cuzk_pool_memory,
    /// Nonzero: circuit partitions (the Filecoin calls' jobs) are synthesized in full, nothing
    /// is recorded. 0: the default — the witness path (the first partition of a circuit type
    /// and shape records its constraints, later ones compute only a compact witness; same
    /// bytes), unless the environment has `CUZK_WITNESS_PATH=0`. Jobs of assignments arrive
    /// synthesized either way.
    pub witness_path_off: u32,
    /// Nonzero: no native witness generator is used; every witness-path partition's witness
    /// is computed by its circuit's gadgets. 0: the default — a Filecoin partition (PoRep C2,
    /// SnapDeals, Winning and Window PoSt) has its witness written by cuzk's native generator once that
    /// generator has matched the gadgets on the compiled circuit (same bytes, faster), unless
    /// the environment has `CUZK_NATIVE_WITNESS=0`. Without the witness path, none is used.
    pub native_witness_off: u32,
    /// Nonzero: the parameter sets the Filecoin calls load are kept on the GPUs without their
    /// host copy once their first proof uploads them (a 32 GiB PoRep set: ~45 GiB of host
    /// memory less); the CPU, or a GPU too small to hold a set, keeps its host copy (with a
    /// warning in the log). A lost GPU loses the sets it held. 0: the default — the host copy
    /// stays.
    pub params_on_device: u32,
}

/// The documented defaults. Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_engine_config_default() -> cuzk_engine_config {
    call_value(default_config(), default_config)
}

fn default_config() -> cuzk_engine_config {
    cuzk_engine_config {
        synthesis_workers: 0,
        gpu_workers_per_backend: 0,
        backend: CUZK_BACKEND_AUTO,
        first_gpu: 0,
        num_gpus: 0,
        budget_bytes: 0,
        budget_timeout_ms: 0,
        pacer: CUZK_PACER_MODE_PI,
        pacer_depth: 0,
        memory: CUZK_POOL_MEMORY_BEST_AVAILABLE,
        witness_path_off: 0,
        native_witness_off: 0,
        params_on_device: 0,
    }
}

/// The engine configuration `c` asks for, or why it cannot be one: an enum field holding none
/// of its constants, a count past its bound (checked here, before anything is sized by it).
pub(crate) fn engine_config(c: &cuzk_engine_config) -> AbiResult<EngineConfig> {
    let default = EngineConfig::default();
    let nonzero = |v: u32, d: usize| if v == 0 { d } else { v as usize };
    let bounded = |field: &str, v: u32, max: u32| {
        if v > max {
            Err(AbiError::invalid(format!(
                "`{field}` must be at most {max} (0: the default), found {v}"
            )))
        } else {
            Ok(v)
        }
    };
    bounded("synthesis_workers", c.synthesis_workers, CUZK_MAX_SYNTHESIS_WORKERS)?;
    bounded(
        "gpu_workers_per_backend",
        c.gpu_workers_per_backend,
        CUZK_MAX_GPU_WORKERS_PER_BACKEND,
    )?;
    bounded("num_gpus", c.num_gpus, CUZK_MAX_GPUS)?;
    if c.budget_timeout_ms > CUZK_MAX_WAIT_MS {
        return Err(AbiError::invalid(format!(
            "`budget_timeout_ms` must be at most {CUZK_MAX_WAIT_MS} (30 days), found {}",
            c.budget_timeout_ms
        )));
    }
    let first = backend_choice("backend", c.backend, c.first_gpu as usize)?;
    let backends = match first {
        BackendChoice::Gpu(g) => (0..nonzero(c.num_gpus, 1))
            .map(|i| EngineBackend::Choice(BackendChoice::Gpu(g + i)))
            .collect(),
        other => vec![EngineBackend::Choice(other)],
    };
    type MakePacer = fn(usize) -> PacerMode;
    let pacer_kinds: [Named<MakePacer>; 2] = [
        ("CUZK_PACER_MODE_PI", |depth| {
            let mut pi = PiConfig::default();
            if depth > 0 {
                pi.target_depth = depth;
            }
            PacerMode::Pi(pi)
        }),
        ("CUZK_PACER_MODE_BOUNDED_QUEUE", |depth| PacerMode::BoundedQueue {
            depth: if depth == 0 { 4 } else { depth },
        }),
    ];
    let pacer = enum_arg("pacer", c.pacer, &pacer_kinds)?(c.pacer_depth as usize);
    let config = EngineConfig {
        synthesis_workers: nonzero(c.synthesis_workers, default.synthesis_workers),
        pacer,
        budget_bytes: if c.budget_bytes == 0 {
            default.budget_bytes
        } else {
            usize::try_from(c.budget_bytes).unwrap_or(usize::MAX)
        },
        budget_timeout: if c.budget_timeout_ms == 0 {
            default.budget_timeout
        } else {
            Duration::from_millis(c.budget_timeout_ms)
        },
        gpu_workers_per_backend: nonzero(c.gpu_workers_per_backend, 1),
        backends,
        pool_allocator: if heap_memory(c.memory)? {
            Some(Box::new(HeapAllocator))
        } else {
            None
        },
        witness_path: c.witness_path_off == 0 && default.witness_path,
        native_witness: c.native_witness_off == 0 && default.native_witness,
        params_on_device: c.params_on_device != 0,
        ..default
    };
    config.validate()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_witness_path_is_the_default_unless_the_config_turns_it_off() {
        let mut c = default_config();
        assert_eq!(c.witness_path_off, 0);
        assert_eq!(
            engine_config(&c).unwrap().witness_path,
            EngineConfig::default().witness_path
        );
        c.witness_path_off = 1;
        assert!(!engine_config(&c).unwrap().witness_path);
    }

    #[test]
    fn native_generators_are_the_default_unless_the_config_turns_them_off() {
        let mut c = default_config();
        assert_eq!(c.native_witness_off, 0);
        assert_eq!(
            engine_config(&c).unwrap().native_witness,
            EngineConfig::default().native_witness
        );
        c.native_witness_off = 1;
        let config = engine_config(&c).unwrap();
        assert!(!config.native_witness);
        assert_eq!(config.witness_path, EngineConfig::default().witness_path);
    }

    #[test]
    fn parameters_stay_on_the_host_unless_the_config_keeps_them_on_the_device() {
        let mut c = default_config();
        assert!(!engine_config(&c).unwrap().params_on_device);
        c.params_on_device = 1;
        assert!(engine_config(&c).unwrap().params_on_device);
    }

    #[test]
    fn the_headers_bounds_are_the_engines() {
        assert_eq!(CUZK_MAX_GPUS as usize, EngineConfig::MAX_BACKENDS);
        assert_eq!(
            CUZK_MAX_GPU_WORKERS_PER_BACKEND as usize,
            EngineConfig::MAX_GPU_WORKERS_PER_BACKEND
        );
        assert_eq!(CUZK_MAX_SYNTHESIS_WORKERS as usize, EngineConfig::MAX_SYNTHESIS_WORKERS);
        assert_eq!(
            Duration::from_millis(CUZK_MAX_WAIT_MS),
            EngineConfig::MAX_BUDGET_TIMEOUT
        );
    }
}
