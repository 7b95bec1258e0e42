//! Tied sets at scale (issue 19 §3): when hundreds of nodes score equal,
//! `place` and `why` name a handful in text and count the rest, as
//! `rebalance` does; `-o json` keeps every name.

use serde_json::Value;

use crate::support::{podplace_in, Scratch};

/// 40 identical nodes and one Deployment replica: all 40 nodes tie.
fn forty_tied_nodes() -> Scratch {
    identical_nodes(40)
}

#[test]
fn place_names_five_tied_nodes_and_counts_the_rest() {
    let dir = forty_tied_nodes();
    let (out, err, code) = podplace_in(&dir.0, &["place", "-f", "world.yaml", "--seed", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("and 34 more)"), "{out}");
    insta::assert_snapshot!(out);
    let (json, err, code) = podplace_in(
        &dir.0,
        &["place", "-f", "world.yaml", "--seed", "1", "-o", "json"],
    );
    assert_eq!(code, 0, "{json}{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let tied = v["placements"][0]["tied"].as_array().unwrap();
    assert_eq!(tied.len(), 40, "JSON keeps every tied node");
}

#[test]
fn why_names_five_tied_nodes_and_counts_the_rest() {
    let dir = forty_tied_nodes();
    let (out, err, code) = podplace_in(&dir.0, &["why", "web", "-f", "world.yaml", "--seed", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("kube-scheduler would pick"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with("and 34 more)"), "{line}");
    insta::assert_snapshot!(out);
    let (json, err, code) = podplace_in(
        &dir.0,
        &[
            "why",
            "web",
            "-f",
            "world.yaml",
            "--seed",
            "1",
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 0, "{json}{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let tied = v["tied"].as_array().unwrap_or_else(|| panic!("{json}"));
    assert_eq!(tied.len(), 40, "JSON keeps every tied node");
}

/// `count` identical nodes (named `node-00`, `node-01`, ..., with as many
/// digits as the last needs, at least two) and one pod that fits on each.
fn identical_nodes(count: usize) -> Scratch {
    let dir = Scratch::new("tied");
    let width = count.saturating_sub(1).to_string().len().max(2);
    let mut text = String::new();
    for i in 0..count {
        text.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-{i:0width$}\n  labels: {{kubernetes.io/hostname: node-{i:0width$}}}\nstatus:\n  allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}\n---\n"
        ));
    }
    text.push_str(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      requests: {cpu: 100m, memory: 64Mi}\n",
    );
    std::fs::write(dir.join("world.yaml"), text).unwrap();
    dir
}

/// With node sampling (311 nodes: kube-scheduler scores the first 149
/// feasible ones from its start index), `why` rescores from the start
/// index the pod's placement used, so the node it says kube-scheduler
/// would pick is the one `place` chose, and its tied set is the same window.
#[test]
fn why_names_the_node_place_chose_when_sampling() {
    let dir = identical_nodes(311);
    let (json, err, code) = podplace_in(&dir.0, &["place", "-f", "world.yaml", "-o", "json"]);
    assert_eq!(code, 0, "{json}{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let placed = v["placements"][0]["node"].as_str().unwrap().to_string();
    assert_eq!(v["placements"][0]["sampled"]["to_find"], 149, "{json}");
    let (out, err, code) = podplace_in(&dir.0, &["why", "web", "-f", "world.yaml"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("podplace places it on {placed}.")),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("kube-scheduler would pick"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&format!("would pick {placed} ")),
        "why picks another node than place ({placed}): {line}"
    );
}
