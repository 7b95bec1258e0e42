//! `podplace rebalance --interval` as a process: the real binary against the
//! test API server, its log lines read while it runs, stopped with a signal
//! sent to its PID (`kill -TERM`, `kill -INT`) the way kubelet and a
//! terminal stop it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::support::*;

/// How long anything a test waits for may take on a busy 2-core machine.
const DEADLINE: Duration = Duration::from_secs(30);

/// A running `podplace` whose stderr lines arrive on a channel.
struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Starts `podplace args` in `dir`.
    fn start(dir: &std::path::Path, args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_podplace"))
            .args(args)
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run podplace");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (within [`DEADLINE`]) for a stderr line containing `text`.
    fn wait_for_line(&mut self, text: &str) -> String {
        let until = Instant::now() + DEADLINE;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line with {text:?} in {DEADLINE:?}; stderr so far:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "podplace ended without a line with {text:?}; stderr:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Sends `signal` (`TERM`, `INT`) to the process by its PID.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits (within `limit`) for the process to end; its exit code.
    fn wait_exit(&mut self, limit: Duration) -> i32 {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for podplace") {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() >= until {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "podplace did not end within {limit:?}; stderr so far:\n{}",
                    self.seen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that failed halfway must not leave the process behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn an_idle_execute_run_says_nothing_to_evict_not_dry_run() {
    let (_server, dir) = live_cluster("idle-execute");
    let mut p = Running::start(
        &dir.0,
        &[
            "rebalance",
            "--kubeconfig",
            "kubeconfig",
            "--execute",
            "--interval",
            "1h",
            "--lease",
            "none",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    p.wait_for_line("evicting; /healthz and /metrics on");
    // The recorded cluster is balanced: the run plans nothing, and says so.
    let line = p.wait_for_line("evict");
    assert_eq!(line, "nothing to evict");
    p.signal("INT");
    assert_eq!(p.wait_exit(DEADLINE), 0);
}
