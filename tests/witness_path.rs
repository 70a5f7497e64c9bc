//! The witness path as the default of `Prover::prove` and the engine: the first circuit of a
//! type and shape records, the next ones are synthesized witness-only, with bellperson's bytes;
//! a witness of another structure falls back (counted) to full synthesis; the switch turns it
//! off; a corrupt persisted file is refused and recorded again; the engine's budget counts the
//! compact witness and the compiled circuit once.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk::compiled::{CircuitShape, CompiledCircuit, CompiledCircuits, Witness};
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, PacerMode};
use cuzk::prover::cpu::CpuBackend;
use cuzk::prover::{Backend, Commitments};
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{
    verify_proof, BackendChoice, Circuit, Error, HeapAllocator, Parameters, PinnedPool, PoolConfig,
    PreparedVerifyingKey, Proof, Prover, ProvingAssignment, Timings, WitnessStats,
};
use ff::Field;
use parking_lot::{Condvar, Mutex};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use common::engine::wait_for;

fn cpu() -> Prover {
    Prover::new().with_backend(BackendChoice::Cpu).unwrap()
}

fn pooled() -> Prover {
    cpu().with_pool(PinnedPool::heap(PoolConfig::default()))
}

fn randomness(n: usize, seed: u64) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let r = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    (r, s)
}

fn stats(recorded: u64, witness: u64, full: u64, fallbacks: u64) -> WitnessStats {
    WitnessStats {
        recorded,
        witness,
        full,
        fallbacks,
        ..WitnessStats::default()
    }
}

fn bytes(proofs: &[Proof]) -> Vec<Vec<u8>> {
    proofs.iter().map(|p| p.to_bytes().to_vec()).collect()
}

#[test]
fn a_fresh_prover_records_once_then_proves_witnesses_with_bellpersons_bytes() {
    let mut rng = common::rng("prover default");
    let shape = Synthetic {
        bit_percent: 90,
        ..Synthetic::new(10)
    };
    let (bp_params, params, _) = common::params_for(&shape, &mut rng);
    let circuits: Vec<Synthetic> = (0..4).map(|i| shape.clone().with_seed(100 + i)).collect();
    let (r, s) = randomness(4, 1);
    let expected: Vec<Vec<u8>> = (0..4)
        .map(|i| common::bellperson_proof(circuits[i].clone(), &bp_params, r[i], s[i]))
        .collect();

    let prover = pooled();
    assert!(prover.witness_path(), "on by default");
    // The first: synthesized in full, recording.
    let first = prover
        .prove_with_randomness(vec![circuits[0].clone()], &params, &r[..1], &s[..1])
        .unwrap();
    assert_eq!(bytes(&first), expected[..1]);
    assert_eq!(prover.witness_stats(), stats(1, 0, 1, 0));
    let key = std::any::type_name::<Synthetic>();
    let compiled = prover
        .compiled_circuits()
        .get_in_memory(key, CircuitShape::of_params(&params))
        .expect("recorded under its type and the parameters' shape");
    assert_eq!(compiled.num_aux(), params.num_aux());
    // The next three, one batch: witness-only, the same bytes; the clone shares the cache.
    let (proofs, t) = prover
        .clone()
        .prove_timed(circuits[1..].to_vec(), &params, &r[1..], &s[1..])
        .unwrap();
    assert_eq!(bytes(&proofs), expected[1..]);
    assert_eq!(prover.witness_stats(), stats(1, 3, 1, 0));
    assert!(t.evaluation > Duration::ZERO, "a, b, c evaluated on the host");
    // The same proofs with the path off.
    let off = pooled().with_witness_path(false);
    let full = off.prove_with_randomness(circuits.clone(), &params, &r, &s).unwrap();
    assert_eq!(bytes(&full), expected);
    let pool = prover.pool().unwrap().stats();
    assert_eq!(pool.bytes_in_use, 0, "{pool:?}");
}

