//! The generated route of the witness path: a partition that comes with a native witness
//! generator (a Filecoin PoSt partition: `filecoin::native::post`) has its compact witness
//! written by the generator instead of by the circuit's gadgets — once the generator is
//! **validated** for the compiled circuit (its fingerprint) it is used with.
//!
//! Per partition ([`WitnessPath::synthesize_generated`]):
//! 1. Generators off (the prover's [`native witness`](crate::Prover::with_native_witness)
//!    option, `CUZK_NATIVE_WITNESS=0`), the witness path off, no usable compiled circuit, a
//!    witness-dependent type and shape, or the generator turned off for the type and shape or
//!    the fingerprint: the witness path's own policy, as for any circuit.
//! 2. The fingerprint not validated yet, and no other partition validating it: **validation**.
//!    The witness is computed by the gadgets ([`WitnessCs`], checked against the compiled
//!    circuit in full, the witness proved) and by the generator, and the two compared value
//!    for value. Equal: the fingerprint is validated (in memory; for cuzk's own generators
//!    also in `<circuit file>.validated` beside the compiled circuit's file, when there is a
//!    compiled-circuit directory, tied to this build: the next process of the same build skips
//!    the validation, another build validates again). Different (or
//!    the generator failed): the generator is off for that fingerprint, counted
//!    ([`WitnessStats::generator_refused`]) and warned with the first differing input or aux
//!    index and its constraint-system path. Other partitions of the fingerprint meanwhile go
//!    by the gadgets.
//! 3. Validated: the generator writes the witness (on every thread of the current rayon pool:
//!    the engine's synthesis threads, never more; one thread outside a pool), checked against
//!    the compiled circuit's type and input and aux counts (a generator makes no constraint
//!    and no structure trace: validation stands for them). A witness that does not fit the
//!    compiled circuit turns the generator off for the fingerprint and the partition goes by
//!    the gadgets (the circuit is not consumed by a generator). A generator that refuses its
//!    input (a malformed vanilla proof) fails that partition alone with its error, counted
//!    ([`WitnessStats::generator_input_errors`]): one bad request never turns a generator off.
//!
//! A Filecoin proof that fails verification turns the generator off for its type and shape
//! until restart ([`WitnessPath::generator_off`]), beside its retry by full synthesis.

use std::collections::HashSet;
use std::sync::OnceLock;

use bellpepper_core::{Circuit, ConstraintSystem};
use blstrs::Scalar;
use ff::Field;

use super::{Buffers, Key, Synthesis, WitnessHint, WitnessPath};
use crate::compiled::{CircuitShape, CompiledCircuit, Witness, WitnessCs};
use crate::error::{Error, Result};
use crate::params::Parameters;

/// A native witness generator of one partition: writes the circuit's public inputs (after the
/// "one", which the system holds already) and aux values into the system, on the given number
/// of threads of the current rayon pool.
pub(crate) type GenerateFn = Box<dyn Fn(&mut WitnessCs, usize) -> Result<()> + Send>;

/// A partition's native witness generator, and whether it is one of cuzk's own (the Filecoin
/// families'): only theirs have their validation kept across restarts, tied to this build.
pub(crate) struct Generator {
    pub(crate) generate: GenerateFn,
    pub(crate) own: bool,
}

/// The build a kept validation belongs to: cuzk's version and the running executable's size and
/// modification time (any rebuild of a binary that links cuzk changes it); `None` where the
/// executable cannot be read (validations are then not kept).
fn build_identity() -> Option<&'static str> {
    static IDENTITY: OnceLock<Option<String>> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            let meta = std::fs::metadata(exe).ok()?;
            let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(format!(
                "cuzk-{}:{}:{}.{:09}",
                env!("CARGO_PKG_VERSION"),
                meta.len(),
                mtime.as_secs(),
                mtime.subsec_nanos()
            ))
        })
        .as_deref()
}

/// The line that records a validation of the compiled circuit `fingerprint` by this build.
fn validation_line(fingerprint: u128, identity: &str) -> String {
    format!("{fingerprint:032x} {identity}")
}

