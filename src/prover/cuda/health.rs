//! A device's health: a sticky CUDA error marks it lost, and every later call fails fast.

use std::sync::atomic::{AtomicBool, Ordering};

use super::error::{check, STICKY_CODES};
use super::ffi;
use crate::error::{Error, Result};

/// One device's ordinal and whether a sticky error has lost it. Shared by the backend's parts
/// that call the kernels: each turns its errors into [`Error::DeviceLost`] here.
pub(super) struct Health {
    device: i32,
    lost: AtomicBool,
}

impl Health {
    /// A device not lost (yet).
    pub(super) fn new(device: i32) -> Self {
        Self {
            device,
            lost: AtomicBool::new(false),
        }
    }

    /// The device ordinal, as the kernels take it.
    pub(super) fn device(&self) -> i32 {
        self.device
    }

    /// Whether a sticky CUDA error has made this device unusable.
    pub(super) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// [`check`]s a kernel result, sticky errors made [`Error::DeviceLost`].
    pub(super) fn check(&self, call: &'static str, r: ffi::KResult) -> Result<()> {
        check(call, r).map_err(|e| self.classify(e))
    }

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
