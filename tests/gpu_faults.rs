//! Failure paths on the GPU (features `cuda` + `fault-injection`; run on the GPU machine).
//!
//! Every phase of a proof is made to fail, with a non-sticky CUDA error and with out of
//! memory, after which: `prove` returns an error naming the phase (or, for one out-of-memory
//! failure, frees caches and succeeds on its one retry; for a witness-path proof out of memory
//! in its H step past the retry, goes on with a, b, c evaluated on the host); every pool buffer is back, and the
//! pool can unpin, unmap and reuse them at once (no copy still reads them); device memory
//! returns to its baseline; and the next proof gives the CPU's bytes. A sticky error marks the
//! device lost: `Auto`'s policy goes on on the CPU, a GPU-only prover fails fast.
#![cfg(all(feature = "cuda", feature = "fault-injection"))]

mod common;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use blstrs::Scalar;
use cuzk::pool::PinMode;
use cuzk::prover::cuda::fault::with_cpu_fallback;
use cuzk::prover::cuda::fault::{self, Phase};
use cuzk::prover::cuda::{self, CudaBackend};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, Error, Parameters, PinnedPool, PoolConfig, Prover};
use ff::Field;
use rand::Rng;

/// Faults are process-wide: one test at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

struct Setup {
    circuit: Synthetic,
    params: Parameters,
    r: Scalar,
    s: Scalar,
    expected: Vec<u8>,
}

/// One 2^20 circuit (a/b/c of 32 MiB each: their copies are still running when a fault right
/// after queueing them returns), its parameters, and the CPU's proof.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let mut rng = common::rng("gpu_faults");
        let circuit = Synthetic::new(20).with_seed(rng.gen());
        let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let expected = Prover::new()
            .with_backend(BackendChoice::Cpu)
            .unwrap()
            .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
            .unwrap()[0]
            .to_bytes()
            .to_vec();
        Setup {
            circuit,
            params,
            r,
            s,
            expected,
        }
    })
}

fn prove(prover: &Prover, st: &Setup) -> cuzk::Result<Vec<u8>> {
    prover
        .prove_with_randomness(vec![st.circuit.clone()], &st.params, &[st.r], &[st.s])
        .map(|p| p[0].to_bytes().to_vec())
}

/// Device memory after everything cuzk holds is released. cudaMemGetInfo counts in 2 MiB
/// pages; a few pages of slack cover the driver's own bookkeeping.
const SLACK: usize = 8 << 20;

fn free_after_release(backend: &CudaBackend) -> usize {
    backend.release_device_memory().unwrap();
    cuda::device_memory(0).unwrap().0
}

struct Case {
    phase: Phase,
    index: i32,
    names: &'static str,
}

fn cases() -> Vec<Case> {
    let mut v = vec![
        Case {
            phase: Phase::Upload,
            index: 0,
            names: "parameter upload",
        },
        Case {
            phase: Phase::AbcCopy,
            index: 0,
            names: "a/b/c copy",
        },
    ];
    let ntt = [
        "NTT step 0",
        "NTT step 1",
        "NTT step 2",
        "NTT step 3",
        "NTT step 4",
        "NTT step 5",
        "NTT step 6",
        "NTT step 7",
        "pointwise",
        "inverse NTT",
        "gather",
    ];
    // Index 8 is unused: c is not taken to the coset (kernels/ntt.cu).
    for (i, names) in (0..8).chain(9..12).zip(ntt) {
        v.push(Case {
            phase: Phase::Ntt,
            index: i,
            names,
        });
    }
    v.push(Case {
        phase: Phase::HMsm,
        index: 0,
        names: "H MSM",
    });
    let jobs = [
        "MSM L (batched job 0)",
        "MSM A (inputs) (batched job 1)",
        "MSM A (aux) (batched job 2)",
        "MSM B_G1 (inputs) (batched job 3)",
        "MSM B_G1 (aux) (batched job 4)",
        "MSM B_G2 (inputs) (batched job 5)",
        "MSM B_G2 (aux) (batched job 6)",
    ];
    for (i, names) in jobs.into_iter().enumerate() {
        v.push(Case {
            phase: Phase::MsmJob,
            index: i as i32,
            names,
        });
    }
    v
}

