//! `PinnedVec`: a growable vector of plain values whose elements live in a pool buffer.
//!
//! The invariant this module exists for: **a pool pointer is never handed to the global
//! allocator.** There is no `Vec::from_raw_parts` over pool memory; growing past capacity
//! checks out a larger buffer from the same pool, copies, and returns the old one to the pool.
//!
//! Growth goes through [`PinnedPool::checkout`], so it obeys the pool's configuration like any
//! checkout: it may wait for room, it falls back to unpinned memory (counted and logged) only
//! when `allow_fallback` is on, and otherwise it fails. A failed growth never aborts or panics:
//! the `try_*` methods return the error and leave the vector as it was; [`PinnedVec::push`]
//! and [`PinnedVec::extend_from_slice`] (for callers that cannot return an error, like a
//! `ConstraintSystem`'s `enforce`) put the vector in a *failed* state instead — elements
//! dropped, buffer back in the pool, later appends ignored — and keep the error for
//! [`PinnedVec::error`] / [`PinnedVec::take_error`]. Heap vectors (no pool) reserve with
//! `try_reserve`, so host out-of-memory is an [`Error::Allocation`] there too.

use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};

use super::{PinnedBuffer, PinnedPool, PAGE_SIZE};
use crate::error::Error;

enum Storage<T> {
    /// Elements in a pool buffer (or a counted fallback buffer of the pool).
    Pool(PinnedBuffer),
    /// Elements in an ordinary vector (no pool).
    Heap(Vec<T>),
    /// A growth failed: the elements are gone, the buffer is back in its pool, and appends are
    /// ignored until [`PinnedVec::release`].
    Failed,
}

/// A vector of `T: Copy` backed by a [`PinnedBuffer`] (or, without a pool, a `Vec`).
pub struct PinnedVec<T: Copy> {
    storage: Storage<T>,
    /// Initialised elements (for `Storage::Pool`; a `Heap` vector tracks its own length).
    len: usize,
    /// Why the vector failed (`Storage::Failed`), until taken.
    error: Option<Error>,
    _marker: PhantomData<T>,
}

impl<T: Copy> Default for PinnedVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> std::fmt::Debug for PinnedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedVec")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("pinned", &self.is_pinned())
            .field("failed", &self.is_failed())
            .finish()
    }
}

/// The name heap (global-allocator) failures carry in [`Error::Allocation`].
const GLOBAL_HEAP: &str = "global-heap";

/// An [`Error::Allocation`] for `elements` elements of `elem` bytes from the global allocator.
pub(crate) fn heap_error(elements: usize, elem: usize, e: &std::collections::TryReserveError) -> Error {
    Error::Allocation {
        bytes: elements.saturating_mul(elem),
        backend: GLOBAL_HEAP,
        reason: e.to_string(),
    }
}

/// A `Vec` of `n` elements written in place by `fill` (no zero-fill pass first). `fill` must
/// write every one of the `n` slots it is given: the crate's callers write them all in a
/// parallel loop.
///
/// # Errors
/// [`Error::Allocation`] when the host cannot hold them.
pub(crate) fn fill_vec<T: Copy>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> crate::Result<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n).map_err(|e| heap_error(n, size_of::<T>(), &e))?;
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: the crate-internal callers' `fill` writes each of the first n slots (a
    // parallel loop over all of them), and the capacity is at least n.
    unsafe { v.set_len(n) };
    Ok(v)
}

/// A copy of `e` (the crate's `Error` is not `Clone`: it can hold an `io::Error`): the
/// variants an allocation or a synthesis can fail with exactly, anything else as an
/// [`Error::InvalidArgument`] with the same message.
pub(crate) fn copy_error(e: &Error) -> Error {
    match e {
        Error::PoolExhausted {
            requested,
            in_use,
            cap,
            waited,
        } => Error::PoolExhausted {
            requested: *requested,
            in_use: *in_use,
            cap: *cap,
            waited: *waited,
        },
        Error::Allocation { bytes, backend, reason } => Error::Allocation {
            bytes: *bytes,
            backend,
            reason: reason.clone(),
        },
        Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
        Error::Cuda { call, code, message } => Error::Cuda {
            call,
            code: *code,
            message: message.clone(),
        },
        other => Error::InvalidArgument(other.to_string()),
    }
}

