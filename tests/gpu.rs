//! GPU tests (feature `cuda`; run on the GPU machine): GPU proofs are the CPU's bytes, the
//! NTT and every MSM match the CPU references, pinned host→device copies run at line rate.
#![cfg(feature = "cuda")]

mod common;

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk::pool::PinMode;
use cuzk::prover::cpu::{msm, ntt};
use cuzk::prover::cuda;
use cuzk::prover::cuda::OnceBases::{Streamed, Upload};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, DensityTracker, PinnedPool, PoolConfig, Prover};
use ff::Field;
use group::{Curve, Group};
use rand::Rng;

/// The tests of this file share one GPU backend and measure its residency: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn gpu_prover() -> Prover {
    Prover::new()
        .with_backend(BackendChoice::Gpu(0))
        .expect("GPU 0 is usable")
        .with_pool(PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).expect("pinned pool"))
}

fn cpu_prover() -> Prover {
    Prover::new().with_backend(BackendChoice::Cpu).unwrap()
}

/// Puts the device's memory limit and streaming chunk back to none when dropped (a panic
/// included), so the next test sees the whole device.
struct LimitGuard(std::sync::Arc<cuda::CudaBackend>);

impl Drop for LimitGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.set_memory_limit(None) {
            eprintln!("resetting the device memory limit: {e}");
        }
    }
}

#[test]
fn gpu_proofs_are_the_cpu_proofs() {
    let _serial = serial();
    let mut rng = common::rng("gpu_vs_cpu");
    let gpu = gpu_prover();
    let cpu = cpu_prover();
    // 2^10 .. 2^20 constraints, mostly-bits, all-field and mixed witnesses.
    for (k, bits, inputs) in [
        (10u32, 75u32, 2usize),
        (12, 97, 0),
        (14, 0, 5),
        (16, 50, 1),
        (18, 90, 3),
        (20, 75, 2),
    ] {
        let circuit = Synthetic {
            bit_percent: bits,
            public_inputs: inputs,
            ..Synthetic::new(k)
        }
        .with_seed(rng.gen());
        let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let start = Instant::now();
        let g = gpu
            .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
            .unwrap();
        let gpu_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let c = cpu.prove_with_randomness(vec![circuit], &params, &[r], &[s]).unwrap();
        let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
        eprintln!("2^{k} ({bits}% bits, {inputs} inputs): GPU {gpu_ms:.0} ms (first, with upload), CPU {cpu_ms:.0} ms");
        assert_eq!(g[0].to_bytes(), c[0].to_bytes(), "2^{k}: GPU and CPU proofs differ");
    }
    assert_eq!(gpu.pool().unwrap().stats().bytes_in_use, 0);
}

#[test]
fn after_a_failure_buffers_are_back_and_the_next_proof_works() {
    let _serial = serial();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let circuit = Synthetic::new(12).with_seed(3);
    let params = random_parameters(circuit.clone(), 9).unwrap();
    // A device memory limit too small even for streamed parameters: the H phase runs out of
    // device memory, the backend frees what it can, retries once and fails.
    let capped = std::sync::Arc::new(cuda::CudaBackend::new(0).unwrap());
    let reset = LimitGuard(capped.clone());
    capped.set_memory_limit(Some(64 << 10)).unwrap();
    let failing = Prover::new()
        .with_custom_backend(capped.clone())
        .with_pool(pool.clone());
    let one = [Scalar::ONE];
    let err = failing
        .prove_with_randomness(vec![circuit.clone()], &params, &one, &one)
        .unwrap_err();
    assert!(err.to_string().contains("out of memory"), "{err}");
    assert!(
        capped.oom_retries() > 0,
        "the backend retried once after freeing caches"
    );
    drop(reset);
    assert_eq!(
        pool.stats().bytes_in_use,
        0,
        "every pinned buffer is back after the failure"
    );
    let ok = Prover::new()
        .with_backend(BackendChoice::Gpu(0))
        .unwrap()
        .with_pool(pool.clone());
    let g = ok
        .prove_with_randomness(vec![circuit.clone()], &params, &one, &one)
        .unwrap();
    let c = cpu_prover()
        .prove_with_randomness(vec![circuit], &params, &one, &one)
        .unwrap();
    assert_eq!(g[0].to_bytes(), c[0].to_bytes());
    assert_eq!(pool.stats().bytes_in_use, 0);
    assert!(
        pool.stats().reuses > 0,
        "the second proof reused the first one's buffers"
    );
}

