//! The dispatch pacer: when may the next partition's synthesis start?
//!
//! Partitions walk `dispatch → synthesis → waiting → GPU`. Dispatching them in a burst makes
//! every synthesis ask for pinned buffers at once, before any proof has given its buffers back
//! to the pool, so nearly every checkout pins new memory instead of reusing a buffer;
//! dispatching too slowly leaves the GPU idle.
//! The pacer keeps the number of synthesized partitions **waiting** for a GPU near a target
//! depth, in one of two modes:
//!
//! - [`PacerMode::Pi`]: a PI controller on the **projected depth**: the partitions waiting,
//!   plus those in synthesis, less the ones the GPUs will take while a synthesis runs —
//!   `q = waiting + in synthesis − pipeline`, where `pipeline = drain × synthesis time` (the
//!   median of the last nine) is how many partitions are in synthesis at the GPUs' drain rate
//!   `drain = gpu_workers / EMA(GPU time per partition)` (Little's law). It is the depth the waiting queue will have
//!   once what is in synthesis now arrives. Feed-forward: the drain rate. Feedback: the
//!   normalised error `e = (target − q − ½) / target` (the half centres the depth, which
//!   steps by whole partitions, on the target), so the dispatch rate is `drain × clamp(1 +
//!   kp·e + ki·∫e dt, min_rate, max_rate)`, and its interval is clamped to `[min_interval,
//!   max_interval]`. The integral is clamped (anti-windup). Before the first GPU time is known
//!   it dispatches at most `target` partitions, one per `initial_interval` — never all at once.
//! - [`PacerMode::BoundedQueue`]: the plain mode, for comparison: dispatch whenever
//!   `waiting + in synthesis < depth`.
//!
//! In both modes a hard cap holds at every moment: `waiting + in synthesis ≤ in-flight cap`
//! (in PI mode `target + gpu_workers` unless configured otherwise; the engine configures
//! `target + synthesis workers`).
//!
//! **Why the projected depth, not the waiting depth.** A dispatch reaches the waiting queue
//! only a synthesis later. A controller that sees only the queue acts on news one synthesis
//! old: when synthesis is short next to its time constant (below) that does no harm, but once
//! a synthesis takes many GPU proofs' time it overshoots (it keeps dispatching while the queue
//! is empty although enough is in synthesis), then starves the GPUs (it holds back while the
//! queue is full although nothing is in synthesis to follow it), and rings. In the projected
//! depth a dispatch counts at once, a finished synthesis moves one partition from synthesis to
//! waiting and changes nothing, a GPU start takes one off: the loop has no delay, and the depth closes on
//! the target without ringing whatever a synthesis takes. Until a synthesis time is known the
//! pipeline is 0 (the projected depth is the partitions in flight).
//!
//! The pacer is pure logic: no threads, no sleeps, no clock of its own. The driver owns the
//! clock and passes every time in as a [`Duration`] since an arbitrary start of its choosing
//! (the same start for every call), reports each event (`on_dispatch`, `on_synthesis_done`,
//! `on_gpu_start`, `on_gpu_done`) and asks it (`next_dispatch_at`) when to dispatch next.
//!
//! ## The defaults, and why
//! They are the Curio engine's constants, kept because the simulated runs in this module's
//! tests settle within ±1 of the target with them (GPU time 0.5–2 s, one to three GPU workers,
//! synthesis 0.2–3 s, target 2–4), without sustained oscillation, re-settle after step changes
//! in GPU or synthesis speed and after long GPU or synthesis stalls, and keep a GPU ≥ 95% busy
//! wherever its synthesis threads can keep up, with synthesis times jittered by ±50% — the
//! H200 host's regimes: a 2^24 partition 0.215 s on the GPU with 0.1–3 s of synthesis on 15
//! threads, a 32 GiB-shape PoRep partition 1.24 s with 0.3–18 s on 16 (up to 15 GPU times):
//! - `kp = 0.5`: a projected depth a target short (`e = 1`) dispatches 1.5× the drain rate; the
//!   depth then closes on the target with a time constant of `target · gpu_time /
//!   (gpu_workers · kp)` (four GPU times at the default target of 2, one GPU worker).
//! - `ki = 0.001` per second of normalised error, integral clamped to `[−20, 100]`: at most
//!   +10% / −2% of the drain rate. Feed-forward and P do the work; the integral only trims a
//!   steady bias (GPU workers that idle between partitions) and, clamped, cannot wind up
//!   during a stall.
//! - `gpu_time_alpha = 0.2`: a GPU-time step is 90% tracked after ten partitions. The synthesis
//!   time is a median instead (of the last nine), because it has outliers an average would
//!   carry for many partitions: the first partition of a circuit type, synthesized in full and
//!   recorded (seconds to minutes), before witness-only ones (a fraction of a second); with an
//!   average the pipeline would stay many partitions too long for a dozen of them, and the
//!   pacer dispatch as many partitions too many. A step is followed after five partitions.
//! - rate factor `[0.3, 3]`, interval `[50 ms, 60 s]`: never stop dispatching entirely, never
//!   more than three times the drain rate, never faster than 20 dispatches a second — so a
//!   pipeline that must fill (a long synthesis, the start) fills as a ramp, not a burst.

