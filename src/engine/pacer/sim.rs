//! The pacer's tests, run on a discrete-event simulator: `synthesis_workers` synthesis
//! workers and `gpu_workers` GPU workers, per-partition times given as functions of the
//! dispatch (or GPU start) time, the pacer deciding dispatches. Time jumps from event to
//! event; nothing sleeps.

use super::*;

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// The sim's own view after each instant's events, counted independently of the pacer.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    waiting: usize,
}

struct Sim {
    pacer: Pacer,
    now: Duration,
    synthesis_workers: usize,
    synthesis_time: Box<dyn Fn(Duration) -> Duration>,
    gpu_time: Box<dyn Fn(Duration) -> Duration>,
    /// GPU workers start nothing inside these windows.
    gpu_paused: Vec<(Duration, Duration)>,
    /// (dispatched at, synthesized at) of each partition in synthesis.
    in_synthesis: Vec<(Duration, Duration)>,
    waiting: usize,
    gpus: Vec<Option<(Duration, Duration)>>,
    samples: Vec<Sample>,
    dispatches: Vec<Duration>,
    first_gpu_done: Option<Duration>,
    max_in_flight: usize,
    gpu_busy: Vec<(Duration, Duration)>,
}

impl Sim {
    fn new(mode: PacerMode, gpu_workers: usize, synthesis_workers: usize, synthesis_s: f64, gpu_s: f64) -> Sim {
        Sim {
            pacer: Pacer::new(mode, gpu_workers).unwrap(),
            now: Duration::ZERO,
            synthesis_workers,
            synthesis_time: Box::new(move |_| secs(synthesis_s)),
            gpu_time: Box::new(move |_| secs(gpu_s)),
            gpu_paused: Vec::new(),
            in_synthesis: Vec::new(),
            waiting: 0,
            gpus: vec![None; gpu_workers],
            samples: Vec::new(),
            dispatches: Vec::new(),
            first_gpu_done: None,
            max_in_flight: 0,
            gpu_busy: Vec::new(),
        }
    }

    fn pi(config: PiConfig, gpu_workers: usize, synthesis_workers: usize, synthesis_s: f64, gpu_s: f64) -> Sim {
        Sim::new(
            PacerMode::Pi(config),
            gpu_workers,
            synthesis_workers,
            synthesis_s,
            gpu_s,
        )
    }

    fn gpu_paused_at(&self, t: Duration) -> bool {
        self.gpu_paused.iter().any(|&(a, b)| a <= t && t < b)
    }

    fn check_in_flight(&mut self) {
        let in_flight = self.waiting + self.in_synthesis.len();
        self.max_in_flight = self.max_in_flight.max(in_flight);
        let cap = self.pacer.state().in_flight_cap;
        assert!(in_flight <= cap, "{in_flight} in flight > cap {cap} at {:?}", self.now);
    }

    fn run_until(&mut self, end_s: f64) {
        let end = secs(end_s);
        loop {
            let now = self.now;
            let (done, busy): (Vec<_>, Vec<_>) = self.in_synthesis.iter().partition(|&&(_, t)| t <= now);
            self.in_synthesis = busy;
            for (start, _) in done {
                self.waiting += 1;
                self.pacer.on_synthesis_done(now, now - start);
            }
            for gpu in self.gpus.iter_mut() {
                if let Some((start, until)) = *gpu {
                    if until <= now {
                        *gpu = None;
                        self.pacer.on_gpu_done(now, until - start);
                        self.gpu_busy.push((start, until));
                        self.first_gpu_done.get_or_insert(now);
                    }
                }
            }
            if !self.gpu_paused_at(now) {
                for i in 0..self.gpus.len() {
                    if self.gpus[i].is_none() && self.waiting > 0 {
                        self.waiting -= 1;
                        self.pacer.on_gpu_start(now);
                        self.gpus[i] = Some((now, now + (self.gpu_time)(now)));
                    }
                }
            }
            while self.in_synthesis.len() < self.synthesis_workers && self.pacer.may_dispatch(now) {
                self.pacer.on_dispatch(now);
                self.dispatches.push(now);
                self.in_synthesis.push((now, now + (self.synthesis_time)(now)));
                self.check_in_flight();
            }
            self.check_in_flight();
            let state = self.pacer.state();
            assert_eq!(
                (state.waiting, state.in_synthesis),
                (self.waiting, self.in_synthesis.len())
            );
            self.samples.push(Sample {
                at: now,
                waiting: self.waiting,
            });

            let pause_end = self.gpu_paused.iter().map(|&(_, b)| b).filter(|&b| b > now);
            let dispatch = (self.in_synthesis.len() < self.synthesis_workers)
                .then(|| self.pacer.next_dispatch_at(now))
                .flatten();
            let next = self
                .in_synthesis
                .iter()
                .map(|&(_, t)| t)
                .chain(self.gpus.iter().flatten().map(|&(_, until)| until))
                .chain(pause_end)
                .chain(dispatch)
                .min();
            match next {
                Some(t) if t <= end => {
                    assert!(t > now, "no progress at {now:?}");
                    self.now = t;
                }
                _ => {
                    self.now = end;
                    return;
                }
            }
        }
    }

