//! PP012 blocked-by-running-workload: pods of a linted workload are matched
//! by the required anti-affinity of pods that already run in the cluster
//! (`--cluster` or a live cluster) and belong to another workload. Required
//! anti-affinity is symmetric, so the new pods cannot go into any topology
//! domain where those pods run — story 1 seen from Vault's side: the rule
//! that keeps vault-2 Pending is written in Prometheus, not in Vault, and
//! the FailedScheduling event never says so.
//!
//! Reported on the linted workload's pod labels (what the other term
//! matches), with the running pods, their nodes and the eligible nodes that
//! remain; an error when no eligible node remains or fewer remain than a
//! workload spread one per domain needs. (When the other workload is in the
//! linted manifests too, PP001 reports its selector instead.)

use std::collections::{BTreeMap, BTreeSet};

use podplace_model::objects::AffinityTerm;
use podplace_model::selector::Requirement;

use crate::finding::{Location, Related, RuleInfo, Severity};
use crate::rules::{finding, list};
use crate::world::{Member, World};
use crate::{LintError, LintOptions, Sink};

/// PP012.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP012",
    name: "blocked-by-running-workload",
    summary: "pods are kept off nodes by the required anti-affinity of another workload running in the cluster",
    default_severity: Severity::Warning,
};

/// One workload whose running pods keep a subject away: those pods, the
/// matching term's selector as text, and the (topology key, domain) pairs
/// they close.
type Blocker<'w> = (Vec<&'w Member>, String, BTreeSet<(String, String)>);

/// A compiled selector as text (`component In [server]`).
fn selector_text(world: &World<'_>, term: &AffinityTerm) -> String {
    let t = |s| world.text(s).to_string();
    let parts: Vec<String> = term
        .selector
        .requirements()
        .iter()
        .map(|r| match r {
            Requirement::In(k, vs) => format!(
                "{} In [{}]",
                t(*k),
                vs.iter().map(|v| t(*v)).collect::<Vec<_>>().join(", ")
            ),
            Requirement::NotIn(k, vs) => format!(
                "{} NotIn [{}]",
                t(*k),
                vs.iter().map(|v| t(*v)).collect::<Vec<_>>().join(", ")
            ),
            Requirement::Exists(k) => format!("{} Exists", t(*k)),
            Requirement::DoesNotExist(k) => format!("{} DoesNotExist", t(*k)),
            Requirement::Gt(k, b) => format!("{} Gt {b}", t(*k)),
            Requirement::Lt(k, b) => format!("{} Lt {b}", t(*k)),
        })
        .collect();
    if parts.is_empty() {
        "{}".to_string()
    } else {
        parts.join(", ")
    }
}

/// Reports linted workloads that running pods of other workloads keep away.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if world.snapshot.is_none() {
        return Ok(());
    }
    for s in &world.subjects {
        // Per blocking workload: its running pods' terms that match, and the
        // (key, domain) pairs they close.
        let mut blockers: BTreeMap<String, Blocker<'_>> = BTreeMap::new();
        for m in world.members.iter().filter(|m| {
            !m.from_manifests
                && !m.template
                && m.workload != s.workload
                && m.pod.node_name.is_some()
        }) {
            for term in &m.pod.affinity.required_anti_affinity {
                if !world.term_selects(term, &s.pod) {
                    continue;
                }
                let entry = blockers
                    .entry(m.workload.to_string())
                    .or_insert_with(|| (Vec::new(), selector_text(world, term), BTreeSet::new()));
                if !entry.0.iter().any(|x| std::ptr::eq(*x, m)) {
                    entry.0.push(m);
                }
                let node = m
                    .pod
                    .node_name
                    .as_deref()
                    .and_then(|n| world.state.node_id(n));
                if let Some(domain) =
                    node.and_then(|n| world.state.node(n).labels.get(term.topology_key))
                {
                    entry.2.insert((
                        world.text(term.topology_key).to_string(),
                        world.text(domain).to_string(),
                    ));
                }
            }
        }
        if blockers.is_empty() {
            continue;
        }
        let closed: BTreeSet<(String, String)> = blockers
            .values()
            .flat_map(|b| b.2.iter().cloned())
            .collect();
        let eligible = world.eligible_nodes(&s.pod);
        let remaining: Vec<String> = eligible
            .iter()
            .map(|&n| world.state.node(n))
            .filter(|node| {
                !closed.iter().any(|(key, value)| {
                    world
                        .state
                        .interner()
                        .lookup(key)
                        .and_then(|k| node.labels.get(k))
                        .is_some_and(|v| world.text(v) == value)
                })
            })
            .map(|node| node.name.to_string())
            .collect();
        let names: Vec<String> = blockers.keys().cloned().collect();
        let closed_text: Vec<String> = closed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let replicas = s.replicas.unwrap_or(1);
        // A workload spread one per node by its own required anti-affinity
        // needs a remaining node per replica.
        let one_per_node = s.terms().iter().any(|t| {
            t.kind.is_anti()
                && t.kind.is_required()
                && world.text(t.compiled.topology_key) == "kubernetes.io/hostname"
                && world.term_selects(t.compiled, &s.pod)
        });
        let short = if remaining.is_empty() {
            Some(replicas)
        } else if one_per_node && (remaining.len() as i32) < replicas {
            Some(replicas - remaining.len() as i32)
        } else {
            None
        };
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, &s.labels_path),
            format!("matched by the anti-affinity of {}", list(&names, 1)),
            format!(
                "pods of {} are kept out of {} by the required anti-affinity of {}, running in the cluster",
                s.workload,
                list(&closed_text, 4),
                list(&names, 2)
            ),
        );
        if let Some(pending) = short {
            f = f.with_severity(Severity::Error);
            f.notes.push(format!(
                "{} of {} eligible node(s) remain ({}): {pending} pod(s) will stay Pending",
                remaining.len(),
                eligible.len(),
                if remaining.is_empty() {
                    "none".to_string()
                } else {
                    list(&remaining, 5)
                }
            ));
        } else {
            f.notes.push(format!(
                "{} of {} eligible node(s) remain: {}",
                remaining.len(),
                eligible.len(),
                list(&remaining, 5)
            ));
        }
        for (workload, (pods, selector, _)) in &blockers {
            f.notes.push(format!(
                "anti-affinity is symmetric: {workload}'s selector `{selector}` matches these pods' labels ({}), so the scheduler \
                 keeps them away from its pods although the rule is not theirs",
                world.labels_text(&s.pod.labels)
            ));
            for m in pods.iter().take(3) {
                f.related.push(Related {
                    message: format!(
                        "{}/{} ({}) runs on {} with that term",
                        world.text(m.pod.namespace),
                        m.pod.name,
                        m.workload,
                        m.pod.node_name.as_deref().unwrap_or("?")
                    ),
                    object: workload.clone(),
                    location: Some(Location {
                        file: m.origin.file.clone(),
                        line: m.origin.line,
                        column: m.origin.column,
                        end_line: m.origin.line,
                        end_column: m.origin.column + 1,
                        field: String::new(),
                    })
                    .filter(|l| l.line > 0),
                });
            }
        }
        f.help = Some(format!(
            "the fix belongs to {}: narrow its selector to its own pods (`podplace lint` on its manifest reports PP001); \
             or give these pods labels its selector does not match",
            list(&names, 2)
        ));
        sink.push(&s.ignored, f);
    }
    Ok(())
}
