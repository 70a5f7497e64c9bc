//! CUDA pinned host memory for the pool (feature `cuda`), through the driver API (cust).
//!
//! Two ways to get page-locked memory, chosen by [`PinMode`]:
//! - `HostAlloc`: `cuMemHostAlloc` (the driver allocates and pins);
//! - `Register`: anonymous `mmap`, then `cuMemHostRegister` (the default: measured faster on
//!   the H200 host, see docs/BENCHMARKS.md), unregistered and unmapped on free.
//!
//! Both are `PORTABLE`, so every context sees them as pinned. The calls run with the device's
//! primary context current, the same context the kernels' runtime-API code uses: it is pushed
//! on the calling thread's context stack for the call and popped after, so the caller's
//! current context (none, or its own) is left exactly as it was.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;

use cust::sys as cu;

use super::backend::{HeapAllocator, HostAllocator};
use crate::error::{Error, Result};

/// How pinned memory is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinMode {
    /// `cuMemHostAlloc`.
    HostAlloc,
    /// `mmap` + `cuMemHostRegister`.
    #[default]
    Register,
}

/// Page-locked host memory from the CUDA driver.
pub struct CudaPinnedAllocator {
    mode: PinMode,
    heap: HeapAllocator,
    // Keeps the primary context retained while the allocator lives.
    _context: cust::context::Context,
}

impl std::fmt::Debug for CudaPinnedAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaPinnedAllocator").field("mode", &self.mode).finish()
    }
}

fn cu_check(call: &'static str, r: cu::CUresult) -> Result<()> {
    if r == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut msg: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static string (or leaves it null).
    unsafe { cu::cuGetErrorString(r, &mut msg) };
    let message = if msg.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: non-null results of cuGetErrorString are static NUL-terminated strings.
        unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy().into_owned()
    };
    Err(Error::Cuda {
        call,
        code: r as i32,
        message,
    })
}

fn cust_err(call: &'static str, e: cust::error::CudaError) -> Error {
    Error::Cuda {
        call,
        code: e as i32,
        message: e.to_string(),
    }
}

impl CudaPinnedAllocator {
    /// Pinned memory for device `device` (its primary context is retained).
    ///
    /// # Errors
    /// [`Error::Cuda`] when the driver cannot be initialised or the device does not exist.
    pub fn new(device: usize, mode: PinMode) -> Result<Self> {
        cust::init(cust::CudaFlags::empty()).map_err(|e| cust_err("cuInit", e))?;
        let ordinal = u32::try_from(device).map_err(|_| Error::InvalidArgument(format!("device {device}")))?;
        let dev = cust::device::Device::get_device(ordinal).map_err(|e| cust_err("cuDeviceGet", e))?;
        // cust's Context::new retains the primary context and also makes it current on this
        // thread: put back whatever the caller had current (or none).
        let mut before: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the driver is initialised above.
        cu_check("cuCtxGetCurrent", unsafe { cu::cuCtxGetCurrent(&mut before) })?;
        let context = cust::context::Context::new(dev);
        // SAFETY: `before` is the context that was current (or null for none); it is still
        // alive, since nothing here could have destroyed it.
        cu_check("cuCtxSetCurrent", unsafe { cu::cuCtxSetCurrent(before) })?;
        let context = context.map_err(|e| cust_err("cuDevicePrimaryCtxRetain", e))?;
        Ok(Self {
            mode,
            heap: HeapAllocator,
            _context: context,
        })
    }

    /// Makes the primary context current for one driver call, on top of whatever the thread
    /// had current; the guard restores that when it drops.
    fn push_primary(&self) -> Result<Pushed> {
        // SAFETY: the context is the device's primary context, retained by `self._context`
        // for as long as this allocator lives.
        cu_check("cuCtxPushCurrent", unsafe {
            cu::cuCtxPushCurrent_v2(self._context.as_raw())
        })?;
        Ok(Pushed { _not_send: PhantomData })
    }
}

