//! The dispatcher thread: picks the next partition and admits it when the pacer, a free
//! synthesis worker and the budget allow; under pressure, frees idle memory one step at a time.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::budget::{params_hint, partition_bytes, pool_requests, synthesis_bytes, witness_partition_bytes, Budget};
use super::shared::Shared;
use super::state::{Admitted, Deferred, State};
use super::worker::synthesize;
use crate::assignment::CapacityHint;
use crate::compiled::CompiledCircuit;
use crate::error::Error;

/// The dispatcher thread: until shutdown, admits the head job's next partition to synthesis
/// when the pacer (or its urgency), a synthesis worker and the budget allow.
pub(super) fn dispatcher(shared: Arc<Shared>, synth: Arc<rayon::ThreadPool>) {
    let mut st = shared.state.lock();
    loop {
        if st.shutdown {
            return;
        }
        let Some(id) = st.head_job() else {
            shared.dispatch_cv.wait(&mut st);
            continue;
        };
        let now = shared.now();
        // An urgent job skips the pacer and the synthesis workers' limit (its synthesis
        // gets a thread of its own), one partition per live GPU worker at a time.
        let priority = st.jobs[&id].priority;
        let urgent = shared.is_urgent(priority);
        if urgent {
            if st.urgent_in_synthesis >= st.live_workers.max(1) {
                shared.dispatch_cv.wait(&mut st);
                continue;
            }
        } else {
            if st.in_synthesis() >= shared.synthesis_workers {
                shared.dispatch_cv.wait(&mut st);
                continue;
            }
            // Liveness: with nothing in flight no event will come, so the pacer's "not until
            // an event" (e.g. a start whose first partitions failed before any GPU time was
            // known) must not stall the engine.
            let idle = st.in_synthesis() == 0 && st.ready.is_empty() && st.on_gpu == 0;
            // A job above everything in the pipeline dispatches past the pacer, up to a
            // synthesis worker's worth of its own partitions ahead (State::jumps_pacer); the
            // pacer still counts them (on_dispatch), so the lower ones it paces fall back.
            let jump = st.jumps_pacer(priority, shared.synthesis_workers);
            if jump {
                log::debug!("engine: job {id} (priority {priority}) dispatched past the pacer's lower-priority depth");
            }
            match st.pacer.next_dispatch_at(now) {
                _ if jump => {}
                None if !idle => {
                    shared.dispatch_cv.wait(&mut st);
                    continue;
                }
                Some(at) if at > now && !idle => {
                    shared.dispatch_cv.wait_for(&mut st, at - now);
                    continue;
                }
                _ => {}
            }
        }

        // The budget.
        let state = &mut *st;
        let job = state.jobs.get(&id).expect("head job exists");
        let Some(next) = job.pending.front() else {
            continue;
        };
        let domain = job.params.domain_size();
        let hint = match shared.hints.get(next.circuit_type, Some(domain)) {
            Some(h) => h,
            None => {
                // First of its type at this size: sized from the parameters, pinned at once.
                let h = params_hint(&job.params);
                shared.hints.record(next.circuit_type, h);
                h
            }
        };
        let synth_bytes = synthesis_bytes(hint, shared.synthesis_per_constraint);
        let (pool_need, requests, circuit) = estimate(&shared, next.circuit_type, &job.params, hint);
        let need = pool_need.saturating_add(synth_bytes);
        // A witness partition: the host-evaluation slots grow to one per witness partition
        // in flight, this one included, up to one per GPU worker (nothing where a, b, c are
        // evaluated on the device).
        let slots = match &circuit {
            Some(c) => shared.evaluation_need(state, c, state.witnesses_in_flight + 1),
            None => state.evaluation.clone(),
        };
        let slots_more = slots.bytes().saturating_sub(state.evaluation.bytes());
        let own_params = state.params.get(job.params.id()).map_or(0, |e| e.host_bytes);
        // Room beside what is reserved and the idle pool bytes neither it, a partition in
        // synthesis (which may not have checked out yet), one on a GPU nor a free
        // evaluation slot would reuse.
        let free_slots = slots.slots.saturating_sub(state.on_gpu);
        let claims: Vec<usize> = state
            .synthesis_requests
            .iter()
            .chain(&state.gpu_requests)
            .chain(std::iter::repeat(&slots.set_requests).take(free_slots))
            .flatten()
            .chain(&requests)
            .copied()
            .collect();
        let idle = shared.pool.stats().bytes_idle;
        let other_idle = idle.saturating_sub(shared.pool.idle_reusable_bytes(&claims));
        let request = Request {
            need: need.saturating_add(slots_more),
            own_params,
            other_idle,
            waited: job.blocked_since.map_or(Duration::ZERO, |since| since.elapsed()),
            timeout: shared.budget_timeout,
        };
        match admit(&state.budget, &request) {
            Admission::Go => {}
            Admission::Fail(err) => {
                let mut deferred = Deferred::default();
                state.fail_job(id, err, now, &mut deferred);
                drop(st);
                deferred.run(&shared.backend_provers);
                st = shared.state.lock();
                continue;
            }
            Admission::Wait { excess, remaining } => {
                state.note_blocked(id);
                if make_room(&shared, &mut st, excess, other_idle) {
                    continue;
                }
                st.note_budget_wait(id);
                log::debug!(
                    "engine: job {id} waits for budget room: {need} bytes needed, {} of {} reserved, {other_idle} idle in the pool",
                    st.budget.reserved(),
                    st.budget.limit()
                );
                shared.dispatch_cv.wait_for(&mut st, remaining);
                continue;
            }
        }
        let admitted = Admitted {
            need,
            synth_bytes,
            requests,
            urgent,
            witness: circuit.is_some(),
        };
        let work = state.start_synthesis(id, admitted, other_idle, slots, now, shared.pool.stats().waits);
        let index = work.partition.index;
        let for_synthesis = shared.clone();
        if urgent {
            log::info!(
                "engine: urgent job {id} partition {index} dispatched past the pacer ({need} bytes reserved, {} in synthesis)",
                state.in_synthesis()
            );
            // The thread takes the work from the slot; if it cannot start, the work goes to
            // the synthesis pool instead (later, but not lost).
            let slot = Arc::new(parking_lot::Mutex::new(Some(work)));
            let (taken, on_thread) = (slot.clone(), for_synthesis.clone());
            let spawned = std::thread::Builder::new()
                .name("cuzk-urgent-synth".into())
                .spawn(move || {
                    if let Some(work) = taken.lock().take() {
                        synthesize(&on_thread, work);
                    }
                });
            if let Err(e) = spawned {
                log::warn!("engine: no thread of its own for urgent job {id} ({e}): it waits for a synthesis worker");
                if let Some(work) = slot.lock().take() {
                    synth.spawn(move || synthesize(&for_synthesis, work));
                }
            }
        } else {
            log::debug!(
                "engine: job {id} partition {index} dispatched ({need} bytes reserved, {synth_bytes} of them for its synthesis, {} in synthesis)",
                state.in_synthesis()
            );
            synth.spawn(move || synthesize(&for_synthesis, work));
        }
    }
}