/// The GPU a prover is on, with its memory as the driver reports it; none for the CPU.
#[test]
fn a_gpu_prover_names_its_device_and_its_memory() {
    let _s = serial();
    let d = gpu_prover().device().expect("a GPU prover has a device");
    let (free, total) = cuda::device_memory(0).unwrap();
    assert_eq!(d.ordinal, 0);
    assert_eq!(d.name, cuda::probe(0).unwrap().name);
    assert_eq!(d.total_bytes, total);
    assert!(d.free_bytes > 0 && d.free_bytes <= d.total_bytes, "{d:?}");
    // Other processes may allocate meanwhile: within 1 GiB of a second reading.
    assert!(d.free_bytes.abs_diff(free) < 1 << 30, "{d:?} vs {free}");
    assert_eq!(cpu_prover().device(), None);
}

#[test]
fn gpu_proof_verifies_with_bellperson() {
    let _serial = serial();
    let circuit = Synthetic::new(10).with_seed(7);
    let mut rng = common::rng("gpu_bellperson");
    let (bp_params, params, _) = common::params_for(&circuit, &mut rng);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let proof = gpu_prover()
        .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
        .unwrap();
    let expected = common::bellperson_proof(circuit.clone(), &bp_params, r, s);
    assert_eq!(proof[0].to_bytes().as_slice(), expected.as_slice());
    assert!(common::bellperson_verifies(
        &bp_params,
        &proof[0].to_bytes(),
        &circuit.public_input_values()
    ));
}

fn random_scalars(rng: &mut impl rand::RngCore, n: usize) -> Vec<Scalar> {
    (0..n)
        .map(|_| match rng.next_u32() % 4 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

fn random_density(rng: &mut impl rand::RngCore, n: usize) -> DensityTracker {
    let mut d = DensityTracker::new();
    for i in 0..n {
        d.add_element();
        if rng.next_u32() % 3 != 0 {
            d.inc(i);
        }
    }
    d
}

fn points<G: Group + Curve>(rng: &mut impl rand::RngCore, n: usize) -> Vec<G::AffineRepr>
where
    G::AffineRepr: Default + Copy,
{
    let step = G::generator() * <G::Scalar as Field>::random(&mut *rng);
    let mut p = G::generator() * <G::Scalar as Field>::random(&mut *rng);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        proj.push(p);
        p += step;
    }
    let mut out = vec![G::AffineRepr::default(); n];
    G::batch_normalize(&proj, &mut out);
    out
}

#[test]
fn msms_match_the_cpu_on_random_data() {
    let _serial = serial();
    let mut rng = common::rng("msm");
    for n in [1usize, 1000, (1 << 16) + 3, 1 << 20] {
        let scalars = random_scalars(&mut rng, n);
        let g1: Vec<G1Affine> = points::<G1Projective>(&mut rng, n);
        let cpu = msm::msm::<msm::G1>(&g1, &scalars, None).unwrap();
        assert_eq!(
            cuda::msm_once::<msm::G1>(0, Upload(&g1), &scalars, None).unwrap(),
            cpu,
            "G1 n={n}"
        );
        let d = random_density(&mut rng, n);
        let cpu = msm::msm::<msm::G1>(&g1, &scalars, Some(&d)).unwrap();
        assert_eq!(
            cuda::msm_once::<msm::G1>(0, Upload(&g1), &scalars, Some(&d)).unwrap(),
            cpu,
            "G1 density n={n}"
        );
        if n <= (1 << 16) + 3 {
            let g2: Vec<G2Affine> = points::<G2Projective>(&mut rng, n);
            let cpu = msm::msm::<msm::G2>(&g2, &scalars, Some(&d)).unwrap();
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Upload(&g2), &scalars, Some(&d)).unwrap(),
                cpu,
                "G2 density n={n}"
            );
            let cpu = msm::msm::<msm::G2>(&g2, &scalars, None).unwrap();
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Upload(&g2), &scalars, None).unwrap(),
                cpu,
                "G2 n={n}"
            );
        }
        eprintln!("MSM n={n}: ok");
    }
}

