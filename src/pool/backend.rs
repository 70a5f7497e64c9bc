//! Host-allocator backends: where a pool's bytes come from.
//!
//! A backend hands out page-aligned blocks and takes back exactly the blocks it handed out.
//! Pool memory is only ever freed by the backend that allocated it — never by Rust's global
//! allocator — which is what makes it safe to hand pinned memory to a `ConstraintSystem` that
//! grows: growth moves to another block of the pool, it never reallocates this one.

use std::ptr::NonNull;

use crate::error::{Error, Result};

/// Size of the pages blocks are aligned to and rounded up to.
pub const PAGE_SIZE: usize = 4096;

/// A source of host memory for [`PinnedPool`](super::PinnedPool).
///
/// The CUDA pinned backend (page-locked memory the GPU can DMA from at line rate) arrives with
/// the `cuda` feature; [`HeapAllocator`] serves without it.
///
/// # Safety
/// The pool's unsafe code (typed slices over blocks, copies during growth, device copies out of
/// pinned blocks) trusts what an implementor returns. Implementing this trait promises:
///
/// - **Size and alignment.** A pointer returned by [`allocate(bytes)`](Self::allocate) is the
///   start of a block of at least `bytes` bytes, aligned to [`PAGE_SIZE`].
/// - **Valid memory.** The whole block is readable and writable (its contents may be
///   anything; reading it needs no initialisation beyond what the pool writes) from the
///   moment `allocate` returns until the block is handed to [`free`](Self::free).
/// - **Exclusive.** The block overlaps no other live block of this or any other allocator,
///   nor any memory the implementor (or anyone else) reads or writes while it is allocated:
///   the pool owns it exclusively until it frees it.
/// - **Stable until freed.** The block stays valid, at the same address, until `free` is
///   called with exactly the `(ptr, bytes)` pair that `allocate` produced (`bytes` being the
///   argument given to `allocate`); nothing else (drop of the allocator included, while
///   blocks are out) releases, moves, remaps or changes the protection of it.
/// - **Truthful pinning.** [`is_pinned`](Self::is_pinned) returns the same value on every call,
///   and when it is `true` every block is page-locked host memory that the CUDA driver may DMA
///   from and to for as long as it is allocated. (The kernels accept pageable memory too, so
///   memory safety does not rest on this claim; a false `true` costs speed and misreports.)
/// - **Threads.** `allocate` and `free` may be called from any thread, concurrently, and a
///   block allocated on one thread may be freed on another (hence `Send + Sync`).
/// - **Errors, not panics.** `allocate` reports failure as an `Err` and never returns a
///   dangling or null block; neither method unwinds across the pool's bookkeeping.
pub unsafe trait HostAllocator: Send + Sync + 'static {
    /// A short name for logs and errors (`"heap"`, `"cuda-pinned"`).
    fn name(&self) -> &'static str;

    /// Whether blocks from this backend are page-locked (pinned) for DMA.
    fn is_pinned(&self) -> bool;

    /// Allocates a block of at least `bytes` bytes (`bytes` is a multiple of [`PAGE_SIZE`]),
    /// aligned to [`PAGE_SIZE`], readable and writable until [`HostAllocator::free`].
    ///
    /// # Errors
    /// [`Error::Allocation`] when the operating system or driver refuses.
    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>>;

    /// Returns a block to where it came from.
    ///
    /// # Safety
    /// `ptr` and `bytes` must come from one earlier [`HostAllocator::allocate`] call on this
    /// same backend, and the block must not be used or freed again afterwards.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);
}

/// Unpinned, page-aligned memory straight from the operating system (anonymous `mmap`).
///
/// Not through the global allocator, so that a mistaken `free`/`Vec` drop of a pool pointer is
/// an invalid free that tools like valgrind report, rather than silently "working". Fresh pages
/// read as zero and are committed on first touch.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeapAllocator;

// SAFETY: blocks are fresh anonymous private mappings of `bytes` bytes (page-aligned by the
// kernel, readable and writable, disjoint from every other mapping) that stay mapped until
// `free` unmaps exactly that range; `is_pinned` is constantly false; mmap/munmap are
// thread-safe and the type holds no state.
unsafe impl HostAllocator for HeapAllocator {
    fn name(&self) -> &'static str {
        "heap"
    }

    fn is_pinned(&self) -> bool {
        false
    }

    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>> {
        if bytes == 0 {
            return Err(Error::InvalidArgument("allocation of 0 bytes".into()));
        }
        // SAFETY: an anonymous private mapping with no address hint has no preconditions; the
        // result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Allocation {
                bytes,
                backend: self.name(),
                reason: std::io::Error::last_os_error().to_string(),
            });
        }
        NonNull::new(ptr.cast::<u8>()).ok_or_else(|| Error::Allocation {
            bytes,
            backend: self.name(),
            reason: "mmap returned a null pointer".into(),
        })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: the caller guarantees (ptr, bytes) is one mapping made by `allocate` above
        // and that nothing uses it any more.
        let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), bytes) };
        if rc != 0 {
            log::error!(
                "munmap of {bytes} bytes at {ptr:p} failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Rounds `bytes` up to a whole number of pages.
pub(crate) fn page_round(bytes: usize) -> Option<usize> {
    bytes.checked_add(PAGE_SIZE - 1).map(|b| b & !(PAGE_SIZE - 1))
}