#[test]
fn the_first_batch_of_a_new_type_records_once_and_proves_the_rest_in_full() {
    let shape = Synthetic::new(8);
    let params = random_parameters(shape.clone(), 3).unwrap();
    let circuits: Vec<Synthetic> = (0..3).map(|i| shape.clone().with_seed(i)).collect();
    let (r, s) = randomness(3, 2);
    let prover = cpu();
    let proofs = prover.prove_with_randomness(circuits.clone(), &params, &r, &s).unwrap();
    // One records; the others run in full meanwhile, or witness-only once it is done (rayon
    // decides which start first): none waits, none records twice.
    let st = prover.witness_stats();
    assert_eq!((st.recorded, st.witness + st.full, st.fallbacks), (1, 3, 0), "{st:?}");
    assert!(st.full >= 1);
    assert_eq!(prover.compiled_circuits().len(), 1);
    let reference = cpu()
        .with_witness_path(false)
        .prove_with_randomness(circuits.clone(), &params, &r, &s)
        .unwrap();
    assert_eq!(proofs, reference);
    let again = prover.prove_with_randomness(circuits, &params, &r, &s).unwrap();
    assert_eq!(again, reference);
    assert_eq!(prover.witness_stats().witness, st.witness + 3);
    assert_eq!(prover.witness_stats().full, st.full);
    // Another shape of the same type records its own.
    let larger = Synthetic::new(9);
    let large_params = random_parameters(larger.clone(), 4).unwrap();
    prover
        .prove_with_randomness(vec![larger], &large_params, &r[..1], &s[..1])
        .unwrap();
    assert_eq!(prover.compiled_circuits().len(), 2);
    assert_eq!(prover.witness_stats().recorded, 2);
}

/// The same R1CS either way, but with the flag set one constraint comes before an allocation
/// instead of after it: the structure trace differs, the parameters fit both. Not `Clone`: the
/// prover and the engine take circuits that are not (as bellperson's `create_proof` does).
struct Branchy {
    flag: bool,
    values: Vec<u64>,
}

impl Circuit<Scalar> for Branchy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let f = if self.flag { Scalar::ONE } else { Scalar::ZERO };
        let out = cs.alloc_input(|| "out", || Ok(f))?;
        let flag = cs.alloc(|| "flag", || Ok(f))?;
        cs.enforce(|| "bool", |lc| lc + flag, |lc| lc + CS::one() - flag, |lc| lc);
        if self.flag {
            cs.enforce(|| "early", |lc| lc + flag, |lc| lc + CS::one(), |lc| lc + out);
        }
        let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
        if !self.flag {
            cs.enforce(|| "late", |lc| lc + flag, |lc| lc + CS::one(), |lc| lc + out);
        }
        cs.enforce(
            || "y",
            |lc| lc + y,
            |lc| lc + CS::one(),
            |lc| lc + (Scalar::from(5u64), CS::one()),
        );
        for (i, &v) in self.values.iter().enumerate() {
            let x = cs.alloc(|| format!("x{i}"), || Ok(Scalar::from(v)))?;
            let sq = cs.alloc(|| format!("sq{i}"), || Ok(Scalar::from(v * v)))?;
            cs.enforce(|| format!("square {i}"), |lc| lc + x, |lc| lc + x, |lc| lc + sq);
        }
        Ok(())
    }
}

#[test]
fn a_refused_witness_is_an_error_naming_its_type_then_its_type_is_proved_in_full() {
    let mut rng = common::rng("fallback");
    let branch = |flag: bool, seed: u64| Branchy {
        flag,
        values: (0..20).map(|i| seed * 31 + i).collect(),
    };
    let (bp_params, params, _) = common::params_of(branch(false, 1), &mut rng);
    let (r, s) = randomness(4, 3);
    let prover = pooled();
    let first = prover
        .prove_with_randomness(vec![branch(false, 1)], &params, &r[..1], &s[..1])
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 0, 1, 0));
    // The recorded branch again: the witness path.
    let second = prover
        .prove_with_randomness(vec![branch(false, 2)], &params, &r[1..2], &s[1..2])
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 1, 1, 0));
    // The other branch: refused by the compiled circuit. The circuit was consumed by its
    // witness synthesis, so the answer is an error that names the type, never a wrong proof.
    let refused = prover
        .prove_with_randomness(vec![branch(true, 3)], &params, &r[2..3], &s[2..3])
        .unwrap_err();
    assert!(matches!(refused, Error::WitnessMismatch(_)), "{refused:?}");
    assert!(refused.to_string().contains("Branchy"), "{refused}");
    assert_eq!(prover.witness_stats(), stats(1, 1, 1, 1));
    // The same circuit again: its type and shape is now proved in full.
    let third = prover
        .prove_with_randomness(vec![branch(true, 3)], &params, &r[2..3], &s[2..3])
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 1, 2, 1));
    // And so is the recorded branch: the type's structure depends on its witness.
    let fourth = prover
        .prove_with_randomness(vec![branch(false, 4)], &params, &r[3..], &s[3..])
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 1, 3, 1));
    // A clone of the prover shares the books.
    assert_eq!(prover.clone().witness_stats(), prover.witness_stats());
    let pvk = PreparedVerifyingKey::new(params.vk());
    for (i, (proof, flag)) in [first[0], second[0], third[0], fourth[0]]
        .iter()
        .zip([false, false, true, false])
        .enumerate()
    {
        let out = if flag { Scalar::ONE } else { Scalar::ZERO };
        let expected = common::bellperson_proof(branch(flag, i as u64 + 1), &bp_params, r[i], s[i]);
        assert_eq!(proof.to_bytes().as_slice(), expected.as_slice(), "proof {i}");
        assert!(verify_proof(&pvk, proof, &[out]).unwrap(), "proof {i} verifies");
    }
}

