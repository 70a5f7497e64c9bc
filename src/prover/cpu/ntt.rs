//! Number-theoretic transforms over the scalar field, and H = (A·B − C)/Z on a coset.
//!
//! The domain is bellperson's: m = 2^k, ω = ROOT_OF_UNITY^(2^(32−k)), coset shift
//! g = MULTIPLICATIVE_GENERATOR. H's coefficients are unique, so any correct computation on
//! this domain yields bellperson's bytes.
//!
//! The transform is an iterative radix-2 decimation-in-time after a bit-reversal; the first
//! stages run block by block (a block fits in L2), the later ones over the whole vector, both
//! spread over rayon. Twiddles are precomputed per stage so every stage reads them
//! contiguously; the inverse transform is the forward one with outputs reversed.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Elements per block for the cache-local first stages.
const BLOCK: usize = 1 << 12;
/// Elements below which work is not split further.
const MIN_PAR: usize = 1 << 11;

/// An evaluation domain of size m = 2^k with its twiddle tables.
#[derive(Debug, Clone)]
pub struct Domain {
    log_m: u32,
    /// twiddles[h - 1 + j] = ω_{2h}^j for each stage half-size h (a power of two), j < h.
    twiddles: Vec<Scalar>,
}

impl Domain {
    /// The domain of size 2^log_m.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when 2^log_m exceeds the field's two-adicity (2^32);
    /// [`Error::Allocation`] when there is no memory for the twiddle table (m − 1 scalars).
    pub fn new(log_m: u32) -> Result<Self> {
        if log_m > Scalar::S {
            return Err(Error::InvalidArgument(format!(
                "domain 2^{log_m} exceeds the field's two-adicity 2^{}",
                Scalar::S
            )));
        }
        let m = 1usize << log_m;
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_m..Scalar::S {
            omega = omega.square();
        }
        let n = m.max(2) - 1;
        let mut twiddles = Vec::new();
        twiddles
            .try_reserve_exact(n)
            .map_err(|e| crate::pool::heap_error(n, std::mem::size_of::<Scalar>(), &e))?;
        twiddles.resize(n, Scalar::ZERO);
        if m >= 2 {
            // The last stage (h = m/2) uses ω^j for j < m/2; earlier stages are strided views.
            let h = m / 2;
            powers_into(&mut twiddles[h - 1..], omega);
            let mut half = h / 2;
            while half >= 1 {
                let stride = h / half;
                let (lo, hi) = twiddles.split_at_mut(h - 1);
                let last = &hi[..h];
                lo[half - 1..2 * half - 1]
                    .par_iter_mut()
                    .with_min_len(MIN_PAR)
                    .enumerate()
                    .for_each(|(j, t)| *t = last[j * stride]);
                half /= 2;
            }
        }
        Ok(Self { log_m, twiddles })
    }

    /// The smallest domain that holds `n` values.
    ///
    /// # Errors
    /// As [`Domain::new`].
    pub fn for_size(n: usize) -> Result<Self> {
        let m = n
            .max(1)
            .checked_next_power_of_two()
            .ok_or_else(|| Error::InvalidArgument(format!("no domain of 2^k ≥ {n} values")))?;
        Self::new(m.trailing_zeros())
    }

    /// m.
    pub fn size(&self) -> usize {
        1 << self.log_m
    }

    /// log2(m).
    pub fn log_size(&self) -> u32 {
        self.log_m
    }

    fn stage(&self, half: usize) -> &[Scalar] {
        &self.twiddles[half - 1..2 * half - 1]
    }

    /// Checks that `values` has the domain's size.
    fn check_len(&self, what: &str, values: &[Scalar]) -> Result<()> {
        if values.len() != self.size() {
            return Err(Error::InvalidArgument(format!(
                "{what} of {} values on a domain of {}",
                values.len(),
                self.size()
            )));
        }
        Ok(())
    }

    /// In place: coefficients → evaluations at ω^i.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` does not have the domain's size.
    pub fn fft(&self, values: &mut [Scalar]) -> Result<()> {
        self.check_len("fft", values)?;
        self.fft_checked(values);
        Ok(())
    }

