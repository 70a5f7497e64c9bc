//! The native Fallback PoSt witness (`cuzk::filecoin::native::post`) against `WitnessCs` on
//! the same circuit: real 2 KiB sectors sealed by filecoin-proofs, their Winning and Window
//! PoSt vanilla proofs, the circuits filecoin-proofs builds from them (as
//! `generate_winning_post_with_vanilla` / `generate_window_post_with_vanilla` build them), and
//! per partition the generated witness must equal the synthesized one value for value, inputs
//! and aux (a failure names the first index that differs and its namespace path). No
//! parameters are needed: a witness is synthesized without them. The 32 GiB and 64 GiB tree
//! shapes are checked the same way on random vanilla proofs (a witness needs no valid proof).

#![cfg(feature = "filecoin")]

#[path = "common/filecoin.rs"]
mod fixtures;
#[path = "common/post.rs"]
mod post_fixtures;

use cuzk::filecoin::native::gadgets::{CountSink, CsSink};
use cuzk::filecoin::native::post::{fallback_post_witness, fallback_post_witness_parallel};
use cuzk::filecoin::native::{assert_same_witness, first_differences, AllocationPaths};
use cuzk::filecoin::RegisteredPoStProof;
use cuzk::{ConstraintSystem, Scalar, Witness, WitnessCs};
use ff::Field;
use filecoin_hashers::Hasher;
use fixtures::{prover_id, window_vanilla, winning_vanilla, Tree, WINDOW, WINNING};
use post_fixtures::random_partition;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};

type Domain = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

type Partitions = post_fixtures::Partitions<Tree>;

fn partitions(ty: RegisteredPoStProof, randomness: &[u8; 32], vanilla: &[Vec<u8>]) -> Partitions {
    Partitions::of_bytes(&ty.as_v1_config(), randomness, &prover_id(), vanilla)
}

fn circuit(p: &Partitions, k: usize) -> FallbackPoStCircuit<Tree> {
    p.circuit(k)
}

/// The generated witness of partition `k`, written into a `WitnessCs` as the witness path
/// would hold it: straight (its `AuxSink`), or through `alloc` (`CsSink`).
fn generated(p: &Partitions, k: usize, through_alloc: bool) -> Witness {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let inputs = if through_alloc {
        let mut sink = CsSink::new(&mut cs);
        let inputs = fallback_post_witness::<Tree>(&p.pub_inputs, &p.proofs[k], &p.pub_params, Some(k), &mut sink);
        sink.finish().unwrap();
        inputs.unwrap()
    } else {
        fallback_post_witness::<Tree>(&p.pub_inputs, &p.proofs[k], &p.pub_params, Some(k), &mut cs).unwrap()
    };
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v)).unwrap();
    }
    cs.finish("generated").unwrap()
}

/// Every partition's generated witness equals `WitnessCs`'s (as the witness path synthesizes
/// it: `without_generator`, the sectors in merged chunks) and the recorder's (sequential),
/// generated sequentially (through either sink) and on several threads.
fn check_all(what: &str, p: &Partitions) {
    assert!(!p.proofs.is_empty());
    for k in 0..p.proofs.len() {
        let expected = WitnessCs::new().without_generator().synthesize(circuit(p, k)).unwrap();
        let paths = AllocationPaths::record(circuit(p, k)).unwrap();
        let got = generated(p, k, false);
        assert_same_witness(&expected, &got, Some(&paths));
        assert_same_witness(&expected, &generated(p, k, true), Some(&paths));
        for threads in [2, 3, 64] {
            let mut cs = WitnessCs::new();
            cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
            fallback_post_witness_parallel::<Tree>(
                &p.pub_inputs,
                &p.proofs[k],
                &p.pub_params,
                Some(k),
                threads,
                &mut cs,
            )
            .unwrap();
            assert_same_witness(&expected, &cs.finish("parallel").unwrap(), Some(&paths));
        }
        assert_eq!(
            got.num_bits(),
            expected.num_bits(),
            "{what} partition {k}: the compact form"
        );
        assert!(
            first_differences(&paths, &got).is_empty(),
            "{what} partition {k}: the recorder differs"
        );
        let mut count = CountSink::default();
        fallback_post_witness::<Tree>(&p.pub_inputs, &p.proofs[k], &p.pub_params, Some(k), &mut count).unwrap();
        assert_eq!(count.values, expected.num_aux(), "{what} partition {k}: sizes");
        eprintln!(
            "{what} partition {k}: {} inputs, {} aux values ({} bits) equal",
            expected.inputs().len(),
            expected.num_aux(),
            count.bits
        );
    }
}

