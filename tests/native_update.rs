//! The native SnapDeals witness (`cuzk::filecoin::native::update`) against `WitnessCs` on the
//! same `EmptySectorUpdateCircuit`: a real 2 KiB sector updated by filecoin-proofs (the
//! circuits filecoin-proofs builds from its vanilla proofs), and production shapes — 8 MiB
//! (8-0-0), 16 MiB (8-2-0) and 32 GiB (8-8-0) — from the sector bench's partitions (their
//! witness fabricated, structurally filecoin-proofs' own circuit: tests/filecoin.rs). The
//! generated witness must equal the synthesized one value for value; a failure names the
//! first index that differs and its namespace path. No parameters are needed.

#![cfg(feature = "filecoin")]

#[path = "common/filecoin.rs"]
mod fixtures;
#[path = "common/native.rs"]
mod native;
#[path = "../examples/sector_bench/snap.rs"]
#[allow(dead_code)]
mod sector_bench_snap;

use cuzk::filecoin::native::gadgets::{CountSink, CsSink};
use cuzk::filecoin::native::update::{update_circuit_witness, update_circuit_witness_parallel};
use cuzk::{ConstraintSystem, Scalar, WitnessCs};
use ff::Field;
use fixtures::{sectors, update_circuits, update_vanilla, Tree};
use native::{assert_same, start};
use sector_bench_snap::SnapCircuit;

/// filecoin-proofs' circuits of a 2 KiB SnapDeals update: every way the generator writes the
/// witness (straight, through `alloc`, on 1, 2, 3 and 64 threads) equals `WitnessCs`'s.
#[test]
fn update_witness_of_a_real_sector_equals_witness_cs() {
    let (vanilla, commitments) = update_vanilla(&sectors()[1], "native-update");
    let circuits = update_circuits(&vanilla, commitments);
    assert!(!circuits.is_empty());
    for (k, c) in circuits.iter().enumerate() {
        let what = format!("2 KiB SnapDeals partition {k}");
        let circuit = || update_circuits(&vanilla, commitments).remove(k);
        let expected = WitnessCs::new().without_generator().synthesize(circuit()).unwrap();

        let mut cs = start();
        let inputs = update_circuit_witness::<Tree>(&c.pub_params, &c.pub_inputs, &c.priv_inputs, &mut cs).unwrap();
        for v in inputs {
            cs.alloc_input(|| "input", || Ok(v)).unwrap();
        }
        let got = cs.finish("generated").unwrap();
        assert_same(&format!("{what}: straight"), &expected, &got, circuit);
        assert_eq!(got.num_bits(), expected.num_bits(), "{what}: the compact form");

        let mut cs = start();
        let mut sink = CsSink::new(&mut cs);
        let inputs = update_circuit_witness::<Tree>(&c.pub_params, &c.pub_inputs, &c.priv_inputs, &mut sink);
        sink.finish().unwrap();
        for v in inputs.unwrap() {
            cs.alloc_input(|| "input", || Ok(v)).unwrap();
        }
        assert_same(
            &format!("{what}: through alloc"),
            &expected,
            &cs.finish("alloc").unwrap(),
            circuit,
        );

        for threads in [1, 2, 3, 64] {
            let mut cs = start();
            update_circuit_witness_parallel::<Tree>(&c.pub_params, &c.pub_inputs, &c.priv_inputs, threads, &mut cs)
                .unwrap();
            assert_same(
                &format!("{what}: {threads} threads"),
                &expected,
                &cs.finish("parallel").unwrap(),
                circuit,
            );
        }
        let mut count = CountSink::default();
        update_circuit_witness::<Tree>(&c.pub_params, &c.pub_inputs, &c.priv_inputs, &mut count).unwrap();
        assert_eq!(count.values, expected.num_aux(), "{what}: sizes");
        eprintln!(
            "{what}: {} inputs, {} aux values ({} bits) equal",
            expected.inputs().len(),
            expected.num_aux(),
            count.bits
        );
    }
}

/// What the circuit asserts, the generator refuses with an error: a `leaf_r_new` that is not
/// `leaf_r_old + leaf_d_new · rho`, an `h_select` of two bits or with a bit past it, a
/// missing value.
#[test]
fn inconsistent_inputs_are_refused() {
    let (vanilla, commitments) = update_vanilla(&sectors()[1], "native-update-bad");
    let c = update_circuits(&vanilla, commitments).remove(0);
    let run = |c: &storage_proofs_update::EmptySectorUpdateCircuit<Tree>| {
        let mut sink = CountSink::default();
        update_circuit_witness::<Tree>(&c.pub_params, &c.pub_inputs, &c.priv_inputs, &mut sink)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(run(&c).is_ok());
    let mut bad = update_circuits(&vanilla, commitments).remove(0);
    let leaf = bad.priv_inputs.challenge_proofs[1].leaf_r_new.unwrap();
    bad.priv_inputs.challenge_proofs[1].leaf_r_new = Some(leaf + Scalar::ONE);
    assert!(run(&bad).unwrap_err().contains("leaf_r_new"));
    // A 2 KiB sector has one partition (no k bits): h_select is the six low bits.
    for two_bits_or_one_past in [3u64, 1 | 1 << 6] {
        let mut bad = update_circuits(&vanilla, commitments).remove(0);
        bad.pub_inputs.k_and_h_select = Some(Scalar::from(two_bits_or_one_past));
        assert!(run(&bad).unwrap_err().contains("exactly one bit"));
    }
    let mut bad = update_circuits(&vanilla, commitments).remove(0);
    bad.priv_inputs.comm_c = None;
    assert!(run(&bad).unwrap_err().contains("comm_c"));
}

/// Production shapes from the sector bench's partitions: partition 1 of an 8 MiB, a 16 MiB
/// and a 32 GiB sector (each shape's TreeR arities, TreeD depth, challenge and apex counts).
#[test]
fn production_shapes_equal_witness_cs() {
    for (what, bytes) in [("8 MiB", 8u64 << 20), ("16 MiB", 16 << 20), ("32 GiB", 32 << 30)] {
        let circuit = || SnapCircuit::fabricate(bytes, 1, 5).unwrap();
        let expected = WitnessCs::new().without_generator().synthesize(circuit()).unwrap();
        for threads in [1, 3] {
            let mut cs = start();
            circuit().generate(threads, &mut cs).unwrap();
            assert_same(
                &format!("{what}, {threads} threads"),
                &expected,
                &cs.finish("generated").unwrap(),
                circuit,
            );
        }
        eprintln!(
            "{what}: {} inputs, {} aux values equal",
            expected.inputs().len(),
            expected.num_aux()
        );
    }
}
