//! Window and Winning PoSt from vanilla proofs (the `*_with_vanilla` route Curio uses: vanilla
//! proofs made where the sectors are, the SNARK made here).

use std::time::Instant;

use filecoin_hashers::Hasher;
use filecoin_proofs::{FallbackPoStSectorProof, PoStConfig, PoStType};
use rand_core::{OsRng, RngCore};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use super::{fil_err, params, prove_compound, Output, ProverId, Report};
use crate::error::{Error, Result};
use crate::filecoin::RegisteredPoStProof;
use crate::prover::Prover;

/// Proves a Window PoSt from the vanilla proofs of its sectors, as filecoin-proofs-api's
/// `post::generate_window_post_with_vanilla`: `vanilla_proofs` are the bincode bytes of
/// `FallbackPoStSectorProof`s (what filecoin-ffi's `generate_single_vanilla_proof` returns),
/// `randomness` the challenge seed. Returns the proof bytes (192 per partition, in order).
///
/// # Errors
/// [`Error::InvalidArgument`] for a Winning proof type, no vanilla proofs or bytes that do not
/// decode; [`Error::Filecoin`] when filecoin-proofs rejects them (e.g. a faulty sector's
/// vanilla proof does not verify); [`Error::FilecoinParams`]; the prover's errors.
pub fn generate_window_post_with_vanilla(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    prover: &Prover,
) -> Result<Vec<u8>> {
    generate_window_post_with_vanilla_rng(proof_type, randomness, prover_id, vanilla_proofs, prover, &mut OsRng)
        .map(|o| o.proof)
}

/// As [`generate_window_post_with_vanilla`], with r and s from `rng` and the [`Report`].
///
/// # Errors
/// As [`generate_window_post_with_vanilla`].
pub fn generate_window_post_with_vanilla_rng(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
    post(
        PoStType::Window,
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        prover,
        rng,
    )
}

/// Proves a Winning PoSt from the vanilla proofs of its challenged sectors, as
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
    prover: &Prover,
) -> Result<Vec<u8>> {
    generate_winning_post_with_vanilla_rng(proof_type, randomness, prover_id, vanilla_proofs, prover, &mut OsRng)
        .map(|o| o.proof)
}

/// As [`generate_winning_post_with_vanilla`], with r and s from `rng` and the [`Report`].
///
/// # Errors
/// As [`generate_winning_post_with_vanilla`].
pub fn generate_winning_post_with_vanilla_rng(
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
    post(
        PoStType::Winning,
        proof_type,
        randomness,
        prover_id,
        vanilla_proofs,
        prover,
        rng,
    )
}

fn post(
    typ: PoStType,
    proof_type: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
    let start = Instant::now();
    if proof_type.major_version() != 1 {
        return Err(Error::InvalidArgument(format!(
            "unsupported PoSt proof version {proof_type:?}"
        )));
    }
    let config = proof_type.as_v1_config();
    if config.typ != typ {
        return Err(Error::InvalidArgument(format!(
            "{proof_type:?} is a {:?} PoSt proof type, not a {typ:?} one",
            config.typ
        )));
    }
    if vanilla_proofs.is_empty() {
        return Err(Error::InvalidArgument("no vanilla proofs".into()));
    }
    let mut out = super::with_registered_shape!(
        u64::from(config.sector_size),
        post_inner,
        &config,
        randomness,
        prover_id,
        vanilla_proofs,
        prover,
        rng
    )?;
    out.report.total = start.elapsed();
    Ok(out)
}

fn post_inner<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
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

    let (vanilla_params, partitions) = match config.typ {
        PoStType::Winning => {
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
        PoStType::Window => {
            let vp = filecoin_proofs::parameters::window_post_setup_params(config);
            // filecoin-proofs' get_partitions_for_window_post: ceil(sectors / sectors per
            // partition), None for one.
            let n = sector_proofs.len().div_ceil(config.sector_count);
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
        filecoin_proofs::partition_vanilla_proofs(
            config,
            &pub_params.vanilla_params,
            &pub_inputs,
            partitions.unwrap_or(1),
            &sector_proofs,
        )
        .map_err(|e| fil_err(&what(), e))
    })?;

    let path = params::post_path_for::<Tree>(config)?;
    let (loaded, params_load) = params::load(&path)?;
    let report = Report {
        params_load,
        ..Report::default()
    };
    // filecoin-proofs' verify_winning_post checks a Winning proof against the challenged
    // sectors repeated once per circuit "sector" slot (the circuit has one challenge per slot);
    // the prover builds its circuits from the sectors as given. Window PoSt: the same inputs.
    let winning_inputs = (config.typ == PoStType::Winning).then(|| fallback::PublicInputs {
        sectors: (0..pub_params.vanilla_params.sector_count)
            .flat_map(|_| pub_inputs.sectors.iter().cloned())
            .collect(),
        ..pub_inputs.clone()
    });
    prove_compound::<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>, FallbackPoStCompound<Tree>>(
        prover,
        &loaded,
        &pub_inputs,
        winning_inputs.as_ref(),
        &partitioned,
        &pub_params.vanilla_params,
        rng,
        report,
    )
}