#[test]
fn every_phase_fails_cleanly_and_the_next_proof_is_right() {
    let _serial = serial();
    let st = setup();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let prover = Prover::new()
        .with_backend(BackendChoice::Gpu(0))
        .unwrap()
        .with_pool(pool.clone());
    let backend = CudaBackend::shared(0).unwrap();
    // Warm up (kernels loaded, pool touched), then measure the baseline with nothing held.
    assert_eq!(prove(&prover, st).unwrap(), st.expected);
    let baseline = free_after_release(&backend);
    eprintln!("baseline: {} MiB free", baseline >> 20);

    for case in cases() {
        // (CUDA error, how many times it fires, whether the proof must fail)
        let runs = [
            (fault::LAUNCH_OUT_OF_RESOURCES, 1, true),
            (fault::OUT_OF_MEMORY, 1, false), // the one retry after freeing caches succeeds
            (fault::OUT_OF_MEMORY, 2, true),  // the retry fails too
        ];
        for (code, count, must_fail) in runs {
            let label = format!("{:?}/{} code {code} x{count}", case.phase, case.index);
            backend.release_device_memory().unwrap(); // so that the upload runs again
            let fired = fault::fired();
            let (witness_before, on_host_before) =
                (prover.witness_stats().witness, backend.witness_evaluations().on_host);
            fault::arm(case.phase, case.index, code, count);
            let result = prove(&prover, st);
            // Checked before anything else runs on the device: the failed call waited for
            // its copies and kernels before it returned.
            let busy = fault::streams_busy(0);
            fault::disarm();
            assert!(!busy, "{label}: the call returned with work still queued on the device");
            assert_eq!(
                fault::fired() - fired,
                count,
                "{label}: the fault did not fire as armed"
            );
            match result {
                Err(e) => {
                    assert!(must_fail, "{label}: failed although the retry should succeed: {e}");
                    let text = e.to_string();
                    assert!(
                        matches!(e, Error::Cuda { code: c, .. } if c == code),
                        "{label}: expected CUDA error {code}, got {text}"
                    );
                    assert!(
                        text.contains(case.names),
                        "{label}: the error does not name the phase: {text}"
                    );
                }
                Ok(bytes) => {
                    // A witness-path proof whose H step (a/b/c, NTTs, H MSM: one call beside the
                    // resident compiled circuit) runs out of memory past its retry goes on with
                    // a, b, c evaluated on the host (the circuit leaves the device), counted.
                    let fell_back = code == fault::OUT_OF_MEMORY
                        && matches!(case.phase, Phase::AbcCopy | Phase::Ntt | Phase::HMsm)
                        && prover.witness_stats().witness > witness_before
                        && backend.witness_evaluations().on_host > on_host_before;
                    assert!(
                        !must_fail || fell_back,
                        "{label}: the proof succeeded through an armed fault"
                    );
                    assert_eq!(bytes, st.expected, "{label}: the retried proof is wrong");
                }
            }
            // Every buffer is back, and may be unpinned, unmapped or rewritten at once: no
            // copy may still read it. Overwrite what the pool hands out again, then free all.
            let stats = pool.stats();
            assert_eq!(stats.bytes_in_use, 0, "{label}: pool buffers not returned");
            {
                let mut reused: Vec<_> = (0..3).map(|_| pool.checkout(32 << 20).unwrap()).collect();
                for b in &mut reused {
                    // SAFETY: the buffer is ours, `capacity` bytes long.
                    unsafe { std::ptr::write_bytes(b.as_mut_ptr(), 0xa5, b.capacity()) };
                }
            }
            pool.shrink(0);
            assert_eq!(pool.stats().bytes_idle, 0, "{label}: shrink(0) left idle buffers");

            let free = free_after_release(&backend);
            assert!(
                free + SLACK >= baseline,
                "{label}: device memory not back to baseline: {} MiB free, baseline {} MiB",
                free >> 20,
                baseline >> 20
            );
            assert_eq!(
                prove(&prover, st).unwrap(),
                st.expected,
                "{label}: the next proof is wrong"
            );
            eprintln!(
                "{label}: ok ({} MiB below baseline)",
                baseline.saturating_sub(free) >> 20
            );
        }
    }
}

