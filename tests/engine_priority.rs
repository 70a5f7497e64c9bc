//! Priorities on the engine's GPU queue (CPU backend, small synthetic circuits): partitions
//! of a higher-priority job, synthesized while lower-priority partitions already wait for the
//! GPU, are proved before them (tests/engine.rs checks the same order at dispatch); and an
//! urgent job (`EngineConfig::urgent_priority`, Filecoin's Winning PoSt) submitted while the
//! pacer's in-flight cap is full is synthesized at once and proved right after the partition
//! on the GPU, the GPU waiting for its synthesis rather than starting the next partition. The
//! order is read from the jobs' progress callbacks, never from timings.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::Partition;
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, PacerMode};
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::{Backend, Commitments, Timings};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{
    BackendChoice, CapacityHint, Circuit, ConstraintSystem, Error, HeapAllocator, Parameters, ProvingAssignment,
    SynthesisError,
};
use parking_lot::{Condvar, Mutex};

use common::engine::wait_for;

const K: u32 = 6;
const DEADLINE: Duration = Duration::from_secs(60);

/// The CPU backend, each proof waiting for a ticket.
struct TicketBackend {
    tickets: Mutex<usize>,
    cv: Condvar,
}

impl TicketBackend {
    /// No proof goes through until tickets are given.
    fn closed() -> Arc<Self> {
        Arc::new(TicketBackend {
            tickets: Mutex::new(0),
            cv: Condvar::new(),
        })
    }

    /// Lets `n` more proofs through (`usize::MAX / 2`: all of them).
    fn give(&self, n: usize) {
        *self.tickets.lock() += n;
        self.cv.notify_all();
    }
}

impl Backend for TicketBackend {
    fn name(&self) -> &'static str {
        "ticketed-cpu"
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        let deadline = Instant::now() + DEADLINE;
        let mut tickets = self.tickets.lock();
        while *tickets == 0 {
            if self.cv.wait_until(&mut tickets, deadline).timed_out() {
                return Err(Error::InvalidArgument("no ticket came".into()));
            }
        }
        *tickets -= 1;
        drop(tickets);
        CpuBackend.commitments(a, params, t)
    }
}

/// A synthetic circuit whose synthesis takes at least `delay`.
#[derive(Clone)]
struct Slow {
    inner: Synthetic,
    delay: Duration,
}

impl Circuit<blstrs::Scalar> for Slow {
    fn synthesize<CS: ConstraintSystem<blstrs::Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        std::thread::sleep(self.delay);
        self.inner.synthesize(cs)
    }
}

