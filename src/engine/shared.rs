//! [`Shared`], what the engine's threads share: the state behind its lock, the condition
//! variables that wake the dispatcher and the GPU workers, the pool, the provers; and how a
//! job enters the engine, how cancellation and shutdown end work. Every change to the state
//! is a named method of [`State`] (`state.rs`); the loops here, in `dispatch.rs` and in
//! `worker.rs` call them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::budget::{assignment_bytes, requests_bytes};
use super::job::{Canceller, Job, JobHandle, JobShared, Partition, PartitionKind, Randomness};
use super::state::{Deferred, EvaluationSlots, State};
use crate::assignment::CapacityHints;
use crate::compiled::CompiledCircuit;
use crate::error::{panic_message, Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::prover::Prover;

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// Wakes the dispatcher: a submission, a synthesis or proof done, budget released, shutdown.
    pub(super) dispatch_cv: Condvar,
    /// Wakes GPU workers: a partition ready, shutdown.
    pub(super) gpu_cv: Condvar,
    pub(super) start: Instant,
    pub(super) pool: PinnedPool,
    /// Synthesizes (never proves): the pool and the hints every GPU worker's prover shares.
    pub(super) synth_prover: Prover,
    pub(super) hints: CapacityHints,
    pub(super) reuse_factor: f64,
    pub(super) budget_timeout: Duration,
    pub(super) synthesis_workers: usize,
    pub(super) synthesis_per_constraint: usize,
    /// One prover per backend (for preparing and evicting parameters).
    pub(super) backend_provers: Vec<Prover>,
    /// [`EngineConfig::urgent_priority`](super::EngineConfig::urgent_priority).
    pub(super) urgent_priority: Option<i32>,
    /// [`EngineConfig::stream_batch`](super::EngineConfig::stream_batch).
    pub(super) stream_batch: usize,
}

/// Runs `f` on a worker thread, a panic in it becoming [`Error::Panicked`] (`what` failed):
/// the partition fails, the worker goes on.
pub(super) fn unless_panic<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(Error::Panicked(format!("{}: {}", what(), panic_message(&*p)))))
}

/// The bytes of the first partition synthesized already that, with its parameter set's host
/// bytes, is larger than a budget of `limit` — the test a circuit's partition meets at its
/// dispatch; `None` when every one fits.
fn oversized_partition(partitions: &[Partition], params: &Parameters, limit: usize) -> Option<usize> {
    partitions.iter().find_map(|p| match &p.kind {
        PartitionKind::Synthesized(a) => {
            let need = assignment_bytes(a).saturating_add(params.host_bytes());
            (need > limit).then_some(need)
        }
        PartitionKind::Circuit { .. } => None,
    })
}

impl Shared {
    pub(super) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Whether a pool checkout has waited for room since the urgent syntheses in flight began.
    /// Then a GPU worker no longer holds for them: the bytes an urgent synthesis that grew past
    /// its reservation waits for may be held by ready lower-priority partitions, which only a
    /// proof frees (a checkout of another synthesis makes this true too: the hold is then
    /// given up early, never a stall).
    pub(super) fn pool_contended(&self, st: &State) -> bool {
        self.pool.stats().waits > st.urgent_pool_waits
    }

    /// Whether a job of `priority` is urgent.
    pub(super) fn is_urgent(&self, priority: i32) -> bool {
        self.urgent_priority.is_some_and(|u| priority >= u)
    }

