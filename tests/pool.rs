//! PinnedPool: accounting under concurrency, the cap, shrink order, fallback counting, the
//! reuse bound, and release of an assignment's buffers.

mod common;

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::testing::Synthetic;
use cuzk::{Error, HeapAllocator, HostAllocator, PinnedPool, PoolConfig, Prover, ProvingAssignment, WhenFull};
use rand::{Rng, SeedableRng};

const PAGE: usize = cuzk::pool::PAGE_SIZE;

/// Heap memory that claims to be pinned, and counts live blocks: stands in for the CUDA
/// backend, which needs a GPU.
#[derive(Default, Clone)]
struct FakePinned {
    live: Arc<AtomicUsize>,
}

// SAFETY: every block comes from HeapAllocator (which keeps the contract) and goes back to it
// unchanged. "Pinned" is a deliberate, constant false claim, harmless here: nothing in these
// tests DMAs, and the kernels accept pageable memory anyway (see the trait's contract).
unsafe impl HostAllocator for FakePinned {
    fn name(&self) -> &'static str {
        "fake-pinned"
    }
    fn is_pinned(&self) -> bool {
        true
    }
    fn allocate(&self, bytes: usize) -> cuzk::Result<NonNull<u8>> {
        let p = HeapAllocator.allocate(bytes)?;
        self.live.fetch_add(1, Ordering::SeqCst);
        Ok(p)
    }
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        // SAFETY: forwarded from our own caller, who guarantees (ptr, bytes) came from
        // `allocate`, which got it from HeapAllocator.
        unsafe { HeapAllocator.free(ptr, bytes) }
    }
}

/// A backend that always fails, like cudaHostAlloc without a driver.
struct Failing;

// SAFETY: `allocate` never returns a block, so there is nothing to keep valid or free.
unsafe impl HostAllocator for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn is_pinned(&self) -> bool {
        true
    }
    fn allocate(&self, bytes: usize) -> cuzk::Result<NonNull<u8>> {
        Err(Error::Allocation {
            bytes,
            backend: "failing",
            reason: "no driver".into(),
        })
    }
    unsafe fn free(&self, _: NonNull<u8>, _: usize) {
        unreachable!("nothing was allocated");
    }
}

fn cfg(max_bytes: usize, when_full: WhenFull) -> PoolConfig {
    PoolConfig {
        max_bytes,
        when_full,
        ..PoolConfig::default()
    }
}

#[test]
fn concurrent_checkouts_account_for_every_byte() {
    let backend = FakePinned::default();
    let live = backend.live.clone();
    let pool = PinnedPool::with_backend(
        Box::new(backend),
        cfg(64 << 20, WhenFull::Wait(Duration::from_secs(30))),
    );
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    std::thread::scope(|scope| {
        for t in 0..16u64 {
            let pool = pool.clone();
            scope.spawn(move || {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ t);
                let mut held = Vec::new();
                for i in 0..1000u32 {
                    let bytes = rng.gen_range(1..=(256 << 10));
                    let mut buf = pool.checkout(bytes).unwrap();
                    assert!(buf.capacity() >= bytes && buf.len() == bytes && buf.is_pinned());
                    assert_eq!(buf.as_ptr() as usize % PAGE, 0);
                    // Stamp the buffer; if two holders ever shared a buffer, a stamp breaks.
                    let stamp = (t as u8) ^ (i as u8);
                    for b in &mut buf.as_uninit_mut()[..bytes] {
                        b.write(stamp);
                    }
                    held.push((buf, stamp, bytes));
                    if held.len() > 3 || rng.gen_bool(0.5) {
                        let k = rng.gen_range(0..held.len());
                        let (mut buf, stamp, bytes) = held.swap_remove(k);
                        // SAFETY-free check: read back what this thread wrote.
                        let ok = buf.as_uninit_mut()[..bytes]
                            .iter()
                            // SAFETY: every byte up to `bytes` was written above.
                            .all(|b| unsafe { b.assume_init() } == stamp);
                        assert!(ok, "buffer contents changed while checked out");
                    }
                }
            });
        }
    });
    let s = pool.stats();
    assert_eq!(s.checkouts, 16_000);
    assert_eq!(s.allocations + s.reuses, s.checkouts, "{s:?}");
    assert_eq!(s.fallbacks, 0);
    assert_eq!(s.bytes_in_use, 0, "{s:?}");
    assert!(s.peak_bytes <= 64 << 20, "{s:?}");
    assert!(s.reuses > s.allocations, "the pool should mostly reuse: {s:?}");
    assert_eq!(live.load(Ordering::SeqCst) as u64, s.allocations - s.frees, "{s:?}");
    assert_eq!(live.load(Ordering::SeqCst), s.idle_buffers);
    drop(pool);
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "dropping the pool frees its idle buffers"
    );
}

