//! How a pool behaves and what it counts: [`PoolConfig`] (its cap, reuse factor and
//! fallback), [`WhenFull`], and the [`PoolStats`] snapshot.

use std::time::Duration;

/// What a checkout does when the cap leaves no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Fail at once with [`Error::PoolExhausted`](crate::Error::PoolExhausted) (or fall back, if allowed).
    Fail,
    /// Wait up to this long for buffers to come back, then fail (or fall back, if allowed);
    /// `Duration::MAX` waits without end.
    Wait(Duration),
}

/// How a [`PinnedPool`](crate::PinnedPool) behaves.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Most bytes the pool holds, idle and in use together. Default: no cap.
    pub max_bytes: usize,
    /// A checkout may reuse an idle buffer of up to this many times the request. Default 2.0.
    pub max_reuse_factor: f64,
    /// What to do when the cap leaves no room. Default: wait 60 s.
    pub when_full: WhenFull,
    /// Serve from unpinned heap memory when the cap or the backend cannot. Every such
    /// fallback is counted in [`PoolStats::fallbacks`] and logged as a warning. Default: off.
    pub allow_fallback: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_bytes: usize::MAX,
            max_reuse_factor: 2.0,
            when_full: WhenFull::Wait(Duration::from_secs(60)),
            allow_fallback: false,
        }
    }
}

/// A snapshot of a pool's counters. Every checkout is exactly one of an allocation, a reuse
/// or a fallback, so `allocations + reuses + fallbacks == checkouts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Successful checkouts.
    pub checkouts: u64,
    /// Checkouts served by a new block from the backend.
    pub allocations: u64,
    /// Checkouts served by an idle block.
    pub reuses: u64,
    /// Checkouts (and growths) served by unpinned heap memory instead of the backend.
    pub fallbacks: u64,
    /// Checkouts that failed.
    pub failures: u64,
    /// Checkouts that had to wait for returned buffers.
    pub waits: u64,
    /// Blocks handed back to their allocator (shrink, cap, fallback returns, pool drop).
    pub frees: u64,
    /// Pool bytes checked out (or being allocated for a checkout).
    pub bytes_in_use: usize,
    /// Pool bytes idle, ready for reuse.
    pub bytes_idle: usize,
    /// Most pool bytes (in use + idle) held at once.
    pub peak_bytes: usize,
    /// Unpinned fallback bytes checked out (not part of the pool's bytes or cap).
    pub fallback_bytes_in_use: usize,
    /// Number of idle blocks.
    pub idle_buffers: usize,
    /// Time spent in the backend allocating.
    pub alloc_time: Duration,
    /// Time spent in the backend freeing.
    pub free_time: Duration,
}