/// A circuit of the recorded type whose inputs are of another shape (here 19 squares where the
/// parameters are made for 20: fewer aux variables, as a malformed request's fewer challenges
/// make them) fails with the error its full synthesis would give ([`Error::CircuitMismatch`]),
/// counted as an input error — not a fallback: no route proves it with these parameters, so it
/// says nothing of the type's structure, and the next circuit of the right shape still takes
/// the witness path. Before, it marked the type witness-dependent: every later circuit of the
/// type synthesized in full, for the life of the prover.
#[test]
fn a_circuit_of_another_shape_fails_alone_and_its_type_stays_on_the_witness_path() {
    let mut rng = common::rng("other-shape");
    let branch = |n: u64, seed: u64| Branchy {
        flag: false,
        values: (0..n).map(|i| seed * 31 + i).collect(),
    };
    let (_, params, _) = common::params_of(branch(20, 1), &mut rng);
    let (r, s) = randomness(3, 5);
    let prover = pooled();
    prover
        .prove_with_randomness(vec![branch(20, 1)], &params, &r[..1], &s[..1])
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 0, 1, 0));
    let shorter = prover
        .prove_with_randomness(vec![branch(19, 2)], &params, &r[1..2], &s[1..2])
        .unwrap_err();
    assert!(
        matches!(&shorter, Error::CircuitMismatch(m) if m.contains("Branchy") && m.contains("another shape")),
        "{shorter:?}"
    );
    assert_eq!(
        prover.witness_stats(),
        WitnessStats {
            input_errors: 1,
            ..stats(1, 0, 1, 0)
        },
        "an input error, not a fallback"
    );
    let next = prover
        .prove_with_randomness(vec![branch(20, 3)], &params, &r[2..], &s[2..])
        .unwrap();
    assert_eq!(
        prover.witness_stats(),
        WitnessStats {
            input_errors: 1,
            ..stats(1, 1, 1, 0)
        },
        "the next circuit of the right shape takes the witness path"
    );
    let pvk = PreparedVerifyingKey::new(params.vk());
    assert!(verify_proof(&pvk, &next[0], &[Scalar::ZERO]).unwrap());
}

/// A witness-dependent type in one prover leaves another prover's books alone: the books are
/// per prover (and its clones), the compiled circuit is not dropped.
#[test]
fn a_refusal_in_one_prover_leaves_another_on_the_witness_path() {
    let mut rng = common::rng("refusal-scope");
    let branch = |flag: bool| Branchy {
        flag,
        values: (0..20).collect(),
    };
    let (_, params, _) = common::params_of(branch(false), &mut rng);
    let (r, s) = randomness(1, 5);
    let a = cpu();
    a.prove_with_randomness(vec![branch(false)], &params, &r, &s).unwrap();
    assert!(a.prove_with_randomness(vec![branch(true)], &params, &r, &s).is_err());
    let b = cpu().with_compiled_circuits(a.compiled_circuits().clone());
    b.prove_with_randomness(vec![branch(false)], &params, &r, &s).unwrap();
    assert_eq!(b.witness_stats(), stats(0, 1, 0, 0));
}

/// Writes a value through the witness-generator methods when it can (as neptune's Poseidon
/// does), through alloc and enforce otherwise: the witness path synthesizes without them.
#[derive(Clone)]
struct Generated(u64);

