//! The compiled-circuit file loader on any bytes, as they are and with their length and
//! checksum fixed up (as a crafter would: the checksum is a public hash), so that mutations
//! reach the section walk and the matrix checks: an error or a circuit, never a panic; a
//! circuit it accepts saves back to the same bytes and loads again with the same fingerprint.
#![no_main]

use cuzk::compiled::CompiledCircuit;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(c) = CompiledCircuit::from_file_bytes(bytes) {
        let dir = std::env::temp_dir().join(format!("cuzk-fuzz-compiled-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.r1cs");
        c.save(&path).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "an accepted file saves back unchanged"
        );
        let again = CompiledCircuit::load(&path).unwrap();
        assert_eq!(again.fingerprint(), c.fingerprint());
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut sealed = data.to_vec();
    cuzk::compiled::file::seal(&mut sealed);
    if sealed != data {
        check(&sealed);
    }
});
