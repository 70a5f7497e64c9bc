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
//!    compiled-circuit directory — see *Kept validations* below). Different (or the generator
//!    failed, or wrote a witness that does not fit the compiled circuit, where the gadgets'
//!    fits): a **validation mismatch** — the generator is off for that fingerprint, counted
//!    ([`WitnessStats::generator_refused`]) and warned with the first differing input or aux
//!    index and its constraint-system path. Other partitions of the fingerprint meanwhile go
//!    by the gadgets.
//! 3. Validated: the generator writes the witness (on every thread of the current rayon pool:
//!    the engine's synthesis threads, never more; one thread outside a pool), checked against
//!    the compiled circuit's type and input and aux counts (a generator makes no constraint
//!    and no structure trace: validation stands for them). A generator that refuses the
//!    partition's inputs (it returns an error: cuzk's generators fail exactly where the
//!    circuit's construction or synthesis would, e.g. on a malformed vanilla proof), or writes
//!    a witness of other counts (inputs of another shape than the compiled circuit's), has met
//!    an **input error**: that partition fails with it, and so its job alone, counted
//!    ([`WitnessStats::generator_input_errors`]); the generator stays on and the type and
//!    shape stays on the witness path (the gadgets are not run on such inputs, so they cannot
//!    mark it witness-dependent). Out of memory is the partition's error, nothing more.
//!
//! Only a validation mismatch, or a Filecoin proof that fails verification, turns a generator
//! off: the latter for its type and shape until restart ([`WitnessPath::generator_off`]),
//! beside its retry by full synthesis.
//!
//! **Kept validations.** A line of `<circuit file>.validated` is a fingerprint and the digest
//! of what decides a generated witness besides the compiled circuit: cuzk's version, the
//! generators' sources and the resolved versions of the crates whose gadgets they mirror
//! (`filecoin/native/digest.rs`; `build.rs` computes it at build time). Nothing of the running
//! executable goes in: a library rebuilt with the same generators keeps them, one whose
//! generators or mirrored crates changed validates again. The file is read only when it is a
//! regular file (not a link) owned by the process's user and writable by no one else
//! (neither group nor others); another is refused, warned, and the generator validated again
//! (its validation then kept in memory only).

use std::collections::HashSet;
use std::os::unix::fs::OpenOptionsExt;
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

/// What a kept validation is tied to: the build-time digest of cuzk's version, its generators'
/// sources and the mirrored crates' versions (`CUZK_GENERATOR_DIGEST`, the `filecoin`
/// feature's build script); `None` without it (validations are then not kept). The crate's own
/// unit tests without `filecoin` use a fixed one.
fn generator_identity() -> Option<&'static str> {
    match option_env!("CUZK_GENERATOR_DIGEST") {
        Some(digest) => Some(digest),
        None if cfg!(test) => Some("unit-test"),
        None => None,
    }
}

/// The line that records a validation of the compiled circuit `fingerprint` by generators of
/// `identity`.
fn validation_line(fingerprint: u128, identity: &str) -> String {
    format!("{fingerprint:032x} generators-{identity}")
}

/// Why a kept-validation file is not trusted, if it is not: it must be a regular file owned by
/// `user` that no one else may write (no group or other write bit).
fn untrusted(meta: &std::fs::Metadata, user: u32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if !meta.file_type().is_file() {
        return Some("not a regular file".into());
    }
    if meta.uid() != user {
        return Some(format!("owned by user {}, not this process's ({user})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "writable by others (mode {:o}; group and others may not write it)",
            meta.mode() & 0o7777
        ));
    }
    None
}