#[test]
fn h_matches_the_cpu_on_random_data() {
    let _serial = serial();
    let mut rng = common::rng("ntt");
    for (n, log_m) in [(1usize, 1u32), (1000, 10), ((1 << 16) + 3, 17), (1 << 20, 20)] {
        let abc: Vec<Vec<Scalar>> = (0..3)
            .map(|_| (0..n).map(|_| Scalar::random(&mut rng)).collect())
            .collect();
        let gpu = cuda::compute_h_once(0, &abc[0], &abc[1], &abc[2], log_m).unwrap();
        let domain = ntt::Domain::new(log_m).unwrap();
        let m = domain.size();
        let pad = |v: &Vec<Scalar>| {
            let mut p = v.clone();
            p.resize(m, Scalar::ZERO);
            p
        };
        let (mut a, mut b, mut c) = (pad(&abc[0]), pad(&abc[1]), pad(&abc[2]));
        ntt::compute_h(&domain, &mut a, &mut b, &mut c).unwrap();
        assert_eq!(gpu.len(), m - 1);
        assert!(gpu == a, "H differs at n={n}, m=2^{log_m}");
        eprintln!("H n={n} m=2^{log_m}: ok");
    }
}

#[test]
fn pinned_assignment_copies_at_line_rate() {
    let _serial = serial();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let prover = Prover::new().with_pool(pool);
    let assignment = prover.synthesize(Synthetic::new(24)).unwrap();
    assert!(assignment.is_pinned());
    let a = assignment.a();
    // SAFETY: viewing initialised scalars as their bytes (Scalar is plain data, 32 bytes).
    let bytes = unsafe { std::slice::from_raw_parts(a.as_ptr().cast::<u8>(), std::mem::size_of_val(a)) };
    let _ctx = cust::quick_init().unwrap();
    let mut dev = cust::memory::DeviceBuffer::<u8>::zeroed(bytes.len()).unwrap();
    use cust::memory::CopyDestination;
    dev.copy_from(bytes).unwrap(); // warm-up
    let mut rates = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        dev.copy_from(bytes).unwrap();
        rates.push(bytes.len() as f64 / start.elapsed().as_secs_f64() / 1e9);
    }
    rates.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let median = rates[2];
    eprintln!(
        "pinned H2D of a ({} MiB): median {median:.1} GB/s over 5 copies",
        bytes.len() >> 20
    );
    assert!(
        median >= 40.0,
        "pinned host→device copy at {median:.1} GB/s, expected ≥ 40"
    );
}

/// A circuit whose aux variables are used in C only (dense in neither A nor B), with inputs
/// on the B side, over more than 64 public inputs.
#[derive(Clone)]
struct AuxOnlyInC {
    values: Vec<Scalar>,
    inputs: Vec<Scalar>,
}

impl cuzk::Circuit<Scalar> for AuxOnlyInC {
    fn synthesize<CS: cuzk::ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), cuzk::SynthesisError> {
        let ins = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc_input(|| format!("in {i}"), || Ok(*v)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut prev = cs.alloc(|| "x0", || Ok(self.values[0]))?;
        let mut prev_v = self.values[0];
        for (i, v) in self.values.iter().enumerate().skip(1) {
            let x = cs.alloc(|| format!("x{i}"), || Ok(*v))?;
            let prod = cs.alloc(|| format!("p{i}"), || Ok(prev_v * v))?; // only in C
            cs.enforce(|| format!("mul {i}"), |lc| lc + prev, |lc| lc + x, |lc| lc + prod);
            let k = i % ins.len();
            let copy = cs.alloc(|| format!("copy {i}"), || Ok(self.inputs[k]))?;
            cs.enforce(
                || format!("in {i}"),
                |lc| lc + CS::one(),
                |lc| lc + ins[k],
                |lc| lc + copy,
            );
            prev = x;
            prev_v = *v;
        }
        Ok(())
    }
}

