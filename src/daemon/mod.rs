//! `cuzk-daemon` (the `daemon` feature): Curio's proving-daemon protocol,
//! `cuzk.v1.ProvingEngine` over gRPC (proto/cuzk/v1/proving.proto, the message and field
//! numbers of Curio's own), served by the Filecoin layer ([`crate::filecoin`]) on its
//! process-wide engine. Curio's `[Cuzk] Address` pointed at it sends PoRep C2, SnapDeals,
//! Window PoSt partitions and Winning PoSt here.
//!
//! The daemon sits above the Filecoin layer; nothing in the library depends on it.
//! - [`config`]: flags, environment, TOML file; the engine configuration.
//! - [`request`]: a request checked and decoded as Curio sends it.
//! - [`jobs`]: jobs, idempotency by `request_id`, cancellation, the drain at shutdown.
//! - [`service`]: the RPCs.
//! - [`status`]: `GetStatus` and the Prometheus text of `GetMetrics`.
//! - [`http`]: the same Prometheus text over HTTP for scrapers (`--metrics-listen`).
//! - [`listen`]: TCP or Unix socket, message limits, graceful stop.
//! - [`authority`]: a Unix socket accepts any `:authority` (grpc-core's percent-encoded path).

pub mod authority;
pub mod config;
pub mod http;
pub mod jobs;
pub mod listen;
pub mod request;
pub mod service;
pub mod status;

/// The generated protocol types, server and client.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("cuzk.v1");
}

use std::future::Future;

use crate::error::Result;

/// Runs the daemon with `config` until `stop` resolves (see [`listen::serve`]): points
/// filecoin-proofs at the parameter directory, configures the Filecoin engine, binds (and the
/// metrics endpoint when asked), serves. Call inside a tokio runtime, before other threads
/// read the environment.
///
/// # Errors
/// A bad setting, a listen address that cannot be bound, a transport failure.
pub async fn run(config: config::Config, stop: impl Future<Output = ()> + Send + 'static) -> Result<()> {
    crate::filecoin::configure(config.engine()?)?;
    let metrics = match config.metrics_listen {
        Some(addr) => Some(http::bind(addr).await?),
        None => None,
    };
    let bound = listen::bind(&config.listen).await?;
    let jobs = jobs::Jobs::new(config.job_retention);
    // The endpoint answers until the daemon exits (through the drain too).
    let metrics = metrics.map(|l| tokio::spawn(http::serve(l, jobs.clone())));
    let served = listen::serve(bound, jobs, config.shutdown_grace, stop).await;
    if let Some(task) = metrics {
        task.abort();
    }
    served
}
