//! The Groth16 arithmetic the backends leave to the prover: what a batch and an assignment
//! must be for the parameters (the checks before any commitment), and the randomisers r, s
//! that turn a backend's [`Commitments`] into a proof.

use blstrs::Scalar;
use group::{prime::PrimeCurveAffine, Curve};

use super::Commitments;
use crate::assignment::ProvingAssignment;
use crate::compiled::CompiledCircuit;
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::proof::Proof;

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

/// Checks that an assignment has exactly the shape the parameters were made for.
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
    let mismatch = |what: &str, expected: usize, found: usize| {
        Err(Error::CircuitMismatch(format!(
            "{what}: parameters expect {expected}, circuit has {found}"
        )))
    };
    let inputs = a.input_assignment().len();
    if inputs != params.num_inputs() {
        return mismatch("public inputs (with the one input)", params.num_inputs(), inputs);
    }
    if a.aux_assignment().len() != params.num_aux() {
        return mismatch("aux variables", params.num_aux(), a.aux_assignment().len());
    }
    let m = a.num_constraints().next_power_of_two();
    if m != params.domain_size() {
        return mismatch(
            "evaluation domain size (constraints + inputs, rounded up to 2^k)",
            params.domain_size(),
            m,
        );
    }
    let a_dense = inputs + a.a_aux_density().total_density();
    let lens = params.query_lengths();
    if a_dense != lens.a {
        return mismatch("A query points", lens.a, a_dense);
    }
    let b_dense = a.b_input_density().total_density() + a.b_aux_density().total_density();
    if b_dense != lens.b {
        return mismatch("B query points", lens.b, b_dense);
    }
    Ok(())
}

/// Checks that a compiled circuit has exactly the shape the parameters were made for (the
/// witness path's [`check_assignment`]).
pub(crate) fn check_compiled(c: &CompiledCircuit, params: &Parameters) -> Result<()> {
    let mismatch = |what: &str, expected: usize, found: usize| {
        Err(Error::CircuitMismatch(format!(
            "{what}: parameters expect {expected}, compiled circuit {} has {found}",
            c.circuit_type()
        )))
    };
    if c.num_inputs() != params.num_inputs() {
        return mismatch(
            "public inputs (with the one input)",
            params.num_inputs(),
            c.num_inputs(),
        );
    }
    if c.num_aux() != params.num_aux() {
        return mismatch("aux variables", params.num_aux(), c.num_aux());
    }
    let m = c.num_constraints().next_power_of_two();
    if m != params.domain_size() {
        return mismatch(
            "evaluation domain size (constraints + inputs, rounded up to 2^k)",
            params.domain_size(),
            m,
        );
    }
    let lens = params.query_lengths();
    let a_dense = c.num_inputs() + c.a_aux_density().total_density();
    if a_dense != lens.a {
        return mismatch("A query points", lens.a, a_dense);
    }
    let b_dense = c.b_input_density().total_density() + c.b_aux_density().total_density();
    if b_dense != lens.b {
        return mismatch("B query points", lens.b, b_dense);
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
