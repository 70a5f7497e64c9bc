//! A `SubmitProofRequest` checked and decoded into the work it names: each field Curio sends
//! read as Curio means it (the C1 wrapper with its base64, raw 32-byte commitments, the
//! `abi.Registered*Proof` numbers), and every bad field refused by name before any proving.

use base64::Engine as _;

use super::proto::{Priority, ProofKind as WireKind, SubmitProofRequest};
use crate::filecoin::{self, Options, ProofJob, ProofKind, RegisteredPoStProof, RegisteredUpdateProof};

/// A request's work, checked: everything a `filecoin::submit_*` call takes. `miner` is the
/// miner's actor id (the prover id is made from it), `vanilla` the vanilla proofs as Curio
/// sends them, `proof` the registered proof.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum Work {
    /// PoRep C2: filecoin-proofs-api's commit phase 1 output (JSON), for this miner and sector.
    SealCommit { c1: Vec<u8>, miner: u64, sector: u64 },
    /// SnapDeals from its partition proofs and raw commitments (old CommR, new CommR, new CommD).
    SnapDeals {
        proof: RegisteredUpdateProof,
        vanilla: Vec<Vec<u8>>,
        comms: [[u8; 32]; 3],
    },
    /// One Window PoSt partition.
    WindowPartition {
        proof: RegisteredPoStProof,
        randomness: [u8; 32],
        miner: u64,
        vanilla: Vec<Vec<u8>>,
        partition: usize,
    },
    /// Winning PoSt.
    Winning {
        proof: RegisteredPoStProof,
        randomness: [u8; 32],
        miner: u64,
        vanilla: Vec<Vec<u8>>,
    },
}

/// A request that cannot be proved: the message names the field.
pub type Refusal = String;

impl Work {
    /// The Filecoin layer's kind of this work.
    pub fn kind(&self) -> ProofKind {
        match self {
            Self::SealCommit { .. } => ProofKind::SealCommit,
            Self::SnapDeals { .. } => ProofKind::SnapDeals,
            Self::WindowPartition { .. } => ProofKind::WindowPoSt,
            Self::Winning { .. } => ProofKind::WinningPoSt,
        }
    }

    /// Submits the work to the process-wide Filecoin engine at `priority` (loading parameters
    /// and building the circuits' inputs first: this blocks).
    pub fn submit(&self, priority: i32) -> crate::error::Result<ProofJob> {
        let options = || Options::default().with_priority(priority);
        let prover = filecoin::prover_id_from_miner_id;
        match self {
            Self::SealCommit { c1, miner, sector } => {
                filecoin::submit_seal_commit_phase2(c1, prover(*miner), *sector, options())
            }
            Self::SnapDeals { proof, vanilla, comms } => filecoin::submit_empty_sector_update_proof_with_vanilla(
                *proof,
                vanilla,
                comms[0],
                comms[1],
                comms[2],
                options(),
            ),
            Self::WindowPartition {
                proof,
                randomness,
                miner,
                vanilla,
                partition,
            } => filecoin::submit_single_partition_window_post_with_vanilla(
                *proof,
                randomness,
                prover(*miner),
                vanilla,
                *partition,
                options(),
            ),
            Self::Winning {
                proof,
                randomness,
                miner,
                vanilla,
            } => filecoin::submit_winning_post_with_vanilla(*proof, randomness, prover(*miner), vanilla, options()),
        }
    }
}

/// The engine priority of a request: Curio's CRITICAL > HIGH > NORMAL > LOW onto the Filecoin
/// layer's Winning PoSt (urgent) > Window PoSt > PoRep C2 = SnapDeals > below them; unset: the
/// proof kind's own.
pub fn engine_priority(priority: i32, kind: ProofKind) -> std::result::Result<i32, Refusal> {
    match Priority::try_from(priority) {
        Ok(Priority::Unspecified) => Ok(kind.default_priority()),
        Ok(Priority::Critical) => Ok(filecoin::PRIORITY_WINNING_POST),
        Ok(Priority::High) => Ok(filecoin::PRIORITY_WINDOW_POST),
        Ok(Priority::Normal) => Ok(filecoin::PRIORITY_SEAL_COMMIT),
        Ok(Priority::Low) => Ok(0),
        Err(_) => Err(format!("priority: {priority} is not a cuzk.v1.Priority")),
    }
}

