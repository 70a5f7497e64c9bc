//! Random Fallback PoSt partitions of production tree shapes (tests/native_post.rs,
//! examples/native_post_bench.rs, examples/sector_bench/window.rs): the public inputs, vanilla
//! proof and public parameters `FallbackPoStCompound::circuit` builds a partition from, every
//! value random (a witness needs no valid proof; the circuit's structure reads only the
//! lengths).
#![allow(dead_code)]

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonDomain;
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
