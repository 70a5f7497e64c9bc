//! [`CompactAux`]: aux values with the 0/1 ones as bits.
//!
//! Three arrays: a bitmap of which values are 0 or 1, a bitmap of those values, and the other
//! values packed in order; a per-word count of the packed values before it makes any value
//! O(1) to find. Written one value at a time during witness synthesis (into pool buffers or
//! the heap), sealed at the end, expanded in parallel.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::error::Result;
use crate::pool::{PinnedPool, PinnedVec};

/// The limbs of `Scalar::ONE` as blst keeps it (Montgomery form: 2^256 mod r), a constant so
/// that `bit_of` — once per aux value during witness synthesis — needs no lazy initialisation
/// (a test checks it against `Scalar::ONE`).
const ONE_LIMBS: [u64; 4] = [
    0x0000_0001_ffff_fffe,
    0x5884_b7fa_0003_4802,
    0x998c_4fef_ecbc_4ff5,
    0x1824_b159_acc5_056f,
];

/// A value's class: 0, 1 or anything else. Witness values are secret, but whether each is a
/// bit is exactly what the MSMs split on anyway; the check compares limbs (not in constant
/// time), as the assignment's coefficient check does.
#[inline]
pub(crate) fn bit_of(v: &Scalar) -> Option<bool> {
    let l = blst::blst_fr::from(*v).l;
    if l == [0; 4] {
        Some(false)
    } else if l == ONE_LIMBS {
        Some(true)
    } else {
        None
    }
}

/// Bit `i` of `bits` for every `i` set in `mask`, packed into the low bits, lowest first.
fn gather(bits: u64, mask: u64) -> u64 {
    let mut out = 0;
    let mut m = mask;
    let mut i = 0;
    while m != 0 {
        out |= ((bits >> m.trailing_zeros()) & 1) << i;
        i += 1;
        m &= m - 1;
    }
    out
}

/// Words of each bitmap for `aux` values (at least one: a buffer is never empty).
pub(crate) fn bitmap_words(aux: usize) -> usize {
    aux.div_ceil(64).max(1)
}

/// Room for the values that are not bits when nothing better is known: an eighth of aux
/// (Filecoin's mix has 2%), at least 1024.
pub(crate) fn default_others(aux: usize) -> usize {
    (aux / 8).max(1 << 10)
}

/// Aux values with their 0/1 values as bits (see the module docs).
///
/// Value `j` is a bit when bit `j % 64` of `bit_mask[j / 64]` is set; its value is then that
/// bit of `bit_values[j / 64]`. The other values are `others`, in order of `j`;
/// `others_before[w]` counts those in words before `w`, so any value is found in O(1).
#[derive(Debug)]
pub struct CompactAux {
    len: usize,
    bit_mask: PinnedVec<u64>,
    bit_values: PinnedVec<u64>,
    others: PinnedVec<Scalar>,
    /// The word being filled (values `len - len % 64 ..`): mask and values.
    open_mask: u64,
    open_values: u64,
    /// Per full word, the number of non-bit values before it (set by `seal`).
    others_before: Vec<u32>,
}

impl CompactAux {
    pub(super) fn new(pool: Option<&PinnedPool>, aux_hint: usize) -> Result<Self> {
        Self::sized(pool, aux_hint, default_others(aux_hint))
    }

    /// As [`new`](Self::new), with room for `others` values that are not bits (the growth
    /// doubles past it).
    pub(super) fn sized(pool: Option<&PinnedPool>, aux_hint: usize, others: usize) -> Result<Self> {
        let words = bitmap_words(aux_hint);
        let (bit_mask, bit_values, others) = match pool {
            Some(p) => (
                PinnedVec::with_capacity_in(p, words)?,
                PinnedVec::with_capacity_in(p, words)?,
                PinnedVec::with_capacity_in(p, others)?,
            ),
            None => (
                PinnedVec::with_heap_capacity(words)?,
                PinnedVec::with_heap_capacity(words)?,
                PinnedVec::with_heap_capacity(others)?,
            ),
        };
        Ok(Self {
            len: 0,
            bit_mask,
            bit_values,
            others,
            open_mask: 0,
            open_values: 0,
            others_before: Vec::new(),
        })
    }

