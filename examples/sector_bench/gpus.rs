//! The CUDA backends every stream's engine proves on (none with `--cpu`): their device memory
//! limit set and restored around a stream, and what they did, summed over the devices.

#[cfg(feature = "cuda")]
use std::sync::Arc;

use cuzk::engine::EngineBackend;
use cuzk::{BackendChoice, Parameters};

use crate::args::Args;
use crate::support::fail;

/// What the CUDA backends did, summed over the devices (all zero without them).
#[derive(Clone, Copy, Default)]
pub(crate) struct DeviceBooks {
    pub(crate) on_device: usize,
    pub(crate) on_host: usize,
    pub(crate) resident_bytes: usize,
    pub(crate) streamed_sets: usize,
    pub(crate) resident_circuits: usize,
    pub(crate) circuit_bytes: usize,
    pub(crate) peak: usize,
    pub(crate) oom_retries: usize,
    pub(crate) evicted_for_streamed: usize,
}

/// The CUDA backends every stream's engine proves on: the process's shared backend of each
/// device (`CudaBackend::shared`), with the device memory limit each had to begin with. None
/// with `--cpu` (or without `cuda`): the engines then prove on the CPU backend.
pub(crate) struct Gpus {
    #[cfg(feature = "cuda")]
    list: Vec<(Arc<cuzk::prover::cuda::CudaBackend>, Option<usize>)>,
    /// The limit of the last stream (`usize::MAX`: none); None before the first.
    #[cfg(feature = "cuda")]
    last_limit: std::cell::Cell<Option<usize>>,
    /// Whether a parameter set lives only on the devices (`keep_on_device`): then no stream
    /// releases the devices' memory.
    #[cfg(feature = "cuda")]
    params_kept: std::cell::Cell<bool>,
}

impl Gpus {
    pub(crate) fn new(args: &Args) -> Self {
        if args.cpu || args.shape_only || args.count_only || args.check_builders {
            return Self {
                #[cfg(feature = "cuda")]
                list: Vec::new(),
                #[cfg(feature = "cuda")]
                last_limit: Default::default(),
                #[cfg(feature = "cuda")]
                params_kept: Default::default(),
            };
        }
        #[cfg(not(feature = "cuda"))]
        fail("built without the `cuda` feature: --cpu, or build with --features cuda,filecoin");
        #[cfg(feature = "cuda")]
        {
            use cuzk::prover::cuda::{device_count, CudaBackend};
            let devices: Vec<usize> = match args.devices.as_str() {
                "all" => (0..device_count().unwrap_or_else(|e| fail(&format!("no GPU: {e}")))).collect(),
                list => list
                    .split(',')
                    .map(|d| {
                        d.trim().parse().unwrap_or_else(|_| {
                            fail(&format!("--devices: `all` or device numbers such as 0,1, not {d:?}"))
                        })
                    })
                    .collect(),
            };
            if devices.is_empty() {
                fail("no GPU");
            }
            let list = devices
                .into_iter()
                .map(|d| {
                    let b = CudaBackend::shared(d).unwrap_or_else(|e| fail(&format!("GPU {d}: {e}")));
                    let limit = b.memory_stats(false).ok().map(|m| m.limit).filter(|&l| l > 0);
                    (b, limit)
                })
                .collect();
            Self {
                list,
                last_limit: Default::default(),
                params_kept: Default::default(),
            }
        }
    }

    pub(crate) fn is_cpu(&self) -> bool {
        #[cfg(feature = "cuda")]
        {
            self.list.is_empty()
        }
        #[cfg(not(feature = "cuda"))]
        {
            true
        }
    }

    /// The engines' backends: the GPUs, or the one CPU backend.
    pub(crate) fn count(&self) -> usize {
        #[cfg(feature = "cuda")]
        {
            self.list.len().max(1)
        }
        #[cfg(not(feature = "cuda"))]
        {
            1
        }
    }

    pub(crate) fn engine_backends(&self) -> Vec<EngineBackend> {
        #[cfg(feature = "cuda")]
        if !self.list.is_empty() {
            return self
                .list
                .iter()
                .map(|(b, _)| EngineBackend::Custom(b.clone()))
                .collect();
        }
        vec![EngineBackend::Choice(BackendChoice::Cpu)]
    }

