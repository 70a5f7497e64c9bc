//! 32 GiB-shape PoRep C2 sectors streamed through the engine (feature `filecoin`; `cuda` for
//! GPUs): per sector wall time, GPU busy, synthesis time per partition and peak host RSS, a
//! Winning-PoSt-priority job's latency under that load against alone, and the engine's memory
//! promise (peak RSS against its budget).
//!
//! The full 32 GiB shape on the H200 host (witness path on, then off; one GPU, then two):
//!
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --sector-size 16KiB --sectors 6 --devices 0
//!     ... --witness-path 0                       # full synthesis of every partition
//!     ... --devices 0,1                          # two GPUs
//!     ... --layers 2 --challenges 2 --sectors 1 --partitions-per-sector 2 --compare-cpu 2
//!                                                # GPU bytes against the CPU's, small shape
//!
//! and the CPU smoke test (any machine): `cargo run --release --features filecoin --example
//! sector_bench -- --layers 2 --challenges 1 --sectors 2 --partitions-per-sector 2 --cpu`.
//!
//! ## The circuits
//! Real 32 GiB sectors cannot be sealed here, so the partitions are storage-proofs-porep's own
//! `StackedCircuit` of production's shape over a small tree: `stacked::SetupParams` with
//! `--layers` (11 for 32 GiB; the crate accepts only 2 or 11) and `--challenges` per partition
//! (18 for 32 GiB: filecoin-proofs' 176 interactive PoRep challenges over 10 partitions, rounded
//! up), the 32 GiB tree arity (`SectorShape32GiB`: 8-8-0, Poseidon; SHA-256 for the data tree),
//! a sector of `--sector-size` random bytes replicated (`replicate_phase1`, `replicate_phase2`),
//! its vanilla proofs made (`prove_all_partitions`) and each partition's circuit built by
//! `StackedCompound::circuit`, as filecoin-proofs builds C2's. The tree is shallower than a
//! 32 GiB one, so a partition has fewer constraints: 112,055,993 at 11 layers, 18 challenges and
//! 16 KiB (the smallest filecoin-proofs sector of this arity; 2 KiB, the default, also works:
//! 8 leaves per subtree), against 130,278,869 for a real 32 GiB partition. The bench prints its
//! count. A "sector" is `--partitions-per-sector` (10, as a 32 GiB C2) such partitions; every
//! sector proves the same partitions (same vanilla proofs, synthesized anew each time).
//!
//! ## The parameters: the proofs do not verify
//! Groth16 parameters of that shape are made the bench's way, as `engine_bench` makes them:
//! one partition is synthesized in full and `cuzk::testing::random_parameters_for` fills its
//! shape with arbitrary points. There is no trapdoor behind them, so **the proofs do not
//! verify**; every backend must still compute the same bytes from them: `--compare-cpu N`
//! proves the first N partitions of sector 0 again on the CPU (synthesize, then prove, same r
//! and s) and compares the bytes with the engine's (exit 1 when they differ) — meant for a
//! small shape, the CPU taking minutes per full-shape partition.
//!
//! ## The stream
//! All sectors are submitted at once, one engine job each at PoRep C2's priority
//! (`cuzk::filecoin::PRIORITY_SEAL_COMMIT`); the engine streams their partitions through its
//! budget. Per sector: when it finished (since the stream began) and its wall time (since the
//! previous sector finished: the stream's time per sector; the first includes the pipeline's
//! fill and, on the witness path, the recording of the compiled circuit), the GPU workers' busy
//! fraction over that time, the synthesis time of its partitions (mean, min–max: measured
//! around the circuit's `synthesize`, full or witness-only), and the process's peak RSS over
//! that time (sampled every 10 ms from `/proc/self/status` VmRSS) and VmHWM so far.
//!
//! ## Winning PoSt under load
//! A small job at `cuzk::filecoin::PRIORITY_WINNING_POST` — a synthetic circuit of
//! 2^`--winning-log-size` constraints (default 22 on GPUs, 14 with `--cpu`) with the Filecoin
//! witness mix, standing in for a Winning PoSt (not its circuit) — is proved alone twice before
//! the stream (the second is reported: the first records its compiled circuit), then submitted
//! once mid-stream (when half of the stream's partitions are proved). Its latency is submit to
//! proof. The target: under load ≤ the partition in progress + its own proof, printed
//! as "bound" (one PoRep proof, the engine's EMA, plus the job's latency alone).
//!
//! ## The memory promise
//! The engine's budget `B` (`--budget-gib`; default: the two parameter sets plus
//! synthesis workers + GPU workers + 2 partitions) counts what `src/engine/budget.rs` lists:
//! partitions' a/b/c/aux (or compact witnesses), parameter sets, compiled circuits, the pool's
//! idle buffers. It documents no constant for what it does not count; this bench states one:
//! the RSS the process had before the parameters were made (its binary, threads, the vanilla
//! proofs and circuits: the caller's memory) plus `--slack-gib` (default 2 GiB), for what the
//! engine does not count — a circuit's own memory while it synthesizes (unless
//! `--synthesis-bytes-per-constraint` is set; the bench prints what the first full synthesis
//! measured), the recorder's memory while it records, the backends' scratch. The bench prints
//! peak RSS over the stream against B and against B + that constant, and **exits 3 if the peak
//! exceeds B + the constant**.
//!
//! ## Smoke test on 2 cores, no GPU
//! `--layers 2 --challenges 1 --sectors 2 --partitions-per-sector 2 --cpu` (2 KiB; 2 Xeon
//! threads shared with other builds, so the seconds are not a benchmark): 1,344,268
//! constraints a partition, full synthesis 1.0 s; random parameters 9.8 s; sectors of 2
//! partitions in 78.6 s and 69.1 s (CPU proof EMA 18.5 s, worker busy 97–100%, synthesis
//! 1.7–3.4 s a partition); 2 recorded, 3 witness-only; peak RSS 1.43 GiB against B = 1.67 GiB.
//! The 2^14 Winning stand-in took 0.54 s alone and 35.0 s under load — two PoRep proofs, over
//! the "one partition + its own proof" bound. Likely (read from `src/engine/dispatch.rs`, not
//! traced): the dispatcher admits it only when the pacer and
//! a free synthesis worker let it (priority orders the queues, it does not bypass the pacer's
//! in-flight cap or wait for a synthesis worker ahead of partitions already admitted), and a
//! PoRep partition synthesized meanwhile takes the GPU first.

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::Scalar;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser};
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, EngineStats, Job, Partition};
use cuzk::filecoin::{PRIORITY_SEAL_COMMIT, PRIORITY_WINNING_POST};
use cuzk::testing::{random_parameters, random_parameters_for, Synthetic};
use cuzk::{BackendChoice, Circuit, ConstraintSystem, Parameters, Proof, Prover, SynthesisError};
use ff::{Field, PrimeField};
use filecoin_hashers::Hasher;
use rand::{Rng, SeedableRng};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::get_base_tree_count;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, Challenges, PrivateInputs, PublicInputs, SetupParams, StackedCircuit, StackedCompound, StackedDrg,
    TemporaryAuxCache, EXP_DEGREE,
};
use support::{fail, machine};

