//! The differential tool: the first input and the first aux value where two witnesses of one
//! circuit differ, named by the path it was allocated under.
//!
//! A native generator is built against the gadgets it replaces: synthesize the circuit with
//! [`WitnessCs`](crate::WitnessCs) (the expected witness), run the generator (the witness
//! under test), and [`first_differences`] says where they part:
//!
//! ```text
//! aux 18342 differs: "challenge 3/labeling/block 0/compression round 1/deferred e computation/result bit 7/boolean": expected 1, got 0
//! ```
//!
//! The path comes from [`AllocationPaths`] (the same circuit run once more under a
//! [`PathCs`](super::paths::PathCs)); without it the index alone is reported.

use std::fmt;

use blstrs::Scalar;
use ff::Field;

use super::paths::AllocationPaths;
use crate::compiled::Witness;

/// Read access to a witness's values, whatever holds them.
pub trait WitnessValues {
    /// The public inputs, the one first.
    fn inputs(&self) -> &[Scalar];
    /// Number of aux values.
    fn num_aux(&self) -> usize;
    /// Aux value `j`, or `None` past the end.
    fn aux(&self, j: usize) -> Option<Scalar>;
}

impl WitnessValues for Witness {
    fn inputs(&self) -> &[Scalar] {
        Witness::inputs(self)
    }
    fn num_aux(&self) -> usize {
        Witness::num_aux(self)
    }
    fn aux(&self, j: usize) -> Option<Scalar> {
        self.aux_value(j)
    }
}

impl WitnessValues for AllocationPaths {
    fn inputs(&self) -> &[Scalar] {
        self.input_values()
    }
    fn num_aux(&self) -> usize {
        self.aux_values().len()
    }
    fn aux(&self, j: usize) -> Option<Scalar> {
        self.aux_values().get(j).copied()
    }
}

/// Plain vectors: (inputs, aux).
impl WitnessValues for (Vec<Scalar>, Vec<Scalar>) {
    fn inputs(&self) -> &[Scalar] {
        &self.0
    }
    fn num_aux(&self) -> usize {
        self.1.len()
    }
    fn aux(&self, j: usize) -> Option<Scalar> {
        self.1.get(j).copied()
    }
}

/// Which vector a difference is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The public inputs (index 0 is the one).
    Input,
    /// The aux values.
    Aux,
}

/// One value that differs (or is missing on one side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Inputs or aux.
    pub place: Place,
    /// Its index there.
    pub index: usize,
    /// The expected witness's value (`None`: it has no value there).
    pub expected: Option<Scalar>,
    /// The other witness's value (`None`: it has no value there).
    pub got: Option<Scalar>,
    /// The path it was allocated under, when known.
    pub path: Option<String>,
}

/// The first differing input and the first differing aux value, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Differences {
    /// The first input that differs.
    pub input: Option<Difference>,
    /// The first aux value that differs.
    pub aux: Option<Difference>,
}

impl Differences {
    /// Whether the two witnesses are equal value for value.
    pub fn is_empty(&self) -> bool {
        self.input.is_none() && self.aux.is_none()
    }

    /// The same differences with their allocation paths filled in from `paths`.
    pub fn named(mut self, paths: &AllocationPaths) -> Self {
        if let Some(d) = &mut self.input {
            d.path = paths.input_path(d.index);
        }
        if let Some(d) = &mut self.aux {
            d.path = paths.aux_path(d.index);
        }
        self
    }
}

/// Compares `got` with `expected`, value by value, and returns the first difference in the
/// inputs and the first in aux (a value past the end of one side is a difference).
pub fn first_differences(expected: &impl WitnessValues, got: &impl WitnessValues) -> Differences {
    let (ei, gi) = (expected.inputs(), got.inputs());
    let input = first_index(ei.len(), gi.len(), |i| ei[i] == gi[i]).map(|i| Difference {
        place: Place::Input,
        index: i,
        expected: ei.get(i).copied(),
        got: gi.get(i).copied(),
        path: None,
    });
    let aux = first_index(expected.num_aux(), got.num_aux(), |j| expected.aux(j) == got.aux(j)).map(|j| Difference {
        place: Place::Aux,
        index: j,
        expected: expected.aux(j),
        got: got.aux(j),
        path: None,
    });
    Differences { input, aux }
}

/// The first index below `max(a, b)` where `same` is false or one side has ended.
fn first_index(a: usize, b: usize, same: impl Fn(usize) -> bool) -> Option<usize> {
    let common = a.min(b);
    (0..common).find(|&i| !same(i)).or((a != b).then_some(common))
}

/// Panics, naming the first differences (with their paths when `paths` is given), unless
/// `got` equals `expected` value for value. For tests of native generators and twins.
#[track_caller]
pub fn assert_same_witness(expected: &impl WitnessValues, got: &impl WitnessValues, paths: Option<&AllocationPaths>) {
    let mut d = first_differences(expected, got);
    if let Some(p) = paths {
        d = d.named(p);
    }
    assert!(
        d.is_empty(),
        "witnesses differ ({} vs {} aux):\n{d}",
        expected.num_aux(),
        got.num_aux()
    );
}

/// A value as the report writes it: `0`, `1`, small numbers in decimal, others in hex;
/// `none` for a missing one.
struct Value(Option<Scalar>);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(v) = self.0 else {
            return f.write_str("none");
        };
        let bytes = v.to_bytes_le();
        if bytes[8..].iter().all(|&b| b == 0) {
            let small = u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default());
            return write!(f, "{small}");
        }
        if v == -Scalar::ONE {
            return f.write_str("-1");
        }
        f.write_str("0x")?;
        bytes.iter().rev().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match self.place {
            Place::Input => "input",
            Place::Aux => "aux",
        };
        write!(f, "{place} {} differs: ", self.index)?;
        if let Some(p) = &self.path {
            write!(f, "{p:?}: ")?;
        }
        write!(f, "expected {}, got {}", Value(self.expected), Value(self.got))
    }
}

impl fmt::Display for Differences {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no difference");
        }
        let lines: Vec<String> = [&self.input, &self.aux]
            .into_iter()
            .flatten()
            .map(|d| d.to_string())
            .collect();
        f.write_str(&lines.join("\n"))
    }
}
