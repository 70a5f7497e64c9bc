//! The differential tool of `cuzk::filecoin::native`: a witness with a value planted wrong is
//! reported at that index, with the namespace path the value was allocated under.

#![cfg(feature = "filecoin")]

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::sha256::sha256_block_no_padding;
use cuzk::filecoin::native::{first_differences, AllocationPaths, Place};
use cuzk::{Circuit, ConstraintSystem, Scalar, SynthesisError, WitnessCs};
use ff::Field;

/// A number made public, 512 allocated bits and one SHA-256 block of them, under the kind of
/// namespaces a PoRep circuit has.
#[derive(Clone)]
struct Labeling {
    bits: Vec<bool>,
}

impl Circuit<Scalar> for Labeling {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut cs = cs.namespace(|| "challenge 3");
        let x = AllocatedNum::alloc(cs.namespace(|| "x"), || Ok(Scalar::from(5u64)))?;
        x.inputize(cs.namespace(|| "x input"))?;
        let bits = self
            .bits
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                Ok(Boolean::from(AllocatedBit::alloc(
                    cs.namespace(|| format!("bit {i}")),
                    Some(b),
                )?))
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let mut cs = cs.namespace(|| "labeling");
        sha256_block_no_padding(cs.namespace(|| "sha256"), &bits)?;
        Ok(())
    }
}

fn labeling() -> Labeling {
    Labeling {
        bits: (0..512).map(|i| (i * 7 + i / 5) % 3 == 0).collect(),
    }
}

fn expected() -> (cuzk::Witness, AllocationPaths) {
    let w = WitnessCs::new().without_generator().synthesize(labeling()).unwrap();
    let paths = AllocationPaths::record(labeling()).unwrap();
    (w, paths)
}

fn planted(w: &cuzk::Witness, aux_at: Option<usize>, input_at: Option<usize>) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut inputs = w.inputs().to_vec();
    let mut aux = w.expand_aux().unwrap();
    if let Some(j) = aux_at {
        aux[j] = if aux[j] == Scalar::ZERO {
            Scalar::ONE
        } else {
            Scalar::ZERO
        };
    }
    if let Some(i) = input_at {
        inputs[i] += Scalar::ONE;
    }
    (inputs, aux)
}

/// The recorder sees the values `WitnessCs` computes, in the same order.
#[test]
fn recorded_paths_hold_the_witness_values() {
    let (w, paths) = expected();
    assert!(w.num_aux() > 25_000, "{} aux", w.num_aux());
    assert!(first_differences(&w, &paths).is_empty());
    assert_eq!(paths.input_path(0).as_deref(), Some("one"));
    assert_eq!(paths.aux_path(w.num_aux()), None);
}

/// A flipped bit deep in the SHA-256 gadget (the first bit of the first `addmany` of the
/// message schedule: 1 number, 512 bits, then the schedule's xors — 32 + 29 + 32 + 22 values,
/// the shifted words' top bits being constants) is named by index and path.
#[test]
fn a_planted_difference_is_named_with_its_path() {
    let (w, paths) = expected();
    let j = 1 + 512 + 32 + 29 + 32 + 22;
    let got = planted(&w, Some(j), None);
    let d = first_differences(&w, &got).named(&paths);
    assert!(d.input.is_none());
    let aux = d.aux.clone().unwrap();
    assert_eq!((aux.place, aux.index), (Place::Aux, j));
    assert_eq!(
        d.to_string(),
        format!(
            "aux {j} differs: \"challenge 3/labeling/sha256/w extension 16/computation of w[i]/result bit 0/boolean\": \
             expected {e}, got {g}",
            e = u8::from(w.aux_value(j) == Some(Scalar::ONE)),
            g = u8::from(w.aux_value(j) != Some(Scalar::ONE)),
        )
    );

    // The earliest of several differences is the one named.
    let mut got = planted(&w, Some(j), None);
    got.1[8] = Scalar::from(9u64);
    let d = first_differences(&w, &got).named(&paths);
    assert_eq!(
        d.aux.unwrap().to_string(),
        format!(
            "aux 8 differs: \"challenge 3/bit 7/boolean\": expected {}, got 9",
            u8::from(labeling().bits[7])
        )
    );
    assert_eq!(paths.aux_path(0).as_deref(), Some("challenge 3/x/num"));
}

#[test]
fn inputs_and_lengths_are_compared_too() {
    let (w, paths) = expected();
    let got = planted(&w, None, Some(1));
    let d = first_differences(&w, &got).named(&paths);
    assert!(d.aux.is_none());
    assert_eq!(
        d.input.unwrap().to_string(),
        "input 1 differs: \"challenge 3/x input/input variable\": expected 5, got 6"
    );

    let (inputs, mut aux) = planted(&w, None, None);
    let last = aux.pop().unwrap();
    let d = first_differences(&w, &(inputs, aux));
    let aux = d.aux.unwrap();
    assert_eq!((aux.index, aux.expected, aux.got), (w.num_aux() - 1, Some(last), None));
    assert!(aux.to_string().ends_with("got none"), "{aux}");
}

/// A sub-system merged with `extend` (as the PoSt circuit does when the system allows it)
/// keeps its paths, re-rooted where it is merged, and its values line up with `WitnessCs`'s.
#[test]
fn merged_sub_systems_keep_their_paths() {
    #[derive(Clone)]
    struct Merged;
    impl Circuit<Scalar> for Merged {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            assert!(CS::is_extensible());
            cs.alloc(|| "before", || Ok(Scalar::from(3u64)))?;
            let mut sub = CS::new();
            sub.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
            {
                let mut sector = sub.namespace(|| "sector_0");
                sector.alloc(|| "leaf", || Ok(Scalar::from(4u64)))?;
                sector.alloc_input(|| "root", || Ok(Scalar::from(7u64)))?;
            }
            cs.get_root().push_namespace(|| "outer");
            cs.extend(&sub);
            cs.alloc(|| "after", || Ok(Scalar::ONE))?;
            cs.get_root().pop_namespace();
            Ok(())
        }
    }
    let w = WitnessCs::new().without_generator().synthesize(Merged).unwrap();
    let paths = AllocationPaths::record(Merged).unwrap();
    assert!(first_differences(&w, &paths).is_empty());
    let names: Vec<_> = (0..3).map(|j| paths.aux_path(j).unwrap()).collect();
    assert_eq!(names, ["before", "outer/sector_0/leaf", "outer/after"]);
    assert_eq!(paths.input_path(1).as_deref(), Some("outer/sector_0/root"));
    assert_eq!(paths.input_values().len(), 2);
}
