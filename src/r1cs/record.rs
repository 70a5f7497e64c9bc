//! The recorder a [`ProvingAssignment`](crate::ProvingAssignment) carries while it
//! synthesizes a circuit in full: it captures every term of every `enforce` as the assignment
//! evaluates it, so the circuit's A, B, C come out of the same pass.
//!
//! This module sits *below* the assignment (it knows nothing of it): the assignment hands it
//! terms through [`TermSink`], the counts at each `enforce`, the sub-systems it merges, and at
//! the end its sizes and densities; [`Recorder::build`] turns that into a plain
//! [`Recording`], from which [`crate::compiled`] builds a
//! [`CompiledCircuit`](crate::CompiledCircuit).
//!
//! While recording, a column is tagged by kind ([`AUX_TAG`] set for aux variables) because the
//! number of inputs — the offset of aux in the final (inputs, aux) order — is known only at
//! the end; `build` rewrites the columns once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use blstrs::Scalar;

use super::hash::Trace;
use super::matrix::{Matrix, COEFF_MINUS_ONE, COEFF_ONE, CONSTANTS_BASE};
use super::store::Store;
use super::DensityTracker;
use crate::error::{Error, Result};

/// Set in a recorded column for an aux variable (clear: an input).
const AUX_TAG: u32 = 1 << 31;

/// Number of root recordings under way in the process. While any is, sub-systems made by
/// `ConstraintSystem::new` (circuits that synthesize parts in parallel and `extend`) carry a
/// recorder too, so their constraints can be merged.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether some recording is under way (see [`ACTIVE`]).
pub(crate) fn recording_active() -> bool {
    ACTIVE.load(Ordering::Acquire) > 0
}

/// Holds [`ACTIVE`] up for the life of a root recorder.
#[derive(Debug)]
struct ActiveRecording;

impl ActiveRecording {
    fn start() -> Self {
        ACTIVE.fetch_add(1, Ordering::AcqRel);
        ActiveRecording
    }
}

