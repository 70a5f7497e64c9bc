//! The crate's one error type.
//!
//! Every fallible public function returns [`Result<T>`](crate::Result). Messages say what was
//! expected and what was found, so a log line alone is enough to act on.

use std::path::PathBuf;

use bellpepper_core::SynthesisError;

/// Everything that can go wrong in cuzk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pinned pool could not serve a checkout within its cap.
    #[error(
        "pinned pool exhausted: requested {requested} bytes, {in_use} bytes in use, cap {cap} bytes{}",
        if *.waited { " (after waiting)" } else { "" }
    )]
    PoolExhausted {
        /// Bytes asked for.
        requested: usize,
        /// Bytes checked out at the time of the failure.
        in_use: usize,
        /// The pool's `max_bytes`.
        cap: usize,
        /// Whether the pool waited for buffers to come back before giving up.
        waited: bool,
    },

    /// A host-allocator backend failed to allocate.
    #[error("host allocation of {bytes} bytes failed ({backend}): {reason}")]
    Allocation {
        /// Bytes asked for.
        bytes: usize,
        /// Which backend failed (`heap`, `cuda-pinned`, ...).
        backend: &'static str,
        /// The operating system's or driver's reason.
        reason: String,
    },

    /// The parameter file could not be read.
    #[error("cannot read parameters from {path}: {source}")]
    ParamsIo {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// The parameter file could not be created or written.
    #[error("cannot write parameters to {path}: {source}")]
    ParamsWrite {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// The parameter bytes end before the data they announce.
    #[error("parameters truncated: expected {expected}, found {found}")]
    ParamsTruncated {
        /// What the format required at this point.
        expected: String,
        /// What was there.
        found: String,
    },

    /// The parameter bytes hold something that is not valid.
    #[error("parameters corrupt: {0}")]
    ParamsCorrupt(String),

    /// The circuit's shape does not match the parameters.
    #[error("circuit does not match the parameters: {0}")]
    CircuitMismatch(String),

    /// The circuit failed to synthesize.
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),

    /// A caller passed arguments that cannot be used.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A proof's encoding is not valid.
    #[error("malformed proof: {0}")]
    MalformedProof(String),

    /// A CUDA call (driver, runtime or one of our kernels) failed.
    #[error("CUDA error in {call}: {message} (code {code})")]
    Cuda {
        /// The call that failed.
        call: &'static str,
        /// CUDA's error code (`cudaError_t` / `CUresult`), or a negative kernel-API code.
        code: i32,
        /// CUDA's own message.
        message: String,
    },

    /// The GPU hit an error that poisons its context (illegal address, ECC error, launch
    /// failure, Xid): nothing more can run on it in this process. The backend marks the device
    /// unusable; `Auto` provers go on on the CPU, `Gpu(n)` provers fail fast with this error.
    /// Restart the process (or use another GPU) to prove on it again.
    #[error("GPU {device} lost: {message} (code {code}); restart the process to use it again")]
    DeviceLost {
        /// The device ordinal.
        device: usize,
        /// CUDA's error code.
        code: i32,
        /// What failed and CUDA's message.
        message: String,
    },

    /// No usable GPU although one was required.
    #[error("no usable GPU: {0}")]
    NoGpu(String),

    /// The parameters hold a point that would break soundness (e.g. delta at infinity).
    #[error("unsafe parameters: {0}")]
    UnsafeParameters(String),

    /// A Filecoin parameter file (the `filecoin` feature) is missing, truncated or corrupt:
    /// `source` says what, `help` how to get a good one.
    #[error("Filecoin parameter file {path}: {source}. {help}")]
    FilecoinParams {
        /// The file, in filecoin-proofs' parameter cache directory.
        path: PathBuf,
        /// What is wrong with it ([`Error::ParamsIo`], [`Error::ParamsTruncated`], ...).
        source: Box<Error>,
        /// How to get the file.
        help: &'static str,
    },

    /// filecoin-proofs rejected the inputs or failed (the `filecoin` feature): a vanilla proof
    /// that does not decode or verify, a commitment out of range, a proof kind cuzk does not
    /// prove, ...
    #[error("filecoin: {0}")]
    Filecoin(String),

    /// The library was built without the feature this call needs.
    #[error("unsupported: {0}")]
    Unsupported(String),

    /// A job of the proving [`Engine`](crate::engine::Engine) was cancelled (by its handle, or
    /// because the engine shut down) before all its partitions were proved.
    #[error("job cancelled: {0}")]
    Cancelled(String),

    /// The engine's memory budget could not make room for a partition within the configured
    /// timeout (or never can: the partition alone is larger than the budget).
    #[error(
        "memory budget exhausted: a partition needs {requested} bytes, {reserved} bytes reserved of a {limit}-byte budget, waited {waited:?}"
    )]
    BudgetExhausted {
        /// Bytes the partition needs.
        requested: usize,
        /// Bytes reserved by other partitions at the time of the failure.
        reserved: usize,
        /// The budget.
        limit: usize,
        /// How long the partition waited for room.
        waited: std::time::Duration,
    },

    /// A compiled-circuit file ([`crate::compiled`]) could not be opened, read or written.
    #[error("compiled circuit file {path}: {source}")]
    CompiledIo {
        /// The file (or the directory it was to be written in).
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// A compiled-circuit file was written in another format version: record the circuit
    /// again (which replaces the file).
    #[error("compiled circuit file {path} is stale: format version {found}, this build reads {expected}; record the circuit again")]
    CompiledStale {
        /// The file.
        path: PathBuf,
        /// The version the file has.
        found: u32,
        /// The version this build reads and writes.
        expected: u32,
    },

    /// A compiled-circuit file is not one, is truncated, fails its checksum or holds
    /// sections that do not add up: `reason` says which.
    #[error("compiled circuit file {path} is corrupt: {reason}")]
    CompiledCorrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// A witness does not belong to the compiled circuit it was to be evaluated with (its
    /// circuit type, inputs, aux, constraints or structure trace differ): the message names
    /// what differs. Evaluating it would prove something else.
    #[error("witness does not match the compiled circuit: {0}")]
    WitnessMismatch(String),

    /// Recording a circuit's A, B, C during synthesis failed (a merged sub-system that did
    /// not record, a size past the format's 32-bit limits, host out of memory); the
    /// synthesis itself is unaffected.
    #[error("recording the circuit failed: {0}")]
    Recording(String),

    /// A worker thread of the engine panicked while handling a partition (a bug in the circuit
    /// or in cuzk); the partition's job fails, the engine goes on.
    #[error("worker panicked: {0}")]
    Panicked(String),
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The message a panic carried (`panic!` with a literal or a formatted string), for errors
/// that report a caught panic: the ABI boundary, the engine's workers, filecoin-proofs calls.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}
