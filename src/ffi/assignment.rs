//! `cuzk_r1cs` (a sparse constraint system described by the caller) and `cuzk_assignment`
//! (a synthesized circuit ready to prove), made from an R1CS and a witness or from raw a/b/c
//! buffers the caller filled.

use std::ffi::c_char;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

use super::boundary::{arg, call, call_void, into_handle, room, slice, take_handle, AbiResult, Out};
use super::pool::{cuzk_buffer, cuzk_pool};
use super::scalar::{self, CUZK_SCALAR_BYTES};
use super::status::{cuzk_status, AbiError};
use crate::assignment::{CapacityHint, DensityTracker, ProvingAssignment};
use crate::pool::{PinnedBuffer, PinnedVec};

/// One non-zero entry of a constraint matrix: `coeff` times `variable` in row `constraint`.
///
/// Variables are numbered 0 = the constant one, 1 ..= num_public = the public inputs,
/// then num_public + 1 ... = the private (aux) variables.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_r1cs_term {
    /// The row (constraint index, from 0).
    pub constraint: u32,
    /// The column (variable index, numbered as above).
    pub variable: u32,
    /// The coefficient: a canonical scalar, 32 bytes little-endian (see
    /// `cuzk_scalar_from_i64` for small integers).
    pub coeff: [u8; 32],
}

/// One stored term: its row, its variable and its coefficient.
#[derive(Debug, Clone, Copy)]
struct Term {
    row: u32,
    variable: u32,
    coeff: Scalar,
}

/// A rank-1 constraint system: for every constraint i, ⟨A_i, w⟩ · ⟨B_i, w⟩ = ⟨C_i, w⟩ over
/// the variables w = (1, public inputs, aux). Opaque; immutable, so thread-safe.
/// Its memory follows the terms given, never the counts: 2^32 − 1 constraints without terms
/// take none.
#[allow(non_camel_case_types)]
pub struct cuzk_r1cs {
    num_public: usize,
    num_aux: usize,
    num_constraints: usize,
    /// A, B and C's terms, each sorted by row (sparse: nothing for a row without terms).
    terms: [Vec<Term>; 3],
}

impl cuzk_r1cs {
    /// The rows of `matrix`: (row, its terms) for each row with terms, in order.
    fn rows(&self, matrix: usize) -> impl Iterator<Item = (usize, &[Term])> {
        self.terms[matrix]
            .chunk_by(|x, y| x.row == y.row)
            .map(|terms| (terms[0].row as usize, terms))
    }

    /// The constraints, the public inputs (without the one) and the aux variables it counts.
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        (self.num_constraints, self.num_public, self.num_aux)
    }
}

/// The circuit an R1CS describes, with a witness (or, for parameter generation, without).
pub(crate) struct R1csCircuit<'a> {
    r1cs: &'a cuzk_r1cs,
    witness: Option<(&'a [Scalar], &'a [Scalar])>,
}

impl<'a> R1csCircuit<'a> {
    /// The circuit without values (parameter generation asks for none).
    pub(crate) fn shape_only(r1cs: &'a cuzk_r1cs) -> Self {
        Self { r1cs, witness: None }
    }
}

/// The index behind a variable the constraint system allocated.
fn index_of(v: Variable) -> usize {
    match v.get_unchecked() {
        Index::Input(i) | Index::Aux(i) => i,
    }
}

impl Circuit<Scalar> for R1csCircuit<'_> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let r = self.r1cs;
        let value = |public: bool, i: usize| -> Result<Scalar, SynthesisError> {
            match self.witness {
                Some((p, a)) => (if public { p } else { a })
                    .get(i)
                    .copied()
                    .ok_or(SynthesisError::AssignmentMissing),
                None => Err(SynthesisError::AssignmentMissing),
            }
        };
        // The constraint systems this circuit is synthesized into number the variables of a
        // kind in the order they are allocated: the first of each kind gives the base, and no
        // table of 1 + public + aux variables is needed.
        let mut first_input = None;
        for i in 0..r.num_public {
            let v = cs.alloc_input(|| format!("public {i}"), || value(true, i))?;
            first_input.get_or_insert(index_of(v));
        }
        let mut first_aux = None;
        for i in 0..r.num_aux {
            let v = cs.alloc(|| format!("aux {i}"), || value(false, i))?;
            first_aux.get_or_insert(index_of(v));
        }
        let (first_input, first_aux) = (first_input.unwrap_or(0), first_aux.unwrap_or(0));
        let var = |v: u32| -> Variable {
            let v = v as usize;
            if v == 0 {
                CS::one()
            } else if v <= r.num_public {
                Variable::new_unchecked(Index::Input(first_input + v - 1))
            } else {
                Variable::new_unchecked(Index::Aux(first_aux + v - 1 - r.num_public))
            }
        };
        let lc = |terms: &[Term]| {
            let mut lc = LinearCombination::<Scalar>::zero();
            for t in terms {
                lc = lc + (t.coeff, var(t.variable));
            }
            lc
        };
        let mut rows = [r.rows(0).peekable(), r.rows(1).peekable(), r.rows(2).peekable()];
        for i in 0..r.num_constraints {
            let [a, b, c] = rows
                .each_mut()
                .map(|m| m.next_if(|&(row, _)| row == i).map_or(&[][..], |(_, terms)| terms));
            cs.enforce(|| format!("constraint {i}"), |_| lc(a), |_| lc(b), |_| lc(c));
        }
        Ok(())
    }
}

