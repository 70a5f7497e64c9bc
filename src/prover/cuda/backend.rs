//! [`CudaBackend`]: one device's backend — its configuration, statistics and the proof's
//! commitments (H, then the batched L/A/B MSMs) on the device.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use blstrs::G1Projective;
use group::Group;
use parking_lot::Mutex;

use super::bases::{msm, Staged};
use super::device::{probe, DeviceInfo};
use super::batch::JobSpec;
use super::error::check;
use super::ffi;
use super::residency::Slot;
use crate::assignment::{DensityTracker, ProvingAssignment};
use crate::compiled::{CompiledCircuit, Witness};
use crate::curve::{G1, G2};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::prover::msm_plan::{resolve, Sums, PROOF_MSMS};
use crate::prover::{Backend, Commitments, Timings};

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
pub const WORKING_BYTES_PER_DOMAIN_ELEMENT: usize = crate::prover::kernel_contract::WORKING_BYTES_PER_DOMAIN_ELEMENT;

/// Parses a byte count: a plain integer, or with a suffix K/M/G/T (powers of 1024; "GiB",
/// "GB" and "G" all mean 2^30).
pub(super) fn parse_bytes(v: &str) -> Option<usize> {
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
    pub(super) device: i32,
    pub(super) info: DeviceInfo,
    pub(super) max_resident_bytes: usize,
    /// Device memory a parameter set and a proof's working set must fit in to be resident.
    pub(super) memory_limit: AtomicUsize,
    /// Stream every parameter set, whatever fits.
    pub(super) always_stream: AtomicBool,
    pub(super) batched_msms: bool,
    pub(super) lost: AtomicBool,
    pub(super) oom_retries: AtomicUsize,
    /// Idle resident sets evicted before proofs over streamed parameters.
    pub(super) cleared_for_streamed: AtomicUsize,
    /// Least recently used first.
    pub(super) slots: Mutex<Vec<Arc<Slot>>>,
    /// Device bytes of every uploaded set not yet dropped (evicted ones still in use included).
    pub(super) live: Arc<AtomicUsize>,
    /// Compiled circuits resident for the witness path, and how its proofs were evaluated.
    pub(super) circuits: super::witness::DeviceCircuits,
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
            cleared_for_streamed: AtomicUsize::new(0),
            slots: Mutex::new(Vec::new()),
            live: Arc::new(AtomicUsize::new(0)),
            circuits: super::witness::DeviceCircuits::default(),
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

    pub(super) fn set_kernel_limit(&self, limit: usize, chunk: usize) -> Result<()> {
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

    /// How many idle resident parameter sets left the device before a proof over streamed
    /// parameters, to leave it the room it works in (they upload again at their next proof).
    pub fn evicted_for_streamed_proofs(&self) -> usize {
        self.cleared_for_streamed.load(Ordering::Acquire)
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
        self.circuits.clear();
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
            return crate::prover::cpu::CpuBackend.commitments(assignment, params, t);
        }
        let dev = match self.resident(params) {
            Ok(d) => d,
            Err(e) => {
                assignment.release_abc();
                return Err(e);
            }
        };
        self.clear_for_streamed_proof(&dev, params.id());
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
        // The batch's first job (PROOF_MSMS[0]: L over all of aux, from its first base): over
        // streamed bases the H call copies its first chunk during the H MSM's last one. Only
        // its bases, offset, scalars and density are read.
        let next_job = ffi::KMsmJob {
            bases: dev.query(PROOF_MSMS[0].query).raw,
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

        let msms = resolve(assignment);
        let mut sums = Sums::default();
        if !self.batched_msms {
            for m in &msms {
                let s = Instant::now();
                let bases = dev.query(m.msm.query);
                let density = m.density.map(DensityTracker::words);
                if m.msm.query.is_g2() {
                    sums.add_g2(self.with_oom_retry(keep, || msm::<G2>(bases, m.offset, m.scalars, density))?);
                } else {
                    let p = self.with_oom_retry(keep, || msm::<G1>(bases, m.offset, m.scalars, density))?;
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
        let sums = unsafe { self.run_batch(&dev, keep, &jobs, &staged, t)? };
        let Sums { l, a, b_g1, b_g2 } = sums;
        Ok(Commitments { h, l, a, b_g1, b_g2 })
    }

    fn witness_commitments(
        &self,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        pool: Option<&PinnedPool>,
        t: &mut Timings,
    ) -> Result<Commitments> {
        self.witness_on_device(circuit, witness, params, pool, t)
    }

    fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        // Nothing from the pool when the circuit is (or is expected to become) resident: what
        // the host evaluation would take when it does not fit.
        if self.batched_msms && self.expects_circuit(circuit) {
            [0; 4]
        } else {
            crate::prover::witness::host_pool_requests(circuit)
        }
    }
}