#[test]
fn cap_fails_with_numbers_or_waits_for_a_return() {
    let pool = PinnedPool::heap(cfg(10 * PAGE, WhenFull::Fail));
    let a = pool.checkout(6 * PAGE).unwrap();
    let err = pool.checkout(6 * PAGE).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::PoolExhausted { requested, in_use, cap, .. }
        if requested == 6 * PAGE && in_use == 6 * PAGE && cap == 10 * PAGE),
        "{msg}"
    );
    assert!(
        msg.contains(&(6 * PAGE).to_string()) && msg.contains(&(10 * PAGE).to_string()),
        "{msg}"
    );
    assert_eq!(pool.stats().failures, 1);
    drop(a);

    // Waiting: a return lets the checkout through.
    let pool = PinnedPool::heap(cfg(10 * PAGE, WhenFull::Wait(Duration::from_secs(10))));
    let a = pool.checkout(8 * PAGE).unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(a);
        });
        let b = pool.checkout(7 * PAGE).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(90));
        assert_eq!(b.capacity(), 8 * PAGE, "the returned buffer is reused");
    });
    assert_eq!(pool.stats().waits, 1);

    // Waiting with nobody returning: an error after the timeout that says it waited.
    let pool = PinnedPool::heap(cfg(10 * PAGE, WhenFull::Wait(Duration::from_millis(150))));
    let _a = pool.checkout(8 * PAGE).unwrap();
    let start = Instant::now();
    let err = pool.checkout(3 * PAGE).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert!(matches!(err, Error::PoolExhausted { waited: true, .. }), "{err}");

    // A request above the cap fails at once even when configured to wait.
    let start = Instant::now();
    assert!(pool.checkout(11 * PAGE).is_err());
    assert!(start.elapsed() < Duration::from_millis(100));
}

#[test]
fn at_the_cap_idle_buffers_are_freed_largest_first() {
    let pool = PinnedPool::heap(cfg(100 * PAGE, WhenFull::Fail));
    let bufs: Vec<_> = [10, 20, 30].iter().map(|p| pool.checkout(p * PAGE).unwrap()).collect();
    drop(bufs);
    assert_eq!(pool.stats().bytes_idle, 60 * PAGE);
    // 50 pages fit no idle buffer (the largest, 30, is too small) and 50 + 60 > 100: the
    // 30-page buffer goes, which is enough.
    let big = pool.checkout(50 * PAGE).unwrap();
    let s = pool.stats();
    assert_eq!((s.frees, s.bytes_idle, s.idle_buffers), (1, 30 * PAGE, 2), "{s:?}");
    assert_eq!(s.bytes_in_use, 50 * PAGE);
    drop(big);
    // 10 and 20 pages are still there to be reused.
    let a = pool.checkout(10 * PAGE).unwrap();
    let b = pool.checkout(20 * PAGE).unwrap();
    assert_eq!((a.capacity(), b.capacity()), (10 * PAGE, 20 * PAGE));
    assert_eq!(pool.stats().reuses, 2);
}