    /// Appends one value. Inlined into the witness system's `alloc` (once per aux value):
    /// the common case — a bit inside the open word — is a few instructions; a value that is
    /// not a bit and a full word go out of line.
    #[inline]
    pub(super) fn push(&mut self, v: Scalar) -> Result<()> {
        let bit = self.len % 64;
        match bit_of(&v) {
            Some(b) => {
                self.open_mask |= 1 << bit;
                self.open_values |= u64::from(b) << bit;
            }
            None => self.push_other(v)?,
        }
        self.len += 1;
        if bit == 63 {
            self.close_word()?;
        }
        Ok(())
    }

    /// Appends `mask.count_ones()` bits: bit `i` of `bits` for every `i` set in `mask`, lowest
    /// first — what that many `push`es of 0/1 values would append, a word at a time.
    #[inline]
    pub(super) fn push_bits(&mut self, bits: u64, mask: u64) -> Result<()> {
        let n = mask.count_ones();
        if n == 0 {
            return Ok(());
        }
        // The values, gathered into the low `n` bits (a mask of low ones needs no gathering).
        let values = if mask & mask.wrapping_add(1) == 0 {
            bits & mask
        } else {
            gather(bits, mask)
        };
        self.append_positions(u64::MAX, values, n)
    }

    #[inline(never)]
    fn push_other(&mut self, v: Scalar) -> Result<()> {
        self.others.try_push(v)
    }

    /// Appends the open (full) word to the bitmaps and starts the next one.
    #[inline(never)]
    fn close_word(&mut self) -> Result<()> {
        self.bit_mask.try_push(self.open_mask)?;
        self.bit_values.try_push(self.open_values)?;
        self.open_mask = 0;
        self.open_values = 0;
        Ok(())
    }

    /// Closes the open word and indexes the words.
    pub(super) fn seal(&mut self) -> Result<()> {
        if self.len % 64 != 0 {
            self.bit_mask.try_push(self.open_mask)?;
            self.bit_values.try_push(self.open_values)?;
            self.open_mask = 0;
            self.open_values = 0;
        }
        let words = self.bit_mask.as_slice();
        let mut index = Vec::new();
        index
            .try_reserve_exact(words.len())
            .map_err(|e| crate::pool::heap_error(words.len(), 4, &e))?;
        let mut before = 0u32;
        for (w, &mask) in words.iter().enumerate() {
            index.push(before);
            let in_word = (self.len - 64 * w).min(64);
            let valid = if in_word == 64 { u64::MAX } else { (1u64 << in_word) - 1 };
            before += (!mask & valid).count_ones();
        }
        self.others_before = index;
        Ok(())
    }

    /// No values, holding no buffer (the aux of a system whose construction failed).
    pub(super) fn empty() -> Self {
        Self {
            len: 0,
            bit_mask: PinnedVec::new(),
            bit_values: PinnedVec::new(),
            others: PinnedVec::new(),
            open_mask: 0,
            open_values: 0,
            others_before: Vec::new(),
        }
    }

