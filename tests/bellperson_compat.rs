//! cuzk's proofs are byte-for-byte bellperson's, and bellperson's verifier accepts them, by
//! both of the prover's paths: every circuit is proved with the same r and s by full synthesis
//! (the first proof of its type and shape, which records the compiled circuit) and by the
//! witness path (the next one, witness-only, a, b, c evaluated from the compiled circuit), the
//! witness path's counters showing which path each proof took. The provers are `Auto`: in a
//! `cuda` build on a machine with a GPU, these are GPU proofs.

mod common;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk::testing::Synthetic;
use cuzk::{
    verify_proof, Circuit, Parameters, PinnedPool, PoolConfig, PreparedVerifyingKey, Proof, Prover, WitnessStats,
};
use ff::Field;
use rand::RngCore;

/// A circuit whose aux variables are used in unusual ways: some only in C (dense in neither
/// A nor B), some in A with a zero coefficient (which must not count as dense), inputs that
/// appear in B and inputs that do not.
#[derive(Clone)]
struct OddUses {
    values: Vec<Scalar>,
    inputs: Vec<Scalar>,
}

impl Circuit<Scalar> for OddUses {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut ins = Vec::new();
        for (i, v) in self.inputs.iter().enumerate() {
            ins.push(cs.alloc_input(|| format!("in {i}"), || Ok(*v))?);
        }
        let mut prev = cs.alloc(|| "x0", || Ok(self.values[0]))?;
        let mut prev_v = self.values[0];
        let mut last_prod = prev;
        for (i, v) in self.values.iter().enumerate().skip(1) {
            let x = cs.alloc(|| format!("x{i}"), || Ok(*v))?;
            let prod_v = prev_v * v;
            // `prod` only ever appears in C.
            let prod = cs.alloc(|| format!("p{i}"), || Ok(prod_v))?;
            // The previous product also appears in A, with a zero coefficient.
            cs.enforce(
                || format!("mul {i}"),
                |lc| lc + prev + (Scalar::ZERO, last_prod),
                |lc| lc + x,
                |lc| lc + prod,
            );
            if i % 3 == 0 {
                // An input in B: in_k * 1 = in_k, written with the input on the B side.
                let k = i % ins.len();
                let copy = cs.alloc(|| format!("copy {i}"), || Ok(self.inputs[k]))?;
                cs.enforce(
                    || format!("in {i}"),
                    |lc| lc + CS::one(),
                    |lc| lc + ins[k],
                    |lc| lc + copy,
                );
            }
            prev = x;
            prev_v = *v;
            last_prod = prod;
        }
        Ok(())
    }
}

/// The witness path's counters after `full` syntheses in full (one of them recording) and
/// `witness` witness-only ones, nothing refused.
fn counted(full: u64, witness: u64) -> WitnessStats {
    WitnessStats {
        recorded: 1,
        full,
        witness,
        ..WitnessStats::default()
    }
}

/// Proves `circuit` with `r`, `s` on `prover` (fresh: nothing compiled yet) by both paths: first
/// by full synthesis, which records the compiled circuit of its type and shape, then again by
/// the witness path from that compiled circuit. The counters must say that each proof took its
/// path (a silent fallback to full synthesis fails here). Returns (full, witness).
fn prove_by_both_paths<C: Circuit<Scalar> + Clone + Send>(
    label: &str,
    prover: &Prover,
    circuit: &C,
    params: &Parameters,
    (r, s): (Scalar, Scalar),
) -> (Proof, Proof) {
    assert_eq!(
        prover.witness_stats(),
        WitnessStats::default(),
        "{label}: a fresh prover"
    );
    let prove = || {
        prover
            .prove_with_randomness(vec![circuit.clone()], params, &[r], &[s])
            .unwrap()[0]
    };
    let full = prove();
    assert_eq!(
        prover.witness_stats(),
        counted(1, 0),
        "{label}: the first proof is not a full synthesis that recorded"
    );
    let witness = prove();
    assert_eq!(
        prover.witness_stats(),
        counted(1, 1),
        "{label}: the second proof did not take the witness path"
    );
    (full, witness)
}