#[test]
fn shrink_frees_largest_first() {
    let pool = PinnedPool::heap(PoolConfig::default());
    let bufs: Vec<_> = [10, 30, 20].iter().map(|p| pool.checkout(p * PAGE).unwrap()).collect();
    drop(bufs);
    let freed = pool.shrink(25 * PAGE);
    assert_eq!(freed, 50 * PAGE, "30 then 20 pages go; 10 stays");
    let s = pool.stats();
    assert_eq!((s.bytes_idle, s.idle_buffers, s.frees), (10 * PAGE, 1, 2));
    let again = pool.checkout(10 * PAGE).unwrap();
    assert_eq!(again.capacity(), 10 * PAGE);
    assert_eq!(pool.stats().reuses, 1);
    drop(again);
    assert_eq!(pool.shrink(0), 10 * PAGE);
    assert_eq!(pool.stats().bytes_idle, 0);
}

#[test]
fn fallback_only_when_allowed_and_always_counted() {
    // Cap reached, fallback allowed: unpinned, counted, outside the pool's bytes.
    let pool = PinnedPool::with_backend(
        Box::new(FakePinned::default()),
        PoolConfig {
            max_bytes: 4 * PAGE,
            when_full: WhenFull::Fail,
            allow_fallback: true,
            ..PoolConfig::default()
        },
    );
    let buf = pool.checkout(8 * PAGE).unwrap();
    assert!(!buf.is_pinned() && buf.is_fallback());
    let s = pool.stats();
    assert_eq!((s.fallbacks, s.checkouts, s.allocations), (1, 1, 0));
    assert_eq!((s.fallback_bytes_in_use, s.bytes_in_use), (8 * PAGE, 0));
    drop(buf);
    let s = pool.stats();
    assert_eq!(
        (s.fallback_bytes_in_use, s.frees, s.bytes_idle),
        (0, 1, 0),
        "fallback memory is freed, not pooled"
    );

    // Same without permission: an error, no fallback.
    let pool = PinnedPool::with_backend(Box::new(FakePinned::default()), cfg(4 * PAGE, WhenFull::Fail));
    assert!(pool.checkout(8 * PAGE).is_err());
    assert_eq!(pool.stats().fallbacks, 0);

    // A failing backend: with fallback, counted; without, the backend's error.
    let pool = PinnedPool::with_backend(
        Box::new(Failing),
        PoolConfig {
            allow_fallback: true,
            ..PoolConfig::default()
        },
    );
    let buf = pool.checkout(PAGE).unwrap();
    assert!(!buf.is_pinned());
    assert_eq!(pool.stats().fallbacks, 1);
    assert_eq!(
        pool.stats().bytes_in_use,
        0,
        "the failed allocation's reservation is undone"
    );
    let pool = PinnedPool::with_backend(Box::new(Failing), PoolConfig::default());
    let err = pool.checkout(PAGE).unwrap_err();
    assert!(err.to_string().contains("no driver"), "{err}");
    assert_eq!((pool.stats().fallbacks, pool.stats().bytes_in_use), (0, 0));
}

#[test]
fn reuse_is_bounded_by_the_factor() {
    let pool = PinnedPool::heap(PoolConfig::default());
    drop(pool.checkout(100 * PAGE).unwrap());
    // 100 > 2 × 40: not reused.
    let small = pool.checkout(40 * PAGE).unwrap();
    assert_eq!(small.capacity(), 40 * PAGE);
    assert_eq!((pool.stats().allocations, pool.stats().reuses), (2, 0));
    // 100 ≤ 2 × 60: reused.
    let mid = pool.checkout(60 * PAGE).unwrap();
    assert_eq!(mid.capacity(), 100 * PAGE);
    assert_eq!(pool.stats().reuses, 1);
    drop((small, mid));

    // Best fit: of 40 and 100 idle, a 35-page request takes 40.
    assert_eq!(pool.checkout(35 * PAGE).unwrap().capacity(), 40 * PAGE);

    // The factor is configurable.
    let pool = PinnedPool::heap(PoolConfig {
        max_reuse_factor: 3.0,
        ..PoolConfig::default()
    });
    drop(pool.checkout(100 * PAGE).unwrap());
    assert_eq!(pool.checkout(40 * PAGE).unwrap().capacity(), 100 * PAGE);

    // Zero-byte checkouts are refused.
    assert!(matches!(pool.checkout(0), Err(Error::InvalidArgument(_))));
}