    fn samples_in(&self, from_s: f64, to_s: f64) -> impl Iterator<Item = Sample> + '_ {
        let (from, to) = (secs(from_s), secs(to_s));
        self.samples.iter().copied().filter(move |s| from <= s.at && s.at < to)
    }

    /// The waiting depth over `[from, to)`: every sample within ±1 of the target, and the
    /// time-weighted mean of each 20 s window within ±0.5 (no slow swing either).
    fn assert_settled(&self, from_s: f64, to_s: f64, target: usize) {
        let samples: Vec<Sample> = self.samples_in(from_s, to_s).collect();
        assert!(samples.len() > 10, "too few events in [{from_s}, {to_s})");
        let (min, max) = samples
            .iter()
            .fold((usize::MAX, 0), |(lo, hi), s| (lo.min(s.waiting), hi.max(s.waiting)));
        assert!(
            target.abs_diff(min) <= 1 && target.abs_diff(max) <= 1,
            "waiting in [{min}, {max}] over [{from_s}, {to_s}), target {target}"
        );
        let mut window = from_s;
        while window + 20.0 <= to_s {
            let mean = self.mean_waiting(window, window + 20.0);
            assert!(
                (mean - target as f64).abs() <= 0.5,
                "mean waiting {mean} over [{window}, +20), target {target}"
            );
            window += 20.0;
        }
    }

    fn mean_waiting(&self, from_s: f64, to_s: f64) -> f64 {
        let (from, to) = (secs(from_s), secs(to_s));
        let mut sum = 0.0;
        let mut last = self
            .samples
            .iter()
            .rev()
            .find(|s| s.at <= from)
            .expect("a sample before the window");
        for s in self
            .samples
            .iter()
            .filter(|s| from < s.at && s.at < to)
            .chain(std::iter::once(&Sample { at: to, waiting: 0 }))
        {
            sum += last.waiting as f64 * (s.at - last.at.max(from)).as_secs_f64();
            last = s;
        }
        sum / (to_s - from_s)
    }

    fn gpu_busy_fraction(&self, from_s: f64, to_s: f64) -> f64 {
        let (from, to) = (secs(from_s), secs(to_s));
        let busy: f64 = self
            .gpu_busy
            .iter()
            .chain(self.gpus.iter().flatten()) // partitions still on a GPU count up to `to`
            .map(|&(a, b)| b.min(to).saturating_sub(a.max(from)).as_secs_f64())
            .sum();
        busy / ((to_s - from_s) * self.gpus.len() as f64)
    }
}

fn config(target_depth: usize) -> PiConfig {
    PiConfig {
        target_depth,
        ..PiConfig::default()
    }
}

#[test]
fn steady_state_settles_at_the_target_without_oscillating() {
    for (gpu_workers, synthesis_s, gpu_s, target) in [(2, 0.8, 1.0, 4), (1, 0.3, 0.5, 2), (3, 1.5, 2.0, 3)] {
        let mut sim = Sim::pi(config(target), gpu_workers, 8, synthesis_s, gpu_s);
        sim.run_until(400.0);
        sim.assert_settled(200.0, 400.0, target);
        let busy = sim.gpu_busy_fraction(200.0, 400.0);
        assert!(busy > 0.99, "GPU busy {busy}");
    }
}

