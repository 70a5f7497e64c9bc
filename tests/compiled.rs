//! Witness-only proving on the host: a circuit recorded during one full synthesis, later
//! witnesses synthesized witness-only and evaluated against it, give the a/b/c, densities and
//! proof bytes of full synthesis; whatever does not belong is refused.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use cuzk::compiled::{CircuitShape, CompiledCircuit, CompiledCircuits, WitnessCs};
use cuzk::testing::Synthetic;
use cuzk::{BackendChoice, Circuit, Error, PinnedPool, PoolConfig, Prover, ProvingAssignment};
use ff::Field;
use rand::RngCore;

fn cpu() -> Prover {
    Prover::new().with_backend(BackendChoice::Cpu).unwrap()
}

/// Full synthesis of `circuit`, as the prover does it.
fn full<C: Circuit<Scalar>>(circuit: C) -> ProvingAssignment {
    cpu().synthesize(circuit).unwrap()
}

/// Everything the prover reads from an assignment is equal.
fn assert_same(label: &str, full: &ProvingAssignment, ours: &ProvingAssignment) {
    assert_eq!(full.num_constraints(), ours.num_constraints(), "{label}: rows");
    for (name, x, y) in [
        ("a", full.a(), ours.a()),
        ("b", full.b(), ours.b()),
        ("c", full.c(), ours.c()),
    ] {
        if let Some(i) = (0..x.len()).find(|&i| x[i] != y[i]) {
            panic!("{label}: {name}[{i}] differs");
        }
        assert_eq!(x.len(), y.len(), "{label}: {name} length");
    }
    assert_eq!(full.input_assignment(), ours.input_assignment(), "{label}: inputs");
    assert_eq!(full.aux_assignment(), ours.aux_assignment(), "{label}: aux");
    assert_eq!(full.a_aux_density(), ours.a_aux_density(), "{label}: A aux density");
    assert_eq!(
        full.b_input_density(),
        ours.b_input_density(),
        "{label}: B input density"
    );
    assert_eq!(full.b_aux_density(), ours.b_aux_density(), "{label}: B aux density");
}

/// Records `first`, then for `second` compares witness-only + evaluation (heap and pool,
/// compact-direct evaluation too) against full synthesis.
fn check_paths<C: Circuit<Scalar> + Clone>(label: &str, first: C, second: C) -> Arc<CompiledCircuit> {
    let (recorded_pa, compiled) = CompiledCircuit::record(first.clone(), None, None).unwrap();
    // The recording assignment is an ordinary one.
    assert_same(&format!("{label} (recording pass)"), &full(first), &recorded_pa);
    let expected = full(second.clone());
    let witness = WitnessCs::new().synthesize(second.clone()).unwrap();
    let heap = compiled.assignment(&witness, None).unwrap();
    assert_same(&format!("{label} (heap)"), &expected, &heap);
    let pool = PinnedPool::heap(PoolConfig::default());
    let pooled = compiled.assignment(&witness, Some(&pool)).unwrap();
    assert!(pooled.a().len() == expected.a().len());
    assert_same(&format!("{label} (pool)"), &expected, &pooled);
    drop(pooled);
    assert_eq!(pool.stats().bytes_in_use, 0, "{label}: buffers back in the pool");
    let abc = compiled.evaluate(&witness).unwrap();
    assert_eq!(abc.a.as_slice(), expected.a(), "{label}: compact-direct a");
    assert_eq!(abc.b.as_slice(), expected.b(), "{label}: compact-direct b");
    assert_eq!(abc.c.as_slice(), expected.c(), "{label}: compact-direct c");
    let dense = compiled
        .evaluate_dense(expected.input_assignment(), expected.aux_assignment())
        .unwrap();
    assert_eq!(dense, abc, "{label}: dense and compact evaluation");
    // The witness itself.
    assert_eq!(
        witness.expand_aux().unwrap().as_slice(),
        expected.aux_assignment(),
        "{label}"
    );
    let bits = expected
        .aux_assignment()
        .iter()
        .filter(|v| **v == Scalar::ZERO || **v == Scalar::ONE)
        .count();
    assert_eq!(witness.num_bits(), bits, "{label}: 0/1 count");
    for j in [
        0,
        expected.aux_assignment().len() / 2,
        expected.aux_assignment().len().saturating_sub(1),
    ] {
        assert_eq!(
            witness.aux_value(j),
            expected.aux_assignment().get(j).copied(),
            "{label}: aux {j}"
        );
    }
    // The compiled densities are what the matrices say: a column is dense iff some stored
    // term names it.
    let n_in = compiled.num_inputs();
    let mut a_aux = vec![false; compiled.num_aux()];
    for &c in compiled.a().columns() {
        if c as usize >= n_in {
            a_aux[c as usize - n_in] = true;
        }
    }
    for (j, &set) in a_aux.iter().enumerate() {
        assert_eq!(compiled.a_aux_density().is_set(j), set, "{label}: A density of aux {j}");
    }
    Arc::new(compiled)
}

