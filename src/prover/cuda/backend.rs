//! [`CudaBackend`]: one device's backend, composed of its parts — the device's health, the
//! parameter sets resident on it, the compiled circuits resident on it, and the batch runner
//! that computes a proof's commitments — and the public face and [`Backend`] impl over them.

use std::sync::Arc;

use parking_lot::Mutex;

use super::batch::BatchRunner;
use super::device::{device_memory, probe, DeviceInfo};
use super::error::is_out_of_memory;
use super::health::Health;
use super::residency::{DeviceMemStats, Residency};
use super::witness::{DeviceCircuits, WitnessEvaluations};
use crate::assignment::ProvingAssignment;
use crate::compiled::{CompiledCircuit, Witness};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;
use crate::prover::witness::evaluate_on_host;
use crate::prover::{Backend, Commitments, DeviceStatus, Placement, Timings};

/// Proves on one CUDA device.
///
/// Failure handling: an out-of-memory error frees the device caches and the idle resident
/// parameter sets and retries once; a sticky error (see [`Error::DeviceLost`]) marks the
/// backend lost, and every later call fails fast with `DeviceLost`.
pub struct CudaBackend {
    info: DeviceInfo,
    /// The device ordinal and whether a sticky error has lost it (shared with the parts below,
    /// which report their errors to it).
    health: Arc<Health>,
    /// Which parameter sets live on the device, the memory limit, the out-of-memory retry.
    residency: Residency,
    /// Compiled circuits resident for the witness path, and how its proofs were evaluated.
    circuits: DeviceCircuits,
    /// The H call over an assignment and the MSMs after H, batched or not.
    batch: BatchRunner,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.health.device())
            .field("name", &self.info.name)
            .field("max_resident_bytes", &self.max_resident_bytes())
            .field("memory_limit", &self.memory_limit())
            .field("resident_bytes", &self.resident_bytes())
            .field("lost", &self.is_device_lost())
            .finish()
    }
}

impl CudaBackend {
    /// A backend of its own on device `device` (probed: see [`probe`]), its residency cap the
    /// device's free memory. Most callers want [`CudaBackend::shared`] instead: two backends
    /// on one device each keep their own copy of the parameters.
    ///
    /// # Errors
    /// [`Error::NoGpu`] when the device fails the probe.
    pub fn new(device: usize) -> Result<Self> {
        let info = probe(device)?;
        log::info!(
            "GPU {device}: {} (sm_{}{}, {} SMs), {} of {} MiB free",
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            info.sm_count,
            info.free_bytes >> 20,
            info.total_bytes >> 20
        );
        let env_limit = std::env::var("CUZK_GPU_MEMORY_LIMIT")
            .ok()
            .filter(|v| !v.trim().is_empty());
        // The one byte-size rule (`crate::byte_size`): 25769803776, 24G, 24GB, 24GiB, any case.
        let limit = match env_limit.as_deref().map(|v| (v, crate::byte_size::parse(v))) {
            None => None,
            Some((_, Ok(b))) => Some(b),
            Some((v, Err(e))) => return Err(Error::InvalidArgument(format!("CUZK_GPU_MEMORY_LIMIT={v:?}: {e}"))),
        };
        let health = Arc::new(Health::new(device as i32));
        let this = Self {
            residency: Residency::new(health.clone(), info.free_bytes),
            circuits: DeviceCircuits::new(health.clone()),
            batch: BatchRunner::new(true),
            health,
            info,
        };
        if let Some(bytes) = limit {
            log::info!(
                "GPU {device}: device memory limit {} MiB (CUZK_GPU_MEMORY_LIMIT)",
                bytes >> 20
            );
            this.set_memory_limit(Some(bytes))?;
        }
        Ok(this)
    }

    /// Limits the device memory cuzk uses on this GPU to `bytes` (`None`: the device's free
    /// memory when probed, not enforced by cuzk). The kernels fail an allocation past the
    /// limit as a GPU of that size would; a parameter set that does not fit under it together
    /// with a proof's working set ([`WORKING_BYTES_PER_DOMAIN_ELEMENT`]) is streamed. For a
    /// 24 GiB card on a bigger one, or to leave room for other programs. Applies to every
    /// backend on this device in the process; idle resident sets are evicted so the next proof
    /// decides anew.
    ///
    /// [`WORKING_BYTES_PER_DOMAIN_ELEMENT`]: super::WORKING_BYTES_PER_DOMAIN_ELEMENT
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn set_memory_limit(&self, bytes: Option<usize>) -> Result<()> {
        self.residency.set_memory_limit(bytes)
    }

    /// Forces the number of bases per chunk of streamed MSMs (0: from the memory limit). For
    /// tests that stream small parameter sets in many chunks.
    ///
    /// # Errors
    /// As [`CudaBackend::set_memory_limit`].
    pub fn set_stream_chunk_points(&self, points: usize) -> Result<()> {
        self.residency.set_stream_chunk_points(points)
    }

