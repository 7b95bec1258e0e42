//! PP005 anti-affinity-misses-own-pods: a replicated workload's
//! anti-affinity term or topology spread constraint whose selector does
//! not match its own pods, so it does not spread its replicas (the
//! Kubernetes documentation's ZooKeeper tutorial labels its pods
//! `app.kubernetes.io/name: zk` but selects `app In [zk]`; charts that
//! moved to the recommended `app.kubernetes.io/*` labels and left their
//! affinity behind), and that matches no other workload's pods in the
//! manifests or the cluster either: a typo or a stale label, not a rule
//! about other pods. A selector that deliberately targets another
//! workload present stays silent, and so does one beside another rule that
//! already spreads the workload's own pods over the same topology key (it
//! is about other pods, not a broken spread).
//!
//! Confidence is high (a warning) when the selector's values name the
//! workload or one of its label values, or its keys are among the pods'
//! label keys; otherwise the finding is a note. The fix selects the
//! workload's own pods (its `spec.selector` first, then its template
//! labels), checked with the engine's term matching and, when nodes are
//! known, by placing its replicas again with the fix.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiSelector;
use podplace_model::objects::Pod;
use podplace_model::selector::LabelSelector;
use podplace_model::validate::FieldPath;
use serde_json::Value;

use crate::finding::{Finding, Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::pp001_selector_too_broad::term_list;
use crate::rules::{finding, requirement_keys, selector_text};
use crate::world::{Subject, World};
use crate::{LintError, LintOptions, Sink};

/// PP005.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP005",
    name: "anti-affinity-misses-own-pods",
    summary: "a workload's anti-affinity or spread selector does not match its own pods, so it does not spread its replicas",
    default_severity: Severity::Warning,
};

/// Why a selector looks meant for the workload's own pods, when it does.
fn meant_for_own_pods(
    world: &World<'_>,
    s: &Subject<'_>,
    api: Option<&ApiSelector>,
    compiled: &LabelSelector,
) -> Option<String> {
    let mut values: BTreeSet<&str> = BTreeSet::new();
    if let Some(api) = api {
        values.extend(api.match_labels.iter().flatten().map(|(_, v)| v.as_str()));
        for e in api.match_expressions.iter().flatten() {
            values.extend(e.values.iter().flatten().map(String::as_str));
        }
    }
    if values.contains(s.name.as_str()) {
        return Some(format!("its value `{}` is the workload's name", s.name));
    }
    for (k, v) in s.identity_labels() {
        if values.contains(v.as_str()) {
            return Some(format!("its value `{v}` is the pods' {k} label"));
        }
    }
    let keys = requirement_keys(compiled.requirements());
    keys.iter()
        .find(|&&k| s.pod.labels.has(k))
        .map(|&k| format!("its key `{}` is one of the pods' label keys", world.text(k)))
}

/// Whether another anti-affinity term or spread constraint of the workload
/// already spreads its own pods over `key`: then a term that misses them
/// is about something else (other pods that are not there), not a broken
/// spread of its replicas.
fn spread_otherwise(world: &World<'_>, s: &Subject<'_>, key: podplace_model::intern::Sym) -> bool {
    let by_term = s.terms().iter().any(|t| {
        t.kind.is_anti() && t.compiled.topology_key == key && world.term_selects(t.compiled, &s.pod)
    });
    let by_spread = s.pod.spread.iter().any(|c| {
        c.topology_key == key && c.selector.matches(&s.pod.labels, world.state.interner())
    });
    by_term || by_spread
}

/// Where the fix would put the replicas: a sentence, when nodes are known.
fn placed_again(
    world: &World<'_>,
    s: &Subject<'_>,
    fixed: &Pod,
    key: podplace_model::intern::Sym,
) -> Option<String> {
    if !world.has_nodes() {
        return None;
    }
    let replicas = usize::try_from(s.replicas.unwrap_or(1)).unwrap_or(0);
    let nodes = world.place_replicas(&s.workload, fixed, replicas, &[], key);
    let placed: Vec<_> = nodes.iter().flatten().collect();
    let domains: BTreeSet<String> = placed.iter().map(|(_, d)| d.clone()).collect();
    let pending = replicas - placed.len();
    let mut text = format!(
        "placing its {replicas} replicas again with the fix puts them in {} distinct {} domain(s) ({})",
        domains.len(),
        world.text(key),
        domains.into_iter().collect::<Vec<_>>().join(", ")
    );
    if pending > 0 {
        text.push_str(&format!(", {pending} left Pending"));
    }
    Some(text)
}

/// The fix that gives a term or constraint the workload's own selector
/// `api` by `patch`: `matched` says how the selector was checked, and
/// placing `fixed` (the pod with the fix) again over its key, when nodes are
/// known, shows what it does.
fn select_own_pods(
    world: &World<'_>,
    s: &Subject<'_>,
    api: &ApiSelector,
    patch: MergePatch,
    fixed: &Pod,
    key: podplace_model::intern::Sym,
    matched: &str,
) -> Fix {
    let mut verified = matched.to_string();
    if let Some(placed) = placed_again(world, s, fixed, key) {
        verified.push_str(&format!("; {placed}"));
    }
    Fix {
        description: format!(
            "select {}'s own pods: {}",
            s.workload,
            selector_text(Some(api))
        ),
        patch: patch.to_yaml(),
        verified: Some(verified),
    }
}

