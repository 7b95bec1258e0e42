//! The words `why` uses for whose inter-pod rule blocks a pod, and the one
//! main cause of a Pending pod. Both `why POD` (its blocker lines) and the
//! Pending summary (`why` without a pod, `why -l`, `why deployment/web`)
//! say it with these functions, so the two never name one rule in two ways.

use podplace_explain::{Explanation, Phase, RuleOwner};

/// Whose rule term `term` of `e` is, as a phrase: "the pod's own
/// podAntiAffinity term 1", "the existing pod's podAntiAffinity term 1
/// (same workload), applied symmetrically", or "the existing pod's
/// podAntiAffinity term 1, applied symmetrically: a rule of ANOTHER
/// workload, StatefulSet/ns/name".
pub fn rule_whose(e: &Explanation, term: usize, owner: RuleOwner) -> String {
    let Some(t) = e.terms.get(term) else {
        return format!("term {}", term + 1);
    };
    match owner {
        RuleOwner::Incoming => format!("the pod's own {} term {}", t.kind.short(), t.index + 1),
        RuleOwner::Existing if t.owner_workload == e.workload => format!(
            "the existing pod's {} term {} (same workload), applied symmetrically",
            t.kind.short(),
            t.index + 1
        ),
        RuleOwner::Existing => format!(
            "the existing pod's {} term {}, applied symmetrically: a rule of ANOTHER workload, {}",
            t.kind.short(),
            t.index + 1,
            t.owner_workload
        ),
    }
}

/// The main cause of a Pending (or gated) pod, as (plugin, text): a
/// reason about the pod itself, its scheduling gates, or the first reason
/// of the nodes closest to fitting, naming the blocking workload and whose
/// rule it is ([`rule_whose`]) for inter-pod rules.
pub fn main_cause(e: &Explanation) -> (String, String) {
    if let Phase::Gated { gates } = &e.phase {
        return (
            "SchedulingGates".to_string(),
            format!("gated by {}: never tried until removed", gates.join(", ")),
        );
    }
    if let Some(r) = e.pod_reasons.first() {
        return (r.plugin.to_string(), r.message.clone());
    }
    let Some(group) = e.groups.first() else {
        return (String::new(), e.message.clone());
    };
    let Some(reason) = group
        .members
        .first()
        .and_then(|&i| e.nodes.get(i))
        .and_then(|n| n.reasons.first())
    else {
        return (String::new(), e.message.clone());
    };
    let nodes = format!("{} of {} nodes", group.members.len(), e.node_count);
    let text = match reason.counts.first() {
        Some(c) => format!(
            "{}: blocked by {} ({}) on {nodes}",
            reason.message,
            c.workload,
            rule_whose(e, c.term, c.rule_owner)
        ),
        None => match group.summaries.first() {
            // A group's summary starts with the reason's short message:
            // say it once, in kube-scheduler's full words.
            Some(s) => {
                let what = s
                    .strip_prefix(podplace_explain::group::short_message(&reason.message))
                    .and_then(|rest| rest.strip_prefix(": "))
                    .unwrap_or(s);
                format!("{}: {what} on {nodes}", reason.message)
            }
            None => format!("{} on {nodes}", reason.message),
        },
    };
    (reason.plugin.to_string(), text)
}
