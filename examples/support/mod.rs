//! Helpers shared by the examples: arguments, the parameter cache, the machine's description.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use cuzk::testing::Synthetic;
use rand::SeedableRng;

/// `--name value` arguments, with defaults.
pub struct Args(Vec<String>);

impl Args {
    pub fn parse(usage: &str) -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.iter().any(|a| a == "-h" || a == "--help") {
            println!("{usage}");
            std::process::exit(0);
        }
        Self(args)
    }

    /// The value after `name`, if the flag is there.
    fn value(&self, name: &str) -> Option<&str> {
        let i = self.0.iter().position(|a| a == name)?;
        Some(
            self.0
                .get(i + 1)
                .unwrap_or_else(|| fail(&format!("{name} needs a value"))),
        )
    }

    pub fn get<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        self.value(name).map_or(default, |v| parse(name, v))
    }

    pub fn list<T: std::str::FromStr>(&self, name: &str, default: Vec<T>) -> Vec<T> {
        self.value(name)
            .map_or(default, |v| v.split(',').map(|x| parse(name, x)).collect())
    }
}

fn parse<T: std::str::FromStr>(name: &str, v: &str) -> T {
    v.parse()
        .unwrap_or_else(|_| fail(&format!("{name}: cannot parse {v:?}")))
}

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
    eprintln!(
        "generating parameters for 2^{} constraints with bellperson (once; cached at {}) ...",
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
    eprintln!("generated in {:.1} s", start.elapsed().as_secs_f64());
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

/// Prints the library's log records (info and above; `RUST_LOG=debug` for more) to stderr.
pub fn init_logging() {
    struct Stderr(log::LevelFilter);
    impl log::Log for Stderr {
        fn enabled(&self, m: &log::Metadata) -> bool {
            m.level() <= self.0
        }
        fn log(&self, r: &log::Record) {
            if self.enabled(r.metadata()) {
                eprintln!("[{} {}] {}", r.level(), r.target(), r.args());
            }
        }
        fn flush(&self) {}
    }
    let level = match std::env::var("RUST_LOG").as_deref() {
        Ok("trace") => log::LevelFilter::Trace,
        Ok("debug") => log::LevelFilter::Debug,
        Ok("warn") => log::LevelFilter::Warn,
        Ok("error") => log::LevelFilter::Error,
        _ => log::LevelFilter::Info,
    };
    static LOGGER: std::sync::OnceLock<Stderr> = std::sync::OnceLock::new();
    let logger = LOGGER.get_or_init(|| Stderr(level));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
}
