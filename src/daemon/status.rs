//! What the daemon tells about itself: `GetStatus` (queues per proof kind, GPU workers and the
//! job each works for, parameter sets and their tier, totals) and the same as Prometheus text
//! for `GetMetrics` and the `--metrics-listen` endpoint.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::jobs::{Job, Jobs};
use super::proto::{srs_status::Tier, GetStatusResponse, GpuStatus, QueueStatus, SrsStatus};
use super::request::{circuit, circuit_ids};
use crate::engine::{EngineStats, WorkerStats};
use crate::filecoin::{self, ProofKind};
use crate::prover::DeviceStatus;

/// What the Filecoin engine says of itself now, once it has started.
pub struct EngineView {
    /// Its statistics.
    pub stats: EngineStats,
    /// Each backend's GPU with its memory now (`None`: the CPU).
    pub devices: Vec<Option<DeviceStatus>>,
}

impl EngineView {
    /// The view, or `None` before the first proof starts the engine. Reads device memory:
    /// call off the async threads.
    pub fn now() -> Option<Self> {
        let engine = filecoin::engine_started().then(filecoin::engine)?.ok()?;
        Some(Self {
            stats: engine.stats(),
            devices: engine.devices(),
        })
    }
}

/// The kinds in the order the status lists them, with their wire names.
const KINDS: [(ProofKind, &str); 4] = [
    (ProofKind::SealCommit, "POREP_SEAL_COMMIT"),
    (ProofKind::SnapDeals, "SNAP_DEALS_UPDATE"),
    (ProofKind::WindowPoSt, "WINDOW_POST_PARTITION"),
    (ProofKind::WinningPoSt, "WINNING_POST"),
];

/// The wire name of a proof kind.
fn kind_name(kind: ProofKind) -> &'static str {
    KINDS.iter().find(|(k, _)| *k == kind).map_or("", |(_, name)| name)
}

/// The status now. `pending`: jobs accepted and not yet in the engine (parameters and inputs
/// being prepared); `in_progress`: jobs in the engine. GPUs: one entry per backend of the
/// engine (a CPU backend as `cpu` with no memory), with the device's memory total and free and
/// the job it works for (see `working_for`). Parameter sets: HOT when loaded, COLD when only
/// their file is on the host (sets with no file are not listed).
pub fn status(jobs: &Jobs, engine: Option<&EngineView>) -> GetStatusResponse {
    let stats = engine.map(|e| &e.stats);
    // Each live job with its id in the engine while the engine has it, read once: the queues
    // and the GPUs agree.
    let live: Vec<(Arc<Job>, Option<u64>)> = (jobs.live().into_iter())
        .map(|j| {
            let in_engine = j.engine_job();
            (j, in_engine)
        })
        .collect();
    let queues = KINDS
        .iter()
        .map(|(kind, name)| {
            let of_kind = live.iter().filter(|(j, _)| j.kind == *kind);
            let in_progress = of_kind.clone().filter(|(_, in_engine)| in_engine.is_some()).count();
            QueueStatus {
                proof_kind: name.to_string(),
                pending: (of_kind.count() - in_progress) as u32,
                in_progress: in_progress as u32,
            }
        })
        .collect();
    let gpus = engine.map(|e| gpus(e, &live)).unwrap_or_default();
    let pool = stats.map(|s| &s.pool);
    GetStatusResponse {
        gpus,
        loaded_srs: parameter_sets(engine),
        queues,
        total_proofs_completed: jobs.totals.completed.load(Ordering::Relaxed),
        total_proofs_failed: jobs.totals.failed.load(Ordering::Relaxed),
        uptime_seconds: jobs.started.elapsed().as_secs(),
        pinned_memory_bytes: pool.map_or(0, |p| (p.bytes_in_use + p.bytes_idle) as u64),
        pinned_memory_limit_bytes: stats.map_or(0, |s| s.budget_limit as u64),
    }
}