    /// The pool its packed values come from, if any.
    pub(super) fn pool(&self) -> Option<PinnedPool> {
        self.others.buffer().map(|b| b.pool().clone())
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of values that are 0 or 1.
    pub fn num_bits(&self) -> usize {
        self.len - self.others.len()
    }

    /// The bitmap of which values are bits (64 a word, value `j` at bit `j % 64`).
    pub fn bit_mask(&self) -> &[u64] {
        self.bit_mask.as_slice()
    }

    /// The bits' values, aligned with [`bit_mask`](Self::bit_mask) (0 where not a bit).
    pub fn bit_values(&self) -> &[u64] {
        self.bit_values.as_slice()
    }

    /// Per word of the bitmaps, the number of non-bit values in the words before it.
    pub fn others_before(&self) -> &[u32] {
        &self.others_before
    }

    /// The values that are not bits, in order.
    pub fn others(&self) -> &[Scalar] {
        self.others.as_slice()
    }

    /// Value `j`, or `None` past the end.
    pub fn get(&self, j: usize) -> Option<Scalar> {
        if j >= self.len {
            return None;
        }
        let (w, b) = (j / 64, j % 64);
        let mask = *self.bit_mask.as_slice().get(w)?;
        if mask & (1 << b) != 0 {
            let v = self.bit_values.as_slice()[w] & (1 << b) != 0;
            return Some(if v { Scalar::ONE } else { Scalar::ZERO });
        }
        let k = *self.others_before.get(w)? as usize + (!mask & ((1u64 << b) - 1)).count_ones() as usize;
        self.others.as_slice().get(k).copied()
    }

    /// Writes every value into `out` (`out.len() == self.len()`), in parallel.
    pub(super) fn expand_into(&self, out: &mut [std::mem::MaybeUninit<Scalar>]) {
        const WORDS: usize = 256;
        let mask = self.bit_mask.as_slice();
        let values = self.bit_values.as_slice();
        let others = self.others.as_slice();
        out.par_chunks_mut(64 * WORDS).enumerate().for_each(|(c, dst)| {
            for (i, chunk) in dst.chunks_mut(64).enumerate() {
                let w = c * WORDS + i;
                let (m, v) = (mask[w], values[w]);
                let mut k = self.others_before[w] as usize;
                for (b, slot) in chunk.iter_mut().enumerate() {
                    slot.write(if m & (1 << b) != 0 {
                        if v & (1 << b) != 0 {
                            Scalar::ONE
                        } else {
                            Scalar::ZERO
                        }
                    } else {
                        k += 1;
                        others[k - 1]
                    });
                }
            }
        });
    }

    /// Bytes it holds: the two bitmaps, the packed values and the word index.
    pub fn byte_size(&self) -> usize {
        16 * self.bit_mask.len() + 32 * self.others.len() + 4 * self.others_before.len()
    }

    /// Bytes its buffers take at their capacity (what a pool counts in use for them), the
    /// word index included.
    pub(crate) fn held_bytes(&self) -> usize {
        8 * (self.bit_mask.capacity() + self.bit_values.capacity())
            + 32 * self.others.capacity()
            + 4 * self.others_before.capacity()
    }
}

impl CompactAux {
    /// Appends `other`'s values after this one's, sealed or not (during synthesis: its full
    /// words, then its open one) — what pushing [`values`](Self::values) one by one would
    /// append, a bitmap word and a slice of non-bit values at a time (merging a sub-system).
    ///
    /// # Errors
    /// As `push`: a growth refused by the pool or the allocator (this one is then partly
    /// appended: the caller fails the system).
    pub(super) fn append(&mut self, other: &CompactAux) -> Result<()> {
        self.others.try_extend_from_slice(other.others.as_slice())?;
        let words = other.bit_mask.as_slice().iter().zip(other.bit_values.as_slice());
        let mut left = other.len;
        for (&mask, &values) in words {
            if left == 0 {
                break;
            }
            let n = left.min(64);
            self.append_positions(mask, values, n as u32)?;
            left -= n;
        }
        if left > 0 {
            self.append_positions(other.open_mask, other.open_values, left as u32)?;
        }
        Ok(())
    }

    /// Appends `n` (1..=64) positions: position `i` a bit (valued bit `i` of `values`) where
    /// bit `i` of `mask` is set, else a non-bit value (appended to `others` by the caller).
    #[inline]
    fn append_positions(&mut self, mask: u64, values: u64, n: u32) -> Result<()> {
        let low = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        let (mask, values) = (mask & low, values & mask & low);
        let at = (self.len % 64) as u32;
        let room = 64 - at;
        self.open_mask |= mask << at;
        self.open_values |= values << at;
        self.len += n as usize;
        if n >= room {
            self.close_word()?;
            if n > room {
                // `at` > 0 here, so `room` < 64.
                self.open_mask = mask >> room;
                self.open_values = values >> room;
            }
        }
        Ok(())
    }

