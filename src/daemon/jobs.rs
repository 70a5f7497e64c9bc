//! The daemon's jobs: each request's work submitted to the Filecoin engine on a blocking
//! thread, its outcome kept for the callers that await it, `request_id` as the idempotency key
//! (a repeated id while its job is live or recently done is that job), cancellation before and
//! during proving, and the drain at shutdown.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

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

/// One job.
pub struct Job {
    /// The daemon's id (`job_id` on the wire).
    pub id: String,
    /// The caller's idempotency key (may be empty).
    pub request_id: String,
    /// The proof kind.
    pub kind: ProofKind,
    /// When it was accepted.
    pub accepted: Instant,
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

    /// Whether the engine has it (not preparing, not over).
    pub fn is_proving(&self) -> bool {
        matches!(*self.stage.lock().unwrap_or_else(|p| p.into_inner()), Stage::Proving(_))
    }

    /// How long it waited before the engine had it.
    pub fn queue_wait(&self) -> Duration {
        let queued = *self.queued.lock().unwrap_or_else(|p| p.into_inner());
        queued.map(|q| q - self.accepted).unwrap_or_default()
    }

    /// Cancels it; returns whether it was live (preparing or proving).
    pub fn cancel(&self) -> bool {
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
    /// Totals since the start.
    pub totals: Totals,
}

/// Why a job was not accepted.
#[derive(Debug)]
pub enum NotAccepted {
    /// The daemon is shutting down.
    ShuttingDown,
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
            totals: Totals::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job of `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.lock().by_id.get(id).cloned()
    }

    /// The job live or recently done under `request_id`.
    pub fn by_request(&self, request_id: &str) -> Option<Arc<Job>> {
        let mut table = self.lock();
        self.prune(&mut table);
        let id = table.by_request.get(request_id)?;
        table.by_id.get(id).cloned()
    }

    /// Accepts `work` under `request_id` at engine priority `priority`, or returns the job
    /// already known under that request id (the bool says it is new). Its proving runs on a
    /// blocking thread of the runtime.
    pub fn submit(
        self: &Arc<Self>,
        request_id: String,
        work: Work,
        priority: i32,
    ) -> Result<(Arc<Job>, bool), NotAccepted> {
        let job = {
            let mut table = self.lock();
            self.prune(&mut table);
            if let Some(job) = table.by_request.get(&request_id).and_then(|id| table.by_id.get(id)) {
                return Ok((job.clone(), false));
            }
            if !self.accepting.load(Ordering::SeqCst) {
                return Err(NotAccepted::ShuttingDown);
            }
            let id = format!("{}-{}", self.run, self.next.fetch_add(1, Ordering::Relaxed));
            let job = Arc::new(Job {
                id: id.clone(),
                request_id: request_id.clone(),
                kind: work.kind(),
                accepted: Instant::now(),
                stage: Mutex::new(Stage::Preparing { cancel: false }),
                queued: Mutex::new(None),
                outcome: watch::channel(None).0,
            });
            if !request_id.is_empty() {
                table.by_request.insert(request_id, id.clone());
            }
            table.by_id.insert(id, job.clone());
            job
        };
        log::info!(
            "job {}: accepted {:?} at priority {priority} (request_id {:?})",
            job.id,
            job.kind,
            job.request_id
        );
        let (jobs, j) = (self.clone(), job.clone());
        tokio::task::spawn_blocking(move || {
            let outcome = prove(&j, &work, priority);
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

/// Submits the work, unless cancelled meanwhile, and waits for the verified proof.
fn prove(job: &Job, work: &Work, priority: i32) -> Outcome {
    let submitted = match work.submit(priority) {
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
