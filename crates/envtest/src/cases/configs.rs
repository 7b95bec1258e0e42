//! Conformance cases with a KubeSchedulerConfiguration, recorded on the
//! real kube-scheduler (`tests/data/conformance-podplace/config-*.json`;
//! the format is the conformance corpus's, with `schedulerConfig`,
//! `expected.feasible` instead of `filter`, and `expected.node`).
//!
//! Each case starts a control plane of its own whose kube-scheduler runs
//! the case's configuration at `-v=10`, so that it is a fresh scheduler
//! (node sampling starts at index 0) and logs every plugin's weighted
//! score of every node it scored ("Plugin scored node for pod"). The
//! scored nodes are the feasible ones; the binding is the real answer.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::build::{self, HOSTNAME, ZONE};
use super::Spec;
use crate::error::{Error, Result};

/// One case: a world, a configuration and the pod under test.
#[derive(Clone, Debug)]
pub struct ConfigCase {
    /// What the case checks (the live world is a [`Spec`] named after it).
    pub spec: Spec,
    /// The KubeSchedulerConfiguration, as JSON.
    pub config: Value,
}

/// A node of `zone` with `cpu` and `memory` allocatable.
fn node(case: &str, i: usize, zone: &str, cpu: &str, memory: &str) -> Value {
    let name = format!("{case}-n{i}");
    let mut n = build::node(&name, "r1", zone, &[]);
    let res = json!({"cpu": cpu, "memory": memory, "pods": "110"});
    n["status"] = json!({"capacity": res, "allocatable": res});
    n
}

/// A pod of the case's namespace requesting `cpu`/`memory`, labelled,
/// bound to `node` when given (an existing pod).
fn pod(
    case: &str,
    name: &str,
    cpu: &str,
    memory: &str,
    labels: Value,
    node: Option<&str>,
) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": case, "labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{
                "name": "c", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}
            }]
        }
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    p
}

fn config(profiles: Value) -> Value {
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    })
}

