//! A Filecoin proof as an engine job: its kind and priority, the per-call [`Options`], and the
//! [`ProofJob`] a `submit_*` call returns (wait, cancel, progress), whose proofs are checked
//! against the parameters' verifying key before they are handed out.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use rand_core::RngCore;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::ParameterSetMetadata;
use storage_proofs_core::proof::ProofScheme;

use super::params::Loaded;
use super::{fil_err, guard, Output, Report};
use crate::compiled::WitnessCs;
use crate::engine::{Engine, Job, JobHandle, Partition, Progress, ProgressCallback};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::proof::{verify_proof, Proof};

/// Winning PoSt's priority: it must land within an epoch, so it goes before everything.
pub const PRIORITY_WINNING_POST: i32 = 300;
/// Window PoSt's priority: before sealing work, after Winning PoSt.
pub const PRIORITY_WINDOW_POST: i32 = 200;
/// PoRep commit phase 2's priority.
pub const PRIORITY_SEAL_COMMIT: i32 = 100;
/// SnapDeals' (empty-sector-update) priority: as PoRep C2's.
pub const PRIORITY_SNAP_DEALS: i32 = 100;

/// Which Filecoin proof a job proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// PoRep commit phase 2 (C2).
    SealCommit,
    /// SnapDeals: the empty-sector-update proof.
    SnapDeals,
    /// Window PoSt (all partitions, or one).
    WindowPoSt,
    /// Winning PoSt.
    WinningPoSt,
}

impl ProofKind {
    /// The engine priority a job of this kind gets unless [`Options::priority`] says otherwise
    /// (`PRIORITY_*`: Winning PoSt > Window PoSt > PoRep C2 = SnapDeals; a higher priority is
    /// dispatched to synthesis and taken by a GPU first).
    pub const fn default_priority(self) -> i32 {
        match self {
            Self::SealCommit => PRIORITY_SEAL_COMMIT,
            Self::SnapDeals => PRIORITY_SNAP_DEALS,
            Self::WindowPoSt => PRIORITY_WINDOW_POST,
            Self::WinningPoSt => PRIORITY_WINNING_POST,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::SealCommit => "PoRep C2",
            Self::SnapDeals => "SnapDeals",
            Self::WindowPoSt => "Window PoSt",
            Self::WinningPoSt => "Winning PoSt",
        }
    }
}

/// How one proof is submitted. `Options::default()`: the process-wide engine
/// ([`engine`](super::engine())), the kind's priority, r and s from the operating system.
#[derive(Default)]
pub struct Options<'a> {
    /// The engine to prove on (`None`: the process-wide one).
    pub engine: Option<&'a Engine>,
    /// The job's priority (`None`: [`ProofKind::default_priority`]).
    pub priority: Option<i32>,
    /// Where r and s come from (`None`: the operating system's generator): all the r, then all
    /// the s, one per partition, drawn at submission, as bellperson draws them.
    pub rng: Option<&'a mut dyn RngCore>,
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("engine", &self.engine.map(|_| "given"))
            .field("priority", &self.priority)
            .field("rng", &self.rng.as_ref().map(|_| "given"))
            .finish()
    }
}

impl<'a> Options<'a> {
    /// On `engine` instead of the process-wide one.
    pub fn on(mut self, engine: &'a Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// At `priority` instead of the kind's.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// With r and s drawn from `rng`.
    pub fn with_rng(mut self, rng: &'a mut dyn RngCore) -> Self {
        self.rng = Some(rng);
        self
    }
}

/// What a job needs after the engine's proofs are back.
struct Finish {
    loaded: Arc<Loaded>,
    /// The public inputs each partition's proof is checked with.
    inputs: Vec<Vec<Scalar>>,
    report: Report,
    /// When the call that submitted the job began.
    start: Instant,
    submitted: Instant,
    /// Partition k's circuit again, always synthesized in full: the retry of a proof that
    /// failed verification.
    again: Box<dyn Fn(usize) -> Partition + Send>,
    /// The partitions' circuit type (the compiled circuit a failed proof drops).
    circuit_type: &'static str,
    params: Parameters,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
}

/// A Filecoin proof submitted to an engine: [`wait`](Self::wait) for its bytes, or
/// [`cancel`](Self::cancel) it, watch its [`progress`](Self::progress). Dropping it does not
/// cancel the job (its proofs are then discarded).
pub struct ProofJob {
    handle: JobHandle,
    kind: ProofKind,
    priority: i32,
    finish: Mutex<Option<Finish>>,
}

impl std::fmt::Debug for ProofJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProofJob")
            .field("kind", &self.kind)
            .field("priority", &self.priority)
            .field("handle", &self.handle)
            .finish()
    }
}

