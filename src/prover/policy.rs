//! Which path a circuit takes through [`Prover::prove`] and the engine: witness-only against
//! the compiled circuit of its type and shape, or full synthesis — recording the first of a
//! type and shape, so that the next ones take the witness path. Here are the two syntheses
//! ([`synthesize_full`], the witness path's own in [`WitnessPath`]), the compiled-circuit
//! cache's claims and books ([`WitnessStats`], the witness hints) and the witness path's
//! memory estimates for the engine; [`Prover`] calls them.
//!
//! The policy, per circuit ([`WitnessPath::synthesize`], called by `Prover::synthesize_planned`):
//! 1. The witness path off ([`Prover::with_witness_path`], `CUZK_WITNESS_PATH=0`): full
//!    synthesis, nothing recorded.
//! 2. A compiled circuit for (`type_name::<C>()`, [`CircuitShape::of_params`]) in the cache
//!    (memory, else its file), fitting the parameters: witness-only synthesis of the circuit
//!    ([`WitnessCs`], not a witness generator, so that every constraint is counted), checked
//!    against it ([`CompiledCircuit::check`]). A witness it refuses — or one the witness system
//!    cannot serve — is a **fallback**: warned, counted, and answered as
//!    [`Error::WitnessMismatch`] naming the circuit type (the circuit was consumed by the
//!    witness synthesis, and circuits need not be `Clone`, so it cannot be synthesized again
//!    here). The type and shape is then **witness-dependent**: this prover (and its clones)
//!    synthesizes it in full from then on, so proving the same circuit again succeeds. Never
//!    a wrong proof. Except a witness whose public input or aux counts are not the parameters':
//!    its inputs are of another shape, which no route proves with these parameters (a
//!    malformed request) — it fails with [`Error::CircuitMismatch`] as its full synthesis would, counted
//!    ([`WitnessStats::input_errors`]), and the type and shape stays on the witness path.
//! 3. None: full synthesis. The first to claim the type and shape records while it
//!    synthesizes (no extra pass) and puts the result in the cache (and its file); others that
//!    start meanwhile synthesize in full without recording. A stale or corrupt file is
//!    refused (warned, counted) and recorded again; a recording that fails is warned and not
//!    tried again for that type and shape by this prover (and its clones).
//!
//!
//! A partition that comes with a native witness generator (Filecoin's PoSt) may have its
//! witness written by the generator instead, once validated: [`generated`].
//!
//! [`Prover`]: super::Prover
//! [`Prover::prove`]: super::Prover::prove
//! [`Prover::with_witness_path`]: super::Prover::with_witness_path
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use parking_lot::Mutex;
use rayon::prelude::*;

use super::groth16::{check_compiled, AsWork, Work};
use crate::assignment::{CapacityHints, ProvingAssignment};
use crate::compiled::{CircuitShape, CompiledCircuit, CompiledCircuits, Witness, WitnessCs};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;

mod generated;
pub(crate) use generated::{native_witness_default, Generator};

/// What the witness path did, counted per synthesis by a prover and its clones
/// ([`Prover::witness_stats`](super::Prover::witness_stats); the engine reports its provers' in
/// [`EngineStats::witness`](crate::engine::EngineStats::witness)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WitnessStats {
    /// Compiled circuits recorded (during a full synthesis) and kept.
    pub recorded: u64,
    /// Circuits synthesized witness-only and accepted by their compiled circuit.
    pub witness: u64,
    /// Circuits whose witness a native generator wrote (validated for their compiled circuit;
    /// not counted in `witness`).
    pub generated: u64,
    /// Native generators validated: the first witness of a compiled circuit computed by both
    /// the gadgets (counted in `witness`) and the generator, and equal.
    pub generator_validated: u64,
    /// Validations of cuzk's own generators read from the compiled-circuit directory: made by
    /// an earlier process of the same build for the same compiled circuit (not counted in
    /// `generator_validated`; no gadget synthesis was needed).
    pub generator_validations_read: u64,
    /// Native generators turned off for a compiled circuit by a validation mismatch: their
    /// witness differed from the gadgets' at validation, or they failed (or wrote a witness that
    /// does not fit the compiled circuit) where the gadgets did not. Its witnesses are computed
    /// by the gadgets.
    pub generator_refused: u64,
    /// Partitions whose validated generator refused their inputs (it returned an error, as on a
    /// malformed vanilla proof) or wrote a witness of other counts than the compiled circuit's
    /// (inputs of another shape): each failed its job with that error; the generator stays on.
    pub generator_input_errors: u64,
    /// Circuits synthesized in full: the recording ones, the fallbacks, those that started
    /// while their type and shape was being recorded, and every one with the path off.
    pub full: u64,
    /// Witnesses refused (another structure, or a circuit the witness system cannot serve),
    /// each answered as [`Error::WitnessMismatch`]; their type and shape is synthesized in
    /// full from then on.
    pub fallbacks: u64,
    /// Circuits whose witness (by the gadgets) has other public input or aux counts than their
    /// parameters (and compiled circuit): inputs of another shape, which no route proves with
    /// these parameters — a malformed request. Each failed with [`Error::CircuitMismatch`], as
    /// its full synthesis would; not a fallback: their type and shape stays on the witness path.
    pub input_errors: u64,
    /// Recordings that failed ([`Error::Recording`]): the synthesis was proved as usual, the
    /// type and shape is not recorded again.
    pub recording_failures: u64,
    /// Compiled circuits refused before use: a stale, corrupt or unreadable file, or a circuit
    /// that does not fit the parameters. Recorded again.
    pub compiled_refused: u64,
}

