//! `podplace simulate` on the story scenarios: the steps of stories 2 and
//! 4, the JSON shape, exit codes, and bad scenarios.

use crate::support::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

fn simulate_json(scenario: &str) -> (Vec<Value>, i32) {
    let (stdout, stderr, code) = podplace(&["simulate", scenario, "-o", "json"]);
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    let obj = v.as_object().expect("an object");
    assert_eq!(obj.keys().collect::<Vec<_>>(), ["schemaVersion", "steps"]);
    (v["steps"].as_array().expect("steps").clone(), code)
}

/// Pods of a workload (by pod name prefix) per node after a step.
fn per_node(step: &Value, prefix: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in step["placements"].as_array().unwrap() {
        if p["pod"].as_str().unwrap().starts_with(prefix) {
            if let Some(n) = p["node"].as_str() {
                *m.entry(n.to_string()).or_default() += 1;
            }
        }
    }
    m
}

fn kinds(step: &Value) -> Vec<String> {
    step["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn drift_json_has_one_entry_per_step_and_flags_lost_ha() {
    let (steps, code) = simulate_json("drift.yaml");
    assert_eq!(code, 1, "the final expectation fails");
    assert_eq!(steps.len(), 6);
    for s in &steps {
        let keys: std::collections::BTreeSet<&str> =
            s.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["findings", "pending", "placements", "step"].into());
    }
    assert_eq!(steps[1]["step"], "scale deployment/demo-app to 5");
    let counts = |i: usize| -> Vec<usize> {
        let mut v: Vec<usize> = per_node(&steps[i], "default/demo-app-")
            .into_values()
            .collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    };
    assert_eq!(counts(0), [1, 1, 1]);
    assert_eq!(counts(1), [2, 2, 1]);
    assert_eq!(
        per_node(&steps[3], "default/demo-app-"),
        BTreeMap::from([("worker1".to_string(), 5)])
    );
    assert_eq!(
        per_node(&steps[4], "default/demo-app-"),
        per_node(&steps[3], "default/demo-app-")
    );
    let ha: Vec<bool> = steps
        .iter()
        .map(|s| kinds(s).contains(&"HALost".to_string()))
        .collect();
    assert_eq!(ha, [false, false, false, true, true, true]);
    let expect = &steps[5]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "ExpectFailed")
        .unwrap()["message"];
    assert_eq!(
        expect,
        "expected at most 2 pod(s) of Deployment/default/demo-app per node, worker1 has 5"
    );
}

