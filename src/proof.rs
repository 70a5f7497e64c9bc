//! `Proof`, its 192-byte encoding (bellperson's: compressed A ‖ B ‖ C), and verification.

use std::io::{Read, Write};

use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Prepared, Gt, Scalar};
use group::{prime::PrimeCurveAffine, Curve};
use pairing::{MillerLoopResult, MultiMillerLoop};

use crate::error::{Error, Result};
use crate::params::VerifyingKey;

/// A Groth16 proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proof {
    /// A in G1.
    pub a: G1Affine,
    /// B in G2.
    pub b: G2Affine,
    /// C in G1.
    pub c: G1Affine,
}

impl Proof {
    /// Bytes in the encoding.
    pub const SIZE: usize = 192;

    /// The encoding: compressed A (48 bytes), B (96), C (48).
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes and validates (points in the subgroup, none at infinity), as bellperson does.
    ///
    /// # Errors
    /// [`Error::MalformedProof`] naming the bad element.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let wrong_size = || Error::MalformedProof(format!("expected {} bytes, found {}", Self::SIZE, bytes.len()));
        let bytes: &[u8; Self::SIZE] = bytes.try_into().map_err(|_| wrong_size())?;
        let (a, rest) = bytes.split_first_chunk::<48>().ok_or_else(wrong_size)?;
        let (b, c) = rest.split_first_chunk::<96>().ok_or_else(wrong_size)?;
        let c: &[u8; 48] = c.try_into().map_err(|_| wrong_size())?;
        let g1 = |repr: &[u8; 48], name: &str| -> Result<G1Affine> {
            let p: Option<G1Affine> = G1Affine::from_compressed(repr).into();
            let p = p.ok_or_else(|| Error::MalformedProof(format!("{name} is not a valid G1 point")))?;
            if bool::from(p.is_identity()) {
                return Err(Error::MalformedProof(format!("{name} is the point at infinity")));
            }
            Ok(p)
        };
        let a = g1(a, "A")?;
        let b: Option<G2Affine> = G2Affine::from_compressed(b).into();
        let b = b.ok_or_else(|| Error::MalformedProof("B is not a valid G2 point".into()))?;
        if bool::from(b.is_identity()) {
            return Err(Error::MalformedProof("B is the point at infinity".into()));
        }
        let c = g1(c, "C")?;
        Ok(Self { a, b, c })
    }

    /// Writes the encoding.
    ///
    /// # Errors
    /// Any I/O error of `w`.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(&self.to_bytes())
    }

    /// Reads one encoded proof.
    ///
    /// # Errors
    /// [`Error::MalformedProof`] for short input or invalid points.
    pub fn read<R: Read>(mut r: R) -> Result<Self> {
        let mut buf = [0u8; Self::SIZE];
        r.read_exact(&mut buf)
            .map_err(|e| Error::MalformedProof(format!("cannot read {} bytes: {e}", Self::SIZE)))?;
        Self::from_bytes(&buf)
    }
}

/// A verifying key prepared for fast repeated verification.
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey {
    alpha_beta: Gt,
    neg_gamma: G2Prepared,
    neg_delta: G2Prepared,
    ic: Vec<G1Affine>,
}

impl PreparedVerifyingKey {
    /// Prepares `vk`.
    pub fn new(vk: &VerifyingKey) -> Self {
        Self {
            alpha_beta: <Bls12 as pairing::Engine>::pairing(&vk.alpha_g1, &vk.beta_g2),
            neg_gamma: G2Prepared::from(-vk.gamma_g2),
            neg_delta: G2Prepared::from(-vk.delta_g2),
            ic: vk.ic.clone(),
        }
    }
}

/// Checks `proof` against the public inputs (without the leading "one").
///
/// Returns `Ok(false)` for a proof that does not verify.
///
/// # Errors
/// [`Error::InvalidArgument`] when the number of inputs does not match the key, or the key has
/// no input commitments at all (not even the one input's).
pub fn verify_proof(pvk: &PreparedVerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    let Some((ic0, ic_inputs)) = pvk.ic.split_first() else {
        return Err(Error::InvalidArgument(
            "verifying key has no input commitments (vk.ic is empty); expected one per public input plus one".into(),
        ));
    };
    if public_inputs.len() != ic_inputs.len() {
        return Err(Error::InvalidArgument(format!(
            "verifying key expects {} public inputs, found {}",
            ic_inputs.len(),
            public_inputs.len()
        )));
    }
    let mut acc = G1Projective::from(*ic0);
    for (input, base) in public_inputs.iter().zip(ic_inputs) {
        acc += base * input;
    }
    let acc = acc.to_affine();
    let b = G2Prepared::from(proof.b);
    // e(A, B) · e(acc, −γ) · e(C, −δ) == e(α, β)
    let lhs = Bls12::multi_miller_loop(&[(&proof.a, &b), (&acc, &pvk.neg_gamma), (&proof.c, &pvk.neg_delta)])
        .final_exponentiation();
    Ok(lhs == pvk.alpha_beta)
}
