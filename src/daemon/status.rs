//! What the daemon tells about itself: `GetStatus` (queues per proof kind, GPU workers,
//! parameter sets and their tier, totals) and the same as Prometheus text for `GetMetrics`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::jobs::Jobs;
use super::proto::{srs_status::Tier, GetStatusResponse, GpuStatus, QueueStatus, SrsStatus};
use super::request::{circuit, circuit_ids};
use crate::engine::EngineStats;
use crate::filecoin::{self, ProofKind};

/// The kinds in the order the status lists them, with their wire names.
const KINDS: [(ProofKind, &str); 4] = [
    (ProofKind::SealCommit, "POREP_SEAL_COMMIT"),
    (ProofKind::SnapDeals, "SNAP_DEALS_UPDATE"),
    (ProofKind::WindowPoSt, "WINDOW_POST_PARTITION"),
    (ProofKind::WinningPoSt, "WINNING_POST"),
];

/// The status now. `pending`: jobs accepted and not yet in the engine (parameters and inputs
/// being prepared); `in_progress`: jobs in the engine. Parameter sets: HOT when loaded, COLD
/// when only their file is on the host (sets with no file are not listed).
pub fn status(jobs: &Jobs, started: Instant, stats: Option<&EngineStats>) -> GetStatusResponse {
    let live = jobs.live();
    let queues = KINDS
        .iter()
        .map(|(kind, name)| {
            let of_kind = live.iter().filter(|j| j.kind == *kind);
            let in_progress = of_kind.clone().filter(|j| j.is_proving()).count();
            QueueStatus {
                proof_kind: name.to_string(),
                pending: (of_kind.count() - in_progress) as u32,
                in_progress: in_progress as u32,
            }
        })
        .collect();
    let gpus = stats
        .map(|s| {
            s.workers
                .iter()
                .map(|w| GpuStatus {
                    ordinal: w.backend as u32,
                    name: w.backend_name.to_string(),
                    ..GpuStatus::default()
                })
                .collect()
        })
        .unwrap_or_default();
    let pool = stats.map(|s| &s.pool);
    GetStatusResponse {
        gpus,
        loaded_srs: parameter_sets(),
        queues,
        total_proofs_completed: jobs.totals.completed.load(Ordering::Relaxed),
        total_proofs_failed: jobs.totals.failed.load(Ordering::Relaxed),
        uptime_seconds: started.elapsed().as_secs(),
        pinned_memory_bytes: pool.map_or(0, |p| (p.bytes_in_use + p.bytes_idle) as u64),
        pinned_memory_limit_bytes: stats.map_or(0, |s| s.budget_limit as u64),
    }
}

/// The parameter sets loaded or on the host.
fn parameter_sets() -> Vec<SrsStatus> {
    let mut out = Vec::new();
    for id in circuit_ids() {
        let Ok(kind) = circuit(&id) else { continue };
        let loaded = filecoin::parameters_loaded(kind).ok().flatten();
        let on_disk = filecoin::parameter_path(kind)
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len());
        let (tier, size) = match (loaded, on_disk) {
            (Some(bytes), _) => (Tier::Hot, bytes as u64),
            (None, Some(len)) => (Tier::Cold, len),
            (None, None) => continue,
        };
        out.push(SrsStatus {
            circuit_id: id,
            tier: tier as i32,
            size_bytes: size,
            ref_count: 0,
        });
    }
    out
}

/// The status and the engine's statistics in Prometheus' text exposition format.
pub fn metrics(status: &GetStatusResponse, jobs: &Jobs, stats: Option<&EngineStats>) -> String {
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
        "Parameter sets by circuit id and tier (hot: loaded, cold: on disk).",
    );
    for s in &status.loaded_srs {
        let tier = if s.tier == Tier::Hot as i32 { "hot" } else { "cold" };
        m.row(
            "cuzk_parameter_set_bytes",
            &format!("circuit_id=\"{}\",tier=\"{tier}\"", s.circuit_id),
            s.size_bytes,
        );
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
    let counters: [(&str, &str, u64); 6] = [
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
