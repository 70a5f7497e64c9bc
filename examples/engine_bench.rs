//! Engine benchmark (feature `cuda`): a stream of synthetic partitions of 2^k constraints through
//! the [`Engine`] on every GPU, against the naive loop (synthesize, then prove, one at a time).
//!
//!     cargo run --release --features cuda --example engine_bench -- --log-size 24 --partitions 32
//!     ... --devices 0 --gpu-workers 2     # two GPU workers on one GPU
//!     ... --pacer queue --depth 4         # the bounded-queue mode, for comparison
//!
//! Prints one table: seconds per partition end to end once warm (the first `--warmup`
//! partitions excluded), GPU busy fraction over the same window (per GPU worker, averaged),
//! pool reuses / checkouts after the warm-up, peak pinned bytes, the budget, and the ratio
//! naive / engine; then which synthesis path the engine took (`--witness-path 0` for full
//! synthesis of every partition) and the peak host RSS. The witness defaults to the Filecoin mix (98% of aux values 0 or 1;
//! `--bit-percent 75` for the older mix). Parameters are random points of the right shape
//! (`cuzk::testing::random_parameters_for`), so the engine's proofs are checked against the
//! naive loop's bytes (same circuits, same r and s) instead of being verified.

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser};
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, EngineStats, Job, PacerMode, PiConfig};
use cuzk::pool::{CudaPinnedAllocator, PinMode};
use cuzk::prover::cuda::{device_count, CudaBackend};
use cuzk::prover::Backend;
use cuzk::testing::{random_parameters_for, Synthetic};
use cuzk::{PinnedPool, PoolConfig, Prover};
use ff::Field;
use rand::SeedableRng;
use support::{fail, machine};

/// A stream of synthetic partitions of 2^k constraints through the Engine on every GPU, against
/// the naive loop (synthesize, then prove, one partition at a time). The witness defaults to
/// the Filecoin mix: 98% of the aux values are 0 or 1.
#[derive(Parser)]
#[command(name = "engine_bench")]
struct Args {
    /// 2^K constraints per partition.
    #[arg(long, value_name = "K", default_value_t = 24)]
    log_size: u32,
    /// Partitions through the engine.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = support::at_least_one)]
    partitions: usize,
    /// Partitions left out of the figures at the start (at most partitions − 1).
    #[arg(long, value_name = "N", default_value_t = 4)]
    warmup: usize,
    /// Partitions through the naive loop (the first not counted when there are two or more).
    #[arg(long, value_name = "N", default_value_t = 3)]
    naive: usize,
    /// GPUs to use: `all` or a comma-separated list of device numbers.
    #[arg(long, value_name = "all|0,1", default_value = "all")]
    devices: String,
    /// GPU worker threads per device.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = support::at_least_one)]
    gpu_workers: usize,
    /// Synthesis threads (default: the cores less one).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    synthesis_workers: Option<usize>,
    /// How partitions are dispatched: the PI pacer or a bounded queue.
    #[arg(long, default_value = "pi", value_parser = ["pi", "queue"])]
    pacer: String,
    /// The PI pacer's target depth (partitions waiting for a GPU).
    #[arg(long, value_name = "N", default_value_t = 2)]
    target: usize,
    /// The bounded queue's depth (--pacer queue).
    #[arg(long, value_name = "N", default_value_t = 4)]
    depth: usize,
    /// The memory budget in GiB (default: (target + GPU workers + synthesis workers)
    /// partitions, plus the parameters).
    #[arg(long, value_name = "G")]
    budget_gib: Option<f64>,
    /// Pin the partitions' buffers before the run (0: pin as they come): on the witness path
    /// those of the partitions synthesized in full at the start (the pacer's first `--target`,
    /// or the queue's `--depth`), else those of every partition in flight.
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    prewarm: bool,
    /// Percentage of witness values that are 0 or 1: 98 is Filecoin's PoRep C2 mix (98.4% of
    /// its aux values), 75 the mix of older measurements.
    #[arg(long, value_name = "P", default_value_t = FILECOIN_BIT_PERCENT, value_parser = clap::value_parser!(u32).range(0..=100))]
    bit_percent: u32,
    /// The engine's witness path (1, the default: the first partition records its circuit, the
    /// others are synthesized witness-only and evaluated on the GPU; 0: every partition in
    /// full). The naive loop is always full synthesis.
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    witness_path: bool,
}

