//! One of A, B, C in compressed sparse rows, and its column and coefficient encodings.
//!
//! - **Rows**: one per constraint, in the order synthesis enforced them, then one per public
//!   input (the constraints `input_i · 0 = 0` the prover appends; A holds `input_i`, B and C
//!   nothing). `row_starts` has `rows + 1` entries; row `r`'s terms are
//!   `row_starts[r]..row_starts[r + 1]`.
//! - **Columns** (`u32`) index z = (inputs, aux): column `i < num_inputs` is input `i` (input 0
//!   the constant one), column `num_inputs + j` is aux variable `j`. Inside a row the input
//!   columns come first, each part ascending (bellpepper's linear combinations keep their
//!   terms sorted and merged).
//! - **Coefficients** (`u32`): [`COEFF_ONE`], [`COEFF_MINUS_ONE`], or `k + CONSTANTS_BASE` for
//!   entry `k` of the circuit's table of distinct other constants. A term whose coefficient
//!   is zero (written so, or cancelled, as `x − x`, which bellpepper merges into one term with
//!   coefficient zero) is not stored: it adds nothing and, as in full synthesis, marks no
//!   density.

use super::store::Store;

/// Coefficient code of +1.
pub const COEFF_ONE: u32 = 0;
/// Coefficient code of −1.
pub const COEFF_MINUS_ONE: u32 = 1;
/// Code of the first entry of the constants table.
pub const CONSTANTS_BASE: u32 = 2;

/// A term's coefficient, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coefficient {
    /// +1.
    One,
    /// −1.
    MinusOne,
    /// Entry `k` of the constants table.
    Constant(u32),
}

impl Coefficient {
    /// The coefficient of code `code`.
    pub fn decode(code: u32) -> Self {
        match code {
            COEFF_ONE => Coefficient::One,
            COEFF_MINUS_ONE => Coefficient::MinusOne,
            k => Coefficient::Constant(k - CONSTANTS_BASE),
        }
    }
}

/// A sparse matrix in CSR form over z = (inputs, aux).
#[derive(Debug, Clone, Default)]
pub struct Matrix {
    pub(crate) row_starts: Store<u32>,
    pub(crate) columns: Store<u32>,
    pub(crate) coefficients: Store<u32>,
}

impl Matrix {
    /// Number of rows (constraints, the input constraints included).
    pub fn rows(&self) -> usize {
        self.row_starts.len().saturating_sub(1)
    }

    /// Number of stored (non-zero) terms.
    pub fn non_zeros(&self) -> usize {
        self.columns.len()
    }

    /// `rows + 1` offsets into [`columns`](Self::columns) and [`coefficients`](Self::coefficients).
    pub fn row_starts(&self) -> &[u32] {
        self.row_starts.as_slice()
    }

    /// Each term's column (see the module docs for the encoding).
    pub fn columns(&self) -> &[u32] {
        self.columns.as_slice()
    }

    /// Each term's coefficient code.
    pub fn coefficients(&self) -> &[u32] {
        self.coefficients.as_slice()
    }

    /// Terms of row `r` as (column, coefficient code) slices.
    pub fn row(&self, r: usize) -> (&[u32], &[u32]) {
        let starts = self.row_starts();
        let (s, e) = (starts[r] as usize, starts[r + 1] as usize);
        (&self.columns()[s..e], &self.coefficients()[s..e])
    }

    /// Whether the arrays come from a file (they lie in its image, read once at load).
    pub fn is_mapped(&self) -> bool {
        self.row_starts.is_mapped() || self.columns.is_mapped() || self.coefficients.is_mapped()
    }

    /// Checks the structure against the counts (for matrices read from a file): offsets
    /// start at 0, never decrease and end at the number of terms; columns are below
    /// `columns`; coefficient codes below `CONSTANTS_BASE + constants`.
    pub(crate) fn validate(&self, rows: usize, columns: usize, constants: usize) -> Result<(), String> {
        use rayon::prelude::*;
        let starts = self.row_starts();
        if starts.len() != rows + 1 {
            return Err(format!("{} row offsets for {rows} rows", starts.len()));
        }
        if starts.first() != Some(&0) || starts.last().map(|&s| s as usize) != Some(self.non_zeros()) {
            return Err(format!(
                "row offsets run from {:?} to {:?}, expected 0 to {}",
                starts.first(),
                starts.last(),
                self.non_zeros()
            ));
        }
        if self.coefficients.len() != self.non_zeros() {
            return Err(format!(
                "{} coefficients for {} columns",
                self.coefficients.len(),
                self.non_zeros()
            ));
        }
        if let Some(r) = starts.par_windows(2).position_any(|w| w[0] > w[1]) {
            return Err(format!("row offsets decrease at row {r}"));
        }
        let max_col = u32::try_from(columns).unwrap_or(u32::MAX);
        if let Some(k) = self.columns().par_iter().position_any(|&c| c >= max_col) {
            return Err(format!("term {k}: column {} of {columns}", self.columns()[k]));
        }
        let max_code = u64::from(CONSTANTS_BASE) + constants as u64;
        if let Some(k) = self
            .coefficients()
            .par_iter()
            .position_any(|&c| u64::from(c) >= max_code)
        {
            return Err(format!(
                "term {k}: coefficient code {} but {constants} constants",
                self.coefficients()[k]
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(starts: Vec<u32>, columns: Vec<u32>, codes: Vec<u32>) -> Matrix {
        Matrix {
            row_starts: Store::Owned(starts),
            columns: Store::Owned(columns),
            coefficients: Store::Owned(codes),
        }
    }

    #[test]
    fn validation_refuses_what_would_index_out_of_bounds() {
        let ok = matrix(
            vec![0, 1, 3],
            vec![0, 2, 4],
            vec![COEFF_ONE, COEFF_MINUS_ONE, CONSTANTS_BASE],
        );
        assert!(ok.validate(2, 5, 1).is_ok());
        assert_eq!(ok.row(1), (&[2, 4][..], &[COEFF_MINUS_ONE, CONSTANTS_BASE][..]));
        assert!(ok.validate(3, 5, 1).is_err(), "row count");
        assert!(ok.validate(2, 4, 1).is_err(), "column 4 of 4");
        assert!(ok.validate(2, 5, 0).is_err(), "constant 0 of 0");
        let decreasing = matrix(vec![0, 2, 1, 3], vec![0, 0, 0], vec![0, 0, 0]);
        assert!(decreasing.validate(3, 1, 0).is_err());
        let short = matrix(vec![0, 1, 2], vec![0, 0, 0], vec![0, 0, 0]);
        assert!(short.validate(2, 1, 0).is_err(), "offsets end before the terms");
        assert_eq!(Coefficient::decode(CONSTANTS_BASE + 7), Coefficient::Constant(7));
    }
}