/// Reads the terms of `matrix`, checked, sorted by row.
fn read_terms(
    matrix: usize,
    terms: &[cuzk_r1cs_term],
    num_constraints: usize,
    num_vars: usize,
) -> AbiResult<Vec<Term>> {
    let name = ["A", "B", "C"][matrix];
    let mut out = room(terms.len())?;
    for (k, t) in terms.iter().enumerate() {
        if t.constraint as usize >= num_constraints {
            return Err(AbiError::invalid(format!(
                "{name} term {k}: constraint {} out of range ({num_constraints} constraints)",
                t.constraint
            )));
        }
        if t.variable as usize >= num_vars {
            return Err(AbiError::invalid(format!(
                "{name} term {k}: variable {} out of range ({num_vars} variables: one, public, aux)",
                t.variable
            )));
        }
        out.push(Term {
            row: t.constraint,
            variable: t.variable,
            coeff: scalar::from_le(&t.coeff, &format!("{name} term"), k)?,
        });
    }
    // In place (no allocation); a row's terms add up, so their order within it is free.
    if !out.windows(2).all(|w| w[0].row <= w[1].row) {
        out.sort_unstable_by_key(|t| (t.row, t.variable));
    }
    Ok(out)
}

/// Makes a constraint system of `num_constraints` constraints over 1 + `num_public` +
/// `num_aux` variables from the non-zero entries of A, B and C (`a_len`, `b_len`, `c_len`
/// terms; NULL allowed for a length of 0; entries of one row and variable add up). The terms
/// are copied; the counts cost no memory of their own (any count up to 2^32 − 1 constraints,
/// and 2^32 − 1 variables with the one, is accepted; more is `CUZK_STATUS_INVALID_ARGUMENT`).
/// Out of memory for the copy is `CUZK_STATUS_ALLOCATION`. On success `*out` holds it (free
/// with `cuzk_r1cs_free`). Thread-safe.
///
/// # Safety
/// Each term pointer holds its count of terms; `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_r1cs_new(
    num_public: usize,
    num_aux: usize,
    num_constraints: usize,
    a: *const cuzk_r1cs_term,
    a_len: usize,
    b: *const cuzk_r1cs_term,
    b_len: usize,
    c: *const cuzk_r1cs_term,
    c_len: usize,
    out: *mut *mut cuzk_r1cs,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        let out = Out::new(out, "out")?;
        let num_vars = num_public
            .checked_add(num_aux)
            .and_then(|n| n.checked_add(1))
            .filter(|&n| n <= u32::MAX as usize)
            .ok_or_else(|| AbiError::invalid("more than 2^32 − 1 variables"))?;
        if num_constraints > u32::MAX as usize {
            return Err(AbiError::invalid("more than 2^32 − 1 constraints"));
        }
        // SAFETY: per the contract, each pointer holds its count of terms.
        let (a, b, c) = unsafe { (slice(a, a_len, "a")?, slice(b, b_len, "b")?, slice(c, c_len, "c")?) };
        let r1cs = cuzk_r1cs {
            num_public,
            num_aux,
            num_constraints,
            terms: [
                read_terms(0, a, num_constraints, num_vars)?,
                read_terms(1, b, num_constraints, num_vars)?,
                read_terms(2, c, num_constraints, num_vars)?,
            ],
        };
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(r1cs)) };
        Ok(())
    })
}

