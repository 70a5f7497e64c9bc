//! GPU tests of the witness path (feature `cuda`; run on the GPU machine): a, b, c evaluated on
//! the device from a resident compiled circuit and a compact (or dense) witness equal the
//! host's, element for element; witness proofs on the GPU are the full path's bytes, over
//! resident and streamed parameters; a circuit that does not fit under the device limit is
//! evaluated on the host, counted, with the same bytes.
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use cuzk::compiled::{CompiledCircuit, WitnessCs};
use cuzk::pool::PinMode;
use cuzk::prover::cuda::CudaBackend;
use cuzk::prover::Placement;
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{BackendChoice, Parameters, PinnedPool, PoolConfig, Prover};
use ff::Field;
use rand::Rng;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn cpu_prover() -> Prover {
    Prover::new().with_backend(BackendChoice::Cpu).unwrap()
}

fn gpu_prover(backend: &Arc<CudaBackend>) -> Prover {
    Prover::new().with_custom_backend(backend.clone())
}

fn prover_on(backend: Arc<CudaBackend>) -> Prover {
    Prover::new()
        .with_custom_backend(backend)
        .with_pool(PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).expect("pinned pool"))
}

/// Puts the device's memory limit back to none when dropped (a panic included).
struct LimitGuard(Arc<CudaBackend>);

impl Drop for LimitGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.set_memory_limit(None) {
            eprintln!("resetting the device memory limit: {e}");
        }
    }
}

/// Rows of `width` terms each over aux values (a third +1, a third −1, a third distinct
/// constants), times the one input, equal to one more aux value: many terms per row, every
/// coefficient code.
#[derive(Clone)]
struct Wide {
    rows: usize,
    width: usize,
    vars: usize,
    seed: u64,
}

impl Circuit<Scalar> for Wide {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        // Deterministic in the seed: every synthesis of one Wide has the same witness.
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(self.seed);
        let mut xs = Vec::with_capacity(self.vars);
        for i in 0..self.vars {
            let v = match i % 4 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::from(rng.gen::<u64>()),
            };
            xs.push((cs.alloc(|| "x", || Ok(v))?, v));
        }
        for r in 0..self.rows {
            let mut lc = LinearCombination::<Scalar>::zero();
            let mut sum = Scalar::ZERO;
            for t in 0..self.width {
                let (var, v) = xs[(r * 7 + t * 13) % self.vars];
                let coeff = match t % 3 {
                    0 => Scalar::ONE,
                    1 => -Scalar::ONE,
                    _ => Scalar::from(t as u64 + 2),
                };
                lc = lc + (coeff, var);
                sum += coeff * v;
            }
            let y = cs.alloc(|| "y", || Ok(sum))?;
            cs.enforce(|| "row", |_| lc, |l| l + CS::one(), |l| l + y);
        }
        Ok(())
    }
}

/// The witness path on `backend` against the full CPU path: with `resident`, a, b, c
/// evaluated on the device equal the host's; else the circuit is refused by the device.
fn same_bytes_on_device(
    label: &str,
    backend: &Arc<CudaBackend>,
    params: &Parameters,
    circuit: impl Circuit<Scalar> + Clone + Send,
    compiled: &CompiledCircuit,
    resident: bool,
) {
    let gpu = prover_on(backend.clone());
    let mut rng = common::rng(label);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = cpu_prover()
        .prove_with_randomness(vec![circuit.clone()], params, &[r], &[s])
        .unwrap();
    let heap = WitnessCs::new().synthesize(circuit.clone()).unwrap();
    let pinned = gpu.synthesize_witness(circuit).unwrap();
    let host = compiled.evaluate(&heap).unwrap();
    match backend.evaluate_on_device(compiled, &pinned) {
        Ok(device) => {
            assert!(resident, "{label}: the circuit should not fit");
            assert!(host == device, "{label}: a, b, c on the device differ from the host's");
        }
        Err(e) => assert!(!resident, "{label}: {e}"),
    }
    let (proofs, _) = gpu
        .prove_witnesses(compiled, &[heap, pinned], params, &[r, r], &[s, s])
        .unwrap();
    for (k, p) in proofs.iter().enumerate() {
        assert_eq!(
            p.to_bytes(),
            expected[0].to_bytes(),
            "{label}: witness proof {k} on the GPU differs from the full CPU proof"
        );
    }
    assert_eq!(gpu.pool().unwrap().stats().bytes_in_use, 0, "{label}: buffers back");
}

