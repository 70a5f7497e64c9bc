//! A 128-bit non-cryptographic hash for fingerprints and file checksums.
//!
//! Two 64-bit lanes, each folding a word in with a 64×64→128-bit multiply (the product's two
//! halves xored), seeded and keyed differently. It detects corruption (a flipped bit, a
//! truncated or reordered section) and mix-ups between circuits; it does not resist someone
//! who crafts a collision on purpose — a compiled-circuit file is trusted input, like the
//! parameters.
//!
//! Large byte ranges hash in chunks of [`CHUNK`] bytes in parallel; the chunk hashes are
//! folded in order, so the result does not depend on the number of threads.

use rayon::prelude::*;

/// Bytes per independently hashed chunk of a large slice.
pub const CHUNK: usize = 1 << 20;

const K0: u64 = 0x9e37_79b9_7f4a_7c15;
const K1: u64 = 0xc2b2_ae3d_27d4_eb4f;
const K2: u64 = 0x1656_67b1_9e37_79f9;
const K3: u64 = 0x27d4_eb2f_1656_67c5;

#[inline]
fn fold(x: u64, k: u64) -> u64 {
    let p = u128::from(x).wrapping_mul(u128::from(k));
    (p as u64) ^ ((p >> 64) as u64)
}

/// A running 128-bit hash over words and byte slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hasher128 {
    lo: u64,
    hi: u64,
    words: u64,
}

impl Default for Hasher128 {
    fn default() -> Self {
        Self::new()
    }
}

impl Hasher128 {
    /// A hasher in its initial state.
    pub const fn new() -> Self {
        Self {
            lo: K2,
            hi: K3,
            words: 0,
        }
    }

    /// Folds in one word.
    #[inline]
    pub fn word(&mut self, w: u64) {
        self.lo = fold(self.lo ^ w, K0).rotate_left(23).wrapping_add(K2);
        self.hi = fold(self.hi ^ w.rotate_left(32), K1).rotate_left(41).wrapping_add(K3);
        self.words = self.words.wrapping_add(1);
    }

    /// Folds in a byte slice sequentially (its length first, so that `ab|c` and `a|bc` differ).
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.word(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
    }

    /// Folds in a (possibly large) byte slice, [`CHUNK`] bytes at a time in parallel; the
    /// same value whatever the thread count.
    pub fn bytes_parallel(&mut self, bytes: &[u8]) {
        if bytes.len() <= CHUNK {
            self.bytes(bytes);
            return;
        }
        self.word(bytes.len() as u64);
        let parts: Vec<u128> = bytes
            .par_chunks(CHUNK)
            .map(|c| {
                let mut h = Hasher128::new();
                h.bytes(c);
                h.finish()
            })
            .collect();
        for p in parts {
            self.word(p as u64);
            self.word((p >> 64) as u64);
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u128 {
        let lo = fold(self.lo ^ self.words, K1) ^ self.hi;
        let hi = fold(self.hi ^ self.words.rotate_left(17), K0) ^ self.lo;
        (u128::from(hi) << 64) | u128::from(lo)
    }
}

/// The structure trace both synthesis paths keep: at every `enforce`, the numbers of inputs
/// and aux variables allocated so far, folded into 64 bits (see the module docs of
/// [`crate::compiled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trace(u64);

impl Default for Trace {
    fn default() -> Self {
        Self(K3)
    }
}

impl Trace {
    /// One `enforce`, seen when `inputs` inputs and `aux` aux variables exist.
    #[inline]
    pub(crate) fn enforce(&mut self, inputs: usize, aux: usize) {
        self.0 = fold(self.0 ^ (inputs as u64).rotate_left(40) ^ aux as u64, K0);
    }

    /// A sub-system merged in (`extend`) at the moment `inputs`/`aux` exist here.
    pub(crate) fn extend(&mut self, inputs: usize, aux: usize, part: Trace, part_constraints: usize) {
        self.0 = fold(self.0 ^ K2, K1);
        self.enforce(inputs, aux);
        self.0 = fold(self.0 ^ part.0, K0);
        self.0 = fold(self.0 ^ part_constraints as u64, K1);
    }

    pub(crate) fn value(self) -> u64 {
        self.0
    }

    pub(crate) fn from_value(v: u64) -> Self {
        Self(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_and_sequential_chunks_agree_and_every_bit_matters() {
        let data: Vec<u8> = (0..(3 * CHUNK + 123)).map(|i| (i * 31 % 251) as u8).collect();
        let mut a = Hasher128::new();
        a.bytes_parallel(&data);
        let mut b = Hasher128::new();
        b.bytes_parallel(&data);
        assert_eq!(a.finish(), b.finish());
        for &pos in &[0, 7, CHUNK - 1, CHUNK, 2 * CHUNK + 5, data.len() - 1] {
            let mut d = data.clone();
            d[pos] ^= 0x10;
            let mut c = Hasher128::new();
            c.bytes_parallel(&d);
            assert_ne!(a.finish(), c.finish(), "flip at {pos} not seen");
        }
        let mut t = Hasher128::new();
        t.bytes_parallel(&data[..data.len() - 1]);
        assert_ne!(a.finish(), t.finish(), "truncation not seen");
    }

    #[test]
    fn split_points_matter() {
        let mut x = Hasher128::new();
        x.bytes(b"ab");
        x.bytes(b"c");
        let mut y = Hasher128::new();
        y.bytes(b"a");
        y.bytes(b"bc");
        assert_ne!(x.finish(), y.finish());
    }

    #[test]
    fn trace_sees_order() {
        let mut a = Trace::default();
        a.enforce(1, 2);
        a.enforce(1, 3);
        let mut b = Trace::default();
        b.enforce(1, 3);
        b.enforce(1, 2);
        assert_ne!(a, b);
    }
}
