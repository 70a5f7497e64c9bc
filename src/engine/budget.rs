//! The engine's one memory budget for host bytes: partitions (reserved before their synthesis
//! starts), the circuits' synthesis in flight, parameter sets, and the pool's idle buffers.
//!
//! ## One budget, every byte counted once
//! The failure this module exists against, a silent fallback seen in the field: the pool's
//! checkout charged a memory budget that had already reserved the partition's bytes, was
//! refused, and fell back to unpinned heap memory for every partition. Here:
//!
//! - A partition **reserves** its bytes in the budget before its synthesis starts; the
//!   reservation is its permission to check out pool buffers. The pool's checkouts never touch
//!   the budget.
//! - The engine's pool has `max_bytes` equal to the budget's limit, a bound on the bytes it
//!   really holds (in use **and** idle; at its cap it frees idle buffers largest first when a
//!   new allocation needs their room).
//! - A reservation is the **most** bytes the partition's checkouts can take from the pool
//!   ([`partition_bytes`]: each vector's request, page-rounded, or the largest idle buffer the
//!   pool's reuse factor lets it take, whichever is larger). So the bytes the pool has in use
//!   never exceed the bytes reserved, and a reserved partition's checkout always fits under
//!   the pool's cap: it is never refused, never waits and never falls back.
//! - Once synthesized, the reservation is trued up to the bytes the assignment really holds
//!   ([`assignment_bytes`]): the budget then counts exactly what is in use.
//! - It is released when the partition's proof is done, or it fails, or it is cancelled.
//! - The **pool's idle buffers** are memory too: a dispatch needs room for its reservation
//!   beside the bytes already reserved **and** the idle bytes that no reservation covers:
//!   idle buffers that it, a partition in synthesis (which may not have checked out yet) or
//!   one on a GPU (which gives a/b/c back once H is computed, before its reservation is
//!   released) would reuse are covered
//!   ([`PinnedPool::idle_reusable_bytes`](crate::PinnedPool::idle_reusable_bytes) of their
//!   sizes) and counted once, in those reservations. (A partition that holds its buffers
//!   still claims idle ones of its sizes, so the idle bytes counted may fall short by up to
//!   the pool bytes of the partitions in flight; the pool's cap still bounds what it holds.)
//! - **Parameters** ([`Parameters::host_bytes`]: G1 affine points 96 B, G2 192 B) are charged
//!   once per set while the engine holds it, from the submission of the first job that uses
//!   it (or [`Engine::add_parameters`](super::Engine::add_parameters)) until the set is
//!   evicted or removed, however many jobs and partitions use it. Those bytes exist already,
//!   so they are charged even past the limit; dispatches then wait or evict. A caller that
//!   keeps its own clone shares the same bytes (counted once); once the engine drops the set,
//!   the caller's clone is the caller's memory, outside the budget. Device copies are bounded
//!   by each backend's own memory limit (e.g. `CudaBackend::set_memory_limit`), not by this
//!   budget: the host budget is the one budget for host bytes, and the engine reports the
//!   device bytes of the sets it proved with.
//! - **Synthesis in flight**: the circuit's own memory while it synthesizes (gadgets, witness
//!   computation) is unknown to cuzk; [`synthesis_bytes`] charges
//!   `EngineConfig::synthesis_bytes_per_constraint` per constraint of the partition's hint,
//!   reserved with the partition at dispatch and released when its synthesis ends (true-up,
//!   failure or drop alike).
//!
//! - **The witness path** ([`EngineConfig::witness_path`](super::EngineConfig::witness_path)):
//!   a partition whose type and shape has a compiled circuit in memory reserves its compact
//!   witness — the pool checkouts of a witness synthesis sized by the last witness of its type
//!   and shape (two bitmaps, the values that are not 0/1, a dense copy when few are), its
//!   inputs and word index — instead of a/b/c/aux, and is trued up after synthesis to the
//!   witness's buffers at their capacity.
//! - **Evaluation slots**: the checkouts a witness proof makes
//!   ([`Backend::witness_pool_requests`](crate::prover::Backend::witness_pool_requests): a, b,
//!   c and the expanded aux when the backend evaluates them on the host, nothing when on the
//!   device) exist only while a GPU worker proves it, and a worker proves one partition at a
//!   time. So they are not charged per partition but to **slots**: one set of those checkouts
//!   (the backend that takes the most sizes it) per witness partition in flight, up to one per
//!   live GPU worker — never more than charging each partition would, and with one GPU at
//!   most one set however many partitions are in flight. A dispatch that needs another slot
//!   must fit it beside its own reservation; a true-up or a GPU start whose checkouts grew
//!   since (a circuit refused on a device after the dispatch) grows the slots by force. The
//!   slots only grow while the engine has jobs and are released with its last
//!   (`EngineStats::evaluation_reserved`); the idle buffers of a slot no GPU worker uses are
//!   covered by it. At 2^27 a set is ~14 GiB: charged per partition, the 16 partitions in
//!   flight of a 32 GiB-shape stream would have reserved ~230 GiB.
//! - A witness the compiled circuit refuses is synthesized in full past its reservation (a
//!   counted fallback, rare), and its true-up charges what it holds. Each **compiled circuit** the engine's prover holds is charged
//!   once ([`CompiledCircuit::byte_size`](crate::compiled::CompiledCircuit::byte_size), also
//!   when loaded from a file), when the synthesis that recorded or loaded it ends, for the life
//!   of the engine (`EngineStats::compiled_bytes`); the recorder's own memory while it records
//!   is not estimated before.
//!
//! ## Under pressure
//! When a dispatch does not fit, the engine frees, in this order, until it does: idle pool
//! buffers that no request of the pending partitions' sizes would reuse, largest first, as many
//! bytes as the dispatch lacks
//! ([`PinnedPool::shrink_unreusable_by`](crate::PinnedPool::shrink_unreusable_by)); other idle pool
//! buffers, largest first; idle parameter sets (no pending or in-flight partition uses them),
//! sets held by the engine alone first (dropping them frees their host copy), least recently
//! used first, each with its own device copies
//! ([`Backend::evict_params`](crate::prover::Backend::evict_params): other sets stay resident).
//! Nothing in use is evicted. When nothing can be freed the dispatch waits, up to
//! `EngineConfig::budget_timeout`.
//!
//! A circuit larger than its parameters (which fails its proof anyway) can grow its vectors
//! past its reservation while it synthesizes; its growth then waits for pool room like any
//! checkout, and its true-up charges the real bytes.

