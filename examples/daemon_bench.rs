//! A proving node's deadline under load on one engine, both rows of issue 49 item 3: through
//! cuzk's Filecoin API (as Rust, C and Go callers call it) and **through cuzk-daemon** over gRPC
//! (as Curio calls it) — PoRep C2 sectors (the C1 wrapper with base64, as Curio's
//! PoRepSnarkCuzk sends it), then a Window PoSt deadline of `--deadline` partitions at HIGH
//! priority and a Winning PoSt at CRITICAL — with each kind's latency from submission, the PoRep
//! throughput lost, peak host RSS and where the daemon put each parameter set. The API row sends
//! the same requests through the daemon's decoder into `Work::submit`, on the daemon's engine,
//! so the two rows differ by gRPC and the daemon's job table alone. (`sector_bench --deadline`
//! is the engine row with the bench's own circuits and jobs.)
//!
//! The daemon is `cuzk::daemon::run`, the binary's own serving loop, on a Unix socket in this
//! process: production's parameter files (44 + 57 GiB at 32 GiB) are not here (and would not
//! fit the H200 host's disk), so each set is made here at its circuit's exact shape
//! (`cuzk::testing::random_parameters` over one synthesized partition) and handed to the daemon's
//! Filecoin layer with `cuzk::filecoin::install_unchecked_parameters`: **proofs over them do not
//! verify and are not checked** (random points, no trapdoor; the C2 vanilla proofs are random
//! too). Everything else is the daemon's path: request decoding, filecoin-proofs' own checks of
//! the PoSt vanilla proofs (which therefore verify: `tests/common/post.rs` makes them), the
//! circuits, compiled-circuit recording and native-generator validation on each kind's first
//! proof, the engine and its budget, `--params-on-device`.
//!
//! Each set is made just before its kind's first proof (a warm-up through the daemon, reported,
//! not counted), so with `--params-on-device` the sets go to the GPU one after the other and the
//! host never holds two. Then for each row, API first: each kind alone (one C2 sector, one
//! Window partition, the deadline's partitions together, one Winning PoSt), and two streams of
//! `--sectors` C2 sectors submitted at once — the baseline, and the same with the deadline: its
//! Window partitions submitted when half the stream's partitions are proved (the engine's count:
//! it runs in this process), the Winning PoSt `--winning-after` seconds later (default: one C2
//! partition alone). Bounds: Window, its partitions × one alone + one C2 partition; Winning, one
//! C2 partition + its own alone (a C2 partition: the sector alone over its partitions). Lost: the
//! deadline stream's wall less the baseline's.
//!
//! `--check-requests` stops after the requests are made and checked by the daemon's decoder and
//! Filecoin layer (up to the absent parameter files): a 32 GiB run's inputs checked anywhere.
//!
//! CPU smoke run (CI; 2 KiB sectors, ~5 min on 2 cores):
//!
//!     cargo run --release --features daemon --example daemon_bench -- --sector-size 2KiB --gpus cpu --sectors 2 --deadline 2 --synthesis-threads 2
//!
//! On the H200 host (one GPU, 16 cores, 128 GiB): `--sector-size 32GiB --gpus 0
//! --params-on-device --synthesis-threads 4` (the sets on the GPU: 101 GiB of parameters do not
//! fit beside a stream in 128 GiB of host memory).

#[path = "support/mod.rs"]
mod support;

#[path = "../tests/common/stacked.rs"]
mod stacked_fixtures;

#[path = "../tests/common/post.rs"]
mod post_fixtures;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;
use blstrs::Scalar;
use clap::Parser;
use cuzk::daemon::proto::await_proof_response::Status;
use cuzk::daemon::proto::proving_engine_client::ProvingEngineClient;
use cuzk::daemon::proto::{
    AwaitProofResponse, GetStatusRequest, Priority, ProofKind, ProveRequest, SubmitProofRequest,
};
use cuzk::filecoin::{self, ParamsKind, SECTOR_SIZES};
use ff::{Field, PrimeField};
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Domain as _;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg};
use support::fail;
use tonic::transport::Channel;

type Client = ProvingEngineClient<Channel>;

