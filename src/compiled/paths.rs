//! [`PathCs`]: a development constraint system that records, for every input and aux value,
//! the namespace path and annotation it was allocated under, and its value.
//!
//! The production systems ([`WitnessCs`](crate::WitnessCs), the assignment) skip names: they
//! never call the annotation closures. When a native witness differs from the gadgets' one,
//! the index alone says little; this system runs the same circuit once more and turns an
//! index into `"challenge 3/labeling/block 0/compression round 5/deferred e computation/result bit 7/boolean"`.
//! It is not a witness generator (`is_witness_generator()` is false), as the production
//! witness path synthesizes, so gadgets that branch on it allocate in the same order.
//!
//! Paths are interned (a namespace tree, each name once), so a slot costs 8 bytes plus its
//! value (32): fine for 2 KiB sectors, heavy (~4 GiB) for a 32 GiB-shape partition.

use std::collections::HashMap;

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::error::Result;

/// Where one value was allocated: its namespace (a node of the tree) and its annotation.
#[derive(Clone, Copy, Debug)]
struct Slot {
    namespace: u32,
    name: u32,
}

/// A namespace tree with interned names (node 0 is the root).
#[derive(Debug, Default)]
struct Names {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Per node: (parent, name); node 0 (the root) is `(0, 0)` and unnamed.
    nodes: Vec<(u32, u32)>,
}

impl Names {
    fn new() -> Self {
        let mut this = Self::default();
        this.intern(String::new());
        this.nodes.push((0, 0));
        this
    }

    fn intern(&mut self, name: String) -> u32 {
        if let Some(&id) = self.ids.get(&name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.clone(), id);
        self.names.push(name);
        id
    }

    fn child(&mut self, parent: u32, name: String) -> u32 {
        let name = self.intern(name);
        self.nodes.push((parent, name));
        (self.nodes.len() - 1) as u32
    }

    fn path(&self, slot: Slot) -> String {
        let mut parts = vec![self.names[slot.name as usize].as_str()];
        let mut node = slot.namespace;
        while node != 0 {
            let (parent, name) = self.nodes[node as usize];
            parts.push(&self.names[name as usize]);
            node = parent;
        }
        parts.reverse();
        parts.join("/")
    }
}

/// The allocation paths and values of one synthesis (see the module docs).
#[derive(Debug)]
pub struct AllocationPaths {
    names: Names,
    inputs: Vec<Slot>,
    aux: Vec<Slot>,
    input_values: Vec<Scalar>,
    aux_values: Vec<Scalar>,
}

impl AllocationPaths {
    /// Synthesizes `circuit` under a [`PathCs`], the "one" input first (as the prover and
    /// [`WitnessCs::synthesize`](crate::WitnessCs::synthesize) do).
    ///
    /// # Errors
    /// The circuit's own synthesis error.
    pub fn record<C: bellpepper_core::Circuit<Scalar>>(circuit: C) -> Result<Self> {
        let mut cs = PathCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        Ok(cs.finish())
    }

    /// The path of input `i` (`"one"` for input 0), or `None` past the end.
    pub fn input_path(&self, i: usize) -> Option<String> {
        self.inputs.get(i).map(|&s| self.names.path(s))
    }

    /// The path of aux value `j`, or `None` past the end.
    pub fn aux_path(&self, j: usize) -> Option<String> {
        self.aux.get(j).map(|&s| self.names.path(s))
    }

    /// The input values, the one first.
    pub fn input_values(&self) -> &[Scalar] {
        &self.input_values
    }

    /// The aux values.
    pub fn aux_values(&self) -> &[Scalar] {
        &self.aux_values
    }
}

/// The recording constraint system (see the module docs). Most callers want
/// [`AllocationPaths::record`].
#[derive(Debug)]
pub struct PathCs {
    paths: AllocationPaths,
    /// The open namespaces, innermost last (empty: the root).
    stack: Vec<u32>,
}

impl Default for PathCs {
    fn default() -> Self {
        Self::new()
    }
}

impl PathCs {
    /// An empty system (no "one" input: allocate it first, as a prover would).
    pub fn new() -> Self {
        Self {
            paths: AllocationPaths {
                names: Names::new(),
                inputs: Vec::new(),
                aux: Vec::new(),
                input_values: Vec::new(),
                aux_values: Vec::new(),
            },
            stack: Vec::new(),
        }
    }

    /// What was recorded.
    pub fn finish(self) -> AllocationPaths {
        self.paths
    }

    /// Records one value and where it was allocated; returns its index among the inputs (when
    /// `input`) or the aux values.
    fn record(&mut self, input: bool, annotation: String, value: Scalar) -> usize {
        let slot = Slot {
            namespace: self.stack.last().copied().unwrap_or(0),
            name: self.paths.names.intern(annotation),
        };
        let p = &mut self.paths;
        let (slots, values) = if input {
            (&mut p.inputs, &mut p.input_values)
        } else {
            (&mut p.aux, &mut p.aux_values)
        };
        slots.push(slot);
        values.push(value);
        slots.len() - 1
    }
}

impl ConstraintSystem<Scalar> for PathCs {
    type Root = Self;

    fn new() -> Self {
        PathCs::new()
    }

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let j = self.record(false, annotation().into(), f()?);
        Ok(Variable::new_unchecked(Index::Aux(j)))
    }

    fn alloc_input<F: FnOnce() -> std::result::Result<Scalar, SynthesisError>, A: FnOnce() -> AR, AR: Into<String>>(
        &mut self,
        annotation: A,
        f: F,
    ) -> std::result::Result<Variable, SynthesisError> {
        let i = self.record(true, annotation().into(), f()?);
        Ok(Variable::new_unchecked(Index::Input(i)))
    }

    /// Counts the constraint nowhere: the paths are all this system keeps.
    fn enforce<A: FnOnce() -> AR, AR: Into<String>, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        let parent = self.stack.last().copied().unwrap_or(0);
        let node = self.paths.names.child(parent, name_fn().into());
        self.stack.push(node);
    }

    fn pop_namespace(&mut self) {
        self.stack.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`'s values (its first input, its own "one", excepted, as `WitnessCs`
    /// does), their namespaces re-rooted under the current one.
    fn extend(&mut self, other: &Self) {
        let here = self.stack.last().copied().unwrap_or(0);
        let theirs = &other.paths.names;
        let mut map = vec![here; theirs.nodes.len()];
        for (node, &(parent, name)) in theirs.nodes.iter().enumerate().skip(1) {
            let name = theirs.names[name as usize].clone();
            map[node] = self.paths.names.child(map[parent as usize], name);
        }
        let remap = |s: Slot, names: &mut Names| Slot {
            namespace: map[s.namespace as usize],
            name: names.intern(theirs.names[s.name as usize].clone()),
        };
        for &s in other.paths.inputs.iter().skip(1) {
            let s = remap(s, &mut self.paths.names);
            self.paths.inputs.push(s);
        }
        self.paths.input_values.extend(other.paths.input_values.iter().skip(1));
        for &s in &other.paths.aux {
            let s = remap(s, &mut self.paths.names);
            self.paths.aux.push(s);
        }
        self.paths.aux_values.extend(&other.paths.aux_values);
    }
}
