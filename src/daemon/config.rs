//! The daemon's configuration: flags, then environment variables, then a TOML file
//! (`--config`), then the defaults; and the engine configuration it makes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::EngineConfig;
use crate::error::{Error, Result};

/// Where Curio connects by default.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9820";
/// filecoin-proofs' parameter directory when `FIL_PROOFS_PARAMETER_CACHE` is not set.
pub const DEFAULT_PARAM_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// cuzk-daemon: Curio's proving daemon (`cuzk.v1.ProvingEngine` over gRPC) on cuzk's engine.
///
/// Point Curio's `[Cuzk] Address` at the listen address. Each setting is taken from its flag,
/// else its environment variable, else the `--config` TOML file (same names, with `_` for
/// `-`), else the default.
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(name = "cuzk-daemon", version)]
pub struct Args {
    /// A TOML file with any of the settings below (e.g. `listen = "unix:///run/curio/cuzk.sock"`).
    #[arg(long, env = "CUZK_DAEMON_CONFIG")]
    pub config: Option<PathBuf>,
    /// `host:port` (default 127.0.0.1:9820) or `unix:///path/to.sock` (created owner-only; a
    /// stale socket file is replaced). The protocol has no authentication: a non-loopback
    /// address is served only when given, with a warning.
    #[arg(long, env = "CUZK_DAEMON_LISTEN")]
    pub listen: Option<String>,
    /// `host:port` to serve the Prometheus text of GetMetrics on, over HTTP at `/metrics`, for
    /// scrapers (e.g. 127.0.0.1:9821). Default: off.
    #[arg(long, env = "CUZK_DAEMON_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// `error`, `warn`, `info` (default), `debug` or `trace`; `RUST_LOG` syntax also works.
    #[arg(long, env = "CUZK_DAEMON_LOG_LEVEL")]
    pub log_level: Option<String>,
    /// The directory of the Groth16 parameter files (`curio fetch-params` fills it). Default:
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters.
    #[arg(long, env = "FIL_PROOFS_PARAMETER_CACHE")]
    pub param_dir: Option<PathBuf>,
    /// Host memory the engine may use: `auto` (three quarters of the host's, the default) or
    /// bytes (`103079215104`, `96GiB`).
    #[arg(long, env = "CUZK_DAEMON_MEMORY_BUDGET")]
    pub memory_budget: Option<String>,
    /// GPUs to prove on: `auto` (GPU 0 when usable, else the CPU; the default), `cpu`, or
    /// device numbers `0,1`.
    #[arg(long, env = "CUZK_DAEMON_GPUS")]
    pub gpus: Option<String>,
    /// Synthesis threads (default: the host's cores).
    #[arg(long, env = "CUZK_DAEMON_SYNTHESIS_THREADS")]
    pub synthesis_threads: Option<usize>,
    /// Keep each parameter set on the GPUs without its host copy once its first proof
    /// uploads it (`true`/`false`, default false): a 32 GiB PoRep set then needs no host
    /// memory, but a lost GPU loses it (the next proof after a restart loads it again). The
    /// CPU and GPUs too small to hold a set keep its host copy.
    #[arg(long, env = "CUZK_DAEMON_PARAMS_ON_DEVICE", num_args = 0..=1, default_missing_value = "true")]
    pub params_on_device: Option<bool>,
    /// A directory to keep the compiled circuits in across restarts (GiBs each at 32 GiB):
    /// the first proof of a kind after a restart reads its circuit instead of recording it by
    /// a full synthesis (minutes at 32 GiB), and the native witness generators' validations by
    /// the same build are kept there too. Default: none, memory only.
    #[arg(long, env = "CUZK_DAEMON_COMPILED_DIR")]
    pub compiled_dir: Option<PathBuf>,
    /// Seconds running proofs may take to finish after SIGTERM/SIGINT before they are
    /// cancelled (default 60).
    #[arg(long, env = "CUZK_DAEMON_SHUTDOWN_GRACE")]
    pub shutdown_grace: Option<u64>,
    /// Seconds a finished job's result (and its request_id) is kept for AwaitProof and
    /// retries (default 600).
    #[arg(long, env = "CUZK_DAEMON_JOB_RETENTION")]
    pub job_retention: Option<u64>,
}

