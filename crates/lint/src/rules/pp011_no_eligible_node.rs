//! PP011 no-eligible-node: no known node passes the pods' nodeSelector,
//! required node affinity, taint tolerations and cordons (the engine's
//! NodeAffinity, TaintToleration and NodeUnschedulable filters): every pod
//! of the workload stays Pending. Checked only when nodes are known (in the
//! manifests or the `--cluster` snapshot).

use podplace_engine::plugins::{node_affinity, taint_toleration};
use podplace_model::validate::FieldPath;

use crate::finding::{RuleInfo, Severity};
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
        f.help = Some(
            "check the node labels the selector asks for, or add the tolerations the nodes' taints require".to_string(),
        );
        sink.push(&s.ignored, f);
    }
    Ok(())
}
