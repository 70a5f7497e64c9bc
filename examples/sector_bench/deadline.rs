//! `--deadline N`: a proving node's deadline under load. Beside the stream's sectors, each
//! stream's engine holds two more parameter sets under its one budget (on the host, or on the
//! GPUs with `--params-on-device`; the stream prints which): N Window PoSt partitions'
//! (production's shape: `--window-sector-size`, `--window-sectors` slots of 10 challenges) and
//! a Winning PoSt partition's (the same `FallbackPoStCircuit` with one slot of
//! `--winning-challenges`, 66 in production), each partition with its native generator.
//!
//! Before the stream's sectors, on its engine: on a native stream, one-partition jobs until each
//! generator is validated; then each alone — one Window partition, the N together (the deadline
//! alone), the Winning partition. In the stream, when half its partitions are proved (half a
//! proof after one ended, as the Winning stand-in's), the N Window partitions arrive as one job
//! at Window PoSt's priority, and `--deadline-winning-after` seconds later (default: one proof of
//! the stream's, its EMA then) the Winning partition at Winning PoSt's (the engine's urgent
//! priority). Reported per stream: each one's latency from its submission against its bound
//! (Window: N × one partition alone + one of the stream's partitions; Winning: one of the
//! stream's partitions + its own alone; the stream's partition is its seconds a partition outside
//! the deadline, measured, or its proof EMA where too few were — the EMA alone would carry the
//! deadline's own alone proofs made before the stream), and the throughput the stream lost —
//! its partitions proved while the deadline was open against as many seconds at its own rate
//! outside it.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk::compiled::CircuitShape;
use cuzk::engine::{Engine, Job, Partition};
use cuzk::filecoin::{PRIORITY_WINDOW_POST, PRIORITY_WINNING_POST};
use cuzk::{CompiledCircuit, Parameters};
use serde_json::json;

use crate::args::Args;
use crate::circuits::{Generator, SectorCircuit, Timed};
use crate::ok;
use crate::report::{gib, secs, Out};
use crate::shape::{synthesized, Shape};
use crate::stream::latency_later;
use crate::window::{window_partitions, winning_partition, WindowSize};

/// The deadline's circuits and parameters, made once for every stream.
pub(crate) struct Deadline {
    window: Vec<(SectorCircuit, Generator)>,
    winning: (SectorCircuit, Generator),
    pub(crate) window_params: Parameters,
    pub(crate) winning_params: Parameters,
    winning_after: Option<Duration>,
    size: WindowSize,
}

/// Which of the deadline's proofs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Which {
    Window,
    Winning,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Self::Window => "Window PoSt",
            Self::Winning => "Winning PoSt",
        }
    }

    fn priority(self) -> i32 {
        match self {
            Self::Window => PRIORITY_WINDOW_POST,
            Self::Winning => PRIORITY_WINNING_POST,
        }
    }
}

/// The deadline alone on a stream's engine, before its sectors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Alone {
    window_one: Duration,
    window_all: Duration,
    winning: Duration,
}

/// The deadline in flight during a stream: when each was submitted (from the stream's start)
/// and where its latency will come from.
pub(crate) struct InFlight {
    window_at: Duration,
    winning_at: Duration,
    stream_proof: Duration,
    on_gpu: usize,
    window: mpsc::Receiver<Option<Duration>>,
    winning: mpsc::Receiver<Option<Duration>>,
}

/// What a stream measured of its deadline.
#[derive(Clone, Debug)]
pub(crate) struct DeadlineResult {
    n: usize,
    alone: Alone,
    window_at: Duration,
    winning_at: Duration,
    /// The stream's proof EMA when the Window job was submitted.
    stream_proof: Duration,
    window: Option<Duration>,
    winning: Option<Duration>,
    /// How long the deadline was open: from the Window job's submission to the later of the two
    /// proofs.
    open: Duration,
    /// The stream's partitions proved while it was open.
    proved_open: usize,
    /// The stream's seconds a partition outside it (None: too few partitions outside).
    outside_rate: Option<f64>,
}