impl Circuit<Scalar> for Generated {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(self.0)))?;
        if cs.is_witness_generator() {
            let (aux, _) = cs.allocate_empty(1, 0);
            aux[0] = Scalar::from(self.0 * self.0);
        } else {
            let y = cs.alloc(|| "y", || Ok(Scalar::from(self.0 * self.0)))?;
            cs.enforce(|| "sq", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        }
        Ok(())
    }
}

#[test]
fn generator_shortcuts_do_not_make_the_witness_path_fall_back() {
    let mut rng = common::rng("generator");
    let (bp_params, params, _) = common::params_for(&Generated(3), &mut rng);
    let (r, s) = randomness(2, 4);
    let prover = cpu();
    let proofs = prover
        .prove_with_randomness(vec![Generated(3)], &params, &r[..1], &s[..1])
        .and_then(|mut first| {
            let second = prover.prove_with_randomness(vec![Generated(7)], &params, &r[1..], &s[1..])?;
            first.extend(second);
            Ok(first)
        })
        .unwrap();
    assert_eq!(prover.witness_stats(), stats(1, 1, 1, 0));
    for (i, (p, c)) in proofs.iter().zip([Generated(3), Generated(7)]).enumerate() {
        let expected = common::bellperson_proof(c, &bp_params, r[i], s[i]);
        assert_eq!(p.to_bytes().as_slice(), expected.as_slice(), "proof {i}");
    }
}

