//! [`CapacityHints`]: the sizes of a circuit type's last synthesis (per evaluation domain), so
//! the next one's vectors are sized right from the first write.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// The sizes of one synthesis of a circuit, used to size the next one right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityHint {
    /// Constraints, including one per public input that the prover appends.
    pub constraints: usize,
    /// Public inputs, including the "one" input.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
}

/// A cache of [`CapacityHint`]s keyed by circuit type name and domain size, shared by clones.
///
/// One circuit type can come in several sizes (Filecoin's Winning and Window PoSt share one),
/// so a hint is recorded under the type *and* the domain size it was synthesized at; a
/// synthesis whose parameters (hence domain) are known uses the hint of its own size and
/// neither over-pins (a larger size's hint) nor grows again (a smaller one's). Under the
/// domain `None` sits the last size of the type, for callers that do not know the size.
///
/// A wrong hint costs only time (a growth) or idle bytes, never correctness.
#[derive(Debug, Clone, Default)]
pub struct CapacityHints {
    map: Arc<Mutex<HashMap<&'static str, HintsBySize>>>,
}

/// One circuit type's hints, by domain size (`None`: the last size recorded).
type HintsBySize = HashMap<Option<usize>, CapacityHint>;

impl CapacityHints {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The hint recorded for circuit type `circuit` (its `std::any::type_name`) at evaluation
    /// domain size `domain` (`None`: the last size recorded for the type).
    pub fn get(&self, circuit: &str, domain: Option<usize>) -> Option<CapacityHint> {
        self.map
            .lock()
            .get(circuit)
            .and_then(|sizes| sizes.get(&domain))
            .copied()
    }

    /// Records the sizes of a synthesis of `circuit`: under its domain size (the constraints
    /// rounded up to a power of two) and as the type's last size.
    pub fn record(&self, circuit: &'static str, hint: CapacityHint) {
        let domain = hint.constraints.checked_next_power_of_two();
        let mut map = self.map.lock();
        let sizes = map.entry(circuit).or_default();
        sizes.insert(None, hint);
        if domain.is_some() {
            sizes.insert(domain, hint);
        }
    }
}
