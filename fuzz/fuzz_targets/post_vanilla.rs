//! Window and Winning PoSt from vanilla proofs (bincode `FallbackPoStSectorProof`s): refused
//! with an error, never a panic (no parameters exist here). Byte 0 picks the proof type,
//! byte 1 the call (and a partition index); the rest is cut into vanilla proofs.
#![no_main]

use cuzk::filecoin::RegisteredPoStProof as P;
use libfuzzer_sys::fuzz_target;

include!("common_filecoin.rs");

const TYPES: [P; 15] = [
    P::StackedDrgWinning2KiBV1,
    P::StackedDrgWinning8MiBV1,
    P::StackedDrgWinning512MiBV1,
    P::StackedDrgWinning32GiBV1,
    P::StackedDrgWinning64GiBV1,
    P::StackedDrgWindow2KiBV1,
    P::StackedDrgWindow8MiBV1,
    P::StackedDrgWindow512MiBV1,
    P::StackedDrgWindow32GiBV1,
    P::StackedDrgWindow64GiBV1,
    P::StackedDrgWindow2KiBV1_2,
    P::StackedDrgWindow8MiBV1_2,
    P::StackedDrgWindow512MiBV1_2,
    P::StackedDrgWindow32GiBV1_2,
    P::StackedDrgWindow64GiBV1_2,
];

fuzz_target!(|data: &[u8]| {
    no_parameters();
    let [t, call, rest @ ..] = data else { return };
    let proof_type = TYPES[usize::from(*t) % TYPES.len()];
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
