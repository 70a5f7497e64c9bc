//! [`Prover`]: a backend, a pool, capacity hints and the witness path, and every way into a
//! proof — circuits, synthesized assignments, witnesses of a compiled circuit.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;

use super::choice::{auto_backend, make_backend};
use super::groth16::{check_assignment, check_batch, randomize};
use super::policy::{self, witness_path_default};
use super::{Backend, BackendChoice, Commitments, Timings};
use crate::assignment::{CapacityHints, ProvingAssignment};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::proof::Proof;

/// A prover: a backend, an optional pinned pool for a/b/c, a capacity-hint cache so every
/// synthesis after the first of a circuit type allocates once, at the right size, and the
/// witness path: compiled circuits by type and shape, so that every synthesis after the first
/// of a type and shape computes only its witness ([`Prover::with_witness_path`]).
/// Cheap to clone; clones share the backend (and its device-resident parameters), the pool,
/// the hints and the compiled circuits.
#[derive(Clone)]
pub struct Prover {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) pool: Option<PinnedPool>,
    pub(super) hints: CapacityHints,
    pub(super) witness: policy::WitnessPath,
    pub(super) witness_on: bool,
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prover")
            .field("backend", &self.backend.name())
            .field("pool", &self.pool)
            .field("witness_path", &self.witness_on)
            .field("compiled_circuits", &self.witness.compiled.len())
            .finish()
    }
}

impl Default for Prover {
    fn default() -> Self {
        Self::new()
    }
}

impl Prover {
    /// A prover on the [`BackendChoice::Auto`] backend (the GPU in a `cuda` build that finds
    /// one, else the CPU), with no pool (a/b/c on the heap), the witness path on (unless
    /// `CUZK_WITNESS_PATH=0`) and its compiled circuits in memory only.
    pub fn new() -> Self {
        Self {
            backend: auto_backend(),
            pool: None,
            hints: CapacityHints::default(),
            witness: policy::WitnessPath::default(),
            witness_on: witness_path_default(),
        }
    }

    /// A prover on the backend `choice` picks (see [`BackendChoice`]).
    ///
    /// # Errors
    /// [`Error::NoGpu`] / [`Error::Cuda`] when `BackendChoice::Gpu` names an unusable GPU.
    pub fn with_backend(mut self, choice: BackendChoice) -> Result<Self> {
        self.backend = make_backend(choice)?;
        Ok(self)
    }

    /// A prover on a backend made by the caller (e.g. a `CudaBackend` with a residency cap).
    pub fn with_custom_backend(mut self, backend: Arc<dyn Backend>) -> Self {
        self.backend = backend;
        self
    }

    /// The backend's name (`"cpu"`, `"cuda"`).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether the backend can no longer prove ([`Backend::is_lost`]: a GPU after a sticky
    /// error; never for `Auto`, which goes on on the CPU).
    pub fn is_backend_lost(&self) -> bool {
        self.backend.is_lost()
    }

    /// Gets the backend ready for `params` ahead of the first proof (the CUDA backend
    /// uploads them to the device once; later proofs reuse them).
    ///
    /// # Errors
    /// Backend failures.
    pub fn prepare(&self, params: &Parameters) -> Result<()> {
        self.backend.prepare(params)
    }

    /// Uploads `params` to the GPU for good and returns a clone **without the host copy**: the
    /// query vectors (tens of GiB for a Filecoin partition) are freed once no other clone
    /// holds them — drop `params` and its other clones.
    /// On error nothing changes: `params` is as it was. Proofs then run only on this prover's GPU; the CPU path (and an
    /// `Auto` prover whose GPU is lost) fails with a clear error, and so does a set too large
    /// for the device (which needs its host copy to stream: use [`Prover::prepare`]).
    /// [`Prover::evict_resident`] frees the device copy too.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on the CPU backend, or when the set would be streamed;
    /// device errors of the upload.
    pub fn prepare_device_only(&self, params: &Parameters) -> Result<Parameters> {
        params.require_host_copy("uploading parameters")?;
        self.backend.keep_resident(params)?;
        log::info!(
            "parameters {} resident for good on the {} backend; host copy released ({} MiB)",
            params.id(),
            self.backend.name(),
            params.device_bytes() >> 20
        );
        Ok(params.clone().without_host_copy())
    }

