//! **Insecure**, development-only parameter generation: a real Groth16 setup whose toxic
//! waste (τ, α, β, γ, δ) comes from a 64-bit seed, so anyone who knows or guesses the seed can
//! forge proofs. For trying out a circuit you wrote (tests, examples, the C ABI's toy
//! circuits), never for production: production parameters come from a trusted-setup
//! ceremony.
//!
//! The setup is bellperson's: the same evaluation domain (m = 2^k ≥ constraints + inputs,
//! ω = ROOT_OF_UNITY^(2^(32−k))), one input constraint `input_i · 0 = 0` appended per public
//! input, queries A and B over the variables that appear in them with a non-zero coefficient.
//! Lagrange polynomials are evaluated at τ in closed form, L_j(τ) = ω^j·(τ^m − 1)/(m·(τ − ω^j)),
//! so no transform is needed.
//!
//! The same shape recorder, counting only, sizes a circuit too big to synthesize
//! ([`count_circuit`], for benchmarks through `cuzk::testing`).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{BatchInvert, Field, PrimeField};
use group::{Curve, Group};
use rayon::prelude::*;

use super::{Parameters, VerifyingKey};
use crate::curve::{Curve as _, G1, G2};
use crate::error::{Error, Result};
use crate::rng::SplitMix;

/// Records a circuit's shape (which variable, with which non-zero coefficient, in which
/// constraint of A, B or C), never its values; or, `counting`, only its sizes.
#[derive(Default)]
struct Shape {
    inputs: usize,
    aux: usize,
    constraints: usize,
    /// Per matrix (A, B, C): (constraint, variable, coefficient).
    terms: [Vec<(usize, Index, Scalar)>; 3],
    error: Option<String>,
    /// Count only: no linear combination is built, no term stored, nothing checked.
    counting: bool,
}

/// A circuit's size as its synthesis allocates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitSize {
    /// Public inputs, the leading "one" included.
    pub inputs: usize,
    /// Aux (private) variables.
    pub aux: usize,
    /// The circuit's constraints, without the one a prover appends per input.
    pub constraints: usize,
}

/// Counts `circuit`'s variables and constraints, computing no value and storing nothing —
/// for a shape too big to synthesize or to record.
///
/// # Errors
/// The circuit's own synthesis error.
pub fn count_circuit<C: Circuit<Scalar>>(circuit: C) -> std::result::Result<CircuitSize, SynthesisError> {
    let mut cs = Shape {
        counting: true,
        ..Shape::default()
    };
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(CircuitSize {
        inputs: cs.inputs,
        aux: cs.aux,
        constraints: cs.constraints,
    })
}

impl Shape {
    fn record(&mut self, matrix: usize, lc: &LinearCombination<Scalar>) {
        let row = self.constraints;
        for (&i, coeff) in lc.iter_inputs() {
            if i >= self.inputs {
                self.error
                    .get_or_insert_with(|| format!("input variable {i} was never allocated"));
            } else if !bool::from(coeff.is_zero()) {
                self.terms[matrix].push((row, Index::Input(i), *coeff));
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if i >= self.aux {
                self.error
                    .get_or_insert_with(|| format!("aux variable {i} was never allocated"));
            } else if !bool::from(coeff.is_zero()) {
                self.terms[matrix].push((row, Index::Aux(i), *coeff));
            }
        }
    }
}

impl ConstraintSystem<Scalar> for Shape {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if !self.counting {
            self.record(0, &a(LinearCombination::zero()));
            self.record(1, &b(LinearCombination::zero()));
            self.record(2, &c(LinearCombination::zero()));
        }
        self.constraints += 1;
    }

    crate::r1cs::unnamed_namespaces!();
}

fn nonzero(rng: &mut SplitMix) -> Scalar {
    loop {
        let s = Scalar::random(&mut *rng);
        if !bool::from(s.is_zero()) {
            return s;
        }
    }
}

fn g1_points(scalars: &[Scalar]) -> Vec<G1Affine> {
    let proj: Vec<G1Projective> = scalars.par_iter().map(|s| G1Projective::generator() * s).collect();
    let mut out = vec![G1Affine::default(); proj.len()];
    proj.par_chunks(1 << 14)
        .zip(out.par_chunks_mut(1 << 14))
        .for_each(|(p, o)| G1::batch_to_affine(p, o));
    out
}

fn g2_points(scalars: &[Scalar]) -> Vec<G2Affine> {
    let proj: Vec<G2Projective> = scalars.par_iter().map(|s| G2Projective::generator() * s).collect();
    let mut out = vec![G2Affine::default(); proj.len()];
    proj.par_chunks(1 << 14)
        .zip(out.par_chunks_mut(1 << 14))
        .for_each(|(p, o)| G2::batch_to_affine(p, o));
    out
}

