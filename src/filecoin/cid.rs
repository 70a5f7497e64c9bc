//! Filecoin's commitment CIDs (go-fil-commcid's conventions) read from their binary form
//! (`cid.Cid.Bytes()` in Go): a CIDv1 of codec fil-commitment-sealed (CommR) or
//! fil-commitment-unsealed (CommD, CommP) whose multihash digest is the 32-byte commitment.

use crate::error::{Error, Result};

/// Multicodec fil-commitment-sealed: a replica commitment (CommR).
pub const FIL_COMMITMENT_SEALED: u64 = 0xf102;
/// Multicodec fil-commitment-unsealed: a data or piece commitment (CommD, CommP).
pub const FIL_COMMITMENT_UNSEALED: u64 = 0xf101;
/// Multihash poseidon-bls12_381-a2-fc1: the hash of sealed commitments.
pub const POSEIDON_BLS12_381_A2_FC1: u64 = 0xb401;
/// Multihash sha2-256-trunc254-padded: the hash of unsealed commitments.
pub const SHA2_256_TRUNC254_PADDED: u64 = 0x1012;

/// Which commitment a CID must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitmentKind {
    /// A replica commitment, CommR (Curio's `sealed` and `key` CIDs): codec 0xf102, hash
    /// 0xb401.
    Sealed,
    /// A data commitment, CommD (Curio's `unsealed` CID): codec 0xf101, hash 0x1012.
    Unsealed,
}

impl CommitmentKind {
    fn codec(self) -> (u64, &'static str) {
        match self {
            Self::Sealed => (FIL_COMMITMENT_SEALED, "fil-commitment-sealed"),
            Self::Unsealed => (FIL_COMMITMENT_UNSEALED, "fil-commitment-unsealed"),
        }
    }

    fn hash(self) -> (u64, &'static str) {
        match self {
            Self::Sealed => (POSEIDON_BLS12_381_A2_FC1, "poseidon-bls12_381-a2-fc1"),
            Self::Unsealed => (SHA2_256_TRUNC254_PADDED, "sha2-256-trunc254-padded"),
        }
    }
}

/// The 32-byte commitment in the binary CID `cid` (as go-fil-commcid's
/// `CIDToReplicaCommitmentV1` / `CIDToDataCommitmentV1` read it): version 1, the codec and
/// multihash of `kind`, a 32-byte digest, nothing after it. `what` names the CID in errors.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `what` and the problem: an empty or truncated CID, a
/// version other than 1 (a CIDv0 is a bare SHA-256 multihash), another codec or hash function
/// (with the one expected), a digest that is not 32 bytes, trailing bytes.
pub fn commitment_from_cid(cid: &[u8], kind: CommitmentKind, what: &str) -> Result<[u8; 32]> {
    let bad = |m: String| Error::InvalidArgument(format!("{what}: not a {kind:?} commitment CID: {m}"));
    let mut rest = cid;
    if rest.is_empty() {
        return Err(bad("the CID is empty".into()));
    }
    let version = varint(&mut rest).map_err(|m| bad(format!("its version {m}")))?;
    if version != 1 {
        let hint = if cid.first() == Some(&0x12) {
            " (a CIDv0, a bare SHA-256 multihash)"
        } else {
            ""
        };
        return Err(bad(format!("version {version}{hint}; expected a CIDv1")));
    }
    let (codec, codec_name) = kind.codec();
    let found = varint(&mut rest).map_err(|m| bad(format!("its codec {m}")))?;
    if found != codec {
        return Err(bad(format!("codec {found:#x}; expected {codec_name} ({codec:#x})")));
    }
    let (hash, hash_name) = kind.hash();
    let found = varint(&mut rest).map_err(|m| bad(format!("its multihash code {m}")))?;
    if found != hash {
        return Err(bad(format!("multihash {found:#x}; expected {hash_name} ({hash:#x})")));
    }
    let len = varint(&mut rest).map_err(|m| bad(format!("its digest length {m}")))?;
    if len != 32 {
        return Err(bad(format!("a {len}-byte digest; expected 32")));
    }
    if rest.len() < 32 {
        return Err(bad(format!("the digest is truncated: {} of 32 bytes", rest.len())));
    }
    if rest.len() > 32 {
        return Err(bad(format!("{} bytes after the digest", rest.len() - 32)));
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(rest);
    Ok(out)
}

/// Reads one unsigned varint (multiformats': LEB128, at most 9 bytes, minimally encoded).
fn varint(bytes: &mut &[u8]) -> std::result::Result<u64, String> {
    let mut value = 0u64;
    for i in 0..9 {
        let Some((&b, rest)) = bytes.split_first() else {
            return Err("is truncated".into());
        };
        *bytes = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if b == 0 && i > 0 {
                return Err("is not minimally encoded".into());
            }
            return Ok(value);
        }
    }
    Err("is longer than 9 bytes".into())
}