/// The miner and the sector every C2 request names (the C1's replica id is made for them).
const MINER: u64 = 1000;
const SECTOR: u64 = 7;

/// The daemon's deadline under load: PoRep C2 streams with a Window PoSt deadline and a
/// Winning PoSt, over gRPC, with parameters made here (proofs unchecked: see the file's doc).
#[derive(Parser)]
#[command(name = "daemon_bench")]
struct Args {
    /// The sectors' size (`2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB`): PoRep C2 (V1_1), Window
    /// PoSt (V1_2) and Winning PoSt of that size, at production's shapes.
    #[arg(long, default_value = "32GiB", value_parser = support::parse_bytes)]
    sector_size: u64,
    /// C2 sectors a stream (all submitted at once; at least 2, so that the deadline arrives
    /// while sectors are being proved).
    #[arg(long, default_value_t = 3, value_parser = at_least_two)]
    sectors: usize,
    /// Window PoSt partitions in the deadline (one request each, as Curio sends them).
    #[arg(long, default_value_t = 4, value_parser = support::at_least_one)]
    deadline: usize,
    /// Vanilla proofs a Window partition request carries (default: the proof type's sector
    /// count, 2349 at 32 GiB; fewer are padded by filecoin-proofs to the same circuit).
    #[arg(long, value_parser = support::at_least_one)]
    window_sectors: Option<usize>,
    /// Seconds from the Window partitions' submission to the Winning PoSt's (default: one C2
    /// partition alone).
    #[arg(long)]
    winning_after: Option<f64>,
    /// The daemon's `--gpus`: `auto`, `cpu`, or device numbers.
    #[arg(long, default_value = "auto")]
    gpus: String,
    /// The daemon's `--memory-budget` (default: its own, `auto`).
    #[arg(long)]
    memory_budget: Option<String>,
    /// The daemon's `--synthesis-threads` (default: its own, the host's cores).
    #[arg(long)]
    synthesis_threads: Option<usize>,
    /// The daemon's `--params-on-device`: each set kept on the GPU after its first proof.
    #[arg(long)]
    params_on_device: bool,
    /// Make the requests, pass each through the daemon's decoder and the Filecoin layer —
    /// which check everything a proof needs before its parameters (the C1 output and its replica
    /// id, filecoin-proofs' verification of the PoSt vanilla proofs) and then stop at the absent
    /// parameter file — and exit: no parameters, no daemon, no GPU (a 32 GiB run's inputs
    /// checked on any machine).
    #[arg(long)]
    check_requests: bool,
    /// A directory for the results (`daemon_bench.md`, `daemon_bench.jsonl`, appended; default:
    /// stdout only, and a directory under /tmp for the daemon's parameter directory).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Lines to stdout and, with `--out`, to `daemon_bench.md`, as they are known.
struct Out(Option<std::fs::File>);

impl Out {
    fn line(&mut self, s: &str) {
        println!("{s}");
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "{s}");
        }
    }
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

fn at_least_two(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        Ok(_) => Err("at least 2".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A random element's 32 bytes (a field element: every commitment Curio sends is one).
fn random_bytes(rng: &mut impl rand::RngCore) -> [u8; 32] {
    Scalar::random(rng).to_repr()
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    let Some(i) = SECTOR_SIZES
        .iter()
        .position(|s| cuzk::byte_size::parse(s).is_ok_and(|b| b as u64 == args.sector_size))
    else {
        fail(&format!(
            "--sector-size {}: not a registered sector size ({})",
            args.sector_size,
            SECTOR_SIZES.join(", ")
        ));
    };
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("daemon_bench-{}", std::process::id())));
    ok(
        "creating the output directory",
        std::fs::create_dir_all(dir.join("params")),
    );
    // filecoin-proofs reads the parameter directory once, at its first use: set it first. No
    // file is written there; the daemon's Filecoin layer keys the installed sets by its paths.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir.join("params"));
    use filecoin_proofs::constants as c;
    match args.sector_size {
        c::SECTOR_SIZE_2_KIB => run::<c::SectorShape2KiB>(&args, i, &dir),
        c::SECTOR_SIZE_8_MIB => run::<c::SectorShape8MiB>(&args, i, &dir),
        c::SECTOR_SIZE_512_MIB => run::<c::SectorShape512MiB>(&args, i, &dir),
        c::SECTOR_SIZE_32_GIB => run::<c::SectorShape32GiB>(&args, i, &dir),
        _ => run::<c::SectorShape64GiB>(&args, i, &dir),
    }
}

