//! `prove()`: circuits (or synthesized assignments) and parameters in, proofs out.
//!
//! A proof is made in three steps: synthesis fills a [`ProvingAssignment`]; a [`Backend`]
//! computes the five commitments (H, L, A, B in G1, B in G2) and hands a/b/c back to the
//! pool as soon as H no longer needs them; the CPU adds the randomisers r, s. With the same
//! r and s the result is the bytes bellperson's `create_proof` gives.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod kernel_contract;
pub mod msm_plan;
mod policy;
pub(crate) mod witness;

pub use policy::WitnessStats;
pub(crate) use policy::{witness_path_default, Synthesis, WitnessEstimate};

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::assignment::{CapacityHints, ProvingAssignment};
use crate::compiled::{CompiledCircuit, Witness};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::proof::Proof;

/// The five group elements a backend computes for one proof, before randomisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commitments {
    /// Σ h_i·H_i.
    pub h: G1Projective,
    /// Σ aux_i·L_i.
    pub l: G1Projective,
    /// Σ over inputs and A-dense aux of w_i·A_i.
    pub a: G1Projective,
    /// Σ over B-dense inputs and aux of w_i·B_i in G1.
    pub b_g1: G1Projective,
    /// The same in G2.
    pub b_g2: G2Projective,
}

/// Where the commitments are computed.
pub trait Backend: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &'static str;

    /// Gets ready to prove with `params` (the CUDA backend uploads them to the device once).
    ///
    /// # Errors
    /// Backend failures (e.g. not enough device memory).
    fn prepare(&self, _params: &Parameters) -> Result<()> {
        Ok(())
    }

    /// Makes `params` resident for good: uploaded now, never evicted to make room (only
    /// [`Backend::evict`] frees them), so their host copy may go
    /// ([`Prover::prepare_device_only`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a backend that keeps no device copy (the CPU), or when the
    /// parameters do not fit on the device (they would be streamed from host memory).
    fn keep_resident(&self, _params: &Parameters) -> Result<()> {
        Err(Error::InvalidArgument(format!(
            "the {} backend keeps no device copy of the parameters",
            self.name()
        )))
    }

    /// Frees whatever [`Backend::prepare`] keeps (device-resident parameters) and the
    /// backend's device caches.
    fn evict(&self) {}

    /// Frees what [`Backend::prepare`] or [`Backend::keep_resident`] keeps for the one set
    /// `params_id` ([`Parameters::id`]), leaving other sets resident; proofs in flight with it
    /// keep it until they finish. Does nothing for a set the backend does not hold (and on a
    /// backend that keeps nothing, the CPU).
    fn evict_params(&self, _params_id: u64) {}

    /// Whether the backend can no longer prove (a GPU that hit a sticky error). `Auto`
    /// provers then go on on the CPU.
    fn is_lost(&self) -> bool {
        false
    }

    /// Computes the commitments of one checked assignment. Must release a/b/c (back to the
    /// pool) once H is computed, and on every error path.
    ///
    /// # Errors
    /// Backend failures; the assignment's buffers are released either way.
    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        timings: &mut Timings,
    ) -> Result<Commitments>;

    /// Computes the commitments of one witness of a compiled circuit, both already checked
    /// (the witness against the circuit, the circuit against the parameters: see
    /// [`Prover::prove_witnesses`]). The default evaluates a, b, c on the host into buffers
    /// from `pool` ([`CompiledCircuit::assignment`]) and proves that assignment with
    /// [`Backend::commitments`]; the CUDA backend evaluates them on the device instead.
    ///
    /// # Errors
    /// As [`Backend::commitments`]; what the pool's checkouts return.
    fn witness_commitments(
        &self,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        pool: Option<&PinnedPool>,
        timings: &mut Timings,
    ) -> Result<Commitments> {
        witness::evaluate_on_host(self, circuit, witness, params, pool, timings)
    }

    /// The byte sizes of the pool checkouts [`Backend::witness_commitments`] makes for one
    /// proof of `circuit` (zeros for none): the engine's budget reserves them for every
    /// witness partition. The default's: a, b, c and the expanded aux, evaluated on the host
    /// ([`CompiledCircuit::assignment`]). A backend that evaluates a, b, c on the device
    /// returns what it still takes from the pool there.
    fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        witness::host_pool_requests(circuit)
    }
}