use crate::assignment::{CapacityHint, ProvingAssignment, DEFAULT_INITIAL_CONSTRAINTS};
use crate::params::Parameters;
use crate::pool::PAGE_SIZE;
use crate::prover::{Synthesis, WitnessEstimate};

/// Bytes of one scalar in a/b/c and the assignments.
const ELEM: usize = 32;

/// The hint a partition proved with `params` is sized by when its circuit type has none yet:
/// a/b/c of the full domain, exactly the parameters' aux and inputs. Every circuit that matches
/// the parameters fits in it without growing.
pub fn params_hint(params: &Parameters) -> CapacityHint {
    CapacityHint {
        constraints: params.domain_size(),
        inputs: params.num_inputs(),
        aux: params.num_aux(),
    }
}

fn page_round(bytes: usize) -> usize {
    bytes.div_ceil(PAGE_SIZE).saturating_mul(PAGE_SIZE)
}

/// The most pool bytes one checkout of `bytes` can take with reuse factor `reuse_factor`: a new
/// buffer (page-rounded) or a reused idle one of up to `reuse_factor` × the request.
fn checkout_bytes(bytes: usize, reuse_factor: f64) -> usize {
    let reused = (bytes as f64 * reuse_factor.max(1.0)) as usize;
    page_round(bytes).max(reused)
}

/// The bytes a partition whose synthesis is sized by `hint` reserves: a, b, c and the aux
/// assignment in pool buffers (each at least [`DEFAULT_INITIAL_CONSTRAINTS`] elements, as
/// [`ProvingAssignment::new_with_pinned`] sizes them, and as large as the pool's
/// `reuse_factor` lets a reused buffer be), plus the inputs and density bits on the heap.
pub fn partition_bytes(hint: CapacityHint, reuse_factor: f64) -> usize {
    let abc = hint.constraints.max(DEFAULT_INITIAL_CONSTRAINTS).saturating_mul(ELEM);
    let aux = hint.aux.max(DEFAULT_INITIAL_CONSTRAINTS).saturating_mul(ELEM);
    // Three density trackers: A and B over aux, B over inputs, a 64-bit word per 64 variables.
    let density_words = (hint.aux.div_ceil(64).saturating_mul(2)).saturating_add(hint.inputs.div_ceil(64).max(1));
    let heap = hint
        .inputs
        .saturating_mul(ELEM)
        .saturating_add(density_words.saturating_mul(8));
    checkout_bytes(abc, reuse_factor)
        .saturating_mul(3)
        .saturating_add(checkout_bytes(aux, reuse_factor))
        .saturating_add(heap)
}

