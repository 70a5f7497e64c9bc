//! What `cuzk-daemon` adds over the in-process engine, per 2 KiB proof (target ≤ 5 ms), and
//! how long decoding a 32 GiB C1 wrapper takes (~44 MB of JSON; target ≤ 0.5 s), and what 32 GiB
//! C2 requests cost the daemon before proving (issue 45). Prints
//! a table with the machine. A benchmark, not a timed test:
//!
//!     cargo bench --features daemon --bench daemon_overhead [-- --proofs N] [--queued N]
//!
//! Rows (each the median of N, after one warm-up):
//! - `refused by the Filecoin layer`: a full 2 KiB Winning PoSt request whose vanilla proof is
//!   cut by a byte, so the Filecoin layer refuses it before any proving: in-process that is the
//!   `submit_winning_post_with_vanilla` call; through the daemon the whole Prove round trip
//!   (gRPC over the socket, decoding, the job, the FAILED reply). Their difference is the
//!   daemon's overhead per request, without the proving's noise.
//! - `Winning PoSt 2 KiB (proved)`: the same proved and verified, in-process and through the
//!   daemon (CPU: on busy cores the spread of the proving hides milliseconds).
//! - `C1 wrapper decode`: `cuzk::daemon::request::decode` of a PoRep C2 request whose wrapper
//!   carries a fabricated C1 output of a 32 GiB sector, base64 in JSON.
//! - `A 32 GiB C2 in the daemon`: the same request sent to `cuzk-daemon` once, then `--queued`
//!   (default 10: Curio's `MaxPending`) at once. The fabricated C1 output is filecoin-proofs-api's
//!   `SealCommitPhase1Output` of ten partitions of 18 challenges of random vanilla proofs at the
//!   real tree depths (tests/common/stacked.rs, as `native_porep_bench` makes them), its replica
//!   id made for the miner and sector, serialised as filecoin-ffi's `seal_commit_phase1` returns
//!   it (serde JSON) and wrapped as Curio sends it. The daemon decodes the wrapper and the C1
//!   output, checks it and stops at the 32 GiB parameter file, absent here: the time from submit
//!   to that FAILED answer is the daemon's handling of the request up to proving, and its peak
//!   RSS (`VmHWM`) over its RSS before, what the requests cost it at once. A job in the engine
//!   holds the decoded vanilla proofs (the request's bytes are dropped then): their size is
//!   measured here in-process, ten decoded and held.
//!
//! With `--preload-dir DIR [--preload ID] [--gpus G]` it measures only **the daemon's memory
//! with a parameter set loaded** (issue 45 item 9): `cuzk-daemon --param-dir DIR` started idle,
//! `PreloadSRS ID` (default `porep-32g`), its RSS then and after a few idle seconds, its peak
//! (`VmHWM`) through the load, and after `EvictSRS`. DIR holds the set, e.g. 32 GiB-shape random
//! parameters written by `sector_bench --layers 11 --challenges 18 --write-params DIR` (the
//! real file, 47 GB, loads the same way):
//!
//!     cargo bench --features daemon --bench daemon_overhead -- --preload-dir DIR
//!
//! Both sides use the daemon's engine settings (CPU, 2 synthesis threads, 4 GiB) and the test
//! parameters tests/common/filecoin.rs makes (generated on first use).

#[path = "../tests/common/daemon_client.rs"]
mod daemon_client;
#[path = "../tests/common/filecoin.rs"]
mod fixtures;
#[path = "../tests/common/stacked.rs"]
mod stacked;
#[path = "../examples/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk::daemon::config::{Args, Config};
use cuzk::daemon::proto::*;
use cuzk::filecoin::{self, Options, ParamsKind};
use daemon_client::{connect, daemon_bin, free_listen, Client};
use fixtures::*;

