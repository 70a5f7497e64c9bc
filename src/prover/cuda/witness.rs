//! The witness path on the device ([`DeviceCircuits`]: the compiled circuits a backend keeps
//! there, and its witness proofs): a compiled circuit resident beside the parameters, packed
//! ([`crate::compiled::packed`]: a 2^27 PoRep partition's 7 GiB of CSR is 4.3 GiB there), a, b,
//! c evaluated inside the H call (SpMV over the compact witness), and the L, A, B MSMs fed from
//! the aux, expanded on the device after the H MSM, without it ever existing on the host.
//!
//! A circuit is uploaded once per fingerprint, into counted device memory (under the backend's
//! memory limit). When it does not fit, even after the idle parameter sets and caches are
//! freed, or does not pack, that proof evaluates a, b, c on the host instead (the trait's
//! default: same bytes), logged once per circuit at warn and counted in
//! [`WitnessEvaluations::on_host`]. A circuit that fits but not beside a proof's own device
//! vectors (out of memory in the witness H call past its one retry: before the packed form, a
//! 2^27 PoRep partition's circuit under a 24 GiB limit) leaves the device and is refused there
//! until `release_device_memory`; that proof and the next evaluate on the host the same way.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;
use parking_lot::Mutex;

use super::bases::{DeviceCurve, Staged};
use super::batch::{first_job, BatchRunner, JobSpec};
use super::error::{check, is_out_of_memory};
use super::ffi;
use super::health::Health;
use super::residency::Residency;
use crate::compiled::packed::MAX_COLUMNS;
use crate::compiled::{CompiledCircuit, PackedIndex, Witness, WitnessAux};
use crate::curve::{G1, G2};
use crate::error::{Error, Result};
use crate::params::Parameters;
use crate::prover::msm_plan::{Densities, Scalars, Sums, PROOF_MSMS};
use crate::prover::{Commitments, Timings};

/// How the witness proofs of one CUDA backend were evaluated, and what it keeps resident.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WitnessEvaluations {
    /// Proofs whose a, b, c were evaluated on the device.
    pub on_device: usize,
    /// Proofs whose a, b, c were evaluated on the host because the circuit did not fit on the
    /// device (or the domain is too small for the kernels, or the MSMs run unbatched).
    pub on_host: usize,
    /// Compiled circuits resident now.
    pub resident_circuits: usize,
    /// Their device bytes.
    pub circuit_bytes: usize,
}

/// A compiled circuit on the device; freed on drop.
struct DeviceCircuit {
    raw: *mut ffi::KCircuit,
    fingerprint: u128,
    bytes: usize,
}

// SAFETY: the handle is an opaque pointer only the kernels dereference; every kernel call on a
// device holds that device's lock, so sharing it across threads is sound.
unsafe impl Send for DeviceCircuit {}
// SAFETY: as above; no method mutates it through a shared reference.
unsafe impl Sync for DeviceCircuit {}

impl Drop for DeviceCircuit {
    fn drop(&mut self) {
        // SAFETY: a live handle from cuzk_k_circuit_begin, freed once (here).
        let r = unsafe { ffi::cuzk_k_circuit_free(self.raw) };
        if let Err(e) = check("cuzk_k_circuit_free", r) {
            log::warn!("compiled circuit not freed from the device: {e}");
        }
    }
}

/// Words a piece of a matrix carries to the device (64 MiB).
const PIECE_WORDS: usize = 1 << 24;

/// Copies `data` into part `part` of the circuit being uploaded, at element `at`.
fn put<T>(raw: *mut ffi::KCircuit, part: i32, at: usize, data: &[T]) -> Result<()> {
    let size = std::mem::size_of::<T>();
    // SAFETY: `raw` is a live, unfinished handle from cuzk_k_circuit_begin; `data` is a live
    // slice of `data.len() * size` bytes, copied before the call returns (the kernels check the
    // range against the part).
    let r = unsafe {
        ffi::cuzk_k_circuit_put(
            raw,
            part,
            at * size,
            data.as_ptr().cast::<c_void>(),
            std::mem::size_of_val(data),
        )
    };
    check("cuzk_k_circuit_put", r)
}

