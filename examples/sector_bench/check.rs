//! `--check-builders`: the PoRep partitions from random vanilla proofs (the default) against
//! those of a sector replicated here (`--replicate`, the bench's circuits before the real
//! shape), at a small size where both apply, on the CPU.
//!
//! `StackedCompound::circuit` reads only the public inputs and the vanilla proofs, so the two
//! builders give the same circuit exactly when they get the same vanilla proofs, and circuits
//! of the same structure at the same size. Checked:
//!
//! 1. **The same vanilla proofs, the same proofs.** The replicated sector's public inputs and
//!    vanilla proofs built into partitions twice: with the replicated sector's parameters (the
//!    old path) and with parameters from `setup` alone (as `random_sector` makes them: no
//!    sector behind them). Each partition's full synthesis gives the same a, b, c, inputs and
//!    aux, and its CPU proof, with random parameters of the shape and the bench's r, s, the
//!    same bytes.
//! 2. **The same size, the same circuit.** Partition 0 of a random sector of that size and of
//!    the replicated one record the same compiled circuit (sizes, structure trace and
//!    fingerprint: identical A, B, C and densities).
//! 3. **The native generator** gives the gadgets' witness, value for value, for a random
//!    partition and a replicated one (what the engine's validation checks before a native
//!    stream).
//! 4. **`--count-only`'s arithmetic**: the count of partition 0 gives the parameters' bytes
//!    and the compiled circuit's (less its constants) that the recorded shape has.

use std::time::Instant;

use cuzk::filecoin::native::first_differences;
use cuzk::testing::random_parameters_for;
use cuzk::{BackendChoice, CompiledCircuit, ConstraintSystem, Prover, Scalar, WitnessCs};
use ff::Field;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::StackedDrg;

use crate::args::Args;
use crate::circuits::{porep_partitions, randomness, replicated_sector, Generator, Piece, Porep, SectorCircuit, Tree};
use crate::ok;
use crate::report::{secs, Out};
use crate::shape::Counted;
use crate::vanilla::{random_sector, setup, PorepSector};

