//! The `cuzk.v1.ProvingEngine` service: each RPC on the job table and the Filecoin engine.
//! Bad requests are `InvalidArgument` naming the field; a job's own failure is a FAILED result;
//! a `request_id` that names a live job of another request is `AlreadyExists`.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::jobs::{Digest, Job, Jobs, Known, NotAccepted, Outcome};
use super::proto::await_proof_response::Status as Result;
use super::proto::proving_engine_server::ProvingEngine;
use super::proto::*;
use super::request::{circuit, decode, engine_priority};
use super::status;
use crate::filecoin;

/// The service's state.
pub struct Service {
    jobs: Arc<Jobs>,
}

/// A request seen against the job table, before its work is decoded.
enum Seen {
    /// Its `request_id` names a job to answer with.
    Known(std::result::Result<Arc<Job>, Status>),
    /// To be proved: the request, its digest.
    New(Box<SubmitProofRequest>, Digest),
}

impl Service {
    /// A service over `jobs`.
    pub fn new(jobs: Arc<Jobs>) -> Self {
        Self { jobs }
    }

    async fn submit(&self, req: SubmitProofRequest) -> std::result::Result<(Arc<Job>, u32), Status> {
        // The digest of a 32 GiB C1 wrapper (~50 MB) and its decoding are not for the async
        // threads.
        let jobs = self.jobs.clone();
        let seen = tokio::task::spawn_blocking(move || seen(&jobs, req))
            .await
            .map_err(|e| Status::internal(format!("reading the request: {e}")))?;
        let (req, digest) = match seen {
            Seen::Known(job) => return job.map(|j| (j, 0)),
            Seen::New(req, digest) => (req, digest),
        };
        let (request_id, priority) = (req.request_id.clone(), req.priority);
        let work = tokio::task::spawn_blocking(move || decode(*req))
            .await
            .map_err(|e| Status::internal(format!("decoding the request: {e}")))?
            .map_err(Status::invalid_argument)?;
        let priority = engine_priority(priority, work.kind()).map_err(Status::invalid_argument)?;
        let position = self.jobs.live().len() as u32;
        match self.jobs.submit(request_id, digest, work, priority) {
            Ok((job, _)) => Ok((job, position)),
            Err(NotAccepted::ShuttingDown) => Err(Status::unavailable("cuzk-daemon is shutting down")),
            Err(NotAccepted::RequestIdBusy(job)) => Err(busy(&job)),
        }
    }

    fn job(&self, id: &str) -> std::result::Result<Arc<Job>, Status> {
        if id.is_empty() {
            return Err(Status::invalid_argument("job_id: missing"));
        }
        self.jobs.get(id).ok_or_else(|| {
            Status::not_found(format!(
                "job_id: {id:?} is not a job of this daemon (finished jobs are kept for a while, then forgotten)"
            ))
        })
    }
}

/// `req` against the job table: a job its `request_id` names for it (or a refusal), or the
/// request to prove with its digest.
fn seen(jobs: &Jobs, req: SubmitProofRequest) -> Seen {
    if req.request_id.is_empty() {
        return Seen::New(Box::new(req), Digest::default());
    }
    let digest = jobs.digest(&req);
    match jobs.known(&req.request_id, &digest) {
        Known::Same(job) => {
            log::info!(
                "job {}: request_id {:?} again for the same request: that job",
                job.id,
                req.request_id
            );
            Seen::Known(Ok(job))
        }
        Known::Busy(job) => Seen::Known(Err(busy(&job))),
        Known::New(_) => Seen::New(Box::new(req), digest),
    }
}

/// The refusal of a request whose `request_id` names `job`, live, of another request.
fn busy(job: &Job) -> Status {
    log::warn!(
        "request_id {:?}: refused, job {} of another request under it is still live",
        job.request_id,
        job.id
    );
    Status::already_exists(format!(
        "request_id: {:?} names job {}, still live for another request (other inputs); \
         cancel it (CancelProof) or wait for it to end, then send this one again",
        job.request_id, job.id
    ))
}

