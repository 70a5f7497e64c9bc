//! Filecoin proofs proved by cuzk (the `filecoin` feature): PoRep commit phase 2, SnapDeals
//! (empty-sector-update) proofs, Window PoSt and Winning PoSt.
//!
//! Each entry point takes exactly the inputs filecoin-proofs (through filecoin-proofs-api, as
//! filecoin-ffi calls it) takes, builds exactly the circuits filecoin-proofs builds — the
//! compound proof's `circuit` for partition k, with the same public inputs and vanilla proofs
//! — and proves them with a cuzk [`Prover`] instead of bellperson. The result is the bytes
//! filecoin-proofs returns: one 192-byte Groth16 proof per partition, in partition order.
//! Every proof is checked against the parameters' verifying key before it is returned (as
//! filecoin-proofs' own `seal_commit_phase2` does), so a bad proof is an error, never output.
//!
//! | proof | entry point | filecoin-proofs-api equivalent |
//! |---|---|---|
//! | PoRep C2 | [`seal_commit_phase2`] | `seal::seal_commit_phase2` |
//! | SnapDeals | [`generate_empty_sector_update_proof_with_vanilla`] | `update::generate_empty_sector_update_proof_with_vanilla` |
//! | Window PoSt | [`generate_window_post_with_vanilla`] | `post::generate_window_post_with_vanilla` |
//! | Winning PoSt | [`generate_winning_post_with_vanilla`] | `post::generate_winning_post_with_vanilla` |
//!
//! Parameters come from filecoin-proofs' parameter cache (`FIL_PROOFS_PARAMETER_CACHE`, else
//! `/var/tmp/filecoin-proof-parameters/`) under filecoin-proofs' own file names; cuzk never
//! generates them. They are loaded once per process by cuzk's loader and kept (see
//! [`parameter_path`] and [`clear_parameter_cache`]), so the CUDA backend keeps them resident on
//! the GPU between calls. A missing or truncated file is an [`Error::FilecoinParams`] naming the
//! file.
//!
//! Partitions are synthesized in parallel on the host (as bellperson does), then proved one
//! after the other on the prover's backend; [`Report`] says where the time went.

mod params;
mod porep;
mod post;
mod update;

use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::ParameterSetMetadata;
use storage_proofs_core::proof::ProofScheme;

pub use self::params::{clear_parameter_cache, parameter_path, ParamsKind};
pub use self::porep::{seal_commit_phase2, seal_commit_phase2_typed, seal_commit_phase2_with_rng};
pub use self::post::{
    generate_window_post_with_vanilla, generate_window_post_with_vanilla_rng, generate_winning_post_with_vanilla,
    generate_winning_post_with_vanilla_rng,
};
pub use self::update::{
    generate_empty_sector_update_proof_with_vanilla, generate_empty_sector_update_proof_with_vanilla_rng,
};
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::error::{Error, Result};
use crate::proof::{verify_proof, Proof};
use crate::prover::Prover;

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
    /// The backend that proved (`"cpu"`, `"cuda"`).
    pub backend: &'static str,
    /// Partitions (one Groth16 proof each).
    pub partitions: usize,
    /// The circuit's evaluation domain (constraints rounded up to a power of two).
    pub domain_size: usize,
    /// Finding and loading the parameters (zero when they were already loaded).
    pub params_load: Duration,
    /// Building the circuits from the vanilla proofs (filecoin-proofs' `circuit`).
    pub circuits: Duration,
    /// Synthesizing every partition (in parallel; wall time).
    pub synthesis: Duration,
    /// Proving each partition on the backend (H, MSMs, randomisation), in partition order.
    pub prove: Vec<Duration>,
    /// Checking the proofs against the verifying key.
    pub verify: Duration,
    /// The whole call.
    pub total: Duration,
}

impl Report {
    /// The sum of [`Report::prove`].
    pub fn prove_total(&self) -> Duration {
        self.prove.iter().sum()
    }
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

/// Builds the circuit of every partition as filecoin-proofs' `CompoundProof::circuit_proofs`
/// does (partition k from vanilla proof k), proves them with `prover` (r for every proof
/// drawn from `rng` first, then s, as bellperson's `create_random_proof_batch` draws them),
/// checks each proof against the verifying key (with the public inputs `verify_in` when the
/// verifier's differ from the prover's, as for Winning PoSt), and returns the concatenated
/// proofs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prove_compound<'a, S, C, CP>(
    prover: &Prover,
    loaded: &params::Loaded,
    pub_in: &S::PublicInputs,
    verify_in: Option<&S::PublicInputs>,
    vanilla_proofs: &[S::Proof],
    pub_params: &S::PublicParams,
    rng: &mut dyn RngCore,
    mut report: Report,
) -> Result<Output>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: Circuit<Scalar> + CircuitComponent + Send,
    CP: CompoundProof<'a, S, C>,
{
    let start = Instant::now();
    if vanilla_proofs.is_empty() {
        return Err(Error::InvalidArgument("no vanilla proofs: nothing to prove".into()));
    }
    let n = vanilla_proofs.len();
    let params = &loaded.params;
    let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();

    let t = Instant::now();
    let circuits = vanilla_proofs
        .par_iter()
        .enumerate()
        .map(|(k, vanilla)| {
            let what = || format!("building the circuit of partition {k}");
            guard(&what, || {
                CP::circuit(
                    pub_in,
                    C::ComponentPrivateInputs::default(),
                    vanilla,
                    pub_params,
                    Some(k),
                )
                .map_err(|e| fil_err(&what(), e))
            })
        })
        .collect::<Result<Vec<C>>>()?;
    report.circuits = t.elapsed();

    let t = Instant::now();
    let assignments = circuits
        .into_par_iter()
        .enumerate()
        .map(|(k, c)| {
            guard(&|| format!("synthesizing partition {k}"), || {
                prover.synthesize_for(c, params)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    report.synthesis = t.elapsed();

    let mut proofs: Vec<Proof> = Vec::with_capacity(n);
    for (k, assignment) in assignments.into_iter().enumerate() {
        let t = Instant::now();
        let (mut one, _) = prover.prove_synthesized(vec![assignment], params, &r[k..=k], &s[k..=k])?;
        report.prove.push(t.elapsed());
        proofs.append(&mut one);
    }

    let t = Instant::now();
    for (k, proof) in proofs.iter().enumerate() {
        let inputs = CP::generate_public_inputs(verify_in.unwrap_or(pub_in), pub_params, Some(k))
            .map_err(|e| fil_err(&format!("public inputs of partition {k}"), e))?;
        if !verify_proof(&loaded.pvk, proof, &inputs)? {
            return Err(Error::Filecoin(format!(
                "the proof of partition {k} does not verify against the parameters' verifying key \
                 (a backend fault, or parameters that do not belong to this circuit)"
            )));
        }
    }
    report.verify = t.elapsed();

    report.backend = prover.backend_name();
    report.partitions = n;
    report.domain_size = params.domain_size();
    report.total += start.elapsed();
    let mut bytes = Vec::with_capacity(n * Proof::SIZE);
    for p in &proofs {
        bytes.extend_from_slice(&p.to_bytes());
    }
    log::info!(
        "filecoin: {n} partitions on {}: circuits {:.1} ms, synthesis {:.1} ms, prove {:.1} ms, verify {:.1} ms",
        report.backend,
        report.circuits.as_secs_f64() * 1e3,
        report.synthesis.as_secs_f64() * 1e3,
        report.prove_total().as_secs_f64() * 1e3,
        report.verify.as_secs_f64() * 1e3
    );
    Ok(Output { proof: bytes, report })
}

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