const RANDOMNESS: [u8; 32] = [47; 32];

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut proofs, mut queued) = (5usize, 10usize);
    let (mut preload_dir, mut preload, mut gpus) = (None, "porep-32g".to_string(), "cpu".to_string());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--proofs" => proofs = args.next().and_then(|n| n.parse().ok()).expect("--proofs N"),
            "--queued" => queued = args.next().and_then(|n| n.parse().ok()).expect("--queued N"),
            "--preload-dir" => preload_dir = Some(args.next().expect("--preload-dir DIR")),
            "--preload" => preload = args.next().expect("--preload ID"),
            "--gpus" => gpus = args.next().expect("--gpus G"),
            _ => {}
        }
    }
    if let Some(dir) = preload_dir {
        preloaded(&dir, &preload, &gpus);
        return;
    }
    ensure_params(ParamsKind::PoSt(WINNING));
    let (vanilla, _) = winning_vanilla(&RANDOMNESS);
    let mut cut = vanilla.clone();
    cut[0].pop();

    let daemon_args = ["--gpus", "cpu", "--synthesis-threads", "2", "--memory-budget", "4GiB"];
    let config = Config::resolve(Args {
        gpus: Some("cpu".into()),
        synthesis_threads: Some(2),
        memory_budget: Some("4GiB".into()),
        ..Args::default()
    })
    .unwrap();
    filecoin::configure(config.engine().unwrap()).unwrap();
    let in_process = |v: &[Vec<u8>]| {
        let t = Instant::now();
        let out = filecoin::submit_winning_post_with_vanilla(WINNING, &RANDOMNESS, prover_id(), v, Options::default())
            .and_then(|j| j.wait());
        (t.elapsed(), out.is_ok())
    };
    let refused_in = median(proofs * 20, || {
        let (t, ok) = in_process(&cut);
        assert!(!ok);
        t
    });
    let proved_in = median(proofs, || {
        let (t, ok) = in_process(&vanilla);
        assert!(ok);
        t
    });

    let listen = free_listen();
    let mut child = std::process::Command::new(daemon_bin())
        .args(["--listen", &listen, "--log-level", "warn"])
        .args(daemon_args)
        .arg("--param-dir")
        .arg(std::env::var("FIL_PROOFS_PARAMETER_CACHE").unwrap())
        .spawn()
        .expect("start cuzk-daemon");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt.block_on(connect(&format!("http://{listen}")));
    let request = |v: &[Vec<u8>]| SubmitProofRequest {
        proof_kind: ProofKind::WinningPost as i32,
        sector_size: 2048,
        registered_proof: 0,
        priority: Priority::Critical as i32,
        vanilla_proofs: v.to_vec(),
        miner_id: MINER,
        randomness: RANDOMNESS.to_vec(),
        ..SubmitProofRequest::default()
    };
    let mut through_daemon = |v: &[Vec<u8>]| {
        let req = request(v);
        rt.block_on(async {
            let t = Instant::now();
            let r = client
                .prove(ProveRequest { submit: Some(req) })
                .await
                .unwrap()
                .into_inner();
            (t.elapsed(), r.result.unwrap().status)
        })
    };
    let completed = await_proof_response::Status::Completed as i32;
    let failed = await_proof_response::Status::Failed as i32;
    let refused_d = median(proofs * 20, || {
        let (t, s) = through_daemon(&cut);
        assert_eq!(s, failed);
        t
    });
    let proved_d = median(proofs, || {
        let (t, s) = through_daemon(&vanilla);
        assert_eq!(s, completed);
        t
    });
    eprintln!("fabricating a 32 GiB C1 output ...");
    let c1 = C1::fabricate();
    let in_daemon = rt.block_on(c2_in_daemon(&client, &c1, child.id(), queued));
    let _ = child.kill();
    let _ = child.wait();

    let (wrapper_bytes, wire, decode) = c1_decode(&c1);
    let held = held_decoded(&c1, queued);

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "machine: {}, load average {} (cuzk {}, CPU backend)",
        support::machine(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        env!("CARGO_PKG_VERSION")
    );
    println!("| 2 KiB request | in-process | cuzk-daemon (loopback TCP) | overhead | target |");
    println!("| --- | --- | --- | --- | --- |");
    for (what, a, b) in [
        ("Winning PoSt refused by the Filecoin layer", refused_in, refused_d),
        ("Winning PoSt 2 KiB (proved, CPU)", proved_in, proved_d),
    ] {
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {:+.2} ms | ≤ 5 ms |",
            ms(a),
            ms(b),
            ms(b) - ms(a)
        );
    }
    println!();
    println!("| C1 wrapper (32 GiB-sized, {wrapper_bytes} bytes) | best of 5 | target |");
    println!("| --- | --- | --- |");
    println!(
        "| protobuf decode of the SubmitProofRequest | {:.3} s | |",
        wire.as_secs_f64()
    );
    println!(
        "| `request::decode` (JSON wrapper, base64) | {:.3} s | ≤ 0.5 s |",
        decode.as_secs_f64()
    );
    println!();
    println!(
        "| A 32 GiB C2 in cuzk-daemon (C1 output {:.1} MB, request {:.1} MB) | submit → FAILED at the parameter file | daemon RSS before → peak (VmHWM) |",
        c1.json.len() as f64 / 1e6,
        wrapper_bytes as f64 / 1e6
    );
    println!("| --- | --- | --- |");
    for (what, r) in [("one request", &in_daemon[0]), ("all at once", &in_daemon[1])] {
        println!(
            "| {what} ({}) | {} | {:.0} → {:.0} MiB (+{:.0} MiB) |",
            r.took.len(),
            r.latencies(),
            r.rss_before as f64 / MIB,
            r.peak as f64 / MIB,
            (r.peak - r.rss_before.min(r.peak)) as f64 / MIB
        );
    }
    println!(
        "| {queued} decoded C1 outputs held in-process (what queued jobs keep) | decoded in {:.2} s | +{:.0} MiB ({:.1} MiB each) |",
        held.decode.as_secs_f64(),
        held.bytes as f64 / MIB,
        held.bytes as f64 / MIB / queued as f64
    );
}

