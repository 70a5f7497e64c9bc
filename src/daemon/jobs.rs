//! The daemon's jobs: each request's work submitted to the Filecoin engine on a blocking
//! thread, its outcome kept for the callers that await it, `request_id` as the idempotency key
//! with a digest of the request (a repeated id is its job only while that job is live, or kept
//! COMPLETED, for the same request: see [`Jobs::known`]), cancellation before and during
//! proving, and the drain at shutdown.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::proto::SubmitProofRequest;
use super::request::Work;
use crate::error::Error;
use crate::filecoin::{Output, ProofJob, ProofKind};

/// How a job ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Proved and verified against the key.
    Proved(Output),
    /// Cancelled (by a caller or by shutdown).
    Cancelled(String),
    /// Refused by the Filecoin layer or failed in the engine.
    Failed(String),
}

/// Where a job is.
enum Stage {
    /// Being handed to the engine (parameters, inputs); `cancel` was asked for meanwhile.
    Preparing { cancel: bool },
    /// In the engine.
    Proving(Arc<ProofJob>),
    /// Over.
    Done,
}

/// What a request asks to be proved, as a 128-bit keyed digest ([`Jobs::digest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Digest([u64; 2]);

/// One job.
pub struct Job {
    /// The daemon's id (`job_id` on the wire).
    pub id: String,
    /// The caller's idempotency key (may be empty).
    pub request_id: String,
    /// The digest of its request (zero without a `request_id`: never compared).
    pub digest: Digest,
    /// The proof kind.
    pub kind: ProofKind,
    /// The engine priority it was submitted at.
    pub priority: i32,
    /// When it was accepted.
    pub accepted: Instant,
    /// A cancel was asked (by a caller or by shutdown).
    cancel_asked: AtomicBool,
    stage: Mutex<Stage>,
    /// When it reached the engine.
    queued: Mutex<Option<Instant>>,
    outcome: watch::Sender<Option<Arc<Outcome>>>,
}

impl Job {
    /// Waits for the outcome, at most `timeout` (`None`: as long as it takes); `None` on timeout.
    pub async fn outcome(&self, timeout: Option<Duration>) -> Option<Arc<Outcome>> {
        let mut rx = self.outcome.subscribe();
        let wait = async move { rx.wait_for(|o| o.is_some()).await.ok().and_then(|o| o.clone()) };
        match timeout {
            None => wait.await,
            Some(t) => tokio::time::timeout(t, wait).await.ok().flatten(),
        }
    }

    /// Whether it is over.
    pub fn is_done(&self) -> bool {
        self.outcome.borrow().is_some()
    }

    /// Its job's id in the engine ([`ProofJob::id`]) while the engine has it.
    pub fn engine_job(&self) -> Option<u64> {
        match &*self.stage.lock().unwrap_or_else(|p| p.into_inner()) {
            Stage::Proving(job) => Some(job.id()),
            _ => None,
        }
    }

    /// How long it waited before the engine had it.
    pub fn queue_wait(&self) -> Duration {
        let queued = *self.queued.lock().unwrap_or_else(|p| p.into_inner());
        queued.map(|q| q - self.accepted).unwrap_or_default()
    }