#[test]
fn with_the_path_off_nothing_is_recorded() {
    let shape = Synthetic::new(7);
    let params = random_parameters(shape.clone(), 5).unwrap();
    let (r, s) = randomness(2, 5);
    let prover = cpu().with_witness_path(false);
    assert!(!prover.witness_path());
    for _ in 0..2 {
        prover
            .prove_with_randomness(vec![shape.clone(), shape.clone().with_seed(9)], &params, &r, &s)
            .unwrap();
    }
    assert_eq!(prover.witness_stats(), stats(0, 0, 4, 0));
    assert!(prover.compiled_circuits().is_empty());
    // A clone turned back on shares the (empty) cache and starts recording.
    let on = prover.clone().with_witness_path(true);
    on.prove_with_randomness(vec![shape], &params, &r[..1], &s[..1])
        .unwrap();
    assert_eq!(prover.compiled_circuits().len(), 1);
}

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cuzk-witness-path-{label}-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_corrupt_persisted_circuit_is_refused_and_recorded_again() {
    let shape = Synthetic {
        bit_percent: 95,
        ..Synthetic::new(9)
    };
    let params = random_parameters(shape.clone(), 6).unwrap();
    let (r, s) = randomness(1, 6);
    let reference = cpu()
        .with_witness_path(false)
        .prove_with_randomness(vec![shape.clone()], &params, &r, &s)
        .unwrap();
    let dir = temp_dir("corrupt");
    let with_dir = || cpu().with_compiled_dir(&dir);
    let prove = |p: &Prover| p.prove_with_randomness(vec![shape.clone()], &params, &r, &s).unwrap();

    let first = with_dir();
    assert_eq!(prove(&first), reference);
    assert_eq!(first.witness_stats(), stats(1, 0, 1, 0));
    let file = dir.join(CompiledCircuits::file_name(
        std::any::type_name::<Synthetic>(),
        CircuitShape::of_params(&params),
    ));
    assert!(file.exists(), "saved where the directory says");
    // A restart: mapped from the file, no recording.
    let restarted = with_dir();
    assert_eq!(prove(&restarted), reference);
    assert_eq!(restarted.witness_stats(), stats(0, 1, 0, 0));
    assert!(restarted
        .compiled_circuits()
        .get_in_memory(std::any::type_name::<Synthetic>(), CircuitShape::of_params(&params))
        .unwrap()
        .is_mapped());
    // A flipped bit: refused (counted), recorded again, the file replaced.
    let mut bad = std::fs::read(&file).unwrap();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    std::fs::write(&file, &bad).unwrap();
    let after_corruption = with_dir();
    assert_eq!(prove(&after_corruption), reference);
    assert_eq!(
        after_corruption.witness_stats(),
        WitnessStats {
            compiled_refused: 1,
            ..stats(1, 0, 1, 0)
        }
    );
    assert_eq!(prove(&after_corruption), reference);
    assert_eq!(after_corruption.witness_stats().witness, 1);
    CompiledCircuit::load(&file).expect("the file was written again");
    let fresh = with_dir();
    assert_eq!(prove(&fresh), reference);
    assert_eq!(fresh.witness_stats(), stats(0, 1, 0, 0));
    // A truncated file too.
    std::fs::write(&file, &bad[..bad.len() / 3]).unwrap();
    let truncated = with_dir();
    assert_eq!(prove(&truncated), reference);
    assert_eq!(truncated.witness_stats().compiled_refused, 1);
    assert_eq!(truncated.witness_stats().recorded, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- the engine ----

const K: u32 = 6;
const DEADLINE: Duration = Duration::from_secs(30);

fn params() -> Parameters {
    static PARAMS: std::sync::OnceLock<Parameters> = std::sync::OnceLock::new();
    PARAMS
        .get_or_init(|| {
            random_parameters(
                Synthetic {
                    bit_percent: 98,
                    ..Synthetic::new(K)
                },
                7,
            )
            .expect("parameters")
        })
        .clone()
}

fn circuit(seed: u64) -> Synthetic {
    Synthetic {
        bit_percent: 98,
        ..Synthetic::new(K)
    }
    .with_seed(seed)
}

fn config(witness_path: bool) -> EngineConfig {
    EngineConfig {
        synthesis_workers: 2,
        budget_bytes: 1 << 30,
        budget_timeout: DEADLINE,
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        witness_path,
        ..EngineConfig::default()
    }
}

fn reference(seeds: &[u64], r: &[Scalar], s: &[Scalar]) -> Vec<Proof> {
    cpu()
        .with_witness_path(false)
        .prove_with_randomness(seeds.iter().map(|&i| circuit(i)).collect(), &params(), r, s)
        .unwrap()
}

fn job(seeds: &[u64], seed: u64) -> (Job, Vec<Scalar>, Vec<Scalar>) {
    let (r, s) = randomness(seeds.len(), seed);
    let circuits = seeds.iter().map(|&i| circuit(i)).collect();
    (
        Job::from_circuits(params(), circuits).with_randomness(r.clone(), s.clone()),
        r,
        s,
    )
}

/// Nothing in flight, every buffer back, only the parameters and compiled circuits charged.
fn assert_drained(engine: &Engine) {
    wait_for(engine, DEADLINE, "drained", |s| {
        s.jobs_active == 0 && s.in_synthesis == 0 && s.on_gpu == 0
    });
    let stats = engine.stats();
    assert_eq!(stats.compiled_bytes, engine.compiled_circuits().byte_size());
    assert_eq!(
        stats.budget_used,
        stats.params_host_bytes + stats.compiled_bytes,
        "{stats:#?}"
    );
    assert_eq!(stats.synthesis_reserved, 0);
    assert_eq!(stats.pool.bytes_in_use, 0, "{stats:#?}");
    assert_eq!(stats.pool.fallbacks, 0, "{stats:#?}");
}

#[test]
fn the_engine_proves_witnesses_with_the_bytes_of_full_synthesis() {
    let on = Engine::new(config(true)).unwrap();
    let off = Engine::new(config(false)).unwrap();
    let (first, r1, s1) = job(&[1], 1);
    let (rest, r2, s2) = job(&[2, 3, 4, 5], 2);
    assert_eq!(on.prove(first).unwrap(), reference(&[1], &r1, &s1));
    assert_eq!(on.stats().witness, stats(1, 0, 1, 0));
    assert!(on.stats().compiled_bytes > 0, "the recorded circuit is charged");
    assert_eq!(on.stats().compiled_circuits, 1);
    assert_drained(&on);
    let proofs = on.prove(rest).unwrap();
    assert_eq!(proofs, reference(&[2, 3, 4, 5], &r2, &s2));
    assert_eq!(on.stats().witness, stats(1, 4, 1, 0));
    assert_drained(&on);
    // Path off: the same bytes, nothing recorded or charged.
    let (rest, ..) = job(&[2, 3, 4, 5], 2);
    assert_eq!(off.prove(rest).unwrap(), proofs);
    let st = off.stats();
    assert_eq!(st.witness, stats(0, 0, 4, 0));
    assert_eq!((st.compiled_bytes, st.compiled_circuits), (0, 0));
    assert_drained(&off);
}

/// A latch the fake backends' proofs wait on (closed: they block, up to `DEADLINE`).
#[derive(Default)]
struct Gate {
    closed: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn set_closed(&self, closed: bool) {
        *self.closed.lock() = closed;
        self.cv.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock();
        let deadline = Instant::now() + DEADLINE;
        while *closed && Instant::now() < deadline {
            self.cv.wait_until(&mut closed, deadline);
        }
    }
}

/// The CPU behind a gate, with the default witness path: a, b, c evaluated on the host into
/// the engine's pool, then the gate.
#[derive(Default)]
struct HostEval(Gate);

impl Backend for HostEval {
    fn name(&self) -> &'static str {
        "host-eval"
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        self.0.pass();
        CpuBackend.commitments(a, params, t)
    }
}

/// The CPU behind a gate, evaluating witnesses outside the engine's pool, as a backend that
/// evaluates a, b, c on the device takes nothing from it.
#[derive(Default)]
struct DeviceEval(Gate);

impl Backend for DeviceEval {
    fn name(&self) -> &'static str {
        "device-eval"
    }

    fn commitments(
        &self,
        a: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        self.0.pass();
        CpuBackend.commitments(a, params, t)
    }

    fn witness_commitments(
        &self,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        _pool: Option<&PinnedPool>,
        t: &mut Timings,
    ) -> cuzk::Result<Commitments> {
        self.0.pass();
        let mut a = circuit.assignment(witness, None)?;
        CpuBackend.commitments(&mut a, params, t)
    }

    fn witness_pool_requests(&self, _: &CompiledCircuit) -> [usize; 4] {
        [0; 4]
    }
}

