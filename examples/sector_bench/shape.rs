//! `--shape-only`: partition 0 counted, then synthesized witness-only once, timed — no
//! parameters, no engine.

use std::time::Instant;

use cuzk::testing::count_circuit;

use crate::circuits::SectorCircuit;
use crate::memory::{rss, Sampler};
use crate::ok;
use crate::report::{gib, secs, Out};
use crate::support::fail;

/// `--shape-only`: partition 0 counted (`cuzk::testing::count_circuit`: nothing computed or
/// stored), then synthesized witness-only once as the engine's witness path does
/// (`WitnessCs` without the generator shortcut), timed, with the peak RSS over it.
pub(crate) fn shape_only(circuit: &SectorCircuit, out: &mut Out) {
    let t = Instant::now();
    // The prover's "one" counted first, as every count here has it.
    let count = ok("counting partition 0", count_circuit(circuit.clone()));
    let counted = t.elapsed();
    // The prover appends one constraint per input: the rows of A, B, C, the domain's floor.
    let rows = count.constraints + count.inputs;
    out.line(&format!(
        "partition 0: {rows} constraints ({} of the circuit + {} input constraints), {} inputs, {} aux; domain 2^{}; \
         counted in {:.1} s",
        count.constraints,
        count.inputs,
        count.inputs,
        count.aux,
        rows.next_power_of_two().trailing_zeros(),
        secs(counted)
    ));
    let before = rss();
    let sampler = Sampler::start();
    let t = Instant::now();
    let witness = ok(
        "witness-only synthesis",
        cuzk::WitnessCs::new().without_generator().synthesize(circuit.clone()),
    );
    let took = t.elapsed();
    let peak = sampler.stop();
    if (witness.num_constraints(), witness.num_inputs(), witness.num_aux())
        != (count.constraints, count.inputs, count.aux)
    {
        fail(&format!(
            "the witness synthesis counted {} constraints, {} inputs, {} aux; the count {}, {}, {}",
            witness.num_constraints(),
            witness.num_inputs(),
            witness.num_aux(),
            count.constraints,
            count.inputs,
            count.aux
        ));
    }
    out.line(&format!(
        "witness-only synthesis: {:.1} s; its witness {:.2} GiB ({} of {} aux values 0/1); peak RSS {:.2} GiB ({:.2} before)",
        secs(took),
        gib(witness.byte_size()),
        witness.num_bits(),
        witness.num_aux(),
        gib(peak),
        gib(before)
    ));
}