    /// When the engine got it (`None`: not yet).
    pub fn queued_at(&self) -> Option<Instant> {
        *self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Cancels it; returns whether it was live (preparing or proving).
    pub fn cancel(&self) -> bool {
        self.cancel_asked.store(true, Ordering::SeqCst);
        let mut stage = self.stage.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *stage {
            Stage::Preparing { cancel } => {
                *cancel = true;
                true
            }
            Stage::Proving(job) => job.cancel(),
            Stage::Done => false,
        }
    }
}

#[cfg(test)]
impl Job {
    /// A job as [`Jobs::submit`] makes one, its work not started: in the engine since `queued`
    /// when given.
    pub(super) fn for_test(
        id: &str,
        request_id: &str,
        digest: Digest,
        kind: ProofKind,
        priority: i32,
        queued: Option<Instant>,
    ) -> Arc<Self> {
        Arc::new(Job {
            id: id.into(),
            request_id: request_id.into(),
            digest,
            kind,
            priority,
            accepted: Instant::now(),
            cancel_asked: AtomicBool::new(false),
            stage: Mutex::new(Stage::Preparing { cancel: false }),
            queued: Mutex::new(queued),
            outcome: watch::channel(None).0,
        })
    }
}

/// Totals since the start.
#[derive(Debug, Default)]
pub struct Totals {
    /// Jobs proved.
    pub completed: AtomicU64,
    /// Jobs failed (refused by the Filecoin layer, or failed in the engine).
    pub failed: AtomicU64,
    /// Jobs cancelled.
    pub cancelled: AtomicU64,
}

#[derive(Default)]
struct Table {
    by_id: HashMap<String, Arc<Job>>,
    by_request: HashMap<String, String>,
    /// Finished jobs, oldest first, with when they finished.
    finished: VecDeque<(Instant, String)>,
}

/// Every job the daemon knows.
pub struct Jobs {
    table: Mutex<Table>,
    next: AtomicU64,
    /// A prefix that differs between daemon runs, so an id from before a restart is unknown.
    run: String,
    accepting: AtomicBool,
    /// How long a finished job (and its request id) is kept for callers that await it.
    retention: Duration,
    /// The digest's two keys, drawn at the start: a request cannot be made to collide with
    /// another without them.
    keys: [RandomState; 2],
    /// When the daemon started.
    pub started: Instant,
    /// Totals since the start.
    pub totals: Totals,
}

/// Why a job was not accepted.
#[derive(Debug)]
pub enum NotAccepted {
    /// The daemon is shutting down.
    ShuttingDown,
    /// The `request_id` names a live job of another request (this job).
    RequestIdBusy(Arc<Job>),
}

/// What a `request_id` already names, for a request of a given digest ([`Jobs::known`]).
pub enum Known {
    /// Nothing to reuse: the request is proved by a new job. `Some` names the job kept under
    /// the id and why it is not reused (its outcome, or other inputs), for the log.
    New(Option<(Arc<Job>, &'static str)>),
    /// The same request: this job (live, or kept COMPLETED).
    Same(Arc<Job>),
    /// A live job of another request under the id.
    Busy(Arc<Job>),
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("request_id", &self.request_id)
            .field("kind", &self.kind)
            .field("done", &self.is_done())
            .finish()
    }
}

impl Jobs {
    /// A table keeping finished jobs for `retention`.
    pub fn new(retention: Duration) -> Arc<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        Arc::new(Self {
            table: Mutex::default(),
            next: AtomicU64::new(1),
            run: format!("{:x}", nanos & 0xffff_ffff),
            accepting: AtomicBool::new(true),
            retention,
            keys: [RandomState::new(), RandomState::new()],
            started: Instant::now(),
            totals: Totals::default(),
        })
    }

