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

use cuzk::filecoin::native::gadgets::{CountSink, CsSink};
use cuzk::filecoin::native::porep::{stacked_witness, stacked_witness_parallel};
use cuzk::filecoin::native::{first_differences, AllocationPaths};
use cuzk::{Circuit, ConstraintSystem, Scalar, Witness, WitnessCs};
use ff::Field;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Hasher;
use fixtures::{c1_json, sectors, C2Inputs};
use rand::Rng;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, ColumnProof, EncodingProof, LabelingProof, Proof, PublicInputs, PublicParams, ReplicaColumnProof,
    StackedCompound, StackedDrg, EXP_DEGREE,
};

/// Panics unless `got` equals `expected`, naming the first difference by its namespace path
/// (recorded only then: a path is a string per value).
fn assert_same<C: Circuit<Scalar>>(what: &str, expected: &Witness, got: &Witness, circuit: impl Fn() -> C) {
    let d = first_differences(expected, got);
    if !d.is_empty() {
        let paths = AllocationPaths::record(circuit()).unwrap();
        panic!("{what}: {}", d.named(&paths));
    }
}

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
    let start = || {
        let mut cs = WitnessCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        cs
    };
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

/// A partition's public inputs and vanilla proofs.
type Partition<T> = (
    PublicInputs<<<T as MerkleTreeTrait>::Hasher as Hasher>::Domain, Sha256Domain>,
    Vec<Proof<T, Sha256Hasher>>,
);

/// Random vanilla proofs of `T`'s production shape: `challenges` challenges of a sector of
/// `2^30 · size_gib / 32` nodes, 11 layers, 6 DRG and 8 expander parents, TreeD a binary
/// SHA-256 tree of as many leaves, TreeC and TreeR `T`'s Poseidon trees (base levels of
/// arity 8, then its sub and top levels).
fn random_partition<T: 'static + MerkleTreeTrait>(size_gib: u64, challenges: usize, rng: &mut impl Rng) -> Partition<T>
where
    <T::Hasher as Hasher>::Domain: From<Scalar>,
{
    use typenum::Unsigned;
    const LAYERS: usize = 11;
    let nodes = (size_gib << 30) / 32;
    let d = |rng: &mut dyn rand::RngCore| <T::Hasher as Hasher>::Domain::from(Scalar::random(rng));
    let sha = |rng: &mut dyn rand::RngCore| Sha256Domain::from(Scalar::random(rng));
    let (sub, top) = (T::SubTreeArity::to_usize(), T::TopTreeArity::to_usize());
    let base_leaves = nodes / sub.max(1) as u64 / top.max(1) as u64;
    let base_levels = (base_leaves.trailing_zeros() / 3) as usize;
    let arities: Vec<usize> = std::iter::repeat(T::Arity::to_usize())
        .take(base_levels)
        .chain([sub, top])
        .filter(|&a| a > 0)
        .collect();
    let (comm_c, comm_r_last, comm_d) = (d(rng), d(rng), sha(rng));
    type TreeProof<T> = MerkleProof<
        <T as MerkleTreeTrait>::Hasher,
        <T as MerkleTreeTrait>::Arity,
        <T as MerkleTreeTrait>::SubTreeArity,
        <T as MerkleTreeTrait>::TopTreeArity,
    >;
    let tree_proof = |rng: &mut dyn rand::RngCore, root| -> TreeProof<T> {
        let path = arities
            .iter()
            .map(|&a| ((1..a).map(|_| d(rng)).collect(), rng.gen_range(0..a)))
            .collect();
        TreeProof::<T>::from_parts(d(rng), root, path)
    };
    let column = |rng: &mut dyn rand::RngCore, index: u32| {
        let rows = (0..LAYERS).map(|_| d(rng)).collect();
        ColumnProof::new(index, rows, tree_proof(rng, comm_c))
    };
    let proofs = (0..challenges)
        .map(|_| {
            let node = rng.gen_range(0..nodes);
            let comm_d_path = (0..nodes.trailing_zeros())
                .map(|_| (vec![sha(rng)], rng.gen_range(0..2)))
                .collect();
            Proof {
                comm_d_proofs: MerkleProof::from_parts(sha(rng), comm_d, comm_d_path),
                comm_r_last_proof: tree_proof(rng, comm_r_last),
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column(rng, node as u32),
                    drg_parents: (0..6)
                        .map(|_| {
                            let index = rng.gen();
                            column(rng, index)
                        })
                        .collect(),
                    exp_parents: (0..EXP_DEGREE)
                        .map(|_| {
                            let index = rng.gen();
                            column(rng, index)
                        })
                        .collect(),
                },
                labeling_proofs: (1..=LAYERS)
                    .map(|layer| LabelingProof::new(layer as u32, node, (0..14).map(|_| d(rng)).collect()))
                    .collect(),
                encoding_proof: EncodingProof::new(LAYERS as u32, node, vec![]),
            }
        })
        .collect();
    let pub_in = PublicInputs {
        replica_id: d(rng),
        tau: Some(stacked::Tau { comm_d, comm_r: d(rng) }),
        k: None,
        seed: Some(rng.gen()),
    };
    (pub_in, proofs)
}

/// Public parameters of a small sector: the circuit (and the generator) do not read them.
fn small_params<T: 'static + MerkleTreeTrait>() -> PublicParams<T> {
    let setup = stacked::SetupParams {
        nodes: 512,
        degree: storage_proofs_core::drgraph::BASE_DEGREE,
        expansion_degree: EXP_DEGREE,
        porep_id: [5; 32],
        challenges: stacked::Challenges::new_interactive(2),
        num_layers: 11,
        api_version: ApiVersion::V1_2_0,
        api_features: vec![],
    };
    StackedDrg::<T, Sha256Hasher>::setup(&setup).unwrap()
}

/// The production shapes: 11 layers, 32 GiB (8-8-0 trees, nine base levels and a sub level;
/// TreeD 30 levels) and 64 GiB (8-8-2), two challenges each.
#[test]
fn production_shapes_equal_witness_cs() {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(38);
    let (pub_in, vanilla) = random_partition::<filecoin_proofs::SectorShape32GiB>(32, 2, &mut rng);
    check("32 GiB shape", &pub_in, &vanilla, &small_params(), 0);
    let (pub_in, vanilla) = random_partition::<filecoin_proofs::SectorShape64GiB>(64, 2, &mut rng);
    check("64 GiB shape", &pub_in, &vanilla, &small_params(), 0);
}
