//! A `ProvingAssignment` from parts computed elsewhere (the C ABI's raw route, the compiled
//! circuit's evaluation), checked to have the form synthesis gives it.

use blstrs::Scalar;
use ff::Field;

use super::ProvingAssignment;
use crate::error::{Error, Result};
use crate::pool::PinnedVec;
use crate::r1cs::DensityTracker;

impl ProvingAssignment {
    /// An assignment computed elsewhere (the C ABI's raw route), in the form synthesis
    /// records it: a/b/c per constraint with the input constraints (`input_i · 0 = 0`, so
    /// A = the input's value, B = C = 0) as the last `input_assignment.len()` rows,
    /// `input_assignment` starting with the constant one, and the three densities (A over
    /// aux, B over inputs, B over aux).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths do not belong together, the first input
    /// is not one, or the trailing input constraints are not as described.
    #[allow(clippy::too_many_arguments)]
    pub fn from_raw_parts(
        a: PinnedVec<Scalar>,
        b: PinnedVec<Scalar>,
        c: PinnedVec<Scalar>,
        input_assignment: Vec<Scalar>,
        aux_assignment: PinnedVec<Scalar>,
        a_aux_density: DensityTracker,
        b_input_density: DensityTracker,
        b_aux_density: DensityTracker,
    ) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        let (n, inputs, aux) = (a.len(), input_assignment.len(), aux_assignment.len());
        if b.len() != n || c.len() != n {
            return bad(format!(
                "a, b, c have {n}, {}, {} rows; expected equal",
                b.len(),
                c.len()
            ));
        }
        if input_assignment.first() != Some(&Scalar::ONE) {
            return bad("the first input must be the constant one".into());
        }
        if n < inputs {
            return bad(format!("{n} rows cannot end with the {inputs} input constraints"));
        }
        if a_aux_density.len() != aux || b_aux_density.len() != aux || b_input_density.len() != inputs {
            return bad(format!(
                "densities cover {} / {} aux and {} inputs; expected {aux} aux and {inputs} inputs",
                a_aux_density.len(),
                b_aux_density.len(),
                b_input_density.len()
            ));
        }
        for (i, value) in input_assignment.iter().enumerate() {
            let row = n - inputs + i;
            if a.as_slice()[row] != *value
                || !bool::from(b.as_slice()[row].is_zero())
                || !bool::from(c.as_slice()[row].is_zero())
            {
                return bad(format!(
                    "row {row} must be input constraint {i} (A = input {i}, B = C = 0); found otherwise"
                ));
            }
        }
        Ok(Self {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a,
            b,
            c,
            input_assignment,
            aux_assignment,
            error: None,
            abc_released: false,
            finished: true,
            recorder: None,
        })
    }
}
