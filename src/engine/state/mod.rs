//! The engine's state, behind [`Shared`](super::shared::Shared)'s lock: the jobs and their
//! partitions in each stage, the counters, the workers' books — and every change to them, each
//! a named method (a job taken in, a partition dispatched, synthesized, proved or dropped, a job
//! finished), so that the dispatcher and the workers only call them.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;

mod walk;

pub(super) use walk::Admitted;

use super::budget::{assignment_bytes, Budget};
use super::job::{JobShared, Partition, PartitionKind, SynthesizeFn};
use super::pacer::Pacer;
use super::param_cache::{ParamCache, ParamEntry};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::proof::Proof;
use crate::prover::Synthesis;

/// Smoothing factor of the engine's moving averages of synthesis and GPU time (the pacer
/// keeps its own EMA of GPU time with its own factor).
pub(super) const EMA_ALPHA: f64 = 0.2;

/// A partition not yet dispatched.
pub(super) struct Pending {
    pub(super) index: usize,
    pub(super) circuit_type: &'static str,
    pub(super) synthesize: SynthesizeFn,
}

/// A partition dispatched to synthesis, with what its dispatch reserved.
pub(super) struct Dispatched {
    pub(super) id: u64,
    pub(super) partition: Pending,
    pub(super) params: crate::Parameters,
    /// Its reservation in the budget.
    pub(super) reserved: usize,
    /// Of which, for its synthesis (released when the synthesis ends).
    pub(super) synth_bytes: usize,
    /// The pool requests its synthesis makes.
    pub(super) requests: [usize; 4],
    /// Dispatched past the pacer (an urgent job's).
    pub(super) urgent: bool,
    /// Dispatched for witness-only synthesis (counted in `State::witnesses_in_flight`).
    pub(super) witness: bool,
    /// Its job's priority (counted in `State::synthesis_priorities` while it is synthesized).
    pub(super) priority: i32,
}

/// A synthesized partition waiting for a GPU worker.
pub(super) struct Ready {
    pub(super) job: u64,
    pub(super) index: usize,
    pub(super) priority: i32,
    /// An assignment, or a checked witness of a compiled circuit.
    pub(super) work: Synthesis,
    pub(super) params: Parameters,
    pub(super) r: Scalar,
    pub(super) s: Scalar,
    /// Bytes it holds in the budget.
    pub(super) reserved: usize,
    /// Whether the pacer dispatched it (pre-synthesized partitions skip the pacer).
    pub(super) paced: bool,
}

impl Ready {
    /// Higher sorts first: priority, then the older job, then partition order.
    pub(super) fn key(&self) -> (i32, std::cmp::Reverse<u64>, std::cmp::Reverse<usize>) {
        (
            self.priority,
            std::cmp::Reverse(self.job),
            std::cmp::Reverse(self.index),
        )
    }
}

pub(super) struct JobEntry {
    pub(super) shared: Arc<JobShared>,
    pub(super) priority: i32,
    pub(super) label: String,
    pub(super) params: Parameters,
    pub(super) r: Vec<Scalar>,
    pub(super) s: Vec<Scalar>,
    pub(super) pending: VecDeque<Pending>,
    pub(super) proofs: Vec<Option<Proof>>,
    /// Partitions proved.
    pub(super) done: usize,
    /// Partitions still in the engine (pending, in synthesis, waiting, on a GPU).
    pub(super) outstanding: usize,
    pub(super) error: Option<Error>,
    pub(super) submitted: Instant,
    pub(super) synthesis_time: Duration,
    pub(super) gpu_time: Duration,
    /// Partitions that left the engine unproved (failed or dropped).
    pub(super) unproved: usize,
    /// Since when its next partition waits for budget room.
    pub(super) blocked_since: Option<Instant>,
    /// Whether that wait is counted in `budget_waits` already.
    pub(super) budget_waited: bool,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) jobs_done: u64,
    pub(super) jobs_failed: u64,
    pub(super) done: u64,
    pub(super) failed: u64,
    pub(super) dropped: u64,
    pub(super) budget_waits: u64,
    pub(super) urgent_dispatched: u64,
    pub(super) gpu_holds: u64,
    pub(super) gpu_holds_released: u64,
    pub(super) verification_retries: u64,
    pub(super) batches: u64,
    pub(super) batched_partitions: u64,
    pub(super) evicted_pool_bytes: usize,
    pub(super) evicted_params: u64,
    pub(super) evicted_params_host_bytes: usize,
}