/// One entry per backend: its GPU, or the backend's name where it has none; with the job it
/// works for.
fn gpus(engine: &EngineView, live: &[(Arc<Job>, Option<u64>)]) -> Vec<GpuStatus> {
    let current = working_for(engine.devices.len(), &engine.stats.workers, live);
    (engine.devices.iter().enumerate())
        .map(|(b, device)| {
            let mut gpu = match device {
                Some(d) => GpuStatus {
                    ordinal: d.ordinal as u32,
                    name: d.name.clone(),
                    vram_total_bytes: d.total_bytes as u64,
                    vram_free_bytes: d.free_bytes as u64,
                    ..GpuStatus::default()
                },
                None => GpuStatus {
                    ordinal: b as u32,
                    name: (engine.stats.workers.iter().find(|w| w.backend == b))
                        .map_or("cpu", |w| w.backend_name)
                        .to_string(),
                    ..GpuStatus::default()
                },
            };
            if let Some(job) = current.get(b).copied().flatten() {
                gpu.current_job_id = job.id.clone();
                gpu.current_proof_kind = kind_name(job.kind).to_string();
            }
            gpu
        })
        .collect()
}

/// The daemon job each of `backends` works for, of the `live` jobs (with their ids in the
/// engine while it has them): the job whose partition a GPU worker of that backend proves now
/// ([`WorkerStats::proving_job`]). Between proofs, one backend works for the first job in the
/// engine's order (the highest priority, then the one that reached the engine first: its next
/// partition is proved next); several backends share the jobs, so one between proofs names
/// none.
fn working_for<'a>(
    backends: usize,
    workers: &[WorkerStats],
    live: &'a [(Arc<Job>, Option<u64>)],
) -> Vec<Option<&'a Job>> {
    let in_engine = || live.iter().filter(|(_, id)| id.is_some());
    let first = in_engine()
        .map(|(j, _)| &**j)
        .min_by_key(|j| (std::cmp::Reverse(j.priority), j.queued_at()));
    (0..backends)
        .map(|b| {
            let proving = (workers.iter().filter(|w| w.backend == b)).find_map(|w| w.proving_job);
            let named = proving.and_then(|id| in_engine().find(|(_, e)| *e == Some(id)).map(|(j, _)| &**j));
            named.or(if backends == 1 { first } else { None })
        })
        .collect()
}

/// The parameter sets loaded or on the host. HOT: ready to prove without a load (resident on a
/// GPU, or loaded in host memory when the engine proves on the CPU only); WARM: in host memory,
/// to be uploaded to a GPU; COLD: only the file. `ref_count`: the engine's partitions (pending
/// or in flight) that use the set.
fn parameter_sets(engine: Option<&EngineView>) -> Vec<SrsStatus> {
    let on_gpus = engine.is_some_and(|e| e.devices.iter().any(Option::is_some));
    let mut out = Vec::new();
    for id in circuit_ids() {
        let Ok(kind) = circuit(&id) else { continue };
        let in_engine = |params: &crate::Parameters| {
            engine.and_then(|e| e.stats.params.iter().find(|s| s.id == params.id()).cloned())
        };
        let (tier, size, users) = match filecoin::loaded_parameters(kind).ok().flatten() {
            Some(params) => {
                let set = in_engine(&params);
                // On a GPU's device or streamed from page-locked host memory: either proves
                // without a load.
                let resident = set
                    .as_ref()
                    .is_some_and(|s| s.resident_backends + s.streamed_backends > 0);
                let tier = if resident || !on_gpus { Tier::Hot } else { Tier::Warm };
                // A set kept on the GPUs without its host copy (params_on_device): its size there.
                let size = if params.has_host_copy() {
                    params.host_bytes()
                } else {
                    params.device_bytes()
                };
                (tier, size as u64, set.map_or(0, |s| s.partitions))
            }
            None => {
                let on_disk = filecoin::parameter_path(kind)
                    .ok()
                    .and_then(|p| std::fs::metadata(p).ok());
                let Some(meta) = on_disk else { continue };
                (Tier::Cold, meta.len(), 0)
            }
        };
        out.push(SrsStatus {
            circuit_id: id,
            tier: tier as i32,
            size_bytes: size,
            ref_count: users as u32,
        });
    }
    out
}

