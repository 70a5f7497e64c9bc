//! `ProvingAssignment`: the constraint system synthesis fills, with a/b/c in pinned buffers.
//!
//! It records exactly what bellperson's prover records — the evaluations of the A, B and C
//! linear combinations per constraint, the density of A over aux variables and of B over
//! inputs and aux variables (a variable counts once it appears with a non-zero coefficient),
//! and the input and aux assignments — so proofs from it are the bytes bellperson produces.
//!
//! With [`ProvingAssignment::with_recording`] it also records the circuit's A, B, C as it
//! evaluates them (a [`crate::compiled::CompiledCircuit`], taken with
//! [`ProvingAssignment::take_compiled`]); without, the recording costs one branch per
//! `enforce`.
//!
//! Rooms: this file is the assignment itself (its vectors, its `ConstraintSystem`: evaluation,
//! densities, recording hooks, growth and failure); [`DensityTracker`] and [`CapacityHints`]
//! live in `density.rs` and `hints.rs`.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::compiled::record::{NoTerms, Recorder, Sinks, Term, TermSink, Which};
use crate::compiled::CompiledCircuit;
use crate::error::{Error, Result};
use crate::pool::{PinnedPool, PinnedVec};

mod density;
mod hints;

pub use density::DensityTracker;
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

/// A linear combination's coefficient, classified once per term. Circuits are mostly made of
/// ±1 coefficients (bit checks, copies, `lc + one - b`): those cost an addition or subtraction
/// instead of a Montgomery product. Coefficients are part of the circuit, not secret, so the
/// check compares their limbs directly rather than through `subtle`'s constant-time equality,
/// which is slow enough to show in synthesis profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coeff {
    Zero,
    One,
    MinusOne,
    Other,
}

impl Coeff {
    fn of(c: &Scalar) -> Self {
        // Montgomery forms of 1 and −1 (blst's limbs; `From<Scalar> for blst_fr` is a copy).
        static ONE_MINUS_ONE: std::sync::OnceLock<([u64; 4], [u64; 4])> = std::sync::OnceLock::new();
        let (one, minus_one) =
            ONE_MINUS_ONE.get_or_init(|| (blst::blst_fr::from(Scalar::ONE).l, blst::blst_fr::from(-Scalar::ONE).l));
        let l = blst::blst_fr::from(*c).l;
        if l == [0; 4] {
            Coeff::Zero
        } else if l == *one {
            Coeff::One
        } else if l == *minus_one {
            Coeff::MinusOne
        } else {
            Coeff::Other
        }
    }

    /// `acc += coeff · value`, the same field element whichever way it is computed.
    fn add_term(self, acc: &mut Scalar, value: Scalar, coeff: &Scalar) {
        match self {
            Coeff::Zero => {}
            Coeff::One => *acc += value,
            Coeff::MinusOne => *acc -= value,
            Coeff::Other => *acc += value * coeff,
        }
    }

    /// The term as the recorder takes it (never asked for `Zero`, which is skipped).
    #[inline]
    fn term(self, coeff: &Scalar) -> Term<'_> {
        match self {
            Coeff::One => Term::One,
            Coeff::MinusOne => Term::MinusOne,
            Coeff::Zero | Coeff::Other => Term::Other(coeff),
        }
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
    /// [`take_compiled`](Self::take_compiled) hands the result over after synthesis. While a
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