/// The primary context pushed on this thread's context stack; popped on drop, which makes the
/// caller's context (or none) current again. Not `Send`: it must pop on the pushing thread.
struct Pushed {
    _not_send: PhantomData<*const ()>,
}

impl Drop for Pushed {
    fn drop(&mut self) {
        let mut popped: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: this guard exists only after a successful push on this same thread (it is
        // not Send), and every driver call in between is balanced, so the top of the stack is
        // the context pushed; `popped` is a valid out-pointer.
        if let Err(e) = cu_check("cuCtxPopCurrent", unsafe { cu::cuCtxPopCurrent_v2(&mut popped) }) {
            log::error!("pinned allocator: cannot restore the caller's CUDA context: {e}");
        }
    }
}

// SAFETY: `HostAlloc` blocks come from cuMemHostAlloc (page-aligned, page-locked, portable,
// valid until cuMemFreeHost); `Register` blocks are HeapAllocator mappings (see its SAFETY
// note) page-locked by cuMemHostRegister until `free` unregisters and unmaps them. Both are
// pinned, so `is_pinned` is constantly true. The retained primary context keeps the driver
// state alive while blocks are out (the pool frees every block before dropping its backend);
// the driver calls are thread-safe and leave the caller's current context as it was.
unsafe impl HostAllocator for CudaPinnedAllocator {
    fn name(&self) -> &'static str {
        match self.mode {
            PinMode::HostAlloc => "cuda-hostalloc",
            PinMode::Register => "cuda-register",
        }
    }

    fn is_pinned(&self) -> bool {
        true
    }

    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>> {
        let _primary = self.push_primary()?;
        match self.mode {
            PinMode::HostAlloc => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: `p` is a valid out-pointer; the primary context is current.
                cu_check("cuMemHostAlloc", unsafe {
                    cu::cuMemHostAlloc(&mut p, bytes, cu::CU_MEMHOSTALLOC_PORTABLE)
                })?;
                NonNull::new(p.cast::<u8>()).ok_or_else(|| Error::Allocation {
                    bytes,
                    backend: self.name(),
                    reason: "cuMemHostAlloc returned null".into(),
                })
            }
            PinMode::Register => {
                let p = self.heap.allocate(bytes)?;
                // SAFETY: (p, bytes) is a fresh private mapping owned by us; the primary
                // context is current.
                let r = unsafe {
                    cu::cuMemHostRegister_v2(p.as_ptr().cast::<c_void>(), bytes, cu::CU_MEMHOSTREGISTER_PORTABLE)
                };
                if let Err(e) = cu_check("cuMemHostRegister", r) {
                    // SAFETY: the mapping was made just above and is not used elsewhere.
                    unsafe { self.heap.free(p, bytes) };
                    return Err(e);
                }
                Ok(p)
            }
        }
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        let _primary = match self.push_primary() {
            Ok(p) => Some(p),
            Err(e) => {
                log::error!("pinned free of {bytes} bytes: {e}");
                None
            }
        };
        match self.mode {
            PinMode::HostAlloc => {
                // SAFETY: the caller guarantees ptr came from our cuMemHostAlloc.
                if let Err(e) = cu_check("cuMemFreeHost", unsafe { cu::cuMemFreeHost(ptr.as_ptr().cast()) }) {
                    log::error!("{e}");
                }
            }
            PinMode::Register => {
                // SAFETY: the caller guarantees (ptr, bytes) is one of our registered mappings.
                if let Err(e) = cu_check("cuMemHostUnregister", unsafe {
                    cu::cuMemHostUnregister(ptr.as_ptr().cast())
                }) {
                    log::error!("{e}");
                }
                // SAFETY: as above; the mapping came from HeapAllocator::allocate.
                unsafe { self.heap.free(ptr, bytes) };
            }
        }
    }
}