pub(super) struct WorkerBooks {
    pub(super) backend: usize,
    pub(super) name: &'static str,
    pub(super) busy: Duration,
    /// The proof under way: since when, and its job's id.
    pub(super) proving: Option<(Instant, u64)>,
    pub(super) partitions: u64,
    pub(super) lost: bool,
    /// Whether its last partition's parameter set was streamed (it proves such partitions
    /// in batches: the pacer keeps a batch waiting for it).
    pub(super) streams: bool,
}

pub(super) struct State {
    pub(super) jobs: HashMap<u64, JobEntry>,
    pub(super) ready: Vec<Ready>,
    pub(super) pacer: Pacer,
    pub(super) budget: Budget,
    /// Of those in synthesis, partitions of urgent jobs (dispatched past the pacer).
    pub(super) urgent_in_synthesis: usize,
    /// The pool's `waits` when the urgent syntheses in flight began (see
    /// [`Shared::pool_contended`](super::shared::Shared::pool_contended)).
    pub(super) urgent_pool_waits: u64,
    /// GPU workers waiting on `gpu_cv` (idle, or holding for an urgent partition).
    pub(super) gpu_waiting: usize,
    pub(super) on_gpu: usize,
    pub(super) shutdown: bool,
    pub(super) next_id: u64,
    pub(super) synthesis_ema: Option<f64>,
    pub(super) gpu_ema: Option<f64>,
    pub(super) counters: Counters,
    pub(super) workers: Vec<WorkerBooks>,
    /// GPU workers whose backend is not lost; at 0 every job fails and new ones are refused.
    pub(super) live_workers: usize,
    /// The parameter cache.
    pub(super) params: ParamCache,
    /// Bytes reserved for synthesis in flight (part of the budget's reservations).
    pub(super) synthesis_reserved: usize,
    /// The pool requests of the partitions in synthesis (which may not have checked out yet)
    /// and the a/b/c buffer sizes of those on a GPU (which give a/b/c back to the pool once H
    /// is computed): idle buffers of their sizes are counted in their reservations, not as
    /// idle.
    pub(super) synthesis_requests: Vec<[usize; 4]>,
    /// The job priorities of the partitions in synthesis, one entry each: how many there are
    /// ([`State::in_synthesis`]) and which (the pacer's jump, [`State::jumps_pacer`]).
    pub(super) synthesis_priorities: Vec<i32>,
    pub(super) gpu_requests: Vec<[usize; 4]>,
    /// Bytes of the compiled circuits the engine's prover holds, charged to the budget once.
    pub(super) compiled_charged: usize,
    /// The budget's host-evaluation slots for witness proofs.
    pub(super) evaluation: EvaluationSlots,
    /// Witness partitions dispatched (or synthesized witness-only) and not yet out of the
    /// engine: how many slots could be in use at once.
    pub(super) witnesses_in_flight: usize,
}

/// A job as [`State::add_job`] takes it in: checked by [`State::refusal`], r and s drawn.
pub(super) struct NewJob {
    pub(super) shared: Arc<JobShared>,
    pub(super) params: Parameters,
    pub(super) partitions: Vec<Partition>,
    pub(super) priority: i32,
    pub(super) label: String,
    pub(super) r: Vec<Scalar>,
    pub(super) s: Vec<Scalar>,
}

/// Notifications to make once the engine's lock is released (callbacks may call back into
/// the engine).
#[derive(Default)]
pub(super) struct Deferred {
    pub(super) progressed: Vec<(Arc<JobShared>, usize, usize)>,
    pub(super) finished: Vec<(Arc<JobShared>, Result<Vec<Proof>>, usize)>,
    /// Parameter sets removed as their last job ended: the backends evict their copies.
    pub(super) removed: Vec<Parameters>,
}

