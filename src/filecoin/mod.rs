//! Filecoin proofs proved by cuzk (the `filecoin` feature): PoRep commit phase 2, SnapDeals
//! (empty-sector-update) proofs, Window PoSt and Winning PoSt.
//!
//! Each entry point takes exactly the inputs filecoin-proofs (through filecoin-proofs-api, as
//! filecoin-ffi calls it) takes, builds exactly the circuits filecoin-proofs builds — the
//! compound proof's `circuit` for partition k, with the same public inputs and vanilla proofs
//! — and proves them as one job of a cuzk [`Engine`](crate::engine::Engine) instead of bellperson. The result is the
//! bytes filecoin-proofs returns: one 192-byte Groth16 proof per partition, in partition order.
//! Every proof is checked against the parameters' verifying key before it is returned (as
//! filecoin-proofs' own `seal_commit_phase2` does), so a bad proof is an error, never output.
//!
//! | proof | blocking | non-blocking | filecoin-proofs-api equivalent |
//! |---|---|---|---|
//! | PoRep C2 | [`seal_commit_phase2`] | [`submit_seal_commit_phase2`] | `seal::seal_commit_phase2` |
//! | SnapDeals | [`generate_empty_sector_update_proof_with_vanilla`] | [`submit_empty_sector_update_proof_with_vanilla`] | `update::generate_empty_sector_update_proof_with_vanilla` |
//! | SnapDeals from CIDs | [`generate_update_proof_with_vanilla`] | [`submit_update_proof_with_vanilla`] | (filecoin-ffi's `GenerateUpdateProofWithVanilla`) |
//! | Window PoSt | [`generate_window_post_with_vanilla`] | [`submit_window_post_with_vanilla`] | `post::generate_window_post_with_vanilla` |
//! | one Window PoSt partition | [`generate_single_partition_window_post_with_vanilla`] | [`submit_single_partition_window_post_with_vanilla`] | `post::generate_single_window_post_with_vanilla` |
//! | Winning PoSt | [`generate_winning_post_with_vanilla`] | [`submit_winning_post_with_vanilla`] | `post::generate_winning_post_with_vanilla` |
//!
//! **The engine.** Every proof is a job of partitions on an [`Engine`](crate::engine::Engine): the process-wide one
//! ([`engine()`], started at the first proof from [`configure`]'s configuration or the
//! `CUZK_FILECOIN_*` variables: GPUs, memory budget, synthesis threads) unless
//! [`Options::engine`] names another. Partitions stream through its budget (synthesized a few
//! at a time, never all at once), synthesis overlaps the GPU, and jobs from many threads are
//! in flight together. A `submit_*` call returns a [`ProofJob`] at once (wait, cancel,
//! progress); the blocking calls are submit + wait.
//!
//! **Priorities** by proof kind ([`ProofKind::default_priority`]): Winning PoSt
//! ([`PRIORITY_WINNING_POST`]) > Window PoSt ([`PRIORITY_WINDOW_POST`]) > PoRep C2
//! ([`PRIORITY_SEAL_COMMIT`]) = SnapDeals ([`PRIORITY_SNAP_DEALS`]); [`Options::priority`]
//! overrides it per call. A higher-priority job's partitions are dispatched to synthesis, and
//! taken by a GPU, before any lower-priority partition waiting there.
//!
//! Parameters come from filecoin-proofs' parameter cache (`FIL_PROOFS_PARAMETER_CACHE`, else
//! `/var/tmp/filecoin-proof-parameters/`) under filecoin-proofs' own file names; cuzk never
//! generates them. They are loaded once per process by cuzk's loader and kept (see
//! [`parameter_path`] and [`clear_parameter_cache`]), so the CUDA backend keeps them resident on
//! the GPU between calls. A missing or truncated file is an [`Error::FilecoinParams`] naming the
//! file.

mod cid;
mod engine;
mod job;
pub mod native;
mod params;
mod porep;
mod post;
mod registered;
mod update;

use std::time::Duration;

