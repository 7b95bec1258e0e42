//! `podplace place` on the story manifests reproduces what a real v1.36
//! control plane did (STORIES.md), and its output is stable.

use crate::support::*;
use std::path::Path;

use podplace_testkit::{deployment, label_term, node, pod, HOST};
use serde_json::{json, Value};

fn place_json(files: &[&str]) -> Vec<Value> {
    let mut args = vec!["place", "-o", "json"];
    for f in files {
        args.push("-f");
        args.push(f);
    }
    let (stdout, stderr, code) = podplace(&args);
    let v: Value = serde_json::from_str(&stdout).expect("valid JSON");
    // Exit 1 exactly when a pod stays Pending.
    let pending = v["pending"].as_u64().expect("pending count");
    assert_eq!(code, i32::from(pending > 0), "stderr: {stderr}");
    v["placements"].as_array().expect("placements").clone()
}

fn node_of<'a>(placements: &'a [Value], pod: &str) -> Option<&'a str> {
    placements
        .iter()
        .find(|p| p["pod"] == pod)
        .unwrap_or_else(|| panic!("{pod} not in output"))["node"]
        .as_str()
}

#[test]
fn vault_third_replica_is_pending_with_kube_schedulers_message() {
    let p = place_json(&["vault"]);
    let mut placed: Vec<&str> = ["stokesnet/vault-0", "stokesnet/vault-1"]
        .iter()
        .map(|pod| node_of(&p, pod).expect("placed"))
        .collect();
    placed.sort();
    assert_eq!(placed, ["bender", "farnsworth"]);
    let pending = p.iter().find(|x| x["pod"] == "stokesnet/vault-2").unwrap();
    assert!(pending["node"].is_null());
    assert_eq!(
        pending["message"],
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) didn't satisfy existing pods anti-affinity rules, 2 node(s) didn't match pod \
         anti-affinity rules. no new claims to deallocate, preemption: 0/4 nodes are available: \
         1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
    );
    assert_eq!(pending["workload"], "StatefulSet/stokesnet/vault");
}

#[test]
fn doesnotexist_pod_lands_on_the_emptier_node_either_way() {
    let p = place_json(&["doesnotexist"]);
    assert_eq!(node_of(&p, "default/pod-2"), Some("node-2"));
    let fixed = place_json(&["doesnotexist/cluster.yaml", "doesnotexist-fixed"]);
    assert_eq!(node_of(&fixed, "default/pod-2"), Some("node-2"));
}

#[test]
fn drift_replicas_spread_one_per_node() {
    let p = place_json(&["drift"]);
    let mut nodes: Vec<&str> = p
        .iter()
        .map(|x| x["node"].as_str().expect("placed"))
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["worker1", "worker2", "worker3"]);
    assert!(p
        .iter()
        .all(|x| x["workload"] == "Deployment/default/demo-app"));
}

#[test]
fn rollout_first_rollout_fits_and_the_surge_pod_stalls() {
    let p = place_json(&["rollout"]);
    let mut nodes: Vec<&str> = p
        .iter()
        .map(|x| x["node"].as_str().expect("placed"))
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node0", "node1"]);

    let stalled = place_json(&["rollout/cluster.yaml", "rollout-stalled"]);
    assert_eq!(stalled.len(), 1);
    assert!(stalled[0]["node"].is_null());
    assert_eq!(
        stalled[0]["message"],
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. no new claims \
         to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for \
         incoming pod."
    );
}

#[test]
fn text_output_of_the_vault_story() {
    let (stdout, _, code) = podplace(&["place", "-f", "vault"]);
    assert_eq!(code, 1, "vault-2 stays Pending");
    insta::assert_snapshot!(stdout);
}

#[test]
fn a_world_without_nodes_leaves_every_pod_pending_and_warns() {
    let (stdout, stderr, code) = podplace(&["place", "-f", "vault/vault.yaml"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no nodes were loaded"), "{stderr}");
    assert!(stdout.contains("0 placed, 3 pending"), "{stdout}");
    assert!(
        stdout.contains("no nodes available to schedule pods"),
        "{stdout}"
    );
}

#[test]
fn bad_input_exits_2_with_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("podplace-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - {key: app, operator: In}\n        topologyKey: kubernetes.io/hostname\n",
    )
    .unwrap();
    let (_, stderr, code) = podplace(&["place", "-f", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.yaml:11:"), "{stderr}");
    assert!(stderr.contains("Pod/default/p"), "{stderr}");
    assert!(stderr.contains("values"), "{stderr}");
}

/// `matchLabelKeys: [pod-template-hash]` on a required anti-affinity term
/// scopes it to one revision: the API server merges the pod's hash into the
/// selector on create, so the new revision's pods are not blocked by the old
/// revision's pods (story 4's deadlock does not happen) but still spread
/// one per node among themselves.
#[test]
fn match_label_keys_scope_anti_affinity_to_the_pods_revision() {
    let mut world = String::new();
    for i in 1..=3 {
        let node_name = format!("n{i}");
        world += &node(&node_name).capacity("4", "8Gi", "110").yaml();
        world += &pod(&format!("web-old-{i}"))
            .label("app", "web")
            .label("pod-template-hash", "old")
            .image("nginx")
            .on(&node_name)
            .phase("Running")
            .yaml();
    }
    let mut revision_term = label_term("app", "web", HOST);
    revision_term["matchLabelKeys"] = json!(["pod-template-hash"]);
    world += &deployment("web", 3)
        .template(|p| p.image("nginx").anti_term(revision_term))
        .yaml();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("match-label-keys.yaml");
    std::fs::write(&path, world).unwrap();
    let placements = place_json(&[path.to_str().unwrap()]);
    let mut nodes: Vec<&str> = placements
        .iter()
        .filter(|p| {
            p["pod"].as_str().unwrap().starts_with("default/web-")
                && !p["pod"].as_str().unwrap().contains("old")
        })
        .map(|p| p["node"].as_str().unwrap_or("Pending"))
        .collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["n1", "n2", "n3"], "{placements:#?}");
}
