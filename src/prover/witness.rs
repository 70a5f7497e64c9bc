//! Host evaluation of a witness: the default way a backend proves a witness of a
//! [`CompiledCircuit`] — a, b, c evaluated on the host into pool buffers
//! ([`CompiledCircuit::assignment`]) and proved as an assignment by [`Backend::commitments`] —
//! and the pool checkouts it makes. The CUDA backend evaluates on the device instead, and falls
//! back to this where it cannot.

use std::time::Instant;

use blstrs::Scalar;

use super::{Backend, Commitments, Timings};
use crate::compiled::{CompiledCircuit, Witness};
use crate::error::Result;
use crate::params::Parameters;
use crate::pool::PinnedPool;

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