#[test]
fn synthetic_circuits_evaluate_as_full_synthesis() {
    for (bits, inputs) in [(75, 2), (98, 5), (0, 1), (100, 0)] {
        let shape = Synthetic {
            bit_percent: bits,
            public_inputs: inputs,
            ..Synthetic::new(11)
        };
        let label = format!("synthetic {bits}% bits, {inputs} inputs");
        let compiled = check_paths(
            &label,
            shape.clone().with_seed(1),
            shape.clone().with_seed(rand::random()),
        );
        assert_eq!(compiled.num_constraints(), 1 << 11, "{label}");
        assert_eq!(compiled.num_inputs(), inputs + 1);
    }
}

/// Terms that must not count: explicit zero coefficients, a variable added and subtracted
/// (bellpepper merges it into one zero term), and ones that must: repeated variables merged
/// into one (2x), an input in B, an aux only in C, constants other than ±1.
#[derive(Clone)]
struct Terms {
    values: Vec<Scalar>,
    input: Scalar,
    /// Also a zero-coefficient term naming a variable never allocated (bellperson's setup
    /// indexes it, so proofs against bellperson leave it out).
    ghost: bool,
}

impl Circuit<Scalar> for Terms {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let input = cs.alloc_input(|| "in", || Ok(self.input))?;
        let vars: Vec<_> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc(|| format!("v{i}"), || Ok(*v)))
            .collect::<Result<_, _>>()?;
        let (x, y, z, w) = (vars[0], vars[1], vars[2], vars[3]);
        // A: y with coefficient zero, z added and subtracted; only x counts.
        cs.enforce(
            || "zeros",
            |lc| lc + x + (Scalar::ZERO, y) + z - z,
            |lc| lc + CS::one(),
            |lc| lc + x,
        );
        // A: x + x (merged: 2x) + 3y; B: the input; C: w only here.
        let three = Scalar::from(3u64);
        cs.enforce(
            || "merged",
            |lc| lc + x + x + (three, y),
            |lc| lc + input + (Scalar::ZERO, w),
            |lc| lc + (-three, w) + (Scalar::ZERO, z),
        );
        // A zero-coefficient reference to a variable the circuit never allocated.
        let ghost = bellpepper_core::Variable::new_unchecked(bellpepper_core::Index::Aux(1 << 20));
        cs.enforce(
            || "ghost",
            |lc| {
                if self.ghost {
                    LinearCombination::zero() + (Scalar::ZERO, ghost)
                } else {
                    lc + (Scalar::ZERO, y)
                }
            },
            |lc| lc,
            |lc| lc - (Scalar::ONE, x),
        );
        if !self.ghost {
            // bellperson's setup refuses a variable in no query: give z one, in C.
            cs.enforce(|| "z", |lc| lc, |lc| lc, |lc| lc + z);
        }
        for (i, v) in vars.iter().enumerate().skip(4) {
            cs.enforce(|| format!("sq {i}"), |lc| lc + *v, |lc| lc + *v - CS::one(), |lc| lc);
        }
        Ok(())
    }
}

#[test]
fn zero_and_cancelled_terms_mark_no_density_as_in_full_synthesis() {
    let mut rng = common::rng("terms");
    let make = |rng: &mut rand_chacha::ChaCha20Rng| Terms {
        values: (0..12).map(|_| Scalar::random(&mut *rng)).collect(),
        input: Scalar::random(&mut *rng),
        ghost: true,
    };
    let compiled = check_paths("terms", make(&mut rng), make(&mut rng));
    let n_in = compiled.num_inputs() as u32;
    // Row 0 of A holds x alone; row 1 holds x with coefficient 2 (a constant) and 3y.
    let (cols, codes) = compiled.a().row(0);
    assert_eq!(cols, &[n_in], "A row 0: only x (y zero, z cancelled)");
    assert_eq!(codes, &[cuzk::compiled::matrix::COEFF_ONE]);
    let (cols, codes) = compiled.a().row(1);
    assert_eq!(cols, &[n_in, n_in + 1]);
    let constants: Vec<Scalar> = codes
        .iter()
        .map(|&k| compiled.constants()[(k - cuzk::compiled::matrix::CONSTANTS_BASE) as usize])
        .collect();
    assert_eq!(constants, vec![Scalar::from(2u64), Scalar::from(3u64)]);
    assert!(compiled.a().row(2).0.is_empty(), "the ghost's zero term is not stored");
    // Densities: y is in A (row 1), z and w are in neither A nor... z only with zero or
    // cancelled coefficients: not dense anywhere; w only in C and as a zero term in B.
    assert!(compiled.a_aux_density().is_set(0) && compiled.a_aux_density().is_set(1));
    assert!(!compiled.a_aux_density().is_set(2), "z cancelled");
    assert!(!compiled.b_aux_density().is_set(3), "w zero in B");
    assert!(compiled.b_input_density().is_set(1), "the input in B");
    // And the full synthesis agrees (check_paths compared every tracker already).
}

/// A circuit whose structure depends on its witness.
#[derive(Clone)]
struct Shifty {
    flag: bool,
    /// How the flag changes the structure.
    mode: Shift,
}

#[derive(Clone, Copy, Debug)]
enum Shift {
    /// One more constraint when the flag is set.
    ExtraConstraint,
    /// One more aux variable when the flag is set.
    ExtraAux,
    /// The same counts, but one constraint moves before an allocation.
    Reordered,
    /// The same counts and order, one coefficient changes (not caught: see the docs).
    Coefficient,
}