/// The process's effective user.
fn process_user() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// The generators' books, beside the witness path's.
#[derive(Debug, Default)]
pub(super) struct GeneratorBooks {
    /// (type and shape, fingerprint) whose generated witness equalled the gadgets'.
    validated: HashSet<(Key, u128)>,
    /// Being validated now: other partitions go by the gadgets meanwhile.
    validating: HashSet<(Key, u128)>,
    /// A validation mismatch (a generated witness differed, or the generator failed where
    /// the gadgets did not): off for that fingerprint.
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

/// Why a generator gave no witness of its compiled circuit.
enum Failure {
    /// Out of memory (the pool exhausted, the host's refused): no word on the generator or the
    /// inputs.
    Memory(Error),
    /// The generator returned an error (it refused the partition's inputs), or its witness has
    /// other counts than the compiled circuit's.
    Witness(Error),
}

impl Failure {
    /// `e` as a failure: out of memory, or the generator's.
    fn of(e: Error) -> Self {
        match e {
            Error::PoolExhausted { .. } | Error::Allocation { .. } => Self::Memory(e),
            e => Self::Witness(e),
        }
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
            "the native generator's witness has (type, inputs, aux) {found:?}, the compiled circuit \
             (fingerprint {:032x}) {expected:?}: inputs of another shape than the circuit's",
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
            return match self.generated(&generate, &compiled, &key, buffers) {
                Ok(witness) => {
                    self.count(|s| s.generated += 1);
                    Ok(Synthesis::Witness {
                        circuit: compiled,
                        witness,
                    })
                }
                Err(Failure::Memory(e)) => Err(e),
                // An input error: this partition fails; the generator, validated, stays on.
                Err(Failure::Witness(e)) => {
                    self.count(|s| s.generator_input_errors += 1);
                    log::warn!(
                        "{}: native witness generator refused a partition's inputs (the partition fails; the generator stays on): {e}",
                        key.0
                    );
                    Err(e)
                }
            };
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
                Err(Failure::Witness(e)) => {
                    self.refuse_generator(at, &format!("it failed on inputs the gadgets took: {e}"))
                }
                Err(Failure::Memory(e)) => log::warn!(
                    "{}: native witness generator not validated for compiled circuit {:032x} this time: {e}",
                    key.0,
                    at.1
                ),
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
    ) -> std::result::Result<Witness, Failure> {
        let mut cs = match buffers.pool {
            Some(pool) => {
                WitnessCs::in_pool_sized(pool, key.1.aux, self.hint(key).others_capacity()).map_err(Failure::Memory)?
            }
            None => WitnessCs::new(),
        };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))
            .map_err(|e| Failure::of(e.into()))?;
        generate(&mut cs, generator_threads()).map_err(Failure::of)?;
        let witness = cs.finish(key.0).map_err(Failure::of)?;
        check_generated(compiled, &witness).map_err(Failure::Witness)?;
        let witness = witness.vouched_by(compiled);
        if buffers.pool.is_some() {
            self.set_hint(*key, WitnessHint::of_witness(&witness));
        }
        Ok(witness)
    }

    /// The file beside the compiled circuit's where validations of cuzk's own generators are
    /// kept (`<circuit file>.validated`: a line per fingerprint and generators' digest); `None`
    /// without a compiled-circuit directory or a digest.
    fn validation_file(&self, key: &Key) -> Option<(std::path::PathBuf, &'static str)> {
        let dir = self.compiled.dir()?;
        let name = crate::compiled::CompiledCircuits::file_name(key.0, key.1);
        Some((dir.join(format!("{name}.validated")), generator_identity()?))
    }

    /// Whether these generators were validated for `at`'s compiled circuit before (in a file
    /// the process trusts: see the module docs).
    fn validation_on_disk(&self, at: &(Key, u128)) -> bool {
        use std::io::Read;
        let Some((path, identity)) = self.validation_file(&at.0) else {
            return false;
        };
        // No link followed; a FIFO not waited on (it is refused as not a regular file).
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path);
        let mut file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
            Err(e) => {
                log::warn!("kept generator validations in {} not read: {e}", path.display());
                return false;
            }
        };
        let why = match file.metadata() {
            Ok(meta) => untrusted(&meta, process_user()),
            Err(e) => Some(format!("no metadata: {e}")),
        };
        if let Some(why) = why {
            log::warn!(
                "kept generator validations in {} not trusted ({why}): the generator is validated again",
                path.display()
            );
            return false;
        }
        let mut text = String::new();
        let line = validation_line(at.1, identity);
        file.read_to_string(&mut text).is_ok() && text.lines().any(|l| l == line)
    }

    /// Keeps the validation of `at` for later processes with these generators (a failure to
    /// write, or a file the process does not trust, is logged: the next process validates
    /// again).
    fn keep_validation(&self, at: &(Key, u128)) {
        use std::io::Write;
        let Some((path, identity)) = self.validation_file(&at.0) else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .and_then(|mut f| {
                if let Some(why) = untrusted(&f.metadata()?, process_user()) {
                    return Err(std::io::Error::other(format!("not trusted ({why})")));
                }
                writeln!(f, "{}", validation_line(at.1, identity))
            });
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
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::compiled::CompiledCircuits;

    /// A witness path over a fresh compiled-circuit directory named `what`.
    fn over_dir(what: &str) -> (std::path::PathBuf, WitnessPath) {
        let dir = std::env::temp_dir().join(format!("cuzk-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = WitnessPath {
            compiled: CompiledCircuits::with_dir(&dir),
            ..WitnessPath::default()
        };
        (dir, path)
    }

    const SHAPE: CircuitShape = CircuitShape {
        inputs: 3,
        aux: 10,
        domain_size: 16,
    };

    #[test]
    fn a_kept_validation_is_read_by_fingerprint_and_forgotten_when_the_generator_goes_off() {
        let (dir, path) = over_dir("validations");
        let (a, b): (Key, Key) = (("circuit::A", SHAPE), ("circuit::B", SHAPE));
        assert!(
            generator_identity().is_some(),
            "the test build has a generators' digest"
        );
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

    /// A validation is tied to the generators' digest alone: a line of another digest, or of
    /// the old identity (cuzk's version and the executable's size and modification time, which
    /// a rebuilt library loaded by the same program kept), is not read.
    #[test]
    fn a_kept_validation_of_other_generators_is_not_read() {
        let (dir, path) = over_dir("validation-identity");
        let a: Key = ("circuit::A", SHAPE);
        let (file, identity) = path.validation_file(&a).unwrap();
        assert_eq!(identity, generator_identity().unwrap());
        let exe = std::fs::metadata(std::env::current_exe().unwrap()).unwrap();
        let old = format!(
            "{:032x} cuzk-{}:{}:0.000000000",
            7,
            env!("CARGO_PKG_VERSION"),
            exe.len()
        );
        let other = format!("{:032x} generators-0123456789abcdef0123456789abcdef", 7);
        std::fs::write(&file, format!("{old}\n{other}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(!path.validation_on_disk(&(a, 7)));
        path.keep_validation(&(a, 7));
        assert!(path.validation_on_disk(&(a, 7)));
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            text.lines().last(),
            Some(format!("{:032x} generators-{identity}", 7).as_str())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The kept-validation file is trusted only as a regular file of the process's user that
    /// no one else may write: one writable by the group or others, a link, or (where the test
    /// may give it away: as root) one of another user is neither read nor written.
    #[test]
    fn a_kept_validation_is_read_only_from_a_file_the_process_owns_alone() {
        let (dir, path) = over_dir("validation-trust");
        let a: Key = ("circuit::A", SHAPE);
        let (file, _) = path.validation_file(&a).unwrap();
        path.keep_validation(&(a, 7));
        let mode = |m: u32| std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m)).unwrap();
        let lines = || std::fs::read_to_string(&file).unwrap().lines().count();
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o022,
            0,
            "made unwritable by others"
        );
        assert!(path.validation_on_disk(&(a, 7)));
        for open in [0o666, 0o646, 0o664] {
            mode(open);
            assert!(!path.validation_on_disk(&(a, 7)), "mode {open:o}");
            path.keep_validation(&(a, 9));
            assert_eq!(lines(), 1, "mode {open:o}: not written either");
        }
        mode(0o600);
        assert!(path.validation_on_disk(&(a, 7)), "the owner's alone again");

        // A link to a trusted file with the line is not followed.
        let target = dir.join("elsewhere");
        std::fs::rename(&file, &target).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();
        assert!(!path.validation_on_disk(&(a, 7)), "a link");
        std::fs::remove_file(&file).unwrap();
        std::fs::rename(&target, &file).unwrap();
        assert!(path.validation_on_disk(&(a, 7)));

        let meta = std::fs::metadata(&file).unwrap();
        let me = process_user();
        assert_eq!(untrusted(&meta, me), None);
        let why = untrusted(&meta, me.wrapping_add(1)).expect("another user's");
        assert!(why.contains("owned by user"), "{why}");
        assert!(
            untrusted(&std::fs::metadata(&dir).unwrap(), me).is_some(),
            "a directory"
        );
        if std::os::unix::fs::chown(&file, Some(me.wrapping_add(1)), None).is_ok() {
            assert!(!path.validation_on_disk(&(a, 7)), "given to another user");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
