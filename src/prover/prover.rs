//! [`Prover`]: a backend, a pool, capacity hints and the witness path, and every way into a
//! proof — circuits, synthesized assignments, witnesses of a compiled circuit.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use rand_core::RngCore;
use rayon::prelude::*;

use super::choice::{auto_backend, make_backend};
use super::groth16::{check_batch, randomize, AsWork, Work};
use super::policy::{
    self, native_witness_default, synthesize_full, witness_path_default, Buffers, Generator, Synthesis,
    WitnessEstimate, WitnessStats,
};
use super::{Backend, BackendChoice, Commitments, Timings};
use crate::assignment::{CapacityHints, ProvingAssignment};
use crate::compiled::{CircuitShape, CompiledCircuit, CompiledCircuits, Witness, WitnessCs};
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
    backend: Arc<dyn Backend>,
    pool: Option<PinnedPool>,
    hints: CapacityHints,
    witness: policy::WitnessPath,
    witness_on: bool,
    native_on: bool,
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prover")
            .field("backend", &self.backend.name())
            .field("pool", &self.pool)
            .field("witness_path", &self.witness_on)
            .field("native_witness", &self.native_on)
            .field("compiled_circuits", &self.witness.compiled.len())
            .finish()
    }
}

impl Default for Prover {
    fn default() -> Self {
        Self::new()
    }
}

