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

    /// The lines written so far that were not read yet.
    fn drain(&mut self) -> Vec<String> {
        let fresh: Vec<String> = self.lines.try_iter().collect();
        self.seen.extend(fresh.iter().cloned());
        fresh
    }

    /// Waits for the startup line; the address /healthz and /metrics are on.
    fn listening(&mut self) -> std::net::SocketAddr {
        let line = self.wait_for_line("/healthz and /metrics on ");
        line.rsplit(' ')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
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

/// `GET path` on `addr`: the whole HTTP response.
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut out = String::new();
    stream.read_to_string(&mut out).expect("read");
    out
}

/// Polls `GET path` until `done` holds for the response, within [`DEADLINE`].
fn poll_http(addr: std::net::SocketAddr, path: &str, done: impl Fn(&str) -> bool) -> String {
    let until = Instant::now() + DEADLINE;
    loop {
        let response = http_get(addr, path);
        if done(&response) {
            return response;
        }
        assert!(
            Instant::now() < until,
            "{path} never as expected: {response}"
        );
        std::thread::sleep(Duration::from_millis(50));
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

#[test]
fn a_forbidden_lease_turns_healthz_unhealthy_and_is_logged_once() {
    let (_server, dir) = live_cluster("lease-forbidden");
    let mut p = Running::start(
        &dir.0,
        &[
            "rebalance",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "pod-lister",
            "--interval",
            "1h",
            "--listen",
            "127.0.0.1:0",
            "--lease-duration",
            "1s",
            "--renew-deadline",
            "800ms",
            "--retry-period",
            "50ms",
        ],
    );
    let addr = p.listening();
    // Unhealthy once the election has failed for a lease duration (about
    // 20 rounds), with the reason.
    let health = poll_http(addr, "/healthz", |r| r.starts_with("HTTP/1.1 503"));
    assert!(
        health.contains("unhealthy: leader election has failed for")
            && health.contains("403 Forbidden"),
        "{health}"
    );
    let metrics = http_get(addr, "/metrics");
    assert!(
        metrics.contains("podplace_rebalance_runs_total{result=\"error\"} 1"),
        "{metrics}"
    );
    assert!(!metrics.contains("result=\"not_leader\""), "{metrics}");
    // The same failure, round after round, is logged once.
    p.drain();
    let warnings: Vec<&String> = p
        .seen
        .iter()
        .filter(|l| l.starts_with("warning: leader election"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("warning: leader election: get lease kube-system/podplace-rebalancer: the API server answered 403 Forbidden"),
        "{}",
        warnings[0]
    );
    p.signal("INT");
    assert_eq!(p.wait_exit(DEADLINE), 0);
}

#[test]
fn election_flags_are_checked() {
    let (_server, dir) = live_cluster("lease-flags");
    for (flags, message) in [
        (
            ["--lease-duration", "10s", "--renew-deadline", "10s"],
            "--renew-deadline (10s) must be shorter than --lease-duration (10s)",
        ),
        (
            ["--renew-deadline", "2s", "--retry-period", "2s"],
            "--retry-period (2s) must be more than 0 and shorter than --renew-deadline (2s) / 1.2",
        ),
    ] {
        let mut args = vec![
            "rebalance",
            "--kubeconfig",
            "kubeconfig",
            "--interval",
            "1h",
            "--listen",
            "127.0.0.1:0",
        ];
        args.extend(flags);
        let (_, stderr, code) = podplace_in(&dir.0, &args);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(message), "{stderr}");
    }
}

/// The recorded server's Lease as it holds it now.
fn holder(server: &podplace_kube::testserver::TestServer) -> Option<String> {
    server
        .lease("kube-system", "podplace-rebalancer")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
}

fn replica(dir: &std::path::Path, identity: &str) -> Running {
    Running::start(
        dir,
        &[
            "rebalance",
            "--kubeconfig",
            "kubeconfig",
            "--interval",
            "1h",
            "--listen",
            "127.0.0.1:0",
            "--identity",
            identity,
        ],
    )
}

#[test]
fn sigterm_releases_the_lease_and_exits_0() {
    let (server, dir) = live_cluster("sigterm");
    let mut a = replica(&dir.0, "replica-a");
    a.wait_for_line("leader election: leading");
    assert_eq!(holder(&server).as_deref(), Some("replica-a"));
    server.clear_requests();
    let sent = Instant::now();
    a.signal("TERM");
    assert_eq!(a.wait_exit(Duration::from_secs(10)), 0);
    let exited = sent.elapsed();
    assert!(exited < Duration::from_secs(5), "exit took {exited:?}");
    // The release: a PUT of the Lease without a holder (client-go's
    // ReleaseOnCancel), so the next replica need not wait for it to expire.
    let release = server.requests().into_iter().find(|r| {
        r.method == "PUT"
            && r.path.ends_with("/leases/podplace-rebalancer")
            && r.body
                .as_ref()
                .is_some_and(|b| b["spec"].get("holderIdentity").is_none())
    });
    let release = release.expect("no PUT releasing the Lease");
    assert_eq!(release.status, 200);
    assert_eq!(holder(&server), None);
}

#[test]
fn sigterm_hands_the_lease_over_within_a_retry_period() {
    let (server, dir) = live_cluster("handover");
    let mut a = replica(&dir.0, "replica-a");
    a.wait_for_line("leader election: leading");
    let mut b = replica(&dir.0, "replica-b");
    b.wait_for_line("leader election: replica-a holds lease kube-system/podplace-rebalancer");
    let sent = Instant::now();
    a.signal("TERM");
    b.wait_for_line("leader election: leading");
    let handover = sent.elapsed();
    assert_eq!(holder(&server).as_deref(), Some("replica-b"));
    // b runs at once as the new leader.
    b.wait_for_line("nothing to evict");
    assert_eq!(a.wait_exit(DEADLINE), 0);
    eprintln!("hand-over after SIGTERM: {handover:?}");
    // Within one retry period (2 s) plus a little, not a lease duration (15 s).
    assert!(
        handover < Duration::from_secs(5),
        "hand-over took {handover:?}"
    );
    b.signal("TERM");
    assert_eq!(b.wait_exit(DEADLINE), 0);
}