/// A circuit type's name and the shape of the parameters it is proved with.
type Key = (&'static str, CircuitShape);

/// What the last witness of a type and shape looked like: how the next one is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WitnessHint {
    /// Aux values that were not 0 or 1.
    pub(crate) others: usize,
    /// Whether the witness was stored dense (few bits).
    pub(crate) dense: bool,
}

impl WitnessHint {
    /// Before any witness: an eighth of aux not bits, compact.
    fn default_for(shape: CircuitShape) -> Self {
        Self {
            others: crate::compiled::default_others(shape.aux),
            dense: false,
        }
    }

    /// Room for the values that are not bits: the last count and a margin (witnesses of one
    /// structure differ in how many values happen to be 0 or 1).
    fn others_capacity(&self) -> usize {
        self.others.saturating_add(self.others / 64).saturating_add(1 << 10)
    }

    fn of_aux(aux: &[Scalar]) -> Self {
        let bits = aux.par_iter().filter(|v| crate::compiled::bit_of(v).is_some()).count();
        Self {
            others: aux.len() - bits,
            dense: (bits as u128) * 100 < u128::from(crate::compiled::DEFAULT_DENSE_BELOW_PERCENT) * aux.len() as u128,
        }
    }

    fn of_witness(w: &Witness) -> Self {
        Self {
            others: w.num_aux() - w.num_bits(),
            dense: !w.is_compact(),
        }
    }
}

/// The byte sizes of the pool checkouts a witness synthesis of `shape` sized by `hint` makes:
/// the two bitmaps, the values that are not bits, and the dense copy when it ends dense
/// (made while the compact form is still held).
pub(crate) fn witness_requests(shape: CircuitShape, hint: WitnessHint) -> [usize; 4] {
    let words = crate::compiled::bitmap_words(shape.aux);
    [
        words.saturating_mul(8),
        words.saturating_mul(8),
        hint.others_capacity().saturating_mul(32),
        if hint.dense {
            shape.aux.max(1).saturating_mul(32)
        } else {
            0
        },
    ]
}

/// Heap bytes a witness of `shape` holds beside its pool buffers: the inputs and the index of
/// the bitmap words.
pub(crate) fn witness_heap_bytes(shape: CircuitShape) -> usize {
    shape
        .inputs
        .saturating_mul(32)
        .saturating_add(crate::compiled::bitmap_words(shape.aux).saturating_mul(4))
}

/// How a witness-path partition of a type and shape is estimated before its synthesis.
#[derive(Debug, Clone)]
pub(crate) struct WitnessEstimate {
    pub(crate) circuit: Arc<CompiledCircuit>,
    /// The synthesis' pool checkouts ([`witness_requests`]).
    pub(crate) requests: [usize; 4],
    /// Its heap bytes ([`witness_heap_bytes`]).
    pub(crate) heap: usize,
}

/// What synthesis made of a circuit: an assignment, or a checked witness of a compiled
/// circuit.
#[derive(Debug)]
pub(crate) enum Synthesis {
    /// Full synthesis (a/b/c in pool buffers).
    Full(Box<ProvingAssignment>),
    /// Witness-only, checked against `circuit` (and `circuit` against the parameters).
    Witness {
        circuit: Arc<CompiledCircuit>,
        witness: Witness,
    },
}

