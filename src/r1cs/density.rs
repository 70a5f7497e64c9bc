//! [`DensityTracker`]: which variables of a query have a base — a bit per variable, the count of
//! set bits, as bellperson's prover tracks them (a variable counts once it appears with a
//! non-zero coefficient).

use crate::error::Result;

/// A bit per variable: does it appear in a query? Plus the count of set bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DensityTracker {
    words: Vec<u64>,
    len: usize,
    total: usize,
}

impl DensityTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tracker with room for `capacity` variables. The room is only a hint: if the
    /// allocator cannot provide it, the tracker starts without and grows as variables come.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut words = Vec::new();
        if words.try_reserve_exact(capacity.div_ceil(64)).is_err() {
            log::warn!("density tracker: no room for {capacity} variables up front; growing as needed");
        }
        Self {
            words,
            len: 0,
            total: 0,
        }
    }

    /// Adds one variable, not (yet) in the query. Like `Vec::push`, aborts if the global
    /// allocator is out of memory; [`try_add_element`](Self::try_add_element) returns an error
    /// instead.
    pub fn add_element(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Adds one variable, not (yet) in the query.
    ///
    /// # Errors
    /// [`Error::Allocation`](crate::Error::Allocation) when the global allocator cannot grow the tracker (the tracker is
    /// unchanged).
    pub fn try_add_element(&mut self) -> Result<()> {
        if self.len % 64 == 0 {
            self.words
                .try_reserve(1)
                .map_err(|e| crate::pool::heap_error(1, std::mem::size_of::<u64>(), &e))?;
            self.words.push(0);
        }
        self.len += 1;
        Ok(())
    }

    /// Marks variable `i` as present. Returns whether `i` is a tracked variable; an index out
    /// of range changes nothing (and returns `false`).
    pub fn inc(&mut self, i: usize) -> bool {
        if i >= self.len {
            return false;
        }
        let (w, b) = (i / 64, i % 64);
        // `len` variables occupy `len.div_ceil(64)` words, so word `w` exists.
        let Some(word) = self.words.get_mut(w) else {
            return false;
        };
        if *word & (1 << b) == 0 {
            *word |= 1 << b;
            self.total += 1;
        }
        true
    }

    /// Whether variable `i` is present.
    pub fn is_set(&self, i: usize) -> bool {
        i < self.len && self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// A tracker over `len` variables with these bits (64 a word, variable `i` at bit
    /// `i % 64` of word `i / 64`); `None` unless there are exactly `len.div_ceil(64)` words
    /// and no bit is set past `len`.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        if words.len() != len.div_ceil(64) {
            return None;
        }
        if len % 64 != 0 && words.last().is_some_and(|w| w >> (len % 64) != 0) {
            return None;
        }
        let total = words.iter().map(|w| w.count_ones() as usize).sum();
        Some(Self { words, len, total })
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of variables present (bits set).
    pub fn total_density(&self) -> usize {
        self.total
    }

    /// The bits, 64 variables per word, variable `i` at bit `i % 64` of word `i / 64`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends `other`'s bits. For input densities the first bit of `other` is its own "one"
    /// variable, which coincides with ours: it is merged rather than appended.
    ///
    /// # Errors
    /// [`Error::Allocation`](crate::Error::Allocation) when the global allocator cannot grow the tracker (then only
    /// part of `other` was appended).
    pub fn extend(&mut self, other: &DensityTracker, is_input: bool) -> Result<()> {
        let skip = usize::from(is_input && !other.is_empty());
        if is_input && other.is_set(0) && !self.is_empty() && !self.is_set(0) {
            self.inc(0);
        }
        if is_input && self.is_empty() && !other.is_empty() {
            // Nothing of ours to merge into: take the "one" bit as it is.
            self.try_add_element()?;
            if other.is_set(0) {
                self.inc(0);
            }
        }
        for i in skip..other.len {
            self.try_add_element()?;
            if other.is_set(i) {
                self.inc(self.len - 1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_trackers_from_words_check_their_length() {
        let t = DensityTracker::from_words(vec![0b1011, 1 << 5], 70).unwrap();
        assert_eq!((t.len(), t.total_density()), (70, 4));
        assert!(t.is_set(0) && !t.is_set(2) && t.is_set(69));
        assert!(DensityTracker::from_words(vec![0], 70).is_none(), "too few words");
        assert!(
            DensityTracker::from_words(vec![0, 1 << 6], 70).is_none(),
            "bit past the end"
        );
        assert_eq!(DensityTracker::from_words(vec![], 0), Some(DensityTracker::new()));
    }
}
