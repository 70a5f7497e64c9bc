//! The one status enum every fallible ABI function returns, and how crate errors map onto it.

use crate::error::Error;

/// The result of every fallible `cuzk_*` function.
///
/// The numeric values are part of the ABI and never change; new values may be added (a
/// caller should treat an unknown value as a generic failure). `CUZK_STATUS_OK` is 0; every
/// other value is a failure, and the function's `err` out-parameter (when not NULL) then
/// holds a message saying what went wrong.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cuzk_status {
    /// Success: the out-parameters hold the results.
    Ok = 0,
    /// A Rust panic was caught at the boundary (a bug in cuzk): the message says where.
    Panic = 1,
    /// A pointer argument that must not be NULL was NULL.
    NullArgument = 2,
    /// A caller-supplied output buffer is too small for the result.
    BufferTooSmall = 3,
    /// Arguments that cannot be used: wrong lengths or counts, a non-canonical scalar, a
    /// handle used in a way its documentation forbids.
    InvalidArgument = 4,
    /// The pool could not serve a checkout within its cap.
    PoolExhausted = 10,
    /// Host memory could not be allocated.
    Allocation = 11,
    /// The parameter file could not be opened, read or written.
    ParamsIo = 20,
    /// The parameter bytes end before the data they announce.
    ParamsTruncated = 21,
    /// The parameter bytes hold something that is not valid.
    ParamsCorrupt = 22,
    /// The parameters hold a point that would break soundness (e.g. delta at infinity).
    UnsafeParameters = 23,
    /// The assignment's shape does not match the parameters.
    CircuitMismatch = 30,
    /// The circuit failed to synthesize (e.g. a constraint names a variable that does not exist).
    Synthesis = 31,
    /// A proof's bytes are not a valid encoding.
    MalformedProof = 40,
    /// A CUDA call failed.
    Cuda = 50,
    /// The GPU hit an error that poisons its context; restart the process to use it again.
    DeviceLost = 51,
    /// A GPU was required but none is usable (or the library was built without CUDA).
    NoGpu = 52,
    /// filecoin-proofs rejected the inputs or failed (a vanilla proof that does not decode or
    /// verify, a commitment out of range, a proof kind cuzk does not prove): see the message.
    Filecoin = 60,
    /// The library was built without the feature this function needs (e.g. `filecoin`).
    Unsupported = 61,
    /// A job of the engine was cancelled (`cuzk_job_cancel`, `cuzk_job_free`) or its engine was
    /// freed before it was over.
    Cancelled = 70,
    /// The engine's memory budget could not make room for a partition in time (or the
    /// partition alone, with its parameters' host bytes, is larger than the budget — also one
    /// submitted synthesized already).
    BudgetExhausted = 71,
    /// A compiled-circuit file (the witness path's recorded constraints) could not be opened,
    /// read or written: the message names it.
    CompiledIo = 80,
    /// A compiled-circuit file was written in another format version: record the circuit
    /// again (which replaces the file).
    CompiledStale = 81,
    /// A compiled-circuit file is not one, is truncated or fails its checksum: the message
    /// names the file and what is wrong.
    CompiledCorrupt = 82,
    /// A witness does not belong to the compiled circuit it was to be evaluated with (its type,
    /// sizes or structure differ): the message names what. From explicit witness calls, and from
    /// a circuit job whose witness its compiled circuit refused (the type and shape is then
    /// synthesized in full: submitting it again succeeds).
    WitnessMismatch = 83,
    /// Recording a circuit's constraints during synthesis failed (the synthesis itself is
    /// unaffected).
    Recording = 84,
    /// An error this version of the ABI has no code for (see the message).
    Unknown = 99,
}

impl cuzk_status {
    /// The status a crate error maps to: one per `Error` variant family.
    pub fn of(e: &Error) -> Self {
        match e {
            Error::PoolExhausted { .. } => Self::PoolExhausted,
            Error::Allocation { .. } => Self::Allocation,
            Error::ParamsIo { .. } | Error::ParamsWrite { .. } => Self::ParamsIo,
            Error::ParamsTruncated { .. } => Self::ParamsTruncated,
            Error::ParamsCorrupt(_) => Self::ParamsCorrupt,
            Error::UnsafeParameters(_) => Self::UnsafeParameters,
            Error::CircuitMismatch(_) => Self::CircuitMismatch,
            Error::Synthesis(_) => Self::Synthesis,
            Error::InvalidArgument(_) => Self::InvalidArgument,
            Error::MalformedProof(_) => Self::MalformedProof,
            Error::Cuda { .. } => Self::Cuda,
            Error::DeviceLost { .. } => Self::DeviceLost,
            Error::NoGpu(_) => Self::NoGpu,
            Error::FilecoinParams { source, .. } => Self::of(source),
            Error::Filecoin(_) => Self::Filecoin,
            Error::Unsupported(_) => Self::Unsupported,
            Error::Cancelled(_) => Self::Cancelled,
            Error::BudgetExhausted { .. } => Self::BudgetExhausted,
            Error::Panicked(_) => Self::Panic,
            Error::CompiledIo { .. } => Self::CompiledIo,
            Error::CompiledStale { .. } => Self::CompiledStale,
            Error::CompiledCorrupt { .. } => Self::CompiledCorrupt,
            Error::WitnessMismatch(_) => Self::WitnessMismatch,
            Error::Recording(_) => Self::Recording,
            #[allow(unreachable_patterns)]
            _ => Self::Unknown,
        }
    }
}