/// How many items from the first are witnesses of one compiled circuit (the same one, by
/// address); 0 when the first is not a witness.
fn witness_run<W: AsWork>(work: &mut [W]) -> usize {
    let mut first: Option<*const CompiledCircuit> = None;
    let mut n = 0;
    for item in work.iter_mut() {
        match item.work() {
            Work::Witness { circuit, .. } => {
                let p: *const CompiledCircuit = circuit;
                if first.is_some_and(|f| f != p) {
                    break;
                }
                first = Some(p);
                n += 1;
            }
            Work::Full(_) => break,
        }
    }
    n
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
            native_on: native_witness_default(),
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

    /// The GPU the backend proves on, with its memory now (`None`: the CPU).
    pub fn device(&self) -> Option<super::DeviceStatus> {
        self.backend.device()
    }

    /// Where the backend holds the parameter set `params_id` now ([`Backend::placement`]:
    /// on the device or streamed, as the backend chose from its memory; `None` when the
    /// backend does not say).
    pub fn placement(&self, params_id: u64) -> Option<super::Placement> {
        self.backend.placement(params_id)
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

    /// Turns the witness path on or off for this prover (not its clones): with it on (the
    /// default, unless `CUZK_WITNESS_PATH=0`), [`Prover::prove`] and its siblings synthesize
    /// a circuit witness-only when a compiled circuit of its type and shape exists, and record
    /// one during the first full synthesis of a type and shape (see
    /// [`crate::compiled`]). Off: every circuit is synthesized in full and nothing is
    /// recorded. Proofs are the same bytes either way.
    pub fn with_witness_path(mut self, on: bool) -> Self {
        self.witness_on = on;
        self
    }

    /// Whether the witness path is on ([`Prover::with_witness_path`]).
    pub fn witness_path(&self) -> bool {
        self.witness_on
    }

    /// Turns native witness generators on or off for this prover (not its clones): with them
    /// on (the default, unless `CUZK_NATIVE_WITNESS=0`) and the witness path on, a partition
    /// that comes with a generator (the engine's Filecoin PoSt partitions) has its witness
    /// written by the generator instead of the circuit's gadgets, once the generator's witness
    /// equalled the gadgets' for the compiled circuit of its type and shape. Same bytes either
    /// way.
    pub fn with_native_witness(mut self, on: bool) -> Self {
        self.native_on = on;
        self
    }

    /// Whether native witness generators are on ([`Prover::with_native_witness`]).
    pub fn native_witness(&self) -> bool {
        self.native_on
    }

    /// Keeps compiled circuits in `dir` too (a new cache, [`CompiledCircuits::with_dir`]):
    /// recorded ones are saved there, and a type and shape not in memory is looked for there
    /// first, so a restart does not record again. A stale or corrupt file is refused and
    /// recorded again (the new recording replaces it).
    pub fn with_compiled_dir(self, dir: impl Into<PathBuf>) -> Self {
        self.with_compiled_circuits(CompiledCircuits::with_dir(dir))
    }

    /// Uses `cache` for compiled circuits (shared with whoever else holds a clone of it); the
    /// witness path's books (hints, statistics) start afresh.
    pub fn with_compiled_circuits(mut self, cache: CompiledCircuits) -> Self {
        self.witness = policy::WitnessPath::with_cache(cache);
        self
    }

    /// The compiled circuits this prover (and its clones) use and record.
    pub fn compiled_circuits(&self) -> &CompiledCircuits {
        &self.witness.compiled
    }

    /// What the witness path did so far, this prover and its clones together.
    pub fn witness_stats(&self) -> WitnessStats {
        self.witness.stats()
    }

    /// Synthesizes `circuit` for `params` by the witness path's policy
    /// ([`WitnessPath::synthesize`](super::policy::WitnessPath::synthesize)).
    pub(crate) fn synthesize_planned<C: Circuit<Scalar>>(&self, circuit: C, params: &Parameters) -> Result<Synthesis> {
        self.witness
            .synthesize(self.witness_on, circuit, params, self.buffers())
    }

    /// As [`synthesize_planned`](Self::synthesize_planned), the witness written by `generate`
    /// once it is validated (the witness path's generated route).
    #[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
    pub(crate) fn synthesize_generated<C: Circuit<Scalar> + Clone>(
        &self,
        circuit: C,
        generator: Generator,
        params: &Parameters,
    ) -> Result<Synthesis> {
        self.witness.synthesize_generated(
            (self.witness_on, self.native_on),
            circuit,
            generator,
            params,
            self.buffers(),
        )
    }

    /// Turns the native generator of `circuit_type` at `shape` off until restart, for this
    /// prover and its clones (a proof of it failed verification). Returns whether it was on.
    pub(crate) fn generator_off(&self, circuit_type: &'static str, shape: CircuitShape) -> bool {
        self.witness.generator_off(circuit_type, shape)
    }

    /// How a witness-path partition of `circuit_type` proved with `params` will be sized, when
    /// the path is on and its compiled circuit is in memory (no file is read: the engine asks
    /// under its lock).
    pub(crate) fn witness_estimate(&self, circuit_type: &'static str, params: &Parameters) -> Option<WitnessEstimate> {
        if !self.witness_on {
            return None;
        }
        self.witness.estimate(circuit_type, params)
    }

    /// The pool checkouts (bytes) this prover's backend makes to prove one witness of `circuit`
    /// ([`Backend::witness_pool_requests`]).
    pub(crate) fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        self.backend.witness_pool_requests(circuit)
    }

    /// Where this prover's syntheses put their values: its pool (or the heap) and its hints.
    fn buffers(&self) -> Buffers<'_> {
        Buffers {
            pool: self.pool.as_ref(),
            hints: &self.hints,
        }
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
        synthesize_full(circuit, None, self.buffers())
    }

    /// As [`Prover::synthesize`], sized by the hint of the circuit's type at the domain size of
    /// `params` (the size it will be proved at).
    ///
    /// # Errors
    /// As [`Prover::synthesize`].
    pub fn synthesize_for<C: Circuit<Scalar>>(&self, circuit: C, params: &Parameters) -> Result<ProvingAssignment> {
        synthesize_full(circuit, Some(params.domain_size()), self.buffers())
    }

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

    /// Proves a batch of circuits with r, s drawn from `rng` (all the r first, then all the
    /// s, as bellperson draws them).
    ///
    /// # Errors
    /// See [`Prover::prove_with_randomness`].
    pub fn prove<C, R>(&self, circuits: Vec<C>, params: &Parameters, rng: &mut R) -> Result<Vec<Proof>>
    where
        C: Circuit<Scalar> + Send,
        R: RngCore,
    {
        let (r, s) = super::draw_randomness(circuits.len(), rng);
        self.prove_with_randomness(circuits, params, &r, &s)
    }

    /// Proves a batch of circuits with the given r and s per proof. The circuits are
    /// synthesized in parallel, each by the witness path's policy
    /// ([`Prover::with_witness_path`]): witness-only when a compiled circuit of its type and
    /// the parameters' shape exists, else in full — the first of a new type and shape recording
    /// its compiled circuit, the others of the batch in full. The bytes are the same by either
    /// path. Circuits need not be `Clone`: a witness the compiled circuit refuses (a type whose
    /// structure depends on its witness) fails the batch with [`Error::WitnessMismatch`] naming
    /// the type, and that type and shape is synthesized in full from then on, so proving the
    /// batch again succeeds.
    ///
    /// # Errors
    /// An empty batch, r/s of the wrong length, a synthesis error, a circuit that does not
    /// match the parameters, a refused witness (above), or a backend failure.
    pub fn prove_with_randomness<C>(
        &self,
        circuits: Vec<C>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<Vec<Proof>>
    where
        C: Circuit<Scalar> + Send,
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
        C: Circuit<Scalar> + Send,
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
        assignments: Vec<ProvingAssignment>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)> {
        self.prove_syntheses(assignments, params, r, s)
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
        let work = witnesses
            .iter()
            .map(|witness| Work::Witness { circuit, witness })
            .collect();
        self.prove_syntheses(work, params, r, s)
    }

    /// The one prove loop, where every way into a proof ends (circuits by either path,
    /// synthesized assignments, witnesses), with the given r and s per proof. Every input is
    /// checked first ([`Work::check`]), then each proved in turn: its commitments from the
    /// backend, then [`Prover::finish_proof`]. An owned input is dropped, its buffers back in
    /// their pool, once proved; every buffer is back when it returns, whatever the outcome.
    pub(crate) fn prove_syntheses<W: AsWork>(
        &self,
        work: Vec<W>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
    ) -> Result<(Vec<Proof>, Timings)> {
        let n = work.len();
        let (proofs, t) = self.prove_syntheses_until(work, params, r, s, &|| false)?;
        if proofs.len() != n {
            return Err(Error::InvalidArgument(format!(
                "the {} backend proved {} of {n} witnesses without being cut short",
                self.backend.name(),
                proofs.len()
            )));
        }
        Ok((proofs, t))
    }

    /// [`Prover::prove_syntheses`], where `cut` may end a run of witnesses proved together
    /// early ([`Backend::witness_commitments_many`]): the proofs of the first inputs, at least
    /// one; the caller still holds the others (borrowed) or they are dropped (owned).
    pub(crate) fn prove_syntheses_until<W: AsWork>(
        &self,
        mut work: Vec<W>,
        params: &Parameters,
        r: &[Scalar],
        s: &[Scalar],
        cut: &dyn Fn() -> bool,
    ) -> Result<(Vec<Proof>, Timings)> {
        let start = Instant::now();
        check_batch(work.len(), r, s)?;
        for (i, item) in work.iter_mut().enumerate() {
            item.work().check(params).map_err(|e| match e {
                Error::CircuitMismatch(m) => Error::CircuitMismatch(format!("circuit {i}: {m}")),
                Error::WitnessMismatch(m) => Error::WitnessMismatch(format!("witness {i}: {m}")),
                other => other,
            })?;
        }
        let backend = &self.backend;
        log::debug!("proving {} circuits on the {} backend", work.len(), backend.name());
        let mut t = Timings::default();
        let mut proofs = Vec::with_capacity(work.len());
        let n = work.len();
        // On an error the items not yet proved go back when `work` is dropped. A run of
        // witnesses of one compiled circuit goes to the backend at once
        // (`Backend::witness_commitments_many`: a GPU over streamed parameters proves them
        // together); anything else one at a time.
        let mut i = 0;
        while i < n {
            let one = Instant::now();
            let run = witness_run(&mut work);
            if run >= 2 {
                let cs = {
                    let mut circuit = None;
                    let mut witnesses = Vec::with_capacity(run);
                    for item in work[..run].iter_mut() {
                        if let Work::Witness { circuit: c, witness } = item.work() {
                            circuit = Some(c);
                            witnesses.push(witness);
                        }
                    }
                    let circuit = circuit.expect("a run of witnesses");
                    backend.witness_commitments_many(circuit, &witnesses, params, self.pool.as_ref(), &mut t, cut)?
                };
                let done = cs.len();
                if done == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "the {} backend proved none of a run of {run} witnesses",
                        backend.name()
                    )));
                }
                for c in cs.into_iter().take(run) {
                    drop(work.remove(0));
                    proofs.push(self.finish_proof(params, &c, (r[i], s[i]), (i, n, "witness"), one, &mut t));
                    i += 1;
                }
                if done < run {
                    break; // cut short
                }
                continue;
            }
            let mut item = work.remove(0);
            let (c, path) = match item.work() {
                Work::Full(a) => (backend.commitments(a, params, &mut t)?, "full"),
                Work::Witness { circuit, witness } => (
                    backend.witness_commitments(circuit, witness, params, self.pool.as_ref(), &mut t)?,
                    "witness",
                ),
            };
            drop(item);
            proofs.push(self.finish_proof(params, &c, (r[i], s[i]), (i, n, path), one, &mut t));
            i += 1;
        }
        t.total = start.elapsed();
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
    C: Circuit<Scalar> + Send,
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
    C: Circuit<Scalar> + Send,
{
    Prover::new().prove_with_randomness(circuits, params, r, s)
}
