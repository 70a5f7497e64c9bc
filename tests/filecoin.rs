//! Filecoin proofs through cuzk, checked by filecoin-proofs' own verifiers: 2 KiB sectors are
//! sealed with filecoin-proofs (through filecoin-proofs-api, as filecoin-ffi calls it), their
//! vanilla proofs made there, the SNARKs made by `cuzk::filecoin` (on its process-wide engine,
//! or on an engine of the test's), and the bytes verified with `verify_seal`,
//! `verify_empty_sector_update_proof`, `verify_window_post` (also over single partitions merged
//! as filecoin-proofs merges them) and `verify_winning_post`.
//!
//! Both of the prover's paths: PoRep C2, SnapDeals, Window and Winning PoSt are each proved
//! twice with the same r and s on an engine of the test's own, the first by full synthesis
//! (recording the compiled circuit), the second by the witness path (the engine's counters
//! say so), and both give the same bytes — bellperson's, for the circuits filecoin-proofs
//! builds.
//!
//! Parameters: filecoin-proofs' parameter cache in `<target>/tmp/filecoin-proof-parameters`
//! (unless `FIL_PROOFS_PARAMETER_CACHE` is set), filled on first use by filecoin-proofs' own
//! generator (`CompoundProof::groth_params` with an rng) — test parameters, never for
//! production. Later runs (and later CI steps of one run) reuse them.
//!
//! Run: `cargo test --release --features filecoin,fault-injection --test filecoin` (PoSt and
//! the argument checks; `fault-injection` for the test of a wrong compiled circuit);
//! `-- --ignored` adds PoRep C2 and SnapDeals, whose 2 KiB circuits (millions of constraints,
//! SHA-256 inside) take tens of minutes to make parameters for on 2 cores.

#![cfg(feature = "filecoin")]

use std::path::Path;
use std::sync::Mutex;

use blstrs::Scalar;
use cuzk::engine::{Engine, EngineBackend, EngineConfig, PacerMode};
use cuzk::filecoin::{self, CommitmentKind, Options, ParamsKind, RegisteredPoStProof};
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::{Backend, Commitments, Timings};
use cuzk::{
    Circuit, CompiledCircuit, ConstraintSystem, Error, HeapAllocator, Parameters, ProvingAssignment, WitnessCs,
    WitnessStats,
};
use ff::Field;
use filecoin_proofs_api::PublicReplicaInfo;
use filecoin_proofs_api::{post as api_post, update as api_update};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The sector bench's SnapDeals partitions, checked against filecoin-proofs' own below.
#[allow(dead_code)]
#[path = "../examples/sector_bench/snap.rs"]
mod sector_bench_snap;

#[path = "common/filecoin.rs"]
mod fixtures;
use fixtures::*;

#[path = "common/post.rs"]
mod post_fixtures;

/// r then s for `n` proofs, as cuzk draws them from the same rng.
fn r_and_s(seed: [u8; 32], n: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut rng = ChaCha20Rng::from_seed(seed);
    let r = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    (r, s)
}