/// A failure at the boundary: a crate error, or one only the ABI can have.
#[derive(Debug)]
pub(crate) enum AbiError {
    /// The named pointer argument was NULL.
    Null(&'static str),
    /// An output buffer was too small.
    BufferTooSmall {
        what: &'static str,
        needed: usize,
        found: usize,
    },
    /// Anything the crate reports.
    Core(Error),
}

impl From<Error> for AbiError {
    fn from(e: Error) -> Self {
        Self::Core(e)
    }
}

/// A C constant's name and what its value means.
pub(crate) type Named<T> = (&'static str, T);

/// An enum argument or field: C hands it over as an integer (an out-of-range value is legal
/// C), and `named` lists its constants in value order (`named[v]` is value `v`). A value
/// past them is `CUZK_STATUS_INVALID_ARGUMENT`, naming `what`, the value and the constants.
pub(crate) fn enum_arg<T: Copy>(what: &str, value: u32, named: &[Named<T>]) -> Result<T, AbiError> {
    usize::try_from(value)
        .ok()
        .and_then(|i| named.get(i))
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let list: Vec<String> = named
                .iter()
                .enumerate()
                .map(|(i, (n, _))| format!("{n} ({i})"))
                .collect();
            AbiError::invalid(format!("`{what}` is {value}, not one of {}", list.join(", ")))
        })
}

impl AbiError {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Self::Core(Error::InvalidArgument(msg.into()))
    }

    pub(crate) fn status(&self) -> cuzk_status {
        match self {
            Self::Null(_) => cuzk_status::NullArgument,
            Self::BufferTooSmall { .. } => cuzk_status::BufferTooSmall,
            Self::Core(e) => cuzk_status::of(e),
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            Self::Null(name) => format!("argument `{name}` is NULL"),
            Self::BufferTooSmall { what, needed, found } => {
                format!("{what}: buffer too small: {needed} bytes needed, {found} given")
            }
            Self::Core(e) => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_witness_paths_errors_have_statuses_of_their_own() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let path = std::path::PathBuf::from("x.r1cs");
        let cases = [
            (
                Error::CompiledIo {
                    path: path.clone(),
                    source: io,
                },
                cuzk_status::CompiledIo,
            ),
            (
                Error::CompiledStale {
                    path: path.clone(),
                    found: 0,
                    expected: 1,
                },
                cuzk_status::CompiledStale,
            ),
            (
                Error::CompiledCorrupt {
                    path,
                    reason: "checksum".into(),
                },
                cuzk_status::CompiledCorrupt,
            ),
            (Error::WitnessMismatch("aux".into()), cuzk_status::WitnessMismatch),
            (Error::Recording("x".into()), cuzk_status::Recording),
        ];
        for (e, status) in cases {
            assert_eq!(cuzk_status::of(&e), status, "{e}");
            assert_ne!(status, cuzk_status::Unknown);
        }
        // The values are the ABI's: appended, never renumbered.
        assert_eq!(
            [
                cuzk_status::CompiledIo as i32,
                cuzk_status::CompiledStale as i32,
                cuzk_status::CompiledCorrupt as i32,
                cuzk_status::WitnessMismatch as i32,
                cuzk_status::Recording as i32,
                cuzk_status::Unknown as i32,
            ],
            [80, 81, 82, 83, 84, 99]
        );
    }

    #[test]
    fn a_filecoin_parameter_file_error_has_the_status_of_what_is_wrong_with_it() {
        let wrapped = |source: Error| Error::FilecoinParams {
            path: "v28-x.params".into(),
            source: Box::new(source),
            help: "",
        };
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let io = wrapped(Error::ParamsIo {
            path: "v28-x.params".into(),
            source: missing,
        });
        assert_eq!(cuzk_status::of(&io), cuzk_status::ParamsIo);
        let truncated = wrapped(Error::ParamsTruncated {
            expected: "H".into(),
            found: "end".into(),
        });
        assert_eq!(cuzk_status::of(&truncated), cuzk_status::ParamsTruncated);
        assert_eq!(
            cuzk_status::of(&wrapped(Error::ParamsCorrupt("x".into()))),
            cuzk_status::ParamsCorrupt
        );
    }
}
