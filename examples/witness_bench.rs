//! Witness-only synthesis against full synthesis, on the host (no GPU needed).
//!
//!     cargo run --release --example witness_bench -- --log-size 20 --bit-percents 98,75 --runs 3
//!
//! For a synthetic partition of 2^k constraints (`cuzk::testing::Synthetic`) at each mix of
//! 0/1 aux values, prints the time of a full synthesis into a `ProvingAssignment`, of a
//! witness-only synthesis into a compact witness (`WitnessCs`), of recording the circuit
//! (full synthesis that also records A, B, C), of evaluating a, b, c on the host (the
//! `ProvingAssignment` from the compiled circuit and the witness: aux expanded and a, b, c in
//! pool buffers; and a, b, c read straight from the compact witness), of saving and mapping
//! the compiled-circuit file; and the host bytes: the compact witness against 32·aux, the
//! full path's a, b, c and aux, and the compiled circuit. Times are medians of `--runs`, on
//! all cores (rayon) where a step is parallel. Every run checks that both paths give the same
//! a, b, c. With `--gpu` (a `cuda` build) it also proves the same witness on GPU 0 by the full
//! path and by the witness path and prints both proof times (median of `--runs`, after one
//! untimed proof each) and whether the bytes agree.

use std::time::{Duration, Instant};

use clap::Parser;
use cuzk::compiled::{CompiledCircuit, WitnessCs};
use cuzk::testing::Synthetic;
use cuzk::{BackendChoice, PinnedPool, PoolConfig, Prover};

/// Witness-only synthesis against full synthesis on a synthetic partition, on the host.
#[derive(Parser)]
#[command(name = "witness_bench")]
struct Args {
    /// log2 of the constraints (input constraints included).
    #[arg(long, value_name = "K", default_value_t = 20, value_parser = clap::value_parser!(u32).range(4..=30))]
    log_size: u32,
    /// Percentages of aux values that are 0 or 1, comma-separated (98: Filecoin's PoRep mix).
    #[arg(long, value_name = "P,...", value_delimiter = ',', default_values_t = [98, 75])]
    bit_percents: Vec<u32>,
    /// Timed runs per step (the median is printed).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Also prove on GPU 0 by both paths (a `cuda` build): the full path (a, b, c copied to
    /// the device) against the witness path (compact witness copied, a, b, c evaluated there).
    #[arg(long)]
    gpu: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn timed<T>(runs: u64, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        // The previous run's output goes first, so its buffers are reused, not added to.
        drop(last.take());
        let start = Instant::now();
        let out = f();
        times.push(start.elapsed());
        last = Some(out);
    }
    (median(times), last.expect("at least one run"))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn mib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

fn fail(e: cuzk::Error) -> ! {
    eprintln!("witness_bench: {e}");
    std::process::exit(1)
}

fn main() {
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "machine: {} cores ({} rayon threads), {}",
        cores,
        rayon::current_num_threads(),
        cpu_model()
    );
    println!(
        "circuit: cuzk::testing::Synthetic, 2^{} constraints, median of {} runs\n",
        args.log_size, args.runs
    );
    let prover = Prover::new()
        .with_backend(BackendChoice::Cpu)
        .unwrap_or_else(|e| fail(e));
    let pool = PinnedPool::heap(PoolConfig::default());
    let dir = std::env::temp_dir().join(format!("cuzk-witness-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
        eprintln!("witness_bench: cannot create {}: {e}", dir.display());
        std::process::exit(1)
    });

