//! Which backend a prover proves on: [`BackendChoice`], and the one `Auto` backend a process
//! shares (probed once).

use std::sync::Arc;

#[cfg(feature = "cuda")]
use super::backend::with_cpu_fallback;
#[cfg(feature = "cuda")]
use super::cuda;
use super::{cpu, Backend};
#[cfg(not(feature = "cuda"))]
use crate::error::Error;
use crate::error::Result;

/// Which backend proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BackendChoice {
    /// The GPU (device 0) when the `cuda` feature is on and a GPU passes the probe (code for
    /// its architecture in the build, memory free, a real kernel launch), else the CPU; the
    /// choice is made once per process, logged, and a `cuda` build that finds no GPU warns.
    /// Provers on `Auto` share that backend (and its resident parameters). If the GPU is lost
    /// later (a sticky CUDA error), the proof that hit it fails with
    /// [`Error::DeviceLost`] and later proofs run on the CPU, with a
    /// warning.
    #[default]
    Auto,
    /// The host's cores.
    Cpu,
    /// The GPU of this ordinal; an error if it is not usable (needs the `cuda` feature). All
    /// provers on one GPU share one backend (one upload per parameter set). Once the GPU is
    /// lost, proofs fail fast with [`Error::DeviceLost`].
    Gpu(usize),
}

pub(super) fn make_backend(choice: BackendChoice) -> Result<Arc<dyn Backend>> {
    match choice {
        BackendChoice::Cpu => Ok(Arc::new(cpu::CpuBackend)),
        #[cfg(feature = "cuda")]
        BackendChoice::Gpu(d) => Ok(cuda::CudaBackend::shared(d)?),
        #[cfg(not(feature = "cuda"))]
        BackendChoice::Gpu(d) => Err(Error::NoGpu(format!(
            "GPU {d} requested but cuzk was built without the `cuda` feature"
        ))),
        BackendChoice::Auto => Ok(auto_backend()),
    }
}

/// The backend `Auto` picks, probed once per process and shared, so every `Prover::new()`
/// (and every call of the free `prove` functions) uses one backend and its device-resident
/// parameters instead of probing the GPU and uploading the parameters again.
pub(super) fn auto_backend() -> Arc<dyn Backend> {
    static AUTO: std::sync::OnceLock<Arc<dyn Backend>> = std::sync::OnceLock::new();
    AUTO.get_or_init(|| {
        #[cfg(feature = "cuda")]
        match cuda::CudaBackend::shared(0) {
            Ok(b) => {
                log::info!("cuzk: proving on GPU 0 (CUDA backend)");
                return with_cpu_fallback(b);
            }
            Err(e) => log::warn!("cuzk: no usable GPU ({e}); proving on the CPU"),
        }
        #[cfg(not(feature = "cuda"))]
        log::debug!("cuzk: built without `cuda`; proving on the CPU");
        Arc::new(cpu::CpuBackend)
    })
    .clone()
}
