//! The native witness generators in the prover: Winning and Window PoSt, PoRep C2 and
//! SnapDeals of real 2 KiB sectors through `cuzk::filecoin` on engines of the test's own, checked by
//! filecoin-proofs' verifiers. Per engine: the first proof records the compiled circuit (full synthesis), the
//! first partition after it validates the generator against the gadgets, and from then
//! on the partitions' witnesses are generated (`WitnessStats::generated`) — the same bytes as
//! with generators off, with the same r and s. Generators gone wrong (the `fault-injection`
//! feature's hooks): a wrong one is caught at validation and turned off; one that goes wrong
//! after its validation costs one retry by full synthesis and is turned off; a proof that fails
//! verification, where full synthesis' proof passes, turns the generator off too; a malformed
//! request, or one whose claim does not hold (no route's proof verifies), fails its job alone
//! and leaves the generator on. Kept validations are read across restarts of the same generators.
//!
//! Run: `cargo test --release --features filecoin,fault-injection --test filecoin_native` (and
//! `-- --ignored` for PoRep C2 and SnapDeals, which need their 2 KiB parameters).

#![cfg(feature = "filecoin")]

use cuzk::engine::{Engine, EngineConfig};
#[cfg(feature = "fault-injection")]
use cuzk::filecoin::NativeWitnessFault;
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
#[cfg(feature = "fault-injection")]
#[test]
fn a_wrong_generator_is_caught_at_validation_and_turned_off() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [23u8; 32];
    let on = engine(true);
    prove(&on, WINNING, &randomness, None);
    filecoin::fault_next_native_witness(&on, NativeWitnessFault::Skewed);
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
#[cfg(feature = "fault-injection")]
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

/// A generator that goes wrong after its validation (here its witness one value off from the
/// third proof on, the counts right: nothing before the proof can tell) makes a proof that
/// fails verification: the job still returns a proof filecoin-proofs verifies, made again by
/// full synthesis (one retry, counted), and the generator is off for its type and shape — the
/// compiled circuit, dropped with it, is recorded again and then used by the gadgets only.
#[cfg(feature = "fault-injection")]
#[test]
fn a_generator_gone_wrong_after_validation_costs_one_retry_and_is_turned_off() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [26u8; 32];
    let on = engine(true);
    prove(&on, WINNING, &randomness, None); // records
    prove(&on, WINNING, &randomness, None); // validates
    prove(&on, WINNING, &randomness, None); // generated
    let before = on.stats().witness;
    assert_eq!(
        (before.recorded, before.generator_validated, before.generated),
        (1, 1, 1),
        "{before:?}"
    );
    filecoin::fault_next_native_witness(&on, NativeWitnessFault::Skewed);
    prove(&on, WINNING, &randomness, None); // generated wrong: verified only after its retry
    let wrong = on.stats();
    assert_eq!(wrong.verification_retries, 1, "{wrong:#?}");
    assert_eq!(wrong.compiled_circuits, 0, "the compiled circuit dropped");
    assert_eq!(
        (wrong.witness.generated, wrong.witness.generator_refused),
        (2, 0),
        "the wrong witness was the generator's, used as validated: {:?}",
        wrong.witness
    );
    prove(&on, WINNING, &randomness, None); // records again
    prove(&on, WINNING, &randomness, None);
    let after = on.stats();
    assert_eq!(after.witness.recorded, 2, "{:?}", after.witness);
    assert_eq!(
        (after.witness.generated, after.witness.witness),
        (2, before.witness + 1),
        "the generator stays off, the gadgets write the witness: {:?}",
        after.witness
    );
    assert_eq!(after.verification_retries, 1, "no retry after");
}

