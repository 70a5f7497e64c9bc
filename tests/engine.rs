//! The proving engine on the CPU backend with small synthetic circuits: proofs identical to
//! the plain prover's, streaming through a small budget, failures and cancellation confined to
//! their job, priorities, the reserved-checkout-never-refused invariant, statistics.
//!
//! Tests hold the engine in a chosen state with gates (a circuit or a backend that blocks
//! until the test opens it) and wait for states by polling `stats()`; they assert outcomes
//! (bytes, counts, orders), never timings.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::budget::{assignment_bytes, params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, PacerMode, Partition, PiConfig, Progress};
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::{Backend, Commitments, Placement, Timings};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{
    BackendChoice, Circuit, CompiledCircuit, ConstraintSystem, Error, HeapAllocator, Parameters, PinnedPool,
    PoolConfig, Proof, Prover, ProvingAssignment, Scalar, SynthesisError, Witness,
};
use ff::Field;
use parking_lot::{Condvar, Mutex};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use common::engine::wait_for;

const K: u32 = 6;
/// Long enough never to fire on a working engine; a broken one fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(30);

/// A latch: closed until `open`; `wait` gives up (false) after `DEADLINE`.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }

    fn wait(&self) -> bool {
        let deadline = Instant::now() + DEADLINE;
        let mut open = self.open.lock();
        while !*open {
            if self.cv.wait_until(&mut open, deadline).timed_out() {
                return *open;
            }
        }
        true
    }
}

/// A countdown: `arrive` blocks until `n` have arrived (false after `DEADLINE`).
struct Barrier {
    left: Mutex<usize>,
    cv: Condvar,
}

impl Barrier {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            left: Mutex::new(n),
            cv: Condvar::new(),
        })
    }

    fn arrive(&self) -> bool {
        let deadline = Instant::now() + DEADLINE;
        let mut left = self.left.lock();
        *left = left.saturating_sub(1);
        self.cv.notify_all();
        while *left > 0 {
            if self.cv.wait_until(&mut left, deadline).timed_out() {
                return *left == 0;
            }
        }
        true
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    Fail,
    Panic,
}

/// A `Synthetic` that logs its tag when its synthesis starts, may wait on a gate or a barrier
/// first (its pool buffers are checked out by then), and may fail or panic.
#[derive(Clone)]
struct TestCircuit {
    inner: Synthetic,
    tag: u32,
    log: Option<Arc<Mutex<Vec<u32>>>>,
    gate: Option<Arc<Gate>>,
    barrier: Option<Arc<Barrier>>,
    mode: Mode,
}

impl TestCircuit {
    fn new(seed: u64) -> Self {
        Self {
            inner: Synthetic::new(K).with_seed(seed),
            tag: 0,
            log: None,
            gate: None,
            barrier: None,
            mode: Mode::Normal,
        }
    }
}

impl Circuit<Scalar> for TestCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if let Some(log) = &self.log {
            log.lock().push(self.tag);
        }
        if let Some(gate) = &self.gate {
            if !gate.wait() {
                return Err(SynthesisError::AssignmentMissing);
            }
        }
        if let Some(barrier) = &self.barrier {
            if !barrier.arrive() {
                return Err(SynthesisError::AssignmentMissing);
            }
        }
        match self.mode {
            Mode::Normal => self.inner.synthesize(cs),
            Mode::Fail => Err(SynthesisError::Unsatisfiable),
            Mode::Panic => panic!("test circuit panics on purpose"),
        }
    }
}

/// The CPU backend, held at the start of each proof until its gate opens.
struct GatedBackend {
    gate: Arc<Gate>,
}

impl Backend for GatedBackend {
    fn name(&self) -> &'static str {
        "gated-cpu"
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        if !self.gate.wait() {
            return Err(Error::InvalidArgument("gate never opened".into()));
        }
        CpuBackend.commitments(a, params, t)
    }
}

/// A GPU that hits a sticky error on its first proof (or is lost from the start).
struct LosingBackend {
    lost: AtomicBool,
}

impl Backend for LosingBackend {
    fn name(&self) -> &'static str {
        "losing"
    }

    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    fn commitments(&self, a: &mut ProvingAssignment, _: &Parameters, _: &mut Timings) -> cuzk::Result<Commitments> {
        self.lost.store(true, Ordering::SeqCst);
        a.release_abc();
        Err(Error::DeviceLost {
            device: 9,
            code: 700,
            message: "illegal address (test)".into(),
        })
    }
}

fn params() -> Parameters {
    static PARAMS: std::sync::OnceLock<Parameters> = std::sync::OnceLock::new();
    PARAMS
        .get_or_init(|| random_parameters(Synthetic::new(K), 7).expect("parameters"))
        .clone()
}

fn fast_pi() -> PacerMode {
    let mut pi = PiConfig::default();
    pi.initial_interval = Duration::from_millis(1);
    pi.min_interval = Duration::from_millis(1);
    PacerMode::Pi(pi)
}

fn config(synthesis_workers: usize, budget_bytes: usize) -> EngineConfig {
    EngineConfig {
        synthesis_workers,
        pacer: fast_pi(),
        budget_bytes,
        budget_timeout: DEADLINE,
        gpu_workers_per_backend: 1,
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        pool_reuse_factor: 1.0,
        synthesis_bytes_per_constraint: 0,
        witness_path: true,
        native_witness: true,
        params_on_device: false,
        compiled_dir: None,
        urgent_priority: None,
        stream_batch: 4,
    }
}

/// One partition's reservation at `K`.
fn one_partition() -> usize {
    partition_bytes(params_hint(&params()), 1.0)
}

/// A budget of `n` partitions beside the parameters (charged once while the engine holds
/// them).
fn budget(n: usize) -> usize {
    n * one_partition() + params().host_bytes()
}

fn randomness(n: usize, seed: u64) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let r = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    (r, s)
}

/// The plain prover's proofs of `Synthetic::new(K)` with these seeds, r and s.
fn reference(seeds: &[u64], r: &[Scalar], s: &[Scalar]) -> Vec<Proof> {
    let circuits: Vec<Synthetic> = seeds.iter().map(|&seed| Synthetic::new(K).with_seed(seed)).collect();
    Prover::new()
        .with_backend(BackendChoice::Cpu)
        .unwrap()
        .prove_with_randomness(circuits, &params(), r, s)
        .expect("reference proofs")
}

fn job_of(circuits: Vec<TestCircuit>, seed: u64) -> (Job, Vec<Scalar>, Vec<Scalar>) {
    let (r, s) = randomness(circuits.len(), seed);
    let job = Job::from_circuits(params(), circuits).with_randomness(r.clone(), s.clone());
    (job, r, s)
}

/// Every buffer back, nothing but the held parameters and compiled circuits in the budget, no
/// job left, and no fallback or refusal ever.
fn assert_drained(engine: &Engine) {
    wait_for(engine, DEADLINE, "drained", |s| {
        s.jobs_active == 0 && s.in_synthesis == 0 && s.on_gpu == 0
    });
    let stats = engine.stats();
    assert_eq!(
        stats.budget_used,
        stats.params_host_bytes + stats.compiled_bytes,
        "{stats:#?}"
    );
    assert_eq!(stats.synthesis_reserved, 0, "{stats:#?}");
    assert!(stats.params.iter().all(|p| p.partitions == 0), "{:?}", stats.params);
    assert_eq!(stats.pool.bytes_in_use, 0, "{stats:#?}");
    assert_eq!(stats.pool.fallback_bytes_in_use, 0);
    assert_eq!(stats.pool.fallbacks, 0, "{stats:#?}");
    assert_eq!((stats.waiting, stats.pending), (0, 0));
    assert_eq!(
        (stats.pacer.waiting, stats.pacer.in_synthesis),
        (0, 0),
        "{:?}",
        stats.pacer
    );
}

