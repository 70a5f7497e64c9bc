//! The engine's workers, as functions over the engine's [`Shared`] state: a partition's
//! synthesis (and its true-up in the budget), the GPU workers' proving loop, and how a lost
//! backend ends a GPU worker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;

use super::budget::synthesis_held_bytes;
use super::shared::{unless_panic, Shared};
use super::state::{Deferred, Dispatched, Pending, Ready, State};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::proof::Proof;
use crate::prover::{Placement, Prover, Synthesis};

/// How often a GPU worker holding for an urgent synthesis checks whether the pool has a
/// checkout waiting for room (see [`Shared::pool_contended`]).
const HOLD_RECHECK: Duration = Duration::from_millis(10);

/// A synthesis worker's task: synthesizes partition `work`, trues its reservation up and
/// hands it to the GPU workers (or drops it, its job failed or gone).
pub(super) fn synthesize(shared: &Shared, work: Dispatched) {
    let start = Instant::now();
    let Dispatched {
        id,
        partition,
        params,
        reserved,
        synth_bytes,
        requests,
        urgent,
        witness,
        priority,
    } = work;
    let Pending { index, synthesize, .. } = partition;
    let result = unless_panic(
        || format!("synthesis of partition {index}"),
        || synthesize(&shared.synth_prover, &params),
    );
    let elapsed = start.elapsed();
    let mut deferred = Deferred::default();
    let mut st = shared.state.lock();
    let now = shared.now();
    st.end_synthesis(urgent, priority, synth_bytes, &requests, elapsed);
    // A recording (or a file loaded) during this synthesis: its bytes enter the budget.
    shared.charge_compiled(&mut st);
    let alive = st.jobs.get(&id).is_some_and(|j| j.error.is_none()) && !st.shutdown;
    // A clone of the parameters not handed on is dropped before the job's waiter wakes, so
    // the engine's cache knows who else holds the set.
    let mut leftover = None;
    match result {
        Ok(work) if alive => {
            let held = synthesis_held_bytes(&work);
            let reserved = st.budget.adjust(reserved, held);
            match (&work, witness) {
                (Synthesis::Witness { circuit, .. }, was) => {
                    if !was {
                        // Dispatched for full synthesis before its compiled circuit existed.
                        st.witness_entered();
                    }
                    // Its proof's host evaluation, when the slots lack it (dispatched before
                    // its compiled circuit existed, or the circuit refused on a device
                    // since): those bytes will exist, so they are charged even past the limit.
                    let slots = shared.evaluation_need(&st, circuit, st.witnesses_in_flight);
                    st.grow_evaluation(slots);
                }
                (Synthesis::Full(_), true) => st.witness_left(), // fell back to full synthesis
                (Synthesis::Full(_), false) => {}
            }
            let path = match &work {
                Synthesis::Full(_) => "in full",
                Synthesis::Witness { .. } => "witness-only",
            };
            log::debug!(
                "engine: job {id} partition {index} synthesized {path} in {:.1} ms ({held} bytes)",
                elapsed.as_secs_f64() * 1e3
            );
            st.synthesized(id, index, params, work, reserved, urgent, elapsed, now);
        }
        unproved => {
            // Synthesized for a job that failed (or an engine shutting down), or failed. A
            // synthesized partition is dropped here: its buffers go back before the budget
            // says they are free.
            leftover = Some(params);
            let failure = unproved.err();
            st.synthesis_unproved(id, index, witness, urgent, reserved, failure, now, &mut deferred);
        }
    }
    drop(st);
    drop(leftover);
    shared.dispatch_cv.notify_all();
    // Every GPU worker looks again: one may be holding for this partition (see
    // `gpu_worker`), and the one notify_one would wake could be that one.
    shared.gpu_cv.notify_all();
    deferred.run(&shared.backend_provers);
}