/// The reply for `job` after waiting at most `timeout`.
async fn answer(job: &Job, timeout: Option<Duration>) -> AwaitProofResponse {
    let mut reply = AwaitProofResponse {
        job_id: job.id.clone(),
        ..AwaitProofResponse::default()
    };
    let Some(outcome) = job.outcome(timeout).await else {
        reply.status = Result::Timeout as i32;
        reply.error_message = format!(
            "not done within {} ms (the job goes on)",
            timeout.unwrap_or_default().as_millis()
        );
        return reply;
    };
    reply.queue_wait_ms = job.queue_wait().as_millis() as u64;
    reply.total_ms = job.accepted.elapsed().as_millis() as u64;
    match &*outcome {
        Outcome::Proved(out) => {
            reply.status = Result::Completed as i32;
            reply.proof = out.proof.clone();
            reply.srs_load_ms = out.report.params_load.as_millis() as u64;
            reply.synthesis_ms = out.report.circuits.as_millis() as u64;
            reply.gpu_compute_ms = out.report.proving.as_millis() as u64;
        }
        Outcome::Cancelled(why) => {
            reply.status = Result::Cancelled as i32;
            reply.error_message = why.clone();
        }
        Outcome::Failed(why) => {
            reply.status = Result::Failed as i32;
            reply.error_message = why.clone();
        }
    }
    reply
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> std::result::Result<Response<SubmitProofResponse>, Status> {
        let (job, queue_position) = self.submit(request.into_inner()).await?;
        Ok(Response::new(SubmitProofResponse {
            job_id: job.id.clone(),
            queue_position,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> std::result::Result<Response<AwaitProofResponse>, Status> {
        let req = request.into_inner();
        let job = self.job(&req.job_id)?;
        let timeout = (req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms));
        Ok(Response::new(answer(&job, timeout).await))
    }

    async fn prove(&self, request: Request<ProveRequest>) -> std::result::Result<Response<ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("submit: missing"))?;
        let (job, _) = self.submit(submit).await?;
        Ok(Response::new(ProveResponse {
            result: Some(answer(&job, None).await),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> std::result::Result<Response<CancelProofResponse>, Status> {
        let job = self.job(&request.into_inner().job_id)?;
        let was_running = job.cancel();
        log::info!("job {}: cancel asked (was running: {was_running})", job.id);
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<GetStatusRequest>,
    ) -> std::result::Result<Response<GetStatusResponse>, Status> {
        let jobs = self.jobs.clone();
        let reply = tokio::task::spawn_blocking(move || status::status(&jobs, status::EngineView::now().as_ref()))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(reply))
    }

    async fn get_metrics(
        &self,
        _: Request<GetMetricsRequest>,
    ) -> std::result::Result<Response<GetMetricsResponse>, Status> {
        let jobs = self.jobs.clone();
        let text = tokio::task::spawn_blocking(move || status::metrics_now(&jobs))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(GetMetricsResponse { prometheus_text: text }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> std::result::Result<Response<PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let kind = circuit(&id).map_err(Status::invalid_argument)?;
        let took = tokio::task::spawn_blocking(move || filecoin::preload_parameters(kind))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::failed_precondition(format!("circuit_id {id}: {e}")))?;
        log::info!("parameters {id}: loaded in {took:?}");
        Ok(Response::new(PreloadSrsResponse {
            already_loaded: took.is_zero(),
            load_time_ms: took.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> std::result::Result<Response<EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let kind = circuit(&id).map_err(Status::invalid_argument)?;
        let engine = filecoin::engine_started().then(filecoin::engine).and_then(|e| e.ok());
        let freed = filecoin::evict_parameters(kind, engine).map_err(|e| Status::invalid_argument(e.to_string()))?;
        log::info!("parameters {id}: evicted ({freed:?} bytes)");
        Ok(Response::new(EvictSrsResponse {
            was_loaded: freed.is_some(),
            freed_bytes: freed.unwrap_or(0) as u64,
        }))
    }
}
