//! The gadget twins: native functions that append to a witness exactly the values
//! bellperson's, neptune's and storage-proofs' gadgets allocate, in their order, with their
//! constant folding.
//!
//! A twin takes the same operands as its gadget — as values: a [`Bit`] is a `Boolean`
//! (constant, or an allocated variable taken as is or negated) with its value, a [`U32`] a
//! `UInt32` — and writes each allocation's value into an [`AuxSink`]; it builds no linear
//! combination and calls no constraint system. Rooms: [`Bit`] and [`U32`] (booleans and
//! words), SHA-256, bit decompositions and packing, Poseidon (neptune's circuit), the
//! insertion gadgets and PoR paths. Sinks: a `Vec<Scalar>` (tests), a
//! [`WitnessCs`] itself (the compact form the witness path proves from, bits a word at a
//! time), [`CsSink`] over any constraint system (the same witness through `alloc`),
//! [`CountSink`] (sizes, benchmarks).
//!
//! Each twin is checked value for value against the gadget it mirrors (tests/native_gadgets.rs,
//! with constants mixed in to exercise the folding); the mirrored versions are in `NOTES.md`.

mod bit;
mod insertion;
mod pack;
mod por;
mod poseidon;
mod sha256;
mod uint32;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

use crate::compiled::WitnessCs;

pub use bit::Bit;
pub use insertion::{insert, pick, select};
pub use pack::{
    alloc_num, bytes_into_bits, bytes_into_bits_be, multipack, pack_bits, reverse_bit_numbering, to_bits_le,
    u64_into_bits_le,
};
pub use por::{por_circuit, por_no_challenge_input, Level, NodeHash, PorOutput, Root};
pub use poseidon::{poseidon_hash, poseidon_merkle};
pub use sha256::{sha256, sha256_block_no_padding, sha256_compression, IV};
pub use uint32::U32;

/// Where a twin writes the values it allocates, in allocation order.
pub trait AuxSink {
    /// Appends one value.
    fn push(&mut self, value: Scalar);

    /// Appends a 0/1 value.
    fn push_bit(&mut self, bit: bool) {
        self.push(if bit { Scalar::ONE } else { Scalar::ZERO });
    }

    /// Appends bit `i` of `bits` for every `i` set in `mask`, lowest first.
    fn push_masked(&mut self, bits: u64, mask: u64) {
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            self.push_bit((bits >> i) & 1 == 1);
            m &= m - 1;
        }
    }
}

impl AuxSink for Vec<Scalar> {
    fn push(&mut self, value: Scalar) {
        Vec::push(self, value);
    }
}

/// Straight into a [`WitnessCs`]: the compact witness the witness path proves from, as
/// [`CsSink`] over it writes it, without a closure per value and with bits appended a bitmap
/// word at a time.
impl AuxSink for WitnessCs {
    #[inline]
    fn push(&mut self, value: Scalar) {
        self.append_aux(value);
    }

    #[inline]
    fn push_bit(&mut self, bit: bool) {
        self.append_aux_bits(u64::from(bit), 1);
    }

    #[inline]
    fn push_masked(&mut self, bits: u64, mask: u64) {
        self.append_aux_bits(bits, mask);
    }
}

/// Counts the values (for sizes and benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountSink {
    /// Values appended.
    pub values: usize,
    /// Of which 0/1 values appended as bits.
    pub bits: usize,
}

impl AuxSink for CountSink {
    fn push(&mut self, _: Scalar) {
        self.values += 1;
    }
    fn push_bit(&mut self, _: bool) {
        self.values += 1;
        self.bits += 1;
    }
    fn push_masked(&mut self, _: u64, mask: u64) {
        let n = mask.count_ones() as usize;
        self.values += n;
        self.bits += n;
    }
}

/// Appends through a constraint system's `alloc` (no annotation is made). The first error the
/// system returns is kept and later values are dropped; [`CsSink::finish`] reports it.
pub struct CsSink<'a, CS> {
    cs: &'a mut CS,
    error: Option<SynthesisError>,
}

impl<'a, CS: ConstraintSystem<Scalar>> CsSink<'a, CS> {
    /// A sink over `cs`.
    pub fn new(cs: &'a mut CS) -> Self {
        Self { cs, error: None }
    }

    /// # Errors
    /// The first error `alloc` returned.
    pub fn finish(self) -> Result<(), SynthesisError> {
        self.error.map_or(Ok(()), Err)
    }
}

impl<CS: ConstraintSystem<Scalar>> AuxSink for CsSink<'_, CS> {
    fn push(&mut self, value: Scalar) {
        if self.error.is_none() {
            if let Err(e) = self.cs.alloc(|| "native", || Ok(value)) {
                self.error = Some(e);
            }
        }
    }
}
