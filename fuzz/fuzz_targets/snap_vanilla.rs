//! SnapDeals from vanilla partition proofs (bincode `PartitionProof`s) and the three CIDs:
//! refused with an error, never a panic (no parameters exist here). Byte 0 picks the proof
//! type and the call; the rest is cut into pieces: with CIDs, the first three are they.
#![no_main]

use cuzk::filecoin::RegisteredUpdateProof as U;
use libfuzzer_sys::fuzz_target;

include!("common_filecoin.rs");

const TYPES: [U; 5] = [
    U::StackedDrg2KiBV1,
    U::StackedDrg8MiBV1,
    U::StackedDrg512MiBV1,
    U::StackedDrg32GiBV1,
    U::StackedDrg64GiBV1,
];

fuzz_target!(|data: &[u8]| {
    no_parameters();
    let [t, rest @ ..] = data else { return };
    let proof_type = TYPES[usize::from(*t) % TYPES.len()];
    let mut pieces = pieces(rest);
    use cuzk::filecoin as f;
    if t & 0x80 == 0 {
        let comm = |b: u8| [b; 32];
        expect_refused(f::generate_empty_sector_update_proof_with_vanilla(
            proof_type,
            &pieces,
            comm(1),
            comm(2),
            comm(3),
        ));
    } else if pieces.len() >= 3 {
        let vanilla = pieces.split_off(3);
        expect_refused(f::generate_update_proof_with_vanilla(
            proof_type, &pieces[0], &pieces[1], &pieces[2], &vanilla,
        ));
    }
});
