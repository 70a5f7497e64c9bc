//! Filecoin proofs of 2 KiB sectors, proved by cuzk and by filecoin-proofs itself (bellperson
//! on the CPU), each checked by filecoin-proofs' verifier; prints where cuzk's time goes
//! (public inputs, the engine's synthesis and proving, verification) against filecoin-proofs'
//! total. cuzk proves on its process-wide Filecoin engine (`CUZK_FILECOIN_*` configure it).
//!
//!     cargo run --release --features filecoin --example filecoin -- --kinds porep,snap,winning,window
//!     cargo run --release --features cuda,filecoin --example filecoin     # on the GPU machine
//!
//! Sectors are sealed with filecoin-proofs (pre-commit 1 and 2, commit 1) in a scratch directory.
//! Parameters come from `FIL_PROOFS_PARAMETER_CACHE` (default here: `params-cache/filecoin`);
//! missing ones are generated with filecoin-proofs' own generator — TEST parameters, fine for a
//! benchmark, never for the network. The 2 KiB PoRep and SnapDeals circuits take minutes to
//! make parameters for (2 cores: tens of minutes; 16 cores: a few).

mod support;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use cuzk::engine::Engine;
use cuzk::filecoin::{
    self, Options, Output, ParamsKind, ProofJob, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};
use filecoin_proofs_api::seal::{self as api_seal, SealPreCommitPhase2Output};
use filecoin_proofs_api::{post as api_post, update as api_update};
use filecoin_proofs_api::{PieceInfo, PrivateReplicaInfo, PublicReplicaInfo, SectorId, UnpaddedBytesAmount};
use rand::{Rng, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use support::{fail, ms};

/// Filecoin proofs of 2 KiB sectors proved by cuzk and by filecoin-proofs (bellperson on the
/// CPU), each checked by filecoin-proofs' verifier. Parameters come from
/// FIL_PROOFS_PARAMETER_CACHE (default here: params-cache/filecoin); missing ones are generated
/// with filecoin-proofs' generator (TEST parameters).
#[derive(Parser)]
#[command(name = "filecoin")]
struct Args {
    /// Proof kinds to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [Kind::Porep, Kind::Snap, Kind::Winning, Kind::Window])]
    kinds: Vec<Kind>,
    /// Runs of each kind (cuzk's best and filecoin-proofs' are shown).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = support::at_least_one)]
    runs: usize,
    /// Scratch directory for the sealed sectors (emptied first).
    #[arg(long, value_name = "DIR", default_value = "target/filecoin-example")]
    scratch: PathBuf,
}

/// A proof kind.
#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    /// PoRep commit phase 2 (C2).
    Porep,
    /// SnapDeals (empty-sector update).
    Snap,
    /// Winning PoSt.
    Winning,
    /// Window PoSt.
    Window,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.to_possible_value().expect("no skipped kinds");
        f.write_str(v.get_name())
    }
}

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const WINNING: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
const WINDOW: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
const UPDATE: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;
const MINER: u64 = 1000;

type Tree = filecoin_proofs::SectorShape2KiB;

fn main() {
    // filecoin-proofs logs much at info: without RUST_LOG, only this example's own lines.
    support::init_logging("warn,filecoin=info");
    let Args { kinds, runs, scratch } = Args::parse();
    if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").is_none() {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", "params-cache/filecoin");
    }
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap_or_else(|e| fail(&format!("{}: {e}", scratch.display())));

    let engine = ok("the Filecoin engine", filecoin::engine());
    println!("cuzk filecoin: 2 KiB sectors; machine: {}", support::machine());
    println!(
        "cuzk backend: {}; filecoin-proofs: bellperson on the CPU",
        engine.stats().workers.first().map_or("none", |w| w.backend_name)
    );
    println!(
        "parameters: {}",
        std::env::var("FIL_PROOFS_PARAMETER_CACHE").unwrap_or_default()
    );

    let mut rng = rand_chacha::ChaCha20Rng::from_seed([1; 32]);
    let sectors: Vec<Sealed> = (0..3)
        .map(|i| seal(&scratch.join(format!("sector{i}")), 100 + i, &mut rng))
        .collect();

    let mut rows = Vec::new();
    for kind in &kinds {
        let row = match kind {
            Kind::Porep => porep(engine, &sectors[0], runs),
            Kind::Snap => snap(engine, &sectors[1], &scratch, runs),
            Kind::Winning => winning(engine, &sectors[0], runs),
            Kind::Window => window(engine, &sectors, runs),
        };
        rows.push(row);
    }

    println!();
    println!(
        "{:<8} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>7}",
        "kind", "parts", "domain", "load ms", "inputs ms", "engine ms", "verify ms", "cuzk ms", "fil-prf ms", "speedup"
    );
    for r in &rows {
        let rep = &r.cuzk.report;
        println!(
            "{:<8} {:>5} {:>9} {:>10.0} {:>10.1} {:>10.0} {:>10.1} {:>11.0} {:>11.0} {:>6.1}x",
            r.kind,
            rep.partitions,
            rep.domain_size,
            ms(r.cold_load),
            ms(rep.circuits),
            ms(rep.proving),
            ms(rep.verify),
            ms(rep.total),
            ms(r.fil),
            r.fil.as_secs_f64() / rep.total.as_secs_f64()
        );
    }
    println!(
        "\ncuzk ms: the best of {runs} runs (parameters already loaded); load ms: the first run's \
         parameter load; engine ms: synthesis and proving on the engine (circuits built as each \
         synthesis starts). fil-prf ms: filecoin-proofs' own call, best of {runs}."
    );
}