/// The binary CID of a commitment (go-fil-commcid's `ReplicaCommitmentV1ToCID` /
/// `DataCommitmentV1ToCID`).
#[cfg(test)]
pub(crate) fn cid_of(kind: CommitmentKind, commitment: &[u8; 32]) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let mut out = Vec::new();
    put(&mut out, 1);
    put(&mut out, kind.codec().0);
    put(&mut out, kind.hash().0);
    put(&mut out, 32);
    out.extend_from_slice(commitment);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 base32, lower case, no padding (multibase 'b').
    fn base32(s: &str) -> Vec<u8> {
        let (mut acc, mut bits, mut out) = (0u32, 0, Vec::new());
        for c in s.bytes() {
            let v = match c {
                b'a'..=b'z' => c - b'a',
                b'2'..=b'7' => c - b'2' + 26,
                _ => panic!("not base32: {c}"),
            };
            acc = (acc << 5) | u32::from(v);
            bits += 5;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }

    #[test]
    fn a_real_piece_cid_reads_as_an_unsealed_commitment() {
        // The CommP CID of a 32 GiB piece of zeros, as Filecoin tools print it (multibase 'b').
        let cid = base32("aga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq");
        assert_eq!(&cid[..6], &[0x01, 0x81, 0xe2, 0x03, 0x92, 0x20]);
        let comm = commitment_from_cid(&cid, CommitmentKind::Unsealed, "unsealed").unwrap();
        assert_eq!(cid_of(CommitmentKind::Unsealed, &comm), cid);
        let err = commitment_from_cid(&cid, CommitmentKind::Sealed, "sealed").unwrap_err();
        assert!(
            err.to_string().contains("expected fil-commitment-sealed (0xf102)"),
            "{err}"
        );
    }

    #[test]
    fn commitments_round_trip() {
        let comm = [7u8; 32];
        for kind in [CommitmentKind::Sealed, CommitmentKind::Unsealed] {
            assert_eq!(commitment_from_cid(&cid_of(kind, &comm), kind, "c").unwrap(), comm);
        }
    }

    #[test]
    fn other_cids_are_refused_with_the_problem_named() {
        let comm = [9u8; 32];
        let sealed = cid_of(CommitmentKind::Sealed, &comm);
        let mut wrong_hash = sealed.clone();
        wrong_hash[4..6].copy_from_slice(&[0x92, 0x20]); // sha2-256-trunc254-padded
        let mut wrong_len = sealed.clone();
        wrong_len[7] = 31;
        wrong_len.pop();
        let mut v0 = vec![0x12, 0x20];
        v0.extend_from_slice(&comm);
        let mut trailing = sealed.clone();
        trailing.push(0);
        let mut overlong = sealed.clone();
        overlong.splice(0..1, [0x81, 0x00]);
        let cases: [(&[u8], &str); 8] = [
            (&[], "empty"),
            (&v0, "CIDv0"),
            (
                &cid_of(CommitmentKind::Unsealed, &comm),
                "codec 0xf101; expected fil-commitment-sealed",
            ),
            (&wrong_hash, "multihash 0x1012; expected poseidon-bls12_381-a2-fc1"),
            (&wrong_len, "31-byte digest"),
            (&sealed[..20], "truncated: 12 of 32"),
            (&trailing, "1 bytes after the digest"),
            (&overlong, "not minimally encoded"),
        ];
        for (cid, want) in cases {
            let err = commitment_from_cid(cid, CommitmentKind::Sealed, "sealed").unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, Error::InvalidArgument(_)), "{msg}");
            assert!(
                msg.contains("sealed: not a Sealed commitment CID") && msg.contains(want),
                "{want}: {msg}"
            );
        }
    }
}