/// GPU bytes equal CPU bytes on the shapes the first GPU tests left out: a padded domain,
/// more than 64 public inputs, aux variables only in C, batches of several proofs, 2^22.
#[test]
fn gpu_matches_cpu_on_padded_domains_many_inputs_batches_and_2_22() {
    let _serial = serial();
    let mut rng = common::rng("gpu_shapes");
    let gpu = gpu_prover();
    let cpu = cpu_prover();
    let same =
        |label: &str, circuits: Vec<Synthetic>, params: &cuzk::Parameters, rng: &mut rand_chacha::ChaCha20Rng| {
            let n = circuits.len();
            let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
            let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
            let start = Instant::now();
            let g = gpu.prove_with_randomness(circuits.clone(), params, &r, &s).unwrap();
            let gpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let c = cpu.prove_with_randomness(circuits, params, &r, &s).unwrap();
            assert_eq!(g.len(), n);
            for i in 0..n {
                assert_eq!(g[i].to_bytes(), c[i].to_bytes(), "{label}: proof {i} differs");
            }
            eprintln!("{label}: {n} proofs, GPU {gpu_ms:.0} ms, bytes equal");
        };
    // Padded domain (2^14 with 5000 constraints missing) and 70 public inputs.
    let padded = Synthetic {
        public_inputs: 70,
        padding: 5000,
        ..Synthetic::new(14)
    }
    .with_seed(rng.gen());
    let params = random_parameters(padded.clone(), rng.gen()).unwrap();
    assert_eq!(params.domain_size(), 1 << 14);
    same("padded 2^14, 70 inputs", vec![padded.clone()], &params, &mut rng);
    // A batch of four witnesses of one circuit.
    let batch: Vec<Synthetic> = (0..4).map(|_| padded.clone().with_seed(rng.gen())).collect();
    same("batch of 4", batch, &params, &mut rng);
    // 2^22.
    let big = Synthetic::new(22).with_seed(rng.gen());
    let params = random_parameters(big.clone(), rng.gen()).unwrap();
    same("2^22", vec![big], &params, &mut rng);
    gpu.evict_resident();

    // Aux only in C, 65 inputs on the B side.
    let circuit = AuxOnlyInC {
        values: (0..3000).map(|_| Scalar::random(&mut rng)).collect(),
        inputs: (0..65).map(|_| Scalar::random(&mut rng)).collect(),
    };
    let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
    let (r, s) = ([Scalar::random(&mut rng)], [Scalar::random(&mut rng)]);
    let g = gpu
        .prove_with_randomness(vec![circuit.clone()], &params, &r, &s)
        .unwrap();
    let c = cpu.prove_with_randomness(vec![circuit], &params, &r, &s).unwrap();
    assert_eq!(g[0].to_bytes(), c[0].to_bytes(), "aux only in C: bytes differ");
    assert_eq!(gpu.pool().unwrap().stats().bytes_in_use, 0);
}

/// Eight threads prove at once on one GPU with two parameter sets of different sizes, through
/// provers made separately: one backend, one upload per set, every proof the CPU's bytes.
#[test]
fn eight_threads_two_parameter_sets_one_gpu() {
    let _serial = serial();
    let mut rng = common::rng("gpu_threads");
    let circuits = [
        Synthetic::new(12).with_seed(rng.gen()),
        Synthetic::new(15).with_seed(rng.gen()),
    ];
    let params: Vec<cuzk::Parameters> = circuits
        .iter()
        .map(|c| random_parameters(c.clone(), rng.gen()).unwrap())
        .collect();
    // Expected bytes for (set, round) from the CPU.
    let rounds = 3;
    let rs: Vec<(Scalar, Scalar)> = (0..rounds)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .collect();
    let cpu = cpu_prover();
    let expected: Vec<Vec<_>> = (0..2)
        .map(|k| {
            rs.iter()
                .map(|(r, s)| {
                    cpu.prove_with_randomness(vec![circuits[k].clone()], &params[k], &[*r], &[*s])
                        .unwrap()[0]
                        .to_bytes()
                })
                .collect()
        })
        .collect();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let backend = cuda::CudaBackend::shared(0).unwrap();
    backend.release_device_memory().unwrap();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (circuits, params, expected, rs, pool) = (&circuits, &params, &expected, &rs, pool.clone());
            scope.spawn(move || {
                // Each thread makes its own prover: Gpu(0) must still mean one backend.
                let prover = Prover::new()
                    .with_backend(BackendChoice::Gpu(0))
                    .unwrap()
                    .with_pool(pool);
                for round in 0..rounds {
                    let k = (t + round) % 2;
                    let (r, s) = rs[round];
                    let p = prover
                        .prove_with_randomness(vec![circuits[k].clone()], &params[k], &[r], &[s])
                        .unwrap();
                    assert_eq!(p[0].to_bytes(), expected[k][round], "thread {t} round {round} set {k}");
                }
            });
        }
    });
    assert_eq!(pool.stats().bytes_in_use, 0, "every buffer back in the pool");
    assert_eq!(backend.resident_sets(), 2, "two sets resident: one upload each");
    assert_eq!(
        backend.resident_bytes(),
        params[0].device_bytes() + params[1].device_bytes(),
        "nothing uploaded twice"
    );
    eprintln!("8 threads x {rounds} proofs over 2 sets: all equal to the CPU's bytes");
}

