//! PP005 anti-affinity-misses-own-pods: a replicated workload's
//! anti-affinity term names its own label keys but does not match its own
//! pods (`app In [web]` on pods labelled `app: web-store`), so it does not
//! spread its replicas, and it matches no other workload either: a typo or
//! a stale label, not a rule about other pods. The fix selects the
//! workload's own pods, checked with the engine's term matching.

use serde_json::Value;

use crate::finding::{Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::pp001_selector_too_broad::term_list;
use crate::rules::{finding, requirement_keys, selector_text};
use crate::world::World;
use crate::{LintError, LintOptions, Sink};

/// PP005.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP005",
    name: "anti-affinity-misses-own-pods",
    summary: "a workload's anti-affinity selector does not match its own pods, so it does not spread its replicas",
    default_severity: Severity::Warning,
};

/// Reports anti-affinity terms that look meant for the workload's own pods
/// but miss them.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        if !s.is_replicated() || s.replicas.unwrap_or(1) < 2 {
            continue;
        }
        for t in s.terms().iter().filter(|t| t.kind.is_anti()) {
            if world.term_selects(t.compiled, &s.pod) {
                continue;
            }
            let keys = requirement_keys(t.compiled.selector.requirements());
            if !keys.iter().any(|&k| s.pod.labels.has(k)) {
                continue;
            }
            if !world.others_selected(s, t.compiled).is_empty() {
                continue;
            }
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &t.path.child("labelSelector")),
                "does not match this workload's own pods",
                format!(
                    "{} selector `{}` does not match {}'s own pods ({}), so it does not spread its replicas",
                    t.kind.describe(),
                    selector_text(t.api.label_selector.as_ref()),
                    s.workload,
                    world.labels_text(&s.pod.labels)
                ),
            );
            f.notes.push(
                "it matches no other workload's pods either: it constrains nothing".to_string(),
            );
            let fixed = s.own_selectors.iter().find(|(_, compiled)| {
                let mut term = t.compiled.clone();
                term.selector = compiled.clone();
                world.term_selects(&term, &s.pod) && world.others_selected(s, &term).is_empty()
            });
            if let Some((api, _)) = fixed {
                let mut items = term_list(s, t);
                let target = items.get_mut(t.index).and_then(|item| {
                    if t.kind.is_required() {
                        Some(item)
                    } else {
                        item.get_mut("podAffinityTerm")
                    }
                });
                if let Some(obj) = target.and_then(Value::as_object_mut) {
                    obj.insert(
                        "labelSelector".to_string(),
                        serde_json::to_value(api).unwrap_or(Value::Null),
                    );
                    f.fix = Some(Fix {
                        description: format!(
                            "select {}'s own pods: {}",
                            s.workload,
                            selector_text(Some(api))
                        ),
                        patch: MergePatch::new()
                            .set(&t.list_path, Value::Array(items))
                            .to_yaml(),
                        verified: Some(
                            "the new selector matches the workload's pods and no other workload's (engine term matching)"
                                .to_string(),
                        ),
                    });
                }
            }
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}
