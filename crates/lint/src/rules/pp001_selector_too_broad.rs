//! PP001 anti-affinity-selector-too-broad: a required (anti-)affinity term
//! meant for the workload's own pods also selects the pods of *other*
//! workloads (story 1, "vault": prometheus' `component In [server]` keeps
//! Vault's pods off its nodes, because required anti-affinity is symmetric).
//!
//! Fires when the term selects the owner's own pods (so it is about them)
//! and at least one other workload's pods, in the manifests or the
//! `--cluster` snapshot. The fix narrows the selector to the owner's own
//! selector or template labels, checked with the engine's term matching to
//! select its pods and none of the others.

use serde_json::Value;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list, selector_text};
use crate::world::{Member, Subject, TermRef, World};
use crate::{LintError, LintOptions, Sink};

/// PP001.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP001",
    name: "anti-affinity-selector-too-broad",
    summary: "a required (anti-)affinity term's selector also matches pods of other workloads",
    default_severity: Severity::Warning,
};

/// Reports terms whose selector reaches other workloads' pods.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        for t in s.terms().iter().filter(|t| t.kind.is_required()) {
            if !world.term_selects(t.compiled, &s.pod) {
                continue;
            }
            let others = world.others_selected(s, t.compiled);
            if others.is_empty() {
                continue;
            }
            let names: Vec<String> = others.iter().map(|m| m.workload.to_string()).collect();
            let key = world.text(t.compiled.topology_key);
            let location = world.locate(&s.origin, &t.path.child("labelSelector"));
            let selector = selector_text(t.api.label_selector.as_ref());
            let (message, consequence) = if t.kind.is_anti() {
                (
                    format!(
                        "required anti-affinity selector `{selector}` also matches pods of {}",
                        list(&names, 3)
                    ),
                    format!(
                        "anti-affinity is symmetric: pods of {} cannot be scheduled into a {key} domain that runs a pod of {}, \
                         although the rule belongs to {}, not to them",
                        list(&names, 3),
                        s.workload,
                        s.workload
                    ),
                )
            } else {
                (
                    format!(
                        "required affinity selector `{selector}` also matches pods of {}",
                        list(&names, 3)
                    ),
                    format!(
                        "pods of {} may be placed next to pods of {} instead of next to their own",
                        s.workload,
                        list(&names, 3)
                    ),
                )
            };
            let mut f = finding(
                &INFO,
                &s.id,
                location,
                format!("also matches pods of {}", list(&names, 1)),
                message,
            );
            f.notes.push(consequence);
            // The first few are enough to see the pattern.
            for m in others.iter().take(5) {
                f.related.push(related(world, m));
            }
            match narrowed(world, s, t, &others) {
                Some(fix) => f.fix = Some(fix),
                None => {
                    f.help = Some(format!(
                        "no label of {}'s pods tells them apart from {}: add a distinguishing label to its template and select it",
                        s.workload,
                        list(&names, 3)
                    ));
                }
            }
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}

fn related(world: &World<'_>, m: &Member) -> Related {
    let source = if m.from_manifests {
        "in the manifests"
    } else {
        "in the cluster"
    };
    Related {
        message: format!(
            "pods of {} ({source}) carry {}",
            m.workload,
            world.labels_text(&m.pod.labels)
        ),
        object: m.workload.to_string(),
        location: m
            .from_manifests
            .then(|| world.locate(&m.origin, &m.labels_path)),
    }
}

/// The first of the owner's selectors that, in place of the term's,
/// selects its own pods and none of `others`.
fn narrowed(
    world: &World<'_>,
    s: &Subject<'_>,
    t: &TermRef<'_>,
    others: &[&Member],
) -> Option<Fix> {
    let (api, _) = s.own_selectors.iter().find(|(_, compiled)| {
        let mut term = t.compiled.clone();
        term.selector = compiled.clone();
        world.term_selects(&term, &s.pod) && world.others_selected(s, &term).is_empty()
    })?;
    let mut items: Vec<Value> = term_list(s, t);
    let item = items.get_mut(t.index)?;
    let target = if t.kind.is_required() {
        item
    } else {
        item.get_mut("podAffinityTerm")?
    };
    target
        .as_object_mut()?
        .insert("labelSelector".to_string(), serde_json::to_value(api).ok()?);
    let patch = MergePatch::new().set(&t.list_path, Value::Array(items));
    let names: Vec<String> = others.iter().map(|m| m.workload.to_string()).collect();
    Some(Fix {
        description: format!(
            "narrow the selector to the labels of {}'s own pods ({})",
            s.workload,
            selector_text(Some(api))
        ),
        patch: patch.to_yaml(),
        verified: Some(format!(
            "the narrowed selector matches {}'s pods and none of {} (engine term matching)",
            s.workload,
            list(&names, 3)
        )),
    })
}

/// The API list a term is in, as JSON, for a patch that replaces it.
pub(crate) fn term_list(s: &Subject<'_>, t: &TermRef<'_>) -> Vec<Value> {
    let Some(affinity) = &s.spec.affinity else {
        return Vec::new();
    };
    let value = match (t.kind.is_anti(), t.kind.is_required()) {
        (false, true) => affinity
            .pod_affinity
            .as_ref()
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .and_then(|l| serde_json::to_value(l).ok()),
        (false, false) => affinity
            .pod_affinity
            .as_ref()
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .and_then(|l| serde_json::to_value(l).ok()),
        (true, true) => affinity
            .pod_anti_affinity
            .as_ref()
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .and_then(|l| serde_json::to_value(l).ok()),
        (true, false) => affinity
            .pod_anti_affinity
            .as_ref()
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .and_then(|l| serde_json::to_value(l).ok()),
    };
    match value {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}
