//! Filecoin's prover id of a miner actor: what filecoin-ffi's Go side makes from an actor id
//! (`toProverID`): the payload of the ID address `f0<id>`, i.e. the unsigned LEB128 varint of
//! the id, zero-padded to 32 bytes. In every build: the `filecoin` module proves with it and
//! the C ABI hands it to callers (`cuzk_filecoin_prover_id`).

/// The 32-byte prover id of miner actor `miner_id`.
pub fn prover_id_from_miner_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    for b in out.iter_mut() {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            *b = byte;
            break;
        }
        *b = byte | 0x80;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_leb128_varint_zero_padded() {
        // f01000: 1000 = 0b111_1101000 → LEB128 e8 07.
        assert_eq!(&prover_id_from_miner_id(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(&prover_id_from_miner_id(128)[..3], &[0x80, 0x01, 0]);
        assert_eq!(&prover_id_from_miner_id(127)[..2], &[0x7f, 0]);
        assert_eq!(prover_id_from_miner_id(0), [0u8; 32]);
        let max = prover_id_from_miner_id(u64::MAX);
        assert_eq!(&max[..9], &[0xff; 9]);
        assert_eq!(max[9], 0x01);
        assert!(max[10..].iter().all(|&b| b == 0));
    }
}