impl Deferred {
    /// Evicts the removed sets from `provers` (the engine's backends) and wakes the jobs' waiters.
    pub(super) fn run(self, provers: &[crate::Prover]) {
        for params in &self.removed {
            for prover in provers {
                prover.evict_params(params);
            }
            log::info!("engine: parameters {} removed (their last job ended)", params.id());
        }
        for (job, done, failed) in self.progressed {
            job.note_done(done, failed);
        }
        for (job, result, done) in self.finished {
            job.finish(result, done);
        }
    }
}

pub(super) fn ema(old: Option<f64>, sample: Duration) -> Option<f64> {
    let x = sample.as_secs_f64();
    Some(old.map_or(x, |e| EMA_ALPHA * x + (1.0 - EMA_ALPHA) * e))
}

pub(super) fn secs(x: Option<f64>) -> Option<Duration> {
    x.and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// The host-evaluation slots the budget holds for witness proofs: `slots` sets of the
/// checkouts `set_requests` (`set_bytes` each, as the pool may take them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct EvaluationSlots {
    pub(super) slots: usize,
    pub(super) set_bytes: usize,
    pub(super) set_requests: [usize; 4],
}

impl EvaluationSlots {
    pub(super) fn bytes(&self) -> usize {
        self.slots.saturating_mul(self.set_bytes)
    }
}

impl State {
    /// Takes `slots` as the evaluation slots, charging what they add: by force (bytes that will
    /// exist once a proof checks them out) — a dispatch has made room for them first.
    pub(super) fn grow_evaluation(&mut self, slots: EvaluationSlots) {
        let (from, to) = (self.evaluation.bytes(), slots.bytes());
        if to > from {
            self.budget.force_reserve(to - from);
            log::debug!(
                "engine: {} host-evaluation slot(s) of {} bytes for witness proofs",
                slots.slots,
                slots.set_bytes
            );
            self.evaluation = slots;
        }
    }

    /// A partition dispatched for full synthesis came out witness-only (its compiled circuit
    /// appeared meanwhile): one more witness partition in flight.
    pub(super) fn witness_entered(&mut self) {
        self.witnesses_in_flight += 1;
    }

    /// A witness partition left the engine (proved, failed or dropped).
    pub(super) fn witness_left(&mut self) {
        self.witnesses_in_flight = self.witnesses_in_flight.saturating_sub(1);
    }

