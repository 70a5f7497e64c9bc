//! The Window PoSt kind's partitions: storage-proofs-post's `FallbackPoStCircuit` of the 32 GiB
//! sector shape (`FallbackPoStCompound::circuit`, as filecoin-proofs builds a Window PoSt
//! partition) from random vanilla proofs — `--window-sectors` sector slots of 10 challenges
//! each (a production partition has 2349), every inclusion path ten 8-ary levels of random
//! values (`tests/common/post.rs`, shared with `native_post_bench` and the tests) — with its
//! native witness generator (`filecoin::native::post`). Nothing is consistent (no path reaches
//! its root), so the constraints are not satisfied; their structure is production's, and the
//! generator's witness is the gadgets' (the stream validates it on one partition first).

use std::sync::Arc;

use cuzk::filecoin::native::post::fallback_post_witness_parallel;
use cuzk::WitnessCs;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicParams};

use crate::circuits::{Generator, Tree};
use crate::ok;
use crate::post_fixtures::{random_partition, Domain};

/// A production Window PoSt partition's sector slots (32 GiB sectors).
pub(crate) const PRODUCTION_SECTORS: usize = 2349;
/// Challenges a sector slot.
const CHALLENGES: usize = 10;

pub(crate) type PostCircuit = FallbackPoStCircuit<Tree>;

/// What `FallbackPoStCompound::circuit` and the generator take.
struct Inputs {
    pub_in: PublicInputs<Domain>,
    proof: fallback::Proof<<Tree as MerkleTreeTrait>::Proof>,
    params: PublicParams,
}

/// `sectors` slots of random vanilla proofs, from `seed` (`tests/common/post.rs`).
fn random_inputs(sectors: usize, seed: u64) -> Inputs {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (pub_in, proof, params) = random_partition::<Tree>(sectors, sectors, CHALLENGES, &mut rng);
    Inputs { pub_in, proof, params }
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