    /// The device memory limit parameter sets are placed under (see
    /// [`CudaBackend::set_memory_limit`]).
    pub fn memory_limit(&self) -> usize {
        self.residency.memory_limit()
    }

    /// Streams every parameter set from now on (`true`), or only those that do not fit
    /// (`false`, the default): for leaving the device's memory to others, and for tests.
    /// Idle resident sets are evicted so the next proof decides anew.
    pub fn set_always_stream(&self, always: bool) {
        self.residency.set_always_stream(always);
    }

    /// Whether `params` would be streamed rather than resident under the current limit.
    pub fn would_stream(&self, params: &Parameters) -> bool {
        self.residency.would_stream(params)
    }

    /// Device memory the kernels hold on this GPU, as they count it; `reset_peak` restarts the
    /// high-water marks from now.
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn memory_stats(&self, reset_peak: bool) -> Result<DeviceMemStats> {
        self.residency.memory_stats(reset_peak)
    }

    /// Number of parameter sets held in streamed mode.
    pub fn streamed_sets(&self) -> usize {
        self.residency.streamed_sets()
    }

    /// The process's one backend on `device`, made (and probed) on first use. Every
    /// `BackendChoice::Gpu(device)` and `Auto` prover shares it, and with it one upload per
    /// parameter set.
    ///
    /// # Errors
    /// As [`CudaBackend::new`], on first use.
    pub fn shared(device: usize) -> Result<Arc<Self>> {
        static SHARED: Mutex<Vec<(usize, Arc<CudaBackend>)>> = Mutex::new(Vec::new());
        let mut all = SHARED.lock();
        if let Some((_, b)) = all.iter().find(|(d, _)| *d == device) {
            return Ok(b.clone());
        }
        let b = Arc::new(Self::new(device)?);
        all.push((device, b.clone()));
        Ok(b)
    }

    /// What the probe found.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Caps the device memory held by resident parameters (default: the device's free memory
    /// when the backend was made).
    pub fn with_max_resident_bytes(mut self, bytes: usize) -> Self {
        self.residency.set_max_resident_bytes(bytes);
        self
    }

    /// The residency cap.
    pub fn max_resident_bytes(&self) -> usize {
        self.residency.max_resident_bytes()
    }

    /// Whether L, A, B_G1 and B_G2 run as one batched call (default; uploads overlap
    /// compute) or as separate calls, each timed on its own in [`Timings`] (for measuring each
    /// MSM; docs/HISTORY.md has the two compared).
    pub fn with_batched_msms(mut self, batched: bool) -> Self {
        self.batch = BatchRunner::new(batched);
        self
    }

    /// Device memory held by resident parameters, sets evicted but still in use included.
    pub fn resident_bytes(&self) -> usize {
        self.residency.resident_bytes()
    }

    /// Number of parameter sets resident (evicted ones still in use not included).
    pub fn resident_sets(&self) -> usize {
        self.residency.resident_sets()
    }

    /// How many times a call ran out of device memory and was retried after freeing caches.
    pub fn oom_retries(&self) -> usize {
        self.residency.oom_retries()
    }

    /// How many idle resident parameter sets left the device before a proof over streamed
    /// parameters, to leave it the room it works in (they upload again at their next proof).
    pub fn evicted_for_streamed_proofs(&self) -> usize {
        self.residency.evicted_for_streamed_proofs()
    }

    /// Whether a sticky CUDA error has made this device unusable.
    pub fn is_device_lost(&self) -> bool {
        self.health.is_lost()
    }

    /// Frees every resident parameter set (sets in use by proofs in flight go when those
    /// finish) and the kernels' device caches: NTT tables and the memory pool's reserve.
    /// Afterwards the device uses what it used before cuzk, once proofs in flight are done.
    ///
    /// # Errors
    /// [`Error::Cuda`] / [`Error::DeviceLost`] from the device.
    pub fn release_device_memory(&self) -> Result<()> {
        self.circuits.clear();
        self.residency.release()
    }

    /// Frees the resident copy of the one parameter set `params_id` ([`Parameters::id`]; a set
    /// kept for good included), leaving the other sets and the device caches; proofs in flight
    /// with it keep it until they finish. Returns whether the set was resident.
    pub fn evict_params(&self, params_id: u64) -> bool {
        self.residency.evict_params(params_id)
    }

    /// Where the set `params_id` is held on this device now: on the device, streamed from
    /// page-locked host memory (chosen when the set does not fit beside a proof's working set
    /// under the memory limit: [`CudaBackend::would_stream`]), or not at all.
    pub fn placement(&self, params_id: u64) -> Placement {
        self.residency.placement(params_id)
    }

    /// Same as [`CudaBackend::release_device_memory`].
    pub fn evict_all(&self) {
        if let Err(e) = self.release_device_memory() {
            log::warn!("GPU {}: releasing device memory: {e}", self.health.device());
        }
    }

