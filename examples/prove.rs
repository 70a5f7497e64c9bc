//! The main job: synthesize a circuit into pinned buffers, prove, verify, and say where the
//! time and the memory went.
//!
//!     cargo run --release --example prove -- --log-size 16 --proofs 2
//!
//! Parameters are generated once with bellperson's generator and cached on disk
//! (`--params-dir`, default `params-cache/`); later runs load the file with cuzk's loader.

mod support;

use std::time::Instant;

use blstrs::Scalar;
use clap::Parser;
use cuzk::testing::Synthetic;
use cuzk::{verify_proof, Parameters, PinnedPool, PointCheck, PoolConfig, PreparedVerifyingKey, Prover};
use ff::Field;
use support::{fail, ms};

/// Synthesize a synthetic circuit into pinned buffers, prove it, verify it, and print where the
/// time and the memory went. Parameters are generated once with bellperson's generator and
/// cached under --params-dir.
#[derive(Parser)]
#[command(name = "prove")]
struct Args {
    /// 2^K constraints (2 to 28).
    #[arg(long, value_name = "K", default_value_t = 16, value_parser = clap::value_parser!(u32).range(2..=28))]
    log_size: u32,
    /// Proofs to make, one after the other.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = support::at_least_one)]
    proofs: usize,
    /// Percentage of witness values that are 0 or 1 (Filecoin's PoRep C2 circuit: 98).
    #[arg(long, value_name = "P", default_value_t = 75, value_parser = clap::value_parser!(u32).range(0..=100))]
    bit_percent: u32,
    /// Where generated parameter files are cached.
    #[arg(long, value_name = "DIR", default_value = "params-cache")]
    params_dir: std::path::PathBuf,
}

fn main() {
    support::init_logging("info");
    let Args {
        log_size,
        proofs,
        bit_percent,
        params_dir: dir,
    } = Args::parse();
    let circuit = Synthetic {
        bit_percent,
        ..Synthetic::new(log_size)
    };

    println!("cuzk prove: 2^{log_size} constraints, {bit_percent}% bit witnesses, {proofs} proofs");
    println!("machine: {}", support::machine());
    let path = support::cached_params(&dir, &circuit);
    let start = Instant::now();
    let params = Parameters::load(&path, PointCheck::OnCurve).unwrap_or_else(|e| fail(&e.to_string()));
    println!("parameters: {} loaded in {:.1} ms", path.display(), ms(start.elapsed()));
    let pvk = PreparedVerifyingKey::new(params.vk());

    let pool = PinnedPool::best_available(PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    println!(
        "prover backend: {}; pool backend: {} ({})",
        prover.backend_name(),
        pool.backend_name(),
        if pool.is_pinned() {
            "pinned"
        } else {
            "unpinned: build with --features cuda for pinned memory"
        }
    );
    println!();
    println!(
        "{:>5} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>8} {:>7}",
        "proof",
        "synth ms",
        "H ms",
        "MSM H",
        "MSM L",
        "MSM A",
        "B_G1",
        "B_G2",
        "batched",
        "tail",
        "total ms",
        "verify",
        "pinned"
    );
    for i in 0..proofs {
        let c = circuit.clone().with_seed(i as u64 + 1);
        let inputs = c.public_input_values();
        if log_size >= 26 {
            log::info!("proof {i}: synthesizing 2^{log_size} constraints ...");
        }
        let start = Instant::now();
        let assignment = prover.synthesize(c).unwrap_or_else(|e| fail(&e.to_string()));
        let synth = start.elapsed();
        let pinned = assignment.is_pinned();
        let mut rng = rand::thread_rng();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let (proof, t) = prover
            .prove_synthesized(vec![assignment], &params, &[r], &[s])
            .unwrap_or_else(|e| fail(&e.to_string()));
        let total = start.elapsed();
        let verified = verify_proof(&pvk, &proof[0], &inputs).unwrap_or_else(|e| fail(&e.to_string()));
        println!(
            "{:>5} {:>10.1} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>7.2} {:>9.1} {:>8} {:>7}",
            i,
            ms(synth),
            ms(t.h),
            ms(t.msm_h),
            ms(t.msm_l),
            ms(t.msm_a),
            ms(t.msm_b_g1),
            ms(t.msm_b_g2),
            ms(t.msm_batch),
            ms(t.tail),
            ms(total),
            if verified { "ok" } else { "FAILED" },
            pinned
        );
        if !verified {
            fail("the proof does not verify");
        }
    }
    let s = pool.stats();
    println!();
    println!(
        "pool: {} checkouts = {} allocations + {} reuses + {} fallbacks; {} frees; in use {} B, idle {} B in {} buffers, peak {} B; allocating took {:.1} ms",
        s.checkouts,
        s.allocations,
        s.reuses,
        s.fallbacks,
        s.frees,
        s.bytes_in_use,
        s.bytes_idle,
        s.idle_buffers,
        s.peak_bytes,
        ms(s.alloc_time)
    );
}
