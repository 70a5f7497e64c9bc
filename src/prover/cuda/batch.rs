//! The batch runner: a proof's commitments once its parameters are on the device — the H call
//! over an assignment's a, b, c, then the L, A, B MSMs after H ([`PROOF_MSMS`]), in one
//! batched kernel call (which the witness path ends in too) or one by one.

use std::ffi::c_void;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::bases::{msm, DeviceCurve, Staged};
use super::error::{check, check_jobs};
use super::ffi;
use super::residency::{Residency, Resident};
use crate::assignment::{DensityTracker, ProvingAssignment};
use crate::curve::{G1, G2};
use crate::error::Result;
use crate::params::Parameters;
use crate::prover::msm_plan::{resolve, ProofMsm, Sums, PROOF_MSMS, PROOF_MSM_NAMES};
use crate::prover::{Backend, Commitments, Timings};

/// One job of the batch after H: an MSM of [`PROOF_MSMS`] over `n` scalars at `scalars` (host
/// memory, or the name of a staged device vector).
pub(super) struct JobSpec<'a> {
    pub(super) msm: &'static ProofMsm,
    pub(super) offset: usize,
    pub(super) scalars: *const c_void,
    pub(super) n: usize,
    pub(super) density: Option<&'a DensityTracker>,
}

/// The batch's first job (PROOF_MSMS[0]: L over all of aux, from its first base) over `n`
/// scalars at `scalars`, for the H call: over streamed bases it copies the job's first chunk
/// during the H MSM's last one. Only its bases, offset, scalars and density are read.
pub(super) fn first_job(dev: &Resident, scalars: *const c_void, n: usize) -> ffi::KMsmJob {
    ffi::KMsmJob {
        bases: dev.query(PROOF_MSMS[0].query).raw,
        base_offset: 0,
        host_scalars: scalars,
        n,
        density_bits: std::ptr::null(),
        out_jacobian: std::ptr::null_mut(),
    }
}

/// How a proof's MSMs after H run: batched (the default) or one call each.
pub(super) struct BatchRunner {
    /// L, A, B_G1 and B_G2 in one batched call (uploads overlap compute), or separate calls,
    /// each timed on its own.
    batched: bool,
}

impl BatchRunner {
    /// A runner that batches the MSMs (`batched`) or runs them one by one.
    pub(super) fn new(batched: bool) -> Self {
        Self { batched }
    }

    /// Whether the MSMs run as one batched call.
    pub(super) fn is_batched(&self) -> bool {
        self.batched
    }

    /// The assignment path's commitments over `residency`'s copy of `params`: H from a, b, c
    /// (the H call also stages aux for the batch), then the L, A, B MSMs. The caller has
    /// checked that the device is not lost.
    pub(super) fn commitments(
        &self,
        residency: &Residency,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        if params.domain_size() < 2 {
            // A circuit without constraints: a domain of one point, no H coefficients, at most
            // a few points per query. The kernels take domains of 2^1 and up; the CPU backend
            // computes the same bytes in microseconds.
            return crate::prover::cpu::CpuBackend.commitments(assignment, params, t);
        }
        let dev = match residency.resident(params) {
            Ok(d) => d,
            Err(e) => {
                assignment.release_abc();
                return Err(e);
            }
        };
        residency.clear_for_streamed_proof(&dev, params.id());
        let keep = Some(params.id());
        let start = Instant::now();
        let log_m = params.domain_size().trailing_zeros();
        let mut h = G1Projective::identity();
        // The batch reads the aux vector (L, A, B): the H call copies it to the device while
        // its MSM computes. The batch matches it by pointer and length; release_abc below
        // does not touch aux.
        let stage = if self.batched { assignment.aux_assignment() } else { &[] };
        let (stage_ptr, stage_n) = (stage.as_ptr().cast::<c_void>(), stage.len());
        let next_job = first_job(&dev, stage_ptr, stage_n);
        let mut staged = Staged(std::ptr::null_mut());
        let result = residency.with_oom_retry(keep, || {
            let (a, b, c) = (assignment.a(), assignment.b(), assignment.c());
            let ret: &mut blst::blst_p1 = h.as_mut();
            let mut raw = std::ptr::null_mut();
            // SAFETY: a, b, c are a.len() live scalars each (blst_fr layout; equal lengths by
            // construction of the assignment); h_out is null (not wanted); `ret` is a blst_p1;
            // the H bases hold m − 1 points (check_assignment: the domain size matches the
            // parameters); stage_ptr is stage_n live scalars (aux, borrowed from the
            // assignment, which nothing mutates before the batch); next_job describes the L
            // bases (live for `dev`'s lifetime) over those same scalars; `raw` is a valid
            // out-pointer. The call waits for its copies on every path, so a/b/c may go back
            // to the pool as soon as it returns.
            let r = unsafe {
                ffi::cuzk_k_compute_h_msm_staged(
                    dev.h().raw,
                    a.as_ptr().cast::<c_void>(),
                    b.as_ptr().cast::<c_void>(),
                    c.as_ptr().cast::<c_void>(),
                    a.len(),
                    log_m,
                    std::ptr::null_mut(),
                    (ret as *mut blst::blst_p1).cast::<c_void>(),
                    stage_ptr,
                    stage_n,
                    if stage_n > 0 { &next_job } else { std::ptr::null() },
                    &mut raw,
                )
            };
            staged = Staged(raw);
            check("cuzk_k_compute_h_msm_staged", r)
        });
        // a/b/c are on the device (or the call failed): either way the buffers go back now.
        assignment.release_abc();
        result?;
        t.h += start.elapsed();

        let msms = resolve(assignment);
        let mut sums = Sums::default();
        if !self.batched {
            for m in &msms {
                let s = Instant::now();
                let bases = dev.query(m.msm.query);
                let density = m.density.map(DensityTracker::words);
                if m.msm.query.is_g2() {
                    sums.add_g2(residency.with_oom_retry(keep, || msm::<G2>(bases, m.offset, m.scalars, density))?);
                } else {
                    let p = residency.with_oom_retry(keep, || msm::<G1>(bases, m.offset, m.scalars, density))?;
                    sums.add_g1(m.msm.query, p);
                }
                *t.msm_slot(m.msm.query) += s.elapsed();
            }
            let Sums { l, a, b_g1, b_g2 } = sums;
            return Ok(Commitments { h, l, a, b_g1, b_g2 });
        }

        let jobs: Vec<JobSpec<'_>> = msms
            .iter()
            .map(|m| JobSpec {
                msm: m.msm,
                offset: m.offset,
                scalars: m.scalars.as_ptr().cast::<c_void>(),
                n: m.scalars.len(),
                density: m.density,
            })
            .collect();
        // SAFETY: every spec's scalars are a live slice of the assignment (blst_fr layout) with
        // its exact length, borrowed until run_batch returns; `staged` is null or the H call's
        // copy of this same aux, unchanged since.
        let sums = unsafe { self.run_batch(residency, &dev, keep, &jobs, &staged, t)? };
        let Sums { l, a, b_g1, b_g2 } = sums;
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }

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
        residency: &Residency,
        dev: &Resident,
        keep: Option<u64>,
        specs: &[JobSpec<'_>],
        staged: &Staged,
        t: &mut Timings,
    ) -> Result<Sums> {
        let s = Instant::now();
        let mut g1 = [G1Projective::identity(); PROOF_MSMS.len()];
        let mut g2 = [G2Projective::identity(); PROOF_MSMS.len()];
        residency.with_oom_retry(keep, || {
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
