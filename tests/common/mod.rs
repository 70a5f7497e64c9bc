//! Shared helpers for the integration tests: bellperson as the reference (here), waiting on
//! the engine ([`engine`]) and calling the C ABI ([`ffi`]). Each test binary uses some of them.
#![allow(dead_code)]

pub mod engine;
pub mod ffi;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use cuzk::{Circuit, Parameters, PointCheck};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A fresh, randomly seeded RNG; the seed is printed so a failure can be replayed.
pub fn rng(label: &str) -> ChaCha20Rng {
    let seed: u64 = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("{label}: seed {seed} (set CUZK_TEST_SEED to replay)");
    ChaCha20Rng::seed_from_u64(seed)
}

/// bellperson parameters for `circuit`, and the same parameters as cuzk loads them from
/// bellperson's own serialization.
pub fn params_for<C: Circuit<Scalar> + Clone>(
    circuit: &C,
    rng: &mut ChaCha20Rng,
) -> (bp::Parameters<Bls12>, Parameters, Vec<u8>) {
    params_of(circuit.clone(), rng)
}

/// [`params_for`] a circuit taken by value (one that is not `Clone`).
pub fn params_of<C: Circuit<Scalar>>(
    circuit: C,
    rng: &mut ChaCha20Rng,
) -> (bp::Parameters<Bls12>, Parameters, Vec<u8>) {
    let bp_params =
        bp::generate_random_parameters::<Bls12, _, _>(circuit, rng).expect("bellperson parameter generation");
    let mut bytes = Vec::new();
    bp_params.write(&mut bytes).expect("bellperson writes parameters");
    let ours = Parameters::from_bytes(&bytes, PointCheck::Subgroup).expect("cuzk loads bellperson's parameters");
    (bp_params, ours, bytes)
}

/// bellperson's proof bytes for `circuit` with the given r, s.
pub fn bellperson_proof<C: Circuit<Scalar> + Send>(
    circuit: C,
    params: &bp::Parameters<Bls12>,
    r: Scalar,
    s: Scalar,
) -> Vec<u8> {
    let proof = bp::create_proof::<Bls12, _, _>(circuit, params, r, s).expect("bellperson proves");
    let mut out = Vec::new();
    proof.write(&mut out).expect("proof encodes");
    out
}

/// Whether bellperson's verifier accepts these proof bytes for these inputs. Undecodable bytes
/// count as rejected.
pub fn bellperson_verifies(params: &bp::Parameters<Bls12>, proof: &[u8], inputs: &[Scalar]) -> bool {
    let Ok(proof) = bp::Proof::<Bls12>::read(proof) else {
        return false;
    };
    let pvk = bp::prepare_verifying_key(&params.vk);
    bp::verify_proof(&pvk, &proof, inputs).unwrap_or(false)
}
