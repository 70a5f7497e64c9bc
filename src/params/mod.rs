//! Groth16 parameters (the SRS) in bellperson's file format, with the verifying key.
//!
//! The layout, as bellperson's `Parameters::write` produces it (points uncompressed, 96 bytes
//! for G1 and 192 for G2; lengths big-endian u32):
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2  u32 n_ic  ic[n_ic]
//!       u32 n_h h[n_h]  u32 n_l l[n_l]  u32 n_a a[n_a]  u32 n_b_g1 b_g1[..]  u32 n_b_g2 b_g2[..]
//! ```
//!
//! [`Parameters::load`] maps the file and decodes every section in parallel straight into its
//! final vector; nothing is read twice or copied in between.

mod dev;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use crate::error::{Error, Result};

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

/// How thoroughly to check points when loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointCheck {
    /// On the curve and not at infinity (what bellperson's unchecked read guarantees).
    #[default]
    OnCurve,
    /// Also in the prime-order subgroup (slow: a scalar multiplication per point).
    Subgroup,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: impl FnOnce() -> String) -> Result<&'a [u8]> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(Error::ParamsTruncated {
                expected: format!("{} ({n} bytes) at offset {}", what(), self.pos),
                found: format!("{left} bytes"),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<usize> {
        let b = self.take(4, || format!("the length of {what}"))?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn g1(&mut self, what: &str, check: PointCheck) -> Result<G1Affine> {
        let b = self.take(G1_BYTES, || format!("{what} (a G1 point)"))?;
        decode_g1(b, check).map_err(|e| Error::ParamsCorrupt(format!("{what}: {e}")))
    }

    fn g2(&mut self, what: &str, check: PointCheck) -> Result<G2Affine> {
        let b = self.take(G2_BYTES, || format!("{what} (a G2 point)"))?;
        decode_g2(b, check).map_err(|e| Error::ParamsCorrupt(format!("{what}: {e}")))
    }

    fn g1_section(&mut self, name: &str, check: PointCheck, reject_identity: bool) -> Result<Vec<G1Affine>> {
        let n = self.u32(name)?;
        let start = self.pos;
        let bytes = self.take(n.saturating_mul(G1_BYTES), || format!("{n} {name} points"))?;
        decode_section(bytes, G1_BYTES, |b| decode_g1(b, check), reject_identity)
            .map_err(|e| e.into_error(name, start, G1_BYTES))
    }

    fn g2_section(&mut self, name: &str, check: PointCheck) -> Result<Vec<G2Affine>> {
        let n = self.u32(name)?;
        let start = self.pos;
        let bytes = self.take(n.saturating_mul(G2_BYTES), || format!("{n} {name} points"))?;
        decode_section(bytes, G2_BYTES, |b| decode_g2(b, check), true).map_err(|e| e.into_error(name, start, G2_BYTES))
    }
}

