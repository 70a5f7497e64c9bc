//! GPU tests (feature `cuda`; run on the GPU machine): GPU proofs are the CPU's bytes, the
//! NTT and every MSM match the CPU references, pinned host→device copies run at line rate.
#![cfg(feature = "cuda")]

mod common;

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk::pool::PinMode;
use cuzk::prover::cpu::{msm, ntt};
use cuzk::prover::cuda;
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, DensityTracker, PinnedPool, PoolConfig, Prover};
use ff::Field;
use group::{Curve, Group};
use rand::Rng;

fn gpu_prover() -> Prover {
    Prover::new()
        .with_backend(BackendChoice::Gpu(0))
        .expect("GPU 0 is usable")
        .with_pool(PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).expect("pinned pool"))
}

fn cpu_prover() -> Prover {
    Prover::new().with_backend(BackendChoice::Cpu).unwrap()
}

#[test]
fn gpu_proofs_are_the_cpu_proofs() {
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
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let circuit = Synthetic::new(12).with_seed(3);
    let params = random_parameters(circuit.clone(), 9).unwrap();
    // A residency cap too small for the parameters: the proof fails before any GPU work.
    let capped = cuda::CudaBackend::new(0).unwrap().with_max_resident_bytes(1 << 10);
    let failing = Prover::new()
        .with_custom_backend(std::sync::Arc::new(capped))
        .with_pool(pool.clone());
    let one = [Scalar::ONE];
    let err = failing
        .prove_with_randomness(vec![circuit.clone()], &params, &one, &one)
        .unwrap_err();
    assert!(err.to_string().contains("residency cap"), "{err}");
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

#[test]
fn gpu_proof_verifies_with_bellperson() {
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
    let mut rng = common::rng("msm");
    for n in [1usize, 1000, (1 << 16) + 3, 1 << 20] {
        let scalars = random_scalars(&mut rng, n);
        let g1: Vec<G1Affine> = points::<G1Projective>(&mut rng, n);
        let cpu = msm::msm::<msm::G1>(&g1, &scalars, None).unwrap();
        assert_eq!(cuda::msm_g1_once(0, &g1, &scalars, None).unwrap(), cpu, "G1 n={n}");
        let d = random_density(&mut rng, n);
        let cpu = msm::msm::<msm::G1>(&g1, &scalars, Some(&d)).unwrap();
        assert_eq!(
            cuda::msm_g1_once(0, &g1, &scalars, Some(&d)).unwrap(),
            cpu,
            "G1 density n={n}"
        );
        if n <= (1 << 16) + 3 {
            let g2: Vec<G2Affine> = points::<G2Projective>(&mut rng, n);
            let cpu = msm::msm::<msm::G2>(&g2, &scalars, Some(&d)).unwrap();
            assert_eq!(
                cuda::msm_g2_once(0, &g2, &scalars, Some(&d)).unwrap(),
                cpu,
                "G2 density n={n}"
            );
            let cpu = msm::msm::<msm::G2>(&g2, &scalars, None).unwrap();
            assert_eq!(cuda::msm_g2_once(0, &g2, &scalars, None).unwrap(), cpu, "G2 n={n}");
        }
        eprintln!("MSM n={n}: ok");
    }
}

#[test]
fn h_matches_the_cpu_on_random_data() {
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
        ntt::compute_h(&domain, &mut a, &mut b, &mut c);
        assert_eq!(gpu.len(), m - 1);
        assert!(gpu == a, "H differs at n={n}, m=2^{log_m}");
        eprintln!("H n={n} m=2^{log_m}: ok");
    }
}

#[test]
fn pinned_assignment_copies_at_line_rate() {
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
