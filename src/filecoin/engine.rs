//! The process-wide engine every Filecoin proof runs on (unless a call names another): made at
//! the first proof from [`configure`]'s configuration, or else from the defaults and the
//! `CUZK_FILECOIN_*` environment variables, and kept for the life of the process.

use std::sync::{Mutex, OnceLock};

use crate::engine::{Engine, EngineBackend, EngineConfig};
use crate::error::{Error, Result};
use crate::prover::BackendChoice;

/// The GPUs to prove on: `cpu`, `auto` (GPU 0 when usable, else the CPU: the default), or
/// device numbers such as `0,1` (one set of GPU workers each).
pub const ENV_GPUS: &str = "CUZK_FILECOIN_GPUS";
/// The host memory budget: a byte size such as `103079215104`, `96G`, `96GB` or `96GiB` (the
/// rule of [`crate::byte_size`]: K, M, G, T are binary multiples, any case), above 0. Default:
/// three quarters of the host's memory (Filecoin's parameter sets, which the budget counts, are
/// large).
pub const ENV_BUDGET: &str = "CUZK_FILECOIN_BUDGET";
/// Synthesis threads (one partition each). Default: the host's cores.
pub const ENV_SYNTHESIS_THREADS: &str = "CUZK_FILECOIN_SYNTHESIS_THREADS";

/// `1` keeps the Filecoin parameter sets on the GPUs without their host copy
/// ([`EngineConfig::params_on_device`]); `0` (the default) keeps the host copy.
pub const ENV_PARAMS_ON_DEVICE: &str = "CUZK_FILECOIN_PARAMS_ON_DEVICE";

/// A directory to keep the compiled circuits in across restarts
/// ([`EngineConfig::compiled_dir`]): the first proof of a kind after a restart then reads its
/// circuit (GiBs at 32 GiB) instead of recording it by a full synthesis. Default: memory only.
pub const ENV_COMPILED_DIR: &str = "CUZK_FILECOIN_COMPILED_DIR";

static ENGINE: OnceLock<Engine> = OnceLock::new();
/// The configuration [`configure`] left for the first proof; held while the engine starts.
static PENDING: Mutex<Option<EngineConfig>> = Mutex::new(None);

/// Sets the configuration of the process-wide Filecoin engine, which starts with it at the
/// first proof that uses it (the `CUZK_FILECOIN_*` variables are then not read). A second call
/// before that replaces the first. The environment's configuration makes Winning PoSt urgent
/// ([`EngineConfig::urgent_priority`] = [`PRIORITY_WINNING_POST`](super::PRIORITY_WINNING_POST):
/// it goes past the pacer and the next free GPU waits for it); `EngineConfig::default()` makes
/// no job urgent — set that field to keep it.
///
/// # Errors
/// [`Error::InvalidArgument`] once the engine has started (its configuration cannot change),
/// or for a count out of [`EngineConfig::validate`]'s bounds.
pub fn configure(config: EngineConfig) -> Result<()> {
    config.validate()?;
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    if ENGINE.get().is_some() {
        return Err(Error::InvalidArgument(
            "the Filecoin engine has started already: configure it before the first proof".into(),
        ));
    }
    *pending = Some(config);
    Ok(())
}

/// The process-wide Filecoin engine, started now if it is not yet (concurrent first callers
/// wait for one start).
///
/// # Errors
/// A bad `CUZK_FILECOIN_*` value ([`Error::InvalidArgument`], naming it), or
/// [`Engine::new`]'s errors. A failed start consumes [`configure`]'s configuration (configure
/// again, or the next call starts from the environment) and is not remembered.
pub fn engine() -> Result<&'static Engine> {
    if let Some(engine) = ENGINE.get() {
        return Ok(engine);
    }
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(engine) = ENGINE.get() {
        return Ok(engine);
    }
    let config = match pending.take() {
        Some(config) => config,
        None => config_from_env(&|name| std::env::var(name).ok())?,
    };
    log::info!("filecoin: starting the process-wide engine: {config:?}");
    let engine = Engine::new(config)?;
    Ok(ENGINE.get_or_init(|| engine))
}

/// Whether the process-wide engine has started.
pub fn engine_started() -> bool {
    ENGINE.get().is_some()
}

/// The default configuration with the `CUZK_FILECOIN_*` variables `var` returns applied.
pub(crate) fn config_from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<EngineConfig> {
    let bad = |name: &str, value: &str, expected: &str| {
        Error::InvalidArgument(format!("{name}={value:?}: expected {expected}"))
    };
    let mut config = EngineConfig {
        // Winning PoSt must land within an epoch: it goes past the pacer and the next free GPU
        // waits for it (EngineConfig::urgent_priority).
        urgent_priority: Some(super::PRIORITY_WINNING_POST),
        ..EngineConfig::default()
    };
    if let Some(memory) = host_memory() {
        config.budget_bytes = memory / 4 * 3;
    }
    if let Some(v) = var(ENV_GPUS) {
        config.backends = parse_gpus(&v).ok_or_else(|| bad(ENV_GPUS, &v, "cpu, auto or device numbers such as 0,1"))?;
    }
    if let Some(v) = var(ENV_BUDGET) {
        config.budget_bytes = match crate::byte_size::parse(&v) {
            Ok(0) => return Err(bad(ENV_BUDGET, &v, "a byte size above 0, such as 96GiB")),
            Ok(b) => b,
            Err(e) => return Err(Error::InvalidArgument(format!("{ENV_BUDGET}={v:?}: {e}"))),
        };
    }
    if let Some(v) = var(ENV_SYNTHESIS_THREADS) {
        config.synthesis_workers = v
            .trim()
            .parse()
            .ok()
            .filter(|&n: &usize| n > 0)
            .ok_or_else(|| bad(ENV_SYNTHESIS_THREADS, &v, "a number of threads, at least 1"))?;
    }
    if let Some(v) = var(ENV_COMPILED_DIR) {
        if v.trim().is_empty() {
            return Err(bad(ENV_COMPILED_DIR, &v, "a directory"));
        }
        config.compiled_dir = Some(v.trim().into());
    }
    if let Some(v) = var(ENV_PARAMS_ON_DEVICE) {
        config.params_on_device = match v.trim() {
            "1" | "true" | "on" => true,
            "0" | "false" | "off" | "" => false,
            _ => return Err(bad(ENV_PARAMS_ON_DEVICE, &v, "1 or 0")),
        };
    }
    Ok(config)
}

