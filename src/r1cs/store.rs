//! Arrays of a compiled circuit: owned, or borrowed from a memory-mapped file.
//!
//! A compiled circuit loaded from a file keeps its matrices in the file's mapping (no copy;
//! the kernel pages them in on first use). The one unsafe step — viewing mapped bytes as
//! `u32`/`u64` words — lives here, fenced by the checks that make it sound: the section lies
//! inside the mapping, starts at a multiple of the word size (the mapping is page-aligned and
//! the file format aligns every section to 8 bytes), and the host is little-endian (the
//! file's byte order; on a big-endian host the loader copies instead).

use std::sync::Arc;

use memmap2::Mmap;

/// Plain words that any bit pattern is a valid value of.
pub(crate) trait Word: Copy + Send + Sync + 'static {
    /// Bytes per word.
    const SIZE: usize;
    /// The word from its little-endian bytes (`bytes.len() == SIZE`).
    fn from_le(bytes: &[u8]) -> Self;
}

impl Word for u32 {
    const SIZE: usize = 4;
    fn from_le(bytes: &[u8]) -> Self {
        let mut b = [0u8; 4];
        b.copy_from_slice(bytes);
        u32::from_le_bytes(b)
    }
}

impl Word for u64 {
    const SIZE: usize = 8;
    fn from_le(bytes: &[u8]) -> Self {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        u64::from_le_bytes(b)
    }
}

/// `len` words, owned or inside a shared file mapping.
#[derive(Clone)]
pub(crate) enum Store<T: Word> {
    Owned(Vec<T>),
    Mapped { map: Arc<Mmap>, offset: usize, len: usize },
}

impl<T: Word> std::fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::Owned(v) => write!(f, "Owned({} words)", v.len()),
            Store::Mapped { offset, len, .. } => write!(f, "Mapped({len} words at byte {offset})"),
        }
    }
}

impl<T: Word> Default for Store<T> {
    fn default() -> Self {
        Store::Owned(Vec::new())
    }
}

impl<T: Word> Store<T> {
    /// A view of `len` words at byte `offset` of `map`; copied out instead when the view
    /// could not be a plain slice (misaligned, or a big-endian host). `None` when the range
    /// lies outside the mapping.
    pub(crate) fn from_map(map: &Arc<Mmap>, offset: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(T::SIZE)?;
        let end = offset.checked_add(bytes)?;
        let section = map.get(offset..end)?;
        let aligned = (section.as_ptr() as usize) % std::mem::align_of::<T>() == 0;
        if aligned && cfg!(target_endian = "little") {
            Some(Store::Mapped {
                map: Arc::clone(map),
                offset,
                len,
            })
        } else {
            Some(Store::Owned(section.chunks_exact(T::SIZE).map(T::from_le).collect()))
        }
    }

    /// The words.
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Store::Owned(v) => v,
            Store::Mapped { map, offset, len } => {
                let section = &map[*offset..*offset + *len * T::SIZE];
                // SAFETY: `from_map` built this variant only for a range inside the mapping
                // (re-sliced above, so a bad range would panic, not read out of bounds), whose
                // start is aligned for `T`, on a little-endian host, so the bytes are `len`
                // valid `T`s in the file's byte order (every bit pattern is a valid u32/u64).
                // The mapping is read-only and lives as long as `self` (the Arc). A file
                // changed underneath a live mapping by another process changes what is read,
                // as with any mapped file: the loader verified a checksum at load, and
                // compiled-circuit files are written to a temporary name and renamed.
                unsafe { std::slice::from_raw_parts(section.as_ptr().cast::<T>(), *len) }
            }
        }
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        match self {
            Store::Owned(v) => v.len(),
            Store::Mapped { len, .. } => *len,
        }
    }

    /// Whether the words come from a file mapping.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Store::Mapped { .. })
    }

    /// The words as little-endian bytes (for hashing and writing).
    pub(crate) fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Store::Mapped { map, offset, len } => std::borrow::Cow::Borrowed(&map[*offset..*offset + *len * T::SIZE]),
            Store::Owned(v) => words_le_bytes(v),
        }
    }
}

/// `words` as little-endian bytes: borrowed on a little-endian host, copied otherwise.
pub(crate) fn words_le_bytes<T: Word>(words: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: u32/u64 have no padding and any alignment of u8 is satisfied; the byte view
        // covers exactly the slice's memory and borrows it for the returned lifetime; on a
        // little-endian host these bytes are the little-endian encoding.
        std::borrow::Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words))
        })
    } else {
        let mut out = Vec::with_capacity(std::mem::size_of_val(words));
        for w in words {
            out.extend_from_slice(&word_to_le(*w));
        }
        std::borrow::Cow::Owned(out)
    }
}

fn word_to_le<T: Word>(w: T) -> Vec<u8> {
    // Only reached on big-endian hosts; T is u32 or u64.
    let any: &dyn std::any::Any = &w;
    if let Some(x) = any.downcast_ref::<u32>() {
        x.to_le_bytes().to_vec()
    } else if let Some(x) = any.downcast_ref::<u64>() {
        x.to_le_bytes().to_vec()
    } else {
        Vec::new()
    }
}
