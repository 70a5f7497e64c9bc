//! The CUDA backend: H (NTTs) and all five MSMs on the GPU, parameters resident on the device
//! or, when they do not fit, streamed to it from pinned host memory.
//!
//! a/b/c go host→device straight from the assignment's (pinned) buffers inside
//! `cuzk_k_compute_h_msm_staged`, which also runs the H MSM without H leaving the device and,
//! while that MSM computes, copies the aux vector that the batched L/A/B MSMs read next (so
//! only a's copy is exposed); the buffers go back to the pool right after. The parameters' five query vectors are uploaded
//! once per [`Parameters`](crate::Parameters) and stay on the device (least recently used evicted first when a
//! new set would exceed the residency cap), so a proof moves only its own a/b/c and witness.
//!
//! **Streamed mode.** A set whose query vectors and a proof's working set do not fit under the
//! backend's device memory limit ([`CudaBackend::set_memory_limit`]; default: the device's free
//! memory when probed; `CUZK_GPU_MEMORY_LIMIT` sets it at start) is not uploaded: its host
//! vectors are page-locked once (`cudaHostRegister`) and every MSM copies the bases it needs
//! in chunks, double-buffered on the copy stream while the previous chunk computes. Every MSM
//! still runs on the GPU and the proof bytes are the same as in resident mode. Such a proof
//! works in what the limit leaves, so before it starts the idle resident sets of other
//! parameters leave the device (those kept for good stay; they upload again at their next
//! proof).
//!
//! **Witness path.** A witness of a compiled circuit ([`crate::compiled`]) is proved with the
//! circuit resident beside the parameters: the compact witness goes to the device, is expanded
//! there, a, b, c are evaluated by SpMV inside the H call and the expanded aux feeds the batch
//! (`witness`; a circuit that does not fit is evaluated on the host instead, counted in
//! [`WitnessEvaluations`]).
//!
//! Code map, bottom up: `ffi` (the `extern "C"` declarations of `kernels/cuzk_kernels.h`),
//! `error` (kernel results as errors), `device` (probe, counts, memory), `fault` (test-only
//! fault injection), `bases` (device bases over either curve, one-shot MSMs and H). Then the
//! parts a [`CudaBackend`] is composed of, each a struct that owns its state, none of which
//! knows the backend: `health` (the device ordinal, the sticky lost state every part reports
//! its errors to), `residency` (which parameter sets live on the device, the memory limit, the
//! out-of-memory retry), `batch` (the assignment path's H call and the MSMs after H),
//! `witness` (compiled circuits resident on the device, the witness path). On top, `backend`
//! ([`CudaBackend`] composing them: its public methods and the `Backend` impl).

mod backend;
mod bases;
mod batch;
mod device;
mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
mod ffi;
mod health;
mod residency;
mod witness;

pub use backend::CudaBackend;
pub use bases::{compute_h_once, msm_once, DeviceCurve, OnceBases};
pub use device::{device_count, device_memory, probe, DeviceInfo, BUILT_ARCHS, MIN_FREE_BYTES};
pub use residency::{DeviceMemStats, WORKING_BYTES_PER_DOMAIN_ELEMENT};
pub use witness::WitnessEvaluations;
