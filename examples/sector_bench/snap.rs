//! The SnapDeals kind's partitions: storage-proofs-update's `EmptySectorUpdateCircuit` of a
//! sector size's production shape, built with a fabricated witness.
//!
//! A small real sector would not give production's shape — the SHA-256 TreeD paths, whose
//! depth is the sector's, carry most of the constraints — and a 32 GiB sector cannot be
//! encoded here. So the circuit is built directly: `PublicParams::from_sector_size` (challenge
//! and partition counts, apex leaves), the tree shape filecoin-proofs uses for that size, and
//! every witness value drawn from a seeded RNG, each vector of the length `synthesize` expects
//! (`ChallengeProof::empty`'s paths, one TreeD partition path shared by every challenge, the
//! partition's apex leaves). The public input `k_and_h_select` is valid (`k`, the production
//! `h`), and each `leaf_r_new` is `leaf_r_old + leaf_d_new · rho` for its challenge, as the
//! circuit asserts while it synthesizes; nothing else is consistent (no Merkle path reaches its
//! root), so the constraints are not satisfied. Their structure is production's: the same
//! matrices as filecoin-proofs' own circuit of that size (`tests/filecoin.rs` compares the
//! compiled fingerprints at 2 KiB).
//!
//! Shared by `examples/sector_bench/main.rs` and `tests/filecoin.rs`.

use std::marker::PhantomData;

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::{poseidon::PoseidonDomain, sha256::Sha256Domain};
use filecoin_proofs::{SectorShapeBase, SectorShapeSub2, SectorShapeSub8, SectorShapeTop2};
use rand::{RngCore, SeedableRng};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs};
use storage_proofs_update::constants::{h_default, TreeRHasher};
use storage_proofs_update::{phi, rho, Challenges, EmptySectorUpdateCircuit, PublicParams};

use cuzk::filecoin::native::update::update_circuit_witness_parallel;
use cuzk::{Circuit, ConstraintSystem, SynthesisError, WitnessCs};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The TreeR shape filecoin-proofs uses for a SnapDeals sector size (`SectorShape*`), for the
/// sizes storage-proofs-update accepts and filecoin-proofs has a shape for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeShape {
    /// 8-0-0: 2 KiB, 8 MiB, 512 MiB.
    Base,
    /// 8-2-0: 4 KiB, 16 MiB.
    Sub2,
    /// 8-8-0: 16 KiB, 32 GiB.
    Sub8,
    /// 8-8-2: 32 KiB, 64 GiB.
    Top2,
}

impl TreeShape {
    /// The shape of a `sector_bytes` SnapDeals sector.
    ///
    /// # Errors
    /// A size storage-proofs-update does not accept, or one filecoin-proofs has no shape for
    /// (1 KiB and 8 KiB are 8-4-0).
    pub fn of(sector_bytes: u64) -> Result<Self, String> {
        match sector_bytes {
            b if b == 2 * KIB || b == 8 * MIB || b == 512 * MIB => Ok(Self::Base),
            b if b == 4 * KIB || b == 16 * MIB => Ok(Self::Sub2),
            b if b == 16 * KIB || b == 32 * GIB => Ok(Self::Sub8),
            b if b == 32 * KIB || b == 64 * GIB => Ok(Self::Top2),
            b => Err(format!(
                "{b} B: a SnapDeals sector of 2KiB, 4KiB, 16KiB, 32KiB, 8MiB, 16MiB, 512MiB, 32GiB or 64GiB"
            )),
        }
    }
}

/// One partition's `EmptySectorUpdateCircuit<TreeR>` in parts (the circuit is not `Clone`),
/// made whole when it is synthesized.
pub struct SnapPartition<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub_params: PublicParams,
    pub_inputs: PublicInputs,
    priv_inputs: PrivateInputs<TreeR>,
}

impl<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> Clone for SnapPartition<TreeR> {
    fn clone(&self) -> Self {
        // By field: the derived `Clone` of `PrivateInputs` would need `TreeR: Clone`.
        let p = &self.priv_inputs;
        Self {
            pub_params: self.pub_params.clone(),
            pub_inputs: self.pub_inputs.clone(),
            priv_inputs: PrivateInputs {
                comm_c: p.comm_c,
                root_r_old: p.root_r_old,
                root_r_new: p.root_r_new,
                apex_leafs: p.apex_leafs.clone(),
                challenge_proofs: p.challenge_proofs.clone(),
            },
        }
    }
}

