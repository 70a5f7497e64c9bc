//! Benchmark: the native Fallback PoSt witness generator against `WitnessCs` on
//! storage-proofs-post's own `FallbackPoStCircuit`, 32 GiB sector shape, one thread.
//!
//!     cargo run --release --features filecoin --example native_post_bench -- --kind window --sectors 20 --runs 3
//!
//! (`--sectors 2349 --no-gadgets`: a production partition by the generator alone, on a big host.)
//!
//! The circuit is built by `FallbackPoStCompound::circuit` from random vanilla proofs of the
//! 32 GiB tree shape (8-8-0: ten levels, every value random: a witness needs no valid proof):
//! `--kind window` has `--sectors` sector slots of 10 challenges (a production partition has
//! 2349), `--kind winning` Winning PoSt's 66 slots of one challenge. Timed, median of `--runs`
//! after one warm-up, on one thread:
//!
//! - `WitnessCs::new().without_generator().synthesize(circuit)`, as the witness path runs it;
//! - the generator straight into a `WitnessCs` (the same compact witness);
//! - the generator into a counting sink (the computation alone);
//!
//! and on every thread of the machine: `WitnessCs` again (the circuit synthesizes its sectors
//! in chunks on rayon and merges them) and `fallback_post_witness_parallel` (as many runs of
//! slots as threads, merged).
//!
//! The generated witness is compared with `WitnessCs`'s value for value (exit 1 when they
//! differ). A Window partition's time scales with its sector count: the per-sector column and
//! the 2349-sector line say what a production partition takes.

mod support;

#[path = "../tests/common/post.rs"]
mod post_fixtures;

use blstrs::Scalar;
use clap::{Parser, ValueEnum};
use cuzk::filecoin::native::first_differences;
use cuzk::filecoin::native::gadgets::CountSink;
use cuzk::filecoin::native::post::{fallback_post_witness, fallback_post_witness_parallel};
use cuzk::{ConstraintSystem, Witness, WitnessCs};
use ff::Field;
use filecoin_hashers::poseidon::PoseidonDomain;
use rand::{Rng, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicParams};
use support::{fail, machine, median_ms_of};

type Tree = filecoin_proofs::SectorShape32GiB;
type Proof = <Tree as MerkleTreeTrait>::Proof;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// Window PoSt: `--sectors` slots of 10 challenges.
    Window,
    /// Winning PoSt: 66 slots of one challenge.
    Winning,
}

/// The Fallback PoSt generator against WitnessCs, 32 GiB shape, one thread.
#[derive(Parser)]
#[command(name = "native_post_bench")]
struct Args {
    /// Which PoSt.
    #[arg(long, value_enum, default_value_t = Kind::Window)]
    kind: Kind,
    /// Window PoSt: sector slots in the partition (production: 2349).
    #[arg(long, default_value_t = 20, value_parser = support::at_least_one)]
    sectors: usize,
    /// Timed runs per path, after one warm-up.
    #[arg(long, default_value_t = 3, value_parser = support::at_least_one)]
    runs: usize,
    /// Times the generator alone, without the gadgets (which take ~12x longer: ~4 min of one
    /// core a production partition, each run): its sequential and parallel witnesses are
    /// compared with each other, not with the gadgets'. For production-sized runs on a big
    /// host (`--sectors 2349 --no-gadgets`).
    #[arg(long)]
    no_gadgets: bool,
}

/// The inputs `FallbackPoStCompound::circuit` takes, random.
struct Inputs {
    pub_in: PublicInputs<PoseidonDomain>,
    proof: fallback::Proof<Proof>,
    params: PublicParams,
}

fn random_inputs(sectors: usize, challenges: usize, rng: &mut impl Rng) -> Inputs {
    let (pub_in, proof, params) = post_fixtures::random_partition::<Tree>(sectors, sectors, challenges, rng);
    Inputs { pub_in, proof, params }
}

fn circuit(i: &Inputs) -> FallbackPoStCircuit<Tree> {
    <FallbackPoStCompound<Tree> as CompoundProof<'_, _, _>>::circuit(
        &i.pub_in,
        Default::default(),
        &i.proof,
        &i.params,
        Some(0),
    )
    .unwrap_or_else(|e| fail(&e.to_string()))
}

fn gadget_witness(i: &Inputs) -> Witness {
    WitnessCs::new()
        .without_generator()
        .synthesize(circuit(i))
        .unwrap_or_else(|e| fail(&e.to_string()))
}