/// Frees a constraint system. NULL is accepted. Not to be called while another thread uses it.
///
/// # Safety
/// `r1cs` is NULL or from `cuzk_r1cs_new` and not freed before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_r1cs_free(r1cs: *mut cuzk_r1cs) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(r1cs) }))
}

/// Whether a witness satisfies every constraint; `*out_satisfied` gets the answer and
/// `*out_first_unsatisfied` (may be NULL) the first failing constraint (or the number of
/// constraints when all hold). Witness as for `cuzk_assignment_new_r1cs`. Thread-safe.
///
/// # Safety
/// As `cuzk_assignment_new_r1cs`; `out_satisfied` writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_r1cs_is_satisfied(
    r1cs: *const cuzk_r1cs,
    public_inputs: *const u8,
    num_public: usize,
    aux: *const u8,
    num_aux: usize,
    out_satisfied: *mut bool,
    out_first_unsatisfied: *mut usize,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let r = unsafe { arg(r1cs, "r1cs") }?;
        let out = Out::new(out_satisfied, "out_satisfied")?;
        // SAFETY: per the contract.
        let (public, aux) = unsafe { witness(r, public_inputs, num_public, aux, num_aux) }?;
        let mut w = room(1 + public.len() + aux.len())?;
        w.push(<Scalar as ff::Field>::ONE);
        w.extend_from_slice(&public);
        w.extend_from_slice(&aux);
        let dot = |terms: &[Term]| terms.iter().map(|t| w[t.variable as usize] * t.coeff).sum::<Scalar>();
        // Only a row with terms can fail (0 · 0 = 0): the rows of the three matrices merged in
        // order.
        let mut rows = [r.rows(0).peekable(), r.rows(1).peekable(), r.rows(2).peekable()];
        let first = loop {
            let Some(i) = rows.iter_mut().filter_map(|m| m.peek().map(|&(row, _)| row)).min() else {
                break None;
            };
            let [a, b, c] = rows
                .each_mut()
                .map(|m| m.next_if(|&(row, _)| row == i).map_or(&[][..], |(_, terms)| terms));
            if dot(a) * dot(b) != dot(c) {
                break Some(i);
            }
        };
        // SAFETY: non-NULL (checked) and writable per the contract.
        unsafe {
            if !out_first_unsatisfied.is_null() {
                out_first_unsatisfied.write(first.unwrap_or(r.num_constraints));
            }
            out.write(first.is_none());
        }
        Ok(())
    })
}

/// Reads and counts a witness.
///
/// # Safety
/// `public_inputs` holds `num_public * 32` bytes, `aux` `num_aux * 32` (NULL for 0).
unsafe fn witness(
    r: &cuzk_r1cs,
    public_inputs: *const u8,
    num_public: usize,
    aux: *const u8,
    num_aux: usize,
) -> AbiResult<(Vec<Scalar>, Vec<Scalar>)> {
    if num_public != r.num_public || num_aux != r.num_aux {
        return Err(AbiError::invalid(format!(
            "the constraint system has {} public inputs and {} aux variables; the witness has {num_public} and {num_aux}",
            r.num_public, r.num_aux
        )));
    }
    // SAFETY: per the contract.
    unsafe {
        Ok((
            scalar::read_all(public_inputs, num_public, "public_inputs")?,
            scalar::read_all(aux, num_aux, "aux")?,
        ))
    }
}

/// A synthesized circuit, ready for `cuzk_prove`. Opaque; one owner at a time (not
/// thread-safe). `cuzk_prove` consumes it; otherwise free it with `cuzk_assignment_free`.
#[allow(non_camel_case_types)]
pub struct cuzk_assignment {
    pub(crate) inner: ProvingAssignment,
}

