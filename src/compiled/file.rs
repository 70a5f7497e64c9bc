//! The compiled-circuit file: versioned, checksummed, memory-mapped on load.
//!
//! Layout (all integers little-endian, every section starting at a multiple of 8 bytes):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `CUZKR1CS` |
//! | 8 | 4 | format version ([`FORMAT_VERSION`]) |
//! | 12 | 4 | reserved, 0 |
//! | 16 | 8 | file length in bytes |
//! | 24 | 16 | checksum: [`Hasher128`] over bytes 0..24, then 40..end |
//! | 40 | 88 | inputs, aux, circuit constraints, structure trace, constants, non-zeros of A, B, C, type-name length, fingerprint (low, high 64 bits) — one u64 each |
//! | 128 | | type name (UTF-8), constants (32-byte canonical little-endian each), then for A, B, C: row offsets (u32 × rows + 1), columns (u32 × non-zeros), coefficient codes (u32 × non-zeros); then the densities as u64 words: A over aux, B over inputs, B over aux |
//!
//! A file is written to a temporary name in the same directory (unique per process and per
//! save, so savers sharing a directory never write the same temporary file) and renamed into
//! place, so a reader never sees a half-written file. Loading reads the file into memory the
//! process owns (see below), then checks, in order: the magic, the version (another version is
//! *stale*: record again), the reserved field (zero), the length (a shorter file is
//! *truncated*), the checksum (*corrupt*), that the sections add up — every length with
//! overflow-checked arithmetic — and their padding is zero, that the matrices are well formed,
//! and that the stored fingerprint is the one the contents hash to. Every failure is an error
//! naming the file and what was wrong, never a panic.
//!
//! ## Why read, not map
//! A memory-mapped file truncated on disk after load raises SIGBUS at the next read of a page
//! past the new end, and one rewritten in place changes bytes after they were checked; no
//! mapping flag prevents either (a private mapping still reads unwritten pages from the file).
//! The loader reads the file once instead: it costs the same pass the checksum makes anyway
//! and a copy in memory, which the engine's budget already charges for every compiled circuit
//! it holds ([`CompiledCircuit::byte_size`]); what was checked is then what is used.
//!
//! ## What a crafted file can do
//! The checksum and the fingerprint are a public non-cryptographic hash: they detect
//! corruption, not intent. A crafted file is refused with an error when it is malformed, and
//! it cannot claim another circuit's fingerprint (the fingerprint is recomputed; the device
//! keeps resident matrices by it) without a deliberate hash collision. A well-formed file of
//! the right type and shape whose matrices are another circuit's gives proofs that do not
//! verify, as wrong parameters would: the directory is trusted as the parameter files are.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use blstrs::Scalar;
use ff::PrimeField;
use memmap2::Mmap;

use super::circuit::CompiledCircuit;
use crate::error::{Error, Result};
use crate::r1cs::hash::{Hasher128, Trace};
use crate::r1cs::matrix::Matrix;
use crate::r1cs::record::Recording;
use crate::r1cs::store::{words_le_bytes, Image, Store};
use crate::r1cs::DensityTracker;

/// The file's magic bytes.
pub const MAGIC: [u8; 8] = *b"CUZKR1CS";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

const CHECKSUM_AT: usize = 24;
const CHECKSUM_END: usize = 40;
const HEADER_WORDS: usize = 11;
const PAYLOAD_AT: usize = CHECKSUM_END + 8 * HEADER_WORDS;

/// `n` rounded up to a multiple of 8; `None` past `usize::MAX`.
fn pad8(n: usize) -> Option<usize> {
    n.checked_next_multiple_of(8)
}

/// Saves so far in this process: the temporary name's last part.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// The checksum of a whole file image (its checksum field excluded).
fn checksum(bytes: &[u8]) -> u128 {
    let mut h = Hasher128::new();
    h.bytes(&bytes[..CHECKSUM_AT]);
    h.bytes_parallel(&bytes[CHECKSUM_END..]);
    h.finish()
}

/// Writes a file image's length and checksum fields as a writer does, whatever the rest holds
/// (for tests and fuzzing: crafted files pass the checksum, as they can). Images shorter than
/// the checksum's end are left as they are.
#[doc(hidden)]
pub fn seal(bytes: &mut [u8]) {
    if bytes.len() < CHECKSUM_END {
        return;
    }
    let len = bytes.len() as u64;
    bytes[16..24].copy_from_slice(&len.to_le_bytes());
    let sum = checksum(bytes);
    bytes[CHECKSUM_AT..CHECKSUM_END].copy_from_slice(&sum.to_le_bytes());
}