struct Row {
    kind: &'static str,
    cuzk: Output,
    cold_load: Duration,
    fil: Duration,
}

/// Runs `cuzk` and `fil` `runs` times each; keeps cuzk's fastest output and the first load.
fn measure(
    kind: &'static str,
    runs: usize,
    mut cuzk: impl FnMut() -> Output,
    mut fil: impl FnMut() -> Vec<u8>,
    check: impl Fn(&[u8]) -> bool,
) -> Row {
    let mut best: Option<Output> = None;
    let mut cold_load = Duration::ZERO;
    for i in 0..runs {
        let out = cuzk();
        if !check(&out.proof) {
            fail(&format!("{kind}: cuzk's proof does not verify with filecoin-proofs"));
        }
        if i == 0 {
            cold_load = out.report.params_load;
        }
        eprintln!("{kind}: cuzk run {i}: {:?}", out.report);
        if best.as_ref().map_or(true, |b| out.report.total < b.report.total) {
            best = Some(out);
        }
    }
    let mut fil_best = Duration::MAX;
    for i in 0..runs {
        let t = Instant::now();
        let proof = fil();
        let d = t.elapsed();
        if !check(&proof) {
            fail(&format!("{kind}: filecoin-proofs' proof does not verify"));
        }
        eprintln!("{kind}: filecoin-proofs run {i}: {:.1} ms", ms(d));
        fil_best = fil_best.min(d);
    }
    Row {
        kind,
        cuzk: best.expect("runs >= 1"),
        cold_load,
        fil: fil_best,
    }
}

fn prover_id() -> [u8; 32] {
    filecoin::prover_id_from_miner_id(MINER)
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e:#}")))
}

// --- parameters ---------------------------------------------------------------------------

/// Generates the TEST parameters of `kind` with filecoin-proofs' generator when missing.
fn ensure_params(kind: ParamsKind) {
    let path = ok("parameter path", filecoin::parameter_path(kind));
    // filecoin-proofs writes the file in place: one without our marker may be the remains of
    // an interrupted generation, so it is made again.
    let done = path.with_extension("params.complete");
    if path.exists() && done.exists() {
        return;
    }
    let _ = std::fs::remove_file(&path);
    log::info!(
        "generating TEST parameters {} with filecoin-proofs (once) ...",
        path.display()
    );
    let start = Instant::now();
    let mut rng = rand::rngs::OsRng;
    let r = match kind {
        ParamsKind::Seal(p) => {
            let pp = ok(
                "public params",
                filecoin_proofs::parameters::public_params::<Tree>(&p.as_v1_config()),
            );
            <storage_proofs_porep::stacked::StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
                '_,
                _,
                storage_proofs_porep::stacked::StackedCircuit<Tree, filecoin_proofs::DefaultPieceHasher>,
            >>::groth_params(Some(&mut rng), &pp)
            .map(drop)
        }
        ParamsKind::PoSt(p) => {
            let config = p.as_v1_config();
            let pp = ok(
                "public params",
                match config.typ {
                    filecoin_proofs::PoStType::Winning => {
                        filecoin_proofs::parameters::winning_post_public_params::<Tree>(&config)
                    }
                    filecoin_proofs::PoStType::Window => {
                        filecoin_proofs::parameters::window_post_public_params::<Tree>(&config)
                    }
                },
            );
            <storage_proofs_post::fallback::FallbackPoStCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_post::fallback::FallbackPoStCircuit<Tree>,
            >>::groth_params(Some(&mut rng), &pp)
            .map(drop)
        }
        ParamsKind::Update(p) => {
            let pp = storage_proofs_update::PublicParams::from_sector_size(u64::from(p.sector_size()));
            <storage_proofs_update::EmptySectorUpdateCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_update::EmptySectorUpdateCircuit<Tree>,
            >>::groth_params(Some(&mut rng), &pp)
            .map(drop)
        }
    };
    ok("parameter generation", r);
    ok("marker", std::fs::write(&done, b""));
    log::info!("parameters generated in {:.1} s", start.elapsed().as_secs_f64());
}