/// The TOML file: the same settings as the flags.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<String>,
    metrics_listen: Option<String>,
    log_level: Option<String>,
    param_dir: Option<PathBuf>,
    memory_budget: Option<toml::Value>,
    gpus: Option<toml::Value>,
    synthesis_threads: Option<usize>,
    params_on_device: Option<bool>,
    compiled_dir: Option<PathBuf>,
    shutdown_grace: Option<u64>,
    job_retention: Option<u64>,
}

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        if let Some(path) = s.strip_prefix("unix://").or_else(|| s.strip_prefix("unix:")) {
            if path.is_empty() {
                return Err(Error::InvalidArgument(format!("listen: {s:?} names no socket path")));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(Self::Tcp)
            .map_err(|_| Error::InvalidArgument(format!("listen: {s:?} is neither host:port nor unix:///path")))
    }
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen.
    pub listen: Listen,
    /// Where to serve the Prometheus text over HTTP (`None`: off).
    pub metrics_listen: Option<SocketAddr>,
    /// The log filter.
    pub log_level: String,
    /// The parameter directory.
    pub param_dir: PathBuf,
    /// `None`: auto.
    pub memory_budget: Option<String>,
    /// `auto`, `cpu` or device numbers.
    pub gpus: String,
    /// `None`: the host's cores.
    pub synthesis_threads: Option<usize>,
    /// [`EngineConfig::params_on_device`].
    pub params_on_device: bool,
    /// [`EngineConfig::compiled_dir`].
    pub compiled_dir: Option<PathBuf>,
    /// Time running proofs get at shutdown.
    pub shutdown_grace: Duration,
    /// How long finished jobs are kept.
    pub job_retention: Duration,
}

