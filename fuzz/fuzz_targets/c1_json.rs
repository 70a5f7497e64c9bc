//! C2's input, filecoin-proofs-api's commit phase 1 output as JSON: refused with an error,
//! never a panic (no parameters exist here, so a valid one ends at the parameter load).
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("common_filecoin.rs");

fuzz_target!(|data: &[u8]| {
    no_parameters();
    // The prover and sector the seed corpus was made for: byte 0 picks another (the replica-id
    // check) half the time.
    let sector = u64::from(data.first().copied().unwrap_or(0) & 1);
    let prover_id = [0u8; 32];
    expect_refused(cuzk::filecoin::seal_commit_phase2(data, prover_id, sector));
});