#[test]
fn proofs_are_the_provers_bytes() {
    let engine = Engine::new(config(2, 1 << 30)).unwrap();
    let seeds = [1, 2, 3, 4, 5];
    let circuits = seeds.iter().map(|&s| TestCircuit::new(s)).collect();
    let (job, r, s) = job_of(circuits, 11);
    let proofs = engine.prove(job).unwrap();
    assert_eq!(proofs, reference(&seeds, &r, &s));

    // Mixed: partition 1 synthesized already, into the engine's pool.
    let pre = engine
        .prover()
        .synthesize_for(Synthetic::new(K).with_seed(9), &params())
        .unwrap();
    assert!(pre.is_aux_pinned() || !engine.pool().is_pinned());
    let partitions = vec![
        Partition::circuit(TestCircuit::new(8)),
        Partition::synthesized(pre),
        Partition::circuit(TestCircuit::new(10)),
    ];
    let (r, s) = randomness(3, 12);
    let proofs = engine
        .prove(Job::new(params(), partitions).with_randomness(r.clone(), s.clone()))
        .unwrap();
    assert_eq!(proofs, reference(&[8, 9, 10], &r, &s));

    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!((stats.partitions_done, stats.partitions_failed), (8, 0));
    assert_eq!((stats.jobs_done, stats.jobs_failed), (2, 0));
    assert_eq!(stats.workers.len(), 1);
    assert_eq!(stats.workers[0].partitions, 8);
    assert!((0.0..=1.0).contains(&stats.workers[0].busy_fraction));
    assert!(stats.workers[0].busy > Duration::ZERO);
    assert!(stats.synthesis_time_ema.is_some() && stats.gpu_time_ema.is_some());
    assert_eq!(
        stats.pacer.dispatched, 7,
        "the pre-synthesized partition skips the pacer"
    );
}

#[test]
fn a_job_three_times_the_budget_streams_through() {
    let one = one_partition();
    // Full syntheses' buffers, counted (the witness path's stream: tests/witness_path.rs).
    let engine = Engine::new(EngineConfig {
        witness_path: false,
        ..config(2, budget(2))
    })
    .unwrap();
    let seeds: Vec<u64> = (20..26).collect();
    let circuits = seeds.iter().map(|&s| TestCircuit::new(s)).collect();
    let (job, r, s) = job_of(circuits, 13);
    let handle = engine.submit(job);
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = seen.clone();
    handle.on_progress(Box::new(move |p| sink.lock().push(p)));
    let proofs = handle.wait().unwrap();
    assert_eq!(proofs, reference(&seeds, &r, &s));

    assert_drained(&engine);
    let stats = engine.stats();
    assert!(
        stats.budget_peak <= budget(2),
        "{} reserved at most, budget {}",
        stats.budget_peak,
        budget(2)
    );
    assert!(stats.pool.peak_bytes <= 2 * one);
    assert_eq!((stats.pool.waits, stats.pool.failures), (0, 0), "{:?}", stats.pool);
    // Two partitions' buffers at most ever exist, and every later checkout reuses them.
    assert!(stats.pool.allocations <= 8, "{:?}", stats.pool);
    assert_eq!(stats.pool.checkouts, 6 * 4);
    assert!(stats.pool.reuses >= 16, "{:?}", stats.pool);

    // Progress: 1..=6 in order (the callback may be set after the first proofs; then it
    // starts later), then the end.
    let seen = seen.lock().clone();
    let last = *seen.last().unwrap();
    assert_eq!(
        last,
        Progress {
            done: 6,
            failed: 0,
            total: 6,
            finished: true
        }
    );
    let dones: Vec<usize> = seen.iter().filter(|p| !p.finished).map(|p| p.done).collect();
    assert!(dones.windows(2).all(|w| w[1] == w[0] + 1), "{dones:?}");
}

#[test]
fn a_failing_partition_fails_only_its_job() {
    let engine = Engine::new(config(2, 1 << 30)).unwrap();
    let mut failing: Vec<TestCircuit> = (30..33).map(TestCircuit::new).collect();
    failing[1].mode = Mode::Fail;
    let mut panicking: Vec<TestCircuit> = (40..43).map(TestCircuit::new).collect();
    panicking[2].mode = Mode::Panic;
    let seeds = [50, 51, 52];
    let good: Vec<TestCircuit> = seeds.iter().map(|&s| TestCircuit::new(s)).collect();

    let (failing, ..) = job_of(failing, 1);
    let (panicking, ..) = job_of(panicking, 2);
    let (good, r, s) = job_of(good, 3);
    let failing = engine.submit(failing);
    let panicking = engine.submit(panicking.with_label("panics"));
    let good = engine.submit(good);
    // A circuit of another size than its parameters: fails on the prover's shape check.
    let wrong = engine
        .submit(Job::from_circuits(params(), vec![Synthetic::new(K + 1)]).with_rng(&mut ChaCha20Rng::seed_from_u64(4)));
    // r and s of the wrong length, and an empty job: refused at submission.
    let bad_rs = engine.submit(Job::from_circuits(params(), vec![TestCircuit::new(1)]).with_randomness(vec![], vec![]));
    let empty = engine.submit(Job::new(params(), vec![]));

    assert!(matches!(
        failing.wait(),
        Err(Error::Synthesis(SynthesisError::Unsatisfiable))
    ));
    let e = panicking.wait().unwrap_err();
    assert!(matches!(&e, Error::Panicked(m) if m.contains("on purpose")), "{e}");
    assert_eq!(good.wait().unwrap(), reference(&seeds, &r, &s));
    assert!(matches!(wrong.wait(), Err(Error::CircuitMismatch(_))));
    assert!(matches!(bad_rs.wait(), Err(Error::InvalidArgument(_))));
    assert!(matches!(empty.wait(), Err(Error::InvalidArgument(_))));

    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(stats.jobs_done, 1);
    assert_eq!(stats.jobs_failed, 3, "refused jobs never entered the engine");
    assert_eq!(stats.partitions_failed, 3);
    // Every partition is accounted for exactly once.
    assert_eq!(
        stats.partitions_done + stats.partitions_failed + stats.partitions_dropped,
        3 + 3 + 3 + 1
    );

    // The engine goes on after all that.
    let (job, r, s) = job_of(vec![TestCircuit::new(60)], 5);
    assert_eq!(engine.prove(job).unwrap(), reference(&[60], &r, &s));
}

