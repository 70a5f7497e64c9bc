//! What a circuit (or a caller holding an assignment) controls never panics the prover: misuse
//! of the constraint system is an error at the end of synthesis or at `prove`; shapes that do
//! not match the parameters are errors in the CPU backend too, even called directly.

use bellpepper_core::{Index, LinearCombination, Variable};
use blstrs::Scalar;
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::Backend;
use cuzk::{Circuit, ConstraintSystem, DensityTracker, Error, PinnedPool, PoolConfig, Prover, SynthesisError, Timings};
use ff::Field;

/// `inputs` public inputs and `aux` private variables, one constraint `x · 1 = x` per aux.
#[derive(Clone, Copy)]
struct Toy {
    inputs: usize,
    aux: usize,
}

impl Circuit<Scalar> for Toy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for i in 0..self.inputs {
            cs.alloc_input(|| format!("in {i}"), || Ok(Scalar::from(i as u64 + 2)))?;
        }
        for i in 0..self.aux {
            let x = cs.alloc(|| format!("x {i}"), || Ok(Scalar::from(i as u64 + 7)))?;
            cs.enforce(|| format!("x {i}"), |lc| lc + x, |lc| lc + CS::one(), |lc| lc + x);
        }
        Ok(())
    }
}

/// One wrong thing a circuit can do.
#[derive(Clone, Copy, Debug)]
enum Misuse {
    GhostInputInB,
    GhostAuxInC,
    /// Not wrong: a zero coefficient on a variable that does not exist contributes nothing.
    ZeroCoefficientGhost,
    ExtendAux,
    ExtendInputs,
    AllocateEmpty,
    AllocateEmptyAux,
    AllocateEmptyInputs,
    ExtendWithFailed,
}

/// A correct part, then the misuse.
struct Misusing(Misuse);

impl Circuit<Scalar> for Misusing {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        Toy { inputs: 1, aux: 3 }.synthesize(cs)?;
        let ghost_input = Variable::new_unchecked(Index::Input(9));
        let ghost_aux = Variable::new_unchecked(Index::Aux(usize::MAX));
        match self.0 {
            Misuse::GhostInputInB => cs.enforce(|| "ghost", |lc| lc, |lc| lc + ghost_input, |lc| lc),
            Misuse::GhostAuxInC => cs.enforce(|| "ghost", |lc| lc, |lc| lc, |lc| lc + ghost_aux),
            Misuse::ZeroCoefficientGhost => cs.enforce(
                || "zero",
                |_| LinearCombination::zero() + (Scalar::ZERO, ghost_aux),
                |lc| lc,
                |lc| lc,
            ),
            // bellpepper's default implementations of these panic on a non-witness-generator.
            Misuse::ExtendAux => cs.extend_aux(&[Scalar::ONE]),
            Misuse::ExtendInputs => cs.extend_inputs(&[Scalar::ONE]),
            Misuse::AllocateEmpty => {
                let (aux, inputs) = cs.allocate_empty(2, 2);
                assert!(aux.is_empty() && inputs.is_empty());
            }
            Misuse::AllocateEmptyAux => assert!(cs.allocate_empty_aux(3).is_empty()),
            Misuse::AllocateEmptyInputs => assert!(cs.allocate_empty_inputs(3).is_empty()),
            Misuse::ExtendWithFailed => {
                let mut part = CS::new();
                let ghost = Variable::new_unchecked(Index::Aux(5));
                part.enforce(|| "ghost", |lc| lc + ghost, |lc| lc, |lc| lc);
                cs.extend(&part);
            }
        }
        Ok(())
    }
}

fn synthesize(misuse: Misuse) -> cuzk::Result<cuzk::ProvingAssignment> {
    let pool = PinnedPool::heap(PoolConfig::default());
    let result = Prover::new().with_pool(pool.clone()).synthesize(Misusing(misuse));
    if result.is_err() {
        assert_eq!(pool.stats().bytes_in_use, 0, "every buffer is back after {misuse:?}");
    }
    result
}

#[test]
fn unknown_variables_in_any_linear_combination_are_errors() {
    let err = synthesize(Misuse::GhostInputInB).unwrap_err();
    assert!(err.to_string().contains("input variable 9"), "{err}");
    let err = synthesize(Misuse::GhostAuxInC).unwrap_err();
    assert!(err.to_string().contains("aux variable"), "{err}");
    let err = synthesize(Misuse::ExtendWithFailed).unwrap_err();
    assert!(err.to_string().contains("aux variable 5"), "{err}");
    assert!(synthesize(Misuse::ZeroCoefficientGhost).is_ok());
}