pub use self::cid::{commitment_from_cid, CommitmentKind};
#[cfg(feature = "daemon")]
pub(crate) use self::engine::config_from_env;
pub use self::engine::{
    configure, engine, engine_started, ENV_BUDGET, ENV_COMPILED_DIR, ENV_GPUS, ENV_PARAMS_ON_DEVICE,
    ENV_SYNTHESIS_THREADS,
};
// Test hooks (feature `fault-injection`).
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub use self::job::{fault_next_native_witness, skew_next_compiled_circuit, NativeWitnessFault};
pub use self::job::{
    Options, ProofJob, ProofKind, PRIORITY_SEAL_COMMIT, PRIORITY_SNAP_DEALS, PRIORITY_WINDOW_POST,
    PRIORITY_WINNING_POST,
};
pub use self::params::{
    clear_parameter_cache, evict_parameters, install_unchecked_parameters, loaded_parameters, parameter_path,
    parameters_loaded, preload_parameters, ParamsKind,
};
pub use self::porep::{seal_commit_phase2, submit_seal_commit_phase2, submit_seal_commit_phase2_typed};
pub use self::post::{
    generate_single_partition_window_post_with_vanilla, generate_window_post_with_vanilla,
    generate_winning_post_with_vanilla, submit_single_partition_window_post_with_vanilla,
    submit_window_post_with_vanilla, submit_winning_post_with_vanilla,
};
pub use self::post::{window_post_partitions_max, ADDRESSED_SECTORS_MAX, MAX_PARTITIONS_PER_DEADLINE};
pub use self::registered::{post_proof_from_abi, seal_proof_from_abi, update_proof_from_abi, SECTOR_SIZES};
pub use self::update::{
    generate_empty_sector_update_proof_with_vanilla, generate_update_proof_with_vanilla,
    submit_empty_sector_update_proof_with_vanilla, submit_update_proof_with_vanilla,
};
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::error::{Error, Result};

/// A 32-byte prover id, as filecoin-proofs takes it.
pub type ProverId = [u8; 32];

/// A proof and where its time went.
#[derive(Debug, Clone)]
pub struct Output {
    /// The bytes filecoin-proofs returns: 192-byte Groth16 proofs in partition order.
    pub proof: Vec<u8>,
    /// Where the time went.
    pub report: Report,
}

/// Where the time of one Filecoin proof went.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The engine's backend (`"cpu"`, `"cuda"`; `"mixed"` for an engine over several kinds).
    pub backend: &'static str,
    /// The job's engine priority.
    pub priority: i32,
    /// Partitions (one Groth16 proof each).
    pub partitions: usize,
    /// The circuit's evaluation domain (constraints rounded up to a power of two).
    pub domain_size: usize,
    /// Finding and loading the parameters (zero when they were already loaded).
    pub params_load: Duration,
    /// Computing the public inputs the proofs are checked with and preparing the partitions
    /// (each partition's circuit is built from its vanilla proof when its synthesis starts).
    pub circuits: Duration,
    /// From submission to the engine until every proof was back: synthesis and proving, and
    /// the waits for synthesis threads, budget and GPUs behind other jobs (the engine's
    /// statistics, [`Engine::stats`](crate::engine::Engine::stats), break it down).
    pub proving: Duration,
    /// Checking the proofs against the verifying key.
    pub verify: Duration,
    /// From the call until the proofs were verified (for a submitted job: until `wait` returned).
    pub total: Duration,
}

pub use crate::prover_id::prover_id_from_miner_id;

/// Runs filecoin-proofs code on caller-supplied data: its asserts (a malformed vanilla proof
/// can trip them) become [`Error::Filecoin`] instead of a panic through the caller.
pub(crate) fn guard<T>(what: &dyn Fn() -> String, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = crate::error::panic_message(&*payload);
        Err(Error::Filecoin(format!("{}: filecoin-proofs panicked: {msg}", what())))
    })
}

/// An error from filecoin-proofs (its `anyhow` chain, as one line).
pub(crate) fn fil_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Filecoin(format!("{context}: {e:#}"))
}

/// Runs `$f::<Tree>(args)` for the Merkle tree shape of a registered sector size (the five
/// sizes a registered proof can name), or fails for any other size.
macro_rules! with_registered_shape {
    ($size:expr, $f:ident, $($args:expr),* $(,)?) => {{
        use filecoin_proofs::constants as c;
        match $size {
            c::SECTOR_SIZE_2_KIB => $f::<c::SectorShape2KiB>($($args),*),
            c::SECTOR_SIZE_8_MIB => $f::<c::SectorShape8MiB>($($args),*),
            c::SECTOR_SIZE_512_MIB => $f::<c::SectorShape512MiB>($($args),*),
            c::SECTOR_SIZE_32_GIB => $f::<c::SectorShape32GiB>($($args),*),
            c::SECTOR_SIZE_64_GIB => $f::<c::SectorShape64GiB>($($args),*),
            other => Err($crate::error::Error::InvalidArgument(format!(
                "sector size {other} bytes is not one a registered proof names"
            ))),
        }
    }};
}
pub(crate) use with_registered_shape;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_filecoin_proofs_becomes_an_error() {
        let r: Result<()> = guard(&|| "building the circuit of partition 3".into(), || {
            panic!("assert failed: boom")
        });
        match r {
            Err(Error::Filecoin(m)) => {
                assert!(m.contains("partition 3") && m.contains("boom"), "{m}")
            }
            other => panic!("expected Error::Filecoin, got {other:?}"),
        }
        assert_eq!(guard(&|| unreachable!(), || Ok(7)).unwrap(), 7);
    }
}
