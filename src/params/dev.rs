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
//!
//! Memory: every array sized by the circuit's counts is allocated fallibly (out of memory is an
//! [`Error::Allocation`], never an abort), and parameters that could not fit in the host's
//! memory and swap are refused before any work ([`development_domain`], which the C ABI also
//! calls before it synthesizes a constraint system of the caller's counts).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use ff::{BatchInvert, Field, PrimeField};
use group::{Curve as _, Group};
use rayon::prelude::*;

use super::{Parameters, VerifyingKey};
use crate::curve::{Curve, G1, G2};
use crate::error::{Error, Result};
use crate::pool::heap_error;
use crate::rng::SplitMix;

/// One (constraint, variable, coefficient) entry the shape recorder keeps.
type Term = (usize, Index, Scalar);

/// Records a circuit's shape (which variable, with which non-zero coefficient, in which
/// constraint of A, B or C), never its values; or, `counting`, only its sizes.
#[derive(Default)]
struct Shape {
    inputs: usize,
    aux: usize,
    constraints: usize,
    /// Per matrix (A, B, C): (constraint, variable, coefficient).
    terms: [Vec<Term>; 3],
    error: Option<String>,
    /// The first term the allocator had no room for.
    no_room: Option<Error>,
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
                self.push(matrix, (row, Index::Input(i), *coeff));
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if i >= self.aux {
                self.error
                    .get_or_insert_with(|| format!("aux variable {i} was never allocated"));
            } else if !bool::from(coeff.is_zero()) {
                self.push(matrix, (row, Index::Aux(i), *coeff));
            }
        }
    }

    /// Keeps a term, or notes that there was no room for it.
    fn push(&mut self, matrix: usize, term: Term) {
        let terms = &mut self.terms[matrix];
        match terms.try_reserve(1) {
            Ok(()) => terms.push(term),
            Err(e) => {
                let n = terms.len().saturating_add(1);
                self.no_room
                    .get_or_insert_with(|| heap_error(n, std::mem::size_of::<Term>(), &e));
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

/// An empty vector with room for `n` elements.
///
/// # Errors
/// [`Error::Allocation`] when the global allocator cannot provide it.
fn room<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|e| heap_error(n, std::mem::size_of::<T>(), &e))?;
    Ok(v)
}

/// `n` copies of `value`.
///
/// # Errors
/// As [`room`].
fn filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = room(n)?;
    v.resize(n, value);
    Ok(v)
}

/// Points converted to affine form a chunk at a time (one shared inversion per chunk), so the
/// projective points of only one chunk per thread exist at once.
const POINT_CHUNK: usize = 1 << 10;

/// `scalars[i]` times the generator of `C`, in affine form.
///
/// # Errors
/// As [`room`].
fn points<C: Curve>(scalars: &[Scalar]) -> Result<Vec<C::Affine>>
where
    C::Affine: Default,
    C::Projective: Group<Scalar = Scalar> + Sync,
{
    let mut out = filled(scalars.len(), C::Affine::default())?;
    scalars
        .par_chunks(POINT_CHUNK)
        .zip(out.par_chunks_mut(POINT_CHUNK))
        .for_each(|(s, o)| {
            let proj: Vec<C::Projective> = s.iter().map(|s| C::Projective::generator() * s).collect();
            C::batch_to_affine(&proj, o);
        });
    Ok(out)
}

/// The Lagrange polynomials of the domain of `m` elements generated by `omega` at `tau`
/// (outside the domain, z = τ^m − 1): L_j(τ) = ω^j · z / (m · (τ − ω^j)), in chunks computed in
/// parallel, each chunk's inversions batched into one.
///
/// # Errors
/// As [`room`].
fn lagrange_at(tau: Scalar, z: Scalar, omega: Scalar, m: usize) -> Result<Vec<Scalar>> {
    const CHUNK: usize = 1 << 12;
    let scale = z * Scalar::from(m as u64).invert().expect("m < r is invertible");
    let mut out = filled(m, Scalar::ZERO)?;
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let first = omega.pow_vartime([(c * CHUNK) as u64]);
        let mut w = first;
        for l in chunk.iter_mut() {
            *l = tau - w;
            w *= omega;
        }
        chunk.iter_mut().batch_invert();
        let mut w = first;
        for l in chunk.iter_mut() {
            *l *= w * scale;
            w *= omega;
        }
    });
    Ok(out)
}

/// The host's memory and swap in bytes (Linux `/proc/meminfo`; `None` elsewhere): more than
/// any setup can hold.
fn host_memory_and_swap() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<usize> {
        info.lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    kib("MemTotal:")?
        .checked_add(kib("SwapTotal:").unwrap_or(0))?
        .checked_mul(1024)
}

