//! Random Fallback PoSt partitions of production tree shapes (tests/native_post.rs,
//! examples/native_post_bench.rs, examples/sector_bench/window.rs): the public inputs, vanilla
//! proof and public parameters `FallbackPoStCompound::circuit` builds a partition from, every
//! value random (a witness needs no valid proof; the circuit's structure reads only the
//! lengths).
#![allow(dead_code)]

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::Hasher;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{self, PublicInputs, PublicParams, PublicSector, SectorProof};

/// The Poseidon trees' domain (every PoSt tree's).
pub type Domain = PoseidonDomain;

/// Random vanilla proofs of `T`'s shape (nine base levels of its arity, then its sub and top
/// levels; every value random): `sectors` public sectors, a partition of `slots` sector slots
/// (the last sector repeated past them) of `challenges` challenges. The public parameters say
/// 32 GiB sectors whatever `T` (the circuit reads the tree's shape from `T`).
pub fn random_partition<T: 'static + MerkleTreeTrait>(
    sectors: usize,
    slots: usize,
    challenges: usize,
    rng: &mut impl rand::Rng,
) -> (PublicInputs<Domain>, fallback::Proof<T::Proof>, PublicParams)
where
    T::Hasher: Hasher<Domain = Domain>,
    T::Proof: From<MerkleProof<T::Hasher, T::Arity, T::SubTreeArity, T::TopTreeArity>>,
{
    use typenum::Unsigned;
    let d = |rng: &mut dyn rand::RngCore| Domain::from(Scalar::random(rng));
    let arities: Vec<usize> = [T::Arity::to_usize(); 9]
        .into_iter()
        .chain([T::SubTreeArity::to_usize(), T::TopTreeArity::to_usize()])
        .filter(|&a| a > 0)
        .collect();
    let public = (0..sectors)
        .map(|i| PublicSector {
            id: SectorId::from(i as u64),
            comm_r: d(rng),
        })
        .collect();
    let proofs = (0..slots)
        .map(|_| SectorProof {
            inclusion_proofs: (0..challenges)
                .map(|_| {
                    let path = arities
                        .iter()
                        .map(|&a| ((1..a).map(|_| d(rng)).collect(), rng.gen_range(0..a)))
                        .collect();
                    MerkleProof::from_parts(d(rng), d(rng), path)
                })
                .collect(),
            comm_c: d(rng),
            comm_r_last: d(rng),
        })
        .collect();
    let params = PublicParams {
        sector_size: 32 << 30,
        challenge_count: challenges,
        sector_count: slots,
        api_version: ApiVersion::V1_2_0,
    };
    let pub_in = PublicInputs {
        randomness: Domain::default(),
        prover_id: Domain::default(),
        sectors: public,
        k: None,
    };
    (pub_in, fallback::Proof { sectors: proofs }, params)
}

/// filecoin-proofs' public parameters for a PoSt of `config` over `sectors` vanilla proofs and
/// its partition count (`None` for one), as its `generate_*_post_with_vanilla` make them.
pub fn post_public_params<T: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    config: &filecoin_proofs::PoStConfig,
    sectors: usize,
) -> (PublicParams, Option<usize>) {
    use storage_proofs_core::compound_proof::{CompoundProof, SetupParams};
    let (vanilla_params, partitions) = match config.typ {
        filecoin_proofs::PoStType::Winning => (
            filecoin_proofs::parameters::winning_post_setup_params(config).expect("Winning PoSt setup"),
            None,
        ),
        filecoin_proofs::PoStType::Window => {
            // filecoin-proofs' get_partitions_for_window_post (crate-private).
            let n = sectors.div_ceil(config.sector_count);
            (
                filecoin_proofs::parameters::window_post_setup_params(config),
                (n > 1).then_some(n),
            )
        }
    };
    let setup = SetupParams {
        vanilla_params,
        partitions,
        priority: config.priority,
    };
    let pub_params =
        <fallback::FallbackPoStCompound<T> as CompoundProof<'_, _, fallback::FallbackPoStCircuit<T>>>::setup(&setup)
            .expect("PoSt public parameters");
    (pub_params.vanilla_params, partitions)
}

