//! The twins of storage-proofs-core's proof-of-retrievability gadgets (`gadgets::por`):
//! `PoRCircuit::synthesize` (PoSt's and PoRep's inclusion proofs) and
//! `por_no_challenge_input` (SnapDeals'), over Poseidon trees of any Filecoin shape (8-ary
//! base, optional 2- or 8-ary sub-tree and 2-ary top-tree levels) and SHA-256 binary trees.
//!
//! A path is a list of levels, leaf first; each level is the siblings of the node on the path
//! (`arity − 1` of them) and the node's index among its siblings, as `MerkleProof::as_options`
//! gives them. The level's arity is its sibling count plus one, so one list describes the
//! base, sub and top levels alike (the gadget's split into them names namespaces only).
//!
//! Per level, `PoRCircuit` allocates the index bits (least significant first) and the
//! siblings, then the insertion's picks and the node hash; the packed index bits become public
//! inputs, and the root is allocated (or taken as is) and, when the proof is not private,
//! made public. `por_no_challenge_input` allocates only the insertions and hashes: its caller
//! allocated the challenge bits, leaf, siblings and root.

use blstrs::Scalar;

use super::{
    insertion, multipack, pack_bits, poseidon_merkle, reverse_bit_numbering, sha256, to_bits_le, AuxSink, Bit,
};

/// The node hash of a tree: filecoin-hashers' `hash_multi_leaf_circuit` of its hasher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeHash {
    /// `PoseidonFunction`: neptune's Poseidon with filecoin-hashers' constants for the arity.
    Poseidon,
    /// `Sha256Function`: each child's 255 bits (allocated), each byte's bits reversed, SHA-256
    /// with padding, the digest's first 254 bits (bytes reversed back) packed into one number.
    Sha256,
}

impl NodeHash {
    /// The hash of `children`, writing what the gadget allocates.
    pub fn hash(self, aux: &mut impl AuxSink, children: &[Scalar]) -> Scalar {
        match self {
            NodeHash::Poseidon => poseidon_merkle(aux, children),
            NodeHash::Sha256 => sha256_node(aux, children),
        }
    }
}

/// `Sha256Function::hash_multi_leaf_circuit` (and `hash2_circuit`, the same for two children).
fn sha256_node(aux: &mut impl AuxSink, children: &[Scalar]) -> Scalar {
    let mut preimage = Vec::with_capacity(children.len() * 256);
    for &child in children {
        preimage.extend(reverse_bit_numbering(to_bits_le(aux, child)));
    }
    let digest = sha256(aux, &preimage);
    pack_bits(aux, &reverse_bit_numbering(digest)[..254])
}

/// storage-proofs-core's `Root`: a value the gadget allocates (`Val`) or an already allocated
/// number it takes as is (`Var`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `Root::Val`: allocated here.
    Val(Scalar),
    /// `Root::Var`: allocated by the caller.
    Var(Scalar),
}

impl Root {
    /// Its value.
    pub fn value(self) -> Scalar {
        match self {
            Root::Val(v) | Root::Var(v) => v,
        }
    }

    /// `Root::allocated`: allocates a `Val`, returns the value.
    fn allocated(self, aux: &mut impl AuxSink) -> Scalar {
        if let Root::Val(v) = self {
            aux.push(v);
        }
        self.value()
    }
}

/// One level of a path: the siblings and the index of the path's node among all the level's
/// children (`0..=siblings.len()`).
pub type Level = (Vec<Scalar>, usize);

/// What a [`por_circuit`] computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PorOutput {
    /// The root computed from the leaf and the path (the gadget enforces it equals the root).
    pub computed_root: Scalar,
    /// The public inputs it allocated, in order: the index bits packed 254 to a number, then
    /// the root when the proof is not private.
    pub inputs: Vec<Scalar>,
}

/// `PoRCircuit::<Tree>::synthesize(cs, leaf, auth_path, root, private)`.
///
/// # Panics
/// When a level's arity (siblings + 1) is not a power of two.
pub fn por_circuit(
    aux: &mut impl AuxSink,
    hash: NodeHash,
    leaf: Root,
    path: &[Level],
    root: Root,
    private: bool,
) -> PorOutput {
    let mut cur = leaf.allocated(aux);
    let mut path_bits = Vec::new();
    for (siblings, index) in path {
        let bits = index_bits(siblings.len() + 1, *index);
        for &b in &bits {
            aux.push_bit(b);
        }
        for &s in siblings {
            aux.push(s);
        }
        let children = insertion::insert(aux, cur, &bits, siblings);
        cur = hash.hash(aux, &children);
        path_bits.extend(bits.into_iter().map(Bit::Is));
    }
    let mut inputs = multipack(&path_bits);
    let root = root.allocated(aux);
    if !private {
        inputs.push(root);
    }
    PorOutput {
        computed_root: cur,
        inputs,
    }
}

/// `por_no_challenge_input::<Tree>(cs, challenge_bits, leaf, path, root)`: every operand
/// allocated by the caller; `challenge_bits` (least significant first) are consumed
/// `log2(arity)` a level. Returns the computed root (enforced equal to the caller's root).
///
/// # Panics
/// When a level's arity is not a power of two, or the bits do not match the path's levels.
pub fn por_no_challenge_input(
    aux: &mut impl AuxSink,
    hash: NodeHash,
    challenge_bits: &[bool],
    leaf: Scalar,
    path: &[Vec<Scalar>],
) -> Scalar {
    let mut cur = leaf;
    let mut bits = challenge_bits;
    for siblings in path {
        let n = log2_arity(siblings.len() + 1);
        assert!(bits.len() >= n, "no challenge bits remaining");
        let (level, rest) = bits.split_at(n);
        let children = insertion::insert(aux, cur, level, siblings);
        cur = hash.hash(aux, &children);
        bits = rest;
    }
    assert!(bits.is_empty(), "challenge bit-length and tree arity do not agree");
    cur
}

fn log2_arity(arity: usize) -> usize {
    assert!(
        arity.is_power_of_two() && arity > 1,
        "arity {arity} is not a power of two"
    );
    arity.trailing_zeros() as usize
}

/// The index bits of one level, least significant first (the gadget takes the low bits).
fn index_bits(arity: usize, index: usize) -> Vec<bool> {
    (0..log2_arity(arity)).map(|i| (index >> i) & 1 == 1).collect()
}