// --- sectors ------------------------------------------------------------------------------

struct Sealed {
    cache: PathBuf,
    replica: PathBuf,
    sector_id: u64,
    ticket: [u8; 32],
    pieces: Vec<PieceInfo>,
    pc2: SealPreCommitPhase2Output,
}

fn stage(dir: &Path, data: &[u8]) -> (PathBuf, PieceInfo) {
    let staged = dir.join("staged");
    let mut target = ok(
        "staged file",
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&staged),
    );
    let size = UnpaddedBytesAmount(data.len() as u64);
    let (piece, _) = ok(
        "add_piece",
        api_seal::add_piece(SEAL, Cursor::new(data), &mut target, size, &[]),
    );
    (staged, piece)
}

fn seal(dir: &Path, sector_id: u64, rng: &mut impl Rng) -> Sealed {
    let cache = dir.join("cache");
    ok("scratch", std::fs::create_dir_all(&cache));
    let replica = dir.join("sealed");
    ok("sealed file", File::create(&replica));
    let data: Vec<u8> = (0..2032).map(|_| rng.gen()).collect();
    let (staged, piece) = stage(dir, &data);
    let ticket: [u8; 32] = rng.gen();
    let pieces = vec![piece];
    let pc1 = ok(
        "pre-commit 1",
        api_seal::seal_pre_commit_phase1(
            SEAL,
            &cache,
            &staged,
            &replica,
            prover_id(),
            SectorId::from(sector_id),
            ticket,
            &pieces,
        ),
    );
    let pc2 = ok("pre-commit 2", api_seal::seal_pre_commit_phase2(pc1, &cache, &replica));
    Sealed {
        cache,
        replica,
        sector_id,
        ticket,
        pieces,
        pc2,
    }
}

// --- the four kinds -----------------------------------------------------------------------

fn porep(engine: &Engine, s: &Sealed, runs: usize) -> Row {
    ensure_params(ParamsKind::Seal(SEAL));
    let seed = [4u8; 32];
    let pc2 = SealPreCommitPhase2Output {
        registered_proof: s.pc2.registered_proof,
        comm_r: s.pc2.comm_r,
        comm_d: s.pc2.comm_d,
    };
    let c1 = ok(
        "commit 1",
        api_seal::seal_commit_phase1(
            &s.cache,
            &s.replica,
            prover_id(),
            SectorId::from(s.sector_id),
            s.ticket,
            seed,
            pc2,
            &s.pieces,
        ),
    );
    let json = ok("JSON", serde_json::to_vec(&c1));
    measure(
        "porep",
        runs,
        || {
            ok(
                "cuzk C2",
                filecoin::submit_seal_commit_phase2(&json, prover_id(), s.sector_id, Options::default().on(engine))
                    .and_then(ProofJob::wait),
            )
        },
        || {
            ok(
                "filecoin-proofs C2",
                api_seal::seal_commit_phase2(c1.clone(), prover_id(), SectorId::from(s.sector_id)),
            )
            .proof
        },
        |proof| {
            api_seal::verify_seal(
                SEAL,
                s.pc2.comm_r,
                s.pc2.comm_d,
                prover_id(),
                SectorId::from(s.sector_id),
                s.ticket,
                seed,
                proof,
            )
            .unwrap_or(false)
        },
    )
}