impl AsWork for Synthesis {
    fn work(&mut self) -> Work<'_> {
        match self {
            Synthesis::Full(a) => Work::Full(a),
            Synthesis::Witness { circuit, witness } => Work::Witness { circuit, witness },
        }
    }
}

/// The witness path's state, shared by a prover's clones: the compiled circuits and the books.
#[derive(Debug, Clone, Default)]
pub(crate) struct WitnessPath {
    pub(crate) compiled: CompiledCircuits,
    books: Arc<Mutex<Books>>,
}

#[derive(Debug, Default)]
struct Books {
    /// Types and shapes being recorded now.
    recording: HashSet<Key>,
    /// Types and shapes whose recording failed: not tried again.
    unrecordable: HashSet<Key>,
    /// Types and shapes whose file was refused: the directory is not read for them again
    /// (the next recording replaces the file).
    refused_files: HashSet<Key>,
    /// Types and shapes a witness of which its compiled circuit refused: synthesized in full
    /// from then on (their structure depends on their witness).
    witness_dependent: HashSet<Key>,
    hints: HashMap<Key, WitnessHint>,
    stats: WitnessStats,
    /// The native generators' validations.
    generators: generated::GeneratorBooks,
}

/// Releases a claim to record a type and shape, however the recording ends.
struct RecordingClaim<'a> {
    path: &'a WitnessPath,
    key: Key,
}

impl Drop for RecordingClaim<'_> {
    fn drop(&mut self) {
        self.path.books.lock().recording.remove(&self.key);
    }
}

/// Whether the witness path is on by default: yes, unless `CUZK_WITNESS_PATH` says `0`,
/// `off` or `false` (read once per process).
pub(crate) fn witness_path_default() -> bool {
    static DEFAULT: OnceLock<bool> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let Some(v) = std::env::var_os("CUZK_WITNESS_PATH") else {
            return true;
        };
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        match v.as_str() {
            "" | "1" | "on" | "true" => true,
            "0" | "off" | "false" => {
                log::info!("cuzk: the witness path is off by default (CUZK_WITNESS_PATH={v})");
                false
            }
            _ => {
                log::warn!("cuzk: CUZK_WITNESS_PATH={v:?} is not 0/1/on/off/true/false; the witness path stays on");
                true
            }
        }
    })
}

/// Why a witness-only synthesis gave no witness.
enum NoWitness {
    /// Its public input or aux counts are not the parameters': the circuit's inputs are of
    /// another shape, which no route proves with these parameters (the partition's error).
    OtherShape(Error),
    /// Anything else: a fallback ([`falls_back`]) or the circuit's own error.
    Failed(Error),
}

/// Whether a failed witness synthesis (or check) is a fallback: the witness belongs to
/// another structure, or the witness system cannot serve the circuit. The circuit's own errors
/// and out-of-memory are returned as they are (full synthesis would meet them too).
fn falls_back(e: &Error) -> bool {
    matches!(
        e,
        Error::WitnessMismatch(_) | Error::Unsupported(_) | Error::InvalidArgument(_)
    )
}

/// Where a synthesis puts its values: the prover's pool (or the heap) and its capacity hints.
#[derive(Clone, Copy)]
pub(crate) struct Buffers<'a> {
    pub(crate) pool: Option<&'a PinnedPool>,
    pub(crate) hints: &'a CapacityHints,
}

/// Synthesizes `circuit` in full into a new assignment (pinned when there is a pool, sized by
/// the hint of the circuit's type at `domain` when there is one) and records its sizes as the
/// next hint.
pub(crate) fn synthesize_full<C: Circuit<Scalar>>(
    circuit: C,
    domain: Option<usize>,
    buffers: Buffers<'_>,
) -> Result<ProvingAssignment> {
    let key = std::any::type_name::<C>();
    let mut cs = match buffers.pool {
        Some(pool) => ProvingAssignment::new_with_pinned(pool, buffers.hints.get(key, domain))?,
        None => ProvingAssignment::new_heap(),
    };
    cs.start()?;
    circuit.synthesize(&mut cs)?;
    cs.finish()?;
    buffers.hints.record(key, cs.capacity_hint());
    Ok(cs)
}

