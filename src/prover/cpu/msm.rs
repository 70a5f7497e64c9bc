//! Multi-scalar multiplication on the CPU, over blst.
//!
//! Scalars are split three ways: zeros are skipped, ones become a plain sum of their bases
//! (blst's batched affine addition), and the rest go through blst's Pippenger. Work is cut
//! into one slice of scalars per rayon thread; each slice is summed on its own and the
//! partial sums are added. With a density tracker, the scalars whose bit is set are paired,
//! in order, with consecutive bases (bellperson's query filtering). The curves' raw
//! operations (blst) are [`Curve`]'s, in [`crate::curve`].

use blstrs::Scalar;
use ff::Field;
use group::Group;
use rayon::prelude::*;

use crate::assignment::DensityTracker;
use crate::error::{Error, Result};

/// Scalars below which an MSM is not split across threads.
const MIN_PER_THREAD: usize = 1 << 10;

pub use crate::curve::{Curve, G1, G2};

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
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
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
