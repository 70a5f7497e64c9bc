//! GPU benchmark (feature `cuda`): one synthetic partition of 2^k constraints proved on the GPU,
//! phase by phase, against pageable memory and against the CPU path on the same machine.
//!
//!     cargo run --release --features cuda --example bench -- --log-sizes 20,22,24 --runs 3
//!     ... --log-sizes 26 --mem-limits 24,32   # also streamed, as on 24 and 32 GiB GPUs
//!
//! With `--mem-limits`, each size is also proved with the device memory limited to each of
//! those GiB (`CudaBackend::set_memory_limit`): parameters that do not fit with a proof's
//! working set are streamed from pinned host memory; the proof must equal the resident one.
//! Peak device memory is what cuzk's kernels count (resident bases, tables, scratch); peak
//! host memory is the process's VmHWM, reset per size. `--device-only 1` runs the resident
//! proofs last, with the parameters' host copy released (`Prover::prepare_device_only`), so
//! the host peak of that row is a proof's own memory (no pageable or CPU comparison then).
//!
//! The witness defaults to the Filecoin mix (`--bit-percent 98`: filecoin-proofs' PoRep C2
//! circuit has 98.4% of its aux values equal to 0 or 1); `--bit-percent 75` gives the mix of
//! the older measurements.
//!
//! Parameters are random points of the right shape (`cuzk::testing::random_parameters`): the
//! work is exactly a real proof's, but there is no trapdoor, so proofs are checked against the
//! CPU's bytes (at sizes up to `--cpu-max-log`) instead of being verified.

mod support;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser};
use cust::memory::{CopyDestination, DeviceBuffer};
use cuzk::pool::PinMode;
use cuzk::testing::{random_parameters_for, Synthetic};
use cuzk::{BackendChoice, PinnedPool, PoolConfig, Prover, Timings};
use ff::Field;
use support::{fail, median, ms};

/// One synthetic partition of 2^k constraints proved on the GPU, phase by phase, against
/// pageable memory and the CPU path; optionally also streamed under device memory limits.
/// The witness defaults to the Filecoin mix: 98% of the aux values are 0 or 1.
#[derive(Parser)]
#[command(name = "bench")]
struct Args {
    /// Circuit sizes, log2 of the constraints, comma-separated.
    #[arg(long, value_name = "K,...", value_delimiter = ',', default_values_t = [20, 22, 24])]
    log_sizes: Vec<u32>,
    /// Timed proofs per size and mode, after one warm-up.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = support::at_least_one)]
    runs: usize,
    /// Percentage of witness values that are 0 or 1: 98 is Filecoin's PoRep C2 mix (98.4% of
    /// its aux values), 75 the mix of older measurements.
    #[arg(long, value_name = "P", default_value_t = FILECOIN_BIT_PERCENT, value_parser = clap::value_parser!(u32).range(0..=100))]
    bit_percent: u32,
    /// Largest size also proved on the CPU (and checked equal byte for byte).
    #[arg(long, value_name = "K", default_value_t = 22)]
    cpu_max_log: u32,
    /// Largest size also proved from pageable (unpinned) memory.
    #[arg(long, value_name = "K", default_value_t = 24)]
    pageable_max_log: u32,
    /// Time each MSM in its own call (slower than the batched call).
    #[arg(long, value_name = "0|1", default_value = "0", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    separate_msms: bool,
    /// Device memory limits in GiB, comma-separated: each size is also proved under each
    /// (parameters that do not fit are streamed from pinned host memory).
    #[arg(long, value_name = "GIB,...", value_delimiter = ',')]
    mem_limits: Vec<usize>,
    /// Run the resident proofs (0 skips them).
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    resident: bool,
    /// Run the resident proofs last, with the parameters' host copy released
    /// (Prover::prepare_device_only).
    #[arg(long, value_name = "0|1", default_value = "0", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    device_only: bool,
}

/// Filecoin's witness mix, the default: PoRep C2's circuit has 98.4% of its aux values 0 or 1.
const FILECOIN_BIT_PERCENT: u32 = 98;

