//! PP007 topology-key-absent: a topologyKey (of an affinity term or a
//! spread constraint) that no eligible node carries. Nodes without the
//! label are in no domain: required pod affinity is never satisfied there
//! (except for the first pod of a group), a DoNotSchedule spread
//! constraint filters them out, and anti-affinity or preferred rules on
//! the key constrain nothing. The fix names the closest key the nodes do
//! carry, when one is close (a typo).

use podplace_engine::NodeId;
use podplace_model::objects::WhenUnsatisfiable;
use podplace_model::validate::FieldPath;
use rustc_hash::FxHashSet;
use serde_json::Value;

use crate::finding::{Fix, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::pp001_selector_too_broad::term_list;
use crate::rules::{finding, list};
use crate::world::{Subject, TermKind, World};
use crate::{LintError, LintOptions, Sink};

/// PP007.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP007",
    name: "topology-key-absent",
    summary: "a topologyKey that no eligible node carries",
    default_severity: Severity::Warning,
};

/// Label keys of the nodes, and the closest to `key` if it is a likely typo.
fn keys_and_suggestion(
    world: &World<'_>,
    nodes: &[NodeId],
    key: &str,
) -> (Vec<String>, Option<String>) {
    let mut keys: Vec<String> = nodes
        .iter()
        .flat_map(|&n| world.state.node(n).labels.iter().map(|(k, _)| k))
        .collect::<FxHashSet<_>>()
        .into_iter()
        .map(|k| world.text(k).to_string())
        .collect();
    keys.sort();
    // The same rule as why's fix, so both name the same key.
    let best = podplace_explain::topology_typo::closest_key(keys.iter().map(String::as_str), key)
        .map(str::to_string);
    (keys, best)
}

/// Reports topology keys absent from every eligible node.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes() {
        return Ok(());
    }
    for s in &world.subjects {
        let eligible = world.eligible_nodes(&s.pod);
        if eligible.is_empty() {
            continue;
        }
        let carried = |key| {
            eligible
                .iter()
                .any(|&n| world.state.node(n).labels.has(key))
        };
        for t in s.terms() {
            if carried(t.compiled.topology_key) {
                continue;
            }
            let key = world.text(t.compiled.topology_key).to_string();
            let (severity, consequence) = match t.kind {
                TermKind::RequiredAffinity => (
                    Severity::Error,
                    "a node without the label never satisfies required pod affinity: the pods can only schedule as the first of their group",
                ),
                TermKind::RequiredAntiAffinity => (
                    Severity::Warning,
                    "anti-affinity over a label no node has keeps nothing apart",
                ),
                _ => (Severity::Warning, "the preference scores nothing"),
            };
            let mut item = term_list(s, &t);
            let fix_item = |key: &str| -> Option<Value> {
                let target = item.get_mut(t.index)?;
                let target = if t.kind.is_required() {
                    target
                } else {
                    target.get_mut("podAffinityTerm")?
                };
                target
                    .as_object_mut()?
                    .insert("topologyKey".to_string(), Value::from(key));
                Some(Value::Array(item.clone()))
            };
            report(
                world,
                s,
                sink,
                &eligible,
                &key,
                t.path.child("topologyKey"),
                &t.list_path,
                severity,
                consequence,
                fix_item,
            );
        }
        for (i, c, path) in s.spread() {
            if carried(c.topology_key) {
                continue;
            }
            let key = world.text(c.topology_key).to_string();
            let (severity, consequence) = match c.when_unsatisfiable {
                WhenUnsatisfiable::DoNotSchedule => (
                    Severity::Error,
                    "DoNotSchedule filters out nodes without the label: the pods can never be scheduled",
                ),
                WhenUnsatisfiable::ScheduleAnyway => (Severity::Warning, "the constraint scores nothing"),
            };
            let mut list_value: Vec<Value> = s
                .spec
                .topology_spread_constraints
                .as_ref()
                .and_then(|l| serde_json::to_value(l).ok())
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default();
            let fix_item = |key: &str| -> Option<Value> {
                list_value
                    .get_mut(i)?
                    .as_object_mut()?
                    .insert("topologyKey".to_string(), Value::from(key));
                Some(Value::Array(list_value.clone()))
            };
            report(
                world,
                s,
                sink,
                &eligible,
                &key,
                path.child("topologyKey"),
                &s.spec_path.child("topologySpreadConstraints"),
                severity,
                consequence,
                fix_item,
            );
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn report(
    world: &World<'_>,
    s: &Subject<'_>,
    sink: &mut Sink,
    eligible: &[NodeId],
    key: &str,
    path: FieldPath,
    list_path: &FieldPath,
    severity: Severity,
    consequence: &str,
    mut fix_item: impl FnMut(&str) -> Option<Value>,
) {
    let (keys, suggestion) = keys_and_suggestion(world, eligible, key);
    let mut f = finding(
        &INFO,
        &s.id,
        world.locate(&s.origin, &path),
        "no eligible node has this label",
        format!(
            "topology key `{key}` is carried by none of the {} eligible node(s)",
            eligible.len()
        ),
    )
    .with_severity(severity);
    f.notes.push(consequence.to_string());
    f.notes.push(format!(
        "label keys on the eligible nodes: {}",
        list(&keys, 8)
    ));
    if let Some(better) = suggestion {
        if let Some(value) = fix_item(&better) {
            f.fix = Some(Fix {
                description: format!("use `{better}`, which the eligible nodes carry"),
                patch: MergePatch::new().set(list_path, value).to_yaml(),
                verified: None,
            });
        }
    }
    sink.push(&s.ignored, f);
}