/// The order partitions are proved in: (job tag, partitions of the job done so far).
type Order = Arc<Mutex<Vec<(&'static str, usize)>>>;

/// Appends each new proof of `handle`'s job to `order` once (the last may come with the final
/// progress call).
fn record(order: &Order, tag: &'static str, handle: &cuzk::engine::JobHandle) {
    let order = order.clone();
    let mut seen = 0;
    handle.on_progress(Box::new(move |p| {
        for done in seen + 1..=p.done {
            order.lock().push((tag, done));
        }
        seen = seen.max(p.done);
    }));
}

#[test]
fn a_higher_priority_job_overtakes_partitions_waiting_for_the_gpu() {
    let params = random_parameters(Synthetic::new(K), 7).expect("parameters");
    let gate = TicketBackend::closed();
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
    let order: Order = Arc::default();
    let submit = |tag: &'static str, seeds: std::ops::Range<u64>, priority: i32| {
        let circuits = seeds.map(|s| Synthetic::new(K).with_seed(s)).collect();
        let handle = engine.submit(Job::from_circuits(params.clone(), circuits).with_priority(priority));
        record(&order, tag, &handle);
        handle
    };

    // One partition on the GPU, held there; three low-priority ones synthesized behind it.
    let first = submit("first", 0..1, 0);
    wait_for(&engine, DEADLINE, "the first partition on the GPU", |s| s.on_gpu == 1);
    let low = submit("low", 10..13, 0);
    wait_for(&engine, DEADLINE, "the low partitions waiting", |s| s.waiting == 3);
    // Then a higher-priority job: its partitions join the queue behind them.
    let high = submit("high", 20..22, 5);
    wait_for(&engine, DEADLINE, "every partition waiting", |s| s.waiting == 5);
    gate.give(usize::MAX / 2);
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

/// A gated engine (`synthesis_workers`, urgent from priority 300) proving a stream of 12
/// partitions at priority 100, recorded in the order as "low": returned once one is on the GPU,
/// the pacer's depth of them waiting and the rest held back (before the first GPU time is
/// known the pacer stops at its target depth), with the stats of that moment.
struct HeldStream {
    params: Parameters,
    gpu: Arc<TicketBackend>,
    engine: Engine,
    order: Order,
    low: cuzk::engine::JobHandle,
    before: cuzk::engine::EngineStats,
}

fn held_stream(synthesis_workers: usize) -> HeldStream {
    let params = random_parameters(Synthetic::new(K), 7).expect("parameters");
    let gpu = TicketBackend::closed();
    let engine = Engine::new(EngineConfig {
        synthesis_workers,
        backends: vec![EngineBackend::Custom(gpu.clone())],
        pool_allocator: Some(Box::new(HeapAllocator)),
        budget_bytes: 1 << 30,
        budget_timeout: DEADLINE,
        urgent_priority: Some(300),
        ..EngineConfig::default()
    })
    .unwrap();
    let order: Order = Arc::default();
    let circuits = (0..12).map(|s| Synthetic::new(K).with_seed(s)).collect();
    let low = engine.submit(Job::from_circuits(params.clone(), circuits).with_priority(100));
    record(&order, "low", &low);
    wait_for(&engine, DEADLINE, "one on the GPU, the rest waiting or held", |s| {
        s.on_gpu == 1 && s.in_synthesis == 0 && s.waiting >= 1
    });
    std::thread::sleep(Duration::from_millis(200));
    let before = engine.stats();
    assert_eq!((before.on_gpu, before.in_synthesis), (1, 0), "{before:#?}");
    assert!(before.pending > 0, "the pacer holds the rest back: {before:#?}");
    HeldStream {
        params,
        gpu,
        engine,
        order,
        low,
        before,
    }
}

/// The promise for Winning PoSt: submitted during a stream whose pacer has as many
/// partitions in flight as it allows and whose one synthesis worker is taken, an urgent job
/// starts on the GPU after at most the partition in progress. Without the urgent path it is
/// dispatched only when the pacer lets it (after GPU starts) and a lower-priority partition
/// synthesized meanwhile takes the GPU first.
#[test]
fn an_urgent_job_is_proved_right_after_the_partition_in_progress() {
    // A stream of 12 partitions: one on the GPU, another waiting, the pacer dispatching no
    // more; its one synthesis worker free.
    let HeldStream {
        params,
        gpu,
        engine,
        order,
        low,
        ..
    } = held_stream(1);
    let watch = |tag: &'static str, handle: &cuzk::engine::JobHandle| record(&order, tag, handle);

    // The urgent job: dispatched at once (past the cap, beside the synthesis worker) ...
    let slow = Slow {
        inner: Synthetic::new(K).with_seed(99),
        delay: Duration::from_millis(300),
    };
    let urgent = engine.submit(Job::from_circuits(params.clone(), vec![slow]).with_priority(300));
    watch("urgent", &urgent);
    wait_for(&engine, DEADLINE, "the urgent partition in synthesis", |s| {
        s.urgent_in_synthesis == 1
    });
    // ... and the GPU, done with the partition in progress while the urgent one is still being
    // synthesized, waits for it instead of starting the next low partition.
    gpu.give(1);
    wait_for(&engine, DEADLINE, "the GPU holding", |s| {
        s.gpu_holds >= 1 || s.urgent_in_synthesis == 0
    });
    gpu.give(usize::MAX / 2);
    urgent.wait().unwrap();
    low.wait().unwrap();

    let order = order.lock().clone();
    assert_eq!(order.len(), 13, "{order:?}");
    assert_eq!(&order[..2], [("low", 1), ("urgent", 1)], "{order:?}");
    let stats = engine.stats();
    assert_eq!(stats.urgent_dispatched, 1);
    assert_eq!(stats.gpu_holds, 1, "the GPU held once, for the urgent synthesis");
    assert_eq!(stats.partitions_done, 13);
}

/// A job of a higher priority, not urgent (a Window PoSt deadline during PoRep), submitted
/// while the pacer holds a lower stream back at its depth: its partitions are dispatched at
/// once, past the pacer's depth made of lower partitions, up to a synthesis worker each, and
/// both are proved right after the partition on the GPU. Through the pacer they would wait for
/// the lower partitions waiting to drain (a GPU proof each) and then come one per proof, each
/// behind a lower one synthesized meanwhile.
#[test]
fn a_higher_priority_job_dispatches_past_a_pacer_full_of_lower_partitions() {
    // A stream of 12: one on the GPU, the pacer's depth of them waiting, the rest held back.
    let HeldStream {
        params,
        gpu,
        engine,
        order,
        low,
        before,
    } = held_stream(2);

    // Two partitions of priority 200 (below the urgent 300): both synthesized and waiting
    // while the GPU is still on its first partition.
    let high_circuits = (20..22).map(|s| Synthetic::new(K).with_seed(s)).collect();
    let high = engine.submit(Job::from_circuits(params.clone(), high_circuits).with_priority(200));
    record(&order, "high", &high);
    wait_for(&engine, DEADLINE, "both high partitions waiting", |s| {
        s.waiting == before.waiting + 2
    });
    let mid = engine.stats();
    assert_eq!(mid.urgent_dispatched, 0, "not the urgent path: {mid:#?}");
    assert_eq!(
        mid.pending, before.pending,
        "no low partition dispatched with them: {mid:#?}"
    );

    gpu.give(usize::MAX / 2);
    high.wait().unwrap();
    low.wait().unwrap();
    let order = order.lock().clone();
    assert_eq!(order.len(), 14, "{order:?}");
    assert_eq!(&order[..3], [("low", 1), ("high", 1), ("high", 2)], "{order:?}");
}

/// The stall: an urgent partition whose synthesis grows past its reservation (here its
/// type's hint is too small, as for a refused witness synthesized in full) waits for pool bytes
/// while the pool's cap is held by ready lower-priority partitions, and the free GPU worker
/// holds for the urgent one instead of proving them. Before, the urgent job waited the whole
/// `budget_timeout` and failed; now the worker sees the pool's checkout waiting, proves the
/// ready work, and the urgent job is proved long before the timeout.
#[test]
fn an_urgent_synthesis_waiting_for_pool_bytes_held_by_ready_work_is_not_stalled() {
    let timeout = Duration::from_secs(8);
    let low_params = random_parameters(Synthetic::new(K), 7).expect("parameters");
    let big = Synthetic::new(13);
    let urgent_params = random_parameters(big.clone(), 8).expect("parameters");
    let budget = urgent_params.host_bytes() + low_params.host_bytes() + (6 << 20);
    let engine = Engine::new(EngineConfig {
        synthesis_workers: 1,
        pacer: PacerMode::BoundedQueue { depth: 64 },
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        budget_bytes: budget,
        budget_timeout: timeout,
        urgent_priority: Some(300),
        witness_path: false,
        ..EngineConfig::default()
    })
    .unwrap();
    // The urgent circuit's hint at its domain says half its constraints: its reservation and
    // first checkouts are about half of what its synthesis takes.
    engine.hints().record(
        std::any::type_name::<Slow>(),
        CapacityHint {
            constraints: (1 << 12) + 1,
            inputs: 1,
            aux: 1,
        },
    );
    let slow = Slow {
        inner: big.with_seed(3),
        delay: Duration::from_millis(800),
    };
    let start = Instant::now();
    let urgent = engine.submit(Job::from_circuits(urgent_params, vec![slow]).with_priority(300));
    wait_for(&engine, DEADLINE, "the urgent partition's first checkouts", |s| {
        s.urgent_in_synthesis == 1 && s.pool.bytes_in_use > 0
    });
    // While it sleeps: the pool's cap filled with lower-priority partitions, synthesized
    // already, short of room for the urgent synthesis' growth.
    let mut low = Vec::new();
    for seed in 0.. {
        let in_use = engine.stats().pool.bytes_in_use;
        if in_use + (1 << 20) > budget {
            break;
        }
        let a = engine.prover().synthesize(Synthetic::new(K).with_seed(seed)).unwrap();
        low.push(Partition::synthesized(a));
    }
    let n = low.len();
    let low = engine.submit(Job::new(low_params, low));
    let stats = engine.stats();
    assert_eq!(stats.urgent_in_synthesis, 1, "the urgent one still sleeps: {stats:#?}");
    let proofs = urgent.wait().expect("the urgent job is proved");
    assert_eq!(proofs.len(), 1);
    let waited = start.elapsed();
    assert!(waited < timeout, "the urgent job waited {waited:?}");
    assert_eq!(low.wait().unwrap().len(), n);
    let stats = engine.stats();
    assert!(stats.gpu_holds_released >= 1, "{stats:#?}");
    assert!(
        stats.pool.waits >= 1,
        "the urgent synthesis waited for the pool: {stats:#?}"
    );
}