/// Winning PoSt of one 2 KiB sector: one partition, one sector slot, 66 challenges.
#[test]
fn winning_post_witness_equals_witness_cs() {
    let randomness = [5u8; 32];
    let (vanilla, _) = winning_vanilla(&randomness);
    let p = partitions(WINNING, &randomness, &vanilla);
    assert_eq!(p.proofs.len(), 1);
    check_all("Winning PoSt", &p);
}

/// Window PoSt of three 2 KiB sectors: two partitions of two sector slots (the second with
/// its one sector repeated), 10 challenges a sector.
#[test]
fn window_post_witness_equals_witness_cs() {
    let randomness = [6u8; 32];
    let (vanilla, _) = window_vanilla(&randomness);
    let p = partitions(WINDOW, &randomness, &vanilla);
    assert_eq!(p.proofs.len(), 2, "three sectors, two a partition");
    check_all("Window PoSt", &p);
}

/// What `FallbackPoStCompound::circuit` refuses, the generator refuses: a partition past the
/// public sectors, a vanilla proof of the wrong sector count.
#[test]
fn inconsistent_inputs_are_refused() {
    let randomness = [6u8; 32];
    let (vanilla, _) = window_vanilla(&randomness);
    let p = partitions(WINDOW, &randomness, &vanilla);
    let mut sink = CountSink::default();
    assert!(fallback_post_witness::<Tree>(&p.pub_inputs, &p.proofs[0], &p.pub_params, Some(2), &mut sink).is_err());
    let mut short = p.proofs[0].clone();
    short.sectors.pop();
    assert!(fallback_post_witness::<Tree>(&p.pub_inputs, &short, &p.pub_params, Some(0), &mut sink).is_err());
}

/// The production tree shapes: 32 GiB (8-8-0, ten levels) and 64 GiB (8-8-2), a partition of
/// four sector slots for three public sectors (the last one repeated), three challenges each.
#[test]
fn large_sector_shapes_equal_witness_cs() {
    fn shape<T: 'static + MerkleTreeTrait>(what: &str, rng: &mut rand_chacha::ChaCha8Rng)
    where
        T::Hasher: Hasher<Domain = Domain>,
        T::Proof: From<MerkleProof<T::Hasher, T::Arity, T::SubTreeArity, T::TopTreeArity>>,
    {
        let (pub_in, proof, params) = random_partition::<T>(3, 4, 3, rng);
        let circuit = || {
            <FallbackPoStCompound<T> as CompoundProof<'_, _, _>>::circuit(
                &pub_in,
                Default::default(),
                &proof,
                &params,
                Some(0),
            )
            .unwrap()
        };
        let expected = WitnessCs::new().without_generator().synthesize(circuit()).unwrap();
        let paths = AllocationPaths::record(circuit()).unwrap();
        let mut cs = WitnessCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let inputs = fallback_post_witness::<T>(&pub_in, &proof, &params, Some(0), &mut cs).unwrap();
        for v in inputs {
            cs.alloc_input(|| "input", || Ok(v)).unwrap();
        }
        let got = cs.finish("generated").unwrap();
        assert_same_witness(&expected, &got, Some(&paths));
        let mut cs = WitnessCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        fallback_post_witness_parallel::<T>(&pub_in, &proof, &params, Some(0), 3, &mut cs).unwrap();
        assert_same_witness(&expected, &cs.finish("parallel").unwrap(), Some(&paths));
        assert_eq!(
            expected.inputs().len(),
            1 + 4 * (1 + 3),
            "{what}: one comm_r and one packed path a challenge"
        );
        eprintln!("{what}: {} aux values equal", expected.num_aux());
    }
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(32);
    shape::<filecoin_proofs::SectorShape32GiB>("32 GiB", &mut rng);
    shape::<filecoin_proofs::SectorShape64GiB>("64 GiB", &mut rng);
}
