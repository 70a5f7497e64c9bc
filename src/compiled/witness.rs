//! Witness-only synthesis into a compact witness.
//!
//! [`WitnessCs`] is a constraint system that computes the inputs and aux values and nothing
//! else: `enforce` never calls its closures (no linear combination is built), it only counts
//! the constraint and folds the current sizes into the structure trace. Aux values are
//! written as they come into a [`CompactAux`]: a bitmap of which values are 0 or 1, a bitmap
//! of those bits, and the other values packed in order — at Filecoin's mix (98% of aux 0/1)
//! under a byte per value instead of 32. When few values are bits (below
//! [`WitnessCs::dense_threshold_percent`]) the witness is stored dense instead. Inputs are
//! always dense.

use std::cell::Cell;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::compact::{bit_of, CompactAux};
use crate::error::{Error, Result};
use crate::pool::{PinnedPool, PinnedVec};
use crate::r1cs::hash::Trace;

/// A witness's aux values, compact or dense.
#[derive(Debug)]
pub enum WitnessAux {
    /// Bits as bits, other values packed.
    Compact(Box<CompactAux>),
    /// One scalar per value (few were bits).
    Dense(PinnedVec<Scalar>),
}

/// What a witness-only synthesis produced: inputs, aux (compact or dense) and the counts and
/// structure trace a [`CompiledCircuit`](super::CompiledCircuit) checks it against.
#[derive(Debug)]
pub struct Witness {
    circuit_type: String,
    inputs: Vec<Scalar>,
    aux: WitnessAux,
    constraints: usize,
    trace: Trace,
    generated: usize,
}

impl Witness {
    /// The circuit type it was synthesized from (`std::any::type_name`).
    pub fn circuit_type(&self) -> &str {
        &self.circuit_type
    }

    /// Public inputs, the constant one first.
    pub fn inputs(&self) -> &[Scalar] {
        &self.inputs
    }

    /// Number of public inputs, the one included.
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Number of aux values.
    pub fn num_aux(&self) -> usize {
        match &self.aux {
            WitnessAux::Compact(c) => c.len(),
            WitnessAux::Dense(d) => d.len(),
        }
    }

    /// The `enforce` calls the synthesis made (merged sub-systems' included; not the input
    /// constraints).
    pub fn num_constraints(&self) -> usize {
        self.constraints
    }

    /// The structure trace (see [`crate::compiled`]).
    pub fn structure_hash(&self) -> u64 {
        self.trace.value()
    }

    /// Values the circuit wrote through witness-generator methods (`allocate_empty`,
    /// `extend_aux`, ...): non-zero means the constraint count cannot be checked.
    pub fn generated_values(&self) -> usize {
        self.generated
    }

    /// The aux values.
    pub fn aux(&self) -> &WitnessAux {
        &self.aux
    }

    /// Whether aux is stored compact.
    pub fn is_compact(&self) -> bool {
        matches!(self.aux, WitnessAux::Compact(_))
    }

    /// Aux value `j`, or `None` past the end.
    pub fn aux_value(&self, j: usize) -> Option<Scalar> {
        match &self.aux {
            WitnessAux::Compact(c) => c.get(j),
            WitnessAux::Dense(d) => d.as_slice().get(j).copied(),
        }
    }

    /// A generated witness vouched for by `compiled` (its generator's witness was validated
    /// against the gadgets' for it, and this one's type and counts checked): the constraint
    /// count and structure trace, which a generator does not make, taken from it, so that
    /// [`CompiledCircuit::check`](super::CompiledCircuit::check) accepts it when it is proved.
    pub(crate) fn vouched_by(mut self, compiled: &super::CompiledCircuit) -> Self {
        self.constraints = compiled.r1cs.circuit_constraints;
        self.trace = compiled.r1cs.trace;
        self
    }

    /// Number of aux values that are 0 or 1.
    pub fn num_bits(&self) -> usize {
        match &self.aux {
            WitnessAux::Compact(c) => c.num_bits(),
            WitnessAux::Dense(d) => d.as_slice().par_iter().filter(|v| bit_of(v).is_some()).count(),
        }
    }