impl DeadlineResult {
    /// One of the stream's partitions: its seconds a partition outside the deadline, or its
    /// proof EMA at the submission where too few were proved outside.
    fn stream_partition(&self) -> Duration {
        self.outside_rate
            .and_then(|r| Duration::try_from_secs_f64(r).ok())
            .unwrap_or(self.stream_proof)
    }

    fn window_bound(&self) -> Duration {
        self.alone.window_one * self.n as u32 + self.stream_partition()
    }

    fn winning_bound(&self) -> Duration {
        self.stream_partition() + self.alone.winning
    }

    /// The stream's seconds lost to the deadline: the time it was open less what the stream
    /// proved in it at its own rate.
    fn lost(&self) -> Option<f64> {
        self.outside_rate.map(|r| secs(self.open) - self.proved_open as f64 * r)
    }

    fn verdict(latency: Option<Duration>, bound: Duration) -> String {
        match latency {
            Some(l) => format!(
                "{:.3} s (bound {:.3} s: {})",
                secs(l),
                secs(bound),
                if l <= bound { "within" } else { "OVER" }
            ),
            None => "failed".to_string(),
        }
    }

    pub(crate) fn header() -> [&'static str; 2] {
        [
            "| stream | Window: one alone / all alone / under load (bound) | Winning: alone / under load (bound) | open s | stream partitions proved while open (s a partition outside) | stream s lost |",
            "|---|---|---|---|---|---|",
        ]
    }

    pub(crate) fn row(&self, index: usize, spec: &str) -> String {
        format!(
            "| {index} ({spec}) | {:.3} / {:.3} / {} | {:.3} / {} | {:.2} | {} ({}) | {} |",
            secs(self.alone.window_one),
            secs(self.alone.window_all),
            Self::verdict(self.window, self.window_bound()),
            secs(self.alone.winning),
            Self::verdict(self.winning, self.winning_bound()),
            secs(self.open),
            self.proved_open,
            self.outside_rate.map_or("n/a".to_string(), |r| format!("{r:.3}")),
            self.lost().map_or("n/a".to_string(), |l| format!("{l:.2}")),
        )
    }

    pub(crate) fn event(&self, index: usize, spec: &str) -> serde_json::Value {
        json!({
            "event": "deadline", "stream": index, "spec": spec, "window_partitions": self.n,
            "window_one_alone_s": secs(self.alone.window_one), "window_all_alone_s": secs(self.alone.window_all),
            "winning_alone_s": secs(self.alone.winning), "window_submitted_at_s": secs(self.window_at),
            "winning_submitted_at_s": secs(self.winning_at), "stream_proof_ema_s": secs(self.stream_proof),
            "window_latency_s": self.window.map(secs), "window_bound_s": secs(self.window_bound()),
            "winning_latency_s": self.winning.map(secs), "winning_bound_s": secs(self.winning_bound()),
            "open_s": secs(self.open), "stream_partitions_proved_open": self.proved_open,
            "stream_s_per_partition_outside": self.outside_rate, "stream_s_lost": self.lost(),
        })
    }
}

/// The stream's partitions proved while the deadline was open (`open_at` to `open_at + open`),
/// and its seconds a partition outside that interval: from its first partition proved (the
/// pipeline full) to its last, less the interval. `done`: each partition's proof time from the
/// stream's start, in any order.
fn proved_while_open(done: &[Duration], open_at: Duration, open: Duration) -> (usize, Option<f64>) {
    let close = open_at + open;
    let proved_open = done.iter().filter(|&&t| t >= open_at && t <= close).count();
    let (Some(&first), Some(&last)) = (done.iter().min(), done.iter().max()) else {
        return (proved_open, None);
    };
    // Partitions completed after the first, outside the interval, over the span outside it.
    let overlap = close.min(last).saturating_sub(open_at.max(first));
    let span = secs(last - first) - secs(overlap);
    let outside = done
        .iter()
        .filter(|&&t| t > first && (t < open_at || t > close))
        .count();
    let rate = (outside >= 2 && span > 0.0).then(|| span / outside as f64);
    (proved_open, rate)
}

/// The deadline's circuits, before their parameters: made first, so that their shapes can be
/// synthesized beside the stream's (`shapes`, on a thread of their own).
pub(crate) struct DeadlineCircuits {
    window: Vec<(SectorCircuit, Generator)>,
    winning: (SectorCircuit, Generator),
    size: WindowSize,
}