fn check_circuit<C: Circuit<Scalar> + Clone + Send>(label: &str, circuit: C, public: &[Scalar]) {
    let mut rng = common::rng(label);
    let (bp_params, params, _) = common::params_for(&circuit, &mut rng);
    let pvk = PreparedVerifyingKey::new(params.vk());
    for round in 0..2 {
        let r = Scalar::random(&mut rng);
        let s = Scalar::random(&mut rng);
        let expected = common::bellperson_proof(circuit.clone(), &bp_params, r, s);
        // Round 0 on the heap, round 1 through a pool; the witness path on, whatever
        // CUZK_WITNESS_PATH says.
        let prover = if round == 0 {
            Prover::new()
        } else {
            Prover::new().with_pool(PinnedPool::heap(PoolConfig::default()))
        }
        .with_witness_path(true);
        let (full, witness) = prove_by_both_paths(label, &prover, &circuit, &params, (r, s));
        eprintln!("{label}: round {round} proved on the {} backend", prover.backend_name());
        for (path, proof) in [("full", full), ("witness", witness)] {
            let ours = proof.to_bytes();
            assert_eq!(
                ours.as_slice(),
                expected.as_slice(),
                "{label}: proof bytes by the {path} path differ from bellperson's (round {round})"
            );
            assert!(
                common::bellperson_verifies(&bp_params, &ours, public),
                "{label}: bellperson rejects the {path} path's proof"
            );
            assert!(
                verify_proof(&pvk, &proof, public).unwrap(),
                "{label}: cuzk rejects the {path} path's proof"
            );
        }
        if let Some(pool) = prover.pool() {
            assert_eq!(pool.stats().bytes_in_use, 0, "{label}: buffers not back in the pool");
        }
    }

    // Tampering is caught: a changed public input, a flipped byte.
    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let proof = cuzk::prove_with_randomness(vec![circuit], &params, &[r], &[s]).unwrap()[0];
    if !public.is_empty() {
        let mut wrong = public.to_vec();
        let k = rng.next_u32() as usize % wrong.len();
        wrong[k] += Scalar::ONE;
        assert!(
            !common::bellperson_verifies(&bp_params, &proof.to_bytes(), &wrong),
            "{label}: wrong input accepted"
        );
        assert!(
            !verify_proof(&pvk, &proof, &wrong).unwrap(),
            "{label}: wrong input accepted by cuzk"
        );
    }
    for _ in 0..4 {
        let mut bytes = proof.to_bytes();
        let i = rng.next_u32() as usize % Proof::SIZE;
        bytes[i] ^= 1 << (rng.next_u32() % 8);
        assert!(
            !common::bellperson_verifies(&bp_params, &bytes, public),
            "{label}: flipped byte {i} accepted"
        );
        if let Ok(p) = Proof::from_bytes(&bytes) {
            assert!(
                !verify_proof(&pvk, &p, public).unwrap(),
                "{label}: flipped byte {i} accepted by cuzk"
            );
        }
    }
}

#[test]
fn no_public_inputs() {
    let c = Synthetic {
        public_inputs: 0,
        ..Synthetic::new(10)
    };
    check_circuit("no_public_inputs", c, &[]);
}

#[test]
fn many_public_inputs() {
    let c = Synthetic {
        public_inputs: 200,
        ..Synthetic::new(10)
    };
    let public = c.public_input_values();
    check_circuit("many_public_inputs", c, &public);
}

#[test]
fn aux_only_in_c_and_zero_coefficients() {
    let mut rng = common::rng("odd_uses_witness");
    let c = OddUses {
        values: (0..300).map(|_| Scalar::random(&mut rng)).collect(),
        inputs: (0..5).map(|_| Scalar::random(&mut rng)).collect(),
    };
    let public = c.inputs.clone();
    check_circuit("aux_only_in_c_and_zero_coefficients", c, &public);
}

#[test]
fn mostly_bits() {
    let c = Synthetic {
        bit_percent: 97,
        ..Synthetic::new(11)
    }
    .with_seed(rand::random());
    let public = c.public_input_values();
    check_circuit("mostly_bits", c, &public);
}

#[test]
fn two_to_the_sixteen_constraints() {
    let c = Synthetic::new(16).with_seed(rand::random());
    let public = c.public_input_values();
    check_circuit("two_to_the_sixteen", c, &public);
}