/// `c` packed ([`crate::compiled::packed`]: about half its CSR bytes) and uploaded a piece at a
/// time: the host holds one matrix's index and 64 MiB of words at once, never the packed form
/// whole (4.3 GiB for the real PoRep partition, which pushed a stream's peak RSS up by as much).
///
/// # Errors
/// [`Error::Unsupported`] when `c` does not pack (its a, b, c are then evaluated on the host);
/// device errors (out of memory among them).
fn upload(device: i32, c: &CompiledCircuit) -> Result<DeviceCircuit> {
    upload_in_pieces(device, c, PIECE_WORDS)
}

/// [`upload`] with pieces of at most `piece_words` words (whole groups: a group larger than
/// that goes alone).
fn upload_in_pieces(device: i32, c: &CompiledCircuit, piece_words: usize) -> Result<DeviceCircuit> {
    let start = Instant::now();
    let columns = c.num_inputs() + c.num_aux();
    if columns > MAX_COLUMNS {
        return Err(Error::Unsupported(format!(
            "compiled circuit {} has {columns} columns: a packed one names at most {MAX_COLUMNS}",
            c.circuit_type()
        )));
    }
    let matrices = [c.a(), c.b(), c.c()];
    let sizes = ffi::KCircuitSizes {
        rows: c.num_constraints(),
        num_inputs: c.num_inputs(),
        num_aux: c.num_aux(),
        num_constants: c.constants().len(),
        num_words: matrices.map(PackedIndex::count_words),
    };
    let mut raw = std::ptr::null_mut();
    // SAFETY: `sizes` is a valid struct, `raw` a valid out-pointer.
    let r = unsafe { ffi::cuzk_k_circuit_begin(device, &sizes, &mut raw) };
    check("cuzk_k_circuit_begin", r)?;
    // SAFETY: `raw` is the live handle begin returned.
    let bytes = unsafe { ffi::cuzk_k_circuit_bytes(raw) };
    // Freed on drop from here, on every error path.
    let dc = DeviceCircuit {
        raw,
        fingerprint: c.fingerprint(),
        bytes,
    };
    put(raw, ffi::CIRCUIT_PART_CONSTANTS, 0, c.constants())?;
    let mut piece: Vec<u32> = Vec::new();
    for (k, m) in matrices.into_iter().enumerate() {
        let index = PackedIndex::of(m, columns).map_err(|e| match e {
            Error::Unsupported(why) => {
                Error::Unsupported(format!("compiled circuit {} does not pack: {why}", c.circuit_type()))
            }
            e => e,
        })?;
        put(raw, ffi::circuit_part_lens(k), 0, index.lens())?;
        put(raw, ffi::circuit_part_group_starts(k), 0, index.group_starts())?;
        // Pieces of whole groups, each at most PIECE_WORDS words (a group holds at most 32 ×
        // 65,535).
        let (groups, mut g0) = (index.groups(), 0);
        while g0 < groups {
            let mut g1 = g0 + 1;
            while g1 < groups && index.span(g0, g1 + 1) <= piece_words {
                g1 += 1;
            }
            let n = index.span(g0, g1);
            if piece.len() < n {
                piece
                    .try_reserve_exact(n - piece.len())
                    .map_err(|e| crate::pool::heap_error(n, 4, &e))?;
                piece.resize(n, 0);
            }
            index.fill(m, g0, g1, &mut piece[..n]);
            put(
                raw,
                ffi::circuit_part_words(k),
                index.group_starts()[g0] as usize,
                &piece[..n],
            )?;
            g0 = g1;
        }
    }
    // SAFETY: `raw` is live and every part has been written.
    let r = unsafe { ffi::cuzk_k_circuit_finish(raw) };
    check("cuzk_k_circuit_finish", r)?;
    log::debug!(
        "compiled circuit {} on GPU {device}: {} MiB packed (CSR {} MiB) in {:.2?}",
        c.circuit_type(),
        bytes >> 20,
        c.byte_size() >> 20,
        start.elapsed()
    );
    Ok(dc)
}

