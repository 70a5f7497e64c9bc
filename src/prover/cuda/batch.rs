//! The batch runner: the seven MSMs after H ([`PROOF_MSMS`]) in one batched kernel call.

use std::ffi::c_void;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::backend::CudaBackend;
use super::bases::{DeviceCurve, Staged};
use super::error::check_jobs;
use super::ffi;
use super::residency::Resident;
use crate::assignment::DensityTracker;
use crate::curve::{G1, G2};
use crate::error::Result;
use crate::prover::msm_plan::{ProofMsm, Sums, PROOF_MSMS, PROOF_MSM_NAMES};
use crate::prover::Timings;

/// One job of the batch after H: an MSM of [`PROOF_MSMS`] over `n` scalars at `scalars` (host
/// memory, or the name of a staged device vector).
pub(super) struct JobSpec<'a> {
    pub(super) msm: &'static ProofMsm,
    pub(super) offset: usize,
    pub(super) scalars: *const c_void,
    pub(super) n: usize,
    pub(super) density: Option<&'a DensityTracker>,
}

impl CudaBackend {
    /// The seven MSMs in one batched call: the kernels upload each scalar vector once, the
    /// next job's while the current one computes, and jobs over the staged vector read its
    /// device copy.
    ///
    /// # Safety
    /// Every spec's `scalars` is `n` live scalars (blst_fr layout) for the duration of the
    /// call, or (with the same `n`) the name of `staged`'s device-only vector; `staged` is
    /// null or a live handle of this device whose host vector, if any, is unchanged since it
    /// was staged.
    pub(super) unsafe fn run_batch(
        &self,
        dev: &Resident,
        keep: Option<u64>,
        specs: &[JobSpec<'_>],
        staged: &Staged,
        t: &mut Timings,
    ) -> Result<Sums> {
        let s = Instant::now();
        let mut g1 = [G1Projective::identity(); PROOF_MSMS.len()];
        let mut g2 = [G2Projective::identity(); PROOF_MSMS.len()];
        self.with_oom_retry(keep, || {
            let jobs: Vec<ffi::KMsmJob> = specs
                .iter()
                .zip(g1.iter_mut().zip(g2.iter_mut()))
                .map(|(m, (p1, p2))| ffi::KMsmJob {
                    bases: dev.query(m.msm.query).raw,
                    base_offset: m.offset,
                    host_scalars: m.scalars,
                    n: m.n,
                    density_bits: m.density.map_or(std::ptr::null(), |d| d.words().as_ptr()),
                    out_jacobian: if m.msm.query.is_g2() {
                        G2::jacobian_out(p2)
                    } else {
                        G1::jacobian_out(p1)
                    },
                })
                .collect();
            // SAFETY: every job points at live bases handles, its scalars (the caller's
            // promise), density words covering them (one word per 64 variables), and an output
            // of the bases' group (blst_p1 for G1, blst_p2 for G2), all borrowed until the call
            // returns; it waits for its copies on every path. `staged.0` is null or live.
            let r = unsafe { ffi::cuzk_k_msm_batch_staged(jobs.as_ptr(), jobs.len(), staged.0) };
            check_jobs("cuzk_k_msm_batch_staged", r, &PROOF_MSM_NAMES)
        })?;
        t.msm_batch += s.elapsed();
        let mut sums = Sums::default();
        for (m, (p1, p2)) in specs.iter().zip(g1.iter().zip(g2.iter())) {
            if m.msm.query.is_g2() {
                sums.add_g2(*p2);
            } else {
                sums.add_g1(m.msm.query, *p1);
            }
        }
        Ok(sums)
    }
}
