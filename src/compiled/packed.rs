//! [`PackedCircuit`]: a compiled circuit's A, B, C in the form the GPU keeps them — about half
//! the bytes of the CSR the host keeps, so that a 2^27 PoRep partition's circuit (~7 GiB in
//! CSR) fits beside a proof's vectors on a 24 GiB card.
//!
//! Per matrix, three arrays:
//! - `words` (`u32`): each term one word, `column << 2 | tag`, tag 0 = +1, 1 = −1, 2 = a
//!   constant, whose index into the circuit's constants table is the next word (Filecoin's
//!   matrices are nearly all ±1, so nearly every term is one word against 8 bytes in CSR);
//! - `lens` (`u16`): the words of each row;
//! - `group_starts` (`u32`): the first word of each group of [`GROUP_ROWS`] rows, then the word
//!   count. Row `r` starts at `group_starts[r / 32]` plus the lengths of the rows before it in
//!   its group: on the device, one warp a group, a prefix sum across the warp.
//!
//! A matrix packs when every column is below [`MAX_COLUMNS`] (2^30: 130 M in PoRep), every row
//! holds at most 65,535 words and the matrix at most 2^32 − 1; otherwise
//! [`CompiledCircuit::pack`] says why, and that circuit's a, b, c are evaluated on the host.
//! The terms keep their order, so a row's value is the same sum in the same order as the CSR's.

use rayon::prelude::*;

use super::circuit::CompiledCircuit;
use crate::error::{Error, Result};
use crate::r1cs::matrix::{Matrix, CONSTANTS_BASE};

/// Rows per group (a warp): each group's first word is stored, the rows inside it by length.
pub const GROUP_ROWS: usize = 32;
/// Columns a packed matrix can name (30 bits of a word).
pub const MAX_COLUMNS: usize = 1 << 30;
/// Tag of a +1 term.
pub const TAG_ONE: u32 = 0;
/// Tag of a −1 term.
pub const TAG_MINUS_ONE: u32 = 1;
/// Tag of a term whose coefficient is a constant (its index is the next word).
pub const TAG_CONSTANT: u32 = 2;

/// Groups a task packs (2^15 rows).
const GROUPS_PER_TASK: usize = 1 << 10;

/// A matrix's row lengths and group starts: what locates every row's words, without the words
/// (they can then be written a range of groups at a time: [`PackedIndex::fill`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedIndex {
    lens: Vec<u16>,
    group_starts: Vec<u32>,
}

/// One matrix packed (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedMatrix {
    index: PackedIndex,
    words: Vec<u32>,
}

/// A circuit's three matrices packed, A, B, C.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedCircuit {
    /// A, B, C.
    pub matrices: [PackedMatrix; 3],
}

impl PackedCircuit {
    /// Bytes of the three matrices' arrays (what the device holds besides the constants).
    pub fn byte_size(&self) -> usize {
        self.matrices.iter().map(PackedMatrix::byte_size).sum()
    }
}

/// A term as one or two words.
#[inline]
fn term_words(column: u32, code: u32) -> (u32, Option<u32>) {
    match code.checked_sub(CONSTANTS_BASE) {
        None => (column << 2 | code, None),
        Some(k) => (column << 2 | TAG_CONSTANT, Some(k)),
    }
}

fn try_vec<T: Clone>(n: usize, fill: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|e| crate::pool::heap_error(n, std::mem::size_of::<T>(), &e))?;
    v.resize(n, fill);
    Ok(v)
}

