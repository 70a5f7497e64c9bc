//! What `cuzk-daemon` adds over the in-process engine, per 2 KiB proof (target ≤ 5 ms), and
//! how long decoding a 32 GiB-sized C1 wrapper takes (~50 MB of JSON; target ≤ 0.5 s). Prints
//! a table with the machine. A benchmark, not a timed test:
//!
//!     cargo bench --features daemon --bench daemon_overhead [-- --proofs N]
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
//!   carries a fabricated C1 output of a 32 GiB sector's size and shape, base64 in JSON.
//!
//! Both sides use the daemon's engine settings (CPU, 2 synthesis threads, 4 GiB) and the test
//! parameters tests/common/filecoin.rs makes (generated on first use).

#[path = "../tests/common/filecoin.rs"]
mod fixtures;

use std::time::{Duration, Instant};

use base64::Engine as _;
use cuzk::daemon::config::{Args, Config};
use cuzk::daemon::proto::proving_engine_client::ProvingEngineClient;
use cuzk::daemon::proto::*;
use cuzk::filecoin::{self, Options, ParamsKind};
use fixtures::*;

const RANDOMNESS: [u8; 32] = [47; 32];

fn main() {
    let mut args = std::env::args().skip(1);
    let mut proofs = 5usize;
    while let Some(a) = args.next() {
        if a == "--proofs" {
            proofs = args.next().and_then(|n| n.parse().ok()).expect("--proofs N");
        }
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

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
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
    let mut client = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match tonic::transport::Channel::from_shared(format!("http://{listen}"))
                .unwrap()
                .connect()
                .await
            {
                Ok(ch) => break ProvingEngineClient::new(ch),
                Err(e) => {
                    assert!(Instant::now() < deadline, "cuzk-daemon did not answer: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
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
    let _ = child.kill();
    let _ = child.wait();

    let (wrapper_bytes, wire, decode) = c1_decode();

    println!("{}", machine());
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

/// A PoRep C2 request as Curio's PoRepSnarkCuzk sends it for a 32 GiB sector, with a C1
/// output of that size and shape (JSON arrays of numbers: 10 partitions of 18 challenges, each
/// with its column and Merkle paths of 8-ary trees; ~37 MB, ~50 MB once base64 in the
/// wrapper); its size, the best of 5 protobuf decodes of the message and of 5 decodes of the
/// request.
fn c1_decode() -> (usize, Duration, Duration) {
    let mut g = Fabric(0x9e37_79b9_7f4a_7c15);
    let partitions: Vec<String> = (0..10)
        .map(|_| format!("[{}]", g.list(18, Fabric::challenge)))
        .collect();
    let c1 = format!(
        "{{\"registered_proof\":\"StackedDrg32GiBV1_1\",\"vanilla_proofs\":{{\"StackedDrg32GiBV1\":[{}]}},\"comm_r\":{},\"comm_d\":{},\"replica_id\":{},\"seed\":{},\"ticket\":{}}}",
        partitions.join(","),
        g.hash(),
        g.hash(),
        g.hash(),
        g.hash(),
        g.hash()
    );
    let wrapper = serde_json::to_vec(&serde_json::json!({
        "SectorNum": 4242,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1.as_bytes()),
        "SectorSize": 32u64 << 30,
    }))
    .unwrap();
    let req = SubmitProofRequest {
        request_id: "porep-1000-4242".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 32 << 30,
        registered_proof: 8, // abi.RegisteredSealProof_StackedDrg32GiBV1_1
        priority: Priority::Normal as i32,
        vanilla_proof: wrapper,
        sector_number: 4242,
        miner_id: MINER,
        ..SubmitProofRequest::default()
    };
    let (size, c1_size) = (req.vanilla_proof.len(), c1.len());
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
            assert!(matches!(work, cuzk::daemon::request::Work::SealCommit { ref c1, .. } if c1.len() == c1_size));
            took
        })
        .min()
        .unwrap();
    (size, prost_best, best)
}

/// Fabricated C1 JSON: random bytes as JSON arrays of numbers, in the shape of
/// filecoin-proofs' StackedDrg challenge proofs for a 32 GiB sector (8-ary trees of 11 levels,
/// 11 layers, 6 DRG and 8 expander parents).
struct Fabric(u64);

impl Fabric {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 32) as u8
    }

    fn hash(&mut self) -> String {
        format!(
            "[{}]",
            (0..32).map(|_| self.byte().to_string()).collect::<Vec<_>>().join(",")
        )
    }

    fn list(&mut self, n: usize, f: fn(&mut Self) -> String) -> String {
        (0..n).map(|_| f(self)).collect::<Vec<_>>().join(",")
    }

    fn level(&mut self) -> String {
        format!("{{\"hashes\":[{}],\"index\":3}}", self.list(7, Self::hash))
    }

    fn path(&mut self) -> String {
        let (root, leaf) = (self.hash(), self.hash());
        format!(
            "{{\"root\":{root},\"leaf\":{leaf},\"path\":[{}]}}",
            self.list(11, Self::level)
        )
    }

    fn column(&mut self) -> String {
        let column = self.list(11, Self::hash);
        format!("{{\"column\":[{column}],\"inclusion_proof\":{}}}", self.path())
    }

    fn labeling(&mut self) -> String {
        format!("{{\"layer_index\":1,\"parents\":[{}]}}", self.list(14, Self::hash))
    }

    fn challenge(&mut self) -> String {
        let (d, r, c_x) = (self.path(), self.path(), self.column());
        let (drg, exp) = (self.list(6, Self::column), self.list(8, Self::column));
        let (labeling, encoding) = (self.list(11, Self::labeling), self.list(14, Self::hash));
        format!(
            "{{\"comm_d_proofs\":{d},\"comm_r_last_proof\":{r},\"replica_column_proofs\":{{\"c_x\":{c_x},\"drg_parents\":[{drg}],\"exp_parents\":[{exp}]}},\"labeling_proofs\":[{labeling}],\"encoding_proof\":{{\"parents\":[{encoding}]}}}}"
        )
    }
}

/// The machine, in one line.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "machine: {cpu}, {cores} cores, load average {} (cuzk {}, CPU backend)",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        env!("CARGO_PKG_VERSION")
    )
}