/// `evict_params` frees one set's device copy and leaves the others resident (the engine
/// evicts idle sets one at a time this way); the evicted set uploads again at its next proof.
#[test]
fn evicting_one_set_leaves_the_others_resident() {
    let _serial = serial();
    let mut rng = common::rng("evict_one");
    let circuits = [
        Synthetic::new(11).with_seed(rng.gen()),
        Synthetic::new(12).with_seed(rng.gen()),
    ];
    let params: Vec<cuzk::Parameters> = circuits
        .iter()
        .map(|c| random_parameters(c.clone(), rng.gen()).unwrap())
        .collect();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = cpu_prover();
    let expected: Vec<_> = (0..2)
        .map(|k| {
            cpu.prove_with_randomness(vec![circuits[k].clone()], &params[k], &[r], &[s])
                .unwrap()[0]
                .to_bytes()
        })
        .collect();
    let backend = cuda::CudaBackend::shared(0).unwrap();
    backend.release_device_memory().unwrap();
    let gpu = gpu_prover();
    gpu.prepare(&params[0]).unwrap();
    gpu.prepare(&params[1]).unwrap();
    assert_eq!(backend.resident_sets(), 2);
    let both = params[0].device_bytes() + params[1].device_bytes();
    assert_eq!(backend.resident_bytes(), both);

    gpu.evict_params(&params[0]);
    assert_eq!(backend.resident_sets(), 1, "set 1 stays");
    assert_eq!(
        backend.resident_bytes(),
        params[1].device_bytes(),
        "set 0's device copy is freed"
    );
    assert!(!backend.evict_params(params[0].id()), "set 0 is no longer resident");
    // Set 1 proves from its resident copy (no upload), set 0 uploads again.
    let p = gpu
        .prove_with_randomness(vec![circuits[1].clone()], &params[1], &[r], &[s])
        .unwrap();
    assert_eq!(p[0].to_bytes(), expected[1]);
    assert_eq!(backend.resident_sets(), 1, "set 1 was not uploaded again");
    let p = gpu
        .prove_with_randomness(vec![circuits[0].clone()], &params[0], &[r], &[s])
        .unwrap();
    assert_eq!(p[0].to_bytes(), expected[0]);
    assert_eq!((backend.resident_sets(), backend.resident_bytes()), (2, both));
    backend.release_device_memory().unwrap();
}

/// A proof leaves the calling thread's CUDA context as it found it: none, or the caller's own.
#[test]
fn proving_leaves_the_callers_cuda_context_alone() {
    let _serial = serial();
    use cust::sys as cu;
    let circuit = Synthetic::new(10).with_seed(11);
    let params = random_parameters(circuit.clone(), 12).unwrap();
    let one = [Scalar::ONE];
    let current = || {
        let mut c: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the driver is initialised by the prover's probe.
        assert_eq!(unsafe { cu::cuCtxGetCurrent(&mut c) }, cu::cudaError_enum::CUDA_SUCCESS);
        c
    };
    std::thread::spawn(move || {
        let prover = Prover::new().with_backend(BackendChoice::Gpu(0)).unwrap();
        assert!(current().is_null(), "a fresh thread has no context");
        prover
            .prove_with_randomness(vec![circuit.clone()], &params, &one, &one)
            .unwrap();
        assert!(
            current().is_null(),
            "proving left a context current on a thread that had none"
        );

        // The caller's own (non-primary) context stays current across a proof.
        let mut dev: cu::CUdevice = 0;
        let mut mine: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointers; the context is destroyed below.
        unsafe {
            assert_eq!(cu::cuDeviceGet(&mut dev, 0), cu::cudaError_enum::CUDA_SUCCESS);
            assert_eq!(cu::cuCtxCreate_v2(&mut mine, 0, dev), cu::cudaError_enum::CUDA_SUCCESS);
        }
        assert_eq!(current(), mine);
        prover
            .prove_with_randomness(vec![circuit], &params, &one, &one)
            .unwrap();
        assert_eq!(current(), mine, "proving replaced the caller's context");
        // SAFETY: `mine` was created above and is not used afterwards.
        unsafe { cu::cuCtxDestroy_v2(mine) };
    })
    .join()
    .unwrap();
}

