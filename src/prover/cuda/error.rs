//! CUDA errors as the crate's: a kernel result checked and named by its call and phase, the
//! sticky codes that lose a device, out-of-memory recognised for the one retry.

use super::ffi;
use crate::error::{Error, Result};
use crate::prover::kernel_contract::phase;

/// CUDA error codes after which the device's context is unusable for the rest of the process
/// (devices unavailable, uncorrectable ECC, illegal address, launch timeout, context
/// destroyed, device assert, hardware stack error, illegal instruction, misaligned address,
/// invalid address space, invalid PC, launch failure, unknown — what an Xid looks like).
pub(super) const STICKY_CODES: &[i32] = &[46, 214, 700, 702, 709, 710, 714, 715, 716, 717, 718, 719, 999];

/// `cudaErrorMemoryAllocation`.
pub(super) const OUT_OF_MEMORY: i32 = 2;

/// Where a failed kernel call was, from the phase the kernels report (`CUZK_K_PHASE_*`).
pub(super) fn phase_name(r: &ffi::KResult, jobs: &[&str]) -> String {
    match r.phase {
        phase::UPLOAD => "parameter upload".into(),
        phase::ABC_COPY => "a/b/c copy to the device".into(),
        phase::NTT => match r.index {
            phase::NTT_POINTWISE => "H: pointwise A·B/Z".into(),
            phase::NTT_INVERSE => "H: inverse NTT".into(),
            phase::NTT_GATHER => "H: gather".into(),
            i => {
                let v = ["a", "b", "c"].get((i / 3) as usize).copied().unwrap_or("?");
                let step = match (i / 3, i % 3) {
                    (_, 0) => "inverse NTT",
                    (2, _) => "inverse NTT (last stages)",
                    (_, 1) => "inverse NTT (last stages, coset scale)",
                    _ => "coset NTT",
                };
                format!("H: {step} of {v} (NTT step {i})")
            }
        },
        phase::H_MSM => "H MSM".into(),
        phase::MSM_JOB => match jobs.get(r.index as usize) {
            Some(name) => format!("MSM {name} (batched job {})", r.index),
            None => format!("batched MSM job {}", r.index),
        },
        phase::MSM => "MSM".into(),
        _ => "setup".into(),
    }
}

/// Turns a kernel result into a `Result`, naming the call and the phase it failed in.
pub(super) fn check(call: &'static str, r: ffi::KResult) -> Result<()> {
    check_jobs(call, r, &[])
}

pub(super) fn check_jobs(call: &'static str, r: ffi::KResult, jobs: &[&str]) -> Result<()> {
    if r.code == 0 {
        Ok(())
    } else {
        Err(Error::Cuda {
            call,
            code: r.code,
            message: format!("{}: {}", phase_name(&r, jobs), r.message()),
        })
    }
}

pub(super) fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Cuda { code, .. } if *code == OUT_OF_MEMORY)
}