impl ProofJob {
    /// Blocks until the engine is done with the job, checks every partition's proof against
    /// the parameters' verifying key, and returns the bytes filecoin-proofs returns (192 per
    /// partition, in partition order) with the [`Report`].
    ///
    /// # Errors
    /// The engine's ([`JobHandle::wait`]: a partition's failure, [`Error::Cancelled`],
    /// [`Error::BudgetExhausted`], ...); [`Error::Filecoin`] for a proof that does not verify
    /// (a backend fault, or parameters that do not belong to this circuit).
    pub fn wait(self) -> Result<Output> {
        self.take_output()
    }

    /// [`wait`](Self::wait) without giving the job up, so that other threads can still cancel
    /// it or read its progress (the C ABI's). The output can be taken once.
    pub(crate) fn take_output(&self) -> Result<Output> {
        let finish = self.finish.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(Finish {
            loaded,
            inputs,
            mut report,
            start,
            submitted,
            again,
            circuit_type,
            params,
            r,
            s,
        }) = finish
        else {
            return Err(Error::InvalidArgument(
                "the proof job's result was taken already".into(),
            ));
        };
        let mut proofs = self.handle.take_result()?;
        report.proving = submitted.elapsed();
        let t = Instant::now();
        if proofs.len() != inputs.len() {
            return Err(Error::Filecoin(format!(
                "the engine returned {} proofs for {} partitions",
                proofs.len(),
                inputs.len()
            )));
        }
        let verify = |proofs: &[Proof], which: &mut dyn Iterator<Item = usize>| -> Result<Vec<usize>> {
            let mut bad = Vec::new();
            for k in which {
                if !verify_proof(&loaded.pvk, &proofs[k], &inputs[k])? {
                    bad.push(k);
                }
            }
            Ok(bad)
        };
        // A benchmark's set (`install_unchecked_parameters`) is not checked: none of its
        // proofs would verify.
        let bad = if loaded.checked {
            verify(&proofs, &mut (0..proofs.len()))?
        } else {
            Vec::new()
        };
        if !bad.is_empty() {
            // Once, by full synthesis, with the same r and s. Where that proof passes, the fast
            // route was wrong (a corrupt compiled circuit, a generator gone wrong): it goes, or
            // it would make wrong proofs again. Where it fails too, the request's own claim does
            // not hold (a C1 output whose vanilla proofs are not of its commitments: nothing
            // checks them before C2) or the backend or parameters are at fault: the job fails
            // and the fast route stays, so one bad request costs its own job only.
            log::warn!(
                "filecoin: {}: the proofs of partitions {bad:?} do not verify; proving them again by full synthesis",
                self.kind.name()
            );
            let link = self
                .handle
                .engine_link()
                .ok_or_else(|| Error::Cancelled("the engine shut down before a failed proof's retry".into()))?;
            link.retrying(bad.len());
            let job = Job::new(params.clone(), bad.iter().map(|&k| again(k)).collect())
                .with_priority(self.priority)
                .with_label(format!("{} (retry)", self.kind.name()))
                .with_randomness(bad.iter().map(|&k| r[k]).collect(), bad.iter().map(|&k| s[k]).collect());
            for (&k, proof) in bad.iter().zip(link.clone().resubmit(job).wait()?) {
                proofs[k] = proof;
            }
            let still_bad = verify(&proofs, &mut bad.iter().copied())?;
            if still_bad.len() < bad.len() {
                link.fast_route_wrong(circuit_type, &params);
            }
            if let Some(k) = still_bad.first() {
                return Err(Error::Filecoin(format!(
                    "{}: the proof of partition {k} does not verify against the parameters' verifying key, \
                     also when proved again by full synthesis: the request's inputs do not hold together \
                     (e.g. vanilla proofs not of its commitments or challenges), or a backend fault, or \
                     parameters that do not belong to this circuit",
                    self.kind.name()
                )));
            }
        }
        report.verify = t.elapsed();
        report.total = start.elapsed();
        let mut bytes = Vec::with_capacity(proofs.len() * Proof::SIZE);
        for p in &proofs {
            bytes.extend_from_slice(&p.to_bytes());
        }
        log::info!(
            "filecoin: {} of {} partitions at priority {} on {}: inputs {:.1} ms, engine {:.1} ms, verify {:.1} ms",
            self.kind.name(),
            report.partitions,
            report.priority,
            report.backend,
            report.circuits.as_secs_f64() * 1e3,
            report.proving.as_secs_f64() * 1e3,
            report.verify.as_secs_f64() * 1e3
        );
        Ok(Output { proof: bytes, report })
    }