/// a, b, c of `witness` (checked against `circuit`) evaluated on the device from `dc`, with the
/// kernel's result (the caller checks it).
fn evaluate_on(
    dc: &DeviceCircuit,
    circuit: &CompiledCircuit,
    witness: &Witness,
) -> Result<(crate::compiled::Abc, ffi::KResult)> {
    let rows = circuit.num_constraints();
    let (mut a, mut b, mut c) = (zeroed(rows)?, zeroed(rows)?, zeroed(rows)?);
    let kw = k_witness(witness);
    // SAFETY: `dc` is live; `kw` borrows `witness`'s buffers with their lengths; a, b, c hold
    // `rows` scalars each (blst_fr layout), written before the call returns; aux_out is null.
    let r = unsafe {
        ffi::cuzk_k_circuit_evaluate(
            dc.raw,
            &kw,
            a.as_mut_ptr().cast::<c_void>(),
            b.as_mut_ptr().cast::<c_void>(),
            c.as_mut_ptr().cast::<c_void>(),
            std::ptr::null_mut(),
        )
    };
    Ok((crate::compiled::Abc { a, b, c }, r))
}

/// A witness kept on the device (the batched path); freed on drop.
struct DeviceWitness(*mut ffi::KDWitness);

impl Drop for DeviceWitness {
    fn drop(&mut self) {
        // SAFETY: a live handle from cuzk_k_dwitness_upload (or null), freed once (here).
        let r = unsafe { ffi::cuzk_k_dwitness_free(self.0) };
        if let Err(e) = check("cuzk_k_dwitness_free", r) {
            log::warn!("a witness not freed from the device: {e}");
        }
    }
}

fn zeroed(n: usize) -> Result<Vec<Scalar>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| crate::pool::heap_error(n, 32, &e))?;
    v.resize(n, Scalar::ZERO);
    Ok(v)
}

/// The witness as the kernels read it, borrowing its buffers.
fn k_witness(w: &Witness) -> ffi::KWitness {
    let inputs = w.inputs();
    let (bit_mask, bit_values, others_before, others, num_others) = match w.aux() {
        WitnessAux::Compact(c) => (
            c.bit_mask().as_ptr(),
            c.bit_values().as_ptr(),
            c.others_before().as_ptr(),
            c.others().as_ptr(),
            c.others().len(),
        ),
        WitnessAux::Dense(v) => (
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            v.as_slice().as_ptr(),
            v.len(),
        ),
    };
    ffi::KWitness {
        inputs: inputs.as_ptr().cast::<c_void>(),
        num_inputs: inputs.len(),
        num_aux: w.num_aux(),
        bit_mask,
        bit_values,
        others_before,
        others: others.cast::<c_void>(),
        num_others,
    }
}

/// The backend's resident circuits (most recently used last) and its counters.
pub(super) struct DeviceCircuits {
    health: Arc<Health>,
    list: Mutex<Vec<Arc<DeviceCircuit>>>,
    /// Fingerprints of circuits that did not fit (warned once each).
    refused: Mutex<Vec<u128>>,
    on_device: AtomicUsize,
    on_host: AtomicUsize,
    /// The most witnesses [`Self::commitments_many`] is handed at once: lowered each time a
    /// batch does not fit in the device's memory.
    batch_cap: AtomicUsize,
}

impl DeviceCircuits {
    /// No circuit resident yet on `health`'s device.
    pub(super) fn new(health: Arc<Health>) -> Self {
        Self {
            health,
            list: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            on_device: AtomicUsize::new(0),
            on_host: AtomicUsize::new(0),
            batch_cap: AtomicUsize::new(usize::MAX),
        }
    }

    /// The most witnesses to prove together on this device now (see
    /// [`Self::commitments_many`]).
    pub(super) fn batch_cap(&self) -> usize {
        self.batch_cap.load(Ordering::Acquire)
    }

    /// `k` witnesses together did not fit (`e`): at most half as many from now on.
    pub(super) fn lower_batch_cap(&self, k: usize, e: &Error) {
        let cap = (k / 2).max(1);
        self.batch_cap.fetch_min(cap, Ordering::AcqRel);
        log::warn!(
            "GPU {}: {k} witnesses proved together do not fit ({e}); at most {cap} at a time from now on",
            self.health.device()
        );
    }

    /// Drops every resident circuit (proofs in flight keep theirs until they finish).
    pub(super) fn clear(&self) {
        self.list.lock().clear();
        self.refused.lock().clear();
    }

    /// How this backend's witness proofs were evaluated, and the circuits it keeps.
    pub(super) fn evaluations(&self) -> WitnessEvaluations {
        let list = self.list.lock();
        WitnessEvaluations {
            on_device: self.on_device.load(Ordering::Acquire),
            on_host: self.on_host.load(Ordering::Acquire),
            resident_circuits: list.len(),
            circuit_bytes: list.iter().map(|c| c.bytes).sum(),
        }
    }