#[test]
fn device_evaluation_and_witness_proofs_are_the_full_paths() {
    let _serial = serial();
    let mut rng = common::rng("gpu_witness");
    let backend = Arc::new(CudaBackend::new(0).unwrap());
    // Compact at the Filecoin mix and at 75%, dense (no bits), padded domains, many inputs.
    for (k, bits, inputs, padding) in [
        (10u32, 98u32, 2usize, 0usize),
        (12, 75, 0, 100),
        (14, 0, 5, 0),
        (16, 98, 40, 3000),
        (20, 98, 2, 0),
    ] {
        let circuit = Synthetic {
            bit_percent: bits,
            public_inputs: inputs,
            padding,
            ..Synthetic::new(k)
        }
        .with_seed(rng.gen());
        let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
        let (_, compiled) = CompiledCircuit::record(circuit.clone().with_seed(rng.gen()), None, None).unwrap();
        let before = backend.witness_evaluations();
        same_bytes_on_device(&format!("2^{k} {bits}%"), &backend, &params, circuit, &compiled, true);
        let after = backend.witness_evaluations();
        assert_eq!(
            after.on_device - before.on_device,
            2,
            "2^{k}: both proofs evaluated on the device"
        );
        assert_eq!(after.on_host, before.on_host, "2^{k}: nothing on the host");
        eprintln!("2^{k} ({bits}% bits, {inputs} inputs): device a, b, c = host; witness proofs = full bytes");
    }
    // Every coefficient code and wide rows.
    let wide = Wide {
        rows: 3000,
        width: 60,
        vars: 1000,
        seed: 1,
    };
    let params = random_parameters(wide.clone(), rng.gen()).unwrap();
    let (_, compiled) = CompiledCircuit::record(
        Wide {
            seed: 2,
            ..wide.clone()
        },
        None,
        None,
    )
    .unwrap();
    assert!(
        compiled.constants().len() >= 19,
        "the wide circuit has a table of constants"
    );
    same_bytes_on_device("wide", &backend, &params, wide, &compiled, true);
    let st = backend.witness_evaluations();
    assert!(st.resident_circuits >= 6 && st.circuit_bytes > 0, "{st:?}");
    backend.release_device_memory().unwrap();
    assert_eq!(
        backend.witness_evaluations().resident_circuits,
        0,
        "circuits go with the device memory"
    );
}