fn fit_args(strategy: Value) -> Value {
    json!({"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}})
}

/// Three nodes unevenly loaded: n0 half full, n1 a quarter, n2 empty.
fn loaded(case: &str) -> (Vec<Value>, Vec<Value>) {
    let nodes = (0..3)
        .map(|i| node(case, i, ["za", "zb", "zc"][i], "4", "8Gi"))
        .collect();
    let existing = vec![
        pod(
            case,
            "busy-0",
            "2",
            "4Gi",
            json!({"app": "busy"}),
            Some(&format!("{case}-n0")),
        ),
        pod(
            case,
            "busy-1",
            "1",
            "2Gi",
            json!({"app": "busy"}),
            Some(&format!("{case}-n1")),
        ),
    ];
    (nodes, existing)
}

fn spec(name: &str, description: &str, nodes: Vec<Value>, objects: Vec<Value>, pod: Value) -> Spec {
    Spec {
        name: name.to_string(),
        family: "config",
        description: description.to_string(),
        nodes,
        objects,
        statuses: Vec::new(),
        deletions: Vec::new(),
        pod,
        ties_allowed: true,
        ungate: false,
        untried: false,
    }
}

/// Every configuration case.
pub fn all() -> Vec<ConfigCase> {
    let mut out = Vec::new();

    let name = "config-most-allocated";
    let (nodes, existing) = loaded(name);
    out.push(ConfigCase {
        spec: spec(
            name,
            "NodeResourcesFit MostAllocated with cpu weighted 3: the busiest node scores highest",
            nodes,
            existing,
            pod(name, "web", "500m", "1Gi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"pluginConfig": [fit_args(json!({
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]
        }))]}])),
    });

    let name = "config-rtcr-shape";
    let (nodes, existing) = loaded(name);
    out.push(ConfigCase {
        spec: spec(
            name,
            "RequestedToCapacityRatio with a three-point shape peaking at 50% utilization",
            nodes,
            existing,
            pod(name, "web", "500m", "1Gi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"pluginConfig": [fit_args(json!({
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [
                {"utilization": 0, "score": 0},
                {"utilization": 50, "score": 10},
                {"utilization": 100, "score": 2}
            ]}
        }))]}])),
    });

    let name = "config-custom-weights";
    let (nodes, existing) = loaded(name);
    out.push(ConfigCase {
        spec: spec(
            name,
            "NodeResourcesFit weight 5 and TaintToleration 1, BalancedAllocation and ImageLocality disabled",
            nodes,
            existing,
            pod(name, "web", "500m", "1Gi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"plugins": {"score": {
            "enabled": [{"name": "NodeResourcesFit", "weight": 5}, {"name": "TaintToleration", "weight": 1}],
            "disabled": [{"name": "NodeResourcesBalancedAllocation"}, {"name": "ImageLocality"}]
        }}}])),
    });

    let two = json!([
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "bin-packer", "pluginConfig": [fit_args(json!({"type": "MostAllocated"}))]}
    ]);
    for (name, scheduler) in [
        ("config-two-profiles-packer", "bin-packer"),
        ("config-two-profiles-default", "default-scheduler"),
    ] {
        let (nodes, existing) = loaded(name);
        let mut p = pod(name, "web", "500m", "1Gi", json!({"app": "web"}), None);
        p["spec"]["schedulerName"] = json!(scheduler);
        out.push(ConfigCase {
            spec: spec(
                name,
                &format!("two profiles (default-scheduler, bin-packer with MostAllocated): a pod of {scheduler}"),
                nodes,
                existing,
                p,
            ),
            config: config(two.clone()),
        });
    }

    let name = "config-hard-pod-affinity-weight";
    let (nodes, _) = loaded(name);
    let mut holder = pod(
        name,
        "holder",
        "100m",
        "128Mi",
        json!({"app": "holder"}),
        Some(&format!("{name}-n1")),
    );
    holder["spec"]["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE
    }]}});
    let other = pod(
        name,
        "other",
        "100m",
        "128Mi",
        json!({"app": "web"}),
        Some(&format!("{name}-n2")),
    );
    let mut incoming = pod(name, "web", "100m", "128Mi", json!({"app": "web"}), None);
    incoming["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}
    }]}});
    out.push(ConfigCase {
        spec: spec(
            name,
            "InterPodAffinity hardPodAffinityWeight 60: an existing pod's required affinity to the incoming pod outweighs its own preference",
            nodes,
            vec![holder, other],
            incoming,
        ),
        config: config(json!([{"pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 60}}]}])),
    });

    let name = "config-ignore-preferred-terms";
    let (nodes, _) = loaded(name);
    let mut fan = pod(
        name,
        "fan",
        "100m",
        "128Mi",
        json!({"app": "fan"}),
        Some(&format!("{name}-n0")),
    );
    fan["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOSTNAME}
    }]}});
    let peer = pod(
        name,
        "peer",
        "100m",
        "128Mi",
        json!({"app": "peer"}),
        Some(&format!("{name}-n2")),
    );
    let mut incoming = pod(name, "web", "100m", "128Mi", json!({"app": "web"}), None);
    incoming["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "peer"}}, "topologyKey": HOSTNAME}
    }]}});
    out.push(ConfigCase {
        spec: spec(
            name,
            "InterPodAffinity ignorePreferredTermsOfExistingPods: an existing pod's weight-100 preference for the incoming pod is not counted",
            nodes,
            vec![fan, peer],
            incoming,
        ),
        config: config(json!([{"pluginConfig": [{"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": true}}]}])),
    });

    let name = "config-default-constraints-list";
    let nodes: Vec<Value> = (0..4)
        .map(|i| node(name, i, ["za", "za", "zb", "zb"][i], "4", "8Gi"))
        .collect();
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP"}]}
    });
    let existing = vec![
        svc,
        pod(
            name,
            "web-0",
            "100m",
            "128Mi",
            json!({"app": "web"}),
            Some(&format!("{name}-n0")),
        ),
        pod(
            name,
            "web-1",
            "100m",
            "128Mi",
            json!({"app": "web"}),
            Some(&format!("{name}-n1")),
        ),
        pod(
            name,
            "web-2",
            "100m",
            "128Mi",
            json!({"app": "web"}),
            Some(&format!("{name}-n2")),
        ),
    ];
    out.push(ConfigCase {
        spec: spec(
            name,
            "PodTopologySpread defaultingType List: a zone constraint (maxSkew 1, ScheduleAnyway) for pods of a Service",
            nodes,
            existing,
            pod(name, "web", "100m", "128Mi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"pluginConfig": [{"name": "PodTopologySpread", "args": {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]
        }}]}])),
    });

    let name = "config-added-affinity";
    let nodes: Vec<Value> = (0..4)
        .map(|i| {
            let mut n = node(name, i, ["za", "zb", "zb", "zc"][i], "4", "8Gi");
            n["metadata"]["labels"]["pool"] = json!(["batch", "batch", "web", "web"][i]);
            n
        })
        .collect();
    out.push(ConfigCase {
        spec: spec(
            name,
            "NodeAffinity addedAffinity: every pod must avoid zone za and prefers pool=web",
            nodes,
            Vec::new(),
            pod(name, "web", "100m", "128Mi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "NotIn", "values": ["za"]}
            ]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 40, "preference": {"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["web"]}
            ]}}]
        }}}]}])),
    });

    out
}