#[test]
fn rollout_stalls_with_the_new_pod_pending_and_names_the_fix() {
    let (steps, code) = simulate_json("rollout.yaml");
    assert_eq!(code, 0, "no expectation failed");
    let rollout = &steps[1];
    let pending = rollout["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1);
    assert!(pending[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."));
    let stuck = rollout["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "RolloutStuck")
        .expect("RolloutStuck");
    assert_eq!(stuck["pod"], pending[0]["pod"]);
    assert_eq!(stuck["workload"], "Deployment/default/web");
    assert!(stuck["fix"]
        .as_str()
        .unwrap()
        .starts_with("maxUnavailable: 50%"));
    assert!(stuck["stalled_at"]
        .as_str()
        .unwrap()
        .contains("at 1/2 (0 available), old ReplicaSets at 2"));
    // --strict turns findings into exit 1.
    let (_, _, strict) = podplace(&["simulate", "rollout.yaml", "--strict"]);
    assert_eq!(strict, 1);
}

#[test]
fn rollout_with_half_unavailable_completes() {
    let (steps, code) = simulate_json("rollout-fixed.yaml");
    assert_eq!(code, 0);
    for s in &steps {
        assert!(s["findings"].as_array().unwrap().is_empty(), "{s}");
        assert!(s["pending"].as_array().unwrap().is_empty(), "{s}");
    }
    let last = &steps[2];
    let new_pods: Vec<&Value> = last["placements"].as_array().unwrap().iter().collect();
    assert_eq!(new_pods.len(), 2);
    assert_eq!(per_node(last, "default/web-").len(), 2, "one per node");
}

#[test]
fn text_output_of_the_rollout_story() {
    let (stdout, stderr, code) = podplace(&["simulate", "rollout.yaml"]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
}

fn scenario_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("podplace-simulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bad_scenarios_exit_2_and_say_where() {
    let cluster = examples().join("drift/cluster.yaml");
    let table = [
        (
            "typo.yaml",
            format!(
                "cluster: [{}]\nsteps:\n  - scael: {{workload: deployment/x, replicas: 2}}\n",
                cluster.display()
            ),
            vec!["typo.yaml:3:5: unknown variant `scael`"],
        ),
        (
            "node.yaml",
            format!(
                "cluster: [{}]\nsteps:\n  - drain: nope\n",
                cluster.display()
            ),
            vec!["node.yaml: step 1 (drain nope): node nope does not exist"],
        ),
        (
            "workload.yaml",
            format!(
                "cluster: [{}]\nsteps:\n  - scale: {{workload: deployment/ghost, replicas: 2}}\n",
                cluster.display()
            ),
            vec!["step 1 (scale deployment/ghost to 2): Deployment ghost does not exist"],
        ),
        (
            "missing.yaml",
            "cluster: [does-not-exist.yaml]\nsteps:\n  - wait: 1m\n".to_string(),
            vec!["does-not-exist.yaml"],
        ),
    ];
    for (name, text, wants) in table {
        let path = scenario_file(name, &text);
        let (_, stderr, code) = podplace(&["simulate", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {stderr}");
        for want in wants {
            assert!(stderr.contains(want), "{name}: {stderr:?} lacks {want:?}");
        }
    }
    let (_, stderr, code) = podplace(&["simulate", "no-such-scenario.yaml"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no-such-scenario.yaml: cannot read the scenario"),
        "{stderr}"
    );
}

#[test]
fn a_rebalance_step_restores_the_drifted_spread() {
    let (steps, code) = simulate_json("drift-rebalanced.yaml");
    assert_eq!(code, 0, "the expectation after the rebalance holds");
    let before = steps
        .iter()
        .position(|s| {
            s["step"]
                .as_str()
                .is_some_and(|t| t.starts_with("rebalance"))
        })
        .expect("a rebalance step");
    let drifted: Vec<usize> = per_node(&steps[before - 1], "default/demo-app-")
        .into_values()
        .collect();
    assert_eq!(drifted, [5], "all five on one node before the rebalance");
    let mut after: Vec<usize> = per_node(&steps[before], "default/demo-app-")
        .into_values()
        .collect();
    after.sort_unstable();
    assert_eq!(after, [1, 2, 2]);
}

/// Zone loss with zonal WaitForFirstConsumer volumes: the claims made from
/// the StatefulSet's templates, each provisioned where its replica landed,
/// and the force-deleted replica Pending with the finding that names its
/// claim, volume and reach.
#[test]
fn zone_loss_keeps_a_replica_to_its_volume() {
    let scenario = "../simulate/zone-loss.yaml";
    let (stdout, stderr, code) = podplace(&["simulate", scenario]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
    let (steps, _) = simulate_json(scenario);
    let last = steps.last().expect("steps");
    let f = last["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "VolumeUnreachable")
        .expect("a VolumeUnreachable finding");
    assert_eq!(f["pod"], "default/db-0");
    assert_eq!(
        f["rule"],
        "claim default/data-db-0: the volume provisioned for node a1 reaches topology.kubernetes.io/zone=a"
    );
    assert!(f["fix"]
        .as_str()
        .unwrap()
        .contains("delete claim default/data-db-0"));
}

/// Gated pods are listed apart (`gated` in JSON, naming the gates), never
/// Pending, until `ungate` removes their gates.
#[test]
fn gated_pods_are_reported_apart_until_ungated() {
    let (steps, code) = simulate_json("../simulate/gated.yaml");
    assert_eq!(code, 0);
    assert_eq!(steps[0]["pending"], serde_json::json!([]));
    assert_eq!(
        steps[0]["gated"],
        serde_json::json!([
            {"pod": "default/batch-0", "message": "waiting for scheduling gates: [example.com/capacity]"},
            {"pod": "default/train", "message": "waiting for scheduling gates: [example.com/quota example.com/review]"}
        ])
    );
    let last = steps.last().unwrap();
    assert!(last.get("gated").is_none(), "no gated pods left: {last}");
    assert_eq!(
        per_node(last, "default/"),
        BTreeMap::from([("worker1".to_string(), 3)])
    );
}