/// Why a section failed to decode.
enum SectionError {
    /// The index of the first bad point and what is wrong with it.
    Bad(usize, &'static str),
    /// No memory for the points: bytes asked for, and why not.
    NoMemory(usize, String),
}

impl SectionError {
    /// The crate error for section `name` starting at byte `start`, points of `size` bytes.
    fn into_error(self, name: &str, start: usize, size: usize) -> Error {
        match self {
            Self::Bad(i, e) => Error::ParamsCorrupt(format!("{name} point {i} (offset {}): {e}", start + i * size)),
            Self::NoMemory(bytes, reason) => Error::Allocation {
                bytes,
                backend: "global-heap",
                reason: format!("{name} section: {reason}"),
            },
        }
    }
}

/// Decodes `bytes.len() / size` points in parallel into one vector reserved up front, so
/// memory is bounded by the bytes present (never by a length field) and running out of it is
/// an error, not an abort. The error names the first bad point.
fn decode_section<P: PrimeCurveAffine + Send>(
    bytes: &[u8],
    size: usize,
    decode: impl Fn(&[u8]) -> std::result::Result<P, &'static str> + Sync,
    reject_identity: bool,
) -> std::result::Result<Vec<P>, SectionError> {
    let n = bytes.len() / size;
    let mut out: Vec<P> = Vec::new();
    out.try_reserve_exact(n).map_err(|e| {
        let bytes = n.saturating_mul(std::mem::size_of::<P>());
        SectionError::NoMemory(bytes, format!("{n} points: {e}"))
    })?;
    let first_bad = parking_lot::Mutex::new(None::<(usize, &'static str)>);
    let note = |i: usize, e: &'static str| {
        let mut bad = first_bad.lock();
        match *bad {
            Some((j, _)) if j <= i => {}
            _ => *bad = Some((i, e)),
        }
    };
    // `par_extend` of an indexed iterator writes into the reserved room without reallocating.
    out.par_extend(
        bytes
            .par_chunks_exact(size)
            .with_min_len(1024)
            .enumerate()
            .map(|(i, b)| match decode(b) {
                Ok(p) if reject_identity && bool::from(p.is_identity()) => {
                    note(i, "point at infinity");
                    p
                }
                Ok(p) => p,
                Err(e) => {
                    note(i, e);
                    P::identity()
                }
            }),
    );
    match first_bad.into_inner() {
        Some((i, e)) => Err(SectionError::Bad(i, e)),
        None => Ok(out),
    }
}

/// Decodes one uncompressed point (G1 or G2), checked as asked.
fn decode_point<P: UncompressedEncoding>(b: &[u8], check: PointCheck) -> std::result::Result<P, &'static str> {
    let mut repr = P::Uncompressed::default();
    if repr.as_ref().len() != b.len() {
        return Err("wrong length");
    }
    repr.as_mut().copy_from_slice(b);
    let p = match check {
        PointCheck::OnCurve => P::from_uncompressed_unchecked(&repr),
        PointCheck::Subgroup => P::from_uncompressed(&repr),
    };
    Option::from(p).ok_or(match check {
        PointCheck::OnCurve => "not a point on the curve",
        PointCheck::Subgroup => "not a point of the prime-order subgroup",
    })
}

fn decode_g1(b: &[u8], check: PointCheck) -> std::result::Result<G1Affine, &'static str> {
    decode_point(b, check)
}

fn decode_g2(b: &[u8], check: PointCheck) -> std::result::Result<G2Affine, &'static str> {
    decode_point(b, check)
}

impl VerifyingKey {
    fn decode(cur: &mut Cursor<'_>) -> Result<Self> {
        // The verifying key is small: always check it fully, as bellperson does.
        let full = PointCheck::Subgroup;
        let alpha_g1 = cur.g1("vk.alpha_g1", full)?;
        let beta_g1 = cur.g1("vk.beta_g1", full)?;
        let beta_g2 = cur.g2("vk.beta_g2", full)?;
        let gamma_g2 = cur.g2("vk.gamma_g2", full)?;
        let delta_g1 = cur.g1("vk.delta_g1", full)?;
        let delta_g2 = cur.g2("vk.delta_g2", full)?;
        let ic = cur.g1_section("vk.ic", full, true)?;
        Ok(Self {
            alpha_g1,
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
        })
    }

    /// Decodes a verifying key as bellperson's `VerifyingKey::write` writes it.
    ///
    /// # Errors
    /// [`Error::ParamsTruncated`] / [`Error::ParamsCorrupt`], saying where and what.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut cur = Cursor { bytes, pos: 0 };
        let vk = Self::decode(&mut cur)?;
        expect_end(&cur)?;
        Ok(vk)
    }

    /// Writes the verifying key in bellperson's format.
    ///
    /// # Errors
    /// Any I/O error of `w`.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(&self.alpha_g1.to_uncompressed())?;
        w.write_all(&self.beta_g1.to_uncompressed())?;
        w.write_all(&self.beta_g2.to_uncompressed())?;
        w.write_all(&self.gamma_g2.to_uncompressed())?;
        w.write_all(&self.delta_g1.to_uncompressed())?;
        w.write_all(&self.delta_g2.to_uncompressed())?;
        write_len(&mut w, self.ic.len())?;
        for p in &self.ic {
            w.write_all(&p.to_uncompressed())?;
        }
        Ok(())
    }
}

