//! Growth of pinned vectors and assignments obeys the pool: without fallback a growth the pool
//! cannot serve is an error at the end of synthesis (nothing aborts, nothing panics, every
//! buffer goes back); with fallback it is a counted fallback. Host out-of-memory is an error.

use std::time::Duration;

use blstrs::Scalar;
use cuzk::assignment::DEFAULT_INITIAL_CONSTRAINTS;
use cuzk::testing::Synthetic;
use cuzk::{
    CapacityHint, ConstraintSystem, DensityTracker, Error, PinnedPool, PinnedVec, PoolConfig, Prover,
    ProvingAssignment, WhenFull,
};
use ff::Field;

const PAGE: usize = cuzk::pool::PAGE_SIZE;
/// Bytes of one unhinted a/b/c/aux buffer.
const START_BYTES: usize = DEFAULT_INITIAL_CONSTRAINTS * 32;

/// Room for the four starting buffers of an unhinted assignment and a little more, not for a
/// doubled a/b/c.
fn tight(allow_fallback: bool, when_full: WhenFull) -> PinnedPool {
    PinnedPool::heap(PoolConfig {
        max_bytes: 4 * START_BYTES + 4 * PAGE,
        when_full,
        allow_fallback,
        ..PoolConfig::default()
    })
}

/// Scalars in more memory than any address space has (2^63 bytes, just under `isize::MAX`):
/// every allocator refuses them at once, without touching memory (even with overcommit).
const HUGE: usize = isize::MAX as usize / 32;
/// The same for pool buffers, whose page rounding must stay within `isize::MAX` (2^62 bytes).
const HUGE_POOLED: usize = HUGE / 2;

#[test]
fn growth_without_fallback_is_an_error_at_the_end_of_synthesis() {
    for when_full in [WhenFull::Fail, WhenFull::Wait(Duration::from_millis(50))] {
        let pool = tight(false, when_full);
        let prover = Prover::new().with_pool(pool.clone());
        // 2^14 constraints: a/b/c must double twice past the unhinted start.
        let err = prover.synthesize(Synthetic::new(14)).unwrap_err();
        assert!(matches!(err, Error::PoolExhausted { .. }), "{err}");
        let s = pool.stats();
        assert_eq!(s.fallbacks, 0, "no fallback when it is not allowed: {s:?}");
        assert_eq!((s.bytes_in_use, s.fallback_bytes_in_use), (0, 0), "{s:?}");
        assert!(s.failures >= 1, "{s:?}");
        // The pool is still usable: a circuit that fits synthesizes.
        let ok = prover.synthesize(Synthetic::new(11)).unwrap();
        assert!(pool.stats().bytes_in_use >= 4 * START_BYTES);
        drop(ok);
        assert_eq!(pool.stats().bytes_in_use, 0);
    }
}

