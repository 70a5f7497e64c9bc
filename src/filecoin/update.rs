//! SnapDeals: the empty-sector-update proof from its vanilla partition proofs.

use std::time::Instant;

use filecoin_hashers::Domain;
use filecoin_proofs::{DefaultPieceDomain, PoRepConfig, SectorUpdateConfig, TreeRHasher};
use rand_core::{OsRng, RngCore};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, SetupParams,
};

use super::{fil_err, params, prove_compound, Output, Report};
use crate::error::{Error, Result};
use crate::filecoin::RegisteredUpdateProof;
use crate::prover::Prover;

type Commitment = [u8; 32];

/// Proves a SnapDeals (empty-sector-update) proof from its vanilla partition proofs, as
/// filecoin-proofs-api's `update::generate_empty_sector_update_proof_with_vanilla`:
/// `vanilla_proofs` are the bincode bytes of the `PartitionProof`s filecoin-ffi's
/// `generate_empty_sector_update_partition_proofs` returns (one per partition, in order);
/// `comm_r_old`, `comm_r_new` and `comm_d_new` the sector's old and new replica commitments
/// and new data commitment. Returns the proof bytes (192 per partition, in order).
///
/// # Errors
/// [`Error::InvalidArgument`] for the wrong number of partition proofs or bytes that do not
/// decode; [`Error::Filecoin`] for a commitment filecoin-proofs refuses;
/// [`Error::FilecoinParams`]; the prover's errors.
pub fn generate_empty_sector_update_proof_with_vanilla(
    proof_type: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    prover: &Prover,
) -> Result<Vec<u8>> {
    generate_empty_sector_update_proof_with_vanilla_rng(
        proof_type,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        prover,
        &mut OsRng,
    )
    .map(|o| o.proof)
}

/// As [`generate_empty_sector_update_proof_with_vanilla`], with r and s from `rng` and the
/// [`Report`].
///
/// # Errors
/// As [`generate_empty_sector_update_proof_with_vanilla`].
pub fn generate_empty_sector_update_proof_with_vanilla_rng(
    proof_type: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
    let start = Instant::now();
    if proof_type.major_version() != 1 {
        return Err(Error::InvalidArgument(format!(
            "unsupported update proof version {proof_type:?}"
        )));
    }
    let config = proof_type.as_v1_config();
    let mut out = super::with_registered_shape!(
        u64::from(config.sector_size),
        update_inner,
        &config,
        vanilla_proofs,
        [comm_r_old, comm_r_new, comm_d_new],
        prover,
        rng
    )?;
    out.report.total = start.elapsed();
    Ok(out)
}

fn update_inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    porep_config: &PoRepConfig,
    vanilla_proofs: &[Vec<u8>],
    [comm_r_old, comm_r_new, comm_d_new]: [Commitment; 3],
    prover: &Prover,
    rng: &mut dyn RngCore,
) -> Result<Output> {
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
    let (loaded, params_load) = params::load(&path)?;
    let report = Report {
        params_load,
        ..Report::default()
    };
    prove_compound::<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>, EmptySectorUpdateCompound<Tree>>(
        prover,
        &loaded,
        &public_inputs,
        None,
        &partition_proofs,
        &pub_params.vanilla_params,
        rng,
        report,
    )
}