    /// The compiled circuit recorded during synthesis, named `circuit_type`; the recorder is
    /// consumed (a second call is an error). Synthesis must have finished.
    ///
    /// # Errors
    /// [`Error::Recording`] when the assignment did not record, has not finished (or failed),
    /// or the recording itself failed (see its message).
    pub fn take_compiled(&mut self, circuit_type: &str) -> Result<CompiledCircuit> {
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

    /// [`enforce_evaluated`](Self::enforce_evaluated) with the recorder's sinks. Kept out of
    /// line so that the path without a recorder compiles as if recording did not exist.
    #[inline(never)]
    fn enforce_recorded(
        &mut self,
        a: &LinearCombination<Scalar>,
        b: &LinearCombination<Scalar>,
        c: &LinearCombination<Scalar>,
    ) -> Result<()> {
        let Some(mut r) = self.recorder.take() else {
            return self.enforce_evaluated(a, b, c, &mut NoTerms);
        };
        let (inputs, aux) = (self.input_assignment.len(), self.aux_assignment.len());
        let pushed = self.enforce_evaluated(a, b, c, &mut *r);
        r.end_constraint(inputs, aux);
        self.recorder = Some(r);
        pushed
    }

    /// Evaluates one constraint's A, B, C and appends the results, handing every non-zero
    /// term to the recorder's sinks (`NoTerms`: nothing).
    #[inline]
    fn enforce_evaluated<R: Sinks>(
        &mut self,
        a: &LinearCombination<Scalar>,
        b: &LinearCombination<Scalar>,
        c: &LinearCombination<Scalar>,
        sinks: &mut R,
    ) -> Result<()> {
        // Inputs are dense in A by construction (the input constraints), so only aux is
        // tracked there; C has no query of its own.
        let a_res = self.eval(a, None, Some(Tracker::AAux), &mut sinks.sink(Which::A))?;
        let b_res = self.eval(b, Some(Tracker::BInput), Some(Tracker::BAux), &mut sinks.sink(Which::B))?;
        let c_res = self.eval(c, None, None, &mut sinks.sink(Which::C))?;
        self.a.try_push(a_res)?;
        self.b.try_push(b_res)?;
        self.c.try_push(c_res)
    }

    /// Σ coeff·value over `lc`, marking the trackers for every non-zero term and handing
    /// each such term to `sink`.
    #[inline]
    fn eval<S: TermSink>(
        &mut self,
        lc: &LinearCombination<Scalar>,
        track_inputs: Option<Tracker>,
        track_aux: Option<Tracker>,
        sink: &mut S,
    ) -> Result<Scalar> {
        let malformed = |what: &str, i: usize| {
            Error::InvalidArgument(format!("circuit is malformed: {what} variable {i} was never allocated"))
        };
        let mut acc = Scalar::ZERO;
        for (&i, coeff) in lc.iter_inputs() {
            let kind = Coeff::of(coeff);
            if kind == Coeff::Zero {
                continue;
            }
            let value = *self.input_assignment.get(i).ok_or_else(|| malformed("input", i))?;
            kind.add_term(&mut acc, value, coeff);
            sink.input(i, kind.term(coeff));
            if let Some(t) = track_inputs {
                if !self.tracker(t).inc(i) {
                    return Err(malformed("input", i));
                }
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            let kind = Coeff::of(coeff);
            if kind == Coeff::Zero {
                continue;
            }
            let value = *self
                .aux_assignment
                .as_slice()
                .get(i)
                .ok_or_else(|| malformed("aux", i))?;
            kind.add_term(&mut acc, value, coeff);
            sink.aux(i, kind.term(coeff));
            if let Some(t) = track_aux {
                if !self.tracker(t).inc(i) {
                    return Err(malformed("aux", i));
                }
            }
        }
        Ok(acc)
    }

    fn not_a_witness_generator(&mut self, method: &str) {
        self.fail(Error::InvalidArgument(format!(
            "circuit is malformed: {method} called on a proving assignment, which is not a witness generator"
        )));
    }

    fn tracker(&mut self, t: Tracker) -> &mut DensityTracker {
        match t {
            Tracker::AAux => &mut self.a_aux_density,
            Tracker::BInput => &mut self.b_input_density,
            Tracker::BAux => &mut self.b_aux_density,
        }
    }
}

#[derive(Clone, Copy)]
enum Tracker {
    AAux,
    BInput,
    BAux,
}

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        let mut part = Self::new_heap();
        // A sub-system of a circuit being recorded (it will be merged with `extend`).
        if crate::compiled::record::recording_active() {
            part.recorder = Some(Box::new(Recorder::part()));
        }
        part
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.aux_assignment.len();
        if self.closed("alloc") {
            return Ok(Variable::new_unchecked(Index::Aux(index)));
        }
        let value = f()?;
        let pushed = self
            .aux_assignment
            .try_push(value)
            .and_then(|()| self.a_aux_density.try_add_element())
            .and_then(|()| self.b_aux_density.try_add_element());
        if let Err(e) = pushed {
            self.fail(e);
        }
        Ok(Variable::new_unchecked(Index::Aux(index)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.input_assignment.len();
        if self.closed("alloc_input") {
            return Ok(Variable::new_unchecked(Index::Input(index)));
        }
        let value = f()?;
        let pushed = self
            .input_assignment
            .try_reserve(1)
            .map_err(|e| crate::pool::heap_error(1, std::mem::size_of::<Scalar>(), &e))
            .and_then(|()| self.b_input_density.try_add_element());
        match pushed {
            Ok(()) => self.input_assignment.push(value), // room reserved above
            Err(e) => self.fail(e),
        }
        Ok(Variable::new_unchecked(Index::Input(index)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.closed("enforce") {
            return;
        }
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let pushed = if self.recorder.is_some() {
            self.enforce_recorded(&a, &b, &c)
        } else {
            self.enforce_evaluated(&a, &b, &c, &mut NoTerms)
        };
        if let Err(e) = pushed {
            self.fail(e);
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        if self.closed("extend") {
            return;
        }
        if let Some(e) = &other.error {
            self.fail(crate::pool::copy_error(e));
            return;
        }
        if let Some(r) = &mut self.recorder {
            r.merge(
                other.recorder.as_deref(),
                self.input_assignment.len(),
                self.aux_assignment.len(),
            );
        }
        // The other system's first input is its own "one", which coincides with ours.
        let other_inputs = other.input_assignment.get(1..).unwrap_or(&[]);
        let extended = self
            .a_aux_density
            .extend(&other.a_aux_density, false)
            .and_then(|()| self.b_input_density.extend(&other.b_input_density, true))
            .and_then(|()| self.b_aux_density.extend(&other.b_aux_density, false))
            .and_then(|()| self.a.try_extend_from_slice(other.a.as_slice()))
            .and_then(|()| self.b.try_extend_from_slice(other.b.as_slice()))
            .and_then(|()| self.c.try_extend_from_slice(other.c.as_slice()))
            .and_then(|()| {
                self.input_assignment
                    .try_reserve(other_inputs.len())
                    .map_err(|e| crate::pool::heap_error(other_inputs.len(), std::mem::size_of::<Scalar>(), &e))
            })
            .and_then(|()| {
                self.aux_assignment
                    .try_extend_from_slice(other.aux_assignment.as_slice())
            });
        match extended {
            Ok(()) => self.input_assignment.extend_from_slice(other_inputs), // room reserved
            Err(e) => self.fail(e),
        }
    }

    // A proving assignment is not a witness generator: a circuit that calls the
    // witness-generator methods anyway gets an error at the end of synthesis, not the
    // default methods' panic.

    fn extend_inputs(&mut self, _new_inputs: &[Scalar]) {
        self.not_a_witness_generator("extend_inputs");
    }

    fn extend_aux(&mut self, _new_aux: &[Scalar]) {
        self.not_a_witness_generator("extend_aux");
    }

    fn allocate_empty(&mut self, _aux_n: usize, _inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.not_a_witness_generator("allocate_empty");
        (&mut [], &mut [])
    }

    fn allocate_empty_inputs(&mut self, _n: usize) -> &mut [Scalar] {
        self.not_a_witness_generator("allocate_empty_inputs");
        &mut []
    }

    fn allocate_empty_aux(&mut self, _n: usize) -> &mut [Scalar] {
        self.not_a_witness_generator("allocate_empty_aux");
        &mut []
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.input_assignment
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.aux_assignment.as_slice()
    }
}

impl ProvingAssignment {
    /// An assignment computed elsewhere (the C ABI's raw route), in the form synthesis
    /// records it: a/b/c per constraint with the input constraints (`input_i · 0 = 0`, so
    /// A = the input's value, B = C = 0) as the last `input_assignment.len()` rows,
    /// `input_assignment` starting with the constant one, and the three densities (A over
    /// aux, B over inputs, B over aux).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths do not belong together, the first input
    /// is not one, or the trailing input constraints are not as described.
    #[allow(clippy::too_many_arguments)]
    pub fn from_raw_parts(
        a: PinnedVec<Scalar>,
        b: PinnedVec<Scalar>,
        c: PinnedVec<Scalar>,
        input_assignment: Vec<Scalar>,
        aux_assignment: PinnedVec<Scalar>,
        a_aux_density: DensityTracker,
        b_input_density: DensityTracker,
        b_aux_density: DensityTracker,
    ) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        let (n, inputs, aux) = (a.len(), input_assignment.len(), aux_assignment.len());
        if b.len() != n || c.len() != n {
            return bad(format!(
                "a, b, c have {n}, {}, {} rows; expected equal",
                b.len(),
                c.len()
            ));
        }
        if input_assignment.first() != Some(&Scalar::ONE) {
            return bad("the first input must be the constant one".into());
        }
        if n < inputs {
            return bad(format!("{n} rows cannot end with the {inputs} input constraints"));
        }
        if a_aux_density.len() != aux || b_aux_density.len() != aux || b_input_density.len() != inputs {
            return bad(format!(
                "densities cover {} / {} aux and {} inputs; expected {aux} aux and {inputs} inputs",
                a_aux_density.len(),
                b_aux_density.len(),
                b_input_density.len()
            ));
        }
        for (i, value) in input_assignment.iter().enumerate() {
            let row = n - inputs + i;
            if a.as_slice()[row] != *value
                || !bool::from(b.as_slice()[row].is_zero())
                || !bool::from(c.as_slice()[row].is_zero())
            {
                return bad(format!(
                    "row {row} must be input constraint {i} (A = input {i}, B = C = 0); found otherwise"
                ));
            }
        }
        Ok(Self {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a,
            b,
            c,
            input_assignment,
            aux_assignment,
            error: None,
            abc_released: false,
            finished: true,
            recorder: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix;

    #[test]
    fn density_trackers_from_words_check_their_length() {
        let t = DensityTracker::from_words(vec![0b1011, 1 << 5], 70).unwrap();
        assert_eq!((t.len(), t.total_density()), (70, 4));
        assert!(t.is_set(0) && !t.is_set(2) && t.is_set(69));
        assert!(DensityTracker::from_words(vec![0], 70).is_none(), "too few words");
        assert!(
            DensityTracker::from_words(vec![0, 1 << 6], 70).is_none(),
            "bit past the end"
        );
        assert_eq!(DensityTracker::from_words(vec![], 0), Some(DensityTracker::new()));
    }

    /// The ±1 shortcuts give the field element a product would: every coefficient kind, on
    /// inputs and aux, in A, B and C, against Σ coeff·value computed plainly.
    #[test]
    fn coefficients_of_every_kind_evaluate_as_products() {
        let mut rng = SplitMix::new(7);
        let mut cs = ProvingAssignment::new_heap();
        // The "one" input first, as the prover allocates it.
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let inputs: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
        let aux: Vec<Scalar> = (0..5).map(|_| Scalar::random(&mut rng)).collect();
        let iv: Vec<Variable> = inputs
            .iter()
            .map(|v| cs.alloc_input(|| "in", || Ok(*v)).unwrap())
            .collect();
        let av: Vec<Variable> = aux.iter().map(|v| cs.alloc(|| "aux", || Ok(*v)).unwrap()).collect();
        let coeffs = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2u64),
            Scalar::random(&mut rng),
        ];
        let values = [&[Scalar::ONE][..], &inputs].concat();
        let mut vars = vec![ProvingAssignment::one()];
        vars.extend(&iv);
        let lc = |shift: usize| {
            let mut lc = LinearCombination::zero();
            let mut expected = Scalar::ZERO;
            for (k, (&var, value)) in vars.iter().zip(&values).enumerate() {
                let c = coeffs[(k + shift) % coeffs.len()];
                lc = lc + (c, var);
                expected += c * value;
            }
            for (k, (&var, value)) in av.iter().zip(&aux).enumerate() {
                let c = coeffs[(k + shift + 2) % coeffs.len()];
                lc = lc + (c, var);
                expected += c * value;
            }
            (lc, expected)
        };
        let ((la, ea), (lb, eb), (lc_, ec)) = (lc(0), lc(1), lc(3));
        cs.enforce(|| "mixed", |_| la, |_| lb, |_| lc_);
        assert!(cs.error.is_none());
        assert_eq!(cs.a().last(), Some(&ea), "A");
        assert_eq!(cs.b().last(), Some(&eb), "B");
        assert_eq!(cs.c().last(), Some(&ec), "C");
        assert_eq!(Coeff::of(&-Scalar::ONE), Coeff::MinusOne);
        assert_eq!(Coeff::of(&Scalar::from(2u64)), Coeff::Other);
    }
}