impl PackedIndex {
    /// The index of `m` packed, its columns below `columns`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when `m` does not pack (see the module docs);
    /// [`Error::Allocation`] when the host cannot hold the arrays.
    pub fn of(m: &Matrix, columns: usize) -> Result<Self> {
        if columns > MAX_COLUMNS {
            return Err(Error::Unsupported(format!(
                "{columns} columns: a packed matrix names at most {MAX_COLUMNS}"
            )));
        }
        let rows = m.rows();
        let mut lens = try_vec(rows, 0u16)?;
        lens.par_chunks_mut(GROUP_ROWS * GROUPS_PER_TASK)
            .enumerate()
            .try_for_each(|(t, chunk)| {
                for (i, len) in chunk.iter_mut().enumerate() {
                    let r = t * GROUP_ROWS * GROUPS_PER_TASK + i;
                    let (cols, codes) = m.row(r);
                    let words = cols.len() + codes.iter().filter(|&&c| c >= CONSTANTS_BASE).count();
                    *len = u16::try_from(words).map_err(|_| {
                        Error::Unsupported(format!("row {r} holds {words} words: a packed row holds at most 65535"))
                    })?;
                }
                Ok::<_, Error>(())
            })?;
        let groups = rows.div_ceil(GROUP_ROWS);
        let mut group_starts = try_vec(groups + 1, 0u32)?;
        let sums: Vec<u64> = lens
            .par_chunks(GROUP_ROWS)
            .map(|g| g.iter().map(|&l| u64::from(l)).sum())
            .collect();
        let mut total = 0u64;
        for (g, s) in sums.iter().enumerate() {
            group_starts[g] = u32::try_from(total).map_err(|_| too_many_words(total))?;
            total += s;
        }
        group_starts[groups] = u32::try_from(total).map_err(|_| too_many_words(total))?;
        Ok(Self { lens, group_starts })
    }

    /// Words `m` packs into (one a term, two a constant's), counted without packing.
    pub fn count_words(m: &Matrix) -> usize {
        m.non_zeros() + m.coefficients().par_iter().filter(|&&c| c >= CONSTANTS_BASE).count()
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.lens.len()
    }

    /// Groups of [`GROUP_ROWS`] rows (the last may be shorter).
    pub fn groups(&self) -> usize {
        self.group_starts.len() - 1
    }

    /// Words of each row.
    pub fn lens(&self) -> &[u16] {
        &self.lens
    }

    /// First word of each group of [`GROUP_ROWS`] rows, then the word count.
    pub fn group_starts(&self) -> &[u32] {
        &self.group_starts
    }

    /// Words of the matrix.
    pub fn num_words(&self) -> usize {
        *self.group_starts.last().expect("one start at least") as usize
    }

    /// Words of groups `g0..g1`: `group_starts[g1] - group_starts[g0]`.
    pub fn span(&self, g0: usize, g1: usize) -> usize {
        (self.group_starts[g1] - self.group_starts[g0]) as usize
    }

    /// Writes the words of `m`'s groups `g0..g1` (`m` the matrix this index is of) into `out`,
    /// which holds exactly [`span`](Self::span)`(g0, g1)` words; in parallel.
    pub fn fill(&self, m: &Matrix, g0: usize, g1: usize, out: &mut [u32]) {
        assert_eq!(out.len(), self.span(g0, g1), "fill: out is not the groups' span");
        let rows = self.rows();
        // Each task's slice of `out`: the words of its groups.
        let mut tasks = Vec::with_capacity((g1 - g0).div_ceil(GROUPS_PER_TASK));
        let mut rest = out;
        for t0 in (g0..g1).step_by(GROUPS_PER_TASK) {
            let t1 = (t0 + GROUPS_PER_TASK).min(g1);
            let (mine, more) = rest.split_at_mut(self.span(t0, t1));
            tasks.push((t0 * GROUP_ROWS, (t1 * GROUP_ROWS).min(rows), mine));
            rest = more;
        }
        tasks.into_par_iter().for_each(|(r0, r1, out)| {
            let mut w = 0;
            for r in r0..r1 {
                let (cols, codes) = m.row(r);
                for (&col, &code) in cols.iter().zip(codes) {
                    let (first, constant) = term_words(col, code);
                    out[w] = first;
                    w += 1;
                    if let Some(k) = constant {
                        out[w] = k;
                        w += 1;
                    }
                }
            }
        });
    }

