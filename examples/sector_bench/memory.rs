//! The process's memory as the memory check sees it: VmRSS and VmHWM from /proc, a sampler
//! of the peak RSS, the host's memory, and returning freed heap to the system between streams.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`).
pub(crate) fn proc_status(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

pub(crate) fn rss() -> usize {
    proc_status("VmRSS:").unwrap_or(0)
}

/// Samples VmRSS every 10 ms: the peak since it started, and the peak since the last `window`.
pub(crate) struct Sampler {
    peak: Arc<AtomicUsize>,
    window: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub(crate) fn start() -> Self {
        let (peak, window, stop) = (
            Arc::new(AtomicUsize::new(rss())),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (p, w, s) = (peak.clone(), window.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = rss();
                p.fetch_max(now, Ordering::Relaxed);
                w.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            peak,
            window,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed).max(rss())
    }

    /// The peak since the last call, and a new window.
    pub(crate) fn window(&self) -> usize {
        self.window.swap(rss(), Ordering::Relaxed).max(rss())
    }

    pub(crate) fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak()
    }
}

/// Resets VmHWM to the current RSS (`/proc/self/clear_refs`, Linux ≥ 4.0); false where the
/// kernel does not allow it.
pub(crate) fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the heap's free memory to the system, so the next stream's RSS is its own.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's heap; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The host's memory (`MemTotal`) in bytes.
pub(crate) fn host_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: usize = info
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib << 10)
}