    /// [`Domain::fft`] of a vector of the domain's size.
    fn fft_checked(&self, values: &mut [Scalar]) {
        let m = values.len();
        if m < 2 {
            return;
        }
        bit_reverse(values, self.log_m);
        let block = BLOCK.min(m);
        // Stages whose butterflies stay inside one block.
        values.par_chunks_mut(block).for_each(|chunk| {
            let mut half = 1;
            while half < block {
                let tw = self.stage(half);
                for group in chunk.chunks_mut(2 * half) {
                    let (lo, hi) = group.split_at_mut(half);
                    butterflies(lo, hi, tw);
                }
                half *= 2;
            }
        });
        // Stages across blocks.
        let mut half = block;
        while half < m {
            let tw = self.stage(half);
            values.par_chunks_mut(2 * half).for_each(|group| {
                let (lo, hi) = group.split_at_mut(half);
                lo.par_chunks_mut(MIN_PAR)
                    .zip(hi.par_chunks_mut(MIN_PAR))
                    .zip(tw.par_chunks(MIN_PAR))
                    .for_each(|((lo, hi), tw)| butterflies(lo, hi, tw));
            });
            half *= 2;
        }
    }

    /// In place: evaluations at ω^i → coefficients, each multiplied by `scale · shift^i`.
    /// (`scale = 1, shift = 1` is the plain inverse transform without the 1/m: callers fold
    /// 1/m into `scale`.)
    fn ifft_unscaled_then(&self, values: &mut [Scalar], scale: Scalar, shift: Scalar) {
        self.fft_checked(values);
        // FFT then reverse indices 1..m is m·IFFT.
        if let Some(tail) = values.get_mut(1..) {
            tail.reverse();
        }
        scale_by_powers(values, scale, shift);
    }

    /// In place: evaluations at ω^i → coefficients.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` does not have the domain's size.
    pub fn ifft(&self, values: &mut [Scalar]) -> Result<()> {
        self.check_len("ifft", values)?;
        let m_inv = self.m_inv();
        self.ifft_unscaled_then(values, m_inv, Scalar::ONE);
        Ok(())
    }

    /// In place: coefficients → evaluations at g·ω^i.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` does not have the domain's size.
    pub fn coset_fft(&self, values: &mut [Scalar]) -> Result<()> {
        self.check_len("coset fft", values)?;
        scale_by_powers(values, Scalar::ONE, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft_checked(values);
        Ok(())
    }

    /// In place: evaluations at g·ω^i → coefficients.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` does not have the domain's size.
    pub fn icoset_fft(&self, values: &mut [Scalar]) -> Result<()> {
        self.check_len("inverse coset fft", values)?;
        let g_inv = Scalar::MULTIPLICATIVE_GENERATOR.invert().expect("g is non-zero");
        self.ifft_unscaled_then(values, self.m_inv(), g_inv);
        Ok(())
    }

    /// In place: evaluations at ω^i → evaluations at g·ω^i (the IFFT's scaling and the
    /// coset shift fused into one pass).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `values` does not have the domain's size.
    pub fn evaluations_to_coset(&self, values: &mut [Scalar]) -> Result<()> {
        self.check_len("evaluations to coset", values)?;
        self.evaluations_to_coset_checked(values);
        Ok(())
    }

    fn evaluations_to_coset_checked(&self, values: &mut [Scalar]) {
        self.ifft_unscaled_then(values, self.m_inv(), Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft_checked(values);
    }

    fn m_inv(&self) -> Scalar {
        Scalar::from(self.size() as u64)
            .invert()
            .expect("m is a non-zero power of two below the modulus")
    }

    /// 1 / Z(g·ω^i) = 1 / (g^m − 1), the same at every point of the coset.
    pub fn z_inv_on_coset(&self) -> Scalar {
        let gm = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size() as u64]);
        (gm - Scalar::ONE)
            .invert()
            .expect("g^m ≠ 1 since g generates the multiplicative group")
    }
}

#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], tw: &[Scalar]) {
    for ((u, v), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let t = *v * w;
        *v = *u - t;
        *u += t;
    }
}

fn bit_reverse(values: &mut [Scalar], log_m: u32) {
    let m = values.len();
    let shift = usize::BITS - log_m;
    for i in 0..m {
        let j = i.reverse_bits() >> shift;
        if i < j {
            values.swap(i, j);
        }
    }
}

/// out[i] = base^i.
fn powers_into(out: &mut [Scalar], base: Scalar) {
    out.par_chunks_mut(MIN_PAR).enumerate().for_each(|(c, chunk)| {
        let mut p = base.pow_vartime([(c * MIN_PAR) as u64]);
        for x in chunk {
            *x = p;
            p *= base;
        }
    });
}

/// values[i] *= scale · shift^i.
fn scale_by_powers(values: &mut [Scalar], scale: Scalar, shift: Scalar) {
    if shift == Scalar::ONE {
        if scale != Scalar::ONE {
            values.par_iter_mut().with_min_len(MIN_PAR).for_each(|x| *x *= scale);
        }
        return;
    }
    values.par_chunks_mut(MIN_PAR).enumerate().for_each(|(c, chunk)| {
        let mut p = scale * shift.pow_vartime([(c * MIN_PAR) as u64]);
        for x in chunk {
            *x *= p;
            p *= shift;
        }
    });
}