impl WitnessPath {
    pub(crate) fn with_cache(compiled: CompiledCircuits) -> Self {
        Self {
            compiled,
            books: Default::default(),
        }
    }

    fn count(&self, f: impl FnOnce(&mut WitnessStats)) {
        f(&mut self.books.lock().stats);
    }

    fn hint(&self, key: &Key) -> WitnessHint {
        self.books
            .lock()
            .hints
            .get(key)
            .copied()
            .unwrap_or_else(|| WitnessHint::default_for(key.1))
    }

    fn set_hint(&self, key: Key, hint: WitnessHint) {
        self.books.lock().hints.insert(key, hint);
    }

    /// What the witness path did so far, counted by every holder of these books.
    pub(crate) fn stats(&self) -> WitnessStats {
        self.books.lock().stats
    }

    /// Synthesizes `circuit` for `params` by the policy of the module docs (`on`: whether the
    /// witness path is on).
    pub(crate) fn synthesize<C: Circuit<Scalar>>(
        &self,
        on: bool,
        circuit: C,
        params: &Parameters,
        buffers: Buffers<'_>,
    ) -> Result<Synthesis> {
        let key: Key = (std::any::type_name::<C>(), CircuitShape::of_params(params));
        if on && !self.books.lock().witness_dependent.contains(&key) {
            if let Some(compiled) = self.compiled_for(&key, params) {
                return match self.witness_of(circuit, &compiled, &key, buffers.pool) {
                    Ok(witness) => {
                        self.count(|s| s.witness += 1);
                        Ok(Synthesis::Witness {
                            circuit: compiled,
                            witness,
                        })
                    }
                    Err(NoWitness::OtherShape(e)) => {
                        self.count(|s| s.input_errors += 1);
                        log::warn!(
                            "{}: a circuit's inputs are of another shape than its parameters' (it fails; the type and shape stays on the witness path): {e}",
                            key.0
                        );
                        Err(e)
                    }
                    Err(NoWitness::Failed(e)) if falls_back(&e) => Err(self.refused(key, &e)),
                    Err(NoWitness::Failed(e)) => Err(e),
                };
            }
            if let Some(claim) = self.claim_recording(key) {
                return self.record(circuit, params, claim, buffers);
            }
        }
        let a = synthesize_full(circuit, Some(params.domain_size()), buffers)?;
        self.count(|s| s.full += 1);
        Ok(Synthesis::Full(Box::new(a)))
    }

    /// Books a witness of `key` that its compiled circuit refused (`e`): the type and shape is
    /// witness-dependent from now on; the error the caller gets.
    fn refused(&self, key: Key, e: &Error) -> Error {
        log::warn!(
            "{}: witness refused ({e}); this type and shape is synthesized in full from now on",
            key.0
        );
        let mut books = self.books.lock();
        books.witness_dependent.insert(key);
        books.stats.fallbacks += 1;
        Error::WitnessMismatch(format!(
            "{}: the witness was refused by the compiled circuit of its type and shape ({e}); \
             the circuit was consumed: prove it again, its type and shape is synthesized in full \
             from now on",
            key.0
        ))
    }

    /// The compiled circuit of `key` if there is a usable one (in memory, else in its file),
    /// fitting `params`.
    fn compiled_for(&self, key: &Key, params: &Parameters) -> Option<Arc<CompiledCircuit>> {
        let cache = &self.compiled;
        let skip_file = self.books.lock().refused_files.contains(key);
        let found = if skip_file {
            Ok(cache.get_in_memory(key.0, key.1))
        } else {
            cache.get(key.0, key.1)
        };
        let compiled = match found {
            Ok(c) => c?,
            Err(e) => {
                log::warn!("{}: compiled circuit refused ({e}); recording it again", key.0);
                let mut books = self.books.lock();
                books.refused_files.insert(*key);
                books.stats.compiled_refused += 1;
                return None;
            }
        };
        if let Err(e) = check_compiled(&compiled, params) {
            log::warn!("{}: compiled circuit refused ({e}); recording it again", key.0);
            self.count(|s| s.compiled_refused += 1);
            return None;
        }
        Some(compiled)
    }

