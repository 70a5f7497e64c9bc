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

/// Seconds a sector in the steady state: the partitions proved after the first sector finished
/// (at `first_done`), over the time from then to the last of them, times `pps` (None when none
/// was proved after it). Not the mean wall of the later sectors: a batch that proves the first
/// sector's last partitions also proves some of the second's, and those partitions' work lies
/// before the second sector's wall begins (at four a batch and ten a sector that made 24 GiB
/// streams look up to 10% faster than their rate).
pub(crate) fn steady_rate(first_done: Duration, proved_at: &[Duration], pps: usize) -> Option<f64> {
    let later: Vec<Duration> = proved_at.iter().copied().filter(|&t| t > first_done).collect();
    let last = later.iter().max()?;
    Some(secs(*last - first_done) / later.len() as f64 * pps as f64)
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
    /// Each partition's proof time from the stream's start, in the order they were reported.
    pub(crate) proved_at: Vec<Duration>,
    /// Partitions a sector.
    pub(crate) pps: usize,
}

impl StreamResult {
    /// The sectors finished, in the order they finished.
    pub(crate) fn finished(&self) -> Vec<&SectorRow> {
        let mut v: Vec<&SectorRow> = self.rows.iter().flatten().collect();
        v.sort_by_key(|r| r.done_at);
        v
    }

    /// Seconds a sector in the steady state (None with one sector): see [`steady_rate`].
    pub(crate) fn steady(&self) -> Option<f64> {
        steady_rate(self.finished().first()?.done_at, &self.proved_at, self.pps)
    }

    /// Mean wall of the sectors after the first to finish (None with fewer than two): the
    /// steady column before 2026-12-04, which overstates the rate when batches straddle sectors.
    pub(crate) fn later_sector_wall(&self) -> Option<f64> {
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
            "| stream | path | device limit | sectors | s / sector, steady | first sector s | GPU busy | synthesis s / partition (mean; after the first sector) | peak RSS / B GiB | Winning alone / under load / bound s | parameters | evaluations device / host |",
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
        "later_sector_wall_mean_s": r.later_sector_wall(),
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

#[cfg(test)]
mod tests {
    use super::steady_rate;
    use std::time::Duration;

    #[test]
    fn the_steady_rate_counts_only_partitions_proved_after_the_first_sector() {
        let s = Duration::from_secs_f64;
        // Ten partitions a sector, batches of four every 6 s: the batch at 18 s ends the first
        // sector (its partitions 9 and 10) and proves two of the second's, whose wall (18 s to
        // 30 s, 12 s) then holds only eight partitions' work: 12 s a sector by its wall.
        let proved: Vec<Duration> = [6.0, 6.0, 6.0, 6.0, 12.0, 12.0, 12.0, 12.0, 18.0, 18.0, 18.0, 18.0]
            .iter()
            .chain([24.0, 24.0, 24.0, 24.0, 30.0, 30.0, 30.0, 30.0].iter())
            .map(|&x| s(x))
            .collect();
        // The rate: 8 partitions in the 12 s after the first sector, 15 s a sector.
        let r = steady_rate(s(18.0), &proved, 10).unwrap();
        assert!((r - 15.0).abs() < 1e-9, "{r}");
        // Nothing after the first sector: no rate.
        assert_eq!(steady_rate(s(30.0), &proved, 10), None);
        // One partition at a time, 1.5 s each: the rate is the partition time times ten.
        let serial: Vec<Duration> = (1..=20).map(|i| s(1.5 * i as f64)).collect();
        let r = steady_rate(s(15.0), &serial, 10).unwrap();
        assert!((r - 15.0).abs() < 1e-9, "{r}");
    }
}