/// The first of the workload's own selectors that matches its pods and no
/// other workload's, checked with `matches_own` and `others`.
fn own_fix<'s>(
    s: &'s Subject<'_>,
    mut ok: impl FnMut(&LabelSelector) -> bool,
) -> Option<&'s (ApiSelector, LabelSelector)> {
    s.own_selectors.iter().find(|(_, compiled)| ok(compiled))
}

fn push_confidence(f: &mut Finding, why: Option<&String>) {
    match why {
        Some(why) => f.notes.push(format!(
            "confidence high: the selector looks meant for these pods ({why})"
        )),
        None => {
            f.severity = Severity::Note;
            f.notes.push(
                "confidence low: nothing in the selector names this workload or its labels; if it is meant for pods not in the manifests or the cluster, ignore this"
                    .to_string(),
            );
        }
    }
}

/// Reports anti-affinity terms and spread constraints of a replicated
/// workload that miss its own pods and every other workload's.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    for s in &world.subjects {
        if !s.is_replicated() || s.replicas.unwrap_or(1) < 2 {
            continue;
        }
        for t in s.terms().iter().filter(|t| t.kind.is_anti()) {
            if world.term_selects(t.compiled, &s.pod)
                || spread_otherwise(world, s, t.compiled.topology_key)
            {
                continue;
            }
            if !world.others_selected(s, t.compiled).is_empty() {
                continue;
            }
            let why = meant_for_own_pods(
                world,
                s,
                t.api.label_selector.as_ref(),
                &t.compiled.selector,
            );
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
            push_confidence(&mut f, why.as_ref());
            let fixed = own_fix(s, |compiled| {
                let mut term = t.compiled.clone();
                term.selector = compiled.clone();
                world.term_selects(&term, &s.pod) && world.others_selected(s, &term).is_empty()
            });
            if let Some((api, compiled)) = fixed {
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
                    let mut pod = s.pod.clone();
                    let rules = &mut pod.affinity;
                    let term = if t.kind.is_required() {
                        rules.required_anti_affinity.get_mut(t.index)
                    } else {
                        rules
                            .preferred_anti_affinity
                            .get_mut(t.index)
                            .map(|w| &mut w.term)
                    };
                    if let Some(term) = term {
                        term.selector = compiled.clone();
                    }
                    f.fix = Some(select_own_pods(
                        world,
                        s,
                        api,
                        MergePatch::new().set(&t.list_path, Value::Array(items)),
                        &pod,
                        t.compiled.topology_key,
                        "the new selector matches the workload's pods and no other workload's (engine term matching)",
                    ));
                }
            }
            sink.push(&s.ignored, f);
        }
        spread_constraints(world, s, sink);
    }
    Ok(())
}

/// Spread constraints whose selector misses the workload's own pods: the
/// skew counts other pods only (none, here), so nothing is spread.
fn spread_constraints(world: &World<'_>, s: &Subject<'_>, sink: &mut Sink) {
    let api_list = s.spec.topology_spread_constraints.as_deref().unwrap_or(&[]);
    for (i, c, path) in s.spread() {
        let interner = world.state.interner();
        if c.selector.matches(&s.pod.labels, interner) || spread_otherwise(world, s, c.topology_key)
        {
            continue;
        }
        let selects_other = world.members.iter().any(|m| {
            m.workload != s.workload
                && m.pod.namespace == s.pod.namespace
                && c.selector.matches(&m.pod.labels, interner)
        });
        if selects_other {
            continue;
        }
        let api = api_list.get(i).and_then(|a| a.label_selector.as_ref());
        let why = meant_for_own_pods(world, s, api, &c.selector);
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, &path.child("labelSelector")),
            "does not match this workload's own pods",
            format!(
                "topology spread constraint selector `{}` does not match {}'s own pods ({}), so it does not spread its replicas",
                selector_text(api),
                s.workload,
                world.labels_text(&s.pod.labels)
            ),
        );
        f.notes.push(format!(
            "it matches no other workload's pods in namespace {} either: the skew over {} counts nothing",
            s.namespace,
            world.text(c.topology_key)
        ));
        push_confidence(&mut f, why.as_ref());
        let others_match = |sel: &LabelSelector| {
            world.members.iter().any(|m| {
                m.workload != s.workload
                    && m.pod.namespace == s.pod.namespace
                    && sel.matches(&m.pod.labels, interner)
            })
        };
        let fixed = own_fix(s, |sel| {
            sel.matches(&s.pod.labels, interner) && !others_match(sel)
        });
        if let Some((api, compiled)) = fixed {
            let mut items: Vec<Value> = api_list
                .iter()
                .map(|a| serde_json::to_value(a).unwrap_or(Value::Null))
                .collect();
            if let Some(obj) = items.get_mut(i).and_then(Value::as_object_mut) {
                obj.insert(
                    "labelSelector".to_string(),
                    serde_json::to_value(api).unwrap_or(Value::Null),
                );
                let mut pod = s.pod.clone();
                if let Some(sc) = pod.spread.get_mut(i) {
                    sc.selector = compiled.clone();
                }
                let list_path: FieldPath = s.spec_path.child("topologySpreadConstraints");
                f.fix = Some(select_own_pods(
                    world,
                    s,
                    api,
                    MergePatch::new().set(&list_path, Value::Array(items)),
                    &pod,
                    c.topology_key,
                    "the new selector matches the workload's pods and no other workload's in its namespace (engine selector matching)",
                ));
            }
        }
        sink.push(&s.ignored, f);
    }
}