    /// Whether `c` is resident on this device now.
    fn has_circuit(&self, c: &CompiledCircuit) -> bool {
        let fp = c.fingerprint();
        self.list.lock().iter().any(|d| d.fingerprint == fp)
    }

    /// Whether `c`'s a, b, c are expected to be evaluated on this device: it is resident, or it
    /// was not refused and takes at most half the device limit (its first proof uploads it,
    /// evicting idle parameters if needed). A guess until that upload: a circuit refused then
    /// is evaluated on the host from then on, its pool checkouts waiting for room if the
    /// partitions reserved before did not count them.
    pub(super) fn expects_circuit(&self, residency: &Residency, c: &CompiledCircuit) -> bool {
        if self.has_circuit(c) {
            return true;
        }
        !self.refused.lock().contains(&c.fingerprint()) && c.byte_size() <= residency.memory_limit() / 2
    }

    /// `c` did not fit beside a proof (`e`): its resident copy is dropped (freed once no proof
    /// holds it) and it is refused on this device until `release_device_memory`.
    fn give_up_circuit(&self, residency: &Residency, c: &CompiledCircuit, e: &Error) {
        let fp = c.fingerprint();
        // Its device bytes (packed), or the host's CSR bytes when it is not resident.
        let bytes = self
            .list
            .lock()
            .iter()
            .find(|d| d.fingerprint == fp)
            .map_or(c.byte_size(), |d| d.bytes);
        log::warn!(
            "GPU {}: compiled circuit {} ({} MiB on the device) does not fit beside a proof's device vectors under the device limit ({} MiB): {e}; dropped from the device, its a, b, c are evaluated on the host",
            self.health.device(),
            c.circuit_type(),
            bytes >> 20,
            residency.memory_limit() >> 20
        );
        self.list.lock().retain(|d| d.fingerprint != fp);
        let mut refused = self.refused.lock();
        if !refused.contains(&fp) {
            refused.push(fp);
        }
    }