/// The process's peak resident set (VmHWM), bytes.
fn host_peak() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<usize>().ok())
        })
        .map_or(0, |kb| kb << 10)
}

/// Restarts VmHWM from the current resident set (Linux ≥ 4.0; ignored elsewhere).
fn reset_host_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// One line of the table.
struct Row {
    k: u32,
    mode: String,
    total_ms: f64,
    t: Timings,
    abc_bytes: usize,
    rates: Option<(f64, f64)>,
    pageable_ms: Option<f64>,
    cpu_ms: Option<f64>,
    setup: Duration,
    device_peak: usize,
    host_peak: usize,
    params_bytes: usize,
}

/// Median GB/s of host→device copies of `bytes`.
fn h2d_rate(bytes: &[u8], runs: usize) -> f64 {
    let mut dev = DeviceBuffer::<u8>::zeroed(bytes.len()).unwrap_or_else(|e| fail(&format!("device buffer: {e}")));
    dev.copy_from(bytes).unwrap_or_else(|e| fail(&format!("copy: {e}")));
    let rates = (0..runs)
        .map(|_| {
            let start = Instant::now();
            dev.copy_from(bytes).unwrap_or_else(|e| fail(&format!("copy: {e}")));
            bytes.len() as f64 / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    median(rates)
}

/// The witness mix, as the output states it.
fn mix(bits: u32) -> String {
    if bits == FILECOIN_BIT_PERCENT {
        format!("{bits}% bit witnesses (the Filecoin mix; --bit-percent 75 for the older mix)")
    } else {
        format!("{bits}% bit witnesses (not the Filecoin mix, {FILECOIN_BIT_PERCENT}%)")
    }
}

fn as_bytes(s: &[Scalar]) -> &[u8] {
    // SAFETY: Scalar is 32 bytes of plain data; the slice is initialised and borrowed.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

fn main() {
    support::init_logging("info");
    let args = Args::parse();
    let (sizes, runs, bits) = (args.log_sizes.clone(), args.runs, args.bit_percent);
    let (cpu_max, pageable_max, separate) = (args.cpu_max_log, args.pageable_max_log, args.separate_msms);
    let _ctx = cust::quick_init().unwrap_or_else(|e| fail(&format!("no CUDA device: {e:?}")));
    let gpu_name = cust::device::Device::get_device(0)
        .and_then(|d| d.name())
        .unwrap_or_default();
    println!("machine: {gpu_name}; host {}", support::machine());
    println!("witness: {}", mix(bits));

    let pinned_pool =
        PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap_or_else(|e| fail(&e.to_string()));
    // One backend for the pinned and the pageable prover: the parameters go to the device once.
    let backend = std::sync::Arc::new(
        cuzk::prover::cuda::CudaBackend::new(0)
            .unwrap_or_else(|e| fail(&e.to_string()))
            .with_batched_msms(!separate),
    );
    let gpu = Prover::new()
        .with_custom_backend(backend.clone())
        .with_pool(pinned_pool.clone());
    let pageable = Prover::new()
        .with_custom_backend(backend.clone())
        .with_pool(PinnedPool::heap(PoolConfig::default()));
    let cpu = Prover::new()
        .with_backend(BackendChoice::Cpu)
        .unwrap_or_else(|e| fail(&e.to_string()));

    let limits = args.mem_limits.clone();
    let (with_resident, device_only) = (args.resident, args.device_only);
    let mut rows: Vec<Row> = Vec::new();
    for &k in &sizes {
        let circuit = Synthetic {
            bit_percent: bits,
            ..Synthetic::new(k)
        };
        reset_host_peak();
        if k >= 26 {
            log::info!("2^{k}: synthesizing the first partition ...");
        }
        // The first assignment gives the parameters their shape and is the first warm-up run.
        let start = Instant::now();
        let first = gpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string()));
        // Its growth (no hint yet for this size) left smaller buffers idle that nothing of this
        // size will reuse: give them back before the parameters take their share of the host.
        let freed = pinned_pool.shrink(0);
        eprintln!(
            "2^{k}: synthesized in {:.1} s; {} MiB of idle pinned growth buffers freed",
            start.elapsed().as_secs_f64(),
            freed >> 20
        );
        let mut first = Some(first);
        log::info!("2^{k}: making random parameters of the circuit's shape ...");
        let start = Instant::now();
        let params = random_parameters_for(first.as_ref().unwrap_or_else(|| fail("no assignment")), u64::from(k))
            .unwrap_or_else(|e| fail(&e.to_string()));
        eprintln!(
            "2^{k}: parameters ({} MiB) made in {:.1} s",
            params.device_bytes() >> 20,
            start.elapsed().as_secs_f64()
        );
        let mut rng = rand::thread_rng();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let mut reference: Option<cuzk::Proof> = None;

        // Proves `runs` times after a warm-up under the backend's current settings; the first
        // assignment also measures the a/b/c transfer rates (pinned and pageable).
        let mut measure = |mode: &str,
                           params: &cuzk::Parameters,
                           setup: Duration,
                           rates_too: bool,
                           reference: &mut Option<cuzk::Proof>| {
            backend.memory_stats(true).unwrap_or_else(|e| fail(&e.to_string()));
            let mut totals = Vec::new();
            let mut last = Timings::default();
            let mut rates = None;
            let mut abc_bytes = 0;
            for run in 0..=runs {
                let a = match first.take() {
                    Some(a) => a,
                    None => gpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string())),
                };
                if !a.is_pinned() {
                    fail("the assignment is not pinned");
                }
                abc_bytes = 3 * std::mem::size_of_val(a.a());
                if run == 0 && rates_too {
                    let pinned_rate = h2d_rate(as_bytes(a.a()), 5);
                    let heap_copy: Vec<Scalar> = a.a().to_vec();
                    rates = Some((pinned_rate, h2d_rate(as_bytes(&heap_copy), 3)));
                }
                let start = Instant::now();
                let (p, t) = gpu
                    .prove_synthesized(vec![a], params, &[r], &[s])
                    .unwrap_or_else(|e| fail(&e.to_string()));
                let total = start.elapsed();
                eprintln!("2^{k} {mode} run {run}: {:.0} ms ({t})", ms(total));
                if run > 0 {
                    totals.push(ms(total));
                    last = t;
                }
                match reference {
                    None => *reference = Some(p[0]),
                    Some(q) if *q != p[0] => fail(&format!("2^{k}: the {mode} proof differs from the first one")),
                    Some(_) => {}
                }
            }
            let device_peak = backend.memory_stats(false).map_or(0, |m| m.peak);
            Row {
                k,
                mode: mode.to_string(),
                total_ms: median(totals),
                t: last,
                abc_bytes,
                rates,
                pageable_ms: None,
                cpu_ms: None,
                setup,
                device_peak,
                host_peak: host_peak(),
                params_bytes: params.device_bytes(),
            }
        };

        if with_resident && !device_only {
            let start = Instant::now();
            gpu.prepare(&params).unwrap_or_else(|e| fail(&e.to_string()));
            let upload = start.elapsed();
            eprintln!("2^{k}: parameters resident on the GPU in {:.0} ms", ms(upload));
            let mut row = measure("resident", &params, upload, true, &mut reference);

            row.pageable_ms = (k <= pageable_max).then(|| {
                let a = pageable
                    .synthesize(circuit.clone())
                    .unwrap_or_else(|e| fail(&e.to_string()));
                pageable
                    .prove_synthesized(vec![a], &params, &[r], &[s])
                    .unwrap_or_else(|e| fail(&e.to_string()));
                let a = pageable
                    .synthesize(circuit.clone())
                    .unwrap_or_else(|e| fail(&e.to_string()));
                let start = Instant::now();
                let (p, _) = pageable
                    .prove_synthesized(vec![a], &params, &[r], &[s])
                    .unwrap_or_else(|e| fail(&e.to_string()));
                if Some(p[0]) != reference {
                    fail("pageable and pinned GPU proofs differ");
                }
                ms(start.elapsed())
            });
            row.cpu_ms = (k <= cpu_max).then(|| {
                let a = cpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string()));
                let start = Instant::now();
                let (p, _) = cpu
                    .prove_synthesized(vec![a], &params, &[r], &[s])
                    .unwrap_or_else(|e| fail(&e.to_string()));
                let t = ms(start.elapsed());
                if Some(p[0]) != reference {
                    fail(&format!("2^{k}: GPU and CPU proofs differ"));
                }
                eprintln!("2^{k}: CPU {t:.0} ms, same bytes as the GPU");
                t
            });
            gpu.evict_resident();
            rows.push(row);
        }

        for &gib in &limits {
            backend
                .set_memory_limit(Some(gib << 30))
                .unwrap_or_else(|e| fail(&e.to_string()));
            let streams = backend.would_stream(&params);
            let start = Instant::now();
            gpu.prepare(&params).unwrap_or_else(|e| fail(&e.to_string()));
            let setup = start.elapsed();
            let mode = format!("{} ({gib} GiB)", if streams { "streamed" } else { "resident" });
            eprintln!("2^{k}: {mode}, set up in {:.0} ms", ms(setup));
            rows.push(measure(&mode, &params, setup, !with_resident, &mut reference));
            gpu.evict_resident();
        }
        backend.set_memory_limit(None).unwrap_or_else(|e| fail(&e.to_string()));
        if with_resident && device_only {
            // Resident without the host copy: the bench's parameters are the only other clone.
            let start = Instant::now();
            let dev = gpu
                .prepare_device_only(&params)
                .unwrap_or_else(|e| fail(&e.to_string()));
            let upload = start.elapsed();
            drop(params);
            reset_host_peak();
            eprintln!(
                "2^{k}: parameters resident, host copy released, in {:.0} ms",
                ms(upload)
            );
            let rates_too = limits.is_empty();
            rows.push(measure(
                "resident, device-only",
                &dev,
                upload,
                rates_too,
                &mut reference,
            ));
            gpu.evict_resident();
        }
    }

    println!();
    println!(
        "median of {runs} proofs after a warm-up; from synthesized (pinned) assignment to proof; {}",
        mix(bits)
    );
    println!();
    println!("| 2^k | mode | total ms | a/b/c H2D + H + MSM H ms | MSMs L+A+B_G1+B_G2 ms | tail ms | a/b/c MiB | H2D pinned GB/s | H2D pageable GB/s | pageable prove ms | CPU prove ms | GPU/CPU speed-up | SRS upload / register ms | params MiB | params GB/s of proof | peak device MiB | peak host MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let d = |x: Duration| format!("{:.1}", ms(x));
    for row in rows {
        let t = &row.t;
        println!(
            "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {:.1} | {} | {} |",
            row.k,
            row.mode,
            row.total_ms,
            d(t.h),
            if separate {
                format!(
                    "L {} + A {} + B_G1 {} + B_G2 {}",
                    d(t.msm_l),
                    d(t.msm_a),
                    d(t.msm_b_g1),
                    d(t.msm_b_g2)
                )
            } else {
                format!("{} (batched)", d(t.msm_batch))
            },
            d(t.tail),
            row.abc_bytes >> 20,
            row.rates.map_or("-".into(), |(p, _)| format!("{p:.1}")),
            row.rates.map_or("-".into(), |(_, q)| format!("{q:.1}")),
            row.pageable_ms.map_or("-".into(), |x| format!("{x:.1}")),
            row.cpu_ms.map_or("-".into(), |x| format!("{x:.0}")),
            row.cpu_ms.map_or("-".into(), |x| format!("{:.1}×", x / row.total_ms)),
            ms(row.setup),
            row.params_bytes >> 20,
            row.params_bytes as f64 / row.total_ms / 1e6,
            row.device_peak >> 20,
            row.host_peak >> 20,
        );
    }
}
