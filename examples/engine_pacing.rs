//! The engine's dispatch on any machine (no GPU): a stream of tiny partitions through the real
//! [`Engine`] — its pacer, budget, pool and threads — whose synthesis and "GPU" only sleep, for
//! the times of a real stream. It shows whether the engine keeps a GPU of that speed busy.
//!
//!     cargo run --release --example engine_pacing                       # the H200's 2^24 stream
//!     cargo run --release --example engine_pacing -- --prewarm 18       # with 18 full partitions pinned ahead
//!     cargo run --release --example engine_pacing -- --gpu-s 1.24 --synthesis-s 10 --synthesis-workers 16
//!
//! The defaults are the H200 host's 2^24 stream at the Filecoin mix (`engine_bench`): a proof
//! takes 0.215 s, a witness-only synthesis 0.35 s (±30%) on each of 15 threads, and the first
//! `--target` partitions (the one that records the compiled circuit and those dispatched
//! before it has) 5 s of full synthesis. The pool's allocator sleeps `--free-s` per buffer
//! freed and four times that per buffer allocated, as pinning memory costs (`cudaHostAlloc`
//! ~0.76 s a GiB, `cudaFreeHost` ~0.19 s a GiB: 0.1 s stands for a 2^24 partition's buffer).
//! `--prewarm N` pins N partitions' full-size buffers ahead, as `engine_bench` did on the
//! witness path before it prewarmed only the first `--target`: buffers no witness partition
//! reuses, which the engine frees under budget pressure in its dispatcher, mid-stream.
//!
//! Prints one table row: seconds per partition once warm (the first `--warmup` excluded), GPU
//! busy over the same window, the share of that window's samples in which nothing was on the
//! GPU, the pacer's synthesis time and pipeline at the end, and the idle pool bytes freed.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective};
use clap::Parser;
use cuzk::compiled::{CompiledCircuit, Witness};
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job};
use cuzk::prover::{Backend, Commitments, Timings};
use cuzk::testing::{random_parameters, SplitMix, Synthetic};
use cuzk::{Circuit, ConstraintSystem, HeapAllocator, HostAllocator, Parameters, PinnedPool, ProvingAssignment};
use cuzk::{Scalar, SynthesisError};
use group::Group;
use rand_core::RngCore;
use support::{fail, machine};

/// The real engine with sleeping synthesis, GPU and pinning (see the file's docs).
#[derive(Parser)]
#[command(name = "engine_pacing")]
struct Args {
    /// Seconds a proof takes on the stand-in GPU.
    #[arg(long, value_name = "S", default_value_t = 0.215)]
    gpu_s: f64,
    /// Seconds a (witness-only) synthesis takes, on average.
    #[arg(long, value_name = "S", default_value_t = 0.35)]
    synthesis_s: f64,
    /// Synthesis times are uniform in synthesis × (1 ± jitter).
    #[arg(long, value_name = "F", default_value_t = 0.3)]
    jitter: f64,
    /// Seconds the first `--target` syntheses take (full, recording).
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    first_s: f64,
    /// Synthesis threads.
    #[arg(long, value_name = "N", default_value_t = 15, value_parser = support::at_least_one)]
    synthesis_workers: usize,
    /// Partitions through the engine.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = support::at_least_one)]
    partitions: usize,
    /// Partitions left out of the figures at the start.
    #[arg(long, value_name = "N", default_value_t = 4)]
    warmup: usize,
    /// The pacer's target depth (the engine's default PI pacer otherwise).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = support::at_least_one)]
    target: usize,
    /// Full-size partitions' buffers pinned before the stream.
    #[arg(long, value_name = "N", default_value_t = 0)]
    prewarm: usize,
    /// Seconds the allocator takes to free one buffer (four times that to allocate one).
    #[arg(long, value_name = "S", default_value_t = 0.1)]
    free_s: f64,
}

/// A tiny synthetic circuit that sleeps first, for the time a real synthesis takes.
struct Sleepy {
    circuit: Synthetic,
    sleep: Duration,
}

impl Circuit<Scalar> for Sleepy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        std::thread::sleep(self.sleep);
        self.circuit.synthesize(cs)
    }
}

/// A GPU that sleeps for a proof's time and computes nothing (the commitments are the
/// identity: the proofs are not checked). It evaluates a witness's a, b, c "on the device",
/// taking nothing from the pool, as the CUDA backend does with a resident circuit.
struct SleepingGpu(Duration);

fn nothing() -> Commitments {
    Commitments {
        h: G1Projective::identity(),
        l: G1Projective::identity(),
        a: G1Projective::identity(),
        b_g1: G1Projective::identity(),
        b_g2: G2Projective::identity(),
    }
}

impl Backend for SleepingGpu {
    fn name(&self) -> &'static str {
        "sleeping-gpu"
    }

    fn commitments(&self, a: &mut ProvingAssignment, _: &Parameters, _: &mut Timings) -> cuzk::Result<Commitments> {
        a.release_abc();
        std::thread::sleep(self.0);
        Ok(nothing())
    }

    fn witness_commitments(
        &self,
        _: &CompiledCircuit,
        _: &Witness,
        _: &Parameters,
        _: Option<&PinnedPool>,
        _: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        std::thread::sleep(self.0);
        Ok(nothing())
    }

    fn witness_pool_requests(&self, _: &CompiledCircuit) -> [usize; 4] {
        [0; 4]
    }
}