fn expect_end(cur: &Cursor<'_>) -> Result<()> {
    let left = cur.bytes.len() - cur.pos;
    if left != 0 {
        return Err(Error::ParamsCorrupt(format!(
            "{left} unexpected bytes after the last section (offset {})",
            cur.pos
        )));
    }
    Ok(())
}

fn write_len<W: Write>(w: &mut W, len: usize) -> std::io::Result<()> {
    let len = u32::try_from(len)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "section longer than u32::MAX"))?;
    w.write_all(&len.to_be_bytes())
}

impl Parameters {
    /// Loads a parameter file: maps it and decodes it in parallel.
    ///
    /// # Errors
    /// [`Error::ParamsIo`] when the file cannot be opened or mapped;
    /// [`Error::ParamsTruncated`] / [`Error::ParamsCorrupt`] for bad contents;
    /// [`Error::UnsafeParameters`] when δ is the point at infinity.
    pub fn load(path: impl AsRef<Path>, check: PointCheck) -> Result<Self> {
        let path = path.as_ref();
        let io_err = |source| Error::ParamsIo {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        if len == 0 {
            return Err(Error::ParamsTruncated {
                expected: "a verifying key at offset 0".into(),
                found: format!("an empty file {}", path.display()),
            });
        }
        // SAFETY: the mapping is read-only and private; the file is not written by this
        // process while mapped. (Another process truncating it underneath would fault, as
        // with any mmap-based reader; parameter files are immutable by convention.)
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        let start = std::time::Instant::now();
        let params = Self::from_bytes(&map, check)?;
        log::info!(
            "loaded parameters from {} ({len} bytes) in {:.2} s: {} constraints domain, {} inputs, {} aux",
            path.display(),
            start.elapsed().as_secs_f64(),
            params.h.len() + 1,
            params.vk.ic.len(),
            params.l.len()
        );
        Ok(params)
    }

    /// Decodes parameters from bytes in bellperson's format.
    ///
    /// # Errors
    /// [`Error::ParamsTruncated`] / [`Error::ParamsCorrupt`], saying where and what;
    /// [`Error::UnsafeParameters`] when δ is the point at infinity.
    pub fn from_bytes(bytes: &[u8], check: PointCheck) -> Result<Self> {
        let mut cur = Cursor { bytes, pos: 0 };
        let vk = VerifyingKey::decode(&mut cur)?;
        let h = cur.g1_section("H", check, true)?;
        let l = cur.g1_section("L", check, true)?;
        let a = cur.g1_section("A", check, true)?;
        let b_g1 = cur.g1_section("B_G1", check, true)?;
        let b_g2 = cur.g2_section("B_G2", check)?;
        expect_end(&cur)?;
        Self::new(vk, h, l, a, b_g1, b_g2)
    }

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

    /// Writes the parameters to the file at `path` (created or replaced) in bellperson's
    /// format, which [`Parameters::load`] and bellperson read back.
    ///
    /// # Errors
    /// [`Error::ParamsWrite`] naming the file when it cannot be created or written (a full
    /// disk, a directory, no permission).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |source| Error::ParamsWrite {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut w = std::io::BufWriter::new(file);
        self.write(&mut w).map_err(io)?;
        w.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)
    }

    /// Writes the parameters in bellperson's format.
    ///
    /// # Errors
    /// Any I/O error of `w`.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        if !self.host_copy {
            return Err(std::io::Error::other(
                "the parameters' host copy was released after their upload: nothing to write",
            ));
        }
        self.vk.write(&mut w)?;
        for section in [&self.h, &self.l, &self.a, &self.b_g1] {
            write_len(&mut w, section.len())?;
            for p in section.iter() {
                w.write_all(&p.to_uncompressed())?;
            }
        }
        write_len(&mut w, self.b_g2.len())?;
        for p in self.b_g2.iter() {
            w.write_all(&p.to_uncompressed())?;
        }
        Ok(())
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
