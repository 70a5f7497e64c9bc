//! The twins of storage-proofs-core's `gadgets::insertion`: `pick`, `select`, and `insert`
//! with its hand-optimized 4- and 8-ary cases (the binary case is two picks).
//!
//! Every pick allocates its result; the 8-ary insertion first allocates `b0 nor b1` and
//! `b0 and b1`. The insertion bits are allocated unnegated bits in every Filecoin circuit (the
//! 8-ary gadget panics on any other), so they are taken as plain `bool`s.

use blstrs::Scalar;

use super::AuxSink;

/// `pick(cs, condition, a, b)`: one value, `a` when the condition holds, else `b`.
#[inline]
pub fn pick(aux: &mut impl AuxSink, condition: bool, a: Scalar, b: Scalar) -> Scalar {
    let c = if condition { a } else { b };
    aux.push(c);
    c
}

/// `select(cs, from, bits)`: element `n` of `from` (`bits` is `n`, least significant first),
/// by halving from the most significant bit: `from.len() − 1` picks.
///
/// # Panics
/// When `from` does not hold `2^bits.len()` elements.
pub fn select(aux: &mut impl AuxSink, from: &[Scalar], bits: &[bool]) -> Scalar {
    assert_eq!(1usize << bits.len(), from.len(), "select needs 2^bits elements");
    let mut state = from.to_vec();
    let mut half = from.len() / 2;
    for &bit in bits.iter().rev() {
        for j in 0..half {
            state[j] = pick(aux, bit, state[half + j], state[j]);
        }
        state.truncate(half);
        half /= 2;
    }
    state[0]
}

/// `insert(cs, element, bits, elements)`: `element` inserted into `elements` at position `n`
/// (`bits` is `n`, least significant first), with the gadget's picks for the 2-, 4- and 8-ary
/// cases and one `select` per position otherwise.
///
/// # Panics
/// When `elements.len() + 1` is not `2^bits.len()`.
pub fn insert(aux: &mut impl AuxSink, element: Scalar, bits: &[bool], elements: &[Scalar]) -> Vec<Scalar> {
    let size = elements.len() + 1;
    assert_eq!(1usize << bits.len(), size, "insert needs 2^bits − 1 elements");
    match size {
        2 => insert_2(aux, element, bits[0], elements[0]),
        4 => insert_4(aux, element, [bits[0], bits[1]], elements),
        8 => insert_8(aux, element, [bits[0], bits[1], bits[2]], elements),
        _ => (0..size)
            .map(|pos| {
                // The candidates for this position, one per insertion index.
                let choices: Vec<Scalar> = (0..size)
                    .map(|index| match pos.cmp(&index) {
                        std::cmp::Ordering::Less => elements[pos],
                        std::cmp::Ordering::Equal => element,
                        std::cmp::Ordering::Greater => elements[pos - 1],
                    })
                    .collect();
                select(aux, &choices, bits)
            })
            .collect(),
    }
}

fn insert_2(aux: &mut impl AuxSink, a: Scalar, b0: bool, b: Scalar) -> Vec<Scalar> {
    vec![pick(aux, b0, b, a), pick(aux, b0, a, b)]
}

fn insert_4(aux: &mut impl AuxSink, a: Scalar, [b0, b1]: [bool; 2], e: &[Scalar]) -> Vec<Scalar> {
    let (b, c, d) = (e[0], e[1], e[2]);
    let p0_x0 = pick(aux, b0, b, a);
    let p0 = pick(aux, b1, b, p0_x0);
    let p1_x0 = pick(aux, b0, a, b);
    let p1 = pick(aux, b1, c, p1_x0);
    let p2_x1 = pick(aux, b0, d, a);
    let p2 = pick(aux, b1, p2_x1, c);
    let p3_x1 = pick(aux, b0, a, d);
    let p3 = pick(aux, b1, p3_x1, d);
    vec![p0, p1, p2, p3]
}

fn insert_8(aux: &mut impl AuxSink, a: Scalar, [b0, b1, b2]: [bool; 3], e: &[Scalar]) -> Vec<Scalar> {
    let (b, c, d, e_, f, g, h) = (e[0], e[1], e[2], e[3], e[4], e[5], e[6]);
    // `AllocatedBit::nor` and `AllocatedBit::and`, in this order.
    let nor = !b0 && !b1;
    aux.push_bit(nor);
    let and = b0 && b1;
    aux.push_bit(and);

    let p0_xx0 = pick(aux, nor, a, b);
    let p0 = pick(aux, b2, b, p0_xx0);

    let p1_x00 = pick(aux, b0, a, b);
    let p1_xx0 = pick(aux, b1, c, p1_x00);
    let p1 = pick(aux, b2, c, p1_xx0);

    let p2_x10 = pick(aux, b0, d, a);
    let p2_xx0 = pick(aux, b1, p2_x10, c);
    let p2 = pick(aux, b2, d, p2_xx0);

    let p3_xx0 = pick(aux, and, a, d);
    let p3 = pick(aux, b2, e_, p3_xx0);

    let p4_xx1 = pick(aux, nor, a, f);
    let p4 = pick(aux, b2, p4_xx1, e_);

    let p5_x01 = pick(aux, b0, a, f);
    let p5_xx1 = pick(aux, b1, g, p5_x01);
    let p5 = pick(aux, b2, p5_xx1, f);

    let p6_x11 = pick(aux, b0, h, a);
    let p6_xx1 = pick(aux, b1, p6_x11, g);
    let p6 = pick(aux, b2, p6_xx1, g);

    let p7_xx1 = pick(aux, and, a, h);
    let p7 = pick(aux, b2, p7_xx1, h);

    vec![p0, p1, p2, p3, p4, p5, p6, p7]
}