#[test]
fn streamed_parameters_and_a_circuit_that_does_not_fit() {
    let _serial = serial();
    let mut rng = common::rng("gpu_witness_streamed");
    let backend = Arc::new(CudaBackend::new(0).unwrap());
    let _reset = LimitGuard(backend.clone());
    // Streamed parameters, resident circuit.
    let circuit = Synthetic {
        bit_percent: 98,
        ..Synthetic::new(14)
    }
    .with_seed(rng.gen());
    let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
    let (_, compiled) = CompiledCircuit::record(circuit.clone(), None, None).unwrap();
    backend.set_always_stream(true);
    backend.set_stream_chunk_points(4096).unwrap();
    same_bytes_on_device("streamed 2^14", &backend, &params, circuit, &compiled, true);
    assert_eq!(backend.witness_evaluations().on_device, 2);
    assert_eq!(backend.streamed_sets(), 1);
    assert_eq!(backend.placement(params.id()), Placement::Streamed);
    backend.set_always_stream(false);
    backend.release_device_memory().unwrap();
    assert_eq!(backend.placement(params.id()), Placement::Absent, "released");
    // Without `always_stream` the backend places the set itself: it fits, so on the device.
    gpu_prover(&backend).prepare(&params).unwrap();
    assert_eq!(backend.placement(params.id()), Placement::Device);

    // A circuit larger than the limit: its a, b, c are evaluated on the host, same bytes.
    backend.release_device_memory().unwrap();
    let wide = Wide {
        rows: 16000,
        width: 700,
        vars: 6000,
        seed: 5,
    };
    let params = random_parameters(wide.clone(), rng.gen()).unwrap();
    let (_, compiled) = CompiledCircuit::record(wide.clone(), None, None).unwrap();
    // 48 MiB holds a streamed proof at 2^14 (as in tests/gpu.rs) but not the circuit, even
    // packed as the device keeps it.
    let limit = 48usize << 20;
    let packed = compiled.pack().unwrap().byte_size();
    assert!(packed > limit, "{packed} bytes packed");
    backend.set_memory_limit(Some(limit)).unwrap();
    backend.set_stream_chunk_points(4096).unwrap();
    let before = backend.witness_evaluations();
    same_bytes_on_device("circuit over the limit", &backend, &params, wide, &compiled, false);
    let after = backend.witness_evaluations();
    assert_eq!(after.on_host - before.on_host, 2, "{after:?}");
    assert_eq!(after.on_device, before.on_device, "{after:?}");
    assert_eq!(after.resident_circuits, 0);
}

/// A circuit resident on the device that does not fit beside a proof's device vectors (a
/// 2^27 PoRep partition's under a 24 GiB limit, measured by examples/sector_bench; here the
/// a/b/c step's out-of-memory injected on the call and its one retry): the proof goes on with
/// a, b, c evaluated on the host — the same bytes —, the circuit leaves the device and is
/// refused there from then on.
#[cfg(feature = "fault-injection")]
#[test]
fn a_circuit_that_fits_but_not_beside_a_proof_goes_to_the_host() {
    use cuzk::prover::cuda::fault;
    let _serial = serial();
    let mut rng = common::rng("gpu_witness_oom");
    let backend = Arc::new(CudaBackend::new(0).unwrap());
    let circuit = Synthetic {
        bit_percent: 98,
        ..Synthetic::new(12)
    }
    .with_seed(rng.gen());
    let params = random_parameters(circuit.clone(), rng.gen()).unwrap();
    let (_, compiled) = CompiledCircuit::record(circuit.clone(), None, None).unwrap();
    let gpu = prover_on(backend.clone());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = cpu_prover()
        .prove_with_randomness(vec![circuit.clone()], &params, &[r], &[s])
        .unwrap()[0]
        .to_bytes();
    let prove = || {
        let w = gpu.synthesize_witness(circuit.clone()).unwrap();
        gpu.prove_witnesses(&compiled, &[w], &params, &[r], &[s])
            .map(|(p, _)| p[0].to_bytes())
    };
    // On the device first: the circuit becomes resident.
    assert_eq!(prove().unwrap(), expected);
    let before = backend.witness_evaluations();
    assert_eq!((before.resident_circuits, before.on_host), (1, 0), "{before:?}");

    let fired = fault::fired();
    fault::arm(fault::Phase::AbcCopy, 0, fault::OUT_OF_MEMORY, 2);
    let result = prove();
    fault::disarm();
    assert_eq!(fault::fired() - fired, 2, "the fault fired on the call and its retry");
    assert_eq!(result.expect("the proof goes on on the host"), expected);
    let after = backend.witness_evaluations();
    assert_eq!(after.on_host - before.on_host, 1, "{after:?}");
    assert_eq!(after.resident_circuits, 0, "the circuit left the device: {after:?}");

    // Refused from now on: evaluated on the host without trying the device.
    assert_eq!(prove().unwrap(), expected);
    let last = backend.witness_evaluations();
    assert_eq!(
        (last.on_host - after.on_host, last.on_device, last.resident_circuits),
        (1, after.on_device, 0),
        "{last:?}"
    );
    backend.release_device_memory().unwrap();
}