#[test]
fn release_abc_returns_the_buffers_and_is_idempotent() {
    let pool = PinnedPool::with_backend(Box::new(FakePinned::default()), PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    let mut a = prover.synthesize(Synthetic::new(10)).unwrap();
    assert!(a.is_pinned());
    let s = pool.stats();
    assert!(s.bytes_in_use >= 3 * 1024 * 32, "{s:?}");
    let aux_bytes = a.aux_assignment().len() * 32;
    assert!(a.is_aux_pinned());
    a.release_abc();
    let s = pool.stats();
    // Only the aux assignment (read by the MSMs after H) is still out.
    let aux_cap_max = (cuzk::assignment::DEFAULT_INITIAL_CONSTRAINTS * 32).max(2 * aux_bytes);
    assert!(s.bytes_in_use >= aux_bytes && s.bytes_in_use <= aux_cap_max, "{s:?}");
    let (idle, in_use) = (s.bytes_idle, s.bytes_in_use);
    assert!(idle >= 3 * 1024 * 32);
    a.release_abc();
    assert_eq!((pool.stats().bytes_idle, pool.stats().bytes_in_use), (idle, in_use));
    assert!(a.a().is_empty() && !a.is_pinned());
    drop(a);
    assert_eq!(pool.stats().bytes_in_use, 0);

    // Drop releases too.
    let b = prover.synthesize(Synthetic::new(10)).unwrap();
    assert!(pool.stats().bytes_in_use > 0);
    drop(b);
    assert_eq!(pool.stats().bytes_in_use, 0);
}

#[test]
fn first_synthesis_is_pinned_and_the_hint_sizes_the_next_one() {
    // 2^14 constraints: more than an unhinted assignment starts with, so it grows.
    let circuit = Synthetic::new(14);
    let pool = PinnedPool::with_backend(Box::new(FakePinned::default()), PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    let first = prover.synthesize(circuit.clone()).unwrap();
    assert!(first.is_pinned(), "the first proof of a circuit is pinned");
    let reference = Prover::new().synthesize(circuit.clone()).unwrap();
    assert!(!reference.is_pinned());
    assert!(first.a() == reference.a() && first.b() == reference.b() && first.c() == reference.c());
    assert_eq!(first.aux_assignment(), reference.aux_assignment());
    assert_eq!(first.input_assignment(), reference.input_assignment());
    assert_eq!(first.a_aux_density(), reference.a_aux_density());
    assert_eq!(first.b_input_density(), reference.b_input_density());
    assert_eq!(first.b_aux_density(), reference.b_aux_density());
    let grown = pool.stats().checkouts;
    assert!(grown > 4, "growth took more buffers: {grown}");
    drop(first);

    let hint = prover.hints().get(std::any::type_name::<Synthetic>(), None).unwrap();
    assert_eq!(hint.constraints, 1 << 14);
    let page_round = |b: usize| b.div_ceil(PAGE) * PAGE;
    let expected_bytes = 3 * ((1 << 14) * 32) + page_round(hint.aux * 32);
    let before = pool.stats();
    let second = prover.synthesize(circuit.clone()).unwrap();
    let after = pool.stats();
    assert_eq!(
        after.checkouts - before.checkouts,
        4,
        "hinted: exactly one buffer each for a, b, c, aux"
    );
    assert_eq!(
        after.reuses - before.reuses,
        4,
        "the grown buffers fit the hint and are reused"
    );
    assert!(
        after.bytes_in_use >= expected_bytes && after.bytes_in_use <= 2 * expected_bytes,
        "{after:?}"
    );
    assert!(second.is_pinned() && second.is_aux_pinned());
    drop(second);

    // From an empty pool, the hinted synthesis allocates once per vector, at the right size.
    pool.shrink(0);
    let before = pool.stats();
    let third = prover.synthesize(circuit).unwrap();
    let after = pool.stats();
    assert_eq!(after.allocations - before.allocations, 4);
    assert_eq!(
        after.bytes_in_use, expected_bytes,
        "allocated at exactly the hinted sizes"
    );
    assert!(third.is_pinned());
}

#[test]
fn heap_and_pinned_assignments_agree() {
    let mut rng = common::rng("heap_vs_pinned");
    let pool = PinnedPool::heap(PoolConfig::default());
    let c = Synthetic::new(12).with_seed(rng.gen());
    let hinted = ProvingAssignment::new_with_pinned(&pool, None).unwrap();
    assert!(!hinted.is_pinned(), "the heap backend is not pinned");
    drop(hinted);
    let p = Prover::new().with_pool(pool.clone()).synthesize(c.clone()).unwrap();
    let h = Prover::new().synthesize(c).unwrap();
    assert_eq!(p.a(), h.a());
    assert_eq!(p.num_constraints(), 1 << 12);
}

#[test]
fn absurd_checkouts_fail_at_once_without_overflow() {
    // Something in use and something idle, so that sums with the request would overflow.
    let pool = PinnedPool::heap(PoolConfig::default()); // waits up to 60 s when full
    let _held = pool.checkout(PAGE).unwrap();
    drop(pool.checkout(4 * PAGE).unwrap());
    let start = Instant::now();
    for bytes in [usize::MAX, usize::MAX - 3 * PAGE, isize::MAX as usize + 1] {
        let err = pool.checkout(bytes).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bytes}: {err}");
    }
    // Addressable but far beyond any machine: the backend refuses, at once.
    let err = pool.checkout(isize::MAX as usize - 2 * PAGE).unwrap_err();
    assert!(matches!(err, Error::Allocation { .. }), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "no waiting for the impossible"
    );
    let s = pool.stats();
    assert_eq!((s.bytes_in_use, s.bytes_idle), (PAGE, 4 * PAGE), "{s:?}");
}

/// One circuit type at two sizes (as Filecoin's Winning and Window PoSt share one): each size
/// is synthesized with its own hint, so the small one is not pinned at the large size and the
/// large one does not grow again after the small one.
#[test]
fn hints_are_kept_per_circuit_type_and_size() {
    let small = Synthetic::new(10);
    let large = Synthetic::new(14);
    let small_params = cuzk::testing::random_parameters(small.clone(), 1).unwrap();
    let large_params = cuzk::testing::random_parameters(large.clone(), 2).unwrap();
    let pool = PinnedPool::with_backend(Box::new(FakePinned::default()), PoolConfig::default());
    let prover = Prover::new().with_pool(pool.clone());
    // First of each size: unhinted for that size (may grow).
    drop(prover.synthesize_for(large.clone(), &large_params).unwrap());
    drop(prover.synthesize_for(small.clone(), &small_params).unwrap());
    let hints = prover.hints();
    let key = std::any::type_name::<Synthetic>();
    assert_eq!(hints.get(key, Some(1 << 10)).unwrap().constraints, 1 << 10);
    assert_eq!(hints.get(key, Some(1 << 14)).unwrap().constraints, 1 << 14);
    assert_eq!(hints.get(key, None).unwrap().constraints, 1 << 10, "the last size");
    for round in 0..3 {
        for (circuit, params, log) in [(&large, &large_params, 14), (&small, &small_params, 10)] {
            let before = pool.stats();
            let cs = prover.synthesize_for(circuit.clone(), params).unwrap();
            let after = pool.stats();
            assert_eq!(
                after.checkouts - before.checkouts,
                4,
                "round {round}, 2^{log}: one buffer each for a, b, c, aux (no growth)"
            );
            // The large one within 2× of its a/b/c/aux; the small one well below the large
            // one's a/b/c (it never gets below the unhinted start of 4096 constraints).
            let bound = if log == 14 {
                2 * 4 * (1usize << 14) * 32 + 4 * PAGE
            } else {
                3 * (1usize << 14) * 32 / 2
            };
            assert!(
                after.bytes_in_use <= bound,
                "round {round}, 2^{log}: {} bytes pinned for a 2^{log} circuit (bound {bound})",
                after.bytes_in_use
            );
            drop(cs);
        }
    }
}
