//! The CPU backend: H by NTTs, the five MSMs by blst's Pippenger, all spread over rayon.

pub mod msm;
pub mod ntt;

use std::time::Instant;

use blstrs::Scalar;
use ff::Field;

use super::{Backend, Commitments, Timings};
use crate::assignment::ProvingAssignment;
use crate::error::Result;
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

        let inputs = assignment.input_assignment();
        let aux = assignment.aux_assignment();
        let num_inputs = inputs.len();
        let b_inputs = assignment.b_input_density().total_density();

        let timed = |slot: &mut std::time::Duration, f: &dyn Fn() -> Result<blstrs::G1Projective>| {
            let s = Instant::now();
            let r = f();
            *slot += s.elapsed();
            r
        };
        let h = timed(&mut t.msm_h, &|| msm::msm::<msm::G1>(params.h(), &h, None))?;
        let l = timed(&mut t.msm_l, &|| msm::msm::<msm::G1>(params.l(), aux, None))?;
        // check_assignment: A holds the inputs then the A-dense aux, B the B-dense inputs then
        // aux, so these splits are in range.
        let (a_in, a_aux) = params.a().split_at(num_inputs);
        let (b1_in, b1_aux) = params.b_g1().split_at(b_inputs);
        let (b2_in, b2_aux) = params.b_g2().split_at(b_inputs);
        let a = timed(&mut t.msm_a, &|| {
            let inputs_part = msm::msm::<msm::G1>(a_in, inputs, None)?;
            let aux_part = msm::msm::<msm::G1>(a_aux, aux, Some(assignment.a_aux_density()))?;
            Ok(inputs_part + aux_part)
        })?;
        let b_g1 = timed(&mut t.msm_b_g1, &|| {
            let inputs_part = msm::msm::<msm::G1>(b1_in, inputs, Some(assignment.b_input_density()))?;
            let aux_part = msm::msm::<msm::G1>(b1_aux, aux, Some(assignment.b_aux_density()))?;
            Ok(inputs_part + aux_part)
        })?;
        let s = Instant::now();
        let b_g2 = msm::msm::<msm::G2>(b2_in, inputs, Some(assignment.b_input_density()))?
            + msm::msm::<msm::G2>(b2_aux, aux, Some(assignment.b_aux_density()))?;
        t.msm_b_g2 += s.elapsed();
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }
}
