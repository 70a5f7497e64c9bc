//! Groth16 parameters (the SRS): the [`Parameters`] value — the verifying key and the five
//! query vectors, shared by clones, identified by a process-unique id, with or without their
//! host copy — and [`VerifyingKey`].
//!
//! - `file`: bellperson's file format, read ([`Parameters::load`], [`Parameters::from_bytes`])
//!   and written ([`Parameters::save`], [`Parameters::write`]); [`PointCheck`].
//! - `dev`: insecure development parameters for a circuit
//!   ([`Parameters::generate_insecure_for_development`]), and its shape recorder counting a
//!   circuit's size (`cuzk::testing::count_circuit`).

pub(crate) mod dev;
mod file;

use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

pub use self::file::PointCheck;
use crate::error::{Error, Result};

/// Bytes of an uncompressed point, in the file and on the device.
const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;

/// The Groth16 verifying key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// The input commitments, one per public input (the leading "one" included).
    pub ic: Vec<G1Affine>,
}

/// Groth16 proving parameters: the verifying key and the five query vectors.
///
/// Immutable once made, and identified by a process-unique id, so a device-resident copy
/// (CUDA backend) can never go stale. Cheap to clone: clones share the query vectors (tens of
/// GiB for a Filecoin partition) and the id.
///
/// After [`Prover::prepare_device_only`](crate::Prover::prepare_device_only) a set may have
/// no host copy of its query vectors ([`Parameters::has_host_copy`]): the accessors then
/// return empty slices, the lengths live on in [`Parameters::query_lengths`], and only the GPU
/// holding them can prove with it.
#[derive(Debug, Clone)]
pub struct Parameters {
    id: u64,
    vk: VerifyingKey,
    h: Arc<Vec<G1Affine>>,
    l: Arc<Vec<G1Affine>>,
    a: Arc<Vec<G1Affine>>,
    b_g1: Arc<Vec<G1Affine>>,
    b_g2: Arc<Vec<G2Affine>>,
    lens: QueryLengths,
    host_copy: bool,
}

/// Number of points in each query vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLengths {
    /// H: m − 1.
    pub h: usize,
    /// L: one per aux variable.
    pub l: usize,
    /// A: the inputs, then the aux variables A uses.
    pub a: usize,
    /// B in G1 (and in G2: the same selection).
    pub b: usize,
}

impl PartialEq for Parameters {
    fn eq(&self, other: &Self) -> bool {
        self.vk == other.vk
            && self.h == other.h
            && self.l == other.l
            && self.a == other.a
            && self.b_g1 == other.b_g1
            && self.b_g2 == other.b_g2
            && self.lens == other.lens
    }
}

impl Eq for Parameters {}

