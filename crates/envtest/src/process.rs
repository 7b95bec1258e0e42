//! A child process the harness owns: output to a log file, stopped by its PID
//! (SIGTERM, then SIGKILL after a deadline) when stopped or dropped, so no
//! test leaves a control plane running, also when it panics.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::{Context, Result};

/// How long a process gets to exit after SIGTERM before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running (or stopped, restartable) child process.
pub struct Process {
    name: String,
    program: PathBuf,
    args: Vec<OsString>,
    log: PathBuf,
    child: Option<Child>,
}

impl Process {
    /// Starts `program args`, appending its stdout and stderr to `log`.
    pub fn spawn(name: &str, program: &Path, args: Vec<OsString>, log: &Path) -> Result<Process> {
        let mut p = Process {
            name: name.to_string(),
            program: program.to_path_buf(),
            args,
            log: log.to_path_buf(),
            child: None,
        };
        p.start()?;
        Ok(p)
    }

    /// Starts the process again with the same arguments (after [`Process::stop`]);
    /// a no-op while it runs.
    pub fn start(&mut self) -> Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        let out = open_log(&self.log)?;
        let err = out
            .try_clone()
            .with_context(|| format!("{}: log file", self.name))?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {} ({})", self.name, self.program.display()))?;
        register(child.id(), true);
        self.child = Some(child);
        Ok(())
    }

    /// The component's name, as in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The log file its output goes to.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Its PID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `Some(status)` once it has exited on its own (reaps it).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok().flatten()?;
        if let Some(c) = self.child.take() {
            register(c.id(), false);
        }
        Some(status)
    }

    /// Sends SIGTERM without waiting (see [`Process::stop`]).
    pub fn terminate(&self) {
        if let Some(pid) = self.child.as_ref().and_then(|c| i32::try_from(c.id()).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }

    /// Stops it: SIGTERM, then SIGKILL if it has not exited within `grace`.
    /// Returns how long it took. A no-op when it is not running.
    pub fn stop(&mut self, grace: Duration) -> Duration {
        let start = Instant::now();
        let Some(mut child) = self.child.take() else {
            return Duration::ZERO;
        };
        register(child.id(), false);
        if let Ok(Some(_)) = child.try_wait() {
            return start.elapsed();
        }
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        while start.elapsed() < grace {
            if let Ok(Some(_)) = child.try_wait() {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        start.elapsed()
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(STOP_GRACE);
    }
}

fn open_log(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening log {}", path.display()))
}

/// The last `lines` lines of the file at `path` (empty when unreadable).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Process {
    /// A process that was never started (a placeholder until it is).
    pub(crate) fn idle(name: &str) -> Process {
        Process {
            name: name.to_string(),
            program: PathBuf::new(),
            args: Vec::new(),
            log: PathBuf::new(),
            child: None,
        }
    }
}

/// PIDs of every process the harness started that still runs, for
/// [`stop_all_on_signal`].
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn register(pid: u32, running: bool) {
    let mut set = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    if running {
        set.insert(pid);
    } else {
        set.remove(&pid);
    }
}

/// On SIGINT or SIGTERM (Ctrl-C, a CI timeout), stops every process the
/// harness started (SIGTERM, SIGKILL after a short deadline) and exits with
/// 128+signal, as the test binary would have died without running drops.
/// Spawned on the current tokio runtime; call once per test binary.
pub fn stop_all_on_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    tokio::spawn(async {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        let code = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
        };
        let pids: Vec<u32> = RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        let send = |s: Signal| {
            for pid in &pids {
                if let Ok(pid) = i32::try_from(*pid) {
                    let _ = kill(Pid::from_raw(pid), s);
                }
            }
        };
        send(Signal::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            let alive = pids
                .iter()
                .any(|p| i32::try_from(*p).is_ok_and(|p| kill(Pid::from_raw(p), None).is_ok()));
            if !alive {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        send(Signal::SIGKILL);
        eprintln!(
            "envtest: stopped {} control-plane processes on a signal",
            pids.len()
        );
        std::process::exit(code);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_stopped_by_pid_and_can_start_again() {
        let dir = std::env::temp_dir().join(format!("envtest-unit-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("sleep.log");
        let mut p = Process::spawn("sleep", Path::new("sleep"), vec!["30".into()], &log)
            .expect("sleep starts");
        let pid = p.pid().expect("running");
        assert!(RUNNING.lock().expect("lock").contains(&pid));
        let took = p.stop(Duration::from_secs(5));
        assert!(
            took < Duration::from_secs(5),
            "SIGTERM ends sleep: {took:?}"
        );
        assert!(p.pid().is_none());
        assert!(!RUNNING.lock().expect("lock").contains(&pid));
        p.start().expect("starts again");
        assert!(p.pid().is_some_and(|p2| p2 != pid));
        drop(p);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = std::env::temp_dir().join(format!("envtest-unit-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("log");
        std::fs::write(&f, "a\nb\nc\n").expect("write");
        assert_eq!(tail(&f, 2), "b\nc");
        assert_eq!(tail(&f, 10), "a\nb\nc");
        assert_eq!(tail(&dir.join("missing"), 3), "");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