/// Which backend proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BackendChoice {
    /// The GPU (device 0) when the `cuda` feature is on and a GPU passes the probe (code for
    /// its architecture in the build, memory free, a real kernel launch), else the CPU; the
    /// choice is made once per process, logged, and a `cuda` build that finds no GPU warns.
    /// Provers on `Auto` share that backend (and its resident parameters). If the GPU is lost
    /// later (a sticky CUDA error), the proof that hit it fails with
    /// [`Error::DeviceLost`] and later proofs run on the CPU, with a
    /// warning.
    #[default]
    Auto,
    /// The host's cores.
    Cpu,
    /// The GPU of this ordinal; an error if it is not usable (needs the `cuda` feature). All
    /// provers on one GPU share one backend (one upload per parameter set). Once the GPU is
    /// lost, proofs fail fast with [`Error::DeviceLost`].
    Gpu(usize),
}

fn make_backend(choice: BackendChoice) -> Result<Arc<dyn Backend>> {
    match choice {
        BackendChoice::Cpu => Ok(Arc::new(cpu::CpuBackend)),
        #[cfg(feature = "cuda")]
        BackendChoice::Gpu(d) => Ok(cuda::CudaBackend::shared(d)?),
        #[cfg(not(feature = "cuda"))]
        BackendChoice::Gpu(d) => Err(Error::NoGpu(format!(
            "GPU {d} requested but cuzk was built without the `cuda` feature"
        ))),
        BackendChoice::Auto => Ok(auto_backend()),
    }
}

/// The backend `Auto` picks, probed once per process and shared, so every `Prover::new()`
/// (and every call of the free `prove` functions) uses one backend and its device-resident
/// parameters instead of probing the GPU and uploading the parameters again.
fn auto_backend() -> Arc<dyn Backend> {
    static AUTO: std::sync::OnceLock<Arc<dyn Backend>> = std::sync::OnceLock::new();
    AUTO.get_or_init(|| {
        #[cfg(feature = "cuda")]
        match cuda::CudaBackend::shared(0) {
            Ok(b) => {
                log::info!("cuzk: proving on GPU 0 (CUDA backend)");
                return with_cpu_fallback(b);
            }
            Err(e) => log::warn!("cuzk: no usable GPU ({e}); proving on the CPU"),
        }
        #[cfg(not(feature = "cuda"))]
        log::debug!("cuzk: built without `cuda`; proving on the CPU");
        Arc::new(cpu::CpuBackend)
    })
    .clone()
}