#[test]
fn witness_generator_methods_are_errors_not_panics() {
    for misuse in [
        Misuse::ExtendAux,
        Misuse::ExtendInputs,
        Misuse::AllocateEmpty,
        Misuse::AllocateEmptyAux,
        Misuse::AllocateEmptyInputs,
    ] {
        let err = synthesize(misuse).unwrap_err();
        assert!(err.to_string().contains("not a witness generator"), "{misuse:?}: {err}");
    }
    // The read-only views answer with what was synthesized.
    let mut cs = cuzk::ProvingAssignment::new_heap();
    Toy { inputs: 2, aux: 3 }.synthesize(&mut cs).unwrap();
    assert_eq!(cs.inputs_slice().len(), 2);
    assert_eq!(cs.aux_slice().len(), 3);
}

#[test]
fn changing_a_finished_assignment_is_an_error_at_prove() {
    // 3 aux + 2 inputs = 5 rows: a domain of 8 with room for one more constraint, so an extra
    // constraint would not even change the domain size.
    let circuit = Toy { inputs: 1, aux: 3 };
    let params = cuzk::testing::random_parameters(circuit, 1).unwrap();
    let prover = Prover::new();
    let one = [Scalar::ONE];
    assert!(prover.prove_with_randomness(vec![circuit], &params, &one, &one).is_ok());

    type Change = fn(&mut cuzk::ProvingAssignment);
    let changes: [Change; 4] = [
        |a| a.enforce(|| "0 = 0", |lc| lc, |lc| lc, |lc| lc),
        |a| {
            a.alloc_input(|| "late input", || Ok(Scalar::ONE)).unwrap();
        },
        |a| {
            a.alloc(|| "late aux", || Ok(Scalar::ONE)).unwrap();
        },
        |a| {
            let other = cuzk::ProvingAssignment::new_heap();
            a.extend(&other);
        },
    ];
    for (i, change) in changes.into_iter().enumerate() {
        let mut a = prover.synthesize(circuit).unwrap();
        assert!(a.is_finished());
        change(&mut a);
        assert!(!a.is_finished(), "change {i}");
        let err = prover.prove_synthesized(vec![a], &params, &one, &one).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "change {i}: {err}");
    }
}

#[test]
fn density_tracker_out_of_range_is_refused_not_a_panic() {
    let mut d = DensityTracker::new();
    assert!(!d.inc(0), "nothing tracked yet");
    d.add_element();
    assert!(d.inc(0));
    assert!(!d.inc(1) && !d.inc(64) && !d.inc(usize::MAX));
    assert_eq!((d.len(), d.total_density()), (1, 1));
    assert!(!d.is_set(usize::MAX));
}

#[test]
fn the_cpu_backend_called_directly_checks_shapes() {
    // Parameters for 1 input and 2 aux: A has 1 + 2 points, a domain of 4. With 3 public
    // inputs an assignment still fits the domain but has more inputs than A has points.
    let params = cuzk::testing::random_parameters(Toy { inputs: 0, aux: 2 }, 3).unwrap();
    let pool = PinnedPool::heap(PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    let mut t = Timings::default();
    for wrong in [
        Toy { inputs: 3, aux: 0 },
        Toy { inputs: 5, aux: 0 },
        Toy { inputs: 0, aux: 9 },
        Toy { inputs: 0, aux: 3 },
    ] {
        let mut a = prover.synthesize(wrong).unwrap();
        let err = CpuBackend.commitments(&mut a, &params, &mut t).unwrap_err();
        assert!(
            matches!(err, Error::CircuitMismatch(_)),
            "{} inputs, {} aux: {err}",
            wrong.inputs,
            wrong.aux
        );
        assert!(a.is_abc_released(), "a/b/c go back on the error path too");
        // A released assignment is refused, not proved as zeros.
        let err = CpuBackend.commitments(&mut a, &params, &mut t).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    drop(prover);
    assert_eq!(pool.stats().bytes_in_use, 0);
    // The right shape works.
    let mut a = Prover::new().synthesize(Toy { inputs: 0, aux: 2 }).unwrap();
    assert!(CpuBackend.commitments(&mut a, &params, &mut t).is_ok());
}