    /// Cancels the job (see [`JobHandle::cancel`]): [`wait`](Self::wait) then returns
    /// [`Error::Cancelled`]. Returns whether it was still running.
    pub fn cancel(&self) -> bool {
        self.handle.cancel()
    }

    /// Partitions proved so far, of how many.
    pub fn progress(&self) -> Progress {
        self.handle.progress()
    }

    /// Calls `callback` after each partition and once at the end (see
    /// [`JobHandle::on_progress`]).
    pub fn on_progress(&self, callback: ProgressCallback) {
        self.handle.on_progress(callback)
    }

    /// Whether the engine is done with the job ([`wait`](Self::wait) only verifies).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// The engine's id of the job.
    pub fn id(&self) -> u64 {
        self.handle.id()
    }

    /// The proof kind.
    pub fn kind(&self) -> ProofKind {
        self.kind
    }

    /// The priority it was submitted at.
    pub fn priority(&self) -> i32 {
        self.priority
    }
}

/// A blocking call: the job its `submit_*` twin made, waited for; its proof bytes. Every
/// blocking entry point is its twin and this.
pub(crate) fn blocking(job: Result<ProofJob>) -> Result<Vec<u8>> {
    job?.wait().map(|o| o.proof)
}

/// What [`submit_compound`] verifies with: the public inputs `inputs` as of partition
/// `first_partition` (a single Window PoSt partition is built as partition 0 of its own
/// sectors and checked as partition `k` of the whole PoSt).
pub(crate) struct VerifyAs<'p, I> {
    pub(crate) inputs: &'p I,
    pub(crate) first_partition: usize,
}

/// A native witness generator of a proof scheme's partitions (e.g.
/// [`fallback_post_witness_parallel`](super::native::post::fallback_post_witness_parallel)):
/// from the public inputs, partition k's vanilla proof, the public parameters and `Some(k)`
/// — what `CompoundProof::circuit` builds partition k from — the circuit's public inputs and
/// aux values into a system holding the "one", on the given number of threads.
pub(crate) type NativeWitness<S> = fn(
    &<S as ProofScheme<'static>>::PublicInputs,
    &<S as ProofScheme<'static>>::Proof,
    &<S as ProofScheme<'static>>::PublicParams,
    Option<usize>,
    usize,
    &mut WitnessCs,
) -> Result<()>;

/// One partition's circuit, built from its vanilla proof only when its synthesis starts (so a
/// job holds the inputs once, not a circuit per partition), as filecoin-proofs'
/// `CompoundProof::circuit_proofs` builds partition k. Cloning shares the inputs.
struct Lazy<C> {
    partition: usize,
    build: Arc<dyn Fn(usize) -> Result<C> + Send + Sync>,
}

impl<C> Clone for Lazy<C> {
    fn clone(&self) -> Self {
        Self {
            partition: self.partition,
            build: self.build.clone(),
        }
    }
}

impl<C: Circuit<Scalar>> Circuit<Scalar> for Lazy<C> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> std::result::Result<(), SynthesisError> {
        let circuit =
            (self.build)(self.partition).map_err(|e| SynthesisError::IoError(std::io::Error::other(e.to_string())))?;
        circuit.synthesize(cs)
    }
}