/// `Auto`'s policy over any backend: prove on `primary` while it is usable; once it reports
/// itself lost ([`Backend::is_lost`]), warn once and prove on the CPU. (Only a GPU backend can
/// be lost: without `cuda` nothing but the tests uses it.)
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn with_cpu_fallback(primary: Arc<dyn Backend>) -> Arc<dyn Backend> {
    Arc::new(Fallback {
        primary,
        warned: std::sync::atomic::AtomicBool::new(false),
    })
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct Fallback {
    primary: Arc<dyn Backend>,
    warned: std::sync::atomic::AtomicBool,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl Fallback {
    fn usable(&self) -> Option<&dyn Backend> {
        if !self.primary.is_lost() {
            return Some(&*self.primary);
        }
        if !self.warned.swap(true, std::sync::atomic::Ordering::AcqRel) {
            log::warn!(
                "cuzk: the {} backend is lost (sticky device error); proving on the CPU from now on",
                self.primary.name()
            );
        }
        None
    }
}

impl Backend for Fallback {
    fn name(&self) -> &'static str {
        self.usable().map_or("cpu", |b| b.name())
    }

    fn prepare(&self, params: &Parameters) -> Result<()> {
        self.usable().map_or(Ok(()), |b| b.prepare(params))
    }

    fn keep_resident(&self, params: &Parameters) -> Result<()> {
        match self.usable() {
            Some(b) => b.keep_resident(params),
            None => cpu::CpuBackend.keep_resident(params),
        }
    }

    fn evict(&self) {
        self.primary.evict();
    }

    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        timings: &mut Timings,
    ) -> Result<Commitments> {
        match self.usable() {
            Some(b) => b.commitments(assignment, params, timings),
            None => cpu::CpuBackend.commitments(assignment, params, timings),
        }
    }

    fn witness_commitments(
        &self,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        pool: Option<&PinnedPool>,
        timings: &mut Timings,
    ) -> Result<Commitments> {
        match self.usable() {
            Some(b) => b.witness_commitments(circuit, witness, params, pool, timings),
            None => cpu::CpuBackend.witness_commitments(circuit, witness, params, pool, timings),
        }
    }

    fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        match self.usable() {
            Some(b) => b.witness_pool_requests(circuit),
            None => cpu::CpuBackend.witness_pool_requests(circuit),
        }
    }
}

/// Where the time of a `prove` went, summed over the proofs of a batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timings {
    /// Filling assignments (or witnesses) from circuits.
    pub synthesis: Duration,
    /// a, b, c from a compiled circuit and a witness on the host (the witness path on the
    /// CPU backend, or wherever the device evaluation is not used); zero on the full path and
    /// when the device evaluates them (inside `h` then).
    pub evaluation: Duration,
    /// H = (A·B − C)/Z by NTTs.
    pub h: Duration,
    /// The H MSM.
    pub msm_h: Duration,
    /// The L MSM.
    pub msm_l: Duration,
    /// The A MSM (inputs and aux).
    pub msm_a: Duration,
    /// The B MSM in G1.
    pub msm_b_g1: Duration,
    /// The B MSM in G2.
    pub msm_b_g2: Duration,
    /// The L, A, B_G1 and B_G2 MSMs run as one batched call (CUDA backend; then the four
    /// fields above stay zero and `h` includes the H MSM, fused with H on the device).
    pub msm_batch: Duration,
    /// Randomising with r, s and encoding.
    pub tail: Duration,
    /// Everything, synthesis included.
    pub total: Duration,
}

impl fmt::Display for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(f, "synthesis {:.1} ms, ", ms(self.synthesis))?;
        if self.evaluation > Duration::ZERO {
            write!(f, "a/b/c on the host {:.1} ms, ", ms(self.evaluation))?;
        }
        write!(f, "H {:.1} ms, ", ms(self.h))?;
        if self.msm_batch > Duration::ZERO {
            write!(f, "MSMs L+A+B_G1+B_G2 batched {:.1} ms", ms(self.msm_batch))?;
        } else {
            write!(
                f,
                "MSM H {:.1} / L {:.1} / A {:.1} / B_G1 {:.1} / B_G2 {:.1} ms",
                ms(self.msm_h),
                ms(self.msm_l),
                ms(self.msm_a),
                ms(self.msm_b_g1),
                ms(self.msm_b_g2)
            )?;
        }
        write!(f, ", tail {:.1} ms, total {:.1} ms", ms(self.tail), ms(self.total))
    }
}

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

pub(crate) fn check_batch(n: usize, r: &[Scalar], s: &[Scalar]) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument("empty batch: nothing to prove".into()));
    }
    if r.len() != n || s.len() != n {
        return Err(Error::InvalidArgument(format!(
            "{n} circuits need {n} values of r and of s; found {} and {}",
            r.len(),
            s.len()
        )));
    }
    Ok(())
}

