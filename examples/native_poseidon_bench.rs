//! Benchmark: the Poseidon and PoR twins of `cuzk::filecoin::native::gadgets` against neptune's
//! and storage-proofs' gadgets, both writing a witness on one thread.
//!
//!     cargo run --release --features filecoin --example native_poseidon_bench -- --hashes 2000 --paths 200 --runs 5
//!
//! Workloads: `--hashes` Poseidon hashes of arity 2 (column pairs, binary trees), 8 (TreeC /
//! TreeR nodes) and 11 (11-layer columns) over freshly allocated preimages; `--paths` PoR
//! inclusion proofs of the 32 GiB TreeR shape (8-8-0: nine 8-ary base levels and one 8-ary
//! sub-tree level), private, to an allocated root, as PoSt and PoRep prove them. Timed, median
//! of `--runs` after one warm-up:
//!
//! - the gadget under `WitnessCs::new().without_generator()`, as the witness path runs it;
//! - the twin writing into a `WitnessCs` through `alloc` (`CsSink`), and straight into it
//!   (`WitnessCs` as an `AuxSink`) — the same compact witness;
//! - the twin into a counting sink (the computation alone).
//!
//! Each twin's witness is compared with its gadget's value for value (exit 1 when they differ).

mod support;

use bellperson::gadgets::num::AllocatedNum;
use clap::Parser;
use cuzk::filecoin::native::first_differences;
use cuzk::filecoin::native::gadgets::{self as twin, AuxSink, CountSink, CsSink, Level, NodeHash, Root};
use cuzk::{Circuit, ConstraintSystem, Scalar, SynthesisError, Witness, WitnessCs};
use ff::Field;
use filecoin_hashers::poseidon::PoseidonHasher;
use rand::{Rng, SeedableRng};
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::variables::Root as GadgetRoot;
use storage_proofs_core::merkle::DiskTree;
use support::{fail, machine, median_ms_of};
use typenum::{U0, U8};

/// The Poseidon and PoR twins against their gadgets, one thread, witness only.
#[derive(Parser)]
#[command(name = "native_poseidon_bench")]
struct Args {
    /// Poseidon hashes per run, per arity.
    #[arg(long, default_value_t = 2000, value_parser = support::at_least_one)]
    hashes: usize,
    /// PoR paths (32 GiB shape) per run.
    #[arg(long, default_value_t = 200, value_parser = support::at_least_one)]
    paths: usize,
    /// Timed runs per path, after one warm-up.
    #[arg(long, default_value_t = 5, value_parser = support::at_least_one)]
    runs: usize,
}

type Tree32GiB = DiskTree<PoseidonHasher, U8, U8, U0>;

/// One workload, as a circuit (the gadget side) and as twin calls.
#[derive(Clone)]
enum Work<'a> {
    /// Preimages of one arity.
    Poseidon(&'a [Vec<Scalar>]),
    /// (leaf, root, path) of the 32 GiB shape.
    Por(&'a [(Scalar, Scalar, Vec<Level>)]),
}

impl Circuit<Scalar> for Work<'_> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Work::Poseidon(preimages) => {
                for (i, p) in preimages.iter().enumerate() {
                    let cs = &mut cs.namespace(|| format!("hash {i}"));
                    let nums = p
                        .iter()
                        .enumerate()
                        .map(|(k, &v)| AllocatedNum::alloc(cs.namespace(|| format!("x{k}")), || Ok(v)))
                        .collect::<Result<Vec<_>, _>>()?;
                    let cs = cs.namespace(|| "poseidon");
                    match p.len() {
                        2 => neptune::circuit::poseidon_hash(cs, nums, &*filecoin_hashers::POSEIDON_CONSTANTS_2)?,
                        8 => neptune::circuit::poseidon_hash(cs, nums, &*filecoin_hashers::POSEIDON_CONSTANTS_8)?,
                        _ => neptune::circuit::poseidon_hash(cs, nums, &*filecoin_hashers::POSEIDON_CONSTANTS_11)?,
                    };
                }
            }
            Work::Por(paths) => {
                for (i, (leaf, root, path)) in paths.iter().enumerate() {
                    let cs = &mut cs.namespace(|| format!("path {i}"));
                    let root = AllocatedNum::alloc(cs.namespace(|| "root"), || Ok(*root))?;
                    let auth: AuthPath<PoseidonHasher, U8, U8, U0> = path
                        .iter()
                        .map(|(s, k)| (s.iter().copied().map(Some).collect(), Some(*k)))
                        .collect::<Vec<_>>()
                        .into();
                    PoRCircuit::<Tree32GiB>::synthesize(
                        cs.namespace(|| "por"),
                        GadgetRoot::Val(Some(*leaf)),
                        auth,
                        GadgetRoot::Var(root),
                        true,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// The twin side, into any sink; returns the public inputs it made.
fn run_twin(aux: &mut impl AuxSink, work: &Work<'_>) -> Vec<Scalar> {
    let mut inputs = vec![];
    match work {
        Work::Poseidon(preimages) => {
            for p in preimages.iter() {
                p.iter().for_each(|&v| aux.push(v));
                twin::poseidon_merkle(aux, p);
            }
        }
        Work::Por(paths) => {
            for (leaf, root, path) in paths.iter() {
                aux.push(*root);
                let out = twin::por_circuit(aux, NodeHash::Poseidon, Root::Val(*leaf), path, Root::Var(*root), true);
                inputs.extend(out.inputs);
            }
        }
    }
    inputs
}

fn twin_witness(work: &Work<'_>) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut sink = CsSink::new(&mut cs);
    let inputs = run_twin(&mut sink, work);
    sink.finish().unwrap_or_else(|e| fail(&e.to_string()));
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v))
            .unwrap_or_else(|e| fail(&e.to_string()));
    }
    cs.finish("twin").unwrap_or_else(|e| fail(&e.to_string()))
}