/// The query vectors of a [`Parameters`], shared with it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) struct SharedQueries {
    pub h: Arc<Vec<G1Affine>>,
    pub l: Arc<Vec<G1Affine>>,
    pub a: Arc<Vec<G1Affine>>,
    pub b_g1: Arc<Vec<G1Affine>>,
    pub b_g2: Arc<Vec<G2Affine>>,
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Parameters {
    /// Parameters from their parts (e.g. converted from another library's in-memory form).
    ///
    /// # Errors
    /// [`Error::ParamsCorrupt`] when the sections' lengths cannot belong together;
    /// [`Error::UnsafeParameters`] when δ (in G1 or G2) is the point at infinity.
    pub fn new(
        vk: VerifyingKey,
        h: Vec<G1Affine>,
        l: Vec<G1Affine>,
        a: Vec<G1Affine>,
        b_g1: Vec<G1Affine>,
        b_g2: Vec<G2Affine>,
    ) -> Result<Self> {
        let (h_len, l_len, a_len, b_g1_len) = (h.len(), l.len(), a.len(), b_g1.len());
        let params = Self {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            vk,
            h: Arc::new(h),
            l: Arc::new(l),
            a: Arc::new(a),
            lens: QueryLengths {
                h: h_len,
                l: l_len,
                a: a_len,
                b: b_g1_len,
            },
            host_copy: true,
            b_g1: Arc::new(b_g1),
            b_g2: Arc::new(b_g2),
        };
        params.check_shape()?;
        let vk = &params.vk;
        if bool::from(vk.delta_g1.is_identity()) || bool::from(vk.delta_g2.is_identity()) {
            // A subverted setup: with δ = 0 anyone can forge proofs for any statement. Refused
            // here, so no `Parameters` ever holds one and no proof is made with one.
            return Err(Error::UnsafeParameters(
                "delta is the point at infinity (a subverted setup: anyone could forge proofs)".into(),
            ));
        }
        Ok(params)
    }

    /// The process-unique id of these parameters (shared by clones).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey {
        &self.vk
    }

    /// H query: τ^i·Z(τ)/δ for i < m − 1 (m the evaluation domain size).
    pub fn h(&self) -> &[G1Affine] {
        &self.h
    }

    /// L query, one per aux variable.
    pub fn l(&self) -> &[G1Affine] {
        &self.l
    }

    /// A query: all inputs, then the aux variables that appear in A.
    pub fn a(&self) -> &[G1Affine] {
        &self.a
    }

    /// B query in G1: the inputs, then the aux variables, that appear in B.
    pub fn b_g1(&self) -> &[G1Affine] {
        &self.b_g1
    }

    /// B query in G2, same selection as `b_g1`.
    pub fn b_g2(&self) -> &[G2Affine] {
        &self.b_g2
    }

    /// The five query vectors, shared (for a backend that must keep them alive while it
    /// reads them without a borrow, e.g. streamed from host memory the GPU copies from).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn shared_queries(&self) -> SharedQueries {
        SharedQueries {
            h: self.h.clone(),
            l: self.l.clone(),
            a: self.a.clone(),
            b_g1: self.b_g1.clone(),
            b_g2: self.b_g2.clone(),
        }
    }

    /// Bytes the query vectors take as affine points (what device residency costs).
    pub fn device_bytes(&self) -> usize {
        let n = self.lens;
        (n.h + n.l + n.a + n.b) * G1_BYTES + n.b * G2_BYTES
    }

    /// Bytes the query vectors take in host memory: [`Parameters::device_bytes`] with a host
    /// copy, 0 without one.
    pub fn host_bytes(&self) -> usize {
        if self.host_copy {
            self.device_bytes()
        } else {
            0
        }
    }

    /// How many handles keep this set's host copy alive (clones of this `Parameters`, and
    /// backends streaming from it): 1 means dropping `self` frees the host copy.
    pub(crate) fn host_copy_holders(&self) -> usize {
        Arc::strong_count(&self.h)
    }

    /// Number of points in each query vector (also without a host copy).
    pub fn query_lengths(&self) -> QueryLengths {
        self.lens
    }

    /// Whether the query vectors are in host memory (false after
    /// [`Prover::prepare_device_only`](crate::Prover::prepare_device_only)).
    pub fn has_host_copy(&self) -> bool {
        self.host_copy
    }

    /// These parameters without their host copy: same id and verifying key, empty query
    /// vectors (the memory goes when no other clone holds it).
    pub(crate) fn without_host_copy(self) -> Self {
        Self {
            h: Arc::new(Vec::new()),
            l: Arc::new(Vec::new()),
            a: Arc::new(Vec::new()),
            b_g1: Arc::new(Vec::new()),
            b_g2: Arc::new(Vec::new()),
            host_copy: false,
            ..self
        }
    }

    /// An error naming what needed the released host copy.
    pub(crate) fn require_host_copy(&self, what: &str) -> Result<()> {
        if self.host_copy {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "{what} needs the parameters' query vectors in host memory, and these were released \
             after their upload (Prover::prepare_device_only): prove on the GPU that holds them, or load them again"
        )))
    }

    /// Public inputs the circuit has (the leading "one" included).
    pub fn num_inputs(&self) -> usize {
        self.vk.ic.len()
    }

    /// Aux (private) variables the circuit has.
    pub fn num_aux(&self) -> usize {
        self.lens.l
    }

    /// The evaluation domain size m (a power of two): `h.len() + 1`.
    pub fn domain_size(&self) -> usize {
        self.lens.h + 1
    }

    /// Checks what the format implies about the sections' lengths.
    fn check_shape(&self) -> Result<()> {
        let m = self.domain_size();
        if !m.is_power_of_two() {
            return Err(Error::ParamsCorrupt(format!(
                "H has {} points; expected 2^k − 1 for a domain of 2^k",
                self.h.len()
            )));
        }
        if m.trailing_zeros() > 32 {
            return Err(Error::ParamsCorrupt(format!(
                "domain of 2^{} exceeds the scalar field's 2^32 two-adicity",
                m.trailing_zeros()
            )));
        }
        if self.vk.ic.is_empty() {
            return Err(Error::ParamsCorrupt(
                "vk.ic is empty; expected ≥ 1 point (the one input)".into(),
            ));
        }
        if self.a.len() < self.num_inputs() {
            return Err(Error::ParamsCorrupt(format!(
                "A has {} points but there are {} inputs (each input is in A)",
                self.a.len(),
                self.num_inputs()
            )));
        }
        if self.b_g1.len() != self.b_g2.len() {
            return Err(Error::ParamsCorrupt(format!(
                "B_G1 has {} points but B_G2 has {}; expected the same selection",
                self.b_g1.len(),
                self.b_g2.len()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{random_parameters, Synthetic};
    use crate::{BackendChoice, Prover};
    use blstrs::Scalar;
    use ff::Field;

    #[test]
    fn without_the_host_copy_lengths_stay_and_host_uses_fail_clearly() {
        let circuit = Synthetic::new(8).with_seed(5);
        let params = random_parameters(circuit.clone(), 3).unwrap();
        let cpu = Prover::new().with_backend(BackendChoice::Cpu).unwrap();

        // The CPU keeps no device copy: a clear error, and the parameters are untouched.
        let err = cpu.prepare_device_only(&params).unwrap_err();
        assert!(err.to_string().contains("keeps no device copy"), "{err}");
        assert!(params.has_host_copy());
        let one = [Scalar::ONE];
        let proof = cpu
            .prove_with_randomness(vec![circuit.clone()], &params, &one, &one)
            .unwrap();

        let released = params.clone().without_host_copy();
        assert!(!released.has_host_copy());
        assert_eq!(released.id(), params.id());
        assert_eq!(released.query_lengths(), params.query_lengths());
        assert_eq!(released.domain_size(), params.domain_size());
        assert_eq!(released.device_bytes(), params.device_bytes());
        assert_eq!(params.host_bytes(), params.device_bytes());
        assert_eq!(released.host_bytes(), 0);
        assert_eq!(released.host_copy_holders(), 1, "a fresh empty copy");
        let holders = params.host_copy_holders();
        let clone = params.clone();
        assert_eq!(clone.host_copy_holders(), holders + 1);
        drop(clone);
        assert_eq!(released.num_aux(), params.num_aux());
        assert!(released.h().is_empty() && released.b_g2().is_empty());
        assert!(released.write(Vec::new()).is_err());
        let err = cpu
            .prove_with_randomness(vec![circuit.clone()], &released, &one, &one)
            .unwrap_err();
        assert!(err.to_string().contains("released"), "{err}");
        // The original still proves, to the same bytes.
        let again = cpu.prove_with_randomness(vec![circuit], &params, &one, &one).unwrap();
        assert_eq!(proof[0].to_bytes(), again[0].to_bytes());
    }
}