/// Submits one engine job of the partitions of `vanilla_proofs` (partition k from vanilla
/// proof k, its circuit built when its synthesis starts: the engine synthesizes a few at a
/// time, under its budget), after computing the public inputs each proof will be checked with.
/// With `native`, each partition comes with its native witness generator (the witness path's
/// generated route: used once validated for the compiled circuit).
///
/// Four steps, each a function of its own: the public inputs ([`public_inputs`]), the
/// partitions' lazy circuits ([`Circuits`]), each partition with or without its generator
/// ([`Circuits::partition`]), and r and s ([`randomness`]); then the job is submitted.
#[allow(clippy::too_many_arguments)]
pub(crate) fn submit_compound<S, C, CP>(
    kind: ProofKind,
    loaded: Arc<Loaded>,
    pub_in: &S::PublicInputs,
    verify_as: VerifyAs<'_, S::PublicInputs>,
    vanilla_proofs: Vec<S::Proof>,
    pub_params: &S::PublicParams,
    native: Option<NativeWitness<S>>,
    options: Options<'_>,
    mut report: Report,
    start: Instant,
) -> Result<ProofJob>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Send + Sync + 'static,
    S::PublicParams: ParameterSetMetadata + Clone + Send + Sync + 'static,
    S::PublicInputs: Clone + Send + Sync + 'static,
    C: Circuit<Scalar> + CircuitComponent + Send + 'static,
    CP: CompoundProof<'static, S, C> + 'static,
{
    if vanilla_proofs.is_empty() {
        return Err(Error::InvalidArgument("no vanilla proofs: nothing to prove".into()));
    }
    let engine = match options.engine {
        Some(e) => e,
        None => super::engine()?,
    };
    // With EngineConfig::params_on_device, the first proof of a kind keeps its set on the GPUs.
    let loaded = super::params::placed(loaded, engine);
    let n = vanilla_proofs.len();
    let t = Instant::now();
    #[allow(unused_mut)] // changed by a fault-injection hook only
    let mut inputs = public_inputs::<S, C, CP>(&verify_as, pub_params, n)?;
    let circuits = Circuits::<S, C>::new::<CP>(engine, pub_in, vanilla_proofs, pub_params)?;
    #[cfg(feature = "fault-injection")]
    if circuits.native_fault == Some(fault::NativeWitnessFault::Untrue) {
        fault::untrue(&mut inputs);
    }
    let partitions = (0..n).map(|k| circuits.partition(k, native)).collect();
    report.circuits = t.elapsed();

    let priority = options.priority.unwrap_or(kind.default_priority());
    let params = loaded.params.clone();
    let (r, s) = randomness(options.rng, n);
    let job = Job::new(params.clone(), partitions)
        .with_priority(priority)
        .with_label(kind.name())
        .with_randomness(r.clone(), s.clone());
    report.backend = backend_names(engine);
    report.partitions = n;
    report.domain_size = params.domain_size();
    report.priority = priority;
    let handle = engine.submit(job);
    Ok(ProofJob {
        handle,
        kind,
        priority,
        finish: Mutex::new(Some(Finish {
            loaded,
            inputs,
            report,
            start,
            submitted: Instant::now(),
            again: Box::new(move |k| Partition::circuit_in_full(circuits.lazy(k))),
            circuit_type: std::any::type_name::<Lazy<C>>(),
            params,
            r,
            s,
        })),
    })
}

/// The public inputs each of `n` partitions' proofs is checked with: partition k's as of
/// partition `verify_as.first_partition + k` of `verify_as.inputs`, as filecoin-proofs'
/// verifier computes them.
///
/// # Errors
/// [`Error::Filecoin`] when filecoin-proofs refuses (or panics on) the inputs.
fn public_inputs<S, C, CP>(
    verify_as: &VerifyAs<'_, S::PublicInputs>,
    pub_params: &S::PublicParams,
    n: usize,
) -> Result<Vec<Vec<Scalar>>>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Send + Sync + 'static,
    S::PublicParams: ParameterSetMetadata + Clone + Send + Sync + 'static,
    S::PublicInputs: Clone + Send + Sync + 'static,
    C: Circuit<Scalar> + CircuitComponent + Send + 'static,
    CP: CompoundProof<'static, S, C>,
{
    (0..n)
        .map(|k| {
            let at = verify_as.first_partition + k;
            let what = || format!("the public inputs of partition {at}");
            guard(&what, || {
                CP::generate_public_inputs(verify_as.inputs, pub_params, Some(at)).map_err(|e| fil_err(&what(), e))
            })
        })
        .collect()
}

