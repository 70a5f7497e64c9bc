//! The backend seam: the [`Backend`] trait a prover computes its five [`Commitments`] through
//! (the CPU's and the CUDA backend implement it), and the CPU fallback `Auto` wraps a GPU
//! backend in ([`with_cpu_fallback`]).

use std::sync::Arc;

use blstrs::{G1Projective, G2Projective};

use super::{cpu, witness, Timings};
use crate::assignment::ProvingAssignment;
use crate::compiled::{CompiledCircuit, Witness};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::pool::PinnedPool;

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

/// The GPU a backend proves on, read when asked ([`Backend::device`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The device ordinal.
    pub ordinal: usize,
    /// The GPU's name.
    pub name: String,
    /// Device memory free now, bytes (0 when the driver cannot say: a lost device).
    pub free_bytes: usize,
    /// Device memory in all, bytes.
    pub total_bytes: usize,
}

/// Where a GPU backend holds a parameter set ([`Backend::placement`]), chosen by the backend
/// from its device memory: no setting asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Its query vectors are on the device.
    Device,
    /// Its query vectors stay in page-locked host memory and cross PCIe in chunks for every
    /// proof: the set does not fit beside a proof's working set under the device's memory.
    Streamed,
    /// Not held (never prepared there, or evicted).
    Absent,
}

impl Placement {
    /// `device`, `streamed` or `absent` (logs, metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Device => "device",
            Placement::Streamed => "streamed",
            Placement::Absent => "absent",
        }
    }
}

/// Where the commitments are computed.
pub trait Backend: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &'static str;

    /// The GPU it proves on and its memory now; `None` for the CPU.
    fn device(&self) -> Option<DeviceStatus> {
        None
    }

    /// Gets ready to prove with `params` (the CUDA backend uploads them to the device once).
    ///
    /// # Errors
    /// Backend failures (e.g. not enough device memory).
    fn prepare(&self, _params: &Parameters) -> Result<()> {
        Ok(())
    }

    /// Makes `params` resident for good: uploaded now, never evicted to make room (only
    /// [`Backend::evict`] frees them), so their host copy may go
    /// ([`Prover::prepare_device_only`](super::Prover::prepare_device_only)).
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

    /// Where the set `params_id` is held for this backend's proofs now; `None` when the
    /// backend does not say (the CPU, which holds nothing of its own; a custom backend).
    fn placement(&self, _params_id: u64) -> Option<Placement> {
        None
    }

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
    /// [`Prover::prove_witnesses`](super::Prover::prove_witnesses)). The default evaluates a, b, c on the host into buffers
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

    /// The commitments of several witnesses of one compiled circuit, in order, each checked
    /// as for [`Backend::witness_commitments`]: of all of them, or of the first few when `cut`
    /// says so (it is asked between two witnesses; at least one is proved): an urgent proof
    /// waits for the witnesses begun, not for the whole run. The default: one call of that
    /// each. The CUDA backend over streamed parameters proves them together (each streamed
    /// chunk of bases crossing PCIe once for all of them; `cut` asked after each one's H).
    ///
    /// # Errors
    /// As [`Backend::witness_commitments`].
    fn witness_commitments_many(
        &self,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        pool: Option<&PinnedPool>,
        timings: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> Result<Vec<Commitments>> {
        let mut out = Vec::with_capacity(witnesses.len());
        for (i, w) in witnesses.iter().enumerate() {
            if i > 0 && cut() {
                break;
            }
            out.push(self.witness_commitments(circuit, w, params, pool, timings)?);
        }
        Ok(out)
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

    fn device(&self) -> Option<DeviceStatus> {
        self.usable().and_then(|b| b.device())
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

    fn evict_params(&self, params_id: u64) {
        self.primary.evict_params(params_id);
    }

    fn placement(&self, params_id: u64) -> Option<Placement> {
        self.usable().and_then(|b| b.placement(params_id))
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

    fn witness_commitments_many(
        &self,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        pool: Option<&PinnedPool>,
        timings: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> Result<Vec<Commitments>> {
        match self.usable() {
            Some(b) => b.witness_commitments_many(circuit, witnesses, params, pool, timings, cut),
            None => cpu::CpuBackend.witness_commitments_many(circuit, witnesses, params, pool, timings, cut),
        }
    }

    fn witness_pool_requests(&self, circuit: &CompiledCircuit) -> [usize; 4] {
        match self.usable() {
            Some(b) => b.witness_pool_requests(circuit),
            None => cpu::CpuBackend.witness_pool_requests(circuit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prover::{BackendChoice, Prover};
    use crate::testing::{random_parameters, Synthetic};
    use blstrs::Scalar;

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

    /// A backend that records the sets it is asked to evict and holds set 7 streamed.
    #[derive(Default)]
    struct Holder {
        evicted: parking_lot::Mutex<Vec<u64>>,
        lost: std::sync::atomic::AtomicBool,
    }

    impl Backend for Holder {
        fn name(&self) -> &'static str {
            "holder"
        }
        fn is_lost(&self) -> bool {
            self.lost.load(std::sync::atomic::Ordering::Acquire)
        }
        fn evict_params(&self, params_id: u64) {
            self.evicted.lock().push(params_id);
        }
        fn placement(&self, params_id: u64) -> Option<Placement> {
            Some(if params_id == 7 {
                Placement::Streamed
            } else {
                Placement::Absent
            })
        }
        fn commitments(&self, a: &mut ProvingAssignment, p: &Parameters, t: &mut Timings) -> Result<Commitments> {
            cpu::CpuBackend.commitments(a, p, t)
        }
    }

    /// The `Auto` backend's wrapper passes one set's eviction and the placement query on (an
    /// engine over `Auto` evicting a set left its device copy before), and a lost device holds
    /// nothing.
    #[test]
    fn the_fallback_wrapper_forwards_evictions_and_placement() {
        let holder = Arc::new(Holder::default());
        let fallback = with_cpu_fallback(holder.clone());
        fallback.evict_params(7);
        assert_eq!(*holder.evicted.lock(), [7]);
        assert_eq!(fallback.placement(7), Some(Placement::Streamed));
        assert_eq!(fallback.placement(8), Some(Placement::Absent));
        holder.lost.store(true, std::sync::atomic::Ordering::Release);
        assert_eq!(fallback.placement(7), None, "proving on the CPU now");
        fallback.evict_params(9);
        assert_eq!(*holder.evicted.lock(), [7, 9], "a lost device still frees what it can");
    }
}