    /// The resident copy of `c`, uploading it if needed; `None` when it does not fit.
    fn device_circuit(
        &self,
        residency: &Residency,
        c: &CompiledCircuit,
        keep: Option<u64>,
    ) -> Result<Option<Arc<DeviceCircuit>>> {
        let fp = c.fingerprint();
        {
            let mut list = self.list.lock();
            if let Some(i) = list.iter().position(|d| d.fingerprint == fp) {
                let d = list.remove(i);
                list.push(d.clone());
                return Ok(Some(d));
            }
        }
        if self.refused.lock().contains(&fp) {
            return Ok(None);
        }
        match residency.with_oom_retry(keep, || upload(self.health.device(), c)) {
            Ok(d) => {
                log::info!(
                    "GPU {}: compiled circuit {} resident ({} MiB)",
                    self.health.device(),
                    c.circuit_type(),
                    d.bytes >> 20
                );
                let d = Arc::new(d);
                self.list.lock().push(d.clone());
                Ok(Some(d))
            }
            Err(Error::Unsupported(why)) => {
                log::warn!(
                    "GPU {}: {why}; its a, b, c are evaluated on the host",
                    self.health.device()
                );
                self.refused.lock().push(fp);
                Ok(None)
            }
            Err(e) if is_out_of_memory(&e) => {
                log::warn!(
                    "GPU {}: compiled circuit {} ({} MiB on the host) does not fit beside the parameters under the device limit ({} MiB): its a, b, c are evaluated on the host",
                    self.health.device(),
                    c.circuit_type(),
                    c.byte_size() >> 20,
                    residency.memory_limit() >> 20
                );
                self.refused.lock().push(fp);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// a, b, c and the expanded aux of `witness`, evaluated on the device and copied back (for
    /// tests and benchmarks: the proving path never copies them out).
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] for a witness of another circuit; device failures.
    pub(super) fn evaluate(
        &self,
        residency: &Residency,
        circuit: &CompiledCircuit,
        witness: &Witness,
    ) -> Result<crate::compiled::Abc> {
        circuit.check(witness)?;
        let Some(dc) = self.device_circuit(residency, circuit, None)? else {
            return Err(Error::Unsupported(format!(
                "compiled circuit {} does not fit on GPU {} under its memory limit",
                circuit.circuit_type(),
                self.health.device()
            )));
        };
        let (abc, r) = evaluate_on(&dc, circuit, witness)?;
        self.health.check("cuzk_k_circuit_evaluate", r)?;
        Ok(abc)
    }

    /// [`Backend::witness_commitments_many`](crate::prover::Backend::witness_commitments_many)
    /// over **streamed** parameters: the witnesses on the device, H and its MSM for each, then
    /// each aux MSM once for all of them (`cuzk_k_msm_aux_many`: every streamed chunk of L, A,
    /// B bases crosses PCIe once for the lot instead of once a proof), the input MSMs per
    /// witness. `None` where it does not apply (fewer than two witnesses, resident
    /// parameters, a circuit not on the device, unbatched MSMs): the caller proves them one
    /// by one; out of device memory, the caller tries fewer ([`Self::batch_cap`]). `cut` is
    /// asked after each witness's H: when it says so, only the witnesses whose H is done are
    /// proved (the returned commitments are theirs). The caller has checked that the device
    /// is not lost.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn commitments_many(
        &self,
        residency: &Residency,
        batch: &BatchRunner,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        t: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<Commitments>>> {
        let k = witnesses.len();
        if k < 2 || params.domain_size() < 2 || !batch.is_batched() {
            return Ok(None);
        }
        for w in witnesses {
            circuit.check(w)?;
        }
        let keep = Some(params.id());
        let dev = residency.resident(params)?;
        if !dev.is_streamed() {
            return Ok(None);
        }
        residency.clear_for_streamed_proof(&dev, params.id());
        let Some(dc) = self.device_circuit(residency, circuit, keep)? else {
            return Ok(None);
        };
        self.many_on(&dev, &dc, circuit, witnesses, params, (batch, residency), t, cut)
            .map(Some)
    }

    #[allow(clippy::too_many_arguments)]
    fn many_on(
        &self,
        dev: &super::residency::Resident,
        dc: &DeviceCircuit,
        circuit: &CompiledCircuit,
        witnesses: &[&Witness],
        params: &Parameters,
        (batch, residency): (&BatchRunner, &Residency),
        t: &mut Timings,
        cut: &dyn Fn() -> bool,
    ) -> Result<Vec<Commitments>> {
        let (k, keep) = (witnesses.len(), Some(params.id()));
        let start = Instant::now();
        let mut dws = Vec::with_capacity(k);
        for w in witnesses {
            let kw = k_witness(w);
            let mut raw = std::ptr::null_mut();
            // SAFETY: `dc` is live; `kw` borrows the witness's buffers with their lengths (read
            // before the call returns); `raw` is a valid out-pointer.
            let r = unsafe { ffi::cuzk_k_dwitness_upload(dc.raw, &kw, &mut raw) };
            self.health.check("cuzk_k_dwitness_upload", r)?;
            dws.push(DeviceWitness(raw));
        }
        let log_m = params.domain_size().trailing_zeros();
        let mut hs = Vec::with_capacity(k);
        for dw in &dws {
            if !hs.is_empty() && cut() {
                break;
            }
            let mut h = G1Projective::identity();
            let ret: &mut blst::blst_p1 = h.as_mut();
            // SAFETY: the H bases hold m − 1 points (the domain matches the parameters); `dc`
            // and `dw` are live on this device; `ret` is a blst_p1; no h_out.
            let r = unsafe {
                ffi::cuzk_k_compute_h_msm_dwitness(
                    dev.h().raw,
                    dc.raw,
                    dw.0,
                    log_m,
                    std::ptr::null_mut(),
                    (ret as *mut blst::blst_p1).cast::<c_void>(),
                )
            };
            self.health.check("cuzk_k_compute_h_msm_dwitness", r)?;
            hs.push(h);
        }
        t.h += start.elapsed();
        // Cut: the witnesses whose H is done are proved, the others' device copies go back.
        let k = hs.len();
        dws.truncate(k);
        let witnesses = &witnesses[..k];
        let d = Densities {
            a_aux: circuit.a_aux_density(),
            b_inputs: circuit.b_input_density(),
            b_aux: circuit.b_aux_density(),
        };
        let num_inputs = circuit.num_inputs();
        // The input MSMs, per witness (small: the inputs are a few hundred scalars).
        let mut sums = Vec::with_capacity(k);
        for w in witnesses {
            let inputs = w.inputs();
            let jobs: Vec<JobSpec<'_>> = PROOF_MSMS
                .iter()
                .filter(|m| matches!(m.scalars, Scalars::Inputs))
                .map(|msm| JobSpec {
                    msm,
                    offset: d.offset(msm.offset, inputs.len()),
                    scalars: inputs.as_ptr().cast::<c_void>(),
                    n: inputs.len(),
                    density: d.of(msm.density),
                })
                .collect();
            // SAFETY: the jobs read `inputs` (live, exact length); nothing is staged.
            sums.push(unsafe { batch.run_batch(residency, dev, keep, &jobs, &Staged(std::ptr::null_mut()), t)? });
        }
        // The aux MSMs, each once for all the witnesses.
        let start = Instant::now();
        let handles: Vec<*const ffi::KDWitness> = dws.iter().map(|d| d.0.cast_const()).collect();
        for msm in PROOF_MSMS.iter().filter(|m| matches!(m.scalars, Scalars::Aux)) {
            let offset = d.offset(msm.offset, num_inputs);
            let density = d.of(msm.density).map_or(std::ptr::null(), |x| x.words().as_ptr());
            let bases = dev.query(msm.query).raw;
            if msm.query.is_g2() {
                let mut outs = vec![G2Projective::identity(); k];
                let ptrs: Vec<*mut c_void> = outs.iter_mut().map(G2::jacobian_out).collect();
                // SAFETY: live bases, density words covering the aux (or null), k live device
                // witnesses of this circuit, k blst_p2 outputs; all borrowed until it returns.
                let r = unsafe { ffi::cuzk_k_msm_aux_many(bases, offset, density, handles.as_ptr(), k, ptrs.as_ptr()) };
                self.health.check("cuzk_k_msm_aux_many", r)?;
                for (s, p) in sums.iter_mut().zip(outs) {
                    s.add_g2(p);
                }
            } else {
                let mut outs = vec![G1Projective::identity(); k];
                let ptrs: Vec<*mut c_void> = outs.iter_mut().map(G1::jacobian_out).collect();
                // SAFETY: as above, with k blst_p1 outputs.
                let r = unsafe { ffi::cuzk_k_msm_aux_many(bases, offset, density, handles.as_ptr(), k, ptrs.as_ptr()) };
                self.health.check("cuzk_k_msm_aux_many", r)?;
                for (s, p) in sums.iter_mut().zip(outs) {
                    s.add_g1(msm.query, p);
                }
            }
        }
        t.msm_batch += start.elapsed();
        self.on_device.fetch_add(k, Ordering::AcqRel);
        Ok(hs
            .into_iter()
            .zip(sums)
            .map(|(h, Sums { l, a, b_g1, b_g2 })| Commitments { h, l, a, b_g1, b_g2 })
            .collect())
    }

    /// [`Backend::witness_commitments`](crate::prover::Backend::witness_commitments) on this
    /// device (see the module docs), over `residency`'s copy of `params`, its MSMs run by
    /// `batch`. `None` (counted in [`WitnessEvaluations::on_host`]): the caller evaluates a,
    /// b, c on the host and proves that assignment instead. The caller has checked that the
    /// device is not lost.
    pub(super) fn commitments(
        &self,
        residency: &Residency,
        batch: &BatchRunner,
        circuit: &CompiledCircuit,
        witness: &Witness,
        params: &Parameters,
        t: &mut Timings,
    ) -> Result<Option<Commitments>> {
        let keep = Some(params.id());
        let on_host = || {
            self.on_host.fetch_add(1, Ordering::AcqRel);
            Ok(None)
        };
        if params.domain_size() < 2 || !batch.is_batched() {
            return on_host();
        }
        let dev = residency.resident(params)?;
        residency.clear_for_streamed_proof(&dev, params.id());
        let Some(dc) = self.device_circuit(residency, circuit, keep)? else {
            return on_host();
        };
        let start = Instant::now();
        let log_m = params.domain_size().trailing_zeros();
        let kw = k_witness(witness);
        // The batch names the device-only aux vector by this pointer (never read as memory).
        let aux_key = (witness as *const Witness).cast::<c_void>();
        let num_aux = witness.num_aux();
        let next_job = first_job(&dev, aux_key, num_aux);
        let mut h = G1Projective::identity();
        let mut staged = Staged(std::ptr::null_mut());
        let fitted = residency.with_oom_retry(keep, || {
            let ret: &mut blst::blst_p1 = h.as_mut();
            let mut raw = std::ptr::null_mut();
            // SAFETY: the H bases hold m − 1 points (check_compiled: the domain matches the
            // parameters); `dc` is this device's live circuit of `witness`'s structure
            // (checked by the caller); `kw` borrows the witness's buffers with their lengths;
            // `ret` is a blst_p1; next_job describes the L bases (live for `dev`'s lifetime)
            // over the vector named aux_key; `raw` is a valid out-pointer. The call waits for
            // its copies on every path.
            let r = unsafe {
                ffi::cuzk_k_compute_h_msm_witness(
                    dev.h().raw,
                    dc.raw,
                    &kw,
                    log_m,
                    std::ptr::null_mut(),
                    (ret as *mut blst::blst_p1).cast::<c_void>(),
                    aux_key,
                    if num_aux > 0 { &next_job } else { std::ptr::null() },
                    &mut raw,
                )
            };
            staged = Staged(raw);
            check("cuzk_k_compute_h_msm_witness", r)
        });
        match fitted {
            Err(e) if is_out_of_memory(&e) => {
                // The circuit fits, but not beside the proof's device vectors (two of a, b,
                // c, the NTT tables, streamed bases' chunks; a 2^27 partition under 16 GiB
                // before the one twiddle table):
                // it leaves the device, is refused there from now on, and this proof and the
                // next evaluate a, b, c on the host.
                drop(dc);
                self.give_up_circuit(residency, circuit, &e);
                return on_host();
            }
            other => other?,
        }
        t.h += start.elapsed();
        if staged.0.is_null() {
            return Err(Error::Cuda {
                call: "cuzk_k_compute_h_msm_witness",
                code: -7,
                message: "the call kept no staged aux vector".into(),
            });
        }
        let d = Densities {
            a_aux: circuit.a_aux_density(),
            b_inputs: circuit.b_input_density(),
            b_aux: circuit.b_aux_density(),
        };
        let inputs = witness.inputs();
        let jobs: Vec<JobSpec<'_>> = PROOF_MSMS
            .iter()
            .map(|msm| {
                let (scalars, n) = match msm.scalars {
                    Scalars::Inputs => (inputs.as_ptr().cast::<c_void>(), inputs.len()),
                    Scalars::Aux => (aux_key, num_aux),
                };
                JobSpec {
                    msm,
                    offset: d.offset(msm.offset, inputs.len()),
                    scalars,
                    n,
                    density: d.of(msm.density),
                }
            })
            .collect();
        // SAFETY: the input jobs read `inputs` (live, exact length); the aux jobs name the
        // staged device-only vector with its length (num_aux), which `staged` holds.
        let Sums { l, a, b_g1, b_g2 } = unsafe { batch.run_batch(residency, &dev, keep, &jobs, &staged, t)? };
        self.on_device.fetch_add(1, Ordering::AcqRel);
        Ok(Some(Commitments { h, l, a, b_g1, b_g2 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiled::WitnessCs;
    use crate::testing::Synthetic;

    /// A circuit sent in pieces of a few words (hundreds of puts a matrix, pieces ending at
    /// group boundaries) evaluates on the device as the host does, element for element; and
    /// in one piece the same. GPU machine only (the `cuda` build's unit tests).
    #[test]
    fn a_circuit_sent_in_small_pieces_evaluates_as_the_host() {
        let circuit = Synthetic {
            bit_percent: 90,
            ..Synthetic::new(12)
        };
        let (_, compiled) = CompiledCircuit::record(circuit.clone(), None, None).unwrap();
        let witness = WitnessCs::new().synthesize(circuit).unwrap();
        let host = compiled.evaluate(&witness).unwrap();
        for piece_words in [100, PIECE_WORDS] {
            let dc = upload_in_pieces(0, &compiled, piece_words).unwrap();
            let (device, r) = evaluate_on(&dc, &compiled, &witness).unwrap();
            assert_eq!(r.code, 0, "pieces of {piece_words} words: kernel code {}", r.code);
            assert!(
                device == host,
                "pieces of {piece_words} words: a, b, c differ from the host's"
            );
        }
    }
}
