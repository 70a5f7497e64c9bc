//! The CPU backend: H by NTTs, the five MSMs by blst's Pippenger, all spread over rayon.

pub mod msm;
pub mod ntt;

use std::time::Instant;

use blstrs::Scalar;
use ff::Field;

use super::msm_plan::{resolve, BoundMsm, Query, Sums};
use super::{Backend, Commitments, Timings};
use crate::assignment::ProvingAssignment;
use crate::error::{Error, Result};
use crate::params::Parameters;

/// Proves on the host's cores.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        let result = self.commitments_inner(assignment, params, t);
        // On success a/b/c went back right after H; on an early error they go back here.
        assignment.release_abc();
        result
    }
}

impl CpuBackend {
    fn commitments_inner(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        let start = Instant::now();
        // The prover checked already; the backend can also be called directly.
        super::check_assignment(assignment, params)?;
        params.require_host_copy("proving on the CPU")?;
        let domain = ntt::Domain::new(params.domain_size().trailing_zeros())?;
        let m = domain.size();
        let padded = |v: &[Scalar]| -> Result<Vec<Scalar>> {
            let mut out = Vec::new();
            out.try_reserve_exact(m)
                .map_err(|e| crate::pool::heap_error(m, std::mem::size_of::<Scalar>(), &e))?;
            out.extend_from_slice(v);
            out.resize(m, Scalar::ZERO);
            Ok(out)
        };
        let mut h = padded(assignment.a())?;
        let mut b = padded(assignment.b())?;
        let mut c = padded(assignment.c())?;
        // a/b/c are copied into the NTT's working vectors: the pinned buffers can go back.
        assignment.release_abc();
        ntt::compute_h(&domain, &mut h, &mut b, &mut c)?;
        drop((b, c));
        t.h += start.elapsed();

        let s = Instant::now();
        let h = msm::msm::<msm::G1>(params.h(), &h, None)?;
        t.msm_h += s.elapsed();
        let mut sums = Sums::default();
        for m in resolve(assignment) {
            let s = Instant::now();
            let g1 = |query: &[blstrs::G1Affine]| msm::msm::<msm::G1>(bases_from(query, &m)?, m.scalars, m.density);
            match m.msm.query {
                Query::L => sums.l += g1(params.l())?,
                Query::A => sums.a += g1(params.a())?,
                Query::BG1 => sums.b_g1 += g1(params.b_g1())?,
                Query::BG2 => sums.b_g2 += msm::msm::<msm::G2>(bases_from(params.b_g2(), &m)?, m.scalars, m.density)?,
            }
            *t.msm_slot(m.msm.query) += s.elapsed();
        }
        let Sums { l, a, b_g1, b_g2 } = sums;
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }
}

/// An MSM's bases: its query from the MSM's offset. check_assignment keeps the offsets in range
/// (each query holds its input part, then its aux part); the error is for a backend called
/// with other parameters.
fn bases_from<'p, A>(query: &'p [A], m: &BoundMsm<'_>) -> Result<&'p [A]> {
    query.get(m.offset..).ok_or_else(|| {
        Error::CircuitMismatch(format!(
            "MSM {}: its bases start at {}, the parameters' query has {}",
            m.msm.name,
            m.offset,
            query.len()
        ))
    })
}
