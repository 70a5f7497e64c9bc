//! [`Bit`]: the twin of bellpepper's `Boolean` and `AllocatedBit`.

use super::AuxSink;

/// A `Boolean` as a value: a constant, or an allocated variable taken as is or negated. The
/// `bool` of `Is` and `Not` is the *variable's* value (what was allocated); the bit's value is
/// [`Bit::value`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    /// `Boolean::Constant`: allocates nothing, folds.
    Constant(bool),
    /// `Boolean::Is`: the variable.
    Is(bool),
    /// `Boolean::Not`: one minus the variable.
    Not(bool),
}

impl Bit {
    /// `AllocatedBit::alloc` (as `Boolean::Is`): one value.
    #[inline]
    pub fn alloc(aux: &mut impl AuxSink, value: bool) -> Self {
        aux.push_bit(value);
        Bit::Is(value)
    }

    /// The bit's value.
    #[inline]
    pub fn value(self) -> bool {
        match self {
            Bit::Constant(b) | Bit::Is(b) => b,
            Bit::Not(v) => !v,
        }
    }

    /// Whether it is a constant.
    #[inline]
    pub fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    /// `Boolean::not`: allocates nothing.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Self {
        match self {
            Bit::Constant(b) => Bit::Constant(!b),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }

    /// `Boolean::xor`: one value unless an operand is constant.
    #[inline]
    pub fn xor(aux: &mut impl AuxSink, a: Self, b: Self) -> Self {
        match (a, b) {
            (Bit::Constant(false), x) | (x, Bit::Constant(false)) => x,
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x.not(),
            // The gadget xors the `Is` with the `Not` negated, then negates the result.
            (Bit::Is(i), Bit::Not(n)) | (Bit::Not(n), Bit::Is(i)) => {
                aux.push_bit(i ^ n);
                Bit::Not(i ^ n)
            }
            (Bit::Is(x), Bit::Is(y)) | (Bit::Not(x), Bit::Not(y)) => {
                aux.push_bit(x ^ y);
                Bit::Is(x ^ y)
            }
        }
    }

    /// `Boolean::and`: one value (`and`, `and_not` or `nor`, all of them the conjunction of the
    /// two bits' values) unless an operand is constant.
    #[inline]
    pub fn and(aux: &mut impl AuxSink, a: Self, b: Self) -> Self {
        match (a, b) {
            (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
            _ => Bit::alloc(aux, a.value() & b.value()),
        }
    }

    /// `Boolean::sha256_ch`: `(a and b) xor (not a and c)`, folded as the gadget folds.
    pub fn sha256_ch(aux: &mut impl AuxSink, a: Self, b: Self, c: Self) -> Self {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), _, c) => c,
            (a, Bit::Constant(false), c) => Bit::and(aux, a.not(), c),
            (a, b, Bit::Constant(false)) => Bit::and(aux, a, b),
            (a, b, Bit::Constant(true)) => Bit::and(aux, a, b.not()).not(),
            (a, Bit::Constant(true), c) => Bit::and(aux, a.not(), c.not()).not(),
            // `a` constant true and the others allocated, or all allocated: one value.
            _ => Bit::alloc(aux, value),
        }
    }

    /// `Boolean::sha256_maj`: the majority of the three, folded as the gadget folds; when all
    /// are allocated, the majority then `b and c`.
    pub fn sha256_maj(aux: &mut impl AuxSink, a: Self, b: Self, c: Self) -> Self {
        let (x, y, z) = (a.value(), b.value(), c.value());
        let value = (x & y) ^ (x & z) ^ (y & z);
        match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), b, c) => Bit::and(aux, b, c),
            (a, Bit::Constant(false), c) => Bit::and(aux, a, c),
            (a, b, Bit::Constant(false)) => Bit::and(aux, a, b),
            (a, b, Bit::Constant(true)) => Bit::and(aux, a.not(), b.not()).not(),
            (a, Bit::Constant(true), c) => Bit::and(aux, a.not(), c.not()).not(),
            (Bit::Constant(true), b, c) => Bit::and(aux, b.not(), c.not()).not(),
            _ => {
                let maj = Bit::alloc(aux, value);
                Bit::and(aux, b, c);
                maj
            }
        }
    }
}
