//! PP010 cluster-wide-selector: an affinity term with `namespaceSelector:
//! {}` (every namespace) whose selector matches pods outside the owner's
//! namespace. Usually the author wanted the owner's namespace (the default
//! when neither `namespaces` nor `namespaceSelector` is set) and the term
//! now reaches other teams' pods. The fix removes the namespaceSelector.

use serde_json::Value;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::pp001_selector_too_broad::term_list;
use crate::rules::{finding, list};
use crate::world::World;
use crate::{LintError, LintOptions, Sink};

/// PP010.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP010",
    name: "cluster-wide-selector",
    summary:
        "namespaceSelector: {} with a selector that matches pods outside the owner's namespace",
    default_severity: Severity::Warning,
};

/// Reports terms reaching into other namespaces through `namespaceSelector: {}`.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        for t in s.terms() {
            if !t.compiled.namespace_selector.is_everything() {
                continue;
            }
            let mut seen = Vec::new();
            let outside: Vec<_> = world
                .members
                .iter()
                .filter(|m| m.pod.namespace != s.pod.namespace)
                .filter(|m| world.term_selects(t.compiled, &m.pod))
                .filter(|m| {
                    let new = !seen.contains(&&m.workload);
                    seen.push(&m.workload);
                    new
                })
                .collect();
            if outside.is_empty() {
                continue;
            }
            let names: Vec<String> = outside.iter().map(|m| m.workload.to_string()).collect();
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &t.path.child("namespaceSelector")),
                "selects every namespace",
                format!(
                    "`namespaceSelector: {{}}` makes this {} term match pods in every namespace: it matches {}",
                    t.kind.describe(),
                    list(&names, 3)
                ),
            );
            for m in outside.iter().take(5) {
                f.related.push(Related {
                    message: format!("pods of {} match the term", m.workload),
                    object: m.workload.to_string(),
                    location: m
                        .from_manifests
                        .then(|| world.locate(&m.origin, &m.labels_path)),
                });
            }
            let mut items = term_list(s, &t);
            let target = items.get_mut(t.index).and_then(|item| {
                if t.kind.is_required() {
                    Some(item)
                } else {
                    item.get_mut("podAffinityTerm")
                }
            });
            if let Some(obj) = target.and_then(Value::as_object_mut) {
                obj.remove("namespaceSelector");
                f.fix = Some(Fix {
                    description: format!(
                        "drop namespaceSelector so the term applies to namespace {} only (list other namespaces under `namespaces` if needed)",
                        s.namespace
                    ),
                    patch: MergePatch::new()
                        .set(&t.list_path, Value::Array(items))
                        .to_yaml(),
                    verified: None,
                });
            }
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}
