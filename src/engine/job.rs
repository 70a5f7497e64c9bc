//! Jobs: what a caller submits to the [`Engine`](super::Engine), and the handle it gets back.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use parking_lot::{Condvar, Mutex};
use rand_core::RngCore;

use crate::assignment::ProvingAssignment;
use crate::error::{panic_message, Error, Result};
use crate::params::Parameters;
use crate::proof::Proof;
use crate::prover::{Generator, Prover, Synthesis};

/// Synthesizes one circuit with a prover, sized for the parameters, by the witness path's
/// policy (an assignment, or a witness of a compiled circuit).
pub(crate) type SynthesizeFn = Box<dyn FnOnce(&Prover, &Parameters) -> Result<Synthesis> + Send>;

/// What a partition starts as.
pub(crate) enum PartitionKind {
    /// A circuit to synthesize; `circuit_type` keys its capacity hint.
    Circuit {
        circuit_type: &'static str,
        synthesize: SynthesizeFn,
    },
    /// An assignment synthesized already (e.g. with [`Engine::prover`](super::Engine::prover),
    /// into the engine's pool): it goes straight to the GPU queue.
    Synthesized(Box<ProvingAssignment>),
}

/// One partition of a [`Job`]: a circuit, or an assignment synthesized already.
pub struct Partition {
    pub(crate) kind: PartitionKind,
}

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            PartitionKind::Circuit { circuit_type, .. } => {
                f.debug_tuple("Partition::Circuit").field(circuit_type).finish()
            }
            PartitionKind::Synthesized(a) => f.debug_tuple("Partition::Synthesized").field(a).finish(),
        }
    }
}

impl Partition {
    /// A circuit, synthesized by one of the engine's synthesis workers when dispatched: by the
    /// witness path's policy (see [`Prover::prove_with_randomness`]) when the engine's
    /// [`witness_path`](super::EngineConfig::witness_path) is on — witness-only once its type
    /// and shape has a compiled circuit, the first of a type and shape recording it — else in
    /// full.
    pub fn circuit<C: Circuit<Scalar> + Send + 'static>(circuit: C) -> Self {
        Self {
            kind: PartitionKind::Circuit {
                circuit_type: std::any::type_name::<C>(),
                synthesize: Box::new(move |prover: &Prover, params: &Parameters| {
                    prover.synthesize_planned(circuit, params)
                }),
            },
        }
    }

    /// A circuit with a native witness generator: as [`Partition::circuit`], but its witness
    /// is written by `generate` instead of the circuit's gadgets once the generator is
    /// validated for the compiled circuit of the type and shape (the witness path's generated
    /// route; needs the engine's [`witness_path`](super::EngineConfig::witness_path) and
    /// [`native_witness`](super::EngineConfig::native_witness)).
    ///
    /// `generate(cs, threads)` writes the circuit's public inputs (after the "one", which `cs`
    /// holds already) and its aux values, in the circuit's allocation order, into `cs`, on at
    /// most `threads` threads of the current rayon pool — what
    /// [`WitnessCs`](crate::WitnessCs) would hold after synthesizing the circuit (e.g.
    /// `cuzk::filecoin::native::porep::stacked_witness_parallel` for a PoRep C2 partition).
    /// The first partition of a compiled circuit checks it: the witness computed both ways
    /// and compared value for value; a generator whose witness differs (or that fails) is not
    /// used for that compiled circuit again, and no partition's proof depends on it
    /// ([`WitnessStats`](crate::WitnessStats) counts `generated`, `generator_validated`,
    /// `generator_refused`).
    ///
    /// A validation holds for the process (cuzk's own generators' are also kept across
    /// restarts beside the compiled circuits' files, tied to the generators' digest (their sources and the mirrored crates' versions): `compiled_dir`).
    ///
    /// **The engine does not verify the proofs** (the Filecoin entry points do, and prove a
    /// failed one again by full synthesis): a generator that validates and later writes a
    /// wrong witness for some input gives a proof that does not verify. A caller that brings
    /// its own generator verifies each proof ([`verify_proof`](crate::verify_proof)) and, on a
    /// failure, proves that partition again as [`Partition::circuit`] (and may stop using the
    /// generator).
    pub fn with_generator<C, G>(circuit: C, generate: G) -> Self
    where
        C: Circuit<Scalar> + Clone + Send + 'static,
        G: Fn(&mut crate::WitnessCs, usize) -> Result<()> + Send + 'static,
    {
        Self::generated(circuit, generate, false)
    }

    /// As [`with_generator`](Self::with_generator) for one of cuzk's own generators (the
    /// Filecoin families'), whose validation is kept across restarts with the same generators.
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn with_own_generator<C, G>(circuit: C, generate: G) -> Self
    where
        C: Circuit<Scalar> + Clone + Send + 'static,
        G: Fn(&mut crate::WitnessCs, usize) -> Result<()> + Send + 'static,
    {
        Self::generated(circuit, generate, true)
    }

    fn generated<C, G>(circuit: C, generate: G, own: bool) -> Self
    where
        C: Circuit<Scalar> + Clone + Send + 'static,
        G: Fn(&mut crate::WitnessCs, usize) -> Result<()> + Send + 'static,
    {
        let generator = Generator {
            generate: Box::new(generate),
            own,
        };
        Self {
            kind: PartitionKind::Circuit {
                circuit_type: std::any::type_name::<C>(),
                synthesize: Box::new(move |prover: &Prover, params: &Parameters| {
                    prover.synthesize_generated(circuit, generator, params)
                }),
            },
        }
    }

    /// A circuit always synthesized in full, whatever the witness path (a retry after a proof
    /// failed verification).
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn circuit_in_full<C: Circuit<Scalar> + Send + 'static>(circuit: C) -> Self {
        Self {
            kind: PartitionKind::Circuit {
                circuit_type: std::any::type_name::<C>(),
                synthesize: Box::new(move |prover: &Prover, params: &Parameters| {
                    let a = prover.synthesize_for(circuit, params)?;
                    Ok(Synthesis::Full(Box::new(a)))
                }),
            },
        }
    }

    /// An assignment synthesized already (by [`Prover::synthesize`], best into the engine's
    /// pool through [`Engine::prover`](super::Engine::prover)). Its bytes are charged to the
    /// budget when the job is submitted: past the room left if need be (they exist already;
    /// new dispatches then wait, and `budget_peak` shows the excess), but a partition that
    /// with its parameters' host bytes is larger than the whole budget fails the job with
    /// [`Error::BudgetExhausted`], as a circuit's would.
    pub fn synthesized(assignment: ProvingAssignment) -> Self {
        Self {
            kind: PartitionKind::Synthesized(Box::new(assignment)),
        }
    }
}