    /// Bytes of its arrays.
    pub fn byte_size(&self) -> usize {
        2 * self.lens.len() + 4 * self.group_starts.len()
    }
}

impl PackedMatrix {
    /// `m` packed, its columns below `columns`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when `m` does not pack (see the module docs);
    /// [`Error::Allocation`] when the host cannot hold the arrays.
    pub fn pack(m: &Matrix, columns: usize) -> Result<Self> {
        let index = PackedIndex::of(m, columns)?;
        let mut words = try_vec(index.num_words(), 0u32)?;
        index.fill(m, 0, index.groups(), &mut words);
        Ok(Self { index, words })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.index.rows()
    }

    /// Words of each row.
    pub fn lens(&self) -> &[u16] {
        self.index.lens()
    }

    /// First word of each group of [`GROUP_ROWS`] rows, then the word count.
    pub fn group_starts(&self) -> &[u32] {
        self.index.group_starts()
    }

    /// The terms (see the module docs).
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Bytes of its arrays.
    pub fn byte_size(&self) -> usize {
        self.index.byte_size() + 4 * self.words.len()
    }

    /// Row `r`'s words, found as the device finds them.
    pub fn row_words(&self, r: usize) -> &[u32] {
        let (lens, starts) = (self.lens(), self.group_starts());
        let g = r / GROUP_ROWS;
        let before: usize = lens[g * GROUP_ROWS..r].iter().map(|&l| usize::from(l)).sum();
        let start = starts[g] as usize + before;
        &self.words[start..start + usize::from(lens[r])]
    }

    /// Row `r`'s terms decoded: (column, coefficient code as in [`Matrix`]).
    pub fn row_terms(&self, r: usize) -> Vec<(u32, u32)> {
        let words = self.row_words(r);
        let mut out = Vec::with_capacity(words.len());
        let mut i = 0;
        while i < words.len() {
            let (col, tag) = (words[i] >> 2, words[i] & 3);
            if tag == TAG_CONSTANT {
                out.push((col, words[i + 1] + CONSTANTS_BASE));
                i += 2;
            } else {
                out.push((col, tag));
                i += 1;
            }
        }
        out
    }
}

fn too_many_words(total: u64) -> Error {
    Error::Unsupported(format!("{total} words: a packed matrix holds at most 2^32 - 1"))
}