impl DeadlineCircuits {
    /// `n` Window PoSt partitions of `--window-sector-size` with `window_sectors` slots, and the
    /// Winning PoSt partition of `--winning-challenges`.
    pub(crate) fn build(args: &Args, window_sectors: usize, n: usize) -> Self {
        let size = args.window_sector_size;
        let t = Instant::now();
        let window: Vec<(SectorCircuit, Generator)> = window_partitions(size, window_sectors, n)
            .into_iter()
            .map(|(c, g)| (SectorCircuit::Window(c), g))
            .collect();
        let (c, g) = winning_partition(size, args.winning_challenges);
        eprintln!(
            "deadline: built {n} Window PoSt partitions of {window_sectors} {} sector slots and a Winning PoSt partition of {} \
             challenges from random vanilla proofs in {:.2} s",
            size.name(),
            args.winning_challenges,
            secs(t.elapsed())
        );
        Self {
            window,
            winning: (SectorCircuit::Window(c), g),
            size,
        }
    }

    /// The Window partition's shape, then the Winning one's, each synthesized in full once
    /// (recorded with `record`).
    pub(crate) fn shapes(&self, record: bool, baseline: usize) -> [Shape; 2] {
        [
            synthesized("Window PoSt partition 0", self.window[0].0.clone(), record, baseline),
            synthesized("the Winning PoSt partition", self.winning.0.clone(), record, baseline),
        ]
    }
}

impl Deadline {
    /// The sets made of `shapes` (`DeadlineCircuits::shapes`), each passed through `keep` as
    /// soon as it is made (`--params-on-device`: onto the GPUs, the host copy released, before
    /// the next is made); the compiled circuits recorded go into `recorded`.
    pub(crate) fn new(
        args: &Args,
        circuits: DeadlineCircuits,
        shapes: [Shape; 2],
        keep: &dyn Fn(Parameters) -> Parameters,
        recorded: &mut Vec<Arc<CompiledCircuit>>,
        out: &mut Out,
    ) -> Self {
        let mut sets = Vec::new();
        for (label, shape) in ["Window PoSt partition 0", "the Winning PoSt partition"]
            .into_iter()
            .zip(shapes)
        {
            let m = shape.made();
            out.line(&format!(
                "deadline: {label}: {} constraints, {} inputs, {} aux, domain 2^{}; shape's full synthesis{} {:.1} s, \
                 parameters ({:.2} GiB) made in {:.1} s",
                m.constraints,
                m.inputs,
                m.aux,
                m.constraints.next_power_of_two().trailing_zeros(),
                if m.recorded.is_some() { " with recording" } else { "" },
                secs(m.shape_time),
                gib(m.params.host_bytes()),
                secs(m.params_time)
            ));
            recorded.extend(m.recorded);
            sets.push(keep(m.params));
        }
        let winning_params = sets.pop().expect("two sets");
        let window_params = sets.pop().expect("two sets");
        let DeadlineCircuits { window, winning, size } = circuits;
        Self {
            window,
            winning,
            window_params,
            winning_params,
            winning_after: args.deadline_winning_after.map(Duration::from_secs_f64),
            size,
        }
    }

    /// The two sets' shapes (their compiled circuits' keys on an engine).
    pub(crate) fn shapes(&self) -> [CircuitShape; 2] {
        [
            CircuitShape::of_params(&self.window_params),
            CircuitShape::of_params(&self.winning_params),
        ]
    }

    /// The two sets on `engine`.
    pub(crate) fn add_to(&self, engine: &Engine) {
        ok("Window PoSt parameters", engine.add_parameters(&self.window_params));
        ok("Winning PoSt parameters", engine.add_parameters(&self.winning_params));
    }