    /// Bytes the witness holds on the host (inputs and aux).
    pub fn byte_size(&self) -> usize {
        32 * self.inputs.len()
            + match &self.aux {
                WitnessAux::Compact(c) => c.byte_size(),
                WitnessAux::Dense(d) => 32 * d.len(),
            }
    }

    /// Bytes its buffers take at their capacity (what a pool counts in use for them) and its
    /// inputs: at least [`byte_size`](Self::byte_size). The engine's budget charges this.
    pub(crate) fn held_bytes(&self) -> usize {
        32 * self.inputs.capacity()
            + match &self.aux {
                WitnessAux::Compact(c) => c.held_bytes(),
                WitnessAux::Dense(d) => 32 * d.capacity(),
            }
    }

    /// The aux values as one scalar each, in a `Vec`.
    ///
    /// # Errors
    /// [`Error::Allocation`] when the host cannot hold them.
    pub fn expand_aux(&self) -> Result<Vec<Scalar>> {
        match &self.aux {
            WitnessAux::Dense(d) => {
                let mut out = Vec::new();
                out.try_reserve_exact(d.len())
                    .map_err(|e| crate::pool::heap_error(d.len(), 32, &e))?;
                out.extend_from_slice(d.as_slice());
                Ok(out)
            }
            WitnessAux::Compact(c) => crate::pool::fill_vec(c.len(), |out| c.expand_into(out)),
        }
    }

    /// The aux values as one scalar each, in a buffer from `pool` (written in place, in
    /// parallel).
    ///
    /// # Errors
    /// What the pool's checkout returns.
    pub fn expand_aux_in(&self, pool: &PinnedPool) -> Result<PinnedVec<Scalar>> {
        match &self.aux {
            WitnessAux::Dense(d) => {
                let mut v = PinnedVec::with_capacity_in(pool, d.len())?;
                v.try_extend_from_slice(d.as_slice())?;
                Ok(v)
            }
            WitnessAux::Compact(c) => PinnedVec::fill_in(pool, c.len(), |out| c.expand_into(out)),
        }
    }
}

/// The witness-only constraint system (see the module docs).
///
/// Like [`ProvingAssignment`](crate::ProvingAssignment) it never panics on what a circuit
/// does: the first failure (host or pool out of memory, a witness-generator method when it is
/// not one) is kept, later calls are ignored, and [`WitnessCs::finish`] reports it.
#[derive(Debug)]
pub struct WitnessCs {
    inputs: Vec<Scalar>,
    aux: CompactAux,
    /// A region handed out by `allocate_empty(_aux)`, filled by the circuit afterwards; folded
    /// into `aux` at the next call.
    pending: Vec<Scalar>,
    constraints: usize,
    trace: Trace,
    generated: usize,
    generator: bool,
    dense_below_percent: u32,
    error: Option<Error>,
    /// `aux_slice` cannot be served from a compact witness; set when a circuit asks.
    aux_slice_asked: Cell<bool>,
}

impl Default for WitnessCs {
    fn default() -> Self {
        Self::new()
    }
}

/// Below this percentage of 0/1 values, a witness is stored dense by default: the compact
/// form would then save under an eighth of the bytes, and dense values need no index.
pub const DEFAULT_DENSE_BELOW_PERCENT: u32 = 12;

impl WitnessCs {
    /// An empty witness system on the heap, a witness generator (`is_witness_generator()` is
    /// true).
    pub fn new() -> Self {
        Self::build(None, 0).unwrap_or_else(Self::failed)
    }

    /// An empty witness system writing its compact aux into buffers from `pool`, sized for
    /// `aux_hint` values (growing within the pool past it).
    ///
    /// # Errors
    /// What the pool's checkout returns.
    pub fn in_pool(pool: &PinnedPool, aux_hint: usize) -> Result<Self> {
        Self::build(Some(pool), aux_hint)
    }

    fn build(pool: Option<&PinnedPool>, aux_hint: usize) -> Result<Self> {
        Ok(Self::with_aux(CompactAux::new(pool, aux_hint)?))
    }

