//! SnapDeals: the empty-sector-update proof from its vanilla partition proofs.

use std::time::Instant;

use filecoin_hashers::Domain;
use filecoin_proofs::{DefaultPieceDomain, PoRepConfig, SectorUpdateConfig, TreeRHasher};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, SetupParams,
};

use super::cid::{commitment_from_cid, CommitmentKind};
use super::job::{blocking, submit_compound, VerifyAs};
use super::{fil_err, params, Options, ProofJob, ProofKind, Report};
use crate::error::{Error, Result};
use crate::filecoin::RegisteredUpdateProof;

type Commitment = [u8; 32];

/// Proves a SnapDeals (empty-sector-update) proof from its vanilla partition proofs on the
/// process-wide engine, at [`PRIORITY_SNAP_DEALS`](super::PRIORITY_SNAP_DEALS), as
/// filecoin-proofs-api's `update::generate_empty_sector_update_proof_with_vanilla`:
/// `vanilla_proofs` are the bincode bytes of the `PartitionProof`s filecoin-ffi's
/// `generate_empty_sector_update_partition_proofs` returns (one per partition, in order);
/// `comm_r_old`, `comm_r_new` and `comm_d_new` the sector's old and new replica commitments
/// and new data commitment. Returns the proof bytes (192 per partition, in order).
///
/// # Errors
/// [`Error::InvalidArgument`] for the wrong number of partition proofs or bytes that do not
/// decode; [`Error::Filecoin`] for a commitment filecoin-proofs refuses;
/// [`Error::FilecoinParams`]; the engine's errors ([`ProofJob::wait`]).
pub fn generate_empty_sector_update_proof_with_vanilla(
    proof_type: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
) -> Result<Vec<u8>> {
    blocking(submit_empty_sector_update_proof_with_vanilla(
        proof_type,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        Options::default(),
    ))
}

/// [`generate_empty_sector_update_proof_with_vanilla`] without blocking, on the engine of
/// `options`.
///
/// # Errors
/// As [`generate_empty_sector_update_proof_with_vanilla`], for what is checked before the job
/// is submitted.
pub fn submit_empty_sector_update_proof_with_vanilla(
    proof_type: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    options: Options<'_>,
) -> Result<ProofJob> {
    let start = Instant::now();
    if proof_type.major_version() != 1 {
        return Err(Error::InvalidArgument(format!(
            "unsupported update proof version {proof_type:?}"
        )));
    }
    let config = proof_type.as_v1_config();
    super::with_registered_shape!(
        u64::from(config.sector_size),
        update_inner,
        &config,
        vanilla_proofs,
        [comm_r_old, comm_r_new, comm_d_new],
        options,
        start
    )
}

/// The update proof as Curio's `GenerateUpdateProofWithVanilla(proofType, key, sealed,
/// unsealed cid.Cid, vproofs)` asks for it: the commitments as binary CIDs (`cid.Cid.Bytes()`)
/// — `key` the sector key's CommR and `sealed` the updated replica's (fil-commitment-sealed,
/// poseidon-bls12_381-a2-fc1), `unsealed` the new data's CommD (fil-commitment-unsealed,
/// sha2-256-trunc254-padded) — read by [`commitment_from_cid`]. Otherwise
/// [`generate_empty_sector_update_proof_with_vanilla`].
///
/// # Errors
/// [`Error::InvalidArgument`] naming the CID (`key`, `sealed`, `unsealed`) and what is wrong
/// with it; then as [`generate_empty_sector_update_proof_with_vanilla`].
pub fn generate_update_proof_with_vanilla(
    proof_type: RegisteredUpdateProof,
    key: &[u8],
    sealed: &[u8],
    unsealed: &[u8],
    vanilla_proofs: &[Vec<u8>],
) -> Result<Vec<u8>> {
    blocking(submit_update_proof_with_vanilla(
        proof_type,
        key,
        sealed,
        unsealed,
        vanilla_proofs,
        Options::default(),
    ))
}

/// [`generate_update_proof_with_vanilla`] without blocking, on the engine of `options`.
///
/// # Errors
/// As [`generate_update_proof_with_vanilla`], for what is checked before the job is submitted.
pub fn submit_update_proof_with_vanilla(
    proof_type: RegisteredUpdateProof,
    key: &[u8],
    sealed: &[u8],
    unsealed: &[u8],
    vanilla_proofs: &[Vec<u8>],
    options: Options<'_>,
) -> Result<ProofJob> {
    let comm_r_old = commitment_from_cid(key, CommitmentKind::Sealed, "key (the sector key's CommR)")?;
    let comm_r_new = commitment_from_cid(sealed, CommitmentKind::Sealed, "sealed (the new CommR)")?;
    let comm_d_new = commitment_from_cid(unsealed, CommitmentKind::Unsealed, "unsealed (the new CommD)")?;
    submit_empty_sector_update_proof_with_vanilla(
        proof_type,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        options,
    )
}

fn update_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    porep_config: &PoRepConfig,
    vanilla_proofs: &[Vec<u8>],
    [comm_r_old, comm_r_new, comm_d_new]: [Commitment; 3],
    options: Options<'_>,
    start: Instant,
) -> Result<ProofJob> {
    let config = SectorUpdateConfig::from_porep_config(porep_config);
    let partitions = usize::from(config.update_partitions);
    if vanilla_proofs.len() != partitions {
        return Err(Error::InvalidArgument(format!(
            "this sector size has {partitions} update partitions; found {} vanilla partition proofs",
            vanilla_proofs.len()
        )));
    }
    let partition_proofs = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize::<PartitionProof<Tree>>(bytes).map_err(|e| {
                Error::InvalidArgument(format!(
                    "vanilla proof {i} is not a bincode PartitionProof of this sector size: {e}"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;

    let domain = |bytes: &Commitment, what: &str| {
        <TreeRHasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(bytes).map_err(|e| fil_err(what, e))
    };
    let public_inputs = PublicInputs {
        k: partitions,
        comm_r_old: domain(&comm_r_old, "comm_r_old")?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&comm_d_new).map_err(|e| fil_err("comm_d_new", e))?,
        comm_r_new: domain(&comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        '_,
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&setup)
    .map_err(|e| fil_err("update public parameters", e))?;

    let path = params::update_path_for::<Tree>(porep_config)?;
    let (loaded, params_load) = params::load(&path, options.engine)?;
    let report = Report {
        params_load,
        ..Report::default()
    };
    submit_compound::<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>, EmptySectorUpdateCompound<Tree>>(
        ProofKind::SnapDeals,
        loaded,
        &public_inputs,
        VerifyAs {
            inputs: &public_inputs,
            first_partition: 0,
        },
        partition_proofs,
        &pub_params.vanilla_params,
        Some(super::native::update::update_witness_parallel::<Tree>),
        options,
        report,
        start,
    )
}
