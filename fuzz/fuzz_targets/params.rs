//! The parameter and verifying-key decoders (bellperson's format) on any bytes: an error or
//! parameters, never a panic or an allocation the bytes do not pay for.
#![no_main]

use cuzk::{Parameters, PointCheck, VerifyingKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let check = if mode % 2 == 0 {
        PointCheck::OnCurve
    } else {
        PointCheck::Subgroup
    };
    let _ = Parameters::from_bytes(rest, check);
    let _ = VerifyingKey::from_bytes(rest);
});
