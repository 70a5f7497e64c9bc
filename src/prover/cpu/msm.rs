//! Multi-scalar multiplication on the CPU, over blst.
//!
//! Scalars are split three ways: zeros are skipped, ones become a plain sum of their bases
//! (blst's batched affine addition), and the rest go through blst's Pippenger. Work is cut
//! into one slice of scalars per rayon thread; each slice is summed on its own and the
//! partial sums are added. With a density tracker, the scalars whose bit is set are paired,
//! in order, with consecutive bases (bellperson's query filtering).
//!
//! The only unsafe code is the calls into blst, fenced in [`Curve`]'s two implementations.
//! [`Curve::batch_to_affine`] (blst's batch conversion) lives here for the same reason.

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_add, blst_p1s_mult_pippenger, blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_to_affine, blst_p2, blst_p2_affine, blst_p2s_add, blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof, blst_p2s_to_affine,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rayon::prelude::*;

use crate::assignment::DensityTracker;
use crate::error::{Error, Result};

/// Scalars below which an MSM is not split across threads.
const MIN_PER_THREAD: usize = 1 << 10;

/// The two curves an MSM runs on, with blst's raw entry points.
pub trait Curve: Sync {
    /// Affine base points.
    type Affine: Sync + Copy;
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

fn one_scalar_per_point(points: usize, scalars: usize) -> Result<usize> {
    if points != scalars {
        return Err(Error::InvalidArgument(format!(
            "pippenger needs one scalar per point: {points} points, {scalars} scalars"
        )));
    }
    Ok(points)
}

/// Σ scalars\[i\]·bases\[i\] (no density), or, with `density`, Σ over the scalars whose bit is
/// set, the j-th of them paired with `bases[j]`.
///
/// # Errors
/// [`Error::CircuitMismatch`] when the bases are fewer than the scalars (or set bits).
pub fn msm<C: Curve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
    density: Option<&DensityTracker>,
) -> Result<C::Projective> {
    let needed = match density {
        Some(d) => {
            if d.len() != scalars.len() {
                return Err(Error::CircuitMismatch(format!(
                    "density tracks {} variables but there are {} scalars",
                    d.len(),
                    scalars.len()
                )));
            }
            d.total_density()
        }
        None => scalars.len(),
    };
    if bases.len() < needed {
        return Err(Error::CircuitMismatch(format!(
            "MSM needs {needed} bases, the parameters have {}",
            bases.len()
        )));
    }
    let n = scalars.len();
    if n == 0 {
        return Ok(C::Projective::identity());
    }
    let threads = rayon::current_num_threads().max(1);
    // Slices start on multiples of 64 so that base offsets come from whole density words.
    let per = n.div_ceil(threads).max(MIN_PER_THREAD).next_multiple_of(64);
    let starts: Vec<usize> = (0..n).step_by(per).collect();
    let base_offsets: Vec<usize> = match density {
        None => starts.clone(),
        Some(d) => {
            let words = d.words();
            let mut acc = 0usize;
            let mut out = Vec::with_capacity(starts.len());
            let mut w = 0usize;
            for &s in &starts {
                while w < s / 64 {
                    acc += words[w].count_ones() as usize;
                    w += 1;
                }
                out.push(acc);
            }
            out
        }
    };
    let partials: Vec<C::Projective> = starts
        .par_iter()
        .zip(base_offsets.par_iter())
        .map(|(&start, &base0)| {
            let end = (start + per).min(n);
            slice_msm::<C>(bases, base0, &scalars[start..end], start, density)
        })
        .collect::<Result<_>>()?;
    Ok(partials.into_iter().fold(C::Projective::identity(), |acc, p| acc + p))
}

fn slice_msm<C: Curve>(
    bases: &[C::Affine],
    mut base: usize,
    scalars: &[Scalar],
    first_index: usize,
    density: Option<&DensityTracker>,
) -> Result<C::Projective> {
    let mut ones: Vec<&C::Raw> = Vec::new();
    let mut points: Vec<&C::Raw> = Vec::new();
    let mut reprs: Vec<[u8; 32]> = Vec::new();
    for (k, s) in scalars.iter().enumerate() {
        if let Some(d) = density {
            if !d.is_set(first_index + k) {
                continue;
            }
        }
        // `msm` checked that the bases cover every scalar (or set bit).
        let p = C::raw(
            bases
                .get(base)
                .ok_or_else(|| Error::CircuitMismatch(format!("MSM ran out of bases at {base} of {}", bases.len())))?,
        );
        base += 1;
        if bool::from(s.is_zero()) {
            continue;
        }
        if *s == Scalar::ONE {
            ones.push(p);
        } else {
            points.push(p);
            reprs.push(s.to_bytes_le());
        }
    }
    Ok(C::sum(&ones) + C::pippenger(&points, &reprs)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve as _;
    use rand_core::SeedableRng;

    fn naive<P: Group<Scalar = Scalar>>(bases: &[P], scalars: &[Scalar]) -> P {
        bases
            .iter()
            .zip(scalars)
            .fold(P::identity(), |acc, (b, s)| acc + *b * s)
    }

    #[test]
    fn msm_matches_naive_with_zeros_ones_and_density() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [0usize, 1, 2, 31, 33, 1000, 2100] {
            let scalars: Vec<Scalar> = (0..n)
                .map(|i| match i % 4 {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    _ => Scalar::random(&mut rng),
                })
                .collect();
            let g1: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
            let g1a: Vec<G1Affine> = g1.iter().map(|p| p.to_affine()).collect();
            assert_eq!(msm::<G1>(&g1a, &scalars, None).unwrap(), naive(&g1, &scalars), "n={n}");

            let mut d = DensityTracker::new();
            let mut selected = Vec::new();
            for (i, s) in scalars.iter().enumerate() {
                d.add_element();
                if i % 3 != 2 {
                    d.inc(i);
                    selected.push(*s);
                }
            }
            let m = selected.len();
            let g2: Vec<G2Projective> = (0..m).map(|_| G2Projective::random(&mut rng)).collect();
            let g2a: Vec<G2Affine> = g2.iter().map(|p| p.to_affine()).collect();
            assert_eq!(
                msm::<G2>(&g2a, &scalars, Some(&d)).unwrap(),
                naive(&g2, &selected),
                "n={n}"
            );
            if m > 0 {
                assert!(msm::<G2>(&g2a[..m - 1], &scalars, Some(&d)).is_err());
            }
        }
    }

    #[test]
    fn pippenger_with_mismatched_lengths_is_an_error() {
        use group::prime::PrimeCurveAffine;
        let p = G1Affine::generator();
        let raw = G1::raw(&p);
        assert!(G1::pippenger(&[raw, raw], &[[1u8; 32]]).is_err());
        assert!(G1::pippenger(&[raw], &[[1u8; 32]]).is_ok());
        let q = G2Affine::generator();
        assert!(G2::pippenger(&[G2::raw(&q)], &[]).is_err());
    }
}