const MIB: f64 = (1 << 20) as f64;

/// A fabricated 32 GiB C1 output: filecoin-proofs-api's type and its JSON.
struct C1 {
    json: Vec<u8>,
}

/// The sector number the fabricated C1 output is made for (with [`MINER`]).
const SECTOR: u64 = 4242;

impl C1 {
    /// Ten partitions of 18 challenges of random vanilla proofs at the 32 GiB sector's real
    /// depths (11 layers), the replica id generated as the sealer does for [`MINER`] and
    /// [`SECTOR`] (so the daemon's check of the miner and sector passes), serialised as
    /// filecoin-ffi's `seal_commit_phase1` returns it.
    fn fabricate() -> Self {
        use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
        use filecoin_proofs_api::RegisteredSealProof;
        use rand::{Rng, SeedableRng};
        type Tree = filecoin_proofs::SectorShape32GiB;

        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(32);
        let registered = RegisteredSealProof::StackedDrg32GiBV1_1;
        let config = registered.as_v1_config();
        let partitions: Vec<_> = (0..usize::from(config.partitions))
            .map(|_| stacked::random_partition::<Tree>(32, 18, 11, &mut rng).1)
            .collect();
        let (mut comm_d, mut comm_r, ticket, seed): ([u8; 32], [u8; 32], [u8; 32], [u8; 32]) =
            (rng.gen(), rng.gen(), rng.gen(), rng.gen());
        // Canonical field elements, as real commitments are (the top bits clear).
        comm_d[31] &= 0x3f;
        comm_r[31] &= 0x3f;
        let replica_id = storage_proofs_porep::stacked::generate_replica_id::<
            filecoin_hashers::poseidon::PoseidonHasher,
            _,
        >(&fixtures::prover_id(), SECTOR, &ticket, comm_d, &config.porep_id);
        let c1 = SealCommitPhase1Output {
            registered_proof: registered,
            vanilla_proofs: VanillaSealProof::StackedDrg32GiBV1(partitions),
            comm_r,
            comm_d,
            replica_id,
            seed,
            ticket,
        };
        Self {
            json: serde_json::to_vec(&c1).expect("a C1 output serialises"),
        }
    }

