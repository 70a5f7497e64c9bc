//! The CUDA backend: H (NTTs) and all five MSMs on the GPU, parameters resident on the device
//! or, when they do not fit, streamed to it from pinned host memory.
//!
//! a/b/c go host→device straight from the assignment's (pinned) buffers inside
//! `cuzk_k_compute_h_msm_staged`, which also runs the H MSM without H leaving the device and,
//! while that MSM computes, copies the aux vector that the batched L/A/B MSMs read next (so
//! only a's copy is exposed); the buffers go back to the pool right after. The parameters' five query vectors are uploaded
//! once per [`Parameters`] and stay on the device (least recently used evicted first when a
//! new set would exceed the residency cap), so a proof moves only its own a/b/c and witness.
//!
//! **Streamed mode.** A set whose query vectors and a proof's working set do not fit under the
//! backend's device memory limit ([`CudaBackend::set_memory_limit`]; default: the device's free
//! memory when probed; `CUZK_GPU_MEMORY_LIMIT` sets it at start) is not uploaded: its host
//! vectors are page-locked once (`cudaHostRegister`) and every MSM copies the bases it needs
//! in chunks, double-buffered on the copy stream while the previous chunk computes. Every MSM
//! still runs on the GPU and the proof bytes are the same as in resident mode.

mod ffi;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;
use parking_lot::Mutex;

use super::kernel_contract::{err, phase};
use super::{Backend, Commitments, Timings};
use crate::assignment::{DensityTracker, ProvingAssignment};
use crate::error::{Error, Result};
use crate::params::Parameters;

/// CUDA error codes after which the device's context is unusable for the rest of the process
/// (devices unavailable, uncorrectable ECC, illegal address, launch timeout, context
/// destroyed, device assert, hardware stack error, illegal instruction, misaligned address,
/// invalid address space, invalid PC, launch failure, unknown — what an Xid looks like).
const STICKY_CODES: &[i32] = &[46, 214, 700, 702, 709, 710, 714, 715, 716, 717, 718, 719, 999];

/// `cudaErrorMemoryAllocation`.
const OUT_OF_MEMORY: i32 = 2;

