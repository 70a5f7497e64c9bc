//! The CUDA backend: H (NTTs) and all five MSMs on the GPU, parameters resident on the device.
//!
//! a/b/c go host→device straight from the assignment's (pinned) buffers inside
//! `cuzk_k_compute_h_msm`, which also runs the H MSM without H leaving the device; the
//! buffers go back to the pool right after. The parameters' five query vectors are uploaded
//! once per [`Parameters`] and stay on the device (least recently used evicted first when a
//! new set would exceed the residency cap), so a proof moves only its own a/b/c and witness.

mod ffi;

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;
use parking_lot::Mutex;

use super::{Backend, Commitments, Timings};
use crate::assignment::{DensityTracker, ProvingAssignment};
use crate::error::{Error, Result};
use crate::params::Parameters;

/// Turns a kernel result into a `Result`, naming the call.
fn check(call: &'static str, r: ffi::KResult) -> Result<()> {
    if r.code == 0 {
        Ok(())
    } else {
        Err(Error::Cuda {
            call,
            code: r.code,
            message: r.message(),
        })
    }
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

/// A vector of points resident on one GPU; freed on drop.
struct DeviceBases {
    raw: *mut ffi::KBases,
    len: usize,
}

// SAFETY: the handle is an opaque pointer to device memory owned by this value; the kernels'
// API serialises work per device and allows calls from any thread.
unsafe impl Send for DeviceBases {}
// SAFETY: shared use only passes the handle as `const` to MSM calls, which the API allows
// concurrently (they are serialised per device inside the kernels).
unsafe impl Sync for DeviceBases {}

impl DeviceBases {
    fn upload_g1(device: i32, points: &[blstrs::G1Affine]) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: G1Affine is repr(transparent) over blst_p1_affine, the layout the kernels
        // read; `points` is live for the call; `raw` is a valid out-pointer.
        check("cuzk_k_bases_upload_g1", unsafe {
            ffi::cuzk_k_bases_upload_g1(device, points.as_ptr().cast::<c_void>(), points.len(), &mut raw)
        })?;
        let this = Self { raw, len: points.len() };
        this.check_len()?;
        Ok(this)
    }

    fn upload_g2(device: i32, points: &[blstrs::G2Affine]) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: as for upload_g1, with G2Affine over blst_p2_affine.
        check("cuzk_k_bases_upload_g2", unsafe {
            ffi::cuzk_k_bases_upload_g2(device, points.as_ptr().cast::<c_void>(), points.len(), &mut raw)
        })?;
        let this = Self { raw, len: points.len() };
        this.check_len()?;
        Ok(this)
    }
}

