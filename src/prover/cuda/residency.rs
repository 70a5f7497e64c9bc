//! Which parameter sets live on the device: upload once, stream what does not fit under the
//! memory limit, evict the least recently used idle set for room, clear idle sets out of a
//! streamed proof's way, free idle memory and retry once on out-of-memory.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::bases::DeviceBases;
use super::error::is_out_of_memory;
use super::ffi;
use super::health::Health;
use crate::curve::{G1, G2};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::prover::msm_plan::Query;
use crate::prover::Placement;

/// Device memory cuzk's kernels hold on one GPU, as they count it (see
/// [`CudaBackend::memory_stats`](super::CudaBackend::memory_stats)).
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

/// One parameter set's query vectors on the device (or, streamed, page-locked on the host).
/// Counted in its backend's resident bytes from upload to drop — also after eviction, while
/// proofs in flight still hold it; a streamed set counts 0 device bytes.
pub(super) struct Resident {
    bytes: usize,
    streamed: bool,
    live: Arc<AtomicUsize>,
    h: DeviceBases,
    l: DeviceBases,
    a: DeviceBases,
    b_g1: DeviceBases,
    b_g2: DeviceBases,
}

impl Resident {
    /// The H bases, which the H call reads.
    pub(super) fn h(&self) -> &DeviceBases {
        &self.h
    }

    /// The bases of a query the proof's MSMs read after H.
    pub(super) fn query(&self, q: Query) -> &DeviceBases {
        match q {
            Query::L => &self.l,
            Query::A => &self.a,
            Query::BG1 => &self.b_g1,
            Query::BG2 => &self.b_g2,
        }
    }