/// Four witness partitions held at once behind `gate` (`on_gpu` of them on the engine's
/// "GPUs", the rest waiting): returns the bytes reserved then beside the parameters and
/// compiled circuits, the pool's bytes in use, and the bytes of the evaluation slots among
/// those reserved.
fn four_held(engine: &Engine, gate: &Gate, seed: u64, on_gpu: usize) -> (usize, usize, usize) {
    let (first, r, s) = job(&[seed], seed);
    assert_eq!(engine.prove(first).unwrap(), reference(&[seed], &r, &s));
    assert_drained(engine);
    let held = engine.stats().params_host_bytes + engine.stats().compiled_bytes;
    gate.set_closed(true);
    let seeds: Vec<u64> = (seed + 1..seed + 5).collect();
    let (rest, r, s) = job(&seeds, seed + 1);
    let handle = engine.submit(rest);
    wait_for(engine, DEADLINE, "the GPUs busy, the rest waiting", |st| {
        st.on_gpu == on_gpu && st.waiting == 4 - on_gpu
    });
    // Nothing moves while the gate is closed: the books and the pool agree or not.
    let st = engine.stats();
    assert_eq!(st.witness.witness, 4, "{:?}", st.witness);
    let reserved = st.budget_used - held;
    let in_use = st.pool.bytes_in_use;
    let slot = st.evaluation_reserved;
    gate.set_closed(false);
    assert_eq!(handle.wait().unwrap(), reference(&seeds, &r, &s));
    assert_drained(engine);
    assert_eq!(engine.stats().evaluation_reserved, 0, "the slot goes with the last job");
    (reserved, in_use, slot)
}

