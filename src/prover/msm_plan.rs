//! The MSMs of a proof after H, described once for both backends.
//!
//! Besides H's, a Groth16 proof (as bellperson computes it) takes seven multi-scalar
//! multiplications over the parameters' queries: L over the aux values; A over the inputs and
//! over the aux values A uses; B in G1 and in G2 over the inputs B uses and the aux values B
//! uses. Each reads a query from an offset (a query holds its input part, then its aux part),
//! one of the assignment's two scalar vectors, and a density (which variables the query holds a
//! base for); its sum is added to one of four commitments. [`PROOF_MSMS`] lists them, and
//! [`resolve`] binds them to an assignment; the CPU backend runs them one by one, the CUDA
//! backend as one batch of kernel jobs (or one by one), in this order.

use blstrs::{G1Projective, G2Projective, Scalar};
use group::Group;

use crate::assignment::{DensityTracker, ProvingAssignment};

/// The query (and commitment) an MSM belongs to. L, A and B_G1 are G1 points, B_G2 is G2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// L: the aux part of the private-input query.
    L,
    /// A (G1).
    A,
    /// B in G1.
    BG1,
    /// B in G2.
    BG2,
}

impl Query {
    /// Whether its bases are G2 points.
    pub fn is_g2(self) -> bool {
        self == Query::BG2
    }
}

/// Which of the assignment's vectors an MSM reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalars {
    /// The input assignment (the leading 1 first).
    Inputs,
    /// The aux assignment.
    Aux,
}

/// Which variables a query holds bases for, as the assignment tracked them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Density {
    /// All of them (one base per scalar).
    All,
    /// The aux variables A uses.
    AAux,
    /// The inputs B uses.
    BInputs,
    /// The aux variables B uses.
    BAux,
}

/// Where in its query an MSM's bases start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offset {
    /// At the first base.
    Start,
    /// After one base per input (A's aux part).
    AfterInputs,
    /// After one base per input B uses (B's aux parts).
    AfterBInputs,
}

/// One MSM of a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofMsm {
    /// Its name in errors and logs.
    pub name: &'static str,
    /// The query it reads and the commitment its sum is added to.
    pub query: Query,
    /// Where its bases start in the query.
    pub offset: Offset,
    /// The scalars it reads.
    pub scalars: Scalars,
    /// Which scalars have a base.
    pub density: Density,
}

/// The seven MSMs after H, in the order the backends run them.
pub const PROOF_MSMS: [ProofMsm; 7] = [
    ProofMsm {
        name: "L",
        query: Query::L,
        offset: Offset::Start,
        scalars: Scalars::Aux,
        density: Density::All,
    },
    ProofMsm {
        name: "A (inputs)",
        query: Query::A,
        offset: Offset::Start,
        scalars: Scalars::Inputs,
        density: Density::All,
    },
    ProofMsm {
        name: "A (aux)",
        query: Query::A,
        offset: Offset::AfterInputs,
        scalars: Scalars::Aux,
        density: Density::AAux,
    },
    ProofMsm {
        name: "B_G1 (inputs)",
        query: Query::BG1,
        offset: Offset::Start,
        scalars: Scalars::Inputs,
        density: Density::BInputs,
    },
    ProofMsm {
        name: "B_G1 (aux)",
        query: Query::BG1,
        offset: Offset::AfterBInputs,
        scalars: Scalars::Aux,
        density: Density::BAux,
    },
    ProofMsm {
        name: "B_G2 (inputs)",
        query: Query::BG2,
        offset: Offset::Start,
        scalars: Scalars::Inputs,
        density: Density::BInputs,
    },
    ProofMsm {
        name: "B_G2 (aux)",
        query: Query::BG2,
        offset: Offset::AfterBInputs,
        scalars: Scalars::Aux,
        density: Density::BAux,
    },
];

/// The names of [`PROOF_MSMS`], in order (for the kernels' per-job errors).
pub const PROOF_MSM_NAMES: [&str; 7] = {
    let mut names = [""; 7];
    let mut i = 0;
    while i < 7 {
        names[i] = PROOF_MSMS[i].name;
        i += 1;
    }
    names
};

