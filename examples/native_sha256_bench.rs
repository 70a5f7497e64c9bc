//! Benchmark: the SHA-256 compression twin of `cuzk::filecoin::native::gadgets` against
//! bellperson's gadget, both writing a witness on one thread.
//!
//!     cargo run --release --features filecoin --example native_sha256_bench -- --compressions 2000 --runs 5
//!
//! The circuit: `--compressions` blocks of 512 allocated bits, chained from the IV as a
//! multi-block hash chains them. Timed, median of `--runs` after one warm-up:
//!
//! - the gadget (`sha256_compression_function`) under `WitnessCs::new().without_generator()`,
//!   as the witness path runs it today;
//! - the twin writing into a `WitnessCs` through `alloc` (`CsSink`), and straight into it
//!   (`WitnessCs` as an `AuxSink`: bits a word at a time) — the same compact witness;
//! - the twin into a counting sink (the computation alone).
//!
//! The twin's witness is compared with the gadget's value for value (exit 1 when they differ).

mod support;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use clap::Parser;
use cuzk::filecoin::native::first_differences;
use cuzk::filecoin::native::gadgets::{self as twin, AuxSink, Bit, CountSink, CsSink, U32};
use cuzk::{Circuit, ConstraintSystem, Scalar, SynthesisError, Witness, WitnessCs};
use ff::Field;
use rand::{Rng, SeedableRng};
use support::{fail, machine, median_ms_of};

/// The SHA-256 compression twin against bellperson's gadget, one thread, witness only.
#[derive(Parser)]
#[command(name = "native_sha256_bench")]
struct Args {
    /// Compressions per run.
    #[arg(long, default_value_t = 2000, value_parser = support::at_least_one)]
    compressions: usize,
    /// Timed runs per path, after one warm-up.
    #[arg(long, default_value_t = 5, value_parser = support::at_least_one)]
    runs: usize,
}

/// The gadget side: blocks of allocated bits chained from the IV.
#[derive(Clone)]
struct Chain<'a> {
    blocks: &'a [Vec<bool>],
}

impl Circuit<Scalar> for Chain<'_> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut state: Vec<UInt32> = twin::IV.iter().map(|&v| UInt32::constant(v)).collect();
        for (i, block) in self.blocks.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("block {i}"));
            let bits = block
                .iter()
                .enumerate()
                .map(|(k, &b)| {
                    Ok(Boolean::from(AllocatedBit::alloc(
                        cs.namespace(|| format!("bit {k}")),
                        Some(b),
                    )?))
                })
                .collect::<Result<Vec<_>, SynthesisError>>()?;
            state = sha256_compression_function(cs.namespace(|| "compression"), &bits, &state)?;
        }
        Ok(())
    }
}

/// The twin side, into any sink.
fn chain(aux: &mut impl AuxSink, blocks: &[Vec<bool>]) -> u32 {
    let mut state = twin::IV.map(U32::constant);
    for block in blocks {
        let bits: Vec<Bit> = block.iter().map(|&b| Bit::alloc(aux, b)).collect();
        state = twin::sha256_compression(aux, &bits, &state);
    }
    state[0].value()
}

fn twin_witness(blocks: &[Vec<bool>]) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    let mut sink = CsSink::new(&mut cs);
    chain(&mut sink, blocks);
    sink.finish().unwrap_or_else(|e| fail(&e.to_string()));
    cs.finish("twin").unwrap_or_else(|e| fail(&e.to_string()))
}

/// The twin writing straight into a `WitnessCs` (its `AuxSink`: bits a word at a time).
fn twin_witness_direct(blocks: &[Vec<bool>]) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .unwrap_or_else(|e| fail(&e.to_string()));
    chain(&mut cs, blocks);
    cs.finish("twin").unwrap_or_else(|e| fail(&e.to_string()))
}

fn gadget_witness(blocks: &[Vec<bool>]) -> Witness {
    WitnessCs::new()
        .without_generator()
        .synthesize(Chain { blocks })
        .unwrap_or_else(|e| fail(&e.to_string()))
}

fn main() {
    let args = Args::parse();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(38);
    let blocks: Vec<Vec<bool>> = (0..args.compressions)
        .map(|_| (0..512).map(|_| rng.gen()).collect())
        .collect();

    let expected = gadget_witness(&blocks);
    let got = twin_witness(&blocks);
    for got in [got, twin_witness_direct(&blocks)] {
        let d = first_differences(&expected, &got);
        if !d.is_empty() {
            fail(&format!("the twin's witness differs from the gadget's:\n{d}"));
        }
    }
    let mut count = CountSink::default();
    chain(&mut count, &blocks);
    let per = expected.num_aux() as f64 / args.compressions as f64;

    let one = || {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap_or_else(|e| fail(&e.to_string()))
    };
    let pool = one();
    let gadget = pool.install(|| median_ms_of(args.runs, || gadget_witness(&blocks)));
    let native = pool.install(|| median_ms_of(args.runs, || twin_witness(&blocks)));
    let direct = pool.install(|| median_ms_of(args.runs, || twin_witness_direct(&blocks)));
    let counted = pool.install(|| {
        median_ms_of(args.runs, || {
            let mut c = CountSink::default();
            chain(&mut c, &blocks)
        })
    });

    let n = args.compressions as f64;
    println!(
        "{} SHA-256 compressions, {per:.0} aux values each ({} in all, {} bits); one thread",
        args.compressions, count.values, count.bits
    );
    println!();
    println!("| path | ms | µs / compression | vs gadget |");
    println!("|---|---:|---:|---:|");
    for (name, t) in [
        ("gadget under WitnessCs (without_generator)", gadget),
        (
            "twin into WitnessCs through alloc (CsSink; same compact witness)",
            native,
        ),
        (
            "twin straight into WitnessCs (its AuxSink; same compact witness)",
            direct,
        ),
        ("twin into a counting sink", counted),
    ] {
        println!("| {name} | {t:.1} | {:.2} | {:.1}x |", 1e3 * t / n, gadget / t);
    }
    println!();
    println!("machine: {}", machine());
    println!(
        "median of {} runs after one warm-up; the twin's witness equals the gadget's value for value",
        args.runs
    );
}
