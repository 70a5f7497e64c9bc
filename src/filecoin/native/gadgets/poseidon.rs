//! The twin of neptune 11's Poseidon circuit, `neptune::circuit::poseidon_hash` (the "legacy"
//! circuit, which filecoin-hashers' `PoseidonFunction::hash2_circuit` / `hash_leaf_circuit` /
//! `hash_multi_leaf_circuit`, storage-proofs-porep's column hashes and storage-proofs-update
//! all call; none calls `circuit2`).
//!
//! The circuit runs neptune's optimized permutation (compressed round constants, a pre-sparse
//! matrix and sparse matrices for the partial rounds) on elements that are either allocated
//! numbers or linear combinations (`Elt::Num`), and allocates:
//! - nothing for the domain tag: it is a constant, and its first s-box is computed statically;
//! - first full round, each preimage element `l` (already allocated): `(l + pre)²`, its square,
//!   and `(l + pre)·(l + pre)⁴ + post` — 3 values;
//! - every other full round, each element (a linear combination by then): the element itself
//!   ("S-box input"), `x²`, `x⁴`, `x⁵ + post` (no `post` in the terminal round) — 4 values;
//! - every partial round, element 0 only: the same 4 values;
//! - the result, element 1 of the final state, once more ("hash result").
//!
//! The MDS products allocate nothing. For arity `n` (width `n + 1`) that is
//! `3n + 4·(width·(full − 1) + partial) + 1` values: 311 for arity 2, 505 for 8.

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::{
    POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_16, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_24, POSEIDON_CONSTANTS_36,
    POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use neptune::poseidon::{Arity, PoseidonConstants};

use super::AuxSink;

/// `neptune::circuit::poseidon_hash(cs, preimage, constants)`: writes the values the circuit
/// allocates and returns the hash (its last value).
///
/// # Panics
/// When `preimage` does not hold exactly the constants' arity of elements (neptune's circuit
/// is only called so by Filecoin's circuits; it asserts it for constant-length hashes).
pub fn poseidon_hash<A: Arity<Scalar>>(
    aux: &mut impl AuxSink,
    preimage: &[Scalar],
    constants: &PoseidonConstants<Scalar, A>,
) -> Scalar {
    let width = constants.width();
    assert_eq!(
        preimage.len() + 1,
        width,
        "a Poseidon preimage of {} elements for arity {}",
        preimage.len(),
        width - 1
    );
    let keys = &constants.compressed_round_constants;
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    state.extend_from_slice(preimage);
    let mut scratch = vec![Scalar::ZERO; width];
    let mut round = 0;

    // The first full round adds the pre-round keys before the s-box; the tag's s-box is
    // computed statically.
    let (pre, post) = (&keys[..width], &keys[width..2 * width]);
    let mut offset = 2 * width;
    state[0] = fifth_power(state[0] + pre[0]) + post[0];
    for i in 1..width {
        let l = state[i] + pre[i];
        let l2 = l.square();
        aux.push(l2);
        let l4 = l2.square();
        aux.push(l4);
        let l5 = l4 * l + post[i];
        aux.push(l5);
        state[i] = l5;
    }
    mix(constants, round, &mut state, &mut scratch);
    round += 1;

    let half = constants.full_rounds / 2;
    for _ in 1..half {
        for x in state.iter_mut() {
            *x = s_box(aux, *x, Some(keys[offset]));
            offset += 1;
        }
        mix(constants, round, &mut state, &mut scratch);
        round += 1;
    }
    for _ in 0..constants.partial_rounds {
        state[0] = s_box(aux, state[0], Some(keys[offset]));
        offset += 1;
        mix(constants, round, &mut state, &mut scratch);
        round += 1;
    }
    for _ in 0..half - 1 {
        for x in state.iter_mut() {
            *x = s_box(aux, *x, Some(keys[offset]));
            offset += 1;
        }
        mix(constants, round, &mut state, &mut scratch);
        round += 1;
    }
    // The terminal round has no post-round key.
    for x in state.iter_mut() {
        *x = s_box(aux, *x, None);
    }
    mix(constants, round, &mut state, &mut scratch);

    aux.push(state[1]);
    state[1]
}

/// filecoin-hashers' Poseidon circuits (`hash2_circuit`, `hash_leaf_circuit`,
/// `hash_multi_leaf_circuit::<Arity>`) and storage-proofs-porep's `hash_single_column`: the
/// hash of `preimage` under filecoin-hashers' constants for its length (`POSEIDON_CONSTANTS_n`).
///
/// # Panics
/// For a length filecoin-hashers has no constants for (2, 4, 8, 11, 16, 24 and 36 it has).
pub fn poseidon_merkle(aux: &mut impl AuxSink, preimage: &[Scalar]) -> Scalar {
    match preimage.len() {
        2 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_2),
        4 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_4),
        8 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_8),
        11 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_11),
        16 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_16),
        24 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_24),
        36 => poseidon_hash(aux, preimage, &*POSEIDON_CONSTANTS_36),
        n => panic!("filecoin-hashers has no Poseidon constants for arity {n}"),
    }
}

/// `x⁵`.
#[inline]
fn fifth_power(x: Scalar) -> Scalar {
    x.square().square() * x
}

/// neptune's `quintic_s_box` on an element that is a linear combination: allocates it, its
/// square, its fourth power and `x⁵ + key`.
#[inline]
fn s_box(aux: &mut impl AuxSink, x: Scalar, post_key: Option<Scalar>) -> Scalar {
    aux.push(x);
    let x2 = x.square();
    aux.push(x2);
    let x4 = x2.square();
    aux.push(x4);
    let mut x5 = x4 * x;
    if let Some(k) = post_key {
        x5 += k;
    }
    aux.push(x5);
    x5
}

/// neptune's `product_mds` for round `round`: the pre-sparse matrix at the last initial full
/// round, a sparse matrix in each partial round, the full MDS matrix elsewhere (row vector
/// times matrix).
fn mix<A: Arity<Scalar>>(
    constants: &PoseidonConstants<Scalar, A>,
    round: usize,
    state: &mut [Scalar],
    scratch: &mut [Scalar],
) {
    let half = constants.half_full_rounds;
    let sparse_offset = half - 1;
    if round == sparse_offset {
        dense(&constants.pre_sparse_matrix, state, scratch);
    } else if round > sparse_offset && round < half + constants.partial_rounds {
        let sparse = &constants.sparse_matrixes[round - sparse_offset - 1];
        let first = state[0];
        let mut acc = Scalar::ZERO;
        for (x, w) in state.iter().zip(&sparse.w_hat) {
            acc += *x * w;
        }
        for (x, v) in state[1..].iter_mut().zip(&sparse.v_rest) {
            *x += first * v;
        }
        state[0] = acc;
    } else {
        dense(&constants.mds_matrices.m, state, scratch);
    }
}

/// `state ← state · matrix` (element `j` is the scalar product of the state with column `j`).
fn dense(matrix: &[Vec<Scalar>], state: &mut [Scalar], scratch: &mut [Scalar]) {
    for (j, out) in scratch.iter_mut().enumerate() {
        let mut acc = Scalar::ZERO;
        for (x, row) in state.iter().zip(matrix) {
            acc += *x * row[j];
        }
        *out = acc;
    }
    state.copy_from_slice(scratch);
}