use std::collections::VecDeque;
use std::time::Duration;

use crate::{Error, Result};

/// How many of the last synthesis times the PI mode's synthesis time is the median of.
pub(crate) const SYNTHESIS_SAMPLES: usize = 9;

/// Constants of the PI mode. Build with `PiConfig::default()` and change fields.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PiConfig {
    /// Synthesized partitions that should be waiting for a GPU (at least 1). Default 2: each of
    /// two GPU workers finds a partition ready when it finishes, and no more than two
    /// partitions' pinned buffers sit idle.
    pub target_depth: usize,
    /// Proportional gain on the normalised error (≥ 0). Default 0.5.
    pub kp: f64,
    /// Integral gain, per second of normalised error (≥ 0). Default 0.001.
    pub ki: f64,
    /// Smoothing factor of the EMA of GPU time per partition, in (0, 1]. Default 0.2.
    pub gpu_time_alpha: f64,
    /// Lower clamp of the integral (≤ 0). Default −20.
    pub integral_min: f64,
    /// Upper clamp of the integral (≥ 0). Default 100.
    pub integral_max: f64,
    /// Lower clamp of the rate factor that multiplies the drain rate (> 0). Default 0.3.
    pub min_rate: f64,
    /// Upper clamp of the rate factor (≥ `min_rate`). Default 3.
    pub max_rate: f64,
    /// Shortest interval between two dispatches (> 0). Default 50 ms.
    pub min_interval: Duration,
    /// Longest interval between two dispatches (≥ `min_interval`). Default 60 s.
    pub max_interval: Duration,
    /// Interval between dispatches before the first GPU time is known (> 0). Default 1 s:
    /// fills a target of 2 in a second, small next to a first synthesis of seconds.
    pub initial_interval: Duration,
    /// Most partitions between dispatch and GPU start (waiting + in synthesis): the hard
    /// bound on the partitions (and their memory) in flight, whatever the controller says.
    /// `None` (the default): `target_depth + gpu_workers`, which leaves room for the pipeline
    /// only while a synthesis is shorter than a GPU proof. The controller aims at `target +
    /// gpu_workers × synthesis time / GPU time` in flight, so a driver whose synthesis takes
    /// longer sets it here (≥ `target_depth`); the engine sets `target + synthesis workers`
    /// (its synthesis threads bound the partitions in synthesis anyway).
    pub in_flight_cap: Option<usize>,
}

impl Default for PiConfig {
    fn default() -> Self {
        PiConfig {
            target_depth: 2,
            kp: 0.5,
            ki: 0.001,
            gpu_time_alpha: 0.2,
            integral_min: -20.0,
            integral_max: 100.0,
            min_rate: 0.3,
            max_rate: 3.0,
            min_interval: Duration::from_millis(50),
            max_interval: Duration::from_secs(60),
            initial_interval: Duration::from_secs(1),
            in_flight_cap: None,
        }
    }
}