impl<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>> SnapPartition<TreeR> {
    /// Partition `k` of a `sector_bytes` sector, every witness value drawn from `rng`.
    fn fabricate(sector_bytes: u64, k: usize, rng: &mut impl RngCore) -> Self {
        let pub_params = PublicParams::from_sector_size(sector_bytes);
        let PublicParams {
            sector_nodes,
            challenge_bit_len,
            partition_bit_len,
            apex_leaf_count,
            ..
        } = pub_params;
        let (comm_r_old, comm_d_new, comm_r_new) = (
            PoseidonDomain::from(Scalar::random(&mut *rng)),
            Sha256Domain::from(Scalar::random(&mut *rng)),
            PoseidonDomain::from(Scalar::random(&mut *rng)),
        );
        let h = h_default(sector_nodes);
        let pub_inputs = PublicInputs::new(sector_nodes, k, h, comm_r_old, comm_d_new, comm_r_new);

        // The paths' lengths, as the circuit's own blank (parameter generation) has them.
        let blank = ChallengeProof::<TreeR>::empty(sector_nodes);
        // TreeD's top rows, from the partition's apex root up: the same for every challenge.
        let below_partition = challenge_bit_len - partition_bit_len;
        let partition_path = fill(&blank.path_d_new[below_partition..], rng);
        let phi = phi(&comm_d_new, &comm_r_old);
        let challenge_proofs = Challenges::new(sector_nodes, comm_r_new, k)
            .map(|c| {
                let (leaf_r_old, leaf_d_new) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
                // The circuit asserts this one (`label_r_new`): rho of the challenge's h high bits.
                let leaf_r_new = leaf_r_old + leaf_d_new * rho(&phi, c >> (challenge_bit_len - h));
                let mut path_d_new = fill(&blank.path_d_new[..below_partition], rng);
                path_d_new.extend(partition_path.iter().cloned());
                ChallengeProof {
                    leaf_r_old: Some(leaf_r_old),
                    path_r_old: fill(&blank.path_r_old, rng),
                    leaf_d_new: Some(leaf_d_new),
                    path_d_new,
                    leaf_r_new: Some(leaf_r_new),
                    path_r_new: fill(&blank.path_r_new, rng),
                    _tree_r: PhantomData,
                }
            })
            .collect();
        let priv_inputs = PrivateInputs {
            comm_c: some(rng),
            root_r_old: some(rng),
            root_r_new: some(rng),
            apex_leafs: (0..apex_leaf_count).map(|_| some(rng)).collect(),
            challenge_proofs,
        };
        Self {
            pub_params,
            pub_inputs,
            priv_inputs,
        }
    }

    /// Its witness by cuzk's native generator (`filecoin::native::update`), on `threads`
    /// threads, into `cs` (holding the "one").
    fn generate(&self, threads: usize, cs: &mut WitnessCs) -> cuzk::Result<()> {
        update_circuit_witness_parallel(&self.pub_params, &self.pub_inputs, &self.priv_inputs, threads, cs)
    }

    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        EmptySectorUpdateCircuit::<TreeR> {
            pub_params: self.pub_params,
            pub_inputs: self.pub_inputs,
            priv_inputs: self.priv_inputs,
        }
        .synthesize(cs)
    }
}

fn some(rng: &mut impl RngCore) -> Option<Scalar> {
    Some(Scalar::random(rng))
}

/// A path of `shape`'s lengths (rows of siblings), every sibling drawn from `rng`.
fn fill(shape: &[Vec<Option<Scalar>>], rng: &mut impl RngCore) -> Vec<Vec<Option<Scalar>>> {
    shape
        .iter()
        .map(|siblings| siblings.iter().map(|_| some(rng)).collect())
        .collect()
}

/// A SnapDeals partition circuit of any sector size's shape.
#[derive(Clone)]
pub enum SnapCircuit {
    Base(SnapPartition<SectorShapeBase>),
    Sub2(SnapPartition<SectorShapeSub2>),
    Sub8(SnapPartition<SectorShapeSub8>),
    Top2(SnapPartition<SectorShapeTop2>),
}

impl SnapCircuit {
    /// Partition `k` of a `sector_bytes` sector (`k` below its partition count), its witness
    /// fabricated from `seed` (the same seed and `k`, the same circuit).
    ///
    /// # Errors
    /// A sector size [`TreeShape::of`] refuses, or `k` past the partition count.
    pub fn fabricate(sector_bytes: u64, k: usize, seed: u64) -> Result<Self, String> {
        let shape = TreeShape::of(sector_bytes)?;
        let partitions = PublicParams::from_sector_size(sector_bytes).partition_count;
        if k >= partitions {
            return Err(format!("partition {k}: a {sector_bytes} B sector has {partitions}"));
        }
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        rng.set_stream(k as u64);
        Ok(match shape {
            TreeShape::Base => Self::Base(SnapPartition::fabricate(sector_bytes, k, &mut rng)),
            TreeShape::Sub2 => Self::Sub2(SnapPartition::fabricate(sector_bytes, k, &mut rng)),
            TreeShape::Sub8 => Self::Sub8(SnapPartition::fabricate(sector_bytes, k, &mut rng)),
            TreeShape::Top2 => Self::Top2(SnapPartition::fabricate(sector_bytes, k, &mut rng)),
        })
    }

    /// Its witness by cuzk's native generator (`filecoin::native::update`), on `threads`
    /// threads, into `cs` (holding the "one"): what `WitnessCs` holds after synthesizing it.
    ///
    /// # Errors
    /// The generator's.
    pub fn generate(&self, threads: usize, cs: &mut WitnessCs) -> cuzk::Result<()> {
        match self {
            Self::Base(p) => p.generate(threads, cs),
            Self::Sub2(p) => p.generate(threads, cs),
            Self::Sub8(p) => p.generate(threads, cs),
            Self::Top2(p) => p.generate(threads, cs),
        }
    }

    /// The circuit's public parameters (storage-proofs-update's, from the sector size).
    pub fn public_params(&self) -> &PublicParams {
        match self {
            Self::Base(p) => &p.pub_params,
            Self::Sub2(p) => &p.pub_params,
            Self::Sub8(p) => &p.pub_params,
            Self::Top2(p) => &p.pub_params,
        }
    }
}

impl Circuit<Scalar> for SnapCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Self::Base(p) => p.synthesize(cs),
            Self::Sub2(p) => p.synthesize(cs),
            Self::Sub8(p) => p.synthesize(cs),
            Self::Top2(p) => p.synthesize(cs),
        }
    }
}
