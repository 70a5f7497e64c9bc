//! Helpers shared by the examples: the logger, the parameter cache, the machine's description.
//! (Each example parses its own command line with clap; the generator benches share
//! [`GeneratorRuns`].)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use cuzk::testing::Synthetic;
use rand::SeedableRng;

pub fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2)
}

/// Where parameters of `circuit` are cached (generated once with bellperson's generator).
pub fn params_path(dir: &Path, circuit: &Synthetic) -> PathBuf {
    dir.join(format!(
        "synthetic-k{}-bits{}-in{}.params",
        circuit.log_size, circuit.bit_percent, circuit.public_inputs
    ))
}

/// Returns the cached parameter file for `circuit`, generating it first if needed.
pub fn cached_params(dir: &Path, circuit: &Synthetic) -> PathBuf {
    let path = params_path(dir, circuit);
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
    log::info!(
        "generating parameters for 2^{} constraints with bellperson's generator (once; cached at {}) ...",
        circuit.log_size,
        path.display()
    );
    let start = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(u64::from(circuit.log_size));
    let params = bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut rng)
        .unwrap_or_else(|e| fail(&format!("parameter generation failed: {e}")));
    let tmp = path.with_extension("params.partial");
    let file = std::fs::File::create(&tmp).unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", tmp.display())));
    let mut w = std::io::BufWriter::new(file);
    params
        .write(&mut w)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", tmp.display())));
    drop(w);
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| fail(&format!("cannot rename to {}: {e}", path.display())));
    log::info!("parameters generated in {:.1} s", start.elapsed().as_secs_f64());
    path
}

/// "CPU model, N threads, M GiB" from /proc.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok())
        })
        .map(|kb| format!("{:.0} GiB", kb as f64 / (1 << 20) as f64))
        .unwrap_or_default();
    format!("{cpu}, {} threads, {mem}", rayon::current_num_threads())
}

/// `VmRSS` and `VmHWM` (the peak) of process `pid`, in bytes (Linux `/proc`; 0 elsewhere).
pub fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (kib("VmRSS:") << 10, kib("VmHWM:") << 10)
}

pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median milliseconds of `runs` calls of `f` after one warm-up call.
pub fn median_ms_of<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    std::hint::black_box(f());
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                ms(t.elapsed())
            })
            .collect(),
    )
}

/// Log records to stderr through env_logger: `RUST_LOG` filters by level and module
/// (`RUST_LOG=cuzk::engine=debug,info`); without it, `default` (e.g. `"info"`).
pub fn init_logging(default: &str) {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .format_timestamp(None)
        .init();
}

/// A count of at least one, for clap's `value_parser`.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A byte size by cuzk's one rule ([`cuzk::byte_size`]): `2KiB`, `32G`, `32GB`, `512`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    cuzk::byte_size::parse(s)
        .map(|b| b as u64)
        .map_err(|e| format!("{s:?}: {e}"))
}

/// The generator benches' full-synthesis row: `circuit` synthesized in full into a
/// `ProvingAssignment` by the CPU prover, in `pool`; its milliseconds and the bytes of its a,
/// b, c, aux and inputs (32 each).
pub fn full_synthesis<C: cuzk::Circuit<blstrs::Scalar> + Send>(pool: &rayon::ThreadPool, circuit: C) -> (f64, usize) {
    eprintln!("full synthesis, one thread ...");
    let prover = cuzk::Prover::new()
        .with_backend(cuzk::BackendChoice::Cpu)
        .unwrap_or_else(|e| fail(&e.to_string()));
    let t = Instant::now();
    let a = pool.install(|| prover.synthesize(circuit).unwrap_or_else(|e| fail(&e.to_string())));
    let took = ms(t.elapsed());
    let n = a.num_constraints();
    (
        took,
        32 * (3 * n + a.aux_assignment().len() + a.input_assignment().len()),
    )
}

/// The generator benches' closing lines: the compact witness's host bytes against full
/// synthesis's (when run), the machine, how the rows were timed.
pub fn generator_bench_footer(compact_bytes: usize, full: Option<(f64, usize)>, runs: usize) {
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    print!("host bytes: the compact witness {:.3} GiB", gib(compact_bytes));
    match full {
        Some((_, bytes)) => println!("; full synthesis's a, b, c, aux and inputs {:.2} GiB", gib(bytes)),
        None => println!(" (full synthesis not run: --full)"),
    }
    println!("machine: {}", machine());
    println!(
        "WitnessCs and full synthesis once; the generator median of {runs} runs after one warm-up; the generated witness equals WitnessCs's value for value"
    );
}

/// The flags the native generator benches share (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct GeneratorRuns {
    /// Timed runs of each generator path, after one warm-up.
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    pub runs: usize,
    /// Also time full synthesis (host memory: ~0.75 GiB a PoRep challenge, ~10 GiB a 32 GiB
    /// SnapDeals partition).
    #[arg(long)]
    pub full: bool,
    /// Only run the generator into a `WitnessCs` this many times on one thread, and exit (for
    /// `perf record`: no gadgets, no comparison).
    #[arg(long, value_name = "N")]
    pub profile: Option<usize>,
}

impl GeneratorRuns {
    /// With `--profile N`: `generate` N times on `one` (a one-thread pool), timed on stderr;
    /// returns whether it ran (the bench then exits).
    pub fn profiled<T>(&self, one: &rayon::ThreadPool, generate: impl Fn() -> T + Sync) -> bool {
        let Some(n) = self.profile else {
            return false;
        };
        let t = Instant::now();
        one.install(|| (0..n).for_each(|_| drop(std::hint::black_box(generate()))));
        eprintln!("{n} generated witnesses in {:.1} ms", ms(t.elapsed()));
        true
    }
}
