//! Which parameter sets live on the device: upload once, stream what does not fit, evict the
//! least recently used idle set for room, clear idle sets out of a streamed proof's way, free
//! idle memory and retry once on out-of-memory.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::backend::CudaBackend;
use super::bases::DeviceBases;
use super::error::{check, is_out_of_memory};
use super::ffi;
use crate::curve::{G1, G2};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::prover::msm_plan::Query;

/// One parameter set's query vectors on the device (or, streamed, page-locked on the host).
/// Counted in its backend's resident bytes from upload to drop — also after eviction, while
/// proofs in flight still hold it; a streamed set counts 0 device bytes.
pub(super) struct Resident {
    pub(super) bytes: usize,
    pub(super) streamed: bool,
    pub(super) live: Arc<AtomicUsize>,
    pub(super) h: DeviceBases,
    pub(super) l: DeviceBases,
    pub(super) a: DeviceBases,
    pub(super) b_g1: DeviceBases,
    pub(super) b_g2: DeviceBases,
}

impl Resident {
    /// The bases of a query the proof's MSMs read after H.
    pub(super) fn query(&self, q: Query) -> &DeviceBases {
        match q {
            Query::L => &self.l,
            Query::A => &self.a,
            Query::BG1 => &self.b_g1,
            Query::BG2 => &self.b_g2,
        }
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
pub(super) struct Slot {
    pub(super) params_id: u64,
    pub(super) bytes: usize,
    pub(super) evicted: AtomicBool,
    /// Kept for good (`keep_resident`): never evicted to make room.
    pub(super) pinned: AtomicBool,
    pub(super) state: Mutex<Option<Arc<Resident>>>,
}

impl CudaBackend {
    pub(super) fn release_caches(&self) -> Result<()> {
        // SAFETY: plain device ordinal; the kernels wait for the device's streams first.
        let r = unsafe { ffi::cuzk_k_device_release_caches(self.device) };
        check("cuzk_k_device_release_caches", r).map_err(|e| self.classify(e))
    }

    /// Frees device memory nobody is using: the caches and every idle resident set except
    /// `keep`. Called on out-of-memory before the one retry. Streamed sets stay: they hold no
    /// device memory, and dropping one would only unregister host memory that its next proof
    /// registers again (seconds at Filecoin's sizes).
    pub(super) fn free_idle(&self, keep: Option<u64>) {
        let mut freed = 0usize;
        while let Some(r) = self.evict_one_idle_on_device(keep) {
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

    /// Before a proof over `dev`, streamed parameters: evicts every idle set that holds device
    /// memory, except `keep` and those kept for good. A streamed proof works in what the
    /// memory limit leaves — its H phase needs a, b, c (and on the witness path the expanded
    /// aux) on the device at once, its MSMs size their chunks from the headroom — so an idle
    /// set beside it would at best shrink the chunks and at worst make the H phase run out of
    /// memory, lose its work and retry (a 2^27 SnapDeals proof under a 24 GiB limit after a
    /// Winning PoSt's set was uploaded). The evicted set uploads again at its own next proof,
    /// as it would after that retry. Resident proofs leave the list alone: their set and
    /// working set fit under the limit by [`CudaBackend::would_stream`]'s rule.
    pub(super) fn clear_for_streamed_proof(&self, dev: &Resident, keep: u64) {
        if !dev.streamed {
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
                self.device
            );
        }
    }

    /// Evicts the least recently used set that no proof holds and that is not `keep`.
    pub(super) fn evict_one_idle(&self, keep: Option<u64>) -> Option<Arc<Resident>> {
        self.evict_one_idle_where(keep, |_| true)
    }

    /// [`CudaBackend::evict_one_idle`] among the sets that hold device memory (not streamed).
    pub(super) fn evict_one_idle_on_device(&self, keep: Option<u64>) -> Option<Arc<Resident>> {
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
                log::info!("GPU {}: evicting resident parameters ({} bytes)", self.device, r.bytes);
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
                call().map_err(|e| self.classify(e))
            }
            other => other.map_err(|e| self.classify(e)),
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
    pub(super) fn make_room(&self, bytes: usize, keep: u64) -> Result<()> {
        while self.resident_bytes() + bytes > self.max_resident_bytes {
            if self.evict_one_idle_on_device(Some(keep)).is_none() {
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

    pub(super) fn upload(&self, params: &Parameters) -> Result<Arc<Resident>> {
        params.require_host_copy("uploading parameters to the GPU")?;
        let start = Instant::now();
        let d = self.device;
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
    pub(super) fn stream(&self, params: &Parameters) -> Result<Arc<Resident>> {
        params.require_host_copy("streaming parameters to the GPU")?;
        let start = Instant::now();
        let d = self.device;
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