/// GPU worker `worker`'s thread: proves the ready partitions with `prover`, highest priority
/// first, until shutdown or until its backend is lost.
pub(super) fn gpu_worker(shared: &Shared, worker: usize, prover: Prover) {
    loop {
        let mut st = shared.state.lock();
        if prover.is_backend_lost() {
            retire(shared, &mut st, worker, &prover);
            return;
        }
        let mut held = false;
        let item = loop {
            if st.shutdown {
                return;
            }
            let best = st.ready.iter().enumerate().max_by_key(|(_, r)| r.key()).map(|(i, _)| i);
            if let Some(i) = best {
                // An urgent partition in synthesis that no other waiting worker will take
                // when it is ready: this worker keeps itself free for it instead of
                // starting lower-priority work — unless a pool checkout waits meanwhile
                // (that synthesis may wait for bytes the ready work holds).
                let wanted = !shared.is_urgent(st.ready[i].priority) && st.urgent_in_synthesis > st.gpu_waiting;
                if !wanted {
                    break st.ready.swap_remove(i);
                }
                if shared.pool_contended(&st) {
                    st.note_gpu_hold(true);
                    log::info!(
                        "engine: GPU worker {worker} stops holding for an urgent synthesis: a pool checkout waits for room, proving ready work frees it"
                    );
                    break st.ready.swap_remove(i);
                }
                if !held {
                    held = true;
                    st.note_gpu_hold(false);
                    log::debug!("engine: GPU worker {worker} holds for an urgent partition in synthesis");
                }
                // The pool does not wake this worker when a checkout starts waiting: look
                // again soon.
                st.gpu_waiting += 1;
                shared.gpu_cv.wait_for(&mut st, HOLD_RECHECK);
                st.gpu_waiting -= 1;
                continue;
            }
            st.gpu_waiting += 1;
            shared.gpu_cv.wait(&mut st);
            st.gpu_waiting -= 1;
        };
        // A streamed set's witness partitions of one circuit go to the GPU together (each
        // streamed chunk of bases then crosses the bus once for all of them); urgent ones and
        // everything else one at a time.
        let streams = matches!(item.work, Synthesis::Witness { .. })
            && prover.placement(item.params.id()) == Some(Placement::Streamed);
        st.note_streaming(worker, streams, shared.stream_batch);
        let mut items = vec![item];
        if streams && !shared.is_urgent(items[0].priority) {
            // Never ahead of a waiting partition of higher priority that cannot join the batch.
            let floor = st
                .ready
                .iter()
                .filter(|r| !same_run(&items[0], r))
                .map(|r| r.priority)
                .max()
                .unwrap_or(i32::MIN);
            while items.len() < shared.stream_batch {
                let next = st
                    .ready
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| same_run(&items[0], r) && !shared.is_urgent(r.priority) && r.priority >= floor)
                    .max_by_key(|(_, r)| r.key())
                    .map(|(i, _)| i);
                match next {
                    Some(i) => items.push(st.ready.swap_remove(i)),
                    None => break,
                }
            }
        }
        let now = shared.now();
        // Per partition: the pool sizes its proof gives back or checks out (a/b/c, or what the
        // witness's evaluation takes) and whether it is a witness.
        let mut books = Vec::with_capacity(items.len());
        for item in &items {
            let abc = match &item.work {
                Synthesis::Full(a) => {
                    [a.a.capacity(), a.b.capacity(), a.c.capacity(), 0].map(|n| n * std::mem::size_of::<Scalar>())
                }
                Synthesis::Witness { circuit, .. } => prover.witness_pool_requests(circuit),
            };
            if let Synthesis::Witness { circuit, .. } = &item.work {
                // The slots hold its checkouts; ones that grew since its true-up (its circuit
                // refused on a device meanwhile) grow too.
                let slots = shared.evaluation_need(&st, circuit, st.witnesses_in_flight);
                st.grow_evaluation(slots);
            }
            st.start_proof(worker, item.job, item.paced, abc, now);
            books.push((abc, matches!(item.work, Synthesis::Witness { .. })));
        }
        let backend = st.workers[worker].backend;
        let epoch = st.params.epochs()[backend];
        drop(st);
        shared.dispatch_cv.notify_all();

        let start = Instant::now();
        // Each work is dropped below (its buffers back to the pool) on every path.
        let params = items[0].params.clone();
        // A batch stops between two partitions once an urgent partition waits or is being
        // synthesized: it then waits for one partition, not the batch.
        let cut = || urgent_waiting(shared);
        let (results, together) = prove(
            &prover,
            items.iter_mut().map(|i| (i.index, &mut i.work, i.r, i.s)).collect(),
            &params,
            &cut,
        );
        drop(params);
        let elapsed = start.elapsed();
        // The partitions proved; the pacer and the statistics count each one's share of the
        // batch's time. The others (a batch cut short) wait again.
        let k = results.len();
        let share = elapsed / k as u32;
        let unproved: Vec<(Ready, [usize; 4])> = items
            .split_off(k)
            .into_iter()
            .zip(books.split_off(k).into_iter().map(|(abc, _)| abc))
            .collect();
        if together {
            log::debug!(
                "engine: GPU worker {worker} proved {k} partitions of a streamed set together in {:.1} ms",
                elapsed.as_secs_f64() * 1e3
            );
        }

        let mut deferred = Deferred::default();
        let mut st = shared.state.lock();
        let now = shared.now();
        let on = (backend, epoch);
        if together {
            st.note_batch(k);
        }
        if !unproved.is_empty() {
            log::debug!(
                "engine: GPU worker {worker} cut its batch after {k} partitions for an urgent one; {} wait again",
                unproved.len()
            );
            for (item, abc) in unproved {
                st.requeue(item, &abc);
            }
            shared.gpu_cv.notify_all();
        }
        let mut held = Vec::with_capacity(k);
        for ((item, (abc, witness)), result) in items.into_iter().zip(books).zip(results) {
            let Ready {
                job: id,
                index,
                work,
                params,
                reserved,
                ..
            } = item;
            drop(work);
            st.end_proof(
                worker,
                &abc,
                reserved,
                witness,
                params.id(),
                on,
                result.is_ok(),
                share,
                now,
            );
            match result {
                Ok(proof) => {
                    log::debug!(
                        "engine: job {id} partition {index} proved on {} in {:.1} ms",
                        prover.backend_name(),
                        share.as_secs_f64() * 1e3
                    );
                    st.proved(id, index, Some(proof), share, &mut deferred);
                }
                Err(e) => {
                    log::info!(
                        "engine: job {id} partition {index} failed on {}: {e}",
                        prover.backend_name()
                    );
                    st.proof_failed(id, e, now, &mut deferred);
                }
            }
            held.push(params);
        }
        drop(st);
        // Before the job's waiter wakes (see `synthesize`).
        drop(held);
        shared.dispatch_cv.notify_all();
        deferred.run(&shared.backend_provers);
    }
}

