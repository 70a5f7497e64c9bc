//! Priorities on the engine's GPU queue (CPU backend, small synthetic circuits): partitions
//! of a higher-priority job, synthesized while lower-priority partitions already wait for the
//! GPU, are proved before them. (tests/engine.rs checks the same order at dispatch.) The order
//! is read from the jobs' progress callbacks, never from timings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::{Engine, EngineBackend, EngineConfig, EngineStats, Job, PacerMode};
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::{Backend, Commitments, Timings};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{Error, HeapAllocator, Parameters, ProvingAssignment};
use parking_lot::{Condvar, Mutex};

const K: u32 = 6;
const DEADLINE: Duration = Duration::from_secs(60);

/// The CPU backend, each proof held until the gate opens.
struct GatedBackend {
    open: Mutex<bool>,
    cv: Condvar,
}

impl GatedBackend {
    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }
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
        let deadline = Instant::now() + DEADLINE;
        let mut open = self.open.lock();
        while !*open {
            if self.cv.wait_until(&mut open, deadline).timed_out() {
                return Err(Error::InvalidArgument("gate never opened".into()));
            }
        }
        drop(open);
        CpuBackend.commitments(a, params, t)
    }
}

fn wait_for(engine: &Engine, what: &str, pred: impl Fn(&EngineStats) -> bool) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let stats = engine.stats();
        if pred(&stats) {
            return;
        }
        assert!(Instant::now() < deadline, "never reached: {what}; {stats:#?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_higher_priority_job_overtakes_partitions_waiting_for_the_gpu() {
    let params = random_parameters(Synthetic::new(K), 7).expect("parameters");
    let gate = Arc::new(GatedBackend {
        open: Mutex::new(false),
        cv: Condvar::new(),
    });
    let engine = Engine::new(EngineConfig {
        synthesis_workers: 1,
        pacer: PacerMode::BoundedQueue { depth: 16 },
        backends: vec![EngineBackend::Custom(gate.clone())],
        pool_allocator: Some(Box::new(HeapAllocator)),
        budget_bytes: 1 << 30,
        budget_timeout: DEADLINE,
        ..EngineConfig::default()
    })
    .unwrap();
    // The order partitions are proved in: (job tag, partitions of the job done so far).
    let order = Arc::new(Mutex::new(Vec::<(&str, usize)>::new()));
    let submit = |tag: &'static str, seeds: std::ops::Range<u64>, priority: i32| {
        let circuits = seeds.map(|s| Synthetic::new(K).with_seed(s)).collect();
        let handle = engine.submit(Job::from_circuits(params.clone(), circuits).with_priority(priority));
        let order = order.clone();
        let mut seen = 0;
        handle.on_progress(Box::new(move |p| {
            // Each new proof once (the last may come with the final call).
            for done in seen + 1..=p.done {
                order.lock().push((tag, done));
            }
            seen = seen.max(p.done);
        }));
        handle
    };

    // One partition on the GPU, held there; three low-priority ones synthesized behind it.
    let first = submit("first", 0..1, 0);
    wait_for(&engine, "the first partition on the GPU", |s| s.on_gpu == 1);
    let low = submit("low", 10..13, 0);
    wait_for(&engine, "the low partitions waiting", |s| s.waiting == 3);
    // Then a higher-priority job: its partitions join the queue behind them.
    let high = submit("high", 20..22, 5);
    wait_for(&engine, "every partition waiting", |s| s.waiting == 5);
    gate.open();
    for h in [first, low, high] {
        h.wait().unwrap();
    }
    assert_eq!(
        *order.lock(),
        [
            ("first", 1),
            ("high", 1),
            ("high", 2),
            ("low", 1),
            ("low", 2),
            ("low", 3)
        ]
    );
}