    /// A job of `which`: the Window partitions `0..n`, or the Winning partition.
    fn job(&self, which: Which, n: usize, native: bool, label: &str) -> Job {
        let times = Arc::new(Mutex::new(vec![None; n.max(1)]));
        let parts: Vec<&(SectorCircuit, Generator)> = match which {
            Which::Window => self.window[..n].iter().collect(),
            Which::Winning => vec![&self.winning],
        };
        let partitions = parts
            .into_iter()
            .enumerate()
            .map(|(slot, (circuit, generate))| {
                let timed = Timed {
                    circuit: circuit.clone(),
                    slot,
                    times: times.clone(),
                };
                if native {
                    let generate = generate.clone();
                    Partition::with_generator(timed, move |cs: &mut cuzk::WitnessCs, threads: usize| {
                        generate(cs, threads)
                    })
                } else {
                    Partition::circuit(timed)
                }
            })
            .collect();
        let params = match which {
            Which::Window => &self.window_params,
            Which::Winning => &self.winning_params,
        };
        Job::new(params.clone(), partitions)
            .with_priority(which.priority())
            .with_label(label.to_string())
    }

    fn timed(&self, engine: &Engine, which: Which, n: usize, native: bool, label: &str) -> Duration {
        let start = Instant::now();
        ok(label, engine.submit(self.job(which, n, native, label)).wait());
        start.elapsed()
    }

    /// Before a stream's sectors: on a native stream, each generator validated (one-partition
    /// jobs, at most two: the first may record the compiled circuit); then each alone.
    pub(crate) fn alone(&self, engine: &Engine, native: bool, out: &mut Out) -> Alone {
        if native {
            let start = Instant::now();
            for which in [Which::Window, Which::Winning] {
                let before = engine.stats().witness;
                for _ in 0..2 {
                    let w = engine.stats().witness;
                    if w.generator_validated + w.generator_refused
                        > before.generator_validated + before.generator_refused
                    {
                        break;
                    }
                    self.timed(
                        engine,
                        which,
                        1,
                        true,
                        &format!("{} generator validation", which.name()),
                    );
                }
            }
            let w = engine.stats().witness;
            out.line(&format!(
                "deadline: the Window and Winning PoSt generators checked in {:.1} s (the engine: {} validated, {} refused in all)",
                secs(start.elapsed()),
                w.generator_validated,
                w.generator_refused
            ));
        }
        let n = self.window.len();
        let window_one = self.timed(engine, Which::Window, 1, native, "Window PoSt partition alone");
        let window_all = self.timed(engine, Which::Window, n, native, "Window PoSt deadline alone");
        // Twice: the first may be the set's first proof on this engine's GPU.
        self.timed(engine, Which::Winning, 1, native, "Winning PoSt alone");
        let winning = self.timed(engine, Which::Winning, 1, native, "Winning PoSt alone");
        out.line(&format!(
            "deadline alone ({} sectors): one Window PoSt partition {:.3} s, the {n} together {:.3} s; Winning PoSt {:.3} s",
            self.size.name(),
            secs(window_one),
            secs(window_all),
            secs(winning)
        ));
        Alone {
            window_one,
            window_all,
            winning,
        }
    }

    /// Mid-stream: the Window job, then (after `--deadline-winning-after` or one proof of the
    /// stream's) the Winning one; their latencies come back through the returned `InFlight`.
    pub(crate) fn submit(&self, engine: &Engine, native: bool, start: Instant, index: usize) -> InFlight {
        let stream_proof = engine.stats().gpu_time_ema.unwrap_or_default();
        let on_gpu = engine.stats().on_gpu;
        let n = self.window.len();
        let at = Instant::now();
        let handle = engine.submit(self.job(Which::Window, n, native, "deadline: Window PoSt"));
        let window = latency_later("deadline: Window PoSt under load", handle, at);
        let window_at = at.duration_since(start);
        eprintln!(
            "stream {index}: deadline: {n} Window PoSt partitions submitted at {:.2} s ({on_gpu} partition(s) on the GPUs)",
            secs(window_at)
        );
        std::thread::sleep(self.winning_after.unwrap_or(stream_proof));
        let at = Instant::now();
        let handle = engine.submit(self.job(Which::Winning, 1, native, "deadline: Winning PoSt"));
        let winning = latency_later("deadline: Winning PoSt under load", handle, at);
        let winning_at = at.duration_since(start);
        eprintln!(
            "stream {index}: deadline: Winning PoSt submitted at {:.2} s",
            secs(winning_at)
        );
        InFlight {
            window_at,
            winning_at,
            stream_proof,
            on_gpu,
            window,
            winning,
        }
    }

