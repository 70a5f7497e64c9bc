//! Fault injection for tests (feature `fault-injection` only; absent from normal builds): make
//! the next kernel call that reaches a phase fail there with a chosen CUDA error, once.

use std::sync::Arc;

use super::ffi;
use crate::prover::kernel_contract::phase;
use crate::prover::Backend;

/// Where to fail (`CUZK_K_PHASE_*` in `kernels/cuzk_kernels.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Phase {
    /// Parameter upload, after the copy.
    Upload = phase::UPLOAD,
    /// All three a/b/c copies queued, none finished.
    AbcCopy = phase::ABC_COPY,
    /// An H step: index 3k, 3k+1, 3k+2 (k = a, b) = inverse NTT, its last stages with the
    /// coset scale, coset NTT; 9 pointwise A·B/Z; 6, 7 c's inverse NTT and its last stages
    /// (c has no coset NTT: 8 is unused); 10 inverse NTT, 11 gather.
    Ntt = phase::NTT,
    /// Before the H MSM.
    HMsm = phase::H_MSM,
    /// Batched MSM job `index` (0 L, 1–2 A, 3–4 B_G1, 5–6 B_G2), the next job's copy in flight.
    MsmJob = phase::MSM_JOB,
    /// A single MSM call.
    Msm = phase::MSM,
}

/// `cudaErrorMemoryAllocation`.
pub const OUT_OF_MEMORY: i32 = 2;
/// `cudaErrorLaunchOutOfResources` (not sticky).
pub const LAUNCH_OUT_OF_RESOURCES: i32 = 701;
/// `cudaErrorIllegalAddress` (sticky: the device is lost).
pub const ILLEGAL_ADDRESS: i32 = 700;
/// `cudaErrorLaunchFailure` (sticky: the device is lost).
pub const LAUNCH_FAILURE: i32 = 719;

/// Arms a fault: the next `count` calls reaching (`phase`, `index`; index −1 = any) fail
/// there with CUDA error `code`. Two out-of-memory faults defeat the backend's one retry.
pub fn arm(phase: Phase, index: i32, code: i32, count: i32) {
    // SAFETY: plain integers; the kernels guard the state with a mutex.
    unsafe { ffi::cuzk_k_fault_arm(phase as i32, index, code, count) };
}

/// Disarms a fault that has not fired.
pub fn disarm() {
    // SAFETY: as above; count 0 disarms.
    unsafe { ffi::cuzk_k_fault_arm(0, -1, 0, 0) };
}

/// Whether work is still queued on cuzk's streams of `device` (without waiting for it).
/// Right after any call has returned, this must be false: no call outlives its inputs.
pub fn streams_busy(device: usize) -> bool {
    // SAFETY: a plain ordinal; an unknown device answers 0.
    unsafe { ffi::cuzk_k_fault_streams_busy(device as i32) != 0 }
}

/// Faults fired so far in this process.
pub fn fired() -> i32 {
    // SAFETY: no arguments; reads a counter under the kernels' mutex.
    unsafe { ffi::cuzk_k_fault_fired() }
}

/// `BackendChoice::Auto`'s policy over `primary` (a backend a test armed faults for): prove on
/// it while it is usable, on the CPU once it reports itself lost.
pub fn with_cpu_fallback(primary: Arc<dyn Backend>) -> Arc<dyn Backend> {
    crate::prover::with_cpu_fallback(primary)
}
