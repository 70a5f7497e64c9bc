//! A partition's walk through the engine's state, one named change a step: admitted to
//! synthesis (or blocked, waiting for budget room), synthesized or dropped, proved on a GPU or
//! failed there; and what the dispatcher's room-making and a lost backend change. The
//! dispatcher and the workers call these; nothing else changes the counters.

use std::time::{Duration, Instant};

use super::{ema, Deferred, Dispatched, EvaluationSlots, ParamEntry, Ready, State};
use crate::error::Error;
use crate::params::Parameters;
use crate::proof::Proof;
use crate::prover::Synthesis;

/// What a partition's dispatch reserved and how it goes (see [`State::start_synthesis`]).
pub(in crate::engine) struct Admitted {
    /// Bytes reserved in the budget, its synthesis' included.
    pub(in crate::engine) need: usize,
    /// Of which, for its synthesis.
    pub(in crate::engine) synth_bytes: usize,
    /// The pool requests its synthesis makes.
    pub(in crate::engine) requests: [usize; 4],
    /// Past the pacer (an urgent job's).
    pub(in crate::engine) urgent: bool,
    /// For witness-only synthesis.
    pub(in crate::engine) witness: bool,
}

impl State {
    /// Job `id`'s next partition finds no budget room: blocked since now, unless it was
    /// already (its wait's timeout counts from then).
    pub(in crate::engine) fn note_blocked(&mut self, id: u64) {
        if let Some(job) = self.jobs.get_mut(&id) {
            job.blocked_since.get_or_insert_with(Instant::now);
        }
    }

    /// Job `id`'s next partition waits for budget room (nothing could be freed); the first
    /// wait of a partition is counted.
    pub(in crate::engine) fn note_budget_wait(&mut self, id: u64) {
        if let Some(job) = self.jobs.get_mut(&id) {
            if !job.budget_waited {
                job.budget_waited = true;
                self.counters.budget_waits += 1;
            }
        }
    }

    /// Job `id`'s next partition is admitted: `admitted.need` bytes reserved beside
    /// `other_idle` idle pool bytes, the evaluation slots grown to `slots`, and it leaves the
    /// job's queue for synthesis (`pool_waits`: the pool's waits now, the mark an urgent
    /// synthesis' holds are measured from). Returns the work for a synthesis worker.
    pub(in crate::engine) fn start_synthesis(
        &mut self,
        id: u64,
        admitted: Admitted,
        other_idle: usize,
        slots: EvaluationSlots,
        now: Duration,
        pool_waits: u64,
    ) -> Dispatched {
        let Admitted {
            need,
            synth_bytes,
            requests,
            urgent,
            witness,
        } = admitted;
        let reserved = self.budget.try_reserve_beside(need, other_idle);
        debug_assert!(reserved, "admitted: it fits");
        // The room for the slots' growth was part of the admission.
        self.grow_evaluation(slots);
        if witness {
            self.witnesses_in_flight += 1;
        }
        let job = self.jobs.get_mut(&id).expect("the admitted job exists");
        job.blocked_since = None;
        job.budget_waited = false;
        let partition = job.pending.pop_front().expect("an admitted partition is pending");
        let params = job.params.clone();
        let priority = job.priority;
        self.synthesis_priorities.push(priority);
        self.params.touch(params.id());
        self.synthesis_reserved += synth_bytes;
        self.synthesis_requests.push(requests);
        if urgent {
            if self.urgent_in_synthesis == 0 {
                self.urgent_pool_waits = pool_waits;
            }
            self.urgent_in_synthesis += 1;
            self.counters.urgent_dispatched += 1;
        } else {
            self.pacer.on_dispatch(now);
        }
        Dispatched {
            id,
            partition,
            params,
            reserved: need,
            synth_bytes,
            requests,
            urgent,
            witness,
            priority,
        }
    }

    /// A synthesis of a job of `priority` dispatched with `synth_bytes` and `requests` ended
    /// after `elapsed`.
    pub(in crate::engine) fn end_synthesis(
        &mut self,
        urgent: bool,
        priority: i32,
        synth_bytes: usize,
        requests: &[usize; 4],
        elapsed: Duration,
    ) {
        if urgent {
            self.urgent_in_synthesis -= 1;
        }
        self.synthesis_reserved -= synth_bytes;
        if let Some(i) = self.synthesis_requests.iter().position(|r| r == requests) {
            self.synthesis_requests.swap_remove(i);
        }
        if let Some(i) = self.synthesis_priorities.iter().position(|&p| p == priority) {
            self.synthesis_priorities.swap_remove(i);
        }
        self.synthesis_ema = ema(self.synthesis_ema, elapsed);
    }