/// Computes H's coefficients from the evaluations of A, B and C over the domain:
/// `h = icoset((coset(a)·coset(b) − coset(c)) / Z)`, truncated to m − 1 coefficients.
/// `a`, `b`, `c` must already be padded to the domain size; `a` becomes H (length m − 1).
///
/// # Errors
/// [`Error::InvalidArgument`] when `a`, `b` or `c` does not have the domain's size (nothing
/// is changed then).
pub fn compute_h(domain: &Domain, a: &mut Vec<Scalar>, b: &mut [Scalar], c: &mut [Scalar]) -> Result<()> {
    let m = domain.size();
    if a.len() != m || b.len() != m || c.len() != m {
        return Err(Error::InvalidArgument(format!(
            "a, b, c have {}, {}, {} values; H needs them padded to the domain's {m}",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    rayon::join(
        || domain.evaluations_to_coset_checked(a),
        || {
            rayon::join(
                || domain.evaluations_to_coset_checked(b),
                || domain.evaluations_to_coset_checked(c),
            )
        },
    );
    let z_inv = domain.z_inv_on_coset();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .with_min_len(MIN_PAR)
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    let g_inv = Scalar::MULTIPLICATIVE_GENERATOR.invert().expect("g is non-zero");
    domain.ifft_unscaled_then(a, domain.m_inv(), g_inv);
    a.truncate(m - 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn naive_eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_matches_naive_evaluation_and_inverts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for log_m in [0u32, 1, 2, 3, 5, 13] {
            let d = Domain::new(log_m).unwrap();
            let m = d.size();
            let coeffs: Vec<Scalar> = (0..m).map(|_| Scalar::random(&mut rng)).collect();
            let mut evals = coeffs.clone();
            d.fft(&mut evals).unwrap();
            let mut omega = Scalar::ROOT_OF_UNITY;
            for _ in log_m..Scalar::S {
                omega = omega.square();
            }
            for i in [0, 1.min(m - 1), m / 2, m - 1] {
                assert_eq!(
                    evals[i],
                    naive_eval(&coeffs, omega.pow_vartime([i as u64])),
                    "m={m} i={i}"
                );
            }
            let mut back = evals.clone();
            d.ifft(&mut back).unwrap();
            assert_eq!(back, coeffs);
            let mut coset = coeffs.clone();
            d.coset_fft(&mut coset).unwrap();
            let g = Scalar::MULTIPLICATIVE_GENERATOR;
            assert_eq!(
                coset[m - 1],
                naive_eval(&coeffs, g * omega.pow_vartime([(m - 1) as u64]))
            );
            d.icoset_fft(&mut coset).unwrap();
            assert_eq!(coset, coeffs);
        }
    }

    #[test]
    fn domain_beyond_two_adicity_is_an_error() {
        assert!(Domain::new(33).is_err());
        assert!(Domain::new(u32::MAX).is_err());
        assert!(Domain::for_size((1 << 32) + 1).is_err());
        assert!(Domain::for_size(usize::MAX).is_err(), "no overflow panic");
        assert_eq!(Domain::for_size(5).unwrap().size(), 8);
        assert_eq!(Domain::for_size(0).unwrap().size(), 1);
    }

    #[test]
    fn wrong_lengths_are_errors_not_panics() {
        let d = Domain::new(3).unwrap();
        for n in [0usize, 1, 7, 9] {
            let mut v = vec![Scalar::ONE; n];
            assert!(d.fft(&mut v).is_err(), "n={n}");
            assert!(d.ifft(&mut v).is_err(), "n={n}");
            assert!(d.coset_fft(&mut v).is_err(), "n={n}");
            assert!(d.icoset_fft(&mut v).is_err(), "n={n}");
            assert!(d.evaluations_to_coset(&mut v).is_err(), "n={n}");
            assert_eq!(v, vec![Scalar::ONE; n], "unchanged on error");
        }
        let (mut a, mut b, mut c) = (vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], vec![Scalar::ONE; 7]);
        assert!(compute_h(&d, &mut a, &mut b, &mut c).is_err());
        assert_eq!(a.len(), 8);
        // The size-1 domain (no butterflies) works.
        let d1 = Domain::new(0).unwrap();
        let mut one = vec![Scalar::ONE];
        d1.fft(&mut one).unwrap();
        d1.ifft(&mut one).unwrap();
        assert_eq!(one, vec![Scalar::ONE]);
    }
}
