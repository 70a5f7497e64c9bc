//! The gadget twins of `cuzk::filecoin::native::gadgets`, each against the bellperson gadget it
//! mirrors: the gadget runs under the path recorder, the twin writes into a `WitnessCs` (the
//! compact form the witness path proves from), and the two witnesses must be equal value for
//! value (a failure names the first index that differs and its path). Operands mix constants,
//! allocated bits and negated allocated bits, so that every constant folding is exercised, and
//! the results are compared kind for kind (constant, variable, negated variable) as well as by
//! value, since the kind decides what later gadgets allocate.

#![cfg(feature = "filecoin")]

use bellperson::gadgets::boolean::{self, AllocatedBit, Boolean};
use bellperson::gadgets::multieq::MultiEq;
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::sha256;
use bellperson::gadgets::uint32::UInt32;
use cuzk::filecoin::native::gadgets::{self as twin, AuxSink, Bit, CsSink, U32};
use cuzk::filecoin::native::{assert_same_witness, PathCs};
use cuzk::{ConstraintSystem, Scalar, WitnessCs};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Sink<'a> = CsSink<'a, WitnessCs>;

/// A bit's kind and value, comparable across the two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Constant,
    Is,
    Not,
}

fn of_boolean(b: &Boolean) -> (Kind, bool) {
    let kind = match b {
        Boolean::Constant(_) => Kind::Constant,
        Boolean::Is(_) => Kind::Is,
        Boolean::Not(_) => Kind::Not,
    };
    (kind, b.get_value().expect("a value"))
}

fn of_bit(b: Bit) -> (Kind, bool) {
    let kind = match b {
        Bit::Constant(_) => Kind::Constant,
        Bit::Is(_) => Kind::Is,
        Bit::Not(_) => Kind::Not,
    };
    (kind, b.value())
}

/// The same operand on both sides: a constant, or a fresh allocated bit (negated for `Not`).
fn gadget_bit<CS: ConstraintSystem<Scalar>>(cs: &mut CS, name: &str, kind: Kind, value: bool) -> Boolean {
    let alloc =
        |cs: &mut CS, v| Boolean::from(AllocatedBit::alloc(cs.namespace(|| name.to_string()), Some(v)).unwrap());
    match kind {
        Kind::Constant => Boolean::constant(value),
        Kind::Is => alloc(cs, value),
        Kind::Not => alloc(cs, !value).not(),
    }
}

fn twin_bit(aux: &mut impl AuxSink, kind: Kind, value: bool) -> Bit {
    match kind {
        Kind::Constant => Bit::Constant(value),
        Kind::Is => Bit::alloc(aux, value),
        Kind::Not => Bit::alloc(aux, !value).not(),
    }
}

/// Runs the gadget side under the recorder and the twin side into a `WitnessCs` (each after
/// the "one" input), asserts the witnesses equal value for value, and returns both results.
fn check<R: PartialEq + std::fmt::Debug>(
    gadget: impl FnOnce(&mut PathCs) -> R,
    twin: impl FnOnce(&mut Sink) -> R,
) -> R {
    let mut cs = PathCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let expected_out = gadget(&mut cs);
    let expected = cs.finish();

    let mut wcs = WitnessCs::new();
    wcs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let mut sink = CsSink::new(&mut wcs);
    let got_out = twin(&mut sink);
    sink.finish().unwrap();
    let got = wcs.finish("twin").unwrap();

    assert_same_witness(&expected, &got, Some(&expected));
    assert_eq!(expected_out, got_out, "results differ");
    expected_out
}

const KINDS: [Kind; 3] = [Kind::Constant, Kind::Is, Kind::Not];

fn operands(n: usize) -> Vec<Vec<(Kind, bool)>> {
    let one: Vec<(Kind, bool)> = KINDS.iter().flat_map(|&k| [(k, false), (k, true)]).collect();
    let mut all = vec![vec![]];
    for _ in 0..n {
        all = all
            .into_iter()
            .flat_map(|prefix: Vec<_>| {
                one.iter().map(move |&o| {
                    let mut v = prefix.clone();
                    v.push(o);
                    v
                })
            })
            .collect();
    }
    all
}

