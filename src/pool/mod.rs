//! The pinned pool: host buffers for a partition's a/b/c vectors, checked out, returned, reused.
//!
//! Pinning is slow to set up (on the H200 host `cudaHostAlloc` costs about 0.76 s/GiB, 38× the
//! transfer it speeds up), so buffers are allocated once and reused across partitions. The pool:
//!
//! - reuses the best-fitting idle buffer, never one more than `max_reuse_factor` × the request;
//! - holds at most `max_bytes` (idle + in use); at the cap it frees idle buffers **largest
//!   first**, then waits for returns or fails, as configured;
//! - falls back to unpinned memory only when configured to, and then counts and logs it;
//! - counts every byte once: `bytes_in_use` (checked out, including allocations under way) and
//!   `bytes_idle` (held for reuse) are the pool's bytes; fallback bytes are counted apart.
//!
//! Buffers come from a [`HostAllocator`] backend and go back to it only through the pool.
//!
//! This file holds [`PinnedPool`] and its checkout/return logic; `config` its configuration
//! and statistics, `buffer` the [`PinnedBuffer`] it hands out, `backend` and `cuda` the host
//! allocators, `vec` [`PinnedVec`].

mod backend;
mod buffer;
mod config;
#[cfg(feature = "cuda")]
mod cuda;
mod vec;

use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub use self::backend::{HeapAllocator, HostAllocator, PAGE_SIZE};
pub use self::buffer::PinnedBuffer;
pub use self::config::{PoolConfig, PoolStats, WhenFull};
#[cfg(feature = "cuda")]
pub use self::cuda::{CudaPinnedAllocator, PinMode};
pub use self::vec::PinnedVec;
pub(crate) use self::vec::{copy_error, fill_vec, heap_error};
use crate::error::{Error, Result};

/// A page-aligned block and where it came from.
struct Block {
    ptr: NonNull<u8>,
    capacity: usize,
    fallback: bool,
}

// SAFETY: a Block is a uniquely owned region of plain host memory; moving the ownership to
// another thread is as safe as moving a `Box<[u8]>`.
unsafe impl Send for Block {}

#[derive(Default)]
struct State {
    idle: BTreeMap<usize, Vec<Block>>,
    stats: PoolStats,
}

impl State {
    fn pool_bytes(&self) -> usize {
        self.stats.bytes_in_use + self.stats.bytes_idle
    }

    fn note_peak(&mut self) {
        let held = self.pool_bytes();
        if held > self.stats.peak_bytes {
            self.stats.peak_bytes = held;
        }
    }

    /// Removes the smallest idle block of capacity in `[min, max]`.
    fn take_best_fit(&mut self, min: usize, max: usize) -> Option<Block> {
        let (&cap, _) = self.idle.range(min..=max).next()?;
        let block = self.take_idle(cap);
        Some(block)
    }

    fn take_largest_idle(&mut self) -> Option<Block> {
        let (&cap, _) = self.idle.iter().next_back()?;
        Some(self.take_idle(cap))
    }

    fn take_idle(&mut self, cap: usize) -> Block {
        let list = self.idle.get_mut(&cap).expect("idle list for a key present");
        let block = list.pop().expect("idle lists are never left empty");
        if list.is_empty() {
            self.idle.remove(&cap);
        }
        self.stats.bytes_idle -= block.capacity;
        self.stats.idle_buffers -= 1;
        block
    }

    fn put_idle(&mut self, block: Block) {
        self.stats.bytes_idle += block.capacity;
        self.stats.idle_buffers += 1;
        self.idle.entry(block.capacity).or_default().push(block);
    }
}

struct Inner {
    config: PoolConfig,
    backend: Box<dyn HostAllocator>,
    fallback: HeapAllocator,
    state: Mutex<State>,
    returned: Condvar,
}

impl Inner {
    fn free_blocks(&self, blocks: Vec<Block>) {
        if blocks.is_empty() {
            return;
        }
        let start = Instant::now();
        let n = blocks.len() as u64;
        for block in blocks {
            // SAFETY: every Block was made by `allocate` of the backend its `fallback` flag
            // names, and is owned here exclusively (taken out of the idle map or a buffer).
            unsafe {
                if block.fallback {
                    self.fallback.free(block.ptr, block.capacity);
                } else {
                    self.backend.free(block.ptr, block.capacity);
                }
            }
        }
        let mut state = self.state.lock();
        state.stats.frees += n;
        state.stats.free_time += start.elapsed();
    }

