//! What many Curio clients see from `cuzk-daemon` at once (issue 45): `--clients` concurrent
//! clients (default 8), each sending `--rounds` rounds (default 5) of one request of every kind
//! in `--kinds` (default all four: PoRep C2, SnapDeals, Window PoSt — every partition of one
//! PoSt —, Winning PoSt; 2 KiB sectors) at Curio's priorities (Winning CRITICAL, Window HIGH,
//! C2 and SnapDeals NORMAL), each awaited with `Prove`. Per kind: the latency from the call to
//! its answer (p50, p99, max) and the proofs a second over the whole run; the daemon's RSS
//! when idle after its first proofs and its peak. Every proof is checked by filecoin-proofs
//! after the run (a wrong proof would make the numbers meaningless). Prints a table with the
//! machine. A benchmark, not a timed test:
//!
//!     cargo bench --features daemon[,cuda] --bench daemon_load [-- --clients N --rounds N --kinds porep,snap,window,winning --gpus auto|cpu]
//!
//! `--gpus` is the daemon's (default `auto`: GPU 0 with `cuda`, else the CPU). The 2 KiB
//! parameters and sectors come from tests/common/filecoin.rs, made on first use (C2's and
//! SnapDeals' parameters take tens of minutes on 2 cores, a few on the H200 host's 16). Away
//! from its build (the GPU machine), set `CUZK_DAEMON_BIN` to the `cuzk-daemon` binary and
//! `CUZK_FILECOIN_TMP` to a writable directory.

#[path = "../tests/common/daemon_client.rs"]
mod daemon_client;
#[path = "../tests/common/filecoin.rs"]
mod fixtures;
#[path = "../examples/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk::daemon::proto::*;
use cuzk::filecoin::ParamsKind;
use daemon_client::{connect, daemon_bin, Client};
use filecoin_proofs_api::post as api_post;
use fixtures::*;

/// The kinds, in the table's order.
const KINDS: [&str; 4] = ["porep", "snap", "window", "winning"];

struct Args {
    clients: usize,
    rounds: usize,
    kinds: Vec<&'static str>,
    gpus: String,
}

fn args() -> Args {
    let mut a = Args {
        clients: 8,
        rounds: 5,
        kinds: KINDS.to_vec(),
        gpus: "auto".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--clients" => a.clients = value().parse().expect("--clients N"),
            "--rounds" => a.rounds = value().parse().expect("--rounds N"),
            "--gpus" => a.gpus = value(),
            "--kinds" => {
                a.kinds = value()
                    .split(',')
                    .map(|k| {
                        *KINDS
                            .iter()
                            .find(|&&known| known == k)
                            .unwrap_or_else(|| panic!("--kinds: {k:?} is not one of {KINDS:?}"))
                    })
                    .collect()
            }
            // cargo bench passes --bench.
            _ => {}
        }
    }
    assert!(a.clients > 0 && a.rounds > 0 && !a.kinds.is_empty(), "nothing to send");
    a
}

/// One request to send: its kind, and what its answer is checked with.
#[derive(Clone)]
struct Request {
    kind: &'static str,
    submit: SubmitProofRequest,
    check: Check,
}

/// How a proof is checked after the run.
#[derive(Clone)]
enum Check {
    /// C2 of the shared sector 0 under this seed.
    Seal([u8; 32]),
    /// SnapDeals with these commitments (CommR old, CommR new, CommD new).
    Update([[u8; 32]; 3]),
    /// Winning PoSt under this randomness.
    Winning([u8; 32]),
    /// Partition `k` of `n` of the Window PoSt under this randomness.
    Window([u8; 32], usize, usize),
}

/// A SnapDeals request's vanilla proofs and commitments (CommR old, CommR new, CommD new).
type UpdateInputs = (Vec<Vec<u8>>, [[u8; 32]; 3]);