/// Every combination of constant/allocated/negated operands and values for xor, and, ch, maj.
#[test]
fn boolean_operations_fold_as_the_gadgets_fold() {
    let pairs = operands(2);
    let triples = operands(3);
    let outputs = check(
        |cs| {
            let mut out = vec![];
            for (i, ops) in pairs.iter().chain(&triples).enumerate() {
                let cs = &mut cs.namespace(|| format!("case {i}"));
                let b: Vec<Boolean> = ops
                    .iter()
                    .enumerate()
                    .map(|(k, &(kind, v))| gadget_bit(cs, &format!("op {k}"), kind, v))
                    .collect();
                if b.len() == 2 {
                    out.push(of_boolean(&Boolean::xor(cs.namespace(|| "xor"), &b[0], &b[1]).unwrap()));
                    out.push(of_boolean(&Boolean::and(cs.namespace(|| "and"), &b[0], &b[1]).unwrap()));
                } else {
                    out.push(of_boolean(
                        &Boolean::sha256_ch(cs.namespace(|| "ch"), &b[0], &b[1], &b[2]).unwrap(),
                    ));
                    out.push(of_boolean(
                        &Boolean::sha256_maj(cs.namespace(|| "maj"), &b[0], &b[1], &b[2]).unwrap(),
                    ));
                }
            }
            out
        },
        |aux| {
            let mut out = vec![];
            for ops in pairs.iter().chain(&triples) {
                let b: Vec<Bit> = ops.iter().map(|&(kind, v)| twin_bit(aux, kind, v)).collect();
                if b.len() == 2 {
                    out.push(of_bit(Bit::xor(aux, b[0], b[1])));
                    out.push(of_bit(Bit::and(aux, b[0], b[1])));
                } else {
                    out.push(of_bit(Bit::sha256_ch(aux, b[0], b[1], b[2])));
                    out.push(of_bit(Bit::sha256_maj(aux, b[0], b[1], b[2])));
                }
            }
            out
        },
    );
    assert_eq!(outputs.len(), 2 * (36 + 216));
}

/// A word's bits, least significant first.
type Word = Vec<(Kind, bool)>;

/// A word's bits: all constant, all allocated, or each of a random kind.
fn random_word(rng: &mut ChaCha8Rng) -> Vec<(Kind, bool)> {
    let mode = rng.gen_range(0..4);
    (0..32)
        .map(|_| {
            let kind = match mode {
                0 => Kind::Constant,
                1 => Kind::Is,
                _ => KINDS[rng.gen_range(0..3)],
            };
            (kind, rng.gen())
        })
        .collect()
}

fn gadget_word<CS: ConstraintSystem<Scalar>>(cs: &mut CS, name: &str, bits: &[(Kind, bool)]) -> UInt32 {
    let cs = &mut cs.namespace(|| name.to_string());
    let b: Vec<Boolean> = bits
        .iter()
        .enumerate()
        .map(|(i, &(k, v))| gadget_bit(cs, &format!("bit {i}"), k, v))
        .collect();
    UInt32::from_bits(&b)
}

fn twin_word(aux: &mut impl AuxSink, bits: &[(Kind, bool)]) -> U32 {
    let b: Vec<Bit> = bits.iter().map(|&(k, v)| twin_bit(aux, k, v)).collect();
    U32::from_bits(&b)
}

fn word_bits(w: UInt32) -> Vec<(Kind, bool)> {
    w.into_bits().iter().map(of_boolean).collect()
}

fn twin_bits(w: U32) -> Vec<(Kind, bool)> {
    w.into_bits().into_iter().map(of_bit).collect()
}