fn snap(engine: &Engine, key: &Sealed, scratch: &Path, runs: usize) -> Row {
    ensure_params(ParamsKind::Update(UPDATE));
    let dir = scratch.join("update");
    let new_cache = dir.join("cache");
    ok("scratch", std::fs::create_dir_all(&new_cache));
    let new_replica = dir.join("updated");
    let f = ok("updated file", File::create(&new_replica));
    ok(
        "updated file",
        f.set_len(ok("sealed file", std::fs::metadata(&key.replica)).len()),
    );
    drop(f);
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([2; 32]);
    let data: Vec<u8> = (0..2032).map(|_| rng.gen()).collect();
    let (staged, piece) = stage(&dir, &data);
    let enc = ok(
        "encode_into",
        api_update::empty_sector_update_encode_into(
            UPDATE,
            &new_replica,
            &new_cache,
            &key.replica,
            &key.cache,
            &staged,
            &[piece],
        ),
    );
    let old = key.pc2.comm_r;
    let vanilla = ok(
        "partition proofs",
        api_update::generate_partition_proofs(
            UPDATE,
            old,
            enc.comm_r_new,
            enc.comm_d_new,
            &key.replica,
            &key.cache,
            &new_replica,
            &new_cache,
        ),
    );
    let bytes: Vec<Vec<u8>> = vanilla.iter().map(|p| p.0.clone()).collect();
    measure(
        "snap",
        runs,
        || {
            ok(
                "cuzk SnapDeals",
                filecoin::submit_empty_sector_update_proof_with_vanilla(
                    UPDATE,
                    &bytes,
                    old,
                    enc.comm_r_new,
                    enc.comm_d_new,
                    Options::default().on(engine),
                )
                .and_then(ProofJob::wait),
            )
        },
        || {
            ok(
                "filecoin-proofs SnapDeals",
                api_update::generate_empty_sector_update_proof_with_vanilla(
                    UPDATE,
                    vanilla.clone(),
                    old,
                    enc.comm_r_new,
                    enc.comm_d_new,
                ),
            )
            .0
        },
        |proof| {
            api_update::verify_empty_sector_update_proof(UPDATE, proof, old, enc.comm_r_new, enc.comm_d_new)
                .unwrap_or(false)
        },
    )
}

fn vanilla_proofs(
    typ: RegisteredPoStProof,
    randomness: &[u8; 32],
    sectors: &[&Sealed],
) -> (Vec<Vec<u8>>, BTreeMap<SectorId, PublicReplicaInfo>) {
    let ids: Vec<SectorId> = sectors.iter().map(|s| SectorId::from(s.sector_id)).collect();
    let challenges = ok(
        "challenges",
        api_post::generate_fallback_sector_challenges(typ, randomness, &ids, prover_id()),
    );
    let mut vanilla = Vec::new();
    let mut public = BTreeMap::new();
    for s in sectors {
        let id = SectorId::from(s.sector_id);
        let private = PrivateReplicaInfo::new(typ, s.pc2.comm_r, s.cache.clone(), s.replica.clone());
        vanilla.push(ok(
            "vanilla proof",
            api_post::generate_single_vanilla_proof(typ, id, &private, &challenges[&id]),
        ));
        public.insert(id, PublicReplicaInfo::new(typ, s.pc2.comm_r));
    }
    (vanilla, public)
}

fn winning(engine: &Engine, s: &Sealed, runs: usize) -> Row {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [3u8; 32];
    let (vanilla, public) = vanilla_proofs(WINNING, &randomness, &[s]);
    measure(
        "winning",
        runs,
        || {
            ok(
                "cuzk Winning PoSt",
                filecoin::submit_winning_post_with_vanilla(
                    WINNING,
                    &randomness,
                    prover_id(),
                    &vanilla,
                    Options::default().on(engine),
                )
                .and_then(ProofJob::wait),
            )
        },
        || {
            let mut out = ok(
                "filecoin-proofs Winning PoSt",
                api_post::generate_winning_post_with_vanilla(WINNING, &randomness, prover_id(), &vanilla),
            );
            out.remove(0).1
        },
        |proof| api_post::verify_winning_post(&randomness, proof, &public, prover_id()).unwrap_or(false),
    )
}

fn window(engine: &Engine, sectors: &[Sealed], runs: usize) -> Row {
    ensure_params(ParamsKind::PoSt(WINDOW));
    let randomness = [11u8; 32];
    let refs: Vec<&Sealed> = sectors.iter().collect();
    let (vanilla, public) = vanilla_proofs(WINDOW, &randomness, &refs);
    measure(
        "window",
        runs,
        || {
            ok(
                "cuzk Window PoSt",
                filecoin::submit_window_post_with_vanilla(
                    WINDOW,
                    &randomness,
                    prover_id(),
                    &vanilla,
                    Options::default().on(engine),
                )
                .and_then(ProofJob::wait),
            )
        },
        || {
            let mut out = ok(
                "filecoin-proofs Window PoSt",
                api_post::generate_window_post_with_vanilla(WINDOW, &randomness, prover_id(), &vanilla),
            );
            out.remove(0).1
        },
        |proof| api_post::verify_window_post(&randomness, &[(WINDOW, proof)], &public, prover_id()).unwrap_or(false),
    )
}
