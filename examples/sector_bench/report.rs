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

/// Partitions reported less than this apart were proved by one batch (a batch's proofs are
/// reported together: microseconds apart, across sectors too).
const SAME_BATCH: Duration = Duration::from_millis(20);

/// The stream's full batches: the largest batch the GPU worker took, how many batches of that
/// size followed another batch, and their walls (each from the previous batch's end to its own,
/// so a batch that followed a gap on the GPU counts the gap too): the min, median and max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FullBatches {
    pub(crate) size: usize,
    pub(crate) count: usize,
    pub(crate) min_s: f64,
    pub(crate) median_s: f64,
    pub(crate) max_s: f64,
}

impl FullBatches {
    /// Seconds a sector of `pps` partitions at the median full batch.
    pub(crate) fn s_per_sector(&self, pps: usize) -> f64 {
        self.median_s / self.size as f64 * pps as f64
    }
}

/// [`FullBatches`] of partitions proved at `proved_at` (None when no batch of the largest size
/// followed another). Beside [`steady_rate`], which counts cut batches, a stream's tail and
/// the Winning PoSt stand-in's proof: this is the rate of the GPU's steady work alone.
pub(crate) fn full_batches(proved_at: &[Duration]) -> Option<FullBatches> {
    let mut at = proved_at.to_vec();
    at.sort();
    // (end, size) of each batch.
    let mut batches: Vec<(Duration, usize)> = Vec::new();
    for t in at {
        match batches.last_mut() {
            Some((end, n)) if t - *end < SAME_BATCH => {
                *end = t;
                *n += 1;
            }
            _ => batches.push((t, 1)),
        }
    }
    let size = batches.iter().map(|b| b.1).max()?;
    let mut walls: Vec<f64> = batches
        .windows(2)
        .filter(|w| w[1].1 == size)
        .map(|w| secs(w[1].0 - w[0].0))
        .collect();
    walls.sort_by(f64::total_cmp);
    let n = walls.len();
    let median_s = match n {
        0 => return None,
        n if n % 2 == 1 => walls[n / 2],
        n => (walls[n / 2 - 1] + walls[n / 2]) / 2.0,
    };
    Some(FullBatches {
        size,
        count: n,
        min_s: walls[0],
        median_s,
        max_s: walls[n - 1],
    })
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

    /// The stream's full batches: see [`full_batches`].
    pub(crate) fn full_batches(&self) -> Option<FullBatches> {
        full_batches(&self.proved_at)
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
            "| stream | path | device limit | sectors | s / sector, steady | full batches: count × size, median (min–max) s → s / sector | first sector s | GPU busy | synthesis s / partition (mean; after the first sector) | peak RSS / B GiB | Winning alone / under load / bound s | parameters | evaluations device / host |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
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
        let batches = self.full_batches().map_or("n/a".to_string(), |b| {
            format!(
                "{} × {}, {:.2} ({:.2}–{:.2}) → {:.1}",
                b.count,
                b.size,
                b.median_s,
                b.min_s,
                b.max_s,
                b.s_per_sector(self.pps)
            )
        });
        format!(
            "| {index} | {} | {} | {}{} | {} | {batches} | {} | {:.0}% | {synthesis} | {:.2} / {:.2}{} | {:.3} / {under} / {bound:.3} | {}{} | {} |",
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
    let batches = r.full_batches();
    out.event(json!({
        "event": "stream", "stream": index, "spec": r.spec.to_string(), "path": r.spec.path(),
        "limit_gib": r.spec.limit_gib, "sectors": done.len(), "failed_sectors": r.failed_sectors,
        "wall_s": secs(r.wall), "steady_s_per_sector": r.steady(),
        "later_sector_wall_mean_s": r.later_sector_wall(),
        "full_batch_size": batches.map(|b| b.size), "full_batches": batches.map(|b| b.count),
        "full_batch_wall_median_s": batches.map(|b| b.median_s),
        "full_batch_wall_min_s": batches.map(|b| b.min_s), "full_batch_wall_max_s": batches.map(|b| b.max_s),
        "full_batch_s_per_sector": batches.map(|b| b.s_per_sector(r.pps)),
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
    use super::{full_batches, steady_rate};
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

    #[test]
    fn full_batches_are_the_largest_batches_timed_from_the_batch_before() {
        let s = Duration::from_secs_f64;
        // The 24 GiB stream of the H100 run (2026-12-05), its first 26 partitions: one alone,
        // batches of four (one across two sectors, reported 2 ms apart), one cut to one
        // partition by the Winning PoSt stand-in, then four more.
        let mut proved: Vec<Duration> = vec![s(2.967)];
        for (t, n) in [
            (9.187, 4),
            (15.33, 4),
            (21.437, 1),
            (21.439, 3),
            (27.497, 4),
            (33.592, 4),
        ] {
            proved.extend(std::iter::repeat(s(t)).take(n));
        }
        proved.push(s(35.642));
        proved.extend(std::iter::repeat(s(42.117)).take(4));
        let b = full_batches(&proved).unwrap();
        assert_eq!((b.size, b.count), (4, 6));
        // Walls 6.220, 6.143, 6.109, 6.058 (from the straddling batch's last report), 6.095 and
        // 6.475 (after the cut batch).
        assert!(
            (b.min_s - 6.058).abs() < 1e-9 && (b.max_s - 6.475).abs() < 1e-9,
            "{b:?}"
        );
        assert!((b.median_s - (6.109 + 6.143) / 2.0).abs() < 1e-9, "{b:?}");
        assert!((b.s_per_sector(10) - b.median_s * 2.5).abs() < 1e-9);
        // One partition at a time: each is a full batch of one.
        let serial: Vec<Duration> = (1..=5).map(|i| s(1.5 * i as f64)).collect();
        let b = full_batches(&serial).unwrap();
        assert_eq!((b.size, b.count), (1, 4));
        assert!((b.median_s - 1.5).abs() < 1e-9);
        // A lone batch follows nothing: no wall.
        assert_eq!(full_batches(&[s(3.0), s(3.0)]), None);
        assert_eq!(full_batches(&[]), None);
    }
}