impl Parameters {
    /// **INSECURE — for development only.** Groth16 parameters for `circuit` from a setup
    /// whose toxic waste is derived from `seed`: anyone who knows the seed can forge proofs.
    /// Proofs made with them verify (with cuzk's and bellperson's verifiers), which is what
    /// examples and tests of a self-written circuit need. Only the circuit's shape is used;
    /// the values its `alloc` closures would compute are never asked for.
    ///
    /// Cost: one G1 scalar multiplication per constraint, input and aux variable (more for
    /// B), so it suits circuits of up to some 2^16 constraints.
    ///
    /// # Errors
    /// The circuit's own synthesis error; [`Error::InvalidArgument`] for a constraint naming
    /// a variable never allocated, or a domain beyond the field's 2^32.
    pub fn generate_insecure_for_development<C: Circuit<Scalar>>(circuit: C, seed: u64) -> Result<Self> {
        let mut cs = Shape::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        if let Some(e) = cs.error.take() {
            return Err(Error::InvalidArgument(format!("circuit is malformed: {e}")));
        }
        for i in 0..cs.inputs {
            cs.terms[0].push((cs.constraints, Index::Input(i), Scalar::ONE));
            cs.constraints += 1;
        }
        let m = cs.constraints.next_power_of_two();
        let log_m = m.trailing_zeros();
        if log_m > Scalar::S {
            return Err(Error::InvalidArgument(format!(
                "{} constraints need a domain of 2^{log_m}, beyond the field's 2^{}",
                cs.constraints,
                Scalar::S
            )));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_m..Scalar::S {
            omega = omega.square();
        }

        let mut rng = SplitMix::new(seed ^ 0xdead_5eed_0000_0001);
        let (tau, z) = loop {
            let tau = nonzero(&mut rng);
            let z = tau.pow_vartime([m as u64]) - Scalar::ONE;
            if !bool::from(z.is_zero()) {
                break (tau, z); // τ outside the domain
            }
        };
        let (alpha, beta, gamma, delta) = (
            nonzero(&mut rng),
            nonzero(&mut rng),
            nonzero(&mut rng),
            nonzero(&mut rng),
        );

        // L_j(τ) = ω^j · z / (m · (τ − ω^j)).
        let mut powers = Vec::with_capacity(m);
        let mut w = Scalar::ONE;
        for _ in 0..m {
            powers.push(w);
            w *= omega;
        }
        let mut lagrange: Vec<Scalar> = powers.iter().map(|w| tau - w).collect();
        lagrange.iter_mut().batch_invert();
        let scale = z * Scalar::from(m as u64).invert().expect("m < r is invertible");
        for (l, w) in lagrange.iter_mut().zip(&powers) {
            *l *= w * scale;
        }

        // Each variable's polynomials at τ, and which variables A and B use.
        let vars = cs.inputs + cs.aux;
        let at = |idx: &Index| match *idx {
            Index::Input(i) => i,
            Index::Aux(i) => cs.inputs + i,
        };
        let mut eval = [
            vec![Scalar::ZERO; vars],
            vec![Scalar::ZERO; vars],
            vec![Scalar::ZERO; vars],
        ];
        let mut used = [vec![false; vars], vec![false; vars]];
        for (k, terms) in cs.terms.iter().enumerate() {
            for (row, idx, coeff) in terms {
                let v = at(idx);
                eval[k][v] += *coeff * lagrange[*row];
                if k < 2 {
                    used[k][v] = true;
                }
            }
        }
        let [ev_a, ev_b, ev_c] = &eval;

        let gamma_inv = gamma.invert().expect("γ ≠ 0");
        let delta_inv = delta.invert().expect("δ ≠ 0");
        let combined = |v: usize, inv: Scalar| (beta * ev_a[v] + alpha * ev_b[v] + ev_c[v]) * inv;
        let ic: Vec<Scalar> = (0..cs.inputs).map(|v| combined(v, gamma_inv)).collect();
        let l: Vec<Scalar> = (cs.inputs..vars).map(|v| combined(v, delta_inv)).collect();
        let mut h = Vec::with_capacity(m - 1);
        let mut t = z * delta_inv;
        for _ in 0..m - 1 {
            h.push(t);
            t *= tau;
        }
        // A: every input (the input constraints make them all present), then the aux in A.
        let a: Vec<Scalar> = (0..vars)
            .filter(|&v| v < cs.inputs || used[0][v])
            .map(|v| ev_a[v])
            .collect();
        let b: Vec<Scalar> = (0..vars).filter(|&v| used[1][v]).map(|v| ev_b[v]).collect();

        let g1 = G1Projective::generator();
        let g2 = G2Projective::generator();
        let vk = VerifyingKey {
            alpha_g1: (g1 * alpha).to_affine(),
            beta_g1: (g1 * beta).to_affine(),
            beta_g2: (g2 * beta).to_affine(),
            gamma_g2: (g2 * gamma).to_affine(),
            delta_g1: (g1 * delta).to_affine(),
            delta_g2: (g2 * delta).to_affine(),
            ic: g1_points(&ic),
        };
        log::warn!(
            "generated INSECURE development parameters (seed-derived toxic waste; never use in production): \
             domain 2^{log_m}, {} inputs, {} aux",
            cs.inputs,
            cs.aux
        );
        Self::new(
            vk,
            g1_points(&h),
            g1_points(&l),
            g1_points(&a),
            g1_points(&b),
            g2_points(&b),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::count_circuit;
    use crate::testing::Synthetic;
    use crate::Parameters;

    #[test]
    fn counting_gives_the_sizes_the_development_setup_records() {
        let circuit = Synthetic::new(10).with_seed(4);
        let count = count_circuit(circuit.clone()).unwrap();
        assert_eq!(count.constraints, circuit.num_constraints());
        assert_eq!(count.inputs, circuit.public_inputs + 1);
        let params = Parameters::generate_insecure_for_development(circuit, 1).unwrap();
        assert_eq!((count.inputs, count.aux), (params.num_inputs(), params.num_aux()));
        assert_eq!(
            (count.constraints + count.inputs).next_power_of_two(),
            params.domain_size()
        );
    }
}
