//! Decoding what a caller hands in — proofs, verifying keys, parameter files — is an error
//! value on any input, never a panic or an allocation the bytes do not back.

use blstrs::{G1Affine, G2Affine, Scalar};
use cuzk::{verify_proof, Error, Parameters, PointCheck, PreparedVerifyingKey, Proof, VerifyingKey};
use ff::Field;
use group::prime::PrimeCurveAffine;

fn vk(ic: usize) -> VerifyingKey {
    VerifyingKey {
        alpha_g1: G1Affine::generator(),
        beta_g1: G1Affine::generator(),
        beta_g2: G2Affine::generator(),
        gamma_g2: G2Affine::generator(),
        delta_g1: G1Affine::generator(),
        delta_g2: G2Affine::generator(),
        ic: vec![G1Affine::generator(); ic],
    }
}

fn proof() -> Proof {
    Proof {
        a: G1Affine::generator(),
        b: G2Affine::generator(),
        c: G1Affine::generator(),
    }
}

#[test]
fn a_verifying_key_without_input_commitments_is_an_error() {
    // vk.ic is public: a caller can build a key without even the one input's commitment.
    let pvk = PreparedVerifyingKey::new(&vk(0));
    for inputs in [0usize, 1] {
        let err = verify_proof(&pvk, &proof(), &vec![Scalar::ONE; inputs]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("vk.ic is empty"), "{err}");
    }
    // With commitments, a count mismatch is an error and the right count verifies (to false
    // here: the proof is not for this key).
    let pvk = PreparedVerifyingKey::new(&vk(3));
    assert!(verify_proof(&pvk, &proof(), &[Scalar::ONE]).is_err());
    assert!(!verify_proof(&pvk, &proof(), &[Scalar::ONE, Scalar::ONE]).unwrap());
}

#[test]
fn proofs_of_any_length_or_content_decode_to_a_value_or_an_error() {
    let good = proof().to_bytes();
    assert_eq!(Proof::from_bytes(&good).unwrap(), proof());
    for len in [0usize, 1, 47, 48, 144, 191, 193, 384] {
        let bytes = vec![0u8; len];
        assert!(
            matches!(Proof::from_bytes(&bytes), Err(Error::MalformedProof(_))),
            "len {len}"
        );
    }
    // Every single-byte corruption: an error or (if still valid points) a different proof.
    for i in 0..Proof::SIZE {
        for x in [0x01u8, 0x80, 0xff] {
            let mut bad = good;
            bad[i] ^= x;
            if let Ok(p) = Proof::from_bytes(&bad) {
                assert_ne!(p, proof());
            }
        }
    }
    assert!(Proof::read(&good[..100]).is_err());
}

/// A parameter file whose section lengths are all `len`, with no points behind them.
fn hostile_params(len: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    vk(1).write(&mut bytes).unwrap();
    for _ in 0..5 {
        bytes.extend_from_slice(&len.to_be_bytes());
    }
    bytes
}

#[test]
fn hostile_lengths_are_truncation_errors_before_any_allocation() {
    // u32::MAX H points would be 412 GB of points: the length is checked against the bytes
    // that are there before anything is allocated.
    for len in [u32::MAX, u32::MAX / 96, 1 << 31, 3] {
        let err = Parameters::from_bytes(&hostile_params(len), PointCheck::OnCurve).unwrap_err();
        assert!(matches!(err, Error::ParamsTruncated { .. }), "{len}: {err}");
    }
    // The same in the verifying key's input commitments.
    let mut bytes = Vec::new();
    vk(0).write(&mut bytes).unwrap();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = VerifyingKey::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err, Error::ParamsTruncated { .. }), "{err}");
    // Zero-length sections decode, then fail the shape check with a clear message.
    let err = Parameters::from_bytes(&hostile_params(0), PointCheck::OnCurve).unwrap_err();
    assert!(matches!(err, Error::ParamsCorrupt(_)), "{err}");
}

#[test]
fn the_first_bad_point_of_a_section_is_named() {
    // H of 2^12 − 1 points, bad at 3000 and 5: the error always names 5, however the
    // parallel decode is scheduled.
    let circuit = cuzk::testing::Synthetic::new(12);
    let params = cuzk::testing::random_parameters(circuit, 9).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let mut vk_bytes = Vec::new();
    params.vk().write(&mut vk_bytes).unwrap();
    let h0 = vk_bytes.len() + 4;
    for i in [3000usize, 5] {
        bytes[h0 + 96 * i + 40] ^= 0x10;
    }
    for _ in 0..5 {
        let err = Parameters::from_bytes(&bytes, PointCheck::OnCurve).unwrap_err();
        assert!(err.to_string().contains("H point 5 "), "{err}");
    }
}
