//! [`CompiledCircuits`]: compiled circuits by (circuit type, shape), optionally backed by a
//! directory of files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::circuit::{CircuitShape, CompiledCircuit};
use crate::error::{Error, Result};

/// The name a refused file is moved to: `<file>.refused` (replacing an older one).
fn refused_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".refused");
    PathBuf::from(name)
}

/// Moves a refused file aside (logged; a failure to move it is logged too: the caller's
/// in-process record of the refusal still holds).
fn set_aside(path: &Path) {
    let to = refused_name(path);
    match std::fs::rename(path, &to) {
        Ok(()) => log::warn!("compiled circuit file refused: moved to {}", to.display()),
        Err(e) => log::warn!(
            "compiled circuit file {} refused; could not move it aside: {e}",
            path.display()
        ),
    }
}

type Key = (String, CircuitShape);

/// A cache of compiled circuits keyed by circuit type name (`std::any::type_name`) and
/// [`CircuitShape`], shared by clones — as [`CapacityHints`](crate::CapacityHints) are keyed
/// by type and domain size. With a directory, circuits inserted are also saved there and
/// circuits missing from memory are looked for there.
#[derive(Debug, Clone, Default)]
pub struct CompiledCircuits {
    map: Arc<Mutex<HashMap<Key, Arc<CompiledCircuit>>>>,
    dir: Option<PathBuf>,
}

impl CompiledCircuits {
    /// An empty cache in memory only.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache that saves to and loads from `dir` (created when missing, at the first
    /// save).
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            map: Default::default(),
            dir: Some(dir.into()),
        }
    }

    /// The directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file a circuit of this type and shape is kept in under `dir`: the type name with
    /// every character outside `[A-Za-z0-9_]` replaced, its hash (type names can be long and
    /// differ only in generic arguments), and the shape.
    pub fn file_name(circuit_type: &str, shape: CircuitShape) -> String {
        let mut h = crate::r1cs::hash::Hasher128::new();
        h.bytes(circuit_type.as_bytes());
        let short: String = circuit_type
            .rsplit("::")
            .next()
            .unwrap_or(circuit_type)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
            .take(48)
            .collect();
        format!(
            "{short}-{:016x}-{}i-{}a-{}d.r1cs",
            h.finish() as u64,
            shape.inputs,
            shape.aux,
            shape.domain_size
        )
    }

    /// The compiled circuit of `circuit_type` at `shape`, from memory or, with a directory,
    /// from its file (then kept in memory). A stale or corrupt file is an error naming it (the
    /// caller records the circuit again and [`insert`](Self::insert)s it, which replaces the
    /// file); a corrupt one — or one holding another type or shape — is also moved aside to
    /// `<file>.refused` first, so that the refusal outlives the process: later loads find no
    /// file and synthesize in full (and record) instead of failing on it again. A missing file
    /// is `Ok(None)`.
    ///
    /// # Errors
    /// What [`CompiledCircuit::load`] returns, except a missing file.
    pub fn get(&self, circuit_type: &str, shape: CircuitShape) -> Result<Option<Arc<CompiledCircuit>>> {
        let key = (circuit_type.to_string(), shape);
        if let Some(c) = self.map.lock().get(&key) {
            return Ok(Some(Arc::clone(c)));
        }
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        let path = dir.join(Self::file_name(circuit_type, shape));
        if !path.exists() {
            return Ok(None);
        }
        let loaded = CompiledCircuit::load(&path).and_then(|loaded| {
            if loaded.circuit_type() != circuit_type || loaded.shape() != shape {
                return Err(Error::CompiledCorrupt {
                    path: path.clone(),
                    reason: format!(
                        "holds {} at {:?}, expected {circuit_type} at {shape:?}",
                        loaded.circuit_type(),
                        loaded.shape()
                    ),
                });
            }
            Ok(loaded)
        });
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(e) => {
                if matches!(e, Error::CompiledCorrupt { .. }) {
                    set_aside(&path);
                }
                return Err(e);
            }
        };
        log::info!(
            "compiled circuit {circuit_type} ({} constraints) read from {}",
            loaded.num_constraints(),
            path.display()
        );
        let loaded = Arc::new(loaded);
        self.map.lock().insert(key, Arc::clone(&loaded));
        Ok(Some(loaded))
    }

    /// The compiled circuit of `circuit_type` at `shape` if it is held in memory (no file is
    /// read: cheap enough to ask under a lock).
    pub fn get_in_memory(&self, circuit_type: &str, shape: CircuitShape) -> Option<Arc<CompiledCircuit>> {
        self.map.lock().get(&(circuit_type.to_string(), shape)).cloned()
    }

    /// Keeps `circuit` under its type and shape (replacing any), and saves it to the
    /// directory if there is one.
    ///
    /// # Errors
    /// [`Error::CompiledIo`](crate::Error::CompiledIo) when the directory or file cannot be
    /// written (the circuit is kept in memory regardless).
    pub fn insert(&self, circuit: Arc<CompiledCircuit>) -> Result<()> {
        let shape = circuit.shape();
        self.map
            .lock()
            .insert((circuit.circuit_type().to_string(), shape), Arc::clone(&circuit));
        if let Some(dir) = &self.dir {
            std::fs::create_dir_all(dir).map_err(|source| Error::CompiledIo {
                path: dir.clone(),
                source,
            })?;
            circuit.save(&dir.join(Self::file_name(circuit.circuit_type(), shape)))?;
        }
        Ok(())
    }

    /// Drops the compiled circuit of `circuit_type` at `shape`: from memory, and its file if
    /// there is a directory (a circuit that made a proof that failed verification; the next
    /// synthesis of the type records it again). Returns whether there was one.
    pub fn remove(&self, circuit_type: &str, shape: CircuitShape) -> bool {
        let held = self.map.lock().remove(&(circuit_type.to_string(), shape)).is_some();
        let Some(dir) = &self.dir else {
            return held;
        };
        let path = dir.join(Self::file_name(circuit_type, shape));
        match std::fs::remove_file(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => held,
            Err(e) => {
                log::warn!("compiled circuit {}: cannot remove it: {e}", path.display());
                held
            }
        }
    }

    /// Number of circuits held in memory.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Bytes of the circuits held in memory ([`CompiledCircuit::byte_size`], summed): what an
    /// engine charges its budget for them.
    pub fn byte_size(&self) -> usize {
        self.map.lock().values().map(|c| c.byte_size()).sum()
    }

    /// Whether no circuit is held in memory.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