/// The generators' books, beside the witness path's.
#[derive(Debug, Default)]
pub(super) struct GeneratorBooks {
    /// (type and shape, fingerprint) whose generated witness equalled the gadgets'.
    validated: HashSet<(Key, u128)>,
    /// Being validated now: other partitions go by the gadgets meanwhile.
    validating: HashSet<(Key, u128)>,
    /// A generated witness differed (or the generator failed): off for that fingerprint.
    refused: HashSet<(Key, u128)>,
    /// A proof failed verification: off for the type and shape until restart.
    off: HashSet<Key>,
}

/// Whether native witness generators are on by default: yes, unless `CUZK_NATIVE_WITNESS`
/// says `0`, `off` or `false` (read once per process).
pub(crate) fn native_witness_default() -> bool {
    static DEFAULT: OnceLock<bool> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let Some(v) = std::env::var_os("CUZK_NATIVE_WITNESS") else {
            return true;
        };
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        match v.as_str() {
            "" | "1" | "on" | "true" => true,
            "0" | "off" | "false" => {
                log::info!("cuzk: native witness generators are off by default (CUZK_NATIVE_WITNESS={v})");
                false
            }
            _ => {
                log::warn!("cuzk: CUZK_NATIVE_WITNESS={v:?} is not 0/1/on/off/true/false; generators stay on");
                true
            }
        }
    })
}

/// Releases a claim to validate a fingerprint, however the validation ends.
struct ValidationClaim<'a> {
    path: &'a WitnessPath,
    at: (Key, u128),
}

impl Drop for ValidationClaim<'_> {
    fn drop(&mut self) {
        self.path.books.lock().generators.validating.remove(&self.at);
    }
}

/// The threads a generator may use: those of the rayon pool it runs in (the engine's synthesis
/// threads), one outside any pool.
fn generator_threads() -> usize {
    if rayon::current_thread_index().is_some() {
        rayon::current_num_threads()
    } else {
        1
    }
}

/// Checks a generated witness against `compiled`: its type and its input and aux counts (the
/// rest of [`CompiledCircuit::check`] needs the constraints and structure trace that only a
/// synthesis makes; the generator's validation stands for them).
fn check_generated(compiled: &CompiledCircuit, witness: &Witness) -> Result<()> {
    let found = (witness.circuit_type(), witness.num_inputs(), witness.num_aux());
    let expected = (compiled.circuit_type(), compiled.num_inputs(), compiled.num_aux());
    if found != expected {
        return Err(Error::WitnessMismatch(format!(
            "generated witness (type, inputs, aux) {found:?}, compiled circuit (fingerprint {:032x}) {expected:?}",
            compiled.fingerprint()
        )));
    }
    Ok(())
}

