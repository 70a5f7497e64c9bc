//! The two curves of BLS12-381 behind one trait, over blst's raw entry points: a sum of
//! points (batched affine addition), Pippenger, and batch conversion to affine form. The MSMs
//! of the CPU prover, the development setup and the test helpers all go through it.
//!
//! The only unsafe code is the calls into blst, fenced in [`Curve`]'s two implementations.

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_add, blst_p1s_mult_pippenger, blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_to_affine, blst_p2, blst_p2_affine, blst_p2s_add, blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof, blst_p2s_to_affine,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;

use crate::error::{Error, Result};

/// The two curves an MSM runs on, with blst's raw entry points.
pub trait Curve: Sync {
    /// Affine base points.
    type Affine: Send + Sync + Copy + 'static;
    /// The result.
    type Projective: Group + Send;
    /// blst's affine type.
    type Raw;

    /// The blst affine point behind a base.
    fn raw(p: &Self::Affine) -> &Self::Raw;

    /// Σ points (batched affine addition).
    fn sum(points: &[&Self::Raw]) -> Self::Projective;

    /// Σ scalars\[i\]·points\[i\], scalars as 32-byte little-endian integers.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there is not one scalar per point.
    fn pippenger(points: &[&Self::Raw], scalars: &[[u8; 32]]) -> Result<Self::Projective>;

    /// `out[i] = points[i]` in affine form, with one shared inversion (blst's batch
    /// conversion; blstrs' `batch_normalize` inverts once per point, ~50× slower). The
    /// identity is handled (it is left out of the batch).
    ///
    /// # Panics
    /// When the slices differ in length (a caller's bug).
    fn batch_to_affine(points: &[Self::Projective], out: &mut [Self::Affine]);
}

/// Shared part of the batch conversions: the non-identity points go to `convert` as raw
/// pointers with the indices they came from; the identities are written directly.
fn batch_to_affine_with<P: Group, A: Default + Copy, R>(
    points: &[P],
    out: &mut [A],
    raw: impl Fn(&P) -> *const R,
    convert: impl FnOnce(&[*const R], &mut [A]),
) {
    assert_eq!(points.len(), out.len(), "batch_to_affine: lengths differ");
    let keep: Vec<usize> = (0..points.len())
        .filter(|&i| !bool::from(points[i].is_identity()))
        .collect();
    if keep.len() == points.len() {
        let ptrs: Vec<*const R> = points.iter().map(&raw).collect();
        convert(&ptrs, out);
        return;
    }
    let ptrs: Vec<*const R> = keep.iter().map(|&i| raw(&points[i])).collect();
    let mut tmp = vec![A::default(); keep.len()];
    convert(&ptrs, &mut tmp);
    out.fill(A::default()); // A::default() is the identity (blstrs' affine points)
    for (j, &i) in keep.iter().enumerate() {
        out[i] = tmp[j];
    }
}

/// G1.
pub struct G1;
/// G2.
pub struct G2;

