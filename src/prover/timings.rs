//! [`Timings`]: where the time of a proof (or a batch) went, phase by phase.

use std::fmt;
use std::time::Duration;

use super::msm_plan::Query;

/// Where the time of a `prove` went, summed over the proofs of a batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timings {
    /// Filling assignments (or witnesses) from circuits.
    pub synthesis: Duration,
    /// a, b, c from a compiled circuit and a witness on the host (the witness path on the
    /// CPU backend, or wherever the device evaluation is not used); zero on the full path and
    /// when the device evaluates them (inside `h` then).
    pub evaluation: Duration,
    /// H = (A·B − C)/Z by NTTs.
    pub h: Duration,
    /// The H MSM.
    pub msm_h: Duration,
    /// The L MSM.
    pub msm_l: Duration,
    /// The A MSM (inputs and aux).
    pub msm_a: Duration,
    /// The B MSM in G1.
    pub msm_b_g1: Duration,
    /// The B MSM in G2.
    pub msm_b_g2: Duration,
    /// The L, A, B_G1 and B_G2 MSMs run as one batched call (CUDA backend; then the four
    /// fields above stay zero and `h` includes the H MSM, fused with H on the device).
    pub msm_batch: Duration,
    /// Randomising with r, s and encoding.
    pub tail: Duration,
    /// Everything, synthesis included.
    pub total: Duration,
}

impl fmt::Display for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(f, "synthesis {:.1} ms, ", ms(self.synthesis))?;
        if self.evaluation > Duration::ZERO {
            write!(f, "a/b/c on the host {:.1} ms, ", ms(self.evaluation))?;
        }
        write!(f, "H {:.1} ms, ", ms(self.h))?;
        if self.msm_batch > Duration::ZERO {
            write!(f, "MSMs L+A+B_G1+B_G2 batched {:.1} ms", ms(self.msm_batch))?;
        } else {
            write!(
                f,
                "MSM H {:.1} / L {:.1} / A {:.1} / B_G1 {:.1} / B_G2 {:.1} ms",
                ms(self.msm_h),
                ms(self.msm_l),
                ms(self.msm_a),
                ms(self.msm_b_g1),
                ms(self.msm_b_g2)
            )?;
        }
        write!(f, ", tail {:.1} ms, total {:.1} ms", ms(self.tail), ms(self.total))
    }
}

impl Timings {
    /// The time slot of a query's MSMs.
    pub fn msm_slot(&mut self, query: Query) -> &mut Duration {
        match query {
            Query::L => &mut self.msm_l,
            Query::A => &mut self.msm_a,
            Query::BG1 => &mut self.msm_b_g1,
            Query::BG2 => &mut self.msm_b_g2,
        }
    }
}
