//! `--shape-only`: partition 0 counted, then synthesized witness-only once, timed — no
//! parameters, no engine.

use std::time::Instant;

use bellpepper_core::{Index, LinearCombination, Variable};
use blstrs::Scalar;
use cuzk::{Circuit, ConstraintSystem, SynthesisError};

use crate::circuits::SectorCircuit;
use crate::memory::{rss, Sampler};
use crate::ok;
use crate::report::{gib, secs, Out};
use crate::support::fail;

/// Counts a circuit's variables and constraints, computing no value and storing nothing (for
/// a shape too big to synthesize here).
pub(crate) struct Count {
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    pub(crate) constraints: usize,
}

impl ConstraintSystem<Scalar> for Count {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self {
        self
    }
}

/// `--shape-only`: partition 0 counted (`Count`), then synthesized witness-only once as the
/// engine's witness path does (`WitnessCs` without the generator shortcut), timed, with the
/// peak RSS over it.
pub(crate) fn shape_only(circuit: &SectorCircuit, out: &mut Out) {
    let t = Instant::now();
    // The prover's "one" first, as every count here has it.
    let mut count = Count {
        inputs: 1,
        aux: 0,
        constraints: 0,
    };
    ok("counting partition 0", circuit.clone().synthesize(&mut count));
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
