//! Arrays of a compiled circuit: owned, or borrowed from the image of the file it was loaded
//! from.
//!
//! A compiled circuit loaded from a file keeps its matrices in the file's image: the file read
//! once into memory the process owns (not a mapping: a file truncated or rewritten on disk
//! after load can neither fault the process nor change what was checked), shared by every
//! array cut from it (no copy per array). The one unsafe step — viewing image bytes as
//! `u32`/`u64` words — lives here, fenced by the checks that make it sound: the section lies
//! inside the image, starts at an address aligned for the word (the allocator aligns the
//! image, the file format aligns every section to 8 bytes; otherwise the words are copied
//! out), and the host is little-endian (the file's byte order; on a big-endian host the
//! loader copies instead).

use std::sync::Arc;

/// A file's bytes, read into memory once and shared by the arrays cut from it.
pub(crate) type Image = Arc<Vec<u8>>;

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

/// `len` words, owned or inside a shared file image.
#[derive(Clone)]
pub(crate) enum Store<T: Word> {
    Owned(Vec<T>),
    InImage { image: Image, offset: usize, len: usize },
}

impl<T: Word> std::fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::Owned(v) => write!(f, "Owned({} words)", v.len()),
            Store::InImage { offset, len, .. } => write!(f, "InImage({len} words at byte {offset})"),
        }
    }
}

impl<T: Word> Default for Store<T> {
    fn default() -> Self {
        Store::Owned(Vec::new())
    }
}

impl<T: Word> Store<T> {
    /// A view of `len` words at byte `offset` of `image`; copied out instead when the view
    /// could not be a plain slice (misaligned, or a big-endian host). `None` when the range
    /// lies outside the image.
    pub(crate) fn from_image(image: &Image, offset: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(T::SIZE)?;
        let end = offset.checked_add(bytes)?;
        let section = image.get(offset..end)?;
        let aligned = (section.as_ptr() as usize) % std::mem::align_of::<T>() == 0;
        if aligned && cfg!(target_endian = "little") {
            Some(Store::InImage {
                image: Arc::clone(image),
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
            Store::InImage { image, offset, len } => {
                let section = &image[*offset..*offset + *len * T::SIZE];
                // SAFETY: `from_image` built this variant only for a range inside the image
                // (re-sliced above, so a bad range would panic, not read out of bounds), whose
                // start is aligned for `T`, on a little-endian host, so the bytes are `len`
                // valid `T`s in the file's byte order (every bit pattern is a valid u32/u64).
                // The image is owned memory, never written after load (shared through an
                // `Arc` without interior mutability), and lives as long as `self`.
                unsafe { std::slice::from_raw_parts(section.as_ptr().cast::<T>(), *len) }
            }
        }
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        match self {
            Store::Owned(v) => v.len(),
            Store::InImage { len, .. } => *len,
        }
    }

    /// Whether the words come from a file's image.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Store::InImage { .. })
    }

    /// The words as little-endian bytes (for hashing and writing).
    pub(crate) fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Store::InImage { image, offset, len } => {
                std::borrow::Cow::Borrowed(&image[*offset..*offset + *len * T::SIZE])
            }
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