/// Checks that an assignment has exactly the shape the parameters were made for.
pub(crate) fn check_assignment(a: &ProvingAssignment, params: &Parameters) -> Result<()> {
    if a.is_abc_released() {
        return Err(Error::InvalidArgument(
            "assignment's a/b/c were released; synthesize again".into(),
        ));
    }
    if !a.is_finished() {
        return Err(Error::InvalidArgument(
            "assignment was not made by Prover::synthesize".into(),
        ));
    }
    let mismatch = |what: &str, expected: usize, found: usize| {
        Err(Error::CircuitMismatch(format!(
            "{what}: parameters expect {expected}, circuit has {found}"
        )))
    };
    let inputs = a.input_assignment().len();
    if inputs != params.num_inputs() {
        return mismatch("public inputs (with the one input)", params.num_inputs(), inputs);
    }
    if a.aux_assignment().len() != params.num_aux() {
        return mismatch("aux variables", params.num_aux(), a.aux_assignment().len());
    }
    let m = a.num_constraints().next_power_of_two();
    if m != params.domain_size() {
        return mismatch(
            "evaluation domain size (constraints + inputs, rounded up to 2^k)",
            params.domain_size(),
            m,
        );
    }
    let a_dense = inputs + a.a_aux_density().total_density();
    let lens = params.query_lengths();
    if a_dense != lens.a {
        return mismatch("A query points", lens.a, a_dense);
    }
    let b_dense = a.b_input_density().total_density() + a.b_aux_density().total_density();
    if b_dense != lens.b {
        return mismatch("B query points", lens.b, b_dense);
    }
    Ok(())
}

/// Adds the randomisers: A = α + a + rδ, B = β + b + sδ, C = s·a + r·b₁ + rsδ + sα + rβ + h + l.
fn randomize(params: &Parameters, c: &Commitments, r: Scalar, s: Scalar) -> Proof {
    let vk = params.vk();
    let delta_g1 = vk.delta_g1.to_curve();
    let g_a = delta_g1 * r + vk.alpha_g1 + c.a;
    let g_b = vk.delta_g2.to_curve() * s + vk.beta_g2 + c.b_g2;
    let g_c = c.a * s + c.b_g1 * r + delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + c.h + c.l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{random_parameters, Synthetic};

    /// A backend that has lost its device: every proof it is asked for fails.
    struct Lost;

    impl Backend for Lost {
        fn name(&self) -> &'static str {
            "lost"
        }
        fn is_lost(&self) -> bool {
            true
        }
        fn commitments(&self, a: &mut ProvingAssignment, _: &Parameters, _: &mut Timings) -> Result<Commitments> {
            a.release_abc();
            Err(Error::InvalidArgument("a lost backend was asked for a proof".into()))
        }
    }

    #[test]
    fn a_lost_primary_falls_back_to_the_cpu_with_the_same_bytes() {
        let circuit = Synthetic::new(6);
        let params = random_parameters(circuit.clone(), 7).unwrap();
        let (r, s) = (vec![Scalar::from(3u64)], vec![Scalar::from(5u64)]);
        let fallback = with_cpu_fallback(Arc::new(Lost));
        assert_eq!(fallback.name(), "cpu");
        let via_fallback = Prover::new()
            .with_custom_backend(fallback)
            .prove_with_randomness(vec![circuit.clone()], &params, &r, &s)
            .unwrap();
        let on_cpu = Prover::new()
            .with_backend(BackendChoice::Cpu)
            .unwrap()
            .prove_with_randomness(vec![circuit.clone()], &params, &r, &s)
            .unwrap();
        assert_eq!(via_fallback, on_cpu);
        // without the policy the lost backend's error comes back
        let err = Prover::new()
            .with_custom_backend(Arc::new(Lost))
            .prove_with_randomness(vec![circuit], &params, &r, &s)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
}
