//! The native witness generators in the prover: Winning and Window PoSt, PoRep C2 and
//! SnapDeals of real 2 KiB sectors through `cuzk::filecoin` on engines of the test's own, checked by
//! filecoin-proofs' verifiers. Per engine: the first proof records the compiled circuit (full synthesis), the
//! first partition after it validates the generator against the gadgets, and from then
//! on the partitions' witnesses are generated (`WitnessStats::generated`) — the same bytes as
//! with generators off, with the same r and s. A wrong generator (a test hook) is caught at
//! validation and turned off; a proof that fails verification turns the generator off too.
//!
//! Run: `cargo test --release --features filecoin --test filecoin_native` (and `-- --ignored`
//! for PoRep C2 and SnapDeals, which need their 2 KiB parameters).

#![cfg(feature = "filecoin")]

use cuzk::engine::{Engine, EngineConfig};
use cuzk::filecoin::{self, Options, ParamsKind, RegisteredPoStProof};
use cuzk::WitnessStats;
use filecoin_proofs_api::post as api_post;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[path = "common/filecoin.rs"]
mod fixtures;
use fixtures::*;

/// An engine of the test's own, the witness path on and native generators `native`.
fn engine(native: bool) -> Engine {
    Engine::new(EngineConfig {
        witness_path: true,
        native_witness: native,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// A PoSt of `ty` (Winning or Window) on `engine` with r and s from `seed`, verified by
/// filecoin-proofs; its bytes.
fn prove(engine: &Engine, ty: RegisteredPoStProof, randomness: &[u8; 32], seed: Option<[u8; 32]>) -> Vec<u8> {
    let mut rng = seed.map(ChaCha20Rng::from_seed);
    let options = match &mut rng {
        Some(rng) => Options::default().on(engine).with_rng(rng),
        None => Options::default().on(engine),
    };
    if ty == WINNING {
        let (vanilla, public) = winning_vanilla(randomness);
        let out = filecoin::submit_winning_post_with_vanilla(ty, randomness, prover_id(), &vanilla, options)
            .unwrap()
            .wait()
            .expect("a verified Winning PoSt");
        assert!(api_post::verify_winning_post(randomness, &out.proof, &public, prover_id()).unwrap());
        out.proof
    } else {
        let (vanilla, public) = window_vanilla(randomness);
        let out = filecoin::submit_window_post_with_vanilla(ty, randomness, prover_id(), &vanilla, options)
            .unwrap()
            .wait()
            .expect("a verified Window PoSt");
        assert!(api_post::verify_window_post(randomness, &[(ty, &out.proof)], &public, prover_id()).unwrap());
        out.proof
    }
}

/// Three proofs with generators on (`prove(engine, seed)`, a verified proof's bytes):
/// recorded, validated, generated; all the bytes of the proof with generators off, with the
/// same r and s.
fn generated_route(what: &str, partitions: u64, prove: impl Fn(&Engine, Option<[u8; 32]>) -> Vec<u8>) {
    let seed = [22u8; 32];
    let off = engine(false);
    let expected = prove(&off, Some(seed));
    let off_stats = off.stats().witness;
    assert_eq!(
        (off_stats.generated, off_stats.generator_validated),
        (0, 0),
        "{what}: generators off: {off_stats:?}"
    );

    let on = engine(true);
    assert_eq!(prove(&on, Some(seed)), expected, "{what}: the recording proof");
    let first = on.stats().witness;
    // One partition records; the job's others are synthesized in full meanwhile, or by the
    // gadgets once it is recorded (the first of those validating the generator).
    assert_eq!(
        (first.recorded, first.generated, first.generator_refused),
        (1, 0, 0),
        "{first:?}"
    );
    assert_eq!(first.full + first.witness, partitions, "{what}: {first:?}");
    assert_eq!(
        first.generator_validated,
        u64::from(first.witness > 0),
        "{what}: {first:?}"
    );
    assert_eq!(prove(&on, Some(seed)), expected, "{what}: the validating proof");
    let second = on.stats().witness;
    assert_eq!(
        (second.generator_validated, second.generator_refused, second.full),
        (1, 0, first.full),
        "{what}: validated once: {second:?}"
    );
    // The validating partition went by the gadgets; the others by the generator when the
    // validation ended before they started, else by the gadgets.
    assert_eq!(
        second.witness + second.generated - first.witness,
        partitions,
        "{what}: every partition of the second proof on the witness path: {second:?}"
    );
    assert_eq!(prove(&on, Some(seed)), expected, "{what}: the generated proof");
    let third = on.stats().witness;
    assert_eq!(
        third,
        WitnessStats {
            generated: second.generated + partitions,
            ..second
        },
        "{what}: every partition of the third proof generated"
    );
    assert_eq!(on.stats().verification_retries, 0);
}

fn post_route(ty: RegisteredPoStProof, partitions: u64) {
    ensure_params(ParamsKind::PoSt(ty));
    let randomness = [21u8; 32];
    generated_route(&format!("{ty:?}"), partitions, |engine, seed| {
        prove(engine, ty, &randomness, seed)
    });
}

#[test]
fn winning_post_witnesses_are_generated_after_validation_with_the_same_bytes() {
    post_route(WINNING, 1);
}

#[test]
fn window_post_witnesses_are_generated_after_validation_with_the_same_bytes() {
    post_route(WINDOW, 2);
}

/// PoRep C2 of a sealed 2 KiB sector (one partition): the generator of
/// `filecoin::native::porep` through `seal_commit_phase2`, each proof verified by
/// filecoin-proofs' `verify_seal`. Ignored by default: the 2 KiB PoRep parameters take ~12
/// minutes to make on two cores and its four CPU proofs ~2.5 more (run with `--ignored` on the
/// GPU machine, or where `CUZK_FILECOIN_TMP` holds the parameters already).
#[test]
#[ignore]
fn c2_witnesses_are_generated_after_validation_with_the_same_bytes() {
    ensure_params(ParamsKind::Seal(SEAL));
    let s = &sectors()[0];
    let seed = [6u8; 32];
    let json = c1_json(s, seed);
    generated_route("PoRep C2", 1, |engine, rng_seed| {
        let mut rng = rng_seed.map(ChaCha20Rng::from_seed);
        let options = match &mut rng {
            Some(rng) => Options::default().on(engine).with_rng(rng),
            None => Options::default().on(engine),
        };
        let out = filecoin::submit_seal_commit_phase2(&json, prover_id(), s.sector_id, options)
            .unwrap()
            .wait()
            .expect("a verified C2");
        assert!(verify_seal(s, s.pc2.comm_r, seed, &out.proof));
        out.proof
    });
}

/// SnapDeals of a 2 KiB sector (one partition): the generator of `filecoin::native::update`
/// through `submit_empty_sector_update_proof_with_vanilla`, each proof verified by
/// filecoin-proofs. Ignored by default, as C2: its 2 KiB parameters take tens of minutes on two
/// cores.
#[test]
#[ignore]
fn update_witnesses_are_generated_after_validation_with_the_same_bytes() {
    ensure_params(ParamsKind::Update(UPDATE));
    let (vanilla, [comm_r_old, comm_r_new, comm_d_new]) = update_vanilla(&sectors()[1], "native-route");
    generated_route("SnapDeals", 1, |engine, rng_seed| {
        let mut rng = rng_seed.map(ChaCha20Rng::from_seed);
        let options = match &mut rng {
            Some(rng) => Options::default().on(engine).with_rng(rng),
            None => Options::default().on(engine),
        };
        let out = filecoin::submit_empty_sector_update_proof_with_vanilla(
            UPDATE, &vanilla, comm_r_old, comm_r_new, comm_d_new, options,
        )
        .unwrap()
        .wait()
        .expect("a verified SnapDeals proof");
        assert!(filecoin_proofs_api::update::verify_empty_sector_update_proof(
            UPDATE, &out.proof, comm_r_old, comm_r_new, comm_d_new
        )
        .unwrap());
        out.proof
    });
}

/// A generator whose witness is one value off (the counts right, so only the comparison with
/// the gadgets can tell) is refused at validation, counted, and off for the compiled circuit:
/// every proof is still right, and no partition is generated after.
#[test]
fn a_wrong_generator_is_caught_at_validation_and_turned_off() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [23u8; 32];
    let on = engine(true);
    prove(&on, WINNING, &randomness, None);
    filecoin::skew_next_native_witness(&on);
    prove(&on, WINNING, &randomness, None);
    let stats = on.stats().witness;
    assert_eq!(
        (stats.generator_refused, stats.generator_validated, stats.generated),
        (1, 0, 0),
        "{stats:?}"
    );
    prove(&on, WINNING, &randomness, None);
    let after = on.stats().witness;
    assert_eq!(
        after,
        WitnessStats {
            witness: stats.witness + 1,
            ..stats
        },
        "the refused generator is not tried again"
    );
    assert_eq!(on.stats().verification_retries, 0);
}

/// A proof that fails verification (here a wrong compiled circuit, put in the engine's cache
/// by a test hook) is proved again by full synthesis and turns the generator of its type and
/// shape off until restart: the compiled circuit recorded again is used by the gadgets only.
#[test]
fn a_failed_verification_turns_the_generator_off() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [24u8; 32];
    let on = engine(true);
    filecoin::skew_next_compiled_circuit(&on);
    prove(&on, WINNING, &randomness, None);
    assert_eq!(on.stats().verification_retries, 1);
    prove(&on, WINNING, &randomness, None); // records again
    let recorded = on.stats().witness;
    assert_eq!(recorded.recorded, 1, "{recorded:?}");
    prove(&on, WINNING, &randomness, None);
    prove(&on, WINNING, &randomness, None);
    let after = on.stats().witness;
    assert_eq!(
        after,
        WitnessStats {
            witness: recorded.witness + 2,
            ..recorded
        },
        "the generator stays off: {after:?}"
    );
    assert_eq!(after.generated, 0, "{after:?}");
    assert_eq!(on.stats().verification_retries, 1);
}

/// With a compiled-circuit directory, the validation of cuzk's own generator is kept beside the
/// circuit's file: a second engine over the directory (a restart of the same build) generates
/// its first Winning PoSt at once, no gadget synthesis; a record made by another build is not
/// trusted (the generator is validated again, and that build's record added).
#[test]
fn a_generator_validation_is_kept_across_restarts_of_the_same_build() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let (dir, engine) = engines_over("validations", true);
    let randomness = [31u8; 32];
    let counts = |w: WitnessStats| {
        (
            w.recorded,
            w.witness,
            w.generated,
            w.generator_validated,
            w.generator_validations_read,
        )
    };
    // The one `.validated` file of the directory.
    let validated = || {
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "validated"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    };
    let records = || -> Vec<String> {
        std::fs::read_to_string(validated())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };

    let first = engine();
    prove(&first, WINNING, &randomness, None); // records the circuit
    prove(&first, WINNING, &randomness, None); // validates the generator
    assert_eq!(counts(first.stats().witness), (1, 1, 0, 1, 0));
    drop(first);
    let kept = records();
    assert_eq!(kept.len(), 1, "{kept:?}");

    let restarted = engine();
    prove(&restarted, WINNING, &randomness, None);
    assert_eq!(
        counts(restarted.stats().witness),
        (0, 0, 1, 0, 1),
        "read, not validated again"
    );
    drop(restarted);
    assert_eq!(records(), kept, "nothing added");

    // Another build's record only: validated again by the gadgets, and this build's added.
    let other = kept[0].replacen(" cuzk-", " cuzk-another-build-", 1);
    assert_ne!(other, kept[0]);
    std::fs::write(validated(), format!("{other}\n")).unwrap();
    let rebuilt = engine();
    prove(&rebuilt, WINNING, &randomness, None);
    assert_eq!(counts(rebuilt.stats().witness), (0, 1, 0, 1, 0));
    assert_eq!(records(), vec![other, kept[0].clone()]);
    std::fs::remove_dir_all(&dir).unwrap();
}