#[test]
fn non_power_of_two_constraint_count() {
    // 700 constraints + 3 inputs: the domain (1024) is padded.
    let mut rng = common::rng("non_pow2");
    let c = OddUses {
        values: (0..500).map(|_| Scalar::random(&mut rng)).collect(),
        inputs: (0..2).map(|_| Scalar::random(&mut rng)).collect(),
    };
    let public = c.inputs.clone();
    check_circuit("non_power_of_two", c, &public);
}

#[test]
fn batch_with_rng_matches_bellperson_batch() {
    use rand::SeedableRng;
    let base = Synthetic::new(9);
    let circuits: Vec<Synthetic> = (0..3).map(|i| base.clone().with_seed(100 + i)).collect();
    let mut rng = common::rng("batch");
    let (bp_params, params, _) = common::params_for(&base, &mut rng);
    let seed: u64 = rand::random();
    let mut rng_a = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let mut rng_b = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let theirs = bellperson::groth16::create_random_proof_batch::<blstrs::Bls12, _, _, _>(
        circuits.clone(),
        &bp_params,
        &mut rng_a,
    )
    .unwrap();
    // The first batch: one circuit records (full synthesis); the others are synthesized in full
    // meanwhile, or witness-only once it is done (rayon decides which start first).
    let prover = Prover::new().with_witness_path(true);
    let first = prover.prove(circuits.clone(), &params, &mut rng_b).unwrap();
    let st = prover.witness_stats();
    assert_eq!((st.recorded, st.full + st.witness), (1, 3), "{st:?}");
    assert!(st.full >= 1, "{st:?}");
    // The same batch with the same r and s (the same rng): all three witness-only.
    let mut rng_c = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let again = prover.prove(circuits.clone(), &params, &mut rng_c).unwrap();
    assert_eq!(
        prover.witness_stats(),
        counted(st.full, st.witness + 3),
        "the second batch did not take the witness path"
    );
    for (path, ours) in [("first", first), ("second", again)] {
        assert_eq!(ours.len(), 3);
        for ((t, o), c) in theirs.iter().zip(&ours).zip(&circuits) {
            let mut tb = Vec::new();
            t.write(&mut tb).unwrap();
            assert_eq!(tb.as_slice(), o.to_bytes().as_slice(), "the {path} batch");
            assert!(common::bellperson_verifies(
                &bp_params,
                &o.to_bytes(),
                &c.public_input_values()
            ));
        }
    }
}

/// A circuit that allocates inputs and aux variables but enforces nothing.
#[derive(Clone)]
struct Unconstrained {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

impl Circuit<Scalar> for Unconstrained {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (i, v) in self.inputs.iter().enumerate() {
            cs.alloc_input(|| format!("in {i}"), || Ok(*v))?;
        }
        for (i, v) in self.aux.iter().enumerate() {
            cs.alloc(|| format!("aux {i}"), || Ok(*v))?;
        }
        Ok(())
    }
}

#[test]
fn circuit_without_constraints() {
    // Nothing at all: bellperson's setup has one constraint (the one input's), a domain of
    // one point and no H query; its prover agrees. So must cuzk's loader, prover and backends.
    let empty = Unconstrained {
        inputs: vec![],
        aux: vec![],
    };
    check_circuit("no_constraints", empty.clone(), &[]);
    // Two inputs: three input constraints, a domain of four. (Aux variables in no constraint
    // bellperson's setup refuses: UnconstrainedVariable.)
    let mut rng = common::rng("unconstrained");
    let inputs = vec![Scalar::random(&mut rng), Scalar::random(&mut rng)];
    let with_inputs = Unconstrained {
        inputs: inputs.clone(),
        aux: vec![],
    };
    check_circuit("inputs_but_no_constraints", with_inputs, &inputs);

    // cuzk's own (development) setup gives the same domain as bellperson's.
    let dev = cuzk::Parameters::generate_insecure_for_development(empty.clone(), 7).unwrap();
    assert_eq!(dev.domain_size(), 1, "dev parameters of an empty circuit");
    let proof = cuzk::prove(vec![empty], &dev, &mut rng).unwrap();
    let pvk = PreparedVerifyingKey::new(dev.vk());
    assert!(verify_proof(&pvk, &proof[0], &[]).unwrap());
}