/// All the r, then all the s, for `n` partitions (as bellperson draws them:
/// [`crate::prover::draw_randomness`]), from the caller's generator or the OS's; kept with the
/// job for a retry.
fn randomness(rng: Option<&mut dyn RngCore>, n: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    match rng {
        Some(rng) => crate::prover::draw_randomness(n, rng),
        None => crate::prover::draw_randomness(n, &mut rand_core::OsRng),
    }
}

/// What a compound proof's partitions are built from, held once per job and shared by every
/// partition's lazy circuit and native generator: the public inputs, the vanilla proofs, the
/// public parameters.
type Inputs<S> = (
    <S as ProofScheme<'static>>::PublicInputs,
    Vec<<S as ProofScheme<'static>>::Proof>,
    <S as ProofScheme<'static>>::PublicParams,
);

/// A job's partitions as circuits built on demand ([`Lazy`]), with the native generator
/// wiring of [`partition`](Circuits::partition). Also the test hooks' faults drawn for this job
/// (feature `fault-injection`).
struct Circuits<S: ProofScheme<'static>, C> {
    inputs: Arc<Inputs<S>>,
    build: Arc<dyn Fn(usize) -> Result<C> + Send + Sync>,
    #[cfg(feature = "fault-injection")]
    native_fault: Option<fault::NativeWitnessFault>,
}

impl<S, C> Circuits<S, C>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Send + Sync + 'static,
    S::PublicParams: ParameterSetMetadata + Clone + Send + Sync + 'static,
    S::PublicInputs: Clone + Send + Sync + 'static,
    C: Circuit<Scalar> + CircuitComponent + Send + 'static,
{
    /// Partition k's circuit is `CP::circuit` of vanilla proof k, as filecoin-proofs'
    /// `CompoundProof::circuit_proofs` builds it. Takes the engine's test faults (feature
    /// `fault-injection`): a wrong compiled circuit is installed here, before the job is.
    ///
    /// # Errors
    /// Only from the `fault-injection` hooks (installing a wrong compiled circuit).
    fn new<CP>(
        engine: &Engine,
        pub_in: &S::PublicInputs,
        vanilla_proofs: Vec<S::Proof>,
        pub_params: &S::PublicParams,
    ) -> Result<Self>
    where
        CP: CompoundProof<'static, S, C> + 'static,
    {
        #[cfg(feature = "fault-injection")]
        let (skew_compiled, native_fault) = fault::take(engine);
        #[cfg(not(feature = "fault-injection"))]
        let _ = engine;
        let inputs = Arc::new((pub_in.clone(), vanilla_proofs, pub_params.clone()));
        let for_build = inputs.clone();
        let build = Arc::new(move |k: usize| {
            #[cfg(feature = "fault-injection")]
            if native_fault == Some(fault::NativeWitnessFault::Malformed) {
                return Err(fault::malformed(k));
            }
            let (pub_in, vanilla_proofs, pub_params) = &*for_build;
            let what = || format!("building the circuit of partition {k}");
            guard(&what, || {
                CP::circuit(
                    pub_in,
                    C::ComponentPrivateInputs::default(),
                    &vanilla_proofs[k],
                    pub_params,
                    Some(k),
                )
                .map_err(|e| fil_err(&what(), e))
            })
        });
        let circuits = Self {
            inputs,
            build,
            #[cfg(feature = "fault-injection")]
            native_fault,
        };
        #[cfg(feature = "fault-injection")]
        if skew_compiled {
            fault::skew_compiled(engine, circuits.lazy(0))?;
        }
        Ok(circuits)
    }

    /// Partition `k`'s circuit, built when its synthesis starts.
    fn lazy(&self, partition: usize) -> Lazy<C> {
        Lazy {
            partition,
            build: self.build.clone(),
        }
    }

    /// Partition `k` of the job: its lazy circuit, with `native`'s generator of its witness
    /// (run on the threads the engine gives it, under [`guard`]) where there is one.
    fn partition(&self, k: usize, native: Option<NativeWitness<S>>) -> Partition {
        let Some(generate) = native else {
            return Partition::circuit(self.lazy(k));
        };
        let inputs = self.inputs.clone();
        #[cfg(feature = "fault-injection")]
        let native_fault = self.native_fault;
        let generate = move |cs: &mut WitnessCs, threads: usize| {
            let (pub_in, vanilla_proofs, pub_params) = &*inputs;
            let what = || format!("the native witness of partition {k}");
            let run = |cs: &mut WitnessCs| generate(pub_in, &vanilla_proofs[k], pub_params, Some(k), threads, cs);
            #[cfg(feature = "fault-injection")]
            if let Some(f) = native_fault {
                return guard(&what, || fault::generate(f, k, cs, run));
            }
            guard(&what, || run(cs))
        };
        Partition::with_own_generator(self.lazy(k), generate)
    }
}