/// Where a failed kernel call was, from the phase the kernels report (`CUZK_K_PHASE_*`).
fn phase_name(r: &ffi::KResult, jobs: &[&str]) -> String {
    match r.phase {
        phase::UPLOAD => "parameter upload".into(),
        phase::ABC_COPY => "a/b/c copy to the device".into(),
        phase::NTT => match r.index {
            phase::NTT_POINTWISE => "H: pointwise (A·B − C)/Z".into(),
            phase::NTT_INVERSE => "H: inverse NTT".into(),
            phase::NTT_GATHER => "H: gather".into(),
            i => {
                let v = ["a", "b", "c"].get((i / 3) as usize).copied().unwrap_or("?");
                let step = ["inverse NTT", "inverse NTT (last stages, coset scale)", "coset NTT"]
                    [(i % 3).unsigned_abs() as usize];
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
fn check(call: &'static str, r: ffi::KResult) -> Result<()> {
    check_jobs(call, r, &[])
}

fn check_jobs(call: &'static str, r: ffi::KResult, jobs: &[&str]) -> Result<()> {
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

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Cuda { code, .. } if *code == OUT_OF_MEMORY)
}

/// Number of CUDA devices the driver sees.
///
/// # Errors
/// [`Error::Cuda`] when the driver cannot be initialised (no GPU, no driver).
pub fn device_count() -> Result<usize> {
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer for the duration of the call.
    check("cuzk_k_device_count", unsafe { ffi::cuzk_k_device_count(&mut n) })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// What the device probe found on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device ordinal.
    pub device: usize,
    /// The GPU's name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Version (10·major + minor) of the code the driver picked for this GPU.
    pub binary_version: u32,
    /// Free device memory when probed, bytes.
    pub free_bytes: usize,
    /// Total device memory, bytes.
    pub total_bytes: usize,
}

/// The SM architectures this build holds SASS for (`CUZK_CUDA_ARCHS` at build time); the
/// last one also as PTX.
pub const BUILT_ARCHS: &str = env!("CUZK_BUILT_ARCHS");

/// Device memory a GPU must have free to be used at all (a 2^10 proof needs far less; this
/// keeps a nearly full GPU from being picked).
pub const MIN_FREE_BYTES: usize = 256 << 20;

/// Checks that GPU `device` can prove: it exists, this build holds code for its architecture,
/// a real kernel launches and returns the right value, and it has [`MIN_FREE_BYTES`] free.
///
/// # Errors
/// [`Error::NoGpu`] saying which check failed.
pub fn probe(device: usize) -> Result<DeviceInfo> {
    let count = device_count().map_err(|e| Error::NoGpu(format!("CUDA driver: {e}")))?;
    if device >= count {
        return Err(Error::NoGpu(format!("GPU {device} requested, the driver sees {count}")));
    }
    let ordinal = i32::try_from(device).map_err(|_| Error::NoGpu(format!("GPU ordinal {device}")))?;
    // SAFETY: KDeviceInfo is plain data (integers and a char array): all zeros is valid.
    let mut info: ffi::KDeviceInfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer for the duration of the call.
    let r = unsafe { ffi::cuzk_k_device_probe(ordinal, &mut info) };
    if r.code != 0 {
        return Err(Error::NoGpu(format!(
            "GPU {device} failed the probe ({}, code {}); this build has code for sm_{{{BUILT_ARCHS}}}",
            r.message(),
            r.code
        )));
    }
    let name: String = info
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    let info = DeviceInfo {
        device,
        name,
        compute_capability: (info.cc_major.max(0) as u32, info.cc_minor.max(0) as u32),
        sm_count: info.sm_count.max(0) as u32,
        binary_version: info.binary_version.max(0) as u32,
        free_bytes: info.free_bytes,
        total_bytes: info.total_bytes,
    };
    if info.free_bytes < MIN_FREE_BYTES {
        return Err(Error::NoGpu(format!(
            "GPU {device} ({}) has {} MiB free, cuzk needs at least {} MiB",
            info.name,
            info.free_bytes >> 20,
            MIN_FREE_BYTES >> 20
        )));
    }
    Ok(info)
}

/// Free and total memory of GPU `device`, as `cudaMemGetInfo` reports them.
///
/// # Errors
/// [`Error::Cuda`] from the driver.
pub fn device_memory(device: usize) -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both out-pointers are valid for the call.
    check("cuzk_k_device_mem_info", unsafe {
        ffi::cuzk_k_device_mem_info(device as i32, &mut free, &mut total)
    })?;
    Ok((free, total))
}

/// Fault injection for tests (feature `fault-injection` only; absent from normal builds): make
/// the next kernel call that reaches a phase fail there with a chosen CUDA error, once.
#[cfg(feature = "fault-injection")]
pub mod fault {
    use super::{ffi, phase};

    /// Where to fail (`CUZK_K_PHASE_*` in `kernels/cuzk_kernels.h`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(i32)]
    pub enum Phase {
        /// Parameter upload, after the copy.
        Upload = phase::UPLOAD,
        /// All three a/b/c copies queued, none finished.
        AbcCopy = phase::ABC_COPY,
        /// An H step: index 3k, 3k+1, 3k+2 (k = a, b, c) = inverse NTT, its last stages with the
        /// coset scale, coset NTT; 9 pointwise, 10 inverse NTT, 11 gather.
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
}

/// A vector of points resident on one GPU, or streamed to it from host memory that this
/// value keeps alive (and page-locked) until it drops; freed on drop.
struct DeviceBases {
    raw: *mut ffi::KBases,
    len: usize,
    /// Streamed: the host points the handle reads (dropped after the handle is freed).
    _host: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

// SAFETY: the handle is an opaque pointer to device memory owned by this value; the kernels'
// API serialises work per device and allows calls from any thread.
unsafe impl Send for DeviceBases {}
// SAFETY: shared use only passes the handle as `const` to MSM calls, which the API allows
// concurrently (they are serialised per device inside the kernels).
unsafe impl Sync for DeviceBases {}

/// A scalar vector the H call copied to the device for the batch after it (the kernels'
/// staging: its upload runs under the H MSM); freed on drop. Null when the kernels made none.
struct Staged(*mut ffi::KStaged);

impl Drop for Staged {
    fn drop(&mut self) {
        if self.0.is_null() {
            return;
        }
        // SAFETY: a handle from cuzk_k_compute_h_msm_staged, freed once (here).
        let r = unsafe { ffi::cuzk_k_staged_free(self.0) };
        if let Err(e) = check("cuzk_k_staged_free", r) {
            log::warn!("staged scalars not freed: {e}");
        }
    }
}

/// The kernels' four constructors of a bases handle share this signature.
type MakeBases = unsafe extern "C" fn(c_int, *const c_void, usize, *mut *mut ffi::KBases) -> ffi::KResult;

impl DeviceBases {
    /// A handle from one of the kernels' constructors (`make`, named `call` in errors), checked.
    ///
    /// # Safety
    /// `points` must point at `len` points in the layout `make` reads (blst_p1_affine for the
    /// G1 constructors, blst_p2_affine for G2), live for the call. A streamed constructor keeps
    /// the pointer: then `host` must own those points, keeping them put and unchanged until the
    /// handle is freed (`_host` drops after `Drop::drop` frees it).
    unsafe fn make(
        call: &'static str,
        make: MakeBases,
        device: i32,
        points: *const c_void,
        len: usize,
        host: Option<Arc<dyn std::any::Any + Send + Sync>>,
    ) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the caller's contract above; `raw` is a valid out-pointer.
        check(call, unsafe { make(device, points, len, &mut raw) })?;
        let this = Self { raw, len, _host: host };
        this.check_len()?;
        Ok(this)
    }

    fn upload_g1(device: i32, points: &[blstrs::G1Affine]) -> Result<Self> {
        // SAFETY: G1Affine is repr(transparent) over blst_p1_affine; `points` is borrowed for
        // the call and the upload keeps nothing.
        unsafe {
            Self::make(
                "cuzk_k_bases_upload_g1",
                ffi::cuzk_k_bases_upload_g1,
                device,
                points.as_ptr().cast(),
                points.len(),
                None,
            )
        }
    }

    fn upload_g2(device: i32, points: &[blstrs::G2Affine]) -> Result<Self> {
        // SAFETY: as for upload_g1, with G2Affine over blst_p2_affine.
        unsafe {
            Self::make(
                "cuzk_k_bases_upload_g2",
                ffi::cuzk_k_bases_upload_g2,
                device,
                points.as_ptr().cast(),
                points.len(),
                None,
            )
        }
    }

    /// Streamed G1 bases over `points` (page-locked now, read by every MSM).
    fn host_g1(device: i32, points: Arc<Vec<blstrs::G1Affine>>) -> Result<Self> {
        let (ptr, len) = (points.as_ptr().cast(), points.len());
        // SAFETY: as for upload_g1; the handle keeps the pointer, and `host` is the Arc that
        // owns the points (a Vec inside an Arc is never moved or mutated).
        unsafe {
            Self::make(
                "cuzk_k_bases_host_g1",
                ffi::cuzk_k_bases_host_g1,
                device,
                ptr,
                len,
                Some(points),
            )
        }
    }

    /// Streamed G2 bases over `points`.
    fn host_g2(device: i32, points: Arc<Vec<blstrs::G2Affine>>) -> Result<Self> {
        let (ptr, len) = (points.as_ptr().cast(), points.len());
        // SAFETY: as for host_g1, with G2Affine over blst_p2_affine.
        unsafe {
            Self::make(
                "cuzk_k_bases_host_g2",
                ffi::cuzk_k_bases_host_g2,
                device,
                ptr,
                len,
                Some(points),
            )
        }
    }
}

impl DeviceBases {
    fn check_len(&self) -> Result<()> {
        // SAFETY: `raw` is a live handle from an upload.
        let on_device = unsafe { ffi::cuzk_k_bases_len(self.raw) };
        if on_device != self.len {
            return Err(Error::Cuda {
                call: "cuzk_k_bases_len",
                code: err::RANGE,
                message: format!("uploaded {} points, the device holds {on_device}", self.len),
            });
        }
        // SAFETY: as above.
        let streamed = unsafe { ffi::cuzk_k_bases_streamed(self.raw) } != 0;
        if streamed != self._host.is_some() {
            return Err(Error::Cuda {
                call: "cuzk_k_bases_streamed",
                code: err::INTERNAL,
                message: format!("the kernels report streamed = {streamed} for this handle"),
            });
        }
        Ok(())
    }
}

impl Drop for DeviceBases {
    fn drop(&mut self) {
        // SAFETY: `raw` came from an upload and is freed exactly once, here.
        let r = unsafe { ffi::cuzk_k_bases_free(self.raw) };
        if r.code != 0 {
            log::error!("freeing {} device bases failed: {}", self.len, r.message());
        }
    }
}

fn msm_g1(bases: &DeviceBases, offset: usize, scalars: &[Scalar], density: Option<&[u64]>) -> Result<G1Projective> {
    let mut out = G1Projective::identity();
    if scalars.is_empty() {
        return Ok(out);
    }
    let ret: &mut blst::blst_p1 = out.as_mut();
    // SAFETY: Scalar is repr(transparent) over blst_fr (the kernels' scalar layout); the
    // density words cover ceil(n/64) words (DensityTracker keeps one word per 64 variables);
    // `ret` is a blst_p1, the result layout; all live for the call.
    check("cuzk_k_msm_g1", unsafe {
        ffi::cuzk_k_msm_g1(
            bases.raw,
            offset,
            scalars.as_ptr().cast::<c_void>(),
            scalars.len(),
            density.map_or(std::ptr::null(), <[u64]>::as_ptr),
            (ret as *mut blst::blst_p1).cast::<c_void>(),
        )
    })?;
    Ok(out)
}

fn msm_g2(bases: &DeviceBases, offset: usize, scalars: &[Scalar], density: Option<&[u64]>) -> Result<G2Projective> {
    let mut out = G2Projective::identity();
    if scalars.is_empty() {
        return Ok(out);
    }
    let ret: &mut blst::blst_p2 = out.as_mut();
    // SAFETY: as for msm_g1, with a blst_p2 result.
    check("cuzk_k_msm_g2", unsafe {
        ffi::cuzk_k_msm_g2(
            bases.raw,
            offset,
            scalars.as_ptr().cast::<c_void>(),
            scalars.len(),
            density.map_or(std::ptr::null(), <[u64]>::as_ptr),
            (ret as *mut blst::blst_p2).cast::<c_void>(),
        )
    })?;
    Ok(out)
}

fn density_words(density: Option<&DensityTracker>, n: usize) -> Result<Option<&[u64]>> {
    match density {
        None => Ok(None),
        Some(d) if d.len() == n => Ok(Some(d.words())),
        Some(d) => Err(Error::InvalidArgument(format!(
            "density tracks {} variables but there are {n} scalars",
            d.len()
        ))),
    }
}

/// Σ scalars\[i\]·bases\[i\] on GPU `device` (or, with `density`, bellperson's filtered sum, as
/// [`cpu::msm::msm`](super::cpu::msm::msm)), uploading the bases for this call only. For
/// tests and tools; proving keeps bases resident.
///
/// # Errors
/// [`Error::Cuda`] from the device, [`Error::InvalidArgument`] for mismatched lengths.
pub fn msm_g1_once(
    device: usize,
    bases: &[blstrs::G1Affine],
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<G1Projective> {
    let words = density_words(density, scalars.len())?;
    let d = DeviceBases::upload_g1(device as i32, bases)?;
    msm_g1(&d, 0, scalars, words)
}

/// The G2 version of [`msm_g1_once`].
///
/// # Errors
/// As [`msm_g1_once`].
pub fn msm_g2_once(
    device: usize,
    bases: &[blstrs::G2Affine],
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<G2Projective> {
    let words = density_words(density, scalars.len())?;
    let d = DeviceBases::upload_g2(device as i32, bases)?;
    msm_g2(&d, 0, scalars, words)
}

/// [`msm_g1_once`] with the bases streamed from (page-locked) host memory in chunks, as
/// parameters too large for the device are (chunk size: the device's memory limit, or
/// [`CudaBackend::set_stream_chunk_points`]). For tests and tools.
///
/// # Errors
/// As [`msm_g1_once`].
pub fn msm_g1_streamed_once(
    device: usize,
    bases: Arc<Vec<blstrs::G1Affine>>,
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<G1Projective> {
    let words = density_words(density, scalars.len())?;
    let d = DeviceBases::host_g1(device as i32, bases)?;
    msm_g1(&d, 0, scalars, words)
}

/// The G2 version of [`msm_g1_streamed_once`].
///
/// # Errors
/// As [`msm_g1_once`].
pub fn msm_g2_streamed_once(
    device: usize,
    bases: Arc<Vec<blstrs::G2Affine>>,
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<G2Projective> {
    let words = density_words(density, scalars.len())?;
    let d = DeviceBases::host_g2(device as i32, bases)?;
    msm_g2(&d, 0, scalars, words)
}

/// H's m − 1 coefficients from a, b, c (each at most 2^log_m values) on GPU `device`, as
/// [`cpu::ntt::compute_h`](super::cpu::ntt::compute_h) computes them.
///
/// # Errors
/// [`Error::Cuda`] from the device, [`Error::InvalidArgument`] for mismatched lengths.
pub fn compute_h_once(device: usize, a: &[Scalar], b: &[Scalar], c: &[Scalar], log_m: u32) -> Result<Vec<Scalar>> {
    let n = a.len();
    if b.len() != n || c.len() != n || log_m == 0 || log_m > 31 || n > 1usize << log_m {
        return Err(Error::InvalidArgument(format!(
            "a, b, c of {n}, {}, {} values for a domain of 2^{log_m}",
            b.len(),
            c.len()
        )));
    }
    let mut h = vec![Scalar::ZERO; (1usize << log_m) - 1];
    // SAFETY: a, b, c hold n scalars each, h has room for m − 1; all live for the call and
    // Scalar has the blst_fr layout the kernels use.
    check("cuzk_k_compute_h", unsafe {
        ffi::cuzk_k_compute_h(
            device as i32,
            a.as_ptr().cast::<c_void>(),
            b.as_ptr().cast::<c_void>(),
            c.as_ptr().cast::<c_void>(),
            n,
            log_m,
            h.as_mut_ptr().cast::<c_void>(),
        )
    })?;
    Ok(h)
}

/// One parameter set's query vectors on the device (or, streamed, page-locked on the host).
/// Counted in its backend's resident bytes from upload to drop — also after eviction, while
/// proofs in flight still hold it; a streamed set counts 0 device bytes.
struct Resident {
    bytes: usize,
    streamed: bool,
    live: Arc<AtomicUsize>,
    h: DeviceBases,
    l: DeviceBases,
    a: DeviceBases,
    b_g1: DeviceBases,
    b_g2: DeviceBases,
}

impl Drop for Resident {
    fn drop(&mut self) {
        self.live.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// A parameter set's place in the residency list. Its own lock is held while it uploads, so
/// callers of other sets (and of the list) never wait for an upload, and callers of this one
/// wait for the one upload instead of starting another.
struct Slot {
    params_id: u64,
    bytes: usize,
    evicted: AtomicBool,
    /// Kept for good (`keep_resident`): never evicted to make room.
    pinned: AtomicBool,
    state: Mutex<Option<Arc<Resident>>>,
}

/// Names of the batched MSM jobs, in order, for error messages.
const BATCH_JOBS: [&str; 7] = [
    "L",
    "A (inputs)",
    "A (aux)",
    "B_G1 (inputs)",
    "B_G1 (aux)",
    "B_G2 (inputs)",
    "B_G2 (aux)",
];

/// Device memory cuzk's kernels hold on one GPU, as they count it (see
/// [`CudaBackend::memory_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceMemStats {
    /// The limit the kernels keep to (0 = none: the device's own memory).
    pub limit: usize,
    /// Bytes held now: resident parameters, NTT tables, scratch of a call in progress.
    pub used: usize,
    /// The most held at once since the last reset.
    pub peak: usize,
    /// Bytes cuzk's stream-ordered memory pool holds from the device now (freed scratch is
    /// kept for the next call).
    pub pool_reserved: usize,
    /// The pool's high-water mark since the last reset.
    pub pool_reserved_high: usize,
}

/// Device bytes a proof needs besides the parameters, per element of its evaluation domain:
/// the kernels' working-set model (`CUZK_K_WORKING_BYTES_PER_DOMAIN_ELEMENT`).
pub const WORKING_BYTES_PER_DOMAIN_ELEMENT: usize = super::kernel_contract::WORKING_BYTES_PER_DOMAIN_ELEMENT;

/// Parses a byte count: a plain integer, or with a suffix K/M/G/T (powers of 1024; "GiB",
/// "GB" and "G" all mean 2^30).
fn parse_bytes(v: &str) -> Option<usize> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: usize = v[..digits].parse().ok()?;
    let shift = match v[digits..]
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches('B')
        .trim_end_matches('I')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    n.checked_mul(1usize << shift)
}

/// Proves on one CUDA device.
///
/// Failure handling: an out-of-memory error frees the device caches and the idle resident
/// parameter sets and retries once; a sticky error (see [`Error::DeviceLost`]) marks the
/// backend lost, and every later call fails fast with `DeviceLost`.
pub struct CudaBackend {
    device: i32,
    info: DeviceInfo,
    max_resident_bytes: usize,
    /// Device memory a parameter set and a proof's working set must fit in to be resident.
    memory_limit: AtomicUsize,
    /// Stream every parameter set, whatever fits.
    always_stream: AtomicBool,
    batched_msms: bool,
    lost: AtomicBool,
    oom_retries: AtomicUsize,
    /// Least recently used first.
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Device bytes of every uploaded set not yet dropped (evicted ones still in use included).
    live: Arc<AtomicUsize>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .field("name", &self.info.name)
            .field("max_resident_bytes", &self.max_resident_bytes)
            .field("memory_limit", &self.memory_limit())
            .field("resident_bytes", &self.resident_bytes())
            .field("lost", &self.is_device_lost())
            .finish()
    }
}

impl CudaBackend {
    /// A backend of its own on device `device` (probed: see [`probe`]), its residency cap the
    /// device's free memory. Most callers want [`CudaBackend::shared`] instead: two backends
    /// on one device each keep their own copy of the parameters.
    ///
    /// # Errors
    /// [`Error::NoGpu`] when the device fails the probe.
    pub fn new(device: usize) -> Result<Self> {
        let info = probe(device)?;
        log::info!(
            "GPU {device}: {} (sm_{}{}, {} SMs), {} of {} MiB free",
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            info.sm_count,
            info.free_bytes >> 20,
            info.total_bytes >> 20
        );
        let env_limit = std::env::var("CUZK_GPU_MEMORY_LIMIT")
            .ok()
            .filter(|v| !v.trim().is_empty());
        let limit = match env_limit.as_deref().map(|v| (v, parse_bytes(v))) {
            None => None,
            Some((_, Some(b))) => Some(b),
            Some((v, None)) => {
                return Err(Error::InvalidArgument(format!(
                    "CUZK_GPU_MEMORY_LIMIT={v:?}: expected a byte count such as 25769803776 or 24GiB"
                )))
            }
        };
        let this = Self {
            device: device as i32,
            max_resident_bytes: info.free_bytes,
            memory_limit: AtomicUsize::new(info.free_bytes),
            always_stream: AtomicBool::new(false),
            info,
            batched_msms: true,
            lost: AtomicBool::new(false),
            oom_retries: AtomicUsize::new(0),
            slots: Mutex::new(Vec::new()),
            live: Arc::new(AtomicUsize::new(0)),
        };
        if let Some(bytes) = limit {
            log::info!(
                "GPU {device}: device memory limit {} MiB (CUZK_GPU_MEMORY_LIMIT)",
                bytes >> 20
            );
            this.set_memory_limit(Some(bytes))?;
        }
        Ok(this)
    }

    /// Limits the device memory cuzk uses on this GPU to `bytes` (`None`: the device's free
    /// memory when probed, not enforced by cuzk). The kernels fail an allocation past the
    /// limit as a GPU of that size would; a parameter set that does not fit under it together
    /// with a proof's working set ([`WORKING_BYTES_PER_DOMAIN_ELEMENT`]) is streamed. For a
    /// 24 GiB card on a bigger one, or to leave room for other programs. Applies to every
    /// backend on this device in the process; idle resident sets are evicted so the next proof
    /// decides anew.
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn set_memory_limit(&self, bytes: Option<usize>) -> Result<()> {
        self.memory_limit
            .store(bytes.unwrap_or(self.info.free_bytes), Ordering::Release);
        self.set_kernel_limit(bytes.unwrap_or(0), 0)?;
        while self.evict_one_idle(None).is_some() {}
        self.release_caches()
    }

    /// Forces the number of bases per chunk of streamed MSMs (0: from the memory limit). For
    /// tests that stream small parameter sets in many chunks.
    ///
    /// # Errors
    /// As [`CudaBackend::set_memory_limit`].
    pub fn set_stream_chunk_points(&self, points: usize) -> Result<()> {
        let limit = self.memory_stats(false)?.limit;
        self.set_kernel_limit(limit, points)
    }

    fn set_kernel_limit(&self, limit: usize, chunk: usize) -> Result<()> {
        // SAFETY: plain integers; the kernels take the device's lock.
        let r = unsafe { ffi::cuzk_k_device_set_limit(self.device, limit, chunk) };
        check("cuzk_k_device_set_limit", r).map_err(|e| self.classify(e))
    }

    /// The device memory limit parameter sets are placed under (see
    /// [`CudaBackend::set_memory_limit`]).
    pub fn memory_limit(&self) -> usize {
        self.memory_limit.load(Ordering::Acquire)
    }

    /// Streams every parameter set from now on (`true`), or only those that do not fit
    /// (`false`, the default): for leaving the device's memory to others, and for tests.
    /// Idle resident sets are evicted so the next proof decides anew.
    pub fn set_always_stream(&self, always: bool) {
        self.always_stream.store(always, Ordering::Release);
        while self.evict_one_idle(None).is_some() {}
    }

    /// Whether `params` would be streamed rather than resident under the current limit.
    pub fn would_stream(&self, params: &Parameters) -> bool {
        if self.always_stream.load(Ordering::Acquire) {
            return true;
        }
        let need = params
            .device_bytes()
            .saturating_add(params.domain_size().saturating_mul(WORKING_BYTES_PER_DOMAIN_ELEMENT));
        need > self.memory_limit() || params.device_bytes() > self.max_resident_bytes
    }

    /// Device memory the kernels hold on this GPU, as they count it; `reset_peak` restarts the
    /// high-water marks from now.
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn memory_stats(&self, reset_peak: bool) -> Result<DeviceMemStats> {
        let mut st = ffi::KMemStats::default();
        // SAFETY: `st` is a valid out-pointer for the call.
        let r = unsafe { ffi::cuzk_k_device_mem_stats(self.device, i32::from(reset_peak), &mut st) };
        check("cuzk_k_device_mem_stats", r).map_err(|e| self.classify(e))?;
        Ok(DeviceMemStats {
            limit: st.limit,
            used: st.used,
            peak: st.peak,
            pool_reserved: st.pool_reserved,
            pool_reserved_high: st.pool_reserved_high,
        })
    }

    /// Number of parameter sets held in streamed mode.
    pub fn streamed_sets(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        slots
            .iter()
            .filter(|s| s.state.lock().as_ref().is_some_and(|r| r.streamed))
            .count()
    }

    /// The process's one backend on `device`, made (and probed) on first use. Every
    /// `BackendChoice::Gpu(device)` and `Auto` prover shares it, and with it one upload per
    /// parameter set.
    ///
    /// # Errors
    /// As [`CudaBackend::new`], on first use.
    pub fn shared(device: usize) -> Result<Arc<Self>> {
        static SHARED: Mutex<Vec<(usize, Arc<CudaBackend>)>> = Mutex::new(Vec::new());
        let mut all = SHARED.lock();
        if let Some((_, b)) = all.iter().find(|(d, _)| *d == device) {
            return Ok(b.clone());
        }
        let b = Arc::new(Self::new(device)?);
        all.push((device, b.clone()));
        Ok(b)
    }

    /// What the probe found.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Caps the device memory held by resident parameters (default: the device's free memory
    /// when the backend was made).
    pub fn with_max_resident_bytes(mut self, bytes: usize) -> Self {
        self.max_resident_bytes = bytes;
        self
    }

    /// The residency cap.
    pub fn max_resident_bytes(&self) -> usize {
        self.max_resident_bytes
    }

    /// Whether L, A, B_G1 and B_G2 run as one batched call (default; uploads overlap
    /// compute) or as separate calls, each timed on its own in [`Timings`] (at 2^24 on the
    /// H200: 316 ms batched, 319 ms separate).
    pub fn with_batched_msms(mut self, batched: bool) -> Self {
        self.batched_msms = batched;
        self
    }

    /// Device memory held by resident parameters, sets evicted but still in use included.
    pub fn resident_bytes(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Number of parameter sets resident (evicted ones still in use not included).
    pub fn resident_sets(&self) -> usize {
        // A snapshot first: an uploading caller holds its slot's lock and may want the list's.
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        slots.iter().filter(|s| s.state.lock().is_some()).count()
    }

    /// How many times a call ran out of device memory and was retried after freeing caches.
    pub fn oom_retries(&self) -> usize {
        self.oom_retries.load(Ordering::Acquire)
    }

    /// Whether a sticky CUDA error has made this device unusable.
    pub fn is_device_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Frees every resident parameter set (sets in use by proofs in flight go when those
    /// finish) and the kernels' device caches: NTT tables and the memory pool's reserve.
    /// Afterwards the device uses what it used before cuzk, once proofs in flight are done.
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn release_device_memory(&self) -> Result<()> {
        let gone: Vec<Arc<Slot>> = std::mem::take(&mut *self.slots.lock());
        for slot in gone {
            slot.evicted.store(true, Ordering::Release);
            drop(slot.state.lock().take());
        }
        self.release_caches()
    }

    /// Frees the resident copy of the one parameter set `params_id` ([`Parameters::id`]; a set
    /// kept for good included), leaving the other sets and the device caches; proofs in flight
    /// with it keep it until they finish. Returns whether the set was resident.
    pub fn evict_params(&self, params_id: u64) -> bool {
        // Out of the list under its lock, then emptied under the slot's own lock (never both
        // at once: an uploading caller holds its slot's lock and may want the list's).
        let slot = {
            let mut slots = self.slots.lock();
            let i = slots.iter().position(|s| s.params_id == params_id);
            i.map(|i| slots.remove(i))
        };
        let Some(slot) = slot else { return false };
        slot.evicted.store(true, Ordering::Release);
        let resident = slot.state.lock().take();
        log::debug!(
            "GPU {}: parameters {params_id} evicted ({} bytes)",
            self.device,
            resident.as_ref().map_or(0, |r| r.bytes)
        );
        resident.is_some()
    }

    /// Same as [`CudaBackend::release_device_memory`].
    pub fn evict_all(&self) {
        if let Err(e) = self.release_device_memory() {
            log::warn!("GPU {}: releasing device memory: {e}", self.device);
        }
    }

    fn release_caches(&self) -> Result<()> {
        // SAFETY: plain device ordinal; the kernels wait for the device's streams first.
        let r = unsafe { ffi::cuzk_k_device_release_caches(self.device) };
        check("cuzk_k_device_release_caches", r).map_err(|e| self.classify(e))
    }

    /// Turns a sticky CUDA error into [`Error::DeviceLost`] and marks the device lost.
    fn classify(&self, e: Error) -> Error {
        match e {
            Error::Cuda { call, code, message } if STICKY_CODES.contains(&code) => {
                if !self.lost.swap(true, Ordering::AcqRel) {
                    log::error!(
                        "GPU {}: sticky CUDA error {code} in {call} ({message}); the device is unusable until the process restarts",
                        self.device
                    );
                }
                Error::DeviceLost {
                    device: self.device as usize,
                    code,
                    message: format!("{call}: {message}"),
                }
            }
            other => other,
        }
    }

    fn lost_error(&self) -> Error {
        Error::DeviceLost {
            device: self.device as usize,
            code: 0,
            message: "an earlier call hit a sticky CUDA error".into(),
        }
    }

    /// Frees device memory nobody is using: the caches and every idle resident set except
    /// `keep`. Called on out-of-memory before the one retry.
    fn free_idle(&self, keep: Option<u64>) {
        let mut freed = 0usize;
        while let Some(r) = self.evict_one_idle(keep) {
            freed += r.bytes;
        }
        if let Err(e) = self.release_caches() {
            log::warn!("GPU {}: releasing caches: {e}", self.device);
        }
        log::warn!(
            "GPU {}: out of device memory: released caches and {freed} bytes of idle parameters; retrying once",
            self.device
        );
    }

    /// Evicts the least recently used set that no proof holds and that is not `keep`.
    fn evict_one_idle(&self, keep: Option<u64>) -> Option<Arc<Resident>> {
        let mut list = self.slots.lock();
        for i in 0..list.len() {
            if Some(list[i].params_id) == keep || list[i].pinned.load(Ordering::Acquire) {
                continue;
            }
            // A set that is uploading (lock held) or in use (a proof holds a clone) stays.
            let taken = list[i].state.try_lock().and_then(|mut st| match &*st {
                Some(r) if Arc::strong_count(r) == 1 => st.take(),
                _ => None,
            });
            if let Some(r) = taken {
                let slot = list.remove(i);
                slot.evicted.store(true, Ordering::Release);
                log::info!("GPU {}: evicting resident parameters ({} bytes)", self.device, r.bytes);
                return Some(r);
            }
        }
        None
    }

    /// Runs a kernel call; on out-of-memory frees what is idle (all but `keep`) and runs it
    /// once more. Sticky errors become [`Error::DeviceLost`].
    fn with_oom_retry<T>(&self, keep: Option<u64>, mut call: impl FnMut() -> Result<T>) -> Result<T> {
        match call() {
            Err(e) if is_out_of_memory(&e) => {
                self.oom_retries.fetch_add(1, Ordering::AcqRel);
                self.free_idle(keep);
                call().map_err(|e| self.classify(e))
            }
            other => other.map_err(|e| self.classify(e)),
        }
    }

    /// The resident copy of `params`, uploading it if needed: outside the list's lock, once
    /// per set however many callers ask, evicting idle least recently used sets to stay under
    /// the cap.
    fn resident(&self, params: &Parameters) -> Result<Arc<Resident>> {
        loop {
            let slot = {
                let mut list = self.slots.lock();
                if let Some(i) = list.iter().position(|s| s.params_id == params.id()) {
                    let s = list.remove(i);
                    list.push(s.clone());
                    s
                } else {
                    let bytes = if self.would_stream(params) {
                        0
                    } else {
                        params.device_bytes()
                    };
                    let s = Arc::new(Slot {
                        params_id: params.id(),
                        bytes,
                        evicted: AtomicBool::new(false),
                        pinned: AtomicBool::new(false),
                        state: Mutex::new(None),
                    });
                    list.push(s.clone());
                    s
                }
            };
            let mut state = slot.state.lock();
            if slot.evicted.load(Ordering::Acquire) {
                continue; // evicted while we waited: look again
            }
            if let Some(r) = &*state {
                return Ok(r.clone());
            }
            let uploaded = if slot.bytes == 0 {
                self.with_oom_retry(Some(slot.params_id), || self.stream(params))
            } else {
                self.make_room(slot.bytes, slot.params_id)
                    .and_then(|()| self.with_oom_retry(Some(slot.params_id), || self.upload(params)))
            };
            return match uploaded {
                Ok(r) => {
                    *state = Some(r.clone());
                    Ok(r)
                }
                Err(e) => {
                    slot.evicted.store(true, Ordering::Release);
                    drop(state);
                    self.slots.lock().retain(|s| !Arc::ptr_eq(s, &slot));
                    Err(e)
                }
            };
        }
    }

    /// Evicts idle sets until `bytes` more fit under the cap.
    fn make_room(&self, bytes: usize, keep: u64) -> Result<()> {
        while self.resident_bytes() + bytes > self.max_resident_bytes {
            if self.evict_one_idle(Some(keep)).is_none() {
                return Err(Error::InvalidArgument(format!(
                    "GPU {}: parameters need {bytes} bytes, {} bytes are resident and in use by proofs in flight, cap {}",
                    self.device,
                    self.resident_bytes(),
                    self.max_resident_bytes
                )));
            }
        }
        Ok(())
    }

    fn upload(&self, params: &Parameters) -> Result<Arc<Resident>> {
        params.require_host_copy("uploading parameters to the GPU")?;
        let start = Instant::now();
        let d = self.device;
        let bytes = params.device_bytes();
        let h = DeviceBases::upload_g1(d, params.h())?;
        let l = DeviceBases::upload_g1(d, params.l())?;
        let a = DeviceBases::upload_g1(d, params.a())?;
        let b_g1 = DeviceBases::upload_g1(d, params.b_g1())?;
        let b_g2 = DeviceBases::upload_g2(d, params.b_g2())?;
        self.live.fetch_add(bytes, Ordering::AcqRel);
        let r = Arc::new(Resident {
            bytes,
            streamed: false,
            live: self.live.clone(),
            h,
            l,
            a,
            b_g1,
            b_g2,
        });
        log::info!(
            "GPU {d}: parameters resident ({bytes} bytes) in {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        Ok(r)
    }

    /// Streamed mode: page-locks the host vectors once; the MSMs copy from them in chunks.
    fn stream(&self, params: &Parameters) -> Result<Arc<Resident>> {
        params.require_host_copy("streaming parameters to the GPU")?;
        let start = Instant::now();
        let d = self.device;
        let q = params.shared_queries();
        let r = Arc::new(Resident {
            bytes: 0,
            streamed: true,
            live: self.live.clone(),
            h: DeviceBases::host_g1(d, q.h)?,
            l: DeviceBases::host_g1(d, q.l)?,
            a: DeviceBases::host_g1(d, q.a)?,
            b_g1: DeviceBases::host_g1(d, q.b_g1)?,
            b_g2: DeviceBases::host_g2(d, q.b_g2)?,
        });
        log::info!(
            "GPU {d}: parameters ({} bytes) streamed from pinned host memory (limit {} MiB); registered in {:.1} ms",
            params.device_bytes(),
            self.memory_limit() >> 20,
            start.elapsed().as_secs_f64() * 1e3
        );
        Ok(r)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare(&self, params: &Parameters) -> Result<()> {
        if self.is_device_lost() {
            return Err(self.lost_error());
        }
        self.resident(params).map(|_| ())
    }

    fn keep_resident(&self, params: &Parameters) -> Result<()> {
        if self.is_device_lost() {
            return Err(self.lost_error());
        }
        if self.would_stream(params) {
            return Err(Error::InvalidArgument(format!(
                "parameters of {} MiB do not fit on GPU {} with a proof's working set (limit {} MiB): they are streamed from host memory, which must stay",
                params.device_bytes() >> 20,
                self.device,
                self.memory_limit() >> 20
            )));
        }
        let r = self.resident(params)?;
        if r.streamed {
            return Err(Error::InvalidArgument(format!(
                "parameters are streamed on GPU {}: their host copy must stay",
                self.device
            )));
        }
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        for s in slots.iter().filter(|s| s.params_id == params.id()) {
            s.pinned.store(true, Ordering::Release);
        }
        Ok(())
    }

    fn evict(&self) {
        self.evict_all();
    }

    fn evict_params(&self, params_id: u64) {
        CudaBackend::evict_params(self, params_id);
    }

    fn is_lost(&self) -> bool {
        self.is_device_lost()
    }

    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        if self.is_device_lost() {
            assignment.release_abc();
            return Err(self.lost_error());
        }
        if params.domain_size() < 2 {
            // A circuit without constraints: a domain of one point, no H coefficients, at most
            // a few points per query. The kernels take domains of 2^1 and up; the CPU backend
            // computes the same bytes in microseconds.
            return super::cpu::CpuBackend.commitments(assignment, params, t);
        }
        let dev = match self.resident(params) {
            Ok(d) => d,
            Err(e) => {
                assignment.release_abc();
                return Err(e);
            }
        };
        let keep = Some(params.id());
        let start = Instant::now();
        let log_m = params.domain_size().trailing_zeros();
        let mut h = G1Projective::identity();
        // The batch reads the aux vector (L, A, B): the H call copies it to the device while
        // its MSM computes. The batch matches it by pointer and length; release_abc below
        // does not touch aux.
        let stage = if self.batched_msms {
            assignment.aux_assignment()
        } else {
            &[]
        };
        let (stage_ptr, stage_n) = (stage.as_ptr().cast::<c_void>(), stage.len());
        // The batch's first job (L over aux): over streamed bases the H call copies its first
        // chunk during the H MSM's last one. Only its bases, offset, scalars and density are read.
        let next_job = ffi::KMsmJob {
            bases: dev.l.raw,
            base_offset: 0,
            host_scalars: stage_ptr,
            n: stage_n,
            density_bits: std::ptr::null(),
            out_jacobian: std::ptr::null_mut(),
        };
        let mut staged = Staged(std::ptr::null_mut());
        let result = self.with_oom_retry(keep, || {
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
                    dev.h.raw,
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

        let inputs = assignment.input_assignment();
        let aux = assignment.aux_assignment();
        let num_inputs = inputs.len();
        let b_inputs = assignment.b_input_density().total_density();
        let a_aux = assignment.a_aux_density().words();
        let b_in = assignment.b_input_density().words();
        let b_aux = assignment.b_aux_density().words();

        if !self.batched_msms {
            let g1 = |bases: &DeviceBases, offset: usize, scalars: &[Scalar], density: Option<&[u64]>| {
                self.with_oom_retry(keep, || msm_g1(bases, offset, scalars, density))
            };
            let g2 = |bases: &DeviceBases, offset: usize, scalars: &[Scalar], density: Option<&[u64]>| {
                self.with_oom_retry(keep, || msm_g2(bases, offset, scalars, density))
            };
            let s = Instant::now();
            let l = g1(&dev.l, 0, aux, None)?;
            t.msm_l += s.elapsed();
            let s = Instant::now();
            let a = g1(&dev.a, 0, inputs, None)? + g1(&dev.a, num_inputs, aux, Some(a_aux))?;
            t.msm_a += s.elapsed();
            let s = Instant::now();
            let b_g1 = g1(&dev.b_g1, 0, inputs, Some(b_in))? + g1(&dev.b_g1, b_inputs, aux, Some(b_aux))?;
            t.msm_b_g1 += s.elapsed();
            let s = Instant::now();
            let b_g2 = g2(&dev.b_g2, 0, inputs, Some(b_in))? + g2(&dev.b_g2, b_inputs, aux, Some(b_aux))?;
            t.msm_b_g2 += s.elapsed();
            return Ok(Commitments { h, l, a, b_g1, b_g2 });
        }

        // L, A, B_G1 and B_G2 (inputs and aux parts) in one batched call: the kernels upload
        // job i+1's scalars while job i computes.
        let s = Instant::now();
        let mut g1 = [G1Projective::identity(); 5];
        let mut g2 = [G2Projective::identity(); 2];
        self.with_oom_retry(keep, || {
            let [l_out, a_in, a_aux_out, b1_in, b1_aux] = &mut g1;
            let [b2_in, b2_aux] = &mut g2;
            let job =
                |bases: &DeviceBases, offset: usize, scalars: &[Scalar], density: Option<&[u64]>, out: *mut c_void| {
                    ffi::KMsmJob {
                        bases: bases.raw,
                        base_offset: offset,
                        host_scalars: scalars.as_ptr().cast::<c_void>(),
                        n: scalars.len(),
                        density_bits: density.map_or(std::ptr::null(), <[u64]>::as_ptr),
                        out_jacobian: out,
                    }
                };
            let p1 = |p: &mut G1Projective| (p.as_mut() as *mut blst::blst_p1).cast::<c_void>();
            let p2 = |p: &mut G2Projective| (p.as_mut() as *mut blst::blst_p2).cast::<c_void>();
            let jobs = [
                job(&dev.l, 0, aux, None, p1(l_out)),
                job(&dev.a, 0, inputs, None, p1(a_in)),
                job(&dev.a, num_inputs, aux, Some(a_aux), p1(a_aux_out)),
                job(&dev.b_g1, 0, inputs, Some(b_in), p1(b1_in)),
                job(&dev.b_g1, b_inputs, aux, Some(b_aux), p1(b1_aux)),
                job(&dev.b_g2, 0, inputs, Some(b_in), p2(b2_in)),
                job(&dev.b_g2, b_inputs, aux, Some(b_aux), p2(b2_aux)),
            ];
            // SAFETY: every job points at live bases handles, scalar slices (blst_fr layout)
            // with their exact lengths, density words covering them (one word per 64
            // variables), and an output of the bases' group (blst_p1 for G1, blst_p2 for G2),
            // all borrowed until the call returns; it waits for its copies on every path.
            // `staged.0` is null or the live handle of the H call's copy of this same `aux`
            // (unchanged since), which the jobs over `aux` read instead of uploading it.
            let r = unsafe { ffi::cuzk_k_msm_batch_staged(jobs.as_ptr(), jobs.len(), staged.0) };
            check_jobs("cuzk_k_msm_batch_staged", r, &BATCH_JOBS)
        })?;
        t.msm_batch += s.elapsed();
        let (l, a, b_g1) = (g1[0], g1[1] + g1[2], g1[3] + g1[4]);
        let b_g2 = g2[0] + g2[1];
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }
}