/// Synthesizes the constraint system with a witness: `num_public` public inputs (without
/// the constant one) and `num_aux` aux values, canonical 32-byte scalars each. The library
/// evaluates a/b/c itself, into buffers from `pool` (NULL: ordinary heap memory). The
/// witness is not checked against the constraints (see `cuzk_r1cs_is_satisfied`): a wrong
/// witness gives a proof that does not verify. On success `*out` holds the assignment.
/// Thread-safe.
///
/// # Safety
/// `r1cs` is live; `pool` NULL or live; `public_inputs` holds `num_public * 32` bytes and
/// `aux` `num_aux * 32` (NULL allowed for 0); `out` writable; `err` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cuzk_assignment_new_r1cs(
    r1cs: *const cuzk_r1cs,
    pool: *const cuzk_pool,
    public_inputs: *const u8,
    num_public: usize,
    aux: *const u8,
    num_aux: usize,
    out: *mut *mut cuzk_assignment,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let r = unsafe { arg(r1cs, "r1cs") }?;
        // SAFETY: NULL or live per the contract.
        let pool = unsafe { pool.as_ref() };
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        let (public, aux) = unsafe { witness(r, public_inputs, num_public, aux, num_aux) }?;
        let mut cs = match pool {
            Some(p) => ProvingAssignment::new_with_pinned(
                &p.inner,
                Some(CapacityHint {
                    constraints: r.num_constraints + num_public + 1,
                    inputs: num_public + 1,
                    aux: num_aux,
                }),
            )?,
            None => ProvingAssignment::new_heap(),
        };
        cs.start()?;
        R1csCircuit {
            r1cs: r,
            witness: Some((&public, &aux)),
        }
        .synthesize(&mut cs)
        .map_err(crate::error::Error::from)?;
        cs.finish()?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_assignment { inner: cs })) };
        Ok(())
    })
}

/// An assignment computed by the caller, in the form bellperson's prover records it.
///
/// Sizes: `num_constraints` rows, which must end with one row per input (the constant one
/// first, then each public input): A = that input's value, B = C = 0 — the input
/// constraints every Groth16 prover of this family appends. Densities are bit sets, variable
/// i at bit i % 64 of word i / 64: `a_aux_density` and `b_aux_density` have `num_aux` bits,
/// `b_input_density` 1 + `num_public` bits (bit 0: the constant one).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct cuzk_raw_assignment {
    /// A evaluations per row, in a buffer from `cuzk_pool_checkout`, in the in-memory
    /// (Montgomery) form of `cuzk_scalars_to_montgomery`. Ownership passes to the library.
    pub a: *mut cuzk_buffer,
    /// B evaluations, as `a`.
    pub b: *mut cuzk_buffer,
    /// C evaluations, as `a`.
    pub c: *mut cuzk_buffer,
    /// Rows in each of a, b, c (the input rows included).
    pub num_constraints: usize,
    /// The public inputs without the constant one: `num_public` canonical 32-byte scalars.
    pub public_inputs: *const u8,
    /// Public inputs (the verifier's count).
    pub num_public: usize,
    /// The aux (private) values: `num_aux` canonical 32-byte scalars.
    pub aux: *const u8,
    /// Aux variables.
    pub num_aux: usize,
    /// Which aux variables appear in A with a non-zero coefficient.
    pub a_aux_density: *const u64,
    /// Which inputs (bit 0 the constant one) appear in B.
    pub b_input_density: *const u64,
    /// Which aux variables appear in B.
    pub b_aux_density: *const u64,
}

/// Reads `bits` bits of a density bit set.
///
/// # Safety
/// `words` holds `bits.div_ceil(64)` words (NULL for 0 bits).
unsafe fn density(words: *const u64, bits: usize, name: &'static str) -> AbiResult<DensityTracker> {
    // SAFETY: per the contract.
    let w = unsafe { slice(words, bits.div_ceil(64), name) }?;
    let mut d = DensityTracker::with_capacity(bits);
    for i in 0..bits {
        d.try_add_element()?;
        if w[i / 64] >> (i % 64) & 1 == 1 {
            d.inc(i);
        }
    }
    Ok(d)
}

/// The first `n` scalars of a caller-filled buffer, checked reduced, as a vector over that
/// same buffer (no copy).
fn abc_from_buffer(buf: PinnedBuffer, n: usize, name: &str) -> AbiResult<PinnedVec<Scalar>> {
    let bytes = n
        .checked_mul(CUZK_SCALAR_BYTES)
        .ok_or_else(|| AbiError::invalid(format!("{n} rows overflow")))?;
    if bytes > buf.capacity() {
        return Err(AbiError::invalid(format!(
            "buffer {name} holds {} bytes, {n} rows need {bytes}",
            buf.capacity()
        )));
    }
    // SAFETY: the buffer is page-aligned (so aligned for Scalar, a plain [u64; 4]), holds at
    // least `bytes` bytes (checked), which the caller filled (the documented contract), and
    // nothing else accesses it while the caller has handed it over.
    let values: &[Scalar] = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<Scalar>(), n) };
    if let Some(i) = values.iter().position(|s| !scalar::is_reduced(s)) {
        return Err(AbiError::invalid(format!(
            "{name}[{i}] is not a reduced Montgomery scalar (use cuzk_scalars_to_montgomery)"
        )));
    }
    // SAFETY: the first n scalars were just read as valid (and reduced) values; the buffer
    // moves into the vector, no copy.
    Ok(unsafe { PinnedVec::from_buffer(buf, n) }?)
}

