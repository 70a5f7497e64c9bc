//! `ProvingAssignment`: the constraint system synthesis fills, with a/b/c in pinned buffers.
//!
//! It records exactly what bellperson's prover records — the evaluations of the A, B and C
//! linear combinations per constraint, the density of A over aux variables and of B over
//! inputs and aux variables (a variable counts once it appears with a non-zero coefficient),
//! and the input and aux assignments — so proofs from it are the bytes bellperson produces.
//!
//! With [`ProvingAssignment::with_recording`] it also records the circuit's A, B, C as it
//! evaluates them (the recorder lives in `crate::r1cs`; the recording is taken after synthesis
//! by [`CompiledCircuit::take_from`](crate::CompiledCircuit::take_from)); without, the
//! recording costs one branch per `enforce`.
//!
//! Rooms: this file is the assignment itself — its vectors and its lifecycle (made on the
//! heap or in a pool, started, finished, failed, released, recording taken); `eval.rs`
//! evaluates a constraint's linear combinations (densities, recording hooks); `synthesis.rs`
//! is its `ConstraintSystem` impl; `raw.rs` builds one from parts computed elsewhere (the C
//! ABI's raw route); [`CapacityHints`] live in `hints.rs`, [`DensityTracker`] in
//! `crate::r1cs`.

use bellpepper_core::ConstraintSystem;
use blstrs::Scalar;
use ff::Field;

use crate::error::{Error, Result};
use crate::pool::{PinnedPool, PinnedVec};
use crate::r1cs::record::{Recorder, Recording};

mod eval;
mod hints;
mod raw;
mod synthesis;

pub use crate::r1cs::DensityTracker;
pub use hints::{CapacityHint, CapacityHints};

/// Elements a/b/c start with when a pinned assignment has no size hint (grows by doubling).
pub const DEFAULT_INITIAL_CONSTRAINTS: usize = 1 << 12;

/// The constraint system a circuit is synthesized into for proving.
///
/// a/b/c are [`PinnedVec`]s: with [`ProvingAssignment::new_with_pinned`] they live in pool
/// buffers from the first write and go back to the pool on [`release_abc`](Self::release_abc)
/// (or drop).
///
/// The `ConstraintSystem` methods never panic or abort on what a circuit does: a variable that
/// was never allocated, a growth the pool cannot serve (cap reached, fallback off), host
/// out-of-memory, a witness-generator method, or a change after synthesis finished. `enforce`
/// cannot return an error, so the first such failure is recorded, every buffer goes back to
/// its pool at once, later calls are ignored (`alloc` returns placeholder variables), and the
/// error comes out at the end of synthesis ([`Prover::synthesize`](crate::Prover::synthesize)).
pub struct ProvingAssignment {
    pub(crate) a_aux_density: DensityTracker,
    pub(crate) b_input_density: DensityTracker,
    pub(crate) b_aux_density: DensityTracker,
    pub(crate) a: PinnedVec<Scalar>,
    pub(crate) b: PinnedVec<Scalar>,
    pub(crate) c: PinnedVec<Scalar>,
    pub(crate) input_assignment: Vec<Scalar>,
    /// In a pool buffer too: every MSM but H uploads it, so it should move at line rate.
    pub(crate) aux_assignment: PinnedVec<Scalar>,
    /// The first failure during synthesis (see the type's docs); sticky (the vectors were
    /// released when it was recorded), reported by every later `finish`.
    error: Option<Error>,
    abc_released: bool,
    finished: bool,
    /// Records A, B, C while synthesis evaluates them ([`ProvingAssignment::with_recording`]).
    recorder: Option<Box<Recorder>>,
}

impl std::fmt::Debug for ProvingAssignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvingAssignment")
            .field("constraints", &self.a.len())
            .field("inputs", &self.input_assignment.len())
            .field("aux", &self.aux_assignment.len())
            .field("pinned", &self.is_pinned())
            .field("abc_released", &self.abc_released)
            .finish()
    }
}

impl Default for ProvingAssignment {
    fn default() -> Self {
        Self::new_heap()
    }
}

impl ProvingAssignment {
    /// An assignment whose a/b/c live on the heap.
    pub fn new_heap() -> Self {
        Self {
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
            a: PinnedVec::new(),
            b: PinnedVec::new(),
            c: PinnedVec::new(),
            input_assignment: Vec::new(),
            aux_assignment: PinnedVec::new(),
            error: None,
            abc_released: false,
            finished: false,
            recorder: None,
        }
    }

