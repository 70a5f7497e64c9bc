//! Native witness generators through the engine (any caller's: `Partition::with_generator`),
//! on the CPU: a generator is validated against the gadgets once, then writes the witnesses;
//! one that refuses a partition's input (a malformed request) fails that job alone and stays
//! on for the next ones — only a wrong witness turns it off.

use std::time::Duration;

use bellpepper_core::Circuit;
use cuzk::engine::{Engine, EngineBackend, EngineConfig, Job, Partition};
use cuzk::prover::BackendChoice;
use cuzk::testing::{random_parameters, Synthetic};
use cuzk::{Error, HeapAllocator, Parameters, WitnessStats};

const K: u32 = 6;

fn circuit(seed: u64) -> Synthetic {
    Synthetic {
        bit_percent: 98,
        ..Synthetic::new(K)
    }
    .with_seed(seed)
}

fn params() -> Parameters {
    random_parameters(circuit(0), 7).expect("parameters")
}

fn engine() -> Engine {
    Engine::new(EngineConfig {
        synthesis_workers: 1,
        budget_bytes: 1 << 30,
        budget_timeout: Duration::from_secs(30),
        backends: vec![EngineBackend::Choice(BackendChoice::Cpu)],
        pool_allocator: Some(Box::new(HeapAllocator)),
        witness_path: true,
        native_witness: true,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// A partition whose generator writes its witness by running the circuit itself (a correct
/// generator), or, with `refuse`, fails as a generator does on a malformed vanilla proof.
fn partition(seed: u64, refuse: bool) -> Partition {
    let c = circuit(seed);
    Partition::with_generator(c.clone(), move |cs: &mut cuzk::WitnessCs, _threads: usize| {
        if refuse {
            return Err(Error::InvalidArgument(format!(
                "vanilla proof of partition {seed}: 3 challenges, expected 18"
            )));
        }
        c.clone()
            .synthesize(cs)
            .map_err(|e| Error::InvalidArgument(e.to_string()))
    })
}

fn prove(engine: &Engine, params: &Parameters, parts: Vec<Partition>) -> cuzk::Result<Vec<cuzk::Proof>> {
    engine.submit(Job::new(params.clone(), parts)).wait()
}

fn generator_counts(w: WitnessStats) -> (u64, u64, u64, u64) {
    (
        w.generator_validated,
        w.generated,
        w.generator_refused,
        w.generator_input_errors,
    )
}

#[test]
fn a_generator_that_refuses_one_input_fails_that_job_and_stays_on() {
    let params = params();
    let engine = engine();
    // Recorded, then validated: both partitions one after the other (one synthesis worker).
    prove(&engine, &params, vec![partition(1, false), partition(2, false)]).unwrap();
    prove(&engine, &params, vec![partition(3, false)]).unwrap();
    let before = engine.stats().witness;
    assert_eq!(before.generator_validated, 1, "{before:?}");
    assert!(before.generated >= 1, "validated, then used: {before:?}");

    let err = prove(&engine, &params, vec![partition(4, true)]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("expected 18")),
        "the generator's own error: {err}"
    );
    let after = engine.stats().witness;
    assert_eq!(
        generator_counts(after),
        (
            before.generator_validated,
            before.generated,
            0,
            before.generator_input_errors + 1
        ),
        "counted as an input error, the generator not refused: {after:?}"
    );

    // The next request is generated again: the bad one did not turn the generator off.
    let proofs = prove(&engine, &params, vec![partition(5, false), partition(6, false)]).unwrap();
    assert_eq!(proofs.len(), 2);
    let last = engine.stats().witness;
    assert_eq!(last.generated, after.generated + 2, "{last:?}");
    assert_eq!(last.generator_refused, 0, "{last:?}");
}