impl PiConfig {
    fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(format!("pacer: {what}")));
        let finite_nonneg = |x: f64| x.is_finite() && x >= 0.0;
        if self.target_depth == 0 {
            return bad("target_depth must be at least 1, found 0".into());
        }
        if !finite_nonneg(self.kp) || !finite_nonneg(self.ki) {
            return bad(format!(
                "kp and ki must be finite and ≥ 0, found kp {} ki {}",
                self.kp, self.ki
            ));
        }
        if !(self.gpu_time_alpha > 0.0 && self.gpu_time_alpha <= 1.0) {
            return bad(format!(
                "gpu_time_alpha must be in (0, 1], found {}",
                self.gpu_time_alpha
            ));
        }
        if !(self.integral_min.is_finite() && self.integral_max.is_finite())
            || self.integral_min > 0.0
            || self.integral_max < 0.0
        {
            return bad(format!(
                "integral clamp must satisfy min ≤ 0 ≤ max, found [{}, {}]",
                self.integral_min, self.integral_max
            ));
        }
        if !(self.min_rate > 0.0 && self.max_rate.is_finite() && self.min_rate <= self.max_rate) {
            return bad(format!(
                "rate clamp must satisfy 0 < min ≤ max < ∞, found [{}, {}]",
                self.min_rate, self.max_rate
            ));
        }
        if self.min_interval.is_zero() || self.min_interval > self.max_interval || self.initial_interval.is_zero() {
            return bad(format!(
                "intervals must satisfy 0 < min ≤ max and initial > 0, found [{:?}, {:?}], initial {:?}",
                self.min_interval, self.max_interval, self.initial_interval
            ));
        }
        if let Some(cap) = self.in_flight_cap {
            if cap < self.target_depth {
                return bad(format!(
                    "in_flight_cap must be ≥ target_depth {}, found {cap}",
                    self.target_depth
                ));
            }
        }
        Ok(())
    }
}

/// How the engine's pacer decides.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum PacerMode {
    /// The PI controller (see the module docs).
    Pi(PiConfig),
    /// Dispatch whenever fewer than `depth` partitions are waiting or in synthesis.
    BoundedQueue {
        /// Most partitions waiting or in synthesis (at least 1).
        depth: usize,
    },
}

/// A snapshot of the pacer, for statistics and logs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PacerState {
    /// The target depth (PI) or the bound (bounded queue).
    pub target_depth: usize,
    /// The most partitions allowed between dispatch and GPU start.
    pub in_flight_cap: usize,
    /// Synthesized partitions waiting for a GPU.
    pub waiting: usize,
    /// Partitions dispatched and not yet synthesized.
    pub in_synthesis: usize,
    /// Partitions dispatched since the start.
    pub dispatched: u64,
    /// EMA of GPU time per partition; `None` until a GPU time is known, always in the bounded
    /// queue mode.
    pub gpu_time_ema: Option<Duration>,
    /// Median of the last nine synthesis times; `None` until a synthesis time
    /// is known, always in the bounded queue mode.
    pub synthesis_time: Option<Duration>,
    /// Partitions the PI mode expects in synthesis at the drain rate (`drain × synthesis
    /// time`; 0 until both are known, and in the bounded queue mode).
    pub pipeline: f64,
    /// The PI mode's projected depth: `waiting + in synthesis − pipeline` (see the module
    /// docs); in the bounded queue mode (no pipeline) the partitions in flight.
    pub projected_depth: f64,
    /// The PI integral (0 in the bounded queue mode).
    pub integral: f64,
    /// The clamped factor that multiplies the drain rate (1 before any GPU time is known and in
    /// the bounded queue mode).
    pub rate_factor: f64,
    /// Dispatches per second the pacer is aiming at; `None` when it does not pace by rate
    /// (bounded queue mode, or no GPU time known yet).
    pub dispatch_rate: Option<f64>,
}

/// Decides when the next partition may be dispatched; see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    mode: PacerMode,
    gpu_workers: usize,
    in_flight_cap: usize,
    /// The configured target depth (PI) and in-flight cap, before [`set_batch`](Self::set_batch).
    base: (usize, usize),
    waiting: usize,
    in_synthesis: usize,
    dispatched: u64,
    last_dispatch: Option<Duration>,
    gpu_time_ema: Option<f64>,
    /// The last synthesis times (seconds), oldest first.
    synthesis_times: VecDeque<f64>,
    integral: f64,
    integrated_to: Duration,
}

impl Pacer {
    /// A pacer for `gpu_workers` GPU workers (at least 1).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for zero workers, a zero depth, or PI constants outside the
    /// ranges their fields document.
    pub(crate) fn new(mode: PacerMode, gpu_workers: usize) -> Result<Self> {
        if gpu_workers == 0 {
            return Err(Error::InvalidArgument(
                "pacer: gpu_workers must be at least 1, found 0".into(),
            ));
        }
        let in_flight_cap = match mode {
            PacerMode::Pi(config) => {
                config.validate()?;
                config.in_flight_cap.unwrap_or(config.target_depth + gpu_workers)
            }
            PacerMode::BoundedQueue { depth: 0 } => {
                return Err(Error::InvalidArgument(
                    "pacer: bounded queue depth must be at least 1, found 0".into(),
                ))
            }
            PacerMode::BoundedQueue { depth } => depth,
        };
        let base_target = match mode {
            PacerMode::Pi(config) => config.target_depth,
            PacerMode::BoundedQueue { depth } => depth,
        };
        Ok(Pacer {
            mode,
            gpu_workers,
            in_flight_cap,
            base: (base_target, in_flight_cap),
            waiting: 0,
            in_synthesis: 0,
            dispatched: 0,
            last_dispatch: None,
            gpu_time_ema: None,
            synthesis_times: VecDeque::with_capacity(SYNTHESIS_SAMPLES),
            integral: 0.0,
            integrated_to: Duration::ZERO,
        })
    }