/// What the requests carry, made once.
struct Requests {
    sector_bytes: u64,
    /// Registered proofs' ABI numbers: C2 (V1_1), Window (V1_2), Winning.
    abi: (u64, u64, u64),
    /// The C1 wrapper JSON.
    c1: Vec<u8>,
    /// Window partition k's vanilla proofs.
    window: Vec<Vec<Vec<u8>>>,
    window_randomness: [u8; 32],
    winning: Vec<Vec<u8>>,
    winning_randomness: [u8; 32],
}

impl Requests {
    /// What every request of this bench carries: its id, kind, registered proof (ABI number)
    /// and priority, the sector size and the miner.
    fn request(&self, id: &str, kind: ProofKind, abi: u64, priority: Priority) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: id.into(),
            proof_kind: kind as i32,
            sector_size: self.sector_bytes,
            registered_proof: abi,
            priority: priority as i32,
            miner_id: MINER,
            ..SubmitProofRequest::default()
        }
    }

    fn c2(&self, id: &str) -> SubmitProofRequest {
        SubmitProofRequest {
            vanilla_proof: self.c1.clone(),
            sector_number: SECTOR,
            ..self.request(id, ProofKind::PorepSealCommit, self.abi.0, Priority::Normal)
        }
    }

    fn window(&self, id: &str, k: usize) -> SubmitProofRequest {
        SubmitProofRequest {
            vanilla_proofs: self.window[k].clone(),
            randomness: self.window_randomness.to_vec(),
            partition_index: k as u32,
            ..self.request(id, ProofKind::WindowPostPartition, self.abi.1, Priority::High)
        }
    }

    fn winning(&self, id: &str) -> SubmitProofRequest {
        SubmitProofRequest {
            vanilla_proofs: self.winning.clone(),
            randomness: self.winning_randomness.to_vec(),
            ..self.request(id, ProofKind::WinningPost, self.abi.2, Priority::Critical)
        }
    }
}

/// `--check-requests`: each request decoded as the daemon decodes it and submitted to the
/// Filecoin layer, which must stop at the parameter file (absent here) and nowhere before.
fn check_requests(requests: &Requests, deadline: usize, out: &mut Out) {
    let mut all = vec![("C2 sector".to_string(), requests.c2("check-porep"))];
    all.extend((0..deadline).map(|k| {
        (
            format!("Window partition {k}"),
            requests.window(&format!("check-window-{k}"), k),
        )
    }));
    all.push(("Winning PoSt".into(), requests.winning("check-winning")));
    for (what, req) in all {
        let t = Instant::now();
        let work = cuzk::daemon::request::decode(req).unwrap_or_else(|e| fail(&format!("{what}: refused: {e}")));
        match work.submit(work.kind().default_priority()) {
            Err(cuzk::Error::FilecoinParams { path, .. }) => out.line(&format!(
                "{what}: decoded and checked by the Filecoin layer up to its parameter file ({}) in {:.2} s",
                path.display(),
                secs(t.elapsed())
            )),
            Err(e) => fail(&format!("{what}: {e}")),
            Ok(_) => fail(&format!("{what}: submitted, but no parameters were installed")),
        }
    }
}

/// How a request reaches the engine: both rows of the deadline, on one engine.
#[derive(Clone)]
enum Via {
    /// cuzk's Filecoin API on the process-wide engine, as Rust, C and Go callers call it: the
    /// request decoded as the daemon decodes it, then `Work::submit` and `ProofJob::wait` on a
    /// blocking thread (no gRPC, no job table).
    Api,
    /// cuzk-daemon over gRPC (`Prove`: submit and await).
    Daemon(Client),
}

impl Via {
    fn name(&self) -> &'static str {
        match self {
            Self::Api => "engine (filecoin API)",
            Self::Daemon(_) => "daemon (gRPC)",
        }
    }

    fn tag(&self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Daemon(_) => "grpc",
        }
    }
}