#[test]
fn cancel_frees_partitions_not_yet_on_a_gpu() {
    // The only synthesis worker held by a gated circuit: a second job cannot be dispatched.
    let engine = Engine::new(config(1, 1 << 30)).unwrap();
    let gate = Gate::new();
    let mut held = TestCircuit::new(70);
    held.gate = Some(gate.clone());
    let (held_job, r, s) = job_of(vec![held], 6);
    let held = engine.submit(held_job);
    wait_for(&engine, DEADLINE, "the gated partition in synthesis", |s| {
        s.in_synthesis == 1
    });
    let (job, ..) = job_of((71..75).map(TestCircuit::new).collect(), 7);
    let cancelled = engine.submit(job);
    assert_eq!(engine.stats().pending, 4);
    assert!(cancelled.cancel());
    assert!(!cancelled.cancel(), "cancelling twice");
    assert!(cancelled.is_finished());
    assert!(matches!(cancelled.wait(), Err(Error::Cancelled(_))));
    assert_eq!(engine.stats().pending, 0);
    gate.open();
    assert_eq!(held.wait().unwrap(), reference(&[70], &r, &s));
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!((stats.partitions_done, stats.partitions_dropped), (1, 4));

    // Partitions synthesized and waiting for the GPU: held by a gated backend.
    let gpu_gate = Gate::new();
    let backend: Arc<dyn Backend> = Arc::new(GatedBackend { gate: gpu_gate.clone() });
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(backend)],
        pacer: PacerMode::BoundedQueue { depth: 8 },
        ..config(2, 1 << 30)
    })
    .unwrap();
    let (first, r, s) = job_of(vec![TestCircuit::new(80)], 8);
    let first = engine.submit(first);
    wait_for(&engine, DEADLINE, "a partition on the GPU", |s| s.on_gpu == 1);
    // The worker proving names its job (the daemon's GetStatus reads it per GPU).
    let proving = |e: &Engine| {
        e.stats()
            .workers
            .iter()
            .filter_map(|w| w.proving_job)
            .collect::<Vec<_>>()
    };
    assert_eq!(proving(&engine), [first.id()]);
    let (job, ..) = job_of((81..84).map(TestCircuit::new).collect(), 9);
    let waiting = engine.submit(job);
    wait_for(&engine, DEADLINE, "three partitions waiting", |s| s.waiting == 3);
    let before = engine.stats();
    assert!(waiting.cancel());
    // Their buffers and budget are back as soon as cancel returns.
    let after = engine.stats();
    assert_eq!(after.waiting, 0);
    assert_eq!(after.pacer.waiting, 0);
    assert!(after.pool.bytes_in_use < before.pool.bytes_in_use);
    // Only the partition on the GPU (the first of its type: synthesized in full while it
    // recorded) still holds its reservation, beside the GPU worker's slot for the host
    // evaluations of the witnesses cancelled (held until the engine has no job left).
    let held = after.params_host_bytes + after.compiled_bytes + after.evaluation_reserved;
    assert!(
        after.budget_used - held <= one_partition() && before.budget_used > after.budget_used,
        "{} then {}",
        before.budget_used,
        after.budget_used
    );
    assert!(matches!(waiting.wait(), Err(Error::Cancelled(_))));
    gpu_gate.open();
    assert_eq!(first.wait().unwrap(), reference(&[80], &r, &s));
    assert_drained(&engine);
    assert!(proving(&engine).is_empty(), "no proof under way");
}

#[test]
fn priorities_order_dispatch() {
    let engine = Engine::new(EngineConfig {
        pacer: PacerMode::BoundedQueue { depth: 16 },
        ..config(1, 1 << 30)
    })
    .unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let gate = Gate::new();
    let tagged = |seed: u64, tag: u32| {
        let mut c = TestCircuit::new(seed);
        c.tag = tag;
        c.log = Some(log.clone());
        c
    };
    let mut held = tagged(90, 0);
    held.gate = Some(gate.clone());
    let held = engine.submit(job_of(vec![held], 1).0);
    wait_for(&engine, DEADLINE, "the gated partition in synthesis", |s| {
        s.in_synthesis == 1
    });
    let low = engine.submit(job_of((1..4).map(|i| tagged(90 + i, 100 + i as u32)).collect(), 2).0);
    let high = engine.submit(
        job_of((1..4).map(|i| tagged(95 + i, 200 + i as u32)).collect(), 3)
            .0
            .with_priority(5),
    );
    let low2 = engine.submit(job_of(vec![tagged(99, 300)], 4).0);
    gate.open();
    for h in [held, low, high, low2] {
        h.wait().unwrap();
    }
    assert_eq!(*log.lock(), vec![0, 201, 202, 203, 101, 102, 103, 300]);
    assert_drained(&engine);
}

#[test]
fn a_reserved_partition_is_never_refused() {
    // The field failure: a partition whose bytes the budget reserved was refused by the pool
    // (which charged them again) and fell back to unpinned memory. Here the budget holds
    // exactly three partitions; three synthesize at once (a barrier inside synthesis holds
    // all three with their buffers checked out), and the pool starts full of idle buffers of
    // a size none of them can reuse. Every checkout must succeed at once: no wait, no
    // failure, no fallback.
    let limit = budget(3);
    let engine = Engine::new(EngineConfig {
        pacer: PacerMode::BoundedQueue { depth: 3 },
        ..config(3, limit)
    })
    .unwrap();
    // Fill the pool with idle buffers of a useless size, up to its cap.
    let odd = 3 * 4096 + 100;
    let mut filler = Vec::new();
    while let Ok(b) = engine.pool().checkout(odd) {
        filler.push(b);
        if engine.pool().stats().bytes_in_use + 2 * odd > limit {
            break;
        }
    }
    drop(filler);
    let before = engine.pool().stats();
    assert!(
        before.bytes_idle + 2 * odd > limit,
        "the pool is full of idle buffers: {before:?}"
    );

    let barrier = Barrier::new(3);
    let seeds = [110, 111, 112];
    let circuits = seeds
        .iter()
        .map(|&seed| {
            let mut c = TestCircuit::new(seed);
            c.barrier = Some(barrier.clone());
            c
        })
        .collect();
    let (job, r, s) = job_of(circuits, 10);
    assert_eq!(engine.prove(job).unwrap(), reference(&seeds, &r, &s));
    let after = engine.pool().stats();
    assert_eq!(after.waits, before.waits, "a reserved checkout waited: {after:?}");
    assert_eq!(
        after.failures, before.failures,
        "a reserved checkout was refused: {after:?}"
    );
    assert_eq!(after.fallbacks, 0, "{after:?}");
    // All three held their buffers at once (the barrier), within the budget.
    assert!(after.peak_bytes <= limit, "{after:?}");
    assert!(engine.stats().budget_peak >= 3 * (4 * 4096 * 32));
    assert_drained(&engine);
}

#[test]
fn prewarmed_buffers_are_reused_by_the_stream() {
    // Prewarming checks out full syntheses' buffers (a witness's are other sizes).
    let engine = Engine::new(EngineConfig {
        witness_path: false,
        ..config(2, budget(3))
    })
    .unwrap();
    // Stops at the budget: room for three.
    assert_eq!(engine.prewarm(params_hint(&params()), 5).unwrap(), 3);
    let warm = engine.pool().stats();
    assert_eq!((warm.allocations, warm.bytes_in_use), (12, 0));
    assert_eq!(engine.stats().budget_used, 0);
    let seeds: Vec<u64> = (120..126).collect();
    let (job, r, s) = job_of(seeds.iter().map(|&s| TestCircuit::new(s)).collect(), 14);
    assert_eq!(engine.prove(job).unwrap(), reference(&seeds, &r, &s));
    let after = engine.pool().stats();
    assert_eq!(after.allocations, 12, "the stream pinned nothing new: {after:?}");
    assert_eq!(after.reuses - warm.reuses, 6 * 4);
    assert_drained(&engine);
}

#[test]
fn a_partition_larger_than_the_budget_fails_its_job_clearly() {
    let engine = Engine::new(config(1, one_partition() - 1)).unwrap();
    let (job, ..) = job_of(vec![TestCircuit::new(1)], 1);
    let e = engine.prove(job).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BudgetExhausted {
                waited: Duration::ZERO,
                ..
            }
        ),
        "{e}"
    );
    assert_drained(&engine);

    // A budget that is full for longer than the timeout: the job waits, then fails.
    let engine = Engine::new(EngineConfig {
        budget_timeout: Duration::from_millis(200),
        ..config(2, budget(1))
    })
    .unwrap();
    let gate = Gate::new();
    let mut held = TestCircuit::new(2);
    held.gate = Some(gate.clone());
    let held = engine.submit(job_of(vec![held], 2).0);
    wait_for(&engine, DEADLINE, "the budget full", |s| s.in_synthesis == 1);
    let starved = engine.submit(job_of(vec![TestCircuit::new(3)], 3).0);
    let e = starved.wait().unwrap_err();
    assert!(
        matches!(e, Error::BudgetExhausted { waited, .. } if waited >= Duration::from_millis(200)),
        "{e}"
    );
    gate.open();
    held.wait().unwrap();
    assert_drained(&engine);
}