    /// As [`in_pool`](Self::in_pool), with room for `others` values that are not bits (the
    /// prover sizes it from the last witness of the circuit's type and shape, so that the
    /// checkouts are the ones the engine's budget reserved).
    pub(crate) fn in_pool_sized(pool: &PinnedPool, aux_hint: usize, others: usize) -> Result<Self> {
        Ok(Self::with_aux(CompactAux::sized(Some(pool), aux_hint, others)?))
    }

    /// A fresh system writing into `aux`.
    fn with_aux(aux: CompactAux) -> Self {
        Self {
            inputs: Vec::new(),
            aux,
            pending: Vec::new(),
            constraints: 0,
            trace: Trace::default(),
            generated: 0,
            generator: true,
            dense_below_percent: DEFAULT_DENSE_BELOW_PERCENT,
            error: None,
            aux_slice_asked: Cell::new(false),
        }
    }

    fn failed(e: Error) -> Self {
        let mut this = Self::with_aux(CompactAux::empty());
        this.fail(e);
        this
    }

    /// The same system, but not a witness generator: gadgets that branch on
    /// `is_witness_generator` (neptune's Poseidon) take their constraint path, so every
    /// constraint is counted and the witness can be checked in full.
    pub fn without_generator(mut self) -> Self {
        self.generator = false;
        self
    }

    /// Stores the witness dense when fewer than `percent`% of aux values are 0/1 (default
    /// [`DEFAULT_DENSE_BELOW_PERCENT`]; 0: always compact; above 100: always dense).
    pub fn dense_threshold_percent(mut self, percent: u32) -> Self {
        self.dense_below_percent = percent;
        self
    }