    /// A partition synthesized for a live job: `work`, holding `reserved` bytes, waits for a
    /// GPU worker.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn synthesized(
        &mut self,
        id: u64,
        index: usize,
        params: Parameters,
        work: Synthesis,
        reserved: usize,
        urgent: bool,
        elapsed: Duration,
        now: Duration,
    ) {
        if !urgent {
            self.pacer.on_synthesis_done(now, elapsed);
        }
        let job = self.jobs.get_mut(&id).expect("a live job exists");
        job.synthesis_time += elapsed;
        let item = Ready {
            job: id,
            index,
            priority: job.priority,
            params,
            r: job.r[index],
            s: job.s[index],
            work,
            reserved,
            paced: !urgent,
        };
        self.ready.push(item);
    }

    /// A partition of job `id` left synthesis unproved: `failure` (which fails the job), or
    /// `None` for one synthesized for a job that failed meanwhile (dropped). Its `reserved`
    /// bytes go back to the budget — its buffers went back to the pool before.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn synthesis_unproved(
        &mut self,
        id: u64,
        index: usize,
        witness: bool,
        urgent: bool,
        reserved: usize,
        failure: Option<Error>,
        now: Duration,
        deferred: &mut Deferred,
    ) {
        if witness {
            self.witness_left();
        }
        if !urgent {
            self.pacer.on_synthesis_failed(now);
        }
        self.budget.release(reserved);
        match &failure {
            None => self.counters.dropped += 1,
            Some(e) => {
                self.counters.failed += 1;
                log::info!("engine: job {id} partition {index} failed in synthesis: {e}");
            }
        }
        self.note_unproved(id, deferred);
        if let Some(e) = failure {
            self.fail_job(id, e, now, deferred);
        }
        self.partition_left(id, deferred);
    }

    /// GPU worker `worker` holds for an urgent partition in synthesis (counted once a hold);
    /// with `released`, it stops holding (a pool checkout waits for room).
    pub(in crate::engine) fn note_gpu_hold(&mut self, released: bool) {
        if released {
            self.counters.gpu_holds_released += 1;
        } else {
            self.counters.gpu_holds += 1;
        }
    }

    /// GPU worker `worker` starts proving a partition of job `job` whose pool requests are
    /// `requests` (`paced`: the pacer dispatched it).
    pub(in crate::engine) fn start_proof(
        &mut self,
        worker: usize,
        job: u64,
        paced: bool,
        requests: [usize; 4],
        now: Duration,
    ) {
        if paced {
            self.pacer.on_gpu_start(now);
        }
        self.on_gpu += 1;
        self.workers[worker].proving = Some((Instant::now(), job));
        self.gpu_requests.push(requests);
    }

    /// GPU worker `worker` ended a proof of `elapsed` that held `reserved` bytes and pool
    /// requests `requests`, with `params` on `backend` (resident there when `proved`, unless
    /// an eviction came since `epoch`).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn end_proof(
        &mut self,
        worker: usize,
        requests: &[usize; 4],
        reserved: usize,
        witness: bool,
        params_id: u64,
        (backend, epoch): (usize, u64),
        proved: bool,
        elapsed: Duration,
        now: Duration,
    ) {
        self.leave_gpu(requests);
        self.pacer.on_gpu_done(now, elapsed);
        self.gpu_ema = ema(self.gpu_ema, elapsed);
        let books = &mut self.workers[worker];
        books.busy += elapsed;
        books.proving = None;
        books.partitions += 1;
        self.budget.release(reserved);
        if witness {
            self.witness_left();
        }
        self.params.touch(params_id);
        if proved {
            self.params.mark_resident(backend, params_id, epoch);
        }
    }

    /// Partition `index` of job `id` proved in `elapsed`: `proof` is kept when the job is live,
    /// else dropped; either way the partition leaves the engine.
    pub(in crate::engine) fn proved(
        &mut self,
        id: u64,
        index: usize,
        proof: Option<Proof>,
        elapsed: Duration,
        deferred: &mut Deferred,
    ) {
        match self.jobs.get_mut(&id).filter(|j| j.error.is_none()) {
            Some(job) => {
                self.counters.done += 1;
                job.gpu_time += elapsed;
                job.proofs[index] = proof;
                job.done += 1;
                deferred.progressed.push((job.shared.clone(), job.done, job.unproved));
            }
            None => {
                self.counters.dropped += 1;
                self.note_unproved(id, deferred);
            }
        }
        self.partition_left(id, deferred);
    }

    /// A partition of job `id` failed on a GPU with `err`, which fails the job; the partition
    /// leaves the engine.
    pub(in crate::engine) fn proof_failed(&mut self, id: u64, err: Error, now: Duration, deferred: &mut Deferred) {
        self.counters.failed += 1;
        self.note_unproved(id, deferred);
        self.fail_job(id, err, now, deferred);
        self.partition_left(id, deferred);
    }

    /// GPU worker `worker`'s backend is lost. Returns whether a live worker is left; when none
    /// is, every job fails.
    pub(in crate::engine) fn retire_worker(&mut self, worker: usize, now: Duration, deferred: &mut Deferred) -> bool {
        self.workers[worker].lost = true;
        self.live_workers -= 1;
        if self.live_workers > 0 {
            return true;
        }
        let ids: Vec<u64> = self.jobs.keys().copied().collect();
        for id in ids {
            let err = Error::NoGpu("every GPU worker's backend of this engine is lost".into());
            self.fail_job(id, err, now, deferred);
        }
        false
    }

    /// `partitions` failed verification and are proved again by full synthesis.
    pub(in crate::engine) fn note_verification_retries(&mut self, partitions: usize) {
        self.counters.verification_retries += partitions as u64;
    }

    /// GPU worker `worker` found the set of the partition it takes streamed (or not): the
    /// pacer keeps `batch` partitions waiting for each worker that streams (see
    /// [`Pacer::set_batch`](crate::engine::pacer::Pacer::set_batch)).
    pub(in crate::engine) fn note_streaming(&mut self, worker: usize, streams: bool, batch: usize) {
        if std::mem::replace(&mut self.workers[worker].streams, streams) == streams {
            return;
        }
        let streaming = self.workers.iter().filter(|w| w.streams && !w.lost).count();
        self.pacer.set_batch(batch.saturating_mul(streaming).max(1));
    }

    /// A GPU worker gives back `item`, taken (with pool requests `requests`) but not proved:
    /// its batch was cut short for an urgent partition. It waits again, as before it was taken.
    pub(in crate::engine) fn requeue(&mut self, item: Ready, requests: &[usize; 4]) {
        self.leave_gpu(requests);
        if item.paced {
            self.pacer.on_gpu_returned();
        }
        self.ready.push(item);
    }

    /// A partition that held pool requests `requests` is off the GPU (proved or given back).
    fn leave_gpu(&mut self, requests: &[usize; 4]) {
        self.on_gpu -= 1;
        if let Some(i) = self.gpu_requests.iter().position(|r| r == requests) {
            self.gpu_requests.swap_remove(i);
        }
    }

    /// `k` partitions were proved together.
    pub(in crate::engine) fn note_batch(&mut self, k: usize) {
        self.counters.batches += 1;
        self.counters.batched_partitions += k as u64;
    }

    /// Idle pool bytes freed to make room for a dispatch.
    pub(in crate::engine) fn note_pool_evicted(&mut self, bytes: usize) {
        self.counters.evicted_pool_bytes += bytes;
    }

    /// Idle parameter set `id` evicted to make room for a dispatch: out of the cache and the
    /// budget, counted. Returns its entry (the caller evicts its device copies, then counts the
    /// host bytes that freed: [`note_params_host_freed`](Self::note_params_host_freed)).
    pub(in crate::engine) fn evict_params_for_room(&mut self, id: u64) -> Option<ParamEntry> {
        let entry = self.drop_params(id)?;
        self.counters.evicted_params += 1;
        Some(entry)
    }

    /// Host bytes an eviction freed (none while a caller still holds the set's host copy).
    pub(in crate::engine) fn note_params_host_freed(&mut self, bytes: usize) {
        self.counters.evicted_params_host_bytes += bytes;
    }
}