#[test]
fn a_real_out_of_memory_leaves_no_stale_error() {
    let _serial = serial();
    let st = setup();
    let backend = CudaBackend::shared(0).unwrap();
    let prover = Prover::new().with_backend(BackendChoice::Gpu(0)).unwrap();
    assert_eq!(prove(&prover, st).unwrap(), st.expected);
    let baseline = free_after_release(&backend);
    // Another context takes all but 5 GiB of the device; then a 2^26 domain's NTT tables
    // (2 GiB) fit and its a/b/c buffers (3 × 2 GiB) do not, so the stream-ordered allocator
    // itself fails (a real out-of-memory, not injected, and not cuzk's own limit).
    let tiny = vec![Scalar::ONE; 4];
    let err = {
        let filler_ctx = cust::quick_init().unwrap();
        let take = cuda::device_memory(0).unwrap().0.saturating_sub(5 << 30);
        let filler = cust::memory::DeviceBuffer::<u8>::zeroed(take).unwrap();
        let err = cuda::compute_h_once(0, &tiny, &tiny, &tiny, 26).unwrap_err();
        drop(filler);
        drop(filler_ctx);
        err
    };
    assert!(
        matches!(err, Error::Cuda { code: 2, .. }),
        "expected out of memory, got {err}"
    );
    backend.release_device_memory().unwrap();
    // Before the fix, the next kernel launch read that failure back from cudaGetLastError:
    // the proof failed, or (with the out-of-memory retry) needed a retry it should not need.
    let retries = backend.oom_retries();
    assert_eq!(prove(&prover, st).unwrap(), st.expected, "the next proof is wrong");
    assert_eq!(
        backend.oom_retries(),
        retries,
        "the next proof saw a stale out-of-memory error"
    );
    let free = free_after_release(&backend);
    assert!(
        free + SLACK >= baseline,
        "device memory not back: {} MiB free, baseline {} MiB",
        free >> 20,
        baseline >> 20
    );
}

#[test]
fn a_sticky_error_loses_the_device_and_auto_goes_on_on_the_cpu() {
    let _serial = serial();
    let st = setup();
    // A backend of its own, so that marking it lost leaves the shared one alone.
    let gpu = Arc::new(CudaBackend::new(0).unwrap());
    let auto = Prover::new().with_custom_backend(with_cpu_fallback(gpu.clone()));
    let gpu_only = Prover::new().with_custom_backend(gpu.clone());
    assert_eq!(auto.backend_name(), "cuda");
    assert_eq!(prove(&auto, st).unwrap(), st.expected);

    fault::arm(Phase::HMsm, 0, fault::ILLEGAL_ADDRESS, 1);
    let err = prove(&auto, st).unwrap_err();
    fault::disarm();
    assert!(
        matches!(
            err,
            Error::DeviceLost {
                device: 0,
                code: 700,
                ..
            }
        ),
        "{err}"
    );
    assert!(gpu.is_device_lost());

    // Auto's policy: the next proofs run on the CPU, with the same bytes.
    assert_eq!(auto.backend_name(), "cpu");
    assert_eq!(prove(&auto, st).unwrap(), st.expected);
    // A GPU-only prover fails fast, without touching the device.
    let fired = fault::fired();
    fault::arm(Phase::AbcCopy, 0, fault::LAUNCH_OUT_OF_RESOURCES, 1);
    let err = prove(&gpu_only, st).unwrap_err();
    fault::disarm();
    assert!(matches!(err, Error::DeviceLost { .. }), "{err}");
    assert_eq!(fault::fired(), fired, "a lost device was used again");
}