/// kube-scheduler's `-v=10` lines "Plugin scored node for pod" about
/// `ns/pod`: node → plugin → weighted score, with `total` added.
pub fn scores_from_log(log: &str, ns: &str, pod: &str) -> BTreeMap<String, BTreeMap<String, i64>> {
    let want = format!("pod=\"{ns}/{pod}\"");
    let mut out: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for line in log.lines() {
        if !line.contains("\"Plugin scored node for pod\"") || !line.contains(&want) {
            continue;
        }
        let field = |k: &str| -> Option<String> {
            let i = line.find(&format!(" {k}="))? + k.len() + 2;
            let rest = &line[i..];
            Some(match rest.strip_prefix('"') {
                Some(q) => q[..q.find('"')?].to_string(),
                None => rest.split_whitespace().next()?.to_string(),
            })
        };
        let (Some(plugin), Some(node), Some(score)) =
            (field("plugin"), field("node"), field("score"))
        else {
            continue;
        };
        let Ok(score) = score.parse::<i64>() else {
            continue;
        };
        out.entry(node).or_default().insert(plugin, score);
    }
    for m in out.values_mut() {
        let total = m.values().sum();
        m.insert("total".to_string(), total);
    }
    out
}

/// The conformance case of a recorded live case (`live`, as
/// [`super::decide`] returns it), its configuration and the scores the
/// scheduler logged.
pub fn conformance_case(
    live: &Value,
    config: &Value,
    scores: BTreeMap<String, BTreeMap<String, i64>>,
) -> Result<Value> {
    let objects = live["objects"].as_array().cloned().unwrap_or_default();
    let of = |kind: &str| -> Vec<Value> {
        objects
            .iter()
            .filter(|o| o["kind"] == kind)
            .cloned()
            .collect()
    };
    let others: Vec<Value> = objects
        .iter()
        .filter(|o| !matches!(o["kind"].as_str(), Some("Namespace" | "Node" | "Pod")))
        .cloned()
        .collect();
    let expected = &live["expected"];
    let node = expected["node"].as_str();
    if node.is_some() && scores.len() < 2 {
        return Err(Error(format!(
            "{}: bound with {} node(s) scored: a case needs at least two feasible nodes to show them",
            live["name"],
            scores.len()
        )));
    }
    let feasible: Vec<&String> = scores.keys().collect();
    Ok(json!({
        "name": live["name"],
        "description": live["description"],
        "schedulerConfig": config,
        "namespaces": of("Namespace"),
        "nodes": of("Node"),
        "pods": of("Pod"),
        "objects": others,
        "pod": live["pod"],
        "expected": {
            "feasible": feasible,
            "scores": scores,
            "message": expected["message"].as_str().unwrap_or(""),
            "node": node,
        }
    }))
}
