//! [`PinnedBuffer`]: one buffer checked out of a [`PinnedPool`], its bytes exposed as
//! `MaybeUninit<u8>`, returned to the pool when dropped.

use std::fmt;
use std::mem::MaybeUninit;

use super::{Block, PinnedPool};

/// A buffer checked out of a [`PinnedPool`]; dropping it returns it to the pool.
///
/// Its contents are unspecified when checked out (a reused buffer holds old bytes), so it
/// is exposed as `MaybeUninit<u8>`; [`PinnedVec`](crate::PinnedVec) builds typed, initialised data on it.
pub struct PinnedBuffer {
    pub(super) block: Option<Block>,
    pub(super) len: usize,
    pub(super) pinned: bool,
    pub(super) pool: PinnedPool,
}

impl fmt::Debug for PinnedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

impl PinnedBuffer {
    fn block(&self) -> &Block {
        self.block.as_ref().expect("a live PinnedBuffer always holds its block")
    }

    /// The number of bytes asked for at checkout.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never true: checkouts of 0 bytes are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The usable size of this buffer: at least [`len`](Self::len), page-rounded, and up to
    /// `max_reuse_factor` × the request when an idle buffer was reused.
    pub fn capacity(&self) -> usize {
        self.block().capacity
    }

    /// Whether the bytes are page-locked (false for the heap backend and for fallbacks).
    pub fn is_pinned(&self) -> bool {
        self.pinned && !self.block().fallback
    }

    /// Whether this buffer came from the unpinned fallback rather than the pool's backend.
    pub fn is_fallback(&self) -> bool {
        self.block().fallback
    }

    /// The pool this buffer returns to.
    pub fn pool(&self) -> &PinnedPool {
        &self.pool
    }

    /// The start of the buffer (page-aligned).
    pub fn as_ptr(&self) -> *const u8 {
        self.block().ptr.as_ptr()
    }

    /// The start of the buffer (page-aligned), for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.block().ptr.as_ptr()
    }

    /// The whole capacity as possibly-uninitialised bytes.
    pub fn as_uninit_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        let block = self.block();
        // SAFETY: the block is `capacity` bytes of memory owned exclusively by this buffer
        // (borrowed mutably here) and live until the buffer drops; MaybeUninit<u8> has no
        // validity requirements.
        unsafe { std::slice::from_raw_parts_mut(block.ptr.as_ptr().cast::<MaybeUninit<u8>>(), block.capacity) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.pool.inner.give_back(block);
        }
    }
}

// SAFETY: PinnedBuffer owns its block exclusively (no aliasing handles exist) and the pool
// handle is Send + Sync; moving or sharing it between threads is like a `Box<[u8]>`.
unsafe impl Send for PinnedBuffer {}
// SAFETY: shared references only allow reading the pointer values and metadata.
unsafe impl Sync for PinnedBuffer {}
