//! Runs kube-scheduler conformance cases (`../shared/conformance/*.json`):
//! each case is a cluster, a pod, and what the real kube-scheduler v1.36
//! computed for it. A case passes when every node's filter verdict, every
//! feasible node's per-plugin scores and the FailedScheduling message match.
//!
//! A case may carry a KubeSchedulerConfiguration
//! (`kubescheduler.config.k8s.io/v1`): under the key `schedulerConfig`, or
//! as any other top-level value (or entry of `objects`) whose `kind` is
//! `KubeSchedulerConfiguration`. The case is then judged with its profiles
//! (the pod's `spec.schedulerName` picks one) and its
//! `percentageOfNodesToScore`, each case with a scheduler of its own, so
//! one process judges differently configured cases side by side. The
//! engine does not read configurations itself (podplace-config does, and
//! depends on the engine): the caller passes a reader in a [`Judge`].
//! Every case is judged as a freshly started kube-scheduler would schedule
//! it: with 100 nodes or more it samples (`percentageOfNodesToScore`) from
//! start index 0.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use podplace_model::objects::Pod;
use serde::Deserialize;

use crate::cache::SchedulerCache;
use crate::cycle::{schedule, Outcome};
use crate::profile::SchedulerSetup;
use crate::state::ClusterState;

/// The key a case's KubeSchedulerConfiguration is documented under.
pub const CONFIG_KEY: &str = "schedulerConfig";
/// The kind that marks a value as a scheduler configuration wherever it
/// sits at a case's top level.
pub const CONFIG_KIND: &str = "KubeSchedulerConfiguration";

/// Turns a case's KubeSchedulerConfiguration into a scheduler setup: given
/// a label for error messages (`FILE#schedulerConfig`) and the value as the
/// case holds it; the error is kube-scheduler's words.
pub type ReadConfig<'a> =
    &'a (dyn Fn(&str, &serde_json::Value) -> Result<SchedulerSetup, String> + Sync);

/// How cases are judged: the scheduler of cases without a configuration,
/// and the reader of the configurations cases carry.
#[derive(Clone, Copy, Default)]
pub struct Judge<'a> {
    /// The scheduler of a case without a configuration (`None`: the
    /// default profile).
    pub setup: Option<&'a SchedulerSetup>,
    /// Reads a case's configuration (`None`: a case that carries one
    /// fails, saying a reader is needed).
    pub read_config: Option<ReadConfig<'a>>,
}

impl std::fmt::Debug for Judge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("setup", &self.setup)
            .field("read_config", &self.read_config.is_some())
            .finish()
    }
}

/// The scheduler configuration a case carries, if any: its `schedulerConfig`,
/// else the first top-level value, then the first `objects` entry, whose
/// `kind` is `KubeSchedulerConfiguration`. Returns where it was found too.
pub fn find_config(case: &serde_json::Value) -> Option<(String, &serde_json::Value)> {
    let is_config =
        |v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()) == Some(CONFIG_KIND);
    let top = case.as_object()?;
    if let Some(v) = top.get(CONFIG_KEY).filter(|v| !v.is_null()) {
        return Some((CONFIG_KEY.to_string(), v));
    }
    if let Some((k, v)) = top.iter().find(|(_, v)| is_config(v)) {
        return Some((k.clone(), v));
    }
    let objects = top.get("objects")?.as_array()?;
    let (i, v) = objects.iter().enumerate().find(|(_, v)| is_config(v))?;
    Some((format!("objects[{i}]"), v))
}

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
    /// Filter verdict per node. A case recorded on a running kube-scheduler
    /// (which logs scores, not verdicts) may leave it out and give
    /// `feasible` instead.
    #[serde(default)]
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
    /// The node the real scheduler bound the pod to, when the case was
    /// recorded on a running kube-scheduler: podplace's node or one tied
    /// with it must be it.
    #[serde(default)]
    pub node: Option<String>,
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
        if expected.filter.is_empty() && expected.feasible.is_some() {
            break;
        }
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
    if let Some(want) = &expected.node {
        let name = |n| cluster.node(n).name.to_string();
        let best: Vec<String> = outcome.best.iter().map(|&n| name(n)).collect();
        if !best.contains(want) {
            out.push(format!(
                "node:\n  - {want}\n  + {} (tied: {best:?})",
                outcome.chosen.map_or("none".to_string(), name)
            ));
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

/// Runs one case file with the default profile (a case carrying a
/// configuration fails: use [`run_file_with`] and a reader).
pub fn run_file(path: &Path) -> CaseReport {
    run_file_with(path, Judge::default())
}

/// Runs one case file, with the case's own scheduler configuration when it
/// carries one (read by `judge.read_config`), else `judge.setup`.
pub fn run_file_with(path: &Path, judge: Judge<'_>) -> CaseReport {
    let fallback = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let fail = |name: String, m: String| CaseReport {
        name,
        mismatches: vec![m],
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(fallback, format!("cannot read {}: {e}", path.display())),
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(fallback, format!("{}: {e}", path.display())),
    };
    let setup = match find_config(&value) {
        None => judge.setup.cloned().unwrap_or_default(),
        Some((at, config)) => {
            let label = format!("{}#{at}", path.display());
            match judge.read_config {
                None => {
                    return fail(
                        fallback,
                        format!("{label}: the case carries a scheduler configuration and no reader was given"),
                    )
                }
                Some(read) => match read(&label, config) {
                    Ok(setup) => setup,
                    Err(e) => return fail(fallback, e),
                },
            }
        }
    };
    let case: Case = match serde_json::from_value(value) {
        Ok(c) => c,
        Err(e) => return fail(fallback, format!("{}: {e}", path.display())),
    };
    CaseReport {
        name: case.name.clone(),
        mismatches: judge_case(&case, &setup),
    }
}

/// Judges one case with a scheduler: a fresh one, as kube-scheduler is
/// when the case's pod is its first (node sampling from start index 0).
pub fn judge_case(case: &Case, setup: &SchedulerSetup) -> Vec<String> {
    match build(case) {
        Ok((cluster, pod)) => {
            let setup = setup.clone().sampled(true);
            let mut cache = SchedulerCache::for_setup(&setup);
            let outcome = schedule(&cluster, &mut cache, &pod, 0);
            compare(&cluster, &outcome, &case.expected)
        }
        Err(e) => vec![format!("cannot build case: {e}")],
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

#[cfg(test)]
mod tests {
    use super::find_config;
    use serde_json::json;

    /// Where a case's configuration is found, whatever the corpus calls it.
    #[test]
    fn a_configuration_is_found_under_the_key_or_by_its_kind() {
        let ksc = json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"});
        let table = [
            (json!({"name": "a"}), None),
            (json!({"schedulerConfig": ksc}), Some("schedulerConfig")),
            (json!({"schedulerConfig": null}), None),
            (json!({"config": ksc}), Some("config")),
            (
                json!({"kubeSchedulerConfiguration": ksc}),
                Some("kubeSchedulerConfiguration"),
            ),
            (
                json!({"objects": [{"kind": "Service"}, ksc]}),
                Some("objects[1]"),
            ),
            (json!({"objects": [{"kind": "Service"}]}), None),
        ];
        for (case, want) in table {
            let got = find_config(&case).map(|(at, _)| at);
            assert_eq!(got.as_deref(), want, "{case}");
        }
    }
}