/// Checks `req` and decodes the work it names.
pub fn decode(req: SubmitProofRequest) -> std::result::Result<Work, Refusal> {
    let kind = WireKind::try_from(req.proof_kind)
        .map_err(|_| format!("proof_kind: {} is not a cuzk.v1.ProofKind", req.proof_kind))?;
    let work = match kind {
        WireKind::Unspecified => return Err("proof_kind: missing (PROOF_KIND_UNSPECIFIED)".into()),
        WireKind::PorepSealCommit => seal_commit(req)?,
        WireKind::SnapDealsUpdate => {
            let proof = registered(
                req.registered_proof,
                "abi.RegisteredUpdateProof",
                filecoin::update_proof_from_abi,
            )?;
            size_matches(req.sector_size, u64::from(proof.sector_size()))?;
            SnapDeals {
                proof,
                vanilla: vanilla_proofs(req.vanilla_proofs)?,
                comms: [
                    commitment(&req.comm_r_old, "comm_r_old")?,
                    commitment(&req.comm_r_new, "comm_r_new")?,
                    commitment(&req.comm_d_new, "comm_d_new")?,
                ],
            }
        }
        WireKind::WindowPostPartition | WireKind::WinningPost => {
            let winning = kind == WireKind::WinningPost;
            let proof = registered(
                req.registered_proof,
                "abi.RegisteredPoStProof",
                filecoin::post_proof_from_abi,
            )?;
            if proof.typ() == filecoin_proofs::PoStType::Winning && !winning {
                return Err(format!(
                    "registered_proof: {} is a Winning PoSt proof, not a Window one",
                    req.registered_proof
                ));
            }
            if proof.typ() == filecoin_proofs::PoStType::Window && winning {
                return Err(format!(
                    "registered_proof: {} is a Window PoSt proof, not a Winning one",
                    req.registered_proof
                ));
            }
            size_matches(req.sector_size, u64::from(proof.sector_size()))?;
            let randomness: [u8; 32] = req
                .randomness
                .as_slice()
                .try_into()
                .map_err(|_| format!("randomness: {} bytes, expected 32", req.randomness.len()))?;
            let vanilla = vanilla_proofs(req.vanilla_proofs)?;
            let miner = req.miner_id;
            if winning {
                Work::Winning {
                    proof,
                    randomness,
                    miner,
                    vanilla,
                }
            } else {
                Work::WindowPartition {
                    proof,
                    randomness,
                    miner,
                    vanilla,
                    partition: req.partition_index as usize,
                }
            }
        }
    };
    Ok(work)
}

use Work::SnapDeals;

/// Curio's C1 wrapper: `{"SectorNum", "Phase1Out" (base64 of the C1 output JSON), "SectorSize"}`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct C1Wrapper {
    sector_num: u64,
    phase1_out: String,
    sector_size: u64,
}

fn seal_commit(req: SubmitProofRequest) -> std::result::Result<Work, Refusal> {
    let proof = registered(
        req.registered_proof,
        "abi.RegisteredSealProof",
        filecoin::seal_proof_from_abi,
    )?;
    size_matches(req.sector_size, u64::from(proof.sector_size()))?;
    if req.vanilla_proof.is_empty() {
        return Err("vanilla_proof: missing (the C1 wrapper JSON)".into());
    }
    let wrapper: C1Wrapper = serde_json::from_slice(&req.vanilla_proof).map_err(|e| {
        format!("vanilla_proof: not the C1 wrapper JSON {{\"SectorNum\", \"Phase1Out\", \"SectorSize\"}}: {e}")
    })?;
    if wrapper.sector_num != req.sector_number {
        return Err(format!(
            "vanilla_proof: SectorNum {} is not sector_number {}",
            wrapper.sector_num, req.sector_number
        ));
    }
    if wrapper.sector_size != u64::from(proof.sector_size()) {
        return Err(format!(
            "vanilla_proof: SectorSize {} is not the size of registered_proof {} ({})",
            wrapper.sector_size,
            req.registered_proof,
            u64::from(proof.sector_size())
        ));
    }
    let c1 = base64::engine::general_purpose::STANDARD
        .decode(wrapper.phase1_out.as_bytes())
        .map_err(|e| format!("vanilla_proof: Phase1Out is not base64: {e}"))?;
    Ok(Work::SealCommit {
        c1,
        miner: req.miner_id,
        sector: req.sector_number,
    })
}