    /// Frees the parameters the backend keeps resident (device memory) and its device caches
    /// (NTT tables, scratch memory kept for the next proof); proofs in flight keep their
    /// parameters until they finish.
    pub fn evict_resident(&self) {
        self.backend.evict();
    }

    /// Frees what the backend keeps for `params` alone (its device copy; also one kept by
    /// [`Prover::prepare_device_only`], which then cannot prove any more), leaving other
    /// parameter sets resident. Proofs in flight with `params` keep it until they finish.
    pub fn evict_params(&self, params: &Parameters) {
        self.backend.evict_params(params.id());
    }

    /// Synthesizes into buffers from `pool`.
    pub fn with_pool(mut self, pool: PinnedPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The pool, if any.
    pub fn pool(&self) -> Option<&PinnedPool> {
        self.pool.as_ref()
    }

    /// The capacity-hint cache.
    pub fn hints(&self) -> &CapacityHints {
        &self.hints
    }

    /// Synthesizes `circuit` into a new assignment (pinned when the prover has a pool, sized
    /// by the hint of the circuit's type — the last size synthesized — when there is one) and
    /// records its sizes as the next hint. Prefer [`Prover::synthesize_for`] when the
    /// parameters are known: a type that comes in several sizes then gets each size's hint.
    ///
    /// # Errors
    /// The circuit's own [`SynthesisError`](bellpepper_core::SynthesisError), a malformed
    /// circuit, or a pool that cannot serve.
    pub fn synthesize<C: Circuit<Scalar>>(&self, circuit: C) -> Result<ProvingAssignment> {
        self.synthesize_sized(circuit, None)
    }

    /// As [`Prover::synthesize`], sized by the hint of the circuit's type at the domain size of
    /// `params` (the size it will be proved at).
    ///
    /// # Errors
    /// As [`Prover::synthesize`].
    pub fn synthesize_for<C: Circuit<Scalar>>(&self, circuit: C, params: &Parameters) -> Result<ProvingAssignment> {
        self.synthesize_sized(circuit, Some(params.domain_size()))
    }

    fn synthesize_sized<C: Circuit<Scalar>>(&self, circuit: C, domain: Option<usize>) -> Result<ProvingAssignment> {
        let key = std::any::type_name::<C>();
        let mut cs = match &self.pool {
            Some(pool) => ProvingAssignment::new_with_pinned(pool, self.hints.get(key, domain))?,
            None => ProvingAssignment::new_heap(),
        };
        cs.start()?;
        circuit.synthesize(&mut cs)?;
        cs.finish()?;
        self.hints.record(key, cs.capacity_hint());
        Ok(cs)
    }

    /// Proves a batch of circuits with r, s drawn from `rng` (all the r first, then all the
    /// s, as bellperson draws them).
    ///
    /// # Errors
    /// See [`Prover::prove_with_randomness`].
    pub fn prove<C, R>(&self, circuits: Vec<C>, params: &Parameters, rng: &mut R) -> Result<Vec<Proof>>
    where
        C: Circuit<Scalar> + Clone + Send,
        R: RngCore,
    {
        let r: Vec<Scalar> = (0..circuits.len()).map(|_| Scalar::random(&mut *rng)).collect();
        let s: Vec<Scalar> = (0..circuits.len()).map(|_| Scalar::random(&mut *rng)).collect();
        self.prove_with_randomness(circuits, params, &r, &s)
    }

    /// Proves a batch of circuits with the given r and s per proof. The circuits are
    /// synthesized in parallel, each by the witness path's policy
    /// ([`Prover::with_witness_path`]): witness-only when a compiled circuit of its type and
    /// the parameters' shape exists (a clone of the circuit is synthesized, so that a witness
    /// the compiled circuit refuses can fall back to full synthesis), else in full — the first
    /// of a new type and shape recording its compiled circuit, the others of the batch in full.
    /// The bytes are the same by either path.
    ///
    /// # Errors
    /// An empty batch, r/s of the wrong length, a synthesis error, a circuit that does not
    /// match the parameters, or a backend failure.
    pub fn prove_with_randomness<C>(
        &self,
        circuits: Vec<C>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<Proof>>
    where
        C: Circuit<Scalar> + Clone + Send,
    {
        self.prove_timed(circuits, params, r, s).map(|(proofs, _)| proofs)
    }

    /// As [`Prover::prove_with_randomness`], also returning where the time went.
    ///
    /// # Errors
    /// See [`Prover::prove_with_randomness`].
    pub fn prove_timed<C>(
        &self,
        circuits: Vec<C>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)>
    where
        C: Circuit<Scalar> + Clone + Send,
    {
        check_batch(circuits.len(), r, s)?;
        let start = Instant::now();
        let work = circuits
            .into_par_iter()
            .map(|c| self.synthesize_planned(c, params))
            .collect::<Result<Vec<_>>>()?;
        let synthesis = start.elapsed();
        let (proofs, mut t) = self.prove_syntheses(work, params, r, s)?;
        t.synthesis = synthesis;
        t.total = start.elapsed();
        Ok((proofs, t))
    }

    /// Proves already-synthesized assignments (from [`Prover::synthesize`]). Their a/b/c go
    /// back to the pool as soon as H is computed, whatever the outcome.
    ///
    /// # Errors
    /// An empty batch, r/s of the wrong length, an assignment that does not match the
    /// parameters (or was released), or a backend failure.
    pub fn prove_synthesized(
        &self,
        mut assignments: Vec<ProvingAssignment>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)> {
        let start = Instant::now();
        let result = self.prove_inner(&mut assignments, params, r, s);
        for a in &mut assignments {
            a.release_abc();
        }
        let (proofs, mut t) = result?;
        t.total = start.elapsed();
        Ok((proofs, t))
    }

    fn prove_inner(
        &self,
        assignments: &mut [ProvingAssignment],
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)> {
        check_batch(assignments.len(), r, s)?;
        for (i, a) in assignments.iter().enumerate() {
            check_assignment(a, params).map_err(|e| match e {
                Error::CircuitMismatch(m) => Error::CircuitMismatch(format!("circuit {i}: {m}")),
                other => other,
            })?;
        }
        let backend = &self.backend;
        log::debug!(
            "proving {} circuits on the {} backend",
            assignments.len(),
            backend.name()
        );
        let mut t = Timings::default();
        let mut proofs = Vec::with_capacity(assignments.len());
        let n = assignments.len();
        for (i, assignment) in assignments.iter_mut().enumerate() {
            let start = Instant::now();
            let c = backend.commitments(assignment, params, &mut t)?;
            proofs.push(self.finish_proof(params, &c, (r[i], s[i]), (i, n, "full"), start, &mut t));
        }
        Ok((proofs, t))
    }

    /// The last step of every proof, whichever path made its commitments: the randomisers
    /// (timed as the tail), and the proof's log line (proof `i + 1` of `n`, by `path`, started
    /// at `start`).
    pub(crate) fn finish_proof(
        &self,
        params: &Parameters,
        c: &Commitments,
        (r, s): (Scalar, Scalar),
        (i, n, path): (usize, usize, &str),
        start: Instant,
        t: &mut Timings,
    ) -> Proof {
        let tail = Instant::now();
        let proof = randomize(params, c, r, s);
        t.tail += tail.elapsed();
        log::info!(
            "proof {}/{n} ({} constraints, {path} path) on {} in {:.1} ms",
            i + 1,
            params.domain_size(),
            self.backend.name(),
            start.elapsed().as_secs_f64() * 1e3
        );
        proof
    }
}

/// Proves a batch of circuits on the default [`Prover`] (no pool), r and s from `rng`.
///
/// # Errors
/// See [`Prover::prove_with_randomness`].
pub fn prove<C, R>(circuits: Vec<C>, params: &Parameters, rng: &mut R) -> Result<Vec<Proof>>
where
    C: Circuit<Scalar> + Clone + Send,
    R: RngCore,
{
    Prover::new().prove(circuits, params, rng)
}

/// Proves a batch of circuits on the default [`Prover`] with explicit r and s per proof.
///
/// # Errors
/// See [`Prover::prove_with_randomness`].
pub fn prove_with_randomness<C>(circuits: Vec<C>, params: &Parameters, r: &[Scalar], s: &[Scalar]) -> Result<Vec<Proof>>
where
    C: Circuit<Scalar> + Clone + Send,
{
    Prover::new().prove_with_randomness(circuits, params, r, s)
}