/// The bytes reserved for the circuit's own memory while a partition sized by `hint`
/// synthesizes: `per_constraint` × its constraints (see the module docs).
pub fn synthesis_bytes(hint: CapacityHint, per_constraint: usize) -> usize {
    hint.constraints.saturating_mul(per_constraint)
}

/// The byte sizes of the pool checkouts a partition sized by `hint` makes: a, b, c, then aux
/// (what [`ProvingAssignment::new_with_pinned`] asks for).
pub(crate) fn pool_requests(hint: CapacityHint) -> [usize; 4] {
    let abc = hint.constraints.max(DEFAULT_INITIAL_CONSTRAINTS).saturating_mul(ELEM);
    let aux = hint.aux.max(DEFAULT_INITIAL_CONSTRAINTS).saturating_mul(ELEM);
    [abc, abc, abc, aux]
}

/// The bytes a synthesized assignment holds: its a/b/c and aux buffers at their capacity (what
/// the pool counts as in use), its inputs and density bits.
pub fn assignment_bytes(a: &ProvingAssignment) -> usize {
    let pooled = a.a.capacity() + a.b.capacity() + a.c.capacity() + a.aux_assignment.capacity();
    let density = a.a_aux_density.words().len() + a.b_aux_density.words().len() + a.b_input_density.words().len();
    pooled
        .saturating_mul(ELEM)
        .saturating_add(a.input_assignment.capacity().saturating_mul(ELEM))
        .saturating_add(density.saturating_mul(8))
}

/// The most pool bytes the checkouts `requests` (byte sizes; 0: none) can take together.
pub(crate) fn requests_bytes(requests: &[usize], reuse_factor: f64) -> usize {
    requests
        .iter()
        .fold(0usize, |sum, &r| sum.saturating_add(checkout_bytes(r, reuse_factor)))
}

/// The bytes a witness-path partition reserves before its synthesis: its witness's pool
/// checkouts (sized by the last witness of its type and shape) and heap bytes. (The checkouts
/// its proof makes when a backend evaluates a, b, c on the host are charged to the GPU
/// worker's evaluation slot, once per worker: see the module docs.)
pub(crate) fn witness_partition_bytes(estimate: &WitnessEstimate, reuse_factor: f64) -> usize {
    requests_bytes(&estimate.requests, reuse_factor).saturating_add(estimate.heap)
}

/// The bytes a synthesized partition holds until its proof is done: an assignment's
/// ([`assignment_bytes`]), or a witness's buffers at their capacity and its inputs.
pub(crate) fn synthesis_held_bytes(work: &Synthesis) -> usize {
    match work {
        Synthesis::Full(a) => assignment_bytes(a),
        Synthesis::Witness { witness, .. } => witness.held_bytes(),
    }
}