impl Circuit<Scalar> for Shifty {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let f = if self.flag { Scalar::ONE } else { Scalar::ZERO };
        let flag = cs.alloc(|| "flag", || Ok(f))?;
        cs.enforce(|| "bool", |lc| lc + flag, |lc| lc + CS::one() - flag, |lc| lc);
        let reorder = self.flag && matches!(self.mode, Shift::Reordered);
        if reorder {
            cs.enforce(|| "early", |lc| lc + flag, |lc| lc + CS::one(), |lc| lc + flag);
        }
        let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
        if !reorder {
            cs.enforce(|| "late", |lc| lc + flag, |lc| lc + CS::one(), |lc| lc + flag);
        }
        let k = if self.flag && matches!(self.mode, Shift::Coefficient) {
            2u64
        } else {
            1
        };
        cs.enforce(
            || "y",
            |lc| lc + (Scalar::from(k), y),
            |lc| lc + CS::one(),
            |lc| lc + (Scalar::from(k), y),
        );
        if self.flag {
            match self.mode {
                Shift::ExtraConstraint => cs.enforce(|| "extra", |lc| lc + flag, |lc| lc + flag, |lc| lc + flag),
                Shift::ExtraAux => {
                    cs.alloc(|| "extra", || Ok(Scalar::ONE))?;
                }
                Shift::Reordered | Shift::Coefficient => {}
            }
        }
        Ok(())
    }
}

#[test]
fn a_witness_whose_structure_differs_is_refused_never_proved() {
    for (mode, what) in [
        (Shift::ExtraConstraint, "constraints"),
        (Shift::ExtraAux, "aux variables"),
        (Shift::Reordered, "structure trace"),
    ] {
        let (_, compiled) = CompiledCircuit::record(Shifty { flag: false, mode }, None, None).unwrap();
        // The same branch is accepted...
        let same = WitnessCs::new().synthesize(Shifty { flag: false, mode }).unwrap();
        compiled.assignment(&same, None).unwrap();
        // ...the other is an error naming what differs, from every entry point.
        let other = WitnessCs::new().synthesize(Shifty { flag: true, mode }).unwrap();
        for err in [
            compiled.check(&other).unwrap_err(),
            compiled.evaluate(&other).unwrap_err(),
            compiled.assignment(&other, None).unwrap_err(),
        ] {
            assert!(matches!(err, Error::WitnessMismatch(_)), "{mode:?}: {err}");
            assert!(err.to_string().contains(what), "{mode:?}: {err}");
        }
    }
    // A coefficient chosen by the witness keeps every count and the order: the check cannot
    // see it (documented). Pin that limit so a change to it is deliberate.
    let mode = Shift::Coefficient;
    let (_, compiled) = CompiledCircuit::record(Shifty { flag: false, mode }, None, None).unwrap();
    let other = WitnessCs::new().synthesize(Shifty { flag: true, mode }).unwrap();
    assert!(compiled.check(&other).is_ok());
}

#[test]
fn a_witness_of_another_circuit_type_is_refused() {
    let (_, compiled) = CompiledCircuit::record(Synthetic::new(8), None, None).unwrap();
    let other = WitnessCs::new()
        .synthesize(Shifty {
            flag: false,
            mode: Shift::ExtraAux,
        })
        .unwrap();
    let err = compiled.check(&other).unwrap_err();
    assert!(err.to_string().contains("circuit type"), "{err}");
    // Same type, another size: the counts differ.
    let bigger = WitnessCs::new().synthesize(Synthetic::new(9)).unwrap();
    let err = compiled.check(&bigger).unwrap_err();
    assert!(matches!(err, Error::WitnessMismatch(_)), "{err}");
}

/// Proof bytes with the same r, s: full path, witness path, bellperson.
fn same_proofs<C: Circuit<Scalar> + Clone + Send>(label: &str, first: C, second: C) {
    let mut rng = common::rng(label);
    let (bp_params, params, _) = common::params_for(&first, &mut rng);
    let (_, compiled) = CompiledCircuit::record(first, None, None).unwrap();
    let prover = cpu().with_pool(PinnedPool::heap(PoolConfig::default()));
    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let expected = common::bellperson_proof(second.clone(), &bp_params, r, s);
    let full = prover
        .prove_with_randomness(vec![second.clone()], &params, &[r], &[s])
        .unwrap();
    let witness = WitnessCs::new().synthesize(second.clone()).unwrap();
    let assignment = compiled.assignment(&witness, prover.pool()).unwrap();
    let (ours, _) = prover.prove_synthesized(vec![assignment], &params, &[r], &[s]).unwrap();
    let pooled = prover.synthesize_witness(second).unwrap();
    let (via, t) = prover
        .prove_witnesses(&compiled, &[witness, pooled], &params, &[r, r], &[s, s])
        .unwrap();
    assert!(
        t.evaluation > std::time::Duration::ZERO,
        "{label}: host evaluation timed"
    );
    for (k, p) in via.iter().enumerate() {
        assert_eq!(
            p.to_bytes().as_slice(),
            expected.as_slice(),
            "{label}: prove_witnesses (witness {k}) differs from bellperson"
        );
    }
    assert_eq!(
        full[0].to_bytes(),
        ours[0].to_bytes(),
        "{label}: full and witness paths differ"
    );
    assert_eq!(
        ours[0].to_bytes().as_slice(),
        expected.as_slice(),
        "{label}: bellperson differs"
    );
    assert_eq!(prover.pool().unwrap().stats().bytes_in_use, 0, "{label}: buffers back");
}