    /// Synthesizes `circuit` (the "one" input first, as the prover does) and returns its
    /// witness, tagged with `C`'s type name.
    ///
    /// # Errors
    /// The circuit's own synthesis error, or the first failure of the system (see the type).
    pub fn synthesize<C: Circuit<Scalar>>(mut self, circuit: C) -> Result<Witness> {
        self.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut self)?;
        self.finish(std::any::type_name::<C>())
    }

    /// The witness of what was synthesized so far, tagged with `circuit_type`.
    ///
    /// # Errors
    /// The first failure during synthesis; [`Error::Allocation`]/[`Error::PoolExhausted`] when
    /// the dense form cannot be allocated.
    pub fn finish(mut self, circuit_type: &str) -> Result<Witness> {
        self.flush();
        if self.aux_slice_asked.get() {
            self.fail(Error::Unsupported(
                "the circuit read aux_slice(); a compact witness keeps no dense aux".into(),
            ));
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.aux.seal()?;
        let bits = self.aux.num_bits() as u128;
        let dense = bits * 100 < u128::from(self.dense_below_percent) * self.aux.len() as u128;
        let aux = if dense {
            let n = self.aux.len();
            let mut values = match self.aux.pool() {
                Some(pool) => PinnedVec::with_capacity_in(&pool, n)?,
                None => PinnedVec::with_heap_capacity(n)?,
            };
            for j in 0..n {
                values.try_push(self.aux.get(j).unwrap_or(Scalar::ZERO))?;
            }
            WitnessAux::Dense(values)
        } else {
            WitnessAux::Compact(Box::new(self.aux))
        };
        Ok(Witness {
            circuit_type: circuit_type.to_string(),
            inputs: self.inputs,
            aux,
            constraints: self.constraints,
            trace: self.trace,
            generated: self.generated,
        })
    }

    fn fail(&mut self, e: Error) {
        if self.error.is_none() {
            log::error!("witness synthesis failed: {e}; the error is reported at the end of synthesis");
            self.error = Some(e);
        }
    }

    fn num_aux(&self) -> usize {
        self.aux.len() + self.pending.len()
    }

    /// Folds a region the circuit filled through `allocate_empty(_aux)` into the compact aux.
    /// Called at every `alloc`: the check is inlined, the folding (rare) is not.
    #[inline]
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.flush_pending();
        }
    }

    #[inline(never)]
    fn flush_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for v in pending {
            if let Err(e) = self.aux.push(v) {
                self.fail(e);
                return;
            }
        }
    }

    #[inline]
    fn push_aux(&mut self, v: Scalar) {
        if let Err(e) = self.aux.push(v) {
            self.fail(e);
        }
    }

    /// Appends one aux value, as `alloc` with a closure returning it would: for native witness
    /// generators, which compute the values themselves.
    #[inline]
    pub fn append_aux(&mut self, value: Scalar) {
        self.flush();
        if self.error.is_none() {
            self.push_aux(value);
        }
    }

    /// Appends `mask.count_ones()` 0/1 aux values — bit `i` of `bits` for every `i` set in
    /// `mask`, lowest first — as that many `alloc`s would, a bitmap word at a time.
    #[inline]
    pub fn append_aux_bits(&mut self, bits: u64, mask: u64) {
        self.flush();
        if self.error.is_none() {
            if let Err(e) = self.aux.push_bits(bits, mask) {
                self.fail(e);
            }
        }
    }

    fn push_inputs(&mut self, values: &[Scalar]) {
        if let Err(e) = self.inputs.try_reserve(values.len()) {
            self.fail(crate::pool::heap_error(values.len(), 32, &e));
            return;
        }
        self.inputs.extend_from_slice(values);
    }

    /// Whether a witness-generator method may run; records the misuse otherwise.
    fn generating(&mut self, method: &str) -> bool {
        self.flush();
        if self.error.is_some() {
            return false;
        }
        if !self.generator {
            self.fail(Error::InvalidArgument(format!(
                "circuit is malformed: {method} called on a witness system made without_generator()"
            )));
            return false;
        }
        true
    }

    fn grow_inputs(&mut self, n: usize) -> bool {
        if let Err(e) = self.inputs.try_reserve(n) {
            self.fail(crate::pool::heap_error(n, 32, &e));
            return false;
        }
        self.inputs.resize(self.inputs.len() + n, Scalar::ZERO);
        true
    }

    fn grow_pending(&mut self, n: usize) -> bool {
        if let Err(e) = self.pending.try_reserve(n) {
            self.fail(crate::pool::heap_error(n, 32, &e));
            return false;
        }
        self.pending.resize(n, Scalar::ZERO);
        true
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        WitnessCs::new()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.flush();
        let index = self.aux.len();
        if self.error.is_some() {
            return Ok(Variable::new_unchecked(Index::Aux(index)));
        }
        let value = f()?;
        self.push_aux(value);
        Ok(Variable::new_unchecked(Index::Aux(index)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let index = self.inputs.len();
        if self.error.is_some() {
            return Ok(Variable::new_unchecked(Index::Input(index)));
        }
        let value = f()?;
        self.push_inputs(&[value]);
        Ok(Variable::new_unchecked(Index::Input(index)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.trace.enforce(self.inputs.len(), self.num_aux());
        self.constraints += 1;
    }

    crate::r1cs::unnamed_namespaces!();

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.flush();
        if self.error.is_some() {
            return;
        }
        if let Some(e) = &other.error {
            self.fail(crate::pool::copy_error(e));
            return;
        }
        if other.aux_slice_asked.get() {
            self.aux_slice_asked.set(true);
        }
        self.trace
            .extend(self.inputs.len(), self.num_aux(), other.trace, other.constraints);
        self.constraints += other.constraints;
        self.generated += other.generated;
        // The other system's first input is its own "one", which coincides with ours.
        self.push_inputs(other.inputs.get(1..).unwrap_or(&[]));
        if let Err(e) = self.aux.append(&other.aux) {
            self.fail(e);
            return;
        }
        for &v in &other.pending {
            self.push_aux(v);
        }
    }

    fn is_witness_generator(&self) -> bool {
        self.generator
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        if self.generating("extend_inputs") {
            self.generated += new_inputs.len();
            self.push_inputs(new_inputs);
        }
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        if self.generating("extend_aux") {
            self.generated += new_aux.len();
            for &v in new_aux {
                self.push_aux(v);
            }
        }
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        if !self.generating("allocate_empty") || !self.grow_inputs(inputs_n) || !self.grow_pending(aux_n) {
            return (&mut [], &mut []);
        }
        self.generated += aux_n + inputs_n;
        let start = self.inputs.len() - inputs_n;
        (&mut self.pending[..], &mut self.inputs[start..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        if !self.generating("allocate_empty_inputs") || !self.grow_inputs(n) {
            return &mut [];
        }
        self.generated += n;
        let start = self.inputs.len() - n;
        &mut self.inputs[start..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        if !self.generating("allocate_empty_aux") || !self.grow_pending(n) {
            return &mut [];
        }
        self.generated += n;
        &mut self.pending[..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.aux_slice_asked.set(true);
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits appended a mask at a time (low ones, scattered, empty, full words, across word
    /// boundaries) land as the same values allocated one by one would, in the same compact form.
    #[test]
    fn appended_bits_equal_allocated_ones() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut appended = WitnessCs::new();
        let mut allocated = WitnessCs::new();
        for k in 0..400 {
            let (bits, r) = (next(), next());
            let mask = match k % 5 {
                0 => (1u64 << (r % 64)) - 1,
                1 => r,
                2 => 0,
                3 => u64::MAX,
                _ => r & (r >> 7),
            };
            appended.append_aux_bits(bits, mask);
            for i in (0..64).filter(|i| (mask >> i) & 1 == 1) {
                let v = if (bits >> i) & 1 == 1 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                };
                allocated.alloc(|| "b", || Ok(v)).unwrap();
            }
            if k % 7 == 0 {
                appended.append_aux(Scalar::from(r));
                allocated.alloc(|| "v", || Ok(Scalar::from(r))).unwrap();
            }
        }
        let (a, b) = (appended.finish("t").unwrap(), allocated.finish("t").unwrap());
        assert!(a.num_aux() > 10_000, "{} values", a.num_aux());
        assert_eq!(a.num_aux(), b.num_aux());
        assert_eq!(a.num_bits(), b.num_bits());
        assert_eq!(a.byte_size(), b.byte_size());
        assert_eq!(a.expand_aux().unwrap(), b.expand_aux().unwrap());
        for j in (0..a.num_aux()).step_by(97) {
            assert_eq!(a.aux_value(j), b.aux_value(j), "aux {j}");
        }
    }

    /// A region from `allocate_empty_aux`, filled after the call, lands in order with the
    /// values allocated around it; the generator values are counted.
    #[test]
    fn generator_regions_are_folded_in_order() {
        let mut cs = WitnessCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        cs.alloc(|| "a", || Ok(Scalar::from(5u64))).unwrap();
        let region = cs.allocate_empty_aux(3);
        region.copy_from_slice(&[Scalar::ONE, Scalar::from(7u64), Scalar::ZERO]);
        let b = cs.alloc(|| "b", || Ok(Scalar::from(9u64))).unwrap();
        assert_eq!(b, Variable::new_unchecked(Index::Aux(4)));
        let (aux, inputs) = cs.allocate_empty(1, 1);
        aux[0] = Scalar::from(11u64);
        inputs[0] = Scalar::from(13u64);
        cs.extend_aux(&[Scalar::from(2u64)]);
        let w = cs.finish("t").unwrap();
        let expected: Vec<Scalar> = [5u64, 1, 7, 0, 9, 11, 2].iter().map(|&v| Scalar::from(v)).collect();
        assert_eq!(w.expand_aux().unwrap(), expected);
        assert_eq!(w.inputs(), &[Scalar::ONE, Scalar::from(13u64)]);
        assert_eq!(w.generated_values(), 3 + 2 + 1);
    }

    #[test]
    fn misuse_is_an_error_at_finish_not_a_panic() {
        let mut cs = WitnessCs::new().without_generator();
        assert!(!cs.is_witness_generator());
        assert!(cs.allocate_empty_aux(2).is_empty());
        assert!(matches!(cs.finish("t"), Err(Error::InvalidArgument(_))));
        let cs = WitnessCs::new();
        assert!(cs.aux_slice().is_empty());
        assert!(matches!(cs.finish("t"), Err(Error::Unsupported(_))));
    }
}
