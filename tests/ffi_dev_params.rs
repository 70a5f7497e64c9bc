//! `Parameters::generate_insecure_for_development` is a real Groth16 setup: bellperson's
//! verifier accepts proofs made with it, and cuzk's proofs with fixed r, s are bellperson's
//! `create_proof` bytes under those parameters.

mod common;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use cuzk::testing::Synthetic;
use cuzk::{verify_proof, Parameters, PreparedVerifyingKey, Prover};
use ff::Field;

fn as_bellperson(params: &Parameters) -> bp::Parameters<Bls12> {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("parameters encode");
    bp::Parameters::read(&bytes[..], true).expect("bellperson reads (and checks) the parameters")
}

fn check(label: &str, circuit: Synthetic, seed: u64) {
    let params = Parameters::generate_insecure_for_development(circuit.clone(), seed).expect("setup");
    let bp_params = as_bellperson(&params);
    let inputs = circuit.public_input_values();
    let mut rng = common::rng(label);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let ours = Prover::new()
        .with_backend(cuzk::BackendChoice::Cpu)
        .unwrap()
        .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
        .expect("cuzk proves")[0];
    let theirs = common::bellperson_proof(circuit.clone(), &bp_params, r, s);
    assert_eq!(
        ours.to_bytes().to_vec(),
        theirs,
        "{label}: bytes differ from bellperson's"
    );
    assert!(
        common::bellperson_verifies(&bp_params, &theirs, &inputs),
        "{label}: bellperson rejects"
    );
    let pvk = PreparedVerifyingKey::new(params.vk());
    assert!(verify_proof(&pvk, &ours, &inputs).unwrap(), "{label}: cuzk rejects");
    // A wrong public input is rejected: the setup is not trivially satisfiable.
    let mut wrong = inputs.clone();
    wrong[0] += Scalar::ONE;
    assert!(
        !verify_proof(&pvk, &ours, &wrong).unwrap(),
        "{label}: a wrong input verifies"
    );
    assert!(!common::bellperson_verifies(&bp_params, &theirs, &wrong));
}

#[test]
fn proofs_verify_and_match_bellperson() {
    check("2^6, mostly bits", Synthetic::new(6), 1);
    check(
        "2^8, mostly products",
        Synthetic {
            bit_percent: 10,
            public_inputs: 3,
            ..Synthetic::new(8)
        },
        2,
    );
}

#[test]
fn the_seed_decides_the_toxic_waste() {
    let c = Synthetic::new(5);
    let a = Parameters::generate_insecure_for_development(c.clone(), 7).unwrap();
    let b = Parameters::generate_insecure_for_development(c.clone(), 7).unwrap();
    let other = Parameters::generate_insecure_for_development(c, 8).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.vk(), other.vk());
}

#[test]
fn a_constraint_on_a_missing_variable_is_an_error() {
    struct Bad;
    impl cuzk::Circuit<Scalar> for Bad {
        fn synthesize<CS: cuzk::ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), cuzk::SynthesisError> {
            let ghost = bellpepper_core::Variable::new_unchecked(bellpepper_core::Index::Aux(3));
            cs.enforce(|| "ghost", |lc| lc + ghost, |lc| lc + CS::one(), |lc| lc);
            Ok(())
        }
    }
    let err = Parameters::generate_insecure_for_development(Bad, 1).unwrap_err();
    assert!(matches!(err, cuzk::Error::InvalidArgument(_)), "{err}");
}