impl Config {
    /// Resolves `args` (flags and environment, as clap read them) over the `--config` file.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming an unreadable file, an unknown or bad setting.
    pub fn resolve(args: Args) -> Result<Self> {
        let file = match &args.config {
            None => File::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::InvalidArgument(format!("--config {}: {e}", path.display())))?;
                toml::from_str(&text)
                    .map_err(|e| Error::InvalidArgument(format!("--config {}: {e}", path.display())))?
            }
        };
        let text = |v: toml::Value| match v {
            toml::Value::String(s) => s,
            other => other.to_string(),
        };
        let listen = args.listen.or(file.listen).unwrap_or_else(|| DEFAULT_LISTEN.into());
        let metrics_listen = match args.metrics_listen.or(file.metrics_listen) {
            None => None,
            Some(addr) => Some(addr.parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "metrics_listen: {addr:?} is not host:port (an IP address and a port, e.g. 127.0.0.1:9821)"
                ))
            })?),
        };
        Ok(Self {
            listen: listen.parse()?,
            metrics_listen,
            log_level: args.log_level.or(file.log_level).unwrap_or_else(|| "info".into()),
            param_dir: args
                .param_dir
                .or(file.param_dir)
                .unwrap_or_else(|| DEFAULT_PARAM_DIR.into()),
            memory_budget: args
                .memory_budget
                .or(file.memory_budget.map(text))
                .filter(|b| b.trim() != "auto"),
            gpus: args.gpus.or(file.gpus.map(text)).unwrap_or_else(|| "auto".into()),
            synthesis_threads: args.synthesis_threads.or(file.synthesis_threads),
            params_on_device: args.params_on_device.or(file.params_on_device).unwrap_or(false),
            compiled_dir: args.compiled_dir.or(file.compiled_dir),
            shutdown_grace: Duration::from_secs(args.shutdown_grace.or(file.shutdown_grace).unwrap_or(60)),
            job_retention: Duration::from_secs(args.job_retention.or(file.job_retention).unwrap_or(600)),
        })
    }

    /// The Filecoin engine's configuration (Winning PoSt urgent), read as the Filecoin
    /// layer reads its `CUZK_FILECOIN_*` variables.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a bad memory budget, GPU list or thread count.
    pub fn engine(&self) -> Result<EngineConfig> {
        let threads = self.synthesis_threads.map(|n| n.to_string());
        let value = |name: &str| match name {
            crate::filecoin::ENV_GPUS => Some(self.gpus.clone()),
            crate::filecoin::ENV_BUDGET => self.memory_budget.clone(),
            crate::filecoin::ENV_SYNTHESIS_THREADS => threads.clone(),
            _ => None,
        };
        let mut config = crate::filecoin::config_from_env(&value).map_err(|e| {
            let msg = e
                .to_string()
                .replace(crate::filecoin::ENV_GPUS, "gpus")
                .replace(crate::filecoin::ENV_BUDGET, "memory_budget")
                .replace(crate::filecoin::ENV_SYNTHESIS_THREADS, "synthesis_threads");
            Error::InvalidArgument(msg)
        })?;
        config.params_on_device = self.params_on_device;
        config.compiled_dir = self.compiled_dir.clone();
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_and_defaults_fill_the_rest() {
        let dir = std::env::temp_dir().join(format!("cuzk-daemon-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cuzk.toml");
        std::fs::write(
            &path,
            "listen = \"unix:///tmp/x.sock\"\nmetrics_listen = \"127.0.0.1:9821\"\nmemory_budget = \"8GiB\"\ngpus = \"cpu\"\nparams_on_device = true\ncompiled_dir = \"/var/lib/cuzk\"\n",
        )
        .unwrap();
        let args = Args {
            config: Some(path.clone()),
            gpus: Some("0,1".into()),
            ..Args::default()
        };
        let c = Config::resolve(args).unwrap();
        assert_eq!(c.listen, Listen::Unix("/tmp/x.sock".into()));
        assert_eq!(
            c.metrics_listen,
            Some("127.0.0.1:9821".parse().unwrap()),
            "from the file"
        );
        assert_eq!(c.gpus, "0,1");
        assert_eq!(c.engine().unwrap().budget_bytes, 8 << 30);
        assert!(
            c.params_on_device && c.engine().unwrap().params_on_device,
            "from the file"
        );
        let c = Config::resolve(Args {
            config: Some(path.clone()),
            params_on_device: Some(false),
            ..Args::default()
        })
        .unwrap();
        assert!(!c.engine().unwrap().params_on_device, "the flag over the file");
        let c = Config::resolve(Args::default()).unwrap();
        assert!(!c.engine().unwrap().params_on_device, "off by default");
        assert_eq!(c.engine().unwrap().compiled_dir, None);
        assert_eq!(c.listen, Listen::Tcp(DEFAULT_LISTEN.parse().unwrap()));
        assert_eq!(c.metrics_listen, None, "the metrics endpoint is off by default");
        assert_eq!(c.memory_budget, None);
        let c = Config::resolve(Args {
            config: Some(path.clone()),
            metrics_listen: Some("[::1]:9900".into()),
            ..Args::default()
        })
        .unwrap();
        assert_eq!(
            c.metrics_listen,
            Some("[::1]:9900".parse().unwrap()),
            "the flag over the file"
        );
        let bad = Config::resolve(Args {
            metrics_listen: Some("localhost".into()),
            ..Args::default()
        })
        .unwrap_err();
        assert!(bad.to_string().contains("metrics_listen"), "{bad}");
        std::fs::write(&path, "listen = 5\nbogus = 1\n").unwrap();
        let err = Config::resolve(Args {
            config: Some(path),
            ..Args::default()
        })
        .unwrap_err();
        assert!(err.to_string().contains("cuzk.toml"), "{err}");
        let bad = Config::resolve(Args {
            memory_budget: Some("lots".into()),
            ..Args::default()
        })
        .unwrap()
        .engine()
        .unwrap_err();
        assert!(bad.to_string().contains("memory_budget"), "{bad}");
        assert!("nowhere".parse::<Listen>().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
