//! Bellperson's parameter file format: decoding it (a file mapped, or bytes; every section
//! in parallel straight into its final vector, nothing read twice or copied in between) and
//! writing it, for [`Parameters`] and [`VerifyingKey`], with the point checks a load asks for.
//!
//! The layout, as bellperson's `Parameters::write` produces it (points uncompressed, 96 bytes
//! for G1 and 192 for G2; lengths big-endian u32):
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2  u32 n_ic  ic[n_ic]
//!       u32 n_h h[n_h]  u32 n_l l[n_l]  u32 n_a a[n_a]  u32 n_b_g1 b_g1[..]  u32 n_b_g2 b_g2[..]
//! ```

use std::io::Write;
use std::path::Path;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use super::{Parameters, VerifyingKey, G1_BYTES, G2_BYTES};
use crate::error::{Error, Result};

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
}