fn parse_gpus(v: &str) -> Option<Vec<EngineBackend>> {
    match v.trim() {
        "cpu" => return Some(vec![EngineBackend::Choice(BackendChoice::Cpu)]),
        "auto" | "" => return Some(vec![EngineBackend::Choice(BackendChoice::Auto)]),
        _ => {}
    }
    let devices = v
        .split(',')
        .map(|d| d.trim().parse::<usize>().ok())
        .collect::<Option<Vec<_>>>()?;
    let mut seen = std::collections::HashSet::new();
    if !devices.iter().all(|d| seen.insert(*d)) {
        return None;
    }
    Some(
        devices
            .into_iter()
            .map(|d| EngineBackend::Choice(BackendChoice::Gpu(d)))
            .collect(),
    )
}

/// The host's memory in bytes (Linux `/proc/meminfo`).
fn host_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environment_sets_gpus_budget_and_threads() {
        let c = config_from_env(&env(&[
            (ENV_GPUS, "0, 2"),
            (ENV_BUDGET, "96GiB"),
            (ENV_SYNTHESIS_THREADS, "3"),
            (ENV_PARAMS_ON_DEVICE, "1"),
            (ENV_COMPILED_DIR, "/var/lib/cuzk/compiled"),
        ]))
        .unwrap();
        assert!(c.params_on_device);
        assert_eq!(
            c.compiled_dir.as_deref(),
            Some(std::path::Path::new("/var/lib/cuzk/compiled"))
        );
        let gpus: Vec<String> = c.backends.iter().map(|b| format!("{b:?}")).collect();
        assert_eq!(gpus, ["Choice(Gpu(0))", "Choice(Gpu(2))"]);
        assert_eq!(c.budget_bytes, 96 << 30);
        assert_eq!(c.synthesis_workers, 3);
        let c = config_from_env(&env(&[(ENV_GPUS, "cpu"), (ENV_BUDGET, "1234")])).unwrap();
        assert_eq!(format!("{:?}", c.backends), "[Choice(Cpu)]");
        assert_eq!(c.budget_bytes, 1234);
        let c = config_from_env(&env(&[])).unwrap();
        assert_eq!(format!("{:?}", c.backends), "[Choice(Auto)]");
        assert!(!c.params_on_device, "off by default");
        assert_eq!(c.compiled_dir, None, "memory only by default");
        assert!(
            !config_from_env(&env(&[(ENV_PARAMS_ON_DEVICE, "0")]))
                .unwrap()
                .params_on_device
        );
        // Only Winning PoSt is urgent.
        let urgent = c.urgent_priority.expect("Winning PoSt is urgent");
        assert!(urgent <= super::super::PRIORITY_WINNING_POST && urgent > super::super::PRIORITY_WINDOW_POST);
        if let Some(m) = host_memory() {
            assert_eq!(c.budget_bytes, m / 4 * 3);
        }
    }

    /// The budget is read by the one byte-size rule (`crate::byte_size`): what the GPU limit
    /// accepted (`24G`, `24GB`, any case) now means the same here, in binary multiples.
    #[test]
    fn the_budget_takes_every_spelling_of_a_byte_size() {
        for (value, bytes) in [
            ("96GiB", 96usize << 30),
            ("96G", 96 << 30),
            ("96GB", 96 << 30),
            ("96 gb", 96 << 30),
            (" 12 GB ", 12 << 30),
            ("512MiB", 512 << 20),
            ("1T", 1 << 40),
            ("1234", 1234),
        ] {
            let c = config_from_env(&env(&[(ENV_BUDGET, value)])).unwrap();
            assert_eq!(c.budget_bytes, bytes, "{value:?}");
        }
        let msg = config_from_env(&env(&[(ENV_BUDGET, "12 XB")])).unwrap_err().to_string();
        assert!(
            msg.contains(ENV_BUDGET) && msg.contains("unknown unit \"XB\"") && msg.contains("24GiB"),
            "{msg}"
        );
        let msg = config_from_env(&env(&[(ENV_BUDGET, "0")])).unwrap_err().to_string();
        assert!(msg.contains("above 0"), "{msg}");
    }

    #[test]
    fn bad_values_are_refused_by_name() {
        for (name, value) in [
            (ENV_GPUS, "gpu0"),
            (ENV_GPUS, "0,0"),
            (ENV_BUDGET, "12 XB"),
            (ENV_BUDGET, "1.5GiB"),
            (ENV_BUDGET, "0"),
            (ENV_BUDGET, "0GiB"),
            (ENV_BUDGET, "99999999999TiB"),
            (ENV_SYNTHESIS_THREADS, "0"),
            (ENV_SYNTHESIS_THREADS, "many"),
            (ENV_PARAMS_ON_DEVICE, "yes please"),
            (ENV_COMPILED_DIR, " "),
        ] {
            let err = config_from_env(&env(&[(name, value)])).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(name) && msg.contains(value), "{msg}");
        }
    }
}