#[test]
fn a_synthesized_partition_larger_than_the_budget_is_refused() {
    // Made outside the engine's pool (the engine's own pool would refuse to hold it): the
    // budget's limit holds for it as for a circuit's partition, and the stats say so.
    let prover = Prover::new().with_pool(PinnedPool::heap(PoolConfig::default()));
    let made = |seed| {
        prover
            .synthesize_for(Synthetic::new(K).with_seed(seed), &params())
            .unwrap()
    };
    // (The first synthesis of a type sizes its inputs' vector by growth, later ones by the
    // hint it recorded: measure a later one.)
    drop(made(0));
    let m = made(1);
    let bytes = assignment_bytes(&m) + params().host_bytes();
    let engine = Engine::new(EngineConfig {
        budget_timeout: Duration::from_millis(200),
        ..config(1, bytes - 1)
    })
    .unwrap();
    let (r, s) = randomness(1, 5);
    let job = Job::new(params(), vec![Partition::synthesized(m)]).with_randomness(r, s);
    let e = engine.prove(job).unwrap_err();
    assert!(
        matches!(e, Error::BudgetExhausted { requested, limit, waited: Duration::ZERO, .. }
            if requested == bytes && limit == bytes - 1),
        "{e}"
    );
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(
        (stats.jobs_failed, stats.partitions_failed),
        (0, 0),
        "refused at submission: it never entered the engine"
    );
    assert!(
        stats.budget_peak <= stats.budget_limit,
        "peak {} over the limit {}",
        stats.budget_peak,
        stats.budget_limit
    );

    // One that fits alone is admitted and proved, even with the room taken: its bytes exist.
    let engine = Engine::new(config(1, bytes)).unwrap();
    let (r, s) = randomness(2, 6);
    let job = Job::new(
        params(),
        vec![Partition::synthesized(made(2)), Partition::synthesized(made(3))],
    )
    .with_randomness(r.clone(), s.clone());
    assert_eq!(engine.prove(job).unwrap(), reference(&[2, 3], &r, &s));
    assert_drained(&engine);
    let stats = engine.stats();
    assert!(
        stats.budget_peak > stats.budget_limit,
        "two partitions that existed already were counted"
    );
}

#[test]
fn dropping_the_engine_cancels_its_jobs() {
    let engine = Engine::new(config(1, 1 << 30)).unwrap();
    let pool = engine.pool().clone();
    let gate = Gate::new();
    let mut held = TestCircuit::new(1);
    held.gate = Some(gate.clone());
    let held = engine.submit(job_of(vec![held, TestCircuit::new(2)], 1).0);
    wait_for(&engine, DEADLINE, "in synthesis", |s| s.in_synthesis == 1);
    let queued = engine.submit(job_of(vec![TestCircuit::new(3)], 2).0);
    drop(engine);
    assert!(matches!(held.wait(), Err(Error::Cancelled(_))));
    assert!(matches!(queued.wait(), Err(Error::Cancelled(_))));
    // The synthesis under way ends on its own and gives its buffers back.
    gate.open();
    let deadline = Instant::now() + DEADLINE;
    while pool.stats().bytes_in_use > 0 {
        assert!(Instant::now() < deadline, "{:?}", pool.stats());
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_lost_gpu_fails_its_partitions_and_stops_taking_work() {
    // Two workers on one GPU that is lost at its first proof: the jobs they take fail with
    // DeviceLost; once both have seen it, new jobs are refused.
    let losing: Arc<dyn Backend> = Arc::new(LosingBackend {
        lost: AtomicBool::new(false),
    });
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(losing)],
        gpu_workers_per_backend: 2,
        ..config(1, 1 << 30)
    })
    .unwrap();
    let (a, ..) = job_of(vec![TestCircuit::new(1)], 1);
    assert!(matches!(engine.prove(a), Err(Error::DeviceLost { .. })));
    let (b, ..) = job_of(vec![TestCircuit::new(2)], 2);
    // The other worker either takes it (and sees the loss itself) or has seen the loss
    // already, before taking anything (then no worker is left and the job is refused).
    let e = engine.prove(b).unwrap_err();
    assert!(matches!(e, Error::DeviceLost { .. } | Error::NoGpu(_)), "{e}");
    wait_for(&engine, DEADLINE, "both workers retired", |s| {
        s.workers.iter().all(|w| w.lost)
    });
    let (c, ..) = job_of(vec![TestCircuit::new(3)], 3);
    assert!(matches!(engine.prove(c), Err(Error::NoGpu(_))));
    assert_drained(&engine);

    // A lost GPU next to a healthy one: its worker retires, the other proves everything.
    let lost: Arc<dyn Backend> = Arc::new(LosingBackend {
        lost: AtomicBool::new(true),
    });
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu), EngineBackend::Custom(lost)],
        ..config(2, 1 << 30)
    })
    .unwrap();
    wait_for(&engine, DEADLINE, "the lost worker retired", |s| s.workers[1].lost);
    let seeds = [4, 5, 6, 7];
    let (job, r, s) = job_of(seeds.iter().map(|&s| TestCircuit::new(s)).collect(), 4);
    assert_eq!(engine.prove(job).unwrap(), reference(&seeds, &r, &s));
    let stats = engine.stats();
    assert_eq!((stats.workers[0].partitions, stats.workers[1].partitions), (4, 0));
    assert!(!stats.workers[0].lost);
    assert_drained(&engine);
}

#[test]
fn a_mixed_stream_with_failures_and_cancels_drains_clean() {
    for witness_path in [false, true] {
        mixed_stream_with_failures_and_cancels(witness_path);
    }
}

