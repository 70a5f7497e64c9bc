//! The twins of bellperson's SHA-256 gadgets: the compression function (message schedule,
//! 64 rounds with their deferred additions, the final additions), one block without padding,
//! and the padded hash.

use super::{AuxSink, Bit, U32};

/// SHA-256's initial hash value.
pub const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

/// A working variable whose addition the gadget defers to its first use (so that the
/// additions of a round fold into one `addmany`).
enum Deferred {
    Sum(Vec<U32>),
    Word(U32),
}

impl Deferred {
    fn compute(self, aux: &mut impl AuxSink, others: &[U32]) -> U32 {
        match self {
            Deferred::Word(w) => w,
            Deferred::Sum(mut v) => {
                v.extend_from_slice(others);
                U32::addmany(aux, &v)
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block (bits most significant first per word)
/// into the hash state `current`.
pub fn sha256_compression(aux: &mut impl AuxSink, input: &[Bit], current: &[U32; 8]) -> [U32; 8] {
    assert_eq!(input.len(), 512, "a SHA-256 block has 512 bits");
    let mut w: Vec<U32> = input.chunks(32).map(U32::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15]
            .rotr(7)
            .xor(aux, w[i - 15].rotr(18))
            .xor(aux, w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(aux, w[i - 2].rotr(19)).xor(aux, w[i - 2].shr(10));
        let word = U32::addmany(aux, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(word);
    }

    let mut a = Deferred::Word(current[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *current;
    let mut e = Deferred::Word(current[4]);
    for i in 0..64 {
        let new_e = e.compute(aux, &[]);
        let s1 = new_e.rotr(6).xor(aux, new_e.rotr(11)).xor(aux, new_e.rotr(25));
        let ch = U32::sha256_ch(aux, new_e, f, g);
        let temp1 = [h, s1, ch, U32::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.compute(aux, &[]);
        let s0 = new_a.rotr(2).xor(aux, new_a.rotr(13)).xor(aux, new_a.rotr(22));
        let maj = U32::sha256_maj(aux, new_a, b, c);

        h = g;
        g = f;
        f = new_e;
        e = Deferred::Sum(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Deferred::Sum(temp1.iter().copied().chain([s0, maj]).collect());
    }

    let h0 = a.compute(aux, &[current[0]]);
    let h1 = U32::addmany(aux, &[current[1], b]);
    let h2 = U32::addmany(aux, &[current[2], c]);
    let h3 = U32::addmany(aux, &[current[3], d]);
    let h4 = e.compute(aux, &[current[4]]);
    let h5 = U32::addmany(aux, &[current[5], f]);
    let h6 = U32::addmany(aux, &[current[6], g]);
    let h7 = U32::addmany(aux, &[current[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

fn iv() -> [U32; 8] {
    IV.map(U32::constant)
}

fn state_bits(state: [U32; 8]) -> Vec<Bit> {
    state.into_iter().flat_map(U32::into_bits_be).collect()
}

/// `sha256_block_no_padding`: one block from the IV, the 256 bits of the state most
/// significant first.
pub fn sha256_block_no_padding(aux: &mut impl AuxSink, input: &[Bit]) -> Vec<Bit> {
    state_bits(sha256_compression(aux, input, &iv()))
}

/// `sha256`: the message (a whole number of bytes) padded with constant bits, as the gadget
/// pads, then compressed block by block from the IV.
pub fn sha256(aux: &mut impl AuxSink, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len() % 8 == 0, "sha256 hashes whole bytes");
    let len = input.len() as u64;
    let mut padded = input.to_vec();
    padded.push(Bit::Constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Constant(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Constant((len >> i) & 1 == 1)));
    let mut state = iv();
    for block in padded.chunks(512) {
        state = sha256_compression(aux, block, &state);
    }
    state_bits(state)
}