/// The randomisers of a job's proofs.
#[derive(Debug, Clone)]
pub(crate) enum Randomness {
    /// Drawn from the operating system's generator at submission (all r, then all s).
    OsRng,
    /// Given per partition.
    Given { r: Vec<Scalar>, s: Vec<Scalar> },
}

/// A batch of partitions proved with one parameter set: the unit the engine schedules.
///
/// Proofs come back in partition order. Partitions are dispatched by priority (higher first;
/// among equal priorities, the job submitted first), in partition order within a job.
pub struct Job {
    pub(crate) params: Parameters,
    pub(crate) partitions: Vec<Partition>,
    pub(crate) priority: i32,
    pub(crate) randomness: Randomness,
    pub(crate) label: String,
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job")
            .field("label", &self.label)
            .field("params", &self.params.id())
            .field("partitions", &self.partitions.len())
            .field("priority", &self.priority)
            .finish()
    }
}

impl Job {
    /// A job of `partitions` proved with `params` (a cheap clone shares the parameters),
    /// priority 0, r and s from the operating system's generator.
    pub fn new(params: Parameters, partitions: Vec<Partition>) -> Self {
        Self {
            params,
            partitions,
            priority: 0,
            randomness: Randomness::OsRng,
            label: String::new(),
        }
    }