    /// The earliest time at which the next dispatch may happen: `now` or earlier means "now";
    /// `None` means "not until an event" (the in-flight cap is reached, or, at the start, the
    /// target is dispatched and no GPU time is known yet). Ask again after every event.
    pub(crate) fn next_dispatch_at(&self, now: Duration) -> Option<Duration> {
        if self.waiting + self.in_synthesis >= self.in_flight_cap {
            return None;
        }
        let PacerMode::Pi(config) = self.mode else {
            return Some(now);
        };
        let interval = match self.dispatch_rate(&config) {
            // A rate so low that its interval overflows a Duration is clamped like any other.
            Some(rate) => Duration::try_from_secs_f64(1.0 / rate)
                .unwrap_or(config.max_interval)
                .clamp(config.min_interval, config.max_interval),
            None if self.dispatched >= config.target_depth as u64 => return None,
            None => config.initial_interval,
        };
        Some(
            self.last_dispatch
                .map_or(now, |last| last.checked_add(interval).unwrap_or(Duration::MAX)),
        )
    }

    /// The GPU workers take up to `batch` waiting partitions at once (1: one at a time): the
    /// target depth becomes at least `batch` and the in-flight cap grows by as much as the
    /// target did, so a batch is waiting when a GPU worker ends the last one. A smaller
    /// `batch` goes back to the configured depth and cap.
    pub(crate) fn set_batch(&mut self, batch: usize) {
        let (target, cap) = self.base;
        let raised = batch.max(target);
        match &mut self.mode {
            PacerMode::Pi(config) => config.target_depth = raised,
            PacerMode::BoundedQueue { depth } => *depth = raised,
        }
        self.in_flight_cap = cap + (raised - target);
    }

    /// Whether a dispatch may happen at `now`.
    #[cfg(test)]
    pub(crate) fn may_dispatch(&self, now: Duration) -> bool {
        self.next_dispatch_at(now).is_some_and(|at| at <= now)
    }

    /// A partition was dispatched (its synthesis starts). The driver should have asked
    /// `may_dispatch` (or [`next_dispatch_at`](Self::next_dispatch_at)); the pacer counts it either way.
    pub(crate) fn on_dispatch(&mut self, now: Duration) {
        self.integrate(now);
        self.in_synthesis += 1;
        self.dispatched += 1;
        self.last_dispatch = Some(now);
    }

    /// A partition's synthesis finished, having taken `synthesis_time`: it now waits for a
    /// GPU.
    pub(crate) fn on_synthesis_done(&mut self, now: Duration, synthesis_time: Duration) {
        self.integrate(now);
        self.in_synthesis = self.in_synthesis.saturating_sub(1);
        self.waiting += 1;
        if let PacerMode::Pi(_) = self.mode {
            if self.synthesis_times.len() == SYNTHESIS_SAMPLES {
                self.synthesis_times.pop_front();
            }
            self.synthesis_times.push_back(synthesis_time.as_secs_f64());
        }
    }

    /// A partition's synthesis failed: it leaves the pipeline. Before the first GPU time is
    /// known it no longer counts toward the start's `target` dispatches, so a start whose first
    /// partitions all fail does not wait forever for a GPU time that cannot come.
    pub(crate) fn on_synthesis_failed(&mut self, now: Duration) {
        self.integrate(now);
        self.in_synthesis = self.in_synthesis.saturating_sub(1);
        if self.gpu_time_ema.is_none() {
            self.dispatched = self.dispatched.saturating_sub(1);
        }
    }

    /// A GPU worker took a waiting partition.
    pub(crate) fn on_gpu_start(&mut self, now: Duration) {
        self.integrate(now);
        self.waiting = self.waiting.saturating_sub(1);
    }

    /// A GPU worker gave back a partition it took without proving it: it waits again.
    pub(crate) fn on_gpu_returned(&mut self) {
        self.waiting += 1;
    }

