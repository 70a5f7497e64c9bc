//! A progress callback that panics (`JobHandle::on_progress`) is caught wherever the engine
//! calls it — on a synthesis thread, a GPU worker, the dispatcher, the caller's own thread —
//! and dropped: called once, never again; the job goes on and later jobs are proved. Before,
//! the panic aborted the process (synthesis), killed the GPU worker (its job and every later
//! one hung) or the dispatcher (nothing was dispatched again).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, JobHandle, PacerMode};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, Circuit, ConstraintSystem, Error, HeapAllocator, Parameters, Proof, SynthesisError};

use common::engine::wait_for;

const K: u32 = 6;
const DEADLINE: Duration = Duration::from_secs(60);

/// A synthetic circuit whose synthesis waits `delay` first, then fails if `fail`.
#[derive(Clone)]
struct Test {
    inner: Synthetic,
    delay: Duration,
    fail: bool,
}

impl Test {
    fn new(seed: u64) -> Self {
        Self {
            inner: Synthetic::new(K).with_seed(seed),
            delay: Duration::ZERO,
            fail: false,
        }
    }

    fn slow(mut self, ms: u64) -> Self {
        self.delay = Duration::from_millis(ms);
        self
    }

    fn failing(mut self) -> Self {
        self.fail = true;
        self
    }
}

impl Circuit<blstrs::Scalar> for Test {
    fn synthesize<CS: ConstraintSystem<blstrs::Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        std::thread::sleep(self.delay);
        if self.fail {
            return Err(SynthesisError::AssignmentMissing);
        }
        self.inner.synthesize(cs)
    }
}

fn engine(synthesis_workers: usize, budget_bytes: usize) -> Engine {
    Engine::new(EngineConfig {
        synthesis_workers,
        pacer: PacerMode::BoundedQueue { depth: 16 },
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        budget_bytes,
        budget_timeout: DEADLINE,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// Registers a callback that counts its calls and panics at each.
fn panicking(handle: &JobHandle) -> Arc<AtomicUsize> {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    handle.on_progress(Box::new(move |p| {
        c.fetch_add(1, Ordering::SeqCst);
        panic!("a caller's callback panics at {p:?}");
    }));
    calls
}

/// `handle.wait()`, failing the test (instead of hanging it) when the job is not over in time.
fn wait_within(handle: JobHandle) -> cuzk::Result<Vec<Proof>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(handle.wait());
    });
    rx.recv_timeout(DEADLINE)
        .expect("the job is over in time (no engine thread died)")
}

fn params() -> Parameters {
    random_parameters(Synthetic::new(K), 7).expect("parameters")
}

/// A later job on the same engine is proved.
fn still_proves(engine: &Engine, params: &Parameters) {
    let circuits = (0..2).map(|s| Test::new(100 + s)).collect();
    let proofs = wait_within(engine.submit(Job::from_circuits(params.clone(), circuits))).unwrap();
    assert_eq!(proofs.len(), 2);
}

#[test]
fn a_panicking_callback_on_a_synthesis_thread_is_dropped_and_the_engine_goes_on() {
    let params = params();
    let engine = engine(1, 1 << 30);
    // Its only partition fails in synthesis: the progress (1 failed) and the end are reported
    // from the synthesis thread.
    let handle = engine.submit(Job::from_circuits(
        params.clone(),
        vec![Test::new(0).slow(300).failing()],
    ));
    let calls = panicking(&handle);
    let err = wait_within(handle).unwrap_err();
    assert!(matches!(err, Error::Synthesis(_)), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "called once, then dropped");
    still_proves(&engine, &params);
    // On the caller's thread, for a job over already: caught there too.
    let over = engine.submit(Job::from_circuits(params.clone(), vec![Test::new(1)]));
    while !over.is_finished() {
        std::thread::sleep(Duration::from_millis(2));
    }
    let calls = panicking(&over);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(over.wait().unwrap().len(), 1);
}

#[test]
fn a_panicking_callback_on_a_gpu_worker_is_dropped_and_the_job_goes_on() {
    let params = params();
    let engine = engine(1, 1 << 30);
    // The first partition is slow to synthesize, so the callback is in place before any proof.
    let circuits = vec![Test::new(0).slow(300), Test::new(1), Test::new(2)];
    let handle = engine.submit(Job::from_circuits(params.clone(), circuits));
    let calls = panicking(&handle);
    assert_eq!(wait_within(handle).unwrap().len(), 3, "the job goes on");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "called once, then dropped");
    still_proves(&engine, &params);
    let stats = engine.stats();
    assert_eq!(stats.partitions_done, 5);
    assert_eq!((stats.jobs_done, stats.on_gpu, stats.in_synthesis), (2, 0, 0));
    assert!(stats.workers.iter().all(|w| !w.lost), "{stats:#?}");
}

#[test]
fn a_panicking_callback_on_the_dispatcher_is_dropped_and_dispatching_goes_on() {
    let params = params();
    let big = random_parameters(Synthetic::new(12), 8).expect("parameters");
    // Room for a partition of the small circuit, not for the large one's parameters.
    let budget = 2 << 20;
    assert!(big.host_bytes() > budget, "{}", big.host_bytes());
    let engine = engine(1, budget);
    // The synthesis worker is taken while the large job's callback is put in place; then the
    // dispatcher refuses that job (larger than the whole budget) and reports its end.
    let first = engine.submit(Job::from_circuits(params.clone(), vec![Test::new(0).slow(300)]));
    wait_for(&engine, DEADLINE, "the first in synthesis", |s| s.in_synthesis == 1);
    let large = engine.submit(Job::from_circuits(big, vec![Synthetic::new(12)]));
    let calls = panicking(&large);
    let err = wait_within(large).unwrap_err();
    assert!(matches!(err, Error::BudgetExhausted { .. }), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "called once, then dropped");
    assert_eq!(wait_within(first).unwrap().len(), 1);
    still_proves(&engine, &params);
}
