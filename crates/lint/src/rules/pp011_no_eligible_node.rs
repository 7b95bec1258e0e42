//! PP011 no-eligible-node: no known node passes the pods' nodeSelector,
//! required node affinity, taint tolerations and cordons (the engine's
//! NodeAffinity, TaintToleration and NodeUnschedulable filters): every pod
//! of the workload stays Pending. Checked only when nodes are known (in the
//! manifests or the `--cluster` snapshot).
//!
//! When `--cluster` nodes lack the labels every kubelet sets, the rule says
//! so once, as a note ([`kubelet_labels_note`]), and every rule checks the
//! nodes as their kubelet would have labelled them ([`crate::kubelet`]).

use podplace_engine::plugins::{node_affinity, taint_toleration};
use podplace_model::validate::FieldPath;

use crate::finding::{Finding, RuleInfo, Severity};
use crate::kubelet::Completed;
use crate::rules::finding;
use crate::world::{Controller, World};
use crate::{LintError, LintOptions, Sink};

/// PP011.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP011",
    name: "no-eligible-node",
    summary: "no node passes the pods' node selector, node affinity and taint tolerations",
    default_severity: Severity::Error,
};

/// Reports workloads no node can take.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes() {
        return Ok(());
    }
    for s in &world.subjects {
        if !world.eligible_nodes(&s.pod).is_empty() {
            continue;
        }
        let nodes = world.state.nodes();
        let affinity_misses = nodes
            .iter()
            .filter(|n| !node_affinity::matches(&s.pod, n, world.state.interner()))
            .count();
        let tainted = nodes
            .iter()
            .filter(|n| taint_toleration::untolerated_taint(&s.pod, n).is_some())
            .count();
        let cordoned = nodes.iter().filter(|n| n.unschedulable).count();
        let enforced = world.enforced_affinity(&s.pod).map(|(required, names)| {
            nodes
                .iter()
                .filter(|n| !required.matches(&n.labels, n.name_sym, &names))
                .count()
        });
        let path = world.first_written(
            &s.origin,
            &[
                s.spec_path.child("nodeSelector"),
                s.spec_path.child("affinity").child("nodeAffinity"),
                s.spec_path.child("tolerations"),
                FieldPath::of(&["metadata", "name"]),
            ],
        );
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, &path),
            "no node passes this",
            format!(
                "none of the {} node(s) can run pods of {}: they stay Pending",
                nodes.len(),
                s.workload
            ),
        );
        if matches!(s.controller, Controller::DaemonSet) {
            f = f.with_severity(Severity::Warning);
            f.message = format!(
                "none of the {} node(s) can run pods of {}: it runs nowhere",
                nodes.len(),
                s.workload
            );
        }
        f.notes.push(format!(
            "{affinity_misses} node(s) fail the node selector or node affinity, {tainted} have taints the pods do not tolerate, \
             {cordoned} are cordoned"
        ));
        if let Some(excluded) = enforced.filter(|&n| n > 0) {
            let profile = if s.pod.scheduler_name.is_empty() {
                "default-scheduler"
            } else {
                &*s.pod.scheduler_name
            };
            f.notes.push(format!(
                "{excluded} node(s) are excluded by scheduler profile {profile}'s addedAffinity \
                 (NodeAffinityArgs, --scheduler-config): kube-scheduler enforces it on every pod of the profile"
            ));
        }
        f.help = Some(if enforced == Some(nodes.len()) {
            "the scheduler profile's addedAffinity leaves no node: change it in --scheduler-config, or add nodes it allows"
                .to_string()
        } else {
            "check the node labels the selector asks for, or add the tolerations the nodes' taints require".to_string()
        });
        sink.push(&s.ignored, f);
    }
    Ok(())
}

/// The one note for `--cluster` nodes that lack kubelet labels: which
/// nodes, which labels, what lint assumed, and which workloads select
/// those labels (they would stay Pending on the nodes as written).
pub fn kubelet_labels_note(world: &World<'_>, completed: &Completed) -> Finding {
    let mut keys: Vec<&str> = completed
        .nodes
        .iter()
        .flat_map(|(_, _, k)| k.iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let (first, origin, _) = &completed.nodes[0];
    let names: Vec<&str> = completed.nodes.iter().map(|(n, ..)| n.as_str()).collect();
    let mut f = finding(
        &INFO,
        &format!("Node/{first}"),
        world.locate(origin, &FieldPath::of(&["metadata", "labels"])),
        "no kubelet labels",
        format!(
            "{} of the cluster's {} node(s) lack labels every kubelet sets ({}): checked as if their kubelet had set them",
            completed.nodes.len(),
            world.state.nodes().len(),
            keys.join(", ")
        ),
    )
    .with_severity(Severity::Note);
    f.notes.push(format!(
        "nodes without them: {}; assumed kubernetes.io/hostname = the node's name, kubernetes.io/os and kubernetes.io/arch from status.nodeInfo (else linux, amd64)",
        names.join(", ")
    ));
    let selecting: Vec<String> = world
        .subjects
        .iter()
        .filter(|s| selects_any(s.spec, &keys))
        .map(|s| s.workload.to_string())
        .collect();
    if !selecting.is_empty() {
        f.notes.push(format!(
            "pods of {} select these labels and would stay Pending on the nodes as written",
            selecting.join(", ")
        ));
    }
    f.help = Some(
        "give lint the nodes as the cluster has them (`kubectl get nodes -o yaml` or `podplace snapshot`), not written by hand"
            .to_string(),
    );
    f
}

/// Whether a pod spec's nodeSelector or required node affinity names one of `keys`.
fn selects_any(spec: &k8s_openapi::api::core::v1::PodSpec, keys: &[&str]) -> bool {
    let in_selector = spec
        .node_selector
        .as_ref()
        .is_some_and(|m| m.keys().any(|k| keys.contains(&k.as_str())));
    let in_affinity = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|r| {
            r.node_selector_terms.iter().any(|t| {
                t.match_expressions
                    .iter()
                    .flatten()
                    .any(|e| keys.contains(&e.key.as_str()))
            })
        });
    in_selector || in_affinity
}