/// The budget's books: a limit, the bytes reserved, and the most ever reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Budget {
    limit: usize,
    reserved: usize,
    peak: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            reserved: 0,
            peak: 0,
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn reserved(&self) -> usize {
        self.reserved
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak
    }

    /// Reserves `bytes` if they fit under the limit.
    pub(crate) fn try_reserve(&mut self, bytes: usize) -> bool {
        match self.reserved.checked_add(bytes) {
            Some(total) if total <= self.limit => {
                self.reserved = total;
                self.peak = self.peak.max(total);
                true
            }
            _ => false,
        }
    }

    /// Reserves `bytes` if they fit under the limit beside `beside` bytes held outside the
    /// books (idle pool buffers the reservation will not reuse).
    pub(crate) fn try_reserve_beside(&mut self, bytes: usize, beside: usize) -> bool {
        self.fits_beside(bytes, beside) && self.try_reserve(bytes)
    }

    /// Whether `bytes` would fit under the limit beside what is reserved and `beside` bytes
    /// held outside the books.
    pub(crate) fn fits_beside(&self, bytes: usize, beside: usize) -> bool {
        self.reserved
            .checked_add(bytes)
            .and_then(|t| t.checked_add(beside))
            .is_some_and(|total| total <= self.limit)
    }

    /// Reserves `bytes` that exist already (a pre-synthesized assignment, a partition that
    /// grew past its reservation), even past the limit: they are counted, and new reservations
    /// wait until the total is back under the limit.
    pub(crate) fn force_reserve(&mut self, bytes: usize) {
        self.reserved = self.reserved.saturating_add(bytes);
        self.peak = self.peak.max(self.reserved);
    }

    /// Releases `bytes` reserved earlier.
    pub(crate) fn release(&mut self, bytes: usize) {
        debug_assert!(
            bytes <= self.reserved,
            "releasing {bytes} of {} reserved",
            self.reserved
        );
        self.reserved = self.reserved.saturating_sub(bytes);
    }

    /// Changes a reservation of `from` bytes into one of `to` bytes (the true-up after
    /// synthesis); returns `to`.
    pub(crate) fn adjust(&mut self, from: usize, to: usize) -> usize {
        if to >= from {
            self.force_reserve(to - from);
        } else {
            self.release(from - to);
        }
        to
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{PinnedPool, PoolConfig};

    #[test]
    fn reservations_respect_the_limit_and_come_back() {
        let mut b = Budget::new(100);
        assert!(b.try_reserve(60));
        assert!(!b.try_reserve(41));
        assert!(b.try_reserve(40));
        assert!(!b.try_reserve(1));
        b.release(60);
        assert_eq!(b.reserved(), 40);
        assert_eq!(b.adjust(40, 30), 30);
        assert_eq!(b.reserved(), 30);
        b.force_reserve(200);
        assert_eq!(b.reserved(), 230);
        assert!(!b.try_reserve(1));
        assert_eq!(b.peak(), 230);
        assert!(!b.try_reserve(usize::MAX));
        let mut b = Budget::new(100);
        assert!(!b.try_reserve_beside(60, 41));
        assert_eq!(b.reserved(), 0);
        assert!(b.try_reserve_beside(60, 40));
        assert!(!b.try_reserve_beside(1, usize::MAX));
        assert_eq!(b.reserved(), 60);
    }

    #[test]
    fn the_estimate_covers_what_a_synthesis_checks_out() {
        // Sized by a hint, a pinned assignment checks out what the estimate charges for
        // a/b/c/aux with reuse factor 1 (the estimate adds the heap's inputs and bits).
        let hint = CapacityHint {
            constraints: 10_000,
            inputs: 3,
            aux: 9_000,
        };
        let pool = PinnedPool::heap(PoolConfig::default());
        let a = ProvingAssignment::new_with_pinned(&pool, Some(hint)).unwrap();
        let in_use = pool.stats().bytes_in_use;
        let exact = partition_bytes(hint, 1.0);
        assert!(
            in_use <= exact && exact - in_use < 4096 + 1024,
            "{in_use} in use, {exact} estimated"
        );
        assert!(assignment_bytes(&a) <= exact);
        assert!(assignment_bytes(&a) >= in_use);
        // `pool_requests` are the checkouts it made: once back, all of them are reused.
        drop(a);
        assert_eq!(pool.idle_reusable_bytes(&pool_requests(hint)), in_use);
        assert_eq!(pool.shrink_unreusable(&pool_requests(hint)), 0);
        // With factor 2 a reused buffer may be up to twice each request.
        assert!(partition_bytes(hint, 2.0) >= 2 * (3 * 10_000 + 9_000) * ELEM);
        // A synthesized circuit holds no more than its reservation (sized from its
        // parameters' hint, as the engine sizes a first synthesis).
        let circuit = crate::testing::Synthetic::new(8);
        let params = crate::testing::random_parameters(circuit.clone(), 1).unwrap();
        let prover = crate::Prover::new().with_pool(pool.clone());
        let hint = params_hint(&params);
        prover
            .hints()
            .record(std::any::type_name::<crate::testing::Synthetic>(), hint);
        let a = prover.synthesize_for(circuit, &params).unwrap();
        assert!(assignment_bytes(&a) <= partition_bytes(hint, 1.0));
        assert!(
            assignment_bytes(&a) + 4096 > partition_bytes(hint, 1.0),
            "a tight estimate"
        );
        // A hint below the unhinted start is charged the start's size.
        let tiny = CapacityHint {
            constraints: 1,
            inputs: 1,
            aux: 1,
        };
        assert!(partition_bytes(tiny, 1.0) >= 4 * DEFAULT_INITIAL_CONSTRAINTS * ELEM);
    }
}