/// What a partition of `circuit_type` proved with `params` reserves in pool and heap
/// bytes, the byte sizes of the pool checkouts its synthesis makes, and the compiled
/// circuit it is synthesized for: a witness-path partition's when its type and shape has a
/// compiled circuit in memory (and the path is on), else a full synthesis' sized by `hint`
/// (no circuit). (A witness refused by its compiled circuit is synthesized in full past
/// this reservation; its true-up charges what it holds.)
fn estimate(
    shared: &Shared,
    circuit_type: &'static str,
    params: &crate::Parameters,
    hint: CapacityHint,
) -> (usize, [usize; 4], Option<Arc<CompiledCircuit>>) {
    match shared.synth_prover.witness_estimate(circuit_type, params) {
        Some(est) => (
            witness_partition_bytes(&est, shared.reuse_factor),
            est.requests,
            Some(est.circuit),
        ),
        None => (partition_bytes(hint, shared.reuse_factor), pool_requests(hint), None),
    }
}

/// The pool request sizes of the pending partitions (each circuit type and domain once):
/// the "current sizes" an idle buffer must fit to be kept under pressure.
fn pending_requests(shared: &Shared, st: &State) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for job in st.jobs.values().filter(|j| j.error.is_none()) {
        let domain = job.params.domain_size();
        for p in &job.pending {
            if !seen.insert((p.circuit_type, domain)) {
                continue;
            }
            let hint = shared
                .hints
                .get(p.circuit_type, Some(domain))
                .unwrap_or_else(|| params_hint(&job.params));
            match shared.synth_prover.witness_estimate(p.circuit_type, &job.params) {
                Some(est) => {
                    out.extend(est.requests);
                    out.extend(shared.witness_proof_requests(&est.circuit));
                }
                None => out.extend(pool_requests(hint)),
            }
        }
    }
    // The evaluation slots' checkouts: the next witness proof reuses them.
    if st.evaluation.slots > 0 {
        out.extend(st.evaluation.set_requests);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Frees memory for a dispatch `excess` bytes short of room, of which `other_idle` are
/// idle pool bytes it would not reuse: one step of the eviction order (see
/// [`budget`](super::budget)), the first that frees anything. Returns whether one did.
fn make_room(shared: &Shared, st: &mut parking_lot::MutexGuard<'_, State>, excess: usize, other_idle: usize) -> bool {
    // 1. Idle buffers that no pending partition's sizes would reuse, largest first, as many
    //    bytes as are missing.
    let sizes = pending_requests(shared, st);
    let freed = parking_lot::MutexGuard::unlocked(st, || shared.pool.shrink_unreusable_by(&sizes, excess));
    if freed > 0 {
        st.note_pool_evicted(freed);
        log::debug!("engine: under pressure, freed {freed} idle pool bytes no pending size reuses");
        return true;
    }
    // 2. Other idle buffers, largest first, as many bytes as are missing.
    if other_idle > 0 {
        let idle = shared.pool.stats().bytes_idle;
        let target = idle.saturating_sub(excess.min(other_idle));
        let freed = parking_lot::MutexGuard::unlocked(st, || shared.pool.shrink(target));
        if freed > 0 {
            st.note_pool_evicted(freed);
            log::debug!("engine: under pressure, freed {freed} idle pool bytes (largest first)");
            return true;
        }
    }
    // 3. An idle parameter set, with its resident copies (other sets stay resident).
    let Some(pid) = st.eviction_candidate() else {
        return false;
    };
    let Some(entry) = st.evict_params_for_room(pid) else {
        return false;
    };
    let freed = parking_lot::MutexGuard::unlocked(st, || {
        for prover in &shared.backend_provers {
            prover.evict_params(&entry.params);
        }
        let alone = entry.params.host_copy_holders() == 1;
        let bytes = entry.host_bytes;
        drop(entry);
        if alone {
            bytes
        } else {
            0
        }
    });
    st.note_params_host_freed(freed);
    log::info!("engine: under pressure, evicted idle parameters {pid} ({freed} host bytes freed)");
    true
}

/// A partition asking for room in the budget.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// Its reservation: pool buffers, heap parts and the synthesis estimate.
    pub need: usize,
    /// The host bytes of its parameter set, charged already (the set is held by its job).
    pub own_params: usize,
    /// Idle pool bytes that no reservation covers (memory held outside the books).
    pub other_idle: usize,
    /// How long it has waited for room.
    pub waited: Duration,
    /// How long it may wait.
    pub timeout: Duration,
}

