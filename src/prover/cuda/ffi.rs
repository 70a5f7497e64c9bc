//! The extern "C" API of `kernels/` (see `kernels/cuzk_kernels.h`), and its result type.
//!
//! Only declarations live here; `super` wraps every call in a safe function that checks the
//! result.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `cuzk_kresult`: code 0 = success, > 0 a `cudaError_t`, < 0 an argument or internal error;
/// on failure, the phase (`CUZK_K_PHASE_*`) and index the call was in.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KResult {
    pub code: i32,
    pub message: *const c_char,
    pub phase: i32,
    pub index: i32,
}

/// `cuzk_k_device_info`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KDeviceInfo {
    pub cc_major: c_int,
    pub cc_minor: c_int,
    pub sm_count: c_int,
    pub binary_version: c_int,
    pub ptx_version: c_int,
    pub free_bytes: usize,
    pub total_bytes: usize,
    pub name: [c_char; 256],
}

impl KResult {
    /// The message as text.
    pub fn message(&self) -> String {
        if self.message.is_null() {
            return String::from("(no message)");
        }
        // SAFETY: the kernels' API promises `message` points at a static NUL-terminated string.
        unsafe { CStr::from_ptr(self.message) }.to_string_lossy().into_owned()
    }
}

/// `cuzk_k_mem_stats`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct KMemStats {
    pub limit: usize,
    pub used: usize,
    pub peak: usize,
    pub pool_reserved: usize,
    pub pool_reserved_high: usize,
}

/// Opaque device-resident bases.
#[repr(C)]
pub struct KBases {
    _private: [u8; 0],
}

/// Opaque staged scalars: a device copy the H call made for the batch that follows.
#[repr(C)]
pub struct KStaged {
    _private: [u8; 0],
}

/// `cuzk_k_msm_job`: one MSM of a batch.
#[repr(C)]
pub struct KCircuit {
    _private: [u8; 0],
}

#[repr(C)]
pub struct KDWitness {
    _private: [u8; 0],
}

#[repr(C)]
pub struct KWitness {
    pub inputs: *const c_void,
    pub num_inputs: usize,
    pub num_aux: usize,
    pub bit_mask: *const u64,
    pub bit_values: *const u64,
    pub others_before: *const u32,
    pub others: *const c_void,
    pub num_others: usize,
}

#[repr(C)]
pub struct KCircuitSizes {
    pub rows: usize,
    pub num_inputs: usize,
    pub num_aux: usize,
    pub num_constants: usize,
    pub num_words: [usize; 3],
}

/// The parts of a circuit uploaded in pieces (`CUZK_K_CIRCUIT_PART_*`).
pub const fn circuit_part_lens(k: usize) -> c_int {
    3 * k as c_int
}
pub const fn circuit_part_group_starts(k: usize) -> c_int {
    3 * k as c_int + 1
}
pub const fn circuit_part_words(k: usize) -> c_int {
    3 * k as c_int + 2
}
pub const CIRCUIT_PART_CONSTANTS: c_int = 9;

#[repr(C)]
pub struct KMsmJob {
    pub bases: *const KBases,
    pub base_offset: usize,
    pub host_scalars: *const c_void,
    pub n: usize,
    pub density_bits: *const u64,
    pub out_jacobian: *mut c_void,
}