/// The probe reports a real device with code for it in this build.
#[test]
fn probe_reports_the_device() {
    let _serial = serial();
    let info = cuda::probe(0).unwrap();
    eprintln!("{info:?}, built for sm_{{{}}}", cuda::BUILT_ARCHS);
    assert!(info.total_bytes >= info.free_bytes && info.free_bytes >= cuda::MIN_FREE_BYTES);
    assert!(info.binary_version > 0, "the driver found code for the GPU");
    assert!(
        cuda::probe(1 << 20).is_err(),
        "a device that does not exist fails the probe"
    );
}

#[test]
fn streamed_parameters_give_the_resident_bytes() {
    let _serial = serial();
    let mut rng = common::rng("streamed");
    let resident = gpu_prover();
    let cpu = cpu_prover();
    // Resident (and CPU) proofs first, with the whole device.
    let mut cases = Vec::new();
    for (k, bits, inputs) in [(16u32, 75u32, 2usize), (14, 0, 5), (12, 97, 1)] {
        let circuit = Synthetic {
            bit_percent: bits,
            public_inputs: inputs,
            ..Synthetic::new(k)
        }
        .with_seed(rng.gen());
        let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let g = resident
            .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
            .unwrap();
        let c = cpu
            .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
            .unwrap();
        assert_eq!(g[0].to_bytes(), c[0].to_bytes(), "2^{k}: resident GPU and CPU differ");
        cases.push((k, circuit, params, r, s, g[0].to_bytes()));
    }
    // Then a 48 MiB device with 4096-base chunks: every set streams, in many chunks. (The
    // limit counts all cuzk holds on the device: the resident sets go first.)
    resident.evict_resident();
    let backend = std::sync::Arc::new(cuda::CudaBackend::new(0).unwrap());
    let _reset = LimitGuard(backend.clone());
    let limit = 48usize << 20;
    backend.set_memory_limit(Some(limit)).unwrap();
    backend.set_stream_chunk_points(4096).unwrap();
    backend.memory_stats(true).unwrap();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let streamed = Prover::new()
        .with_custom_backend(backend.clone())
        .with_pool(pool.clone());
    // Under 48 MiB the 2^16 set (37 MB, plus a proof's working set) cannot be resident; the
    // smaller ones could: they are streamed on request.
    assert!(
        backend.would_stream(&cases[0].2),
        "2^16 should stream under {limit} bytes"
    );
    assert!(!backend.would_stream(&cases[2].2), "2^12 fits under {limit} bytes");
    backend.set_always_stream(true);
    for (k, circuit, params, r, s, expected) in &cases {
        assert!(backend.would_stream(params));
        let p = streamed
            .prove_with_randomness(vec![circuit.clone()], params, &[*r], &[*s])
            .unwrap();
        assert_eq!(&p[0].to_bytes(), expected, "2^{k}: streamed and resident proofs differ");
        eprintln!("2^{k}: streamed proof = resident proof");
    }
    assert_eq!(backend.streamed_sets(), cases.len());
    assert_eq!(backend.resident_bytes(), 0, "nothing was uploaded");
    let st = backend.memory_stats(false).unwrap();
    eprintln!(
        "streamed under a {} MiB limit: peak {} KiB counted, pool high-water {} KiB",
        limit >> 20,
        st.peak >> 10,
        st.pool_reserved_high >> 10
    );
    assert!(st.peak > 0 && st.peak <= limit, "{st:?}");
    assert_eq!(pool.stats().bytes_in_use, 0);
}

