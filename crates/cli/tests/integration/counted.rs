//! `replicas: 2000000000` on one small node (issue 19 §3): expansion
//! creates the replicas that can matter — one more than the nodes hold —
//! and counts the rest, each identical to the last one created, which can
//! never be bound. `place` reports them in one line and finishes at once;
//! `why`, `lint` and `simulate` stay bounded too.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{podplace_in, Scratch};

const WORLD: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: small
  labels: {kubernetes.io/hostname: small}
status:
  allocatable: {cpu: '2', memory: 4Gi, pods: '110'}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: default
spec:
  replicas: 2000000000
  selector:
    matchLabels: {app: d}
  template:
    metadata:
      labels: {app: d}
    spec:
      containers:
      - name: c
        image: nginx
        resources:
          requests: {cpu: 10m, memory: 16Mi}
";

/// Generous for a debug build on a loaded CI machine; the release build
/// takes well under a second (docs/limits.md).
const BOUND: Duration = Duration::from_secs(60);

fn world() -> Scratch {
    let dir = Scratch::new("counted");
    std::fs::write(dir.join("world.yaml"), WORLD).unwrap();
    std::fs::write(
        dir.join("scenario.yaml"),
        "cluster: [world.yaml]\nsteps:\n  - wait: 1m\n",
    )
    .unwrap();
    dir
}

#[test]
fn two_billion_replicas_on_one_node_are_decided_once_and_counted() {
    let dir = world();
    let t0 = Instant::now();
    let (out, err, code) = podplace_in(&dir.0, &["place", "-f", "world.yaml"]);
    let took = t0.elapsed();
    eprintln!("place with replicas 2000000000: {took:?}");
    assert!(took < BOUND, "{took:?}");
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    // 110 placed, and every Pending replica in one line with the
    // scheduler's message (replicas past the first thousand are counted,
    // not created).
    assert_eq!(lines.iter().filter(|l| l.ends_with("  small")).count(), 110);
    assert!(!out.contains("  Pending  "), "{out}");
    let counted = lines
        .iter()
        .find(|l| {
            l.starts_with("  1,999,999,890 more replicas of Deployment/default/d stay Pending: ")
        })
        .unwrap_or_else(|| panic!("{out}"));
    let message = counted.split("stay Pending: ").nth(1).unwrap();
    assert!(
        message.starts_with("0/1 nodes are available: 1 Too many pods."),
        "{message}"
    );
    assert_eq!(
        lines.last(),
        Some(&"110 placed, 1,999,999,890 pending"),
        "{out}"
    );

    let (json, _, code) = podplace_in(&dir.0, &["place", "-f", "world.yaml", "-o", "json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["placed"], 110);
    assert_eq!(v["pending"], 1_999_999_890u64);
    assert_eq!(v["placements"].as_array().unwrap().len(), 1_000);
    assert_eq!(v["counted"][0]["replicas"], 1_999_999_000u64);
    assert_eq!(v["counted"][0]["workload"], "Deployment/default/d");
    assert_eq!(v["counted"][0]["message"], message);
}

#[test]
fn why_lint_and_simulate_stay_bounded_with_two_billion_replicas() {
    let dir = world();
    let (json, _, _) = podplace_in(&dir.0, &["place", "-f", "world.yaml", "-o", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let pending = v["counted"][0]["pod"].as_str().unwrap().to_string();

    let t0 = Instant::now();
    let (out, err, code) = podplace_in(&dir.0, &["why", &pending, "-f", "world.yaml"]);
    assert!(t0.elapsed() < BOUND);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("Too many pods"), "{out}");

    // lint verifies its fix by placing the replicas again: bounded too,
    // and the Pending count is the whole rest.
    let t0 = Instant::now();
    let (out, err, code) = podplace_in(&dir.0, &["lint", "world.yaml"]);
    assert!(t0.elapsed() < BOUND);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("leaves 1999999890 Pending"), "{out}");

    // The simulation holds at most a million pods and says so.
    let t0 = Instant::now();
    let (out, err, code) = podplace_in(&dir.0, &["simulate", "scenario.yaml"]);
    assert!(t0.elapsed() < BOUND);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("the simulation holds at most 1000000 pods"),
        "{err}"
    );
}
