//! The Poseidon, insertion and PoR twins of `cuzk::filecoin::native::gadgets`, each against the
//! gadget it mirrors on random operands: the gadget runs under the path recorder, the twin
//! writes into a `WitnessCs`, and the two witnesses (inputs and aux) must be equal value for
//! value (a failure names the first index that differs and its path). Every Poseidon arity
//! filecoin-hashers has constants for, and every Merkle tree shape filecoin-proofs' sectors
//! use (2 KiB to 64 GiB), with Poseidon and SHA-256 node hashes.

#![cfg(feature = "filecoin")]

use std::fmt::Debug;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use cuzk::filecoin::native::gadgets::{self as twin, CsSink, Level, NodeHash, Root};
use cuzk::filecoin::native::{assert_same_witness, PathCs};
use cuzk::{ConstraintSystem, Scalar, WitnessCs};
use ff::Field;
use filecoin_hashers::poseidon::{PoseidonFunction, PoseidonHasher};
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{HashFunction, Hasher, PoseidonArity};
use neptune::poseidon::{Arity, PoseidonConstants};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::gadgets::insertion;
use storage_proofs_core::gadgets::por::{por_no_challenge_input, AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::variables::Root as GadgetRoot;
use storage_proofs_core::merkle::{DiskTree, MerkleTreeTrait};
use typenum::{Unsigned, U0, U11, U16, U2, U24, U36, U4, U8};

type Sink<'a> = CsSink<'a, WitnessCs>;

/// Runs the gadget side under the recorder and the twin side into a `WitnessCs` (each after
/// the "one" input; the twin returns the public inputs it makes, allocated after its aux),
/// asserts the witnesses equal value for value, and returns the gadget's result.
fn check<R: PartialEq + Debug>(
    gadget: impl FnOnce(&mut PathCs) -> R,
    twin: impl FnOnce(&mut Sink) -> (R, Vec<Scalar>),
) -> R {
    let mut cs = PathCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let expected_out = gadget(&mut cs);
    let expected = cs.finish();

    let mut wcs = WitnessCs::new();
    wcs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let mut sink = CsSink::new(&mut wcs);
    let (got_out, inputs) = twin(&mut sink);
    sink.finish().unwrap();
    for v in inputs {
        wcs.alloc_input(|| "input", || Ok(v)).unwrap();
    }
    let got = wcs.finish("twin").unwrap();

    assert_same_witness(&expected, &got, Some(&expected));
    assert_eq!(expected_out, got_out, "results differ");
    expected_out
}

fn num<CS: ConstraintSystem<Scalar>>(cs: &mut CS, name: &str, v: Scalar) -> AllocatedNum<Scalar> {
    AllocatedNum::alloc(cs.namespace(|| name.to_string()), || Ok(v)).unwrap()
}

fn randoms(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// neptune's `circuit::poseidon_hash` against the twin for `constants`, on a few random
/// preimages (and one of zeros); the hash must also be neptune's native hash.
fn poseidon_case<A: Arity<Scalar>>(rng: &mut ChaCha8Rng, constants: &PoseidonConstants<Scalar, A>) {
    let arity = A::to_usize();
    let mut preimages = vec![vec![Scalar::ZERO; arity]];
    preimages.extend((0..3).map(|_| randoms(rng, arity)));
    for preimage in preimages {
        let hash = check(
            |cs| {
                let nums: Vec<_> = preimage
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| num(cs, &format!("x{i}"), v))
                    .collect();
                let h = neptune::circuit::poseidon_hash(cs.namespace(|| "poseidon"), nums, constants).unwrap();
                h.get_value().unwrap()
            },
            |aux| {
                for &v in &preimage {
                    twin::alloc_num(aux, v);
                }
                (twin::poseidon_hash(aux, &preimage, constants), vec![])
            },
        );
        let native = neptune::Poseidon::new_with_preimage(&preimage, constants).hash();
        assert_eq!(hash, native, "arity {arity}: the circuit's hash is Poseidon's");
    }
}

/// Every arity filecoin-hashers has constants for, and SnapDeals' custom-domain constants.
#[test]
fn poseidon_matches_neptunes_circuit() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_2);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_4);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_8);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_11);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_16);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_24);
    poseidon_case(&mut rng, &*filecoin_hashers::POSEIDON_CONSTANTS_36);
    poseidon_case(
        &mut rng,
        &*storage_proofs_update::constants::POSEIDON_CONSTANTS_GEN_RANDOMNESS,
    );
}