#[test]
fn proofs_are_byte_identical_by_both_paths_and_bellpersons() {
    let base = Synthetic {
        bit_percent: 90,
        ..Synthetic::new(10)
    };
    same_proofs("synthetic", base.clone().with_seed(3), base.with_seed(rand::random()));
    let mut rng = common::rng("terms proofs");
    let mut terms = || Terms {
        values: (0..40).map(|_| Scalar::random(&mut rng)).collect(),
        input: Scalar::random(&mut rng),
        ghost: false,
    };
    same_proofs("terms", terms(), terms());
    let parts = |seed: u64| Parts {
        parts: 3,
        per_part: 50,
        seed,
    };
    same_proofs("parts", parts(1), parts(rand::random()));
}

/// Synthesizes in parts made with `CS::new()` and merged with `extend`, as Filecoin's PoSt
/// circuits do when the constraint system is extensible.
#[derive(Clone)]
struct Parts {
    parts: usize,
    per_part: usize,
    seed: u64,
}

impl Circuit<Scalar> for Parts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = cuzk::testing::SplitMix::new(self.seed);
        let shared = cs.alloc_input(|| "shared", || Ok(Scalar::from(7u64)))?;
        let pre = cs.alloc(|| "pre", || Ok(Scalar::from(7u64)))?;
        cs.enforce(|| "copy", |lc| lc + shared, |lc| lc + CS::one(), |lc| lc + pre);
        let values: Vec<Vec<(Scalar, bool)>> = (0..self.parts)
            .map(|_| {
                (0..self.per_part)
                    .map(|i| {
                        // Which kind each value is depends on its place only: the structure
                        // is the same for every seed.
                        let bit = i % 4 != 0;
                        (
                            if bit {
                                Scalar::from(u64::from(rng.next_u32() & 1))
                            } else {
                                Scalar::random(&mut rng)
                            },
                            bit,
                        )
                    })
                    .collect()
            })
            .collect();
        if !CS::is_extensible() {
            // bellperson's setup: the same constraints, in one system.
            for (p, vals) in values.iter().enumerate() {
                part_of(cs, p, vals)?;
            }
        } else {
            let built: Vec<CS> = std::thread::scope(|scope| {
                let handles: Vec<_> = values
                    .iter()
                    .enumerate()
                    .map(|(p, vals)| {
                        scope.spawn(move || -> Result<CS, SynthesisError> {
                            let mut part = CS::new();
                            part.alloc_input(|| "temp one", || Ok(Scalar::ONE))?;
                            part_of(&mut part, p, vals)?;
                            Ok(part)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect::<Result<_, _>>()
            })?;
            for part in &built {
                cs.extend(part);
            }
        }
        let post = cs.alloc(|| "post", || Ok(Scalar::from(49u64)))?;
        cs.enforce(|| "square", |lc| lc + pre, |lc| lc + pre, |lc| lc + post);
        Ok(())
    }
}

/// Part `p` of [`Parts`]: an input copied into aux, then bits and a product chain.
fn part_of<CS: ConstraintSystem<Scalar>>(cs: &mut CS, p: usize, vals: &[(Scalar, bool)]) -> Result<(), SynthesisError> {
    let input = cs.alloc_input(|| format!("part {p} input"), || Ok(Scalar::from(p as u64)))?;
    let copy = cs.alloc(|| "copy", || Ok(Scalar::from(p as u64)))?;
    cs.enforce(|| "copy", |lc| lc + input, |lc| lc + CS::one(), |lc| lc + copy);
    let mut prev = copy;
    let mut prev_v = Scalar::from(p as u64);
    for (i, (v, bit)) in vals.iter().enumerate() {
        let x = cs.alloc(|| format!("x{i}"), || Ok(*v))?;
        if *bit {
            cs.enforce(|| "bit", |lc| lc + x, |lc| lc + CS::one() - x, |lc| lc);
        } else {
            let pv = prev_v * v;
            let prod = cs.alloc(|| "prod", || Ok(pv))?;
            cs.enforce(|| "mul", |lc| lc + prev, |lc| lc + x, |lc| lc + prod);
            prev = prod;
            prev_v = pv;
        }
    }
    Ok(())
}

#[test]
fn circuits_synthesized_in_parts_and_extended_are_recorded_whole() {
    let compiled = check_paths(
        "parts",
        Parts {
            parts: 4,
            per_part: 100,
            seed: 1,
        },
        Parts {
            parts: 4,
            per_part: 100,
            seed: 2,
        },
    );
    assert_eq!(compiled.num_inputs(), 2 + 4);
    // A part that was not recorded spoils the recording (an error, not a wrong circuit): an
    // assignment that records, extended with a part made while no recording was active.
    let part = {
        let mut p = ProvingAssignment::new_heap();
        p.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        let x = p.alloc(|| "x", || Ok(Scalar::ONE)).unwrap();
        p.enforce(|| "x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
        p
    };
    let mut cs = ProvingAssignment::new_heap().with_recording();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    cs.extend(&part);
    assert!(cs.inputs_slice().len() == 1);
    let err = CompiledCircuit::take_from(&mut cs, "x").unwrap_err();
    assert!(matches!(err, Error::Recording(_)), "{err}");
}

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cuzk-compiled-{label}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn corrupt_with(path: &Path, label: &str, f: impl FnOnce(&mut Vec<u8>)) -> Error {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    let bad = path.with_file_name(format!("bad-{label}.r1cs"));
    std::fs::write(&bad, &bytes).unwrap();
    let err = CompiledCircuit::load(&bad).unwrap_err();
    assert!(
        err.to_string().contains(&bad.display().to_string()),
        "{label}: names the file: {err}"
    );
    err
}

#[test]
fn files_round_trip_mapped_and_bad_files_are_refused() {
    let shape = Synthetic {
        bit_percent: 80,
        ..Synthetic::new(10)
    };
    let (_, compiled) = CompiledCircuit::record(shape.clone(), None, None).unwrap();
    let dir = temp_dir("file");
    let path = dir.join("synthetic.r1cs");
    compiled.save(&path).unwrap();
    let loaded = CompiledCircuit::load(&path).unwrap();
    assert!(loaded.is_mapped() && !compiled.is_mapped());
    assert_eq!(loaded.fingerprint(), compiled.fingerprint());
    assert_eq!(loaded.circuit_type(), compiled.circuit_type());
    assert_eq!(loaded.shape(), compiled.shape());
    assert_eq!(loaded.structure_hash(), compiled.structure_hash());
    for (x, y) in [
        (loaded.a(), compiled.a()),
        (loaded.b(), compiled.b()),
        (loaded.c(), compiled.c()),
    ] {
        assert_eq!(x.row_starts(), y.row_starts());
        assert_eq!(x.columns(), y.columns());
        assert_eq!(x.coefficients(), y.coefficients());
    }
    assert_eq!(loaded.constants(), compiled.constants());
    assert_eq!(loaded.a_aux_density(), compiled.a_aux_density());
    assert_eq!(loaded.b_input_density(), compiled.b_input_density());
    assert_eq!(loaded.b_aux_density(), compiled.b_aux_density());
    let second = shape.clone().with_seed(rand::random());
    let witness = WitnessCs::new().synthesize(second.clone()).unwrap();
    assert_same("loaded", &full(second), &loaded.assignment(&witness, None).unwrap());

    let len = std::fs::read(&path).unwrap().len();
    let mut rng = common::rng("corruption");
    // A flipped bit anywhere: header, type name, constants, matrices, densities, the end.
    let mut spots = vec![16, 24, 40, 60, 130, len / 3, len / 2, len - 1];
    spots.extend((0..8).map(|_| rng.next_u32() as usize % len));
    for at in spots {
        let err = corrupt_with(&path, &format!("flip{at}"), |b| b[at] ^= 1 << (at % 8));
        assert!(matches!(err, Error::CompiledCorrupt { .. }), "flip at {at}: {err}");
    }
    for cut in [0, 7, 100, len / 2, len - 1] {
        let err = corrupt_with(&path, &format!("cut{cut}"), |b| b.truncate(cut));
        assert!(matches!(err, Error::CompiledCorrupt { .. }), "cut at {cut}: {err}");
        assert!(err.to_string().contains("truncated") || cut < 8, "cut at {cut}: {err}");
    }
    let err = corrupt_with(&path, "longer", |b| b.extend_from_slice(&[0; 8]));
    assert!(matches!(err, Error::CompiledCorrupt { .. }), "{err}");
    let err = corrupt_with(&path, "version", |b| b[8] = b[8].wrapping_add(1));
    assert!(
        matches!(err, Error::CompiledStale { found, expected, .. } if found == expected + 1),
        "{err}"
    );
    let err = corrupt_with(&path, "magic", |b| b[0] = b'X');
    assert!(err.to_string().contains("magic"), "{err}");
    let err = CompiledCircuit::load(&dir.join("missing.r1cs")).unwrap_err();
    assert!(matches!(err, Error::CompiledIo { .. }), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_cache_is_keyed_by_type_and_shape_and_backed_by_its_directory() {
    let dir = temp_dir("cache");
    let cache = CompiledCircuits::with_dir(&dir);
    let small = Synthetic::new(8);
    let large = Synthetic::new(9);
    let type_name = std::any::type_name::<Synthetic>();
    for c in [small.clone(), large.clone()] {
        let (_, compiled) = CompiledCircuit::record(c, None, None).unwrap();
        cache.insert(Arc::new(compiled)).unwrap();
    }
    assert_eq!(cache.len(), 2);
    let shape = |c: &Synthetic| {
        let params = cuzk::testing::random_parameters(c.clone(), 1).unwrap();
        CircuitShape::of_params(&params)
    };
    let (s_small, s_large) = (shape(&small), shape(&large));
    assert_ne!(s_small, s_large);
    // A fresh cache on the same directory maps both from their files.
    let fresh = CompiledCircuits::with_dir(&dir);
    let got = fresh.get(type_name, s_small).unwrap().expect("the small one's file");
    assert!(got.is_mapped());
    assert_eq!(got.shape(), s_small);
    assert!(fresh.get(type_name, s_large).unwrap().unwrap().is_mapped());
    assert!(fresh.get("other::Type", s_small).unwrap().is_none());
    // A corrupt file is an error naming it; recording again and inserting replaces it.
    let file = dir.join(CompiledCircuits::file_name(type_name, s_small));
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let again = CompiledCircuits::with_dir(&dir);
    let err = again.get(type_name, s_small).unwrap_err();
    assert!(err.to_string().contains(&file.display().to_string()), "{err}");
    let (_, compiled) = CompiledCircuit::record(small, None, None).unwrap();
    again.insert(Arc::new(compiled)).unwrap();
    assert!(CompiledCircuits::with_dir(&dir)
        .get(type_name, s_small)
        .unwrap()
        .is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compact_witnesses_are_small_at_filecoins_mix_and_dense_when_few_are_bits() {
    let at = |bits: u32| Synthetic {
        bit_percent: bits,
        ..Synthetic::new(12)
    };
    let w98 = WitnessCs::new().synthesize(at(98)).unwrap();
    assert!(w98.is_compact());
    let aux = w98.num_aux();
    assert!(w98.num_bits() * 100 > aux * 90, "{} of {aux}", w98.num_bits());
    let aux_bytes = w98.byte_size() - 32 * w98.num_inputs();
    assert!(aux_bytes * 8 < 32 * aux, "98%: {aux_bytes} bytes for {aux} aux");
    let w0 = WitnessCs::new().synthesize(at(0)).unwrap();
    assert!(!w0.is_compact(), "no bits: dense");
    let forced = WitnessCs::new().dense_threshold_percent(0).synthesize(at(0)).unwrap();
    assert!(forced.is_compact());
    assert_eq!(forced.expand_aux().unwrap(), w0.expand_aux().unwrap());
    // Into a pool buffer, from either form.
    let pool = PinnedPool::heap(PoolConfig::default());
    for w in [&w98, &w0, &forced] {
        let v = w.expand_aux_in(&pool).unwrap();
        assert_eq!(v.as_slice(), w.expand_aux().unwrap().as_slice());
    }
    // Written straight into pool buffers during synthesis.
    let in_pool = WitnessCs::in_pool(&pool, 1 << 12).unwrap().synthesize(at(98)).unwrap();
    assert!(pool.stats().bytes_in_use > 0);
    assert_eq!(in_pool.expand_aux().unwrap(), w98.expand_aux().unwrap());
    drop((in_pool, w98, w0, forced));
    assert_eq!(pool.stats().bytes_in_use, 0);
}

/// Writes its values through the witness-generator methods when it can (as neptune's
/// Poseidon does), through alloc and enforce otherwise.
#[derive(Clone)]
struct Generated;

impl Circuit<Scalar> for Generated {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        if cs.is_witness_generator() {
            let (aux, _) = cs.allocate_empty(1, 0);
            aux[0] = Scalar::from(9u64);
        } else {
            let y = cs.alloc(|| "y", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "sq", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        }
        Ok(())
    }
}

#[test]
fn witness_generator_shortcuts_are_refused_unless_synthesized_without_them() {
    let (_, compiled) = CompiledCircuit::record(Generated, None, None).unwrap();
    let generated = WitnessCs::new().synthesize(Generated).unwrap();
    assert_eq!(generated.generated_values(), 1);
    assert_eq!(generated.expand_aux().unwrap()[1], Scalar::from(9u64));
    let err = compiled.assignment(&generated, None).unwrap_err();
    assert!(err.to_string().contains("without_generator"), "{err}");
    let counted = WitnessCs::new().without_generator().synthesize(Generated).unwrap();
    assert_same(
        "generated",
        &full(Generated),
        &compiled.assignment(&counted, None).unwrap(),
    );
}

#[test]
fn recording_is_off_on_the_normal_path_and_taken_once() {
    let mut pa = full(Synthetic::new(6));
    assert!(!pa.is_recording());
    assert!(matches!(
        CompiledCircuit::take_from(&mut pa, "x"),
        Err(Error::Recording(_))
    ));
    let mut rec = ProvingAssignment::new_heap().with_recording();
    assert!(rec.is_recording());
    Synthetic::new(6).synthesize(&mut rec).unwrap();
    // Not finished: nothing to compile.
    assert!(matches!(
        CompiledCircuit::take_from(&mut rec, "x"),
        Err(Error::Recording(_))
    ));
    assert!(
        matches!(CompiledCircuit::take_from(&mut rec, "x"), Err(Error::Recording(_))),
        "taken once"
    );
}

#[test]
fn the_fingerprint_is_the_structure_not_the_witness_and_pool_recording_agrees() {
    let shape = Synthetic {
        bit_percent: 90,
        ..Synthetic::new(10)
    };
    let (_, one) = CompiledCircuit::record(shape.clone().with_seed(1), None, None).unwrap();
    let (_, two) = CompiledCircuit::record(shape.clone().with_seed(rand::random()), None, None).unwrap();
    assert_eq!(one.fingerprint(), two.fingerprint(), "same structure, other witness");
    assert_eq!(one.structure_hash(), two.structure_hash());
    // Same sizes and structure trace, one coefficient differs: the fingerprint tells them apart.
    let mode = Shift::Coefficient;
    let (_, k1) = CompiledCircuit::record(Shifty { flag: false, mode }, None, None).unwrap();
    let (_, k2) = CompiledCircuit::record(Shifty { flag: true, mode }, None, None).unwrap();
    assert_eq!((k1.shape(), k1.structure_hash()), (k2.shape(), k2.structure_hash()));
    assert_ne!(k1.fingerprint(), k2.fingerprint(), "other coefficient");
    // Recorded into pool buffers sized by a hint: the same circuit.
    let pool = PinnedPool::heap(PoolConfig::default());
    let hint = full(shape.clone()).capacity_hint();
    let (pa, pooled) = CompiledCircuit::record(shape.with_seed(1), Some(&pool), Some(hint)).unwrap();
    assert!(pa.is_pinned() || pool.stats().bytes_in_use > 0);
    assert_eq!(pooled.fingerprint(), one.fingerprint());
    drop(pa);
    assert_eq!(pool.stats().bytes_in_use, 0);
}

/// A compiled-circuit file from its eleven header fields (inputs, aux, constraints, trace,
/// constants, non-zeros of A, B, C, type-name length, fingerprint low and high) and payload.
fn craft(fields: [u64; 11], payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"CUZKR1CS");
    b.extend_from_slice(&cuzk::compiled::file::FORMAT_VERSION.to_le_bytes());
    b.extend_from_slice(&[0; 4 + 8 + 16]);
    for f in fields {
        b.extend_from_slice(&f.to_le_bytes());
    }
    b.extend_from_slice(payload);
    cuzk::compiled::file::seal(&mut b);
    b
}

/// A crafted file whose type-name length is near `u64::MAX`: rounded up to 8 bytes it wrapped
/// to 0, so the section walk consumed nothing, added up, and the type-name slice panicked.
fn huge_type_name() -> Vec<u8> {
    // One input, no constraints: one row, two row offsets (8 bytes) per matrix.
    craft([1, 0, 0, 0, 0, 0, 0, 0, u64::MAX, 0, 0], &[0; 24])
}

fn load_bytes(dir: &Path, label: &str, bytes: &[u8]) -> cuzk::Result<CompiledCircuit> {
    let path = dir.join(format!("{label}.r1cs"));
    std::fs::write(&path, bytes).unwrap();
    let loaded = std::panic::catch_unwind(|| CompiledCircuit::load(&path))
        .unwrap_or_else(|_| panic!("{label}: the loader panicked instead of refusing the file"));
    assert_eq!(
        loaded.as_ref().err().map(|e| e.to_string()),
        CompiledCircuit::from_file_bytes(bytes)
            .err()
            .map(|e| e.to_string().replace("<bytes>", &path.display().to_string())),
        "{label}: loading from bytes answers as loading the file"
    );
    loaded
}

#[test]
fn crafted_lengths_and_empty_sections_are_refused_with_an_error() {
    let dir = temp_dir("crafted");
    let err = load_bytes(&dir, "huge-name", &huge_type_name()).unwrap_err();
    assert!(matches!(err, Error::CompiledCorrupt { .. }), "{err}");
    // Every count at the edges of overflow, each alone: an error, never a panic.
    let edges = [
        u64::MAX,
        u64::MAX - 6,
        1 << 63,
        1 << 62,
        (1 << 62) - 1,
        1 << 61,
        1 << 32,
    ];
    for field in [0, 1, 2, 4, 5, 6, 7, 8] {
        for &v in &edges {
            let mut fields = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            fields[field] = v;
            let label = format!("field{field}-{v:x}");
            let err = load_bytes(&dir, &label, &craft(fields, &[0; 24])).unwrap_err();
            assert!(matches!(err, Error::CompiledCorrupt { .. }), "{label}: {err}");
        }
    }
    // Every section empty (no inputs, no rows beyond the offsets' one word): not a circuit.
    let err = load_bytes(&dir, "empty", &craft([0; 11], &[0; 24])).unwrap_err();
    assert!(matches!(err, Error::CompiledCorrupt { .. }), "{err}");
    // The header alone, and a payload that is not a multiple of 8 bytes.
    for (label, payload) in [("header-only", &[][..]), ("odd", &[0u8; 13][..])] {
        let err = load_bytes(&dir, label, &craft([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], payload)).unwrap_err();
        assert!(matches!(err, Error::CompiledCorrupt { .. }), "{label}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_claiming_another_fingerprint_is_refused() {
    let dir = temp_dir("fingerprint");
    let (_, x) = CompiledCircuit::record(Synthetic::new(8), None, None).unwrap();
    let (_, y) = CompiledCircuit::record(Synthetic::new(9), None, None).unwrap();
    assert_ne!(x.fingerprint(), y.fingerprint());
    let path = dir.join("y.r1cs");
    y.save(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // Fields 9 and 10 (bytes 112..128): Y's file claims X's fingerprint, checksum fixed up.
    bytes[112..128].copy_from_slice(&x.fingerprint().to_le_bytes());
    cuzk::compiled::file::seal(&mut bytes);
    let err = load_bytes(&dir, "claims-x", &bytes).unwrap_err();
    assert!(
        matches!(err, Error::CompiledCorrupt { .. }) && err.to_string().contains("fingerprint"),
        "{err}"
    );
    // One bit of the fingerprint.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[112] ^= 1;
    cuzk::compiled::file::seal(&mut bytes);
    let err = load_bytes(&dir, "flipped", &bytes).unwrap_err();
    assert!(err.to_string().contains("fingerprint"), "{err}");
    // A padding byte (after A's row offsets: 9 words, 4 bytes of padding; the fingerprint
    // does not cover it): an accepted file would not be the one its circuit writes. Found by
    // the compiled_file fuzz target (fuzz/corpus/compiled_file/regression-padding).
    let x_path = dir.join("x.r1cs");
    x.save(&x_path).unwrap();
    let mut bytes = std::fs::read(&x_path).unwrap();
    let padding_at = 128 + 24 + 32 * x.constants().len() + 4 * (x.num_constraints() + 1);
    assert!(
        x.num_constraints() % 2 == 0,
        "an odd number of row offsets, so padding follows"
    );
    assert_eq!(bytes[padding_at..padding_at + 4], [0; 4]);
    bytes[padding_at] = 0x89;
    cuzk::compiled::file::seal(&mut bytes);
    let err = load_bytes(&dir, "padding", &bytes).unwrap_err();
    assert!(err.to_string().contains("padding"), "{err}");
    // The reserved header field (also found by the fuzz target: regression-reserved).
    let mut bytes = std::fs::read(&x_path).unwrap();
    bytes[14] = 4;
    cuzk::compiled::file::seal(&mut bytes);
    let err = load_bytes(&dir, "reserved", &bytes).unwrap_err();
    assert!(err.to_string().contains("reserved"), "{err}");
    // The file as written loads, with its own fingerprint.
    assert_eq!(CompiledCircuit::load(&path).unwrap().fingerprint(), y.fingerprint());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_truncated_on_disk_after_load_does_not_fault_the_evaluation() {
    let dir = temp_dir("truncated-after");
    let circuit = Synthetic {
        bit_percent: 80,
        ..Synthetic::new(14)
    };
    let (_, compiled) = CompiledCircuit::record(circuit.clone(), None, None).unwrap();
    let path = dir.join("c.r1cs");
    compiled.save(&path).unwrap();
    let loaded = CompiledCircuit::load(&path).unwrap();
    // Another process cuts the file (a mapping of it would now fault past the cut).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(128)
        .unwrap();
    let second = circuit.with_seed(rand::random());
    let witness = WitnessCs::new().synthesize(second.clone()).unwrap();
    assert_same(
        "after truncation",
        &full(second),
        &loaded.assignment(&witness, None).unwrap(),
    );
    // Loading it now is refused.
    let err = CompiledCircuit::load(&path).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writers_in_one_process_sharing_a_directory_do_not_share_a_temporary_file() {
    let dir = temp_dir("writers");
    let (_, compiled) = CompiledCircuit::record(Synthetic::new(12), None, None).unwrap();
    let compiled = Arc::new(compiled);
    let path = dir.join("shared.r1cs");
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (c, path) = (Arc::clone(&compiled), path.clone());
                s.spawn(move || {
                    (0..10)
                        .filter_map(|_| c.save(&path).err().map(|e| e.to_string()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} saves failed: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(
        CompiledCircuit::load(&path).unwrap().fingerprint(),
        compiled.fingerprint()
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crafted_file_is_set_aside_and_the_proof_comes_from_full_synthesis() {
    let circuit = Synthetic::new(8);
    let mut rng = common::rng("crafted-prove");
    let (bp_params, params, _) = common::params_for(&circuit, &mut rng);
    let type_name = std::any::type_name::<Synthetic>();
    let shape = CircuitShape::of_params(&params);
    let (_, other) = CompiledCircuit::record(Synthetic::new(9), None, None).unwrap();
    let dir = temp_dir("crafted-prove");
    let file = dir.join(CompiledCircuits::file_name(type_name, shape));
    let refused = dir.join(format!("{}.refused", file.file_name().unwrap().to_string_lossy()));
    // A file that panicked the loader; then one that claims another circuit's fingerprint.
    let (_, own) = CompiledCircuit::record(circuit.clone(), None, None).unwrap();
    own.save(&file).unwrap();
    let mut claims_other = std::fs::read(&file).unwrap();
    claims_other[112..128].copy_from_slice(&other.fingerprint().to_le_bytes());
    cuzk::compiled::file::seal(&mut claims_other);
    for (label, bytes) in [
        ("huge type name", huge_type_name()),
        ("another fingerprint", claims_other),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        let prover = cpu().with_compiled_dir(&dir);
        let r = Scalar::random(&mut rng);
        let s = Scalar::random(&mut rng);
        let expected = common::bellperson_proof(circuit.clone(), &bp_params, r, s);
        let proofs = prover
            .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(proofs[0].to_bytes().as_slice(), expected.as_slice(), "{label}");
        let st = prover.witness_stats();
        assert_eq!(
            (st.compiled_refused, st.recorded, st.full),
            (1, 1, 1),
            "{label}: {st:?}"
        );
        // Set aside, and replaced by the circuit recorded in the same pass.
        assert_eq!(
            std::fs::read(&refused).unwrap(),
            bytes,
            "{label}: the refused file kept aside"
        );
        let again = CompiledCircuits::with_dir(&dir).get(type_name, shape).unwrap().unwrap();
        assert_eq!(again.fingerprint(), own.fingerprint(), "{label}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
