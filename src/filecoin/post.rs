//! Window and Winning PoSt from vanilla proofs (the `*_with_vanilla` route Curio uses: vanilla
//! proofs made where the sectors are, the SNARK made here).

use std::time::Instant;

use filecoin_hashers::Hasher;
use filecoin_proofs::{FallbackPoStSectorProof, PoStConfig, PoStType};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use super::job::{blocking, submit_compound, VerifyAs};
use super::{fil_err, params, Options, ProofJob, ProofKind, ProverId, Report};
use crate::error::{Error, Result};
use crate::filecoin::RegisteredPoStProof;

/// The most partitions a deadline has (the miner actor's `MAX_PARTITIONS_PER_DEADLINE`): a
/// single-partition Window PoSt's index is below it.
pub const MAX_PARTITIONS_PER_DEADLINE: usize = 3000;

/// The most sectors one Window PoSt may prove (the miner actor's `ADDRESSED_SECTORS_MAX`: the
/// sector infos one `SubmitWindowedPoSt` message may make it load).
pub const ADDRESSED_SECTORS_MAX: usize = 25_000;

/// How many partitions one Window PoSt of partitions of `sectors_per_partition` sectors may
/// hold: the miner actor's `load_partitions_sectors_max`, the most partitions one
/// `SubmitWindowedPoSt` message proves (10 for 32 and 64 GiB sectors, 3000 for the small test
/// sizes). A partition index is its place in that PoSt (the actor verifies the message's
/// partitions as one proof, from partition 0; Curio proves one partition a message, index 0),
/// so it is below this bound; the index also sizes the sectors that fill the places before the
/// partition when it is checked, at most this bound times `sectors_per_partition`.
pub fn window_post_partitions_max(sectors_per_partition: usize) -> usize {
    (ADDRESSED_SECTORS_MAX / sectors_per_partition.max(1)).min(MAX_PARTITIONS_PER_DEADLINE)
}

/// Proves a Window PoSt from the vanilla proofs of its sectors on the process-wide engine, at
/// [`PRIORITY_WINDOW_POST`](super::PRIORITY_WINDOW_POST), as filecoin-proofs-api's
/// `post::generate_window_post_with_vanilla`: `vanilla_proofs` are the bincode bytes of
/// `FallbackPoStSectorProof`s (what filecoin-ffi's `generate_single_vanilla_proof` returns),
/// `randomness` the challenge seed. The vanilla proofs come in ascending sector number order,
/// each sector once (the order `verify_window_post` and the miner actor read the sectors in).
/// Returns the proof bytes (192 per partition, in order).
///
/// # Errors
/// [`Error::InvalidArgument`] for a Winning proof type, no vanilla proofs, bytes that do not
/// decode or sectors out of order (naming the first vanilla proof out of it);
/// [`Error::Filecoin`] when filecoin-proofs rejects them (e.g. a faulty sector's vanilla proof
/// does not verify); [`Error::FilecoinParams`]; the engine's errors ([`ProofJob::wait`]).
pub fn generate_window_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
) -> Result<Vec<u8>> {
    blocking(submit_window_post_with_vanilla(
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        Options::default(),
    ))
}

/// [`generate_window_post_with_vanilla`] without blocking, on the engine of `options`.
///
/// # Errors
/// As [`generate_window_post_with_vanilla`], for what is checked before the job is submitted.
pub fn submit_window_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    options: Options<'_>,
) -> Result<ProofJob> {
    post(
        Which::Window,
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        options,
    )
}