impl WitnessPath {
    /// Synthesizes `circuit` for `params`, its witness written by `generate` where the module
    /// docs' policy allows (`on`: the witness path; `native`: generators).
    pub(crate) fn synthesize_generated<C: Circuit<Scalar> + Clone>(
        &self,
        (on, native): (bool, bool),
        circuit: C,
        generator: Generator,
        params: &Parameters,
        buffers: Buffers<'_>,
    ) -> Result<Synthesis> {
        let Generator { generate, own } = generator;
        let key: Key = (std::any::type_name::<C>(), CircuitShape::of_params(params));
        let usable = on && native && {
            let books = self.books.lock();
            !books.witness_dependent.contains(&key) && !books.generators.off.contains(&key)
        };
        if !usable {
            return self.synthesize(on, circuit, params, buffers);
        }
        let Some(compiled) = self.compiled_for(&key, params) else {
            return self.synthesize(on, circuit, params, buffers);
        };
        let at = (key, compiled.fingerprint());
        // cuzk's own generators: a validation this build kept beside the compiled circuit's file
        // (read while the fingerprint is neither validated nor refused in this process).
        let known = {
            let books = self.books.lock();
            books.generators.validated.contains(&at) || books.generators.refused.contains(&at)
        };
        let on_disk = own && !known && self.validation_on_disk(&at);
        let (validated, claim) = {
            let mut books = self.books.lock();
            let g = &mut books.generators;
            if g.refused.contains(&at) {
                (false, None)
            } else if g.validated.contains(&at) {
                (true, None)
            } else if on_disk {
                g.validated.insert(at);
                books.stats.generator_validations_read += 1;
                log::info!(
                    "{}: native witness generator validated for compiled circuit {:032x} by this build before (read from the compiled-circuit directory)",
                    key.0,
                    at.1
                );
                (true, None)
            } else if g.validating.insert(at) {
                (false, Some(ValidationClaim { path: self, at }))
            } else {
                (false, None)
            }
        };
        if validated {
            match self.generated(&generate, &compiled, &key, buffers) {
                Ok(witness) => {
                    self.count(|s| s.generated += 1);
                    return Ok(Synthesis::Witness {
                        circuit: compiled,
                        witness,
                    });
                }
                // Its witness does not fit the compiled circuit: the generator is wrong.
                Err(e @ Error::WitnessMismatch(_)) => self.refuse_generator(at, &format!("it failed: {e}")),
                // Its input was refused (a malformed vanilla proof, say): this partition fails,
                // and the generator, validated, stays on for every other one.
                Err(e) => {
                    self.count(|s| s.generator_input_errors += 1);
                    log::warn!(
                        "{}: native witness generator refused a partition's input (the partition fails; the generator stays on): {e}",
                        key.0
                    );
                    return Err(e);
                }
            }
        }
        let Some(claim) = claim else {
            return self.synthesize(on, circuit, params, buffers);
        };
        let spare = circuit.clone();
        let synthesis = self.synthesize(on, circuit, params, buffers)?;
        if let Synthesis::Witness { witness, .. } = &synthesis {
            let outcome = self.generated(&generate, &compiled, &key, Buffers { pool: None, ..buffers });
            match outcome {
                Ok(got) => match difference(witness, &got, spare) {
                    None => {
                        {
                            let mut books = self.books.lock();
                            books.generators.validated.insert(at);
                            books.stats.generator_validated += 1;
                        }
                        log::info!(
                            "{}: native witness generator validated for compiled circuit {:032x}",
                            key.0,
                            at.1
                        );
                        if own {
                            self.keep_validation(&at);
                        }
                    }
                    Some(d) => self.refuse_generator(at, &format!("its witness differs from the gadgets': {d}")),
                },
                Err(e) => self.refuse_generator(at, &format!("it failed: {e}")),
            }
        }
        drop(claim);
        Ok(synthesis)
    }

    /// Turns the generator off for the type and shape of a proof that failed verification,
    /// until restart. Returns whether it was on.
    /// Its validations kept on disk are forgotten too.
    pub(crate) fn generator_off(&self, circuit_type: &'static str, shape: CircuitShape) -> bool {
        let key = (circuit_type, shape);
        if let Some((path, _)) = self.validation_file(&key) {
            match std::fs::remove_file(&path) {
                Ok(()) => log::warn!(
                    "{circuit_type}: kept generator validations forgotten ({})",
                    path.display()
                ),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => log::warn!("forgetting generator validations in {}: {e}", path.display()),
            }
        }
        self.books.lock().generators.off.insert(key)
    }

    /// The generator's witness of `key` (into `buffers.pool` sized as the last witness, or
    /// the heap), checked against `compiled`'s counts.
    fn generated(
        &self,
        generate: &GenerateFn,
        compiled: &CompiledCircuit,
        key: &Key,
        buffers: Buffers<'_>,
    ) -> Result<Witness> {
        let mut cs = match buffers.pool {
            Some(pool) => WitnessCs::in_pool_sized(pool, key.1.aux, self.hint(key).others_capacity())?,
            None => WitnessCs::new(),
        };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        generate(&mut cs, generator_threads())?;
        let witness = cs.finish(key.0)?;
        check_generated(compiled, &witness)?;
        let witness = witness.vouched_by(compiled);
        if buffers.pool.is_some() {
            self.set_hint(*key, WitnessHint::of_witness(&witness));
        }
        Ok(witness)
    }