/// Before a proof over streamed parameters, the idle sets resident beside them leave the
/// device: a streamed proof works in what the memory limit leaves (its H phase needs a, b, c on
/// the device at once), and beside them it could run out of memory, lose its work and retry —
/// a 2^27 SnapDeals proof under a 24 GiB limit did after each Winning PoSt stand-in's set was
/// uploaded. A set kept for good stays, a streamed set keeps its host registration, the evicted
/// set uploads again at its next proof, and every proof is the CPU's bytes.
#[test]
fn a_streamed_proof_first_evicts_the_idle_resident_sets() {
    fn case(k: u32, rng: &mut impl Rng) -> (Synthetic, cuzk::Parameters) {
        let circuit = Synthetic::new(k).with_seed(rng.gen());
        let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
        (circuit, params)
    }
    let _serial = serial();
    let mut rng = common::rng("streamed_room");
    let small = case(12, &mut rng);
    let kept = case(11, &mut rng);
    let big = [case(16, &mut rng), case(16, &mut rng)];
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = cpu_prover();
    let bytes_by = |prover: &Prover, (circuit, params): &(Synthetic, cuzk::Parameters)| {
        prover
            .prove_with_randomness(vec![circuit.clone()], params, &[r], &[s])
            .unwrap()[0]
            .to_bytes()
    };
    let expected_small = bytes_by(&cpu, &small);
    let expected_kept = bytes_by(&cpu, &kept);
    let expected_big: Vec<_> = big.iter().map(|c| bytes_by(&cpu, c)).collect();

    // 48 MiB, as in streamed_parameters_give_the_resident_bytes: the 2^16 sets stream, the
    // small ones are resident.
    let backend = std::sync::Arc::new(cuda::CudaBackend::new(0).unwrap());
    let _reset = LimitGuard(backend.clone());
    backend.set_memory_limit(Some(48 << 20)).unwrap();
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let gpu = Prover::new()
        .with_custom_backend(backend.clone())
        .with_pool(pool.clone());
    assert!(!backend.would_stream(&small.1) && !backend.would_stream(&kept.1));
    assert!(big.iter().all(|(_, p)| backend.would_stream(p)));
    let kept_on_device = (kept.0.clone(), gpu.prepare_device_only(&kept.1).unwrap());

    assert_eq!(bytes_by(&gpu, &small), expected_small);
    let both = kept.1.device_bytes() + small.1.device_bytes();
    assert_eq!((backend.resident_sets(), backend.resident_bytes()), (2, both));
    for (k, case) in big.iter().enumerate() {
        assert_eq!(bytes_by(&gpu, case), expected_big[k], "streamed proof {k}");
        assert_eq!(
            backend.resident_bytes(),
            kept.1.device_bytes(),
            "after streamed proof {k} only the set kept for good is on the device"
        );
        assert_eq!(
            backend.streamed_sets(),
            k + 1,
            "an earlier streamed set keeps its host registration"
        );
    }
    assert_eq!(backend.evicted_for_streamed_proofs(), 1, "the small set, once");
    // The small set uploads again; the kept one proves from the device alone.
    assert_eq!(bytes_by(&gpu, &small), expected_small);
    assert_eq!(bytes_by(&gpu, &kept_on_device), expected_kept);
    assert_eq!(backend.resident_bytes(), both);
    assert_eq!(backend.oom_retries(), 0, "no proof ran out of device memory");
    assert_eq!(pool.stats().bytes_in_use, 0);
}

#[test]
fn msms_on_repeated_bases_and_extreme_scalars_match_the_cpu() {
    let _serial = serial();
    let mut rng = common::rng("msm_edge");
    let backend = cuda::CudaBackend::shared(0).unwrap();
    let _reset = LimitGuard(backend.clone());
    // Streamed MSMs in chunks of 4096 bases (so n = 2^14 + 5 makes five).
    backend.set_stream_chunk_points(4096).unwrap();
    let n = (1usize << 14) + 5;
    let minus_one = -Scalar::ONE;
    let scalar_sets: Vec<(&str, Vec<Scalar>)> = vec![
        ("all zero", vec![Scalar::ZERO; n]),
        ("all one", vec![Scalar::ONE; n]),
        ("all p-1", vec![minus_one; n]),
        ("all two", vec![Scalar::from(2u64); n]),
        ("mixed", random_scalars(&mut rng, n)),
    ];
    let d1: Vec<G1Affine> = points::<G1Projective>(&mut rng, 3);
    let d2: Vec<G2Affine> = points::<G2Projective>(&mut rng, 3);
    // One point n times (every bucket adds a point to itself), and three points in turn.
    let g1_sets = [vec![d1[0]; n], (0..n).map(|i| d1[i % 3]).collect::<Vec<_>>()];
    let g2_sets = [vec![d2[1]; n], (0..n).map(|i| d2[i % 3]).collect::<Vec<_>>()];
    let density = random_density(&mut rng, n);
    for (name, scalars) in &scalar_sets {
        for (b, bases) in g1_sets.iter().enumerate() {
            let shared = std::sync::Arc::new(bases.clone());
            for d in [None, Some(&density)] {
                let cpu = msm::msm::<msm::G1>(bases, scalars, d).unwrap();
                let what = format!("G1 {name}, base set {b}, density {}", d.is_some());
                assert_eq!(
                    cuda::msm_once::<msm::G1>(0, Upload(bases), scalars, d).unwrap(),
                    cpu,
                    "{what}: resident"
                );
                assert_eq!(
                    cuda::msm_once::<msm::G1>(0, Streamed(shared.clone()), scalars, d).unwrap(),
                    cpu,
                    "{what}: streamed"
                );
            }
        }
        for (b, bases) in g2_sets.iter().enumerate() {
            let shared = std::sync::Arc::new(bases.clone());
            let cpu = msm::msm::<msm::G2>(bases, scalars, Some(&density)).unwrap();
            let what = format!("G2 {name}, base set {b}");
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Upload(bases), scalars, Some(&density)).unwrap(),
                cpu,
                "{what}: resident"
            );
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Streamed(shared), scalars, Some(&density)).unwrap(),
                cpu,
                "{what}: streamed"
            );
        }
        eprintln!("MSM edge cases, {name}: ok");
    }
    // Sanity of the references themselves: n copies of P with scalar p − 1 sum to −n·P.
    let expect = -(G1Projective::from(d1[0]) * Scalar::from(n as u64));
    assert_eq!(
        msm::msm::<msm::G1>(&g1_sets[0], &scalar_sets[2].1, None).unwrap(),
        expect
    );
}