/// What filecoin-proofs builds a PoSt's circuits from: the public inputs, the public
/// parameters and the vanilla proof of each partition.
pub struct Partitions<T: 'static + MerkleTreeTrait> {
    pub pub_inputs: PublicInputs<Domain>,
    pub pub_params: PublicParams,
    pub proofs: Vec<fallback::Proof<T::Proof>>,
}

impl<T: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>> Partitions<T> {
    /// A PoSt of `config` from its sectors' vanilla proofs (each sector once, in ascending
    /// order), partitioned as filecoin-proofs' `generate_winning_post_with_vanilla` /
    /// `generate_window_post_with_vanilla` partition them (which checks that they verify).
    pub fn new(
        config: &filecoin_proofs::PoStConfig,
        randomness: &[u8; 32],
        prover_id: &[u8; 32],
        sector_proofs: &[filecoin_proofs::FallbackPoStSectorProof<T>],
    ) -> Self {
        let (pub_params, partitions) = post_public_params::<T>(config, sector_proofs.len());
        let pub_inputs = PublicInputs {
            randomness: filecoin_proofs::as_safe_commitment(randomness, "randomness").expect("a field element"),
            prover_id: filecoin_proofs::as_safe_commitment(prover_id, "prover_id").expect("a field element"),
            sectors: sector_proofs
                .iter()
                .map(|p| PublicSector {
                    id: p.sector_id,
                    comm_r: p.comm_r,
                })
                .collect(),
            k: None,
        };
        let proofs = filecoin_proofs::partition_vanilla_proofs(
            config,
            &pub_params,
            &pub_inputs,
            partitions.unwrap_or(1),
            sector_proofs,
        )
        .expect("vanilla proofs that verify");
        Self {
            pub_inputs,
            pub_params,
            proofs,
        }
    }

    /// From Curio's bytes (bincode `FallbackPoStSectorProof`s).
    pub fn of_bytes(
        config: &filecoin_proofs::PoStConfig,
        randomness: &[u8; 32],
        prover_id: &[u8; 32],
        vanilla: &[Vec<u8>],
    ) -> Self {
        let proofs: Vec<filecoin_proofs::FallbackPoStSectorProof<T>> = vanilla
            .iter()
            .map(|b| bincode::deserialize(b).expect("a bincode FallbackPoStSectorProof"))
            .collect();
        Self::new(config, randomness, prover_id, &proofs)
    }

    /// Partition `k`'s circuit, as `FallbackPoStCompound::circuit` builds it.
    pub fn circuit(&self, k: usize) -> fallback::FallbackPoStCircuit<T> {
        use storage_proofs_core::compound_proof::CompoundProof;
        <fallback::FallbackPoStCompound<T> as CompoundProof<'_, _, _>>::circuit(
            &self.pub_inputs,
            Default::default(),
            &self.proofs[k],
            &self.pub_params,
            Some(k),
        )
        .expect("the PoSt circuit")
    }
}

