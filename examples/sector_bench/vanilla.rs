//! A PoRep sector's vanilla proofs, the input of `StackedCompound::circuit`: random ones of a
//! sector size's production shape (the default; no sector is replicated, so 32 GiB's real tree
//! depths are within reach), or those of a small sector replicated here (`--replicate`,
//! `circuits::replicated_sector`).
//!
//! `StackedCompound::circuit` reads only the public inputs and the vanilla proofs (not the
//! public parameters, not the partition number), and the circuit's structure — its A, B, C —
//! depends only on their lengths: the layers, the challenges and the trees' paths. So random
//! proofs of a size's lengths give that size's circuit; its witness values are arbitrary (the
//! constraints are not satisfied: with random parameters the proofs do not verify anyway).
//! `--check-builders` checks it at a small size: the random sector's partition and the
//! replicated one's have the same compiled fingerprint (`check`).

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::sha256::Sha256Domain;
use filecoin_hashers::Hasher;
use rand::{Rng, RngCore, SeedableRng};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    Challenges, ColumnProof, EncodingProof, LabelingProof, Proof, PublicInputs, PublicParams, ReplicaColumnProof,
    SetupParams, StackedDrg, Tau, EXP_DEGREE, TOTAL_PARENTS,
};
use typenum::Unsigned;

use crate::circuits::{Piece, Tree};
use crate::ok;

/// TreeC's and TreeR's node (Poseidon).
pub(crate) type TreeDomain = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
/// A partition's vanilla proofs, one a challenge.
pub(crate) type Vanilla = Vec<Proof<Tree, Piece>>;
type TreeProof = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// What a sector's C2 circuits are built from: its public inputs and parameters (the
/// generator's arguments; neither the circuit nor the generator reads the parameters) and
/// each partition's vanilla proofs.
pub(crate) struct PorepSector {
    pub(crate) pub_inputs: PublicInputs<TreeDomain, Sha256Domain>,
    pub(crate) pp: PublicParams<Tree>,
    pub(crate) partitions: Vec<Vanilla>,
}

/// storage-proofs-porep's setup for a sector of `nodes` 32-byte nodes (the graph is built
/// lazily: no memory of the sector's size).
pub(crate) fn setup(nodes: usize, layers: usize, challenges: usize) -> SetupParams {
    SetupParams {
        nodes,
        degree: storage_proofs_core::drgraph::BASE_DEGREE,
        expansion_degree: EXP_DEGREE,
        porep_id: [5; 32],
        challenges: Challenges::new_interactive(challenges),
        num_layers: layers,
        api_version: ApiVersion::V1_2_0,
        api_features: vec![],
    }
}