impl<T: Copy> PinnedVec<T> {
    const ELEM: usize = {
        assert!(size_of::<T>() > 0, "PinnedVec does not hold zero-sized types");
        assert!(align_of::<T>() <= PAGE_SIZE, "pool buffers are page-aligned");
        size_of::<T>()
    };

    /// An empty vector on the heap (no pool).
    pub fn new() -> Self {
        Self {
            storage: Storage::Heap(Vec::new()),
            len: 0,
            error: None,
            _marker: PhantomData,
        }
    }

    /// An empty heap vector with room for `capacity` elements.
    ///
    /// # Errors
    /// [`Error::Allocation`] when the global allocator cannot provide the room (instead of
    /// aborting the process, as `Vec::with_capacity` would).
    pub fn with_heap_capacity(capacity: usize) -> crate::Result<Self> {
        let mut v = Vec::new();
        v.try_reserve_exact(capacity)
            .map_err(|e| heap_error(capacity, Self::ELEM, &e))?;
        Ok(Self {
            storage: Storage::Heap(v),
            len: 0,
            error: None,
            _marker: PhantomData,
        })
    }

    /// An empty vector in a buffer from `pool` with room for `capacity` (≥ 1) elements.
    ///
    /// # Errors
    /// Whatever [`PinnedPool::checkout`] returns.
    pub fn with_capacity_in(pool: &PinnedPool, capacity: usize) -> crate::Result<Self> {
        let bytes = Self::bytes_for(capacity.max(1))?;
        Ok(Self {
            storage: Storage::Pool(pool.checkout(bytes)?),
            len: 0,
            error: None,
            _marker: PhantomData,
        })
    }