#[test]
fn gpu_speed_steps_re_settle() {
    // GPU time 1 s, halves to 0.5 s, doubles back to 1 s, doubles again to 2 s.
    let mut sim = Sim::pi(config(4), 2, 8, 0.4, 1.0);
    sim.gpu_time = Box::new(|t| match t.as_secs() {
        0..200 => secs(1.0),
        200..400 => secs(0.5),
        400..600 => secs(1.0),
        _ => secs(2.0),
    });
    sim.run_until(800.0);
    for phase in [0.0, 200.0, 400.0, 600.0] {
        sim.assert_settled(phase + 100.0, phase + 200.0, 4);
        let busy = sim.gpu_busy_fraction(phase + 100.0, phase + 200.0);
        assert!(busy > 0.99, "GPU busy {busy} after the step at {phase} s");
    }
}

#[test]
fn synthesis_speed_steps_re_settle() {
    // Synthesis 0.3 s, slows to 0.9 s, speeds up to 0.2 s (GPU 1 s, two GPU workers).
    let mut sim = Sim::pi(config(4), 2, 8, 0.3, 1.0);
    sim.synthesis_time = Box::new(|t| match t.as_secs() {
        0..200 => secs(0.3),
        200..400 => secs(0.9),
        _ => secs(0.2),
    });
    sim.run_until(600.0);
    for phase in [0.0, 200.0, 400.0] {
        sim.assert_settled(phase + 100.0, phase + 200.0, 4);
    }
    // Synthesis three times slower than the GPU: the cap must leave room for the
    // partitions in synthesis (2 workers × 3 s / 1 s = 6), so the engine raises it.
    let cap = PiConfig {
        in_flight_cap: Some(4 + 2 + 6),
        ..config(4)
    };
    let mut sim = Sim::pi(cap, 2, 8, 0.5, 1.0);
    sim.synthesis_time = Box::new(|t| if t < secs(200.0) { secs(0.5) } else { secs(3.0) });
    sim.run_until(400.0);
    sim.assert_settled(100.0, 200.0, 4);
    sim.assert_settled(300.0, 400.0, 4);
}

#[test]
fn never_more_than_target_plus_gpu_workers_in_flight() {
    // Fast synthesis, many synthesis workers, a GPU stall: the cap is what binds. The sim
    // checks the cap after every dispatch and every instant (`check_in_flight`).
    for (target, gpu_workers) in [(4, 2), (2, 1), (3, 3)] {
        let mut sim = Sim::pi(config(target), gpu_workers, 32, 0.1, 1.0);
        sim.gpu_paused.push((secs(50.0), secs(150.0)));
        sim.run_until(300.0);
        assert_eq!(
            sim.max_in_flight,
            target + gpu_workers,
            "the cap was never reached: the test proves nothing"
        );
    }
}

#[test]
fn the_start_is_paced_not_a_burst() {
    let initial = Duration::from_millis(50);
    let mut sim = Sim::pi(
        PiConfig {
            initial_interval: initial,
            ..config(4)
        },
        2,
        32,
        0.5,
        2.0,
    );
    sim.run_until(100.0);
    let first_gpu_done = sim.first_gpu_done.unwrap();
    let early: Vec<Duration> = sim.dispatches.iter().copied().filter(|&t| t < first_gpu_done).collect();
    assert!(
        early.len() <= 4,
        "{} dispatched before the first GPU time was known, target 4",
        early.len()
    );
    for pair in early.windows(2) {
        assert!(
            pair[1] - pair[0] >= initial,
            "dispatches at {:?} and {:?}",
            pair[0],
            pair[1]
        );
    }
    sim.assert_settled(50.0, 100.0, 4);
}

#[test]
fn a_start_whose_first_partitions_fail_goes_on_dispatching() {
    let initial = Duration::from_millis(100);
    let mut p = Pacer::new(
        PacerMode::Pi(PiConfig {
            initial_interval: initial,
            ..config(2)
        }),
        1,
    )
    .unwrap();
    let mut now = Duration::ZERO;
    for _ in 0..2 {
        now = p.next_dispatch_at(now).expect("the start dispatches");
        p.on_dispatch(now);
    }
    assert_eq!(
        p.next_dispatch_at(now),
        None,
        "target dispatched, no GPU time yet: wait"
    );
    p.on_synthesis_failed(now + secs(1.0));
    p.on_synthesis_failed(now + secs(1.0));
    let next = p.next_dispatch_at(now + secs(1.0));
    assert_eq!(next, Some(now + initial), "both failed: the start goes on, still paced");
    // And it stays paced: at most `target` in the pipeline before a GPU time is known.
    p.on_dispatch(now + secs(1.0));
    p.on_dispatch(now + secs(1.2));
    assert_eq!(p.next_dispatch_at(now + secs(1.2)), None);
}