/// Two GPU workers, three synthesis workers, a budget of four full partitions; jobs of one to
/// four partitions, mixed priorities, some with a failing partition, some cancelled at once.
/// Every job ends as it should, the engine drains, and the books never pass the budget.
fn mixed_stream_with_failures_and_cancels(witness_path: bool) {
    let engine = Engine::new(EngineConfig {
        gpu_workers_per_backend: 2,
        witness_path,
        ..config(3, budget(4))
    })
    .unwrap();
    if witness_path {
        // One job first, alone, records the circuit: the stream's partitions then reserve
        // their witnesses and evaluation slots at dispatch. (Without it, the circuit's bytes
        // and the evaluation slots of partitions dispatched in full before it existed are
        // charged when they come into being: bytes that exist, counted even past the limit
        // when four full partitions hold it then — how the first syntheses interleave.)
        let (job, r, s) = job_of(vec![TestCircuit::new(999)], 99);
        assert_eq!(engine.prove(job).unwrap(), reference(&[999], &r, &s));
        assert_eq!(engine.stats().compiled_circuits, 1, "the warm-up recorded the circuit");
    }
    let mut jobs = Vec::new();
    for j in 0..12u64 {
        let size = 1 + (j % 4) as usize;
        let seeds: Vec<u64> = (0..size as u64).map(|i| 1000 + 10 * j + i).collect();
        let mut circuits: Vec<TestCircuit> = seeds.iter().map(|&s| TestCircuit::new(s)).collect();
        let fails = j % 5 == 2;
        if fails {
            circuits[size - 1].mode = Mode::Fail;
        }
        let (job, r, s) = job_of(circuits, 100 + j);
        let handle = engine.submit(job.with_priority((j % 3) as i32));
        let cancelled = j % 3 == 1 && handle.cancel();
        jobs.push((handle, seeds, r, s, fails, cancelled));
    }
    for (handle, seeds, r, s, fails, cancelled) in jobs {
        match handle.wait() {
            Ok(proofs) => {
                assert!(!fails && !cancelled);
                assert_eq!(proofs, reference(&seeds, &r, &s));
            }
            Err(Error::Cancelled(_)) => assert!(cancelled),
            Err(Error::Synthesis(_)) => assert!(fails && !cancelled),
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_drained(&engine);
    let stats = engine.stats();
    // The warm-up's one job of one partition, on the witness path.
    let warm_up = u64::from(witness_path);
    let total: u64 = (0..12).map(|j| 1 + j % 4).sum();
    assert_eq!(
        stats.partitions_done + stats.partitions_failed + stats.partitions_dropped,
        total + warm_up
    );
    assert!(
        stats.budget_peak <= budget(4),
        "witness path {witness_path}: peak {} over the budget {}: {stats:#?}",
        stats.budget_peak,
        budget(4)
    );
    assert_eq!(stats.jobs_done + stats.jobs_failed, 12 + warm_up);
    if witness_path {
        assert!(stats.witness.witness > 0, "{:?}", stats.witness);
    } else {
        assert_eq!(stats.compiled_circuits, 0);
    }
}

#[test]
fn engines_and_handles_are_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Engine>();
    send_sync::<cuzk::engine::JobHandle>();
    // Submitting from several threads at once.
    let engine = Engine::new(config(2, 1 << 30)).unwrap();
    std::thread::scope(|scope| {
        for t in 0..3u64 {
            let engine = &engine;
            scope.spawn(move || {
                let seeds = [200 + t, 210 + t];
                let (job, r, s) = job_of(seeds.iter().map(|&s| TestCircuit::new(s)).collect(), 20 + t);
                assert_eq!(engine.prove(job).unwrap(), reference(&seeds, &r, &s));
            });
        }
    });
    assert_drained(&engine);
    assert_eq!(engine.stats().partitions_done, 6);
}

#[test]
fn bad_configs_are_refused() {
    for bad in [
        EngineConfig {
            synthesis_workers: 0,
            ..config(1, 1 << 20)
        },
        EngineConfig {
            backends: vec![],
            ..config(1, 1 << 20)
        },
        config(1, 0),
        EngineConfig {
            pool_reuse_factor: 0.5,
            ..config(1, 1 << 20)
        },
        EngineConfig {
            pacer: PacerMode::BoundedQueue { depth: 0 },
            ..config(1, 1 << 20)
        },
    ] {
        assert!(matches!(Engine::new(bad), Err(Error::InvalidArgument(_))));
    }
}

/// A second parameter set for the same circuit (another id, the same shape and size).
fn other_params(seed: u64) -> Parameters {
    random_parameters(Synthetic::new(K), seed).expect("parameters")
}

/// The plain prover's proofs with `params`.
fn reference_with(params: &Parameters, seeds: &[u64], r: &[Scalar], s: &[Scalar]) -> Vec<Proof> {
    let circuits: Vec<Synthetic> = seeds.iter().map(|&seed| Synthetic::new(K).with_seed(seed)).collect();
    Prover::new()
        .with_backend(BackendChoice::Cpu)
        .unwrap()
        .prove_with_randomness(circuits, params, r, s)
        .expect("reference proofs")
}

/// A "GPU" that proves on the CPU and records what it was asked to evict: everything
/// (`evictions`) or one set (`evicted_sets`, by id). With `placed` it says where it holds
/// each set it prepared and did not evict (as a CUDA backend that streams, or keeps on the
/// device); without, it does not say.
#[derive(Default)]
struct FakeGpu {
    evictions: std::sync::atomic::AtomicUsize,
    evicted_sets: parking_lot::Mutex<Vec<u64>>,
    placed: Option<Placement>,
    prepared: parking_lot::Mutex<Vec<u64>>,
    /// Each proof waits for it, when set.
    gate: Option<Arc<Gate>>,
    /// The sizes of the witness runs it was handed at once (`witness_commitments_many`).
    runs: parking_lot::Mutex<Vec<usize>>,
    /// Whether a run of two or more fails (as a GPU out of memory would).
    fail_runs: bool,
    /// Runs once, at the start of the first witness run.
    at_run: parking_lot::Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// The parameter set of each proof, in the order proved.
    proved: parking_lot::Mutex<Vec<u64>>,
}

impl FakeGpu {
    fn evicted_sets(&self) -> Vec<u64> {
        self.evicted_sets.lock().clone()
    }

    fn placing(placed: Placement) -> Self {
        Self {
            placed: Some(placed),
            ..Self::default()
        }
    }
}

impl Backend for FakeGpu {
    fn name(&self) -> &'static str {
        "fake-gpu"
    }

    fn prepare(&self, params: &Parameters) -> cuzk::Result<()> {
        self.prepared.lock().push(params.id());
        Ok(())
    }

    fn placement(&self, params_id: u64) -> Option<Placement> {
        let held = self.prepared.lock().contains(&params_id) && !self.evicted_sets.lock().contains(&params_id);
        self.placed.map(|p| if held { p } else { Placement::Absent })
    }

    fn evict(&self) {
        self.evictions.fetch_add(1, Ordering::SeqCst);
    }

    fn evict_params(&self, params_id: u64) {
        self.evicted_sets.lock().push(params_id);
    }

    fn keep_resident(&self, _: &Parameters) -> cuzk::Result<()> {
        Ok(())
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        if self.gate.as_ref().is_some_and(|g| !g.wait()) {
            a.release_abc();
            return Err(Error::InvalidArgument("gate never opened".into()));
        }
        self.proved.lock().push(params.id());
        CpuBackend.commitments(a, params, t)
    }

    fn witness_commitments_many(
        &self,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        pool: Option<&PinnedPool>,
        t: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> cuzk::Result<Vec<Commitments>> {
        self.runs.lock().push(witnesses.len());
        if let Some(hook) = self.at_run.lock().take() {
            hook();
        }
        if self.fail_runs && witnesses.len() > 1 {
            return Err(Error::InvalidArgument("a run of witnesses fails (test)".into()));
        }
        let mut out = Vec::new();
        for (i, w) in witnesses.iter().enumerate() {
            if i > 0 && cut() {
                break;
            }
            out.push(self.witness_commitments(circuit, w, params, pool, t)?);
        }
        Ok(out)
    }
}

/// Issue 47: where a GPU streams a set, its GPU worker proves the waiting witness partitions
/// of one circuit together, at most `stream_batch` at a time, with the bytes each would have
/// alone; a run that fails is proved again one by one, its jobs unharmed.
#[test]
fn a_streamed_sets_waiting_witnesses_are_proved_together() {
    for fail_runs in [false, true] {
        let gate = Gate::new();
        let gpu = Arc::new(FakeGpu {
            placed: Some(Placement::Streamed),
            gate: Some(gate.clone()),
            fail_runs,
            ..FakeGpu::default()
        });
        let engine = Engine::new(EngineConfig {
            backends: vec![EngineBackend::Custom(gpu.clone())],
            pacer: PacerMode::BoundedQueue { depth: 8 },
            stream_batch: 4,
            ..config(2, 1 << 30)
        })
        .unwrap();
        engine.add_parameters(&params()).unwrap();
        // The first partition records the compiled circuit and holds the GPU at its gate...
        let (first, r1, s1) = job_of(vec![TestCircuit::new(1)], 1);
        let first = engine.submit(first);
        wait_for(&engine, DEADLINE, "the first partition on the GPU", |s| s.on_gpu == 1);
        // ...while six witness partitions of its circuit wait.
        let seeds: Vec<u64> = (2..8).collect();
        let (job, r, s) = job_of(seeds.iter().map(|&k| TestCircuit::new(k)).collect(), 2);
        let job = engine.submit(job);
        wait_for(&engine, DEADLINE, "six partitions waiting", |s| s.waiting == 6);
        gate.open();
        assert_eq!(first.wait().unwrap(), reference(&[1], &r1, &s1));
        assert_eq!(job.wait().unwrap(), reference(&seeds, &r, &s), "fail_runs {fail_runs}");
        assert_eq!(*gpu.runs.lock(), [4, 2], "fail_runs {fail_runs}");
        let stats = engine.stats();
        let together = if fail_runs { (0, 0) } else { (2, 6) };
        assert_eq!((stats.batches, stats.batched_partitions), together);
        assert_eq!((stats.partitions_done, stats.partitions_failed), (7, 0));
        assert_drained(&engine);
    }
}

/// An engine over `gpu` (a streamed FakeGpu; batches of up to 4) with `params()` and a second
/// set made from `other_seed`, urgent from `urgent_priority`, and a first partition of
/// `params()` on the GPU (held there until `gpu`'s gate opens): the engine, the second set and
/// the first job.
fn streamed_engine_with_a_blocker(
    gpu: &Arc<FakeGpu>,
    urgent_priority: Option<i32>,
    other_seed: u64,
) -> (Engine, Parameters, cuzk::engine::JobHandle) {
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(gpu.clone())],
        pacer: PacerMode::BoundedQueue { depth: 8 },
        stream_batch: 4,
        urgent_priority,
        ..config(2, 1 << 30)
    })
    .unwrap();
    let other = other_params(other_seed);
    engine.add_parameters(&params()).unwrap();
    engine.add_parameters(&other).unwrap();
    let (first, _, _) = job_of(vec![TestCircuit::new(1)], 1);
    let first = engine.submit(first);
    wait_for(&engine, DEADLINE, "the first partition on the GPU", |s| s.on_gpu == 1);
    (engine, other, first)
}

