//! [`CompiledCircuit`]: a circuit's A, B, C, densities, sizes and fingerprint.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::witness::Witness;
use crate::assignment::ProvingAssignment;
use crate::error::{Error, Result};
use crate::r1cs::hash::Hasher128;
use crate::r1cs::matrix::Matrix;
use crate::r1cs::record::Recording;
use crate::r1cs::DensityTracker;

/// What identifies a circuit's shape for the prover: the sizes the parameters fix.
/// Compiled circuits are kept per (circuit type, shape), as capacity hints are per type and
/// domain size; two structures of one type with equal shapes are told apart by the witness
/// check ([`CompiledCircuit::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CircuitShape {
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
    /// Evaluation domain: the constraints (input constraints included) rounded up to 2^k.
    pub domain_size: usize,
}

impl CircuitShape {
    /// The shape `params` were made for.
    pub fn of_params(params: &crate::Parameters) -> Self {
        Self {
            inputs: params.num_inputs(),
            aux: params.num_aux(),
            domain_size: params.domain_size(),
        }
    }
}

/// A circuit's R1CS recorded once from a full synthesis: evaluating it on a witness gives the
/// a, b, c and densities that synthesis gives (see [`crate::compiled`] for the flow and the
/// invariants).
#[derive(Debug, Clone)]
pub struct CompiledCircuit {
    pub(crate) circuit_type: String,
    /// Sizes, structure trace, matrices, constants and densities, as synthesis recorded them.
    pub(crate) r1cs: Recording,
    pub(crate) fingerprint: u128,
}

impl CompiledCircuit {
    /// The compiled circuit of a recording, named `circuit_type`, with its fingerprint.
    pub(crate) fn from_recording(circuit_type: &str, recording: Recording) -> Self {
        let mut this = Self {
            circuit_type: circuit_type.to_string(),
            r1cs: recording,
            fingerprint: 0,
        };
        this.fingerprint = this.compute_fingerprint();
        this
    }

    /// The compiled circuit `assignment` recorded during synthesis
    /// ([`ProvingAssignment::with_recording`]), named `circuit_type`; the recording is taken
    /// (a second call is an error). Synthesis must have finished.
    ///
    /// # Errors
    /// [`Error::Recording`] when the assignment did not record, has not finished (or failed),
    /// or the recording itself failed (see its message).
    pub fn take_from(assignment: &mut ProvingAssignment, circuit_type: &str) -> Result<Self> {
        let recording = assignment.take_recording(circuit_type)?;
        Ok(Self::from_recording(circuit_type, recording))
    }

    /// The hash of everything but the type name: sizes, structure trace, the three matrices,
    /// the constants and the densities.
    pub(crate) fn compute_fingerprint(&self) -> u128 {
        let mut h = Hasher128::new();
        for n in [
            self.r1cs.num_inputs,
            self.r1cs.num_aux,
            self.r1cs.circuit_constraints,
            self.num_constraints(),
        ] {
            h.word(n as u64);
        }
        h.word(self.r1cs.trace.value());
        h.word(self.r1cs.constants.len() as u64);
        for c in &self.r1cs.constants {
            h.bytes(&c.to_repr());
        }
        for m in &self.r1cs.matrices {
            h.bytes_parallel(&m.row_starts.le_bytes());
            h.bytes_parallel(&m.columns.le_bytes());
            h.bytes_parallel(&m.coefficients.le_bytes());
        }
        for d in &self.r1cs.densities {
            h.word(d.len() as u64);
            h.bytes_parallel(&crate::r1cs::store::words_le_bytes(d.words()));
        }
        h.finish()
    }

    /// The circuit type it was recorded from (`std::any::type_name`).
    pub fn circuit_type(&self) -> &str {
        &self.circuit_type
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.r1cs.num_inputs
    }

    /// Private (aux) variables.
    pub fn num_aux(&self) -> usize {
        self.r1cs.num_aux
    }

    /// Rows of A, B, C: the circuit's constraints plus one input constraint per input.
    pub fn num_constraints(&self) -> usize {
        self.r1cs.circuit_constraints + self.r1cs.num_inputs
    }

    /// The constraints the circuit enforced itself (`enforce` calls, merged sub-systems'
    /// included).
    pub fn circuit_constraints(&self) -> usize {
        self.r1cs.circuit_constraints
    }

    /// The shape the parameters for this circuit have.
    pub fn shape(&self) -> CircuitShape {
        CircuitShape {
            inputs: self.r1cs.num_inputs,
            aux: self.r1cs.num_aux,
            domain_size: self.num_constraints().next_power_of_two(),
        }
    }

    /// A over z = (inputs, aux).
    pub fn a(&self) -> &Matrix {
        &self.r1cs.matrices[0]
    }

    /// B over z.
    pub fn b(&self) -> &Matrix {
        &self.r1cs.matrices[1]
    }

    /// C over z.
    pub fn c(&self) -> &Matrix {
        &self.r1cs.matrices[2]
    }

    /// The distinct coefficients other than ±1 (coefficient code `k + 2` is entry `k`).
    pub fn constants(&self) -> &[Scalar] {
        &self.r1cs.constants
    }