fn generated_witness(i: &Inputs) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let inputs = fallback_post_witness::<Tree>(&i.pub_in, &i.proof, &i.params, Some(0), &mut cs)
        .unwrap_or_else(|e| fail(&e.to_string()));
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v))
            .unwrap_or_else(|e| fail(&e.to_string()));
    }
    cs.finish("generated").unwrap_or_else(|e| fail(&e.to_string()))
}

/// The generator on every thread of the current pool.
fn generated_parallel(i: &Inputs) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    fallback_post_witness_parallel::<Tree>(
        &i.pub_in,
        &i.proof,
        &i.params,
        Some(0),
        rayon::current_num_threads(),
        &mut cs,
    )
    .unwrap_or_else(|e| fail(&e.to_string()));
    cs.finish("generated").unwrap_or_else(|e| fail(&e.to_string()))
}

fn main() {
    let args = Args::parse();
    let (sectors, challenges, name) = match args.kind {
        Kind::Window => (args.sectors, 10, "Window PoSt"),
        Kind::Winning => (66, 1, "Winning PoSt"),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(38);
    let inputs = random_inputs(sectors, challenges, &mut rng);

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    // The reference: the gadgets' witness, or (--no-gadgets) the sequential generator's.
    let expected = if args.no_gadgets {
        pool.install(|| generated_witness(&inputs))
    } else {
        pool.install(|| gadget_witness(&inputs))
    };
    let others = if args.no_gadgets {
        vec![generated_parallel(&inputs)]
    } else {
        vec![generated_witness(&inputs), generated_parallel(&inputs)]
    };
    for got in others {
        let d = first_differences(&expected, &got);
        if !d.is_empty() {
            fail(&format!("the generated witnesses differ:\n{d}"));
        }
    }
    let gadget = (!args.no_gadgets).then(|| pool.install(|| median_ms_of(args.runs, || gadget_witness(&inputs))));
    let native = pool.install(|| median_ms_of(args.runs, || generated_witness(&inputs)));
    let counted = pool.install(|| {
        median_ms_of(args.runs, || {
            let mut c = CountSink::default();
            fallback_post_witness::<Tree>(&inputs.pub_in, &inputs.proof, &inputs.params, Some(0), &mut c)
        })
    });

    // Every thread: the circuit's own chunked synthesis, and the generator in as many runs.
    let gadget_all = (!args.no_gadgets).then(|| median_ms_of(args.runs, || gadget_witness(&inputs)));
    let native_all = median_ms_of(args.runs, || generated_parallel(&inputs));

    println!(
        "{name}, 32 GiB shape: {sectors} sector slots x {challenges} challenges; {} inputs, {} aux values ({})",
        expected.inputs().len(),
        expected.num_aux(),
        if args.no_gadgets {
            "constraints not counted: --no-gadgets".to_string()
        } else {
            format!("{} constraints", expected.num_constraints())
        }
    );
    println!();
    let all = rayon::current_num_threads();
    println!("| path | ms | ms / sector slot | vs WitnessCs |");
    println!("|---|---:|---:|---:|");
    let rows: [(String, Option<f64>, Option<f64>); 5] = [
        (
            "WitnessCs (without_generator), the gadgets; one thread".to_string(),
            gadget,
            gadget,
        ),
        (
            "generator straight into WitnessCs (same compact witness); one thread".to_string(),
            Some(native),
            gadget,
        ),
        (
            "generator into a counting sink; one thread".to_string(),
            Some(counted),
            gadget,
        ),
        (
            format!("WitnessCs, the circuit's own chunks; {all} threads"),
            gadget_all,
            gadget_all,
        ),
        (
            format!("generator in {all} runs, merged; {all} threads"),
            Some(native_all),
            gadget_all,
        ),
    ];
    for (what, t, base) in rows {
        let Some(t) = t else { continue };
        let vs = base.map_or("–".to_string(), |b| format!("{:.1}x", b / t));
        println!("| {what} | {t:.1} | {:.2} | {vs} |", t / sectors as f64);
    }
    if args.kind == Kind::Window {
        let per = |ms: f64| ms / sectors as f64 * 2349.0 / 1e3;
        println!();
        println!(
            "a production Window PoSt partition (2349 sector slots): the generator ~{:.1} s on one thread, ~{:.1} s on {all}{}",
            per(native),
            per(native_all),
            gadget.map_or(String::new(), |g| format!("; WitnessCs ~{:.0} s on one thread", per(g)))
        );
    }
    println!();
    println!("machine: {}", machine());
    println!(
        "median of {} runs after one warm-up; {}",
        args.runs,
        if args.no_gadgets {
            "--no-gadgets: the sequential and parallel generators' witnesses equal each other value for value (not compared with the gadgets')"
        } else {
            "the generated witness equals WitnessCs's value for value"
        }
    );
}
