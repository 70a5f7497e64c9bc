//! [`U32`]: the twin of bellperson's `UInt32` (sha256's word), as three masks.

use super::{AuxSink, Bit};

/// A `UInt32` as values: bit `i` (least significant first, as the gadget keeps them) is a
/// constant when bit `i` of `constant` is set, else an allocated variable, negated when bit
/// `i` of `negated` is set; its value is bit `i` of `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U32 {
    value: u32,
    constant: u32,
    /// Only on allocated bits (0 where constant).
    negated: u32,
}

impl U32 {
    /// `UInt32::constant`: allocates nothing.
    pub fn constant(value: u32) -> Self {
        Self {
            value,
            constant: u32::MAX,
            negated: 0,
        }
    }

    /// `UInt32::alloc`: 32 values, least significant first.
    pub fn alloc(aux: &mut impl AuxSink, value: u32) -> Self {
        aux.push_masked(u64::from(value), u64::from(u32::MAX));
        Self {
            value,
            constant: 0,
            negated: 0,
        }
    }

    /// The word's value.
    pub fn value(self) -> u32 {
        self.value
    }

    /// Whether every bit is a constant.
    pub fn is_constant(self) -> bool {
        self.constant == u32::MAX
    }

    /// Bit `i`, least significant first.
    pub fn bit(self, i: usize) -> Bit {
        let (v, c, n) = (
            (self.value >> i) & 1 == 1,
            (self.constant >> i) & 1 == 1,
            (self.negated >> i) & 1 == 1,
        );
        match (c, n) {
            (true, _) => Bit::Constant(v),
            (false, false) => Bit::Is(v),
            (false, true) => Bit::Not(!v),
        }
    }

    /// `UInt32::from_bits`: 32 bits, least significant first.
    pub fn from_bits(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32, "a UInt32 has 32 bits");
        let mut w = Self::constant(0);
        for (i, &b) in bits.iter().enumerate() {
            w.set(i, b);
        }
        w
    }

    /// `UInt32::from_bits_be`: 32 bits, most significant first.
    pub fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32, "a UInt32 has 32 bits");
        let mut w = Self::constant(0);
        for (i, &b) in bits.iter().rev().enumerate() {
            w.set(i, b);
        }
        w
    }

    fn set(&mut self, i: usize, b: Bit) {
        let m = 1u32 << i;
        self.value = (self.value & !m) | (u32::from(b.value()) << i);
        self.constant = (self.constant & !m) | (u32::from(b.is_constant()) << i);
        self.negated = (self.negated & !m) | (u32::from(matches!(b, Bit::Not(_))) << i);
    }

    /// `UInt32::into_bits`: least significant first.
    pub fn into_bits(self) -> Vec<Bit> {
        (0..32).map(|i| self.bit(i)).collect()
    }

    /// `UInt32::into_bits_be`: most significant first.
    pub fn into_bits_be(self) -> Vec<Bit> {
        (0..32).rev().map(|i| self.bit(i)).collect()
    }

    /// `UInt32::rotr`: allocates nothing.
    pub fn rotr(self, by: usize) -> Self {
        let by = (by % 32) as u32;
        Self {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// `UInt32::shr`: allocates nothing; the bits shifted in are constant zeros.
    // Named as the gadget's method, which is not `std::ops::Shr` either.
    #[allow(clippy::should_implement_trait)]
    pub fn shr(self, by: usize) -> Self {
        let by = (by % 32) as u32;
        Self {
            value: self.value >> by,
            constant: (self.constant >> by) | !(u32::MAX >> by),
            negated: self.negated >> by,
        }
    }

    /// `UInt32::xor`: per bit, [`Bit::xor`] — a value where both bits are allocated.
    pub fn xor(self, aux: &mut impl AuxSink, other: Self) -> Self {
        // Where a bit is constant, xoring with it keeps the other bit, negated when the
        // constant is 1; where both are allocated, the new variable is the xor of the two
        // variables and the result is negated when exactly one operand was.
        let flip = |w: Self| w.negated | (w.constant & w.value);
        let constant = self.constant & other.constant;
        let allocated = !self.constant & !other.constant;
        let variables = (self.value ^ self.negated) ^ (other.value ^ other.negated);
        aux.push_masked(u64::from(variables), u64::from(allocated));
        Self {
            value: self.value ^ other.value,
            constant,
            negated: (flip(self) ^ flip(other)) & !constant,
        }
    }

    /// Per bit `f(aux, a_i, b_i, c_i)`, bit 0 first.
    fn triop<A: AuxSink>(aux: &mut A, a: Self, b: Self, c: Self, f: impl Fn(&mut A, Bit, Bit, Bit) -> Bit) -> Self {
        let mut out = Self::constant(0);
        for i in 0..32 {
            out.set(i, f(aux, a.bit(i), b.bit(i), c.bit(i)));
        }
        out
    }

    /// `UInt32::sha256_ch`: per bit, [`Bit::sha256_ch`].
    pub fn sha256_ch(aux: &mut impl AuxSink, a: Self, b: Self, c: Self) -> Self {
        Self::triop(aux, a, b, c, |aux, a, b, c| Bit::sha256_ch(aux, a, b, c))
    }

    /// `UInt32::sha256_maj`: per bit, [`Bit::sha256_maj`].
    pub fn sha256_maj(aux: &mut impl AuxSink, a: Self, b: Self, c: Self) -> Self {
        Self::triop(aux, a, b, c, |aux, a, b, c| Bit::sha256_maj(aux, a, b, c))
    }

    /// `UInt32::addmany` (2 to 10 operands): a constant when every bit of every operand is,
    /// else every bit of the full sum — `ceil(log2(n·(2³²−1)))` values (33 for two operands,
    /// 35 for five) — of which the low 32 are the result.
    pub fn addmany(aux: &mut impl AuxSink, operands: &[Self]) -> Self {
        assert!((2..=10).contains(&operands.len()), "addmany takes 2 to 10 operands");
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.is_constant()) {
            return Self::constant(sum as u32);
        }
        let max = operands.len() as u64 * u64::from(u32::MAX);
        let bits = 64 - max.leading_zeros();
        aux.push_masked(sum, (1u64 << bits) - 1);
        Self {
            value: sum as u32,
            constant: 0,
            negated: 0,
        }
    }
}
