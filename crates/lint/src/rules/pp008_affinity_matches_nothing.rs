//! PP008 affinity-matches-nothing: required pod affinity whose selector
//! matches no pod in scope (the manifests, and the `--cluster` snapshot
//! when given) and not the pod itself. The pod waits for a pod that does
//! not exist: it can never schedule. (When the pod matches its own term,
//! kube-scheduler lets the first pod of the group through: that is PP002's
//! territory, not this rule's.)

use crate::finding::{RuleInfo, Severity};
use crate::rules::{finding, selector_text};
use crate::world::{Controller, TermKind, World};
use crate::{LintError, LintOptions, Sink};

/// PP008.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP008",
    name: "affinity-matches-nothing",
    summary: "required pod affinity whose selector matches no pod in scope and not the pod itself",
    default_severity: Severity::Error,
};

/// Reports required affinity terms nothing can satisfy.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        for t in s
            .terms()
            .iter()
            .filter(|t| t.kind == TermKind::RequiredAffinity)
        {
            if world.term_selects(t.compiled, &s.pod)
                || world
                    .members
                    .iter()
                    .any(|m| world.term_selects(t.compiled, &m.pod))
            {
                continue;
            }
            let scope = if world.snapshot.is_some() {
                "the manifests or the cluster"
            } else {
                "the manifests"
            };
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &t.path.child("labelSelector")),
                "matches no pod",
                if matches!(s.controller, Controller::Pod) {
                    format!(
                        "required pod affinity `{}` matches no pod in {scope} and not the pod itself: it can never be scheduled",
                        selector_text(t.api.label_selector.as_ref()),
                    )
                } else {
                    format!(
                        "required pod affinity `{}` matches no pod in {scope} and not {}'s own pods: they can never be scheduled",
                        selector_text(t.api.label_selector.as_ref()),
                        s.workload
                    )
                },
            );
            if world.snapshot.is_none() {
                f = f.with_severity(Severity::Warning);
                f.notes.push(
                    "only the manifests were checked: pass --cluster with a snapshot to check against the pods that run"
                        .to_string(),
                );
            }
            f.help = Some(
                "point the selector at the pods to run next to, or use preferred affinity if they may be absent"
                    .to_string(),
            );
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}
