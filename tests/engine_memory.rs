//! The engine's memory promise, measured on the process: with a budget of B bytes, a stream of
//! jobs whose partitions together hold several times B never takes the process's resident
//! memory more than B plus a stated constant above what it held before the stream, and under
//! that pressure the engine waits for room — it never fails a job.
//!
//! Its own test binary, and each stream in a process of its own (the test runs this binary
//! again, once per synthesis path), so that the resident memory measured is the stream's and
//! not what an earlier stream left in the allocator. See
//! [`the_process_stays_within_the_budget_plus_a_constant`] for B, the constant and what is
//! measured.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, PacerMode};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, HeapAllocator};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// 2^13 constraints a partition: a proof takes a fraction of a second on one core.
const LOG_SIZE: u32 = 13;
/// Jobs submitted together in each stream, and partitions in each job.
const JOBS: usize = 4;
const PARTITIONS: usize = 8;
/// Partitions the budget has room for beside the parameters.
const ROOM: usize = 3;
/// GPU workers on the CPU backend: each proves one partition at a time with its own scratch.
const PROVERS: usize = 1;
const MIB: usize = 1 << 20;

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`) in bytes.
fn status(field: &str) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: usize = line[field.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

fn rss() -> usize {
    status("VmRSS:").expect("VmRSS in /proc/self/status")
}

/// Resets the process's peak resident memory (VmHWM) to its current resident memory, where
/// the kernel supports it (`echo 5 > /proc/self/clear_refs`, Linux 4.0+); whether it did.
fn reset_peak() -> bool {
    if std::fs::write("/proc/self/clear_refs", "5").is_err() {
        return false;
    }
    match (status("VmHWM:"), status("VmRSS:")) {
        // Reset: the peak is now (within what was touched since) the current RSS.
        (Some(hwm), Some(rss)) => hwm <= rss + MIB,
        _ => false,
    }
}

/// Samples VmRSS every millisecond from its own thread and keeps the largest.
struct Sampler {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Self {
        let peak = Arc::new(AtomicUsize::new(rss()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(rss(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    /// Restarts the peak from the current RSS.
    fn reset(&self) {
        self.peak.store(rss(), Ordering::Relaxed);
    }

    /// The peak since the last reset.
    fn peak(&self) -> usize {
        self.peak.fetch_max(rss(), Ordering::Relaxed).max(rss())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The most heap bytes the CPU backend holds for one proof of a domain of `m` beside the
/// partition's own (budgeted) buffers. While H is computed: a, b and c copied into three
/// domain-sized vectors and the domain's twiddles, 4·32·m. Then H's evaluations stay (32·m)
/// while each MSM splits its scalars — at most the aux's 1.25·m (`Synthetic`: 75% bit
/// constraints with one aux each, 25% products with two) — into base pointers (8 B each), the
/// bytes of the scalars other than 0 and 1 (32 B) and, for the ones, a copy of their bases to
/// sum (≤ 192 B, G2): ≤ 200 B a scalar, 250·m; plus blst's Pippenger buckets, 384 B ×
/// 2^(window − 1) per thread (≤ 192 KiB for a slice under 8192 points: 48·m for two threads
/// at 2^13). 32·m + 250·m + 48·m = 330·m; 12·32·m = 384·m bounds both phases.
fn cpu_proof_scratch(m: usize) -> usize {
    12 * 32 * m
}

/// What the process holds besides the budget's bytes and the provers' scratch while a stream
/// runs, and had not held before it: the touched part of the threads' stacks, glibc's arenas'
/// slack (freed chunks kept for reuse, per thread that allocated), the witness path's
/// recording (the recorder's own memory, not estimated by the budget), the jobs' own
/// bookkeeping (circuits, proofs, randomness: a few KiB each), code paged in on first use.
/// Measured in fresh processes on the development machine (glibc, 2 cores), both paths, at
/// 2^13 and 2^14: the rise beyond the pool's peak bytes, the compiled circuit and the CPU
/// prover's scratch as it really is (4·32·m while H is computed, seen as `mallinfo2`'s bytes
/// in use) was 1.1–1.7 MiB, none of it file-backed (RssFile did not move); 4 MiB bounds it.
const FIXED_SLACK: usize = 4 * MIB;

/// In the processes the test starts: which stream to run, `witness` or `full`.
const STREAM_ENV: &str = "CUZK_ENGINE_MEMORY_STREAM";
/// The line a child prints once its stream passed every check.
const PASSED: &str = "engine_memory: stream within the bound";

fn mib(bytes: usize) -> f64 {
    bytes as f64 / MIB as f64
}

/// The promise, measured once on each synthesis path, each in a fresh process (this binary
/// run again with [`STREAM_ENV`] set, running [`one_stream`]; the two at once).
///
/// - **B** = the parameters' host bytes + [`ROOM`] partitions' reservations
///   ([`partition_bytes`] of the parameters' hint).
/// - **A stream**: [`JOBS`] jobs of [`PARTITIONS`] `Synthetic` partitions each, submitted
///   together, proved on the CPU backend by [`PROVERS`] worker, two synthesis workers, the
///   pacer out of the way (the budget alone bounds what is in flight): with the witness path
///   (the first partition records the compiled circuit, later ones are synthesized
///   witness-only, their a/b/c evaluated on the host), or in full synthesis.
/// - **Baseline**: the process's VmRSS once the parameters exist and the engine is built,
///   holds them (`add_parameters`) and runs its threads, just before the first job is
///   submitted.
/// - **Peak**: the process's peak resident memory over the stream: VmHWM after a reset
///   (`/proc/self/clear_refs`) where the kernel supports it, and VmRSS sampled every 1 ms; the
///   larger.
/// - **The bound**: `peak − baseline ≤ (B − parameters) + over + C`, the parameters being
///   resident at the baseline already (so this is tighter than `peak − baseline ≤ B + C`);
///   `over` = the books' peak beyond B (`budget_peak − B`): 0 on the full path; on the witness
///   path, in some runs, the compiled circuit (0.28 MiB, charged when its recording ends, even
///   past the limit) and the compact witness of a partition reserved for full synthesis that
///   took the witness path (0.17 MiB; see the check on the books); and
///   **C = [`PROVERS`] × [`cpu_proof_scratch`]`(m)` + [`FIXED_SLACK`]**: the CPU backend's
///   per-proof heap vectors (the budget counts a partition's a/b/c/aux or witness, and the pool
///   checkouts its proof makes, but not the vectors a backend allocates while it proves, which
///   exist once per proving worker, not per partition), and a fixed slack for the threads, the
///   allocator and code. At 2^13: B = 7.9 MiB (parameters 4.7), C = 3 MiB + 4 MiB; measured:
///   rises of 4.6–5.9 MiB, 1.4–2.7 MiB beyond B − parameters.
/// - **Under pressure, waits**: every job succeeds with all its proofs, none failed, and the
///   engine counted budget waits (`EngineStats::budget_waits ≥ 1`).
/// - **Not vacuous**: the stream's reservations total ≥ 4 × B; the peak rose by more than two
///   partitions' bytes over the baseline (the memory measured is the partitions'); the books
///   never went over B on the full path, the pool never over B nor fell back; the path asked
///   for is the path taken. (An engine admitting 2 × B on the full path rises by 13 MiB and
///   fails the bound; one ignoring its budget, by 36 MiB.)
#[test]
fn the_process_stays_within_the_budget_plus_a_constant() {
    let exe = std::env::current_exe().expect("this test binary");
    // Both at once: separate processes, so neither sees the other's memory.
    let children: Vec<_> = ["witness", "full"]
        .into_iter()
        .map(|path| {
            let child = Command::new(&exe)
                .args(["one_stream", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                .env(STREAM_ENV, path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the stream's process");
            (path, child)
        })
        .collect();
    for (path, child) in children {
        let out = child.wait_with_output().expect("the stream's process");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("--- {path} stream ---\n{stderr}{stdout}");
        assert!(out.status.success(), "the {path} stream failed: {}", out.status);
        assert!(stderr.contains(PASSED), "the {path} stream did not run its checks");
    }
}

/// One stream and its checks, in a process that
/// [`the_process_stays_within_the_budget_plus_a_constant`] starts (nothing without
/// [`STREAM_ENV`]).
#[test]
#[ignore = "a stream of the_process_stays_within_the_budget_plus_a_constant, run in its own process"]
fn one_stream() {
    let witness_path = match std::env::var(STREAM_ENV).as_deref() {
        Ok("witness") => true,
        Ok("full") => false,
        _ => return,
    };
    let started = Instant::now();
    let params = random_parameters(Synthetic::new(LOG_SIZE), 5).expect("parameters");
    let m = params.domain_size();
    let one = partition_bytes(params_hint(&params), 1.0);
    let params_bytes = params.host_bytes();
    let budget = params_bytes + ROOM * one;
    let room = budget - params_bytes;
    let constant = PROVERS * cpu_proof_scratch(m) + FIXED_SLACK;
    let total = JOBS * PARTITIONS;
    // The pressure is real: all of it at once would hold several budgets.
    assert!(total * one >= 4 * budget, "{total} × {one} against B = {budget}");

    let engine = Engine::new(EngineConfig {
        synthesis_workers: 2,
        // The pacer out of the way (a queue as deep as the stream): the budget alone bounds
        // the partitions in flight.
        pacer: PacerMode::BoundedQueue { depth: total },
        budget_bytes: budget,
        // Waiting is the promise; a wait this long means a stuck engine, not pressure.
        budget_timeout: Duration::from_secs(300),
        gpu_workers_per_backend: PROVERS,
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        pool_reuse_factor: 1.0,
        synthesis_bytes_per_constraint: 0,
        witness_path,
        compiled_dir: None,
        ..EngineConfig::default()
    })
    .expect("engine");
    engine.add_parameters(&params).expect("parameters charged");
    let mut rng = ChaCha20Rng::seed_from_u64(23);
    let jobs: Vec<Job> = (0..JOBS)
        .map(|j| {
            let circuits: Vec<Synthetic> = (0..PARTITIONS)
                .map(|p| Synthetic::new(LOG_SIZE).with_seed((j * PARTITIONS + p) as u64))
                .collect();
            Job::from_circuits(params.clone(), circuits).with_rng(&mut rng)
        })
        .collect();

    let sampler = Sampler::start();
    std::thread::sleep(Duration::from_millis(20));
    let baseline = rss();
    sampler.reset();
    let hwm_reset = reset_peak();
    let stream = Instant::now();
    let handles: Vec<_> = jobs.into_iter().map(|job| engine.submit(job)).collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.wait()).collect();
    let stream_time = stream.elapsed();
    let sampled = sampler.peak();
    let hwm = status("VmHWM:").filter(|_| hwm_reset);
    drop(sampler);
    let peak = hwm.map_or(sampled, |h| h.max(sampled));
    let rise = peak.saturating_sub(baseline);
    let stats = engine.stats();
    let over = stats.budget_peak.saturating_sub(budget);
    eprintln!(
        "witness path {witness_path}: 2^{LOG_SIZE}, {total} partitions of {:.2} MiB in {JOBS} jobs; B {:.2} MiB \
         (parameters {:.2} + {ROOM} partitions); baseline {:.2} MiB, peak {:.2} (VmHWM {:?}, sampled {:.2}), rise \
         {:.2}; bound (B − parameters) + books over B + C = {:.2} + {:.2} + {:.2} = {:.2} MiB, rise − (B − \
         parameters) = {:+.2} MiB; budget waits {}, budget peak {:.2} MiB, pool peak {:.2} MiB, compiled {:.2} \
         MiB, {:?}; stream {:.1} s, process {:.1} s",
        mib(one),
        mib(budget),
        mib(params_bytes),
        mib(baseline),
        mib(peak),
        hwm.map(mib),
        mib(sampled),
        mib(rise),
        mib(room),
        mib(over),
        mib(constant),
        mib(room + over + constant),
        mib(rise) - mib(room),
        stats.budget_waits,
        mib(stats.budget_peak),
        mib(stats.pool.peak_bytes),
        mib(stats.compiled_bytes),
        stats.witness,
        stream_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );

    // Under pressure it waited, and never failed a job.
    for (j, result) in results.into_iter().enumerate() {
        match result {
            Ok(proofs) => assert_eq!(proofs.len(), PARTITIONS, "job {j}"),
            Err(e) => panic!("job {j} failed under pressure instead of waiting: {e}"),
        }
    }
    assert_eq!((stats.jobs_done, stats.jobs_failed), (JOBS as u64, 0), "{stats:#?}");
    assert_eq!((stats.partitions_done, stats.partitions_failed), (total as u64, 0));
    assert!(
        stats.budget_waits >= 1,
        "the stream never waited for budget: {stats:#?}"
    );
    // The path asked for is the path taken.
    if witness_path {
        assert!(stats.witness.witness >= total as u64 / 2, "{:?}", stats.witness);
    } else {
        assert_eq!(stats.witness.full, total as u64, "{:?}", stats.witness);
    }
    // The books stayed within B on the full path. On the witness path they may go past it by
    // bytes charged once they exist: the compiled circuit, when its recording ends, and the
    // true-up of a partition dispatched (reserved for full synthesis) before the compiled
    // circuit existed but synthesized witness-only after it did — its compact witness beside
    // the a/b/c/aux checkouts its proof will make, about 0.15 of a partition here, for at most
    // ROOM − 1 such partitions.
    if witness_path {
        assert!(
            over <= stats.compiled_bytes + one,
            "{} reserved of {budget}, compiled circuits {}",
            stats.budget_peak,
            stats.compiled_bytes
        );
    } else {
        assert_eq!(over, 0, "{} reserved of {budget}", stats.budget_peak);
    }
    // The pool never held more than B, nor fell back to memory outside the books.
    assert!(stats.pool.peak_bytes <= budget, "{:?}", stats.pool);
    assert_eq!(stats.pool.fallbacks, 0, "{:?}", stats.pool);
    // The measurement saw the partitions' memory.
    assert!(
        rise > 2 * one,
        "the peak rose {rise} bytes; two partitions are {}",
        2 * one
    );

    // The promise.
    assert!(
        rise <= room + over + constant,
        "the process rose {:.2} MiB over its baseline, more than B − parameters ({:.2} MiB) + the books' \
         overshoot ({:.2} MiB) + C ({:.2} MiB)",
        mib(rise),
        mib(room),
        mib(over),
        mib(constant)
    );
    eprintln!("{PASSED}");
}