    let mut rows = Vec::new();
    let mut gpu_rows: Vec<Vec<String>> = Vec::new();
    for &bits in &args.bit_percents {
        let circuit = Synthetic {
            bit_percent: bits,
            ..Synthetic::new(args.log_size)
        };
        let (t_full, full) = timed(args.runs, || {
            prover.synthesize(circuit.clone()).unwrap_or_else(|e| fail(e))
        });
        let (t_record, compiled) = timed(args.runs, || {
            CompiledCircuit::record(circuit.clone(), None, None)
                .unwrap_or_else(|e| fail(e))
                .1
        });
        let (t_witness, witness) = timed(args.runs, || {
            WitnessCs::new().synthesize(circuit.clone()).unwrap_or_else(|e| fail(e))
        });
        let (t_assign, assignment) = timed(args.runs, || {
            compiled.assignment(&witness, Some(&pool)).unwrap_or_else(|e| fail(e))
        });
        let (t_compact, abc) = timed(args.runs, || compiled.evaluate(&witness).unwrap_or_else(|e| fail(e)));
        if assignment.a() != full.a() || assignment.b() != full.b() || assignment.c() != full.c() {
            eprintln!("witness_bench: a, b, c differ between the paths at {bits}% bits");
            std::process::exit(1);
        }
        if abc.a.as_slice() != full.a() || abc.b.as_slice() != full.b() || abc.c.as_slice() != full.c() {
            eprintln!("witness_bench: compact-direct a, b, c differ at {bits}% bits");
            std::process::exit(1);
        }
        let n = full.num_constraints();
        let full_bytes = 32 * (3 * n + witness.num_aux() + full.input_assignment().len());
        // Gone before the GPU's parameters are made (at 2^27 a, b, c and aux are 16 GiB).
        drop((assignment, abc, full));
        if args.gpu {
            gpu_rows.push(gpu_row(bits, &circuit, &compiled, args.runs));
        }
        let path = dir.join(format!("synthetic-{bits}.r1cs"));
        let (t_save, ()) = timed(args.runs, || compiled.save(&path).unwrap_or_else(|e| fail(e)));
        let (t_load, loaded) = timed(args.runs, || CompiledCircuit::load(&path).unwrap_or_else(|e| fail(e)));
        assert_eq!(loaded.fingerprint(), compiled.fingerprint());
        let aux = witness.num_aux();
        rows.push(vec![
            format!("{bits}%"),
            format!("{:.1}%", 100.0 * witness.num_bits() as f64 / aux.max(1) as f64),
            ms(t_full),
            format!(
                "{} ({:.2}×)",
                ms(t_witness),
                t_full.as_secs_f64() / t_witness.as_secs_f64()
            ),
            ms(t_record),
            ms(t_assign),
            ms(t_compact),
            format!("{} / {}", ms(t_save), ms(t_load)),
            format!("{} / {}", mib(witness.byte_size()), mib(32 * aux)),
            mib(full_bytes),
            format!(
                "{} ({}+{}+{} nz)",
                mib(compiled.byte_size()),
                compiled.a().non_zeros(),
                compiled.b().non_zeros(),
                compiled.c().non_zeros()
            ),
        ]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let header = [
        "bits",
        "0/1 aux",
        "full synthesis ms",
        "witness only ms",
        "recording ms",
        "host eval → assignment ms",
        "host eval from compact ms",
        "save / map file ms",
        "compact witness / 32·aux MiB",
        "full path a,b,c,aux MiB",
        "compiled circuit MiB",
    ];
    println!("| {} |", header.join(" | "));
    println!("|{}|", header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        println!("| {} |", r.join(" | "));
    }
    if !gpu_rows.is_empty() {
        let header = [
            "bits",
            "full path proof ms (H phase)",
            "witness path proof ms (H phase, with SpMV)",
            "circuit on the device MiB",
            "same bytes",
        ];
        println!();
        println!("| {} |", header.join(" | "));
        println!("|{}|", header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
        for r in gpu_rows {
            println!("| {} |", r.join(" | "));
        }
    }
}

/// One row of the GPU table: one witness (synthesized into pinned buffers) proved by the full path (the assignment from
/// the compiled circuit, a, b, c copied) and by the witness path, same r and s.
#[cfg(feature = "cuda")]
fn gpu_row(bits: u32, circuit: &Synthetic, compiled: &CompiledCircuit, runs: u64) -> Vec<String> {
    use blstrs::Scalar;
    use std::sync::Arc;
    let backend = Arc::new(cuzk::prover::cuda::CudaBackend::new(0).unwrap_or_else(|e| fail(e)));
    let pool = PinnedPool::cuda(0, cuzk::pool::PinMode::default(), PoolConfig::default()).unwrap_or_else(|e| fail(e));
    let gpu = Prover::new()
        .with_custom_backend(backend.clone())
        .with_pool(pool.clone());
    let params = cuzk::testing::random_parameters(circuit.clone(), 7).unwrap_or_else(|e| fail(e));
    gpu.prepare(&params).unwrap_or_else(|e| fail(e));
    let (r, s) = (Scalar::from(3u64), Scalar::from(5u64));
    // The witness as a prover with a pool makes it: in pinned buffers (a heap witness would be
    // copied from pageable memory).
    let pinned = gpu.synthesize_witness(circuit.clone()).unwrap_or_else(|e| fail(e));
    let witness = &pinned;
    let mut full_t = Vec::new();
    let mut full_h = Vec::new();
    let mut full_bytes = Vec::new();
    let mut wit_t = Vec::new();
    let mut wit_h = Vec::new();
    let mut wit_bytes = Vec::new();
    // One untimed proof by each path first: the circuit's upload and the NTT tables.
    for run in 0..=runs {
        let a = compiled.assignment(witness, Some(&pool)).unwrap_or_else(|e| fail(e));
        let start = Instant::now();
        let (p, t) = gpu
            .prove_synthesized(vec![a], &params, &[r], &[s])
            .unwrap_or_else(|e| fail(e));
        if run > 0 {
            full_t.push(start.elapsed());
            full_h.push(t.h);
        }
        full_bytes = p[0].to_bytes().to_vec();
        let start = Instant::now();
        let (p, t) = gpu
            .prove_witnesses(compiled, std::slice::from_ref(witness), &params, &[r], &[s])
            .unwrap_or_else(|e| fail(e));
        if run > 0 {
            wit_t.push(start.elapsed());
            wit_h.push(t.h);
        }
        wit_bytes = p[0].to_bytes().to_vec();
    }
    let ev = backend.witness_evaluations();
    if ev.on_host > 0 {
        eprintln!("witness_bench: the circuit did not fit on the device: evaluated on the host");
    }
    vec![
        format!("{bits}%"),
        format!("{} ({})", ms(median(full_t)), ms(median(full_h))),
        format!("{} ({})", ms(median(wit_t)), ms(median(wit_h))),
        mib(ev.circuit_bytes),
        if full_bytes == wit_bytes && !full_bytes.is_empty() {
            "yes".into()
        } else {
            "NO".into()
        },
    ]
}

#[cfg(not(feature = "cuda"))]
fn gpu_row(_: u32, _: &Synthetic, _: &CompiledCircuit, _: u64) -> Vec<String> {
    eprintln!("witness_bench: --gpu needs a build with --features cuda");
    std::process::exit(2)
}