impl CompiledCircuit {
    /// Writes the circuit to `path` (through a temporary file in the same directory, renamed
    /// into place).
    ///
    /// # Errors
    /// [`Error::CompiledIo`] naming the file when it cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |source| Error::CompiledIo {
            path: path.to_path_buf(),
            source,
        };
        let save = SAVES.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp.{}.{save}", std::process::id()));
        let written = self.write_to(&tmp).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        Ok(())
    }

    fn write_to(&self, tmp: &Path) -> std::io::Result<()> {
        let mut f = BufWriter::new(File::create(tmp)?);
        let name = self.circuit_type.as_bytes();
        let mut pos = 0usize;
        let mut put = |f: &mut BufWriter<File>, bytes: &[u8]| -> std::io::Result<()> {
            f.write_all(bytes)?;
            // A slice in memory is far below usize::MAX: its padding is 0..8.
            let padding = bytes.len().next_multiple_of(8) - bytes.len();
            f.write_all(&[0u8; 8][..padding])?;
            pos += bytes.len() + padding;
            Ok(())
        };
        let mut head = Vec::with_capacity(PAYLOAD_AT);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&0u64.to_le_bytes()); // length, written below
        head.extend_from_slice(&[0u8; 16]); // checksum, written below
        let fields = [
            self.r1cs.num_inputs as u64,
            self.r1cs.num_aux as u64,
            self.r1cs.circuit_constraints as u64,
            self.r1cs.trace.value(),
            self.r1cs.constants.len() as u64,
            self.a().non_zeros() as u64,
            self.b().non_zeros() as u64,
            self.c().non_zeros() as u64,
            name.len() as u64,
            self.fingerprint as u64,
            (self.fingerprint >> 64) as u64,
        ];
        for w in fields {
            head.extend_from_slice(&w.to_le_bytes());
        }
        put(&mut f, &head)?;
        put(&mut f, name)?;
        let mut consts = Vec::with_capacity(32 * self.r1cs.constants.len());
        for c in &self.r1cs.constants {
            consts.extend_from_slice(&c.to_repr());
        }
        put(&mut f, &consts)?;
        for m in &self.r1cs.matrices {
            put(&mut f, &m.row_starts.le_bytes())?;
            put(&mut f, &m.columns.le_bytes())?;
            put(&mut f, &m.coefficients.le_bytes())?;
        }
        for d in &self.r1cs.densities {
            put(&mut f, &words_le_bytes(d.words()))?;
        }
        let mut file = f.into_inner().map_err(|e| e.into_error())?;
        let len = pos as u64;
        file.seek(SeekFrom::Start(16))?;
        file.write_all(&len.to_le_bytes())?;
        file.sync_all()?;
        // The checksum covers the length just written: hash the file as it is on disk.
        let image = {
            let reopened = File::open(tmp)?;
            // SAFETY: a private temporary file this function created and no one else writes;
            // the map is dropped before the file is written again.
            unsafe { Mmap::map(&reopened)? }
        };
        let sum = checksum(&image);
        drop(image);
        file.seek(SeekFrom::Start(CHECKSUM_AT as u64))?;
        file.write_all(&sum.to_le_bytes())?;
        file.sync_all()
    }

    /// Reads the compiled circuit in `path` into memory: the matrices stay in the file's
    /// image (one copy, shared).
    ///
    /// # Errors
    /// [`Error::CompiledIo`] when the file cannot be opened or read (or does not fit in
    /// memory); [`Error::CompiledStale`] when it has another format version;
    /// [`Error::CompiledCorrupt`] when it is not a compiled-circuit file, is truncated, fails
    /// its checksum, holds sections that do not add up or a fingerprint its contents do not
    /// hash to — each naming the file.
    pub fn load(path: &Path) -> Result<Self> {
        read_image(path)
            .and_then(|image| parse(Arc::new(image)))
            .map_err(|p| p.at(path))
    }

    /// The loader on bytes in memory, as if they were a file's (for fuzzing).
    #[doc(hidden)]
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self> {
        parse(Arc::new(bytes.to_vec())).map_err(|p| p.at(Path::new("<bytes>")))
    }
}