/// Proves one partition of a Window PoSt, as filecoin-proofs-api's
/// `post::generate_single_window_post_with_vanilla` (filecoin-ffi's
/// `GenerateSinglePartitionWindowPoStWithVanilla`, which Curio calls): `vanilla_proofs` are
/// the vanilla proofs of that partition's sectors only (at most the partition's sector count,
/// in ascending sector number order, each sector once), `partition_index` its index in the
/// deadline's Window PoSt. Returns the partition's 192-byte proof (filecoin-proofs'
/// `PartitionSnarkProof`); the partitions' proofs concatenated in index order (filecoin-proofs'
/// `merge_window_post_partition_proofs`) are the Window PoSt `verify_window_post` accepts.
/// Checked before it is returned as partition `partition_index` of that PoSt.
///
/// # Errors
/// As [`generate_window_post_with_vanilla`]; also more vanilla proofs than one partition holds,
/// and `partition_index` ≥ [`window_post_partitions_max`] of the proof type's partition size
/// (10 for 32 and 64 GiB sectors, [`MAX_PARTITIONS_PER_DEADLINE`] for the test sizes), refused
/// before the vanilla proofs are read.
pub fn generate_single_partition_window_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
) -> Result<Vec<u8>> {
    blocking(submit_single_partition_window_post_with_vanilla(
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        partition_index,
        Options::default(),
    ))
}

/// [`generate_single_partition_window_post_with_vanilla`] without blocking, on the engine of
/// `options`.
///
/// # Errors
/// As [`generate_single_partition_window_post_with_vanilla`], for what is checked before the
/// job is submitted.
pub fn submit_single_partition_window_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    options: Options<'_>,
) -> Result<ProofJob> {
    post(
        Which::WindowPartition(partition_index),
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        options,
    )
}

/// Proves a Winning PoSt from the vanilla proofs of its challenged sectors on the process-wide
/// engine, at [`PRIORITY_WINNING_POST`](super::PRIORITY_WINNING_POST), as
/// filecoin-proofs-api's `post::generate_winning_post_with_vanilla` (inputs as for
/// [`generate_window_post_with_vanilla`]). Returns the proof bytes.
///
/// # Errors
/// As [`generate_window_post_with_vanilla`]; also the wrong number of vanilla proofs.
pub fn generate_winning_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
) -> Result<Vec<u8>> {
    blocking(submit_winning_post_with_vanilla(
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        Options::default(),
    ))
}

/// [`generate_winning_post_with_vanilla`] without blocking, on the engine of `options`.
///
/// # Errors
/// As [`generate_winning_post_with_vanilla`], for what is checked before the job is submitted.
pub fn submit_winning_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    options: Options<'_>,
) -> Result<ProofJob> {
    post(
        Which::Winning,
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        options,
    )
}

/// Which PoSt is proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Winning,
    Window,
    /// One partition of a Window PoSt, at this index.
    WindowPartition(usize),
}

impl Which {
    fn typ(self) -> PoStType {
        match self {
            Self::Winning => PoStType::Winning,
            Self::Window | Self::WindowPartition(_) => PoStType::Window,
        }
    }
}

fn post(
    which: Which,
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    options: Options<'_>,
) -> Result<ProofJob> {
    let start = Instant::now();
    if proof_type.major_version() != 1 {
        return Err(Error::InvalidArgument(format!(
            "unsupported PoSt proof version {proof_type:?}"
        )));
    }
    let config = proof_type.as_v1_config();
    let typ = which.typ();
    if config.typ != typ {
        return Err(Error::InvalidArgument(format!(
            "{proof_type:?} is a {:?} PoSt proof type, not a {typ:?} one",
            config.typ
        )));
    }
    if let Which::WindowPartition(k) = which {
        let max = window_post_partitions_max(config.sector_count);
        if k >= max {
            return Err(Error::InvalidArgument(format!(
                "partition index {k}: a Window PoSt of {proof_type:?} holds at most {max} partitions \
                 of {} sectors (index below {max})",
                config.sector_count
            )));
        }
    }
    if vanilla_proofs.is_empty() {
        return Err(Error::InvalidArgument("no vanilla proofs".into()));
    }
    super::with_registered_shape!(
        u64::from(config.sector_size),
        post_inner,
        which,
        &config,
        randomness,
        prover_id,
        vanilla_proofs,
        options,
        start
    )
}

