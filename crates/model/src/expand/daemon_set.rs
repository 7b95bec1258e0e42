//! The DaemonSet controller's pods: one per eligible node, pinned to it by
//! node affinity, tolerating the node conditions it adds.

use std::collections::HashSet;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, PodTemplateSpec, Taint, Toleration,
};

use super::{is_active, pod_from_template, NewPods, Owner, PodIndex};
use crate::inventory::{Inventory, Sourced};
use crate::naming::{generate_name_base, pod_template_hash};
use crate::workloads::WorkloadKind;

/// The template a DaemonSet's pods are made from: its own, with the
/// tolerations the controller adds.
fn daemon_template(ds: &DaemonSet) -> PodTemplateSpec {
    let mut template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    add_daemon_tolerations(template.spec.get_or_insert_with(Default::default));
    template
}

/// Whether the DaemonSet runs a pod on `node` (its node selector and
/// affinity, and the node's taints against its tolerations).
pub fn should_run(ds: &DaemonSet, node: &Node) -> bool {
    ds.spec.is_some() && should_run_with(&daemon_template(ds).spec.unwrap_or_default(), node)
}

/// The pod named `name` for `node` at `revision`, as the DaemonSet
/// controller creates it (before admission).
pub fn new_pod(ds: &DaemonSet, node: &str, revision: &str, name: String) -> Pod {
    let owner = Owner::new(WorkloadKind::DaemonSet, &ds.metadata);
    let generation = ds
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("deprecated.daemonset.template.generation").cloned())
        .or_else(|| ds.metadata.generation.map(|g| g.to_string()))
        .unwrap_or_else(|| "1".to_string());
    let mut pod = pod_from_template(
        &daemon_template(ds),
        owner.namespace,
        name,
        Some(generate_name_base(owner.name)),
        owner.reference(),
        &[
            ("controller-revision-hash", revision.to_string()),
            ("pod-template-generation", generation),
        ],
    );
    if let Some(ps) = pod.spec.as_mut() {
        pin_to_node(ps, node);
    }
    pod
}

/// Adds a pod on every eligible node a DaemonSet does not cover.
pub(super) fn expand(inv: &Inventory, index: &mut PodIndex, new_pods: &mut NewPods) {
    for ds in &inv.daemon_sets {
        let Some(spec) = ds.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new(WorkloadKind::DaemonSet, &ds.object.metadata);
        let owned = index.owned(&inv.pods, &owner);
        let covered: HashSet<String> = owned
            .iter()
            .filter(|p| is_active(p))
            .filter_map(|p| daemon_pod_node(p))
            .collect();
        let revision = owned
            .iter()
            .find_map(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash"))
                    .cloned()
            })
            .unwrap_or_else(|| pod_template_hash(&spec.template));
        let pod_spec = daemon_template(&ds.object).spec.unwrap_or_default();
        for node in &inv.nodes {
            if new_pods.full() {
                break;
            }
            let node_name = node.object.metadata.name.clone().unwrap_or_default();
            if covered.contains(&node_name) || !should_run_with(&pod_spec, &node.object) {
                continue;
            }
            let name = index.fresh_name(owner.namespace, &generate_name_base(owner.name));
            new_pods.push(Sourced {
                object: new_pod(&ds.object, &node_name, &revision, name),
                origin: ds.origin.clone(),
            });
        }
    }
}

/// The node a DaemonSet pod is for: its nodeName, or the node its
/// `matchFields metadata.name` affinity pins it to.
fn daemon_pod_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(n.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().find_map(|t| {
        t.match_fields.iter().flatten().find_map(|r| {
            (r.key == "metadata.name" && r.operator == "In")
                .then(|| r.values.as_ref().and_then(|v| v.first().cloned()))
                .flatten()
        })
    })
}

/// The tolerations the DaemonSet controller adds to its pods
/// (`AddOrUpdateDaemonPodTolerations`).
fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut add = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        add.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in add {
        let present = tolerations.iter().any(|t| {
            t.key.as_deref() == Some(key)
                && t.effect.as_deref() == Some(effect)
                && t.operator.as_deref() == Some("Exists")
        });
        if !present {
            tolerations.push(Toleration {
                key: Some(key.to_string()),
                operator: Some("Exists".to_string()),
                effect: Some(effect.to_string()),
                ..Default::default()
            });
        }
    }
}

/// Replaces the pod's required node affinity with `metadata.name In [node]`,
/// as the DaemonSet controller does (`ReplaceDaemonSetPodNodeNameNodeAffinity`).
fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let term = NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".to_string(),
            operator: "In".to_string(),
            values: Some(vec![node.to_string()]),
        }]),
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    match na
        .required_during_scheduling_ignored_during_execution
        .as_mut()
    {
        Some(sel) => sel.node_selector_terms = vec![term],
        None => {
            na.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
                node_selector_terms: vec![term],
            })
        }
    }
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (value, values.first()) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) => {
                    if req.operator == "Gt" {
                        v > b
                    } else {
                        v < b
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.as_ref();
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.and_then(|l| l.get(&r.key)).map(String::as_str)))
        && fields.iter().all(|r| {
            let value = (r.key == "metadata.name")
                .then_some(node.metadata.name.as_deref())
                .flatten();
            requirement_matches(r, value)
        })
}

fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if effect != taint.effect {
            return false;
        }
    }
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("Equal");
    if key.is_empty() {
        return op == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match op {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// The DaemonSet controller's `nodeShouldRunDaemonPod`: node name, required
/// node affinity and nodeSelector, and NoSchedule/NoExecute taints.
fn should_run_with(spec: &PodSpec, node: &Node) -> bool {
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        if Some(n) != node.metadata.name.as_deref() {
            return false;
        }
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    if let Some(sel) = spec.node_selector.as_ref() {
        if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return false;
        }
    }
    if let Some(req) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    {
        if !req
            .node_selector_terms
            .iter()
            .any(|t| term_matches(t, node))
        {
            return false;
        }
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|taint| tolerations.iter().any(|t| tolerates(t, taint)))
}