    /// Which aux variables appear in A with a non-zero coefficient.
    pub fn a_aux_density(&self) -> &DensityTracker {
        &self.r1cs.densities[0]
    }

    /// Which inputs appear in B with a non-zero coefficient.
    pub fn b_input_density(&self) -> &DensityTracker {
        &self.r1cs.densities[1]
    }

    /// Which aux variables appear in B with a non-zero coefficient.
    pub fn b_aux_density(&self) -> &DensityTracker {
        &self.r1cs.densities[2]
    }

    /// A 128-bit hash of the structure (sizes, structure trace, matrices, constants,
    /// densities; not the type name). Not cryptographic: it tells circuits apart, it does not
    /// resist a crafted collision.
    pub fn fingerprint(&self) -> u128 {
        self.fingerprint
    }

    /// The structure trace (the sizes at every `enforce`, hashed) a witness synthesis of the
    /// same structure reproduces.
    pub fn structure_hash(&self) -> u64 {
        self.r1cs.trace.value()
    }

    /// Whether the matrices were loaded from a file (they lie in the file's image, read into
    /// memory once at load: [`file`](mod@crate::compiled::file)).
    pub fn is_mapped(&self) -> bool {
        self.r1cs.matrices.iter().any(Matrix::is_mapped)
    }

    /// Bytes the matrices, constants and densities take (in memory or in the mapping).
    pub fn byte_size(&self) -> usize {
        let m: usize = self
            .r1cs
            .matrices
            .iter()
            .map(|m| 4 * (m.row_starts.len() + m.columns.len() + m.coefficients.len()))
            .sum();
        let d: usize = self.r1cs.densities.iter().map(|d| 8 * d.words().len()).sum();
        m + d + 32 * self.r1cs.constants.len()
    }

    /// Checks that `witness` was synthesized from a circuit of this structure: same circuit
    /// type, inputs, aux, constraints and structure trace, and no witness-generator shortcut
    /// that hides constraints (see [`crate::compiled`] for what this does and does not catch).
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] naming the first thing that differs.
    pub fn check(&self, witness: &Witness) -> Result<()> {
        let mismatch = |what: &str, expected: String, found: String| {
            Err(Error::WitnessMismatch(format!(
                "{what}: compiled circuit {} (fingerprint {:032x}) has {expected}, the witness {found}",
                self.circuit_type, self.fingerprint
            )))
        };
        if witness.circuit_type() != self.circuit_type {
            return mismatch(
                "circuit type",
                self.circuit_type.clone(),
                witness.circuit_type().to_string(),
            );
        }
        if witness.generated_values() > 0 {
            return Err(Error::WitnessMismatch(format!(
                "{}: the witness synthesis took {} values from witness-generator methods \
                 (allocate_empty, extend_aux, ...), whose constraints it cannot count; \
                 synthesize it with WitnessCs::without_generator()",
                self.circuit_type,
                witness.generated_values()
            )));
        }
        if witness.num_inputs() != self.r1cs.num_inputs {
            return mismatch(
                "public inputs",
                self.r1cs.num_inputs.to_string(),
                witness.num_inputs().to_string(),
            );
        }
        if witness.num_aux() != self.r1cs.num_aux {
            return mismatch(
                "aux variables",
                self.r1cs.num_aux.to_string(),
                witness.num_aux().to_string(),
            );
        }
        if witness.num_constraints() != self.r1cs.circuit_constraints {
            return mismatch(
                "constraints (enforce calls)",
                self.r1cs.circuit_constraints.to_string(),
                witness.num_constraints().to_string(),
            );
        }
        if witness.structure_hash() != self.r1cs.trace.value() {
            return mismatch(
                "structure trace (the order of allocations and constraints)",
                format!("{:016x}", self.r1cs.trace.value()),
                format!("{:016x}", witness.structure_hash()),
            );
        }
        if witness.inputs().first() != Some(&Scalar::ONE) {
            return Err(Error::WitnessMismatch(
                "the witness's first input is not the constant one".into(),
            ));
        }
        Ok(())
    }
}

impl CompiledCircuit {
    /// Synthesizes `circuit` in full — as [`Prover::synthesize`](crate::Prover::synthesize)
    /// does: into buffers from `pool` sized by `hint`, or on the heap — and records its A, B,
    /// C in the same pass. Returns the finished assignment (prove it as any other) and the
    /// compiled circuit, named after `C`.
    ///
    /// # Errors
    /// What synthesis returns ([`Prover::synthesize`](crate::Prover::synthesize)), and
    /// [`Error::Recording`] when the recording failed.
    pub fn record<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
        pool: Option<&crate::PinnedPool>,
        hint: Option<crate::CapacityHint>,
    ) -> Result<(ProvingAssignment, CompiledCircuit)> {
        let cs = match pool {
            Some(p) => ProvingAssignment::new_with_pinned(p, hint)?,
            None => ProvingAssignment::new_heap(),
        };
        let mut cs = cs.with_recording();
        cs.start()?;
        circuit.synthesize(&mut cs)?;
        cs.finish()?;
        let compiled = Self::take_from(&mut cs, std::any::type_name::<C>())?;
        Ok((cs, compiled))
    }
}
