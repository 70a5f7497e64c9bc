//! The C ABI: `include/cuzk.h` is generated from this module by cbindgen (`tests/header.rs`
//! checks that the committed header is current; `CUZK_BLESS=1 cargo test --test header`
//! rewrites it).
//!
//! Conventions (after rustls-ffi and wasmvm):
//! - every fallible function returns a [`cuzk_status`] (0 = success) and takes a last
//!   `char **err` out-parameter: on failure, when not NULL, it receives a message the caller
//!   frees with [`cuzk_string_free`]; there is no thread-local "last error" (a Go goroutine
//!   may move between OS threads between two calls);
//! - results go through out-parameters written only on success;
//! - handles are opaque, made by `cuzk_*_new` (or a `*_load` / `*_generate_*`) and destroyed
//!   by `cuzk_*_free`, which accepts NULL; a `const` handle parameter is not mutated;
//! - NULL and length arguments are checked; no panic crosses the boundary (each entry point
//!   runs inside `boundary::call`, which turns a panic into `CUZK_STATUS_PANIC`);
//! - scalars are 32 bytes little-endian canonical (blstrs' `to_bytes_le`), except inside pool
//!   buffers given to `cuzk_assignment_new_raw`, which hold the in-memory Montgomery form
//!   ([`scalar`] converts).
//!
//! One module per handle kind: [`pool`], [`params`], [`assignment`] (with the R1CS route),
//! [`prover`], [`engine`] (the proving engine and its jobs) with [`engine_config`] (its
//! configuration, checked); [`filecoin`] (Filecoin proofs from filecoin-ffi's bytes,
//! one file per proof family as in `src/filecoin/`, and their submitted jobs; `CUZK_STATUS_UNSUPPORTED` without the
//! `filecoin` feature); plus [`bytes`] (byte buffers across the ABI), [`progress`] (the progress callback both job
//! kinds take), [`status`], [`scalar`], [`strings`], [`log`] and the panic boundary.
//! `job` holds what the two job handles share (`cuzk_job`, `cuzk_filecoin_job`).
//!
//! Raw pointers: the entry points turn their pointer arguments into references, slices and
//! out-parameters through `boundary` (`arg`, `slice`, `slice_out`, `c_str`, `Out`,
//! `into_handle` / `take_handle`), which checks NULL and sizes. The direct dereferences
//! outside it, each under its own `// SAFETY:` comment, are: handle arguments documented as
//! "NULL or live" read with `as_ref()` (`job`'s cancel, `pool`, `prover`, `assignment`'s
//! optional pool, `filecoin`'s optional engine); the frees of memory the library made
//! (`bytes::cuzk_bytes_free`, `strings::cuzk_string_free`); `scalar`'s unaligned 32-byte
//! reads and writes over caller-sized arrays; `assignment`'s view of a checked pool buffer as
//! scalars; `pool`'s optional out-parameters written only when not NULL; and the calls of C
//! callbacks (`progress`, `log`).
//!
//! Memory a caller's count sizes (copies of its arrays, tables of its counts) comes from
//! `boundary::room` / `boundary::copied`, fallibly: out of memory is `CUZK_STATUS_ALLOCATION`,
//! never the abort of `Vec::with_capacity` or `vec![..; n]`. Counts that would need memory of
//! their own without any data behind them (a constraint system's constraints and variables)
//! take none until used: a `cuzk_r1cs` keeps only its terms.

mod boundary;

pub mod assignment;
pub mod bytes;
pub mod engine;
pub mod engine_config;
pub mod filecoin;
mod job;
pub mod log;
pub mod params;
pub mod pool;
pub mod progress;
pub mod prover;
pub mod scalar;
pub mod status;
pub mod strings;

use std::ffi::c_char;

pub use self::filecoin::job as filecoin_job;
pub use self::status::cuzk_status;
pub use self::strings::cuzk_string_free;

/// The version of this ABI: bumped on any incompatible change of a function, type or
/// constant in `cuzk.h`. Compare it with `cuzk_abi_version()` to catch a header that does
/// not match the linked library.
pub const CUZK_ABI_VERSION: u32 = 3;

/// The ABI version the library implements (`CUZK_ABI_VERSION` of its header). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_abi_version() -> u32 {
    CUZK_ABI_VERSION
}

/// The library's version, e.g. "0.1.0": a static NUL-terminated string, never freed.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
