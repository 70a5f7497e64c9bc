//! Serving: the TCP or Unix socket listener (loopback TCP by default; a Unix socket created
//! owner-only, a stale socket file replaced, any `:authority` accepted on it:
//! [`AnyAuthority`]), 256 MiB messages each way, and the stop on
//! SIGTERM/SIGINT: no new jobs, running proofs get the grace period, then the rest are
//! cancelled and every waiting caller gets its CANCELLED reply before the connections close.

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tokio_stream::StreamExt as _;

use super::authority::AnyAuthority;
use super::config::Listen;
use super::jobs::Jobs;
use super::proto::proving_engine_server::ProvingEngineServer;
use super::service::Service;
use crate::error::{Error, Result};

/// The largest message either way (Curio's client sets the same).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// A bound listener.
pub enum Bound {
    /// TCP.
    Tcp(TcpListener),
    /// A Unix socket (its path removed when the daemon stops).
    Unix(UnixListener, std::path::PathBuf),
}

impl Bound {
    /// Where it listens, as a client names it.
    pub fn address(&self) -> String {
        match self {
            Self::Tcp(l) => l.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Self::Unix(_, path) => format!("unix://{}", path.display()),
        }
    }
}

/// Binds `listen` (call inside the runtime).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the address and why it cannot be bound (in use, a
/// non-socket file at the socket path, no such directory).
pub async fn bind(listen: &Listen) -> Result<Bound> {
    let bad = |what: String| Error::InvalidArgument(format!("listen: {what}"));
    match listen {
        Listen::Tcp(addr) => {
            if !addr.ip().is_loopback() {
                log::warn!(
                    "listening on {addr}, beyond this host: the protocol has no authentication, \
                     so anyone who reaches this port can submit proofs"
                );
            }
            let l = TcpListener::bind(addr).await.map_err(|e| bad(format!("{addr}: {e}")))?;
            Ok(Bound::Tcp(l))
        }
        Listen::Unix(path) => {
            replace_stale_socket(path).map_err(bad)?;
            let l = UnixListener::bind(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| bad(format!("{}: setting owner-only permissions: {e}", path.display())))?;
            Ok(Bound::Unix(l, path.clone()))
        }
    }
}

/// Removes a socket file no daemon answers on; refuses a live one or a file that is not a socket.
fn replace_stale_socket(path: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(format!("{} exists and is not a socket", path.display()));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(format!("{} is in use by a running daemon", path.display()));
    }
    log::info!("{}: replacing a stale socket file", path.display());
    std::fs::remove_file(path).map_err(|e| format!("{}: removing the stale socket: {e}", path.display()))
}

/// Serves `jobs` on `bound` until `stop` resolves, then drains: new proofs are refused
/// (`UNAVAILABLE`) while the connections stay open, so a caller that submitted before the stop
/// can still await its job (even over a new connection); running proofs get `grace`, the rest
/// are cancelled; once every job has its outcome the server stops, answering the callers that
/// wait before it closes their connections.
///
/// # Errors
/// [`Error::InvalidArgument`] for a transport failure.
pub async fn serve(
    bound: Bound,
    jobs: Arc<Jobs>,
    grace: Duration,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let service = ProvingEngineServer::new(Service::new(jobs.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let (drained_tx, drained_rx) = tokio::sync::oneshot::channel::<()>();
    let drain_task = tokio::spawn(async move {
        stop.await;
        log::info!("stopping: new proofs are refused; the jobs in flight drain (grace {grace:?})");
        jobs.drain(grace).await;
        let _ = drained_tx.send(());
    });
    let shutdown = async move {
        let _ = drained_rx.await;
        log::info!("every job answered: closing the connections");
    };
    let router = tonic::transport::Server::builder()
        .layer(tower::util::MapResponseLayer::new(oversized_is_invalid_argument))
        .add_service(service);
    let address = bound.address();
    log::info!("cuzk-daemon serving cuzk.v1.ProvingEngine on {address}");
    let served = match bound {
        Bound::Tcp(l) => {
            router
                .serve_with_incoming_shutdown(TcpListenerStream::new(l), shutdown)
                .await
        }
        Bound::Unix(l, path) => {
            // grpc-core clients send the socket path, percent-encoded, as :authority.
            let incoming = UnixListenerStream::new(l).map(|c| c.map(AnyAuthority::new));
            let r = router.serve_with_incoming_shutdown(incoming, shutdown).await;
            let _ = std::fs::remove_file(&path);
            r
        }
    };
    // The server stops only after the drain, or on a transport failure (nothing to drain for).
    drain_task.abort();
    log::info!("cuzk-daemon stopped");
    served.map_err(|e| Error::InvalidArgument(format!("serving on {address}: {e}")))
}

/// tonic refuses a request over [`MAX_MESSAGE_BYTES`] with `OUT_OF_RANGE` before any handler
/// sees it; the daemon's contract for a bad request is `INVALID_ARGUMENT` saying what is wrong.
/// Every other response passes unchanged.
fn oversized_is_invalid_argument(
    mut response: tonic::codegen::http::Response<tonic::body::Body>,
) -> tonic::codegen::http::Response<tonic::body::Body> {
    let Some(status) = tonic::Status::from_header_map(response.headers()) else {
        return response;
    };
    if status.code() != tonic::Code::OutOfRange || !status.message().contains("message length too large") {
        return response;
    }
    let refused = tonic::Status::invalid_argument(format!(
        "request: the message is over the daemon's {} MiB limit (Curio's own): {}",
        MAX_MESSAGE_BYTES >> 20,
        status.message()
    ));
    let headers = response.headers_mut();
    headers.remove("grpc-message");
    if refused.add_header(headers).is_err() {
        return response;
    }
    response.extensions_mut().insert(refused);
    response
}

/// Resolves at the first SIGTERM or SIGINT.
pub async fn signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        log::error!("cannot watch SIGTERM/SIGINT: the daemon stops only when killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => log::info!("SIGTERM"),
        _ = int.recv() => log::info!("SIGINT"),
    }
}