/// The twin writing straight into a `WitnessCs` (its `AuxSink`).
fn twin_witness_direct(work: &Work<'_>) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let inputs = run_twin(&mut cs, work);
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v))
            .unwrap_or_else(|e| fail(&e.to_string()));
    }
    cs.finish("twin").unwrap_or_else(|e| fail(&e.to_string()))
}

fn gadget_witness(work: &Work<'_>) -> Witness {
    WitnessCs::new()
        .without_generator()
        .synthesize(work.clone())
        .unwrap_or_else(|e| fail(&e.to_string()))
}

fn main() {
    let args = Args::parse();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(38);
    let mut randoms = |n: usize| (0..n).map(|_| Scalar::random(&mut rng)).collect::<Vec<_>>();
    let preimages: Vec<(usize, Vec<Vec<Scalar>>)> = [2, 8, 11]
        .into_iter()
        .map(|a| (a, (0..args.hashes).map(|_| randoms(a)).collect()))
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(32);
    let paths: Vec<(Scalar, Scalar, Vec<Level>)> = (0..args.paths)
        .map(|_| {
            let path = (0..10)
                .map(|_| {
                    let siblings = (0..7).map(|_| Scalar::random(&mut rng)).collect();
                    (siblings, rng.gen_range(0..8))
                })
                .collect();
            (Scalar::random(&mut rng), Scalar::random(&mut rng), path)
        })
        .collect();

    let mut work: Vec<(String, usize, Work<'_>)> = preimages
        .iter()
        .map(|(a, p)| (format!("Poseidon arity {a}"), p.len(), Work::Poseidon(p)))
        .collect();
    work.push(("PoR path, 32 GiB shape (8-8-0)".into(), paths.len(), Work::Por(&paths)));

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    println!("one thread; median of {} runs after one warm-up", args.runs);
    println!();
    println!(
        "| workload | aux / item | gadget µs / item | twin → WitnessCs via alloc | twin → WitnessCs direct | twin → count | speed-up (direct) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, n, w) in &work {
        let expected = gadget_witness(w);
        for got in [twin_witness(w), twin_witness_direct(w)] {
            let d = first_differences(&expected, &got);
            if !d.is_empty() {
                fail(&format!("{name}: the twin's witness differs from the gadget's:\n{d}"));
            }
        }
        let gadget = pool.install(|| median_ms_of(args.runs, || gadget_witness(w)));
        let native = pool.install(|| median_ms_of(args.runs, || twin_witness(w)));
        let direct = pool.install(|| median_ms_of(args.runs, || twin_witness_direct(w)));
        let counted = pool.install(|| {
            median_ms_of(args.runs, || {
                let mut c = CountSink::default();
                run_twin(&mut c, w)
            })
        });
        let per = |t: f64| 1e3 * t / *n as f64;
        println!(
            "| {name} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1}x |",
            expected.num_aux() as f64 / *n as f64,
            per(gadget),
            per(native),
            per(direct),
            per(counted),
            gadget / direct
        );
    }
    // The floor for the twin's arithmetic: neptune's own native hash (the same optimized
    // permutation, nothing written).
    let native: Vec<String> = preimages
        .iter()
        .map(|(a, p)| {
            let t =
                pool.install(|| {
                    median_ms_of(args.runs, || {
                        p.iter()
                            .map(|x| match a {
                                2 => neptune::Poseidon::new_with_preimage(x, &*filecoin_hashers::POSEIDON_CONSTANTS_2)
                                    .hash(),
                                8 => neptune::Poseidon::new_with_preimage(x, &*filecoin_hashers::POSEIDON_CONSTANTS_8)
                                    .hash(),
                                _ => neptune::Poseidon::new_with_preimage(x, &*filecoin_hashers::POSEIDON_CONSTANTS_11)
                                    .hash(),
                            })
                            .fold(Scalar::ZERO, |acc, h| acc + h)
                    })
                });
            format!("arity {a} {:.1} µs", 1e3 * t / p.len() as f64)
        })
        .collect();
    println!();
    println!("neptune's native hash (no witness), a hash: {}", native.join(", "));
    println!();
    println!("machine: {}", machine());
    println!("every twin's witness equals its gadget's value for value");
}
