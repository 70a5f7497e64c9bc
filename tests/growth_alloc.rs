//! Growing a pinned vector past its capacity keeps the data and never hands pool memory to the
//! global allocator. A recording global allocator watches every `dealloc` of this process.
//! (Also run under valgrind: an mmap'd pool block passed to `free` is an invalid free there.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cuzk::{PinnedPool, PinnedVec, PoolConfig};

const SLOTS: usize = 1 << 16;

/// Records the addresses of deallocations while `RECORDING` is set.
struct Recording;

static RECORDING: AtomicBool = AtomicBool::new(false);
static FREED: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator; the bookkeeping only writes
// atomics and never allocates.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if RECORDING.load(Ordering::Relaxed) {
            let i = NEXT.fetch_add(1, Ordering::Relaxed);
            if i < SLOTS {
                FREED[i].store(ptr as usize, Ordering::Relaxed);
            }
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Recording = Recording;

#[test]
fn growth_keeps_data_and_never_frees_pool_memory_through_the_global_allocator() {
    let pool = PinnedPool::heap(PoolConfig::default());
    let mut v: PinnedVec<[u64; 4]> = PinnedVec::with_capacity_in(&pool, 100).unwrap();
    let mut pool_ptrs = Vec::with_capacity(64);
    pool_ptrs.push(v.buffer().unwrap().as_ptr() as usize);
    RECORDING.store(true, Ordering::SeqCst);
    let n = 200_000u64;
    for i in 0..n {
        v.push([i, i ^ 0xdead_beef, i.wrapping_mul(31), !i]);
        let p = v.buffer().expect("still in the pool").as_ptr() as usize;
        if *pool_ptrs.last().unwrap() != p {
            pool_ptrs.push(p);
        }
    }
    v.extend_from_slice(&[[7; 4]; 1000]);
    RECORDING.store(false, Ordering::SeqCst);

    assert!(
        pool_ptrs.len() > 5,
        "the vector grew several times: {}",
        pool_ptrs.len()
    );
    assert_eq!(v.len(), n as usize + 1000);
    for (i, x) in v.as_slice()[..n as usize].iter().enumerate() {
        let i = i as u64;
        assert_eq!(
            *x,
            [i, i ^ 0xdead_beef, i.wrapping_mul(31), !i],
            "element {i} changed in growth"
        );
    }
    assert!(v.as_slice()[n as usize..].iter().all(|x| *x == [7; 4]));

    let recorded = NEXT.load(Ordering::SeqCst).min(SLOTS);
    for slot in &FREED[..recorded] {
        let freed = slot.load(Ordering::Relaxed);
        assert!(
            !pool_ptrs.contains(&freed),
            "pool block {freed:#x} was passed to the global allocator"
        );
    }
    // Every grown-out-of block went back to the pool, not anywhere else.
    let s = pool.stats();
    assert_eq!(s.checkouts as usize, pool_ptrs.len());
    assert_eq!(s.idle_buffers, pool_ptrs.len() - 1);
    assert_eq!(s.frees, 0);
    drop(v);
    assert_eq!(pool.stats().bytes_in_use, 0);
}
