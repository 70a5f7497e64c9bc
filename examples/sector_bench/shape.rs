//! `--shape-only`: partition 0 counted, then synthesized witness-only once, timed — no
//! parameters, no engine; `--count-only`: partition 0 counted, with its densities and terms,
//! and the host bytes they make; and before the streams, a circuit's shape synthesized in
//! full (`synthesized`) and random parameters of it (`Shape::made`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellpepper_core::{Index, LinearCombination, Variable};
use cuzk::engine::budget::partition_bytes;
use cuzk::filecoin::native::first_differences;
use cuzk::testing::count_circuit;
use cuzk::testing::random_parameters_for;
use cuzk::{
    CapacityHint, Circuit, CompiledCircuit, ConstraintSystem, Parameters, Prover, ProvingAssignment, Scalar,
    SynthesisError, WitnessCs,
};
use ff::Field;

use crate::circuits::{Generator, SectorCircuit, Timed};
use crate::memory::{rss, Sampler};
use crate::ok;
use crate::report::{gib, secs, Out};
use crate::support::fail;

/// `--shape-only`: partition 0 counted (`cuzk::testing::count_circuit`: nothing computed or
/// stored), then synthesized witness-only once as the engine's witness path does
/// (`WitnessCs` without the generator shortcut), timed, with the peak RSS over it; then, where
/// the partition has one (`generator`), its native generator's witness, timed and compared
/// value for value with the gadgets' (exit 1 when they differ).
pub(crate) fn shape_only(circuit: &SectorCircuit, generator: Option<&Generator>, out: &mut Out) {
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
    let Some(generate) = generator else {
        return;
    };
    let threads = rayon::current_num_threads();
    let t = Instant::now();
    let mut cs = WitnessCs::new();
    ok("the one input", cs.alloc_input(|| "one", || Ok(Scalar::ONE)));
    ok("the native generator", generate(&mut cs, threads));
    let generated = ok("the generated witness", cs.finish(witness.circuit_type()));
    let took = t.elapsed();
    let d = first_differences(&witness, &generated);
    out.line(&format!(
        "native generator: {:.2} s on {threads} thread(s); its witness against the gadgets', value for value: {}",
        secs(took),
        if d.is_empty() {
            "identical".to_string()
        } else {
            format!("DIFFERS: {d}")
        }
    ));
    if !d.is_empty() {
        std::process::exit(1);
    }
}

/// A circuit's sizes, densities and non-zero terms (`Tally`), and what they make on the host.
pub(crate) struct Counted {
    /// The circuit's constraints (without the input constraints).
    pub(crate) constraints: usize,
    /// Public inputs, the one included.
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    /// Aux variables A uses; aux variables and inputs B uses.
    pub(crate) a_aux: usize,
    pub(crate) b_aux: usize,
    pub(crate) b_inputs: usize,
    /// Non-zero terms of A (the input constraints' included), B, C.
    pub(crate) nnz: [usize; 3],
}

impl Counted {
    /// Counts `circuit` (nothing computed or stored).
    pub(crate) fn of(circuit: &SectorCircuit) -> Self {
        let mut t = Tally::default();
        ok("counting partition 0", t.alloc_input(|| "one", || Ok(Scalar::ONE)));
        ok("counting partition 0", circuit.clone().synthesize(&mut t));
        Self {
            constraints: t.constraints,
            inputs: t.inputs,
            aux: t.aux,
            a_aux: t.a_aux.count(),
            b_aux: t.b_aux.count(),
            b_inputs: t.b_input.count(),
            // The prover's input constraints: one row each, the input in A.
            nnz: [t.nnz[0] + t.inputs, t.nnz[1], t.nnz[2]],
        }
    }

    /// Rows of A, B, C: the circuit's constraints and the input constraints.
    pub(crate) fn rows(&self) -> usize {
        self.constraints + self.inputs
    }

    pub(crate) fn domain(&self) -> usize {
        self.rows().next_power_of_two()
    }

    /// The parameters' query lengths (`random_parameters_for`'s, as a real set's).
    pub(crate) fn query_lengths(&self) -> cuzk::QueryLengths {
        cuzk::QueryLengths {
            h: self.domain() - 1,
            l: self.aux,
            a: self.inputs + self.a_aux,
            b: self.b_inputs + self.b_aux,
        }
    }

    /// The parameters' bytes (`Parameters::host_bytes`: 96 a G1 point, 192 a G2).
    pub(crate) fn params_bytes(&self) -> usize {
        let n = self.query_lengths();
        (n.h + n.l + n.a + n.b) * 96 + n.b * 192
    }

    /// What a full partition reserves (`partition_bytes` of the parameters' hint).
    pub(crate) fn partition_bytes(&self) -> usize {
        partition_bytes(
            CapacityHint {
                constraints: self.domain(),
                inputs: self.inputs,
                aux: self.aux,
            },
            1.0,
        )
    }

    /// The compiled circuit's matrices and densities (`CompiledCircuit::byte_size` less its
    /// table of constants): a 4-byte row start a row and matrix, a 4-byte column and
    /// coefficient a term, a bit a variable of each density.
    pub(crate) fn compiled_bytes(&self) -> usize {
        4 * (3 * (self.rows() + 1) + 2 * self.nnz.iter().sum::<usize>())
            + 8 * (2 * self.aux.div_ceil(64) + self.inputs.div_ceil(64))
    }
}