fn bellperson_bytes(proofs: &[bellperson::groth16::Proof<blstrs::Bls12>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in proofs {
        p.write(&mut out).unwrap();
    }
    out
}

/// bellperson's proof bytes for `circuits` (one per partition, in order) with the parameters
/// at `params` and r, s drawn as cuzk draws them from an rng seeded with `seed`.
fn bellperson_batch_bytes<C: Circuit<Scalar> + Send>(circuits: Vec<C>, params: &Path, seed: [u8; 32]) -> Vec<u8> {
    let (r, s) = r_and_s(seed, circuits.len());
    let groth = storage_proofs_core::parameter_cache::read_cached_params(params).unwrap();
    bellperson_bytes(&bellperson::groth16::create_proof_batch(circuits, &groth, r, s).unwrap())
}

// ---------------------------------------------------------------------------------------------
// Both paths: full synthesis, then the witness path

/// An engine of the test's own with the witness path on (whatever `CUZK_WITNESS_PATH` says)
/// and native witness generators off:
/// nothing is compiled on it yet, and its counters count this test's partitions alone (the
/// process-wide engine's count those of every test running at the same time).
fn fresh_engine() -> Engine {
    Engine::new(EngineConfig {
        witness_path: true,
        // The witness path's own routes: native generators (tests/filecoin_native.rs) off.
        native_witness: false,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// Makes the same proof twice on `engine` (fresh: [`fresh_engine`]), `submit` called with r
/// and s drawn from an rng seeded with `seed` both times: the first by full synthesis (one
/// partition records the compiled circuit; the job's others are synthesized in full meanwhile,
/// or witness-only once it is recorded), the second with every partition witness-only. The
/// engine's counters must say so: a silent fallback to full synthesis fails here. Returns
/// (first, second).
fn prove_by_both_paths(
    what: &str,
    engine: &Engine,
    seed: [u8; 32],
    submit: impl Fn(Options<'_>) -> cuzk::Result<filecoin::ProofJob>,
) -> (filecoin::Output, filecoin::Output) {
    let prove = || {
        let mut rng = ChaCha20Rng::from_seed(seed);
        submit(Options::default().on(engine).with_rng(&mut rng))
            .unwrap()
            .wait()
            .unwrap()
    };
    assert_eq!(
        engine.stats().witness,
        WitnessStats::default(),
        "{what}: a fresh engine"
    );
    let first = prove();
    let n = first.report.partitions as u64;
    let full = engine.stats().witness;
    assert_eq!(
        (full.recorded, full.full + full.witness, full.fallbacks),
        (1, n, 0),
        "{what}: the first proof did not record its circuit once and prove its {n} partitions: {full:?}"
    );
    assert!(full.full >= 1, "{what}: nothing synthesized in full: {full:?}");
    assert_eq!((full.recording_failures, full.compiled_refused), (0, 0), "{full:?}");
    let second = prove();
    let witness = engine.stats().witness;
    assert_eq!(
        witness,
        WitnessStats {
            witness: full.witness + n,
            ..full
        },
        "{what}: the second proof's {n} partitions did not all take the witness path"
    );
    eprintln!(
        "{what}: first {:?}; second (witness path) {:?}",
        first.report, second.report
    );
    (first, second)
}

// ---------------------------------------------------------------------------------------------
// Winning PoSt

/// The inputs of this Winning PoSt for the Go package's test (examples/go,
/// `CUZK_FILECOIN_FIXTURES=<target>/tmp/filecoin-fixtures`).
fn write_go_fixture(randomness: &[u8; 32], vanilla: &[Vec<u8>]) {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let cache = std::env::var("FIL_PROOFS_PARAMETER_CACHE").expect("set by init()");
    let fixture = serde_json::json!({
        "proof_type": 0,
        "miner": MINER,
        "randomness": hex(randomness),
        "vanilla": vanilla.iter().map(|v| hex(v)).collect::<Vec<_>>(),
        "param_cache": cache,
    });
    let dir = tmp_root().join("filecoin-fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("winning.json"), serde_json::to_vec_pretty(&fixture).unwrap()).unwrap();
}

#[test]
fn winning_post_verifies_with_filecoin_proofs_and_rejects_other_randomness() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [3u8; 32];
    let (vanilla, public) = winning_vanilla(&randomness);
    let out =
        filecoin::submit_winning_post_with_vanilla(WINNING, &randomness, prover_id(), &vanilla, Options::default())
            .unwrap()
            .wait()
            .unwrap();
    eprintln!("winning PoSt: {:?}", out.report);
    assert_eq!(out.report.priority, filecoin::PRIORITY_WINNING_POST);
    assert_eq!(out.proof.len(), 192);
    assert!(api_post::verify_winning_post(&randomness, &out.proof, &public, prover_id()).unwrap());
    write_go_fixture(&randomness, &vanilla);
    // Under other randomness, or for another sector's comm_r, the same bytes do not verify.
    // (The prover id only picks which sectors are challenged; with one sector it changes
    // nothing, so filecoin-proofs accepts this proof for any miner.)
    let mut other = randomness;
    other[0] ^= 1;
    assert!(!api_post::verify_winning_post(&other, &out.proof, &public, prover_id()).unwrap_or(false));
    let mut wrong = public.clone();
    for info in wrong.values_mut() {
        *info = PublicReplicaInfo::new(WINNING, sectors()[1].comm_r());
    }
    assert!(!api_post::verify_winning_post(&randomness, &out.proof, &wrong, prover_id()).unwrap_or(false));
}

/// A Winning PoSt of `vanilla` proved on `engine`, verified by filecoin-proofs.
fn winning_verified_on(
    engine: &Engine,
    randomness: &[u8; 32],
    vanilla: &[Vec<u8>],
    public: &std::collections::BTreeMap<filecoin_proofs_api::SectorId, PublicReplicaInfo>,
) {
    let out = filecoin::submit_winning_post_with_vanilla(
        WINNING,
        randomness,
        prover_id(),
        vanilla,
        Options::default().on(engine),
    )
    .unwrap()
    .wait()
    .expect("a verified proof");
    assert!(api_post::verify_winning_post(randomness, &out.proof, public, prover_id()).unwrap());
}

/// A wrong compiled circuit (here put in the engine's cache by a test hook: one constraint off,
/// the structure unchanged, so witnesses are accepted and the witness path makes wrong proofs)
/// costs one retry by full synthesis, counted, and is dropped: the job still returns a proof
/// filecoin-proofs verifies, and the next proofs (recording the circuit again, then by the
/// witness path) are right. Before, the job failed, and so would every later one of its type.
/// (The hook is the `fault-injection` feature's.)
#[cfg(feature = "fault-injection")]
#[test]
fn a_wrong_compiled_circuit_costs_one_retry_by_full_synthesis_and_is_dropped() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [5u8; 32];
    let (vanilla, public) = winning_vanilla(&randomness);
    let engine = fresh_engine();
    let prove = || winning_verified_on(&engine, &randomness, &vanilla, &public);
    filecoin::skew_next_compiled_circuit(&engine);
    prove();
    let stats = engine.stats();
    assert_eq!(stats.verification_retries, 1, "{stats:#?}");
    assert_eq!(
        stats.witness.witness, 1,
        "the wrong circuit's witness path: {:?}",
        stats.witness
    );
    assert_eq!(stats.compiled_circuits, 0, "the wrong circuit dropped");
    prove();
    let stats = engine.stats();
    assert_eq!(
        (stats.witness.recorded, stats.compiled_circuits),
        (1, 1),
        "{:?}",
        stats.witness
    );
    prove();
    let stats = engine.stats();
    assert_eq!(
        stats.witness.witness, 2,
        "the circuit recorded again: {:?}",
        stats.witness
    );
    assert_eq!(stats.verification_retries, 1, "no retry after");
}

/// filecoin-proofs' PoSt circuits for these vanilla proofs, one per partition, built as its
/// `generate_winning_post_with_vanilla` / `generate_window_post_with_vanilla` build them.
fn post_circuits(
    ty: RegisteredPoStProof,
    randomness: &[u8; 32],
    vanilla: &[Vec<u8>],
) -> Vec<storage_proofs_post::fallback::FallbackPoStCircuit<Tree>> {
    let p = post_fixtures::Partitions::<Tree>::of_bytes(&ty.as_v1_config(), randomness, &prover_id(), vanilla);
    (0..p.proofs.len()).map(|k| p.circuit(k)).collect()
}

/// A Winning PoSt by both paths on an engine of the test's own (the first records, the second
/// takes the witness path, counted), with the same r and s: both are bellperson's bytes for
/// the circuit filecoin-proofs builds.
#[test]
fn winning_post_bytes_equal_bellpersons_with_the_same_r_and_s() {
    let path = ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [5u8; 32];
    let (vanilla, _) = winning_vanilla(&randomness);
    let seed = [9u8; 32];
    let engine = fresh_engine();
    let (full, witness) = prove_by_both_paths("Winning PoSt", &engine, seed, |options| {
        filecoin::submit_winning_post_with_vanilla(WINNING, &randomness, prover_id(), &vanilla, options)
    });
    let expected = bellperson_batch_bytes(post_circuits(WINNING, &randomness, &vanilla), &path, seed);
    assert_eq!(full.proof, expected, "full synthesis' bytes differ from bellperson's");
    assert_eq!(
        witness.proof, expected,
        "the witness path's bytes differ from bellperson's"
    );
}

/// With `params_on_device`, the first proof keeps its set on the engine's GPU and the
/// parameter cache then holds it without its host copy; proofs before and after verify. An
/// engine on the CPU cannot keep it: the host copy stays, and the proofs are the same. The set
/// is evicted at the end, so the next test loads it from its file again (the cache is
/// process-wide: on the GPU these tests run one at a time).
#[test]
fn parameters_kept_on_the_device_prove_and_leave_the_host() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [6u8; 32];
    let (vanilla, public) = winning_vanilla(&randomness);
    let engine = Engine::new(EngineConfig {
        params_on_device: true,
        ..EngineConfig::default()
    })
    .unwrap();
    let on_gpu = engine.devices().iter().all(Option::is_some);
    for round in 0..2 {
        winning_verified_on(&engine, &randomness, &vanilla, &public);
        // The engine's own view: the cache is process-wide, and other tests' engines use it.
        let stats = engine.stats();
        // On the CPU a second set may come: another test's engine that keeps the set on its
        // "device" takes the host copy out of the cache, and the next load reads the file.
        assert!(stats.params_sets == 1 || !on_gpu, "{stats:#?}");
        assert_eq!(
            stats.params_host_bytes == 0,
            on_gpu,
            "round {round}: a GPU keeps the set without its host copy, the CPU cannot: {stats:#?}"
        );
    }
    assert!(filecoin::evict_parameters(ParamsKind::PoSt(WINNING), Some(&engine))
        .unwrap()
        .is_some());
    assert_eq!(engine.stats().params_sets, 0);
}

/// A backend that keeps parameter sets as a GPU does ([`Backend::keep_resident`]): it holds a
/// host clone of each set it keeps (its "device memory") and proves on the CPU with it, so a
/// set without its host copy proves here and on no other backend. Proofs wait while `held`.
#[derive(Default)]
struct KeeperBackend {
    kept: Mutex<std::collections::HashMap<u64, Parameters>>,
    evicted: std::sync::atomic::AtomicUsize,
    held: Mutex<bool>,
    cv: std::sync::Condvar,
}

impl KeeperBackend {
    fn kept(&self) -> usize {
        self.kept.lock().unwrap().len()
    }

    fn hold(&self, held: bool) {
        *self.held.lock().unwrap() = held;
        self.cv.notify_all();
    }
}

impl Backend for KeeperBackend {
    fn name(&self) -> &'static str {
        "keeper-cpu"
    }

    fn keep_resident(&self, params: &Parameters) -> cuzk::Result<()> {
        self.kept.lock().unwrap().insert(params.id(), params.clone());
        Ok(())
    }

    fn evict_params(&self, id: u64) {
        if self.kept.lock().unwrap().remove(&id).is_some() {
            self.evicted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        let held = self.held.lock().unwrap();
        let (held, _) = self
            .cv
            .wait_timeout_while(held, std::time::Duration::from_secs(120), |held| *held)
            .unwrap();
        drop(held);
        if params.has_host_copy() {
            return CpuBackend.commitments(a, params, t);
        }
        let kept = self.kept.lock().unwrap().get(&params.id()).cloned();
        let kept = kept.ok_or_else(|| Error::InvalidArgument(format!("set {} is not kept here", params.id())))?;
        CpuBackend.commitments(a, &kept, t)
    }
}

/// An engine proving on a [`KeeperBackend`] with `params_on_device`, after its first Winning
/// PoSt (of `randomness`, whose vanilla proofs and public replicas it returns too) kept the set
/// on the backend.
fn keeping_engine(
    randomness: &[u8; 32],
) -> (
    std::sync::Arc<KeeperBackend>,
    Engine,
    Vec<Vec<u8>>,
    std::collections::BTreeMap<filecoin_proofs_api::SectorId, PublicReplicaInfo>,
) {
    ensure_params(ParamsKind::PoSt(WINNING));
    let (vanilla, public) = winning_vanilla(randomness);
    let keeper = std::sync::Arc::new(KeeperBackend::default());
    let engine = Engine::new(EngineConfig {
        params_on_device: true,
        synthesis_workers: 1,
        backends: vec![EngineBackend::Custom(keeper.clone())],
        pool_allocator: Some(Box::new(HeapAllocator)),
        ..EngineConfig::default()
    })
    .unwrap();
    winning_verified_on(&engine, randomness, &vanilla, &public);
    assert_eq!(keeper.kept(), 1, "the first proof keeps the set on the backend");
    assert_eq!(engine.stats().params_host_bytes, 0, "held without its host copy");
    (keeper, engine, vanilla, public)
}

/// A set one engine keeps on its GPUs without the host copy is that engine's alone: another
/// engine (the CPU here, as a per-call engine of the C ABI would be) proving the same kind
/// gets the set with its host copy, and the keeping engine goes on with its own, never
/// uploading twice. Evicting with the keeping engine frees its "device" copy.
#[test]
fn a_set_kept_on_one_engines_gpus_is_that_engines_alone() {
    let randomness = [8u8; 32];
    let (keeper, keeping, vanilla, public) = keeping_engine(&randomness);
    let other = fresh_engine();
    winning_verified_on(&other, &randomness, &vanilla, &public);
    assert!(
        other.stats().params_host_bytes > 0,
        "the other engine proves with the host copy"
    );

    winning_verified_on(&keeping, &randomness, &vanilla, &public);
    assert_eq!(keeper.kept(), 1, "kept once");
    let stats = keeping.stats();
    assert_eq!((stats.params_sets, stats.params_host_bytes), (1, 0), "{stats:#?}");

    // Evicting with the other engine forgets the host copy and leaves the kept set alone.
    filecoin::evict_parameters(ParamsKind::PoSt(WINNING), Some(&other)).unwrap();
    assert_eq!(other.stats().params_sets, 0);
    assert_eq!(keeper.kept(), 1, "the keeping engine's set stays");
    let freed = filecoin::evict_parameters(ParamsKind::PoSt(WINNING), Some(&keeping)).unwrap();
    assert!(freed.is_some_and(|b| b > 0), "{freed:?}");
    assert_eq!(keeper.kept(), 0, "evicted from the backend");
    assert_eq!(keeping.stats().params_sets, 0);
}

/// Evicting a set kept on the GPUs while a proof holds it: the proof finishes and verifies,
/// then the set leaves the backend (it does not stay on the device for good).
#[test]
fn a_kept_set_evicted_while_a_proof_holds_it_leaves_the_device_when_the_proof_ends() {
    let randomness = [10u8; 32];
    let (keeper, engine, vanilla, public) = keeping_engine(&randomness);
    keeper.hold(true);
    let job = filecoin::submit_winning_post_with_vanilla(
        WINNING,
        &randomness,
        prover_id(),
        &vanilla,
        Options::default().on(&engine),
    )
    .unwrap();
    filecoin::evict_parameters(ParamsKind::PoSt(WINNING), Some(&engine)).unwrap();
    assert_eq!(keeper.kept(), 1, "in use: still on the device");
    assert_eq!(engine.stats().params_sets, 1);
    keeper.hold(false);
    let out = job.wait().expect("the proof in flight finishes");
    assert!(api_post::verify_winning_post(&randomness, &out.proof, &public, prover_id()).unwrap());
    assert_eq!(keeper.kept(), 0, "its last proof ended: evicted");
    assert_eq!(keeper.evicted.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(engine.stats().params_sets, 0);
}

/// A benchmark's parameters (`install_unchecked_parameters`): random ones, installed for a kind
/// that has no file here (Winning PoSt of 8 MiB sectors), prove random vanilla proofs and the
/// bytes are handed out unchecked — a checked set would fail the job after one retry, for no
/// proof over random parameters and an unsatisfied circuit verifies. Evicted, the kind's next
/// proof looks for its file again and fails naming it.
#[test]
fn unchecked_parameters_serve_their_kind_unverified_until_evicted() {
    type T = filecoin_proofs::SectorShape8MiB;
    init();
    let proof_type = RegisteredPoStProof::StackedDrgWinning8MiBV1;
    let kind = ParamsKind::PoSt(proof_type);
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let randomness = [9u8; 32];
    let config = proof_type.as_v1_config();
    let proofs = post_fixtures::verifying_sector_proofs::<T>(&config, &randomness, 0, &[3], &mut rng);
    let circuit = post_fixtures::Partitions::<T>::new(&config, &randomness, &prover_id(), &proofs).circuit(0);
    let random = cuzk::testing::random_parameters(circuit, 8).unwrap();
    let id = random.id();
    filecoin::install_unchecked_parameters(kind, random).unwrap();
    assert_eq!(filecoin::loaded_parameters(kind).unwrap().map(|p| p.id()), Some(id));
    let vanilla = post_fixtures::vanilla_bytes(&proofs);
    let engine = fresh_engine();
    let submit = || {
        filecoin::submit_winning_post_with_vanilla(
            proof_type,
            &randomness,
            prover_id(),
            &vanilla,
            Options::default().on(&engine),
        )
        .and_then(|job| job.wait())
    };
    let out = submit().expect("the unchecked set's bytes");
    assert_eq!(out.proof.len(), 192);
    assert_eq!(engine.stats().verification_retries, 0, "not checked, so not retried");
    assert!(filecoin::evict_parameters(kind, Some(&engine)).unwrap().is_some());
    assert_eq!(filecoin::loaded_parameters(kind).unwrap().map(|p| p.id()), None);
    let path = filecoin::parameter_path(kind).unwrap();
    match submit() {
        Err(Error::FilecoinParams { path: named, .. }) => assert_eq!(named, path),
        other => panic!("the file looked for again: {other:?}"),
    }
}

/// With a compiled-circuit directory (`CUZK_FILECOIN_COMPILED_DIR`, the daemon's
/// `--compiled-dir`), the first engine records the circuit and saves it; a second engine over
/// the same directory (a restart) proves its first Winning PoSt on the witness path with the
/// circuit read from the file, nothing recorded, and the proof verifies.
#[test]
fn a_compiled_circuit_directory_outlives_the_engine() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [7u8; 32];
    let (vanilla, public) = winning_vanilla(&randomness);
    let (dir, engine) = engines_over("compiled-dir", false);
    let prove = |engine: &Engine| winning_verified_on(engine, &randomness, &vanilla, &public);
    let first = engine();
    prove(&first);
    let w = first.stats().witness;
    assert_eq!((w.recorded, w.witness), (1, 0), "{w:?}");
    drop(first);
    let saved = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(saved, 1, "one circuit file in {}", dir.display());
    let restarted = engine();
    prove(&restarted);
    let w = restarted.stats().witness;
    assert_eq!((w.recorded, w.witness, w.full), (0, 1, 0), "read from the file: {w:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn winning_post_refuses_a_window_proof_type_and_garbage() {
    init();
    let err = filecoin::generate_winning_post_with_vanilla(WINDOW, &[1; 32], prover_id(), &[vec![0u8; 8]]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let err =
        filecoin::generate_winning_post_with_vanilla(WINNING, &[1; 32], prover_id(), &[vec![1u8; 8]]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("bincode")),
        "{err}"
    );
    let err = filecoin::generate_winning_post_with_vanilla(WINNING, &[1; 32], prover_id(), &[]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Window PoSt

#[test]
fn window_post_of_three_sectors_in_two_partitions_verifies_with_filecoin_proofs() {
    ensure_params(ParamsKind::PoSt(WINDOW));
    let randomness = [11u8; 32];
    let (vanilla, public) = window_vanilla(&randomness);
    let out = filecoin::submit_window_post_with_vanilla(WINDOW, &randomness, prover_id(), &vanilla, Options::default())
        .unwrap()
        .wait()
        .unwrap();
    eprintln!("window PoSt: {:?}", out.report);
    assert_eq!(out.report.partitions, 2, "2 sectors per 2 KiB partition");
    assert_eq!(out.report.priority, filecoin::PRIORITY_WINDOW_POST);
    assert_eq!(out.proof.len(), 2 * 192);
    assert!(api_post::verify_window_post(&randomness, &[(WINDOW, &out.proof)], &public, prover_id()).unwrap());

    // Partition order matters: swapped partitions do not verify.
    let mut swapped = out.proof[192..].to_vec();
    swapped.extend_from_slice(&out.proof[..192]);
    assert!(!api_post::verify_window_post(&randomness, &[(WINDOW, &swapped)], &public, prover_id()).unwrap_or(false));
    // Nor under other randomness.
    let other = [12u8; 32];
    assert!(!api_post::verify_window_post(&other, &[(WINDOW, &out.proof)], &public, prover_id()).unwrap_or(false));
}

/// A Window PoSt of the three sectors (two partitions of one circuit type and shape) by both
/// paths on an engine of the test's own, with the same r and s: both are bellperson's bytes
/// for the circuits filecoin-proofs builds, and the second proof's two partitions both took
/// the witness path (counted).
#[test]
fn window_post_bytes_equal_bellpersons_with_the_same_r_and_s() {
    let path = ensure_params(ParamsKind::PoSt(WINDOW));
    let randomness = [15u8; 32];
    let (vanilla, public) = window_vanilla(&randomness);
    let seed = [16u8; 32];
    let engine = fresh_engine();
    let (full, witness) = prove_by_both_paths("Window PoSt", &engine, seed, |options| {
        filecoin::submit_window_post_with_vanilla(WINDOW, &randomness, prover_id(), &vanilla, options)
    });
    assert_eq!(full.report.partitions, 2);
    let circuits = post_circuits(WINDOW, &randomness, &vanilla);
    assert_eq!(circuits.len(), 2, "filecoin-proofs' partitions");
    let expected = bellperson_batch_bytes(circuits, &path, seed);
    assert_eq!(full.proof, expected, "full synthesis' bytes differ from bellperson's");
    assert_eq!(
        witness.proof, expected,
        "the witness path's bytes differ from bellperson's"
    );
    assert!(api_post::verify_window_post(&randomness, &[(WINDOW, &witness.proof)], &public, prover_id()).unwrap());
}

/// Curio's GenerateSinglePartitionWindowPoStWithVanilla: each partition proved on its own from
/// its sectors' vanilla proofs only (partition 1 is the third sector alone), the partition
/// proofs merged as filecoin-proofs merges them, the result verified by `verify_window_post`.
#[test]
fn single_partition_window_posts_merge_into_a_window_post_filecoin_proofs_verifies() {
    ensure_params(ParamsKind::PoSt(WINDOW));
    let randomness = [13u8; 32];
    let (vanilla, public) = window_vanilla(&randomness);
    let per_partition = WINDOW.as_v1_config().sector_count;
    assert_eq!(per_partition, 2);
    // Submitted together from two threads: both in flight on the engine at once.
    let partitions: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = vanilla
            .chunks(per_partition)
            .enumerate()
            .map(|(k, chunk)| {
                let randomness = &randomness;
                scope.spawn(move || {
                    filecoin::generate_single_partition_window_post_with_vanilla(
                        WINDOW,
                        randomness,
                        prover_id(),
                        chunk,
                        k,
                    )
                    .unwrap()
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    assert!(partitions.iter().all(|p| p.len() == 192));
    let merged = api_post::merge_window_post_partition_proofs(
        WINDOW,
        partitions
            .iter()
            .cloned()
            .map(filecoin_proofs_api::PartitionSnarkProof)
            .collect(),
    )
    .unwrap();
    assert!(api_post::verify_window_post(&randomness, &[(WINDOW, &merged)], &public, prover_id()).unwrap());
    // In the wrong order they are not a Window PoSt.
    let mut swapped = partitions[1].clone();
    swapped.extend_from_slice(&partitions[0]);
    assert!(!api_post::verify_window_post(&randomness, &[(WINDOW, &swapped)], &public, prover_id()).unwrap_or(false));

    // Partition 0's sectors given as partition 1: checked as partition 1 before it is returned
    // (a 2 KiB V1_2 challenge does not depend on the index, so it proves, and is the same
    // circuit); more sectors than a partition holds, or a Winning type, are refused.
    let err =
        filecoin::generate_single_partition_window_post_with_vanilla(WINDOW, &randomness, prover_id(), &vanilla, 0)
            .unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("at most 2 sectors")),
        "{err}"
    );
    let err = filecoin::generate_single_partition_window_post_with_vanilla(
        WINNING,
        &randomness,
        prover_id(),
        &vanilla[..1],
        0,
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let err = filecoin::generate_single_partition_window_post_with_vanilla(
        WINDOW,
        &randomness,
        prover_id(),
        &vanilla[..1],
        filecoin::MAX_PARTITIONS_PER_DEADLINE,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("partition index")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Jobs: submit, progress, cancel, on an engine of the test's

#[test]
fn a_submitted_winning_post_can_be_watched_cancelled_and_proved() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [17u8; 32];
    let (vanilla, public) = winning_vanilla(&randomness);
    let gate = std::sync::Arc::new(KeeperBackend::default());
    gate.hold(true);
    let engine = Engine::new(EngineConfig {
        synthesis_workers: 1,
        pacer: PacerMode::BoundedQueue { depth: 4 },
        backends: vec![EngineBackend::Custom(gate.clone())],
        pool_allocator: Some(Box::new(HeapAllocator)),
        ..EngineConfig::default()
    })
    .unwrap();
    let submit = |priority: Option<i32>| {
        let options = Options {
            priority,
            ..Options::default().on(&engine)
        };
        filecoin::submit_winning_post_with_vanilla(WINNING, &randomness, prover_id(), &vanilla, options).unwrap()
    };
    // Held on the gated GPU: running, nothing done; cancelled, its wait says so.
    let job = submit(None);
    assert_eq!(
        (job.kind(), job.priority()),
        (filecoin::ProofKind::WinningPoSt, filecoin::PRIORITY_WINNING_POST)
    );
    let p = job.progress();
    assert_eq!((p.done, p.total, p.finished), (0, 1, false));
    assert!(job.cancel());
    gate.hold(false);
    let err = job.wait().unwrap_err();
    assert!(matches!(err, Error::Cancelled(_)), "{err}");
    // Submitted again, at a priority of the caller's: proved and verified.
    let job = submit(Some(7));
    let out = job.wait().unwrap();
    assert_eq!(out.report.priority, 7);
    assert_eq!(out.report.backend, "keeper-cpu");
    assert!(api_post::verify_winning_post(&randomness, &out.proof, &public, prover_id()).unwrap());
    let stats = engine.stats();
    assert_eq!((stats.jobs_done, stats.jobs_failed), (1, 1), "{stats:#?}");
}

// ---------------------------------------------------------------------------------------------
// Jobs through the C ABI: progress by callback

/// One progress callback call: job id, done, failed, total, finished.
type Call = (u64, u64, u64, u64, bool);

/// What a registered callback records: its calls, and those that came after the job's handle
/// was freed (there must be none).
#[derive(Default)]
struct Calls {
    calls: Mutex<Vec<Call>>,
    freed: std::sync::atomic::AtomicBool,
    after_free: std::sync::atomic::AtomicUsize,
}

impl Calls {
    fn user_data(&self) -> *mut std::ffi::c_void {
        self as *const Self as *mut std::ffi::c_void
    }

    fn taken(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

/// Records a call in the [`Calls`] behind `user_data`.
unsafe extern "C" fn record(
    user_data: *mut std::ffi::c_void,
    job: u64,
    done: u64,
    failed: u64,
    total: u64,
    finished: bool,
) {
    use std::sync::atomic::Ordering::SeqCst;
    // SAFETY: the test passes a live `Calls` that outlives the job's engine.
    let calls = unsafe { &*(user_data as *const Calls) };
    if calls.freed.load(SeqCst) {
        calls.after_free.fetch_add(1, SeqCst);
    }
    calls.calls.lock().unwrap().push((job, done, failed, total, finished));
}

/// Runs an entry point with an error out-parameter: its status and message (freed).
fn abi_call(f: impl FnOnce(*mut *mut std::ffi::c_char) -> cuzk::ffi::cuzk_status) -> (cuzk::ffi::cuzk_status, String) {
    let mut err = std::ptr::null_mut();
    let status = f(&mut err);
    let msg = if err.is_null() {
        String::new()
    } else {
        // SAFETY: a message from the library, freed once.
        let m = unsafe { std::ffi::CStr::from_ptr(err) }.to_string_lossy().into_owned();
        unsafe { cuzk::ffi::cuzk_string_free(err) };
        m
    };
    (status, msg)
}

fn abi_ok(f: impl FnOnce(*mut *mut std::ffi::c_char) -> cuzk::ffi::cuzk_status) {
    let (status, msg) = abi_call(f);
    assert_eq!(status, cuzk::ffi::cuzk_status::Ok, "{msg}");
}

/// A Window PoSt of the three sectors (two partitions) submitted through the C ABI on a CPU
/// engine made there: its callback counts both partitions up to one final call with
/// `done == total`, a late registration gets that final call at once, a NULL callback silences
/// it, and after `cuzk_filecoin_job_free` it is never called, not even when the partition the
/// engine was proving ends.
#[test]
fn a_filecoin_job_through_the_c_abi_reports_its_progress_by_callback() {
    use cuzk::ffi::cuzk_status;
    use cuzk::ffi::engine::*;
    use cuzk::ffi::filecoin::*;
    use cuzk::ffi::filecoin_job::*;
    use std::ptr::{null, null_mut};
    use std::sync::atomic::Ordering::SeqCst;

    ensure_params(ParamsKind::PoSt(WINDOW));
    let randomness = [19u8; 32];
    let (vanilla, public) = window_vanilla(&randomness);
    let slices: Vec<cuzk_byte_slice> = vanilla
        .iter()
        .map(|v| cuzk_byte_slice {
            data: v.as_ptr(),
            len: v.len(),
        })
        .collect();
    let window_abi = 10; // abi.RegisteredPoStProof StackedDrgWindow2KiBV1_2
    let mut config = cuzk_engine_config_default();
    config.backend = cuzk::ffi::prover::CUZK_BACKEND_CPU;
    config.memory = cuzk::ffi::pool::CUZK_POOL_MEMORY_HEAP;
    config.synthesis_workers = 1;
    let mut engine = null_mut();
    abi_ok(|e| unsafe { cuzk_engine_new(&config, &mut engine, e) });
    let submit = || {
        let mut job = null_mut();
        abi_ok(|e| unsafe {
            cuzk_filecoin_submit_window_post(
                engine,
                CUZK_PRIORITY_DEFAULT,
                window_abi,
                randomness.as_ptr(),
                prover_id().as_ptr(),
                slices.as_ptr(),
                slices.len(),
                &mut job,
                e,
            )
        });
        job
    };
    let stats = || {
        let mut s = cuzk_engine_statistics::default();
        abi_ok(|e| unsafe { cuzk_engine_stats(engine, &mut s, e) });
        s
    };
    let wait = |job: *mut cuzk_filecoin_job| {
        let mut out = cuzk_bytes {
            data: null_mut(),
            len: 0,
        };
        abi_ok(|e| unsafe { cuzk_filecoin_job_wait(job, &mut out, e) });
        // SAFETY: `len` bytes from the library, copied before they are freed.
        let proof = unsafe { std::slice::from_raw_parts(out.data, out.len) }.to_vec();
        unsafe { cuzk_bytes_free(out) };
        proof
    };

    // Registered right after the submission: both partitions, then the end.
    let calls = Calls::default();
    let job = submit();
    abi_ok(|e| unsafe { cuzk_filecoin_job_on_progress(job, Some(record), calls.user_data(), e) });
    let proof = wait(job);
    assert!(api_post::verify_window_post(&randomness, &[(WINDOW, &proof)], &public, prover_id()).unwrap());
    let got = calls.taken();
    let last = *got.last().expect("at least the final call");
    assert_eq!((last.1, last.2, last.3, last.4), (2, 0, 2, true), "{got:?}");
    assert_eq!(got.iter().filter(|c| c.4).count(), 1, "one final call: {got:?}");
    assert!(got.iter().all(|c| c.0 == last.0 && c.3 == 2), "{got:?}");
    assert!(
        got.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].2 <= w[1].2),
        "done and failed never decrease: {got:?}"
    );
    // Registered after the wait: one call, now, with the final counts.
    let late = Calls::default();
    abi_ok(|e| unsafe { cuzk_filecoin_job_on_progress(job, Some(record), late.user_data(), e) });
    assert_eq!(late.taken(), [last]);
    unsafe { cuzk_filecoin_job_free(job) };

    // Replaced by NULL before any partition is proved: never called.
    let quiet = Calls::default();
    let job = submit();
    abi_ok(|e| unsafe { cuzk_filecoin_job_on_progress(job, Some(record), quiet.user_data(), e) });
    abi_ok(|e| unsafe { cuzk_filecoin_job_on_progress(job, None, quiet.user_data(), e) });
    wait(job);
    unsafe { cuzk_filecoin_job_free(job) };
    assert!(quiet.taken().is_empty(), "{:?}", quiet.taken());

    // Freed while a partition is on the engine's GPU worker: the job ends when that proof
    // does, after the free, and its callback is not called then.
    let freed = Calls::default();
    let job = submit();
    abi_ok(|e| unsafe { cuzk_filecoin_job_on_progress(job, Some(record), freed.user_data(), e) });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while stats().on_gpu == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no partition went to the GPU worker"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    unsafe { cuzk_filecoin_job_free(job) };
    freed.freed.store(true, SeqCst);
    while stats().jobs_active > 0 {
        assert!(std::time::Instant::now() < deadline, "the freed job never ended");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        freed.after_free.load(SeqCst),
        0,
        "called after the free: {:?}",
        freed.taken()
    );
    assert!(freed.taken().iter().all(|c| !c.4), "{:?}", freed.taken());

    // A NULL job is refused with a status.
    let (status, msg) =
        abi_call(|e| unsafe { cuzk_filecoin_job_on_progress(null(), Some(record), quiet.user_data(), e) });
    assert_eq!(status, cuzk_status::NullArgument, "{msg}");
    assert!(msg.contains("job"), "{msg}");
    unsafe { cuzk_engine_free(engine) };
}

// ---------------------------------------------------------------------------------------------
// Commitment CIDs (Curio's GenerateUpdateProofWithVanilla takes cid.Cid)

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `commcid.ReplicaCommitmentV1ToCID(comm).Bytes()`.
fn sealed_cid(comm: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [1, 0xf102, 0xb401, 32] {
        varint(&mut out, v);
    }
    out.extend_from_slice(comm);
    out
}

/// `commcid.DataCommitmentV1ToCID(comm).Bytes()`.
fn unsealed_cid(comm: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [1, 0xf101, 0x1012, 32] {
        varint(&mut out, v);
    }
    out.extend_from_slice(comm);
    out
}

#[test]
fn update_proofs_take_commitment_cids_and_refuse_others_by_name() {
    init();
    let comm = [5u8; 32];
    assert_eq!(
        filecoin::commitment_from_cid(&sealed_cid(&comm), CommitmentKind::Sealed, "sealed").unwrap(),
        comm
    );
    assert_eq!(
        filecoin::commitment_from_cid(&unsealed_cid(&comm), CommitmentKind::Unsealed, "unsealed").unwrap(),
        comm
    );
    let (sealed, unsealed) = (sealed_cid(&comm), unsealed_cid(&comm));
    // Good CIDs reach the next check (no vanilla proofs for a one-partition update).
    let err = filecoin::generate_update_proof_with_vanilla(UPDATE, &sealed, &sealed, &unsealed, &[]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("has 1 update partitions")),
        "{err}"
    );
    // Each CID in the wrong place, or malformed, is refused naming it and the problem.
    type Case<'a> = (&'a [u8], &'a [u8], &'a [u8], &'a str);
    let cases: [Case; 4] = [
        (
            &unsealed,
            &sealed,
            &unsealed,
            "key (the sector key's CommR): not a Sealed commitment CID: codec 0xf101",
        ),
        (
            &sealed,
            &unsealed,
            &unsealed,
            "sealed (the new CommR): not a Sealed commitment CID: codec 0xf101",
        ),
        (
            &sealed,
            &sealed,
            &sealed,
            "unsealed (the new CommD): not a Unsealed commitment CID: codec 0xf102",
        ),
        (
            &sealed,
            &sealed[..10],
            &unsealed,
            "sealed (the new CommR): not a Sealed commitment CID: the digest is truncated",
        ),
    ];
    for (key, new_sealed, new_unsealed, want) in cases {
        let err = filecoin::generate_update_proof_with_vanilla(UPDATE, key, new_sealed, new_unsealed, &[]).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains(want)),
            "{want}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// SnapDeals

/// The sector bench's SnapDeals partition (`examples/sector_bench/snap.rs`: the circuit built
/// from `PublicParams::from_sector_size`, its witness fabricated) is filecoin-proofs' own
/// circuit, structurally: at 2 KiB both recorded have the same constraints, inputs, aux,
/// structure trace and compiled fingerprint (identical A, B, C and densities), and the real
/// circuit's compiled form accepts the fabricated witness. Seconds: no parameters.
#[test]
fn sector_bench_snap_partition_has_the_matrices_of_filecoin_proofs_own() {
    let (vanilla, commitments) = update_vanilla(&sectors()[1], "update-shape");
    let mut real = update_circuits(&vanilla, commitments);
    assert_eq!(real.len(), 1, "a 2 KiB sector has one partition");
    let (_, real) = CompiledCircuit::record(real.remove(0), None, None).unwrap();
    let sector_bytes = u64::from(UPDATE.as_v1_config().sector_size);
    let fabricated = sector_bench_snap::SnapCircuit::fabricate(sector_bytes, 0, 7).unwrap();
    let (_, compiled) = CompiledCircuit::record(fabricated.clone(), None, None).unwrap();
    let sizes = |c: &CompiledCircuit| (c.circuit_constraints(), c.num_inputs(), c.num_aux());
    assert_eq!(sizes(&compiled), sizes(&real));
    assert_eq!(compiled.structure_hash(), real.structure_hash());
    assert_eq!(
        compiled.fingerprint(),
        real.fingerprint(),
        "the same sizes, other matrices"
    );
    // The witness path's view: the fabricated witness, under the real circuit's type name.
    let mut cs = WitnessCs::new().without_generator();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    fabricated.synthesize(&mut cs).unwrap();
    real.check(&cs.finish(real.circuit_type()).unwrap()).unwrap();
}

/// SnapDeals by both paths on an engine of the test's own (the first proof records, the
/// second takes the witness path, counted), with the same r and s: the same bytes, which are
/// bellperson's for the circuit filecoin-proofs builds and which filecoin-proofs verifies; from
/// Curio's CIDs, the same bytes again.
///
/// The 2 KiB SnapDeals circuit has ten SHA-256 TreeD paths (~1.6 M constraints): generating
/// its test parameters takes tens of minutes on CI's 2 cores. Run on the GPU machine (16
/// cores): `cargo test --release --features cuda,filecoin --test filecoin -- --ignored`.
#[test]
#[ignore]
fn snap_deals_update_verifies_with_filecoin_proofs_and_rejects_another_comm_r() {
    let path = ensure_params(ParamsKind::Update(UPDATE));
    let (vanilla, commitments) = update_vanilla(&sectors()[1], "update");
    let [comm_r_old, comm_r_new, comm_d_new] = commitments;
    let seed = [22; 32];
    let engine = fresh_engine();
    let (out, witness) = prove_by_both_paths("SnapDeals", &engine, seed, |options| {
        filecoin::submit_empty_sector_update_proof_with_vanilla(
            UPDATE, &vanilla, comm_r_old, comm_r_new, comm_d_new, options,
        )
    });
    assert_eq!(
        witness.proof, out.proof,
        "the witness path's bytes differ from full synthesis'"
    );
    let expected = bellperson_batch_bytes(update_circuits(&vanilla, commitments), &path, seed);
    assert_eq!(out.proof, expected, "cuzk's bytes differ from bellperson's");
    // From Curio's CIDs (cid.Cid.Bytes()), with the same r and s: the same bytes (the witness
    // path again).
    let before = engine.stats().witness;
    let mut rng = ChaCha20Rng::from_seed(seed);
    let from_cids = filecoin::submit_update_proof_with_vanilla(
        UPDATE,
        &sealed_cid(&comm_r_old),
        &sealed_cid(&comm_r_new),
        &unsealed_cid(&comm_d_new),
        &vanilla,
        Options::default().on(&engine).with_rng(&mut rng),
    )
    .unwrap()
    .wait()
    .unwrap();
    let after = engine.stats().witness;
    // By the gadgets, or by the native generator once it is validated.
    assert_eq!(
        after.witness + after.generated,
        before.witness + before.generated + vanilla.len() as u64,
        "{after:?}"
    );
    assert_eq!(from_cids.proof, out.proof);
    assert_eq!(out.proof.len(), vanilla.len() * 192);
    assert!(
        api_update::verify_empty_sector_update_proof(UPDATE, &out.proof, comm_r_old, comm_r_new, comm_d_new).unwrap()
    );
    // Another sector's comm_r as the old one: rejected.
    let wrong = sectors()[2].comm_r();
    assert!(
        !api_update::verify_empty_sector_update_proof(UPDATE, &out.proof, wrong, comm_r_new, comm_d_new)
            .unwrap_or(false)
    );
    // The wrong number of partition proofs is refused before any proving.
    let err = filecoin::generate_empty_sector_update_proof_with_vanilla(
        UPDATE,
        &vanilla[..0],
        comm_r_old,
        comm_r_new,
        comm_d_new,
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // A bit flipped in a partition's vanilla proof (near its start, its middle, its end): an
    // error, or a proof filecoin-proofs verifies (a flip the circuit does not read); never a
    // panic, never unverifiable bytes.
    for at in [9, vanilla[0].len() / 2, vanilla[0].len() - 3] {
        let mut flipped = vanilla.clone();
        flipped[0][at] ^= 0x04;
        let got = std::panic::catch_unwind(|| {
            filecoin::generate_empty_sector_update_proof_with_vanilla(
                UPDATE, &flipped, comm_r_old, comm_r_new, comm_d_new,
            )
        })
        .unwrap_or_else(|_| panic!("a bit flipped at byte {at} panicked"));
        match got {
            Ok(proof) => assert!(
                api_update::verify_empty_sector_update_proof(UPDATE, &proof, comm_r_old, comm_r_new, comm_d_new)
                    .unwrap(),
                "a bit flipped at byte {at}: a proof that does not verify"
            ),
            Err(e) => assert!(!e.to_string().is_empty(), "byte {at}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PoRep C2

#[test]
fn c2_refuses_another_sector_number_or_miner_and_bad_json_before_proving() {
    let s = &sectors()[0];
    let json = c1_json(s, [4; 32]);
    let err = filecoin::seal_commit_phase2(&json, prover_id(), s.sector_id + 1).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("replica id")),
        "{err}"
    );
    let other = filecoin::prover_id_from_miner_id(MINER + 1);
    let err = filecoin::seal_commit_phase2(&json, other, s.sector_id).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("replica id")),
        "{err}"
    );
    let err = filecoin::seal_commit_phase2(&json[..json.len() / 2], prover_id(), s.sector_id).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("JSON")),
        "{err}"
    );
    // A replica id at or above the scalar field's modulus (CI's fuzzer found that filecoin-
    // hashers' conversion panics on it): refused by name, not a panic through the caller.
    let mut value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    value["replica_id"] = serde_json::json!(vec![0xffu8; 32]);
    let err = filecoin::seal_commit_phase2(&serde_json::to_vec(&value).unwrap(), prover_id(), s.sector_id).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("replica id is not a BLS12-381 scalar")),
        "{err}"
    );
    // The right ids pass the check and reach the parameter lookup: without the 2 KiB PoRep
    // parameters (CI never makes them), the error names filecoin-proofs' file for them.
    let path = filecoin::parameter_path(ParamsKind::Seal(SEAL)).unwrap();
    let _guard = PARAMS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !path.exists() {
        let err = filecoin::seal_commit_phase2(&json, prover_id(), s.sector_id).unwrap_err();
        assert!(
            matches!(err, Error::FilecoinParams { path: ref p, .. } if *p == path),
            "{err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("stacked-proof-of-replication") && msg.contains("fetch"),
            "{msg}"
        );
    }
}

/// Needs the 2 KiB PoRep parameters (1.1 GB; generated here on first use: 45 min on the dev
/// machine's 2 shared cores) and proves one partition of a 2^22 domain per proof: too heavy
/// for CI's 2 cores. Run on the GPU machine:
/// `cargo test --release --features cuda,filecoin --test filecoin -- --ignored`.
#[test]
#[ignore]
fn c2_verifies_with_filecoin_proofs_and_rejects_another_seed_or_comm_r() {
    ensure_params(ParamsKind::Seal(SEAL));
    let s = &sectors()[0];
    let seed = [4u8; 32];
    let json = c1_json(s, seed);
    let out = filecoin::submit_seal_commit_phase2(&json, prover_id(), s.sector_id, Options::default())
        .unwrap()
        .wait()
        .unwrap();
    eprintln!("PoRep C2: {:?}", out.report);
    assert_eq!(out.proof.len(), usize::from(SEAL.partitions()) * 192);
    assert!(verify_seal(s, s.comm_r(), seed, &out.proof));
    assert!(!verify_seal(s, s.comm_r(), [5u8; 32], &out.proof), "another seed");
    assert!(
        !verify_seal(s, sectors()[1].comm_r(), seed, &out.proof),
        "another comm_r"
    );
}

/// PoRep C2 by both paths on an engine of the test's own (the first proof records, the second
/// takes the witness path, counted), with the same r and s: both are bellperson's bytes for
/// the circuit filecoin-proofs builds (and so verify). Needs the 2 KiB PoRep parameters, as
/// above.
#[test]
#[ignore]
fn c2_bytes_equal_bellpersons_with_the_same_r_and_s() {
    let path = ensure_params(ParamsKind::Seal(SEAL));
    let s = &sectors()[0];
    let seed = [6u8; 32];
    let json = c1_json(s, seed);
    let rng_seed = [8u8; 32];
    let engine = fresh_engine();
    let (full, witness) = prove_by_both_paths("PoRep C2", &engine, rng_seed, |options| {
        filecoin::submit_seal_commit_phase2(&json, prover_id(), s.sector_id, options)
    });

    // filecoin-proofs' circuits for the same C1 output, proved by bellperson with the same r, s.
    let c2 = C2Inputs::of_json(&json);
    let circuits: Vec<_> = (0..c2.vanilla.len()).map(|k| c2.circuit(k)).collect();
    let expected = bellperson_batch_bytes(circuits, &path, rng_seed);
    assert_eq!(full.proof, expected, "full synthesis' bytes differ from bellperson's");
    assert_eq!(
        witness.proof, expected,
        "the witness path's bytes differ from bellperson's"
    );
}