    /// The digest of what `req` asks to be proved: every field but `request_id` (the key it is
    /// compared under) and `priority` (a retry at another priority asks for the same proof).
    /// Two SipHash values under keys drawn at the start (a C1 wrapper of 50 MB takes tens of
    /// milliseconds: call off the async threads).
    pub fn digest(&self, req: &SubmitProofRequest) -> Digest {
        // Every field named, so that a field added to the protocol is a compile error here.
        let SubmitProofRequest {
            request_id: _,
            priority: _,
            proof_kind,
            sector_size,
            registered_proof,
            vanilla_proof,
            vanilla_proofs,
            sector_number,
            miner_id,
            randomness,
            partition_index,
            comm_r_old,
            comm_r_new,
            comm_d_new,
        } = req;
        let fields = (
            (
                proof_kind,
                sector_size,
                registered_proof,
                sector_number,
                miner_id,
                partition_index,
            ),
            vanilla_proof,
            vanilla_proofs,
            randomness,
            (comm_r_old, comm_r_new, comm_d_new),
        );
        Digest([self.keys[0].hash_one(fields), self.keys[1].hash_one(fields)])
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job of `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.lock().by_id.get(id).cloned()
    }

    /// What `request_id` names for a request of `digest` (an empty id names nothing). A live
    /// job is reused for the same request (a caller retrying while it proves gets it, not a
    /// second proof) unless a cancel was asked for it; a live job of another request makes the
    /// id busy. A finished job is reused only when it was COMPLETED for the same request: a
    /// FAILED or CANCELLED one, or one of other inputs (a C2 redone with a new C1), is proved
    /// anew.
    pub fn known(&self, request_id: &str, digest: &Digest) -> Known {
        let mut table = self.lock();
        self.prune(&mut table);
        Self::known_in(&table, request_id, digest)
    }

    fn known_in(table: &Table, request_id: &str, digest: &Digest) -> Known {
        if request_id.is_empty() {
            return Known::New(None);
        }
        let Some(job) = table.by_request.get(request_id).and_then(|id| table.by_id.get(id)) else {
            return Known::New(None);
        };
        let same = job.digest == *digest;
        let outcome = job.outcome.borrow().clone();
        let job = job.clone();
        match outcome.as_deref() {
            None if job.cancel_asked.load(Ordering::SeqCst) => Known::New(Some((job, "being cancelled"))),
            None if same => Known::Same(job),
            None => Known::Busy(job),
            Some(Outcome::Proved(_)) if same => Known::Same(job),
            Some(Outcome::Proved(_)) => Known::New(Some((job, "COMPLETED for other inputs"))),
            Some(Outcome::Failed(_)) => Known::New(Some((job, "FAILED"))),
            Some(Outcome::Cancelled(_)) => Known::New(Some((job, "CANCELLED"))),
        }
    }

    /// Accepts `work` (of a request of `digest`) under `request_id` at engine priority
    /// `priority`, or returns the job the id already names for the same request ([`known`]
    /// decides, under the same lock; the bool says the job is new). Its proving runs on a
    /// blocking thread of the runtime.
    ///
    /// # Errors
    /// [`NotAccepted::ShuttingDown`]; [`NotAccepted::RequestIdBusy`] when the id names a live
    /// job of another request.
    ///
    /// [`known`]: Self::known
    pub fn submit(
        self: &Arc<Self>,
        request_id: String,
        digest: Digest,
        work: Work,
        priority: i32,
    ) -> Result<(Arc<Job>, bool), NotAccepted> {
        let (job, replaced) = {
            let mut table = self.lock();
            self.prune(&mut table);
            let replaced = match Self::known_in(&table, &request_id, &digest) {
                Known::Same(job) => return Ok((job, false)),
                Known::Busy(job) => return Err(NotAccepted::RequestIdBusy(job)),
                Known::New(replaced) => replaced,
            };
            if !self.accepting.load(Ordering::SeqCst) {
                return Err(NotAccepted::ShuttingDown);
            }
            let id = format!("{}-{}", self.run, self.next.fetch_add(1, Ordering::Relaxed));
            let job = Arc::new(Job {
                id: id.clone(),
                request_id: request_id.clone(),
                digest,
                kind: work.kind(),
                priority,
                accepted: Instant::now(),
                cancel_asked: AtomicBool::new(false),
                stage: Mutex::new(Stage::Preparing { cancel: false }),
                queued: Mutex::new(None),
                outcome: watch::channel(None).0,
            });
            if !request_id.is_empty() {
                table.by_request.insert(request_id, id.clone());
            }
            table.by_id.insert(id, job.clone());
            (job, replaced)
        };
        if let Some((old, why)) = replaced {
            log::info!(
                "request_id {:?} again: its job {} is {why}: proving anew as job {}",
                job.request_id,
                old.id,
                job.id
            );
        }
        log::info!(
            "job {}: accepted {:?} at priority {priority} (request_id {:?})",
            job.id,
            job.kind,
            job.request_id
        );
        let (jobs, j) = (self.clone(), job.clone());
        tokio::task::spawn_blocking(move || {
            let outcome = prove(&j, work, priority);
            jobs.finish(&j, outcome);
        });
        Ok((job, true))
    }

    fn finish(&self, job: &Job, outcome: Outcome) {
        let counter = match &outcome {
            Outcome::Proved(out) => {
                log::info!(
                    "job {}: proved ({} bytes) in {:.1} ms",
                    job.id,
                    out.proof.len(),
                    out.report.total.as_secs_f64() * 1e3
                );
                &self.totals.completed
            }
            Outcome::Cancelled(why) => {
                log::info!("job {}: cancelled: {why}", job.id);
                &self.totals.cancelled
            }
            Outcome::Failed(why) => {
                log::warn!("job {}: failed: {why}", job.id);
                &self.totals.failed
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
        *job.stage.lock().unwrap_or_else(|p| p.into_inner()) = Stage::Done;
        self.lock().finished.push_back((Instant::now(), job.id.clone()));
        job.outcome.send_replace(Some(Arc::new(outcome)));
    }

    /// Forgets finished jobs older than the retention.
    fn prune(&self, table: &mut Table) {
        while let Some((at, id)) = table.finished.front() {
            if at.elapsed() < self.retention {
                break;
            }
            if let Some(job) = table.by_id.remove(id) {
                if table.by_request.get(&job.request_id) == Some(id) {
                    table.by_request.remove(&job.request_id);
                }
            }
            table.finished.pop_front();
        }
    }

    /// The jobs not yet over.
    pub fn live(&self) -> Vec<Arc<Job>> {
        let mut live: Vec<_> = self.lock().by_id.values().filter(|j| !j.is_done()).cloned().collect();
        live.sort_by_key(|j| j.accepted);
        live
    }

    /// Stops accepting jobs, waits up to `grace` for the live ones, then cancels the rest and
    /// waits for their outcomes (so every caller gets an answer).
    pub async fn drain(&self, grace: Duration) {
        self.accepting.store(false, Ordering::SeqCst);
        let live = self.live();
        log::info!("shutting down: {} jobs live, grace {grace:?}", live.len());
        let all = async {
            for j in &live {
                j.outcome(None).await;
            }
        };
        if tokio::time::timeout(grace, all).await.is_err() {
            for j in self.live() {
                log::warn!("job {}: cancelled by shutdown after the grace period", j.id);
                j.cancel();
            }
            for j in self.live() {
                j.outcome(None).await;
            }
        }
    }
}

/// Submits the work, unless cancelled meanwhile, and waits for the verified proof. The
/// request's bytes go once the job is in the engine (a 32 GiB C1 output's JSON is tens of MB;
/// the engine job holds what it was decoded into).
fn prove(job: &Job, work: Work, priority: i32) -> Outcome {
    let submitted = work.submit(priority);
    drop(work);
    let submitted = match submitted {
        Ok(p) => Arc::new(p),
        Err(e) => return outcome_of(e),
    };
    {
        let mut stage = job.stage.lock().unwrap_or_else(|p| p.into_inner());
        *job.queued.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let cancel = matches!(*stage, Stage::Preparing { cancel: true });
        *stage = Stage::Proving(submitted.clone());
        if cancel {
            submitted.cancel();
        }
    }
    log::debug!("job {}: in the engine as its job {}", job.id, submitted.id());
    match submitted.take_output() {
        Ok(out) => Outcome::Proved(out),
        Err(e) => outcome_of(e),
    }
}

fn outcome_of(e: Error) -> Outcome {
    match e {
        Error::Cancelled(why) => Outcome::Cancelled(why),
        other => Outcome::Failed(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job of `request_id` put in the table as if submitted, over with `outcome` if given.
    fn put(jobs: &Jobs, request_id: &str, digest: Digest, outcome: Option<Outcome>) -> Arc<Job> {
        let id = format!("{}-{}", jobs.run, jobs.next.fetch_add(1, Ordering::Relaxed));
        let job = Job::for_test(&id, request_id, digest, ProofKind::SealCommit, 0, None);
        let mut table = jobs.lock();
        table.by_request.insert(request_id.into(), id.clone());
        table.by_id.insert(id.clone(), job.clone());
        if let Some(o) = outcome {
            *job.stage.lock().unwrap() = Stage::Done;
            table.finished.push_back((Instant::now(), id));
            job.outcome.send_replace(Some(Arc::new(o)));
        }
        job
    }

    fn proved() -> Outcome {
        Outcome::Proved(Output {
            proof: vec![1; 192],
            report: crate::filecoin::Report::default(),
        })
    }

    /// Curio's C2 request for sector 100 of miner 1000 with `c1` as its C1 wrapper.
    fn c2(c1: &[u8]) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: "porep-1000-100".into(),
            proof_kind: 1,
            registered_proof: 8,
            sector_number: 100,
            miner_id: 1000,
            vanilla_proof: c1.to_vec(),
            ..SubmitProofRequest::default()
        }
    }

    #[test]
    fn the_digest_covers_what_is_proved_not_the_id_or_priority() {
        let jobs = Jobs::new(Duration::from_secs(600));
        let a = jobs.digest(&c2(b"c1 of seed 1"));
        assert_eq!(a, jobs.digest(&c2(b"c1 of seed 1")));
        let retry = SubmitProofRequest {
            request_id: "other".into(),
            priority: 3,
            ..c2(b"c1 of seed 1")
        };
        assert_eq!(a, jobs.digest(&retry), "the id and priority are not the request");
        assert_ne!(a, jobs.digest(&c2(b"c1 of seed 2")), "a new C1");
        let other_miner = SubmitProofRequest {
            miner_id: 1001,
            ..c2(b"c1 of seed 1")
        };
        assert_ne!(a, jobs.digest(&other_miner));
        // Field boundaries count: the same bytes split differently are another request.
        let split = |v: Vec<Vec<u8>>| SubmitProofRequest {
            vanilla_proofs: v,
            ..SubmitProofRequest::default()
        };
        assert_ne!(
            jobs.digest(&split(vec![b"ab".to_vec(), b"c".to_vec()])),
            jobs.digest(&split(vec![b"a".to_vec(), b"bc".to_vec()]))
        );
        // Another daemon run keys its digests otherwise.
        assert_ne!(a, Jobs::new(Duration::from_secs(600)).digest(&c2(b"c1 of seed 1")));
    }

    #[test]
    fn a_kept_id_is_reused_only_live_or_completed_for_the_same_request() {
        let jobs = Jobs::new(Duration::from_secs(600));
        let (same, other) = (jobs.digest(&c2(b"c1")), jobs.digest(&c2(b"new c1")));
        let id = "porep-1000-100";
        assert!(matches!(jobs.known(id, &same), Known::New(None)));
        assert!(matches!(jobs.known("", &Digest::default()), Known::New(None)));

        // Live: the same request is that job; another request finds the id busy; a job being
        // cancelled is not handed to a retry.
        let live = put(&jobs, id, same, None);
        assert!(matches!(jobs.known(id, &same), Known::Same(j) if j.id == live.id));
        assert!(matches!(jobs.known(id, &other), Known::Busy(j) if j.id == live.id));
        live.cancel();
        assert!(matches!(jobs.known(id, &same), Known::New(Some((j, "being cancelled"))) if j.id == live.id));

        // Kept COMPLETED: the same request gets it, a new C1 is proved anew.
        let done = put(&jobs, id, same, Some(proved()));
        assert!(matches!(jobs.known(id, &same), Known::Same(j) if j.id == done.id));
        assert!(matches!(jobs.known(id, &other), Known::New(Some((j, _))) if j.id == done.id));

        // Kept FAILED or CANCELLED: proved anew, the identical request too.
        for (outcome, why) in [
            (Outcome::Failed("a C1 of another sector".into()), "FAILED"),
            (Outcome::Cancelled("asked".into()), "CANCELLED"),
        ] {
            let over = put(&jobs, id, same, Some(outcome));
            for d in [&same, &other] {
                assert!(matches!(jobs.known(id, d), Known::New(Some((j, w))) if j.id == over.id && w == why));
            }
        }
        // Another id is untouched.
        assert!(matches!(jobs.known("snap-1000-100", &same), Known::New(None)));
    }

    #[test]
    fn a_replaced_job_is_still_awaitable_and_its_pruning_keeps_the_new_mapping() {
        let jobs = Jobs::new(Duration::ZERO);
        let id = "snap-1000-7";
        let d = jobs.digest(&c2(b"x"));
        let failed = put(&jobs, id, d, Some(Outcome::Failed("bad".into())));
        let live = put(&jobs, id, d, None);
        assert!(jobs.get(&failed.id).is_some(), "the old job by its job_id");
        // Retention 0: the failed job is pruned; the id still names the live one.
        assert!(matches!(jobs.known(id, &d), Known::Same(j) if j.id == live.id));
        assert!(jobs.get(&failed.id).is_none());
    }
}