/// Issue 47: an urgent partition that arrives while a batch is on the GPU waits for the
/// partition under way, not for the batch: the batch stops between two partitions, its other
/// partitions wait again and are proved after the urgent one, with the same bytes.
#[test]
fn an_urgent_partition_cuts_a_batch_short() {
    let gate = Gate::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let gpu = Arc::new(FakeGpu {
        placed: Some(Placement::Streamed),
        gate: Some(gate.clone()),
        at_run: parking_lot::Mutex::new(Some(Box::new(move || {
            started_tx.send(()).unwrap();
            go_rx.recv_timeout(DEADLINE).unwrap();
        }))),
        ..FakeGpu::default()
    });
    let (engine, urgent_params, first) = streamed_engine_with_a_blocker(&gpu, Some(300), 9);
    // The first partition recorded the circuit and holds the GPU while six witnesses wait.
    let seeds: Vec<u64> = (2..8).collect();
    let (job, r, s) = job_of(seeds.iter().map(|&k| TestCircuit::new(k)).collect(), 2);
    let job = engine.submit(job);
    wait_for(&engine, DEADLINE, "six partitions waiting", |s| s.waiting == 6);
    gate.open();
    first.wait().unwrap();
    // A batch of four starts; the urgent job arrives and is synthesized meanwhile.
    started_rx.recv_timeout(DEADLINE).unwrap();
    let (ur, us) = randomness(1, 9);
    let urgent = Job::from_circuits(urgent_params.clone(), vec![Synthetic::new(K).with_seed(20)])
        .with_priority(300)
        .with_randomness(ur.clone(), us.clone());
    let urgent = engine.submit(urgent);
    wait_for(&engine, DEADLINE, "the urgent partition waiting", |s| s.waiting == 3);
    go_tx.send(()).unwrap();
    assert_eq!(urgent.wait().unwrap(), reference_with(&urgent_params, &[20], &ur, &us));
    assert_eq!(job.wait().unwrap(), reference(&seeds, &r, &s));
    // The blocker, one partition of the batch, then the urgent one, then the other five.
    let order = gpu.proved.lock().clone();
    assert_eq!(order.len(), 8, "{order:?}");
    assert_eq!(order[2], urgent_params.id(), "{order:?}");
    assert!(order
        .iter()
        .enumerate()
        .all(|(i, &id)| (i == 2) == (id == urgent_params.id())));
    assert_eq!(gpu.runs.lock()[0], 4);
    assert_drained(&engine);
}

/// Issue 47: a batch never jumps a waiting partition of higher priority that cannot join it:
/// with partitions of priority 10 and 1 of one set waiting beside one of priority 5 of
/// another, the two of 10 go together, then the 5, then the two of 1.
#[test]
fn a_batch_takes_no_partition_below_a_waiting_higher_priority() {
    let gate = Gate::new();
    let gpu = Arc::new(FakeGpu {
        placed: Some(Placement::Streamed),
        gate: Some(gate.clone()),
        ..FakeGpu::default()
    });
    let (engine, other, first) = streamed_engine_with_a_blocker(&gpu, None, 11);
    let (high, rh, sh) = job_of(vec![TestCircuit::new(2), TestCircuit::new(3)], 2);
    let (low, rl, sl) = job_of(vec![TestCircuit::new(4), TestCircuit::new(5)], 3);
    let (ro, so) = randomness(1, 4);
    let middle = Job::from_circuits(other.clone(), vec![Synthetic::new(K).with_seed(6)])
        .with_priority(5)
        .with_randomness(ro.clone(), so.clone());
    let high = engine.submit(high.with_priority(10));
    let low = engine.submit(low.with_priority(1));
    let middle = engine.submit(middle);
    wait_for(&engine, DEADLINE, "five partitions waiting", |s| s.waiting == 5);
    gate.open();
    first.wait().unwrap();
    assert_eq!(high.wait().unwrap(), reference(&[2, 3], &rh, &sh));
    assert_eq!(middle.wait().unwrap(), reference_with(&other, &[6], &ro, &so));
    assert_eq!(low.wait().unwrap(), reference(&[4, 5], &rl, &sl));
    let (p, o) = (params().id(), other.id());
    assert_eq!(*gpu.proved.lock(), [p, p, p, o, p, p]);
    assert_eq!(*gpu.runs.lock(), [2, 2]);
    assert_drained(&engine);
}

/// The statistics say where each GPU holds a set, as the GPU says (issue 47: the mode is the
/// backend's choice, visible without a flag): on the device, streamed, or — for a backend
/// that does not say — where the engine prepared it; device bytes count only the sets on a
/// device, and the C ABI's totals are these sums.
#[test]
fn the_statistics_say_where_each_gpu_holds_a_set() {
    let on_device = Arc::new(FakeGpu::placing(Placement::Device));
    let streaming = Arc::new(FakeGpu::placing(Placement::Streamed));
    let engine = Engine::new(EngineConfig {
        backends: vec![
            EngineBackend::Custom(on_device.clone()),
            EngineBackend::Custom(streaming.clone()),
            EngineBackend::Custom(Arc::new(FakeGpu::default())),
            EngineBackend::Choice(BackendChoice::Cpu),
        ],
        ..config(1, 1 << 30)
    })
    .unwrap();
    let p = other_params(17);
    engine.add_parameters(&p).unwrap();
    let stats = engine.stats();
    let set = &stats.params[0];
    assert_eq!(
        (set.resident_backends, set.streamed_backends),
        (2, 1),
        "the device one and the silent one on the device, one streamed, the CPU neither"
    );
    assert_eq!(stats.params_device_bytes, 2 * p.device_bytes());
    // The streaming GPU lets the set go on its own (its memory limit): the engine says so.
    streaming.evict_params(p.id());
    let set = engine.stats().params[0].clone();
    assert_eq!((set.resident_backends, set.streamed_backends), (2, 0));
    // And a proof over it still goes through, wherever it runs.
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let job = Job::from_circuits(p.clone(), vec![Synthetic::new(K).with_seed(3)]).with_randomness(vec![r], vec![s]);
    assert_eq!(engine.prove(job).unwrap(), reference_with(&p, &[3], &[r], &[s]));
}