    /// A vector over a buffer someone filled already: its first `len` elements are the
    /// buffer's first `len · size_of::<T>()` bytes. No copy; the buffer goes back to its
    /// pool when the vector is released or dropped, and growth works as for any pool vector.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `len` elements do not fit in the buffer, or `T` needs
    /// more alignment than a page.
    ///
    /// # Safety
    /// The first `len · size_of::<T>()` bytes of `buf` must hold `len` valid values of `T`.
    pub unsafe fn from_buffer(buf: PinnedBuffer, len: usize) -> crate::Result<Self> {
        let bytes = Self::bytes_for(len)?;
        if bytes > buf.capacity() || align_of::<T>() > PAGE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "a buffer of {} bytes cannot hold {len} elements of {} bytes",
                buf.capacity(),
                Self::ELEM
            )));
        }
        Ok(Self {
            storage: Storage::Pool(buf),
            len,
            error: None,
            _marker: PhantomData,
        })
    }

    /// A vector of `n` elements in a buffer from `pool`, written in place by `fill` (no copy,
    /// no zero-fill pass). `fill` must write every one of the `n` slots it is given: the
    /// crate's callers write them all in a parallel loop.
    ///
    /// # Errors
    /// What the pool's checkout returns; [`Error::InvalidArgument`] when `n` elements
    /// overflow.
    pub(crate) fn fill_in(
        pool: &PinnedPool,
        n: usize,
        fill: impl FnOnce(&mut [MaybeUninit<T>]),
    ) -> crate::Result<Self> {
        let bytes = Self::bytes_for(n.max(1))?;
        let mut buf = pool.checkout(bytes)?;
        let room = buf.as_uninit_mut();
        if room.len() < n * Self::ELEM {
            return Err(Error::InvalidArgument(format!(
                "pool buffer of {} bytes for {n} elements",
                room.len()
            )));
        }
        // SAFETY: the buffer is page-aligned (aligned for T: `ELEM` checks it) and at least
        // n·size_of::<T>() bytes (checked above); it is exclusively borrowed for the view's
        // lifetime; MaybeUninit slots may hold anything.
        let slots = unsafe { std::slice::from_raw_parts_mut(room.as_mut_ptr().cast::<MaybeUninit<T>>(), n) };
        fill(slots);
        // SAFETY: the crate-internal callers' `fill` writes each of the n slots, so the first
        // n·size_of::<T>() bytes of the buffer hold n valid values.
        unsafe { Self::from_buffer(buf, n) }
    }

    fn bytes_for(elements: usize) -> crate::Result<usize> {
        elements
            .checked_mul(Self::ELEM)
            .ok_or_else(|| Error::InvalidArgument(format!("{elements} elements overflow")))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Pool(_) => self.len,
            Storage::Heap(v) => v.len(),
            Storage::Failed => 0,
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements that fit without growing.
    pub fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Pool(buf) => buf.capacity() / Self::ELEM,
            Storage::Heap(v) => v.capacity(),
            Storage::Failed => 0,
        }
    }

    /// Whether the elements live in pinned memory.
    pub fn is_pinned(&self) -> bool {
        match &self.storage {
            Storage::Pool(buf) => buf.is_pinned(),
            Storage::Heap(_) | Storage::Failed => false,
        }
    }

    /// Whether the elements live in a pool buffer (pinned or not).
    pub fn is_pooled(&self) -> bool {
        matches!(self.storage, Storage::Pool(_))
    }

    /// The buffer holding the elements, when pooled.
    pub fn buffer(&self) -> Option<&PinnedBuffer> {
        match &self.storage {
            Storage::Pool(buf) => Some(buf),
            Storage::Heap(_) | Storage::Failed => None,
        }
    }

    /// Whether a growth failed under [`push`](Self::push) or
    /// [`extend_from_slice`](Self::extend_from_slice): the vector is empty, holds no buffer and
    /// ignores appends until [`release`](Self::release).
    pub fn is_failed(&self) -> bool {
        matches!(self.storage, Storage::Failed)
    }

    /// Why the vector failed, if it did (and the error was not taken yet).
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// Takes the error that failed the vector, if any. The vector stays failed.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        match &self.storage {
            // SAFETY: the first `len` elements of the buffer were written by the appending
            // methods (or copied during growth); the buffer is page-aligned (so aligned for
            // T), at least `len * size_of::<T>()` bytes, and borrowed for the lifetime of the
            // returned slice.
            Storage::Pool(buf) => unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), self.len) },
            Storage::Heap(v) => v,
            Storage::Failed => &[],
        }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.len;
        match &mut self.storage {
            // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
            Storage::Pool(buf) => unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), len) },
            Storage::Heap(v) => v,
            Storage::Failed => &mut [],
        }
    }

    /// Makes room for at least `additional` more elements (within the pool for a pooled
    /// vector, following the pool's configuration).
    ///
    /// # Errors
    /// What the pool's checkout returns ([`Error::PoolExhausted`], [`Error::Allocation`]), or
    /// [`Error::Allocation`] from the global allocator for a heap vector, or
    /// [`Error::InvalidArgument`] when the size overflows or the vector has failed. The vector
    /// is unchanged on error.
    pub fn try_reserve(&mut self, additional: usize) -> crate::Result<()> {
        let needed = self
            .len()
            .checked_add(additional)
            .ok_or_else(|| Error::InvalidArgument(format!("{} + {additional} elements overflow", self.len())))?;
        if needed <= self.capacity() {
            return Ok(());
        }
        match &mut self.storage {
            Storage::Heap(v) => v
                .try_reserve(additional)
                .map_err(|e| heap_error(additional, Self::ELEM, &e)),
            Storage::Pool(_) => self.grow(needed),
            Storage::Failed => Err(self.failed_error()),
        }
    }

    /// Appends one element, growing (within the pool) when full.
    ///
    /// # Errors
    /// As [`try_reserve`](Self::try_reserve); the vector is unchanged on error.
    pub fn try_push(&mut self, value: T) -> crate::Result<()> {
        if self.len() == self.capacity() {
            self.try_reserve(1)?;
        }
        match &mut self.storage {
            Storage::Heap(v) => v.push(value), // room reserved above: no reallocation
            Storage::Pool(buf) => {
                // SAFETY: len < capacity (checked or grown above), so the slot lies inside
                // the buffer, which is aligned for T and exclusively borrowed.
                unsafe { buf.as_mut_ptr().cast::<T>().add(self.len).write(value) };
                self.len += 1;
            }
            Storage::Failed => return Err(self.failed_error()),
        }
        Ok(())
    }

    /// Appends all of `values`.
    ///
    /// # Errors
    /// As [`try_reserve`](Self::try_reserve); the vector is unchanged on error.
    pub fn try_extend_from_slice(&mut self, values: &[T]) -> crate::Result<()> {
        self.try_reserve(values.len())?;
        match &mut self.storage {
            Storage::Heap(v) => v.extend_from_slice(values), // room reserved above
            Storage::Pool(buf) => {
                // SAFETY: len + values.len() <= capacity (reserved above); source and
                // destination cannot overlap because `values` is a shared borrow while the
                // buffer is exclusively borrowed through `&mut self`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        values.as_ptr(),
                        buf.as_mut_ptr().cast::<T>().add(self.len),
                        values.len(),
                    );
                }
                self.len += values.len();
            }
            Storage::Failed => return Err(self.failed_error()),
        }
        Ok(())
    }

    /// Appends one element, growing (within the pool) when full. If the growth fails, the
    /// vector fails: see [`is_failed`](Self::is_failed) and [`error`](Self::error). Never
    /// panics or aborts on a failed growth.
    pub fn push(&mut self, value: T) {
        if self.is_failed() {
            return;
        }
        if let Err(e) = self.try_push(value) {
            self.fail(e);
        }
    }

    /// Appends all of `values`; on a failed growth the vector fails, as for [`push`](Self::push).
    pub fn extend_from_slice(&mut self, values: &[T]) {
        if self.is_failed() {
            return;
        }
        if let Err(e) = self.try_extend_from_slice(values) {
            self.fail(e);
        }
    }

    /// Drops the elements and gives the buffer back to its pool; the vector is then an empty
    /// heap vector (a failed vector too: its failure is cleared). Idempotent.
    pub fn release(&mut self) {
        self.storage = Storage::Heap(Vec::new());
        self.len = 0;
        self.error = None;
    }

    /// Puts the vector in the failed state: elements dropped, buffer back to its pool.
    fn fail(&mut self, e: Error) {
        log::error!(
            "{} vector of {} elements cannot grow ({e}); its contents are dropped and the error is kept",
            if self.is_pooled() { "pinned" } else { "heap" },
            self.len()
        );
        self.storage = Storage::Failed;
        self.len = 0;
        self.error = Some(e);
    }

    fn failed_error(&self) -> Error {
        match &self.error {
            Some(e) => copy_error(e),
            None => Error::InvalidArgument("the vector failed to grow earlier".into()),
        }
    }

    /// Moves to a pool buffer for at least `min_capacity` elements: twice the current
    /// capacity (but not past the room the pool's cap leaves), or `min_capacity` if larger. The checkout
    /// follows the pool's configuration (waiting, counted fallback only when allowed).
    ///
    /// # Errors
    /// The checkout's error; the vector keeps its buffer and elements.
    fn grow(&mut self, min_capacity: usize) -> crate::Result<()> {
        let Storage::Pool(old) = &self.storage else {
            return Err(Error::InvalidArgument(
                "grow of a vector that has no pool buffer".into(),
            ));
        };
        let pool = old.pool().clone();
        let min_bytes = Self::bytes_for(min_capacity)?;
        // Double, but not past what the cap leaves free (the old buffer stays out during the
        // copy): near the cap, growing to just the need can succeed where doubling cannot.
        let room = pool.config().max_bytes.saturating_sub(pool.stats().bytes_in_use);
        let doubled = old.capacity().saturating_mul(2).min(room);
        let bytes = min_bytes.max(doubled);
        let mut buf = pool.checkout(bytes)?;
        log::debug!(
            "pinned vector grows from {} to {} elements (copying {} bytes{})",
            self.capacity(),
            buf.capacity() / Self::ELEM,
            self.len * Self::ELEM,
            if buf.is_fallback() {
                ", into an unpinned fallback buffer"
            } else {
                ""
            }
        );
        // SAFETY: the old buffer holds `len` initialised elements; the new one has room for at
        // least `min_capacity >= len` and is a different allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(old.as_ptr().cast::<T>(), buf.as_mut_ptr().cast::<T>(), self.len);
        }
        // The old buffer goes back to the pool here.
        self.storage = Storage::Pool(buf);
        Ok(())
    }
}
