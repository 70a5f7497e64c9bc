//! Parameter files written by bellperson load and prove; damaged ones are clear errors; a
//! circuit that does not match its parameters is an error, not a panic or a bad proof.

mod common;

use blstrs::Scalar;
use cuzk::testing::Synthetic;
use cuzk::{verify_proof, Error, Parameters, PinnedPool, PointCheck, PoolConfig, PreparedVerifyingKey, Prover};
use ff::Field;

fn setup(
    label: &str,
) -> (
    bellperson::groth16::Parameters<blstrs::Bls12>,
    Parameters,
    Vec<u8>,
    Synthetic,
) {
    let circuit = Synthetic::new(8);
    let mut rng = common::rng(label);
    let (bp, ours, bytes) = common::params_for(&circuit, &mut rng);
    (bp, ours, bytes, circuit)
}

#[test]
fn file_written_by_bellperson_loads_and_proves() {
    let (bp_params, from_bytes, bytes, circuit) = setup("file_loads");
    let dir = std::env::temp_dir().join(format!("cuzk-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("synthetic-8.params");
    let mut file = std::fs::File::create(&path).unwrap();
    bp_params.write(&mut file).unwrap();
    drop(file);

    for check in [PointCheck::OnCurve, PointCheck::Subgroup] {
        let params = Parameters::load(&path, check).unwrap();
        assert_eq!(params, from_bytes);
        assert_eq!(params.domain_size(), 256);
        assert_eq!(params.num_inputs(), 3);
        // Our writer reproduces bellperson's bytes exactly.
        let mut again = Vec::new();
        params.write(&mut again).unwrap();
        assert!(again == bytes, "re-encoded parameters differ from bellperson's file");

        let mut rng = common::rng("file_loads_prove");
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let proof = cuzk::prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s]).unwrap()[0];
        let expected = common::bellperson_proof(circuit.clone(), &bp_params, r, s);
        assert_eq!(proof.to_bytes().as_slice(), expected.as_slice());
        let pvk = PreparedVerifyingKey::new(params.vk());
        assert!(verify_proof(&pvk, &proof, &circuit.public_input_values()).unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_and_empty_files_are_errors() {
    let err = Parameters::load("/nonexistent/cuzk.params", PointCheck::OnCurve).unwrap_err();
    assert!(matches!(err, Error::ParamsIo { .. }), "{err}");
    let path = std::env::temp_dir().join(format!("cuzk-empty-{}.params", std::process::id()));
    std::fs::write(&path, b"").unwrap();
    let err = Parameters::load(&path, PointCheck::OnCurve).unwrap_err();
    assert!(matches!(err, Error::ParamsTruncated { .. }), "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn truncated_bytes_say_what_was_expected() {
    let (_, _, bytes, _) = setup("truncated");
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * 3;
    // Cut inside the vk, inside the H length, inside the H points, and one byte short.
    for cut in [10, vk_len + 2, vk_len + 4 + 96 * 7 + 5, bytes.len() - 1] {
        let err = Parameters::from_bytes(&bytes[..cut], PointCheck::OnCurve).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::ParamsTruncated { .. }), "cut {cut}: {msg}");
        assert!(msg.contains("expected") && msg.contains("found"), "cut {cut}: {msg}");
    }
    // H section: the message counts the points.
    let err = Parameters::from_bytes(&bytes[..vk_len + 4 + 96 * 7 + 5], PointCheck::OnCurve).unwrap_err();
    assert!(err.to_string().contains("255 H points"), "{err}");
}

#[test]
fn corrupted_bytes_are_errors() {
    let (_, _, bytes, _) = setup("corrupt");
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * 3;
    let h0 = vk_len + 4;

    // A coordinate changed: off the curve.
    let mut bad = bytes.clone();
    bad[h0 + 96 * 3 + 40] ^= 0x10;
    let err = Parameters::from_bytes(&bad, PointCheck::OnCurve).unwrap_err();
    assert!(matches!(err, Error::ParamsCorrupt(_)), "{err}");
    assert!(err.to_string().contains("H point 3"), "{err}");

    // The infinity flag set on an H point.
    let mut bad = bytes.clone();
    bad[h0 + 96 * 5] = 0x40;
    for b in &mut bad[h0 + 96 * 5 + 1..h0 + 96 * 6] {
        *b = 0;
    }
    let err = Parameters::from_bytes(&bad, PointCheck::OnCurve).unwrap_err();
    assert!(err.to_string().contains("infinity"), "{err}");

    // Trailing bytes.
    let mut bad = bytes.clone();
    bad.extend_from_slice(&[0u8; 7]);
    let err = Parameters::from_bytes(&bad, PointCheck::OnCurve).unwrap_err();
    assert!(err.to_string().contains("7 unexpected bytes"), "{err}");

    // A corrupted verifying key point.
    let mut bad = bytes.clone();
    bad[50] ^= 0x01;
    let err = Parameters::from_bytes(&bad, PointCheck::OnCurve).unwrap_err();
    assert!(err.to_string().contains("vk.alpha_g1"), "{err}");

    // A length that claims more H points than there are bytes.
    let mut bad = bytes.clone();
    bad[vk_len..vk_len + 4].copy_from_slice(&1_000_000u32.to_be_bytes());
    let err = Parameters::from_bytes(&bad, PointCheck::OnCurve).unwrap_err();
    assert!(matches!(err, Error::ParamsTruncated { .. }), "{err}");
}

#[test]
fn mismatched_circuits_are_errors_and_release_their_buffers() {
    let (_, params, _, circuit) = setup("mismatch");
    let pool = PinnedPool::heap(PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    let one = [Scalar::ONE];

    // A bigger circuit of the same kind.
    let err = prover
        .prove_with_randomness(vec![Synthetic::new(9)], &params, &one, &one)
        .unwrap_err();
    assert!(matches!(err, Error::CircuitMismatch(_)), "{err}");
    assert_eq!(pool.stats().bytes_in_use, 0);

    // Another number of public inputs.
    let other = Synthetic {
        public_inputs: 3,
        ..circuit.clone()
    };
    let err = prover
        .prove_with_randomness(vec![other], &params, &one, &one)
        .unwrap_err();
    assert!(err.to_string().contains("public inputs"), "{err}");
    assert_eq!(pool.stats().bytes_in_use, 0);

    // Empty batches, wrong r/s lengths.
    let err = prover
        .prove_with_randomness(Vec::<Synthetic>::new(), &params, &[], &[])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let err = prover
        .prove_with_randomness(vec![circuit.clone()], &params, &one, &[])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(pool.stats().bytes_in_use, 0);

    // A released assignment cannot be proved.
    let mut a = prover.synthesize(circuit.clone()).unwrap();
    a.release_abc();
    let err = prover.prove_synthesized(vec![a], &params, &one, &one).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");

    // And after all that the prover still works.
    assert!(prover.prove_with_randomness(vec![circuit], &params, &one, &one).is_ok());
    assert_eq!(pool.stats().bytes_in_use, 0);
}

#[test]
fn a_circuit_using_unallocated_variables_is_an_error() {
    use bellpepper_core::{ConstraintSystem, Index, SynthesisError, Variable};
    struct Broken;
    impl cuzk::Circuit<Scalar> for Broken {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let ghost = Variable::new_unchecked(Index::Aux(41));
            cs.enforce(|| "ghost", |lc| lc + ghost, |lc| lc + CS::one(), |lc| lc);
            Ok(())
        }
    }
    let err = Prover::new().synthesize(Broken).unwrap_err();
    assert!(err.to_string().contains("aux variable 41"), "{err}");
}

#[cfg(not(feature = "cuda"))]
#[test]
fn asking_for_a_gpu_without_the_cuda_feature_is_an_error() {
    let err = Prover::new().with_backend(cuzk::BackendChoice::Gpu(0)).unwrap_err();
    assert!(matches!(err, Error::NoGpu(_)), "{err}");
    // Auto never fails: it falls back to the CPU.
    let auto = Prover::new().with_backend(cuzk::BackendChoice::Auto).unwrap();
    assert_eq!(auto.backend_name(), "cpu");
}

/// Cloning parameters shares their query vectors (tens of GiB for a Filecoin partition): no
/// copy, same id, same contents.
#[test]
fn clones_share_the_query_vectors() {
    let params = cuzk::testing::random_parameters(Synthetic::new(12), 3).unwrap();
    let copy = params.clone();
    assert_eq!(copy.id(), params.id());
    for (x, y) in [
        (copy.h().as_ptr(), params.h().as_ptr()),
        (copy.l().as_ptr(), params.l().as_ptr()),
        (copy.a().as_ptr(), params.a().as_ptr()),
        (copy.b_g1().as_ptr(), params.b_g1().as_ptr()),
    ] {
        assert_eq!(x, y, "a G1 query vector was copied");
    }
    assert_eq!(copy.b_g2().as_ptr(), params.b_g2().as_ptr(), "B_G2 was copied");
    assert!(copy == params);
}
