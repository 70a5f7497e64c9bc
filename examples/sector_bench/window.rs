//! The Window PoSt kind's partitions: storage-proofs-post's `FallbackPoStCircuit` of the 32 GiB
//! sector shape (`FallbackPoStCompound::circuit`, as filecoin-proofs builds a Window PoSt
//! partition) from random vanilla proofs — `--window-sectors` sector slots of 10 challenges
//! each (a production partition has 2349), every inclusion path ten 8-ary levels of random
//! values, as `native_post_bench` makes them — with its native witness generator
//! (`filecoin::native::post`). Nothing is consistent (no path reaches its root), so the
//! constraints are not satisfied; their structure is production's, and the generator's witness
//! is the gadgets' (the stream validates it on one partition first).

use std::sync::Arc;

use blstrs::Scalar;
use cuzk::filecoin::native::post::fallback_post_witness_parallel;
use cuzk::WitnessCs;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonDomain;
use rand::{Rng, SeedableRng};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{
    self, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicParams, PublicSector, SectorProof,
};

use crate::circuits::{Generator, Tree};
use crate::ok;

/// A production Window PoSt partition's sector slots (32 GiB sectors).
pub(crate) const PRODUCTION_SECTORS: usize = 2349;
/// Challenges a sector slot.
const CHALLENGES: usize = 10;

pub(crate) type PostCircuit = FallbackPoStCircuit<Tree>;

/// What `FallbackPoStCompound::circuit` and the generator take.
struct Inputs {
    pub_in: PublicInputs<PoseidonDomain>,
    proof: fallback::Proof<<Tree as MerkleTreeTrait>::Proof>,
    params: PublicParams,
}

/// `sectors` slots of random vanilla proofs, from `seed`.
fn random_inputs(sectors: usize, seed: u64) -> Inputs {
    fn d(rng: &mut impl Rng) -> PoseidonDomain {
        PoseidonDomain::from(Scalar::random(&mut *rng))
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut public = Vec::with_capacity(sectors);
    let mut proofs = Vec::with_capacity(sectors);
    for i in 0..sectors {
        public.push(PublicSector {
            id: SectorId::from(i as u64),
            comm_r: d(&mut rng),
        });
        let inclusion_proofs = (0..CHALLENGES)
            .map(|_| {
                // Nine 8-ary base levels and the 8-ary sub-tree level: 7 siblings and an index.
                let path = (0..10)
                    .map(|_| ((0..7).map(|_| d(&mut rng)).collect(), rng.gen_range(0..8)))
                    .collect::<Vec<_>>();
                MerkleProof::from_parts(d(&mut rng), d(&mut rng), path)
            })
            .collect::<Vec<_>>();
        proofs.push(SectorProof {
            inclusion_proofs,
            comm_c: d(&mut rng),
            comm_r_last: d(&mut rng),
        });
    }
    Inputs {
        pub_in: PublicInputs {
            randomness: d(&mut rng),
            prover_id: d(&mut rng),
            sectors: public,
            k: None,
        },
        proof: fallback::Proof { sectors: proofs },
        params: PublicParams {
            sector_size: 32 << 30,
            challenge_count: CHALLENGES,
            sector_count: sectors,
            api_version: ApiVersion::V1_2_0,
        },
    }
}

/// `partitions` Window PoSt partitions of `sectors` slots each, partition k's vanilla proofs
/// from seed k, with their native generators.
pub(crate) fn window_partitions(sectors: usize, partitions: usize) -> Vec<(PostCircuit, Generator)> {
    (0..partitions)
        .map(|k| {
            let inputs = Arc::new(random_inputs(sectors, 38 + k as u64));
            let circuit = ok(
                "FallbackPoStCompound::circuit",
                <FallbackPoStCompound<Tree> as CompoundProof<'_, _, _>>::circuit(
                    &inputs.pub_in,
                    Default::default(),
                    &inputs.proof,
                    &inputs.params,
                    Some(0),
                ),
            );
            let generate: Generator = Arc::new(move |cs: &mut WitnessCs, threads: usize| {
                fallback_post_witness_parallel::<Tree>(
                    &inputs.pub_in,
                    &inputs.proof,
                    &inputs.params,
                    Some(0),
                    threads,
                    cs,
                )
            });
            (circuit, generate)
        })
        .collect()
}