#[test]
fn device_only_parameters_prove_on_the_gpu_and_nowhere_else() {
    let _serial = serial();
    let mut rng = common::rng("device_only");
    let circuit = Synthetic::new(14).with_seed(rng.gen());
    let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = cpu_prover()
        .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
        .unwrap();
    let gpu = gpu_prover();
    let device_only = gpu.prepare_device_only(&params).unwrap();
    assert!(!device_only.has_host_copy() && params.has_host_copy());
    drop(params);
    for _ in 0..2 {
        let p = gpu
            .prove_with_randomness(vec![circuit.clone()], &device_only, &[r], &[s])
            .unwrap();
        assert_eq!(p[0].to_bytes(), expected[0].to_bytes());
    }
    // A limit change evicts idle sets, but not one kept for good.
    let backend = cuda::CudaBackend::shared(0).unwrap();
    let reset = LimitGuard(backend.clone());
    backend.set_memory_limit(Some(backend.memory_limit())).unwrap();
    drop(reset);
    let p = gpu
        .prove_with_randomness(vec![circuit.clone()], &device_only, &[r], &[s])
        .unwrap();
    assert_eq!(p[0].to_bytes(), expected[0].to_bytes());
    // The CPU cannot prove with it, and once evicted, neither can the GPU: clear errors.
    let err = cpu_prover()
        .prove_with_randomness(vec![circuit.clone()], &device_only, &[r], &[s])
        .unwrap_err();
    assert!(err.to_string().contains("released"), "{err}");
    gpu.evict_resident();
    let err = gpu
        .prove_with_randomness(vec![circuit], &device_only, &[r], &[s])
        .unwrap_err();
    assert!(err.to_string().contains("released"), "{err}");
    assert_eq!(gpu.pool().unwrap().stats().bytes_in_use, 0);
}

#[test]
fn an_engine_proves_with_parameters_it_kept_on_the_device() {
    use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job};
    let _serial = serial();
    let mut rng = common::rng("engine_device_only");
    let circuits: Vec<Synthetic> = (0..3).map(|_| Synthetic::new(14).with_seed(rng.gen())).collect();
    let params = random_parameters(circuits[0].clone(), rng.gen()).unwrap();
    let r: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
    let expected = cpu_prover()
        .prove_with_randomness(circuits.clone(), &params, &r, &s)
        .unwrap();
    let engine = Engine::new(EngineConfig {
        synthesis_workers: 2,
        backends: vec![EngineBackend::Choice(BackendChoice::Gpu(0))],
        ..EngineConfig::default()
    })
    .unwrap();
    let kept = engine.keep_parameters_on_device(&params).unwrap();
    drop(params);
    assert!(!kept.has_host_copy());
    let stats = engine.stats();
    assert_eq!((stats.params_sets, stats.params_host_bytes), (1, 0), "{stats:#?}");
    // Twice: the first job records the compiled circuit, the second takes the witness path.
    for _ in 0..2 {
        let job = Job::from_circuits(kept.clone(), circuits.clone()).with_randomness(r.clone(), s.clone());
        let proofs = engine.prove(job).unwrap();
        assert_eq!(proofs, expected);
    }
    assert!(engine.remove_parameters(&kept));
    // Removed: the device copy is gone, and a job with the released set fails clearly.
    let job =
        Job::from_circuits(kept.clone(), circuits[..1].to_vec()).with_randomness(r[..1].to_vec(), s[..1].to_vec());
    let err = engine.prove(job).unwrap_err();
    assert!(err.to_string().contains("released"), "{err}");
}