    /// A GPU worker finished a partition that took `gpu_time` on the GPU (failed partitions
    /// may report their time too, or nothing).
    pub(crate) fn on_gpu_done(&mut self, now: Duration, gpu_time: Duration) {
        self.integrate(now);
        if let PacerMode::Pi(config) = self.mode {
            let t = gpu_time.as_secs_f64();
            let alpha = config.gpu_time_alpha;
            self.gpu_time_ema = Some(self.gpu_time_ema.map_or(t, |ema| alpha * t + (1.0 - alpha) * ema));
        }
    }

    /// A snapshot of the pacer's state.
    pub(crate) fn state(&self) -> PacerState {
        let as_duration = |secs: Option<f64>| secs.map(|s| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX));
        let (target_depth, rate_factor, dispatch_rate) = match self.mode {
            PacerMode::Pi(config) => {
                let factor = if self.gpu_time_ema.is_some() {
                    self.rate_factor(&config)
                } else {
                    1.0
                };
                (config.target_depth, factor, self.dispatch_rate(&config))
            }
            PacerMode::BoundedQueue { depth } => (depth, 1.0, None),
        };
        PacerState {
            target_depth,
            in_flight_cap: self.in_flight_cap,
            waiting: self.waiting,
            in_synthesis: self.in_synthesis,
            dispatched: self.dispatched,
            gpu_time_ema: as_duration(self.gpu_time_ema),
            synthesis_time: as_duration(self.synthesis_time()),
            pipeline: self.pipeline(),
            projected_depth: self.projected_depth(),
            integral: self.integral,
            rate_factor,
            dispatch_rate,
        }
    }

    /// The median of the last synthesis times (of the two middle ones' mean for an even
    /// count); `None` before the first.
    fn synthesis_time(&self) -> Option<f64> {
        let mut times: Vec<f64> = self.synthesis_times.iter().copied().collect();
        times.sort_by(f64::total_cmp);
        let n = times.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(times[n / 2]),
            _ => Some((times[n / 2 - 1] + times[n / 2]) / 2.0),
        }
    }

    /// Partitions in synthesis at the drain rate: `drain × synthesis time`; 0 until both times
    /// are known (and in the bounded queue mode, which keeps no times).
    fn pipeline(&self) -> f64 {
        match (self.gpu_time_ema, self.synthesis_time()) {
            (Some(gpu), Some(synthesis)) => self.gpu_workers as f64 * synthesis / gpu.max(1e-9),
            _ => 0.0,
        }
    }

    /// The depth the waiting queue will have once the partitions in synthesis arrive, less
    /// those the GPUs take meanwhile (see the module docs).
    fn projected_depth(&self) -> f64 {
        (self.waiting + self.in_synthesis) as f64 - self.pipeline()
    }

    /// `(target − q − ½) / target`. The half: the projection steps up by one at each dispatch
    /// and down by one at each GPU start, and the next dispatch is timed from the lower of
    /// the two levels, so measured from that level the depth would settle half a partition
    /// above the target on average.
    fn error(&self, config: &PiConfig) -> f64 {
        let target = config.target_depth as f64;
        (target - self.projected_depth() - 0.5) / target
    }

    /// `1 + kp·e + ki·∫e`, clamped to `[min_rate, max_rate]`.
    fn rate_factor(&self, config: &PiConfig) -> f64 {
        let factor = 1.0 + config.kp * self.error(config) + config.ki * self.integral;
        factor.clamp(config.min_rate, config.max_rate)
    }

    /// Dispatches per second: the GPUs' drain rate times the rate factor; `None` before any
    /// GPU time is known.
    fn dispatch_rate(&self, config: &PiConfig) -> Option<f64> {
        let ema = self.gpu_time_ema?;
        // A zero GPU time would mean an infinite drain rate; the interval clamp bounds it anyway.
        let drain = self.gpu_workers as f64 / ema.max(1e-9);
        Some(drain * self.rate_factor(config))
    }

    /// Integrates the error, constant since the last event, up to `now`. The controller runs
    /// only once a GPU time is known, so the start does not wind the integral up.
    fn integrate(&mut self, now: Duration) {
        let dt = now.saturating_sub(self.integrated_to).as_secs_f64();
        self.integrated_to = self.integrated_to.max(now);
        if let (PacerMode::Pi(config), Some(_)) = (self.mode, self.gpu_time_ema) {
            self.integral = (self.integral + self.error(&config) * dt).clamp(config.integral_min, config.integral_max);
        }
    }
}

#[cfg(test)]
mod sim;