/// xor, rotr, shr, ch, maj and addmany (2 to 10 operands, some all-constant) of words with
/// mixed bits; every result is then xored with an allocated word, so that its kinds show in
/// the witness too.
#[test]
fn uint32_operations_match() {
    let mut rng = ChaCha8Rng::seed_from_u64(38);
    let cases: Vec<(Vec<Word>, usize, u32)> = (0..300)
        .map(|_| {
            let n = rng.gen_range(2..=10);
            (
                (0..n).map(|_| random_word(&mut rng)).collect(),
                rng.gen_range(0..40),
                rng.gen(),
            )
        })
        .collect();
    check(
        |cs| {
            let mut out = vec![];
            for (i, (words, by, mask)) in cases.iter().enumerate() {
                let cs = &mut cs.namespace(|| format!("case {i}"));
                let w: Vec<UInt32> = words
                    .iter()
                    .enumerate()
                    .map(|(k, b)| gadget_word(cs, &format!("word {k}"), b))
                    .collect();
                let mask = UInt32::alloc(cs.namespace(|| "mask"), Some(*mask)).unwrap();
                let mut results = vec![
                    w[0].xor(cs.namespace(|| "xor"), &w[1]).unwrap(),
                    w[0].rotr(*by),
                    w[1].shr(*by),
                ];
                if w.len() >= 3 {
                    results.push(UInt32::sha256_ch(cs.namespace(|| "ch"), &w[0], &w[1], &w[2]).unwrap());
                    results.push(UInt32::sha256_maj(cs.namespace(|| "maj"), &w[0], &w[1], &w[2]).unwrap());
                }
                {
                    let mut m = MultiEq::new(cs.namespace(|| "multieq"));
                    results.push(UInt32::addmany(m.namespace(|| "addmany"), &w).unwrap());
                }
                for (k, r) in results.into_iter().enumerate() {
                    out.push(word_bits(r.clone()));
                    out.push(word_bits(r.xor(cs.namespace(|| format!("masked {k}")), &mask).unwrap()));
                }
            }
            out
        },
        |aux| {
            let mut out = vec![];
            for (words, by, mask) in &cases {
                let w: Vec<U32> = words.iter().map(|b| twin_word(aux, b)).collect();
                let mask = U32::alloc(aux, *mask);
                let mut results = vec![w[0].xor(aux, w[1]), w[0].rotr(*by), w[1].shr(*by)];
                if w.len() >= 3 {
                    results.push(U32::sha256_ch(aux, w[0], w[1], w[2]));
                    results.push(U32::sha256_maj(aux, w[0], w[1], w[2]));
                }
                results.push(U32::addmany(aux, &w));
                for r in results {
                    out.push(twin_bits(r));
                    out.push(twin_bits(r.xor(aux, mask)));
                }
            }
            out
        },
    );
}

fn random_bits(rng: &mut ChaCha8Rng, n: usize, mixed: bool) -> Vec<(Kind, bool)> {
    (0..n)
        .map(|_| {
            let kind = if mixed { KINDS[rng.gen_range(0..3)] } else { Kind::Is };
            (kind, rng.gen())
        })
        .collect()
}

fn gadget_bits<CS: ConstraintSystem<Scalar>>(cs: &mut CS, bits: &[(Kind, bool)]) -> Vec<Boolean> {
    let cs = &mut cs.namespace(|| "input");
    bits.iter()
        .enumerate()
        .map(|(i, &(k, v))| gadget_bit(cs, &format!("bit {i}"), k, v))
        .collect()
}

fn twin_input(aux: &mut impl AuxSink, bits: &[(Kind, bool)]) -> Vec<Bit> {
    bits.iter().map(|&(k, v)| twin_bit(aux, k, v)).collect()
}

/// The compression function from the IV (constants: round 0 folds), from allocated words and
/// from mixed ones, on allocated and on mixed blocks.
#[test]
fn sha256_compression_matches() {
    let mut rng = ChaCha8Rng::seed_from_u64(256);
    for case in 0..6 {
        let block = random_bits(&mut rng, 512, case % 2 == 1);
        let state: Vec<Vec<(Kind, bool)>> = match case / 2 {
            0 => twin::IV
                .iter()
                .map(|&v| (0..32).map(|i| (Kind::Constant, (v >> i) & 1 == 1)).collect())
                .collect(),
            1 => (0..8).map(|_| random_bits(&mut rng, 32, false)).collect(),
            _ => (0..8).map(|_| random_word(&mut rng)).collect(),
        };
        check(
            |cs| {
                let b = gadget_bits(cs, &block);
                let s: Vec<UInt32> = state
                    .iter()
                    .enumerate()
                    .map(|(k, w)| gadget_word(cs, &format!("h{k}"), w))
                    .collect();
                let out = sha256::sha256_compression_function(cs.namespace(|| "compression"), &b, &s).unwrap();
                out.into_iter().flat_map(word_bits).collect::<Vec<_>>()
            },
            |aux| {
                let b = twin_input(aux, &block);
                let s: Vec<U32> = state.iter().map(|w| twin_word(aux, w)).collect();
                let out = twin::sha256_compression(aux, &b, &s.try_into().unwrap());
                out.into_iter().flat_map(twin_bits).collect::<Vec<_>>()
            },
        );
    }
}