    /// The same (empty) assignment, recording the circuit's A, B, C while it evaluates them;
    /// [`CompiledCircuit::take_from`](crate::CompiledCircuit::take_from) takes the result
    /// after synthesis. While a
    /// recording assignment lives, sub-systems made by `ConstraintSystem::new` (for circuits
    /// that synthesize parts and `extend`) record too.
    pub fn with_recording(mut self) -> Self {
        self.recorder = Some(Box::new(Recorder::root()));
        self
    }

    /// Whether the assignment records A, B, C.
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// The recording made during synthesis (`circuit_type` names it in errors); the recorder
    /// is consumed (a second call is an error). Synthesis must have finished.
    ///
    /// # Errors
    /// [`Error::Recording`] when the assignment did not record, has not finished (or failed),
    /// or the recording itself failed (see its message).
    pub(crate) fn take_recording(&mut self, circuit_type: &str) -> Result<Recording> {
        let Some(recorder) = self.recorder.take() else {
            return Err(Error::Recording(format!(
                "{circuit_type}: the assignment was not recording (or its recording was taken)"
            )));
        };
        if !self.finished {
            return Err(Error::Recording(format!(
                "{circuit_type}: synthesis did not finish; nothing to compile"
            )));
        }
        recorder.build(
            circuit_type,
            self.input_assignment.len(),
            self.aux_assignment.len(),
            self.a.len(),
            self.a_aux_density.clone(),
            self.b_input_density.clone(),
            self.b_aux_density.clone(),
        )
    }

    /// An assignment whose a/b/c are written straight into three buffers from `pool`, sized
    /// for `hint` (or [`DEFAULT_INITIAL_CONSTRAINTS`] without one, growing within the pool).
    ///
    /// # Errors
    /// When the pool cannot serve the three buffers (see [`PinnedPool::checkout`]).
    pub fn new_with_pinned(pool: &PinnedPool, hint: Option<CapacityHint>) -> Result<Self> {
        // Never below the unhinted start: a first (unhinted) synthesis leaves buffers of at
        // least that size in the pool, and the next, hinted one must be able to reuse them.
        let sized = |n: Option<usize>| n.unwrap_or(0).max(DEFAULT_INITIAL_CONSTRAINTS);
        let constraints = sized(hint.map(|h| h.constraints));
        let mut this = Self::new_heap();
        this.a = PinnedVec::with_capacity_in(pool, constraints)?;
        this.b = PinnedVec::with_capacity_in(pool, constraints)?;
        this.c = PinnedVec::with_capacity_in(pool, constraints)?;
        this.aux_assignment = PinnedVec::with_capacity_in(pool, sized(hint.map(|h| h.aux)))?;
        if let Some(h) = hint {
            this.input_assignment
                .try_reserve_exact(h.inputs)
                .map_err(|e| crate::pool::heap_error(h.inputs, std::mem::size_of::<Scalar>(), &e))?;
            this.a_aux_density = DensityTracker::with_capacity(h.aux);
            this.b_aux_density = DensityTracker::with_capacity(h.aux);
            this.b_input_density = DensityTracker::with_capacity(h.inputs);
        }
        Ok(this)
    }

    /// Whether a/b/c all live in pinned memory.
    pub fn is_pinned(&self) -> bool {
        self.a.is_pinned() && self.b.is_pinned() && self.c.is_pinned()
    }

    /// Whether the aux assignment lives in pinned memory.
    pub fn is_aux_pinned(&self) -> bool {
        self.aux_assignment.is_pinned()
    }

    /// Hands the a/b/c buffers back to their pool. Idempotent; `Drop` does it too. Proving
    /// needs a/b/c, so a released assignment can no longer be proved. (The aux assignment,
    /// which the MSMs after H still read, goes back when the assignment drops.)
    pub fn release_abc(&mut self) {
        self.a.release();
        self.b.release();
        self.c.release();
        self.abc_released = true;
    }

    /// Whether [`release_abc`](Self::release_abc) has run.
    pub fn is_abc_released(&self) -> bool {
        self.abc_released
    }

    /// Number of constraints recorded (including input constraints once finished).
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// Public inputs, the leading "one" included.
    pub fn input_assignment(&self) -> &[Scalar] {
        &self.input_assignment
    }

