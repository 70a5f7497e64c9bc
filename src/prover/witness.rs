//! The witness path of [`Prover`]: witnesses of a [`CompiledCircuit`] in, proofs out.
//!
//! A witness ([`WitnessCs`]) holds only the inputs and the aux values, compact; the compiled
//! circuit holds A, B, C and the densities. Each proof checks the witness against the circuit
//! and the circuit against the parameters, then asks the backend for the commitments
//! ([`Backend::witness_commitments`](super::Backend::witness_commitments): a, b, c evaluated
//! on the host by default, on the device by the CUDA backend) and randomises them as the full
//! path does. With the same r and s the bytes are those of the full path.

use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;

use super::{check_batch, Backend, Commitments, Prover, Timings};
use crate::compiled::{CompiledCircuit, Witness, WitnessCs};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::proof::Proof;

impl Prover {
    /// Synthesizes `circuit` witness-only ([`WitnessCs`]): its inputs and aux values, the aux
    /// compact, in buffers from the prover's pool (sized by the aux count of the type's last
    /// synthesis) or on the heap.
    ///
    /// # Errors
    /// The circuit's own synthesis error, or a failure of the witness system (see
    /// [`WitnessCs`]).
    pub fn synthesize_witness<C: Circuit<Scalar>>(&self, circuit: C) -> Result<Witness> {
        let key = std::any::type_name::<C>();
        let cs = match &self.pool {
            Some(pool) => {
                let aux = self.hints.get(key, None).map_or(0, |h| h.aux);
                WitnessCs::in_pool(pool, aux)?
            }
            None => WitnessCs::new(),
        };
        cs.synthesize(circuit)
    }

    /// Proves witnesses of `circuit` with the given r and s per proof. Each witness is checked
    /// against the circuit ([`CompiledCircuit::check`]) and the circuit against the parameters
    /// before anything is computed.
    ///
    /// # Errors
    /// An empty batch, r/s of the wrong length, [`Error::WitnessMismatch`] for a witness of
    /// another structure (naming it), [`Error::CircuitMismatch`] when the circuit does not fit
    /// the parameters, or a backend failure.
    pub fn prove_witnesses(
        &self,
        circuit: &CompiledCircuit,
        witnesses: &[Witness],
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)> {
        let start = Instant::now();
        check_batch(witnesses.len(), r, s)?;
        check_compiled(circuit, params)?;
        for (i, w) in witnesses.iter().enumerate() {
            circuit.check(w).map_err(|e| match e {
                Error::WitnessMismatch(m) => Error::WitnessMismatch(format!("witness {i}: {m}")),
                other => other,
            })?;
        }
        let backend = &self.backend;
        let mut t = Timings::default();
        let mut proofs = Vec::with_capacity(witnesses.len());
        let n = witnesses.len();
        for (i, w) in witnesses.iter().enumerate() {
            let one = Instant::now();
            let c = backend.witness_commitments(circuit, w, params, self.pool.as_ref(), &mut t)?;
            proofs.push(self.finish_proof(params, &c, (r[i], s[i]), (i, n, "witness"), one, &mut t));
        }
        t.total = start.elapsed();
        Ok((proofs, t))
    }
}

/// The default witness commitments: a, b, c evaluated on the host into buffers from `pool`
/// ([`CompiledCircuit::assignment`]), proved by the backend's [`Backend::commitments`].
pub(crate) fn evaluate_on_host<B: Backend + ?Sized>(
    backend: &B,
    circuit: &CompiledCircuit,
    witness: &Witness,
    params: &Parameters,
    pool: Option<&PinnedPool>,
    timings: &mut Timings,
) -> Result<Commitments> {
    let start = Instant::now();
    let mut assignment = circuit.assignment(witness, pool)?;
    timings.evaluation += start.elapsed();
    backend.commitments(&mut assignment, params, timings)
}

/// The pool checkouts of [`evaluate_on_host`] for one proof of `circuit`: a, b, c and the
/// expanded aux.
pub(crate) fn host_pool_requests(circuit: &CompiledCircuit) -> [usize; 4] {
    let scalars = |n: usize| n.max(1).saturating_mul(std::mem::size_of::<Scalar>());
    let abc = scalars(circuit.num_constraints());
    [abc, abc, abc, scalars(circuit.num_aux())]
}

/// Checks that a compiled circuit has exactly the shape the parameters were made for (the
/// witness path's [`check_assignment`](super::check_assignment)).
pub(crate) fn check_compiled(c: &CompiledCircuit, params: &Parameters) -> Result<()> {
    let mismatch = |what: &str, expected: usize, found: usize| {
        Err(Error::CircuitMismatch(format!(
            "{what}: parameters expect {expected}, compiled circuit {} has {found}",
            c.circuit_type()
        )))
    };
    if c.num_inputs() != params.num_inputs() {
        return mismatch(
            "public inputs (with the one input)",
            params.num_inputs(),
            c.num_inputs(),
        );
    }
    if c.num_aux() != params.num_aux() {
        return mismatch("aux variables", params.num_aux(), c.num_aux());
    }
    let m = c.num_constraints().next_power_of_two();
    if m != params.domain_size() {
        return mismatch(
            "evaluation domain size (constraints + inputs, rounded up to 2^k)",
            params.domain_size(),
            m,
        );
    }
    let lens = params.query_lengths();
    let a_dense = c.num_inputs() + c.a_aux_density().total_density();
    if a_dense != lens.a {
        return mismatch("A query points", lens.a, a_dense);
    }
    let b_dense = c.b_input_density().total_density() + c.b_aux_density().total_density();
    if b_dense != lens.b {
        return mismatch("B query points", lens.b, b_dense);
    }
    Ok(())
}