/// The 32 GiB sector's tree: Poseidon, arity 8-8-0 (filecoin-proofs' `SectorShape32GiB`).
type Tree = filecoin_proofs::SectorShape32GiB;
/// The data tree's hasher (SHA-256).
type Piece = filecoin_proofs::DefaultPieceHasher;
type Porep = StackedCircuit<Tree, Piece>;

/// A real 32 GiB PoRep C2 partition's constraints (measured on the H200 host, issue 23).
const REAL_32GIB_CONSTRAINTS: usize = 130_278_869;
/// Filecoin's witness mix for the Winning-PoSt stand-in.
const FILECOIN_BIT_PERCENT: u32 = 98;

/// 32 GiB-shape PoRep C2 sectors streamed through the engine, with a Winning-PoSt-priority job
/// under that load, and the engine's memory promise checked.
#[derive(Parser)]
#[command(name = "sector_bench")]
struct Args {
    /// Stacked-DRG layers (storage-proofs-porep accepts 2 or 11; 11 is 32 GiB's).
    #[arg(long, value_name = "2|11", default_value_t = 11, value_parser = parse_layers)]
    layers: usize,
    /// Challenges per partition (18 is 32 GiB's: 176 over 10 partitions, rounded up).
    #[arg(long, value_name = "N", default_value_t = 18, value_parser = support::at_least_one)]
    challenges: usize,
    /// The small sector's size (`2KiB`, `16KiB`, `128KiB`, ... or bytes): 8 subtrees of 8^k
    /// leaves each, k ≥ 1 (2 KiB is the smallest).
    #[arg(long, value_name = "BYTES", default_value = "2KiB", value_parser = parse_sector_size)]
    sector_size: u64,
    /// Sectors streamed.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = support::at_least_one)]
    sectors: usize,
    /// Partitions per sector (a 32 GiB C2 has 10).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = support::at_least_one)]
    partitions_per_sector: usize,
    /// The engine's memory budget in GiB (default: the parameter sets plus synthesis workers
    /// + GPU workers + 2 partitions).
    #[arg(long, value_name = "G")]
    budget_gib: Option<f64>,
    /// The engine's witness path (1: the first partition records the compiled circuit, the
    /// next are synthesized witness-only; 0: every partition in full).
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    witness_path: bool,
    /// Prove on the CPU backend (a smoke test; no GPU needed).
    #[arg(long)]
    cpu: bool,
    /// GPUs (`cuda` build): `all` or a comma-separated list of device numbers.
    #[arg(long, value_name = "all|0,1", default_value = "all")]
    devices: String,
    /// GPU worker threads per device.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = support::at_least_one)]
    gpu_workers: usize,
    /// Synthesis threads (default: the host's cores).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    synthesis_workers: Option<usize>,
    /// EngineConfig::synthesis_bytes_per_constraint (default 0, the engine's).
    #[arg(long, value_name = "B", default_value_t = 0)]
    synthesis_bytes_per_constraint: usize,
    /// The Winning-PoSt stand-in's size: 2^K constraints (default 22; 14 with --cpu).
    #[arg(long, value_name = "K")]
    winning_log_size: Option<u32>,
    /// Prove the first N partitions of sector 0 again on the CPU and compare the bytes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    compare_cpu: usize,
    /// What the memory check allows beyond B and the RSS before the parameters, in GiB.
    #[arg(long, value_name = "G", default_value_t = 2.0)]
    slack_gib: f64,
    /// Scratch directory for the replicated sector (emptied first, removed at the end).
    #[arg(long, value_name = "DIR", default_value = "target/sector-bench")]
    scratch: PathBuf,
}

