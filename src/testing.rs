//! A synthetic circuit for examples, tests and benchmarks.
//!
//! [`Synthetic`] mixes bit witnesses (booleanity constraints, as most of a Filecoin witness
//! is) with a chain of field multiplications, and exposes some public inputs. Its size is
//! chosen so that constraints plus input constraints fill a domain of exactly 2^k.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;

/// A deterministic synthetic circuit: same parameters, same witness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synthetic {
    /// The domain is 2^log_size: constraints + public inputs + 1 + padding = 2^log_size.
    pub log_size: u32,
    /// Public inputs (besides the "one").
    pub public_inputs: usize,
    /// Percentage of constraints that check a bit witness (the rest multiply field elements).
    pub bit_percent: u32,
    /// Seed of the witness values (the circuit's structure does not depend on it).
    pub seed: u64,
    /// Constraints left out, so that the domain is padded (must stay below 2^(log_size−1)).
    pub padding: usize,
}

impl Synthetic {
    /// A circuit filling a domain of 2^log_size with 75% bit constraints and 2 public inputs.
    pub fn new(log_size: u32) -> Self {
        Self {
            log_size,
            public_inputs: 2,
            bit_percent: 75,
            seed: 0x5eed,
            padding: 0,
        }
    }

    /// The same shape with another witness.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Constraints the circuit enforces itself (without the prover's input constraints).
    pub fn num_constraints(&self) -> usize {
        (1usize << self.log_size).saturating_sub(self.public_inputs + 1 + self.padding)
    }

    /// The public input values, as the verifier needs them.
    pub fn public_input_values(&self) -> Vec<Scalar> {
        let mut rng = SplitMix::new(self.seed ^ 0x1234_5678);
        (0..self.public_inputs).map(|_| Scalar::random(&mut rng)).collect()
    }
}

impl Circuit<Scalar> for Synthetic {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let total = self.num_constraints();
        let inputs = self.public_input_values();
        // Structure (which constraint is which) is fixed by the shape; values by the seed.
        let mut shape = SplitMix::new(0xc1c1_c1c1 ^ u64::from(self.log_size) ^ (u64::from(self.bit_percent) << 40));
        let mut rng = SplitMix::new(self.seed);
        let mut done = 0usize;
        // Each public input is copied into an aux variable: in · 1 = copy.
        for (j, value) in inputs.iter().enumerate() {
            if done == total {
                break;
            }
            let input = cs.alloc_input(|| format!("input {j}"), || Ok(*value))?;
            let copy = cs.alloc(|| format!("copy {j}"), || Ok(*value))?;
            cs.enforce(
                || format!("copy {j}"),
                |lc| lc + input,
                |lc| lc + CS::one(),
                |lc| lc + copy,
            );
            done += 1;
        }
        let mut acc_value = Scalar::random(&mut rng);
        let mut acc = cs.alloc(|| "acc", || Ok(acc_value))?;
        let mut i = 0usize;
        while done < total {
            if shape.next_u32() % 100 < self.bit_percent {
                // b · (1 − b) = 0
                let bit = rng.next_u32() & 1 == 1;
                let b = cs.alloc(
                    || format!("bit {i}"),
                    || Ok(if bit { Scalar::ONE } else { Scalar::ZERO }),
                )?;
                cs.enforce(|| format!("bool {i}"), |lc| lc + b, |lc| lc + CS::one() - b, |lc| lc);
            } else {
                // acc' = acc · y
                let y_value = Scalar::random(&mut rng);
                let y = cs.alloc(|| format!("y {i}"), || Ok(y_value))?;
                acc_value *= y_value;
                let next = cs.alloc(|| format!("acc {i}"), || Ok(acc_value))?;
                cs.enforce(|| format!("mul {i}"), |lc| lc + acc, |lc| lc + y, |lc| lc + next);
                acc = next;
            }
            done += 1;
            i += 1;
        }
        Ok(())
    }
}

pub use crate::rng::SplitMix;

/// A circuit's sizes counted without synthesizing it (the development parameters' shape
/// recorder, counting only).
pub use crate::params::dev::{count_circuit, CircuitSize};

/// Parameters of the right shape for `circuit` whose points are arbitrary (an arithmetic
/// progression from a seed), made in seconds even at 2^24 constraints. Proofs made with them
/// do not verify — there is no trapdoor behind them — but every backend must still compute
/// the same bytes from them, which is what GPU-against-CPU tests and benchmarks need.
///
/// # Errors
/// Synthesis errors of the circuit.
pub fn random_parameters<C: Circuit<Scalar>>(circuit: C, seed: u64) -> crate::Result<crate::Parameters> {
    let cs = crate::Prover::new().synthesize(circuit)?;
    random_parameters_for(&cs, seed)
}

/// [`random_parameters`] for the circuit `cs` was synthesized from (its shape only: sizes and
/// densities), without synthesizing it again — for benchmarks of large circuits.
///
/// # Errors
/// [`crate::Error::ParamsCorrupt`] never happens for a finished assignment (the shapes agree).
pub fn random_parameters_for(cs: &crate::ProvingAssignment, seed: u64) -> crate::Result<crate::Parameters> {
    use crate::curve::{G1, G2};
    use blstrs::{G1Projective, G2Projective};
    use group::Group;

    let inputs = cs.input_assignment().len();
    let aux = cs.aux_assignment().len();
    let m = cs.num_constraints().next_power_of_two();
    let a_len = inputs + cs.a_aux_density().total_density();
    let b_len = cs.b_input_density().total_density() + cs.b_aux_density().total_density();

    let mut rng = SplitMix::new(seed);
    let g1 = |rng: &mut SplitMix| G1Projective::generator() * Scalar::random(rng);
    let g2 = |rng: &mut SplitMix| G2Projective::generator() * Scalar::random(rng);
    let vk = crate::VerifyingKey {
        alpha_g1: g1(&mut rng).into(),
        beta_g1: g1(&mut rng).into(),
        beta_g2: g2(&mut rng).into(),
        gamma_g2: g2(&mut rng).into(),
        delta_g1: g1(&mut rng).into(),
        delta_g2: g2(&mut rng).into(),
        ic: progression::<G1>(g1(&mut rng), g1(&mut rng), inputs),
    };
    let h = progression::<G1>(g1(&mut rng), g1(&mut rng), m - 1);
    let l = progression::<G1>(g1(&mut rng), g1(&mut rng), aux);
    let a = progression::<G1>(g1(&mut rng), g1(&mut rng), a_len);
    let b_g1 = progression::<G1>(g1(&mut rng), g1(&mut rng), b_len);
    let b_g2 = progression::<G2>(g2(&mut rng), g2(&mut rng), b_len);
    crate::Parameters::new(vk, h, l, a, b_g1, b_g2)
}

/// start, start + step, start + 2·step, ... (n points, affine), in parallel chunks, each
/// converted to affine with one shared inversion.
fn progression<C>(start: C::Projective, step: C::Projective, n: usize) -> Vec<C::Affine>
where
    C: crate::curve::Curve,
    C::Projective: group::Group<Scalar = Scalar> + Sync,
    C::Affine: Send + Default,
{
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 14;
    let mut out = vec![C::Affine::default(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, dst)| {
        let mut p = start + step * Scalar::from((c * CHUNK) as u64);
        let mut proj = Vec::with_capacity(dst.len());
        for _ in 0..dst.len() {
            proj.push(p);
            p += step;
        }
        C::batch_to_affine(&proj, dst);
    });
    out
}