/// Test hooks (feature `fault-injection`, as the GPU's fault points; absent from normal
/// builds): the next Filecoin job submitted to an engine gets a wrong compiled circuit, or native
/// witness generators gone wrong in a chosen way.
#[cfg(feature = "fault-injection")]
mod fault {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use bellpepper_core::{Circuit, ConstraintSystem};
    use blstrs::Scalar;
    use ff::Field;

    use crate::compiled::{CompiledCircuit, Witness, WitnessCs};
    use crate::engine::Engine;
    use crate::error::{Error, Result};

    /// How the native witness generators of an engine's next Filecoin job go wrong.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum NativeWitnessFault {
        /// One aux value in the middle off by one, the counts right: only the comparison with
        /// the gadgets (at validation) or the proof's verification (a generator gone wrong
        /// after its validation) can tell.
        Skewed,
        /// The partitions' inputs as a malformed vanilla proof makes them: the generator
        /// refuses them with an [`Error::InvalidArgument`], and the circuit's construction
        /// fails on them too.
        Malformed,
        /// The witness one aux value short, as inputs of another shape than the compiled
        /// circuit's (fewer challenges, say) make it.
        Short,
        /// A request whose own claim does not hold, well formed: the public inputs its proofs
        /// are checked with are one off, as a C1 output whose vanilla proofs are not of its
        /// commitments makes them (filecoin-proofs does not check those before C2). No route's
        /// proof verifies, full synthesis' neither.
        Untrue,
    }

    /// The engine (its address) whose next Filecoin job gets a wrong compiled circuit; 0: none.
    static SKEW_NEXT: AtomicUsize = AtomicUsize::new(0);
    /// The engine (its address) whose next Filecoin job's generators go wrong, and how.
    static NATIVE_NEXT: Mutex<Option<(usize, NativeWitnessFault)>> = Mutex::new(None);

    fn address(engine: &Engine) -> usize {
        engine as *const Engine as usize
    }

    /// Test hook: the next Filecoin job submitted to `engine` first puts in its cache a wrong
    /// compiled circuit of its type (one of its constants off by one, the structure unchanged,
    /// so its witnesses are accepted): its witness-path proofs fail verification.
    pub fn skew_next_compiled_circuit(engine: &Engine) {
        SKEW_NEXT.store(address(engine), Ordering::SeqCst);
    }

    /// Test hook: the next Filecoin job with native witness generators submitted to `engine`
    /// gets generators gone wrong as `fault` says.
    pub fn fault_next_native_witness(engine: &Engine, fault: NativeWitnessFault) {
        *NATIVE_NEXT.lock().unwrap_or_else(|p| p.into_inner()) = Some((address(engine), fault));
    }

    /// The faults asked for `engine`'s next job (taken: the job after it has none).
    pub(super) fn take(engine: &Engine) -> (bool, Option<NativeWitnessFault>) {
        let this = address(engine);
        let compiled = SKEW_NEXT
            .compare_exchange(this, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        let mut next = NATIVE_NEXT.lock().unwrap_or_else(|p| p.into_inner());
        let native = match *next {
            Some((at, fault)) if at == this => {
                *next = None;
                Some(fault)
            }
            _ => None,
        };
        (compiled, native)
    }

    /// What a malformed vanilla proof of partition `k` makes the generator and the circuit's
    /// construction return.
    pub(super) fn malformed(k: usize) -> Error {
        Error::InvalidArgument(format!(
            "the vanilla proof of partition {k} is malformed (a fault injected by a test)"
        ))
    }

    /// The generator `run` of partition `k` gone wrong as `fault` says, into `cs`.
    pub(super) fn generate(
        fault: NativeWitnessFault,
        k: usize,
        cs: &mut WitnessCs,
        run: impl FnOnce(&mut WitnessCs) -> Result<()>,
    ) -> Result<()> {
        match fault {
            NativeWitnessFault::Skewed => altered(cs, run, |w, j| {
                let v = w.aux_value(j).unwrap_or(Scalar::ZERO);
                Some(if j == w.num_aux() / 2 { v + Scalar::ONE } else { v })
            }),
            NativeWitnessFault::Malformed => Err(malformed(k)),
            NativeWitnessFault::Untrue => run(cs),
            NativeWitnessFault::Short => altered(cs, run, |w, j| {
                (j + 1 < w.num_aux()).then(|| w.aux_value(j).unwrap_or(Scalar::ZERO))
            }),
        }
    }

    /// The public inputs of an [`NativeWitnessFault::Untrue`] request: partition 0's last one
    /// off by one.
    pub(super) fn untrue(inputs: &mut [Vec<Scalar>]) {
        if let Some(v) = inputs.first_mut().and_then(|i| i.last_mut()) {
            *v += Scalar::ONE;
        }
    }

    /// Records `circuit` with one of its constants off by one and puts it in `engine`'s cache.
    pub(super) fn skew_compiled<C: Circuit<Scalar>>(engine: &Engine, circuit: C) -> Result<()> {
        let (_, compiled) = CompiledCircuit::record(circuit, None, None)?;
        let CompiledCircuit {
            circuit_type, mut r1cs, ..
        } = compiled;
        let constant = r1cs
            .constants
            .first_mut()
            .ok_or_else(|| Error::InvalidArgument("no constant to skew".into()))?;
        *constant += Scalar::ONE;
        let skewed = CompiledCircuit::from_recording(&circuit_type, r1cs);
        engine.prover().compiled_circuits().insert(Arc::new(skewed))
    }

    /// `run`'s witness written into `cs`, aux value j as `aux(witness, j)` says (`None`: left
    /// out).
    fn altered(
        cs: &mut WitnessCs,
        run: impl FnOnce(&mut WitnessCs) -> Result<()>,
        aux: impl Fn(&Witness, usize) -> Option<Scalar>,
    ) -> Result<()> {
        let mut scratch = WitnessCs::new();
        scratch.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        run(&mut scratch)?;
        let w = scratch.finish("altered")?;
        for &v in &w.inputs()[1..] {
            cs.alloc_input(|| "input", || Ok(v))?;
        }
        for v in (0..w.num_aux()).filter_map(|j| aux(&w, j)) {
            cs.append_aux(v);
        }
        Ok(())
    }
}

#[cfg(feature = "fault-injection")]
pub use fault::{fault_next_native_witness, skew_next_compiled_circuit, NativeWitnessFault};

/// The engine's backends' names (`"cpu"`, `"cuda"`), each once.
fn backend_names(engine: &Engine) -> &'static str {
    let stats = engine.stats();
    let mut names: Vec<&'static str> = stats.workers.iter().map(|w| w.backend_name).collect();
    names.dedup();
    match names.as_slice() {
        [one] => one,
        [] => "none",
        _ => "mixed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn winning_goes_before_window_before_sealing() {
        use ProofKind::*;
        assert!(WinningPoSt.default_priority() > WindowPoSt.default_priority());
        assert!(WindowPoSt.default_priority() > SealCommit.default_priority());
        assert_eq!(SealCommit.default_priority(), SnapDeals.default_priority());
        // Above the engine's default (0), so plain jobs sharing the engine go after them.
        assert!(SnapDeals.default_priority() > 0);
    }
}
