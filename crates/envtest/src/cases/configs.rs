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

    let name = "config-sampling-parallelism-1";
    let nodes: Vec<Value> = (0..SAMPLED_NODES)
        .map(|i| {
            let (cpu, memory) = if i == SAMPLED_BIG { ("16", "32Gi") } else { ("4", "8Gi") };
            // Zero-padded: creation order (the node tree's) is name order.
            let mut n = node(name, 0, ["za", "zb", "zc"][i % 3], cpu, memory);
            let node_name = format!("{name}-n{i:03}");
            n["metadata"]["name"] = json!(node_name);
            n["metadata"]["labels"][HOSTNAME] = json!(node_name);
            if SAMPLED_TAINTED.contains(&i) {
                n["spec"] = json!({"taints": [{"key": "reserved", "value": "ops", "effect": "NoSchedule"}]});
            }
            n
        })
        .collect();
    out.push(ConfigCase {
        spec: spec(
            name,
            "parallelism 1 and the adaptive percentageOfNodesToScore at 110 nodes: a fresh scheduler \
             visits the zone-interleaved list from index 0 and scores the first 100 feasible nodes \
             (n000-n104 without the 5 tainted n010-n014); the far bigger n107, best of the cluster, \
             is not among them",
            nodes,
            Vec::new(),
            pod(name, "web", "500m", "1Gi", json!({"app": "web"}), None),
        ),
        config: json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "parallelism": 1,
            "profiles": [{"schedulerName": "default-scheduler"}],
        }),
    });

    let name = "config-pending-added-affinity";
    let nodes: Vec<Value> = (0..3)
        .map(|i| node(name, i, ["za", "zb", "zc"][i], ["4", "4", "1"][i], "8Gi"))
        .collect();
    out.push(ConfigCase {
        spec: spec(
            name,
            "Pending under a configuration: addedAffinity keeps every pod out of zones za and zb, \
             and the one node of zc has too little cpu (FailedScheduling message recorded)",
            nodes,
            Vec::new(),
            pod(name, "web", "2", "1Gi", json!({"app": "web"}), None),
        ),
        config: config(json!([{"pluginConfig": [
            {"name": "NodeAffinity", "args": {"addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": ZONE, "operator": "NotIn", "values": ["za", "zb"]}
                ]}]}
            }}},
            fit_args(json!({"type": "MostAllocated"}))
        ]}])),
    });

    out
}

/// Nodes of the sampling case: past the 100-node floor, so a fresh
/// scheduler stops once it has found 100 feasible nodes.
const SAMPLED_NODES: usize = 110;
/// The sampling case's far bigger node, after the first 100 feasible ones.
const SAMPLED_BIG: usize = 107;
/// The sampling case's tainted (infeasible) nodes, inside the window: the
/// search visits 105 nodes to find 100.
const SAMPLED_TAINTED: std::ops::RangeInclusive<usize> = 10..=14;

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
        "nodes": of("Node").iter().map(slim_node).collect::<Vec<_>>(),
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

/// A node as the scheduler reads it: name, labels, annotations, taints,
/// unschedulable, capacity, allocatable and images. The rest (conditions,
/// addresses, node info, uid, timestamps) changes no scheduling decision
/// and would make a many-node case large.
fn slim_node(n: &Value) -> Value {
    let mut out =
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n["metadata"]["name"]}});
    for key in ["labels", "annotations"] {
        if !n["metadata"][key].is_null() {
            out["metadata"][key] = n["metadata"][key].clone();
        }
    }
    let spec: serde_json::Map<String, Value> = n["spec"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| matches!(k.as_str(), "taints" | "unschedulable"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out["spec"] = Value::Object(spec);
    let status: serde_json::Map<String, Value> = n["status"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| matches!(k.as_str(), "capacity" | "allocatable" | "images"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out["status"] = Value::Object(status);
    out
}

/// A case file's text: indented down to each top-level member's items (one
/// node, pod or object per line) and to each node's scores (one line per
/// node), so a case of a hundred nodes stays short and reviewable.
pub fn render(case: &Value) -> String {
    fn write(out: &mut String, v: &Value, path: &[&str], indent: usize) {
        let open_up = matches!(path, [] | [_] | ["expected", "scores"]);
        let pad = |n: usize| "  ".repeat(n);
        match v {
            Value::Object(m) if open_up && !m.is_empty() => {
                out.push_str("{\n");
                for (i, (k, item)) in m.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(": ");
                    let mut p = path.to_vec();
                    p.push(k);
                    write(out, item, &p, indent + 1);
                    out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
            Value::Array(a) if open_up && !a.is_empty() => {
                out.push_str("[\n");
                for (i, item) in a.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    let mut p = path.to_vec();
                    p.push("[]");
                    write(out, item, &p, indent + 1);
                    out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            _ => out.push_str(&v.to_string()),
        }
    }
    let mut out = String::new();
    write(&mut out, case, &[], 0);
    out.push('\n');
    out
}