/// The heap, as slow to allocate and free as pinned memory.
struct SlowPinning {
    free: Duration,
}

// SAFETY: every block comes from and goes back to `HeapAllocator`, whose contract this keeps.
unsafe impl HostAllocator for SlowPinning {
    fn name(&self) -> &'static str {
        "slow-pinning heap"
    }

    fn is_pinned(&self) -> bool {
        true
    }

    fn allocate(&self, bytes: usize) -> cuzk::Result<std::ptr::NonNull<u8>> {
        std::thread::sleep(self.free * 4);
        HeapAllocator.allocate(bytes)
    }

    unsafe fn free(&self, ptr: std::ptr::NonNull<u8>, bytes: usize) {
        std::thread::sleep(self.free);
        // SAFETY: `ptr` and `bytes` come from `HeapAllocator::allocate` above (the caller's
        // contract), freed once.
        unsafe { HeapAllocator.free(ptr, bytes) }
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_else(|_| fail(&format!("not a time in seconds: {s}")))
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    let n = args.partitions;
    let warmup = args.warmup.min(n.saturating_sub(1));
    let workers = args.synthesis_workers;
    let params = random_parameters(Synthetic::new(8), 1).unwrap_or_else(|e| fail(&e.to_string()));
    let mut rng = SplitMix::new(3);
    let circuits: Vec<Sleepy> = (0..n)
        .map(|i| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let sleep = if i < args.target {
                args.first_s
            } else {
                args.synthesis_s * (1.0 + args.jitter * (2.0 * u - 1.0))
            };
            Sleepy {
                circuit: Synthetic::new(8).with_seed(i as u64),
                sleep: secs(sleep),
            }
        })
        .collect();
    // engine_bench's budget: the partitions in flight (target + GPU worker + synthesis
    // workers) at full size, beside the parameters.
    let hint = params_hint(&params);
    let budget = (args.target + 1 + workers) * partition_bytes(hint, 1.0) + params.host_bytes();
    let mut config = EngineConfig {
        synthesis_workers: workers,
        budget_bytes: budget,
        backends: vec![EngineBackend::Custom(Arc::new(SleepingGpu(secs(args.gpu_s))))],
        pool_allocator: Some(Box::new(SlowPinning {
            free: secs(args.free_s),
        })),
        witness_path: true,
        ..EngineConfig::default()
    };
    if let cuzk::engine::PacerMode::Pi(pi) = &mut config.pacer {
        pi.target_depth = args.target;
    }
    let engine = Engine::new(config).unwrap_or_else(|e| fail(&e.to_string()));
    engine
        .add_parameters(&params)
        .unwrap_or_else(|e| fail(&format!("parameters: {e}")));
    if args.prewarm > 0 {
        let got = engine
            .prewarm(hint, args.prewarm)
            .unwrap_or_else(|e| fail(&format!("prewarm: {e}")));
        eprintln!("prewarmed {got} partitions' buffers");
    }

    let handle = engine.submit(Job::from_circuits(params, circuits));
    let mut warm = None;
    let (mut samples, mut gpu_idle) = (0u64, 0u64);
    while !handle.is_finished() {
        let st = engine.stats();
        let done = st.partitions_done as usize;
        if done >= warmup && warm.is_none() {
            warm = Some((Instant::now(), st.workers[0].busy, st.partitions_done));
        }
        if warm.is_some() && done < n {
            samples += 1;
            gpu_idle += u64::from(st.on_gpu == 0);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    handle.wait().unwrap_or_else(|e| fail(&format!("engine: {e}")));
    let end = engine.stats();
    let (at, busy, done) = warm.unwrap_or_else(|| fail("the stream finished before its warm-up"));
    let window = at.elapsed().as_secs_f64();
    let proved = (end.partitions_done - done).max(1) as f64;

    println!();
    println!("machine: {}", machine());
    println!(
        "stand-in GPU {} s a proof; synthesis {} s ± {:.0}% on {workers} threads (the first {} {} s); {n} partitions ({warmup} warm-up); {} prewarmed; pinning {} s a buffer freed",
        args.gpu_s,
        args.synthesis_s,
        args.jitter * 100.0,
        args.target,
        args.first_s,
        args.prewarm,
        args.free_s
    );
    println!("| s / partition | GPU busy | samples with the GPU idle | pacer synthesis time / pipeline | idle pool bytes freed |");
    println!("|---|---|---|---|---|");
    println!(
        "| {:.3} | {:.1}% | {:.1}% | {:.2} s / {:.1} | {} |",
        window / proved,
        100.0 * (end.workers[0].busy - busy).as_secs_f64() / window,
        100.0 * gpu_idle as f64 / samples.max(1) as f64,
        end.pacer.synthesis_time.unwrap_or_default().as_secs_f64(),
        end.pacer.pipeline,
        end.evicted_pool_bytes
    );
}