    /// The pool checkouts (bytes) proving one witness of `circuit` takes on the engine's
    /// backend that takes the most (a witness partition may go to any GPU worker).
    pub(super) fn witness_proof_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        self.backend_provers
            .iter()
            .map(|p| p.witness_pool_requests(circuit))
            .max_by_key(|r| r.iter().fold(0usize, |a, &b| a.saturating_add(b)))
            .unwrap_or_default()
    }

    /// The evaluation slots `witnesses` witness partitions in flight need for `circuit` (see
    /// [`budget`](super::budget)): one per partition that could be on a GPU at once — at most
    /// one per live GPU worker — each holding the checkouts of one proof on the backend that
    /// takes the most (nothing where every backend evaluates a, b, c on the device). Slots
    /// only grow while the engine has jobs.
    pub(super) fn evaluation_need(&self, st: &State, circuit: &CompiledCircuit, witnesses: usize) -> EvaluationSlots {
        let requests = self.witness_proof_requests(circuit);
        let bytes = requests_bytes(&requests, self.reuse_factor);
        let have = &st.evaluation;
        if bytes == 0 {
            return have.clone();
        }
        let (set_bytes, set_requests) = if bytes > have.set_bytes {
            (bytes, requests)
        } else {
            (have.set_bytes, have.set_requests)
        };
        EvaluationSlots {
            slots: have.slots.max(witnesses.min(st.live_workers.max(1))),
            set_bytes,
            set_requests,
        }
    }

    /// Charges the budget for the compiled circuits the engine's prover holds now (recorded or
    /// loaded by a synthesis), each once: the charge follows the cache's bytes.
    pub(super) fn charge_compiled(&self, st: &mut State) {
        let now = self.synth_prover.compiled_circuits().byte_size();
        if now != st.compiled_charged {
            st.compiled_charged = st.budget.adjust(st.compiled_charged, now);
        }
    }

    pub(super) fn shutdown(&self) {
        let mut deferred = Deferred::default();
        let mut st = self.state.lock();
        st.shutdown = true;
        let now = self.now();
        let ids: Vec<u64> = st.jobs.keys().copied().collect();
        for id in ids {
            st.fail_job(id, Error::Cancelled("the engine shut down".into()), now, &mut deferred);
            // Partitions still in synthesis or on a GPU come back to a job that is gone.
            st.finalize(id, &mut deferred);
        }
        drop(st);
        self.dispatch_cv.notify_all();
        self.gpu_cv.notify_all();
        deferred.run(&self.backend_provers);
    }
}

impl Canceller for Shared {
    fn cancel(&self, id: u64) -> bool {
        let mut deferred = Deferred::default();
        let mut st = self.state.lock();
        let running = st.jobs.get(&id).is_some_and(|j| j.error.is_none());
        if running {
            let now = self.now();
            log::info!("engine: job {id} cancelled");
            st.fail_job(
                id,
                Error::Cancelled(format!("job {id} cancelled by its handle")),
                now,
                &mut deferred,
            );
        }
        drop(st);
        self.dispatch_cv.notify_all();
        deferred.run(&self.backend_provers);
        running
    }

    fn resubmit(self: Arc<Self>, job: crate::engine::Job) -> crate::engine::JobHandle {
        self.submit(job)
    }

    fn retrying(&self, partitions: usize) {
        self.state.lock().note_verification_retries(partitions);
    }

    fn fast_route_wrong(&self, circuit_type: &'static str, params: &Parameters) -> bool {
        let shape = crate::compiled::CircuitShape::of_params(params);
        let dropped = self.synth_prover.compiled_circuits().remove(circuit_type, shape);
        if self.synth_prover.generator_off(circuit_type, shape) {
            log::warn!("engine: the native witness generator of {circuit_type} is off until restart");
        }
        let mut st = self.state.lock();
        self.charge_compiled(&mut st);
        log::warn!(
            "engine: {circuit_type}: a proof by the witness path failed verification where full synthesis' \
             passed{}",
            if dropped { ": its compiled circuit dropped" } else { "" }
        );
        dropped
    }
}

impl Shared {
    /// [`Engine::submit`] (also a handle's resubmission: Filecoin's verification retry).
    pub(super) fn submit(self: &Arc<Self>, job: Job) -> JobHandle {
        let Job {
            params,
            partitions,
            priority,
            randomness,
            label,
        } = job;
        let n = partitions.len();
        let (r, s) = match randomness {
            Randomness::OsRng => crate::prover::draw_randomness(n, &mut rand_core::OsRng),
            Randomness::Given { r, s } => (r, s),
        };
        let mut st = self.state.lock();
        let id = st.next_job_id();
        let shared_job = JobShared::new(id, n);
        let handle = JobHandle {
            shared: shared_job.clone(),
            engine: {
                let weak: Weak<dyn Canceller> = Arc::downgrade(self) as Weak<Shared>;
                weak
            },
        };
        let oversized = oversized_partition(&partitions, &params, st.budget.limit());
        if let Some(e) = st.refusal(n, &r, &s, oversized) {
            drop(st);
            log::info!("engine: job {id} '{label}' refused: {e}");
            shared_job.finish(Err(e), 0);
            return handle;
        }
        let presynthesized = st.add_job(
            id,
            super::state::NewJob {
                shared: shared_job,
                params,
                partitions,
                priority,
                label,
                r,
                s,
            },
        );
        drop(st);
        self.dispatch_cv.notify_all();
        if presynthesized > 0 {
            self.gpu_cv.notify_all();
        }
        handle
    }
}
