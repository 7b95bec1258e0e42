//! NodeAffinity: `nodeSelector` and required node affinity filter; preferred
//! node affinity scores. Its PreFilter narrows the candidate nodes when every
//! required term pins `metadata.name`.

use podplace_model::intern::{Interner, Sym};
use podplace_model::objects::{Node, Pod};
use podplace_model::selector::Requirement;
use rustc_hash::FxHashSet;

use crate::status::{Code, Plugin, Status};

/// Filter reason.
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";
/// Filter reason when the profile's `addedAffinity` (NodeAffinityArgs) is
/// not matched: kube-scheduler words it apart from the pod's own terms.
pub const REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter reason when the pinned node names of all terms are disjoint.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";
/// Reason given to nodes the PreFilter result excluded.
pub const REASON_EXCLUDED: &str = "node(s) didn't satisfy plugin(s) [NodeAffinity]";

/// What PreFilter decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreFilter {
    /// Every node is a candidate.
    AllNodes,
    /// Only these node names are candidates.
    Only(FxHashSet<Sym>),
    /// No node can match.
    Conflict,
}

/// PreFilter: node names pinned by `matchFields metadata.name In`.
pub fn pre_filter(pod: &Pod) -> PreFilter {
    let Some(required) = &pod.required_node_affinity else {
        return PreFilter::AllNodes;
    };
    if required.terms.is_empty() {
        return PreFilter::AllNodes;
    }
    let mut union: FxHashSet<Sym> = FxHashSet::default();
    for term in &required.terms {
        let mut names: Option<FxHashSet<Sym>> = None;
        for r in &term.names {
            if let Requirement::In(_, values) = r {
                let set: FxHashSet<Sym> = values.iter().copied().collect();
                names = Some(match names {
                    None => set,
                    Some(prev) => prev.intersection(&set).copied().collect(),
                });
            }
        }
        match names {
            None => return PreFilter::AllNodes,
            Some(n) => union.extend(n),
        }
    }
    if union.is_empty() {
        PreFilter::Conflict
    } else {
        PreFilter::Only(union)
    }
}

/// Whether the node satisfies `nodeSelector` and required node affinity.
pub fn matches(pod: &Pod, node: &Node, interner: &Interner) -> bool {
    let selector_ok = pod.node_selector.iter().all(|r| match r {
        Requirement::In(k, vs) => node.labels.get(*k).is_some_and(|v| vs.contains(&v)),
        _ => false,
    });
    selector_ok
        && pod
            .required_node_affinity
            .as_ref()
            .is_none_or(|s| s.matches(&node.labels, node.name_sym, interner))
}

/// Filter.
pub fn filter(pod: &Pod, node: &Node, interner: &Interner) -> Status {
    if matches(pod, node, interner) {
        Status::success()
    } else {
        Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::NodeAffinity,
            REASON,
        )
    }
}

/// Whether Score runs (PreScore skips pods without preferred terms).
pub fn scores(pod: &Pod) -> bool {
    !pod.preferred_node_affinity.is_empty()
}

/// Raw score: the weights of the preferred terms the node matches.
pub fn score(pod: &Pod, node: &Node, interner: &Interner) -> i64 {
    pod.preferred_node_affinity
        .iter()
        .filter(|(w, t)| *w != 0 && t.matches(&node.labels, node.name_sym, interner))
        .map(|(w, _)| i64::from(*w))
        .sum()
}