#[test]
fn a_failed_growth_returns_every_buffer_at_once_and_later_calls_are_ignored() {
    let pool = tight(false, WhenFull::Fail);
    let mut cs = ProvingAssignment::new_with_pinned(&pool, None).unwrap();
    assert_eq!(pool.stats().bytes_in_use, 4 * START_BYTES);
    let x = cs.alloc(|| "x", || Ok(Scalar::ONE)).unwrap();
    // Enough constraints to need a bigger a/b/c than the cap allows.
    for _ in 0..=DEFAULT_INITIAL_CONSTRAINTS {
        cs.enforce(|| "x*x=x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
    }
    // Synthesis is not over, but the assignment already gave everything back.
    let s = pool.stats();
    assert_eq!((s.bytes_in_use, s.fallbacks), (0, 0), "{s:?}");
    assert!(cs.a().is_empty() && cs.aux_assignment().is_empty());
    // Later calls do nothing (and do not fail or allocate).
    let y = cs.alloc(|| "y", || Ok(Scalar::ONE)).unwrap();
    cs.enforce(|| "y", |lc| lc + y, |lc| lc + y, |lc| lc + y);
    assert!(cs.a().is_empty());
    assert_eq!(pool.stats().bytes_in_use, 0);
}

#[test]
fn growth_with_fallback_is_counted_and_keeps_the_data() {
    let pool = tight(true, WhenFull::Fail);
    let prover = Prover::new().with_pool(pool.clone());
    let circuit = Synthetic::new(14);
    let grown = prover.synthesize(circuit.clone()).unwrap();
    let s = pool.stats();
    assert!(s.fallbacks >= 1, "{s:?}");
    assert_eq!(s.allocations + s.reuses + s.fallbacks, s.checkouts, "{s:?}");
    // Only one of a/b/c (2^14 scalars each) fits under the cap: the others fell back.
    assert!(s.fallback_bytes_in_use >= 2 * (1 << 14) * 32, "{s:?}");
    assert!(!grown.is_pinned(), "a/b/c live (partly) in fallback memory");
    let reference = Prover::new().synthesize(circuit).unwrap();
    assert!(grown.a() == reference.a() && grown.b() == reference.b() && grown.c() == reference.c());
    assert_eq!(grown.aux_assignment(), reference.aux_assignment());
    drop(grown);
    let s = pool.stats();
    assert_eq!((s.bytes_in_use, s.fallback_bytes_in_use), (0, 0), "{s:?}");
}

#[test]
fn pinned_vec_try_methods_leave_the_vector_and_push_fails_it() {
    let pool = PinnedPool::heap(PoolConfig {
        max_bytes: 2 * PAGE,
        when_full: WhenFull::Fail,
        ..PoolConfig::default()
    });
    let per_page = PAGE / 8;
    let mut v: PinnedVec<u64> = PinnedVec::with_capacity_in(&pool, per_page).unwrap();
    v.extend_from_slice(&vec![7; per_page]);
    assert_eq!(v.capacity(), per_page);
    // Doubling to 2 pages would fit the cap only with the old page returned first: it fails.
    let err = v.try_push(8).unwrap_err();
    assert!(matches!(err, Error::PoolExhausted { .. }), "{err}");
    assert_eq!(v.len(), per_page, "unchanged after a failed try_push");
    assert!(!v.is_failed() && v.error().is_none());
    let err = v.try_extend_from_slice(&[1, 2, 3]).unwrap_err();
    assert!(matches!(err, Error::PoolExhausted { .. }), "{err}");
    assert_eq!(v.as_slice(), vec![7; per_page].as_slice());

    // push cannot return the error: the vector fails, its buffer goes back, pushes are ignored.
    v.push(8);
    assert!(v.is_failed() && v.is_empty() && v.buffer().is_none());
    assert!(matches!(v.error(), Some(Error::PoolExhausted { .. })));
    assert_eq!(pool.stats().bytes_in_use, 0);
    v.push(9);
    v.extend_from_slice(&[1, 2]);
    assert!(v.is_empty());
    assert!(v.try_push(1).is_err(), "a failed vector refuses try_push too");
    assert!(matches!(v.take_error(), Some(Error::PoolExhausted { .. })));
    assert!(v.is_failed(), "taking the error does not revive the vector");
    v.release();
    assert!(!v.is_failed());
    v.push(1);
    assert_eq!(v.as_slice(), &[1]);
}

#[test]
fn growth_stays_under_the_cap_when_doubling_would_not() {
    let pool = PinnedPool::heap(PoolConfig {
        max_bytes: 8 * PAGE,
        when_full: WhenFull::Fail,
        ..PoolConfig::default()
    });
    let per_page = PAGE / 8;
    let mut v: PinnedVec<u64> = PinnedVec::with_capacity_in(&pool, per_page).unwrap();
    v.extend_from_slice(&vec![1; 3 * per_page]);
    assert_eq!(v.capacity(), 3 * per_page);
    assert!(v.try_reserve(10 * per_page).is_err(), "13 pages never fit under 8");
    // Doubling 3 pages would need 3 + 6 pages during the copy, over the cap of 8; growing
    // to the 5 pages the cap leaves fits.
    v.try_push(2).unwrap();
    assert_eq!(v.capacity(), 5 * per_page);
    assert_eq!(v.len(), 3 * per_page + 1);
    assert!(v.as_slice()[..3 * per_page].iter().all(|&x| x == 1));
    let s = pool.stats();
    assert_eq!((s.fallbacks, s.bytes_in_use), (0, 5 * PAGE), "{s:?}");
}

#[test]
fn host_out_of_memory_is_an_error_not_an_abort() {
    // A heap vector.
    let err = PinnedVec::<Scalar>::with_heap_capacity(HUGE).unwrap_err();
    assert!(matches!(err, Error::Allocation { .. }), "{err}");
    let mut v = PinnedVec::<Scalar>::new();
    v.push(Scalar::ONE);
    let err = v.try_reserve(HUGE).unwrap_err();
    assert!(matches!(err, Error::Allocation { .. }), "{err}");
    assert_eq!(v.as_slice(), &[Scalar::ONE]);
    // A pooled vector: the backend (mmap) refuses, with and without fallback.
    for allow_fallback in [false, true] {
        let pool = PinnedPool::heap(PoolConfig {
            allow_fallback,
            ..PoolConfig::default()
        });
        let err = PinnedVec::<Scalar>::with_capacity_in(&pool, HUGE_POOLED).unwrap_err();
        assert!(matches!(err, Error::Allocation { .. }), "{err}");
        let mut v = PinnedVec::<Scalar>::with_capacity_in(&pool, 1).unwrap();
        let err = v.try_reserve(HUGE_POOLED).unwrap_err();
        assert!(matches!(err, Error::Allocation { .. }), "{err}");
        // Past what any buffer can be: refused before the backend is asked.
        let err = v.try_reserve(HUGE).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        drop(v);
        let s = pool.stats();
        assert_eq!((s.bytes_in_use, s.fallback_bytes_in_use), (0, 0), "{s:?}");
    }
    // Sizes that overflow are errors too.
    let mut v = PinnedVec::<Scalar>::new();
    v.push(Scalar::ONE);
    assert!(matches!(
        v.try_reserve(usize::MAX),
        Err(Error::InvalidArgument(_) | Error::Allocation { .. })
    ));

    // An assignment sized by an absurd hint: an error (the input reservation used to abort).
    let pool = PinnedPool::heap(PoolConfig::default());
    for hint in [
        CapacityHint {
            constraints: HUGE_POOLED,
            inputs: 1,
            aux: 1,
        },
        CapacityHint {
            constraints: 1,
            inputs: 1,
            aux: HUGE_POOLED,
        },
        CapacityHint {
            constraints: 1,
            inputs: HUGE,
            aux: 1,
        },
    ] {
        let err = ProvingAssignment::new_with_pinned(&pool, Some(hint)).unwrap_err();
        assert!(matches!(err, Error::Allocation { .. }), "{hint:?}: {err}");
        assert_eq!(pool.stats().bytes_in_use, 0, "{hint:?}");
    }
    // A density tracker asked for absurd room starts without it.
    let mut d = DensityTracker::with_capacity(usize::MAX);
    d.try_add_element().unwrap();
    assert_eq!(d.len(), 1);
}