/// One MSM bound to an assignment: its bases from `offset` in its query, its scalars and
/// density (`None` for [`Density::All`]).
#[derive(Debug, Clone, Copy)]
pub struct BoundMsm<'a> {
    /// What it is.
    pub msm: &'static ProofMsm,
    /// Index of its first base in the query.
    pub offset: usize,
    /// Its scalars.
    pub scalars: &'a [Scalar],
    /// Which scalars have a base, in order (`None`: all).
    pub density: Option<&'a DensityTracker>,
}

/// A proof's three densities (A over aux, B over inputs, B over aux), wherever they live: in
/// an assignment, or in a compiled circuit.
#[derive(Debug, Clone, Copy)]
pub struct Densities<'a> {
    /// The aux variables A uses.
    pub a_aux: &'a DensityTracker,
    /// The inputs B uses.
    pub b_inputs: &'a DensityTracker,
    /// The aux variables B uses.
    pub b_aux: &'a DensityTracker,
}

impl<'a> Densities<'a> {
    /// The density an MSM reads (`None` for [`Density::All`]).
    pub fn of(&self, d: Density) -> Option<&'a DensityTracker> {
        match d {
            Density::All => None,
            Density::AAux => Some(self.a_aux),
            Density::BInputs => Some(self.b_inputs),
            Density::BAux => Some(self.b_aux),
        }
    }

    /// Index of an MSM's first base in its query, for `inputs` public inputs.
    pub fn offset(&self, o: Offset, inputs: usize) -> usize {
        match o {
            Offset::Start => 0,
            Offset::AfterInputs => inputs,
            Offset::AfterBInputs => self.b_inputs.total_density(),
        }
    }
}

/// [`PROOF_MSMS`] bound to `assignment` (after synthesis; a/b/c may be released).
pub fn resolve(assignment: &ProvingAssignment) -> [BoundMsm<'_>; 7] {
    let inputs = assignment.input_assignment();
    let d = Densities {
        a_aux: assignment.a_aux_density(),
        b_inputs: assignment.b_input_density(),
        b_aux: assignment.b_aux_density(),
    };
    PROOF_MSMS.each_ref().map(|msm| BoundMsm {
        msm,
        offset: d.offset(msm.offset, inputs.len()),
        scalars: match msm.scalars {
            Scalars::Inputs => inputs,
            Scalars::Aux => assignment.aux_assignment(),
        },
        density: d.of(msm.density),
    })
}

/// The four commitments the MSMs add up to.
#[derive(Debug, Clone, Copy)]
pub struct Sums {
    /// Σ of the L MSM.
    pub l: G1Projective,
    /// Σ of the A MSMs.
    pub a: G1Projective,
    /// Σ of the B_G1 MSMs.
    pub b_g1: G1Projective,
    /// Σ of the B_G2 MSMs.
    pub b_g2: G2Projective,
}

impl Default for Sums {
    fn default() -> Self {
        Self {
            l: G1Projective::identity(),
            a: G1Projective::identity(),
            b_g1: G1Projective::identity(),
            b_g2: G2Projective::identity(),
        }
    }
}

impl Sums {
    /// Adds a G1 MSM's sum to its commitment.
    ///
    /// # Panics
    /// For [`Query::BG2`] (a G2 query: a caller's bug).
    pub fn add_g1(&mut self, query: Query, p: G1Projective) {
        match query {
            Query::L => self.l += p,
            Query::A => self.a += p,
            Query::BG1 => self.b_g1 += p,
            Query::BG2 => panic!("B_G2 is a G2 query"),
        }
    }