/// The process's peak resident set (VmHWM), in bytes, where /proc has it.
fn peak_rss() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Filecoin's witness mix, the default: PoRep C2's circuit has 98.4% of its aux values 0 or 1.
const FILECOIN_BIT_PERCENT: u32 = 98;

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn circuit(k: u32, bits: u32, seed: u64) -> Synthetic {
    let mut c = Synthetic::new(k).with_seed(seed);
    c.bit_percent = bits;
    c
}

/// The witness mix, as the output states it.
fn mix(bits: u32) -> String {
    if bits == FILECOIN_BIT_PERCENT {
        format!("{bits}% bit witnesses (the Filecoin mix; --bit-percent 75 for the older mix)")
    } else {
        format!("{bits}% bit witnesses (not the Filecoin mix, {FILECOIN_BIT_PERCENT}%)")
    }
}

fn busy(stats: &EngineStats) -> Duration {
    stats.workers.iter().map(|w| w.busy).sum()
}

fn main() {
    support::init_logging("info");
    let args = Args::parse();
    let (k, n, naive_runs, bits) = (args.log_size, args.partitions, args.naive, args.bit_percent);
    let warmup = args.warmup.min(n.saturating_sub(1));
    let gpu_workers = args.gpu_workers;
    let cores = std::thread::available_parallelism().map_or(2, |c| c.get());
    let synthesis_workers = args.synthesis_workers.unwrap_or_else(|| cores.saturating_sub(1).max(1));
    let (pacer_name, target, depth, prewarm) = (args.pacer.clone(), args.target, args.depth, args.prewarm);
    let devices: Vec<usize> = match args.devices.as_str() {
        "all" => (0..device_count().unwrap_or_else(|e| fail(&format!("no GPU: {e}")))).collect(),
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
    let backends: Vec<std::sync::Arc<CudaBackend>> = devices
        .iter()
        .map(|&d| CudaBackend::shared(d).unwrap_or_else(|e| fail(&format!("GPU {d}: {e}"))))
        .collect();

    // Parameters of the circuit's shape, uploaded to every GPU before anything is timed.
    log::info!(
        "synthesizing a 2^{k} partition for the parameters' shape ({}) ...",
        mix(bits)
    );
    let shape = Prover::new()
        .synthesize(circuit(k, bits, 0))
        .unwrap_or_else(|e| fail(&e.to_string()));
    log::info!("making random parameters of that shape ...");
    let params = random_parameters_for(&shape, u64::from(k)).unwrap_or_else(|e| fail(&e.to_string()));
    drop(shape);
    log::info!("uploading the parameters to {} GPU(s) ...", devices.len());
    for (b, d) in backends.iter().zip(&devices) {
        b.prepare(&params)
            .unwrap_or_else(|e| fail(&format!("GPU {d}: uploading parameters: {e}")));
    }
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();

    // The naive loop on GPU 0: synthesize (pinned, hinted after the first), then prove.
    let naive_pool = PinnedPool::cuda(devices[0], PinMode::default(), PoolConfig::default())
        .unwrap_or_else(|e| fail(&format!("pinned pool: {e}")));
    let naive = Prover::new()
        .with_custom_backend(backends[0].clone())
        .with_pool(naive_pool);
    let mut naive_times = Vec::new();
    let mut naive_gpu = Duration::ZERO;
    let mut naive_proofs = Vec::new();
    for i in 0..naive_runs.min(n) {
        let start = Instant::now();
        let a = naive
            .synthesize_for(circuit(k, bits, i as u64), &params)
            .unwrap_or_else(|e| fail(&e.to_string()));
        let proving = Instant::now();
        let (mut p, _) = naive
            .prove_synthesized(vec![a], &params, &r[i..=i], &s[i..=i])
            .unwrap_or_else(|e| fail(&e.to_string()));
        let gpu = proving.elapsed();
        let total = start.elapsed();
        eprintln!(
            "naive {i}: {:.2} s (synthesis {:.2} s, proof {:.3} s)",
            total.as_secs_f64(),
            (total - gpu).as_secs_f64(),
            gpu.as_secs_f64()
        );
        if i > 0 || naive_runs == 1 {
            naive_times.push(total.as_secs_f64());
            naive_gpu += gpu;
        }
        naive_proofs.push(p.pop().expect("one proof"));
    }
    drop(naive);
    let naive_s = naive_times.iter().sum::<f64>() / naive_times.len().max(1) as f64;
    let naive_busy = naive_gpu.as_secs_f64() / naive_times.iter().sum::<f64>().max(1e-9);

    // The engine.
    let all_gpu_workers = gpu_workers * devices.len();
    let one = partition_bytes(params_hint(&params), 1.0);
    let budget = match args.budget_gib {
        Some(g) if g > 0.0 => (g * (1u64 << 30) as f64) as usize,
        // The partitions in flight, beside the parameters (charged once in the budget).
        _ => (target + all_gpu_workers + synthesis_workers) * one + params.host_bytes(),
    };
    let pacer = match pacer_name.as_str() {
        "pi" => {
            let mut pi = PiConfig::default();
            pi.target_depth = target;
            PacerMode::Pi(pi)
        }
        "queue" => PacerMode::BoundedQueue { depth },
        other => fail(&format!("--pacer: pi or queue, not {other:?}")),
    };
    let allocator = CudaPinnedAllocator::new(devices[0], PinMode::default())
        .unwrap_or_else(|e| fail(&format!("pinned allocator: {e}")));
    let engine = Engine::new(EngineConfig {
        synthesis_workers,
        pacer,
        budget_bytes: budget,
        gpu_workers_per_backend: gpu_workers,
        backends: backends
            .iter()
            .map(|b| EngineBackend::Custom(b.clone() as std::sync::Arc<dyn Backend>))
            .collect(),
        pool_allocator: Some(Box::new(allocator)),
        witness_path: args.witness_path,
        ..EngineConfig::default()
    })
    .unwrap_or_else(|e| fail(&e.to_string()));
    // The parameters enter the budget (and the GPUs) before the prewarm fills it.
    engine
        .add_parameters(&params)
        .unwrap_or_else(|e| fail(&format!("parameters: {e}")));
    if prewarm {
        let start = Instant::now();
        // On the witness path only the partitions dispatched before the first has recorded its
        // compiled circuit are synthesized in full; the others check out a few MiB of compact
        // witness. Full-size buffers pinned for them would sit idle in the budget until the
        // engine frees them under pressure — in its dispatcher, mid-stream, dispatching nothing
        // for as long as the frees take (~0.2 s a GiB of pinned memory): the GPU then starves.
        let in_full = if args.witness_path {
            if pacer_name == "queue" {
                depth
            } else {
                target
            }
        } else {
            target + all_gpu_workers + synthesis_workers
        };
        let want = in_full.min(n);
        let got = engine
            .prewarm(params_hint(&params), want)
            .unwrap_or_else(|e| fail(&format!("prewarm: {e}")));
        eprintln!(
            "prewarmed {got} partitions' pinned buffers ({:.1} GiB) in {:.1} s",
            gib(engine.pool().stats().bytes_idle),
            start.elapsed().as_secs_f64()
        );
    }

    let start = Instant::now();
    let circuits = (0..n).map(|i| circuit(k, bits, i as u64)).collect();
    let handle = engine.submit(
        Job::from_circuits(params.clone(), circuits)
            .with_randomness(r.clone(), s.clone())
            .with_label("engine_bench"),
    );
    let (tx, rx) = mpsc::channel();
    handle.on_progress(Box::new(move |p| {
        let _ = tx.send((p, Instant::now()));
    }));
    let mut warm: Option<(Instant, EngineStats)> = None;
    let mut last_done = start;
    for (p, at) in rx {
        if p.done == warmup && warm.is_none() && !p.finished {
            warm = Some((at, engine.stats()));
        }
        if !p.finished {
            last_done = at;
            if p.done % 8 == 0 || p.done == n {
                let st = engine.stats();
                eprintln!(
                    "{}/{n} at {:.1} s: {} in synthesis, {} waiting, {} on GPU, pacer rate {:?}/s, budget {:.1}/{:.1} GiB",
                    p.done,
                    at.duration_since(start).as_secs_f64(),
                    st.in_synthesis,
                    st.waiting,
                    st.on_gpu,
                    st.pacer.dispatch_rate.map(|r| (r * 100.0).round() / 100.0),
                    gib(st.budget_used),
                    gib(st.budget_limit)
                );
            }
        }
        if p.finished {
            break;
        }
    }
    let proofs = handle.wait().unwrap_or_else(|e| fail(&format!("engine: {e}")));
    let end = engine.stats();
    let wall = start.elapsed();
    let identical = proofs.iter().zip(&naive_proofs).all(|(a, b)| a == b);

    let (warm_at, warm_stats) = warm.unwrap_or((start, engine.stats()));
    let window = last_done.duration_since(warm_at).as_secs_f64();
    let per_partition = window / (n - warmup).max(1) as f64;
    let busy_fraction = (busy(&end) - busy(&warm_stats)).as_secs_f64() / (window * all_gpu_workers as f64).max(1e-9);
    let checkouts = end.pool.checkouts - warm_stats.pool.checkouts;
    let reuses = end.pool.reuses - warm_stats.pool.reuses;

    println!();
    println!("machine: {}", machine());
    println!(
        "GPUs: {} ({} worker(s) each), synthesis workers {synthesis_workers}, pacer {pacer_name} (target {target}, in-flight cap {}), 2^{k} constraints, {}, {n} partitions ({warmup} warm-up)",
        devices.len(),
        gpu_workers,
        end.pacer.in_flight_cap,
        mix(bits)
    );
    println!(
        "| run | s / partition | GPU busy | reuses / checkouts | peak pinned | budget (peak / limit) | vs naive |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| naive loop (GPU {}, {} partitions after the first) | {naive_s:.3} | {:.0}% | — | — | — | 1.00× |",
        devices[0],
        naive_times.len(),
        naive_busy * 100.0
    );
    println!(
        "| engine | {per_partition:.3} | {:.1}% | {reuses} / {checkouts} ({:.1}%) | {:.1} GiB | {:.1} / {:.1} GiB | {:.2}× |",
        busy_fraction * 100.0,
        100.0 * reuses as f64 / checkouts.max(1) as f64,
        gib(end.pool.peak_bytes),
        gib(end.budget_peak),
        gib(end.budget_limit),
        naive_s / per_partition
    );
    println!(
        "engine wall {:.1} s for {n}; one partition reserves {:.2} GiB; pool: {} allocations, {} reuses, {} fallbacks, {} waits, {:.1} s pinning; synthesis EMA {:.2} s, proof EMA {:.3} s, pacer pipeline {:.1} ({:.2} s of synthesis); per worker busy: {}",
        wall.as_secs_f64(),
        gib(one),
        end.pool.allocations,
        end.pool.reuses,
        end.pool.fallbacks,
        end.pool.waits,
        end.pool.alloc_time.as_secs_f64(),
        end.synthesis_time_ema.unwrap_or_default().as_secs_f64(),
        end.gpu_time_ema.unwrap_or_default().as_secs_f64(),
        end.pacer.pipeline,
        end.pacer.synthesis_time.unwrap_or_default().as_secs_f64(),
        end.workers
            .iter()
            .map(|w| format!("{}:{:.0}%", w.backend, w.busy_fraction * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "budget: parameters {:.2} GiB on the host ({} sets; {:.2} GiB on the devices, at most), {} waits for room, {:.2} GiB of idle buffers and {} parameter sets evicted",
        gib(end.params_host_bytes),
        end.params_sets,
        gib(end.params_device_bytes),
        end.budget_waits,
        gib(end.evicted_pool_bytes),
        end.evicted_params
    );
    let w = end.witness;
    println!(
        "synthesis path: {} — {} recorded, {} witness-only, {} full, {} fallbacks; compiled circuits {:.2} GiB; peak host RSS {}",
        if args.witness_path { "witness path" } else { "full synthesis (--witness-path 0)" },
        w.recorded,
        w.witness,
        w.full,
        w.fallbacks,
        gib(end.compiled_bytes),
        peak_rss().map_or("unknown".into(), |b| format!("{:.1} GiB (the naive loop's included)", gib(b)))
    );
    println!(
        "proofs identical to the naive loop's (first {}): {}",
        naive_proofs.len(),
        if identical { "yes" } else { "NO" }
    );
    if !identical {
        std::process::exit(1);
    }
}
