//! A circuit's R1CS as one full synthesis records it: the density trackers, the A, B, C
//! matrices, their hash and storage, and the recorder that fills them.
//!
//! This room sits below both [`crate::assignment`] (which carries the recorder and the
//! density trackers while synthesis evaluates each constraint) and [`crate::compiled`]
//! (whose [`CompiledCircuit`](crate::CompiledCircuit) holds a recording, saves and loads it,
//! and evaluates it on a witness). It imports neither.
//!
//! ## Code map
//! - `density`: [`DensityTracker`], which variables of a query have a base.
//! - [`hash`]: the 128-bit hash (fingerprints, checksums) and the structure trace.
//! - [`matrix`]: one CSR matrix, its column and coefficient encodings.
//! - `store`: arrays owned or inside a file mapping (the one unsafe view of mapped bytes).
//! - `record`: the recorder the assignment carries, and the plain `Recording` (sizes,
//!   structure trace, matrices, constants, densities) it returns.
//! - `unnamed`: the namespace methods every cuzk constraint system shares (it keeps no names).

mod density;
pub mod hash;
pub mod matrix;
pub(crate) mod record;
pub(crate) mod store;
mod unnamed;

pub use density::DensityTracker;
pub(crate) use unnamed::unnamed_namespaces;