/// The whole file in memory the process owns, its header checked before the rest is read (a
/// file announcing more bytes than it has, or not a compiled circuit at all, costs no
/// allocation).
fn read_image(path: &Path) -> std::result::Result<Vec<u8>, Problem> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut head = vec![0u8; PAYLOAD_AT.min(usize::try_from(len).unwrap_or(PAYLOAD_AT))];
    file.read_exact(&mut head)?;
    header(&head, len)?;
    let len = usize::try_from(len).map_err(|_| Problem::Corrupt(format!("{len} bytes: too large")))?;
    let mut image = Vec::new();
    image.try_reserve_exact(len).map_err(|_| {
        Problem::Io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("{len} bytes do not fit in memory"),
        ))
    })?;
    image.extend_from_slice(&head);
    // One byte more than expected, to see a file that grew while it was read.
    let rest = (len - head.len()) as u64;
    file.take(rest + 1).read_to_end(&mut image)?;
    if image.len() != len {
        return Err(Problem::Corrupt(format!(
            "the file changed while it was read: {len} bytes, then {}",
            image.len()
        )));
    }
    Ok(image)
}

enum Problem {
    Io(std::io::Error),
    Stale(u32),
    Corrupt(String),
}

impl From<std::io::Error> for Problem {
    fn from(e: std::io::Error) -> Self {
        Problem::Io(e)
    }
}

