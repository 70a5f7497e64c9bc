//! GPU test (feature `cuda`): MSMs at the widest window, 20 bits (13 windows of 2^19 buckets,
//! the one the H MSM of a 2^27 proof takes), resident and streamed, equal the CPU's. A streamed
//! MSM keeps one set of buckets across its chunks and reduces it once (kernels/msm/stream.cuh):
//! every chunk adds into buckets that earlier chunks filled, so a bucket written instead of
//! added to, or reduced per chunk, gives another point. The window is forced through the
//! kernels' `CUZK_K_WINDOW_BITS`, and `CUZK_K_SLICE` cuts the sorted entries into slices small
//! enough that the affine pair rounds run in each (both read once, when the device is first
//! used): this file's one test sets them first, in its own process.
#![cfg(feature = "cuda")]

mod common;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk::prover::cpu::msm;
use cuzk::prover::cuda;
use cuzk::prover::cuda::OnceBases::{Streamed, Upload};
use cuzk::DensityTracker;
use ff::Field;
use group::{Curve, Group};
use rand::RngCore;

fn points<G: Group + Curve>(rng: &mut impl RngCore, n: usize) -> Vec<G::AffineRepr>
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
fn twenty_bit_windows_kept_across_streamed_chunks_match_the_cpu() {
    // Before any GPU call; no other thread of this process runs yet (one test).
    std::env::set_var("CUZK_K_WINDOW_BITS", "20");
    std::env::set_var("CUZK_K_SLICE", "8192");
    let mut rng = common::rng("wide_window");
    let backend = cuda::CudaBackend::shared(0).unwrap();
    // Streamed MSMs in chunks of 4096 bases: n = 3 * 4096 + 7 makes four.
    backend.set_stream_chunk_points(4096).unwrap();
    let n = 3 * 4096 + 7;
    let random: Vec<Scalar> = (0..n)
        .map(|i| match i % 5 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut rng),
        })
        .collect();
    // A few distinct values: each window's few buckets get entries from every chunk.
    let few: Vec<Scalar> = (0..n).map(|i| Scalar::from(2 + (i % 3) as u64)).collect();
    let mut density = DensityTracker::new();
    for i in 0..n {
        density.add_element();
        if rng.next_u32() % 3 != 0 {
            density.inc(i);
        }
    }
    let g1: Vec<G1Affine> = points::<G1Projective>(&mut rng, n);
    let g2: Vec<G2Affine> = points::<G2Projective>(&mut rng, n);
    let (s1, s2) = (std::sync::Arc::new(g1.clone()), std::sync::Arc::new(g2.clone()));
    for (name, scalars) in [("random", &random), ("few values", &few)] {
        for d in [None, Some(&density)] {
            let what = format!("{name}, density {}", d.is_some());
            let cpu = msm::msm::<msm::G1>(&g1, scalars, d).unwrap();
            assert_eq!(
                cuda::msm_once::<msm::G1>(0, Upload(&g1), scalars, d).unwrap(),
                cpu,
                "G1 {what}: resident"
            );
            assert_eq!(
                cuda::msm_once::<msm::G1>(0, Streamed(s1.clone()), scalars, d).unwrap(),
                cpu,
                "G1 {what}: streamed"
            );
            let cpu = msm::msm::<msm::G2>(&g2, scalars, d).unwrap();
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Upload(&g2), scalars, d).unwrap(),
                cpu,
                "G2 {what}: resident"
            );
            assert_eq!(
                cuda::msm_once::<msm::G2>(0, Streamed(s2.clone()), scalars, d).unwrap(),
                cpu,
                "G2 {what}: streamed"
            );
            eprintln!("20-bit windows, {what}: resident and streamed = CPU");
        }
    }
    // The references themselves: n times the same scalar over one point is that multiple.
    let p = vec![g1[0]; n];
    let two = vec![Scalar::from(2u64); n];
    assert_eq!(
        msm::msm::<msm::G1>(&p, &two, None).unwrap(),
        G1Projective::from(g1[0]) * Scalar::from(2 * n as u64)
    );
}
