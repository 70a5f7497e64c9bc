//! GPU benchmark (feature `cuda`): one synthetic partition of 2^k constraints proved on the GPU,
//! phase by phase, against pageable memory and against the CPU path on the same machine.
//!
//!     cargo run --release --features cuda --example bench -- --log-sizes 20,22,24 --runs 3
//!
//! Parameters are random points of the right shape (`cuzk::testing::random_parameters`): the
//! work is exactly a real proof's, but there is no trapdoor, so proofs are checked against the
//! CPU's bytes (at sizes up to `--cpu-max-log`) instead of being verified.

mod support;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use cust::memory::{CopyDestination, DeviceBuffer};
use cuzk::pool::PinMode;
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, PinnedPool, PoolConfig, Prover, Timings};
use ff::Field;
use support::{fail, median, ms, Args};

const USAGE: &str = "usage: bench [--log-sizes 20,22,24] [--runs 3] [--bit-percent 75] [--cpu-max-log 22] \
                     [--pageable-max-log 24] [--separate-msms 1 (time each MSM; slower than the batched call)]";

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

fn as_bytes(s: &[Scalar]) -> &[u8] {
    // SAFETY: Scalar is 32 bytes of plain data; the slice is initialised and borrowed.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

fn main() {
    support::init_logging();
    let args = Args::parse(USAGE);
    let sizes: Vec<u32> = args.list("--log-sizes", vec![20, 22, 24]);
    let runs: usize = args.get("--runs", 3);
    let bits: u32 = args.get("--bit-percent", 75);
    let cpu_max: u32 = args.get("--cpu-max-log", 22);
    let pageable_max: u32 = args.get("--pageable-max-log", 24);
    let separate: bool = args.get("--separate-msms", 0u8) != 0;
    let _ctx = cust::quick_init().unwrap_or_else(|e| fail(&format!("no CUDA device: {e}")));
    let gpu_name = cust::device::Device::get_device(0)
        .and_then(|d| d.name())
        .unwrap_or_default();
    println!("machine: {gpu_name}; host {}", support::machine());

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
        .with_custom_backend(backend)
        .with_pool(PinnedPool::heap(PoolConfig::default()));
    let cpu = Prover::new()
        .with_backend(BackendChoice::Cpu)
        .unwrap_or_else(|e| fail(&e.to_string()));

    let mut rows = Vec::new();
    for &k in &sizes {
        let circuit = Synthetic {
            bit_percent: bits,
            ..Synthetic::new(k)
        };
        let start = Instant::now();
        let params = random_parameters(circuit.clone(), u64::from(k)).unwrap_or_else(|e| fail(&e.to_string()));
        eprintln!("2^{k}: parameters made in {:.1} s", start.elapsed().as_secs_f64());
        let start = Instant::now();
        gpu.prepare(&params).unwrap_or_else(|e| fail(&e.to_string()));
        let upload = start.elapsed();
        eprintln!(
            "2^{k}: parameters resident on the GPU in {:.0} ms ({} MiB)",
            ms(upload),
            params.device_bytes() >> 20
        );

        let mut rng = rand::thread_rng();
        let mut totals = Vec::new();
        let mut last = Timings::default();
        let mut proof = None;
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        for run in 0..=runs {
            let a = gpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string()));
            if !a.is_pinned() {
                fail("the assignment is not pinned");
            }
            let start = Instant::now();
            let (p, t) = gpu
                .prove_synthesized(vec![a], &params, &[r], &[s])
                .unwrap_or_else(|e| fail(&e.to_string()));
            let total = start.elapsed();
            eprintln!("2^{k} run {run}: {:.0} ms ({t})", ms(total));
            if run > 0 {
                totals.push(ms(total));
                last = t;
            }
            proof = Some(p[0]);
        }
        let gpu_ms = median(totals);

        // a/b/c transfer rates from the pinned assignment and from pageable copies.
        let a = gpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string()));
        let abc_bytes = 3 * std::mem::size_of_val(a.a());
        let pinned_rate = h2d_rate(as_bytes(a.a()), 5);
        let heap_copy: Vec<Scalar> = a.a().to_vec();
        let pageable_rate = h2d_rate(as_bytes(&heap_copy), 3);
        drop((a, heap_copy));

        let pageable_ms = (k <= pageable_max).then(|| {
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
            if Some(p[0]) != proof {
                fail("pageable and pinned GPU proofs differ");
            }
            ms(start.elapsed())
        });

        let cpu_ms = (k <= cpu_max).then(|| {
            let a = cpu.synthesize(circuit.clone()).unwrap_or_else(|e| fail(&e.to_string()));
            let start = Instant::now();
            let (p, _) = cpu
                .prove_synthesized(vec![a], &params, &[r], &[s])
                .unwrap_or_else(|e| fail(&e.to_string()));
            let t = ms(start.elapsed());
            if Some(p[0]) != proof {
                fail(&format!("2^{k}: GPU and CPU proofs differ"));
            }
            eprintln!("2^{k}: CPU {t:.0} ms, same bytes as the GPU");
            t
        });
        gpu.evict_resident();
        rows.push((
            k,
            gpu_ms,
            last,
            abc_bytes,
            pinned_rate,
            pageable_rate,
            pageable_ms,
            cpu_ms,
            upload,
        ));
    }

    println!();
    println!(
        "median of {runs} proofs after a warm-up; from synthesized (pinned) assignment to proof; {bits}% bit witnesses"
    );
    println!();
    println!("| 2^k | total ms | a/b/c H2D + H + MSM H ms | MSMs L+A+B_G1+B_G2 ms | tail ms | a/b/c MiB | H2D pinned GB/s | H2D pageable GB/s | pageable prove ms | CPU prove ms | GPU/CPU speed-up | SRS upload ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let d = |x: Duration| format!("{:.1}", ms(x));
    for (k, total, t, abc, pin, page, pg, cpu, up) in rows {
        println!(
            "| {k} | {total:.1} | {} | {} | {} | {} | {pin:.1} | {page:.1} | {} | {} | {} | {:.0} |",
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
            abc >> 20,
            pg.map_or("-".into(), |x| format!("{x:.1}")),
            cpu.map_or("-".into(), |x| format!("{x:.0}")),
            cpu.map_or("-".into(), |x| format!("{:.1}×", x / total)),
            ms(up)
        );
    }
}