    /// The PoRep C2 request Curio's PoRepSnarkCuzk sends for it.
    fn request(&self, request_id: String) -> SubmitProofRequest {
        let wrapper = serde_json::to_vec(&serde_json::json!({
            "SectorNum": SECTOR,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&self.json),
            "SectorSize": 32u64 << 30,
        }))
        .unwrap();
        SubmitProofRequest {
            request_id,
            proof_kind: ProofKind::PorepSealCommit as i32,
            sector_size: 32 << 30,
            registered_proof: 8, // abi.RegisteredSealProof_StackedDrg32GiBV1_1
            priority: Priority::Normal as i32,
            vanilla_proof: wrapper,
            sector_number: SECTOR,
            miner_id: MINER,
            ..SubmitProofRequest::default()
        }
    }
}

/// Requests sent to the daemon at once: each one's time from submit to its answer, and the
/// daemon's RSS before and its peak after.
struct InDaemon {
    took: Vec<Duration>,
    rss_before: u64,
    peak: u64,
}

impl InDaemon {
    fn latencies(&self) -> String {
        let mut t = self.took.clone();
        t.sort();
        match t.as_slice() {
            [one] => format!("{:.2} s", one.as_secs_f64()),
            _ => format!(
                "median {:.2} s, last {:.2} s",
                t[t.len() / 2].as_secs_f64(),
                t[t.len() - 1].as_secs_f64()
            ),
        }
    }
}

/// The 32 GiB C2 sent once, then `queued` at once, each awaited (FAILED: the parameter file
/// is absent); the daemon (process `pid`) measured around each.
async fn c2_in_daemon(client: &Client, c1: &C1, pid: u32, queued: usize) -> [InDaemon; 2] {
    let mut rounds = Vec::new();
    for (n, tag) in [(1, "a"), (queued, "b")] {
        let (rss_before, _) = support::rss(pid);
        let mut set = tokio::task::JoinSet::new();
        for i in 0..n {
            let req = c1.request(format!("porep-{MINER}-{SECTOR}-{tag}{i}"));
            let mut c = client.clone().max_encoding_message_size(512 << 20);
            set.spawn(async move {
                let t = Instant::now();
                let job = c.submit_proof(req).await.expect("accepted").into_inner().job_id;
                let done = c
                    .await_proof(AwaitProofRequest {
                        job_id: job,
                        timeout_ms: 0,
                    })
                    .await
                    .expect("answered")
                    .into_inner();
                assert_eq!(
                    done.status,
                    await_proof_response::Status::Failed as i32,
                    "no 32 GiB parameters here: {done:?}"
                );
                assert!(
                    done.error_message.contains("param"),
                    "refused before the parameter load: {}",
                    done.error_message
                );
                t.elapsed()
            });
        }
        let took = set.join_all().await;
        let (_, peak) = support::rss(pid);
        rounds.push(InDaemon { took, rss_before, peak });
    }
    let all = rounds.pop().unwrap();
    [rounds.pop().unwrap(), all]
}

/// `n` C1 outputs decoded into filecoin-proofs-api's type (as the Filecoin layer does) and held:
/// the time and this process's RSS growth.
struct Held {
    decode: Duration,
    bytes: u64,
}

