//! The metrics endpoint (`--metrics-listen`, off by default): `GET /metrics` answers the
//! Prometheus text `GetMetrics` gives, over plain HTTP/1.1 for scrapers (Prometheus, the
//! node exporter's textfile collectors, curl). A small responder on tokio: one request per
//! connection, answered and closed; `HEAD` as `GET` without the body; any other path 404,
//! any other method 405, a request that is not HTTP/1.x 400.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::jobs::Jobs;
use super::status;
use crate::error::{Error, Result};

/// The largest request head read (a scraper's is a few hundred bytes).
const MAX_HEAD_BYTES: usize = 8 << 10;
/// How long a connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Prometheus' text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Binds the metrics endpoint on `addr` (call inside the runtime).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the address and why it cannot be bound.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::InvalidArgument(format!("metrics_listen: {addr}: {e}")))
}

/// Answers scrapers on `listener` until the task is dropped (the daemon stops).
pub async fn serve(listener: TcpListener, jobs: Arc<Jobs>) {
    let at = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    log::info!("metrics: Prometheus text at http://{at}/metrics");
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let jobs = jobs.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &jobs).await {
                        log::debug!("metrics: {peer}: {e}");
                    }
                });
            }
            Err(e) => {
                // Out of file descriptors, say: the next accept may succeed.
                log::warn!("metrics: accepting a connection on {at}: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    /// The metrics (`body`: GET, not HEAD).
    Metrics { body: bool },
    /// Another path.
    NotFound,
    /// Another method.
    NotAllowed,
    /// Not an HTTP/1.x request line.
    Bad,
}

/// Reads `head` (the bytes up to the blank line): its request line.
fn asked(head: &[u8]) -> Asked {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let Ok(line) = std::str::from_utf8(line) else {
        return Asked::Bad;
    };
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Asked::Bad;
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || target.is_empty() {
        return Asked::Bad;
    }
    let path = target.split(['?', '#']).next().unwrap_or_default();
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => Asked::Metrics { body: method == "GET" },
        ("GET" | "HEAD", _) => Asked::NotFound,
        _ => Asked::NotAllowed,
    }
}

/// Reads one request head from `stream` and answers it; the connection then closes.
async fn answer(mut stream: TcpStream, jobs: &Arc<Jobs>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let read = async {
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
            if head.len() >= MAX_HEAD_BYTES {
                return Ok(false);
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(false);
            }
            head.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(true)
    };
    let complete = match tokio::time::timeout(READ_TIMEOUT, read).await {
        Ok(r) => r?,
        Err(_) => false,
    };
    let asked = if complete { asked(&head) } else { Asked::Bad };
    let (status, extra, body, send_body) = match asked {
        Asked::Metrics { body } => {
            let jobs = jobs.clone();
            match tokio::task::spawn_blocking(move || status::metrics_now(&jobs)).await {
                Ok(text) => ("200 OK", "", text, body),
                Err(e) => ("500 Internal Server Error", "", format!("metrics: {e}\n"), true),
            }
        }
        Asked::NotFound => (
            "404 Not Found",
            "",
            "not found: the metrics are at /metrics\n".into(),
            true,
        ),
        Asked::NotAllowed => (
            "405 Method Not Allowed",
            "Allow: GET, HEAD\r\n",
            "only GET and HEAD of /metrics\n".into(),
            true,
        ),
        Asked::Bad => ("400 Bad Request", "", "not an HTTP/1.x request\n".into(), true),
    };
    let content_type = if status.starts_with("200") {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let mut reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if send_body {
        reply.extend_from_slice(body.as_bytes());
    }
    stream.write_all(&reply).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_line_decides_the_answer() {
        assert_eq!(
            asked(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Asked::Metrics { body: true }
        );
        assert_eq!(
            asked(b"GET /metrics?name[]=x HTTP/1.0\r\n\r\n"),
            Asked::Metrics { body: true }
        );
        assert_eq!(asked(b"HEAD /metrics HTTP/1.1\r\n\r\n"), Asked::Metrics { body: false });
        assert_eq!(asked(b"GET / HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(asked(b"GET /metricsx HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(asked(b"POST /metrics HTTP/1.1\r\n\r\n"), Asked::NotAllowed);
        assert_eq!(asked(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Asked::Bad);
        assert_eq!(asked(b"GET /metrics\r\n\r\n"), Asked::Bad);
        assert_eq!(asked(b"GET  /metrics HTTP/1.1\r\n\r\n"), Asked::Bad);
        assert_eq!(asked(b"\xff\xfe\r\n\r\n"), Asked::Bad);
    }
}