/// Whether a partition of an urgent job waits for a GPU or is being synthesized.
fn urgent_waiting(shared: &Shared) -> bool {
    if shared.urgent_priority.is_none() {
        return false;
    }
    let st = shared.state.lock();
    st.urgent_in_synthesis > 0 || st.ready.iter().any(|r| shared.is_urgent(r.priority))
}

/// Whether ready partition `b` may be proved together with `a`: witnesses of one compiled
/// circuit over one parameter set.
fn same_run(a: &Ready, b: &Ready) -> bool {
    match (&a.work, &b.work) {
        (Synthesis::Witness { circuit: ca, .. }, Synthesis::Witness { circuit: cb, .. }) => {
            Arc::ptr_eq(ca, cb) && a.params.id() == b.params.id()
        }
        _ => false,
    }
}

/// Proves `work` (partition index, input, r, s) with `params`: one partition alone, several
/// together ([`Prover::prove_syntheses`] hands a run of witnesses to the backend at once). When
/// a batch fails, each is proved again alone, so one partition's failure is its own. A panic
/// fails the partition it happened in. Also returns whether several were proved together.
///
/// `cut` may end a batch early, between two of its partitions (an urgent one waits): then the
/// results are those of the first few (at least one) and the caller gives the others back.
fn prove(
    prover: &Prover,
    mut work: Vec<(usize, &mut Synthesis, Scalar, Scalar)>,
    params: &Parameters,
    cut: &dyn Fn() -> bool,
) -> (Vec<Result<Proof>>, bool) {
    let one = |(index, w, r, s): &mut (usize, &mut Synthesis, Scalar, Scalar)| {
        unless_panic(
            || format!("proving partition {index} on {}", prover.backend_name()),
            || prover.prove_syntheses(vec![&mut **w], params, &[*r], &[*s]),
        )
        .and_then(|(mut proofs, _)| {
            proofs
                .pop()
                .ok_or_else(|| Error::Panicked("a proof went missing".into()))
        })
    };
    if work.len() == 1 {
        return (vec![one(&mut work[0])], false);
    }
    let k = work.len();
    let (rs, ss): (Vec<Scalar>, Vec<Scalar>) = work.iter().map(|(_, _, r, s)| (*r, *s)).unzip();
    let batch = unless_panic(
        || format!("proving {k} partitions together on {}", prover.backend_name()),
        || {
            let inputs = work.iter_mut().map(|(_, w, _, _)| &mut **w).collect();
            prover.prove_syntheses_until(inputs, params, &rs, &ss, cut)
        },
    );
    match batch {
        Ok((proofs, _)) if (1..=k).contains(&proofs.len()) => {
            let together = proofs.len() > 1;
            (proofs.into_iter().map(Ok).collect(), together)
        }
        Ok(_) => (work.iter_mut().map(one).collect(), false),
        Err(e) => {
            log::warn!("engine: {k} partitions proved together failed ({e}); proving each alone");
            (work.iter_mut().map(one).collect(), false)
        }
    }
}

/// Worker `worker`'s backend is lost: it takes no more partitions. When it was the last,
/// every job fails (nothing could prove its partitions) and new jobs are refused.
fn retire(shared: &Shared, st: &mut parking_lot::MutexGuard<'_, State>, worker: usize, prover: &Prover) {
    log::error!(
        "engine: GPU worker {worker} stops: its {} backend is lost",
        prover.backend_name()
    );
    let mut deferred = Deferred::default();
    if st.retire_worker(worker, shared.now(), &mut deferred) {
        return;
    }
    parking_lot::MutexGuard::unlocked(st, || {
        shared.dispatch_cv.notify_all();
        deferred.run(&shared.backend_provers);
    });
}