#[test]
fn parameters_are_charged_once() {
    let engine = Engine::new(config(2, 1 << 30)).unwrap();
    let host = params().host_bytes();
    assert_eq!(host, params().device_bytes());
    assert!(host > 0);
    // Two jobs with the same parameters, both partitions in synthesis at once.
    let gate = Gate::new();
    let gated = |seed| {
        let mut c = TestCircuit::new(seed);
        c.gate = Some(gate.clone());
        c
    };
    let (a, ra, sa) = job_of(vec![gated(1)], 1);
    let (b, rb, sb) = job_of(vec![gated(2)], 2);
    let a = engine.submit(a);
    let b = engine.submit(b);
    wait_for(&engine, DEADLINE, "both in synthesis", |s| s.in_synthesis == 2);
    let stats = engine.stats();
    assert_eq!((stats.params_sets, stats.params_host_bytes), (1, host), "{stats:#?}");
    assert_eq!(
        stats.budget_used,
        host + 2 * one_partition(),
        "the set once, two partitions"
    );
    assert_eq!(stats.params.len(), 1);
    assert_eq!((stats.params[0].id, stats.params[0].partitions), (params().id(), 2));
    assert_eq!(stats.params[0].resident_backends, 0, "the CPU keeps no device copy");
    assert_eq!(stats.params_device_bytes, 0);
    gate.open();
    assert_eq!(a.wait().unwrap(), reference(&[1], &ra, &sa));
    assert_eq!(b.wait().unwrap(), reference(&[2], &rb, &sb));
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(
        (stats.budget_used, stats.params_sets),
        (host + stats.compiled_bytes, 1),
        "held once after the jobs (beside the compiled circuit)"
    );
    assert_eq!(stats.params[0].partitions, 0);

    // A second set: preloaded, charged once however often it is added.
    let other = other_params(8);
    engine.add_parameters(&other).unwrap();
    engine.add_parameters(&other).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.params_sets, 2);
    assert_eq!(stats.budget_used, host + other.host_bytes() + stats.compiled_bytes);
    assert_eq!(stats.params_host_bytes, host + other.host_bytes());
    // Most recently used last.
    assert_eq!(
        stats.params.iter().map(|p| p.id).collect::<Vec<_>>(),
        [params().id(), other.id()]
    );

    // Removing: not while a job uses it; then its charge leaves the budget.
    let gate = Gate::new();
    let mut held = TestCircuit::new(3);
    held.gate = Some(gate.clone());
    let (r, s) = randomness(1, 3);
    let job = engine.submit(Job::from_circuits(other.clone(), vec![held]).with_randomness(r.clone(), s.clone()));
    wait_for(&engine, DEADLINE, "in synthesis", |s| s.in_synthesis == 1);
    assert!(!engine.remove_parameters(&other), "in use");
    gate.open();
    assert_eq!(job.wait().unwrap(), reference_with(&other, &[3], &r, &s));
    assert_drained(&engine);
    assert!(engine.remove_parameters(&other));
    assert!(!engine.remove_parameters(&other), "not held any more");
    let stats = engine.stats();
    assert_eq!((stats.budget_used, stats.params_sets), (host + stats.compiled_bytes, 1));
    assert_eq!(stats.evicted_params, 0, "removal is not an eviction");
}

#[test]
fn under_pressure_an_idle_parameter_set_is_evicted_and_one_in_use_never() {
    // Room for one partition and one and a half sets: two sets never fit beside a partition.
    let (pa, pb) = (params(), other_params(9));
    assert_eq!(pa.host_bytes(), pb.host_bytes());
    let limit = one_partition() + pa.host_bytes() + pb.host_bytes() / 2;
    let gpu = Arc::new(FakeGpu::default());
    // Full syntheses (a witness partition at this size reserves less than one_partition()).
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(gpu.clone())],
        witness_path: false,
        ..config(2, limit)
    })
    .unwrap();

    // Job A (set A) holds its partition in synthesis; job B (set B) must wait: the only other
    // set is in use.
    let gate = Gate::new();
    let mut held = TestCircuit::new(1);
    held.gate = Some(gate.clone());
    let (a, ra, sa) = job_of(vec![held], 1);
    let a = engine.submit(a);
    wait_for(&engine, DEADLINE, "A in synthesis", |s| s.in_synthesis == 1);
    let (rb, sb) = randomness(2, 2);
    let b = engine.submit(
        Job::from_circuits(pb.clone(), vec![TestCircuit::new(2), TestCircuit::new(3)])
            .with_randomness(rb.clone(), sb.clone()),
    );
    wait_for(&engine, DEADLINE, "B waits for budget room", |s| s.budget_waits == 1);
    let stats = engine.stats();
    assert_eq!((stats.evicted_params, stats.params_sets), (0, 2), "{stats:#?}");
    assert_eq!((stats.in_synthesis, stats.pending), (1, 2), "B not dispatched");
    assert_eq!(gpu.evictions.load(Ordering::SeqCst), 0);
    assert!(gpu.evicted_sets().is_empty(), "nothing evicted while A is in use");

    // A done: its set is idle and goes (with its device copy alone); B runs.
    gate.open();
    assert_eq!(a.wait().unwrap(), reference(&[1], &ra, &sa));
    assert_eq!(b.wait().unwrap(), reference_with(&pb, &[2, 3], &rb, &sb));
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(stats.evicted_params, 1, "{stats:#?}");
    assert_eq!(stats.params.iter().map(|p| p.id).collect::<Vec<_>>(), [pb.id()]);
    assert_eq!(stats.params_host_bytes, pb.host_bytes());
    assert!(
        stats.budget_peak <= limit + pb.host_bytes(),
        "only the set charged at submission went past"
    );
    assert_eq!(gpu.evicted_sets(), [pa.id()], "A's device copy was evicted too");
    assert_eq!(
        gpu.evictions.load(Ordering::SeqCst),
        0,
        "no other set's device copy went with it"
    );
    // B proved on the "GPU" since: its device copy is counted.
    assert_eq!(stats.params[0].resident_backends, 1);
    assert_eq!(stats.params_device_bytes, pb.device_bytes());
    // The test still holds set A: its eviction freed no host bytes, and says so.
    assert_eq!(stats.evicted_params_host_bytes, 0);

    // One-partition jobs from here: evictions make room without waiting.
    let waits = stats.budget_waits;
    let pc = other_params(10);
    let (pc_id, pc_bytes) = (pc.id(), pc.host_bytes());
    let (rc, sc) = randomness(1, 4);
    let c = Job::from_circuits(pc, vec![TestCircuit::new(4)]).with_randomness(rc, sc);
    // Set C in, set B (idle, held by the test) evicted for it.
    engine.submit(c).wait().unwrap();
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(stats.params.iter().map(|p| p.id).collect::<Vec<_>>(), [pc_id]);
    assert_eq!((stats.evicted_params, stats.evicted_params_host_bytes), (2, 0));
    assert_eq!(
        gpu.evicted_sets(),
        [pa.id(), pb.id()],
        "B's device copy alone this time"
    );
    // Set A again (the test's clone): set C goes, and with it its host copy.
    let (ra, sa) = randomness(1, 5);
    let again = engine
        .submit(Job::from_circuits(pa.clone(), vec![TestCircuit::new(5)]).with_randomness(ra.clone(), sa.clone()));
    assert_eq!(again.wait().unwrap(), reference(&[5], &ra, &sa));
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(stats.params.iter().map(|p| p.id).collect::<Vec<_>>(), [pa.id()]);
    assert_eq!((stats.evicted_params, stats.evicted_params_host_bytes), (3, pc_bytes));
    assert_eq!(stats.budget_waits, waits, "evictions made room without waiting");

    // Between two idle sets, the one only the engine holds goes first (its eviction frees
    // host memory), though the caller's is older. Room for one partition and two sets.
    let engine = Engine::new(EngineConfig {
        witness_path: false,
        ..config(1, one_partition() + 2 * pa.host_bytes() + 1024)
    })
    .unwrap();
    engine.add_parameters(&pb).unwrap();
    let pd = other_params(11);
    let (pd_id, pd_bytes) = (pd.id(), pd.host_bytes());
    engine.prove(Job::from_circuits(pd, vec![TestCircuit::new(6)])).unwrap();
    assert_drained(&engine);
    let ids = |e: &Engine| e.stats().params.iter().map(|p| p.id).collect::<Vec<_>>();
    assert_eq!(ids(&engine), [pb.id(), pd_id], "least recently used first");
    engine
        .prove(Job::from_circuits(pa.clone(), vec![TestCircuit::new(7)]))
        .unwrap();
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(ids(&engine), [pb.id(), pa.id()]);
    assert_eq!((stats.evicted_params, stats.evicted_params_host_bytes), (1, pd_bytes));
}