    /// Witness-only synthesis of `circuit` (into `pool`, sized by the last witness of its
    /// type and shape), checked against `compiled`.
    fn witness_of<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        compiled: &CompiledCircuit,
        key: &Key,
        pool: Option<&PinnedPool>,
    ) -> std::result::Result<Witness, NoWitness> {
        let cs = match pool {
            Some(pool) => WitnessCs::in_pool_sized(pool, key.1.aux, self.hint(key).others_capacity())
                .map_err(NoWitness::Failed)?,
            None => WitnessCs::new(),
        };
        let witness = cs.without_generator().synthesize(circuit).map_err(NoWitness::Failed)?;
        // The key's shape is the parameters' (and the compiled circuit's): a witness of other
        // counts is of inputs no route proves with them, not of another structure.
        let (inputs, aux) = (witness.num_inputs(), witness.num_aux());
        if (inputs, aux) != (key.1.inputs, key.1.aux) {
            return Err(NoWitness::OtherShape(Error::CircuitMismatch(format!(
                "{}: the witness has {inputs} public inputs (the one included) and {aux} aux \
                 variables, the parameters {} and {}: inputs of another shape than the circuit's \
                 (a malformed request)",
                key.0, key.1.inputs, key.1.aux
            ))));
        }
        compiled.check(&witness).map_err(NoWitness::Failed)?;
        self.set_hint(*key, WitnessHint::of_witness(&witness));
        Ok(witness)
    }

    /// Claims the recording of `key` unless it is under way or failed before.
    fn claim_recording(&self, key: Key) -> Option<RecordingClaim<'_>> {
        let mut books = self.books.lock();
        if books.unrecordable.contains(&key) || !books.recording.insert(key) {
            return None;
        }
        Some(RecordingClaim { path: self, key })
    }

    /// Full synthesis of `circuit` that records its A, B, C; the compiled circuit goes into the
    /// cache when it fits `params`.
    fn record<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        params: &Parameters,
        claim: RecordingClaim<'_>,
        buffers: Buffers<'_>,
    ) -> Result<Synthesis> {
        let key = claim.key;
        let start = Instant::now();
        let cs = match buffers.pool {
            Some(pool) => {
                ProvingAssignment::new_with_pinned(pool, buffers.hints.get(key.0, Some(params.domain_size())))?
            }
            None => ProvingAssignment::new_heap(),
        };
        let mut cs = cs.with_recording();
        cs.start()?;
        circuit.synthesize(&mut cs)?;
        cs.finish()?;
        buffers.hints.record(key.0, cs.capacity_hint());
        self.count(|s| s.full += 1);
        match CompiledCircuit::take_from(&mut cs, key.0) {
            Ok(compiled) => match check_compiled(&compiled, params) {
                Ok(()) => {
                    log::info!(
                        "{}: compiled circuit recorded ({} constraints, {} MiB) in {:.1} ms",
                        key.0,
                        compiled.num_constraints(),
                        compiled.byte_size() >> 20,
                        start.elapsed().as_secs_f64() * 1e3
                    );
                    self.set_hint(key, WitnessHint::of_aux(cs.aux_assignment()));
                    if let Err(e) = self.compiled.insert(Arc::new(compiled)) {
                        log::warn!("{}: compiled circuit kept in memory only: {e}", key.0);
                    }
                    let mut books = self.books.lock();
                    books.refused_files.remove(&key);
                    books.stats.recorded += 1;
                }
                // The proof of this assignment fails the same check with its own message.
                Err(e) => log::warn!("{}: recorded circuit not kept: {e}", key.0),
            },
            Err(e) => {
                log::warn!("{}: {e}; this type and shape is proved by full synthesis", key.0);
                let mut books = self.books.lock();
                books.unrecordable.insert(key);
                books.stats.recording_failures += 1;
            }
        }
        drop(claim);
        Ok(Synthesis::Full(Box::new(cs)))
    }

    /// How a witness-path partition of `circuit_type` proved with `params` will be sized, when
    /// its compiled circuit is in memory (no file is read: the engine asks under its lock).
    pub(crate) fn estimate(&self, circuit_type: &'static str, params: &Parameters) -> Option<WitnessEstimate> {
        let key: Key = (circuit_type, CircuitShape::of_params(params));
        let circuit = self.compiled.get_in_memory(key.0, key.1)?;
        Some(WitnessEstimate {
            circuit,
            requests: witness_requests(key.1, self.hint(&key)),
            heap: witness_heap_bytes(key.1),
        })
    }
}
