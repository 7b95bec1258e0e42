//! Runs kube-scheduler conformance cases (`../shared/conformance/*.json`):
//! each case is a cluster, a pod, and what the real kube-scheduler v1.36
//! computed for it. A case passes when every node's filter verdict, every
//! feasible node's per-plugin scores and the FailedScheduling message match.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use podplace_model::objects::Pod;
use serde::Deserialize;

use crate::cache::SchedulerCache;
use crate::cycle::{schedule, Outcome};
use crate::state::ClusterState;

/// One case file.
#[derive(Debug, Deserialize)]
pub struct Case {
    /// Case name.
    pub name: String,
    /// Namespaces.
    #[serde(default)]
    pub namespaces: Vec<core::Namespace>,
    /// Nodes.
    #[serde(default)]
    pub nodes: Vec<core::Node>,
    /// Running pods (all bound).
    #[serde(default)]
    pub pods: Vec<core::Pod>,
    /// Services, ReplicaSets, StatefulSets, ... as raw objects.
    #[serde(default)]
    pub objects: Vec<serde_json::Value>,
    /// The pod to schedule.
    pub pod: core::Pod,
    /// kube-scheduler's answer.
    pub expected: Expected,
}

/// kube-scheduler's answer for a case.
#[derive(Debug, Deserialize)]
pub struct Expected {
    /// Filter verdict per node.
    pub filter: BTreeMap<String, ExpectedStatus>,
    /// Weighted scores per feasible node (plugin → score, plus `total`).
    #[serde(default)]
    pub scores: BTreeMap<String, BTreeMap<String, i64>>,
    /// FailedScheduling message, or empty.
    #[serde(default)]
    pub message: String,
    /// Names of the nodes that passed every filter, sorted.
    #[serde(default)]
    pub feasible: Option<Vec<String>>,
}

/// One node's expected filter verdict.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct ExpectedStatus {
    /// `Success`, `Unschedulable` or `UnschedulableAndUnresolvable`.
    pub code: String,
    /// The rejecting plugin or empty.
    #[serde(default)]
    pub plugin: String,
    /// The reasons in order.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// A case's outcome.
#[derive(Debug)]
pub struct CaseReport {
    /// Case name (or file name when it could not be read).
    pub name: String,
    /// Human-readable differences; empty when the case passed.
    pub mismatches: Vec<String>,
}

/// Builds the case's cluster state and the compiled pod to schedule.
pub fn build(case: &Case) -> Result<(ClusterState, Pod), String> {
    let mut cluster = ClusterState::new();
    for ns in &case.namespaces {
        cluster.add_namespace(ns);
    }
    for node in &case.nodes {
        cluster.add_node(node).map_err(|e| format!("node: {e}"))?;
    }
    for obj in &case.objects {
        let kind = obj.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        let bad = |e: serde_json::Error| format!("{kind}: {e}");
        match kind {
            "Service" => cluster.add_service(&serde_json::from_value(obj.clone()).map_err(bad)?),
            "ReplicationController" => cluster
                .add_replication_controller(&serde_json::from_value(obj.clone()).map_err(bad)?),
            "ReplicaSet" => {
                let rs: apps::ReplicaSet = serde_json::from_value(obj.clone()).map_err(bad)?;
                cluster.add_replica_set(&rs).map_err(|e| e.to_string())?;
            }
            "StatefulSet" => {
                let sts: apps::StatefulSet = serde_json::from_value(obj.clone()).map_err(bad)?;
                cluster.add_stateful_set(&sts).map_err(|e| e.to_string())?;
            }
            _ => {}
        }
    }
    for pod in &case.pods {
        cluster.add_api_pod(pod).map_err(|e| format!("pod: {e}"))?;
    }
    let pod = cluster
        .compile_pod(&case.pod)
        .map_err(|e| format!("pod: {e}"))?;
    Ok((cluster, pod))
}

/// Compares an outcome with the expected answer, listing every difference.
pub fn compare(cluster: &ClusterState, outcome: &Outcome, expected: &Expected) -> Vec<String> {
    let mut out = Vec::new();
    for id in cluster.node_ids() {
        let name = &*cluster.node(id).name;
        let got = &outcome.statuses[id.index()];
        let got = ExpectedStatus {
            code: got.code.as_str().to_string(),
            plugin: got.plugin.map(|p| p.name().to_string()).unwrap_or_default(),
            reasons: got.reasons.iter().map(|r| r.to_string()).collect(),
        };
        match expected.filter.get(name) {
            Some(want) if *want == got => {}
            Some(want) => out.push(format!(
                "filter {name}:\n  - {} {} {:?}\n  + {} {} {:?}",
                want.code, want.plugin, want.reasons, got.code, got.plugin, got.reasons
            )),
            None => out.push(format!("filter {name}: node not in expected results")),
        }
    }
    let mut got_scores: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for s in &outcome.scores {
        let mut m: BTreeMap<String, i64> = s
            .plugins
            .iter()
            .map(|(p, v)| (p.name().to_string(), *v))
            .collect();
        m.insert("total".to_string(), s.total);
        got_scores.insert(cluster.node(s.node).name.to_string(), m);
    }
    let names: std::collections::BTreeSet<&String> =
        got_scores.keys().chain(expected.scores.keys()).collect();
    for name in names {
        let (want, got) = (expected.scores.get(name), got_scores.get(name));
        if want != got {
            let mut line = format!("scores {name}:");
            let plugins: std::collections::BTreeSet<&String> = want
                .into_iter()
                .flatten()
                .chain(got.into_iter().flatten())
                .map(|(k, _)| k)
                .collect();
            for p in plugins {
                let w = want.and_then(|m| m.get(p));
                let g = got.and_then(|m| m.get(p));
                if w != g {
                    let show = |v: Option<&i64>| v.map_or("absent".to_string(), |v| v.to_string());
                    let _ = write!(line, " {p} {} -> {}", show(w), show(g));
                }
            }
            out.push(line);
        }
    }
    if let Some(want) = &expected.feasible {
        let mut got: Vec<String> = outcome
            .feasible
            .iter()
            .map(|&n| cluster.node(n).name.to_string())
            .collect();
        got.sort();
        if *want != got {
            out.push(format!("feasible:\n  - {want:?}\n  + {got:?}"));
        }
    }
    if outcome.message != expected.message {
        out.push(format!(
            "message:\n  - {}\n  + {}",
            expected.message, outcome.message
        ));
    }
    out
}

/// Runs one case file.
pub fn run_file(path: &Path) -> CaseReport {
    let fallback = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return CaseReport {
                name: fallback,
                mismatches: vec![format!("cannot read {}: {e}", path.display())],
            }
        }
    };
    let case: Case = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            return CaseReport {
                name: fallback,
                mismatches: vec![format!("{}: {e}", path.display())],
            }
        }
    };
    let mismatches = match build(&case) {
        Ok((cluster, pod)) => {
            let outcome = schedule(&cluster, &mut SchedulerCache::new(), &pod, 0);
            compare(&cluster, &outcome, &case.expected)
        }
        Err(e) => vec![format!("cannot build case: {e}")],
    };
    CaseReport {
        name: case.name,
        mismatches,
    }
}

/// The case files in a directory, sorted by name.
pub fn case_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}