#[test]
fn bounded_queue_keeps_its_bound() {
    let mut sim = Sim::new(PacerMode::BoundedQueue { depth: 6 }, 2, 32, 0.1, 1.0);
    sim.gpu_paused.push((secs(50.0), secs(150.0)));
    sim.run_until(300.0);
    assert_eq!(sim.max_in_flight, 6);
    // For comparison with the PI mode: it fills its bound in one burst at the start.
    assert_eq!(sim.dispatches.iter().filter(|&&t| t == Duration::ZERO).count(), 6);
}

#[test]
fn long_stalls_do_not_wind_the_integral_up() {
    // A GPU stall of 1000 s: the depth sits above the target (negative error); without the
    // integral clamp the pacer would then starve the GPU for minutes.
    let mut sim = Sim::pi(config(4), 2, 8, 0.4, 1.0);
    sim.gpu_paused.push((secs(100.0), secs(1100.0)));
    sim.run_until(1300.0);
    let resumed = sim
        .dispatches
        .iter()
        .filter(|&&t| secs(1100.0) <= t && t < secs(1101.0))
        .count();
    assert!(
        resumed <= 4,
        "{resumed} dispatched in the first GPU time after the stall, target 4"
    );
    sim.assert_settled(1150.0, 1300.0, 4);
    let busy = sim.gpu_busy_fraction(1100.0, 1300.0);
    assert!(busy > 0.97, "GPU busy {busy} after the stall");

    // A synthesis stall of 1000 s: nothing waits (error +1); without the clamp the pacer
    // would then hold the depth at the cap, above the target, for a long time.
    let mut sim = Sim::pi(config(4), 2, 8, 0.4, 1.0);
    sim.synthesis_time = Box::new(|t| {
        if secs(100.0) <= t && t < secs(110.0) {
            secs(1000.0)
        } else {
            secs(0.4)
        }
    });
    sim.run_until(1400.0);
    sim.assert_settled(1250.0, 1400.0, 4);
}