impl DeviceBases {
    fn check_len(&self) -> Result<()> {
        // SAFETY: `raw` is a live handle from an upload.
        let on_device = unsafe { ffi::cuzk_k_bases_len(self.raw) };
        if on_device != self.len {
            return Err(Error::Cuda {
                call: "cuzk_k_bases_len",
                code: -3,
                message: format!("uploaded {} points, the device holds {on_device}", self.len),
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

/// One parameter set's query vectors on the device.
struct Resident {
    params_id: u64,
    bytes: usize,
    h: DeviceBases,
    l: DeviceBases,
    a: DeviceBases,
    b_g1: DeviceBases,
    b_g2: DeviceBases,
}

/// Proves on one CUDA device.
pub struct CudaBackend {
    device: i32,
    max_resident_bytes: usize,
    batched_msms: bool,
    /// Least recently used first.
    resident: Mutex<Vec<Arc<Resident>>>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .field("max_resident_bytes", &self.max_resident_bytes)
            .field("resident_bytes", &self.resident_bytes())
            .finish()
    }
}

impl CudaBackend {
    /// The backend on device `device`, with no residency cap beyond device memory.
    ///
    /// # Errors
    /// [`Error::Cuda`] without a usable driver; [`Error::InvalidArgument`] for a device that
    /// does not exist.
    pub fn new(device: usize) -> Result<Self> {
        let count = device_count()?;
        if device >= count {
            return Err(Error::InvalidArgument(format!(
                "CUDA device {device} requested, the driver sees {count}"
            )));
        }
        Ok(Self {
            device: device as i32,
            max_resident_bytes: usize::MAX,
            batched_msms: true,
            resident: Mutex::new(Vec::new()),
        })
    }

    /// Caps the device memory held by resident parameters.
    pub fn with_max_resident_bytes(mut self, bytes: usize) -> Self {
        self.max_resident_bytes = bytes;
        self
    }

    /// Whether L, A, B_G1 and B_G2 run as one batched call (default; uploads overlap
    /// compute) or as separate calls, each timed on its own in [`Timings`] (at 2^24 on the
    /// H200: 316 ms batched, 319 ms separate).
    pub fn with_batched_msms(mut self, batched: bool) -> Self {
        self.batched_msms = batched;
        self
    }

    /// Device memory held by resident parameters.
    pub fn resident_bytes(&self) -> usize {
        self.resident.lock().iter().map(|r| r.bytes).sum()
    }

    /// Frees every resident parameter set (in-flight proofs keep theirs until they finish).
    pub fn evict_all(&self) {
        self.resident.lock().clear();
    }

    /// The resident copy of `params`, uploading it (and evicting least recently used sets to
    /// stay under the cap) if needed.
    fn resident(&self, params: &Parameters) -> Result<Arc<Resident>> {
        let mut list = self.resident.lock();
        if let Some(i) = list.iter().position(|r| r.params_id == params.id()) {
            let r = list.remove(i);
            list.push(r.clone());
            return Ok(r);
        }
        let bytes = params.device_bytes();
        if bytes > self.max_resident_bytes {
            return Err(Error::InvalidArgument(format!(
                "parameters need {bytes} bytes of device memory, the residency cap is {}",
                self.max_resident_bytes
            )));
        }
        while list.iter().map(|r| r.bytes).sum::<usize>() + bytes > self.max_resident_bytes {
            let gone = list.remove(0);
            log::info!(
                "GPU {}: evicting resident parameters ({} bytes)",
                self.device,
                gone.bytes
            );
        }
        let start = Instant::now();
        let d = self.device;
        let r = Arc::new(Resident {
            params_id: params.id(),
            bytes,
            h: DeviceBases::upload_g1(d, params.h())?,
            l: DeviceBases::upload_g1(d, params.l())?,
            a: DeviceBases::upload_g1(d, params.a())?,
            b_g1: DeviceBases::upload_g1(d, params.b_g1())?,
            b_g2: DeviceBases::upload_g2(d, params.b_g2())?,
        });
        log::info!(
            "GPU {d}: parameters resident ({bytes} bytes) in {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        list.push(r.clone());
        Ok(r)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare(&self, params: &Parameters) -> Result<()> {
        self.resident(params).map(|_| ())
    }

    fn evict(&self) {
        self.evict_all();
    }

    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        let dev = match self.resident(params) {
            Ok(d) => d,
            Err(e) => {
                assignment.release_abc();
                return Err(e);
            }
        };
        let start = Instant::now();
        let (a, b, c) = (assignment.a(), assignment.b(), assignment.c());
        let n = a.len();
        let log_m = params.domain_size().trailing_zeros();
        let mut h = G1Projective::identity();
        let ret: &mut blst::blst_p1 = h.as_mut();
        // SAFETY: a, b, c are n live scalars each (blst_fr layout); h_out is null (not
        // wanted); `ret` is a blst_p1; the H bases hold m − 1 points (checked by
        // check_assignment: domain size matches the parameters).
        let r = unsafe {
            ffi::cuzk_k_compute_h_msm(
                dev.h.raw,
                a.as_ptr().cast::<c_void>(),
                b.as_ptr().cast::<c_void>(),
                c.as_ptr().cast::<c_void>(),
                n,
                log_m,
                std::ptr::null_mut(),
                (ret as *mut blst::blst_p1).cast::<c_void>(),
            )
        };
        // a/b/c are on the device (or the call failed): either way the buffers go back now.
        assignment.release_abc();
        check("cuzk_k_compute_h_msm", r)?;
        t.h += start.elapsed();

        let inputs = assignment.input_assignment();
        let aux = assignment.aux_assignment();
        let num_inputs = inputs.len();
        let b_inputs = assignment.b_input_density().total_density();
        let a_aux = assignment.a_aux_density().words();
        let b_in = assignment.b_input_density().words();
        let b_aux = assignment.b_aux_density().words();

        if !self.batched_msms {
            let s = Instant::now();
            let l = msm_g1(&dev.l, 0, aux, None)?;
            t.msm_l += s.elapsed();
            let s = Instant::now();
            let a = msm_g1(&dev.a, 0, inputs, None)? + msm_g1(&dev.a, num_inputs, aux, Some(a_aux))?;
            t.msm_a += s.elapsed();
            let s = Instant::now();
            let b_g1 = msm_g1(&dev.b_g1, 0, inputs, Some(b_in))? + msm_g1(&dev.b_g1, b_inputs, aux, Some(b_aux))?;
            t.msm_b_g1 += s.elapsed();
            let s = Instant::now();
            let b_g2 = msm_g2(&dev.b_g2, 0, inputs, Some(b_in))? + msm_g2(&dev.b_g2, b_inputs, aux, Some(b_aux))?;
            t.msm_b_g2 += s.elapsed();
            return Ok(Commitments { h, l, a, b_g1, b_g2 });
        }

        // L, A, B_G1 and B_G2 (inputs and aux parts) in one batched call: the kernels upload
        // job i+1's scalars while job i computes.
        let s = Instant::now();
        let mut g1 = [G1Projective::identity(); 5];
        let mut g2 = [G2Projective::identity(); 2];
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
        // SAFETY: every job points at live bases handles, scalar slices (blst_fr layout) with
        // their exact lengths, density words covering them (one word per 64 variables), and
        // an output of the bases' group (blst_p1 for G1, blst_p2 for G2), all borrowed until
        // the call returns.
        check("cuzk_k_msm_batch", unsafe {
            ffi::cuzk_k_msm_batch(jobs.as_ptr(), jobs.len())
        })?;
        t.msm_batch += s.elapsed();
        let (l, a, b_g1) = (g1[0], g1[1] + g1[2], g1[3] + g1[4]);
        let b_g2 = g2[0] + g2[1];
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }
}