/// Client `c`'s round `r`: one request of each kind, the Window PoSt as its partitions.
fn round(kinds: &[&'static str], c: usize, r: usize) -> Vec<Request> {
    let tag = (c * 1000 + r) as u64;
    let randomness = |kind: u8| {
        let mut x = [kind; 32];
        x[..8].copy_from_slice(&tag.to_le_bytes());
        x[31] &= 0x3f;
        x
    };
    let mut out = Vec::new();
    for &kind in kinds {
        match kind {
            "porep" => {
                let s = &sectors()[0];
                let seed = randomness(1);
                let wrapper = serde_json::json!({
                    "SectorNum": s.sector_id,
                    "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json(s, seed)),
                    "SectorSize": 2048,
                });
                out.push(Request {
                    kind,
                    submit: SubmitProofRequest {
                        request_id: format!("porep-{MINER}-{}-{tag}", s.sector_id),
                        proof_kind: ProofKind::PorepSealCommit as i32,
                        sector_size: 2048,
                        registered_proof: 5, // abi.RegisteredSealProof_StackedDrg2KiBV1_1
                        priority: Priority::Normal as i32,
                        vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
                        sector_number: s.sector_id,
                        miner_id: MINER,
                        ..SubmitProofRequest::default()
                    },
                    check: Check::Seal(seed),
                });
            }
            "snap" => {
                // The same update every time (the fixture's data is seeded): made once.
                static UPDATE_INPUTS: std::sync::OnceLock<UpdateInputs> = std::sync::OnceLock::new();
                let (vanilla, comms) = UPDATE_INPUTS
                    .get_or_init(|| update_vanilla(&sectors()[1], "daemon-load"))
                    .clone();
                out.push(Request {
                    kind,
                    submit: SubmitProofRequest {
                        request_id: format!("snap-{MINER}-101-{tag}"),
                        proof_kind: ProofKind::SnapDealsUpdate as i32,
                        sector_size: 2048,
                        registered_proof: 0, // abi.RegisteredUpdateProof_StackedDrg2KiBV1
                        priority: Priority::Normal as i32,
                        vanilla_proofs: vanilla,
                        comm_r_old: comms[0].to_vec(),
                        comm_r_new: comms[1].to_vec(),
                        comm_d_new: comms[2].to_vec(),
                        ..SubmitProofRequest::default()
                    },
                    check: Check::Update(comms),
                });
            }
            "window" => {
                let randomness = randomness(3);
                let (vanilla, _) = window_vanilla(&randomness);
                let n = vanilla.chunks(2).count();
                for (k, chunk) in vanilla.chunks(2).enumerate() {
                    out.push(Request {
                        kind,
                        submit: SubmitProofRequest {
                            request_id: format!("wdpost-{MINER}-{tag}-{k}"),
                            proof_kind: ProofKind::WindowPostPartition as i32,
                            sector_size: 2048,
                            registered_proof: 10, // abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
                            priority: Priority::High as i32,
                            vanilla_proofs: chunk.to_vec(),
                            miner_id: MINER,
                            randomness: randomness.to_vec(),
                            partition_index: k as u32,
                            ..SubmitProofRequest::default()
                        },
                        check: Check::Window(randomness, k, n),
                    });
                }
            }
            "winning" => {
                let randomness = randomness(4);
                let (vanilla, _) = winning_vanilla(&randomness);
                out.push(Request {
                    kind,
                    submit: SubmitProofRequest {
                        request_id: format!("winpost-{MINER}-{tag}"),
                        proof_kind: ProofKind::WinningPost as i32,
                        sector_size: 2048,
                        registered_proof: 0, // abi.RegisteredPoStProof_StackedDrgWinning2KiBV1
                        priority: Priority::Critical as i32,
                        vanilla_proofs: vanilla,
                        miner_id: MINER,
                        randomness: randomness.to_vec(),
                        ..SubmitProofRequest::default()
                    },
                    check: Check::Winning(randomness),
                });
            }
            _ => unreachable!("checked by args"),
        }
    }
    out
}

/// A request's answer: its kind, the time from the call to the answer, the proof.
struct Answer {
    kind: &'static str,
    took: Duration,
    proof: Vec<u8>,
    check: Check,
}

/// Sends `requests` one after the other on `client`, each awaited.
async fn client_run(mut client: Client, requests: Vec<Request>) -> Vec<Answer> {
    let mut out = Vec::new();
    for r in requests {
        let t = Instant::now();
        let reply = client
            .prove(ProveRequest { submit: Some(r.submit) })
            .await
            .expect("Prove answers")
            .into_inner()
            .result
            .expect("Prove has a result");
        let took = t.elapsed();
        assert_eq!(
            reply.status,
            await_proof_response::Status::Completed as i32,
            "{} failed: {}",
            r.kind,
            reply.error_message
        );
        out.push(Answer {
            kind: r.kind,
            took,
            proof: reply.proof,
            check: r.check,
        });
    }
    out
}

/// A Window PoSt partition's answer: its index, the PoSt's partitions, the proof.
type Partition<'a> = (usize, usize, &'a [u8]);

