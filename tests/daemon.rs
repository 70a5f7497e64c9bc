//! `cuzk-daemon` driven as Curio drives it: the binary started as a child, a tonic client of
//! the same `cuzk.v1` protocol over TCP and over a Unix socket, the requests in Curio's shapes
//! (bincode PoSt vanilla proofs, the C1 wrapper with base64, raw 32-byte commitments), every
//! proof checked by filecoin-proofs' verifiers. Also: submit/await/timeout, cancel of a queued
//! and a running job, request_id idempotency and Curio's retries under its request ids, status
//! under load and the job a backend works for, the metrics endpoint, grpc-core's `:authority`
//! over the Unix socket, every bad request refused by field name while the daemon keeps
//! serving, a missing parameter file, SIGTERM with proofs in flight, and a bounded load of 8
//! clients x 25 Winning PoSt with cancels and timeouts.
//!
//! PoSt of 2 KiB sectors on the CPU (parameters as tests/filecoin.rs makes them); PoRep C2 and
//! SnapDeals are #[ignore]d (their 2 KiB parameters take tens of minutes on 2 cores).
//! Run: `cargo test --release --features daemon --test daemon`.

#![cfg(feature = "daemon")]

#[path = "common/filecoin.rs"]
mod fixtures;

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk::daemon::proto::await_proof_response::Status as Outcome;
use cuzk::daemon::proto::proving_engine_client::ProvingEngineClient;
use cuzk::daemon::proto::*;
use cuzk::filecoin::ParamsKind;
use filecoin_proofs_api::post as api_post;
use fixtures::*;
use prost::Message as _;
use tonic::transport::Channel;
use tonic::Code;

type Client = ProvingEngineClient<Channel>;

/// The binary: `CUZK_DAEMON_BIN` where the tests run away from their build (the GPU machine),
/// else the one cargo built beside this test.
fn daemon_bin() -> PathBuf {
    std::env::var_os("CUZK_DAEMON_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cuzk-daemon")), PathBuf::from)
}

/// A daemon child process, killed when dropped.
struct Daemon {
    child: Child,
    address: String,
    log: PathBuf,
}