/// Vanilla proofs that verify (filecoin-proofs checks the vanilla proofs before it builds a
/// PoSt's circuits), as filecoin-ffi's `generate_single_vanilla_proof` makes them for a PoSt of
/// `config` under `randomness`: for each of `sector_ids` (slot i of Window partition `k`; a
/// Winning PoSt's one sector fills every slot), the leaves `FallbackPoSt::verify` challenges,
/// with random values, in a sparse tree of `T`'s shape for the sector size (every node off
/// their paths random) whose root is the sector's comm_r_last, a random comm_c and comm_r =
/// H(comm_c, comm_r_last).
pub fn verifying_sector_proofs<T: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    config: &filecoin_proofs::PoStConfig,
    randomness: &[u8; 32],
    k: usize,
    sector_ids: &[u64],
    rng: &mut impl rand::Rng,
) -> Vec<filecoin_proofs::FallbackPoStSectorProof<T>> {
    use merkletree::hash::Algorithm;
    use std::collections::BTreeMap;
    use typenum::Unsigned;
    type F = <PoseidonHasher as Hasher>::Function;
    let pub_params = post_public_params::<T>(config, sector_ids.len()).0;
    let randomness: Domain = filecoin_proofs::as_safe_commitment(randomness, "randomness").expect("a field element");
    let d = |rng: &mut dyn rand::RngCore| Domain::from(Scalar::random(rng));
    let nodes = pub_params.sector_size / 32;
    let (sub, top) = (T::SubTreeArity::to_u64(), T::TopTreeArity::to_u64());
    let base_leaves = nodes / sub.max(1) / top.max(1);
    let arity = T::Arity::to_u64();
    let base_levels = base_leaves.trailing_zeros() / arity.trailing_zeros();
    let arities: Vec<u64> = std::iter::repeat(arity)
        .take(base_levels as usize)
        .chain([sub, top])
        .filter(|&a| a > 0)
        .collect();
    let winning = config.typ == filecoin_proofs::PoStType::Winning;
    let (count, sector_count) = (pub_params.challenge_count, pub_params.sector_count);
    sector_ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            // The slots this sector's challenges are checked in, and their challenge indices.
            let slots: Vec<usize> = if winning {
                (0..sector_count).collect()
            } else {
                vec![k * sector_count + i]
            };
            let leaves: Vec<u64> = slots
                .iter()
                .flat_map(|&slot| {
                    (0..count).map(move |n| fallback::get_challenge_index(pub_params.api_version, slot, count, n))
                })
                .map(|index| fallback::generate_leaf_challenge(&pub_params, randomness, id, index))
                .collect();
            // Level by level: the nodes on the paths (index -> value), and each of their
            // parents' children (the others random).
            let mut level: BTreeMap<u64, Domain> = leaves.iter().map(|&l| (l, d(rng))).collect();
            let values = level.clone();
            let mut children: Vec<BTreeMap<u64, Vec<Domain>>> = Vec::new();
            for (height, &a) in arities.iter().enumerate() {
                let mut parents: BTreeMap<u64, Vec<Domain>> = BTreeMap::new();
                for (&index, &value) in &level {
                    parents
                        .entry(index / a)
                        .or_insert_with(|| (0..a).map(|_| d(rng)).collect())[(index % a) as usize] = value;
                }
                level = parents
                    .iter()
                    .map(|(&p, c)| (p, F::default().multi_node(c, height)))
                    .collect();
                children.push(parents);
            }
            let comm_r_last = level[&0];
            let comm_c = d(rng);
            let inclusion_proofs = leaves
                .iter()
                .map(|&leaf| {
                    let mut index = leaf;
                    let path = arities
                        .iter()
                        .zip(&children)
                        .map(|(&a, level)| {
                            let (at, mut siblings) = ((index % a) as usize, level[&(index / a)].clone());
                            siblings.remove(at);
                            index /= a;
                            (siblings, at)
                        })
                        .collect();
                    MerkleProof::from_parts(values[&leaf], comm_r_last, path)
                })
                .collect();
            filecoin_proofs::FallbackPoStSectorProof {
                sector_id: SectorId::from(id),
                comm_r: <F as filecoin_hashers::HashFunction<Domain>>::hash2(&comm_c, &comm_r_last),
                vanilla_proof: fallback::Proof {
                    sectors: vec![SectorProof {
                        inclusion_proofs,
                        comm_c,
                        comm_r_last,
                    }],
                },
            }
        })
        .collect()
}

/// Vanilla proofs as Curio sends them: the bincode bytes of each `FallbackPoStSectorProof`.
pub fn vanilla_bytes<T: 'static + MerkleTreeTrait>(
    proofs: &[filecoin_proofs::FallbackPoStSectorProof<T>],
) -> Vec<Vec<u8>> {
    proofs
        .iter()
        .map(|p| bincode::serialize(p).expect("a vanilla proof serializes"))
        .collect()
}