impl CompiledCircuit {
    /// A, B, C packed for the device (see [`crate::compiled::packed`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when a matrix does not pack (too many columns, a row of more
    /// than 65,535 words, or more than 2^32 − 1 words a matrix); [`Error::Allocation`].
    pub fn pack(&self) -> Result<PackedCircuit> {
        let columns = self.num_inputs() + self.num_aux();
        let pack = |m: &Matrix| {
            PackedMatrix::pack(m, columns).map_err(|e| match e {
                Error::Unsupported(why) => {
                    Error::Unsupported(format!("compiled circuit {} does not pack: {why}", self.circuit_type()))
                }
                e => e,
            })
        };
        Ok(PackedCircuit {
            matrices: [pack(self.a())?, pack(self.b())?, pack(self.c())?],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r1cs::matrix::{COEFF_MINUS_ONE, COEFF_ONE};
    use crate::r1cs::store::Store;
    use rand::{Rng, SeedableRng};

    fn matrix(rows: &[Vec<(u32, u32)>]) -> Matrix {
        let mut starts = vec![0u32];
        let (mut columns, mut codes) = (Vec::new(), Vec::new());
        for row in rows {
            for &(c, k) in row {
                columns.push(c);
                codes.push(k);
            }
            starts.push(columns.len() as u32);
        }
        Matrix {
            row_starts: Store::Owned(starts),
            columns: Store::Owned(columns),
            coefficients: Store::Owned(codes),
        }
    }

    /// Rows of every kind: empty, ±1 only, constants only, mixed, long (past a group and past
    /// 255 words), over several groups and tasks with a ragged last group.
    fn random_rows(rng: &mut impl Rng, rows: usize, columns: u32) -> Vec<Vec<(u32, u32)>> {
        (0..rows)
            .map(|r| {
                let len = match r % 97 {
                    0 => 0,
                    1 => 300 + rng.gen_range(0..50),
                    _ => rng.gen_range(0..9),
                };
                let mut row: Vec<(u32, u32)> = (0..len)
                    .map(|_| {
                        let code = match rng.gen_range(0..10) {
                            0..=4 => COEFF_ONE,
                            5..=7 => COEFF_MINUS_ONE,
                            _ => CONSTANTS_BASE + rng.gen_range(0..1000),
                        };
                        (rng.gen_range(0..columns), code)
                    })
                    .collect();
                row.sort_unstable();
                row
            })
            .collect()
    }

    #[test]
    fn every_row_decodes_to_its_terms_in_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let columns = (MAX_COLUMNS - 1) as u32;
        for rows in [1, 31, 32, 33, GROUP_ROWS * GROUPS_PER_TASK * 2 + 5] {
            let want = random_rows(&mut rng, rows, columns);
            let m = matrix(&want);
            let p = PackedMatrix::pack(&m, MAX_COLUMNS).unwrap();
            assert_eq!(p.rows(), rows);
            assert_eq!(p.group_starts().len(), rows.div_ceil(GROUP_ROWS) + 1);
            let constants = want.iter().flatten().filter(|t| t.1 >= CONSTANTS_BASE).count();
            assert_eq!(p.words().len(), m.non_zeros() + constants);
            assert_eq!(PackedIndex::count_words(&m), p.words().len());
            assert_eq!(*p.group_starts().last().unwrap() as usize, p.words().len());
            for (r, row) in want.iter().enumerate() {
                assert_eq!(&p.row_terms(r), row, "row {r} of {rows}");
            }
            // One word a ±1 term, two a constant's: smaller than CSR's 8 bytes a term plus 4 a
            // row whenever most terms are ±1 (here 70%).
            if m.non_zeros() > 100 {
                assert!(p.byte_size() < 4 * (m.rows() + 1 + 2 * m.non_zeros()));
            }
        }
    }

    /// The device receives the words a range of groups at a time (the host never holds them
    /// whole): the pieces, in order, are the whole pack's words.
    #[test]
    fn words_filled_a_range_of_groups_at_a_time_are_the_whole_packs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let m = matrix(&random_rows(&mut rng, GROUP_ROWS * GROUPS_PER_TASK + 77, 1 << 20));
        let whole = PackedMatrix::pack(&m, 1 << 20).unwrap();
        let index = PackedIndex::of(&m, 1 << 20).unwrap();
        assert_eq!(
            (index.lens(), index.group_starts()),
            (whole.lens(), whole.group_starts())
        );
        let (mut pieces, mut g0) = (Vec::new(), 0usize);
        for step in [1, 5, 1000, 3, usize::MAX] {
            let g1 = g0.saturating_add(step).min(index.groups());
            let mut out = vec![0; index.span(g0, g1)];
            index.fill(&m, g0, g1, &mut out);
            pieces.extend(out);
            g0 = g1;
        }
        assert_eq!(g0, index.groups());
        assert_eq!(pieces, whole.words());
    }

    #[test]
    fn what_does_not_pack_is_refused_with_the_reason() {
        let too_long = matrix(&[vec![(3, COEFF_ONE)], vec![(1, CONSTANTS_BASE); 40_000]]);
        let e = PackedMatrix::pack(&too_long, 8).unwrap_err().to_string();
        assert!(e.contains("row 1 holds 80000 words"), "{e}");
        let fits = matrix(&[vec![(1, COEFF_ONE); 65_535]]);
        assert_eq!(PackedMatrix::pack(&fits, 8).unwrap().words().len(), 65_535);
        let e = PackedMatrix::pack(&fits, MAX_COLUMNS + 1).unwrap_err().to_string();
        assert!(e.contains("columns"), "{e}");
    }
}