    /// Before a stream: every device's limit set (`limit`, else the one it began with), which
    /// evicts its idle parameter sets and frees its caches, and its peak reset. The compiled
    /// circuits resident from an earlier witness stream stay for a witness stream whose limit
    /// is no higher than that stream's when the device memory in use with them is within the
    /// new limit: the state its first witness proof would reach by uploading them. Otherwise
    /// (and before a full stream) the device's memory is released (`release_device_memory`:
    /// parameter sets, compiled circuits and the list of those that did not fit), so the stream
    /// decides anew. Returns the compiled circuits' device bytes kept.
    pub(crate) fn begin(&self, limit: Option<usize>, witness: bool) -> Result<usize, String> {
        #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
        let mut kept = 0;
        #[cfg(feature = "cuda")]
        for (b, original) in &self.list {
            let d = b.info().device;
            let e = |e: cuzk::Error| format!("GPU {d}: {e}");
            let limit = limit.or(*original);
            let effective = limit.unwrap_or(usize::MAX);
            b.set_memory_limit(limit).map_err(e)?;
            let circuits = b.witness_evaluations();
            let used = b.memory_stats(false).map_err(e)?.used;
            let lower = self.last_limit.get().is_some_and(|last| effective <= last);
            if self.params_kept.get() {
                // The parameters have no host copy: their device copy must stay (a limit
                // change evicts only idle sets that are not kept for good).
            } else if witness && circuits.resident_circuits > 0 && lower && used <= effective {
                kept += circuits.circuit_bytes;
            } else {
                b.release_device_memory().map_err(e)?;
            }
            b.memory_stats(true).map_err(e)?;
        }
        #[cfg(feature = "cuda")]
        self.last_limit.set(Some(limit.unwrap_or(usize::MAX)));
        #[cfg(not(feature = "cuda"))]
        let _ = (limit, witness);
        Ok(kept)
    }

    /// Uploads `params` to every device for good (`Prover::prepare_device_only`) and returns
    /// the set without its host copy; from then on no stream releases the devices' memory.
    pub(crate) fn keep_on_device(&self, params: &Parameters) -> Result<Parameters, String> {
        #[cfg(feature = "cuda")]
        {
            let mut released = None;
            for (b, _) in &self.list {
                let prover = cuzk::Prover::new().with_custom_backend(b.clone());
                let r = prover
                    .prepare_device_only(params)
                    .map_err(|e| format!("GPU {}: {e}", b.info().device))?;
                released = Some(r);
            }
            self.params_kept.set(true);
            released.ok_or_else(|| "no GPU".to_string())
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = params;
            Err("built without the `cuda` feature".to_string())
        }
    }

    /// After a stream: every device's original limit back.
    pub(crate) fn restore(&self) -> Result<(), String> {
        #[cfg(feature = "cuda")]
        for (b, original) in &self.list {
            b.set_memory_limit(*original)
                .map_err(|e| format!("GPU {}: {e}", b.info().device))?;
        }
        Ok(())
    }

    /// Whether the backends would stream `params` under their limits now (None on the CPU).
    pub(crate) fn would_stream(&self, params: &Parameters) -> Option<bool> {
        #[cfg(feature = "cuda")]
        if !self.list.is_empty() {
            return Some(self.list.iter().any(|(b, _)| b.would_stream(params)));
        }
        let _ = params;
        None
    }

    pub(crate) fn books(&self) -> DeviceBooks {
        #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
        let mut books = DeviceBooks::default();
        #[cfg(feature = "cuda")]
        for (b, _) in &self.list {
            let w = b.witness_evaluations();
            books.on_device += w.on_device;
            books.on_host += w.on_host;
            books.resident_circuits += w.resident_circuits;
            books.circuit_bytes += w.circuit_bytes;
            books.resident_bytes += b.resident_bytes();
            books.streamed_sets += b.streamed_sets();
            books.peak = books.peak.max(b.memory_stats(false).map_or(0, |m| m.peak));
            books.oom_retries += b.oom_retries();
            books.evicted_for_streamed += b.evicted_for_streamed_proofs();
        }
        books
    }
}