impl Daemon {
    /// Starts the binary on `listen` (CPU, a 4 GiB budget, 2 synthesis threads, the test
    /// parameter cache) with `extra` flags, and waits until it answers.
    fn start(name: &str, listen: &str, extra: &[&str]) -> Self {
        init();
        let dir = scratch(&format!("daemon-{name}"));
        let log = dir.join("daemon.log");
        let defaults = [
            ("--gpus", "cpu"),
            ("--memory-budget", "4GiB"),
            ("--synthesis-threads", "2"),
        ];
        let mut cmd = Command::new(daemon_bin());
        cmd.args(["--listen", listen, "--log-level", "info"]).args(extra);
        for (flag, value) in defaults {
            if !extra.contains(&flag) {
                cmd.args([flag, value]);
            }
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start cuzk-daemon");
        let address = if listen.starts_with("unix:") {
            listen.to_string()
        } else {
            format!("http://{listen}")
        };
        let daemon = Self { child, address, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        rt().block_on(async {
            while daemon.try_client().await.is_err() {
                assert!(
                    Instant::now() < deadline,
                    "the daemon did not answer: {}",
                    daemon.log_text()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        daemon
    }

    async fn try_client(&self) -> Result<Client, tonic::transport::Error> {
        connect(self.address.clone()).await
    }

    async fn client(&self) -> Client {
        self.try_client().await.expect("connect to the daemon")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn sigterm(&self) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGTERM) }, 0);
    }

    /// Waits for the child to exit, at most `limit`; its exit status.
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit: {}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client as Curio's (256 MiB messages; larger ones may be sent, to see them refused).
async fn connect(address: String) -> Result<Client, tonic::transport::Error> {
    let channel = tonic::transport::Endpoint::from_shared(address)
        .unwrap()
        .connect()
        .await?;
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(512 << 20))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// GetMetrics' Prometheus text.
async fn metrics_text(c: &mut Client) -> String {
    c.get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

/// A free loopback TCP port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn socket(name: &str) -> PathBuf {
    scratch(&format!("sock-{name}")).join("cuzk.sock")
}

/// Winning PoSt as Curio's WinningPoStCuzk sends it.
fn winning_request(request_id: &str, randomness: [u8; 32]) -> SubmitProofRequest {
    let (vanilla, _) = winning_vanilla(&randomness);
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::WinningPost as i32,
        sector_size: 2048,
        registered_proof: 0, // abi.RegisteredPoStProof_StackedDrgWinning2KiBV1
        priority: Priority::Critical as i32,
        vanilla_proofs: vanilla,
        miner_id: MINER,
        randomness: randomness.to_vec(),
        ..SubmitProofRequest::default()
    }
}

fn winning_verifies(randomness: [u8; 32], proof: &[u8]) -> bool {
    let (_, public) = winning_vanilla(&randomness);
    api_post::verify_winning_post(&randomness, proof, &public, prover_id()).unwrap_or(false)
}

async fn prove(client: &mut Client, req: SubmitProofRequest) -> AwaitProofResponse {
    let reply = client
        .prove(ProveRequest { submit: Some(req) })
        .await
        .expect("Prove answers");
    reply.into_inner().result.expect("Prove has a result")
}

async fn await_job(client: &mut Client, job_id: String, timeout_ms: u64) -> AwaitProofResponse {
    let req = AwaitProofRequest { job_id, timeout_ms };
    client.await_proof(req).await.expect("AwaitProof answers").into_inner()
}

async fn cancel_job(client: &mut Client, job_id: String) -> CancelProofResponse {
    let req = CancelProofRequest { job_id };
    client
        .cancel_proof(req)
        .await
        .expect("CancelProof answers")
        .into_inner()
}

fn completed(r: &AwaitProofResponse) -> &[u8] {
    assert_eq!(r.status, Outcome::Completed as i32, "{r:?}");
    &r.proof
}

#[test]
fn winning_and_window_post_over_a_unix_socket_verify_with_filecoin_proofs() {
    ensure_params(ParamsKind::PoSt(WINNING));
    ensure_params(ParamsKind::PoSt(WINDOW));
    // A stale socket file (a daemon that died) is replaced.
    let path = socket("prove");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let listen = format!("unix://{}", path.display());
    let daemon = Daemon::start("prove", &listen, &[]);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600,
        "owner-only socket"
    );
    rt().block_on(async {
        let mut c = daemon.client().await;
        let randomness = [3u8; 32];
        let r = prove(&mut c, winning_request("winpost-1000-a", randomness)).await;
        assert_eq!(completed(&r).len(), 192);
        assert!(winning_verifies(randomness, &r.proof));
        assert!(r.total_ms >= r.gpu_compute_ms);
        let mut other = randomness;
        other[0] ^= 1;
        assert!(!winning_verifies(other, &r.proof));

        // Window PoSt per partition as Curio's WindowPoStCuzk sends it; merged in index order
        // the partitions' proofs are the Window PoSt filecoin-proofs verifies.
        let randomness = [13u8; 32];
        let (vanilla, public) = window_vanilla(&randomness);
        let mut partitions = Vec::new();
        for (k, chunk) in vanilla.chunks(2).enumerate() {
            let req = SubmitProofRequest {
                request_id: format!("wdpost-1000-{k}"),
                proof_kind: ProofKind::WindowPostPartition as i32,
                sector_size: 2048,
                registered_proof: 10, // abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
                priority: Priority::High as i32,
                vanilla_proofs: chunk.to_vec(),
                miner_id: MINER,
                randomness: randomness.to_vec(),
                partition_index: k as u32,
                ..SubmitProofRequest::default()
            };
            partitions.push(completed(&prove(&mut c, req).await).to_vec());
        }
        let merged = api_post::merge_window_post_partition_proofs(
            WINDOW,
            partitions
                .into_iter()
                .map(filecoin_proofs_api::PartitionSnarkProof)
                .collect(),
        )
        .unwrap();
        assert!(api_post::verify_window_post(&randomness, &[(WINDOW, &merged)], &public, prover_id()).unwrap());

        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.total_proofs_completed, 3);
        assert!(
            status.queues.iter().all(|q| q.pending + q.in_progress == 0),
            "{status:?}"
        );
        let hot: Vec<_> = status
            .loaded_srs
            .iter()
            .filter(|s| s.tier == 0)
            .map(|s| s.circuit_id.as_str())
            .collect();
        assert!(hot.contains(&"winning-2k") && hot.contains(&"wpost-2k"), "{status:?}");
        assert_eq!(status.gpus.len(), 1, "one CPU backend: {status:?}");
        assert_eq!(
            (status.gpus[0].name.as_str(), status.gpus[0].vram_total_bytes),
            ("cpu", 0)
        );
    });
    let log = daemon.log_text();
    assert!(log.contains("replacing a stale socket"), "{log}");
    assert!(log.lines().any(|l| l.contains("job ") && l.contains("proved")), "{log}");
}

#[test]
fn submit_await_timeout_cancel_idempotency_and_status_under_load_over_tcp() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let listen = format!("127.0.0.1:{}", free_port());
    let daemon = Daemon::start("tcp", &listen, &["--synthesis-threads", "1"]);
    rt().block_on(async {
        let mut c = daemon.client().await;
        let randomness = [5u8; 32];
        let first = c
            .submit_proof(winning_request("same", randomness))
            .await
            .unwrap()
            .into_inner();
        let again = c
            .submit_proof(winning_request("same", randomness))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(first.job_id, again.job_id, "a repeated request_id is the same job");
        // Seven more, queued behind it on one synthesis thread.
        let mut ids = vec![first.job_id.clone()];
        for i in 0..7 {
            let r = c
                .submit_proof(winning_request(&format!("load-{i}"), randomness))
                .await
                .unwrap();
            ids.push(r.into_inner().job_id);
        }
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        let winning = status.queues.iter().find(|q| q.proof_kind == "WINNING_POST").unwrap();
        assert!(winning.pending + winning.in_progress >= 1, "{status:?}");
        assert!(winning.pending + winning.in_progress <= 8, "{status:?}");

        // A 1 ms wait times out; the job goes on.
        let last = ids.last().unwrap().clone();
        let r = await_job(&mut c, last.clone(), 1).await;
        assert_eq!(r.status, Outcome::Timeout as i32, "{r:?}");
        // Cancel the last (queued) and the second (running or queued).
        for id in [&last, &ids[1]] {
            let c2 = cancel_job(&mut c, id.clone()).await;
            assert!(c2.was_running, "{id}");
        }
        let mut done = 0;
        for (i, id) in ids.iter().enumerate() {
            let r = await_job(&mut c, id.clone(), 0).await;
            if i == 1 || id == &last {
                assert_eq!(r.status, Outcome::Cancelled as i32, "{r:?}");
            } else {
                assert!(winning_verifies(randomness, completed(&r)));
                done += 1;
            }
        }
        // Done jobs are kept: awaited again, the same bytes; the same request_id still names it.
        let a = await_job(&mut c, ids[0].clone(), 0).await;
        let b = prove(&mut c, winning_request("same", randomness)).await;
        assert_eq!(a.proof, b.proof);
        assert_eq!(b.job_id, ids[0]);
        let c3 = cancel_job(&mut c, ids[0].clone()).await;
        assert!(!c3.was_running, "a finished job is not running");
        let err = c
            .await_proof(AwaitProofRequest {
                job_id: "nope".into(),
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::NotFound);

        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.total_proofs_completed, done);
        assert!(
            status.queues.iter().all(|q| q.pending + q.in_progress == 0),
            "{status:?}"
        );
        let metrics = metrics_text(&mut c).await;
        assert!(
            metrics.contains(&format!("cuzk_proofs_total{{outcome=\"completed\"}} {done}")),
            "{metrics}"
        );
        assert!(
            metrics.contains("cuzk_proofs_total{outcome=\"cancelled\"} 2"),
            "{metrics}"
        );
        assert!(metrics.contains("cuzk_engine_partitions_done_total"), "{metrics}");
        // No request was malformed: no generator refused its input, no witness was of
        // another shape.
        assert!(
            metrics.contains("cuzk_witness_generator_input_errors_total 0")
                && metrics.contains("cuzk_witness_input_errors_total 0"),
            "{metrics}"
        );

        // Parameter sets: evicted, then preloaded again.
        let e = c
            .evict_srs(EvictSrsRequest {
                circuit_id: "winning-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(e.was_loaded && e.freed_bytes > 0, "{e:?}");
        let winning_2k = || PreloadSrsRequest {
            circuit_id: "winning-2k".into(),
        };
        let p = c.preload_srs(winning_2k()).await.unwrap().into_inner();
        assert!(!p.already_loaded, "{p:?}");
        let p = c.preload_srs(winning_2k()).await.unwrap().into_inner();
        assert!(p.already_loaded, "{p:?}");
        let err = c
            .preload_srs(PreloadSrsRequest {
                circuit_id: "porep-33g".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains("circuit_id"), "{err:?}");
    });
}

/// Curio's request id of a Winning PoSt: `winpost-<miner>-<hex of randomness[:8]>`.
fn winpost_id(randomness: &[u8; 32]) -> String {
    let hex: String = randomness[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("winpost-{MINER}-{hex}")
}

/// GET (or another `method`) of `path` on the metrics endpoint: the status line, the headers
/// (lowercase names) and the body.
fn http_get(addr: &str, method: &str, path: &str) -> (String, Vec<(String, String)>, String) {
    use std::io::Write as _;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: */*\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines.next().unwrap().to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

/// Curio retries a failed task under the same request id (`porep-<miner>-<sector>`,
/// `winpost-<miner>-<randomness>`): a FAILED or CANCELLED job is proved anew, the identical
/// request too; a kept COMPLETED job answers only the identical request (a new C1 or other
/// inputs are proved anew); a live job answers the identical request, and another request
/// under its id is refused ALREADY_EXISTS naming the id and the job. Also, on the same daemon:
/// GetStatus names the job the (CPU) backend works for, and `--metrics-listen` serves the
/// Prometheus text over HTTP.
#[test]
fn a_retry_under_curios_request_id_is_proved_anew_unless_the_same_request_is_live_or_proved() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let metrics = format!("127.0.0.1:{}", free_port());
    let listen = format!("127.0.0.1:{}", free_port());
    let daemon = Daemon::start("retry", &listen, &["--metrics-listen", &metrics]);
    rt().block_on(async {
        let mut c = daemon.client().await;

        // A C2 that fails (a C1 output of another miner), retried as Curio does: proved anew.
        let s = &sectors()[0];
        let wrapper = serde_json::json!({
            "SectorNum": s.sector_id,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json(s, [1; 32])),
            "SectorSize": 2048,
        });
        let c2 = SubmitProofRequest {
            request_id: format!("porep-{}-{}", MINER + 1, s.sector_id),
            proof_kind: ProofKind::PorepSealCommit as i32,
            registered_proof: 5,
            sector_size: 2048,
            sector_number: s.sector_id,
            miner_id: MINER + 1,
            priority: Priority::Normal as i32,
            vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
            ..SubmitProofRequest::default()
        };
        let first = prove(&mut c, c2.clone()).await;
        assert_eq!(first.status, Outcome::Failed as i32, "{first:?}");
        let retry = prove(&mut c, c2.clone()).await;
        assert_eq!(retry.status, Outcome::Failed as i32, "{retry:?}");
        assert_ne!(
            retry.job_id, first.job_id,
            "a FAILED job is not the answer to its retry"
        );
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.total_proofs_failed, 2, "proved twice: {status:?}");
        // The old job is still there by its job_id.
        assert_eq!(
            await_job(&mut c, first.job_id.clone(), 0).await.status,
            Outcome::Failed as i32
        );

        // A Winning PoSt whose vanilla proofs were bad, retried with good ones: proved.
        let randomness = [51u8; 32];
        let id = winpost_id(&randomness);
        let garbage = SubmitProofRequest {
            vanilla_proofs: vec![vec![7; 100]],
            ..winning_request(&id, randomness)
        };
        let failed = prove(&mut c, garbage).await;
        assert_eq!(failed.status, Outcome::Failed as i32, "{failed:?}");
        let good = prove(&mut c, winning_request(&id, randomness)).await;
        assert!(winning_verifies(randomness, completed(&good)));
        assert_ne!(good.job_id, failed.job_id);

        // Kept COMPLETED: the identical request is that job, not a second proof.
        let again = prove(&mut c, winning_request(&id, randomness)).await;
        assert_eq!((&again.job_id, &again.proof), (&good.job_id, &good.proof));
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.total_proofs_completed, 1, "{status:?}");

        // Kept COMPLETED, other inputs under the id (a C2 redone with a new C1): proved anew,
        // not the old proof.
        let other = [52u8; 32];
        let redone = prove(&mut c, winning_request(&id, other)).await;
        assert_ne!(redone.job_id, good.job_id);
        assert!(winning_verifies(other, completed(&redone)));
        assert!(!winning_verifies(randomness, &redone.proof));

        // Live: the identical request is that job; another under its id is refused, naming
        // both; the backend works for it.
        let live_id = winpost_id(&[53u8; 32]);
        let job = c
            .submit_proof(winning_request(&live_id, [53u8; 32]))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let same = c.submit_proof(winning_request(&live_id, [53u8; 32])).await.unwrap();
        assert_eq!(same.into_inner().job_id, job);
        let err = c.submit_proof(winning_request(&live_id, [54u8; 32])).await.unwrap_err();
        assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");
        assert!(
            err.message().starts_with("request_id:")
                && err.message().contains(&live_id)
                && err.message().contains(&job),
            "{err:?}"
        );
        let err = c
            .prove(ProveRequest {
                submit: Some(winning_request(&live_id, [54u8; 32])),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");
        let deadline = Instant::now() + Duration::from_secs(120);
        let seen = loop {
            let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
            let winning = status.queues.iter().find(|q| q.proof_kind == "WINNING_POST").unwrap();
            if winning.in_progress == 1 {
                break status;
            }
            assert!(winning.pending == 1, "the job ended unseen in the engine: {status:?}");
            assert!(Instant::now() < deadline, "{status:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!(
            (
                seen.gpus[0].current_job_id.as_str(),
                seen.gpus[0].current_proof_kind.as_str()
            ),
            (job.as_str(), "WINNING_POST"),
            "{seen:?}"
        );
        assert!(winning_verifies(
            [53u8; 32],
            completed(&await_job(&mut c, job.clone(), 0).await)
        ));
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.gpus[0].current_job_id, "", "idle: {status:?}");
        // Once it is done, the other request under the id is proved.
        let next = prove(&mut c, winning_request(&live_id, [54u8; 32])).await;
        assert!(winning_verifies([54u8; 32], completed(&next)));

        // A cancelled job is not the answer to its retry, even while its cancel is under way.
        let cancel_id = winpost_id(&[55u8; 32]);
        let cancelled = c
            .submit_proof(winning_request(&cancel_id, [55u8; 32]))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        cancel_job(&mut c, cancelled.clone()).await;
        let retried = prove(&mut c, winning_request(&cancel_id, [55u8; 32])).await;
        assert_ne!(retried.job_id, cancelled);
        assert!(winning_verifies([55u8; 32], completed(&retried)));
        assert_eq!(await_job(&mut c, cancelled, 0).await.status, Outcome::Cancelled as i32);

        // The metrics endpoint: the Prometheus text GetMetrics gives, by GET and HEAD only.
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        let (line, headers, body) = tokio::task::spawn_blocking({
            let m = metrics.clone();
            move || http_get(&m, "GET", "/metrics")
        })
        .await
        .unwrap();
        assert_eq!(line, "HTTP/1.1 200 OK");
        assert!(
            headers.contains(&("content-type".into(), "text/plain; version=0.0.4; charset=utf-8".into())),
            "{headers:?}"
        );
        assert!(
            headers.contains(&("content-length".into(), body.len().to_string())),
            "{headers:?}"
        );
        assert!(body.contains("# TYPE cuzk_proofs_total counter"), "{body}");
        for (outcome, n) in [
            ("completed", status.total_proofs_completed),
            ("failed", status.total_proofs_failed),
        ] {
            assert!(
                body.contains(&format!("cuzk_proofs_total{{outcome=\"{outcome}\"}} {n}\n")),
                "{outcome} {n}: {body}"
            );
        }
        assert_eq!(
            (status.total_proofs_completed, status.total_proofs_failed),
            (5, 3),
            "{status:?}"
        );
        assert!(body.contains("cuzk_engine_partitions_done_total"), "{body}");
        let m = metrics.clone();
        let others = tokio::task::spawn_blocking(move || {
            [
                http_get(&m, "HEAD", "/metrics"),
                http_get(&m, "GET", "/"),
                http_get(&m, "POST", "/metrics"),
            ]
        })
        .await
        .unwrap();
        assert_eq!(others[0].0, "HTTP/1.1 200 OK");
        assert_eq!(others[0].2, "", "HEAD has no body");
        assert_eq!(others[1].0, "HTTP/1.1 404 Not Found");
        assert!(others[1].2.contains("/metrics"), "{:?}", others[1]);
        assert_eq!(others[2].0, "HTTP/1.1 405 Method Not Allowed");
        assert!(
            others[2].1.contains(&("allow".into(), "GET, HEAD".into())),
            "{:?}",
            others[2]
        );
    });
    let log = daemon.log_text();
    assert!(log.contains("is FAILED: proving anew"), "{log}");
    assert!(
        log.contains("is CANCELLED: proving anew") || log.contains("being cancelled: proving anew"),
        "{log}"
    );
    assert!(log.contains("is COMPLETED for other inputs: proving anew"), "{log}");
    assert!(
        log.contains(&format!("metrics: Prometheus text at http://{metrics}/metrics")),
        "{log}"
    );
}

/// One HTTP/2 frame read from `s`: type, flags, stream, payload.
fn read_frame(s: &mut std::os::unix::net::UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).expect("a frame");
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0; len];
    s.read_exact(&mut payload).unwrap();
    (head[3], head[4], stream, payload)
}

fn h2_frame(typ: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([typ, flags]);
    f.extend(stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK string literal, not Huffman-coded (lengths under 127).
fn hpack_str(s: &str) -> Vec<u8> {
    assert!(s.len() < 127);
    [&[s.len() as u8][..], s.as_bytes()].concat()
}

/// Over the Unix socket, GetStatus twice on one HTTP/2 connection with `:authority` as
/// grpc-core sends it for `unix:///path` (the path without its first `/`, percent-encoded; a
/// literal added to the dynamic table, then named by its index): the daemon answers both (h2
/// alone resets such a stream, PROTOCOL_ERROR, which grpc-core reports as INTERNAL).
#[test]
fn a_unix_socket_answers_grpc_cores_percent_encoded_authority() {
    use std::io::Write as _;
    let path = socket("authority");
    let daemon = Daemon::start("authority", &format!("unix://{}", path.display()), &[]);
    let authority = path.to_str().unwrap().trim_start_matches('/').replace('/', "%2F");
    assert!(authority.contains("%2F") && authority.len() < 127, "{authority}");
    let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // First call: :method POST (static 3), :scheme http (static 6), :path and :authority as
    // literals with indexing (new names, as grpc-core sends them), then content-type and te.
    let mut first = vec![0x83, 0x86];
    first.push(0x40);
    first.extend(hpack_str(":path"));
    first.extend(hpack_str("/cuzk.v1.ProvingEngine/GetStatus"));
    first.push(0x40);
    first.extend(hpack_str(":authority"));
    first.extend(hpack_str(&authority));
    let mut tail = vec![0x00];
    tail.extend(hpack_str("content-type"));
    tail.extend(hpack_str("application/grpc"));
    tail.push(0x00);
    tail.extend(hpack_str("te"));
    tail.extend(hpack_str("trailers"));
    first.extend(&tail);
    // Second call: :path and :authority by their dynamic table indices (63, then 62).
    let mut second = vec![0x83, 0x86, 0x80 | 63, 0x80 | 62];
    second.extend(&tail);
    let empty_message = [0u8, 0, 0, 0, 0];
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(h2_frame(0x4, 0, 0, &[]));
    out.extend(h2_frame(0x1, 0x4, 1, &first));
    out.extend(h2_frame(0x0, 0x1, 1, &empty_message));
    out.extend(h2_frame(0x1, 0x4, 3, &second));
    out.extend(h2_frame(0x0, 0x1, 3, &empty_message));
    s.write_all(&out).unwrap();
    let (mut answered, mut ended) = (Vec::new(), Vec::new());
    while ended.len() < 2 {
        let (typ, flags, stream, payload) = read_frame(&mut s);
        match typ {
            0x0 if payload.len() > 5 => {
                let reply = GetStatusResponse::decode(&payload[5..]).expect("a GetStatusResponse");
                assert_eq!(reply.queues.len(), 4, "{reply:?}");
                answered.push(stream);
            }
            0x1 if flags & 0x1 != 0 => ended.push(stream),
            0x3 => panic!("stream {stream} reset, error code {:?}: {}", payload, daemon.log_text()),
            0x4 if flags & 0x1 == 0 => s.write_all(&h2_frame(0x4, 0x1, 0, &[])).unwrap(),
            0x7 => panic!("GOAWAY {payload:?}: {}", daemon.log_text()),
            _ => {}
        }
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 3], "both calls answered");
}

/// Each request with one field wrong, and the field its refusal must name.
fn bad_requests() -> Vec<(&'static str, SubmitProofRequest)> {
    let good = winning_request("", [9u8; 32]);
    let with = |f: &dyn Fn(&mut SubmitProofRequest)| {
        let mut r = good.clone();
        f(&mut r);
        r
    };
    let c1 = |wrapper: &str| SubmitProofRequest {
        proof_kind: ProofKind::PorepSealCommit as i32,
        registered_proof: 5,
        sector_size: 2048,
        sector_number: 100,
        miner_id: MINER,
        vanilla_proof: wrapper.as_bytes().to_vec(),
        ..SubmitProofRequest::default()
    };
    let snap = |old: usize| SubmitProofRequest {
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        registered_proof: 0,
        sector_size: 2048,
        vanilla_proofs: vec![vec![1]],
        comm_r_old: vec![0; old],
        comm_r_new: vec![0; 32],
        comm_d_new: vec![0; 32],
        ..SubmitProofRequest::default()
    };
    vec![
        ("proof_kind", with(&|r| r.proof_kind = 0)),
        ("proof_kind", with(&|r| r.proof_kind = 77)),
        ("registered_proof", with(&|r| r.registered_proof = 99)),
        ("registered_proof", with(&|r| r.registered_proof = 5)),
        ("sector_size", with(&|r| r.sector_size = 4096)),
        ("randomness", with(&|r| r.randomness.truncate(31))),
        ("vanilla_proofs", with(&|r| r.vanilla_proofs.clear())),
        ("vanilla_proofs[0]", with(&|r| r.vanilla_proofs[0].clear())),
        ("priority", with(&|r| r.priority = 9)),
        ("vanilla_proof", c1("")),
        ("vanilla_proof", c1("{not json")),
        (
            "Phase1Out",
            c1(r#"{"SectorNum":100,"Phase1Out":"%%%","SectorSize":2048}"#),
        ),
        ("SectorNum", c1(r#"{"SectorNum":7,"Phase1Out":"","SectorSize":2048}"#)),
        (
            "SectorSize",
            c1(r#"{"SectorNum":100,"Phase1Out":"","SectorSize":4096}"#),
        ),
        ("comm_r_old", snap(31)),
        (
            "registered_proof",
            SubmitProofRequest {
                registered_proof: 5,
                ..snap(32)
            },
        ),
    ]
}

#[test]
fn bad_requests_are_refused_by_field_and_the_daemon_keeps_serving() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let path = socket("bad");
    let daemon = Daemon::start("bad", &format!("unix://{}", path.display()), &[]);
    rt().block_on(async {
        let mut c = daemon.client().await;
        for (field, req) in bad_requests() {
            let err = c.submit_proof(req.clone()).await.unwrap_err();
            assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
            assert!(err.message().contains(field), "{field}: {}", err.message());
            let err = c.prove(ProveRequest { submit: Some(req) }).await.unwrap_err();
            assert!(err.message().contains(field), "{field}: {}", err.message());
        }
        let err = c.prove(ProveRequest { submit: None }).await.unwrap_err();
        assert!(
            err.code() == Code::InvalidArgument && err.message().contains("submit"),
            "{err:?}"
        );

        // Well-formed but wrong: a FAILED result naming what is wrong.
        let garbage = SubmitProofRequest {
            vanilla_proofs: vec![vec![7; 100]],
            ..winning_request("", [9u8; 32])
        };
        let r = prove(&mut c, garbage).await;
        assert_eq!(r.status, Outcome::Failed as i32, "{r:?}");
        assert!(r.error_message.contains("vanilla"), "{r:?}");
        // A C1 output of another miner (the wrapper is right, the replica id is not).
        let s = &sectors()[0];
        let wrapper = serde_json::json!({
            "SectorNum": s.sector_id,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json(s, [1; 32])),
            "SectorSize": 2048,
        });
        let other_miner = SubmitProofRequest {
            proof_kind: ProofKind::PorepSealCommit as i32,
            registered_proof: 5,
            sector_size: 2048,
            sector_number: s.sector_id,
            miner_id: MINER + 1,
            vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
            ..SubmitProofRequest::default()
        };
        let r = prove(&mut c, other_miner).await;
        assert_eq!(r.status, Outcome::Failed as i32, "{r:?}");
        assert!(
            r.error_message.contains("prover") || r.error_message.contains("replica"),
            "{r:?}"
        );

        // An oversized message (over 256 MiB) is refused; the daemon answers on.
        let huge = SubmitProofRequest {
            vanilla_proofs: vec![vec![0; 257 << 20]],
            ..winning_request("", [9u8; 32])
        };
        let err = c.submit_proof(huge).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(
            err.message().starts_with("request:") && err.message().contains("268435456"),
            "{err:?}"
        );

        let randomness = [9u8; 32];
        let mut c = daemon.client().await;
        let r = prove(&mut c, winning_request("after", randomness)).await;
        assert!(winning_verifies(randomness, completed(&r)));
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(
            (status.total_proofs_completed, status.total_proofs_failed),
            (1, 2),
            "{status:?}"
        );
    });
}

#[test]
fn a_missing_parameter_file_fails_naming_it_and_curio_fetch_params() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let empty = scratch("empty-params");
    let path = socket("noparams");
    let daemon = Daemon::start(
        "noparams",
        &format!("unix://{}", path.display()),
        &["--param-dir", empty.to_str().unwrap()],
    );
    rt().block_on(async {
        let mut c = daemon.client().await;
        let r = prove(&mut c, winning_request("", [3u8; 32])).await;
        assert_eq!(r.status, Outcome::Failed as i32, "{r:?}");
        assert!(
            r.error_message.contains(".params") && r.error_message.contains(empty.to_str().unwrap()),
            "{r:?}"
        );
        assert!(r.error_message.contains("curio fetch-params"), "{r:?}");
    });
}

/// The live Winning PoSt jobs `GetStatus` reports (pending + in progress).
async fn winning_live(c: &mut Client) -> u32 {
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    status
        .queues
        .iter()
        .find(|q| q.proof_kind == "WINNING_POST")
        .map_or(0, |q| q.pending + q.in_progress)
}

#[test]
fn sigterm_lets_a_running_proof_finish_then_cancels_the_rest_and_exits() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [21u8; 32];
    // A long grace: the proof in flight completes and is still awaited after the signal (over
    // the first connection and over a new one), a new proof is refused UNAVAILABLE, the daemon
    // exits 0 and removes its socket.
    let path = socket("term");
    let mut daemon = Daemon::start(
        "term",
        &format!("unix://{}", path.display()),
        &["--shutdown-grace", "120"],
    );
    let rt = rt();
    rt.block_on(async {
        let mut c = daemon.client().await;
        let job = c
            .submit_proof(winning_request("", randomness))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        daemon.sigterm();
        // The stop is seen when a new proof is refused.
        let deadline = Instant::now() + Duration::from_secs(30);
        let refused = loop {
            let r = c.submit_proof(winning_request("after-term", randomness)).await;
            match r {
                Err(status) => break status,
                Ok(accepted) => {
                    // Accepted before the signal was handled: cancel it, try again.
                    cancel_job(&mut c, accepted.into_inner().job_id).await;
                    assert!(Instant::now() < deadline, "SIGTERM was not seen: {}", daemon.log_text());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert!(refused.message().contains("shutting down"), "{refused:?}");
        let mut fresh = daemon.client().await;
        let (r1, r2) = tokio::join!(await_job(&mut c, job.clone(), 0), await_job(&mut fresh, job, 0));
        assert!(winning_verifies(randomness, completed(&r1)));
        assert_eq!(r1.proof, r2.proof);
    });
    assert!(
        daemon.wait_exit(Duration::from_secs(60)).success(),
        "{}",
        daemon.log_text()
    );
    assert!(!path.exists(), "the socket file is removed");

    // No grace: every job in flight is answered CANCELLED (or COMPLETED), none hangs.
    let path = socket("term0");
    let mut daemon = Daemon::start(
        "term0",
        &format!("unix://{}", path.display()),
        &["--shutdown-grace", "0", "--synthesis-threads", "1"],
    );
    let answers = rt.block_on(async {
        let mut c = daemon.client().await;
        let waits: Vec<_> = (0..6)
            .map(|i| {
                let mut c = c.clone();
                tokio::spawn(async move { prove(&mut c, winning_request(&format!("t{i}"), randomness)).await })
            })
            .collect();
        // Every Prove is a job before the signal.
        let deadline = Instant::now() + Duration::from_secs(30);
        while winning_live(&mut c).await < 6 {
            assert!(Instant::now() < deadline, "six jobs never live: {}", daemon.log_text());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        daemon.sigterm();
        let mut answers = Vec::new();
        for w in waits {
            answers.push(
                tokio::time::timeout(Duration::from_secs(120), w)
                    .await
                    .expect("answered")
                    .unwrap(),
            );
        }
        answers
    });
    let cancelled = answers.iter().filter(|r| r.status == Outcome::Cancelled as i32).count();
    assert!(cancelled >= 1, "{answers:?}");
    for r in &answers {
        assert!(
            r.status == Outcome::Cancelled as i32 || winning_verifies(randomness, completed(r)),
            "{r:?}"
        );
    }
    assert!(
        daemon.wait_exit(Duration::from_secs(60)).success(),
        "{}",
        daemon.log_text()
    );
    assert!(daemon.log_text().contains("cancelled by shutdown"));
}

#[test]
fn the_command_line_explains_itself_and_warns_beyond_loopback() {
    let out = Command::new(daemon_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--config",
        "--listen",
        "--log-level",
        "--param-dir",
        "--memory-budget",
        "--gpus",
        "--synthesis-threads",
        "--shutdown-grace",
        "--metrics-listen",
        "FIL_PROOFS_PARAMETER_CACHE",
        "unix://",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    let out = Command::new(daemon_bin())
        .args(["--listen", "nowhere"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("listen"), "{out:?}");
    let daemon = Daemon::start("open", &format!("0.0.0.0:{}", free_port()), &[]);
    assert!(daemon.log_text().contains("no authentication"), "{}", daemon.log_text());
}

/// The daemon's resident memory (KiB) and open file descriptors.
fn rss_and_fds(pid: i32) -> (u64, usize) {
    let mut status = String::new();
    std::fs::File::open(format!("/proc/{pid}/status"))
        .unwrap()
        .read_to_string(&mut status)
        .unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    (rss, std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count())
}

/// 8 concurrent clients x `CUZK_DAEMON_LOAD` (default 25) Winning PoSt, each fifth
/// cancelled and each seventh awaited first with a short timeout: every request answered,
/// each COMPLETED one a proof filecoin-proofs verifies, completed = proved, and afterwards the
/// daemon's RSS near where it was after its first proof and no file descriptor left open.
#[test]
fn load_of_8_clients_with_cancels_and_timeouts_leaves_no_leak() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let per_client: usize = std::env::var("CUZK_DAEMON_LOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let randomness = [31u8; 32];
    let path = socket("load");
    let daemon = Daemon::start("load", &format!("unix://{}", path.display()), &[]);
    let rt = rt();
    let req = winning_request("", randomness);
    let before = rt.block_on(async {
        let mut c = daemon.client().await;
        completed(&prove(&mut c, req.clone()).await);
        drop(c);
        tokio::time::sleep(Duration::from_millis(200)).await;
        rss_and_fds(daemon.pid())
    });
    let start = Instant::now();
    let answers = rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|client| {
                let (req, address) = (req.clone(), daemon.address.clone());
                async move {
                    let mut c = connect(address).await.unwrap();
                    let mut answers = Vec::new();
                    for i in 0..per_client {
                        let n = client * per_client + i;
                        let id = c.submit_proof(req.clone()).await.unwrap().into_inner().job_id;
                        if n % 5 == 4 {
                            cancel_job(&mut c, id.clone()).await;
                        }
                        if n % 7 == 3 {
                            // (A job of both kinds, n = 24 mod 35, was cancelled just before.)
                            let s = await_job(&mut c, id.clone(), 1).await.status;
                            let cancelled = n % 5 == 4 && s == Outcome::Cancelled as i32;
                            assert!(
                                s == Outcome::Timeout as i32 || s == Outcome::Completed as i32 || cancelled,
                                "request {n}: {s}"
                            );
                        }
                        answers.push(await_job(&mut c, id, 0).await);
                    }
                    answers
                }
            })
            .map(|f| tokio::spawn(f))
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    let elapsed = start.elapsed();
    assert_eq!(answers.len(), 8 * per_client);
    let proved = answers.iter().filter(|r| r.status == Outcome::Completed as i32).count();
    let cancelled = answers.iter().filter(|r| r.status == Outcome::Cancelled as i32).count();
    assert_eq!(proved + cancelled, answers.len(), "only completed or cancelled");
    assert!(cancelled >= 1 && cancelled <= answers.len() / 5 + 1, "{cancelled}");
    // Every completed proof verifies (the distinct bytes: r and s differ per proof).
    for r in answers.iter().filter(|r| r.status == Outcome::Completed as i32) {
        assert!(winning_verifies(randomness, &r.proof));
    }
    let (rss, fds, status) = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (rss, fds) = rss_and_fds(daemon.pid());
        let mut c = daemon.client().await;
        (rss, fds, c.get_status(GetStatusRequest {}).await.unwrap().into_inner())
    });
    assert_eq!(status.total_proofs_completed as usize, proved + 1, "completed = proved");
    eprintln!(
        "load: {} requests in {elapsed:.1?}, {proved} proved, {cancelled} cancelled; RSS {} -> {} KiB, fds {} -> {}",
        answers.len(),
        before.0,
        rss,
        before.1,
        fds
    );
    // One connection more (the status client) at most.
    assert!(
        fds <= before.1 + 1,
        "file descriptors: {} before, {fds} after",
        before.1
    );
    assert!(
        rss <= before.0 + before.0 / 2 + 64 * 1024,
        "RSS {} KiB before, {rss} KiB after",
        before.0
    );
}

/// The proof bytes of a PoRep C2 sent as Curio's PoRepSnarkCuzk sends it (the C1 wrapper with
/// base64), checked by filecoin-proofs' `verify_seal`. GPU machine: 2 KiB C2 parameters take
/// tens of minutes to make on 2 cores.
#[test]
#[ignore]
fn c2_through_the_daemon_verifies_with_filecoin_proofs() {
    ensure_params(ParamsKind::Seal(SEAL));
    let daemon = Daemon::start("c2", &format!("unix://{}", socket("c2").display()), &["--gpus", "auto"]);
    let s = &sectors()[0];
    let seed = [17u8; 32];
    // Curio's request for the sector's C1 output under `seed`.
    let c2 = |seed: [u8; 32]| {
        let wrapper = serde_json::json!({
            "SectorNum": s.sector_id,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json(s, seed)),
            "SectorSize": 2048,
        });
        SubmitProofRequest {
            request_id: format!("porep-{MINER}-{}", s.sector_id),
            proof_kind: ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: 5, // abi.RegisteredSealProof_StackedDrg2KiBV1_1
            priority: Priority::Normal as i32,
            vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
            sector_number: s.sector_id,
            miner_id: MINER,
            ..SubmitProofRequest::default()
        }
    };
    let (r, status, redone) = rt().block_on(async {
        let mut c = daemon.client().await;
        let r = prove(&mut c, c2(seed)).await;
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        let metrics = metrics_text(&mut c).await;
        // The C2 redone with a new C1 (another seed) under the same request id: a new proof.
        let redone = prove(&mut c, c2([19; 32])).await;
        (r, (status, metrics), redone)
    });
    let (status, metrics) = status;
    assert!(verify_seal(s, s.comm_r(), seed, completed(&r)));
    assert_ne!(redone.job_id, r.job_id, "a new C1 under a kept id is proved anew");
    assert!(verify_seal(s, s.comm_r(), [19; 32], completed(&redone)));
    // On a GPU host the status names the GPU and its memory.
    if cfg!(feature = "cuda") {
        let gpu = &status.gpus[0];
        assert!(!gpu.name.is_empty() && gpu.name != "cpu", "{status:?}");
        assert!(
            gpu.vram_free_bytes > 0 && gpu.vram_free_bytes <= gpu.vram_total_bytes,
            "{status:?}"
        );
        // The 2 KiB PoRep set is small: resident on the GPU after the proof, so HOT, and the
        // metrics say where (the GPU chose: no flag).
        let porep = status.loaded_srs.iter().find(|s| s.circuit_id == "porep-2k");
        assert_eq!(porep.map(|s| s.tier), Some(0), "{status:?}");
        for (placement, n) in [("device", 1), ("streamed", 0)] {
            let row = format!("cuzk_parameter_set_gpus{{circuit_id=\"porep-2k\",placement=\"{placement}\"}} {n}");
            assert!(metrics.contains(&row), "{row} in {metrics}");
        }
    } else {
        assert!(
            !metrics.contains("cuzk_parameter_set_gpus"),
            "no GPU, no rows: {metrics}"
        );
    }
    assert!(!verify_seal(s, s.comm_r(), [18; 32], &r.proof));
}

/// SnapDeals with raw 32-byte commitments, as Curio's ProveUpdateCuzk sends it, checked by
/// filecoin-proofs' `verify_empty_sector_update_proof`. GPU machine (as C2).
#[test]
#[ignore]
fn snap_deals_through_the_daemon_verify_with_filecoin_proofs() {
    ensure_params(ParamsKind::Update(UPDATE));
    let daemon = Daemon::start(
        "snap",
        &format!("unix://{}", socket("snap").display()),
        &["--gpus", "auto"],
    );
    let (vanilla, [old, new, d]) = update_vanilla(&sectors()[1], "daemon-update");
    let req = SubmitProofRequest {
        request_id: "snap-1000-101".into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: 0, // abi.RegisteredUpdateProof_StackedDrg2KiBV1
        priority: Priority::Normal as i32,
        vanilla_proofs: vanilla,
        comm_r_old: old.to_vec(),
        comm_r_new: new.to_vec(),
        comm_d_new: d.to_vec(),
        ..SubmitProofRequest::default()
    };
    let r = rt().block_on(async { prove(&mut daemon.client().await, req).await });
    let proof = completed(&r).to_vec();
    assert!(filecoin_proofs_api::update::verify_empty_sector_update_proof(UPDATE, &proof, old, new, d).unwrap());
    assert!(
        !filecoin_proofs_api::update::verify_empty_sector_update_proof(UPDATE, &proof, new, new, d).unwrap_or(false)
    );
}