/// Proves `req` (`via` the API or the daemon); the time it took and when it ended. A proof
/// that does not complete ends the bench.
async fn prove(via: Via, req: SubmitProofRequest) -> (Duration, Instant) {
    let what = format!("{} ({})", req.request_id, req.proof_kind);
    let t = Instant::now();
    let bytes = match via {
        Via::Daemon(mut client) => {
            let reply = ok(&what, client.prove(ProveRequest { submit: Some(req) }).await).into_inner();
            let r: AwaitProofResponse = reply.result.unwrap_or_else(|| fail(&format!("{what}: no result")));
            if r.status != Status::Completed as i32 {
                fail(&format!("{what}: status {} ({})", r.status, r.error_message));
            }
            r.proof.len()
        }
        Via::Api => {
            let proved = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
                let priority = req.priority;
                let work = cuzk::daemon::request::decode(req)?;
                let priority = cuzk::daemon::request::engine_priority(priority, work.kind())?;
                let job = work.submit(priority).map_err(|e| e.to_string())?;
                job.wait().map(|o| o.proof).map_err(|e| e.to_string())
            })
            .await;
            ok(&what, ok(&what, proved)).len()
        }
    };
    if bytes == 0 || bytes % 192 != 0 {
        fail(&format!("{what}: {bytes} proof bytes"));
    }
    (t.elapsed(), Instant::now())
}

/// One row's measurements (see the file's doc).
struct Measured {
    sector_alone: Duration,
    partition_alone: Duration,
    window_one: Duration,
    window_all: Duration,
    winning_alone: Duration,
    base_wall: Duration,
    with_wall: Duration,
    window_latency: Duration,
    winning_latency: Duration,
    open: Duration,
}

impl Measured {
    fn window_bound(&self, deadline: usize) -> Duration {
        self.window_one * deadline as u32 + self.partition_alone
    }

    fn winning_bound(&self) -> Duration {
        self.partition_alone + self.winning_alone
    }

    fn lost(&self) -> Duration {
        self.with_wall.saturating_sub(self.base_wall)
    }

    fn json(&self, deadline: usize) -> serde_json::Value {
        serde_json::json!({
            "sector_alone_s": secs(self.sector_alone),
            "partition_alone_s": secs(self.partition_alone),
            "window_one_s": secs(self.window_one),
            "window_all_s": secs(self.window_all),
            "winning_alone_s": secs(self.winning_alone),
            "base_wall_s": secs(self.base_wall),
            "deadline_wall_s": secs(self.with_wall),
            "window_latency_s": secs(self.window_latency),
            "window_bound_s": secs(self.window_bound(deadline)),
            "winning_latency_s": secs(self.winning_latency),
            "winning_bound_s": secs(self.winning_bound()),
            "open_s": secs(self.open),
            "lost_s": secs(self.lost()),
        })
    }
}