/// Makes an assignment from a/b/c buffers the caller checked out of a pool and filled, plus
/// the witness and densities (see `cuzk_raw_assignment`).
///
/// Ownership: the three buffers pass to the library **whatever the status** (they must be
/// three different buffers); the caller must not touch, check in or free them afterwards.
/// They go back to their pool when the assignment is proved or freed. The other arrays are
/// only read during the call. On success `*out` holds the assignment. Thread-safe.
/// The buffers become the assignment's a/b/c as they are: no copy.
///
/// # Safety
/// `raw` is readable, its buffers live handles (or NULL), its arrays as documented; `out`
/// writable; `err` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cuzk_assignment_new_raw(
    raw: *const cuzk_raw_assignment,
    out: *mut *mut cuzk_assignment,
    err: *mut *mut c_char,
) -> cuzk_status {
    call(err, || {
        // SAFETY: per the contract.
        let raw = unsafe { arg(raw, "raw") }?;
        if (!raw.a.is_null() && (raw.a == raw.b || raw.a == raw.c)) || (!raw.b.is_null() && raw.b == raw.c) {
            // Taking one pointer twice would free it twice: take each distinct one once.
            let mut ptrs = vec![raw.a, raw.b, raw.c];
            ptrs.sort();
            ptrs.dedup();
            for p in ptrs {
                // SAFETY: a live handle per the contract, taken once.
                drop(unsafe { take_handle(p) });
            }
            return Err(AbiError::invalid("a, b and c must be three different buffers"));
        }
        // SAFETY: live handles (or NULL) per the contract, each taken once.
        let (a, b, c) = unsafe { (take_handle(raw.a), take_handle(raw.b), take_handle(raw.c)) };
        let (a, b, c) = (
            a.ok_or(AbiError::Null("raw.a"))?,
            b.ok_or(AbiError::Null("raw.b"))?,
            c.ok_or(AbiError::Null("raw.c"))?,
        );
        let out = Out::new(out, "out")?;
        // SAFETY: per the contract.
        let (public, aux, a_aux, b_in, b_aux) = unsafe {
            (
                scalar::read_all(raw.public_inputs, raw.num_public, "raw.public_inputs")?,
                scalar::read_all(raw.aux, raw.num_aux, "raw.aux")?,
                density(raw.a_aux_density, raw.num_aux, "raw.a_aux_density")?,
                density(
                    raw.b_input_density,
                    raw.num_public.saturating_add(1),
                    "raw.b_input_density",
                )?,
                density(raw.b_aux_density, raw.num_aux, "raw.b_aux_density")?,
            )
        };
        let n = raw.num_constraints;
        let pool = a.inner.pool().clone();
        let a_vec = abc_from_buffer(a.inner, n, "a")?;
        let b_vec = abc_from_buffer(b.inner, n, "b")?;
        let c_vec = abc_from_buffer(c.inner, n, "c")?;
        let mut inputs = room(public.len() + 1)?;
        inputs.push(<Scalar as ff::Field>::ONE);
        inputs.extend_from_slice(&public);
        let mut aux_vec = PinnedVec::with_capacity_in(&pool, aux.len().max(1))?;
        aux_vec.try_extend_from_slice(&aux)?;
        let inner = ProvingAssignment::from_raw_parts(a_vec, b_vec, c_vec, inputs, aux_vec, a_aux, b_in, b_aux)?;
        // SAFETY: non-NULL, writable per the contract.
        unsafe { out.write(into_handle(cuzk_assignment { inner })) };
        Ok(())
    })
}

/// Frees an assignment that will not be proved; its buffers go back to their pool. NULL is
/// accepted. Called by the assignment's one owner (no other thread may use it).
///
/// # Safety
/// `assignment` is NULL or from this library, not freed or consumed by `cuzk_prove` before.
#[no_mangle]
pub unsafe extern "C" fn cuzk_assignment_free(assignment: *mut cuzk_assignment) {
    // SAFETY: per the contract.
    call_void(|| drop(unsafe { take_handle(assignment) }))
}