fn parse_layers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ (2 | 11)) => Ok(n),
        Ok(n) => Err(format!("storage-proofs-porep accepts 2 or 11 layers, not {n}")),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_sector_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|e| format!("{s:?}: {e}"))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        u => return Err(format!("{s:?}: unit {u:?} (KiB, MiB, GiB or none)")),
    };
    let bytes = n.checked_shl(shift).ok_or("too large")?;
    // 8 base trees (8-8-0), each of 8^k leaves of 32 bytes, k >= 1.
    let per_tree = bytes / 32 / 8;
    let mut leaves = 8u64;
    while leaves < per_tree {
        leaves *= 8;
    }
    if bytes % 256 != 0 || leaves != per_tree {
        return Err(format!(
            "{s:?}: an 8-8-0 tree needs 8 subtrees of 8^k 32-byte leaves (2KiB, 16KiB, 128KiB, 1MiB, ...)"
        ));
    }
    Ok(bytes)
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`).
fn proc_status(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

fn rss() -> usize {
    proc_status("VmRSS:").unwrap_or(0)
}

/// Samples VmRSS every 10 ms: the peak since it started, and the peak since the last `window`.
struct Sampler {
    peak: Arc<AtomicUsize>,
    window: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Self {
        let (peak, window, stop) = (
            Arc::new(AtomicUsize::new(rss())),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (p, w, s) = (peak.clone(), window.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = rss();
                p.fetch_max(now, Ordering::Relaxed);
                w.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            peak,
            window,
            stop,
            thread: Some(thread),
        }
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed).max(rss())
    }

    /// The peak since the last call, and a new window.
    fn window(&self) -> usize {
        self.window.swap(rss(), Ordering::Relaxed).max(rss())
    }

    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak()
    }
}

/// A partition's circuit that records how long its synthesis took (full or witness-only:
/// whatever constraint system the engine synthesizes it into).
#[derive(Clone)]
struct Timed {
    circuit: Porep,
    slot: usize,
    times: Arc<Mutex<Vec<Option<Duration>>>>,
}

impl Circuit<Scalar> for Timed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let start = Instant::now();
        let r = self.circuit.synthesize(cs);
        self.times.lock().unwrap_or_else(|p| p.into_inner())[self.slot] = Some(start.elapsed());
        r
    }
}

/// Replicates a `sector_size` sector of random data and returns its partitions' C2 circuits
/// (storage-proofs-porep's setup, replication and vanilla proofs; `StackedCompound::circuit`).
fn porep_circuits(args: &Args) -> Vec<Porep> {
    let nodes = (args.sector_size / 32) as usize;
    assert_eq!(nodes % get_base_tree_count::<Tree>(), 0);
    let _ = std::fs::remove_dir_all(&args.scratch);
    ok("scratch", std::fs::create_dir_all(&args.scratch));
    let cache = args.scratch.join("cache");
    ok("scratch", std::fs::create_dir_all(&cache));
    let replica_path = args.scratch.join("replica");

    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(32);
    let replica_id: Scalar = Scalar::random(&mut rng);
    let data: Vec<u8> = (0..nodes)
        .flat_map(|_| Scalar::random(&mut rng).to_repr().as_ref().to_vec())
        .collect();
    ok("writing the replica", std::fs::write(&replica_path, &data));
    let file = ok(
        "opening the replica",
        std::fs::OpenOptions::new().read(true).write(true).open(&replica_path),
    );
    // SAFETY: the file is this process's scratch file, mapped once, not resized while mapped.
    let mut mapped = ok("mapping the replica", unsafe { memmap2::MmapMut::map_mut(&file) });

    let setup = SetupParams {
        nodes,
        degree: storage_proofs_core::drgraph::BASE_DEGREE,
        expansion_degree: EXP_DEGREE,
        porep_id: [5; 32],
        challenges: Challenges::new_interactive(args.challenges),
        num_layers: args.layers,
        api_version: ApiVersion::V1_2_0,
        api_features: vec![],
    };
    let pp = ok("PoRep setup", StackedDrg::<Tree, Piece>::setup(&setup));
    let replica_domain = replica_id.into();
    let (labels, _) = ok(
        "replicate_phase1",
        StackedDrg::<Tree, Piece>::replicate_phase1(&pp, &replica_domain, &cache),
    );
    let (tau, (p_aux, t_aux)) = ok(
        "replicate_phase2",
        StackedDrg::<Tree, Piece>::replicate_phase2(
            &pp,
            labels,
            mapped.as_mut().into(),
            None,
            cache.clone(),
            replica_path.clone(),
        ),
    );
    drop(mapped);
    let seed: [u8; 32] = rng.gen();
    let pub_inputs =
        PublicInputs::<<<Tree as storage_proofs_core::merkle::MerkleTreeTrait>::Hasher as Hasher>::Domain, _> {
            replica_id: replica_domain,
            seed: Some(seed),
            tau: Some(tau),
            k: None,
        };
    let t_aux = ok(
        "TemporaryAuxCache",
        TemporaryAuxCache::<Tree, Piece>::new(&t_aux, replica_path, false),
    );
    let priv_inputs = PrivateInputs::<Tree, Piece> { p_aux, t_aux };
    let vanilla = ok(
        "vanilla proofs",
        StackedDrg::<Tree, Piece>::prove_all_partitions(&pp, &pub_inputs, &priv_inputs, args.partitions_per_sector),
    );
    let circuits = vanilla
        .iter()
        .enumerate()
        .map(|(k, proofs)| {
            ok(
                "StackedCompound::circuit",
                <StackedCompound<Tree, Piece> as CompoundProof<'_, _, _>>::circuit(
                    &pub_inputs,
                    (),
                    proofs,
                    &pp,
                    Some(k),
                ),
            )
        })
        .collect();
    drop(priv_inputs);
    let _ = stacked::clear_cache_dir(&cache);
    let _ = std::fs::remove_dir_all(&args.scratch);
    circuits
}

fn winning_circuit(k: u32, seed: u64) -> Synthetic {
    let mut c = Synthetic::new(k).with_seed(seed);
    c.bit_percent = FILECOIN_BIT_PERCENT;
    c
}

fn backends(args: &Args) -> Vec<EngineBackend> {
    if args.cpu {
        return vec![EngineBackend::Choice(BackendChoice::Cpu)];
    }
    let devices: Vec<usize> = match args.devices.as_str() {
        "all" => {
            #[cfg(feature = "cuda")]
            {
                (0..cuzk::prover::cuda::device_count().unwrap_or_else(|e| fail(&format!("no GPU: {e}")))).collect()
            }
            #[cfg(not(feature = "cuda"))]
            {
                fail("built without the `cuda` feature: --cpu, or build with --features cuda,filecoin")
            }
        }
        list => list
            .split(',')
            .map(|d| {
                d.trim()
                    .parse()
                    .unwrap_or_else(|_| fail(&format!("--devices: `all` or device numbers such as 0,1, not {d:?}")))
            })
            .collect(),
    };
    if devices.is_empty() {
        fail("no GPU");
    }
    devices
        .into_iter()
        .map(|d| EngineBackend::Choice(BackendChoice::Gpu(d)))
        .collect()
}

fn busy(stats: &EngineStats) -> Duration {
    stats.workers.iter().map(|w| w.busy).sum()
}

/// Proves the Winning-PoSt stand-in at its priority and returns its latency (submit → proof).
fn winning(engine: &Engine, params: &Parameters, k: u32, seed: u64) -> Duration {
    let start = Instant::now();
    let job = Job::from_circuits(params.clone(), vec![winning_circuit(k, seed)])
        .with_priority(PRIORITY_WINNING_POST)
        .with_label("winning-post stand-in");
    ok("Winning PoSt stand-in", engine.submit(job).wait());
    start.elapsed()
}

struct SectorRow {
    done_at: Duration,
    wall: Duration,
    busy: f64,
    synthesis: Vec<Duration>,
    window_rss: usize,
    hwm: usize,
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    let (n_sectors, pps) = (args.sectors, args.partitions_per_sector);
    let cores = std::thread::available_parallelism().map_or(2, |c| c.get());
    let synthesis_workers = args.synthesis_workers.unwrap_or(cores);
    let winning_k = args.winning_log_size.unwrap_or(if args.cpu { 14 } else { 22 });
    let backends = backends(&args);

    // The circuits: storage-proofs-porep's setup, replication, vanilla proofs.
    let t = Instant::now();
    let circuits = porep_circuits(&args);
    let built = t.elapsed();
    eprintln!(
        "replicated a {} B sector ({} layers, {} challenges per partition) and built {pps} partition circuits in {:.2} s",
        args.sector_size,
        args.layers,
        args.challenges,
        built.as_secs_f64()
    );
    let baseline = rss();

    // The parameters' shape: one partition in full, its RSS over it sampled.
    let sampler = Sampler::start();
    let t = Instant::now();
    let shape = ok(
        "synthesizing partition 0",
        Prover::new().synthesize(circuits[0].clone()),
    );
    let shape_time = t.elapsed();
    let shape_peak = sampler.stop();
    let constraints = shape.num_constraints();
    let (inputs, aux) = (shape.input_assignment().len(), shape.aux_assignment().len());
    let held = cuzk::engine::budget::assignment_bytes(&shape);
    let overhead = shape_peak.saturating_sub(baseline).saturating_sub(held);
    eprintln!(
        "partition 0: {constraints} constraints, {inputs} inputs, {aux} aux; full synthesis {:.2} s; \
         its own memory beyond a/b/c/aux ~{} bytes per constraint",
        shape_time.as_secs_f64(),
        overhead / constraints.max(1)
    );
    let t = Instant::now();
    let params = ok("random parameters", random_parameters_for(&shape, 32));
    drop(shape);
    let wparams = ok(
        "Winning PoSt stand-in parameters",
        random_parameters(winning_circuit(winning_k, 0), 22),
    );
    eprintln!("random parameters made in {:.2} s", t.elapsed().as_secs_f64());

    // The engine.
    let gpu_workers = backends.len() * args.gpu_workers;
    let one = partition_bytes(params_hint(&params), 1.0);
    let budget = match args.budget_gib {
        Some(g) if g > 0.0 => (g * (1u64 << 30) as f64) as usize,
        _ => params.host_bytes() + wparams.host_bytes() + (synthesis_workers + gpu_workers + 2) * one,
    };
    let engine = ok(
        "engine",
        Engine::new(EngineConfig {
            synthesis_workers,
            budget_bytes: budget,
            gpu_workers_per_backend: args.gpu_workers,
            backends: backends.clone(),
            witness_path: args.witness_path,
            synthesis_bytes_per_constraint: args.synthesis_bytes_per_constraint,
            ..EngineConfig::default()
        }),
    );
    ok("parameters", engine.add_parameters(&params));
    ok("parameters", engine.add_parameters(&wparams));
    let sampler = Sampler::start();

    // Winning PoSt alone (twice; the second counts).
    let first_alone = winning(&engine, &wparams, winning_k, 1);
    let alone = winning(&engine, &wparams, winning_k, 2);
    eprintln!(
        "Winning PoSt stand-in (2^{winning_k}) alone: {:.3} s, then {:.3} s",
        first_alone.as_secs_f64(),
        alone.as_secs_f64()
    );

    // The stream: every sector submitted at once.
    let total = n_sectors * pps;
    let times = Arc::new(Mutex::new(vec![None; total]));
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    let r: Vec<Scalar> = (0..total).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..total).map(|_| Scalar::random(&mut rng)).collect();
    let (tx, rx) = mpsc::channel::<(usize, cuzk::engine::Progress, Instant)>();
    sampler.window();
    let start = Instant::now();
    let start_stats = engine.stats();
    let handles: Vec<_> = (0..n_sectors)
        .map(|sector| {
            let partitions = circuits
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    Partition::circuit(Timed {
                        circuit: c.clone(),
                        slot: sector * pps + k,
                        times: times.clone(),
                    })
                })
                .collect();
            let range = sector * pps..(sector + 1) * pps;
            let job = Job::new(params.clone(), partitions)
                .with_priority(PRIORITY_SEAL_COMMIT)
                .with_randomness(r[range.clone()].to_vec(), s[range].to_vec())
                .with_label(format!("sector {sector}"));
            let handle = engine.submit(job);
            let tx = tx.clone();
            handle.on_progress(Box::new(move |p| {
                let _ = tx.send((sector, p, Instant::now()));
            }));
            handle
        })
        .collect();
    drop(tx);

    let mut rows: Vec<Option<SectorRow>> = (0..n_sectors).map(|_| None).collect();
    let (mut last_at, mut last_busy) = (start, busy(&start_stats));
    let mut done = vec![0usize; n_sectors];
    let mut winning_under_load: Option<mpsc::Receiver<(Duration, usize)>> = None;
    for (sector, p, at) in rx {
        done[sector] = p.done;
        let proved: usize = done.iter().sum();
        if winning_under_load.is_none() && proved * 2 >= total && proved < total {
            let (wtx, wrx) = mpsc::channel();
            let on_gpu = engine.stats().on_gpu;
            let job = Job::from_circuits(wparams.clone(), vec![winning_circuit(winning_k, 3)])
                .with_priority(PRIORITY_WINNING_POST)
                .with_label("winning-post stand-in under load");
            let submitted = Instant::now();
            let handle = engine.submit(job);
            std::thread::spawn(move || {
                ok("Winning PoSt stand-in under load", handle.wait());
                let _ = wtx.send((submitted.elapsed(), on_gpu));
            });
            winning_under_load = Some(wrx);
        }
        if p.finished {
            let st = engine.stats();
            let b = busy(&st);
            let wall = at.duration_since(last_at);
            let busy_frac = (b - last_busy).as_secs_f64() / (wall.as_secs_f64() * gpu_workers as f64).max(1e-9);
            let synthesis = times.lock().unwrap_or_else(|p| p.into_inner())[sector * pps..(sector + 1) * pps]
                .iter()
                .flatten()
                .copied()
                .collect();
            rows[sector] = Some(SectorRow {
                done_at: at.duration_since(start),
                wall,
                busy: busy_frac.min(1.0),
                synthesis,
                window_rss: sampler.window(),
                hwm: proc_status("VmHWM:").unwrap_or(0),
            });
            eprintln!(
                "sector {sector} done at {:.1} s ({} failed partitions); budget {:.1}/{:.1} GiB, RSS {:.1} GiB",
                at.duration_since(start).as_secs_f64(),
                p.failed,
                gib(st.budget_used),
                gib(st.budget_limit),
                gib(rss())
            );
            (last_at, last_busy) = (at, b);
            // The callbacks (and their senders) live as long as the handles: stop counting.
            if rows.iter().all(Option::is_some) {
                break;
            }
        }
    }
    let proofs: Vec<Vec<Proof>> = handles
        .into_iter()
        .enumerate()
        .map(|(i, h)| ok(&format!("sector {i}"), h.wait()))
        .collect();
    let stream_wall = start.elapsed();
    let under_load = winning_under_load.map(|rx| ok("Winning PoSt stand-in under load", rx.recv()));
    let end = engine.stats();
    let stream_peak = sampler.stop();

    // GPU bytes against the CPU's.
    let compared = args.compare_cpu.min(pps);
    let mut identical = true;
    if compared > 0 {
        let cpu = ok("CPU prover", Prover::new().with_backend(BackendChoice::Cpu));
        for (k, circuit) in circuits.iter().take(compared).enumerate() {
            let a = ok("CPU synthesis", cpu.synthesize_for(circuit.clone(), &params));
            let (p, _) = ok(
                "CPU proof",
                cpu.prove_synthesized(vec![a], &params, &r[k..=k], &s[k..=k]),
            );
            let same = p[0] == proofs[0][k];
            eprintln!(
                "sector 0 partition {k}: CPU bytes {}",
                if same { "identical" } else { "DIFFER" }
            );
            identical &= same;
        }
    }

    // The report.
    let backend_name = end.workers.first().map_or("none", |w| w.backend_name);
    println!();
    println!("machine: {}", machine());
    println!(
        "PoRep C2 shape: {} layers, {} challenges per partition, 8-8-0 tree over {} B ({constraints} constraints a partition; \
         a real 32 GiB partition has {REAL_32GIB_CONSTRAINTS}); {pps} partitions a sector, {n_sectors} sectors; \
         random parameters of that shape (the proofs do not verify)",
        args.layers, args.challenges, args.sector_size
    );
    println!(
        "engine: {} × {backend_name} ({} GPU worker(s) each), {synthesis_workers} synthesis workers, {}, budget {:.2} GiB \
         (one partition reserves {:.2} GiB; parameters {:.2} GiB)",
        backends.len(),
        args.gpu_workers,
        if args.witness_path { "witness path" } else { "full synthesis (--witness-path 0)" },
        gib(budget),
        gib(one),
        gib(params.host_bytes())
    );
    println!("| sector | done at s | wall s | GPU busy | synthesis s / partition (mean, min–max) | peak RSS GiB (sector / VmHWM) |");
    println!("|---|---|---|---|---|---|");
    for (i, row) in rows.iter().enumerate() {
        let Some(row) = row else {
            println!("| {i} | — | — | — | — | — |");
            continue;
        };
        let secs: Vec<f64> = row.synthesis.iter().map(Duration::as_secs_f64).collect();
        let mean = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
        let (min, max) = secs
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        println!(
            "| {i} | {:.1} | {:.1} | {:.0}% | {mean:.2} ({:.2}–{max:.2}) | {:.1} / {:.1} |",
            row.done_at.as_secs_f64(),
            row.wall.as_secs_f64(),
            row.busy * 100.0,
            if secs.is_empty() { 0.0 } else { min },
            gib(row.window_rss),
            gib(row.hwm)
        );
    }
    let later: Vec<f64> = rows.iter().flatten().skip(1).map(|r| r.wall.as_secs_f64()).collect();
    let steady = if later.is_empty() {
        "—".to_string()
    } else {
        format!("{:.1} s", later.iter().sum::<f64>() / later.len() as f64)
    };
    let all_busy =
        (busy(&end) - busy(&start_stats)).as_secs_f64() / (stream_wall.as_secs_f64() * gpu_workers as f64).max(1e-9);
    println!(
        "stream: {:.1} s for {n_sectors} sectors; per sector after the first: {steady}; GPU busy {:.0}%; \
         synthesis EMA {:.2} s, proof EMA {:.3} s a partition",
        stream_wall.as_secs_f64(),
        all_busy.min(1.0) * 100.0,
        end.synthesis_time_ema.unwrap_or_default().as_secs_f64(),
        end.gpu_time_ema.unwrap_or_default().as_secs_f64()
    );
    let w = end.witness;
    println!(
        "synthesis path: {} recorded, {} witness-only, {} full, {} fallbacks; compiled circuits {:.2} GiB; budget peak {:.2} GiB, {} waits",
        w.recorded,
        w.witness,
        w.full,
        w.fallbacks,
        gib(end.compiled_bytes),
        gib(end.budget_peak),
        end.budget_waits
    );
    let proof_ema = end.gpu_time_ema.unwrap_or_default();
    match under_load {
        Some((lat, on_gpu)) => println!(
            "Winning PoSt stand-in (2^{winning_k}, priority {PRIORITY_WINNING_POST}): alone {:.3} s, under load {:.3} s \
             ({on_gpu} partition(s) on the GPUs at submission); bound (one PoRep proof + alone) {:.3} s: {}",
            alone.as_secs_f64(),
            lat.as_secs_f64(),
            (proof_ema + alone).as_secs_f64(),
            if lat <= proof_ema + alone { "within" } else { "OVER" }
        ),
        None => println!(
            "Winning PoSt stand-in: alone {:.3} s; not submitted under load (the stream ended first)",
            alone.as_secs_f64()
        ),
    }
    let slack = (args.slack_gib * (1u64 << 30) as f64) as usize;
    let bound = budget + baseline + slack;
    println!(
        "memory: peak RSS over the stream {:.2} GiB (VmHWM {:.2} GiB, the shape's synthesis before the engine included); \
         B {:.2} GiB; B + constant {:.2} GiB (constant: RSS before the parameters {:.2} GiB + slack {:.2} GiB): {}",
        gib(stream_peak),
        gib(proc_status("VmHWM:").unwrap_or(0)),
        gib(budget),
        gib(bound),
        gib(baseline),
        args.slack_gib,
        if stream_peak <= budget {
            "within B"
        } else if stream_peak <= bound {
            "over B, within B + constant"
        } else {
            "OVER B + constant"
        }
    );
    if compared > 0 {
        println!(
            "CPU bytes of sector 0's first {compared} partition(s): {}",
            if identical { "identical" } else { "DIFFER" }
        );
    }
    if !identical {
        std::process::exit(1);
    }
    if stream_peak > bound {
        std::process::exit(3);
    }
}