    /// How this backend's witness proofs were evaluated, and the circuits it keeps.
    pub fn witness_evaluations(&self) -> WitnessEvaluations {
        self.circuits.evaluations()
    }

    /// a, b, c and the expanded aux of `witness`, evaluated on the device and copied back (for
    /// tests and benchmarks: the proving path never copies them out).
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] for a witness of another circuit; device failures.
    pub fn evaluate_on_device(&self, circuit: &CompiledCircuit, witness: &Witness) -> Result<crate::compiled::Abc> {
        self.circuits.evaluate(&self.residency, circuit, witness)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> Option<DeviceStatus> {
        let ordinal = self.info.device;
        let (free_bytes, total_bytes) = device_memory(ordinal).unwrap_or_else(|e| {
            log::debug!("GPU {ordinal}: reading its free memory: {e}");
            (0, self.info.total_bytes)
        });
        Some(DeviceStatus {
            ordinal,
            name: self.info.name.clone(),
            free_bytes,
            total_bytes,
        })
    }

    fn prepare(&self, params: &Parameters) -> Result<()> {
        if self.is_device_lost() {
            return Err(self.health.lost_error());
        }
        self.residency.resident(params).map(|_| ())
    }

    fn keep_resident(&self, params: &Parameters) -> Result<()> {
        if self.is_device_lost() {
            return Err(self.health.lost_error());
        }
        if self.would_stream(params) {
            return Err(Error::InvalidArgument(format!(
                "parameters of {} MiB do not fit on GPU {} with a proof's working set (limit {} MiB): they are streamed from host memory, which must stay",
                params.device_bytes() >> 20,
                self.health.device(),
                self.memory_limit() >> 20
            )));
        }
        let r = self.residency.resident(params)?;
        if r.is_streamed() {
            return Err(Error::InvalidArgument(format!(
                "parameters are streamed on GPU {}: their host copy must stay",
                self.health.device()
            )));
        }
        self.residency.pin(params.id());
        Ok(())
    }

    fn evict(&self) {
        self.evict_all();
    }

    fn evict_params(&self, params_id: u64) {
        CudaBackend::evict_params(self, params_id);
    }

    fn placement(&self, params_id: u64) -> Option<Placement> {
        Some(CudaBackend::placement(self, params_id))
    }

    fn is_lost(&self) -> bool {
        self.is_device_lost()
    }

    fn commitments(
        &self,
        assignment: &mut ProvingAssignment,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Commitments> {
        if self.is_device_lost() {
            assignment.release_abc();
            return Err(self.health.lost_error());
        }
        self.batch.commitments(&self.residency, assignment, params, t)
    }

    fn witness_commitments(
        &self,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        pool: Option<&PinnedPool>,
        t: &mut Timings,
    ) -> Result<Commitments> {
        if self.is_device_lost() {
            return Err(self.health.lost_error());
        }
        match self
            .circuits
            .commitments(&self.residency, &self.batch, circuit, witness, params, t)?
        {
            Some(commitments) => Ok(commitments),
            None => evaluate_on_host(self, circuit, witness, params, pool, t),
        }
    }

    fn witness_commitments_many(
        &self,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        pool: Option<&PinnedPool>,
        t: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> Result<Vec<Commitments>> {
        if self.is_device_lost() {
            return Err(self.health.lost_error());
        }
        // Runs of at most the device's batch cap; one out of memory lowers the cap and tries
        // again; where batching does not apply, one by one. `cut` ends it early (between two
        // witnesses, after at least one).
        let mut out = Vec::with_capacity(witnesses.len());
        let mut rest = witnesses;
        let mut batching = true;
        while !rest.is_empty() {
            if !out.is_empty() && cut() {
                break;
            }
            let k = self.circuits.batch_cap().min(rest.len());
            if batching && k >= 2 {
                match self
                    .circuits
                    .commitments_many(&self.residency, &self.batch, circuit, &rest[..k], params, t, cut)
                {
                    Ok(Some(done)) => {
                        let n = done.len();
                        out.extend(done);
                        rest = &rest[n..];
                        if n < k {
                            break; // cut
                        }
                        continue;
                    }
                    Ok(None) => batching = false,
                    Err(e) if is_out_of_memory(&e) => {
                        self.circuits.lower_batch_cap(k, &e);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            out.push(self.witness_commitments(circuit, rest[0], params, pool, t)?);
            rest = &rest[1..];
        }
        Ok(out)
    }

    fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        // Nothing from the pool when the circuit is (or is expected to become) resident: what
        // the host evaluation would take when it does not fit.
        if self.batch.is_batched() && self.circuits.expects_circuit(&self.residency, circuit) {
            [0; 4]
        } else {
            crate::prover::witness::host_pool_requests(circuit)
        }
    }
}