    /// Adds a G2 MSM's sum (B_G2's).
    pub fn add_g2(&mut self, p: G2Projective) {
        self.b_g2 += p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prover::Timings;
    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use ff::Field;
    use std::time::Duration;

    /// x·y = z with x, z public and y private, plus an aux variable only C uses: the densities
    /// differ from query to query.
    fn assignment() -> ProvingAssignment {
        let mut cs = ProvingAssignment::new_heap();
        let one = ProvingAssignment::one();
        let run = |cs: &mut ProvingAssignment| -> Result<(), SynthesisError> {
            // the prover allocates the constant 1 as the first input
            cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
            let z = cs.alloc_input(|| "z", || Ok(Scalar::from(15u64)))?;
            let w = cs.alloc(|| "w", || Ok(Scalar::from(15u64)))?;
            cs.enforce(|| "x*y=z", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            cs.enforce(|| "w=z", |lc| lc + one, |lc| lc + z, |lc| lc + w);
            Ok(())
        };
        run(&mut cs).unwrap();
        cs
    }

    #[test]
    fn seven_msms_cover_every_query_part_once() {
        let mut seen = Vec::new();
        for m in &PROOF_MSMS {
            seen.push((m.query, m.scalars));
            // an inputs part starts at the query's first base, an aux part after the inputs
            assert_eq!(
                m.offset == Offset::Start,
                m.scalars == Scalars::Inputs || m.query == Query::L,
                "{}",
                m.name
            );
        }
        for q in [Query::A, Query::BG1, Query::BG2] {
            assert!(
                seen.contains(&(q, Scalars::Inputs)) && seen.contains(&(q, Scalars::Aux)),
                "{q:?}"
            );
        }
        assert_eq!(seen.iter().filter(|(q, _)| *q == Query::L).count(), 1);
        assert_eq!(seen.len(), 7);
        // The CUDA backend stages aux for the batch's first job during H: it reads all of aux
        // from its query's first base.
        let first = PROOF_MSMS[0];
        assert_eq!(
            (first.scalars, first.offset, first.density),
            (Scalars::Aux, Offset::Start, Density::All)
        );
        assert_eq!(PROOF_MSM_NAMES[4], "B_G1 (aux)");
    }

    #[test]
    fn resolve_binds_offsets_scalars_and_densities() {
        let cs = assignment();
        let bound = resolve(&cs);
        let inputs = cs.input_assignment().len();
        let b_inputs = cs.b_input_density().total_density();
        assert_eq!(inputs, 3, "one, x, z");
        // B uses y (aux) and z (input) only: fewer B inputs than inputs, so the offsets differ
        assert_eq!(b_inputs, 1);
        for m in &bound {
            let (offset, scalars, density) = match (m.msm.query, m.msm.scalars) {
                (Query::L, _) => (0, cs.aux_assignment(), None),
                (Query::A, Scalars::Inputs) => (0, cs.input_assignment(), None),
                (Query::A, Scalars::Aux) => (inputs, cs.aux_assignment(), Some(cs.a_aux_density())),
                (_, Scalars::Inputs) => (0, cs.input_assignment(), Some(cs.b_input_density())),
                (_, Scalars::Aux) => (b_inputs, cs.aux_assignment(), Some(cs.b_aux_density())),
            };
            assert_eq!(m.offset, offset, "{}", m.msm.name);
            assert_eq!(m.scalars, scalars, "{}", m.msm.name);
            assert_eq!(m.density, density, "{}", m.msm.name);
        }
        assert_eq!(cs.aux_assignment()[0], Scalar::from(5u64));
        assert!(cs.aux_assignment().iter().all(|v| *v != Scalar::ZERO));
    }

    #[test]
    fn sums_add_into_the_query_commitment() {
        let g = G1Projective::generator();
        let mut s = Sums::default();
        s.add_g1(Query::A, g);
        s.add_g1(Query::A, g);
        s.add_g1(Query::BG1, g);
        s.add_g2(G2Projective::generator());
        assert_eq!(s.a, g.double());
        assert_eq!(s.b_g1, g);
        assert_eq!(s.l, G1Projective::identity());
        assert_eq!(s.b_g2, G2Projective::generator());
        let mut t = Timings::default();
        *t.msm_slot(Query::BG2) += Duration::from_millis(3);
        assert_eq!(t.msm_b_g2, Duration::from_millis(3));
    }
}
