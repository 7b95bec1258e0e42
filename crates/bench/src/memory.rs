//! Peak memory of the measuring process split into anonymous memory (the
//! decoded objects, the engine's state) and mapped file pages (a snapshot
//! the loader maps instead of reading counts in RSS too, but those pages
//! are the kernel's page cache, shared and dropped under pressure). Linux
//! keeps only the peak of the total (`VmHWM`), so a thread samples
//! `RssAnon` and `RssFile` every few milliseconds.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the sampler reads `/proc/self/status`.
const EVERY: Duration = Duration::from_millis(5);

/// The largest values seen so far, in KiB.
#[derive(Debug, Default)]
struct Peaks {
    anon: AtomicU64,
    file: AtomicU64,
}

/// Samples the process's anonymous and file-backed resident memory until
/// stopped (or dropped).
pub struct Sampler {
    peaks: Arc<Peaks>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// `self` or the sampled child's pid.
    pid: String,
}

/// Peak anonymous and file-backed resident memory, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeakMemory {
    /// Largest `RssAnon` seen.
    pub anon_kib: u64,
    /// Largest `RssFile` seen (mapped files, the binary itself included).
    pub file_kib: u64,
}

/// `(RssAnon, RssFile)` of this process now, in KiB (0 when unknown).
pub fn rss_split_kib() -> (u64, u64) {
    rss_split_kib_of("self")
}

/// `(RssAnon, RssFile)` of the process `/proc/{pid}` names (`self` or a
/// pid) now, in KiB (0 when unknown or gone).
fn rss_split_kib_of(pid: &str) -> (u64, u64) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return (0, 0);
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("RssFile:"))
}

impl Sampler {
    /// Starts sampling this process in a thread of its own.
    pub fn start() -> Sampler {
        Sampler::start_of("self".to_string())
    }

    /// Starts sampling the child process `pid` (a command measured end to
    /// end) in a thread of its own.
    pub fn start_for(pid: u32) -> Sampler {
        Sampler::start_of(pid.to_string())
    }

    fn start_of(pid: String) -> Sampler {
        let peaks = Arc::new(Peaks::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s, id) = (Arc::clone(&peaks), Arc::clone(&stop), pid.clone());
        let thread = std::thread::Builder::new()
            .name("rss-sampler".to_string())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    record(&p, &id);
                    std::thread::sleep(EVERY);
                }
            })
            .ok();
        record(&peaks, &pid);
        Sampler {
            peaks,
            stop,
            thread,
            pid,
        }
    }

    /// The peaks so far (sampled once more now).
    pub fn peaks(&self) -> PeakMemory {
        record(&self.peaks, &self.pid);
        PeakMemory {
            anon_kib: self.peaks.anon.load(Ordering::Relaxed),
            file_kib: self.peaks.file.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn record(peaks: &Peaks, pid: &str) {
    let (anon, file) = rss_split_kib_of(pid);
    peaks.anon.fetch_max(anon, Ordering::Relaxed);
    peaks.file.fetch_max(file, Ordering::Relaxed);
}
