//! Benchmark: cuzk's CPU prover against bellperson's CPU prover, same circuits, same
//! parameters, same r and s (and the proofs are checked to be the same bytes).
//!
//!     cargo run --release --example cpu_vs_bellperson -- --sizes 16,20 --runs 3
//!
//! Each size: one warm-up proof per prover, then `--runs` timed proofs each, alternating;
//! the table shows medians, from synthesized circuit to proof bytes, synthesis included
//! (both provers synthesize the same circuit).

mod support;

use std::time::Instant;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use clap::Parser;
use cuzk::testing::Synthetic;
use cuzk::{Parameters, PointCheck, Prover};
use ff::Field;
use support::{fail, median, ms};

/// cuzk's CPU prover against bellperson's: same circuits, same parameters, same r and s, proof
/// bytes checked equal; medians of --runs proofs after one warm-up, synthesis included.
#[derive(Parser)]
#[command(name = "cpu_vs_bellperson")]
struct Args {
    /// Circuit sizes, log2 of the constraints, comma-separated.
    #[arg(long, value_name = "K,...", value_delimiter = ',', default_values_t = [16, 20])]
    sizes: Vec<u32>,
    /// Timed proofs per prover and size, after one warm-up.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = support::at_least_one)]
    runs: usize,
    /// Where generated parameter files are cached.
    #[arg(long, value_name = "DIR", default_value = "params-cache")]
    params_dir: std::path::PathBuf,
}

fn main() {
    support::init_logging("info");
    let Args {
        sizes,
        runs,
        params_dir: dir,
    } = Args::parse();
    let machine = support::machine();
    let mut rows = Vec::new();
    for &k in &sizes {
        let circuit = Synthetic::new(k);
        let path = support::cached_params(&dir, &circuit);
        let ours = Parameters::load(&path, PointCheck::OnCurve).unwrap_or_else(|e| fail(&e.to_string()));
        let file = std::fs::File::open(&path).unwrap_or_else(|e| fail(&e.to_string()));
        let theirs = bp::Parameters::<Bls12>::read(std::io::BufReader::new(file), false)
            .unwrap_or_else(|e| fail(&format!("bellperson cannot read {}: {e}", path.display())));
        let prover = Prover::new();
        let mut rng = rand::thread_rng();
        let (mut t_ours, mut t_theirs) = (Vec::new(), Vec::new());
        let mut phases = cuzk::Timings::default();
        for run in 0..=runs {
            let c = circuit.clone().with_seed(run as u64);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

            let start = Instant::now();
            let p = bp::create_proof::<Bls12, _, _>(c.clone(), &theirs, r, s).unwrap_or_else(|e| fail(&e.to_string()));
            let theirs_ms = ms(start.elapsed());

            let start = Instant::now();
            let (mine, t) = prover
                .prove_timed(vec![c], &ours, &[r], &[s])
                .unwrap_or_else(|e| fail(&e.to_string()));
            let ours_ms = ms(start.elapsed());

            let mut expected = Vec::new();
            p.write(&mut expected).expect("encode");
            if expected.as_slice() != mine[0].to_bytes().as_slice() {
                fail(&format!("2^{k}: proof bytes differ from bellperson's"));
            }
            if run > 0 {
                t_ours.push(ours_ms);
                t_theirs.push(theirs_ms);
            }
            eprintln!("2^{k} run {run}: bellperson {theirs_ms:.0} ms, cuzk {ours_ms:.0} ms ({t})");
            if run > 0 {
                phases = t;
            }
        }
        rows.push((k, median(t_theirs), median(t_ours), phases));
    }
    println!();
    println!("machine: {machine}");
    println!("median of {runs} runs after one warm-up; same circuit, parameters, r and s; identical proof bytes");
    println!();
    println!("| constraints | bellperson 0.27 CPU (ms) | cuzk CPU (ms) | ratio cuzk/bellperson |");
    println!("|---|---|---|---|");
    for (k, theirs, ours, _) in &rows {
        println!("| 2^{k} | {theirs:.0} | {ours:.0} | {:.2} |", ours / theirs);
    }
    println!();
    println!("cuzk phases (last run):");
    for (k, _, _, t) in &rows {
        println!("  2^{k}: {t}");
    }
}
