//! The devices: how many, what each is (the probe), how much memory is free.

use super::error::check;
use super::ffi;
use crate::error::{Error, Result};

/// Number of CUDA devices the driver sees.
///
/// # Errors
/// [`Error::Cuda`] when the driver cannot be initialised (no GPU, no driver).
pub fn device_count() -> Result<usize> {
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer for the duration of the call.
    check("cuzk_k_device_count", unsafe { ffi::cuzk_k_device_count(&mut n) })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// What the device probe found on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device ordinal.
    pub device: usize,
    /// The GPU's name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Version (10·major + minor) of the code the driver picked for this GPU.
    pub binary_version: u32,
    /// Free device memory when probed, bytes.
    pub free_bytes: usize,
    /// Total device memory, bytes.
    pub total_bytes: usize,
}

/// The SM architectures this build holds SASS for (`CUZK_CUDA_ARCHS` at build time); the
/// last one also as PTX.
pub const BUILT_ARCHS: &str = env!("CUZK_BUILT_ARCHS");

/// Device memory a GPU must have free to be used at all (a 2^10 proof needs far less; this
/// keeps a nearly full GPU from being picked).
pub const MIN_FREE_BYTES: usize = 256 << 20;

/// Checks that GPU `device` can prove: it exists, this build holds code for its architecture,
/// a real kernel launches and returns the right value, and it has [`MIN_FREE_BYTES`] free.
///
/// # Errors
/// [`Error::NoGpu`] saying which check failed.
pub fn probe(device: usize) -> Result<DeviceInfo> {
    let count = device_count().map_err(|e| Error::NoGpu(format!("CUDA driver: {e}")))?;
    if device >= count {
        return Err(Error::NoGpu(format!("GPU {device} requested, the driver sees {count}")));
    }
    let ordinal = i32::try_from(device).map_err(|_| Error::NoGpu(format!("GPU ordinal {device}")))?;
    // SAFETY: KDeviceInfo is plain data (integers and a char array): all zeros is valid.
    let mut info: ffi::KDeviceInfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer for the duration of the call.
    let r = unsafe { ffi::cuzk_k_device_probe(ordinal, &mut info) };
    if r.code != 0 {
        return Err(Error::NoGpu(format!(
            "GPU {device} failed the probe ({}, code {}); this build has code for sm_{{{BUILT_ARCHS}}}",
            r.message(),
            r.code
        )));
    }
    let name: String = info
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    let info = DeviceInfo {
        device,
        name,
        compute_capability: (info.cc_major.max(0) as u32, info.cc_minor.max(0) as u32),
        sm_count: info.sm_count.max(0) as u32,
        binary_version: info.binary_version.max(0) as u32,
        free_bytes: info.free_bytes,
        total_bytes: info.total_bytes,
    };
    if info.free_bytes < MIN_FREE_BYTES {
        return Err(Error::NoGpu(format!(
            "GPU {device} ({}) has {} MiB free, cuzk needs at least {} MiB",
            info.name,
            info.free_bytes >> 20,
            MIN_FREE_BYTES >> 20
        )));
    }
    Ok(info)
}

/// Free and total memory of GPU `device`, as `cudaMemGetInfo` reports them.
///
/// # Errors
/// [`Error::Cuda`] from the driver.
pub fn device_memory(device: usize) -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both out-pointers are valid for the call.
    check("cuzk_k_device_mem_info", unsafe {
        ffi::cuzk_k_device_mem_info(device as i32, &mut free, &mut total)
    })?;
    Ok((free, total))
}