    /// A job of circuits (see [`Job::new`]).
    pub fn from_circuits<C: Circuit<Scalar> + Send + 'static>(params: Parameters, circuits: Vec<C>) -> Self {
        Self::new(params, circuits.into_iter().map(Partition::circuit).collect())
    }

    /// Priority: higher goes first, both to synthesis and to the GPU. Default 0.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// A name for logs and statistics.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// r and s given per partition (one of each per partition, checked at submission): with
    /// the same r and s a proof is the bytes [`Prover::prove_with_randomness`] gives.
    pub fn with_randomness(mut self, r: Vec<Scalar>, s: Vec<Scalar>) -> Self {
        self.randomness = Randomness::Given { r, s };
        self
    }

    /// r and s drawn now from `rng`, all the r first, then all the s (as [`Prover::prove`]
    /// and bellperson draw them).
    pub fn with_rng<R: RngCore>(mut self, rng: &mut R) -> Self {
        let (r, s) = crate::prover::draw_randomness(self.partitions.len(), rng);
        self.randomness = Randomness::Given { r, s };
        self
    }

    /// The number of partitions.
    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// Whether the job has no partition (such a job fails at submission).
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }
}

/// How far a job has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Partitions proved.
    pub done: usize,
    /// Partitions that left the engine unproved: failed, or dropped because their job failed
    /// or was cancelled. When the job is over, `done + failed == total`.
    pub failed: usize,
    /// Partitions in the job.
    pub total: usize,
    /// Whether the job is over (all proved, failed or cancelled).
    pub finished: bool,
}

/// A job's outcome slot, shared by the engine and the handle.
pub(crate) struct JobShared {
    pub(crate) id: u64,
    pub(crate) total: usize,
    pub(crate) state: Mutex<JobOutcome>,
    pub(crate) finished: Condvar,
}

pub(crate) struct JobOutcome {
    pub(crate) done: usize,
    pub(crate) failed: usize,
    pub(crate) over: bool,
    pub(crate) result: Option<Result<Vec<Proof>>>,
    pub(crate) callback: Option<ProgressCallback>,
}

/// A function called with the job's progress after each partition's proof, after each
/// partition that fails, and once at the end (on an engine thread: keep it short).
pub type ProgressCallback = Box<dyn FnMut(Progress) + Send>;

impl JobShared {
    pub(crate) fn new(id: u64, total: usize) -> Arc<Self> {
        Arc::new(Self {
            id,
            total,
            state: Mutex::new(JobOutcome {
                done: 0,
                failed: 0,
                over: false,
                result: None,
                callback: None,
            }),
            finished: Condvar::new(),
        })
    }

    /// Reports `done` partitions proved and `failed` unproved (counted by the engine under its
    /// lock, so the counts are exact when the job finishes; a report that arrives after the
    /// end, or that tells nothing new, is dropped).
    pub(crate) fn note_done(&self, done: usize, failed: usize) {
        let mut st = self.state.lock();
        if st.over || done < st.done || (done == st.done && failed <= st.failed) {
            return;
        }
        st.done = done;
        st.failed = st.failed.max(failed);
        let progress = Progress {
            done,
            failed: st.failed,
            total: self.total,
            finished: false,
        };
        self.call_back(&mut st, progress);
    }

    /// Calls the job's progress callback, if any, with `progress`. A panic in it is caught
    /// (these are engine threads: a synthesis pool, a GPU worker, the dispatcher), logged once
    /// and the callback dropped: it is never called again, and the job goes on.
    fn call_back(&self, st: &mut JobOutcome, progress: Progress) {
        let Some(cb) = st.callback.as_mut() else {
            return;
        };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| cb(progress))) {
            log::error!(
                "engine: job {}: its progress callback panicked ({}); it is dropped, the job goes on",
                self.id,
                panic_message(&*payload)
            );
            let gone = st.callback.take();
            // Its own drop may panic too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(gone)));
        }
    }

    /// Ends the job with `result`, `done` partitions proved (the others left unproved).
    pub(crate) fn finish(&self, result: Result<Vec<Proof>>, done: usize) {
        let mut st = self.state.lock();
        if st.over {
            return;
        }
        st.over = true;
        st.done = st.done.max(done);
        st.failed = self.total - st.done;
        st.result = Some(result);
        let progress = Progress {
            done: st.done,
            failed: st.failed,
            total: self.total,
            finished: true,
        };
        self.call_back(&mut st, progress);
        drop(st);
        self.finished.notify_all();
    }
}

