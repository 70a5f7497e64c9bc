//! The native PoRep C2 witness (`cuzk::filecoin::native::porep`) against `WitnessCs` on the
//! same `StackedCircuit`: a real 2 KiB sector sealed by filecoin-proofs and its C1 output (the
//! circuit filecoin-proofs builds from it), and the production shapes — 11 layers, 32 GiB
//! (8-8-0 trees, a 2^30-leaf TreeD) and 64 GiB (8-8-2) — on random vanilla proofs (a witness
//! needs no valid proof). Per partition the generated witness must equal the synthesized one
//! value for value, inputs and aux; a failure names the first index that differs and its
//! namespace path. No parameters are needed: a witness is synthesized without them.

#![cfg(feature = "filecoin")]

#[path = "common/filecoin.rs"]
mod fixtures;
#[path = "common/native.rs"]
mod native;
#[path = "common/stacked.rs"]
mod stacked_fixtures;

use cuzk::filecoin::native::gadgets::{CountSink, CsSink};
use cuzk::filecoin::native::porep::{stacked_witness, stacked_witness_parallel};
use cuzk::{ConstraintSystem, Scalar, WitnessCs};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Hasher;
use fixtures::{c1_json, sectors, C2Inputs};
use native::{assert_same, start};
use stacked_fixtures::{random_partition, small_params};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{ColumnProof, Proof, PublicInputs, PublicParams, StackedCompound};

/// Every way the generator writes a witness: straight into a `WitnessCs`, through `alloc`
/// (`CsSink`), on 2, 3 and 64 threads; and its count. Each must equal `expected`.
fn check<Tree: 'static + MerkleTreeTrait>(
    what: &str,
    pub_in: &PublicInputs<<Tree::Hasher as Hasher>::Domain, Sha256Domain>,
    vanilla: &Vec<Proof<Tree, Sha256Hasher>>,
    pub_params: &PublicParams<Tree>,
    k: usize,
) {
    let circuit = || {
        <StackedCompound<Tree, Sha256Hasher> as CompoundProof<'_, _, _>>::circuit(
            pub_in,
            (),
            vanilla,
            pub_params,
            Some(k),
        )
        .unwrap()
    };
    let expected = WitnessCs::new().without_generator().synthesize(circuit()).unwrap();
    let finish = |mut cs: WitnessCs, inputs: Vec<Scalar>| {
        for v in inputs {
            cs.alloc_input(|| "input", || Ok(v)).unwrap();
        }
        cs.finish("generated").unwrap()
    };

    let mut cs = start();
    let inputs = stacked_witness::<Tree, Sha256Hasher>(pub_in, vanilla, pub_params, Some(k), &mut cs).unwrap();
    let got = finish(cs, inputs);
    assert_same(&format!("{what}: straight"), &expected, &got, circuit);
    assert_eq!(got.num_bits(), expected.num_bits(), "{what}: the compact form");

    let mut cs = start();
    let mut sink = CsSink::new(&mut cs);
    let inputs = stacked_witness::<Tree, Sha256Hasher>(pub_in, vanilla, pub_params, Some(k), &mut sink);
    sink.finish().unwrap();
    let got = finish(cs, inputs.unwrap());
    assert_same(&format!("{what}: through alloc"), &expected, &got, circuit);

    for threads in [1, 2, 3, 64] {
        let mut cs = start();
        stacked_witness_parallel::<Tree, Sha256Hasher>(pub_in, vanilla, pub_params, Some(k), threads, &mut cs).unwrap();
        let got = cs.finish("parallel").unwrap();
        assert_same(&format!("{what}: {threads} threads"), &expected, &got, circuit);
    }

    let mut count = CountSink::default();
    stacked_witness::<Tree, Sha256Hasher>(pub_in, vanilla, pub_params, Some(k), &mut count).unwrap();
    assert_eq!(count.values, expected.num_aux(), "{what}: sizes");
    eprintln!(
        "{what}: {} inputs, {} aux values ({} bits) equal",
        expected.inputs().len(),
        expected.num_aux(),
        count.bits
    );
}

/// A 2 KiB sector sealed by filecoin-proofs, C1 with two seeds: every partition's generated
/// witness equals `WitnessCs`'s.
#[test]
fn c2_witness_of_a_sealed_sector_equals_witness_cs() {
    let s = &sectors()[0];
    for seed in [[6u8; 32], [9u8; 32]] {
        let c2 = C2Inputs::of_json(&c1_json(s, seed));
        assert!(!c2.vanilla.is_empty());
        for k in 0..c2.vanilla.len() {
            check(
                &format!("2 KiB C2, seed {}, partition {k}", seed[0]),
                &c2.pub_in,
                &c2.vanilla[k],
                &c2.pub_params,
                k,
            );
        }
    }
}

/// What `StackedCompound::circuit` or the circuit's synthesis refuses, the generator refuses
/// with an error (no panic): no vanilla proofs, inconsistent `comm_c`, no `tau`, columns of
/// another height.
#[test]
fn inconsistent_inputs_are_refused() {
    let c2 = C2Inputs::of_json(&c1_json(&sectors()[0], [6u8; 32]));
    let vanilla = &c2.vanilla[0];
    let run = |pub_in: &PublicInputs<_, _>, v: &Vec<Proof<fixtures::Tree, Sha256Hasher>>| {
        let mut sink = CountSink::default();
        stacked_witness::<fixtures::Tree, Sha256Hasher>(pub_in, v, &c2.pub_params, Some(0), &mut sink)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(run(&c2.pub_in, vanilla).is_ok());
    assert!(run(&c2.pub_in, &Vec::new()).unwrap_err().contains("no vanilla proofs"));

    let mut other = vanilla.clone();
    let last = other.len() - 1;
    let c_x = &other[0].replica_column_proofs.c_x;
    let moved = ColumnProof::new(
        0,
        vec![c_x.get_node_at_layer(1).copied().unwrap(); 2],
        MerkleProof::from_parts(
            Default::default(),
            Scalar::from(7u64).into(),
            vec![(vec![Default::default(); 7], 0)],
        ),
    );
    other[last].replica_column_proofs.c_x = moved;
    assert!(run(&c2.pub_in, &other).unwrap_err().contains("comm_cs"));

    let no_tau = PublicInputs {
        tau: None,
        ..c2.pub_in.clone()
    };
    assert!(run(&no_tau, vanilla).unwrap_err().contains("tau"));

    let mut short = vanilla.clone();
    let p = &short[0].replica_column_proofs.drg_parents[0];
    let root = p.root();
    short[0].replica_column_proofs.drg_parents[0] = ColumnProof::new(
        0,
        vec![root; 3],
        MerkleProof::from_parts(Default::default(), root, vec![(vec![Default::default(); 7], 0)]),
    );
    assert!(run(&c2.pub_in, &short).unwrap_err().contains("columns"));
}

/// The production shapes: 11 layers, 32 GiB (8-8-0 trees, nine base levels and a sub level;
/// TreeD 30 levels) and 64 GiB (8-8-2), two challenges each.
#[test]
fn production_shapes_equal_witness_cs() {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(38);
    let (pub_in, vanilla) = random_partition::<filecoin_proofs::SectorShape32GiB>(32 << 30, 2, 11, &mut rng);
    check("32 GiB shape", &pub_in, &vanilla, &small_params(), 0);
    let (pub_in, vanilla) = random_partition::<filecoin_proofs::SectorShape64GiB>(64 << 30, 2, 11, &mut rng);
    check("64 GiB shape", &pub_in, &vanilla, &small_params(), 0);
}