    fn give_back(&self, block: Block) {
        let mut state = self.state.lock();
        if block.fallback {
            state.stats.fallback_bytes_in_use -= block.capacity;
            drop(state);
            self.free_blocks(vec![block]);
        } else {
            state.stats.bytes_in_use -= block.capacity;
            state.put_idle(block);
            drop(state);
            self.returned.notify_all();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        let mut blocks = Vec::new();
        while let Some(b) = state.take_largest_idle() {
            blocks.push(b);
        }
        drop(state);
        self.free_blocks(blocks);
    }
}

/// A pool of (pinned) host buffers, shared between threads by cloning the handle.
#[derive(Clone)]
pub struct PinnedPool {
    inner: Arc<Inner>,
}

impl fmt::Debug for PinnedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedPool")
            .field("backend", &self.inner.backend.name())
            .field("config", &self.inner.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl PinnedPool {
    /// A pool over unpinned page-aligned heap memory ([`HeapAllocator`]): the pool without CUDA.
    pub fn heap(config: PoolConfig) -> Self {
        Self::with_backend(Box::new(HeapAllocator), config)
    }

    /// A pool of CUDA pinned memory for device `device` (feature `cuda`).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the driver or the device is not usable.
    #[cfg(feature = "cuda")]
    pub fn cuda(device: usize, mode: PinMode, config: PoolConfig) -> Result<Self> {
        Ok(Self::with_backend(
            Box::new(CudaPinnedAllocator::new(device, mode)?),
            config,
        ))
    }

    /// The best pool this build can make: CUDA pinned memory (device 0) in a `cuda` build
    /// with a usable GPU, else page-aligned heap memory (logged as a warning: transfers from
    /// unpinned memory run at a tenth of the speed).
    pub fn best_available(config: PoolConfig) -> Self {
        #[cfg(feature = "cuda")]
        match CudaPinnedAllocator::new(0, PinMode::default()) {
            Ok(a) => return Self::with_backend(Box::new(a), config),
            Err(e) => log::warn!("pinned pool: CUDA pinned memory unavailable ({e}); using unpinned heap memory"),
        }
        #[cfg(not(feature = "cuda"))]
        log::warn!("pinned pool: this build has no CUDA (feature `cuda`); using unpinned heap memory");
        Self::heap(config)
    }

    /// A pool over the given backend.
    pub fn with_backend(backend: Box<dyn HostAllocator>, config: PoolConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                backend,
                fallback: HeapAllocator,
                state: Mutex::new(State::default()),
                returned: Condvar::new(),
            }),
        }
    }

    /// The pool's configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// Whether this pool's own buffers are pinned (fallback buffers never are).
    pub fn is_pinned(&self) -> bool {
        self.inner.backend.is_pinned()
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        self.inner.state.lock().stats.clone()
    }

    /// Checks out a buffer of at least `bytes` bytes; dropping it returns it to the pool.
    ///
    /// # Errors
    /// [`Error::PoolExhausted`] when the cap leaves no room (after waiting, if configured) and
    /// fallback is off; [`Error::Allocation`] when the backend fails and fallback is off;
    /// [`Error::InvalidArgument`] for a request of 0 bytes or of more than `isize::MAX` bytes
    /// (no buffer that large can be addressed).
    pub fn checkout(&self, bytes: usize) -> Result<PinnedBuffer> {
        if bytes == 0 {
            return Err(Error::InvalidArgument("pool checkout of 0 bytes".into()));
        }
        let capacity = backend::page_round(bytes)
            .filter(|&c| isize::try_from(c).is_ok())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "pool checkout of {bytes} bytes is larger than any buffer can be"
                ))
            })?;
        let cfg = &self.inner.config;
        let max_fit = ((bytes as f64) * cfg.max_reuse_factor.max(1.0)) as usize;
        let max_fit = max_fit.max(capacity);
        let deadline = match cfg.when_full {
            // A wait too long for the clock (`Duration::MAX`) is a wait without end.
            WhenFull::Wait(d) => Some(Instant::now().checked_add(d).unwrap_or_else(far_future)),
            WhenFull::Fail => None,
        };

        let mut state = self.inner.state.lock();
        let mut waited = false;
        loop {
            if let Some(block) = state.take_best_fit(bytes, max_fit) {
                state.stats.bytes_in_use += block.capacity;
                state.stats.reuses += 1;
                state.stats.checkouts += 1;
                drop(state);
                log::trace!("pool: reused a {}-byte buffer for {bytes} bytes", block.capacity);
                return Ok(self.wrap(block, bytes));
            }

            // Room for a new block, freeing idle blocks (largest first) when that makes room.
            let in_use = state.stats.bytes_in_use;
            let fits_at_all = in_use.checked_add(capacity).is_some_and(|t| t <= cfg.max_bytes);
            if fits_at_all {
                let mut to_free = Vec::new();
                while state.pool_bytes().saturating_add(capacity) > cfg.max_bytes {
                    match state.take_largest_idle() {
                        Some(b) => to_free.push(b),
                        None => break,
                    }
                }
                // Reserve the bytes before dropping the lock, so concurrent checkouts see them.
                state.stats.bytes_in_use += capacity;
                state.note_peak();
                drop(state);
                if !to_free.is_empty() {
                    log::debug!(
                        "pool: freeing {} idle buffers ({} bytes) to stay under the cap",
                        to_free.len(),
                        to_free.iter().map(|b| b.capacity).sum::<usize>()
                    );
                }
                self.inner.free_blocks(to_free);
                return self.allocate_reserved(bytes, capacity);
            }

            // No room even with every idle block freed: wait or give up.
            let never_fits = capacity > cfg.max_bytes;
            match deadline {
                Some(deadline) if !never_fits => {
                    if !waited {
                        state.stats.waits += 1;
                        waited = true;
                        log::debug!(
                            "pool: waiting for room for {bytes} bytes ({in_use} in use, cap {})",
                            cfg.max_bytes
                        );
                    }
                    if self.inner.returned.wait_until(&mut state, deadline).timed_out() {
                        // One last look after the timeout.
                        if state.stats.bytes_in_use.saturating_add(capacity) <= cfg.max_bytes
                            || state.idle.range(bytes..=max_fit).next().is_some()
                        {
                            continue;
                        }
                        let err = Error::PoolExhausted {
                            requested: bytes,
                            in_use: state.stats.bytes_in_use,
                            cap: cfg.max_bytes,
                            waited,
                        };
                        drop(state);
                        return self.fallback_or(bytes, capacity, err);
                    }
                }
                _ => {
                    let err = Error::PoolExhausted {
                        requested: bytes,
                        in_use,
                        cap: cfg.max_bytes,
                        waited,
                    };
                    drop(state);
                    return self.fallback_or(bytes, capacity, err);
                }
            }
        }
    }

    /// Frees idle buffers, largest first, until at most `target_idle_bytes` are idle.
    /// Returns the number of bytes freed.
    pub fn shrink(&self, target_idle_bytes: usize) -> usize {
        let mut state = self.inner.state.lock();
        let mut blocks = Vec::new();
        while state.stats.bytes_idle > target_idle_bytes {
            match state.take_largest_idle() {
                Some(b) => blocks.push(b),
                None => break,
            }
        }
        drop(state);
        let freed = blocks.iter().map(|b| b.capacity).sum();
        if freed > 0 {
            log::debug!("pool: shrink freed {} buffers, {freed} bytes", blocks.len());
        }
        self.inner.free_blocks(blocks);
        freed
    }

    /// The capacities an idle buffer may have to be reused by a checkout of `bytes` (as
    /// [`checkout`](Self::checkout) picks them): from `bytes` to `max_reuse_factor` × `bytes`
    /// (at least the page-rounded request). `None` for requests no checkout accepts.
    fn reuse_range(&self, bytes: usize) -> Option<(usize, usize)> {
        let capacity = backend::page_round(bytes).filter(|&c| bytes > 0 && isize::try_from(c).is_ok())?;
        let max_fit = ((bytes as f64) * self.inner.config.max_reuse_factor.max(1.0)) as usize;
        Some((bytes, max_fit.max(capacity)))
    }

    /// Frees the idle buffers that no checkout of one of `requests` (byte sizes) would reuse:
    /// a buffer of capacity `cap` serves a request `r` only if `r ≤ cap ≤ max_reuse_factor · r`
    /// (page-rounded). Returns the number of bytes freed. With no requests every idle buffer
    /// goes.
    pub fn shrink_unreusable(&self, requests: &[usize]) -> usize {
        self.shrink_unreusable_by(requests, usize::MAX)
    }

    /// As [`shrink_unreusable`](Self::shrink_unreusable), but largest first and only until
    /// `bytes` are freed (the last buffer freed may take it past): the engine frees what a
    /// dispatch lacks and keeps the other buffers for later partitions of their sizes.
    pub fn shrink_unreusable_by(&self, requests: &[usize], bytes: usize) -> usize {
        let ranges: Vec<(usize, usize)> = requests.iter().filter_map(|&r| self.reuse_range(r)).collect();
        let mut state = self.inner.state.lock();
        let doomed: Vec<usize> = state
            .idle
            .keys()
            .rev()
            .copied()
            .filter(|&cap| !ranges.iter().any(|&(lo, hi)| lo <= cap && cap <= hi))
            .collect();
        let mut blocks = Vec::new();
        let mut taken = 0usize;
        'caps: for cap in doomed {
            while state.idle.contains_key(&cap) {
                if taken >= bytes {
                    break 'caps;
                }
                let block = state.take_idle(cap);
                taken = taken.saturating_add(block.capacity);
                blocks.push(block);
            }
        }
        drop(state);
        let freed = blocks.iter().map(|b| b.capacity).sum();
        if freed > 0 {
            log::debug!(
                "pool: freed {} idle buffers ({freed} bytes) that no current request reuses",
                blocks.len()
            );
        }
        self.inner.free_blocks(blocks);
        freed
    }

    /// The idle bytes that checkouts of `requests` (byte sizes, taken one after the other)
    /// would reuse now: each takes the smallest idle buffer that fits it, as
    /// [`checkout`](Self::checkout) does. Nothing is taken.
    pub fn idle_reusable_bytes(&self, requests: &[usize]) -> usize {
        let state = self.inner.state.lock();
        let mut counts: BTreeMap<usize, usize> = state.idle.iter().map(|(&cap, list)| (cap, list.len())).collect();
        drop(state);
        let mut total = 0usize;
        for &r in requests {
            let Some((lo, hi)) = self.reuse_range(r) else {
                continue;
            };
            let Some((&cap, _)) = counts.range(lo..=hi).next() else {
                continue;
            };
            total = total.saturating_add(cap);
            let left = counts.get_mut(&cap).expect("key just found");
            *left -= 1;
            if *left == 0 {
                counts.remove(&cap);
            }
        }
        total
    }

    fn fallback_or(&self, bytes: usize, capacity: usize, err: Error) -> Result<PinnedBuffer> {
        if self.inner.config.allow_fallback {
            self.do_fallback(bytes, capacity, &err)
        } else {
            self.inner.state.lock().stats.failures += 1;
            Err(err)
        }
    }

    fn do_fallback(&self, bytes: usize, capacity: usize, reason: &Error) -> Result<PinnedBuffer> {
        log::warn!("pool: serving {bytes} bytes from UNPINNED heap memory instead: {reason}");
        let start = Instant::now();
        let ptr = match self.inner.fallback.allocate(capacity) {
            Ok(p) => p,
            Err(e) => {
                self.inner.state.lock().stats.failures += 1;
                return Err(e);
            }
        };
        let mut state = self.inner.state.lock();
        state.stats.alloc_time += start.elapsed();
        state.stats.fallbacks += 1;
        state.stats.checkouts += 1;
        state.stats.fallback_bytes_in_use += capacity;
        drop(state);
        Ok(self.wrap(
            Block {
                ptr,
                capacity,
                fallback: true,
            },
            bytes,
        ))
    }

    fn allocate_reserved(&self, bytes: usize, capacity: usize) -> Result<PinnedBuffer> {
        let start = Instant::now();
        let result = self.inner.backend.allocate(capacity);
        let elapsed = start.elapsed();
        let mut state = self.inner.state.lock();
        state.stats.alloc_time += elapsed;
        match result {
            Ok(ptr) => {
                state.stats.allocations += 1;
                state.stats.checkouts += 1;
                drop(state);
                log::debug!(
                    "pool: allocated {capacity} bytes ({}) in {:.1} ms",
                    self.inner.backend.name(),
                    elapsed.as_secs_f64() * 1e3
                );
                Ok(self.wrap(
                    Block {
                        ptr,
                        capacity,
                        fallback: false,
                    },
                    bytes,
                ))
            }
            Err(err) => {
                state.stats.bytes_in_use -= capacity;
                drop(state);
                self.inner.returned.notify_all();
                self.fallback_or(bytes, capacity, err)
            }
        }
    }

    fn wrap(&self, block: Block, len: usize) -> PinnedBuffer {
        PinnedBuffer {
            block: Some(block),
            len,
            pinned: self.inner.backend.is_pinned(),
            pool: self.clone(),
        }
    }
}

