//! `ProvingAssignment`'s `ConstraintSystem` impl: what a circuit calls during synthesis —
//! allocation, `enforce` (evaluated in `eval.rs`), sub-systems and `extend`, and the
//! witness-generator methods it refuses.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

use super::ProvingAssignment;
use crate::r1cs::record::{NoTerms, Recorder};

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        let mut part = Self::new_heap();
        // A sub-system of a circuit being recorded (it will be merged with `extend`).
        if crate::r1cs::record::recording_active() {
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

    crate::r1cs::unnamed_namespaces!();

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
