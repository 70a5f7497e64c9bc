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
//!    to a file (versioned, checksummed, read into memory and checked on load:
//!    [`file`](mod@file)).
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
//! ## Who uses it
//! **By default, [`Prover::prove`](crate::Prover::prove) and its siblings and the engine's
//! circuit partitions** ([`Partition::circuit`](crate::engine::Partition::circuit)): per
//! circuit, witness-only when the prover's [`CompiledCircuits`] has a circuit for
//! (`type_name::<C>()`, [`CircuitShape::of_params`]), else full synthesis — the first of a type
//! and shape recording (in the same pass), the others meanwhile plain. A witness the compiled
//! circuit refuses is a counted fallback to full synthesis (logged at warn); a stale or corrupt
//! file is refused and recorded again ([`Prover::witness_stats`](crate::Prover::witness_stats)).
//! The witness is synthesized with [`WitnessCs::without_generator`], so that gadgets with a
//! witness-generator shortcut count their constraints. Off with
//! [`Prover::with_witness_path`](crate::Prover::with_witness_path)`(false)`,
//! [`EngineConfig::witness_path`](crate::engine::EngineConfig::witness_path) or
//! `CUZK_WITNESS_PATH=0`; a directory of files with
//! [`Prover::with_compiled_dir`](crate::Prover::with_compiled_dir) or
//! [`EngineConfig::compiled_dir`](crate::engine::EngineConfig::compiled_dir). The policy (which
//! path a circuit takes) is the prover's `WitnessPath` (`prover::policy`), which
//! `Prover::synthesize_planned` asks; [`Prover::synthesize`](crate::Prover::synthesize),
//! [`Prover::prove_synthesized`](crate::Prover::prove_synthesized) and assignments given to the
//! engine or the C ABI are full synthesis, as before.
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
//!   Between synthesis and proof a witness-path partition holds **no a/b/c**: only its compact
//!   witness (in pool buffers, `Witness::byte_size` bytes and their page rounding). a, b, c
//!   and the expanded aux exist only while it is proved — in pool buffers, handed back once H
//!   is computed, when the backend evaluates on the host (the CPU backend, or the CUDA backend
//!   when the circuit does not fit on the device), on the device otherwise. So the pool
//!   statistics keep their meaning (every checkout counted, `bytes_in_use` back to 0 after each
//!   proof); the engine's budget reserves the compact witness per partition, the checkouts its
//!   proof makes ([`Backend::witness_pool_requests`](crate::prover::Backend::witness_pool_requests))
//!   and each compiled circuit once ([`crate::engine::budget`]).
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
//! The recording itself — the recorder, the matrices, their hash and storage, the density
//! trackers — lives in `crate::r1cs`, below the assignment (the assignment feeds the recorder
//! terms and knows nothing of `compiled`). `compiled` sits above both: it builds a
//! [`CompiledCircuit`] from a recording ([`CompiledCircuit::take_from`]), saves and loads it,
//! synthesizes witnesses and builds assignments from them. Inside, the files import one way:
//! `evaluate` → `circuit` → `witness` → `compact`; `file` and `cache` → `circuit`. Above
//! `compiled`: the prover (its witness path: which circuit takes which path, the cache, the
//! statistics; the backends' `witness_commitments`) and the engine (its budget). `compiled`
//! uses neither.
//!
//! ## Code map
//! - [`hash`], [`matrix`]: re-exported from `crate::r1cs` (the 128-bit hash and the structure
//!   trace; one CSR matrix, its column and coefficient encodings).
//! - `circuit`: [`CompiledCircuit`] (built from a recording), [`CircuitShape`], the witness
//!   check, recording entry.
//! - [`file`](mod@file): the file format, save and load.
//! - `cache`: [`CompiledCircuits`].
//! - `compact`: [`CompactAux`], the 0/1 values as bits.
//! - `witness`: [`WitnessCs`], [`Witness`].
//! - `evaluate`: a, b, c on the host, the assignment built from them.
//! - `diff`, `paths` (development tools, hidden): where two witnesses first differ, named by the
//!   constraint-system path of the allocation ([`paths::PathCs`] records them) — how native
//!   witness generators are built and checked, and how the generated route names a refusal.

mod cache;
mod circuit;
mod compact;
#[doc(hidden)]
pub mod diff;
mod evaluate;
pub mod file;
pub mod packed;
#[doc(hidden)]
pub mod paths;
mod witness;

pub use crate::r1cs::{hash, matrix};

pub use cache::CompiledCircuits;
pub use circuit::{CircuitShape, CompiledCircuit};
pub use compact::CompactAux;
pub(crate) use compact::{bit_of, bitmap_words, default_others};
pub use evaluate::Abc;
pub use matrix::{Coefficient, Matrix};
pub use packed::{PackedCircuit, PackedIndex, PackedMatrix};
pub use witness::{Witness, WitnessAux, WitnessCs, DEFAULT_DENSE_BELOW_PERCENT};
