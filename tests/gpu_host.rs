//! CUDA pinned host memory (feature `cuda`, needs a GPU): allocating and freeing pool buffers
//! leaves the calling thread's CUDA context as it found it — none, or the caller's own — and
//! the buffers are page-locked for every context.

#![cfg(feature = "cuda")]

use cust::sys as cu;
use cuzk::pool::PinMode;
use cuzk::{PinnedPool, PoolConfig};

const MIB: usize = 1 << 20;

fn ok(call: &str, r: cu::CUresult) {
    assert_eq!(r, cu::CUresult::CUDA_SUCCESS, "{call}");
}

/// The calling thread's current context (null for none).
fn current() -> cu::CUcontext {
    let mut c: cu::CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the driver is initialised (by the pool's allocator).
    ok("cuCtxGetCurrent", unsafe { cu::cuCtxGetCurrent(&mut c) });
    c
}

/// Checks out, uses and frees (shrink) a few buffers, checking the current context after
/// each driver call.
fn exercise(pool: &PinnedPool, expected: cu::CUcontext, with_context: bool) {
    let mut bufs = Vec::new();
    for mib in [1, 3, 2] {
        let mut buf = pool.checkout(mib * MIB).unwrap();
        assert!(buf.is_pinned() && !buf.is_fallback());
        assert_eq!(current(), expected, "allocation changed the current context");
        for b in buf.as_uninit_mut().iter_mut().step_by(4096) {
            b.write(0xa5);
        }
        if with_context {
            // Portable pinned memory is known to the driver as host memory in this (any)
            // context; pageable memory would be an error here.
            let mut kind: u32 = 0;
            // SAFETY: the buffer is live; `kind` is a valid out-pointer for this attribute (an
            // unsigned int); a context is current.
            ok("cuPointerGetAttribute", unsafe {
                cu::cuPointerGetAttribute(
                    (&mut kind as *mut u32).cast(),
                    cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                    buf.as_mut_ptr() as cu::CUdeviceptr,
                )
            });
            assert_eq!(kind, cu::CUmemorytype::CU_MEMORYTYPE_HOST as u32);
        }
        bufs.push(buf);
    }
    drop(bufs);
    assert_eq!(pool.shrink(0), 6 * MIB, "every buffer freed");
    assert_eq!(current(), expected, "free changed the current context");
}

#[test]
fn pinned_allocations_leave_the_callers_context_as_they_found_it() {
    for mode in [PinMode::Register, PinMode::HostAlloc] {
        // A thread with no current context: the pool made there, used there, dropped there.
        std::thread::spawn(move || {
            let pool = PinnedPool::cuda(0, mode, PoolConfig::default()).unwrap();
            assert!(current().is_null(), "{mode:?}: making the pool set a context");
            exercise(&pool, std::ptr::null_mut(), false);
            drop(pool.checkout(MIB).unwrap());
            drop(pool); // frees the idle buffer
            assert!(current().is_null(), "{mode:?}: dropping the pool set a context");
        })
        .join()
        .unwrap();

        // A thread with its own (non-primary) context current, and one pushed below it.
        std::thread::spawn(move || {
            let pool = PinnedPool::cuda(0, mode, PoolConfig::default()).unwrap();
            let mut dev: cu::CUdevice = 0;
            let mut below: cu::CUcontext = std::ptr::null_mut();
            let mut mine: cu::CUcontext = std::ptr::null_mut();
            let mut primary: cu::CUcontext = std::ptr::null_mut();
            // SAFETY: valid out-pointers; both contexts are destroyed and the primary
            // context released below.
            unsafe {
                ok("cuDeviceGet", cu::cuDeviceGet(&mut dev, 0));
                ok("cuCtxCreate", cu::cuCtxCreate_v2(&mut below, 0, dev));
                ok("cuCtxCreate", cu::cuCtxCreate_v2(&mut mine, 0, dev));
                ok(
                    "cuDevicePrimaryCtxRetain",
                    cu::cuDevicePrimaryCtxRetain(&mut primary, dev),
                );
            }
            assert_eq!(current(), mine);
            assert!(
                mine != primary && below != primary,
                "the caller's contexts are not the primary one"
            );
            exercise(&pool, mine, true);
            // The context stack is as it was: popping `mine` uncovers `below`.
            let mut popped: cu::CUcontext = std::ptr::null_mut();
            // SAFETY: a valid out-pointer; `mine` is on top of this thread's stack.
            ok("cuCtxPopCurrent", unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
            assert_eq!(popped, mine);
            assert_eq!(current(), below, "the stack below the caller's context changed");
            exercise(&pool, below, true);
            drop(pool);
            assert_eq!(current(), below);
            // SAFETY: both contexts were created above and are not used afterwards; the
            // primary context was retained above.
            unsafe {
                ok("cuCtxDestroy", cu::cuCtxDestroy_v2(mine));
                ok("cuCtxDestroy", cu::cuCtxDestroy_v2(below));
                ok("cuDevicePrimaryCtxRelease", cu::cuDevicePrimaryCtxRelease_v2(dev));
            }
        })
        .join()
        .unwrap();
    }
}

#[test]
fn a_buffer_freed_on_another_thread_leaves_both_threads_alone() {
    let pool = PinnedPool::cuda(0, PinMode::default(), PoolConfig::default()).unwrap();
    let buf = std::thread::spawn({
        let pool = pool.clone();
        move || {
            let buf = pool.checkout(2 * MIB).unwrap();
            assert!(current().is_null());
            buf
        }
    })
    .join()
    .unwrap();
    std::thread::spawn(move || {
        drop(buf);
        assert_eq!(pool.shrink(0), 2 * MIB);
        assert!(current().is_null());
    })
    .join()
    .unwrap();
}
