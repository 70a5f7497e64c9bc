//! The twins of the bit decompositions and packings storage-proofs uses: allocated numbers,
//! `AllocatedNum::to_bits_le`, `u64_into_boolean_vec_le`, storage-proofs'
//! `bytes_into_boolean_vec(_be)`, bellperson's `multipack::pack_bits` and (for public inputs)
//! `compute_multipacking`.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::{AuxSink, Bit};

/// `AllocatedNum::alloc`: one value.
pub fn alloc_num(aux: &mut impl AuxSink, value: Scalar) -> Scalar {
    aux.push(value);
    value
}

/// `AllocatedNum::to_bits_le` (and `field_into_allocated_bits_le`): the value's 255 bits,
/// least significant first, each allocated.
pub fn to_bits_le(aux: &mut impl AuxSink, value: Scalar) -> Vec<Bit> {
    let bytes = value.to_bytes_le();
    (0..Scalar::NUM_BITS as usize)
        .map(|i| Bit::alloc(aux, (bytes[i / 8] >> (i % 8)) & 1 == 1))
        .collect()
}

/// `u64_into_boolean_vec_le`: 64 bits, least significant first, each allocated.
pub fn u64_into_bits_le(aux: &mut impl AuxSink, value: u64) -> Vec<Bit> {
    aux.push_masked(value, u64::MAX);
    (0..64).map(|i| Bit::Is((value >> i) & 1 == 1)).collect()
}

/// storage-proofs' `bytes_into_boolean_vec`: every byte's bits, least significant first,
/// each allocated.
pub fn bytes_into_bits(aux: &mut impl AuxSink, bytes: &[u8]) -> Vec<Bit> {
    bytes
        .iter()
        .flat_map(|&byte| (0..8).map(move |i| (byte >> i) & 1 == 1))
        .map(|b| Bit::alloc(aux, b))
        .collect()
}

/// storage-proofs' `bytes_into_boolean_vec_be`: every byte's bits, most significant first,
/// each allocated.
pub fn bytes_into_bits_be(aux: &mut impl AuxSink, bytes: &[u8]) -> Vec<Bit> {
    bytes
        .iter()
        .flat_map(|&byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
        .map(|b| Bit::alloc(aux, b))
        .collect()
}

/// The sum of `bits[i]·2^i` over the first [`Scalar::CAPACITY`] bits.
fn packed(bits: &[Bit]) -> Scalar {
    let mut num = Scalar::ZERO;
    let mut coeff = Scalar::ONE;
    for b in bits.iter().take(Scalar::CAPACITY as usize) {
        if b.value() {
            num += coeff;
        }
        coeff = coeff.double();
    }
    num
}

/// bellperson's `multipack::pack_bits`: the first 254 bits packed into one allocated number.
pub fn pack_bits(aux: &mut impl AuxSink, bits: &[Bit]) -> Scalar {
    alloc_num(aux, packed(bits))
}

/// `multipack::compute_multipacking` (what `pack_into_inputs` allocates as public inputs): the
/// bits in chunks of 254, each packed into one number.
pub fn multipack(bits: &[Bit]) -> Vec<Scalar> {
    bits.chunks(Scalar::CAPACITY as usize).map(packed).collect()
}

/// storage-proofs' `reverse_bit_numbering`: padded with constant zeros to whole bytes, each
/// byte's bits reversed.
pub fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    bits.resize(bits.len().next_multiple_of(8), Bit::Constant(false));
    bits.chunks_exact(8)
        .flat_map(|byte| byte.iter().rev().copied())
        .collect()
}