/// The padded hash of 0 to 130 bytes (one to three blocks, the padding's edges), and one
/// block without padding; the digest is SHA-256's.
#[test]
fn sha256_with_padding_matches() {
    let mut rng = ChaCha8Rng::seed_from_u64(512);
    for (k, bytes) in [0usize, 1, 32, 55, 56, 64, 119, 130].into_iter().enumerate() {
        let input = random_bits(&mut rng, 8 * bytes, k % 3 == 2);
        let digest = check(
            |cs| {
                let b = gadget_bits(cs, &input);
                let out = sha256::sha256(cs.namespace(|| "sha256"), &b).unwrap();
                out.iter().map(of_boolean).collect::<Vec<_>>()
            },
            |aux| {
                let b = twin_input(aux, &input);
                twin::sha256(aux, &b).into_iter().map(of_bit).collect()
            },
        );
        assert_eq!(digest.len(), 256);
    }
    let block = random_bits(&mut rng, 512, false);
    check(
        |cs| {
            let b = gadget_bits(cs, &block);
            let out = sha256::sha256_block_no_padding(cs.namespace(|| "block"), &b).unwrap();
            out.iter().map(of_boolean).collect::<Vec<_>>()
        },
        |aux| {
            let b = twin_input(aux, &block);
            twin::sha256_block_no_padding(aux, &b).into_iter().map(of_bit).collect()
        },
    );
}

/// Numbers, their 255-bit decompositions, `u64` and byte decompositions, `pack_bits` over
/// mixed bits of several lengths, and the multipacked public inputs.
#[test]
fn decompositions_and_packing_match() {
    let mut rng = ChaCha8Rng::seed_from_u64(254);
    let scalars: Vec<Scalar> = (0..8)
        .map(|i| match i {
            0 => Scalar::ZERO,
            1 => -Scalar::ONE,
            _ => Scalar::random(&mut rng),
        })
        .collect();
    let words: Vec<u64> = (0..4).map(|_| rng.gen()).collect();
    let bytes: Vec<u8> = (0..40).map(|_| rng.gen()).collect();
    let packs: Vec<Vec<(Kind, bool)>> = [0, 1, 253, 254, 255, 300]
        .iter()
        .map(|&n| random_bits(&mut rng, n, true))
        .collect();
    check(
        |cs| {
            let mut out = vec![];
            for (i, &s) in scalars.iter().enumerate() {
                let cs = &mut cs.namespace(|| format!("scalar {i}"));
                let num = AllocatedNum::alloc(cs.namespace(|| "num"), || Ok(s)).unwrap();
                let bits = num.to_bits_le(cs.namespace(|| "bits")).unwrap();
                out.push(bits.iter().map(of_boolean).collect::<Vec<_>>());
            }
            for (i, &w) in words.iter().enumerate() {
                let bits = boolean::u64_into_boolean_vec_le(cs.namespace(|| format!("u64 {i}")), Some(w)).unwrap();
                out.push(bits.iter().map(of_boolean).collect());
            }
            let le =
                storage_proofs_core::util::bytes_into_boolean_vec(cs.namespace(|| "le"), Some(&bytes), 320).unwrap();
            let be =
                storage_proofs_core::util::bytes_into_boolean_vec_be(cs.namespace(|| "be"), Some(&bytes), 320).unwrap();
            out.push(le.iter().map(of_boolean).collect());
            out.push(be.iter().map(of_boolean).collect());
            for (i, p) in packs.iter().enumerate() {
                let cs = &mut cs.namespace(|| format!("pack {i}"));
                let b = gadget_bits(cs, p);
                let num = multipack::pack_bits(cs.namespace(|| "packed"), &b).unwrap();
                let bits = num.to_bits_le(cs.namespace(|| "bits")).unwrap();
                out.push(bits.iter().map(of_boolean).collect());
            }
            out
        },
        |aux| {
            let mut out = vec![];
            for &s in &scalars {
                let num = twin::alloc_num(aux, s);
                out.push(twin::to_bits_le(aux, num).into_iter().map(of_bit).collect::<Vec<_>>());
            }
            for &w in &words {
                out.push(twin::u64_into_bits_le(aux, w).into_iter().map(of_bit).collect());
            }
            out.push(twin::bytes_into_bits(aux, &bytes).into_iter().map(of_bit).collect());
            out.push(twin::bytes_into_bits_be(aux, &bytes).into_iter().map(of_bit).collect());
            for p in &packs {
                let b = twin_input(aux, p);
                let num = twin::pack_bits(aux, &b);
                out.push(twin::to_bits_le(aux, num).into_iter().map(of_bit).collect());
            }
            out
        },
    );

    // Public inputs: `pack_into_inputs` allocates what `multipack` computes.
    let bits = random_bits(&mut rng, 600, false);
    let mut cs = PathCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    let b = gadget_bits(&mut cs, &bits);
    multipack::pack_into_inputs(cs.namespace(|| "inputs"), &b).unwrap();
    let recorded = cs.finish();
    let packed = twin::multipack(&bits.iter().map(|&(_, v)| Bit::Is(v)).collect::<Vec<_>>());
    assert_eq!(packed.len(), 3);
    assert_eq!(&recorded.input_values()[1..], packed.as_slice());
}
