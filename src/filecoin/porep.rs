//! PoRep commit phase 2 (C2): the Groth16 proofs of a sector's stacked-DRG replication, from
//! the commit-phase-1 output.

use std::time::Instant;

use blstrs::Scalar;
use ff::PrimeField;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, PoRepConfig, SealCommitPhase1Output};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg};

use super::job::{blocking, submit_compound, VerifyAs};
use super::{fil_err, params, Options, ProofJob, ProofKind, ProverId, Report};
use crate::error::{Error, Result};

/// Proves C2 from filecoin-ffi's bytes on the process-wide engine, at
/// [`PRIORITY_SEAL_COMMIT`](super::PRIORITY_SEAL_COMMIT): `phase1_output` is the serde JSON of
/// filecoin-proofs-api's `SealCommitPhase1Output` (what filecoin-ffi's `seal_commit_phase1`
/// returns and Curio stores; it names its registered proof). Returns the bytes
/// filecoin-proofs-api's `seal_commit_phase2` returns: one 192-byte proof per partition.
///
/// # Errors
/// [`Error::InvalidArgument`] for JSON that does not decode, a prover or sector id that does
/// not match the output's replica id, or other inputs filecoin-proofs refuses;
/// [`Error::FilecoinParams`] when the parameter file is missing or bad; [`Error::Filecoin`]
/// for a non-interactive PoRep proof type (aggregated; not proved by cuzk) or a failure
/// inside filecoin-proofs; the engine's errors ([`ProofJob::wait`]).
pub fn seal_commit_phase2(phase1_output: &[u8], prover_id: ProverId, sector_id: u64) -> Result<Vec<u8>> {
    blocking(submit_seal_commit_phase2(
        phase1_output,
        prover_id,
        sector_id,
        Options::default(),
    ))
}

/// [`seal_commit_phase2`] without blocking: checks the inputs, loads the parameters, builds the
/// circuits and submits them as one job to the engine of `options`; the [`ProofJob`] gives
/// the bytes.
///
/// # Errors
/// As [`seal_commit_phase2`], for what is checked before the job is submitted.
pub fn submit_seal_commit_phase2(
    phase1_output: &[u8],
    prover_id: ProverId,
    sector_id: u64,
    options: Options<'_>,
) -> Result<ProofJob> {
    let start = Instant::now();
    let c1: filecoin_proofs_api::seal::SealCommitPhase1Output = serde_json::from_slice(phase1_output)
        .map_err(|e| Error::InvalidArgument(format!("commit phase 1 output is not filecoin-proofs-api's JSON: {e}")))?;
    if c1.registered_proof.major_version() != 1 {
        return Err(Error::InvalidArgument(format!(
            "unsupported seal proof version {:?}",
            c1.registered_proof
        )));
    }
    let config = c1.registered_proof.as_v1_config();
    super::with_registered_shape!(
        u64::from(config.sector_size),
        from_api,
        &config,
        c1,
        prover_id,
        sector_id,
        options,
        start
    )
}

fn from_api<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: filecoin_proofs_api::seal::SealCommitPhase1Output,
    prover_id: ProverId,
    sector_id: u64,
    options: Options<'_>,
    start: Instant,
) -> Result<ProofJob> {
    let filecoin_proofs_api::seal::SealCommitPhase1Output {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
        registered_proof,
    } = c1;
    let vanilla_proofs = <filecoin_proofs_api::seal::VanillaSealProof as TryInto<
        Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>>,
    >>::try_into(vanilla_proofs)
    .map_err(|e| {
        Error::InvalidArgument(format!(
            "commit phase 1 output: vanilla proofs do not match {registered_proof:?}: {e:#}"
        ))
    })?;
    // Curio's bytes: a replica id at or above the field's modulus is refused here (filecoin-
    // hashers' own conversion panics on it).
    let replica_id = Option::<Scalar>::from(Scalar::from_repr(replica_id.into())).ok_or_else(|| {
        Error::InvalidArgument(
            "commit phase 1 output: its replica id is not a BLS12-381 scalar (at or above the modulus)".into(),
        )
    })?;
    let c1 = SealCommitPhase1Output::<Tree> {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id: replica_id.into(),
        seed,
        ticket,
    };
    submit_typed(config, &c1, prover_id, sector_id, options, start)
}