    /// After the stream: the latencies (waiting for both) and the stream's partitions proved
    /// (`done`: each one's time from the stream's start) against the deadline's interval.
    pub(crate) fn finish(&self, flight: InFlight, alone: Alone, done: &[Duration], out: &mut Out) -> DeadlineResult {
        let window = flight.window.recv().ok().flatten();
        let winning = flight.winning.recv().ok().flatten();
        let ends = [
            window.map(|l| flight.window_at + l),
            winning.map(|l| flight.winning_at + l),
        ];
        let close = ends.iter().flatten().max().copied().unwrap_or(flight.window_at);
        let open = close.saturating_sub(flight.window_at);
        let (proved_open, outside_rate) = proved_while_open(done, flight.window_at, open);
        let r = DeadlineResult {
            n: self.window.len(),
            alone,
            window_at: flight.window_at,
            winning_at: flight.winning_at,
            stream_proof: flight.stream_proof,
            window,
            winning,
            open,
            proved_open,
            outside_rate,
        };
        out.line(&format!(
            "deadline under load (submitted with {} partition(s) on the GPUs, the stream's proof EMA {:.3} s): {} Window PoSt \
             partitions {}; Winning PoSt {:.2} s later {}; open {:.2} s, in which the stream proved {proved_open} partition(s){}",
            flight.on_gpu,
            secs(flight.stream_proof),
            r.n,
            DeadlineResult::verdict(window, r.window_bound()),
            secs(flight.winning_at.saturating_sub(flight.window_at)),
            DeadlineResult::verdict(winning, r.winning_bound()),
            secs(open),
            match (outside_rate, r.lost()) {
                (Some(rate), Some(lost)) => format!(
                    " against {:.1} at its rate outside it ({rate:.3} s a partition): {lost:.2} s of the stream's lost",
                    secs(open) / rate
                ),
                _ => String::new(),
            }
        ));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{proved_while_open, Alone, DeadlineResult};
    use std::time::Duration;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn the_stream_rate_outside_the_deadline_and_what_it_proved_inside() {
        // One a second from 1 s to 10 s, none while the deadline was open (4.5 s to 7.5 s).
        let done: Vec<Duration> = [1.0, 2.0, 3.0, 4.0, 8.0, 9.0, 10.0].into_iter().map(s).collect();
        let (inside, rate) = proved_while_open(&done, s(4.5), s(3.0));
        assert_eq!(inside, 0);
        // 9 s of span less the 3 s open, over the 6 partitions after the first outside it.
        assert!((rate.unwrap() - 1.0).abs() < 1e-9, "{rate:?}");
        // Two proved inside: counted there, not outside.
        let done: Vec<Duration> = [1.0, 2.0, 5.0, 7.0, 9.0, 10.0, 11.0].into_iter().map(s).collect();
        let (inside, rate) = proved_while_open(&done, s(4.0), s(4.0));
        assert_eq!(inside, 2);
        assert!((rate.unwrap() - 6.0 / 4.0).abs() < 1e-9, "{rate:?}");
        // Too few outside: no rate.
        let (_, rate) = proved_while_open(&[s(1.0), s(5.0)], s(2.0), s(1.0));
        assert_eq!(rate, None);
    }

    #[test]
    fn the_bounds_take_the_streams_measured_partition_not_an_ema_the_alone_proofs_pulled_down() {
        let mut r = DeadlineResult {
            n: 4,
            alone: Alone {
                window_one: s(1.5),
                window_all: s(5.0),
                winning: s(0.2),
            },
            window_at: s(20.0),
            winning_at: s(21.0),
            stream_proof: s(0.9),
            window: Some(s(8.0)),
            winning: Some(s(1.0)),
            open: s(8.0),
            proved_open: 1,
            outside_rate: Some(1.25),
        };
        assert_eq!(r.window_bound(), s(4.0 * 1.5 + 1.25));
        assert_eq!(r.winning_bound(), s(1.25 + 0.2));
        // Too few outside: the EMA.
        r.outside_rate = None;
        assert_eq!(r.window_bound(), s(4.0 * 1.5 + 0.9));
        assert_eq!(r.winning_bound(), s(0.9 + 0.2));
    }
}
