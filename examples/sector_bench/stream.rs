//! One stream: an engine of its own, the Winning-PoSt stand-in alone, every sector submitted
//! at once and followed as it finishes, the stand-in under load, and the stream's report.

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk::compiled::CircuitShape;
use cuzk::engine::{Engine, EngineConfig, EngineStats, Job, JobHandle, Partition};
use cuzk::filecoin::PRIORITY_WINNING_POST;
use cuzk::testing::Synthetic;
use cuzk::{CompiledCircuit, Parameters, Proof};
use serde_json::json;

use crate::args::{Args, Kind, StreamSpec};
use crate::circuits::{randomness, winning_circuit, Generator, SectorCircuit, Timed};
use crate::deadline::Deadline;
use crate::gpus::Gpus;
use crate::memory::{proc_status, reset_hwm, rss, trim_heap, Sampler};
use crate::ok;
use crate::report::{gib, mean, secs, Out, SectorRow, StreamResult};

pub(crate) fn busy(stats: &EngineStats) -> Duration {
    stats.workers.iter().map(|w| w.busy).sum()
}

/// The latency of `handle`'s job from `submitted` (submit → proofs), waited for on a thread of
/// its own: `None` when the job failed (reported as `what`'s error).
pub(crate) fn latency_later(
    what: &'static str,
    handle: JobHandle,
    submitted: Instant,
) -> mpsc::Receiver<Option<Duration>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let latency = match handle.wait() {
            Ok(_) => Some(submitted.elapsed()),
            Err(e) => {
                eprintln!("error: {what}: {e}");
                None
            }
        };
        let _ = tx.send(latency);
    });
    rx
}

/// Proves the Winning-PoSt stand-in at its priority and returns its latency (submit → proof).
pub(crate) fn winning(engine: &Engine, params: &Parameters, k: u32, seed: u64) -> Duration {
    let start = Instant::now();
    let job = Job::from_circuits(params.clone(), vec![winning_circuit(k, seed)])
        .with_priority(PRIORITY_WINNING_POST)
        .with_label("winning-post stand-in");
    ok("Winning PoSt stand-in", engine.submit(job).wait());
    start.elapsed()
}

/// What every stream shares: the circuits, the parameters, the engine's configuration.
pub(crate) struct Bench<'a> {
    pub(crate) args: &'a Args,
    pub(crate) gpus: &'a Gpus,
    pub(crate) circuits: &'a [SectorCircuit],
    /// Each partition's native witness generator, where it has one (PoRep).
    pub(crate) generators: &'a [Option<Generator>],
    pub(crate) kind: Kind,
    pub(crate) partitions_per_sector: usize,
    pub(crate) params: &'a Parameters,
    pub(crate) wparams: &'a Parameters,
    pub(crate) synthesis_workers: usize,
    pub(crate) gpu_workers: usize,
    pub(crate) winning_k: u32,
    pub(crate) budget: usize,
    pub(crate) baseline: usize,
    pub(crate) slack: usize,
    /// `--deadline`'s circuits and parameters.
    pub(crate) deadline: Option<&'a Deadline>,
}

