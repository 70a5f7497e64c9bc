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
use crate::curve::{Curve, G1, G2};
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
/// And their two one-shot MSMs this one.
type MsmCall =
    unsafe extern "C" fn(*const ffi::KBases, usize, *const c_void, usize, *const u64, *mut c_void) -> ffi::KResult;

/// A curve the kernels run MSMs on: its bases constructors and MSM call, with their names
/// for errors.
///
/// # Safety
/// `Affine` must have the layout the constructors read (blst's affine point of the group) and
/// `jacobian_out` must point at the layout the MSM writes (blst's Jacobian point).
pub unsafe trait DeviceCurve: Curve {
    /// Uploads resident bases.
    const UPLOAD: (&'static str, MakeBases);
    /// Page-locks host bases for streamed MSMs.
    const HOST: (&'static str, MakeBases);
    /// One MSM.
    const MSM: (&'static str, MsmCall);
    /// The kernels' output pointer for a result.
    fn jacobian_out(p: &mut Self::Projective) -> *mut c_void;
}

// SAFETY: G1Affine is repr(transparent) over blst_p1_affine and G1Projective over blst_p1,
// the layouts the _g1 calls read and write.
unsafe impl DeviceCurve for G1 {
    const UPLOAD: (&'static str, MakeBases) = ("cuzk_k_bases_upload_g1", ffi::cuzk_k_bases_upload_g1);
    const HOST: (&'static str, MakeBases) = ("cuzk_k_bases_host_g1", ffi::cuzk_k_bases_host_g1);
    const MSM: (&'static str, MsmCall) = ("cuzk_k_msm_g1", ffi::cuzk_k_msm_g1);
    fn jacobian_out(p: &mut G1Projective) -> *mut c_void {
        let raw: &mut blst::blst_p1 = p.as_mut();
        (raw as *mut blst::blst_p1).cast()
    }
}

// SAFETY: as for G1, with G2Affine over blst_p2_affine and G2Projective over blst_p2.
unsafe impl DeviceCurve for G2 {
    const UPLOAD: (&'static str, MakeBases) = ("cuzk_k_bases_upload_g2", ffi::cuzk_k_bases_upload_g2);
    const HOST: (&'static str, MakeBases) = ("cuzk_k_bases_host_g2", ffi::cuzk_k_bases_host_g2);
    const MSM: (&'static str, MsmCall) = ("cuzk_k_msm_g2", ffi::cuzk_k_msm_g2);
    fn jacobian_out(p: &mut G2Projective) -> *mut c_void {
        let raw: &mut blst::blst_p2 = p.as_mut();
        (raw as *mut blst::blst_p2).cast()
    }
}

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

    /// Bases uploaded to the device (the upload keeps nothing of `points`).
    pub(super) fn upload<C: DeviceCurve>(device: i32, points: &[C::Affine]) -> Result<Self> {
        // SAFETY: C::Affine has the layout C::UPLOAD reads (DeviceCurve's contract); `points`
        // is borrowed for the call and the upload keeps nothing.
        unsafe {
            Self::make(
                C::UPLOAD.0,
                C::UPLOAD.1,
                device,
                points.as_ptr().cast(),
                points.len(),
                None,
            )
        }
    }

    /// Streamed bases over `points` (page-locked now, read by every MSM).
    pub(super) fn host<C: DeviceCurve>(device: i32, points: Arc<Vec<C::Affine>>) -> Result<Self> {
        let (ptr, len) = (points.as_ptr().cast(), points.len());
        // SAFETY: as for `upload`; the handle keeps the pointer, and `host` is the Arc that
        // owns the points (a Vec inside an Arc is never moved or mutated).
        unsafe { Self::make(C::HOST.0, C::HOST.1, device, ptr, len, Some(points)) }
    }

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

/// One MSM over device bases (`density`: one word per 64 scalars, or `None` for all).
pub(super) fn msm<C: DeviceCurve>(
    bases: &DeviceBases,
    offset: usize,
    scalars: &[Scalar],
    density: Option<&[u64]>,
) -> Result<C::Projective> {
    let mut out = C::Projective::identity();
    if scalars.is_empty() {
        return Ok(out);
    }
    // SAFETY: Scalar is repr(transparent) over blst_fr (the kernels' scalar layout); the
    // density words cover ceil(n/64) words (DensityTracker keeps one word per 64 variables);
    // `out` is C's Jacobian result layout (DeviceCurve's contract); all live for the call.
    check(C::MSM.0, unsafe {
        (C::MSM.1)(
            bases.raw,
            offset,
            scalars.as_ptr().cast::<c_void>(),
            scalars.len(),
            density.map_or(std::ptr::null(), <[u64]>::as_ptr),
            C::jacobian_out(&mut out),
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
/// [`cpu::msm::msm`](crate::prover::cpu::msm::msm)), uploading the bases for this call only
/// (`streamed`: page-locking them and copying them in chunks, as parameters too large for the
/// device are; chunk size: the device's memory limit, or
/// [`CudaBackend::set_stream_chunk_points`](super::CudaBackend::set_stream_chunk_points)). For
/// tests and tools; proving keeps bases resident.
///
/// # Errors
/// [`Error::Cuda`] from the device, [`Error::InvalidArgument`] for mismatched lengths.
pub fn msm_once<C: DeviceCurve>(
    device: usize,
    bases: OnceBases<'_, C>,
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<C::Projective> {
    let words = density_words(density, scalars.len())?;
    let d = match bases {
        OnceBases::Upload(points) => DeviceBases::upload::<C>(device as i32, points)?,
        OnceBases::Streamed(points) => DeviceBases::host::<C>(device as i32, points)?,
    };
    msm::<C>(&d, 0, scalars, words)
}

/// How [`msm_once`] gets its bases to the device.
pub enum OnceBases<'a, C: DeviceCurve> {
    /// Uploaded for the call.
    Upload(&'a [C::Affine]),
    /// Streamed from host memory (page-locked for the call).
    Streamed(Arc<Vec<C::Affine>>),
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
