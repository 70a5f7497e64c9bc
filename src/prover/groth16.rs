//! The Groth16 arithmetic the backends leave to the prover: what a proof's input is
//! ([`Work`]: an assignment, or a witness of a compiled circuit), what a batch and each input
//! must be for the parameters (the checks before any commitment: one shape check for both
//! kinds of input), and the randomisers r, s that turn a backend's [`Commitments`] into a
//! proof.

use blstrs::Scalar;
use group::{prime::PrimeCurveAffine, Curve};

use super::Commitments;
use crate::assignment::ProvingAssignment;
use crate::compiled::{CompiledCircuit, Witness};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::proof::Proof;

/// r and s for `n` proofs drawn from `rng`: all the r first, then all the s — bellperson's
/// order, so that the same generator gives bellperson's proof bytes. Every path that draws
/// them (the prover, the engine, the Filecoin jobs, the C ABI) draws them here.
pub fn draw_randomness<R: rand_core::RngCore + ?Sized>(n: usize, rng: &mut R) -> (Vec<Scalar>, Vec<Scalar>) {
    use ff::Field;
    let r = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    let s = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    (r, s)
}

/// Checks that a batch has proofs to make, and one r and one s for each.
pub(crate) fn check_batch(n: usize, r: &[Scalar], s: &[Scalar]) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument("empty batch: nothing to prove".into()));
    }
    if r.len() != n || s.len() != n {
        return Err(Error::InvalidArgument(format!(
            "{n} circuits need {n} values of r and of s; found {} and {}",
            r.len(),
            s.len()
        )));
    }
    Ok(())
}

/// What the prove loop proves, one proof's input: a synthesized assignment, or a witness of a
/// compiled circuit.
pub(crate) enum Work<'a> {
    /// Full synthesis' a/b/c, aux and densities (the backend releases a/b/c once H is computed).
    Full(&'a mut ProvingAssignment),
    /// A witness and the compiled circuit that gives its a/b/c and densities.
    Witness {
        circuit: &'a CompiledCircuit,
        witness: &'a Witness,
    },
}

impl Work<'_> {
    /// The one check before any commitment: the input has exactly the shape the parameters
    /// were made for (an assignment also still holds its a/b/c; a witness also fits its
    /// compiled circuit, [`CompiledCircuit::check`]).
    pub(crate) fn check(&self, params: &Parameters) -> Result<()> {
        match self {
            Work::Full(a) => check_assignment(a, params),
            Work::Witness { circuit, witness } => check_compiled(circuit, params).and_then(|()| circuit.check(witness)),
        }
    }
}

/// A proof's input as its caller holds it, owned (dropped, its buffers back to the pool, once
/// proved) or borrowed.
pub(crate) trait AsWork {
    /// The input as the prove loop takes it.
    fn work(&mut self) -> Work<'_>;
}

impl AsWork for Work<'_> {
    fn work(&mut self) -> Work<'_> {
        match self {
            Work::Full(a) => Work::Full(a),
            Work::Witness { circuit, witness } => Work::Witness { circuit, witness },
        }
    }
}

/// Borrowed: the caller keeps the input (the engine proves a batch's partitions again one by
/// one when the batch fails).
impl<T: AsWork + ?Sized> AsWork for &mut T {
    fn work(&mut self) -> Work<'_> {
        (**self).work()
    }
}

impl AsWork for ProvingAssignment {
    fn work(&mut self) -> Work<'_> {
        Work::Full(self)
    }
}

/// The sizes of a proof's input that the parameters fix.
struct Shape {
    /// Public inputs, the one input included.
    inputs: usize,
    aux: usize,
    /// Constraints, input constraints included (the domain is this rounded up to 2^k).
    constraints: usize,
    /// Points of the A query the input uses: every input, and the aux A uses.
    a_dense: usize,
    /// Points of the B queries the input uses: the inputs and the aux B uses.
    b_dense: usize,
}

/// Checks that an assignment still holds its a/b/c and has exactly the shape the parameters
/// were made for.
pub(crate) fn check_assignment(a: &ProvingAssignment, params: &Parameters) -> Result<()> {
    if a.is_abc_released() {
        return Err(Error::InvalidArgument(
            "assignment's a/b/c were released; synthesize again".into(),
        ));
    }
    if !a.is_finished() {
        return Err(Error::InvalidArgument(
            "assignment was not made by Prover::synthesize".into(),
        ));
    }
    let inputs = a.input_assignment().len();
    let shape = Shape {
        inputs,
        aux: a.aux_assignment().len(),
        constraints: a.num_constraints(),
        a_dense: inputs + a.a_aux_density().total_density(),
        b_dense: a.b_input_density().total_density() + a.b_aux_density().total_density(),
    };
    check_shape(&shape, params, || "circuit".into())
}

/// Checks that a compiled circuit has exactly the shape the parameters were made for.
pub(crate) fn check_compiled(c: &CompiledCircuit, params: &Parameters) -> Result<()> {
    let shape = Shape {
        inputs: c.num_inputs(),
        aux: c.num_aux(),
        constraints: c.num_constraints(),
        a_dense: c.num_inputs() + c.a_aux_density().total_density(),
        b_dense: c.b_input_density().total_density() + c.b_aux_density().total_density(),
    };
    check_shape(&shape, params, || format!("compiled circuit {}", c.circuit_type()))
}

/// The one shape check: `shape` against what `params` expect, a mismatch named after `what`
/// (the circuit, or the compiled circuit and its type).
fn check_shape(shape: &Shape, params: &Parameters, what: impl Fn() -> String) -> Result<()> {
    let mismatch = |size: &str, expected: usize, found: usize| {
        Err(Error::CircuitMismatch(format!(
            "{size}: parameters expect {expected}, {} has {found}",
            what()
        )))
    };
    if shape.inputs != params.num_inputs() {
        return mismatch("public inputs (with the one input)", params.num_inputs(), shape.inputs);
    }
    if shape.aux != params.num_aux() {
        return mismatch("aux variables", params.num_aux(), shape.aux);
    }
    let m = shape.constraints.next_power_of_two();
    if m != params.domain_size() {
        return mismatch(
            "evaluation domain size (constraints + inputs, rounded up to 2^k)",
            params.domain_size(),
            m,
        );
    }
    let lens = params.query_lengths();
    if shape.a_dense != lens.a {
        return mismatch("A query points", lens.a, shape.a_dense);
    }
    if shape.b_dense != lens.b {
        return mismatch("B query points", lens.b, shape.b_dense);
    }
    Ok(())
}

/// Adds the randomisers: A = α + a + rδ, B = β + b + sδ, C = s·a + r·b₁ + rsδ + sα + rβ + h + l.
pub(super) fn randomize(params: &Parameters, c: &Commitments, r: Scalar, s: Scalar) -> Proof {
    let vk = params.vk();
    let delta_g1 = vk.delta_g1.to_curve();
    let g_a = delta_g1 * r + vk.alpha_g1 + c.a;
    let g_b = vk.delta_g2.to_curve() * s + vk.beta_g2 + c.b_g2;
    let g_c = c.a * s + c.b_g1 * r + delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + c.h + c.l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}