    /// Private variables.
    pub fn aux_assignment(&self) -> &[Scalar] {
        self.aux_assignment.as_slice()
    }

    /// Evaluations of A per constraint.
    pub fn a(&self) -> &[Scalar] {
        self.a.as_slice()
    }

    /// Evaluations of B per constraint.
    pub fn b(&self) -> &[Scalar] {
        self.b.as_slice()
    }

    /// Evaluations of C per constraint.
    pub fn c(&self) -> &[Scalar] {
        self.c.as_slice()
    }

    /// Which aux variables appear in some A.
    pub fn a_aux_density(&self) -> &DensityTracker {
        &self.a_aux_density
    }

    /// Which inputs appear in some B.
    pub fn b_input_density(&self) -> &DensityTracker {
        &self.b_input_density
    }

    /// Which aux variables appear in some B.
    pub fn b_aux_density(&self) -> &DensityTracker {
        &self.b_aux_density
    }

    /// Whether synthesis finished (input constraints appended): the assignment is ready to prove.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The sizes to record as the next synthesis's hint.
    pub fn capacity_hint(&self) -> CapacityHint {
        CapacityHint {
            constraints: self.a.len(),
            inputs: self.input_assignment.len(),
            aux: self.aux_assignment.len(),
        }
    }

    /// Prepares an empty assignment for a circuit: allocates the "one" input.
    pub(crate) fn start(&mut self) -> Result<()> {
        self.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        Ok(())
    }

    /// Appends the constraint `input_i * 0 = 0` for each public input (as bellperson does,
    /// making every input dense in A), and reports the first failure seen during synthesis.
    ///
    /// # Errors
    /// [`Error::PoolExhausted`] / [`Error::Allocation`] when a/b/c or the assignments could
    /// not grow (the pool at its cap with fallback off, the backend or the host out of
    /// memory); [`Error::InvalidArgument`] when the circuit referred to a variable it never
    /// allocated or used the constraint system wrongly. Every pool buffer has been returned
    /// by then.
    pub(crate) fn finish(&mut self) -> Result<()> {
        if self.error.is_none() && !self.finished {
            if let Some(r) = &mut self.recorder {
                r.input_constraints(self.input_assignment.len());
            }
            for i in 0..self.input_assignment.len() {
                let x = self.input_assignment[i];
                let pushed = self
                    .a
                    .try_push(x)
                    .and_then(|()| self.b.try_push(Scalar::ZERO))
                    .and_then(|()| self.c.try_push(Scalar::ZERO));
                if let Err(e) = pushed {
                    self.fail(e);
                    break;
                }
            }
        }
        if let Some(e) = &self.error {
            self.finished = false;
            return Err(crate::pool::copy_error(e));
        }
        self.finished = true;
        Ok(())
    }

    /// Records the first failure of synthesis and hands every buffer back at once: the
    /// result is an error whatever the circuit does next, and later calls are ignored.
    fn fail(&mut self, e: Error) {
        if self.error.is_some() {
            log::debug!("synthesis: ignoring a later failure ({e})");
            return;
        }
        log::error!("synthesis failed: {e}; buffers released, the error is reported at the end of synthesis");
        if let Some(r) = &mut self.recorder {
            r.fail(format!("synthesis failed: {e}"));
        }
        self.error = Some(e);
        self.finished = false;
        self.a.release();
        self.b.release();
        self.c.release();
        self.aux_assignment.release();
        self.input_assignment = Vec::new();
        self.a_aux_density = DensityTracker::new();
        self.b_input_density = DensityTracker::new();
        self.b_aux_density = DensityTracker::new();
    }

    /// A change to a finished assignment (its input constraints are already appended) would
    /// make it prove something else: it un-finishes it and fails it.
    fn check_not_finished(&mut self, what: &str) {
        if self.finished {
            self.fail(Error::InvalidArgument(format!(
                "circuit is malformed: {what} after synthesis finished"
            )));
        }
    }

    /// Whether the constraint system ignores calls (after a failure), checking first that
    /// it is still open for `what`.
    fn closed(&mut self, what: &str) -> bool {
        self.check_not_finished(what);
        self.error.is_some()
    }

    fn not_a_witness_generator(&mut self, method: &str) {
        self.fail(Error::InvalidArgument(format!(
            "circuit is malformed: {method} called on a proving assignment, which is not a witness generator"
        )));
    }
}
