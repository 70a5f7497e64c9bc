//! The parameter sets the engine holds: each charged once in the budget from the first
//! submission that uses it, least recently used first out under pressure.

use std::time::Instant;

use super::state::State;
use crate::params::Parameters;

/// A parameter set the engine holds, charged once in the budget.
pub(super) struct ParamEntry {
    pub(super) params: Parameters,
    /// Bytes charged: its host bytes when the engine took it.
    pub(super) host_bytes: usize,
    /// The engine's use clock at its last submission, dispatch or proof (LRU order).
    pub(super) last_use: u64,
    /// When that was.
    pub(super) last_used: Instant,
}

impl State {
    /// Holds `params` in the parameter cache (charging its host bytes once, even past the
    /// limit: they exist already) and marks it used now.
    pub(super) fn hold_params(&mut self, params: &Parameters) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(entry) = self.params.get_mut(&params.id()) {
            entry.last_use = clock;
            entry.last_used = Instant::now();
            if entry.host_bytes > 0 && !params.has_host_copy() {
                // The same set without its host copy (`Prover::prepare_device_only`): the engine
                // lets its host copy go (jobs in flight keep theirs until they end).
                self.budget.release(entry.host_bytes);
                entry.host_bytes = 0;
                entry.params = params.clone();
            }
            return;
        }
        let host_bytes = params.host_bytes();
        self.budget.force_reserve(host_bytes);
        log::info!(
            "engine: holds parameters {} ({} MiB on the host, charged to the budget)",
            params.id(),
            host_bytes >> 20
        );
        self.params.insert(
            params.id(),
            ParamEntry {
                params: params.clone(),
                host_bytes,
                last_use: clock,
                last_used: Instant::now(),
            },
        );
    }

    /// Marks parameter set `id` used now.
    pub(super) fn touch_params(&mut self, id: u64) {
        self.clock += 1;
        if let Some(entry) = self.params.get_mut(&id) {
            entry.last_use = self.clock;
            entry.last_used = Instant::now();
        }
    }

    /// Partitions of the engine's jobs (pending, in synthesis, waiting, on a GPU) that use
    /// parameter set `id`.
    pub(super) fn params_users(&self, id: u64) -> usize {
        self.jobs
            .values()
            .filter(|j| j.params.id() == id)
            .map(|j| j.outstanding)
            .sum()
    }

    /// The idle parameter set to evict first: no job of the engine uses it, it frees host
    /// bytes; sets only the engine holds (their host copy goes with them) before sets a caller
    /// also holds, then least recently used first.
    pub(super) fn eviction_candidate(&self) -> Option<u64> {
        self.params
            .iter()
            .filter(|(&id, e)| e.host_bytes > 0 && !self.jobs.values().any(|j| j.params.id() == id))
            .min_by_key(|(_, e)| (e.params.host_copy_holders() > 1, e.last_use))
            .map(|(&id, _)| id)
    }

    /// Takes set `id` out of the cache and its charge out of the budget. The caller evicts the
    /// set's resident copies ([`Prover::evict_params`]), so its residency marks go too.
    pub(super) fn drop_params(&mut self, id: u64) -> Option<ParamEntry> {
        let entry = self.params.remove(&id)?;
        self.budget.release(entry.host_bytes);
        for set in &mut self.resident {
            set.remove(&id);
        }
        for epoch in &mut self.evict_epoch {
            *epoch += 1;
        }
        Some(entry)
    }
}