/// Random vanilla proofs of a `sector_bytes` sector of the 32 GiB tree shape (8-8-0):
/// `partitions` partitions of `challenges` challenges over `layers` layers. Every challenge
/// has production's lengths: TreeD (binary SHA-256) a path of log2(nodes) levels; TreeC and
/// TreeR (Poseidon) base levels of arity 8, then the sub level of arity 8; columns of
/// `layers` rows for the challenged node, its 6 DRG and 8 expander parents; labeling proofs of
/// every layer (their parents unread by the circuit: TOTAL_PARENTS values as production's).
/// Every path's positions are its node's (the challenged node's, or the parent's for a
/// parent's column); every value is random. The commitments are the sector's, shared by its
/// partitions. Seeded: the same arguments give the same proofs.
pub(crate) fn random_sector(sector_bytes: u64, layers: usize, challenges: usize, partitions: usize) -> PorepSector {
    let nodes = sector_bytes / 32;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(32);
    let d = |rng: &mut dyn RngCore| TreeDomain::from(Scalar::random(rng));
    let sha = |rng: &mut dyn RngCore| Sha256Domain::from(Scalar::random(rng));
    let (arity, sub, top) = (
        <Tree as MerkleTreeTrait>::Arity::to_u64(),
        <Tree as MerkleTreeTrait>::SubTreeArity::to_u64(),
        <Tree as MerkleTreeTrait>::TopTreeArity::to_u64(),
    );
    let base_leaves = nodes / sub.max(1) / top.max(1);
    let base_levels = base_leaves.trailing_zeros() / arity.trailing_zeros();
    assert_eq!(
        arity.pow(base_levels),
        base_leaves,
        "checked by the parser: 8 subtrees of 8^k leaves"
    );
    // A path to `node` in TreeC or TreeR: its position at each level, siblings random.
    let tree_proof = |rng: &mut dyn RngCore, node: u64, root: TreeDomain| -> TreeProof {
        let mut path = Vec::new();
        let mut at = node % base_leaves;
        for _ in 0..base_levels {
            path.push((at % arity) as usize);
            at /= arity;
        }
        let tree = node / base_leaves;
        if sub > 0 {
            path.push((tree % sub) as usize);
        }
        if top > 0 {
            path.push((tree / sub.max(1)) as usize);
        }
        let arities = std::iter::repeat(arity)
            .take(base_levels as usize)
            .chain([sub, top].into_iter().filter(|&a| a > 0));
        let path = path
            .into_iter()
            .zip(arities)
            .map(|(index, a)| ((1..a).map(|_| d(rng)).collect(), index))
            .collect();
        TreeProof::from_parts(d(rng), root, path)
    };
    let column = |rng: &mut dyn RngCore, node: u64, comm_c: TreeDomain| {
        let rows = (0..layers).map(|_| d(rng)).collect();
        ColumnProof::new(node as u32, rows, tree_proof(rng, node, comm_c))
    };
    let (comm_c, comm_r_last, comm_d) = (d(&mut rng), d(&mut rng), sha(&mut rng));
    let partitions = (0..partitions)
        .map(|_| {
            (0..challenges)
                .map(|_| {
                    // Interactive challenges are never node 0.
                    let node = rng.gen_range(1..nodes);
                    let comm_d_path = (0..nodes.trailing_zeros())
                        .map(|level| (vec![sha(&mut rng)], ((node >> level) & 1) as usize))
                        .collect();
                    let drg: Vec<u64> = (0..storage_proofs_core::drgraph::BASE_DEGREE)
                        .map(|_| rng.gen_range(0..node))
                        .collect();
                    let exp: Vec<u64> = (0..EXP_DEGREE).map(|_| rng.gen_range(0..nodes)).collect();
                    let labeling = |rng: &mut dyn RngCore, layer: usize| {
                        (
                            layer as u32,
                            node,
                            (0..TOTAL_PARENTS).map(|_| d(rng)).collect::<Vec<_>>(),
                        )
                    };
                    Proof {
                        comm_d_proofs: MerkleProof::from_parts(sha(&mut rng), comm_d, comm_d_path),
                        comm_r_last_proof: tree_proof(&mut rng, node, comm_r_last),
                        replica_column_proofs: ReplicaColumnProof {
                            c_x: column(&mut rng, node, comm_c),
                            drg_parents: drg.iter().map(|&p| column(&mut rng, p, comm_c)).collect(),
                            exp_parents: exp.iter().map(|&p| column(&mut rng, p, comm_c)).collect(),
                        },
                        labeling_proofs: (1..=layers)
                            .map(|layer| {
                                let (l, n, parents) = labeling(&mut rng, layer);
                                LabelingProof::new(l, n, parents)
                            })
                            .collect(),
                        encoding_proof: {
                            let (l, n, parents) = labeling(&mut rng, layers);
                            EncodingProof::new(l, n, parents)
                        },
                    }
                })
                .collect()
        })
        .collect();
    let pub_inputs = PublicInputs {
        replica_id: d(&mut rng),
        seed: Some(rng.gen()),
        tau: Some(Tau {
            comm_d,
            comm_r: d(&mut rng),
        }),
        k: None,
    };
    let pp = ok(
        "PoRep setup",
        StackedDrg::<Tree, Piece>::setup(&setup(nodes as usize, layers, challenges)),
    );
    PorepSector {
        pub_inputs,
        pp,
        partitions,
    }
}