impl Bench<'_> {
    /// Partition `k` of the sector at `slot`, its synthesis (or generation) time recorded in
    /// `times[slot]`; with its native witness generator when `native` and it has one.
    fn partition(&self, native: bool, k: usize, slot: usize, times: &Arc<Mutex<Vec<Option<Duration>>>>) -> Partition {
        let timed = Timed {
            circuit: self.circuits[k].clone(),
            slot,
            times: times.clone(),
        };
        match self.generators.get(k).cloned().flatten() {
            Some(generate) if native => {
                let times = times.clone();
                Partition::with_generator(timed, move |cs: &mut cuzk::WitnessCs, threads: usize| {
                    let start = Instant::now();
                    let r = generate(cs, threads);
                    times.lock().unwrap_or_else(|p| p.into_inner())[slot] = Some(start.elapsed());
                    r
                })
            }
            _ => Partition::circuit(timed),
        }
    }

    /// Before a native stream: one-partition jobs (at most two: the first records the compiled
    /// circuit when no stream handed it on) until the engine has checked the generator against
    /// the gadgets, so the stream's sectors are all generated.
    fn validate_generator(&self, engine: &Engine, out: &mut Out) {
        let start = Instant::now();
        let times = Arc::new(Mutex::new(vec![None; 1]));
        for _ in 0..2 {
            let w = engine.stats().witness;
            if w.generator_validated + w.generator_refused > 0 {
                break;
            }
            let job = Job::new(self.params.clone(), vec![self.partition(true, 0, 0, &times)])
                .with_label("native witness validation");
            ok("native witness validation", engine.submit(job).wait());
        }
        let w = engine.stats().witness;
        out.line(&format!(
            "native witness generator: {} validated, {} refused ({} recorded) in {:.1} s before the stream \
             (a partition's witness by the gadgets and by the generator, compared value for value)",
            w.generator_validated,
            w.generator_refused,
            w.recorded,
            secs(start.elapsed())
        ));
    }

    /// The compiled circuits of `engine` the next witness stream's engine can use: the sector
    /// partition's and the Winning stand-in's (the engine keys them by circuit type and shape).
    pub(crate) fn compiled_of(&self, engine: &Engine) -> Vec<Arc<CompiledCircuit>> {
        let cache = engine.compiled_circuits();
        let timed = std::any::type_name::<Timed>();
        [
            cache.get_in_memory(timed, CircuitShape::of_params(self.params)),
            cache.get_in_memory(
                std::any::type_name::<Synthetic>(),
                CircuitShape::of_params(self.wparams),
            ),
        ]
        .into_iter()
        .chain(
            self.deadline
                .into_iter()
                .flat_map(|d| d.shapes())
                .map(|shape| cache.get_in_memory(timed, shape)),
        )
        .flatten()
        .collect()
    }

    /// Runs stream `index` on an engine of its own; returns what it measured and its proofs
    /// by sector (None for a failed sector). `carried`: compiled circuits from earlier streams
    /// (given to a witness stream's engine, replaced by its own when `later_witness`).
    pub(crate) fn stream(
        &self,
        index: usize,
        spec: &StreamSpec,
        carried: &mut Vec<Arc<CompiledCircuit>>,
        later_witness: bool,
        out: &mut Out,
    ) -> (StreamResult, Vec<Option<Vec<Proof>>>) {
        let (args, params, wparams) = (self.args, self.params, self.wparams);
        let (n_sectors, pps, winning_k) = (spec.sectors, self.partitions_per_sector, self.winning_k);
        let total = n_sectors * pps;
        if !spec.witness && !later_witness {
            carried.clear();
        }
        trim_heap();
        let limit = spec.limit_bytes();
        let kept = ok("device memory limit", self.gpus.begin(limit, spec.witness));
        let hwm_reset = reset_hwm();
        let rss_start = rss();
        let engine = ok(
            "engine",
            Engine::new(EngineConfig {
                synthesis_workers: self.synthesis_workers,
                budget_bytes: self.budget,
                gpu_workers_per_backend: args.gpu_workers,
                backends: self.gpus.engine_backends(),
                witness_path: spec.witness,
                native_witness: spec.native,
                synthesis_bytes_per_constraint: args.synthesis_bytes_per_constraint,
                // As the Filecoin engine: Winning PoSt (here its stand-in) is urgent.
                urgent_priority: Some(PRIORITY_WINNING_POST),
                stream_batch: args.stream_batch,
                ..EngineConfig::default()
            }),
        );
        let (handed, outside) = if spec.witness {
            for c in carried.iter() {
                ok(
                    "handing a compiled circuit on",
                    engine.compiled_circuits().insert(c.clone()),
                );
            }
            (carried.len(), 0)
        } else {
            (0, carried.iter().map(|c| c.byte_size()).sum::<usize>())
        };
        let predicted = self.gpus.would_stream(params);
        let t = Instant::now();
        ok("parameters", engine.add_parameters(params));
        ok("parameters", engine.add_parameters(wparams));
        if let Some(d) = self.deadline {
            d.add_to(&engine);
        }
        let ready = t.elapsed();
        let sampler = Sampler::start();

        out.line("");
        out.line(&format!("### stream {index}: {spec}"));
        out.line(&format!(
            "{}, device memory limit {}, {n_sectors} sector(s) of {pps} partitions; parameters {}, ready in {:.1} s; \
             {handed} compiled circuit(s) handed on from earlier streams{}; RSS at the start {:.2} GiB{}",
            if spec.witness { "witness path" } else { "full synthesis" },
            spec.limit_gib
                .map_or("none (the device's)".to_string(), |g| format!("{g} GiB")),
            match predicted {
                None => "on the host (CPU backend)".to_string(),
                Some(s) => format!(
                    "to be {} ({:.2} GiB; would_stream)",
                    if s { "streamed" } else { "resident" },
                    gib(params.device_bytes())
                ),
            },
            secs(ready),
            if kept > 0 {
                format!(
                    " ({:.2} GiB of them kept resident on the device: within the limit)",
                    gib(kept)
                )
            } else {
                String::new()
            },
            gib(rss_start),
            if hwm_reset {
                ""
            } else {
                " (VmHWM could not be reset: process-wide)"
            }
        ));

        // Winning PoSt alone on this engine (twice; the second counts).
        let first_alone = winning(&engine, wparams, winning_k, 1);
        let alone = winning(&engine, wparams, winning_k, 2);
        out.line(&format!(
            "Winning PoSt stand-in (2^{winning_k}) alone: {:.3} s, then {:.3} s",
            secs(first_alone),
            secs(alone)
        ));
        if spec.native {
            self.validate_generator(&engine, out);
        }
        let deadline_alone = self.deadline.map(|d| d.alone(&engine, spec.native, out));
        let books_start = self.gpus.books();

        // The stream: every sector submitted at once.
        let times = Arc::new(Mutex::new(vec![None; total]));
        let (r, s) = randomness(total);
        let (tx, rx) = mpsc::channel::<(usize, cuzk::engine::Progress, Instant)>();
        out.event(json!({
            "event": "stream_start", "stream": index, "kind": self.kind.name(), "spec": spec.to_string(), "sectors": n_sectors,
            "partitions_per_sector": pps, "parameters_ready_s": secs(ready), "winning_alone_s": secs(alone),
            "predicted_streamed": predicted,
        }));
        out.line("| sector | done at s | wall s | GPU busy | synthesis s / partition (mean, min–max) | peak RSS GiB (sector / VmHWM) | failed partitions |");
        out.line("|---|---|---|---|---|---|---|");
        sampler.window();
        let start = Instant::now();
        let start_stats = engine.stats();
        let handles: Vec<_> = (0..n_sectors)
            .map(|sector| {
                let partitions = (0..self.circuits.len())
                    .map(|k| self.partition(spec.native, k, sector * pps + k, &times))
                    .collect();
                let range = sector * pps..(sector + 1) * pps;
                let job = Job::new(params.clone(), partitions)
                    .with_priority(self.kind.priority())
                    .with_randomness(r[range.clone()].to_vec(), s[range].to_vec())
                    .with_label(format!("stream {index} sector {sector}"));
                let handle = engine.submit(job);
                let tx = tx.clone();
                handle.on_progress(Box::new(move |p| {
                    let _ = tx.send((sector, p, Instant::now()));
                }));
                handle
            })
            .collect();
        drop(tx);

        let mut rows: Vec<Option<SectorRow>> = (0..n_sectors).map(|_| None).collect();
        let (mut last_at, mut last_busy) = (start, busy(&start_stats));
        let mut done = vec![0usize; n_sectors];
        let mut winning_under_load: Option<mpsc::Receiver<Option<Duration>>> = None;
        let mut deadline_in_flight = None;
        // Each partition's proof time from the stream's start (--deadline's throughput).
        let mut proved_at: Vec<Duration> = Vec::new();
        let (mut most_resident, mut most_streamed) = (0usize, 0usize);
        let mut seen = vec![(0usize, 0usize); n_sectors];
        for (sector, p, at) in rx {
            let newly = p.done.saturating_sub(done[sector]);
            proved_at.extend(std::iter::repeat(at.duration_since(start)).take(newly));
            done[sector] = p.done;
            let proved: usize = done.iter().sum();
            if seen[sector] != (p.done, p.failed) {
                seen[sector] = (p.done, p.failed);
                out.event(json!({
                    "event": "partition", "stream": index, "spec": spec.to_string(), "sector": sector,
                    "done": p.done, "failed": p.failed, "total": p.total, "at_s": secs(at.duration_since(start)),
                }));
            }
            let mid = proved * 2 >= total && proved < total;
            if let (Some(d), true, None) = (self.deadline, mid, &deadline_in_flight) {
                // As the stand-in's below: half a partition's proof after this one finished.
                std::thread::sleep(engine.stats().gpu_time_ema.unwrap_or_default() / 2);
                deadline_in_flight = Some(d.submit(&engine, spec.native, start, index));
            } else if self.deadline.is_none() && winning_under_load.is_none() && mid {
                // Mid-proof, not at a proof's end (when the next GPU start is still open): half
                // a partition's proof after this one finished.
                let delay = engine.stats().gpu_time_ema.unwrap_or_default() / 2;
                std::thread::sleep(delay);
                let on_gpu = engine.stats().on_gpu;
                let job = Job::from_circuits(wparams.clone(), vec![winning_circuit(winning_k, 3)])
                    .with_priority(PRIORITY_WINNING_POST)
                    .with_label("winning-post stand-in under load");
                let submitted = Instant::now();
                let handle = engine.submit(job);
                eprintln!(
                    "stream {index}: Winning PoSt stand-in submitted {:.2} s after a proof ended ({on_gpu} partition(s) on the GPUs)",
                    delay.as_secs_f64()
                );
                winning_under_load = Some(latency_later("Winning PoSt stand-in under load", handle, submitted));
            }
            if p.finished {
                let st = engine.stats();
                let b = busy(&st);
                let wall = at.duration_since(last_at);
                let busy_frac =
                    (b - last_busy).as_secs_f64() / (wall.as_secs_f64() * self.gpu_workers as f64).max(1e-9);
                let synthesis: Vec<Duration> = times.lock().unwrap_or_else(|p| p.into_inner())
                    [sector * pps..(sector + 1) * pps]
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                let dev = self.gpus.books();
                most_resident = most_resident.max(dev.resident_bytes);
                most_streamed = most_streamed.max(dev.streamed_sets);
                let row = SectorRow {
                    done_at: at.duration_since(start),
                    wall,
                    busy: busy_frac.min(1.0),
                    synthesis,
                    window_rss: sampler.window(),
                    hwm: proc_status("VmHWM:").unwrap_or(0),
                    failed: p.failed,
                };
                let secs_v: Vec<f64> = row.synthesis.iter().map(Duration::as_secs_f64).collect();
                let m = mean(&row.synthesis).unwrap_or(0.0);
                let (min, max) = secs_v
                    .iter()
                    .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                out.line(&format!(
                    "| {sector} | {:.1} | {:.1} | {:.0}% | {m:.2} ({:.2}–{max:.2}) | {:.1} / {:.1} | {} |",
                    secs(row.done_at),
                    secs(row.wall),
                    row.busy * 100.0,
                    if secs_v.is_empty() { 0.0 } else { min },
                    gib(row.window_rss),
                    gib(row.hwm),
                    row.failed
                ));
                out.event(json!({
                    "event": "sector", "stream": index, "spec": spec.to_string(), "sector": sector,
                    "done_at_s": secs(row.done_at), "wall_s": secs(row.wall), "gpu_busy": row.busy,
                    "synthesis_s": secs_v, "peak_rss_bytes": row.window_rss, "vmhwm_bytes": row.hwm,
                    "failed_partitions": row.failed,
                }));
                eprintln!(
                    "stream {index} sector {sector} done at {:.1} s ({} failed partitions); budget {:.1}/{:.1} GiB (host-evaluation slots {:.1}), RSS {:.1} GiB",
                    secs(row.done_at),
                    p.failed,
                    gib(st.budget_used),
                    gib(st.budget_limit),
                    gib(st.evaluation_reserved),
                    gib(rss())
                );
                rows[sector] = Some(row);
                (last_at, last_busy) = (at, b);
                // The callbacks (and their senders) live as long as the handles: stop counting.
                if rows.iter().all(Option::is_some) {
                    break;
                }
            }
        }
        let proofs: Vec<Option<Vec<Proof>>> = handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| match h.wait() {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("error: stream {index} sector {i}: {e}");
                    None
                }
            })
            .collect();
        let failed_sectors = proofs.iter().filter(|p| p.is_none()).count();
        let stream_wall = start.elapsed();
        let under_load = winning_under_load.and_then(|rx| rx.recv().ok().flatten());
        let deadline = match (self.deadline, deadline_in_flight, deadline_alone) {
            (Some(d), Some(flight), Some(alone)) => {
                let r = d.finish(flight, alone, &proved_at, out);
                out.event(r.event(index, &spec.to_string()));
                Some(r)
            }
            (Some(_), None, _) => {
                out.line("deadline: not submitted (the stream ended before half its partitions were proved)");
                None
            }
            _ => None,
        };
        let end = engine.stats();
        let dev = self.gpus.books();
        most_resident = most_resident.max(dev.resident_bytes);
        most_streamed = most_streamed.max(dev.streamed_sets);
        let stream_peak = sampler.stop();
        if spec.witness && later_witness {
            let own = self.compiled_of(&engine);
            if !own.is_empty() {
                *carried = own;
            }
        }
        if !later_witness {
            carried.clear();
        }
        drop(engine);
        ok("restoring the device memory limit", self.gpus.restore());

        // The stream's report.
        let all_busy = (busy(&end) - busy(&start_stats)).as_secs_f64()
            / (stream_wall.as_secs_f64() * self.gpu_workers as f64).max(1e-9);
        let proof_ema = end.gpu_time_ema.unwrap_or_default();
        let (placement, evaluations) = if self.gpus.is_cpu() {
            ("host", None)
        } else {
            let placement = if most_resident >= params.device_bytes() {
                "resident"
            } else if most_streamed > 0 {
                "streamed"
            } else {
                "unknown"
            };
            let evaluations = (dev.on_device - books_start.on_device, dev.on_host - books_start.on_host);
            (placement, Some(evaluations))
        };
        let over_limit = limit.is_some_and(|l| most_resident > l);
        let bound = self.budget + self.baseline + self.slack + outside;
        let result = StreamResult {
            spec: spec.clone(),
            rows,
            failed_sectors,
            wall: stream_wall,
            gpu_busy: all_busy.min(1.0),
            peak_rss: stream_peak,
            bound,
            alone,
            under_load,
            proof_ema,
            placement,
            over_limit,
            evaluations,
            same_as_first: None,
            deadline,
            proved_at,
            pps,
        };
        let steady = result
            .steady()
            .map_or("n/a (one sector)".to_string(), |x| format!("{x:.1} s"));
        let later = result
            .later_sector_wall()
            .map_or("n/a".to_string(), |x| format!("{x:.1} s"));
        out.line(&format!(
            "stream {index} ({spec}): {:.1} s for {n_sectors} sector(s) ({failed_sectors} failed); per sector, steady: {steady} (mean wall of the later sectors: {later}); \
             GPU busy {:.0}%; synthesis EMA {:.2} s, proof EMA {:.3} s a partition",
            secs(stream_wall),
            result.gpu_busy * 100.0,
            end.synthesis_time_ema.unwrap_or_default().as_secs_f64(),
            secs(proof_ema)
        ));
        let w = end.witness;
        out.line(&format!(
            "synthesis path: {} recorded, {} witness-only, {} generated natively, {} full, {} fallbacks (the Winning stand-in's 3 proofs \
             and a native stream's validation included); compiled circuits {:.2} GiB; budget peak {:.2} GiB, {} waits; \
             {} partitions proved in {} batches (at most {} together)",
            w.recorded,
            w.witness,
            w.generated,
            w.full,
            w.fallbacks,
            gib(end.compiled_bytes),
            gib(end.budget_peak),
            end.budget_waits,
            end.batched_partitions - start_stats.batched_partitions,
            end.batches - start_stats.batches,
            args.stream_batch
        ));
        if let Some((on_device, on_host)) = evaluations {
            out.line(&format!(
                "device: parameters {placement}{} (predicted {}; most resident {:.2} GiB of the set's {:.2} GiB, {most_streamed} set(s) streamed); \
                 device peak {:.2} GiB, limit {}; witness proofs evaluated on the device {on_device}, on the host {on_host} \
                 (the Winning stand-in's under load included); compiled circuits resident on the device at the end: {} ({:.2} GiB); \
                 out-of-memory retries {}, idle sets evicted before streamed proofs {}",
                if over_limit { ", OVER THE LIMIT" } else { "" },
                if predicted == Some(true) { "streamed" } else { "resident" },
                gib(most_resident),
                gib(params.device_bytes()),
                gib(dev.peak),
                spec.limit_gib.map_or("none".to_string(), |g| format!("{g} GiB")),
                dev.resident_circuits,
                gib(dev.circuit_bytes),
                dev.oom_retries - books_start.oom_retries,
                dev.evicted_for_streamed - books_start.evicted_for_streamed
            ));
        }
        match under_load {
            Some(lat) => out.line(&format!(
                "Winning PoSt stand-in (2^{winning_k}, priority {PRIORITY_WINNING_POST}): alone {:.3} s, under load {:.3} s; \
                 bound (one {} proof + alone) {:.3} s: {}",
                secs(alone),
                secs(lat),
                self.kind.name(),
                secs(proof_ema + alone),
                if lat <= proof_ema + alone { "within" } else { "OVER" }
            )),
            None => out.line(&format!(
                "Winning PoSt stand-in: alone {:.3} s; not measured under load ({})",
                secs(alone),
                if self.deadline.is_some() {
                    "--deadline: the Winning PoSt partition was, above"
                } else {
                    "the stream ended first, or it failed"
                }
            )),
        }
        out.line(&format!(
            "memory: peak RSS over the stream {:.2} GiB (VmHWM {:.2} GiB); B {:.2} GiB; B + constant {:.2} GiB \
             (RSS before the parameters {:.2} GiB + slack {:.2} GiB{}): {}",
            gib(stream_peak),
            gib(proc_status("VmHWM:").unwrap_or(0)),
            gib(self.budget),
            gib(bound),
            gib(self.baseline),
            gib(self.slack),
            if outside > 0 {
                format!(" + compiled circuits held for a later stream {:.2} GiB", gib(outside))
            } else {
                String::new()
            },
            if stream_peak <= self.budget {
                "within B"
            } else if stream_peak <= bound {
                "over B, within B + constant"
            } else {
                "OVER B + constant"
            }
        ));
        (result, proofs)
    }
}