/// The Prometheus text now ([`metrics`] of the [`status`]). Reads device memory: call off the
/// async threads.
pub fn metrics_now(jobs: &Jobs) -> String {
    let engine = EngineView::now();
    let s = status(jobs, engine.as_ref());
    metrics(&s, jobs, engine.as_ref())
}

/// Per loaded parameter set the engine holds, on an engine with GPUs: its circuit id and the
/// GPUs holding it on the device and streamed.
fn set_placements(engine: Option<&EngineView>) -> Vec<(String, usize, usize)> {
    let Some(e) = engine.filter(|e| e.devices.iter().any(Option::is_some)) else {
        return Vec::new();
    };
    circuit_ids()
        .filter_map(|id| {
            let params = filecoin::loaded_parameters(circuit(&id).ok()?).ok().flatten()?;
            let set = e.stats.params.iter().find(|s| s.id == params.id())?;
            Some((id, set.resident_backends, set.streamed_backends))
        })
        .collect()
}

/// The status and the engine's statistics in Prometheus' text exposition format.
pub fn metrics(status: &GetStatusResponse, jobs: &Jobs, engine: Option<&EngineView>) -> String {
    let stats = engine.map(|e| &e.stats);
    let mut m = Metrics(String::new());
    m.one(
        "cuzk_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
        status.uptime_seconds,
    );
    let totals = [
        ("completed", jobs.totals.completed.load(Ordering::Relaxed)),
        ("failed", jobs.totals.failed.load(Ordering::Relaxed)),
        ("cancelled", jobs.totals.cancelled.load(Ordering::Relaxed)),
    ];
    m.head("cuzk_proofs_total", "counter", "Proofs by outcome since the start.");
    for (outcome, n) in totals {
        m.row("cuzk_proofs_total", &format!("outcome=\"{outcome}\""), n);
    }
    m.head(
        "cuzk_queue_jobs",
        "gauge",
        "Jobs per proof kind and state (pending: being prepared; in_progress: in the engine).",
    );
    for q in &status.queues {
        m.row(
            "cuzk_queue_jobs",
            &format!("kind=\"{}\",state=\"pending\"", q.proof_kind),
            q.pending,
        );
        m.row(
            "cuzk_queue_jobs",
            &format!("kind=\"{}\",state=\"in_progress\"", q.proof_kind),
            q.in_progress,
        );
    }
    m.head(
        "cuzk_parameter_set_bytes",
        "gauge",
        "Parameter sets by circuit id and tier (hot: ready to prove, warm: in host memory, cold: on disk).",
    );
    for s in &status.loaded_srs {
        let tier = match Tier::try_from(s.tier) {
            Ok(Tier::Hot) => "hot",
            Ok(Tier::Warm) => "warm",
            _ => "cold",
        };
        m.row(
            "cuzk_parameter_set_bytes",
            &format!("circuit_id=\"{}\",tier=\"{tier}\"", s.circuit_id),
            s.size_bytes,
        );
    }
    let placed = set_placements(engine);
    if !placed.is_empty() {
        m.head(
            "cuzk_parameter_set_gpus",
            "gauge",
            "GPUs holding each loaded parameter set, by placement: device (on the GPU) or streamed (in page-locked host memory, crossing PCIe every proof); each GPU chooses from its memory.",
        );
        for (id, device, streamed) in placed {
            for (placement, n) in [("device", device), ("streamed", streamed)] {
                m.row(
                    "cuzk_parameter_set_gpus",
                    &format!("circuit_id=\"{id}\",placement=\"{placement}\""),
                    n as u64,
                );
            }
        }
    }
    let gpus: Vec<_> = status.gpus.iter().filter(|g| g.vram_total_bytes > 0).collect();
    if !gpus.is_empty() {
        m.head(
            "cuzk_gpu_memory_bytes",
            "gauge",
            "Device memory per GPU, total and free.",
        );
        for g in gpus {
            let gpu = format!("gpu=\"{}\",name=\"{}\"", g.ordinal, g.name.replace(['"', '\\'], "_"));
            m.row(
                "cuzk_gpu_memory_bytes",
                &format!("{gpu},state=\"total\""),
                g.vram_total_bytes,
            );
            m.row(
                "cuzk_gpu_memory_bytes",
                &format!("{gpu},state=\"free\""),
                g.vram_free_bytes,
            );
        }
    }
    let Some(s) = stats else { return m.0 };
    let gauges: [(&str, &str, u64); 10] = [
        (
            "cuzk_engine_partitions_pending",
            "Partitions submitted and not yet dispatched.",
            s.pending as u64,
        ),
        (
            "cuzk_engine_partitions_in_synthesis",
            "Partitions being synthesized.",
            s.in_synthesis as u64,
        ),
        (
            "cuzk_engine_partitions_waiting",
            "Synthesized partitions waiting for a GPU worker.",
            s.waiting as u64,
        ),
        (
            "cuzk_engine_partitions_on_gpu",
            "Partitions being proved.",
            s.on_gpu as u64,
        ),
        (
            "cuzk_engine_jobs_active",
            "Engine jobs not yet over.",
            s.jobs_active as u64,
        ),
        (
            "cuzk_engine_budget_used_bytes",
            "Bytes reserved in the memory budget.",
            s.budget_used as u64,
        ),
        (
            "cuzk_engine_budget_limit_bytes",
            "The memory budget.",
            s.budget_limit as u64,
        ),
        (
            "cuzk_engine_params_host_bytes",
            "Host bytes of the parameter sets the engine holds.",
            s.params_host_bytes as u64,
        ),
        (
            "cuzk_pool_bytes_in_use",
            "Pinned pool bytes checked out.",
            s.pool.bytes_in_use as u64,
        ),
        (
            "cuzk_pool_bytes_idle",
            "Pinned pool bytes idle.",
            s.pool.bytes_idle as u64,
        ),
    ];
    for (name, help, v) in gauges {
        m.one(name, "gauge", help, v);
    }
    let counters: [(&str, &str, u64); 10] = [
        (
            "cuzk_engine_jobs_done_total",
            "Engine jobs whose proofs all came back.",
            s.jobs_done,
        ),
        (
            "cuzk_engine_jobs_failed_total",
            "Engine jobs failed or cancelled.",
            s.jobs_failed,
        ),
        (
            "cuzk_engine_partitions_done_total",
            "Partitions proved.",
            s.partitions_done,
        ),
        (
            "cuzk_engine_partitions_failed_total",
            "Partitions whose synthesis or proof failed.",
            s.partitions_failed,
        ),
        (
            "cuzk_engine_partitions_dropped_total",
            "Partitions dropped with their job.",
            s.partitions_dropped,
        ),
        (
            "cuzk_engine_urgent_dispatched_total",
            "Urgent (Winning PoSt) partitions dispatched.",
            s.urgent_dispatched,
        ),
        (
            "cuzk_witness_generated_total",
            "Partitions whose witness a native generator wrote.",
            s.witness.generated,
        ),
        (
            "cuzk_witness_generator_refused_total",
            "Native generators turned off for a compiled circuit (a wrong witness).",
            s.witness.generator_refused,
        ),
        (
            "cuzk_witness_generator_input_errors_total",
            "Partitions failed because a native generator refused their input (a malformed request); the generator stays on.",
            s.witness.generator_input_errors,
        ),
        (
            "cuzk_witness_input_errors_total",
            "Partitions failed because their inputs were of another shape than their parameters (a malformed request); the witness path stays on.",
            s.witness.input_errors,
        ),
    ];
    for (name, help, v) in counters {
        m.one(name, "counter", help, v);
    }
    m.head(
        "cuzk_worker_partitions_total",
        "counter",
        "Partitions proved per GPU worker.",
    );
    for (i, w) in s.workers.iter().enumerate() {
        let labels = format!("worker=\"{i}\",backend=\"{}\"", w.backend_name);
        m.row("cuzk_worker_partitions_total", &labels, w.partitions);
    }
    m.0
}