/// What a handle needs from the engine: to cancel its job, and (Filecoin's retry of a proof
/// that failed verification) to submit again and forget a compiled circuit.
pub(crate) trait Canceller: Send + Sync {
    fn cancel(&self, id: u64) -> bool;
    /// [`Engine::submit`](super::Engine::submit) on the same engine.
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    fn resubmit(self: Arc<Self>, job: Job) -> JobHandle;
    /// `partitions` of a job failed verification and are proved again by full synthesis:
    /// counted ([`EngineStats::verification_retries`](super::EngineStats)).
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    fn retrying(&self, partitions: usize);
    /// A partition of `circuit_type` proved with `params` failed verification and its full
    /// synthesis' proof passed: the fast route was wrong. Its compiled circuit at that shape
    /// is dropped (from memory and its file) and the native witness generator of that type and
    /// shape turned off until restart. Returns whether there was a compiled circuit.
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    fn fast_route_wrong(&self, circuit_type: &'static str, params: &Parameters) -> bool;
}

/// The handle [`Engine::submit`](super::Engine::submit) returns: wait for the proofs, watch
/// the progress, cancel.
pub struct JobHandle {
    pub(crate) shared: Arc<JobShared>,
    pub(crate) engine: Weak<dyn Canceller>,
}

impl fmt::Debug for JobHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobHandle")
            .field("id", &self.shared.id)
            .field("progress", &self.progress())
            .finish()
    }
}

impl JobHandle {
    /// The job's id (unique within the engine, increasing with submission order).
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Blocks until the job is over; returns its proofs in partition order, or why it failed.
    /// When it returns, every buffer of the job is back in the pool and its budget released
    /// (except after the engine shut down mid-synthesis: then as each synthesis ends).
    ///
    /// # Errors
    /// The first failure of one of its partitions (synthesis, shape, backend), an invalid job
    /// (empty, r/s of the wrong length), [`Error::BudgetExhausted`], [`Error::Cancelled`]
    /// (cancelled or the engine shut down), [`Error::Panicked`].
    pub fn wait(self) -> Result<Vec<Proof>> {
        self.take_result()
    }

    /// [`wait`](Self::wait) without giving the handle up, so that another thread can still
    /// cancel the job or read its progress while this one blocks (the C ABI's
    /// `cuzk_job_wait`). The result can be taken once; a second call says so.
    pub(crate) fn take_result(&self) -> Result<Vec<Proof>> {
        let mut st = self.shared.state.lock();
        while !st.over {
            self.shared.finished.wait(&mut st);
        }
        st.result
            .take()
            .unwrap_or_else(|| Err(Error::InvalidArgument("job result taken twice".into())))
    }

    /// Whether the job is over (`wait` will not block).
    pub fn is_finished(&self) -> bool {
        self.shared.state.lock().over
    }

    /// Partitions proved so far, of how many.
    pub fn progress(&self) -> Progress {
        let st = self.shared.state.lock();
        Progress {
            done: st.done,
            failed: st.failed,
            total: self.shared.total,
            finished: st.over,
        }
    }

    /// Calls `callback` after each partition's proof or failure and once at the end, with
    /// `finished` set (on an engine thread, under the job's lock: it must not call back into
    /// this handle, and it should not block, since the engine thread waits for it). If the
    /// job is already over it is called once, now, on this thread. A second call replaces the
    /// callback; once it returns, the old one is never called again.
    ///
    /// A callback that panics is caught wherever it is called (also here), logged once with
    /// the job's id and dropped — never called again; the job and the engine go on.
    pub fn on_progress(&self, callback: ProgressCallback) {
        let mut st = self.shared.state.lock();
        st.callback = Some(callback);
        if st.over {
            let progress = Progress {
                done: st.done,
                failed: st.failed,
                total: self.shared.total,
                finished: true,
            };
            self.shared.call_back(&mut st, progress);
            let done_with = st.callback.take();
            drop(st);
            drop(done_with);
        }
    }

    /// The engine the job runs on, while it lives.
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn engine_link(&self) -> Option<Arc<dyn Canceller>> {
        self.engine.upgrade()
    }

    /// Cancels the job: its partitions not yet on a GPU (not dispatched, in synthesis, or
    /// waiting for a GPU) are dropped and their buffers and budget freed; those on a GPU
    /// finish and are discarded. [`wait`](Self::wait) then returns [`Error::Cancelled`].
    /// Returns whether the job was still running (false: already over, or engine gone).
    pub fn cancel(&self) -> bool {
        match self.engine.upgrade() {
            Some(engine) => engine.cancel(self.shared.id),
            None => false,
        }
    }
}