/// `--count-only`: partition 0's sizes, densities and non-zero terms (`Counted`), and what
/// they make on the host: the parameters, a full partition's reservation, the compiled circuit.
pub(crate) fn count_only(circuit: &SectorCircuit, out: &mut Out) {
    let t = Instant::now();
    let c = Counted::of(circuit);
    let took = t.elapsed();
    let n = c.query_lengths();
    out.line(&format!(
        "partition 0: {} constraints ({} of the circuit + {} input constraints), {} inputs, {} aux; domain 2^{}; \
         counted in {:.1} s",
        c.rows(),
        c.constraints,
        c.inputs,
        c.inputs,
        c.aux,
        c.domain().trailing_zeros(),
        secs(took)
    ));
    out.line(&format!(
        "densities: A {} of {} aux, B {} of {} aux and {} of {} inputs; non-zero terms A {}, B {}, C {}",
        c.a_aux, c.aux, c.b_aux, c.aux, c.b_inputs, c.inputs, c.nnz[0], c.nnz[1], c.nnz[2]
    ));
    out.line(&format!(
        "host bytes: parameters {:.2} GiB (H {}, L {}, A {}, B {} points; B in G1 and G2); a full partition reserves \
         {:.2} GiB (a, b, c of the domain, aux); the compiled circuit {:.2} GiB (matrices and densities)",
        gib(c.params_bytes()),
        n.h,
        n.l,
        n.a,
        n.b,
        gib(c.partition_bytes()),
        gib(c.compiled_bytes())
    ));
}

/// A constraint system that only counts: variables, constraints, the aux (and B's input)
/// variables A and B use with a non-zero coefficient (the provers' density trackers), and each
/// matrix's non-zero terms. Values are never computed.
#[derive(Default)]
struct Tally {
    inputs: usize,
    aux: usize,
    constraints: usize,
    a_aux: Bits,
    b_aux: Bits,
    b_input: Bits,
    nnz: [usize; 3],
}

/// A growable bit set.
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn set(&mut self, i: usize) {
        let w = i / 64;
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << (i % 64);
    }

    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

impl Tally {
    /// Counts `lc`'s non-zero terms into matrix `m` (0: A, 1: B, 2: C), marking the aux
    /// variables A and B use and the inputs B uses (A's inputs are dense: the input
    /// constraints).
    fn terms(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                self.nnz[m] += 1;
                if m == 1 {
                    self.b_input.set(i);
                }
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !bool::from(c.is_zero()) {
                self.nnz[m] += 1;
                match m {
                    0 => self.a_aux.set(i),
                    1 => self.b_aux.set(i),
                    _ => {}
                }
            }
        }
    }
}

impl ConstraintSystem<Scalar> for Tally {
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

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.terms(0, &a(LinearCombination::zero()));
        self.terms(1, &b(LinearCombination::zero()));
        self.terms(2, &c(LinearCombination::zero()));
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A circuit synthesized in full once (`synthesized`): its assignment (the parameters' shape)
/// and the compiled circuit recorded in the same pass.
pub(crate) struct Shape {
    label: String,
    assignment: ProvingAssignment,
    recorded: Option<Arc<CompiledCircuit>>,
    time: Duration,
}

/// A circuit's shape and the random parameters made of it (`Shape::made`).
pub(crate) struct Made {
    pub(crate) params: Parameters,
    /// The compiled circuit recorded in the shape's synthesis (`record`).
    pub(crate) recorded: Option<Arc<CompiledCircuit>>,
    pub(crate) constraints: usize,
    pub(crate) inputs: usize,
    pub(crate) aux: usize,
    pub(crate) shape_time: Duration,
    pub(crate) params_time: Duration,
}

/// `circuit` synthesized in full once (recording its compiled circuit when `record`), its RSS
/// over that sampled; `label` names it in the line printed (constraints, time, the synthesis's
/// own bytes a constraint beyond a, b, c, aux and the recording, against `baseline`, the RSS
/// before — an overestimate when other shapes are synthesized at the same time).
pub(crate) fn synthesized(label: &str, circuit: SectorCircuit, record: bool, baseline: usize) -> Shape {
    let sampler = Sampler::start();
    let t = Instant::now();
    let (assignment, recorded) = if record {
        let timed = Timed {
            circuit,
            slot: 0,
            times: Arc::new(Mutex::new(vec![None])),
        };
        let (shape, compiled) = ok(
            &format!("recording {label}"),
            CompiledCircuit::record(timed, None, None),
        );
        (shape, Some(Arc::new(compiled)))
    } else {
        let shape = ok(&format!("synthesizing {label}"), Prover::new().synthesize(circuit));
        (shape, None)
    };
    let time = t.elapsed();
    let peak = sampler.stop();
    let constraints = assignment.num_constraints();
    let held = cuzk::engine::budget::assignment_bytes(&assignment) + recorded.as_ref().map_or(0, |c| c.byte_size());
    let overhead = peak.saturating_sub(baseline).saturating_sub(held);
    eprintln!(
        "{label}: {constraints} constraints, {} inputs, {} aux; full synthesis{} {:.2} s; \
         its own memory beyond a/b/c/aux{} ~{} bytes per constraint",
        assignment.input_assignment().len(),
        assignment.aux_assignment().len(),
        if recorded.is_some() { " with recording" } else { "" },
        secs(time),
        if recorded.is_some() {
            " and the compiled circuit"
        } else {
            ""
        },
        overhead / constraints.max(1)
    );
    Shape {
        label: label.to_string(),
        assignment,
        recorded,
        time,
    }
}

impl Shape {
    /// Random parameters of this shape; the assignment is dropped.
    pub(crate) fn made(self) -> Made {
        let t = Instant::now();
        let params = ok(
            &format!("random parameters of {}", self.label),
            random_parameters_for(&self.assignment, 32),
        );
        Made {
            params,
            recorded: self.recorded,
            constraints: self.assignment.num_constraints(),
            inputs: self.assignment.input_assignment().len(),
            aux: self.assignment.aux_assignment().len(),
            shape_time: self.time,
            params_time: t.elapsed(),
        }
    }
}
