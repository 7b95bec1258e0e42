//! Hostile input ends in an error naming what failed, within bounds of time
//! and memory: a file too large, a device, a FIFO nobody writes to, an
//! endless stdin, an API server that never answers or never ends a list,
//! and a pause of zero.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use podplace_kube::testserver::Misbehavior;

use crate::support::*;

/// Runs podplace with `args`, stdin from an endless writer (`yes`), and
/// returns (stderr, exit code) once it ends.
fn with_endless_stdin(args: &[&str]) -> (String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_podplace"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run podplace");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let line = b"y\n".repeat(4096);
        // Ends with a broken pipe once podplace stops reading.
        while stdin.write_all(&line).is_ok() {}
    });
    let out = child.wait_with_output().expect("podplace ends");
    writer.join().expect("writer ends");
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn an_endless_stdin_stops_at_the_input_limit() {
    let start = Instant::now();
    let (err, code) = with_endless_stdin(&["place", "-f", "-", "--max-input-size", "1Mi"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim(),
        "error: -: standard input is larger than the input limit of 1 MiB (1048576 bytes); raise it with --max-input-size if it really is one world"
    );
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn files_that_never_end_or_never_open_are_refused() {
    let dir = Scratch::new("bounds-files");
    let big = dir.join("big.yaml");
    std::fs::write(&big, "# padding\n".repeat(200)).unwrap();
    let fifo = dir.join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let big_s = big.display().to_string();
    let cases: [(&str, Vec<&str>, String); 3] = [
        (
            "a file over --max-input-size",
            vec!["place", "-f", &big_s, "--max-input-size", "1000"],
            format!("error: {big_s}: the file is larger than the input limit of 1000 bytes;"),
        ),
        (
            "a device",
            vec!["lint", "-f", "/dev/zero"],
            "error: /dev/zero: cannot read: not a regular file (a character device)".to_string(),
        ),
        (
            "a FIFO with no writer",
            vec!["place", "-f", "pipe.yaml"],
            "error: pipe.yaml: cannot read: a FIFO that nothing opened for writing within 10s"
                .to_string(),
        ),
    ];
    for (what, args, expect) in cases {
        let start = Instant::now();
        let (_, err, code) = podplace_in(&dir.0, &args);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.starts_with(&expect), "{what}: {err}");
        assert!(start.elapsed() < Duration::from_secs(30), "{what}");
    }
}

#[test]
fn policy_and_scenario_files_are_bounded_as_f_is() {
    let dir = Scratch::new("bounds-policy-scenario");
    let big = dir.join("policy.yaml");
    std::fs::write(&big, "# padding\n".repeat(200)).unwrap();
    let big_s = big.display().to_string();
    let cases: [(&str, Vec<&str>, String); 3] = [
        (
            "a policy over --max-input-size",
            vec!["rebalance", "--policy", &big_s, "--max-input-size", "1000"],
            format!("error: cannot read policy {big_s}: the file is larger than the input limit of 1000 bytes;"),
        ),
        (
            "a device as the policy",
            vec!["rebalance", "--policy", "/dev/zero"],
            "error: cannot read policy /dev/zero: not a regular file (a character device)"
                .to_string(),
        ),
        (
            "a device as the scenario",
            vec!["simulate", "/dev/zero"],
            "error: /dev/zero: cannot read the scenario: not a regular file (a character device)"
                .to_string(),
        ),
    ];
    for (what, args, expect) in cases {
        let start = Instant::now();
        let (_, err, code) = podplace_in(&dir.0, &args);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.starts_with(&expect), "{what}: {err}");
        assert!(start.elapsed() < Duration::from_secs(30), "{what}");
    }
}

#[test]
fn a_server_that_never_answers_fails_at_the_request_timeout_with_exit_3() {
    for (command, how) in [
        (vec!["snapshot", "-o", "out.json"], Misbehavior::Hang),
        (
            vec!["rebalance"],
            Misbehavior::Trickle(Duration::from_millis(200)),
        ),
        (vec!["why", "shop/web"], Misbehavior::Hang),
    ] {
        let (server, dir) = live_cluster("bounds-hang");
        server.misbehave("GET", "/api/v1/nodes", how);
        let kubeconfig = dir.join("kubeconfig").display().to_string();
        let mut args = command.clone();
        args.extend(["--kubeconfig", &kubeconfig, "--request-timeout", "1s"]);
        let start = Instant::now();
        let (_, err, code) = podplace_in(&dir.0, &args);
        let took = start.elapsed();
        assert_eq!(code, 3, "{command:?}: {err}");
        assert!(
            err.contains(&format!(
                "list nodes: {} did not answer in time: no complete answer within the request timeout of 1s; raise it with --request-timeout",
                server.url()
            )),
            "{command:?}: {err}"
        );
        assert!(took < Duration::from_secs(20), "{command:?} took {took:?}");
    }
}

#[test]
fn a_repeated_continue_token_is_an_error_not_a_loop() {
    let (server, dir) = live_cluster("bounds-continue");
    server.misbehave("GET", "/api/v1/pods", Misbehavior::RepeatContinue);
    let kubeconfig = dir.join("kubeconfig").display().to_string();
    let (_, err, code) = podplace_in(
        &dir.0,
        &["snapshot", "--kubeconfig", &kubeconfig, "-o", "s.json"],
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(
            "list pods: the API server handed out the same continue token again after 2 pages"
        ),
        "{err}"
    );
    let lists = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/pods")
        .count();
    assert_eq!(lists, 2);
}

#[test]
fn zero_pauses_are_refused() {
    for flag in ["--poll-interval", "--wait-timeout", "--retry-backoff"] {
        let (server, dir) = live_cluster("bounds-zero");
        let kubeconfig = dir.join("kubeconfig").display().to_string();
        let (_, err, code) = podplace_in(
            &dir.0,
            &["rebalance", "--kubeconfig", &kubeconfig, flag, "0"],
        );
        assert_eq!(code, 2, "{flag}: {err}");
        assert_eq!(
            err.trim(),
            format!("error: {flag} must be more than 0 (e.g. 2s): a zero pause would query the API server in a tight loop")
        );
        assert!(server.requests().is_empty(), "{flag}: the cluster was read");
    }
}