impl Drop for ActiveRecording {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A term's coefficient as the assignment classified it (zero terms are never handed over).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Term<'a> {
    One,
    MinusOne,
    Other(&'a Scalar),
}

/// Where the assignment's evaluation puts the terms it visits. The non-recording path uses
/// [`NoTerms`], which compiles to nothing.
pub(crate) trait TermSink {
    fn input(&mut self, index: usize, coeff: Term<'_>);
    fn aux(&mut self, index: usize, coeff: Term<'_>);
}

/// Drops every term.
pub(crate) struct NoTerms;

impl TermSink for NoTerms {
    #[inline(always)]
    fn input(&mut self, _: usize, _: Term<'_>) {}
    #[inline(always)]
    fn aux(&mut self, _: usize, _: Term<'_>) {}
}

/// A circuit's R1CS as one synthesis recorded it: what a compiled circuit is built from.
#[derive(Debug, Clone)]
pub(crate) struct Recording {
    /// Public inputs, the constant one included.
    pub(crate) num_inputs: usize,
    /// Private (aux) variables.
    pub(crate) num_aux: usize,
    /// The constraints the circuit enforced itself (not the input constraints).
    pub(crate) circuit_constraints: usize,
    /// The sizes at every `enforce` and merge, hashed.
    pub(crate) trace: Trace,
    /// A, B, C over z = (inputs, aux), the input constraints as the last rows.
    pub(crate) matrices: [Matrix; 3],
    /// The distinct coefficients other than ±1.
    pub(crate) constants: Vec<Scalar>,
    /// A over aux, B over inputs, B over aux.
    pub(crate) densities: [DensityTracker; 3],
}

/// Which of A, B, C a row belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which {
    A = 0,
    B = 1,
    C = 2,
}

/// One matrix being recorded.
#[derive(Debug)]
struct Rows {
    starts: Vec<u32>,
    columns: Vec<u32>,
    coefficients: Vec<u32>,
}

impl Default for Rows {
    fn default() -> Self {
        Self {
            starts: vec![0],
            columns: Vec::new(),
            coefficients: Vec::new(),
        }
    }
}

/// `v.push(x)`, or an error instead of an abort when the host is out of memory.
fn try_push(v: &mut Vec<u32>, x: u32) -> std::result::Result<(), String> {
    if v.len() == v.capacity() {
        v.try_reserve(1)
            .map_err(|e| format!("out of host memory growing a matrix past {} terms: {e}", v.len()))?;
    }
    v.push(x);
    Ok(())
}

/// The constraints of one synthesis, as they are enforced.
#[derive(Debug)]
pub(crate) struct Recorder {
    rows: [Rows; 3],
    constants: Vec<Scalar>,
    codes: HashMap<[u64; 4], u32>,
    trace: Trace,
    enforces: usize,
    /// Why the recording cannot be used (the synthesis itself goes on).
    failure: Option<String>,
    _active: Option<ActiveRecording>,
}

impl Recorder {
    /// The recorder of a whole synthesis (while it lives, sub-systems record too).
    pub(crate) fn root() -> Self {
        Self {
            _active: Some(ActiveRecording::start()),
            ..Self::part()
        }
    }

    /// The recorder of a sub-system that will be merged into a root's (`extend`).
    pub(crate) fn part() -> Self {
        Self {
            rows: Default::default(),
            constants: Vec::new(),
            codes: HashMap::new(),
            trace: Trace::default(),
            enforces: 0,
            failure: None,
            _active: None,
        }
    }

    /// Marks the recording unusable; the first reason is kept.
    pub(crate) fn fail(&mut self, why: impl Into<String>) {
        if self.failure.is_none() {
            self.failure = Some(why.into());
        }
    }

    fn code(&mut self, coeff: Term<'_>) -> std::result::Result<u32, String> {
        Ok(match coeff {
            Term::One => COEFF_ONE,
            Term::MinusOne => COEFF_MINUS_ONE,
            Term::Other(c) => {
                let key = blst::blst_fr::from(*c).l;
                if let Some(&k) = self.codes.get(&key) {
                    return Ok(k);
                }
                let k = u32::try_from(self.constants.len())
                    .ok()
                    .and_then(|n| n.checked_add(CONSTANTS_BASE))
                    .ok_or("more than 2^32 distinct coefficients")?;
                self.constants.push(*c);
                self.codes.insert(key, k);
                k
            }
        })
    }

    fn push_term(&mut self, which: Which, column: u32, coeff: Term<'_>) {
        if self.failure.is_some() {
            return;
        }
        let pushed = self.code(coeff).and_then(|code| {
            let rows = &mut self.rows[which as usize];
            try_push(&mut rows.columns, column)?;
            try_push(&mut rows.coefficients, code)
        });
        if let Err(e) = pushed {
            self.fail(e);
        }
    }

    /// Ends the current constraint (its three rows), enforced when `inputs` inputs and `aux`
    /// aux variables exist.
    pub(crate) fn end_constraint(&mut self, inputs: usize, aux: usize) {
        self.trace.enforce(inputs, aux);
        self.enforces += 1;
        self.end_rows();
    }

    fn end_rows(&mut self) {
        if self.failure.is_some() {
            return;
        }
        for which in 0..3 {
            let rows = &mut self.rows[which];
            let ended = u32::try_from(rows.columns.len())
                .map_err(|_| "more than 2^32 - 1 terms in one matrix".to_string())
                .and_then(|n| try_push(&mut rows.starts, n));
            if let Err(e) = ended {
                self.fail(e);
                return;
            }
        }
    }

    /// Merges a sub-system's recording, as the assignment merges the sub-system: its input 0
    /// (its own "one") is ours, its other inputs follow our `inputs`, its aux our `aux`.
    pub(crate) fn merge(&mut self, part: Option<&Recorder>, inputs: usize, aux: usize) {
        let Some(part) = part else {
            self.fail("the circuit merged (extend) a sub-system that was made without a recorder");
            return;
        };
        if let Some(why) = &part.failure {
            self.fail(format!("a merged sub-system's recording failed: {why}"));
            return;
        }
        self.trace.extend(inputs, aux, part.trace, part.enforces);
        self.enforces += part.enforces;
        if self.failure.is_some() {
            return;
        }
        let remap = |c: u32| -> Option<u32> {
            if c & AUX_TAG != 0 {
                let j = (c & !AUX_TAG) as usize + aux;
                u32::try_from(j).ok().filter(|&j| j < AUX_TAG).map(|j| j | AUX_TAG)
            } else if c == 0 {
                Some(0)
            } else {
                u32::try_from(c as usize - 1 + inputs).ok().filter(|&i| i < AUX_TAG)
            }
        };
        let rows = part.rows[0].starts.len() - 1;
        for r in 0..rows {
            for which in [Which::A, Which::B, Which::C] {
                let src = &part.rows[which as usize];
                let (s, e) = (src.starts[r] as usize, src.starts[r + 1] as usize);
                for k in s..e {
                    let Some(col) = remap(src.columns[k]) else {
                        self.fail("more than 2^31 inputs or aux variables");
                        return;
                    };
                    let code = src.coefficients[k];
                    let coeff = match code {
                        COEFF_ONE => Term::One,
                        COEFF_MINUS_ONE => Term::MinusOne,
                        k => Term::Other(&part.constants[(k - CONSTANTS_BASE) as usize]),
                    };
                    self.push_term(which, col, coeff);
                }
            }
            self.end_rows();
        }
    }

    /// Appends the input constraints the prover appends (`input_i · 0 = 0`: A = input i).
    pub(crate) fn input_constraints(&mut self, inputs: usize) {
        for i in 0..inputs {
            match u32::try_from(i).ok().filter(|&i| i < AUX_TAG) {
                Some(col) => self.push_term(Which::A, col, Term::One),
                None => self.fail("more than 2^31 inputs"),
            }
            self.end_rows();
        }
    }

    /// The recording of the finished synthesis, with its sizes and the densities it tracked
    /// (`circuit_type` names it in errors). Consumes the recorder.
    ///
    /// # Errors
    /// [`Error::Recording`] when the recording failed (see the reason), or its rows do not
    /// add up to `constraints`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        self,
        circuit_type: &str,
        inputs: usize,
        aux: usize,
        constraints: usize,
        a_aux_density: DensityTracker,
        b_input_density: DensityTracker,
        b_aux_density: DensityTracker,
    ) -> Result<Recording> {
        use rayon::prelude::*;
        if let Some(why) = self.failure {
            return Err(Error::Recording(format!("{circuit_type}: {why}")));
        }
        let rows = self.rows[0].starts.len() - 1;
        if rows != constraints {
            return Err(Error::Recording(format!(
                "{circuit_type}: recorded {rows} rows, the assignment has {constraints} constraints"
            )));
        }
        if !matches!(inputs.checked_add(aux), Some(n) if n <= u32::MAX as usize) {
            return Err(Error::Recording(format!(
                "{circuit_type}: {inputs} inputs and {aux} aux do not fit 32-bit columns"
            )));
        }
        let offset = inputs as u32;
        let [a, b, c] = self.rows.map(|mut r| {
            r.columns.par_iter_mut().for_each(|col| {
                if *col & AUX_TAG != 0 {
                    *col = (*col & !AUX_TAG) + offset;
                }
            });
            Matrix {
                row_starts: Store::Owned(r.starts),
                columns: Store::Owned(r.columns),
                coefficients: Store::Owned(r.coefficients),
            }
        });
        Ok(Recording {
            num_inputs: inputs,
            num_aux: aux,
            circuit_constraints: self.enforces,
            trace: self.trace,
            matrices: [a, b, c],
            constants: self.constants,
            densities: [a_aux_density, b_input_density, b_aux_density],
        })
    }
}

/// The terms of one matrix's row in the constraint being recorded.
pub(crate) struct MatrixTerms<'a> {
    rec: &'a mut Recorder,
    which: Which,
}

impl TermSink for MatrixTerms<'_> {
    fn input(&mut self, index: usize, coeff: Term<'_>) {
        match u32::try_from(index).ok().filter(|&i| i < AUX_TAG) {
            Some(col) => self.rec.push_term(self.which, col, coeff),
            None => self.rec.fail("more than 2^31 inputs"),
        }
    }

    fn aux(&mut self, index: usize, coeff: Term<'_>) {
        match u32::try_from(index).ok().filter(|&j| j < AUX_TAG) {
            Some(col) => self.rec.push_term(self.which, col | AUX_TAG, coeff),
            None => self.rec.fail("more than 2^31 aux variables"),
        }
    }
}

/// Something that hands out one [`TermSink`] per matrix of a constraint: the recorder, or
/// [`NoTerms`] when nothing is recorded.
pub(crate) trait Sinks {
    type Sink<'a>: TermSink
    where
        Self: 'a;
    fn sink(&mut self, which: Which) -> Self::Sink<'_>;
}

impl Sinks for NoTerms {
    type Sink<'a> = NoTerms;
    #[inline(always)]
    fn sink(&mut self, _: Which) -> NoTerms {
        NoTerms
    }
}

impl Sinks for Recorder {
    type Sink<'a> = MatrixTerms<'a>;
    fn sink(&mut self, which: Which) -> MatrixTerms<'_> {
        MatrixTerms { rec: self, which }
    }
}