extern "C" {
    pub fn cuzk_k_circuit_begin(device: c_int, sizes: *const KCircuitSizes, out: *mut *mut KCircuit) -> KResult;
    pub fn cuzk_k_circuit_put(
        circuit: *mut KCircuit,
        part: c_int,
        offset: usize,
        src: *const c_void,
        bytes: usize,
    ) -> KResult;
    pub fn cuzk_k_circuit_finish(circuit: *mut KCircuit) -> KResult;
    pub fn cuzk_k_circuit_free(circuit: *mut KCircuit) -> KResult;
    pub fn cuzk_k_dwitness_upload(
        circuit: *const KCircuit,
        witness: *const KWitness,
        out: *mut *mut KDWitness,
    ) -> KResult;
    pub fn cuzk_k_dwitness_free(witness: *mut KDWitness) -> KResult;
    pub fn cuzk_k_compute_h_msm_dwitness(
        h_bases: *const KBases,
        circuit: *const KCircuit,
        witness: *const KDWitness,
        log_m: u32,
        h_out: *mut c_void,
        out_jacobian: *mut c_void,
    ) -> KResult;
    pub fn cuzk_k_msm_aux_many(
        bases: *const KBases,
        base_offset: usize,
        density: *const u64,
        witnesses: *const *const KDWitness,
        k: usize,
        outs: *const *mut c_void,
    ) -> KResult;
    pub fn cuzk_k_circuit_bytes(circuit: *const KCircuit) -> usize;
    pub fn cuzk_k_compute_h_msm_witness(
        h_bases: *const KBases,
        circuit: *const KCircuit,
        witness: *const KWitness,
        log_m: u32,
        h_out: *mut c_void,
        out_jacobian: *mut c_void,
        aux_key: *const c_void,
        next_job: *const KMsmJob,
        staged: *mut *mut KStaged,
    ) -> KResult;
    pub fn cuzk_k_circuit_evaluate(
        circuit: *const KCircuit,
        witness: *const KWitness,
        a_out: *mut c_void,
        b_out: *mut c_void,
        c_out: *mut c_void,
        aux_out: *mut c_void,
    ) -> KResult;
    pub fn cuzk_k_device_probe(device: c_int, out: *mut KDeviceInfo) -> KResult;
    pub fn cuzk_k_device_mem_info(device: c_int, free_bytes: *mut usize, total_bytes: *mut usize) -> KResult;
    pub fn cuzk_k_device_release_caches(device: c_int) -> KResult;
    pub fn cuzk_k_device_set_limit(device: c_int, limit_bytes: usize, stream_chunk_points: usize) -> KResult;
    pub fn cuzk_k_device_mem_stats(device: c_int, reset_peak: c_int, out: *mut KMemStats) -> KResult;
    pub fn cuzk_k_bases_host_g1(device: c_int, host_points: *const c_void, n: usize, out: *mut *mut KBases) -> KResult;
    pub fn cuzk_k_bases_host_g2(device: c_int, host_points: *const c_void, n: usize, out: *mut *mut KBases) -> KResult;
    pub fn cuzk_k_bases_streamed(bases: *const KBases) -> c_int;
    #[cfg(feature = "fault-injection")]
    pub fn cuzk_k_fault_arm(phase: c_int, index: c_int, code: c_int, count: c_int) -> KResult;
    #[cfg(feature = "fault-injection")]
    pub fn cuzk_k_fault_fired() -> c_int;
    #[cfg(feature = "fault-injection")]
    pub fn cuzk_k_fault_streams_busy(device: c_int) -> c_int;
    pub fn cuzk_k_msm_batch_staged(jobs: *const KMsmJob, count: usize, staged: *const KStaged) -> KResult;
    pub fn cuzk_k_staged_free(staged: *mut KStaged) -> KResult;
    pub fn cuzk_k_device_count(out: *mut c_int) -> KResult;
    pub fn cuzk_k_bases_upload_g1(
        device: c_int,
        host_points: *const c_void,
        n: usize,
        out: *mut *mut KBases,
    ) -> KResult;
    pub fn cuzk_k_bases_upload_g2(
        device: c_int,
        host_points: *const c_void,
        n: usize,
        out: *mut *mut KBases,
    ) -> KResult;
    pub fn cuzk_k_bases_free(bases: *mut KBases) -> KResult;
    pub fn cuzk_k_bases_len(bases: *const KBases) -> usize;
    pub fn cuzk_k_msm_g1(
        bases: *const KBases,
        base_offset: usize,
        host_scalars: *const c_void,
        n: usize,
        density_bits: *const u64,
        out_jacobian: *mut c_void,
    ) -> KResult;
    pub fn cuzk_k_msm_g2(
        bases: *const KBases,
        base_offset: usize,
        host_scalars: *const c_void,
        n: usize,
        density_bits: *const u64,
        out_jacobian: *mut c_void,
    ) -> KResult;
    pub fn cuzk_k_compute_h(
        device: c_int,
        a: *const c_void,
        b: *const c_void,
        c: *const c_void,
        n: usize,
        log_m: u32,
        h_out: *mut c_void,
    ) -> KResult;
    #[allow(clippy::too_many_arguments)]
    pub fn cuzk_k_compute_h_msm_staged(
        h_bases: *const KBases,
        a: *const c_void,
        b: *const c_void,
        c: *const c_void,
        n: usize,
        log_m: u32,
        h_out: *mut c_void,
        out_jacobian: *mut c_void,
        stage_scalars: *const c_void,
        stage_n: usize,
        next_job: *const KMsmJob,
        staged: *mut *mut KStaged,
    ) -> KResult;
}
