//! The Window PoSt kind's partitions: storage-proofs-post's `FallbackPoStCircuit` of the 32 GiB
//! or 64 GiB sector shape (`FallbackPoStCompound::circuit`, as filecoin-proofs builds a Window
//! PoSt partition) from random vanilla proofs — `--window-sectors` sector slots of 10
//! challenges each (a production partition has 2349 at 32 GiB, 2300 at 64 GiB), every
//! inclusion path the TreeR's levels of random values (`tests/common/post.rs`, shared with
//! `native_post_bench` and the tests) — with its native witness generator
//! (`filecoin::native::post`). Nothing is consistent (no path reaches its root), so the
//! constraints are not satisfied; their structure is production's, and the generator's witness
//! is the gadgets' (the stream validates it on one partition first).

use std::sync::Arc;

use cuzk::filecoin::native::post::fallback_post_witness_parallel;
use cuzk::{Circuit, ConstraintSystem, Scalar, SynthesisError, WitnessCs};
use filecoin_hashers::Hasher;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_post::fallback::{self, FallbackPoStCircuit, FallbackPoStCompound, PublicInputs, PublicParams};

use crate::circuits::Generator;
use crate::ok;
use crate::post_fixtures::{random_partition, Domain};

/// The 64 GiB sector's tree (8-8-2).
type Tree64 = filecoin_proofs::SectorShape64GiB;

/// Challenges a sector slot of a Window PoSt partition (filecoin-proofs'
/// `WINDOW_POST_CHALLENGE_COUNT`).
const CHALLENGES: usize = 10;
/// A Winning PoSt partition's challenges, all in its one sector slot (filecoin-proofs'
/// `WINNING_POST_CHALLENGE_COUNT`; `WINNING_POST_SECTOR_COUNT` is 1).
pub(crate) const WINNING_CHALLENGES: usize = 66;

/// The sector sizes a Window PoSt partition is built for: the production tree shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowSize {
    /// 32 GiB sectors: TreeR 8-8-0.
    G32,
    /// 64 GiB sectors: TreeR 8-8-2.
    G64,
}

impl WindowSize {
    /// `32GiB` or `64GiB` (any case).
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "32gib" => Ok(Self::G32),
            "64gib" => Ok(Self::G64),
            _ => Err(format!("{s:?}: a Window PoSt sector size is 32GiB or 64GiB")),
        }
    }

    /// filecoin-proofs' sector slots a partition (`WINDOW_POST_SECTOR_COUNT`).
    pub(crate) fn production_sectors(self) -> usize {
        match self {
            Self::G32 => 2349,
            Self::G64 => 2300,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::G32 => "32 GiB",
            Self::G64 => "64 GiB",
        }
    }
}

/// A Window PoSt partition's circuit, of either tree shape.
#[derive(Clone)]
pub(crate) enum PostCircuit {
    G32(FallbackPoStCircuit<crate::circuits::Tree>),
    G64(FallbackPoStCircuit<Tree64>),
}

impl Circuit<Scalar> for PostCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Self::G32(c) => c.synthesize(cs),
            Self::G64(c) => c.synthesize(cs),
        }
    }
}

/// What `FallbackPoStCompound::circuit` and the generator take.
struct Inputs<T: MerkleTreeTrait> {
    pub_in: PublicInputs<Domain>,
    proof: fallback::Proof<T::Proof>,
    params: PublicParams,
}

/// `partitions` Fallback PoSt partitions of `sectors` slots of `challenges` each (random
/// vanilla proofs, `tests/common/post.rs`; partition k's from seed `seed + k`), with their
/// native generators.
fn partitions_of<T: 'static + MerkleTreeTrait>(
    sectors: usize,
    challenges: usize,
    partitions: usize,
    seed: u64,
    wrap: fn(FallbackPoStCircuit<T>) -> PostCircuit,
) -> Vec<(PostCircuit, Generator)>
where
    T::Hasher: Hasher<Domain = Domain>,
    T::Proof: From<MerkleProof<T::Hasher, T::Arity, T::SubTreeArity, T::TopTreeArity>>,
{
    (0..partitions)
        .map(|k| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed + k as u64);
            let (pub_in, proof, params) = random_partition::<T>(sectors, sectors, challenges, &mut rng);
            let inputs = Arc::new(Inputs::<T> { pub_in, proof, params });
            let circuit = ok(
                "FallbackPoStCompound::circuit",
                <FallbackPoStCompound<T> as CompoundProof<'_, _, _>>::circuit(
                    &inputs.pub_in,
                    Default::default(),
                    &inputs.proof,
                    &inputs.params,
                    Some(0),
                ),
            );
            let generate: Generator = Arc::new(move |cs: &mut WitnessCs, threads: usize| {
                fallback_post_witness_parallel::<T>(&inputs.pub_in, &inputs.proof, &inputs.params, Some(0), threads, cs)
            });
            (wrap(circuit), generate)
        })
        .collect()
}

/// `partitions` Window PoSt partitions of `size` sectors, `sectors` slots each (seeds 38 + k).
pub(crate) fn window_partitions(size: WindowSize, sectors: usize, partitions: usize) -> Vec<(PostCircuit, Generator)> {
    match size {
        WindowSize::G32 => partitions_of(sectors, CHALLENGES, partitions, 38, PostCircuit::G32),
        WindowSize::G64 => partitions_of(sectors, CHALLENGES, partitions, 38, PostCircuit::G64),
    }
}

/// A Winning PoSt partition of `size` sectors: the same circuit (filecoin-proofs proves
/// Winning PoSt with `FallbackPoStCompound` too) with one sector slot of `challenges`
/// challenges (production: [`WINNING_CHALLENGES`]), from seed 29.
pub(crate) fn winning_partition(size: WindowSize, challenges: usize) -> (PostCircuit, Generator) {
    let mut one = match size {
        WindowSize::G32 => partitions_of(1, challenges, 1, 29, PostCircuit::G32),
        WindowSize::G64 => partitions_of(1, challenges, 1, 29, PostCircuit::G64),
    };
    one.remove(0)
}
