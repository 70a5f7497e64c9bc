//! What the bench prints: every line to stdout (and `--out`'s sector_bench.md), one JSON
//! event per partition, sector and stream (sector_bench.jsonl), each stream's summary row.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::args::StreamSpec;
use crate::ok;

pub(crate) fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

pub(crate) struct SectorRow {
    pub(crate) done_at: Duration,
    pub(crate) wall: Duration,
    pub(crate) busy: f64,
    pub(crate) synthesis: Vec<Duration>,
    pub(crate) window_rss: usize,
    pub(crate) hwm: usize,
    pub(crate) failed: usize,
}

/// Where the lines and events go: stdout (flushed at once) and, with `--out`, appended to
/// DIR/sector_bench.md and DIR/sector_bench.jsonl as they happen.
pub(crate) struct Out {
    md: Option<std::fs::File>,
    jsonl: Option<std::fs::File>,
}

impl Out {
    pub(crate) fn open(dir: Option<&Path>) -> Self {
        let Some(dir) = dir else {
            return Self { md: None, jsonl: None };
        };
        ok(&format!("--out {}", dir.display()), std::fs::create_dir_all(dir));
        let open = |name: &str| {
            let path = dir.join(name);
            ok(
                &format!("opening {}", path.display()),
                std::fs::OpenOptions::new().create(true).append(true).open(&path),
            )
        };
        Self {
            md: Some(open("sector_bench.md")),
            jsonl: Some(open("sector_bench.jsonl")),
        }
    }

    pub(crate) fn line(&mut self, s: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{s}");
        let _ = stdout.flush();
        if let Some(f) = &mut self.md {
            if let Err(e) = writeln!(f, "{s}") {
                eprintln!("warning: writing sector_bench.md: {e}");
            }
        }
    }

    pub(crate) fn event(&mut self, v: serde_json::Value) {
        if let Some(f) = &mut self.jsonl {
            if let Err(e) = writeln!(f, "{v}") {
                eprintln!("warning: writing sector_bench.jsonl: {e}");
            }
        }
    }
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub(crate) fn mean(v: &[Duration]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64)
}

/// What one stream measured.
pub(crate) struct StreamResult {
    pub(crate) spec: StreamSpec,
    pub(crate) rows: Vec<Option<SectorRow>>,
    pub(crate) failed_sectors: usize,
    pub(crate) wall: Duration,
    pub(crate) gpu_busy: f64,
    pub(crate) peak_rss: usize,
    pub(crate) bound: usize,
    pub(crate) alone: Duration,
    pub(crate) under_load: Option<Duration>,
    pub(crate) proof_ema: Duration,
    /// "resident", "streamed", "host" (the CPU backend), "unknown".
    pub(crate) placement: &'static str,
    pub(crate) over_limit: bool,
    pub(crate) evaluations: Option<(usize, usize)>,
    /// Whether its proofs equal the first stream's, sector by sector (None for the first).
    pub(crate) same_as_first: Option<bool>,
    /// `--deadline`: what it measured of the deadline under load.
    pub(crate) deadline: Option<crate::deadline::DeadlineResult>,
}

impl StreamResult {
    /// The sectors finished, in the order they finished.
    pub(crate) fn finished(&self) -> Vec<&SectorRow> {
        let mut v: Vec<&SectorRow> = self.rows.iter().flatten().collect();
        v.sort_by_key(|r| r.done_at);
        v
    }

    /// Mean wall of the sectors after the first to finish (None with fewer than two).
    pub(crate) fn steady(&self) -> Option<f64> {
        let later: Vec<Duration> = self.finished().iter().skip(1).map(|r| r.wall).collect();
        mean(&later)
    }

    pub(crate) fn synthesis(&self) -> (Option<f64>, Option<f64>) {
        let done = self.finished();
        let all: Vec<Duration> = done.iter().flat_map(|r| r.synthesis.iter().copied()).collect();
        let later: Vec<Duration> = done.iter().skip(1).flat_map(|r| r.synthesis.iter().copied()).collect();
        (mean(&all), mean(&later))
    }

    pub(crate) fn header() -> [&'static str; 2] {
        [
            "| stream | path | device limit | sectors | s / sector after the first | first sector s | GPU busy | synthesis s / partition (mean; after the first sector) | peak RSS / B GiB | Winning alone / under load / bound s | parameters | evaluations device / host |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    }

    pub(crate) fn row(&self, index: usize, budget: usize) -> String {
        let s = &self.spec;
        let fmt1 = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{x:.1}"));
        let done = self.finished();
        let (all, later) = self.synthesis();
        let synthesis = match (all, later) {
            (Some(a), Some(l)) => format!("{a:.2}; {l:.2}"),
            (Some(a), None) => format!("{a:.2}; n/a"),
            _ => "n/a".into(),
        };
        let under = self
            .under_load
            .map_or("not submitted".to_string(), |l| format!("{:.3}", secs(l)));
        let bound = secs(self.proof_ema + self.alone);
        format!(
            "| {index} | {} | {} | {}{} | {} | {} | {:.0}% | {synthesis} | {:.2} / {:.2}{} | {:.3} / {under} / {bound:.3} | {}{} | {} |",
            s.path(),
            s.limit_gib.map_or("none".to_string(), |g| format!("{g} GiB")),
            done.len(),
            if self.failed_sectors > 0 {
                format!(" ({} failed)", self.failed_sectors)
            } else {
                String::new()
            },
            fmt1(self.steady()),
            fmt1(done.first().map(|r| secs(r.wall))),
            self.gpu_busy * 100.0,
            gib(self.peak_rss),
            gib(budget),
            if self.peak_rss > self.bound { " OVER B + constant" } else { "" },
            secs(self.alone),
            self.placement,
            if self.over_limit { " OVER THE LIMIT" } else { "" },
            self.evaluations
                .map_or("n/a".to_string(), |(d, h)| format!("{d} / {h}")),
        )
    }
}

/// Appends stream `index`'s summary (its row, under the table's header) to the report.
pub(crate) fn summary_event(out: &mut Out, index: usize, r: &StreamResult, budget: usize) {
    let (all, later) = r.synthesis();
    let done = r.finished();
    out.event(json!({
        "event": "stream", "stream": index, "spec": r.spec.to_string(), "path": r.spec.path(),
        "limit_gib": r.spec.limit_gib, "sectors": done.len(), "failed_sectors": r.failed_sectors,
        "wall_s": secs(r.wall), "steady_s_per_sector": r.steady(),
        "first_sector_s": done.first().map(|s| secs(s.wall)), "gpu_busy": r.gpu_busy,
        "synthesis_s_per_partition": all, "synthesis_s_per_partition_after_first": later,
        "peak_rss_bytes": r.peak_rss, "budget_bytes": budget, "bound_bytes": r.bound,
        "winning_alone_s": secs(r.alone), "winning_under_load_s": r.under_load.map(secs),
        "winning_bound_s": secs(r.proof_ema + r.alone), "parameters": r.placement,
        "over_limit": r.over_limit,
        "evaluations_device": r.evaluations.map(|e| e.0), "evaluations_host": r.evaluations.map(|e| e.1),
        "proofs_same_as_first": r.same_as_first,
    }));
}