#[test]
fn bad_configs_are_refused() {
    let bad = [
        PiConfig {
            target_depth: 0,
            ..PiConfig::default()
        },
        PiConfig {
            kp: -1.0,
            ..PiConfig::default()
        },
        PiConfig {
            ki: f64::NAN,
            ..PiConfig::default()
        },
        PiConfig {
            gpu_time_alpha: 0.0,
            ..PiConfig::default()
        },
        PiConfig {
            integral_min: 1.0,
            ..PiConfig::default()
        },
        PiConfig {
            min_rate: 0.0,
            ..PiConfig::default()
        },
        PiConfig {
            min_rate: 4.0,
            ..PiConfig::default()
        },
        PiConfig {
            min_interval: Duration::ZERO,
            ..PiConfig::default()
        },
        PiConfig {
            in_flight_cap: Some(1),
            ..PiConfig::default()
        },
    ];
    for config in bad {
        assert!(
            matches!(Pacer::new(PacerMode::Pi(config), 1), Err(Error::InvalidArgument(_))),
            "{config:?}"
        );
    }
    assert!(matches!(
        Pacer::new(PacerMode::BoundedQueue { depth: 0 }, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Pacer::new(PacerMode::Pi(PiConfig::default()), 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(Pacer::new(PacerMode::Pi(PiConfig::default()), 1).is_ok());
}

#[test]
fn extreme_times_do_not_panic() {
    let mut pacer = Pacer::new(PacerMode::Pi(PiConfig::default()), 1).unwrap();
    pacer.on_gpu_start(Duration::ZERO); // misuse: nothing waiting
    pacer.on_dispatch(Duration::MAX);
    pacer.on_gpu_done(Duration::ZERO, Duration::MAX);
    assert_eq!(pacer.next_dispatch_at(Duration::MAX), Some(Duration::MAX));
    pacer.on_gpu_done(Duration::ZERO, Duration::ZERO);
    assert!(pacer.state().dispatch_rate.unwrap().is_finite());
}

#[test]
fn rate_and_interval_are_clamped() {
    let config = PiConfig { kp: 10.0, ..config(4) };
    let mut pacer = Pacer::new(PacerMode::Pi(config), 2).unwrap();
    pacer.on_gpu_done(secs(1.0), secs(1.0));
    // Nothing waits: 1 + kp·1 = 11, clamped to 3 × the drain rate of 2 per second.
    let state = pacer.state();
    assert_eq!(state.rate_factor, 3.0);
    assert_eq!(state.dispatch_rate, Some(6.0));
    pacer.on_dispatch(secs(1.0));
    assert_eq!(
        pacer.next_dispatch_at(secs(1.0)),
        Some(secs(1.0) + Duration::from_secs_f64(1.0 / 6.0))
    );
    // Ten waiting (over the target): 1 + 10·(−1.5) clamped to 0.3; a 1 ms GPU time would
    // mean 600 dispatches a second, clamped to one per 50 ms.
    for _ in 0..10 {
        pacer.on_synthesis_done(secs(1.0), secs(1.0));
    }
    assert_eq!(pacer.state().rate_factor, 0.3);
    let mut pacer = Pacer::new(PacerMode::Pi(config), 2).unwrap();
    pacer.on_gpu_done(secs(1.0), Duration::from_millis(1));
    pacer.on_dispatch(secs(1.0));
    assert_eq!(pacer.next_dispatch_at(secs(1.0)), Some(secs(1.05)));
}

/// Synthesis (or GPU) times `mean × (1 ± spread)`, uniform, from a fixed seed.
fn jittered(mean: f64, spread: f64, seed: u64) -> Box<dyn Fn(Duration) -> Duration> {
    use rand_core::RngCore;
    let rng = std::cell::RefCell::new(crate::rng::SplitMix::new(seed));
    Box::new(move |_| {
        let u = (rng.borrow_mut().next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        secs(mean * (1.0 + spread * (2.0 * u - 1.0)))
    })
}

/// The H200 host's regimes, one GPU worker: a 2^24 partition at the Filecoin mix (0.215 s on
/// the GPU; 15 synthesis threads; witness-only synthesis 0.1–1 s, full synthesis several
/// seconds) and a 32 GiB-shape PoRep partition (1.24 s on the GPU; 16 threads; native
/// witnesses ~0.3 s, `WitnessCs` ~40 s). Wherever the threads can synthesize faster than the
/// GPU proves, the GPU stays ≥ 95% busy, with synthesis times jittered by ±50%. A pacer that
/// watches only the waiting queue fell to 91–94% from about nine GPU times of synthesis up
/// (2^24: 2 s; 32 GiB: 10–19 s): it rang, one synthesis behind.
#[test]
fn the_gpu_stays_busy_wherever_synthesis_keeps_up() {
    let h200 = [
        (0.215, 15, &[0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 2.0, 3.0][..]),
        (1.24, 16, &[0.3, 1.0, 3.0, 6.0, 10.0, 15.0, 18.0][..]),
    ];
    for (gpu_s, workers, synthesis) in h200 {
        for &synthesis_s in synthesis {
            assert!(workers as f64 / synthesis_s > 1.05 / gpu_s, "a synthesis-bound case");
            // The engine's cap: target + synthesis workers.
            let cap = PiConfig {
                in_flight_cap: Some(2 + workers),
                ..config(2)
            };
            let mut sim = Sim::pi(cap, 1, workers, synthesis_s, gpu_s);
            sim.synthesis_time = jittered(synthesis_s, 0.5, 7);
            sim.gpu_time = jittered(gpu_s, 0.03, 9);
            let end = 600.0 * gpu_s;
            sim.run_until(end);
            let busy = sim.gpu_busy_fraction(end / 4.0, end);
            assert!(
                busy >= 0.95,
                "GPU {gpu_s} s, synthesis {synthesis_s} s ± 50% on {workers} threads: GPU busy {busy}"
            );
        }
    }
    // Synthesis-bound (`WitnessCs` at the 32 GiB shape, 40 s on 16 threads): every thread
    // stays busy, so the GPU is as busy as 16 syntheses at a time can make it.
    let mut sim = Sim::pi(
        PiConfig {
            in_flight_cap: Some(2 + 16),
            ..config(2)
        },
        1,
        16,
        40.0,
        1.24,
    );
    sim.synthesis_time = jittered(40.0, 0.5, 7);
    sim.run_until(2000.0);
    let busy = sim.gpu_busy_fraction(500.0, 2000.0);
    let bound = 16.0 * 1.24 / 40.0;
    assert!(busy >= 0.95 * bound, "GPU busy {busy}, synthesis allows {bound}");
}

#[test]
fn the_pipeline_follows_the_synthesis_time() {
    let mut pacer = Pacer::new(PacerMode::Pi(config(2)), 2).unwrap();
    assert_eq!(pacer.state().pipeline, 0.0, "nothing known yet");
    pacer.on_dispatch(secs(0.0));
    pacer.on_synthesis_done(secs(3.0), secs(3.0));
    assert_eq!(pacer.state().pipeline, 0.0, "no GPU time yet");
    pacer.on_gpu_start(secs(3.0));
    pacer.on_gpu_done(secs(4.0), secs(1.0));
    // Two GPU workers at 1 s a partition, 3 s a synthesis: six in synthesis keep them fed.
    let state = pacer.state();
    assert_eq!(state.pipeline, 6.0);
    assert_eq!(state.synthesis_time, Some(secs(3.0)));
    assert_eq!(state.projected_depth, -6.0);
    // Six dispatched: the projected depth is back at zero, one step of the target short.
    for _ in 0..6 {
        pacer.on_dispatch(secs(4.0));
    }
    assert_eq!(pacer.state().projected_depth, 0.0);
    // A finished synthesis moves one from synthesis to waiting: the projection stays.
    pacer.on_synthesis_done(secs(5.0), secs(1.0));
    let state = pacer.state();
    assert_eq!((state.waiting, state.in_synthesis), (1, 5));
    // The synthesis time is the median of the last nine: (3 + 1) / 2 s of two; then one long
    // outlier (a recording) among short ones does not count.
    assert_eq!(state.synthesis_time, Some(secs(2.0)));
    assert_eq!(state.pipeline, 4.0);
    for t in [0.5, 0.25, 0.5, 0.5] {
        pacer.on_synthesis_done(secs(6.0), secs(t));
    }
    // [3, 1, 0.5, 0.25, 0.5, 0.5]
    assert_eq!(pacer.state().synthesis_time, Some(secs(0.5)));
    assert_eq!(pacer.state().pipeline, 1.0);
    // A step to 2 s is followed once it is most of the window (five of nine).
    for (i, expected) in [(1, 0.5), (2, 0.75), (3, 1.0), (4, 1.0), (5, 2.0), (9, 2.0)] {
        while pacer.synthesis_times.iter().rev().take_while(|&&t| t == 2.0).count() < i {
            pacer.on_synthesis_done(secs(7.0), secs(2.0));
        }
        assert_eq!(pacer.state().synthesis_time, Some(secs(expected)), "after {i} of 2 s");
    }
    assert_eq!(pacer.synthesis_times.len(), SYNTHESIS_SAMPLES);
    // The bounded queue keeps no times.
    let mut queue = Pacer::new(PacerMode::BoundedQueue { depth: 4 }, 1).unwrap();
    queue.on_dispatch(secs(0.0));
    queue.on_synthesis_done(secs(1.0), secs(1.0));
    queue.on_gpu_done(secs(2.0), secs(1.0));
    assert_eq!((queue.state().pipeline, queue.state().synthesis_time), (0.0, None));
}

#[test]
fn a_batch_raises_the_depth_and_its_end_restores_it() {
    let mut sim = Sim::pi(config(2), 1, 8, 0.3, 1.0);
    sim.run_until(100.0);
    sim.assert_settled(50.0, 100.0, 2);
    // GPU workers that take five at a time: five wait, the cap grows by three.
    sim.pacer.set_batch(5);
    let state = sim.pacer.state();
    assert_eq!((state.target_depth, state.in_flight_cap), (5, 6));
    sim.run_until(250.0);
    sim.assert_settled(150.0, 250.0, 5);
    assert!(sim.gpu_busy_fraction(150.0, 250.0) > 0.99);
    // Back to one at a time: the configured depth and cap, and no dispatch while the five
    // waiting exceed it.
    sim.pacer.set_batch(1);
    let state = sim.pacer.state();
    assert_eq!((state.target_depth, state.in_flight_cap), (2, 3));
    assert!(sim.waiting >= 3);
    assert_eq!(sim.pacer.next_dispatch_at(sim.now), None);
}