    /// One partition of job `id` left the engine; finishes the job when it was the last.
    pub(super) fn partition_left(&mut self, id: u64, deferred: &mut Deferred) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        job.outstanding = job.outstanding.saturating_sub(1);
        if job.outstanding == 0 {
            self.finalize(id, deferred);
        }
    }

    /// Removes job `id` and reports its outcome.
    pub(super) fn finalize(&mut self, id: u64, deferred: &mut Deferred) {
        let Some(mut job) = self.jobs.remove(&id) else {
            return;
        };
        if self.jobs.is_empty() {
            // No partition left to prove: the evaluation slots go with the last job.
            debug_assert!(
                self.shutdown || self.witnesses_in_flight == 0,
                "{} witness partitions counted in flight with no job",
                self.witnesses_in_flight
            );
            let slots = std::mem::take(&mut self.evaluation);
            self.budget.release(slots.bytes());
        }
        let pid = job.params.id();
        if self.params.get(pid).is_some_and(|e| e.remove_when_idle) && self.params_users(pid) == 0 {
            if let Some(entry) = self.drop_params(pid) {
                deferred.removed.push(entry.params);
            }
        }
        let wall = job.submitted.elapsed();
        let result = match job.error.take() {
            Some(e) => {
                self.counters.jobs_failed += 1;
                log::info!(
                    "engine: job {id} '{}' failed after {:.2} s: {e}",
                    job.label,
                    wall.as_secs_f64()
                );
                Err(e)
            }
            None => {
                let proofs: Option<Vec<Proof>> = job.proofs.iter().copied().collect();
                match proofs {
                    Some(proofs) => {
                        self.counters.jobs_done += 1;
                        log::info!(
                            "engine: job {id} '{}' done: {} proofs in {:.2} s (synthesis {:.2} s, proving {:.2} s, summed over partitions)",
                            job.label,
                            proofs.len(),
                            wall.as_secs_f64(),
                            job.synthesis_time.as_secs_f64(),
                            job.gpu_time.as_secs_f64()
                        );
                        Ok(proofs)
                    }
                    None => {
                        self.counters.jobs_failed += 1;
                        Err(Error::Cancelled(format!(
                            "job {id}: partitions left the engine unproved"
                        )))
                    }
                }
            }
        };
        deferred.finished.push((job.shared.clone(), result, job.done));
    }

    /// Fails job `id` with `err` (the first error wins): drops its pending partitions and its
    /// partitions waiting for a GPU (their buffers back to the pool, then their budget
    /// released). Partitions in synthesis or on a GPU are dropped when they come back.
    pub(super) fn fail_job(&mut self, id: u64, err: Error, now: Duration, deferred: &mut Deferred) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.error.is_none() {
            log::debug!("engine: job {id} '{}' fails: {err}", job.label);
            job.error = Some(err);
        }
        let pending = std::mem::take(&mut job.pending).len();
        job.outstanding -= pending;
        job.unproved += pending;
        self.counters.dropped += pending as u64;
        let mut i = 0;
        while i < self.ready.len() {
            if self.ready[i].job != id {
                i += 1;
                continue;
            }
            let item = self.ready.swap_remove(i);
            if item.paced {
                // Leaves the pacer's waiting count (no GPU time is reported for it).
                self.pacer.on_gpu_start(now);
            }
            let reserved = item.reserved;
            if matches!(item.work, Synthesis::Witness { .. }) {
                self.witness_left();
            }
            drop(item); // buffers back to the pool before the budget says they are free
            self.budget.release(reserved);
            self.counters.dropped += 1;
            if let Some(job) = self.jobs.get_mut(&id) {
                job.outstanding -= 1;
                job.unproved += 1;
            }
        }
        match self.jobs.get(&id) {
            Some(j) if j.outstanding == 0 => self.finalize(id, deferred),
            Some(j) => deferred.progressed.push((j.shared.clone(), j.done, j.unproved)),
            None => {}
        }
    }

    /// One partition of job `id` left the engine unproved (failed, or dropped after its job
    /// failed); the caller then calls [`State::partition_left`].
    pub(super) fn note_unproved(&mut self, id: u64, deferred: &mut Deferred) {
        if let Some(job) = self.jobs.get_mut(&id) {
            job.unproved += 1;
            deferred.progressed.push((job.shared.clone(), job.done, job.unproved));
        }
    }

    /// Holds `params` in the parameter cache (charging its host bytes once, even past the
    /// limit: they exist already) and marks it used now.
    pub(super) fn hold_params(&mut self, params: &Parameters) {
        self.params.hold(params, &mut self.budget);
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

    /// The idle parameter set to evict first ([`ParamCache::eviction_candidate`]): no job of
    /// the engine uses it.
    pub(super) fn eviction_candidate(&self) -> Option<u64> {
        self.params
            .eviction_candidate(|id| self.jobs.values().any(|j| j.params.id() == id))
    }

    /// Takes set `id` out of the parameter cache and its charge out of the budget
    /// ([`ParamCache::remove`]).
    pub(super) fn drop_params(&mut self, id: u64) -> Option<ParamEntry> {
        self.params.remove(id, &mut self.budget)
    }

    /// Partitions in synthesis.
    pub(super) fn in_synthesis(&self) -> usize {
        self.synthesis_priorities.len()
    }

    /// Whether the head job, of priority `p`, dispatches past the pacer: lower-priority
    /// partitions are in the pipeline the pacer keeps at its depth (in synthesis or waiting for
    /// a GPU) — all of which the GPUs take only after `p`'s — and fewer than `ahead` partitions
    /// of priority `p` or above are. Without it a job of a higher priority arriving during a
    /// stream (a Window PoSt deadline during PoRep) waits for the lower partitions the pacer
    /// counts to drain, one GPU proof each, and its partitions then trickle in one per proof,
    /// each behind a lower one synthesized meanwhile.
    pub(super) fn jumps_pacer(&self, p: i32, ahead: usize) -> bool {
        let (mut class, mut lower) = (0usize, 0usize);
        for q in self
            .ready
            .iter()
            .map(|r| r.priority)
            .chain(self.synthesis_priorities.iter().copied())
        {
            if q >= p {
                class += 1;
            } else {
                lower += 1;
            }
        }
        lower > 0 && class < ahead
    }

    /// The job whose next partition is dispatched next: highest priority, then oldest.
    pub(super) fn head_job(&self) -> Option<u64> {
        self.jobs
            .iter()
            .filter(|(_, j)| j.error.is_none() && !j.pending.is_empty())
            .max_by_key(|(&id, j)| (j.priority, std::cmp::Reverse(id)))
            .map(|(&id, _)| id)
    }
    /// The next job id.
    pub(super) fn next_job_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Why a job of `n` partitions with `r`, `s` cannot be taken (`oversized`: the bytes of a
    /// synthesized partition larger than the budget's limit), or `None`.
    pub(super) fn refusal(&self, n: usize, r: &[Scalar], s: &[Scalar], oversized: Option<usize>) -> Option<Error> {
        if n == 0 {
            Some(Error::InvalidArgument("empty job: nothing to prove".into()))
        } else if r.len() != n || s.len() != n {
            Some(Error::InvalidArgument(format!(
                "{n} partitions need {n} values of r and of s; found {} and {}",
                r.len(),
                s.len()
            )))
        } else if let Some(requested) = oversized {
            // The circuit path refuses such a partition at its dispatch; one synthesized
            // already is refused here, before its bytes are counted, so the budget's limit
            // holds for both.
            Some(Error::BudgetExhausted {
                requested,
                reserved: self.budget.reserved(),
                limit: self.budget.limit(),
                waited: Duration::ZERO,
            })
        } else if self.shutdown {
            Some(Error::Cancelled("the engine shut down".into()))
        } else if self.live_workers == 0 {
            Some(Error::NoGpu("every GPU worker's backend of this engine is lost".into()))
        } else {
            None
        }
    }

    /// Takes job `id` in: holds its parameters, queues its circuit partitions for dispatch and
    /// its synthesized ones (charged now) for the GPU workers. Returns how many were
    /// synthesized already.
    pub(super) fn add_job(&mut self, id: u64, job: NewJob) -> usize {
        let NewJob {
            shared,
            params,
            partitions,
            priority,
            label,
            r,
            s,
        } = job;
        let n = partitions.len();
        let mut entry = JobEntry {
            shared,
            priority,
            label,
            params: params.clone(),
            r,
            s,
            pending: VecDeque::new(),
            proofs: vec![None; n],
            done: 0,
            outstanding: n,
            error: None,
            submitted: Instant::now(),
            synthesis_time: Duration::ZERO,
            gpu_time: Duration::ZERO,
            unproved: 0,
            blocked_since: None,
            budget_waited: false,
        };
        self.hold_params(&params);
        let mut presynthesized = 0;
        for (index, p) in partitions.into_iter().enumerate() {
            match p.kind {
                PartitionKind::Circuit {
                    circuit_type,
                    synthesize,
                } => entry.pending.push_back(Pending {
                    index,
                    circuit_type,
                    synthesize,
                }),
                PartitionKind::Synthesized(assignment) => {
                    let reserved = assignment_bytes(&assignment);
                    self.budget.force_reserve(reserved);
                    self.ready.push(Ready {
                        job: id,
                        index,
                        priority,
                        work: Synthesis::Full(assignment),
                        params: params.clone(),
                        r: entry.r[index],
                        s: entry.s[index],
                        reserved,
                        paced: false,
                    });
                    presynthesized += 1;
                }
            }
        }
        log::info!(
            "engine: job {id} '{}' submitted: {n} partitions ({presynthesized} synthesized already) of domain 2^{}, priority {priority}",
            entry.label,
            params.domain_size().trailing_zeros()
        );
        self.jobs.insert(id, entry);
        presynthesized
    }
}
