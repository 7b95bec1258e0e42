//! `podplace rebalance`: story 2's plan as a user sees it (text and JSON),
//! descheduler policies from files, bad input, and a dry run against the
//! test API server that speaks the recorded v1.36 API.

use crate::support::*;
use std::path::{Path, PathBuf};

use podplace_kube::testserver::TestServer;
use serde_json::Value;

fn shared(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fixtures")
        .join(rel)
        .display()
        .to_string()
}

fn policy(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rebalance/tests/policies")
        .join(name)
        .display()
        .to_string()
}

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const NOW: &str = "2026-11-22T03:42:00Z";

#[test]
fn text_plan_of_the_drift_story() {
    let collapsed = shared("snapshots/drift-collapsed.yaml");
    let (stdout, stderr, code) = podplace_in(
        &here(),
        &["rebalance", "-f", &collapsed, "--now", NOW, "-v"],
    );
    assert_eq!(
        code, 1,
        "a plan with evictions exits 1 in a dry run; stderr: {stderr}"
    );
    insta::assert_snapshot!(stdout);
}

#[test]
fn json_plan_of_the_drift_story() {
    let collapsed = shared("snapshots/drift-collapsed.yaml");
    let (stdout, stderr, code) = podplace_in(
        &here(),
        &["rebalance", "-f", &collapsed, "--now", NOW, "-o", "json"],
    );
    assert_eq!(code, 1, "stderr: {stderr}");
    let mut v: Value = serde_json::from_str(&stdout).expect("JSON");
    assert!(v["plan_seconds"].as_f64().is_some());
    v.as_object_mut().unwrap().remove("plan_seconds");
    // Durations vary; the counts of rounds and proofs are in the snapshot.
    let timings = v["timings"].as_object_mut().expect("timings");
    for phase in [
        "world",
        "placing",
        "strategies",
        "nominate",
        "prove",
        "rank",
    ] {
        let seconds = timings.remove(&format!("{phase}_seconds"));
        assert!(seconds.and_then(|s| s.as_f64()).is_some(), "{phase}");
    }
    let evictions = v["evictions"].as_array().unwrap();
    assert_eq!(evictions.len(), 3);
    for e in evictions {
        assert_eq!(e["from"], "worker-1");
        assert!(e["score"]["to"].as_i64() > e["score"]["from"].as_i64());
    }
    insta::assert_json_snapshot!(v);
}

#[test]
fn the_descheduler_chart_policy_runs_unchanged() {
    let collapsed = shared("snapshots/drift-collapsed.yaml");
    let p = policy("descheduler-chart-default.yaml");
    let (stdout, stderr, code) = podplace_in(
        &here(),
        &[
            "rebalance",
            "-f",
            &collapsed,
            "--now",
            NOW,
            "--policy",
            &p,
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 1, "stderr: {stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let strategies: Vec<&str> = v["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(strategies, ["RemoveDuplicates"; 3]);
}

#[test]
fn bad_input_is_exit_2_with_a_clear_message() {
    let dir = std::env::temp_dir().join(format!("podplace-rebalance-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("typo.yaml"),
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: RemoveDuplicates\n    args: {excludeOwnerKinds: [Job]}\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates, RemovePodsViolatingSoftness]\n",
    )
    .unwrap();
    let collapsed = shared("snapshots/drift-collapsed.yaml");
    let table: [(&[&str], &str); 4] = [
        (
            &["rebalance", "-f", &collapsed, "--policy", "typo.yaml"],
            "typo.yaml:10:35: profiles[0] (p).plugins.balance.enabled[1]: unknown plugin \"RemovePodsViolatingSoftness\"",
        ),
        (
            &["rebalance", "-f", &collapsed, "--execute"],
            "--execute and --interval act on a live cluster",
        ),
        (&["rebalance", "-f", &collapsed, "--policy", "missing.yaml"], "cannot read policy missing.yaml"),
        (&["rebalance", "-f", "nope.yaml"], "nope.yaml"),
    ];
    for (args, want) in table {
        let (_, stderr, code) = podplace_in(&dir, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}\n  got: {stderr}\n  want: {want}"
        );
    }
    std::fs::write(
        dir.join("typo2.yaml"),
        "profiles:\n- name: p\n  pluginConfig:\n  - name: RemoveDuplicates\n    args: {excludeOwnerKind: [Job]}\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n",
    )
    .unwrap();
    let (_, stderr, code) = podplace_in(
        &dir,
        &["rebalance", "-f", &collapsed, "--policy", "typo2.yaml"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("typo2.yaml:5:11: profiles[0] (p).pluginConfig[0] (RemoveDuplicates).args.excludeOwnerKind: unknown field `excludeOwnerKind`, expected `namespaces` or `excludeOwnerKinds`"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_dry_run_plans_and_evicts_nothing() {
    let server = TestServer::start().expect("test server");
    let dir = std::env::temp_dir().join(format!("podplace-rebalance-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    server.write_kubeconfig(&dir.join("kubeconfig")).unwrap();
    let (stdout, stderr, code) = podplace_in(
        &dir,
        &["rebalance", "--kubeconfig", "kubeconfig", "--now", NOW],
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.starts_with("Rebalance plan (built-in default profile): nothing to evict"),
        "{stdout}"
    );
    assert!(server.requests().iter().any(|r| r.path == "/api/v1/pods"));
    assert!(server
        .requests()
        .iter()
        .all(|r| !r.path.ends_with("/eviction")));
    let _ = std::fs::remove_dir_all(&dir);
}

fn example(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rebalance")
        .join(rel)
        .display()
        .to_string()
}

/// Issue 19 §1: nine replicas of search-abc bound a0, a0, a0, a1, a1, a1,
/// a2, a2, a2 with preferred zone anti-affinity take 6 evictions, two from
/// each a-node (the descheduler's RemoveDuplicates also evicts 6).
#[test]
fn text_plan_of_the_nine_replica_zone_collapse() {
    let file = example("zone-collapse.yaml");
    let (stdout, stderr, code) = podplace_in(&here(), &["rebalance", "-f", &file, "--now", NOW]);
    assert_eq!(code, 1, "stderr: {stderr}");
    assert!(stdout.starts_with("Rebalance plan (built-in default profile): 6 evictions"));
    insta::assert_snapshot!(stdout);
}

/// Issue 13: db-2 moves only within its zonal volume's reach and the plan
/// says which volume; db-0 and db-1, on local volumes of a0, are left in
/// place with the reason.
#[test]
fn a_statefulset_moves_within_its_volumes_reach() {
    let file = example("statefulset-volumes.yaml");
    let (stdout, stderr, code) =
        podplace_in(&here(), &["rebalance", "-f", &file, "--now", NOW, "-v"]);
    assert_eq!(code, 1, "stderr: {stderr}");
    assert!(stdout.contains(
        "      volume: PersistentVolume pv-db-2 (claim data-db-2) reaches 2 of 6 nodes: a0, a1"
    ));
    insta::assert_snapshot!(stdout);
    let (json, _, _) = podplace_in(
        &here(),
        &["rebalance", "-f", &file, "--now", NOW, "-o", "json"],
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["evictions"][0]["volumes"][0],
        "PersistentVolume pv-db-2 (claim data-db-2) reaches 2 of 6 nodes: a0, a1"
    );
    assert_eq!(
        v["kept"][0]["reason"],
        "its PersistentVolume pv-db-0 (claim data-db-0) reaches no node but a0: its replacement could only land there again"
    );
}