    /// Whether the set is streamed from page-locked host memory rather than on the device.
    pub(super) fn is_streamed(&self) -> bool {
        self.streamed
    }
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

/// One device's parameter sets, the memory limit they are placed under, and the counts of
/// what residency did (out-of-memory retries, sets cleared for streamed proofs).
pub(super) struct Residency {
    health: Arc<Health>,
    /// The device's free memory when probed: the memory limit's default.
    free_bytes: usize,
    max_resident_bytes: usize,
    /// Device memory a parameter set and a proof's working set must fit in to be resident.
    memory_limit: AtomicUsize,
    /// Stream every parameter set, whatever fits.
    always_stream: AtomicBool,
    oom_retries: AtomicUsize,
    /// Idle resident sets evicted before proofs over streamed parameters.
    cleared_for_streamed: AtomicUsize,
    /// Least recently used first.
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Device bytes of every uploaded set not yet dropped (evicted ones still in use included).
    live: Arc<AtomicUsize>,
}

impl Residency {
    /// Nothing resident on `health`'s device, which had `free_bytes` free when probed: the
    /// residency cap and the memory limit.
    pub(super) fn new(health: Arc<Health>, free_bytes: usize) -> Self {
        Self {
            health,
            free_bytes,
            max_resident_bytes: free_bytes,
            memory_limit: AtomicUsize::new(free_bytes),
            always_stream: AtomicBool::new(false),
            oom_retries: AtomicUsize::new(0),
            cleared_for_streamed: AtomicUsize::new(0),
            slots: Mutex::new(Vec::new()),
            live: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// See [`CudaBackend::set_memory_limit`](super::CudaBackend::set_memory_limit).
    pub(super) fn set_memory_limit(&self, bytes: Option<usize>) -> Result<()> {
        self.memory_limit
            .store(bytes.unwrap_or(self.free_bytes), Ordering::Release);
        self.set_kernel_limit(bytes.unwrap_or(0), 0)?;
        while self.evict_one_idle(None).is_some() {}
        self.release_caches()
    }

    /// See [`CudaBackend::set_stream_chunk_points`](super::CudaBackend::set_stream_chunk_points).
    pub(super) fn set_stream_chunk_points(&self, points: usize) -> Result<()> {
        let limit = self.memory_stats(false)?.limit;
        self.set_kernel_limit(limit, points)
    }

    fn set_kernel_limit(&self, limit: usize, chunk: usize) -> Result<()> {
        // SAFETY: plain integers; the kernels take the device's lock.
        let r = unsafe { ffi::cuzk_k_device_set_limit(self.health.device(), limit, chunk) };
        self.health.check("cuzk_k_device_set_limit", r)
    }

    /// The device memory limit parameter sets are placed under.
    pub(super) fn memory_limit(&self) -> usize {
        self.memory_limit.load(Ordering::Acquire)
    }

    /// See [`CudaBackend::set_always_stream`](super::CudaBackend::set_always_stream).
    pub(super) fn set_always_stream(&self, always: bool) {
        self.always_stream.store(always, Ordering::Release);
        while self.evict_one_idle(None).is_some() {}
    }

    /// Whether `params` would be streamed rather than resident under the current limit.
    pub(super) fn would_stream(&self, params: &Parameters) -> bool {
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
    pub(super) fn memory_stats(&self, reset_peak: bool) -> Result<DeviceMemStats> {
        let mut st = ffi::KMemStats::default();
        // SAFETY: `st` is a valid out-pointer for the call.
        let r = unsafe { ffi::cuzk_k_device_mem_stats(self.health.device(), i32::from(reset_peak), &mut st) };
        self.health.check("cuzk_k_device_mem_stats", r)?;
        Ok(DeviceMemStats {
            limit: st.limit,
            used: st.used,
            peak: st.peak,
            pool_reserved: st.pool_reserved,
            pool_reserved_high: st.pool_reserved_high,
        })
    }

    /// Number of parameter sets held in streamed mode.
    pub(super) fn streamed_sets(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        slots
            .iter()
            .filter(|s| s.state.lock().as_ref().is_some_and(|r| r.streamed))
            .count()
    }

    /// Where the set `params_id` is held now: on the device, streamed, or not at all (never
    /// placed, evicted, or being placed now: the slot's lock is held through an upload, and
    /// this never waits for one).
    pub(super) fn placement(&self, params_id: u64) -> Placement {
        let slot = self.slots.lock().iter().find(|s| s.params_id == params_id).cloned();
        let Some(slot) = slot.filter(|s| !s.evicted.load(Ordering::Acquire)) else {
            return Placement::Absent;
        };
        let Some(state) = slot.state.try_lock() else {
            return Placement::Absent;
        };
        match state.as_ref() {
            Some(r) if r.streamed => Placement::Streamed,
            Some(_) => Placement::Device,
            None => Placement::Absent,
        }
    }

    /// Caps the device memory held by resident parameters.
    pub(super) fn set_max_resident_bytes(&mut self, bytes: usize) {
        self.max_resident_bytes = bytes;
    }

    /// The residency cap.
    pub(super) fn max_resident_bytes(&self) -> usize {
        self.max_resident_bytes
    }

    /// Device memory held by resident parameters, sets evicted but still in use included.
    pub(super) fn resident_bytes(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Number of parameter sets resident (evicted ones still in use not included).
    pub(super) fn resident_sets(&self) -> usize {
        // A snapshot first: an uploading caller holds its slot's lock and may want the list's.
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        slots.iter().filter(|s| s.state.lock().is_some()).count()
    }

    /// How many times a call ran out of device memory and was retried after freeing caches.
    pub(super) fn oom_retries(&self) -> usize {
        self.oom_retries.load(Ordering::Acquire)
    }

    /// How many idle resident parameter sets left the device before a proof over streamed
    /// parameters.
    pub(super) fn evicted_for_streamed_proofs(&self) -> usize {
        self.cleared_for_streamed.load(Ordering::Acquire)
    }

    /// Frees every resident parameter set (sets in use by proofs in flight go when those
    /// finish) and the kernels' device caches.
    pub(super) fn release(&self) -> Result<()> {
        let gone: Vec<Arc<Slot>> = std::mem::take(&mut *self.slots.lock());
        for slot in gone {
            slot.evicted.store(true, Ordering::Release);
            drop(slot.state.lock().take());
        }
        self.release_caches()
    }

    /// See [`CudaBackend::evict_params`](super::CudaBackend::evict_params).
    pub(super) fn evict_params(&self, params_id: u64) -> bool {
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
            self.health.device(),
            resident.as_ref().map_or(0, |r| r.bytes)
        );
        resident.is_some()
    }

    /// Keeps the set `params_id` for good: never evicted to make room.
    pub(super) fn pin(&self, params_id: u64) {
        let slots: Vec<Arc<Slot>> = self.slots.lock().clone();
        for s in slots.iter().filter(|s| s.params_id == params_id) {
            s.pinned.store(true, Ordering::Release);
        }
    }

    /// Frees the kernels' device caches: NTT tables and the memory pool's reserve.
    fn release_caches(&self) -> Result<()> {
        // SAFETY: plain device ordinal; the kernels wait for the device's streams first.
        let r = unsafe { ffi::cuzk_k_device_release_caches(self.health.device()) };
        self.health.check("cuzk_k_device_release_caches", r)
    }

    /// Frees device memory nobody is using: the caches and every idle resident set except
    /// `keep`. Called on out-of-memory before the one retry. Streamed sets stay: they hold no
    /// device memory, and dropping one would only unregister host memory that its next proof
    /// registers again (seconds at Filecoin's sizes).
    fn free_idle(&self, keep: Option<u64>) {
        let mut freed = 0usize;
        while let Some(r) = self.evict_one_idle_on_device(keep) {
            freed += r.bytes;
        }
        if let Err(e) = self.release_caches() {
            log::warn!("GPU {}: releasing caches: {e}", self.health.device());
        }
        log::warn!(
            "GPU {}: out of device memory: released caches and {freed} bytes of idle parameters; retrying once",
            self.health.device()
        );
    }

    /// Before a proof over `dev`, streamed parameters: evicts every idle set that holds device
    /// memory, except `keep` and those kept for good. A streamed proof works in what the
    /// memory limit leaves — its H phase needs a, b, c (and on the witness path the expanded
    /// aux) on the device at once, its MSMs size their chunks from the headroom — so an idle
    /// set beside it would at best shrink the chunks and at worst make the H phase run out of
    /// memory, lose its work and retry (a 2^27 SnapDeals proof under a 24 GiB limit after a
    /// Winning PoSt's set was uploaded). The evicted set uploads again at its own next proof,
    /// as it would after that retry. Resident proofs leave the list alone: their set and
    /// working set fit under the limit by [`Residency::would_stream`]'s rule.
    pub(super) fn clear_for_streamed_proof(&self, dev: &Resident, keep: u64) {
        if !dev.is_streamed() {
            return;
        }
        let (mut sets, mut freed) = (0usize, 0usize);
        while let Some(r) = self.evict_one_idle_on_device(Some(keep)) {
            sets += 1;
            freed += r.bytes;
        }
        if sets > 0 {
            self.cleared_for_streamed.fetch_add(sets, Ordering::AcqRel);
            log::info!(
                "GPU {}: {sets} idle parameter set(s) ({freed} bytes) evicted before a proof over streamed parameters",
                self.health.device()
            );
        }
    }

    /// Evicts the least recently used set that no proof holds and that is not `keep`.
    fn evict_one_idle(&self, keep: Option<u64>) -> Option<Arc<Resident>> {
        self.evict_one_idle_where(keep, |_| true)
    }

    /// [`Residency::evict_one_idle`] among the sets that hold device memory (not streamed).
    fn evict_one_idle_on_device(&self, keep: Option<u64>) -> Option<Arc<Resident>> {
        self.evict_one_idle_where(keep, |slot| slot.bytes > 0)
    }

    fn evict_one_idle_where(&self, keep: Option<u64>, eligible: impl Fn(&Slot) -> bool) -> Option<Arc<Resident>> {
        let mut list = self.slots.lock();
        for i in 0..list.len() {
            if Some(list[i].params_id) == keep || list[i].pinned.load(Ordering::Acquire) || !eligible(&list[i]) {
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
                log::info!(
                    "GPU {}: evicting resident parameters ({} bytes)",
                    self.health.device(),
                    r.bytes
                );
                return Some(r);
            }
        }
        None
    }

    /// Runs a kernel call; on out-of-memory frees what is idle (all but `keep`) and runs it
    /// once more. Sticky errors become [`Error::DeviceLost`].
    pub(super) fn with_oom_retry<T>(&self, keep: Option<u64>, mut call: impl FnMut() -> Result<T>) -> Result<T> {
        match call() {
            Err(e) if is_out_of_memory(&e) => {
                self.oom_retries.fetch_add(1, Ordering::AcqRel);
                self.free_idle(keep);
                call().map_err(|e| self.health.classify(e))
            }
            other => other.map_err(|e| self.health.classify(e)),
        }
    }

    /// The resident copy of `params`, uploading it if needed: outside the list's lock, once
    /// per set however many callers ask, evicting idle least recently used sets to stay under
    /// the cap.
    pub(super) fn resident(&self, params: &Parameters) -> Result<Arc<Resident>> {
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
            if self.evict_one_idle_on_device(Some(keep)).is_none() {
                return Err(Error::InvalidArgument(format!(
                    "GPU {}: parameters need {bytes} bytes, {} bytes are resident and in use by proofs in flight, cap {}",
                    self.health.device(),
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
        let d = self.health.device();
        let bytes = params.device_bytes();
        let h = DeviceBases::upload::<G1>(d, params.h())?;
        let l = DeviceBases::upload::<G1>(d, params.l())?;
        let a = DeviceBases::upload::<G1>(d, params.a())?;
        let b_g1 = DeviceBases::upload::<G1>(d, params.b_g1())?;
        let b_g2 = DeviceBases::upload::<G2>(d, params.b_g2())?;
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
        let d = self.health.device();
        let q = params.shared_queries();
        let r = Arc::new(Resident {
            bytes: 0,
            streamed: true,
            live: self.live.clone(),
            h: DeviceBases::host::<G1>(d, q.h)?,
            l: DeviceBases::host::<G1>(d, q.l)?,
            a: DeviceBases::host::<G1>(d, q.a)?,
            b_g1: DeviceBases::host::<G1>(d, q.b_g1)?,
            b_g2: DeviceBases::host::<G2>(d, q.b_g2)?,
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
