//! Benchmark: the native PoRep C2 witness generator against `WitnessCs` (and, with `--full`,
//! full synthesis) on storage-proofs-porep's own `StackedCircuit`, 32 GiB sector shape.
//!
//!     cargo run --release --features filecoin --example native_porep_bench -- --challenges 18
//!
//! The circuit is built by `StackedCompound::circuit` from random vanilla proofs of the 32 GiB
//! shape (11 layers, 6 DRG and 8 expander parents, TreeC/TreeR 8-8-0 of ten levels, TreeD 30
//! levels; every value random: a witness needs no valid proof) with `--challenges` challenges
//! (a production partition has 18: 130,278,869 constraints with the prover's input
//! constraints, the real partition's; `sector_bench` builds the same shape the same way, its
//! `vanilla.rs`; the time is linear in them). Timed:
//!
//! - `WitnessCs::new().without_generator().synthesize(circuit)`, as the witness path runs it,
//!   once (it is also the reference), one thread;
//! - with `--full`: full synthesis into a `ProvingAssignment` (`Prover::synthesize`), once,
//!   one thread (a 32 GiB partition of 18 challenges takes ~13 GiB for a, b, c and aux);
//! - the generator straight into a `WitnessCs` (the same compact witness) and into a counting
//!   sink (the computation alone), median of `--runs` after one warm-up, one thread;
//! - `stacked_witness_parallel` on every thread of the machine (the challenges in as many
//!   runs, merged), and on 4 threads (the synthesis threads issue 38's target allows).
//!
//! `--profile N` only runs the generator N times (for `perf record`).
//!
//! The generated witness is compared with `WitnessCs`'s value for value (exit 1 when they
//! differ); the host bytes are the compact witness's (`Witness::byte_size`) against full
//! synthesis's a, b, c, aux and inputs (32 bytes each).

mod support;

#[path = "../tests/common/stacked.rs"]
mod stacked;

use std::time::Instant;

use blstrs::Scalar;
use clap::Parser;
use cuzk::filecoin::native::first_differences;
use cuzk::filecoin::native::gadgets::CountSink;
use cuzk::filecoin::native::porep::{stacked_witness, stacked_witness_parallel};
use cuzk::{ConstraintSystem, Witness, WitnessCs};
use ff::Field;
use filecoin_hashers::sha256::Sha256Hasher;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{PublicParams, StackedCircuit, StackedCompound};
use support::{fail, median_ms_of, ms};

type Tree = filecoin_proofs::SectorShape32GiB;

/// The PoRep C2 generator against WitnessCs (and full synthesis), 32 GiB shape.
#[derive(Parser)]
#[command(name = "native_porep_bench")]
struct Args {
    /// Challenges in the partition (production: 18).
    #[arg(long, default_value_t = 18, value_parser = support::at_least_one)]
    challenges: usize,
    #[command(flatten)]
    common: support::GeneratorRuns,
}

struct Inputs {
    partition: stacked::Partition<Tree>,
    params: PublicParams<Tree>,
}

fn circuit(i: &Inputs) -> StackedCircuit<Tree, Sha256Hasher> {
    <StackedCompound<Tree, Sha256Hasher> as CompoundProof<'_, _, _>>::circuit(
        &i.partition.0,
        (),
        &i.partition.1,
        &i.params,
        Some(0),
    )
    .unwrap_or_else(|e| fail(&e.to_string()))
}

fn or_fail<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&e.to_string()))
}

fn start() -> WitnessCs {
    let mut cs = WitnessCs::new();
    or_fail(cs.alloc_input(|| "one", || Ok(Scalar::ONE)));
    cs
}

fn generated(i: &Inputs) -> Witness {
    let mut cs = start();
    let inputs = or_fail(stacked_witness::<Tree, Sha256Hasher>(
        &i.partition.0,
        &i.partition.1,
        &i.params,
        Some(0),
        &mut cs,
    ));
    for v in inputs {
        or_fail(cs.alloc_input(|| "input", || Ok(v)));
    }
    or_fail(cs.finish("generated"))
}