    /// The values in order, sealed or not (during synthesis: the full words, then the open
    /// one): what [`append`](Self::append) must reproduce.
    #[cfg(test)]
    pub(super) fn values(&self) -> impl Iterator<Item = Scalar> + '_ {
        let masks = self.bit_mask.as_slice();
        let bits = self.bit_values.as_slice();
        let others = self.others.as_slice();
        (0..self.len).scan(0usize, move |k, j| {
            let (w, b) = (j / 64, j % 64);
            let (mask, values) = match (masks.get(w), bits.get(w)) {
                (Some(&m), Some(&v)) => (m, v),
                _ => (self.open_mask, self.open_values),
            };
            if mask & (1 << b) != 0 {
                Some(if values & (1 << b) != 0 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                })
            } else {
                *k += 1;
                others.get(*k - 1).copied()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix;
    use rand_core::RngCore;

    fn values(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = SplitMix::new(seed);
        (0..n)
            .map(|_| match rng.next_u32() % 3 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
            .collect()
    }

    #[test]
    fn one_limbs_are_scalar_ones() {
        assert_eq!(blst::blst_fr::from(Scalar::ONE).l, ONE_LIMBS);
        assert_eq!(bit_of(&Scalar::ONE), Some(true));
        assert_eq!(bit_of(&Scalar::ZERO), Some(false));
        assert_eq!(bit_of(&Scalar::from(2u64)), None);
        assert_eq!(bit_of(&-Scalar::ONE), None);
    }

    /// Every length around the word boundaries: the compact form reads back what was
    /// written, by index, in order and expanded.
    #[test]
    fn compact_aux_reads_back_at_every_length() {
        for n in [0, 1, 2, 63, 64, 65, 127, 128, 129, 200, 1000] {
            let vals = values(n, n as u64);
            let mut aux = CompactAux::new(None, 0).unwrap();
            for v in &vals {
                aux.push(*v).unwrap();
            }
            assert_eq!(aux.values().collect::<Vec<_>>(), vals, "unsealed, n = {n}");
            aux.seal().unwrap();
            assert_eq!(aux.values().collect::<Vec<_>>(), vals, "sealed, n = {n}");
            for (j, v) in vals.iter().enumerate() {
                assert_eq!(aux.get(j), Some(*v), "n = {n}, j = {j}");
            }
            assert_eq!(aux.get(n), None);
            let bits = vals.iter().filter(|v| bit_of(v).is_some()).count();
            assert_eq!(aux.num_bits(), bits);
            let expanded = crate::pool::fill_vec(n, |out| aux.expand_into(out)).unwrap();
            assert_eq!(expanded, vals, "expanded, n = {n}");
        }
    }

    /// Appending a system's values (sealed or not, of any length) to another of any length
    /// gives the values of both in order, as pushing them one by one would: the bitmaps, the
    /// non-bit values and their index.
    #[test]
    fn appended_systems_read_back_in_order() {
        let lengths = [0, 1, 5, 63, 64, 65, 100, 128, 130, 300];
        for (i, &a) in lengths.iter().enumerate() {
            for (j, &b) in lengths.iter().enumerate() {
                for sealed in [false, true] {
                    let (va, vb) = (values(a, 7 * i as u64), values(b, 1000 + j as u64));
                    let mut first = CompactAux::new(None, 0).unwrap();
                    va.iter().for_each(|v| first.push(*v).unwrap());
                    let mut second = CompactAux::new(None, 0).unwrap();
                    vb.iter().for_each(|v| second.push(*v).unwrap());
                    if sealed {
                        second.seal().unwrap();
                    }
                    first.append(&second).unwrap();
                    let mut all = CompactAux::new(None, 0).unwrap();
                    va.iter().chain(&vb).for_each(|v| all.push(*v).unwrap());
                    let expected: Vec<Scalar> = va.iter().chain(&vb).copied().collect();
                    assert_eq!(
                        first.values().collect::<Vec<_>>(),
                        expected,
                        "{a} + {b}, sealed {sealed}"
                    );
                    first.seal().unwrap();
                    all.seal().unwrap();
                    assert_eq!(
                        (
                            first.bit_mask(),
                            first.bit_values(),
                            first.others(),
                            first.others_before()
                        ),
                        (all.bit_mask(), all.bit_values(), all.others(), all.others_before()),
                        "{a} + {b}, sealed {sealed}"
                    );
                }
            }
        }
    }
}
