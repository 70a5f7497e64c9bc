//! A device's health: a sticky CUDA error marks it lost, and every later call fails fast.

use std::sync::atomic::Ordering;

use super::backend::CudaBackend;
use super::error::STICKY_CODES;
use crate::error::Error;

impl CudaBackend {
    /// Turns a sticky CUDA error into [`Error::DeviceLost`] and marks the device lost.
    pub(super) fn classify(&self, e: Error) -> Error {
        match e {
            Error::Cuda { call, code, message } if STICKY_CODES.contains(&code) => {
                if !self.lost.swap(true, Ordering::AcqRel) {
                    log::error!(
                        "GPU {}: sticky CUDA error {code} in {call} ({message}); the device is unusable until the process restarts",
                        self.device
                    );
                }
                Error::DeviceLost {
                    device: self.device as usize,
                    code,
                    message: format!("{call}: {message}"),
                }
            }
            other => other,
        }
    }

    pub(super) fn lost_error(&self) -> Error {
        Error::DeviceLost {
            device: self.device as usize,
            code: 0,
            message: "an earlier call hit a sticky CUDA error".into(),
        }
    }
}
