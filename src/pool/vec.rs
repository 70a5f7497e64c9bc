//! `PinnedVec`: a growable vector of plain values whose elements live in a pool buffer.
//!
//! The invariant this module exists for: **a pool pointer is never handed to the global
//! allocator.** There is no `Vec::from_raw_parts` over pool memory; growing past capacity
//! checks out a larger buffer from the same pool, copies, and returns the old one to the pool.

use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use super::{PinnedBuffer, PinnedPool, PAGE_SIZE};
use crate::error::Error;

enum Storage<T> {
    /// Elements in a pool buffer.
    Pool(PinnedBuffer),
    /// Elements in an ordinary vector (no pool, or after a fallback during growth).
    Heap(Vec<T>),
}

/// A vector of `T: Copy` backed by a [`PinnedBuffer`] (or, without a pool, a `Vec`).
pub struct PinnedVec<T: Copy> {
    storage: Storage<T>,
    /// Initialised elements (for `Storage::Pool`; a `Heap` vector tracks its own length).
    len: usize,
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
            .finish()
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
            _marker: PhantomData,
        }
    }

    /// An empty heap vector with room for `capacity` elements.
    pub fn with_heap_capacity(capacity: usize) -> Self {
        Self {
            storage: Storage::Heap(Vec::with_capacity(capacity)),
            len: 0,
            _marker: PhantomData,
        }
    }

    /// An empty vector in a buffer from `pool` with room for `capacity` (≥ 1) elements.
    ///
    /// # Errors
    /// Whatever [`PinnedPool::checkout`] returns.
    pub fn with_capacity_in(pool: &PinnedPool, capacity: usize) -> crate::Result<Self> {
        let bytes = capacity
            .max(1)
            .checked_mul(Self::ELEM)
            .ok_or_else(|| Error::InvalidArgument(format!("{capacity} elements overflow")))?;
        Ok(Self {
            storage: Storage::Pool(pool.checkout(bytes)?),
            len: 0,
            _marker: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Pool(_) => self.len,
            Storage::Heap(v) => v.len(),
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
        }
    }

    /// Whether the elements live in pinned memory.
    pub fn is_pinned(&self) -> bool {
        match &self.storage {
            Storage::Pool(buf) => buf.is_pinned(),
            Storage::Heap(_) => false,
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
            Storage::Heap(_) => None,
        }
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        match &self.storage {
            // SAFETY: the first `len` elements of the buffer were written by `push` /
            // `extend_from_slice` (or copied during growth); the buffer is page-aligned (so
            // aligned for T), at least `len * size_of::<T>()` bytes, and borrowed for the
            // lifetime of the returned slice.
            Storage::Pool(buf) => unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<T>(), self.len) },
            Storage::Heap(v) => v,
        }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.len;
        match &mut self.storage {
            // SAFETY: as in `as_slice`, with exclusive access through `&mut self`.
            Storage::Pool(buf) => unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), len) },
            Storage::Heap(v) => v,
        }
    }

    /// Appends one element, growing (within the pool) when full.
    pub fn push(&mut self, value: T) {
        if let Storage::Heap(v) = &mut self.storage {
            v.push(value);
            return;
        }
        if self.len == self.capacity() {
            self.grow(self.len + 1);
            if let Storage::Heap(v) = &mut self.storage {
                v.push(value);
                return;
            }
        }
        let len = self.len;
        if let Storage::Pool(buf) = &mut self.storage {
            // SAFETY: len < capacity (checked or grown above), so the slot lies inside the
            // buffer, which is aligned for T and exclusively borrowed.
            unsafe { buf.as_mut_ptr().cast::<T>().add(len).write(value) };
            self.len = len + 1;
        }
    }

    /// Appends all of `values`.
    pub fn extend_from_slice(&mut self, values: &[T]) {
        if let Storage::Heap(v) = &mut self.storage {
            v.extend_from_slice(values);
            return;
        }
        let needed = self.len + values.len();
        if needed > self.capacity() {
            self.grow(needed);
            if let Storage::Heap(v) = &mut self.storage {
                v.extend_from_slice(values);
                return;
            }
        }
        let len = self.len;
        if let Storage::Pool(buf) = &mut self.storage {
            // SAFETY: len + values.len() <= capacity (grown above); source and destination
            // cannot overlap because `values` is a shared borrow while the buffer is
            // exclusively borrowed through `&mut self`.
            unsafe {
                std::ptr::copy_nonoverlapping(values.as_ptr(), buf.as_mut_ptr().cast::<T>().add(len), values.len());
            }
            self.len = needed;
        }
    }

    /// Drops the elements and gives the buffer back to its pool; the vector is then an empty
    /// heap vector. Idempotent.
    pub fn release(&mut self) {
        self.storage = Storage::Heap(Vec::new());
        self.len = 0;
    }

    /// Moves to a pool buffer for at least `min_capacity` elements: twice the current
    /// capacity, or `min_capacity` if larger. If the pool cannot serve (cap, allocation
    /// failure, fallback not allowed), the elements move to the heap: a `ConstraintSystem`
    /// cannot report an error from `enforce`, and losing data is worse. That move is
    /// counted as a fallback in the pool's statistics and logged.
    fn grow(&mut self, min_capacity: usize) {
        let Storage::Pool(old) = &self.storage else {
            return;
        };
        let pool = old.pool().clone();
        let new_capacity = min_capacity.max(self.capacity().saturating_mul(2));
        let result = new_capacity
            .checked_mul(Self::ELEM)
            .ok_or_else(|| Error::InvalidArgument(format!("{new_capacity} elements overflow")))
            .and_then(|bytes| match pool.checkout(bytes) {
                Ok(buf) => Ok(buf),
                Err(e) => pool.checkout_fallback(bytes, &e),
            });
        match result {
            Ok(mut buf) => {
                log::debug!(
                    "pinned vector grows from {} to {} elements (copying {} bytes)",
                    self.capacity(),
                    buf.capacity() / Self::ELEM,
                    self.len * Self::ELEM
                );
                // SAFETY: the old buffer holds `len` initialised elements; the new one has room
                // for at least `min_capacity >= len` and is a different allocation.
                unsafe {
                    std::ptr::copy_nonoverlapping(old.as_ptr().cast::<T>(), buf.as_mut_ptr().cast::<T>(), self.len);
                }
                // The old buffer goes back to the pool here.
                self.storage = Storage::Pool(buf);
            }
            Err(e) => {
                log::error!("pinned vector cannot grow to {new_capacity} elements ({e}); moving to heap");
                let mut v = Vec::with_capacity(new_capacity);
                v.extend_from_slice(self.as_slice());
                self.storage = Storage::Heap(v);
                self.len = 0;
            }
        }
    }
}