    /// The file beside the compiled circuit's where validations of cuzk's own generators are
    /// kept (`<circuit file>.validated`: a line per fingerprint and build); `None` without a
    /// compiled-circuit directory or a build identity.
    fn validation_file(&self, key: &Key) -> Option<(std::path::PathBuf, &'static str)> {
        let dir = self.compiled.dir()?;
        let name = crate::compiled::CompiledCircuits::file_name(key.0, key.1);
        Some((dir.join(format!("{name}.validated")), build_identity()?))
    }

    /// Whether this build validated the generator for `at`'s compiled circuit before.
    fn validation_on_disk(&self, at: &(Key, u128)) -> bool {
        let Some((path, identity)) = self.validation_file(&at.0) else {
            return false;
        };
        let line = validation_line(at.1, identity);
        std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(|l| l == line))
    }

    /// Keeps the validation of `at` for later processes of this build (a failure to write is
    /// logged: the next process validates again).
    fn keep_validation(&self, at: &(Key, u128)) {
        use std::io::Write;
        let Some((path, identity)) = self.validation_file(&at.0) else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{}", validation_line(at.1, identity)));
        if let Err(e) = written {
            log::warn!("keeping a generator validation in {}: {e}", path.display());
        }
    }

    fn refuse_generator(&self, at: (Key, u128), why: &str) {
        log::warn!(
            "{}: native witness generator off for compiled circuit {:032x}: {why}; its witnesses are computed by the gadgets",
            at.0 .0,
            at.1
        );
        let mut books = self.books.lock();
        books.generators.refused.insert(at);
        books.stats.generator_refused += 1;
    }
}

/// Past this many aux values, a difference is reported by its index alone.
const NAMED_BELOW_AUX: usize = 1 << 22;

/// The first value where `got` differs from `expected`, named by its constraint-system path
/// (the circuit `spare` run once more to find it).
fn difference<C: Circuit<Scalar>>(expected: &Witness, got: &Witness, spare: C) -> Option<String> {
    use crate::compiled::diff::first_differences;
    use crate::compiled::paths::AllocationPaths;
    let d = first_differences(expected, got);
    if d.is_empty() {
        return None;
    }
    // A path per allocation is a string per value: named below a few million values only
    // (a 32 GiB Window PoSt partition would hold gigabytes of them).
    if expected.num_aux() > NAMED_BELOW_AUX {
        return Some(format!("{d} (not named: over {NAMED_BELOW_AUX} aux values)"));
    }
    Some(match AllocationPaths::record(spare) {
        Ok(paths) => d.named(&paths).to_string(),
        Err(_) => d.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiled::CompiledCircuits;

    #[test]
    fn a_kept_validation_is_read_by_fingerprint_and_forgotten_when_the_generator_goes_off() {
        let dir = std::env::temp_dir().join(format!("cuzk-validations-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = WitnessPath {
            compiled: CompiledCircuits::with_dir(&dir),
            ..WitnessPath::default()
        };
        let shape = CircuitShape {
            inputs: 3,
            aux: 10,
            domain_size: 16,
        };
        let (a, b): (Key, Key) = (("circuit::A", shape), ("circuit::B", shape));
        assert!(build_identity().is_some(), "the test binary has an identity");
        assert!(!path.validation_on_disk(&(a, 7)));
        path.keep_validation(&(a, 7));
        path.keep_validation(&(a, 9));
        assert!(path.validation_on_disk(&(a, 7)) && path.validation_on_disk(&(a, 9)));
        assert!(!path.validation_on_disk(&(a, 8)), "another fingerprint");
        assert!(!path.validation_on_disk(&(b, 7)), "another type");
        // Memory only: nothing kept, nothing read.
        let memory = WitnessPath::default();
        memory.keep_validation(&(a, 7));
        assert!(!memory.validation_on_disk(&(a, 7)));
        // A failed verification turns the generator off and forgets its kept validations.
        assert!(path.generator_off(a.0, a.1));
        assert!(!path.validation_on_disk(&(a, 7)) && !path.validation_on_disk(&(a, 9)));
        assert!(!path.generator_off(a.0, a.1), "off already");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