fn held_decoded(c1: &C1, n: usize) -> Held {
    let (before, _) = support::rss(std::process::id());
    let t = Instant::now();
    let held: Vec<filecoin_proofs_api::seal::SealCommitPhase1Output> = (0..n)
        .map(|_| serde_json::from_slice(&c1.json).expect("the fabricated C1 output decodes"))
        .collect();
    let decode = t.elapsed();
    let (after, _) = support::rss(std::process::id());
    drop(held);
    Held {
        decode,
        bytes: after.saturating_sub(before),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median of `n` runs of `f`, after one warm-up.
fn median(n: usize, mut f: impl FnMut() -> Duration) -> Duration {
    f();
    let mut v: Vec<Duration> = (0..n.max(1)).map(|_| f()).collect();
    v.sort();
    v[v.len() / 2]
}

/// The C2 request of the fabricated 32 GiB C1 output: its size, the best of 5 protobuf decodes
/// of the message and of 5 decodes of the request.
fn c1_decode(c1: &C1) -> (usize, Duration, Duration) {
    let req = c1.request(format!("porep-{MINER}-{SECTOR}"));
    let size = req.vanilla_proof.len();
    let wire = prost::Message::encode_to_vec(&req);
    let prost_best = (0..5)
        .map(|_| {
            let t = Instant::now();
            let r = <SubmitProofRequest as prost::Message>::decode(wire.as_slice()).unwrap();
            let took = t.elapsed();
            assert_eq!(r.vanilla_proof.len(), size);
            took
        })
        .min()
        .unwrap();
    let best = (0..5)
        .map(|_| {
            let r = req.clone();
            let t = Instant::now();
            let work = cuzk::daemon::request::decode(r).expect("the wrapper decodes");
            let took = t.elapsed();
            assert!(matches!(work, cuzk::daemon::request::Work::SealCommit { c1: ref got, .. } if *got == c1.json));
            took
        })
        .min()
        .unwrap();
    (size, prost_best, best)
}

/// `--preload-dir`: the daemon's memory idle, with `id`'s set loaded from `dir`, and after its
/// eviction (see the module docs).
fn preloaded(dir: &str, id: &str, gpus: &str) {
    let listen = free_listen();
    let mut child = std::process::Command::new(daemon_bin())
        .args([
            "--listen",
            &listen,
            "--log-level",
            "warn",
            "--gpus",
            gpus,
            "--param-dir",
            dir,
        ])
        .spawn()
        .expect("start cuzk-daemon");
    let pid = child.id();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let rows = rt.block_on(async {
        let mut c = connect(&format!("http://{listen}")).await;
        let mut rows = vec![("started, idle", support::rss(pid), None)];
        let t = Instant::now();
        let p = c
            .preload_srs(PreloadSrsRequest { circuit_id: id.into() })
            .await
            .unwrap_or_else(|e| panic!("PreloadSRS {id} from {dir}: {e}"))
            .into_inner();
        assert!(!p.already_loaded, "{p:?}");
        rows.push(("PreloadSRS answered", support::rss(pid), Some(t.elapsed())));
        tokio::time::sleep(Duration::from_secs(5)).await;
        rows.push(("5 s later, idle with the set", support::rss(pid), None));
        let size = c
            .get_status(GetStatusRequest {})
            .await
            .unwrap()
            .into_inner()
            .loaded_srs
            .iter()
            .find(|s| s.circuit_id == id)
            .map_or(0, |s| s.size_bytes);
        let e = c
            .evict_srs(EvictSrsRequest { circuit_id: id.into() })
            .await
            .unwrap()
            .into_inner();
        assert!(e.was_loaded, "{e:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        rows.push(("EvictSRS, 2 s later", support::rss(pid), None));
        (rows, size)
    });
    let _ = child.kill();
    let _ = child.wait();
    let (rows, size) = rows;
    println!(
        "\n## cuzk-daemon with {id} loaded ({}, --gpus {gpus})",
        support::machine()
    );
    println!("set in GetStatus: {:.2} GiB\n", gib(size));
    println!("| moment | RSS GiB | peak RSS (VmHWM) GiB | took |");
    println!("|---|---|---|---|");
    for (what, (now, peak), took) in rows {
        let took = took.map_or(String::new(), |d| format!("{:.1} s", d.as_secs_f64()));
        println!("| {what} | {:.2} | {:.2} | {took} |", gib(now), gib(peak));
    }
}
