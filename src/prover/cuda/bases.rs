//! Bases on a device ([`DeviceBases`]: uploaded, or streamed from page-locked host memory)
//! and the one-shot MSMs and H over them that tests and benchmarks call directly.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;

use super::error::check;
use super::ffi;
use crate::assignment::DensityTracker;
use crate::error::{Error, Result};
use crate::prover::kernel_contract::err;

/// A vector of points resident on one GPU, or streamed to it from host memory that this
/// value keeps alive (and page-locked) until it drops; freed on drop.
pub(super) struct DeviceBases {
    pub(super) raw: *mut ffi::KBases,
    pub(super) len: usize,
    /// Streamed: the host points the handle reads (dropped after the handle is freed).
    pub(super) _host: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

// SAFETY: the handle is an opaque pointer to device memory owned by this value; the kernels'
// API serialises work per device and allows calls from any thread.
unsafe impl Send for DeviceBases {}
// SAFETY: shared use only passes the handle as `const` to MSM calls, which the API allows
// concurrently (they are serialised per device inside the kernels).
unsafe impl Sync for DeviceBases {}

/// A scalar vector the H call copied to the device for the batch after it (the kernels'
/// staging: its upload runs under the H MSM); freed on drop. Null when the kernels made none.
pub(super) struct Staged(pub(super) *mut ffi::KStaged);

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

    pub(super) fn upload_g1(device: i32, points: &[blstrs::G1Affine]) -> Result<Self> {
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

    pub(super) fn upload_g2(device: i32, points: &[blstrs::G2Affine]) -> Result<Self> {
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
    pub(super) fn host_g1(device: i32, points: Arc<Vec<blstrs::G1Affine>>) -> Result<Self> {
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
    pub(super) fn host_g2(device: i32, points: Arc<Vec<blstrs::G2Affine>>) -> Result<Self> {
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
    pub(super) fn check_len(&self) -> Result<()> {
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

pub(super) fn msm_g1(
    bases: &DeviceBases,
    offset: usize,
    scalars: &[Scalar],
    density: Option<&[u64]>,
) -> Result<G1Projective> {
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

pub(super) fn msm_g2(
    bases: &DeviceBases,
    offset: usize,
    scalars: &[Scalar],
    density: Option<&[u64]>,
) -> Result<G2Projective> {
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

pub(super) fn density_words(density: Option<&DensityTracker>, n: usize) -> Result<Option<&[u64]>> {
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
/// [`cpu::msm::msm`](crate::prover::cpu::msm::msm)), uploading the bases for this call only. For
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
/// [`CudaBackend::set_stream_chunk_points`](super::CudaBackend::set_stream_chunk_points)). For tests and tools.
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
/// [`cpu::ntt::compute_h`](crate::prover::cpu::ntt::compute_h) computes them.
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
