//! `cuzk-daemon`: Curio's proving daemon (`cuzk.v1.ProvingEngine` over gRPC) on cuzk's engine.
//! `cuzk-daemon --help` lists the settings; see docs/DAEMON.md.

use clap::Parser;
use cuzk::daemon::config::{Args, Config};

fn main() -> std::process::ExitCode {
    let config = match Config::resolve(Args::parse()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cuzk-daemon: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    env_logger::Builder::new()
        .parse_filters(&config.log_level)
        .format_timestamp_millis()
        .init();
    // filecoin-proofs reads its parameter directory from the environment, once: set it before
    // any thread starts.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &config.param_dir);
    log::info!("cuzk-daemon {}: {config:?}", env!("CARGO_PKG_VERSION"));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            log::error!("starting the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(cuzk::daemon::run(config, cuzk::daemon::listen::signal()));
    // Every job has its outcome by now; a blocking task still running (a parameter preload)
    // must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
