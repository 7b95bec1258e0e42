//! PP002 negative-selector-in-pod-affinity: `NotIn` or `DoesNotExist` in a
//! pod *affinity* term (story 3, "doesnotexist"). Pod affinity asks for a
//! domain that already runs a pod *matching* the selector; a negative
//! selector does not keep the pod away from the pods it names, and when no
//! pod matches while the pod matches its own term, kube-scheduler lets it
//! through anywhere (the first-pod-of-a-group exception): the rule
//! constrains nothing. The fix is the anti-affinity rewrite with `In` /
//! `Exists`, which keeps the pod away from the pods the author named.

use k8s_openapi::api::core::v1::{Affinity, PodAffinityTerm, WeightedPodAffinityTerm};
use podplace_model::workloads::WorkloadKind;
use serde_json::Value;

use crate::finding::{Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list, selector_text};
use crate::world::{Subject, TermKind, TermRef, World};
use crate::{LintError, LintOptions, Sink};

/// PP002.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP002",
    name: "negative-selector-in-pod-affinity",
    summary: "NotIn or DoesNotExist in a pod affinity term, which keeps the pod away from nothing",
    default_severity: Severity::Warning,
};

fn negated(operator: &str) -> Option<&'static str> {
    match operator {
        "NotIn" => Some("In"),
        "DoesNotExist" => Some("Exists"),
        _ => None,
    }
}

/// Reports pod affinity terms with negative requirements.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        for t in s.terms().iter().filter(|t| !t.kind.is_anti()) {
            let Some(selector) = t.api.label_selector.as_ref() else {
                continue;
            };
            let exprs = selector.match_expressions.as_deref().unwrap_or(&[]);
            let Some(first) = exprs.iter().position(|e| negated(&e.operator).is_some()) else {
                continue;
            };
            let expr = &exprs[first];
            let path = t
                .path
                .child("labelSelector")
                .child("matchExpressions")
                .index(first)
                .child("operator");
            let key = world.text(t.compiled.topology_key);
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &path),
                format!("`{}` in pod affinity", expr.operator),
                format!(
                    "{} with a negative selector (`{}`) does not keep the pod away from anything",
                    t.kind.describe(),
                    selector_text(Some(selector))
                ),
            );
            if !t.kind.is_required() {
                f = f.with_severity(Severity::Note);
            }
            f.notes.push(format!(
                "pod affinity asks for a {key} domain that already runs a pod *matching* the selector, \
                 here a pod whose labels satisfy `{}`",
                selector_text(Some(selector))
            ));
            let matched: Vec<String> = world
                .members
                .iter()
                .filter(|m| m.workload != s.workload && world.term_selects(t.compiled, &m.pod))
                .map(|m| m.workload.to_string())
                .collect();
            if matched.is_empty() {
                if t.kind.is_required() && world.term_selects(t.compiled, &s.pod) {
                    let (who, them) = if s.kind == WorkloadKind::Pod {
                        (format!("{} matches", s.workload), "it")
                    } else {
                        (format!("{}'s own pods match", s.workload), "them")
                    };
                    f.notes.push(format!(
                        "no pod in scope matches it and {who} it, so kube-scheduler lets {them} through on any node \
                         (the exception for the first pod of a group): the rule constrains nothing"
                    ));
                } else {
                    f.notes.push("no pod in scope matches it".to_string());
                }
            } else {
                f.notes.push(format!(
                    "it matches pods of {}, so the pod is placed next to them",
                    list(&matched, 3)
                ));
            }
            let all_negative = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
                && exprs.iter().all(|e| negated(&e.operator).is_some());
            if all_negative {
                if let Some(fix) = rewrite(s, t) {
                    f.fix = Some(fix);
                }
            } else {
                f.help = Some(
                    "to keep the pod away from pods with these labels, move the negated requirements into a \
                     podAntiAffinity term (NotIn → In, DoesNotExist → Exists)"
                        .to_string(),
                );
            }
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}

/// The podAntiAffinity rewrite: the term moves to anti-affinity with its
/// requirements negated (`NotIn` → `In`, `DoesNotExist` → `Exists`).
fn rewrite(s: &Subject<'_>, t: &TermRef<'_>) -> Option<Fix> {
    let affinity: &Affinity = s.spec.affinity.as_ref()?;
    let mut term: PodAffinityTerm = t.api.clone();
    let selector = term.label_selector.as_mut()?;
    for e in selector.match_expressions.iter_mut().flatten() {
        e.operator = negated(&e.operator)?.to_string();
    }
    let rewritten = selector_text(Some(selector));
    let pa = affinity.pod_affinity.clone().unwrap_or_default();
    let mut paa = affinity.pod_anti_affinity.clone().unwrap_or_default();
    let mut pa_after = pa.clone();
    if t.kind == TermKind::RequiredAffinity {
        if let Some(l) = pa_after
            .required_during_scheduling_ignored_during_execution
            .as_mut()
        {
            if t.index < l.len() {
                l.remove(t.index);
            }
        }
        paa.required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
    } else {
        let weight = pa
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .and_then(|l| l.get(t.index))
            .map_or(1, |w| w.weight);
        if let Some(l) = pa_after
            .preferred_during_scheduling_ignored_during_execution
            .as_mut()
        {
            if t.index < l.len() {
                l.remove(t.index);
            }
        }
        paa.preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(WeightedPodAffinityTerm {
                weight,
                pod_affinity_term: term,
            });
    }
    let base = s.spec_path.child("affinity");
    let empty = |l: &Option<Vec<_>>| l.as_ref().is_none_or(|l: &Vec<_>| l.is_empty());
    let pa_value = if empty(&pa_after.required_during_scheduling_ignored_during_execution)
        && pa_after
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .is_none_or(|l| l.is_empty())
    {
        Value::Null
    } else {
        serde_json::to_value(&pa_after).ok()?
    };
    let patch = MergePatch::new()
        .set(&base.child("podAffinity"), pa_value)
        .set_value(&base.child("podAntiAffinity"), &paa);
    Some(Fix {
        description: format!(
            "rewrite as pod anti-affinity with `{rewritten}`: keeps the pod out of {} domains that run such a pod",
            t.api.topology_key
        ),
        patch: patch.to_yaml(),
        verified: None,
    })
}