/// C2 from filecoin-proofs' own types, as its `seal_commit_phase2::<Tree>(porep_config,
/// phase1_output, prover_id, sector_id)` takes them: the same checks, the circuit of each
/// partition built by `StackedCompound::circuit` from the same public inputs, submitted to
/// the engine of `options`.
///
/// `prover_id` and `sector_id` are checked against the output's replica id (filecoin-proofs
/// checks them when it verifies the seal), so a wrong miner or sector number is an error here,
/// not a proof the chain rejects.
///
/// # Errors
/// As [`seal_commit_phase2`].
pub fn submit_seal_commit_phase2_typed<Tree: 'static + MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    phase1_output: &SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: u64,
    options: Options<'_>,
) -> Result<ProofJob> {
    submit_typed(
        porep_config,
        phase1_output,
        prover_id,
        sector_id,
        options,
        Instant::now(),
    )
}

fn submit_typed<Tree: 'static + MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    phase1_output: &SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: u64,
    options: Options<'_>,
    start: Instant,
) -> Result<ProofJob> {
    let SealCommitPhase1Output {
        vanilla_proofs,
        comm_d,
        comm_r,
        replica_id,
        seed,
        ticket,
    } = phase1_output;
    if porep_config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(Error::Filecoin(
            "non-interactive PoRep proofs are aggregated by filecoin-proofs; cuzk does not prove them".into(),
        ));
    }
    let invalid = |m: &str| Err(Error::InvalidArgument(format!("commit phase 1 output: {m}")));
    if *comm_d == [0; 32] {
        return invalid("comm_d is all zeros");
    }
    if *comm_r == [0; 32] {
        return invalid("comm_r is all zeros");
    }
    if *seed == [0; 32] {
        return invalid("the seed is all zeros");
    }
    if vanilla_proofs.is_empty() || vanilla_proofs.iter().any(|p| p.is_empty()) {
        return invalid("no vanilla proofs (or a partition without any)");
    }
    let partitions = usize::from(porep_config.partitions);
    if vanilla_proofs.len() != partitions {
        return Err(Error::InvalidArgument(format!(
            "commit phase 1 output has {} partitions of vanilla proofs; this proof type has {partitions}",
            vanilla_proofs.len()
        )));
    }
    let expected =
        generate_replica_id::<Tree::Hasher, _>(&prover_id, sector_id, ticket, comm_d, &porep_config.porep_id);
    if expected != *replica_id {
        return Err(Error::InvalidArgument(format!(
            "the commit phase 1 output was not made for prover id {} and sector {sector_id} \
             (its replica id differs): wrong miner id or sector number?",
            hex(&prover_id)
        )));
    }

    let comm_r_safe = filecoin_proofs::as_safe_commitment(comm_r, "comm_r").map_err(|e| fil_err("comm_r", e))?;
    let comm_d_safe = DefaultPieceDomain::try_from_bytes(comm_d).map_err(|e| fil_err("comm_d", e))?;
    let public_inputs = stacked::PublicInputs::<<Tree::Hasher as Hasher>::Domain, _> {
        replica_id: *replica_id,
        tau: Some(stacked::Tau {
            comm_d: comm_d_safe,
            comm_r: comm_r_safe,
        }),
        k: None,
        seed: Some(*seed),
    };
    let vanilla_params =
        filecoin_proofs::parameters::setup_params(porep_config).map_err(|e| fil_err("PoRep setup", e))?;
    let pub_params =
        <StackedDrg<'_, Tree, DefaultPieceHasher> as storage_proofs_core::proof::ProofScheme>::setup(&vanilla_params)
            .map_err(|e| fil_err("PoRep public parameters", e))?;

    let path = params::seal_path_for::<Tree>(porep_config)?;
    let (loaded, params_load) = params::load(&path, options.engine)?;
    let report = Report {
        params_load,
        ..Report::default()
    };
    submit_compound::<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        StackedCompound<Tree, DefaultPieceHasher>,
    >(
        ProofKind::SealCommit,
        loaded,
        &public_inputs,
        VerifyAs {
            inputs: &public_inputs,
            first_partition: 0,
        },
        vanilla_proofs.clone(),
        &pub_params,
        Some(super::native::porep::stacked_witness_parallel::<Tree, DefaultPieceHasher>),
        options,
        report,
        start,
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
