//! a, b, c = A·z, B·z, C·z on the host, and the [`ProvingAssignment`] built from them.
//!
//! Rows are evaluated in parallel (rayon), each written once into its slot of the output —
//! a pool buffer or a `Vec`'s spare capacity — so there is no zero-fill pass. z is read
//! either dense (inputs and an aux slice) or straight from a compact witness.

use std::mem::MaybeUninit;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::circuit::CompiledCircuit;
use super::witness::{Witness, WitnessAux};
use crate::assignment::ProvingAssignment;
use crate::error::{Error, Result};
use crate::pool::{fill_vec, PinnedPool, PinnedVec, PoolConfig};
use crate::r1cs::matrix::{Matrix, COEFF_MINUS_ONE, COEFF_ONE, CONSTANTS_BASE};

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 1 << 12;

/// The evaluations of A, B, C on one witness, one scalar per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abc {
    /// A·z.
    pub a: Vec<Scalar>,
    /// B·z.
    pub b: Vec<Scalar>,
    /// C·z.
    pub c: Vec<Scalar>,
}

/// z = (inputs, aux), read by column.
trait Z: Sync {
    fn value(&self, column: usize) -> Scalar;
}

struct DenseZ<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
}

impl Z for DenseZ<'_> {
    #[inline]
    fn value(&self, column: usize) -> Scalar {
        match column.checked_sub(self.inputs.len()) {
            None => self.inputs[column],
            Some(j) => self.aux[j],
        }
    }
}

struct WitnessZ<'a>(&'a Witness);

impl Z for WitnessZ<'_> {
    #[inline]
    fn value(&self, column: usize) -> Scalar {
        let inputs = self.0.inputs();
        match column.checked_sub(inputs.len()) {
            None => inputs[column],
            Some(j) => match self.0.aux() {
                WitnessAux::Dense(d) => d.as_slice()[j],
                // Columns are validated against the counts, and the counts against the
                // witness, before any evaluation: `get` cannot miss.
                WitnessAux::Compact(c) => c.get(j).unwrap_or(Scalar::ZERO),
            },
        }
    }
}

/// Σ coefficient · z over row `r` of `m`.
#[inline]
fn row_value(m: &Matrix, constants: &[Scalar], z: &impl Z, r: usize) -> Scalar {
    let (columns, codes) = m.row(r);
    let mut acc = Scalar::ZERO;
    for (&col, &code) in columns.iter().zip(codes) {
        let v = z.value(col as usize);
        match code {
            COEFF_ONE => acc += v,
            COEFF_MINUS_ONE => acc -= v,
            k => acc += v * constants[(k - CONSTANTS_BASE) as usize],
        }
    }
    acc
}

/// Writes every row of `m` into `out` (`out.len() == m.rows()`).
fn evaluate_into(m: &Matrix, constants: &[Scalar], z: &impl Z, out: &mut [MaybeUninit<Scalar>]) {
    out.par_chunks_mut(ROWS_PER_TASK).enumerate().for_each(|(t, chunk)| {
        let first = t * ROWS_PER_TASK;
        for (i, slot) in chunk.iter_mut().enumerate() {
            slot.write(row_value(m, constants, z, first + i));
        }
    });
}

impl CompiledCircuit {
    /// a, b, c for `witness`, read straight from its compact (or dense) form into `Vec`s.
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] when the witness does not belong to this circuit
    /// ([`CompiledCircuit::check`]); [`Error::Allocation`] when the host cannot hold a, b, c.
    pub fn evaluate(&self, witness: &Witness) -> Result<Abc> {
        self.check(witness)?;
        self.evaluate_z(&WitnessZ(witness))
    }

    /// a, b, c for a dense assignment (`inputs` with the one first, `aux`), in `Vec`s.
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] when the lengths are not this circuit's;
    /// [`Error::Allocation`] when the host cannot hold a, b, c.
    pub fn evaluate_dense(&self, inputs: &[Scalar], aux: &[Scalar]) -> Result<Abc> {
        self.check_lengths(inputs.len(), aux.len())?;
        self.evaluate_z(&DenseZ { inputs, aux })
    }

    fn check_lengths(&self, inputs: usize, aux: usize) -> Result<()> {
        if inputs != self.r1cs.num_inputs || aux != self.r1cs.num_aux {
            return Err(Error::WitnessMismatch(format!(
                "compiled circuit {} has {} inputs and {} aux, the assignment {inputs} and {aux}",
                self.circuit_type, self.r1cs.num_inputs, self.r1cs.num_aux
            )));
        }
        Ok(())
    }

    fn evaluate_z(&self, z: &impl Z) -> Result<Abc> {
        let n = self.num_constraints();
        let [a, b, c] = [self.a(), self.b(), self.c()];
        Ok(Abc {
            a: fill_vec(n, |out| evaluate_into(a, &self.r1cs.constants, z, out))?,
            b: fill_vec(n, |out| evaluate_into(b, &self.r1cs.constants, z, out))?,
            c: fill_vec(n, |out| evaluate_into(c, &self.r1cs.constants, z, out))?,
        })
    }

    /// The [`ProvingAssignment`] full synthesis would have made for `witness`: aux expanded
    /// and a, b, c evaluated into buffers from `pool` (a private heap pool when `None`), the
    /// densities this circuit recorded, the input constraints as the last rows. It proves
    /// with [`Prover::prove_synthesized`](crate::Prover::prove_synthesized) unchanged.
    ///
    /// # Errors
    /// [`Error::WitnessMismatch`] when the witness does not belong to this circuit; what the
    /// pool's checkouts return.
    pub fn assignment(&self, witness: &Witness, pool: Option<&PinnedPool>) -> Result<ProvingAssignment> {
        self.check(witness)?;
        let private;
        let pool = match pool {
            Some(p) => p,
            None => {
                private = PinnedPool::heap(PoolConfig::default());
                &private
            }
        };
        let aux = witness.expand_aux_in(pool)?;
        let n = self.num_constraints();
        let z = DenseZ {
            inputs: witness.inputs(),
            aux: aux.as_slice(),
        };
        let [ma, mb, mc] = [self.a(), self.b(), self.c()];
        let a = PinnedVec::fill_in(pool, n, |out| evaluate_into(ma, &self.r1cs.constants, &z, out))?;
        let b = PinnedVec::fill_in(pool, n, |out| evaluate_into(mb, &self.r1cs.constants, &z, out))?;
        let c = PinnedVec::fill_in(pool, n, |out| evaluate_into(mc, &self.r1cs.constants, &z, out))?;
        let mut inputs = Vec::new();
        inputs
            .try_reserve_exact(witness.num_inputs())
            .map_err(|e| crate::pool::heap_error(witness.num_inputs(), 32, &e))?;
        inputs.extend_from_slice(witness.inputs());
        ProvingAssignment::from_raw_parts(
            a,
            b,
            c,
            inputs,
            aux,
            self.a_aux_density().clone(),
            self.b_input_density().clone(),
            self.b_aux_density().clone(),
        )
    }
}