fn generated_parallel(i: &Inputs, threads: usize) -> Witness {
    let mut cs = start();
    or_fail(stacked_witness_parallel::<Tree, Sha256Hasher>(
        &i.partition.0,
        &i.partition.1,
        &i.params,
        Some(0),
        threads,
        &mut cs,
    ));
    or_fail(cs.finish("generated"))
}

fn main() {
    let args = Args::parse();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(38);
    let inputs = Inputs {
        partition: stacked::random_partition::<Tree>(32 << 30, args.challenges, 11, &mut rng),
        params: stacked::small_params::<Tree>(),
    };
    let one = or_fail(rayon::ThreadPoolBuilder::new().num_threads(1).build());
    if args.common.profiled(&one, || generated(&inputs)) {
        return;
    }
    let four = or_fail(rayon::ThreadPoolBuilder::new().num_threads(4).build());
    let all = rayon::current_num_threads();

    eprintln!("WitnessCs (the gadgets), one thread ...");
    let t = Instant::now();
    let expected = one.install(|| or_fail(WitnessCs::new().without_generator().synthesize(circuit(&inputs))));
    let gadget = ms(t.elapsed());
    for got in [
        generated(&inputs),
        generated_parallel(&inputs, all),
        four.install(|| generated_parallel(&inputs, 4)),
    ] {
        let d = first_differences(&expected, &got);
        if !d.is_empty() {
            fail(&format!("the generated witness differs from WitnessCs's:\n{d}"));
        }
    }
    let full = args
        .common
        .full
        .then(|| support::full_synthesis(&one, circuit(&inputs)));
    eprintln!("the generator ...");
    let native = one.install(|| median_ms_of(args.common.runs, || generated(&inputs)));
    let counted = one.install(|| {
        median_ms_of(args.common.runs, || {
            let mut c = CountSink::default();
            stacked_witness::<Tree, Sha256Hasher>(
                &inputs.partition.0,
                &inputs.partition.1,
                &inputs.params,
                Some(0),
                &mut c,
            )
        })
    });
    let native_four = four.install(|| median_ms_of(args.common.runs, || generated_parallel(&inputs, 4)));
    let native_all = median_ms_of(args.common.runs, || generated_parallel(&inputs, all));

    let c = args.challenges;
    // The prover appends one constraint per input: a partition of 18 challenges has a real
    // 32 GiB partition's 130,278,869 (sector_bench's count).
    println!(
        "PoRep C2, 32 GiB shape (11 layers): {c} challenges; {} inputs, {} aux values ({} constraints, {} with the \
         prover's input constraints)",
        expected.inputs().len(),
        expected.num_aux(),
        expected.num_constraints(),
        expected.num_constraints() + expected.inputs().len()
    );
    println!();
    println!("| path | threads | ms | ms / challenge | 18 challenges, s | vs WitnessCs |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut rows = vec![("WitnessCs (without_generator), the gadgets".to_string(), 1, gadget)];
    if let Some((t, _)) = full {
        rows.insert(0, ("full synthesis (Prover::synthesize)".to_string(), 1, t));
    }
    rows.extend([
        ("generator straight into WitnessCs".to_string(), 1, native),
        ("generator into a counting sink".to_string(), 1, counted),
        ("generator, challenges in runs, merged".to_string(), 4, native_four),
        ("generator, challenges in runs, merged".to_string(), all, native_all),
    ]);
    for (what, threads, t) in rows {
        println!(
            "| {what} | {threads} | {t:.1} | {:.1} | {:.2} | {:.1}x |",
            t / c as f64,
            t / c as f64 * 18.0 / 1e3,
            gadget / t
        );
    }
    println!();
    support::generator_bench_footer(expected.byte_size(), full, args.common.runs);
}