fn run<Tree>(args: &Args, i: usize, dir: &std::path::Path)
where
    Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
{
    let mut out = Out(args.out.as_ref().map(|_| {
        ok(
            "daemon_bench.md",
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("daemon_bench.md")),
        )
    }));
    let size = SECTOR_SIZES[i];
    let seal = filecoin::seal_proof_from_abi(5 + i as u64).expect("the V1_1 block has five sizes");
    let window_proof = filecoin::post_proof_from_abi(10 + i as u64).expect("the Window V1_2 block has five sizes");
    let winning_proof = filecoin::post_proof_from_abi(i as u64).expect("the Winning block has five sizes");
    let prover_id = filecoin::prover_id_from_miner_id(MINER);
    let start = Instant::now();
    let progress = |what: &str| eprintln!("[{:7.1} s] {what}", secs(start.elapsed()));
    out.line("");
    out.line(&format!(
        "## daemon_bench: {size} sectors, a deadline under load through the Filecoin API and cuzk-daemon"
    ));
    out.line(&format!(
        "command: `{}`",
        std::env::args().collect::<Vec<_>>().join(" ")
    ));
    out.line(&format!("machine: {}", support::machine()));

    // The C2 request: random vanilla proofs of the size's production shape, a replica id made
    // for the miner and sector (the daemon checks it), the commitments random.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(49);
    let config = seal.as_v1_config();
    let pp = ok(
        "PoRep setup",
        filecoin_proofs::parameters::setup_params(&config).and_then(|s| StackedDrg::<Tree, Sha256Hasher>::setup(&s)),
    );
    let (layers, challenges, partitions) = (
        pp.num_layers,
        pp.challenges.num_challenges_per_partition(),
        usize::from(config.partitions),
    );
    let vanilla: Vec<_> = (0..partitions)
        .map(|_| stacked_fixtures::random_partition::<Tree>(args.sector_size, challenges, layers, &mut rng).1)
        .collect();
    let (comm_d, comm_r, seed, ticket) = (
        random_bytes(&mut rng),
        random_bytes(&mut rng),
        random_bytes(&mut rng),
        random_bytes(&mut rng),
    );
    let comm_d_domain = ok("comm_d", Sha256Domain::try_from_bytes(&comm_d));
    let replica_id =
        generate_replica_id::<PoseidonHasher, _>(&prover_id, SECTOR, &ticket, comm_d_domain, &config.porep_id);
    let typed = filecoin_proofs::SealCommitPhase1Output::<Tree> {
        vanilla_proofs: vanilla,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    };
    // filecoin-proofs-api's JSON: the registered proof, the vanilla proofs in its size's variant
    // (the JSON tree, hundreds of MiB at 32 GiB, goes once the bytes are made).
    let c1 = {
        let mut json = ok("C1 JSON", serde_json::to_value(&typed));
        json["registered_proof"] = ok("C1 JSON", serde_json::to_value(seal));
        let proofs = json["vanilla_proofs"].take();
        json["vanilla_proofs"] = serde_json::json!({ format!("StackedDrg{size}V1"): proofs });
        ok("C1 JSON", serde_json::to_vec(&json))
    };
    let vanilla = typed.vanilla_proofs;
    ok(
        "the C1 output as filecoin-proofs-api reads it",
        serde_json::from_slice::<filecoin_proofs_api::seal::SealCommitPhase1Output>(&c1),
    );
    let wrapper = serde_json::json!({
        "SectorNum": SECTOR,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&c1),
        "SectorSize": args.sector_size,
    });

    // The PoSt requests: vanilla proofs that verify (filecoin-proofs checks them).
    let wconfig = window_proof.as_v1_config();
    let slots = args
        .window_sectors
        .unwrap_or(wconfig.sector_count)
        .min(wconfig.sector_count);
    let window_randomness = random_bytes(&mut rng);
    let ids: Vec<u64> = (0..slots as u64).map(|s| 100 + s).collect();
    let window: Vec<_> = (0..args.deadline)
        .map(|k| post_fixtures::verifying_sector_proofs::<Tree>(&wconfig, &window_randomness, k, &ids, &mut rng))
        .collect();
    let wnconfig = winning_proof.as_v1_config();
    let winning_randomness = random_bytes(&mut rng);
    let winning =
        post_fixtures::verifying_sector_proofs::<Tree>(&wnconfig, &winning_randomness, 0, &[SECTOR], &mut rng);
    let requests = Requests {
        sector_bytes: args.sector_size,
        abi: (5 + i as u64, 10 + i as u64, i as u64),
        c1: ok("the C1 wrapper", serde_json::to_vec(&wrapper)),
        window: window.iter().map(|p| post_fixtures::vanilla_bytes(p)).collect(),
        window_randomness,
        winning: post_fixtures::vanilla_bytes(&winning),
        winning_randomness,
    };
    progress(&format!(
        "requests made: C2 of {partitions} partitions ({layers} layers, {challenges} challenges each; the wrapper {:.1} MiB), \
         {} Window partitions of {slots} vanilla proofs ({:.1} MiB each), a Winning PoSt",
        requests.c1.len() as f64 / (1 << 20) as f64,
        args.deadline,
        requests.window[0].iter().map(Vec::len).sum::<usize>() as f64 / (1 << 20) as f64
    ));

    if args.check_requests {
        check_requests(&requests, args.deadline, &mut out);
        if args.out.is_none() {
            let _ = std::fs::remove_dir_all(dir);
        }
        return;
    }

    // The daemon, in this process, on a Unix socket.
    // Under /tmp: a Unix socket's path has at most 107 bytes, which --out could exceed.
    let socket = std::env::temp_dir().join(format!("cuzk-daemon-bench-{}.sock", std::process::id()));
    let config = ok(
        "the daemon's configuration",
        cuzk::daemon::config::Config::resolve(cuzk::daemon::config::Args {
            listen: Some(format!("unix://{}", socket.display())),
            param_dir: Some(dir.join("params")),
            gpus: Some(args.gpus.clone()),
            memory_budget: args.memory_budget.clone(),
            synthesis_threads: args.synthesis_threads,
            params_on_device: Some(args.params_on_device),
            log_level: Some("warn".into()),
            ..Default::default()
        }),
    );
    let rt = ok(
        "the runtime",
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build(),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = rt.spawn(cuzk::daemon::run(config, async {
        let _ = stopped.await;
    }));
    let client: Client = rt.block_on(async {
        let t = Instant::now();
        loop {
            let endpoint = ok(
                "endpoint",
                tonic::transport::Endpoint::from_shared(format!("unix://{}", socket.display())),
            );
            match endpoint.connect().await {
                Ok(channel) => {
                    break ProvingEngineClient::new(channel)
                        .max_decoding_message_size(256 << 20)
                        .max_encoding_message_size(256 << 20)
                }
                Err(e) if t.elapsed() > Duration::from_secs(30) => fail(&format!("the daemon did not answer: {e}")),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    let daemon_via = Via::Daemon(client.clone());
    let go = |via: &Via, req: SubmitProofRequest| rt.block_on(prove(via.clone(), req));

    // Each kind: its parameters made and installed, then its first proof (a warm-up).
    let install = |kind: ParamsKind, what: &str, circuit: &dyn Fn() -> cuzk::Parameters| {
        let t = Instant::now();
        let params = circuit();
        let bytes = params.host_bytes();
        ok(
            "installing the parameters",
            filecoin::install_unchecked_parameters(kind, params),
        );
        progress(&format!(
            "{what}: random parameters of its shape made ({:.2} GiB) in {:.1} s",
            bytes as f64 / (1u64 << 30) as f64,
            secs(t.elapsed())
        ));
    };
    let c2_circuit = || {
        let pub_in = stacked::PublicInputs {
            replica_id,
            tau: Some(stacked::Tau {
                comm_d: comm_d_domain,
                comm_r: ok("comm_r", filecoin_proofs::as_safe_commitment(&comm_r, "comm_r")),
            }),
            k: None,
            seed: Some(seed),
        };
        let circuit = ok(
            "the C2 circuit",
            <StackedCompound<Tree, Sha256Hasher> as CompoundProof<'_, _, _>>::circuit(
                &pub_in,
                (),
                &vanilla[0],
                &pp,
                Some(0),
            ),
        );
        ok("C2 parameters", cuzk::testing::random_parameters(circuit, 491))
    };
    let mut warm = Vec::new();
    install(ParamsKind::Seal(seal), "PoRep C2", &c2_circuit);
    warm.push(("C2 sector", go(&daemon_via, requests.c2("warm-porep")).0));
    progress(&format!(
        "C2 warm-up (records its circuit, validates its generator): {:.1} s",
        secs(warm[0].1)
    ));
    install(ParamsKind::PoSt(window_proof), "Window PoSt", &|| {
        let circuit =
            post_fixtures::Partitions::<Tree>::new(&wconfig, &window_randomness, &prover_id, &window[0]).circuit(0);
        ok("Window parameters", cuzk::testing::random_parameters(circuit, 492))
    });
    warm.push(("Window partition", go(&daemon_via, requests.window("warm-window", 0)).0));
    progress(&format!("Window warm-up: {:.1} s", secs(warm[1].1)));
    install(ParamsKind::PoSt(winning_proof), "Winning PoSt", &|| {
        let circuit =
            post_fixtures::Partitions::<Tree>::new(&wnconfig, &winning_randomness, &prover_id, &winning).circuit(0);
        ok("Winning parameters", cuzk::testing::random_parameters(circuit, 493))
    });
    warm.push(("Winning", go(&daemon_via, requests.winning("warm-winning")).0));
    progress(&format!("Winning warm-up: {:.1} s", secs(warm[2].1)));

    // Each row: alone, then the two streams — `sectors` C2 sectors at once; with the deadline,
    // its Window partitions when half the stream's partitions are proved (the engine's count:
    // it runs in this process), the Winning PoSt `winning_after` later.
    let partitions_done = || ok("the daemon's engine", filecoin::engine()).stats().partitions_done;
    let measure = |via: &Via| -> Measured {
        let tag = via.tag();
        let sector_alone = go(via, requests.c2(&format!("{tag}-alone-porep"))).0;
        let partition_alone = sector_alone / partitions as u32;
        let window_one = go(via, requests.window(&format!("{tag}-alone-window"), 0)).0;
        let window_all = rt.block_on(async {
            let t = Instant::now();
            let jobs: Vec<_> = (0..args.deadline)
                .map(|k| {
                    tokio::spawn(prove(
                        via.clone(),
                        requests.window(&format!("{tag}-alone-deadline-{k}"), k),
                    ))
                })
                .collect();
            for j in jobs {
                ok("a Window partition", j.await);
            }
            t.elapsed()
        });
        let winning_alone = go(via, requests.winning(&format!("{tag}-alone-winning"))).0;
        progress(&format!(
            "{}, alone: C2 sector {:.2} s, Window partition {:.2} s, the deadline's {} partitions {:.2} s, Winning {:.2} s",
            via.name(),
            secs(sector_alone),
            secs(window_one),
            args.deadline,
            secs(window_all),
            secs(winning_alone)
        ));
        let winning_after = args.winning_after.map_or(partition_alone, Duration::from_secs_f64);
        let stream = |name: &str, deadline: bool| {
            rt.block_on(async {
                let t0 = Instant::now();
                let proved = partitions_done();
                let sectors: Vec<_> = (0..args.sectors)
                    .map(|s| tokio::spawn(prove(via.clone(), requests.c2(&format!("{tag}-{name}-porep-{s}")))))
                    .collect();
                let mut dl = None;
                if deadline {
                    let half = (args.sectors * partitions).div_ceil(2) as u64;
                    while partitions_done() < proved + half {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    let submitted = Instant::now();
                    let windows: Vec<_> = (0..args.deadline)
                        .map(|k| {
                            tokio::spawn(prove(
                                via.clone(),
                                requests.window(&format!("{tag}-{name}-window-{k}"), k),
                            ))
                        })
                        .collect();
                    tokio::time::sleep(winning_after).await;
                    let (winning, winning_done) =
                        prove(via.clone(), requests.winning(&format!("{tag}-{name}-winning"))).await;
                    let mut window_done = submitted;
                    for w in windows {
                        window_done = window_done.max(ok("a Window partition", w.await).1);
                    }
                    dl = Some((
                        window_done - submitted,
                        winning,
                        window_done.max(winning_done) - submitted,
                    ));
                }
                let mut last = Duration::ZERO;
                for s in sectors {
                    last = last.max(ok("a C2 sector", s.await).1 - t0);
                }
                (last, dl)
            })
        };
        let (base_wall, _) = stream("base", false);
        progress(&format!(
            "{}, baseline stream: {} sectors in {:.2} s",
            via.name(),
            args.sectors,
            secs(base_wall)
        ));
        let (with_wall, dl) = stream("deadline", true);
        let (window_latency, winning_latency, open) = dl.expect("the deadline ran");
        progress(&format!(
            "{}, deadline stream: {} sectors in {:.2} s; Window {:.2} s, Winning {:.2} s from submission",
            via.name(),
            args.sectors,
            secs(with_wall),
            secs(window_latency),
            secs(winning_latency)
        ));
        Measured {
            sector_alone,
            partition_alone,
            window_one,
            window_all,
            winning_alone,
            base_wall,
            with_wall,
            window_latency,
            winning_latency,
            open,
        }
    };
    let vias = [Via::Api, daemon_via.clone()];
    let rows: Vec<Measured> = vias.iter().map(measure).collect();

    let status = rt.block_on(async { client.clone().get_status(GetStatusRequest {}).await });
    let status = ok("GetStatus", status).into_inner();
    let _ = stop.send(());
    ok("the daemon", ok("the daemon's task", rt.block_on(daemon)));
    if args.out.is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
    let (_, hwm) = support::rss(std::process::id());

    let placed: Vec<String> = status
        .loaded_srs
        .iter()
        .map(|s| {
            format!(
                "{} {:?} {:.2} GiB",
                s.circuit_id,
                s.tier(),
                s.size_bytes as f64 / (1u64 << 30) as f64
            )
        })
        .collect();
    out.line(&format!(
        "daemon: gpus {}, memory budget {}, synthesis threads {}, params on device {}; C2 {partitions} partitions a sector; \
         Window partitions of {} slots ({slots} vanilla proofs a request); random parameters installed unchecked (the proofs do not verify)",
        args.gpus,
        args.memory_budget.as_deref().unwrap_or("auto"),
        args.synthesis_threads.map_or("the host's cores".into(), |n| n.to_string()),
        args.params_on_device,
        wconfig.sector_count,
    ));
    out.line(&format!(
        "warm-ups (each kind's first proof, through the daemon: recording, validation): {}",
        warm.iter()
            .map(|(w, d)| format!("{w} {:.2} s", secs(*d)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.line("");
    out.line(&format!(
        "| one engine, seconds | {} | bound | within | {} | bound | within |",
        vias[0].name(),
        vias[1].name()
    ));
    out.line("|---|---|---|---|---|---|---|");
    let n = args.deadline;
    type Cell = fn(&Measured, usize) -> (Duration, Option<Duration>);
    let lines: [(String, Cell); 11] = [
        ("C2 sector alone".into(), |m, _| (m.sector_alone, None)),
        (format!("C2 partition alone (sector / {partitions})"), |m, _| {
            (m.partition_alone, None)
        }),
        ("Window partition alone".into(), |m, _| (m.window_one, None)),
        (format!("the deadline's {n} Window partitions alone"), |m, _| {
            (m.window_all, None)
        }),
        ("Winning PoSt alone".into(), |m, _| (m.winning_alone, None)),
        (
            format!("baseline: {} C2 sectors at once, wall", args.sectors),
            |m, _| (m.base_wall, None),
        ),
        (
            format!("with the deadline: {} C2 sectors, wall", args.sectors),
            |m, _| (m.with_wall, None),
        ),
        (
            format!("Window deadline ({n} partitions) from submission, under load"),
            |m, n| (m.window_latency, Some(m.window_bound(n))),
        ),
        ("Winning PoSt from submission, under load".into(), |m, _| {
            (m.winning_latency, Some(m.winning_bound()))
        }),
        ("deadline open (Window submission to its last proof)".into(), |m, _| {
            (m.open, None)
        }),
        ("C2 throughput lost (wall with less without)".into(), |m, _| {
            (m.lost(), None)
        }),
    ];
    for (what, cell) in lines {
        let mut l = format!("| {what} |");
        for m in &rows {
            let (d, bound) = cell(m, n);
            l += &format!(
                " {:.2} | {} | {} |",
                secs(d),
                bound.map_or("".into(), |b| format!("{:.2}", secs(b))),
                bound.map_or("", |b| if d <= b { "yes" } else { "**no**" })
            );
        }
        out.line(&l);
    }
    out.line(&format!(
        "peak host RSS {:.2} GiB; parameter sets at the end (HOT: on the GPU): {}",
        hwm as f64 / (1u64 << 30) as f64,
        placed.join(", ")
    ));
    if let Some(d) = &args.out {
        let event = serde_json::json!({
            "sector_size": size,
            "sectors": args.sectors,
            "deadline": args.deadline,
            "partitions": partitions,
            "api": rows[0].json(n),
            "daemon": rows[1].json(n),
            "peak_rss_bytes": hwm,
            "params": placed,
        });
        let mut f = ok(
            "daemon_bench.jsonl",
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(d.join("daemon_bench.jsonl")),
        );
        ok("daemon_bench.jsonl", writeln!(f, "{event}"));
    }
}
