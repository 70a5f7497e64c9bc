//! The CID parser (Curio's sealed / unsealed CIDs): an error or the commitment, which is then
//! the CID's last 32 bytes; never a panic.
#![no_main]

use cuzk::filecoin::{commitment_from_cid, CommitmentKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for kind in [CommitmentKind::Sealed, CommitmentKind::Unsealed] {
        if let Ok(comm) = commitment_from_cid(data, kind, "fuzz") {
            assert_eq!(&data[data.len() - 32..], &comm[..]);
        }
    }
});
