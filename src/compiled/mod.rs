//! Witness-only proving: a circuit's constraints recorded once, a compact witness per proof.
//!
//! Full synthesis spends most of its time building and evaluating every constraint's linear
//! combinations. Their *structure* is the same for every proof of a circuit type and shape;
//! only the witness changes. So:
//!
//! 1. **Record once.** The first partition of a type and shape is synthesized in full into a
//!    [`ProvingAssignment`](crate::ProvingAssignment) that records
//!    ([`ProvingAssignment::with_recording`](crate::ProvingAssignment::with_recording), or
//!    [`CompiledCircuit::record`]): every non-zero term of every `enforce`, as it is
//!    evaluated, goes into A, B, C in CSR form ([`Matrix`]); the input constraints the prover
//!    appends become the last rows. The result, a [`CompiledCircuit`], also holds the
//!    densities that synthesis tracked, the sizes, a structure trace and a 128-bit
//!    fingerprint. It is kept per (type, shape) in [`CompiledCircuits`] and optionally saved
//!    to a file (versioned, checksummed, memory-mapped on load: [`file`](mod@file)).
//! 2. **Witness only.** Every later partition is synthesized into a [`WitnessCs`]: it computes
//!    the inputs and aux values only (`enforce` never calls its closures) and writes aux
//!    compact ([`CompactAux`]: a bitmap of 0/1 values, their bits, the other values packed;
//!    dense when few are bits). Inputs stay dense.
//! 3. **Evaluate.** [`CompiledCircuit::check`] compares the [`Witness`] with the circuit, then
//!    [`CompiledCircuit::assignment`] expands aux and computes a = A·z, b = B·z, c = C·z over
//!    z = (inputs, aux) on the host (rayon), into pool buffers, and builds the
//!    `ProvingAssignment` that `Prover::prove_synthesized` proves unchanged.
//!    ([`CompiledCircuit::evaluate`] reads z straight from the compact witness, as the GPU
//!    will.)
//!
//! ## Invariants
//! - **Same bytes.** The a, b, c and densities of step 3 equal, element for element, those of
//!   full synthesis of the same witness: the recorder sees exactly the terms the assignment
//!   evaluates (bellpepper merges repeated variables into one term; a term whose coefficient
//!   is zero — written so, or cancelled — is skipped by both, and marks no density), field
//!   addition is exact in any order, and the densities are the very trackers synthesis
//!   filled. So the proof with the same r, s is byte-identical.
//! - **abc on this path** holds the same thing as on the full path: one evaluation of A, B, C
//!   per row, the input constraints last; `release_abc()` hands those three buffers back to the
//!   pool as before. The compact witness is separate: the expanded aux goes into the
//!   assignment (the MSMs need it); the compact form can be dropped once it is expanded.
//! - **Never a wrong proof.** A witness is evaluated only when it has the circuit's type,
//!   inputs, aux, constraint count (`enforce` calls, merged sub-systems' included) and
//!   structure trace; anything else is [`Error::WitnessMismatch`](crate::Error::WitnessMismatch)
//!   naming what differs.
//!
//! ## What the witness check catches, and what it does not
//! The structure trace is a hash of (inputs, aux) counted at every `enforce` and at every
//! merge of a sub-system, kept identically by the recorder and by `WitnessCs`. It catches a
//! circuit whose constraint or variable counts depend on the witness, and one whose counts
//! agree but whose allocations and constraints interleave differently (an extra constraint
//! here, one fewer there). It cannot catch a circuit whose linear combinations themselves
//! depend on the witness while every count and the interleaving stay the same (a
//! coefficient, or which variable a term names, chosen from a witness value): `WitnessCs`
//! never builds the linear combinations, that is its point. Such a circuit is not one R1CS
//! — its parameters fit only one of its structures — and it is outside what Groth16 setup
//! supports. A circuit that writes values through the witness-generator methods
//! (`allocate_empty`, `extend_aux`: neptune's Poseidon when `is_witness_generator()`) hides
//! the constraints of those values from the count, so such a witness is refused; synthesize
//! it with [`WitnessCs::without_generator`] (its gadgets then take their constraint path,
//! counted in full).
//!
//! ## Layers
//! `record` sits below [`crate::assignment`] (the assignment feeds it terms; it knows
//! nothing of the assignment); the rest sits above and builds assignments.
//!
//! ## Code map
//! - [`hash`]: the 128-bit hash (fingerprints, checksums) and the structure trace.
//! - [`matrix`]: one CSR matrix, its column and coefficient encodings.
//! - `store`: arrays owned or inside a file mapping (the one unsafe view of mapped bytes).
//! - `record`: the recorder the assignment carries.
//! - `circuit`: [`CompiledCircuit`], [`CircuitShape`], the witness check, recording entry.
//! - [`file`](mod@file): the file format, save and load.
//! - `cache`: [`CompiledCircuits`].
//! - `compact`: [`CompactAux`], the 0/1 values as bits.
//! - `witness`: [`WitnessCs`], [`Witness`].
//! - `evaluate`: a, b, c on the host, the assignment built from them.

mod cache;
mod circuit;
mod compact;
mod evaluate;
pub mod file;
pub mod hash;
pub mod matrix;
pub(crate) mod record;
mod store;
mod witness;

pub use cache::CompiledCircuits;
pub use circuit::{CircuitShape, CompiledCircuit};
pub use compact::CompactAux;
pub use evaluate::Abc;
pub use matrix::{Coefficient, Matrix};
pub use witness::{Witness, WitnessAux, WitnessCs, DEFAULT_DENSE_BELOW_PERCENT};
