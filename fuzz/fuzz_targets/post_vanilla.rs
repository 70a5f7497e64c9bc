//! Window and Winning PoSt from vanilla proofs (bincode `FallbackPoStSectorProof`s): refused
//! with an error, never a panic (no parameters exist here). Byte 0 picks the proof type,
//! byte 1 the call (and a partition index); the rest is cut into vanilla proofs.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("common_filecoin.rs");

fuzz_target!(|data: &[u8]| {
    no_parameters();
    let [t, call, rest @ ..] = data else { return };
    // The 15 abi.RegisteredPoStProof numbers, as the front doors decode them.
    let proof_type = cuzk::filecoin::post_proof_from_abi(u64::from(*t) % 15).expect("0..=14 are registered");
    let vanilla = pieces(rest);
    let randomness = [3u8; 32];
    let prover_id = [0u8; 32];
    use cuzk::filecoin as f;
    expect_refused(match call % 3 {
        0 => f::generate_winning_post_with_vanilla(proof_type, &randomness, prover_id, &vanilla),
        1 => f::generate_window_post_with_vanilla(proof_type, &randomness, prover_id, &vanilla),
        _ => f::generate_single_partition_window_post_with_vanilla(
            proof_type,
            &randomness,
            prover_id,
            &vanilla,
            usize::from(call / 3),
        ),
    });
});
