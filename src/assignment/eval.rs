//! A constraint's linear combinations evaluated into the assignment: Σ coeff·value per
//! combination, ±1 coefficients without a product, the density trackers marked for every
//! non-zero term, and each such term handed to the recorder when the assignment records.

use bellpepper_core::LinearCombination;
use blstrs::Scalar;
use ff::Field;

use super::ProvingAssignment;
use crate::error::{Error, Result};
use crate::r1cs::record::{NoTerms, Sinks, Term, TermSink, Which};
use crate::r1cs::DensityTracker;

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
    /// [`enforce_evaluated`](Self::enforce_evaluated) with the recorder's sinks. Kept out of
    /// line so that the path without a recorder compiles as if recording did not exist.
    #[inline(never)]
    pub(super) fn enforce_recorded(
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
    pub(super) fn enforce_evaluated<R: Sinks>(
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

#[cfg(test)]
mod tests {
    use bellpepper_core::{ConstraintSystem, Variable};

    use super::*;
    use crate::rng::SplitMix;

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