/// A malformed request (the fault hook makes the partition's inputs what a malformed vanilla
/// proof makes them: the generator refuses them, the circuit cannot be built from them; or of
/// another shape than the compiled circuit's: the generator's witness one value short) fails its
/// job alone with the generator's error, counted as an input error: the generator stays on, the
/// type and shape on the witness path, and the next request is generated as before.
#[cfg(feature = "fault-injection")]
#[test]
fn a_malformed_request_fails_its_job_alone_and_the_generator_stays_on() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [25u8; 32];
    let on = engine(true);
    prove(&on, WINNING, &randomness, None); // records
    prove(&on, WINNING, &randomness, None); // validates
    let validated = on.stats().witness;
    assert_eq!(
        (validated.generator_validated, validated.generated),
        (1, 0),
        "{validated:?}"
    );
    let (vanilla, _) = winning_vanilla(&randomness);
    let fails = |fault| {
        filecoin::fault_next_native_witness(&on, fault);
        filecoin::submit_winning_post_with_vanilla(
            WINNING,
            &randomness,
            prover_id(),
            &vanilla,
            Options::default().on(&on),
        )
        .unwrap()
        .wait()
        .expect_err("a malformed request fails")
    };
    let malformed = fails(NativeWitnessFault::Malformed);
    assert!(
        matches!(&malformed, cuzk::Error::InvalidArgument(m) if m.contains("partition 0 is malformed")),
        "the generator's own error: {malformed}"
    );
    let short = fails(NativeWitnessFault::Short);
    assert!(
        matches!(&short, cuzk::Error::WitnessMismatch(m) if m.contains("another shape")),
        "the generator's witness does not fit: {short}"
    );
    let after = on.stats().witness;
    assert_eq!(
        after,
        WitnessStats {
            generator_input_errors: 2,
            ..validated
        },
        "counted as input errors, nothing turned off, no gadget run: {after:?}"
    );
    prove(&on, WINNING, &randomness, None);
    let next = on.stats().witness;
    assert_eq!(
        next,
        WitnessStats { generated: 1, ..after },
        "the generator stays on: {next:?}"
    );
    let stats = on.stats();
    assert_eq!((stats.jobs_failed, stats.verification_retries), (2, 0), "{stats:#?}");
}

/// A well-formed request whose own claim does not hold (the fault hook makes its public inputs
/// one off, as a C1 output whose vanilla proofs are not of its commitments makes them: nothing
/// checks those before C2) fails verification by every route: its job fails after one retry by
/// full synthesis, and the generator and the compiled circuit stay, the next request generated
/// as before. Before, the first failed verification turned the generator off for the process
/// and dropped the circuit: one bad C1 cost every later C2 its fast route.
#[cfg(feature = "fault-injection")]
#[test]
fn a_request_whose_claim_does_not_hold_fails_alone_and_the_fast_route_stays() {
    ensure_params(ParamsKind::PoSt(WINNING));
    let randomness = [27u8; 32];
    let on = engine(true);
    prove(&on, WINNING, &randomness, None); // records
    prove(&on, WINNING, &randomness, None); // validates
    prove(&on, WINNING, &randomness, None); // generated
    let before = on.stats();
    assert_eq!(
        (before.witness.generated, before.compiled_circuits),
        (1, 1),
        "{before:#?}"
    );
    filecoin::fault_next_native_witness(&on, NativeWitnessFault::Untrue);
    let (vanilla, _) = winning_vanilla(&randomness);
    let e = filecoin::submit_winning_post_with_vanilla(
        WINNING,
        &randomness,
        prover_id(),
        &vanilla,
        Options::default().on(&on),
    )
    .unwrap()
    .wait()
    .expect_err("a request whose claim does not hold fails");
    assert!(
        matches!(&e, cuzk::Error::Filecoin(m) if m.contains("also when proved again by full synthesis")),
        "{e}"
    );
    let failed = on.stats();
    assert_eq!(failed.verification_retries, 1, "one retry: {failed:#?}");
    assert_eq!(failed.compiled_circuits, 1, "the compiled circuit stays");
    assert_eq!(
        (failed.witness.generated, failed.witness.recorded),
        (2, 1),
        "its witness was the generator's: {:?}",
        failed.witness
    );
    prove(&on, WINNING, &randomness, None);
    let after = on.stats();
    assert_eq!(
        (after.witness.generated, after.witness.recorded),
        (3, 1),
        "the generator stays on, the circuit is not recorded again: {:?}",
        after.witness
    );
    assert_eq!(after.verification_retries, 1, "no retry after: {after:#?}");
}

/// With a compiled-circuit directory, the validation of cuzk's own generator is kept beside the
/// circuit's file, under the generators' digest: a second engine over the directory (a restart
/// with the same generators) generates its first Winning PoSt at once, no gadget synthesis; a
/// record made with other generators (another digest) is not trusted (the generator is
/// validated again, and this digest's record added).
#[test]
fn a_generator_validation_is_kept_across_restarts_of_the_same_generators() {
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

    // Other generators' record only: validated again by the gadgets, and this digest's added.
    let (fingerprint, digest) = kept[0].split_once(" generators-").expect("a fingerprint and a digest");
    assert_eq!(digest.len(), 32, "{}", kept[0]);
    let other = format!("{fingerprint} generators-{}", "0".repeat(32));
    assert_ne!(other, kept[0]);
    std::fs::write(validated(), format!("{other}\n")).unwrap();
    let rebuilt = engine();
    prove(&rebuilt, WINNING, &randomness, None);
    assert_eq!(counts(rebuilt.stats().witness), (0, 1, 0, 1, 0));
    assert_eq!(records(), vec![other, kept[0].clone()]);
    std::fs::remove_dir_all(&dir).unwrap();
}