/// Runs the checks at `args`' PoRep shape with `partitions` partitions; returns whether all
/// held (each printed as it ends).
pub(crate) fn check_builders(args: &Args, partitions: usize, out: &mut Out) -> bool {
    let bytes = args.porep_sector_size();
    let start = Instant::now();
    let mut all = true;
    let mut verdict = |what: String, same: bool, out: &mut Out| {
        out.line(&format!("{what}: {}", if same { "identical" } else { "DIFFER" }));
        all &= same;
    };

    // 1. The replicated sector's vanilla proofs through both builders.
    let replicated = replicated_sector(args, bytes, partitions);
    let fresh = ok(
        "PoRep setup",
        StackedDrg::<Tree, Piece>::setup(&setup((bytes / 32) as usize, args.layers, args.challenges)),
    );
    let rebuilt = PorepSector {
        pub_inputs: replicated.pub_inputs.clone(),
        pp: fresh,
        partitions: replicated.partitions.clone(),
    };
    let old = porep_partitions(replicated);
    let new = porep_partitions(rebuilt);
    let cpu = ok("CPU prover", Prover::new().with_backend(BackendChoice::Cpu));
    let shape = ok("synthesizing partition 0", cpu.synthesize(old[0].0.clone()));
    let params = ok("random parameters", random_parameters_for(&shape, 32));
    let (r, s) = randomness(partitions);
    for (k, ((o, _), (n, _))) in old.iter().zip(&new).enumerate() {
        let a = ok("synthesis", cpu.synthesize_for(o.clone(), &params));
        let b = ok("synthesis", cpu.synthesize_for(n.clone(), &params));
        let same_assignment = a.a() == b.a()
            && a.b() == b.b()
            && a.c() == b.c()
            && a.input_assignment() == b.input_assignment()
            && a.aux_assignment() == b.aux_assignment();
        verdict(
            format!(
                "partition {k} from the replicated sector's vanilla proofs, by the old path and the new builder: a, b, c, \
                 inputs, aux ({} constraints)",
                a.num_constraints()
            ),
            same_assignment,
            out,
        );
        let (pa, _) = ok(
            "CPU proof",
            cpu.prove_synthesized(vec![a], &params, &r[k..=k], &s[k..=k]),
        );
        let (pb, _) = ok(
            "CPU proof",
            cpu.prove_synthesized(vec![b], &params, &r[k..=k], &s[k..=k]),
        );
        verdict(
            format!("partition {k}: CPU proof bytes (same parameters, r, s)"),
            pa == pb,
            out,
        );
    }

    // 2. A random sector of the same size: the same compiled circuit.
    let random = porep_partitions(random_sector(bytes, args.layers, args.challenges, partitions));
    let (_, replicated_compiled) = ok(
        "recording the replicated partition 0",
        CompiledCircuit::record(old[0].0.clone(), None, None),
    );
    let (_, random_compiled) = ok(
        "recording the random partition 0",
        CompiledCircuit::record(random[0].0.clone(), None, None),
    );
    let describe = |c: &CompiledCircuit| {
        format!(
            "{} constraints, {} inputs, {} aux, structure {:016x}, fingerprint {:032x}",
            c.circuit_constraints(),
            c.num_inputs(),
            c.num_aux(),
            c.structure_hash(),
            c.fingerprint()
        )
    };
    out.line(&format!("replicated partition 0: {}", describe(&replicated_compiled)));
    out.line(&format!("random partition 0:     {}", describe(&random_compiled)));
    verdict(
        format!(
            "a random sector's partition 0 against the replicated one's, {bytes} B, {} layers, {} challenges: compiled A, B, C",
            args.layers, args.challenges
        ),
        describe(&replicated_compiled) == describe(&random_compiled),
        out,
    );

    // 3. The native generator against the gadgets.
    for (what, (circuit, generate)) in [("replicated", &old[0]), ("random", &random[0])] {
        let d = generated_against_gadgets(circuit, generate);
        if let Some(d) = &d {
            out.line(&format!("{what} partition 0: {d}"));
        }
        verdict(
            format!("{what} partition 0: the native generator's witness against the gadgets'"),
            d.is_none(),
            out,
        );
    }

    // 4. --count-only's host bytes against the recorded shape's.
    let counted = Counted::of(&SectorCircuit::Porep(random[0].0.clone()));
    let constants = replicated_compiled.byte_size() - counted.compiled_bytes();
    out.line(&format!(
        "count of partition 0: parameters {} bytes (made: {}), compiled circuit {} bytes of matrices and densities \
         (recorded: {}, the {} more its constants)",
        counted.params_bytes(),
        params.host_bytes(),
        counted.compiled_bytes(),
        replicated_compiled.byte_size(),
        constants
    ));
    verdict(
        "--count-only's parameter bytes and query lengths against the parameters made".to_string(),
        counted.params_bytes() == params.host_bytes() && counted.query_lengths() == params.query_lengths(),
        out,
    );
    out.line(&format!("checked in {:.1} s", secs(start.elapsed())));
    all
}

/// The gadgets' witness (`WitnessCs` without the generator) against the generator's, value for
/// value: the differences, if any.
fn generated_against_gadgets(circuit: &Porep, generate: &Generator) -> Option<String> {
    let expected = ok(
        "witness-only synthesis",
        WitnessCs::new().without_generator().synthesize(circuit.clone()),
    );
    let mut cs = WitnessCs::new();
    ok("the one input", cs.alloc_input(|| "one", || Ok(Scalar::ONE)));
    ok("the native generator", generate(&mut cs, 2));
    let got = ok("the generated witness", cs.finish(expected.circuit_type()));
    let d = first_differences(&expected, &got);
    (!d.is_empty()).then(|| d.to_string())
}
