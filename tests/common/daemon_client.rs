//! The benches' side of `cuzk-daemon` (benches/daemon_overhead.rs, benches/daemon_load.rs):
//! which binary to start, a free loopback address for it, and a client that waits for it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use cuzk::daemon::proto::proving_engine_client::ProvingEngineClient;

pub type Client = ProvingEngineClient<tonic::transport::Channel>;

/// The daemon to start: `CUZK_DAEMON_BIN` where a bench runs away from its build (the GPU
/// machine, as the tests), else this build's.
pub fn daemon_bin() -> std::ffi::OsString {
    std::env::var_os("CUZK_DAEMON_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_cuzk-daemon").into())
}

/// A free loopback `host:port` for `--listen`.
pub fn free_listen() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// A client of the daemon at `address` (`http://host:port` or `unix://path`), retried until
/// the daemon answers (at most 120 s).
pub async fn connect(address: &str) -> Client {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match tonic::transport::Endpoint::from_shared(address.to_string())
            .unwrap()
            .connect()
            .await
        {
            Ok(ch) => return ProvingEngineClient::new(ch),
            Err(e) => {
                assert!(Instant::now() < deadline, "cuzk-daemon did not answer: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