struct Metrics(String);

impl Metrics {
    fn head(&mut self, name: &str, typ: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {typ}");
    }

    fn row(&mut self, name: &str, labels: &str, v: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{name}{{{labels}}} {v}");
    }

    fn one(&mut self, name: &str, typ: &str, help: &str, v: u64) {
        self.head(name, typ, help);
        let _ = writeln!(self.0, "{name} {v}");
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::daemon::jobs::Digest;

    /// A GPU worker of the engine's, proving a partition of engine job `proving` or idle.
    fn worker(backend: usize, proving: Option<u64>) -> WorkerStats {
        WorkerStats {
            backend,
            backend_name: "cuda",
            busy: Duration::ZERO,
            busy_fraction: 0.0,
            partitions: 0,
            proving_job: proving,
            lost: false,
        }
    }

    #[test]
    fn each_backend_works_for_the_job_its_worker_proves_or_one_for_the_first_in_order() {
        let t0 = Instant::now();
        let job = |id: &str, kind, priority, queued: Option<u64>| {
            let at = queued.map(|ms| t0 + Duration::from_millis(ms));
            Job::for_test(id, "", Digest::default(), kind, priority, at)
        };
        let c2_old = job("c2-old", ProofKind::SealCommit, 100, Some(1));
        let c2_new = job("c2-new", ProofKind::SealCommit, 100, Some(2));
        let winning = job("winning", ProofKind::WinningPoSt, 300, Some(3));
        let preparing = job("preparing", ProofKind::WinningPoSt, 300, None);
        let ids = |w: Vec<Option<&Job>>| w.iter().map(|j| j.map(|j| j.id.clone())).collect::<Vec<_>>();
        let name = |s: &str| Some(s.to_string());
        let idle = [worker(0, None)];

        // Nothing in the engine: the backend works for no job (a preparing one is not yet its).
        assert_eq!(ids(working_for(1, &idle, &[(preparing.clone(), None)])), [None]);
        // One backend between proofs, same priority: the one that reached the engine first.
        let live = [
            (c2_new.clone(), Some(12)),
            (c2_old.clone(), Some(11)),
            (preparing, None),
        ];
        assert_eq!(ids(working_for(1, &idle, &live)), [name("c2-old")]);
        // A worker proving names its job, whatever the order says.
        assert_eq!(ids(working_for(1, &[worker(0, Some(12))], &live)), [name("c2-new")]);
        // A higher priority goes first (Winning PoSt before C2).
        let live = [(c2_old.clone(), Some(11)), (winning.clone(), Some(13))];
        assert_eq!(ids(working_for(1, &idle, &live)), [name("winning")]);
        // Several backends: each names the job its worker proves; one between proofs none (the
        // engine shares the jobs). An engine job no daemon job has (a Filecoin retry): none.
        let workers = [worker(0, Some(11)), worker(1, None), worker(1, None)];
        assert_eq!(ids(working_for(2, &workers, &live)), [name("c2-old"), None]);
        let workers = [worker(0, Some(99)), worker(1, None), worker(1, Some(13))];
        assert_eq!(ids(working_for(2, &workers, &live)), [None, name("winning")]);
        assert_eq!(kind_name(winning.kind), "WINNING_POST");
        assert_eq!(kind_name(c2_old.kind), "POREP_SEAL_COMMIT");
    }
}
