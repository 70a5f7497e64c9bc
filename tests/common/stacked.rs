//! Random PoRep C2 partitions of production shapes (tests/native_porep.rs,
//! examples/native_porep_bench.rs): the public inputs and vanilla proofs
//! `StackedCompound::circuit` builds a partition's circuit from, every value random (a witness
//! needs no valid proof), and small public parameters (the circuit does not read them).
#![allow(dead_code)]

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Hasher;
use rand::Rng;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, ColumnProof, EncodingProof, LabelingProof, Proof, PublicInputs, PublicParams, ReplicaColumnProof, StackedDrg,
    EXP_DEGREE,
};

/// A partition's public inputs and vanilla proofs.
pub type Partition<T> = (
    PublicInputs<<<T as MerkleTreeTrait>::Hasher as Hasher>::Domain, Sha256Domain>,
    Vec<Proof<T, Sha256Hasher>>,
);

/// Random vanilla proofs of `T`'s production shape: `challenges` challenges of a sector of
/// `sector_bytes / 32` nodes, `layers` layers (2 or 11), 6 DRG and 8 expander parents, TreeD a binary
/// SHA-256 tree of as many leaves, TreeC and TreeR `T`'s Poseidon trees (base levels of
/// arity 8, then its sub and top levels).
pub fn random_partition<T: 'static + MerkleTreeTrait>(
    sector_bytes: u64,
    challenges: usize,
    layers: usize,
    rng: &mut impl Rng,
) -> Partition<T>
where
    <T::Hasher as Hasher>::Domain: From<Scalar>,
{
    use typenum::Unsigned;
    let nodes = sector_bytes / 32;
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
        let rows = (0..layers).map(|_| d(rng)).collect();
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
                labeling_proofs: (1..=layers)
                    .map(|layer| LabelingProof::new(layer as u32, node, (0..14).map(|_| d(rng)).collect()))
                    .collect(),
                encoding_proof: EncodingProof::new(layers as u32, node, vec![]),
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
pub fn small_params<T: 'static + MerkleTreeTrait>() -> PublicParams<T> {
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