/// filecoin-hashers' entry points (`hash2_circuit`, `hash_leaf_circuit`,
/// `hash_multi_leaf_circuit::<A>`) against `poseidon_merkle`, with the expected sizes.
#[test]
fn poseidon_merkle_matches_filecoin_hashers() {
    /// `neptune_constraints`: the constraint count neptune's own test documents for the
    /// arity, which is also the number of values the circuit allocates.
    fn multi<A: 'static + PoseidonArity>(rng: &mut ChaCha8Rng, neptune_constraints: Option<usize>) {
        let leaves = randoms(rng, A::to_usize());
        check(
            |cs| {
                let nums: Vec<_> = leaves.iter().map(|&v| num(cs, "leaf", v)).collect();
                PoseidonFunction::hash_multi_leaf_circuit::<A, _>(cs.namespace(|| "hash"), &nums, 0)
                    .unwrap()
                    .get_value()
            },
            |aux| {
                leaves.iter().for_each(|&v| aux.push(v));
                let mut count = twin::CountSink::default();
                twin::poseidon_merkle(&mut count, &leaves);
                let (c, a) = (A::PARAMETERS(), A::to_usize());
                let formula = 3 * a + 4 * ((a + 1) * (c.full_rounds - 1) + c.partial_rounds) + 1;
                assert_eq!(count.values, formula, "arity {a}");
                if let Some(n) = neptune_constraints {
                    assert_eq!(count.values, n, "arity {a}");
                }
                (Some(twin::poseidon_merkle(aux, &leaves)), vec![])
            },
        );
    }
    use twin::AuxSink;
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    multi::<U2>(&mut rng, Some(311));
    multi::<U4>(&mut rng, Some(377));
    multi::<U8>(&mut rng, Some(505));
    multi::<U11>(&mut rng, None);
    multi::<U16>(&mut rng, Some(761));
    multi::<U24>(&mut rng, Some(1009));
    multi::<U36>(&mut rng, Some(1385));
    let (a, b) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    check(
        |cs| {
            let (x, y) = (num(cs, "a", a), num(cs, "b", b));
            let h2 = PoseidonFunction::hash2_circuit(cs.namespace(|| "hash2"), &x, &y).unwrap();
            let hl = PoseidonFunction::hash_leaf_circuit(cs.namespace(|| "leaf"), &x, &h2, 3).unwrap();
            hl.get_value()
        },
        |aux| {
            aux.push(a);
            aux.push(b);
            let h2 = twin::poseidon_merkle(aux, &[a, b]);
            (Some(twin::poseidon_merkle(aux, &[a, h2])), vec![])
        },
    );
}

fn bits_of(index: usize, n: usize) -> Vec<bool> {
    (0..n).map(|i| (index >> i) & 1 == 1).collect()
}

