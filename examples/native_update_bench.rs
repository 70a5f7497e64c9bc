//! Benchmark: the native SnapDeals witness generator against `WitnessCs` (and, with `--full`,
//! full synthesis) on storage-proofs-update's own `EmptySectorUpdateCircuit` of a sector
//! size's production shape.
//!
//!     cargo run --release --features filecoin --example native_update_bench -- --sector-size 32GiB
//!
//! The partition is the sector bench's (`examples/sector_bench/snap.rs`): the circuit built
//! from `PublicParams::from_sector_size`, its witness fabricated (structurally filecoin-proofs'
//! own circuit: tests/filecoin.rs). Timed:
//!
//! - `WitnessCs::new().without_generator().synthesize(circuit)`, once (also the reference), one
//!   thread;
//! - with `--full`: full synthesis into a `ProvingAssignment`, once, one thread;
//! - the generator straight into a `WitnessCs` (`update_circuit_witness_parallel` on one
//!   thread), median of `--runs` after one warm-up; then on 4 threads and on every thread of
//!   the machine (the challenges in as many runs, merged).
//!
//! The generated witness is compared with `WitnessCs`'s value for value (exit 1 when they
//! differ). `--profile N` only runs the generator N times on one thread (for `perf record`).

mod support;

#[path = "sector_bench/snap.rs"]
#[allow(dead_code)]
mod snap;

use std::time::Instant;

use blstrs::Scalar;
use clap::Parser;
use cuzk::filecoin::native::first_differences;
use cuzk::{ConstraintSystem, Witness, WitnessCs};
use ff::Field;
use snap::SnapCircuit;
use support::{fail, median_ms_of, ms};

/// The SnapDeals generator against WitnessCs (and full synthesis), production shape.
#[derive(Parser)]
#[command(name = "native_update_bench")]
struct Args {
    /// The sector size: 8MiB, 16MiB, 512MiB, 32GiB or 64GiB (or bytes).
    #[arg(long, default_value = "32GiB", value_parser = support::parse_bytes)]
    sector_size: u64,
    #[command(flatten)]
    common: support::GeneratorRuns,
}

fn or_fail<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&e.to_string()))
}

fn generated(c: &SnapCircuit, threads: usize) -> Witness {
    let mut cs = WitnessCs::new();
    or_fail(cs.alloc_input(|| "one", || Ok(Scalar::ONE)));
    or_fail(c.generate(threads, &mut cs));
    or_fail(cs.finish("generated"))
}

fn main() {
    let args = Args::parse();
    let circuit = or_fail(SnapCircuit::fabricate(args.sector_size, 0, 7));
    let one = or_fail(rayon::ThreadPoolBuilder::new().num_threads(1).build());
    let four = or_fail(rayon::ThreadPoolBuilder::new().num_threads(4).build());
    let all = rayon::current_num_threads();
    if args.common.profiled(&one, || generated(&circuit, 1)) {
        return;
    }

    eprintln!("WitnessCs (the gadgets), one thread ...");
    let t = Instant::now();
    let expected = one.install(|| or_fail(WitnessCs::new().without_generator().synthesize(circuit.clone())));
    let gadget = ms(t.elapsed());
    for got in [generated(&circuit, 1), generated(&circuit, all)] {
        let d = first_differences(&expected, &got);
        if !d.is_empty() {
            fail(&format!("the generated witness differs from WitnessCs's:\n{d}"));
        }
    }
    let full = args.common.full.then(|| support::full_synthesis(&one, circuit.clone()));
    eprintln!("the generator ...");
    let native = one.install(|| median_ms_of(args.common.runs, || generated(&circuit, 1)));
    let native_four = four.install(|| median_ms_of(args.common.runs, || generated(&circuit, 4)));
    let native_all = median_ms_of(args.common.runs, || generated(&circuit, all));

    let pp = circuit.public_params();
    println!(
        "SnapDeals, {} B sector's shape: {} challenges, {} partitions a sector; {} inputs, {} aux values ({} constraints)",
        args.sector_size,
        pp.challenge_count,
        pp.partition_count,
        expected.inputs().len(),
        expected.num_aux(),
        expected.num_constraints()
    );
    println!();
    println!("| path | threads | s a partition | vs WitnessCs |");
    println!("|---|---:|---:|---:|");
    let mut rows = Vec::new();
    if let Some((t, _)) = full {
        rows.push(("full synthesis (Prover::synthesize)", 1, t));
    }
    rows.extend([
        ("WitnessCs (without_generator), the gadgets", 1, gadget),
        ("generator straight into WitnessCs", 1, native),
        ("generator, challenges in runs, merged", 4, native_four),
        ("generator, challenges in runs, merged", all, native_all),
    ]);
    for (what, threads, t) in rows {
        println!("| {what} | {threads} | {:.3} | {:.1}x |", t / 1e3, gadget / t);
    }
    println!();
    support::generator_bench_footer(expected.byte_size(), full, args.common.runs);
}
