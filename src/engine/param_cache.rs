//! The engine's parameter cache: the parameter sets it holds, each charged once in the budget
//! from the first submission that uses it, least recently used first out under pressure, and
//! the backends each is resident on.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::budget::Budget;
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
    /// Removal was asked while jobs used it: it goes when the last of them ends
    /// ([`Engine::remove_parameters_when_idle`](super::Engine::remove_parameters_when_idle)).
    pub(super) remove_when_idle: bool,
}

/// The parameter sets the engine holds, with their use clock and residency marks. It knows
/// nothing of jobs: the engine's state says which sets its jobs use.
pub(super) struct ParamCache {
    /// The sets, by [`Parameters::id`] (shared by clones).
    entries: HashMap<u64, ParamEntry>,
    /// The use clock.
    clock: u64,
    /// Per backend: the sets proved with (or prepared) there since its last eviction.
    resident: Vec<HashSet<u64>>,
    /// Per backend: evictions so far (a proof that started before one does not mark its set).
    evict_epoch: Vec<u64>,
}

impl ParamCache {
    /// An empty cache for `backends` backends.
    pub(super) fn new(backends: usize) -> Self {
        ParamCache {
            entries: HashMap::new(),
            clock: 0,
            resident: vec![HashSet::new(); backends],
            evict_epoch: vec![0; backends],
        }
    }

    /// Holds `params` (charging its host bytes to `budget` once, even past the limit: they
    /// exist already) and marks it used now.
    pub(super) fn hold(&mut self, params: &Parameters, budget: &mut Budget) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(entry) = self.entries.get_mut(&params.id()) {
            entry.last_use = clock;
            entry.last_used = Instant::now();
            if entry.host_bytes > 0 && !params.has_host_copy() {
                // The same set without its host copy (`Prover::prepare_device_only`): the engine
                // lets its host copy go (jobs in flight keep theirs until they end).
                budget.release(entry.host_bytes);
                entry.host_bytes = 0;
                entry.params = params.clone();
            }
            return;
        }
        let host_bytes = params.host_bytes();
        budget.force_reserve(host_bytes);
        log::info!(
            "engine: holds parameters {} ({} MiB on the host, charged to the budget)",
            params.id(),
            host_bytes >> 20
        );
        self.entries.insert(
            params.id(),
            ParamEntry {
                params: params.clone(),
                host_bytes,
                last_use: clock,
                last_used: Instant::now(),
                remove_when_idle: false,
            },
        );
    }

    /// Marks parameter set `id` used now.
    pub(super) fn touch(&mut self, id: u64) {
        self.clock += 1;
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.last_use = self.clock;
            entry.last_used = Instant::now();
        }
    }

    /// Set `id`, when held.
    pub(super) fn get(&self, id: u64) -> Option<&ParamEntry> {
        self.entries.get(&id)
    }

    /// Marks set `id` for removal once no job uses it. Returns false when it is not held.
    pub(super) fn remove_when_idle(&mut self, id: u64) -> bool {
        self.entries.get_mut(&id).map(|e| e.remove_when_idle = true).is_some()
    }

    /// The sets held, by id, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&u64, &ParamEntry)> {
        self.entries.iter()
    }

    /// How many sets are held.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The host bytes charged for the sets held.
    pub(super) fn host_bytes(&self) -> usize {
        self.entries.values().map(|e| e.host_bytes).sum()
    }

    /// The idle set to evict first: `in_use` says no job uses it, it frees host bytes; sets
    /// only the engine holds (their host copy goes with them) before sets a caller also holds,
    /// then least recently used first.
    pub(super) fn eviction_candidate(&self, in_use: impl Fn(u64) -> bool) -> Option<u64> {
        self.entries
            .iter()
            .filter(|(&id, e)| e.host_bytes > 0 && !in_use(id))
            .min_by_key(|(_, e)| (e.params.host_copy_holders() > 1, e.last_use))
            .map(|(&id, _)| id)
    }

    /// Takes set `id` out of the cache and its charge out of `budget`. The caller evicts the
    /// set's resident copies ([`Prover::evict_params`](crate::Prover::evict_params)), so its
    /// residency marks go too.
    pub(super) fn remove(&mut self, id: u64, budget: &mut Budget) -> Option<ParamEntry> {
        let entry = self.entries.remove(&id)?;
        budget.release(entry.host_bytes);
        for set in &mut self.resident {
            set.remove(&id);
        }
        for epoch in &mut self.evict_epoch {
            *epoch += 1;
        }
        Some(entry)
    }

    /// Per backend: the evictions so far, to hand back to [`mark_resident`](Self::mark_resident).
    pub(super) fn epochs(&self) -> &[u64] {
        &self.evict_epoch
    }

    /// Marks set `id` resident on `backend` after a proof or preparation that started at
    /// eviction `epoch` there: only when no eviction came since and the set is still held.
    pub(super) fn mark_resident(&mut self, backend: usize, id: u64, epoch: u64) {
        if self.evict_epoch[backend] == epoch && self.entries.contains_key(&id) {
            self.resident[backend].insert(id);
        }
    }

    /// Per backend: the sets marked resident there.
    pub(super) fn resident(&self) -> &[HashSet<u64>] {
        &self.resident
    }
}