/// A deadline no wait reaches (about 136 years from now).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_of_duration_max_waits_for_a_return_instead_of_panicking() {
        let page = PAGE_SIZE;
        let pool = PinnedPool::heap(PoolConfig {
            max_bytes: page,
            when_full: WhenFull::Wait(Duration::MAX),
            ..PoolConfig::default()
        });
        let held = pool.checkout(page).unwrap();
        let waiter = {
            let pool = pool.clone();
            std::thread::spawn(move || pool.checkout(page).map(|b| b.capacity()))
        };
        while pool.stats().waits == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        assert_eq!(waiter.join().expect("no panic").unwrap(), page);
    }

    fn idle_pool(factor: f64, sizes: &[usize]) -> PinnedPool {
        let pool = PinnedPool::heap(PoolConfig {
            max_reuse_factor: factor,
            ..PoolConfig::default()
        });
        let held: Vec<PinnedBuffer> = sizes.iter().map(|&b| pool.checkout(b).unwrap()).collect();
        drop(held);
        pool
    }

    #[test]
    fn unreusable_idle_buffers_are_freed_and_reusable_ones_kept() {
        let page = PAGE_SIZE;
        // Idle: 1, 2, 3 and 8 pages. Requests of 2 pages reuse 2..=4 pages with factor 2.
        let pool = idle_pool(2.0, &[page, 2 * page, 3 * page, 8 * page]);
        assert_eq!(pool.stats().bytes_idle, 14 * page);
        assert_eq!(
            pool.idle_reusable_bytes(&[2 * page, 2 * page]),
            5 * page,
            "best fit: 2, then 3"
        );
        assert_eq!(pool.idle_reusable_bytes(&[2 * page; 3]), 5 * page, "no third fit");
        let freed = pool.shrink_unreusable(&[2 * page]);
        assert_eq!(freed, 9 * page, "the 1- and 8-page buffers");
        let stats = pool.stats();
        assert_eq!((stats.bytes_idle, stats.idle_buffers), (5 * page, 2));
        // What stayed is reused without an allocation.
        let allocations = stats.allocations;
        let a = pool.checkout(2 * page).unwrap();
        let b = pool.checkout(2 * page).unwrap();
        assert_eq!((a.capacity(), b.capacity()), (2 * page, 3 * page));
        assert_eq!(pool.stats().allocations, allocations);
        drop((a, b));
        // With factor 1 only the page-rounded request fits; no request frees everything.
        let pool = idle_pool(1.0, &[page, 2 * page]);
        assert_eq!(pool.shrink_unreusable(&[2 * page - 1]), page);
        assert_eq!(pool.idle_reusable_bytes(&[2 * page - 1]), 2 * page);
        assert_eq!(pool.shrink_unreusable(&[]), 2 * page);
        assert_eq!(pool.stats().bytes_idle, 0);
    }

    #[test]
    fn unreusable_idle_buffers_go_largest_first_only_as_far_as_asked() {
        let page = PAGE_SIZE;
        // Idle: 1, 1, 5, 8 and 2 pages; requests of 2 pages reuse only the 2-page one (factor 1).
        let pool = idle_pool(1.0, &[page, page, 5 * page, 8 * page, 2 * page]);
        assert_eq!(
            pool.shrink_unreusable_by(&[2 * page], 3 * page),
            8 * page,
            "the largest alone"
        );
        assert_eq!(pool.stats().idle_buffers, 4);
        assert_eq!(
            pool.shrink_unreusable_by(&[2 * page], 6 * page),
            6 * page,
            "5, then one of 1"
        );
        assert_eq!(pool.shrink_unreusable_by(&[2 * page], 0), 0, "nothing asked");
        let stats = pool.stats();
        assert_eq!((stats.bytes_idle, stats.idle_buffers), (3 * page, 2));
        assert_eq!(
            pool.shrink_unreusable_by(&[2 * page], usize::MAX),
            page,
            "the rest but the reusable one"
        );
        assert_eq!(pool.stats().bytes_idle, 2 * page);
    }
}