/// `insert` (2, 4, 8: the hand-made cases; 16: the general one) at every index, and `select`
/// over 2 to 16 elements.
#[test]
fn insertion_matches() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for log in 1..=4usize {
        let size = 1 << log;
        for index in 0..size {
            let elements = randoms(&mut rng, size - 1);
            let x = Scalar::random(&mut rng);
            let bits = bits_of(index, log);
            let inserted = check(
                |cs| {
                    let e: Vec<_> = elements.iter().map(|&v| num(cs, "element", v)).collect();
                    let xn = num(cs, "x", x);
                    let b: Vec<Boolean> = bits
                        .iter()
                        .map(|&v| Boolean::from(AllocatedBit::alloc(cs.namespace(|| "bit"), Some(v)).unwrap()))
                        .collect();
                    let out = insertion::insert(&mut cs.namespace(|| "insert"), &xn, &b, &e).unwrap();
                    let sel = insertion::select(cs.namespace(|| "select"), &out, &b)
                        .unwrap()
                        .get_value()
                        .unwrap();
                    (out.iter().map(|n| n.get_value().unwrap()).collect::<Vec<_>>(), sel)
                },
                |aux| {
                    use twin::AuxSink;
                    elements.iter().for_each(|&v| aux.push(v));
                    aux.push(x);
                    bits.iter().for_each(|&b| aux.push_bit(b));
                    let out = twin::insert(aux, x, &bits, &elements);
                    let sel = twin::select(aux, &out, &bits);
                    ((out, sel), vec![])
                },
            );
            assert_eq!(inserted.0[index], x, "inserted at {index} of {size}");
            assert_eq!(inserted.1, x, "selected back");
        }
    }
}

/// A random path of `Tree`'s shape with `base` base levels: (siblings, index) per level.
fn random_path<Tree: MerkleTreeTrait>(rng: &mut ChaCha8Rng, base: usize) -> Vec<Level> {
    let arities = std::iter::repeat(Tree::Arity::to_usize())
        .take(base)
        .chain([Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize()])
        .filter(|&a| a > 0);
    arities.map(|a| (randoms(rng, a - 1), rng.gen_range(0..a))).collect()
}

fn options(path: &[Level]) -> Vec<(Vec<Option<Scalar>>, Option<usize>)> {
    path.iter()
        .map(|(s, i)| (s.iter().copied().map(Some).collect(), Some(*i)))
        .collect()
}

/// `PoRCircuit::<Tree>::synthesize` in the three ways Filecoin's circuits call it: a private
/// proof to an allocated root from an allocated leaf (PoRep), a private one from a leaf value
/// (PoSt), and a public one from values (`PoRCompound`).
fn por_case<Tree: 'static + MerkleTreeTrait>(rng: &mut ChaCha8Rng, hash: NodeHash, base: usize) {
    for mode in 0..3 {
        let path = random_path::<Tree>(rng, base);
        let (leaf, root) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
        check(
            |cs| {
                let auth: AuthPath<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> =
                    options(&path).into();
                let (leaf, root, private) = match mode {
                    0 => (
                        GadgetRoot::Var(num(cs, "leaf", leaf)),
                        GadgetRoot::Var(num(cs, "root", root)),
                        true,
                    ),
                    1 => (
                        GadgetRoot::Val(Some(leaf)),
                        GadgetRoot::Var(num(cs, "root", root)),
                        true,
                    ),
                    _ => (GadgetRoot::Val(Some(leaf)), GadgetRoot::Val(Some(root)), false),
                };
                PoRCircuit::<Tree>::synthesize(cs.namespace(|| "por"), leaf, auth, root, private).unwrap();
            },
            |aux| {
                use twin::AuxSink;
                let (leaf, root, private) = match mode {
                    0 => {
                        aux.push(leaf);
                        aux.push(root);
                        (Root::Var(leaf), Root::Var(root), true)
                    }
                    1 => {
                        aux.push(root);
                        (Root::Val(leaf), Root::Var(root), true)
                    }
                    _ => (Root::Val(leaf), Root::Val(root), false),
                };
                let out = twin::por_circuit(aux, hash, leaf, &path, root, private);
                ((), out.inputs)
            },
        );
    }
}