impl Problem {
    /// The error naming `path`.
    fn at(self, path: &Path) -> Error {
        let path = path.to_path_buf();
        match self {
            Problem::Io(source) => Error::CompiledIo { path, source },
            Problem::Stale(found) => Error::CompiledStale {
                path,
                found,
                expected: FORMAT_VERSION,
            },
            Problem::Corrupt(reason) => Error::CompiledCorrupt { path, reason },
        }
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Checks the first bytes of a file of `file_len` bytes: the magic, the version and the
/// announced length.
fn header(bytes: &[u8], file_len: u64) -> std::result::Result<(), Problem> {
    let corrupt = |m: String| Err(Problem::Corrupt(m));
    if bytes.len() >= 8 && bytes[..8] != MAGIC {
        return corrupt("not a compiled-circuit file (bad magic)".into());
    }
    if bytes.len() < PAYLOAD_AT {
        return corrupt(format!(
            "truncated: {} bytes, the header alone needs {PAYLOAD_AT}",
            bytes.len()
        ));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != FORMAT_VERSION {
        return Err(Problem::Stale(version));
    }
    if bytes[12..16] != [0; 4] {
        return corrupt("the reserved header field is not zero".into());
    }
    let announced = u64_at(bytes, 16);
    if announced > file_len {
        return corrupt(format!(
            "truncated: the header announces {announced} bytes, the file has {file_len}"
        ));
    }
    if announced < file_len {
        return corrupt(format!(
            "the header announces {announced} bytes, the file has {file_len} (trailing bytes)"
        ));
    }
    Ok(())
}

fn parse(image: Image) -> std::result::Result<CompiledCircuit, Problem> {
    let corrupt = |m: String| Problem::Corrupt(m);
    let bytes: &[u8] = &image;
    header(bytes, bytes.len() as u64)?;
    let mut stored = [0u8; 16];
    stored.copy_from_slice(&bytes[CHECKSUM_AT..CHECKSUM_END]);
    let stored = u128::from_le_bytes(stored);
    let computed = checksum(bytes);
    if stored != computed {
        return Err(corrupt(format!(
            "checksum mismatch: stored {stored:032x}, computed {computed:032x}"
        )));
    }
    let field = |i: usize| u64_at(bytes, CHECKSUM_END + 8 * i);
    let to_usize = |v: u64, what: &str| usize::try_from(v).map_err(|_| corrupt(format!("{what} {v} too large")));
    let inputs = to_usize(field(0), "inputs")?;
    let aux = to_usize(field(1), "aux")?;
    let circuit_constraints = to_usize(field(2), "constraints")?;
    let trace = Trace::from_value(field(3));
    let n_constants = to_usize(field(4), "constants")?;
    let nnz = [
        to_usize(field(5), "non-zeros of A")?,
        to_usize(field(6), "non-zeros of B")?,
        to_usize(field(7), "non-zeros of C")?,
    ];
    let name_len = to_usize(field(8), "type name length")?;
    let fingerprint = u128::from(field(9)) | (u128::from(field(10)) << 64);
    if inputs == 0 {
        return Err(corrupt(
            "no public inputs (a circuit has at least the input one)".into(),
        ));
    }
    let rows = circuit_constraints
        .checked_add(inputs)
        .ok_or_else(|| corrupt("row count overflows".into()))?;

    // Walk the sections, checking that each lies inside the file.
    let mut at = PAYLOAD_AT;
    let mut section = |len_bytes: Option<usize>, what: &str| -> std::result::Result<usize, Problem> {
        let len = len_bytes.ok_or_else(|| corrupt(format!("{what}: size overflows")))?;
        let start = at;
        let end = pad8(len)
            .and_then(|padded| start.checked_add(padded))
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| corrupt(format!("{what} ({len} bytes at {start}) runs past the end of the file")))?;
        // The padding is zero, as written: one circuit has one file (the fingerprint does not
        // cover the padding; the checksum does, so a crafted file could vary it).
        if bytes[start + len..end].iter().any(|&b| b != 0) {
            return Err(corrupt(format!("{what} at {start}: padding after it is not zero")));
        }
        at = end;
        Ok(start)
    };
    let name_at = section(Some(name_len), "type name")?;
    let consts_at = section(n_constants.checked_mul(32), "constants")?;
    let mut matrix_at = [[0usize; 3]; 3];
    for (m, &n) in nnz.iter().enumerate() {
        matrix_at[m][0] = section(rows.checked_add(1).and_then(|r| r.checked_mul(4)), "row offsets")?;
        matrix_at[m][1] = section(n.checked_mul(4), "columns")?;
        matrix_at[m][2] = section(n.checked_mul(4), "coefficients")?;
    }
    let density_lens = [aux, inputs, aux];
    let mut density_at = [0usize; 3];
    for (d, &len) in density_lens.iter().enumerate() {
        density_at[d] = section(len.div_ceil(64).checked_mul(8), "densities")?;
    }
    if at != bytes.len() {
        return Err(corrupt(format!(
            "the sections end at byte {at}, the file at {}",
            bytes.len()
        )));
    }

    let circuit_type = std::str::from_utf8(&bytes[name_at..name_at + name_len])
        .map_err(|_| corrupt("type name is not UTF-8".into()))?
        .to_string();
    let mut constants = Vec::with_capacity(n_constants);
    for k in 0..n_constants {
        let mut repr = [0u8; 32];
        repr.copy_from_slice(&bytes[consts_at + 32 * k..consts_at + 32 * (k + 1)]);
        let c: Option<Scalar> = Scalar::from_repr(repr).into();
        constants.push(c.ok_or_else(|| corrupt(format!("constant {k} is not a field element")))?);
    }
    let view = |offset: usize, len: usize| {
        Store::from_image(&image, offset, len).ok_or_else(|| corrupt(format!("section at {offset} outside the file")))
    };
    let variables = inputs
        .checked_add(aux)
        .ok_or_else(|| corrupt("variable count overflows".into()))?;
    let mut matrices: [Matrix; 3] = Default::default();
    for (m, matrix) in matrices.iter_mut().enumerate() {
        *matrix = Matrix {
            row_starts: view(matrix_at[m][0], rows + 1)?,
            columns: view(matrix_at[m][1], nnz[m])?,
            coefficients: view(matrix_at[m][2], nnz[m])?,
        };
        matrix
            .validate(rows, variables, n_constants)
            .map_err(|e| corrupt(format!("matrix {}: {e}", ["A", "B", "C"][m])))?;
    }
    let mut densities: [DensityTracker; 3] = Default::default();
    for (d, density) in densities.iter_mut().enumerate() {
        let words: Store<u64> = Store::from_image(&image, density_at[d], density_lens[d].div_ceil(64))
            .ok_or_else(|| corrupt(format!("density {d} outside the file")))?;
        *density = DensityTracker::from_words(words.as_slice().to_vec(), density_lens[d])
            .ok_or_else(|| corrupt(format!("density {d} has bits past its {} variables", density_lens[d])))?;
    }
    let circuit = CompiledCircuit {
        circuit_type,
        r1cs: Recording {
            num_inputs: inputs,
            num_aux: aux,
            circuit_constraints,
            trace,
            matrices,
            constants,
            densities,
        },
        fingerprint,
    };
    // The device keeps resident matrices by fingerprint: a file must not claim another's.
    let computed = circuit.compute_fingerprint();
    if computed != fingerprint {
        return Err(corrupt(format!(
            "fingerprint: stored {fingerprint:032x}, the contents hash to {computed:032x}"
        )));
    }
    Ok(circuit)
}
