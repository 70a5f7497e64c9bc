//! Pinned host memory on this machine: `cuMemHostAlloc` against `mmap` + `cuMemHostRegister`
//! (feature `cuda`). Times allocation, first touch, a host→device copy and the free, so the
//! pool's default (`PinMode`) is chosen by numbers.
//!
//!     cargo run --release --features cuda --example pinned_alloc -- --gib 1,2.5 --runs 3

mod support;

use std::time::Instant;

use clap::Parser;
use cust::memory::{CopyDestination, DeviceBuffer};
use cuzk::pool::{CudaPinnedAllocator, PinMode, PAGE_SIZE};
use cuzk::HostAllocator;
use support::{fail, median, ms};

/// Pinned host memory on this machine: cuMemHostAlloc against mmap + cuMemHostRegister
/// (allocation, first touch, a host-to-device copy, the free); medians of --runs.
#[derive(Parser)]
#[command(name = "pinned_alloc")]
struct Args {
    /// Buffer sizes in GiB, comma-separated.
    #[arg(long, value_name = "GIB,...", value_delimiter = ',', default_values_t = [1.0, 2.5])]
    gib: Vec<f64>,
    /// Runs per size and mode.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = support::at_least_one)]
    runs: usize,
}

fn main() {
    support::init_logging("info");
    let Args { gib: sizes, runs } = Args::parse();
    let _ctx = cust::quick_init().unwrap_or_else(|e| fail(&format!("no CUDA device: {e:?}")));
    println!("machine: {}", support::machine());
    println!();
    println!("| mode | GiB | alloc ms | alloc s/GiB | first touch ms | H2D GB/s | free ms | free s/GiB |");
    println!("|---|---|---|---|---|---|---|---|");
    for &gib in &sizes {
        let bytes = ((gib * (1u64 << 30) as f64) as usize).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let mut dev = DeviceBuffer::<u8>::zeroed(bytes).unwrap_or_else(|e| fail(&e.to_string()));
        for mode in [PinMode::HostAlloc, PinMode::Register] {
            let alloc = CudaPinnedAllocator::new(0, mode).unwrap_or_else(|e| fail(&e.to_string()));
            let (mut a, mut t, mut c, mut f) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                let start = Instant::now();
                let p = alloc.allocate(bytes).unwrap_or_else(|e| fail(&e.to_string()));
                a.push(ms(start.elapsed()));
                // SAFETY: (p, bytes) is a fresh block owned here until the free below.
                let slice = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), bytes) };
                let start = Instant::now();
                for page in slice.chunks_mut(PAGE_SIZE) {
                    page[0] = 1;
                }
                t.push(ms(start.elapsed()));
                dev.copy_from(&*slice).unwrap_or_else(|e| fail(&e.to_string()));
                let start = Instant::now();
                dev.copy_from(&*slice).unwrap_or_else(|e| fail(&e.to_string()));
                c.push(bytes as f64 / start.elapsed().as_secs_f64() / 1e9);
                let start = Instant::now();
                // SAFETY: allocated above by this allocator, not used afterwards.
                unsafe { alloc.free(p, bytes) };
                f.push(ms(start.elapsed()));
            }
            let (a, t, c, f) = (median(a), median(t), median(c), median(f));
            let g = bytes as f64 / (1u64 << 30) as f64;
            println!(
                "| {} | {g:.2} | {a:.0} | {:.3} | {t:.0} | {c:.1} | {f:.0} | {:.3} |",
                alloc.name(),
                a / 1e3 / g,
                f / 1e3 / g
            );
        }
    }
    println!();
    println!("median of {runs}; first touch writes one byte per 4 KiB page; H2D is one synchronous copy after a warm-up copy");
}