/// A Window PoSt's sectors (`ids`, as its vanilla proofs come) in ascending sector number
/// order, each once: the order its verifiers read them in (filecoin-proofs'
/// `verify_window_post` from a map by sector id, the miner actor from its partitions' bit
/// fields). A proof of the same sectors in another order is of other public inputs, which
/// cuzk's check would pass and the chain's would not.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the first vanilla proof out of order.
fn in_sector_order(ids: impl Iterator<Item = u64>) -> Result<()> {
    let mut before = None;
    for (i, id) in ids.enumerate() {
        if let Some(prev) = before.filter(|&prev| prev >= id) {
            return Err(Error::InvalidArgument(format!(
                "vanilla proof {i} is of sector {id}, after sector {prev}: a Window PoSt takes its \
                 sectors' vanilla proofs in ascending sector number order, each sector once (the \
                 order its verifiers read them in)"
            )));
        }
        before = Some(id);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn post_inner<Tree: 'static + MerkleTreeTrait>(
    which: Which,
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    options: Options<'_>,
    start: Instant,
) -> Result<ProofJob> {
    let sector_proofs = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize::<FallbackPoStSectorProof<Tree>>(bytes).map_err(|e| {
                Error::InvalidArgument(format!(
                    "vanilla proof {i} is not a bincode FallbackPoStSectorProof of this sector size: {e}"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if which != Which::Winning {
        in_sector_order(sector_proofs.iter().map(|p| u64::from(p.sector_id)))?;
    }

    let (vanilla_params, partitions) = match which {
        Which::Winning => {
            if sector_proofs.len() != config.sector_count {
                return Err(Error::InvalidArgument(format!(
                    "Winning PoSt takes {} vanilla proofs, found {}",
                    config.sector_count,
                    sector_proofs.len()
                )));
            }
            let vp = filecoin_proofs::parameters::winning_post_setup_params(config)
                .map_err(|e| fil_err("Winning PoSt setup", e))?;
            (vp, None)
        }
        Which::Window | Which::WindowPartition(_) => {
            let vp = filecoin_proofs::parameters::window_post_setup_params(config);
            // filecoin-proofs' get_partitions_for_window_post: ceil(sectors / sectors per
            // partition), None for one.
            let n = sector_proofs.len().div_ceil(config.sector_count);
            if matches!(which, Which::WindowPartition(_)) && n > 1 {
                return Err(Error::InvalidArgument(format!(
                    "one Window PoSt partition holds at most {} sectors; found {} vanilla proofs",
                    config.sector_count,
                    sector_proofs.len()
                )));
            }
            (vp, (n > 1).then_some(n))
        }
    };
    let randomness_safe: <Tree::Hasher as Hasher>::Domain =
        filecoin_proofs::as_safe_commitment(randomness, "randomness").map_err(|e| fil_err("randomness", e))?;
    let prover_id_safe: <Tree::Hasher as Hasher>::Domain =
        filecoin_proofs::as_safe_commitment(&prover_id, "prover_id").map_err(|e| fil_err("prover_id", e))?;

    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: config.priority,
    };
    let pub_params =
        <FallbackPoStCompound<Tree> as CompoundProof<'_, FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::setup(
            &setup,
        )
        .map_err(|e| fil_err("PoSt public parameters", e))?;
    let pub_inputs = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors: sector_proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    let what = || "partitioning the vanilla proofs".to_string();
    let partitioned = super::guard(&what, || {
        match which {
            // filecoin-proofs' generate_single_window_post_with_vanilla: the partition's
            // sectors, with its index.
            Which::WindowPartition(k) => filecoin_proofs::single_partition_vanilla_proofs(
                config,
                &pub_params.vanilla_params,
                &fallback::PublicInputs {
                    k: Some(k),
                    ..pub_inputs.clone()
                },
                &sector_proofs,
            )
            .map(|p| vec![p]),
            Which::Window | Which::Winning => filecoin_proofs::partition_vanilla_proofs(
                config,
                &pub_params.vanilla_params,
                &pub_inputs,
                partitions.unwrap_or(1),
                &sector_proofs,
            ),
        }
        .map_err(|e| fil_err(&what(), e))
    })?;

    let path = params::post_path_for::<Tree>(config)?;
    let (loaded, params_load) = params::load(&path, options.engine)?;
    let report = Report {
        params_load,
        ..Report::default()
    };
    // What the proofs are checked with: the verifier's public inputs.
    let (verify_in, first_partition, kind) = match which {
        Which::Window => (pub_inputs.clone(), 0, ProofKind::WindowPoSt),
        // filecoin-proofs' verify_winning_post checks a Winning proof against the challenged
        // sectors repeated once per circuit "sector" slot (the circuit has one challenge per
        // slot); the prover builds its circuits from the sectors as given.
        Which::Winning => (
            fallback::PublicInputs {
                sectors: (0..pub_params.vanilla_params.sector_count)
                    .flat_map(|_| pub_inputs.sectors.iter().cloned())
                    .collect(),
                ..pub_inputs.clone()
            },
            0,
            ProofKind::WinningPoSt,
        ),
        // The partition is built as partition 0 of its own sectors (as filecoin-proofs builds
        // it: the circuit does not depend on its index) and checked as partition k of the
        // whole PoSt, whose earlier partitions' sectors only fill the places before it (the
        // challenges depend on a sector's place under the older PoSt versions).
        Which::WindowPartition(k) => {
            let filler = pub_inputs.sectors[0].clone();
            let before = k * pub_params.vanilla_params.sector_count;
            let sectors = std::iter::repeat(filler)
                .take(before)
                .chain(pub_inputs.sectors.iter().cloned())
                .collect();
            (
                fallback::PublicInputs {
                    sectors,
                    ..pub_inputs.clone()
                },
                k,
                ProofKind::WindowPoSt,
            )
        }
    };
    submit_compound::<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>, FallbackPoStCompound<Tree>>(
        kind,
        loaded,
        &pub_inputs,
        VerifyAs {
            inputs: &verify_in,
            first_partition,
        },
        partitioned,
        &pub_params.vanilla_params,
        Some(super::native::post::fallback_post_witness_parallel::<Tree>),
        options,
        report,
        start,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_post_sectors_come_in_ascending_order_each_once() {
        assert!(in_sector_order([1, 2, 7, 1 << 40].into_iter()).is_ok());
        assert!(in_sector_order([5].into_iter()).is_ok());
        for (ids, at, id, prev) in [
            (vec![2, 1], 1, 1, 2),
            (vec![1, 3, 3], 2, 3, 3),
            (vec![1, 4, 9, 8, 10], 3, 8, 9),
        ] {
            let e = in_sector_order(ids.into_iter()).unwrap_err().to_string();
            assert!(
                e.contains(&format!("vanilla proof {at} is of sector {id}, after sector {prev}"))
                    && e.contains("ascending sector number order"),
                "{e}"
            );
        }
    }

    /// A single partition's index is refused past the partitions one Window PoSt of its
    /// proof type holds, before its vanilla proofs are read (garbage here): an index the
    /// bound admits gets as far as decoding them.
    #[test]
    fn a_partition_index_past_the_proof_types_partitions_is_refused_first() {
        let garbage = [vec![0u8; 8]];
        let submit = |proof_type, k| {
            submit_single_partition_window_post_with_vanilla(
                proof_type,
                &[0; 32],
                [0; 32],
                &garbage,
                k,
                Options::default(),
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
        };
        for (proof_type, per_partition, max) in [
            (RegisteredPoStProof::StackedDrgWindow32GiBV1_2, 2349, 10),
            (RegisteredPoStProof::StackedDrgWindow64GiBV1_2, 2300, 10),
            (
                RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
                2,
                MAX_PARTITIONS_PER_DEADLINE,
            ),
        ] {
            assert_eq!(proof_type.as_v1_config().sector_count, per_partition);
            assert_eq!(window_post_partitions_max(per_partition), max);
            for k in [max, max + 1, usize::MAX] {
                let err = submit(proof_type, k);
                assert!(
                    err.contains(&format!("partition index {k}")) && err.contains(&format!("at most {max} partitions")),
                    "{proof_type:?}, index {k}: {err}"
                );
            }
            let err = submit(proof_type, max - 1);
            assert!(
                err.contains("vanilla proof 0"),
                "{proof_type:?}, index {}: {err}",
                max - 1
            );
        }
        // The case: ~7 M filler sectors before this check.
        let err = submit(RegisteredPoStProof::StackedDrgWindow32GiBV1_2, 2999);
        assert!(err.starts_with("invalid argument: partition index 2999"), "{err}");
    }
}