/// The dispatcher's decision for a partition.
#[derive(Debug)]
pub(super) enum Admission {
    /// It fits beside what is reserved and the idle bytes: reserve it and dispatch.
    Go,
    /// No room yet: free `excess` bytes of idle memory, or wait up to `remaining` for room.
    Wait { excess: usize, remaining: Duration },
    /// It can never fit (larger, with its parameters, than the whole budget), or it waited
    /// longer than the timeout: its job fails with this error.
    Fail(Error),
}

/// Decides, from the budget's books alone, what becomes of a partition asking for room.
pub(super) fn admit(budget: &Budget, r: &Request) -> Admission {
    let limit = budget.limit();
    let alone = r.need.saturating_add(r.own_params);
    if alone > limit {
        return Admission::Fail(Error::BudgetExhausted {
            requested: alone,
            reserved: budget.reserved(),
            limit,
            waited: Duration::ZERO,
        });
    }
    if budget.fits_beside(r.need, r.other_idle) {
        return Admission::Go;
    }
    if r.waited >= r.timeout {
        return Admission::Fail(Error::BudgetExhausted {
            requested: r.need,
            reserved: budget.reserved(),
            limit,
            waited: r.waited,
        });
    }
    Admission::Wait {
        excess: budget
            .reserved()
            .saturating_add(r.need)
            .saturating_add(r.other_idle)
            .saturating_sub(limit),
        remaining: r.timeout.saturating_sub(r.waited),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(need: usize, own_params: usize, other_idle: usize, waited_ms: u64) -> Request {
        Request {
            need,
            own_params,
            other_idle,
            waited: Duration::from_millis(waited_ms),
            timeout: Duration::from_millis(100),
        }
    }

    #[test]
    fn a_partition_that_fits_goes() {
        let mut b = Budget::new(100);
        b.force_reserve(30); // its parameters, say
        assert!(matches!(admit(&b, &request(70, 30, 0, 0)), Admission::Go));
        assert!(matches!(admit(&b, &request(60, 30, 10, 0)), Admission::Go));
        // Waiting does not matter once it fits.
        assert!(matches!(admit(&b, &request(70, 30, 0, 500)), Admission::Go));
    }

    #[test]
    fn a_partition_larger_than_the_budget_fails_at_once() {
        let b = Budget::new(100);
        match admit(&b, &request(80, 21, 0, 0)) {
            Admission::Fail(Error::BudgetExhausted {
                requested,
                limit,
                waited,
                ..
            }) => {
                assert_eq!((requested, limit, waited), (101, 100, Duration::ZERO));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(admit(&b, &request(usize::MAX, 1, 0, 0)), Admission::Fail(_)));
    }

    #[test]
    fn without_room_it_frees_the_excess_or_waits_then_fails() {
        let mut b = Budget::new(100);
        b.force_reserve(50);
        match admit(&b, &request(40, 0, 30, 20)) {
            Admission::Wait { excess, remaining } => {
                assert_eq!(excess, 50 + 40 + 30 - 100);
                assert_eq!(remaining, Duration::from_millis(80));
            }
            other => panic!("{other:?}"),
        }
        match admit(&b, &request(40, 0, 30, 100)) {
            Admission::Fail(Error::BudgetExhausted {
                requested,
                reserved,
                waited,
                ..
            }) => {
                assert_eq!((requested, reserved), (40, 50));
                assert_eq!(waited, Duration::from_millis(100));
            }
            other => panic!("{other:?}"),
        }
        // The books are untouched: admission decides, the dispatcher reserves.
        assert_eq!(b.reserved(), 50);
    }
}