/// `por_no_challenge_input::<Tree>` as SnapDeals calls it: challenge bits, leaf, siblings and
/// root allocated first.
fn por_no_challenge_case<Tree: 'static + MerkleTreeTrait>(rng: &mut ChaCha8Rng, hash: NodeHash, base: usize) {
    let path = random_path::<Tree>(rng, base);
    let mut challenge_bits = vec![];
    for (siblings, index) in &path {
        challenge_bits.extend(bits_of(*index, (siblings.len() + 1).trailing_zeros() as usize));
    }
    let (leaf, root) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    check(
        |cs| {
            let bits: Vec<AllocatedBit> = challenge_bits
                .iter()
                .map(|&b| AllocatedBit::alloc(cs.namespace(|| "c bit"), Some(b)).unwrap())
                .collect();
            let leaf = num(cs, "leaf", leaf);
            let siblings: Vec<Vec<AllocatedNum<Scalar>>> = path
                .iter()
                .map(|(s, _)| s.iter().map(|&v| num(cs, "sibling", v)).collect())
                .collect();
            let root = num(cs, "root", root);
            por_no_challenge_input::<Tree, _>(cs.namespace(|| "por"), bits, leaf, siblings, root).unwrap();
        },
        |aux| {
            use twin::AuxSink;
            challenge_bits.iter().for_each(|&b| aux.push_bit(b));
            aux.push(leaf);
            path.iter().flat_map(|(s, _)| s).for_each(|&v| aux.push(v));
            aux.push(root);
            let siblings: Vec<Vec<Scalar>> = path.iter().map(|(s, _)| s.clone()).collect();
            twin::por_no_challenge_input(aux, hash, &challenge_bits, leaf, &siblings);
            ((), vec![])
        },
    );
}

type Poseidon<U, V, W> = DiskTree<PoseidonHasher, U, V, W>;

/// TreeR/TreeC shapes: 2 KiB (8-0-0, 2 levels), 4 KiB (8-2-0), 16 KiB (8-8-0), 32 KiB
/// (8-8-2), 512 MiB (8-0-0, 9 levels), 32 GiB (8-8-0, 9 base levels), 64 GiB (8-8-2); a
/// 4-ary and a binary Poseidon tree.
#[test]
fn por_matches_on_poseidon_trees() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let h = NodeHash::Poseidon;
    por_case::<Poseidon<U8, U0, U0>>(&mut rng, h, 2);
    por_case::<Poseidon<U8, U2, U0>>(&mut rng, h, 2);
    por_case::<Poseidon<U8, U8, U0>>(&mut rng, h, 2);
    por_case::<Poseidon<U8, U8, U2>>(&mut rng, h, 2);
    por_case::<Poseidon<U8, U0, U0>>(&mut rng, h, 9);
    por_case::<Poseidon<U8, U8, U0>>(&mut rng, h, 9);
    por_case::<Poseidon<U8, U8, U2>>(&mut rng, h, 9);
    por_case::<Poseidon<U4, U0, U0>>(&mut rng, h, 3);
    por_case::<Poseidon<U2, U0, U0>>(&mut rng, h, 6);
    por_no_challenge_case::<Poseidon<U8, U0, U0>>(&mut rng, h, 2);
    por_no_challenge_case::<Poseidon<U8, U8, U0>>(&mut rng, h, 9);
    por_no_challenge_case::<Poseidon<U8, U8, U2>>(&mut rng, h, 9);
    por_no_challenge_case::<Poseidon<U2, U0, U0>>(&mut rng, h, 6);
}

/// TreeD: SHA-256 binary trees (2 KiB: 6 levels), PoRep's and SnapDeals' calls.
#[test]
fn por_matches_on_sha256_trees() {
    let mut rng = ChaCha8Rng::seed_from_u64(256);
    let h = NodeHash::Sha256;
    por_case::<DiskTree<Sha256Hasher, U2, U0, U0>>(&mut rng, h, 6);
    por_no_challenge_case::<DiskTree<Sha256Hasher, U2, U0, U0>>(&mut rng, h, 6);
    // The hasher's own two-input circuit is the same node hash.
    let (a, b) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    check(
        |cs| {
            let (x, y) = (num(cs, "a", a), num(cs, "b", b));
            <Sha256Hasher as Hasher>::Function::hash2_circuit(cs.namespace(|| "hash2"), &x, &y)
                .unwrap()
                .get_value()
        },
        |aux| {
            use twin::AuxSink;
            aux.push(a);
            aux.push(b);
            (Some(NodeHash::Sha256.hash(aux, &[a, b])), vec![])
        },
    );
}