#[test]
fn unreusable_pool_buffers_are_freed_before_reusable_ones() {
    // Idle: one partition's buffers (four of 128 KiB, reused by the job) and two of 16 KiB
    // that no partition of this size reuses. The budget leaves room for 16 KiB of idle beside
    // the job: largest first would free a reusable buffer (and pin it again); the engine frees
    // one small one — the 16 KiB missing — and keeps the other.
    let small = 16 << 10;
    let engine = Engine::new(config(1, budget(1) + small)).unwrap();
    assert_eq!(engine.prewarm(params_hint(&params()), 1).unwrap(), 1);
    let held: Vec<_> = (0..2).map(|_| engine.pool().checkout(small).unwrap()).collect();
    drop(held);
    let before = engine.pool().stats();
    assert_eq!((before.allocations, before.idle_buffers), (6, 6));
    assert!(before.bytes_idle > 4 * small);

    let (job, r, s) = job_of(vec![TestCircuit::new(1)], 1);
    assert_eq!(engine.prove(job).unwrap(), reference(&[1], &r, &s));
    assert_drained(&engine);
    let stats = engine.stats();
    assert_eq!(stats.evicted_pool_bytes, small, "{stats:#?}");
    assert_eq!(
        stats.pool.allocations, before.allocations,
        "nothing pinned again: {:?}",
        stats.pool
    );
    assert_eq!(stats.pool.reuses - before.reuses, 4);
    assert_eq!(
        (stats.pool.idle_buffers, stats.pool.bytes_idle),
        (5, before.bytes_idle - small)
    );
    assert_eq!((stats.evicted_params, stats.budget_waits), (0, 0));
}

#[test]
fn the_synthesis_reservation_ends_with_the_synthesis() {
    let per = 10_000;
    let synth = cuzk::engine::budget::synthesis_bytes(params_hint(&params()), per);
    assert_eq!(synth, params().domain_size() * per);
    let gpu_gate = Gate::new();
    let backend: Arc<dyn Backend> = Arc::new(GatedBackend { gate: gpu_gate.clone() });
    let engine = Engine::new(EngineConfig {
        synthesis_bytes_per_constraint: per,
        backends: vec![EngineBackend::Custom(backend)],
        ..config(2, 1 << 30)
    })
    .unwrap();
    let host = params().host_bytes();
    let gate = Gate::new();
    let mut good = TestCircuit::new(1);
    good.gate = Some(gate.clone());
    let mut bad = TestCircuit::new(2);
    bad.gate = Some(gate.clone());
    bad.mode = Mode::Fail;
    let (good, r, s) = job_of(vec![good], 1);
    let good = engine.submit(good);
    let bad = engine.submit(job_of(vec![bad], 2).0);
    wait_for(&engine, DEADLINE, "both in synthesis", |s| s.in_synthesis == 2);
    let stats = engine.stats();
    assert_eq!(stats.synthesis_reserved, 2 * synth);
    assert_eq!(stats.budget_used, host + 2 * (one_partition() + synth));

    // Synthesis over: one partition waits for the GPU, the other failed. Neither keeps its
    // synthesis bytes.
    gate.open();
    assert!(matches!(bad.wait(), Err(Error::Synthesis(_))));
    wait_for(&engine, DEADLINE, "on the GPU, alone", |s| {
        s.on_gpu == 1 && s.jobs_active == 1
    });
    let stats = engine.stats();
    assert_eq!(stats.synthesis_reserved, 0);
    assert!(
        stats.budget_used - host - stats.compiled_bytes <= one_partition(),
        "only the synthesized assignment (and the circuit it recorded): {} > {}",
        stats.budget_used - host - stats.compiled_bytes,
        one_partition()
    );
    gpu_gate.open();
    assert_eq!(good.wait().unwrap(), reference(&[1], &r, &s));
    assert_drained(&engine);
}

#[test]
fn parameters_kept_on_every_device_leave_the_host_and_the_budget() {
    let (gpu0, gpu1) = (Arc::new(FakeGpu::default()), Arc::new(FakeGpu::default()));
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(gpu0.clone()), EngineBackend::Custom(gpu1.clone())],
        ..config(1, 1 << 30)
    })
    .unwrap();
    let p = other_params(13);
    engine.add_parameters(&p).unwrap();
    assert_eq!(engine.stats().budget_used, p.host_bytes(), "held with its host copy");
    let kept = engine.keep_parameters_on_device(&p).unwrap();
    assert_eq!((kept.id(), kept.has_host_copy(), kept.host_bytes()), (p.id(), false, 0));
    assert_eq!(kept.query_lengths(), p.query_lengths());
    let stats = engine.stats();
    assert_eq!(
        (stats.params_sets, stats.params_host_bytes, stats.budget_used),
        (1, 0, 0),
        "the engine's own host copy let go: {stats:#?}"
    );
    assert_eq!(stats.params[0].resident_backends, 2, "kept on both devices");
    assert!(gpu0.evicted_sets().is_empty() && gpu1.evicted_sets().is_empty());
    // A set without its host copy cannot be uploaded again.
    let err = engine.keep_parameters_on_device(&kept).unwrap_err().to_string();
    assert!(err.contains("host memory") && err.contains("released"), "{err}");

    // A new set on an engine whose second backend cannot keep it (the CPU): refused, naming
    // that backend; the first backend lets its copy go; nothing is held or charged.
    let mixed = Engine::new(EngineConfig {
        backends: vec![
            EngineBackend::Custom(gpu0.clone()),
            EngineBackend::Choice(BackendChoice::Cpu),
        ],
        ..config(1, 1 << 30)
    })
    .unwrap();
    let q = other_params(14);
    let err = mixed.keep_parameters_on_device(&q).unwrap_err().to_string();
    assert!(
        err.contains("backend 1 (cpu)") && err.contains(&q.id().to_string()),
        "{err}"
    );
    assert_eq!(
        gpu0.evicted_sets(),
        [q.id()],
        "the backend that kept it evicted it again"
    );
    assert!(q.has_host_copy());
    let stats = mixed.stats();
    assert_eq!((stats.params_sets, stats.budget_used), (0, 0), "{stats:#?}");
    // The set as it was proves as before.
    let (r, s) = randomness(1, 5);
    let job = Job::from_circuits(q.clone(), vec![Synthetic::new(K).with_seed(5)]).with_randomness(r.clone(), s.clone());
    assert_eq!(mixed.prove(job).unwrap(), reference_with(&q, &[5], &r, &s));
}

#[test]
fn a_set_without_its_host_copy_costs_no_host_bytes() {
    let gpu = Arc::new(FakeGpu::default());
    let engine = Engine::new(EngineConfig {
        backends: vec![EngineBackend::Custom(gpu.clone())],
        ..config(1, 1 << 30)
    })
    .unwrap();
    let p = other_params(12);
    engine.add_parameters(&p).unwrap();
    let stats = engine.stats();
    assert_eq!(
        (stats.params_host_bytes, stats.budget_used),
        (p.host_bytes(), p.host_bytes())
    );
    assert_eq!(stats.params_device_bytes, p.device_bytes(), "prepared on the \"GPU\"");
    // The same set, uploaded for good and without its host copy: the engine lets its own
    // host copy go and charges nothing for it.
    let released = Prover::new()
        .with_custom_backend(gpu.clone())
        .prepare_device_only(&p)
        .unwrap();
    assert_eq!((released.id(), released.host_bytes()), (p.id(), 0));
    engine.add_parameters(&released).unwrap();
    let stats = engine.stats();
    assert_eq!(
        (stats.params_sets, stats.params_host_bytes, stats.budget_used),
        (1, 0, 0)
    );
    assert_eq!(stats.params_device_bytes, p.device_bytes());
    assert!(engine.remove_parameters(&p), "the same set, by id");
    assert_eq!(engine.stats().params_sets, 0);
}