/// The evaluation domain (its size, m) of a development setup of `constraints` constraints
/// (the one appended per input included) over `inputs` inputs (the one included) and `aux`
/// aux variables, checked before any work is done.
///
/// # Errors
/// [`Error::InvalidArgument`] for a domain beyond the field's 2^32; [`Error::Allocation`] when
/// the parameters alone — H (m − 1 points), IC and L (a point per variable), A (a point per
/// input at least) — are larger than the host's memory and swap.
pub(crate) fn development_domain(constraints: usize, inputs: usize, aux: usize) -> Result<usize> {
    let m = constraints
        .checked_next_power_of_two()
        .filter(|m| m.trailing_zeros() <= Scalar::S)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{constraints} constraints need a domain beyond the field's 2^{}",
                Scalar::S
            ))
        })?;
    let points = (m - 1).saturating_add(aux).saturating_add(inputs.saturating_mul(2));
    let bytes = points.saturating_mul(std::mem::size_of::<G1Affine>());
    match host_memory_and_swap() {
        Some(host) if bytes > host => Err(Error::Allocation {
            bytes,
            backend: "global-heap",
            reason: format!(
                "development parameters (a domain of 2^{}, inputs: {inputs}, aux variables: {aux}) \
                 need at least that many bytes, more than the host's {host} bytes of memory and swap",
                m.trailing_zeros()
            ),
        }),
        _ => Ok(m),
    }
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
    /// a variable never allocated, or a domain beyond the field's 2^32; [`Error::Allocation`]
    /// when parameters of the circuit's size could not fit in the host's memory and swap
    /// (checked before the setup starts) or the allocator refuses an array of the setup.
    pub fn generate_insecure_for_development<C: Circuit<Scalar>>(circuit: C, seed: u64) -> Result<Self> {
        let mut cs = Shape::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        if let Some(e) = cs.no_room.take() {
            return Err(e);
        }
        if let Some(e) = cs.error.take() {
            return Err(Error::InvalidArgument(format!("circuit is malformed: {e}")));
        }
        let m = development_domain(cs.constraints.saturating_add(cs.inputs), cs.inputs, cs.aux)?;
        cs.terms[0]
            .try_reserve(cs.inputs)
            .map_err(|e| heap_error(cs.inputs, std::mem::size_of::<Term>(), &e))?;
        for i in 0..cs.inputs {
            cs.terms[0].push((cs.constraints, Index::Input(i), Scalar::ONE));
            cs.constraints += 1;
        }
        let log_m = m.trailing_zeros();
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
        let lagrange = lagrange_at(tau, z, omega, m)?;

        // Each variable's polynomials at τ, and which variables A and B use.
        let vars = cs.inputs + cs.aux;
        let at = |idx: &Index| match *idx {
            Index::Input(i) => i,
            Index::Aux(i) => cs.inputs + i,
        };
        let mut eval = [
            filled(vars, Scalar::ZERO)?,
            filled(vars, Scalar::ZERO)?,
            filled(vars, Scalar::ZERO)?,
        ];
        let mut used = [filled(vars, false)?, filled(vars, false)?];
        for (k, terms) in cs.terms.iter().enumerate() {
            for (row, idx, coeff) in terms {
                let v = at(idx);
                eval[k][v] += *coeff * lagrange[*row];
                if k < 2 {
                    used[k][v] = true;
                }
            }
        }
        drop(lagrange);
        let [ev_a, ev_b, ev_c] = &eval;

        let gamma_inv = gamma.invert().expect("γ ≠ 0");
        let delta_inv = delta.invert().expect("δ ≠ 0");
        let combined = |v: usize, inv: Scalar| (beta * ev_a[v] + alpha * ev_b[v] + ev_c[v]) * inv;
        let mut ic = room(cs.inputs)?;
        ic.extend((0..cs.inputs).map(|v| combined(v, gamma_inv)));
        let mut l = room(cs.aux)?;
        l.extend((cs.inputs..vars).map(|v| combined(v, delta_inv)));
        // A: every input (the input constraints make them all present), then the aux in A.
        let in_a = |v: &usize| *v < cs.inputs || used[0][*v];
        let mut a = room((0..vars).filter(in_a).count())?;
        a.extend((0..vars).filter(in_a).map(|v| ev_a[v]));
        let in_b = |v: &usize| used[1][*v];
        let mut b = room((0..vars).filter(in_b).count())?;
        b.extend((0..vars).filter(in_b).map(|v| ev_b[v]));
        drop((eval, used));
        let mut h = room(m - 1)?;
        let mut t = z * delta_inv;
        for _ in 0..m - 1 {
            h.push(t);
            t *= tau;
        }

        let g1 = G1Projective::generator();
        let g2 = G2Projective::generator();
        let vk = VerifyingKey {
            alpha_g1: (g1 * alpha).to_affine(),
            beta_g1: (g1 * beta).to_affine(),
            beta_g2: (g2 * beta).to_affine(),
            gamma_g2: (g2 * gamma).to_affine(),
            delta_g1: (g1 * delta).to_affine(),
            delta_g2: (g2 * delta).to_affine(),
            ic: points::<G1>(&ic)?,
        };
        let (h, l, a, b_g1, b_g2) = (
            points::<G1>(&h)?,
            points::<G1>(&l)?,
            points::<G1>(&a)?,
            points::<G1>(&b)?,
            points::<G2>(&b)?,
        );
        log::warn!(
            "generated INSECURE development parameters (seed-derived toxic waste; never use in production): \
             domain 2^{log_m}, {} inputs, {} aux",
            cs.inputs,
            cs.aux
        );
        Self::new(vk, h, l, a, b_g1, b_g2)
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