/// How many of the proofs filecoin-proofs accepts (a proof it refuses fails the run). Window
/// partitions are merged per PoSt first.
fn verified(answers: &[Answer]) -> usize {
    let mut ok = 0;
    let mut windows: std::collections::BTreeMap<[u8; 32], Vec<Partition<'_>>> = Default::default();
    for a in answers {
        let good = match a.check {
            Check::Seal(seed) => verify_seal(&sectors()[0], sectors()[0].comm_r(), seed, &a.proof),
            Check::Update([old, new, d]) => {
                filecoin_proofs_api::update::verify_empty_sector_update_proof(UPDATE, &a.proof, old, new, d)
                    .unwrap_or(false)
            }
            Check::Winning(randomness) => {
                let (_, public) = winning_vanilla(&randomness);
                api_post::verify_winning_post(&randomness, &a.proof, &public, prover_id()).unwrap_or(false)
            }
            Check::Window(randomness, k, n) => {
                windows.entry(randomness).or_default().push((k, n, &a.proof));
                continue;
            }
        };
        assert!(good, "a {} proof does not verify", a.kind);
        ok += 1;
    }
    for (randomness, mut parts) in windows {
        parts.sort_by_key(|p| p.0);
        assert_eq!(parts.len(), parts[0].1, "every partition of the Window PoSt answered");
        let merged = api_post::merge_window_post_partition_proofs(
            WINDOW,
            parts
                .iter()
                .map(|p| filecoin_proofs_api::PartitionSnarkProof(p.2.to_vec()))
                .collect(),
        )
        .expect("the partitions merge");
        let (_, public) = window_vanilla(&randomness);
        assert!(
            api_post::verify_window_post(&randomness, &[(WINDOW, &merged)], &public, prover_id()).unwrap_or(false),
            "a Window PoSt does not verify"
        );
        ok += parts.len();
    }
    ok
}

/// `VmRSS` and `VmHWM` of process `pid`, in MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let (now, peak) = support::rss(pid);
    (now as f64 / (1 << 20) as f64, peak as f64 / (1 << 20) as f64)
}

/// The `q` quantile (0..=1) of sorted `v`, nearest rank.
fn quantile(v: &[Duration], q: f64) -> Duration {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

fn main() {
    let a = args();
    for &k in &a.kinds {
        ensure_params(match k {
            "porep" => ParamsKind::Seal(SEAL),
            "snap" => ParamsKind::Update(UPDATE),
            "window" => ParamsKind::PoSt(WINDOW),
            _ => ParamsKind::PoSt(WINNING),
        });
    }
    eprintln!("making the requests (C1 outputs, vanilla proofs) ...");
    let work: Vec<Vec<Request>> = (0..a.clients)
        .map(|c| (0..a.rounds).flat_map(|r| round(&a.kinds, c, r)).collect())
        .collect();

    let socket = tmp_root().join(format!("daemon-load-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let mut child = std::process::Command::new(daemon_bin())
        .args([
            "--listen",
            &format!("unix://{}", socket.display()),
            "--log-level",
            "warn",
        ])
        .args(["--gpus", &a.gpus])
        .arg("--param-dir")
        .arg(std::env::var("FIL_PROOFS_PARAMETER_CACHE").expect("set by the fixtures"))
        .spawn()
        .expect("start cuzk-daemon");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let address = format!("unix://{}", socket.display());
    // Warm-up: one request of each kind alone (parameters loaded, circuits recorded,
    // generators validated), not counted.
    let warm = round(&a.kinds, a.clients, 0);
    let warmed = rt.block_on(async { client_run(connect(&address).await, warm).await });
    let (idle, _) = rss_mib(child.id());
    let start = Instant::now();
    let answers: Vec<Answer> = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for requests in work {
            let client = connect(&address).await;
            set.spawn(client_run(client, requests));
        }
        set.join_all().await.into_iter().flatten().collect()
    });
    let wall = start.elapsed();
    let (after, peak) = rss_mib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&socket);
    let checked = verified(&warmed) + verified(&answers);

    println!(
        "machine: {}; daemon --gpus {} (cuzk {}{})",
        support::machine(),
        a.gpus,
        env!("CARGO_PKG_VERSION"),
        if cfg!(feature = "cuda") { ", cuda" } else { "" }
    );
    println!(
        "{} clients × {} rounds of {:?} over a Unix socket, each request awaited (Prove); {} proofs in {:.1} s, all {} verified by filecoin-proofs",
        a.clients,
        a.rounds,
        a.kinds,
        answers.len(),
        wall.as_secs_f64(),
        checked
    );
    println!("| kind | requests | p50 | p99 | max | proofs/s over the run |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for &k in &a.kinds {
        let mut t: Vec<Duration> = answers.iter().filter(|x| x.kind == k).map(|x| x.took).collect();
        t.sort();
        println!(
            "| {k} | {} | {:.0} ms | {:.0} ms | {:.0} ms | {:.2} |",
            t.len(),
            quantile(&t, 0.5).as_secs_f64() * 1e3,
            quantile(&t, 0.99).as_secs_f64() * 1e3,
            t[t.len() - 1].as_secs_f64() * 1e3,
            t.len() as f64 / wall.as_secs_f64()
        );
    }
    println!("daemon RSS: {idle:.0} MiB idle after the warm-up, {after:.0} MiB after the run, peak {peak:.0} MiB");
}