impl Curve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    type Raw = blst_p1_affine;

    fn raw(p: &G1Affine) -> &blst_p1_affine {
        p.as_ref()
    }

    fn sum(points: &[&blst_p1_affine]) -> G1Projective {
        let mut out = G1Projective::identity();
        if points.is_empty() {
            return out;
        }
        let ret: &mut blst_p1 = out.as_mut();
        // SAFETY: `points` holds `points.len()` references to live affine points, borrowed for
        // this call (a `&T` has the layout of the `*const T` blst reads); `ret` is a valid
        // blst_p1.
        unsafe { blst_p1s_add(ret, points.as_ptr().cast::<*const blst_p1_affine>(), points.len()) };
        out
    }

    fn pippenger(points: &[&blst_p1_affine], scalars: &[[u8; 32]]) -> Result<G1Projective> {
        let mut out = G1Projective::identity();
        let n = one_scalar_per_point(points.len(), scalars.len())?;
        if n == 0 {
            return Ok(out);
        }
        // blst reads scalars as one contiguous array when the second pointer is null.
        let scalar_ptrs = [scalars.as_ptr().cast::<u8>(), std::ptr::null()];
        // SAFETY: pure size computation.
        let scratch_bytes = unsafe { blst_p1s_mult_pippenger_scratch_sizeof(n) };
        let mut scratch = vec![0u64; scratch_bytes.div_ceil(8)];
        let ret: &mut blst_p1 = out.as_mut();
        // SAFETY: `points` has n references to live points (laid out as blst's pointers);
        // `scalar_ptrs[0]` points at n contiguous 32-byte scalars and `scalar_ptrs[1]` is null
        // (contiguous mode); the scratch buffer has the size blst asked for; `ret` is a valid
        // blst_p1.
        unsafe {
            blst_p1s_mult_pippenger(
                ret,
                points.as_ptr().cast::<*const blst_p1_affine>(),
                n,
                scalar_ptrs.as_ptr(),
                255,
                scratch.as_mut_ptr(),
            );
        }
        Ok(out)
    }

    fn batch_to_affine(points: &[G1Projective], out: &mut [G1Affine]) {
        batch_to_affine_with(
            points,
            out,
            |p| -> *const blst_p1 { p.as_ref() },
            |ptrs, dst| {
                // SAFETY: `ptrs` holds dst.len() pointers to live, non-identity projective
                // points borrowed for this call; `dst` has room for as many affine points
                // (G1Affine is repr(transparent) over blst_p1_affine).
                unsafe { blst_p1s_to_affine(dst.as_mut_ptr().cast::<blst_p1_affine>(), ptrs.as_ptr(), ptrs.len()) };
            },
        );
    }
}

impl Curve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    type Raw = blst_p2_affine;

    fn raw(p: &G2Affine) -> &blst_p2_affine {
        p.as_ref()
    }

    fn sum(points: &[&blst_p2_affine]) -> G2Projective {
        let mut out = G2Projective::identity();
        if points.is_empty() {
            return out;
        }
        let ret: &mut blst_p2 = out.as_mut();
        // SAFETY: as for G1::sum.
        unsafe { blst_p2s_add(ret, points.as_ptr().cast::<*const blst_p2_affine>(), points.len()) };
        out
    }

    fn pippenger(points: &[&blst_p2_affine], scalars: &[[u8; 32]]) -> Result<G2Projective> {
        let mut out = G2Projective::identity();
        let n = one_scalar_per_point(points.len(), scalars.len())?;
        if n == 0 {
            return Ok(out);
        }
        let scalar_ptrs = [scalars.as_ptr().cast::<u8>(), std::ptr::null()];
        // SAFETY: pure size computation.
        let scratch_bytes = unsafe { blst_p2s_mult_pippenger_scratch_sizeof(n) };
        let mut scratch = vec![0u64; scratch_bytes.div_ceil(8)];
        let ret: &mut blst_p2 = out.as_mut();
        // SAFETY: as for G1::pippenger.
        unsafe {
            blst_p2s_mult_pippenger(
                ret,
                points.as_ptr().cast::<*const blst_p2_affine>(),
                n,
                scalar_ptrs.as_ptr(),
                255,
                scratch.as_mut_ptr(),
            );
        }
        Ok(out)
    }

    fn batch_to_affine(points: &[G2Projective], out: &mut [G2Affine]) {
        batch_to_affine_with(
            points,
            out,
            |p| -> *const blst_p2 { p.as_ref() },
            |ptrs, dst| {
                // SAFETY: `ptrs` holds dst.len() pointers to live, non-identity projective
                // points borrowed for this call; `dst` has room for as many affine points
                // (G2Affine is repr(transparent) over blst_p2_affine).
                unsafe { blst_p2s_to_affine(dst.as_mut_ptr().cast::<blst_p2_affine>(), ptrs.as_ptr(), ptrs.len()) };
            },
        );
    }
}

pub(crate) fn one_scalar_per_point(points: usize, scalars: usize) -> Result<usize> {
    if points != scalars {
        return Err(Error::InvalidArgument(format!(
            "pippenger needs one scalar per point: {points} points, {scalars} scalars"
        )));
    }
    Ok(points)
}