fn registered<T>(v: u64, what: &str, from: fn(u64) -> Option<T>) -> std::result::Result<T, Refusal> {
    from(v).ok_or_else(|| format!("registered_proof: {v} is not a {what} cuzk proves"))
}

fn size_matches(given: u64, proof: u64) -> std::result::Result<(), Refusal> {
    if given != 0 && given != proof {
        return Err(format!(
            "sector_size: {given} is not the registered proof's sector size {proof}"
        ));
    }
    Ok(())
}

fn vanilla_proofs(v: Vec<Vec<u8>>) -> std::result::Result<Vec<Vec<u8>>, Refusal> {
    if v.is_empty() {
        return Err("vanilla_proofs: missing (none given)".into());
    }
    if let Some(i) = v.iter().position(|p| p.is_empty()) {
        return Err(format!("vanilla_proofs[{i}]: empty"));
    }
    Ok(v)
}

fn commitment(b: &[u8], field: &str) -> std::result::Result<[u8; 32], Refusal> {
    b.try_into()
        .map_err(|_| format!("{field}: {} bytes, expected a raw 32-byte commitment", b.len()))
}

/// A circuit id as Curio names parameter sets (`porep-32g`, `wpost-2k`, `winning-512m`,
/// `snap-64g`) as the Filecoin layer's parameter kind.
pub fn circuit(id: &str) -> std::result::Result<filecoin::ParamsKind, Refusal> {
    let bad = || format!("circuit_id: {id:?} is not porep-, wpost-, winning- or snap- with 2k, 8m, 512m, 32g or 64g");
    let (what, size) = id.split_once('-').ok_or_else(bad)?;
    let i = ["2k", "8m", "512m", "32g", "64g"]
        .iter()
        .position(|s| *s == size)
        .ok_or_else(bad)? as u64;
    let kind = match what {
        "porep" => filecoin::ParamsKind::Seal(filecoin::seal_proof_from_abi(5 + i).ok_or_else(bad)?),
        "winning" => filecoin::ParamsKind::PoSt(filecoin::post_proof_from_abi(i).ok_or_else(bad)?),
        "wpost" => filecoin::ParamsKind::PoSt(filecoin::post_proof_from_abi(10 + i).ok_or_else(bad)?),
        "snap" => filecoin::ParamsKind::Update(filecoin::update_proof_from_abi(i).ok_or_else(bad)?),
        _ => return Err(bad()),
    };
    Ok(kind)
}

/// Every circuit id [`circuit`] knows.
pub fn circuit_ids() -> impl Iterator<Item = String> {
    ["porep", "wpost", "winning", "snap"].into_iter().flat_map(|k| {
        ["2k", "8m", "512m", "32g", "64g"]
            .into_iter()
            .map(move |s| format!("{k}-{s}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_name_the_parameter_sets_curio_means() {
        use filecoin::{ParamsKind, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
        assert_eq!(
            circuit("porep-32g").unwrap(),
            ParamsKind::Seal(RegisteredSealProof::StackedDrg32GiBV1_1)
        );
        assert_eq!(
            circuit("wpost-2k").unwrap(),
            ParamsKind::PoSt(RegisteredPoStProof::StackedDrgWindow2KiBV1_2)
        );
        assert_eq!(
            circuit("winning-64g").unwrap(),
            ParamsKind::PoSt(RegisteredPoStProof::StackedDrgWinning64GiBV1)
        );
        assert_eq!(
            circuit("snap-512m").unwrap(),
            ParamsKind::Update(RegisteredUpdateProof::StackedDrg512MiBV1)
        );
        assert!(circuit("porep-33g").unwrap_err().contains("circuit_id"));
        assert_eq!(circuit_ids().count(), 20);
    }
}