#[test]
fn the_budget_counts_compact_witnesses_not_abc() {
    let full = partition_bytes(params_hint(&params()), 1.0);
    let engine_on = |backend: Arc<dyn Backend>, workers: usize| {
        Engine::new(EngineConfig {
            backends: vec![EngineBackend::Custom(backend)],
            gpu_workers_per_backend: workers,
            pacer: PacerMode::BoundedQueue { depth: 8 },
            ..config(true)
        })
        .unwrap()
    };
    // Evaluated on the device: a witness partition reserves its compact witness alone.
    let device = Arc::new(DeviceEval::default());
    let engine = engine_on(device.clone(), 1);
    let (reserved, in_use, slot) = four_held(&engine, &device.0, 10, 1);
    assert!(reserved > 0 && in_use > 0);
    assert_eq!(slot, 0, "nothing is evaluated on the host");
    assert!(
        reserved * 8 <= 4 * full,
        "four witness partitions reserve {reserved} bytes, one full partition {full}"
    );
    assert!(in_use <= reserved, "the pool holds {in_use} bytes, {reserved} reserved");
    // Evaluated on the host (the default): the one on the "GPU" holds a, b, c and the
    // expanded aux in the pool, reserved once in its worker's evaluation slot — not once per
    // partition (four held would then reserve four evaluations).
    let host = Arc::new(HostEval::default());
    let engine = engine_on(host.clone(), 1);
    let (host_reserved, host_in_use, slot) = four_held(&engine, &host.0, 20, 1);
    assert!(
        host_in_use > in_use,
        "a, b, c are in the pool: {host_in_use} vs {in_use}"
    );
    assert!(
        host_in_use <= host_reserved,
        "the pool holds {host_in_use} bytes, {host_reserved} reserved"
    );
    let abc = 3 * params().domain_size() * 32;
    assert!(
        slot >= abc && slot <= full,
        "one evaluation slot: {slot} bytes (a, b, c are {abc}, a full partition {full})"
    );
    assert!(
        host_in_use - in_use <= slot,
        "the proof's checkouts ({} bytes) fit in its slot ({slot})",
        host_in_use - in_use
    );
    assert!(
        host_reserved <= slot + reserved + reserved / 4,
        "four witnesses reserve {host_reserved} bytes: one slot of {slot} beside the witnesses' {reserved}"
    );
    // Three "GPUs" prove three of the four at once: three slots, one each.
    let host = Arc::new(HostEval::default());
    let engine = engine_on(host.clone(), 3);
    let (_, _, slots) = four_held(&engine, &host.0, 30, 3);
    assert_eq!(slots, 3 * slot, "three workers proving, one slot each");
}

#[test]
fn the_engine_answers_a_refused_witness_with_an_error_then_proves_in_full_and_keeps_compiled_circuits_in_its_directory()
{
    let dir = temp_dir("engine");
    let branch = |flag: bool, seed: u64| Branchy {
        flag,
        values: (0..30).map(|i| seed * 17 + i).collect(),
    };
    let params = random_parameters(branch(false, 0), 8).unwrap();
    let (r, s) = randomness(3, 8);
    let reference: Vec<Proof> = (0..3)
        .map(|i| {
            cpu()
                .with_witness_path(false)
                .prove_with_randomness(vec![branch(i == 1, i as u64)], &params, &r[i..=i], &s[i..=i])
                .unwrap()[0]
        })
        .collect();
    let engine = Engine::new(EngineConfig {
        compiled_dir: Some(dir.clone()),
        ..config(true)
    })
    .unwrap();
    let job = |i: usize| {
        Job::from_circuits(params.clone(), vec![branch(i == 1, i as u64)])
            .with_randomness(r[i..=i].to_vec(), s[i..=i].to_vec())
    };
    assert_eq!(engine.prove(job(0)).unwrap(), reference[..1], "the recording proof");
    // The other branch: its witness is refused; the job fails naming the type, once.
    let refused = engine.prove(job(1)).unwrap_err();
    assert!(refused.to_string().contains("Branchy"), "{refused}");
    assert_eq!(engine.stats().witness, stats(1, 0, 1, 1));
    // Submitted again, both branches are proved in full, with the bytes of full synthesis.
    assert_eq!(engine.prove(job(1)).unwrap(), reference[1..2], "proof 1 again");
    assert_eq!(engine.prove(job(2)).unwrap(), reference[2..], "proof 2");
    assert_eq!(engine.stats().witness, stats(1, 0, 3, 1));
    assert_drained(&engine);
    drop(engine);
    // A new engine on the directory maps the circuit: no recording.
    let engine = Engine::new(EngineConfig {
        compiled_dir: Some(dir.clone()),
        ..config(true)
    })
    .unwrap();
    let job =
        Job::from_circuits(params.clone(), vec![branch(false, 0)]).with_randomness(r[..1].to_vec(), s[..1].to_vec());
    assert_eq!(engine.prove(job).unwrap(), reference[..1]);
    assert_eq!(engine.stats().witness, stats(0, 1, 0, 0));
    assert!(engine.stats().compiled_bytes > 0, "a mapped circuit is charged too");
    assert_drained(&engine);
    drop(engine);
    std::fs::remove_dir_all(&dir).unwrap();
}
