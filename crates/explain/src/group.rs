//! Grouping nodes that reject a pod for the same reasons, so that 5,000
//! nodes read as a handful of lines. Two nodes share a group when every
//! reason has the same node-independent summary: the same taints, the same
//! failing node-affinity requirements, the same short resources, and, for
//! inter-pod rules, the same blocking workloads and terms.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::model::{Detail, Group, NodeVerdict, Reason, TermView};

/// The node-independent line for one reason.
pub fn summary(reason: &Reason, terms: &[TermView]) -> String {
    let what = match &reason.detail {
        Detail::Cordoned => "the node is cordoned (spec.unschedulable: true)".to_string(),
        Detail::NodeName { wanted } => format!("the pod's spec.nodeName is {wanted}"),
        Detail::Taints { taints } => {
            let list: Vec<String> = taints.iter().map(|t| t.display()).collect();
            format!("untolerated taint {}", list.join(", "))
        }
        Detail::NodeAffinity {
            node_selector,
            terms: failing,
            excluded_by_name,
        } => {
            let mut parts = Vec::new();
            if *excluded_by_name {
                parts.push("not among the nodes the pod's node affinity names".to_string());
            }
            if !node_selector.is_empty() {
                let reqs: Vec<&str> = node_selector
                    .iter()
                    .map(|m| m.requirement.as_str())
                    .collect();
                parts.push(format!("nodeSelector {} not matched", reqs.join(", ")));
            }
            for (i, misses) in failing {
                let reqs: Vec<&str> = misses.iter().map(|m| m.requirement.as_str()).collect();
                parts.push(format!(
                    "required node affinity term {} ({}) not matched",
                    i + 1,
                    reqs.join(", ")
                ));
            }
            parts.join("; ")
        }
        Detail::EnforcedAffinity {
            profile,
            terms: failing,
        } => {
            let parts: Vec<String> = failing
                .iter()
                .map(|(i, misses)| {
                    let reqs: Vec<&str> = misses.iter().map(|m| m.requirement.as_str()).collect();
                    format!("term {} ({})", i + 1, reqs.join(", "))
                })
                .collect();
            format!(
                "scheduler profile {profile}'s addedAffinity {} not matched",
                parts.join("; ")
            )
        }
        Detail::Ports { ports } => {
            let set: BTreeSet<String> = ports
                .iter()
                .map(|p| format!("{}/{} ({})", p.port, p.protocol, p.ip))
                .collect();
            format!(
                "host port {} in use",
                set.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
        Detail::Resource(s) => format!("{} short", s.resource),
        Detail::SpreadMissingLabel { topology_key, .. } => {
            format!("the node has no {topology_key} label (topology spread)")
        }
        Detail::SpreadSkew {
            topology_key,
            max_skew,
            ..
        } => format!("spread over {topology_key} would exceed maxSkew {max_skew}"),
        Detail::PodAffinity { misses } => {
            let list: BTreeSet<String> = misses
                .iter()
                .map(|m| {
                    let t = &terms[m.term];
                    if m.domain.is_none() {
                        format!("term {} (node lacks {})", t.index + 1, t.topology_key)
                    } else {
                        format!(
                            "term {} (no matching pod in the node's {})",
                            t.index + 1,
                            t.topology_key
                        )
                    }
                })
                .collect();
            format!(
                "podAffinity {}",
                list.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
        Detail::PodAntiAffinity | Detail::ExistingAntiAffinity => {
            let set: BTreeSet<(String, usize, &str)> = reason
                .counts
                .iter()
                .map(|c| (c.workload.clone(), c.term, c.rule_owner.as_str()))
                .collect();
            let list: Vec<String> = set
                .into_iter()
                .map(|(w, t, owner)| {
                    let term = &terms[t];
                    let whose = if owner == "incoming" {
                        "the pod's own".to_string()
                    } else {
                        format!("{}'s", term.owner_workload)
                    };
                    format!(
                        "{w} (by {whose} {} term {})",
                        term.kind.short(),
                        term.index + 1
                    )
                })
                .collect();
            format!("blocked by {}", list.join(", "))
        }
        Detail::Conflict => "the required node affinity terms name disjoint node sets".to_string(),
        Detail::VolumeNodeAffinity { volumes } => {
            let list: Vec<String> = volumes
                .iter()
                .map(|v| {
                    let reqs: BTreeSet<&str> = v
                        .terms
                        .iter()
                        .flat_map(|(_, ms)| ms.iter().map(|m| m.requirement.as_str()))
                        .collect();
                    format!(
                        "claim {} (volume {}) needs {}",
                        v.claim,
                        volume_name(&v.volume),
                        reqs.into_iter().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            list.join("; ")
        }
        Detail::VolumeUnbound { claims } | Detail::VolumeCapacity { claims } => {
            let list: Vec<&str> = claims.iter().map(|c| c.claim.as_str()).collect();
            format!("claim {}", list.join(", "))
        }
        Detail::VolumeMissing { claims } => {
            let list: Vec<String> = claims
                .iter()
                .map(|(c, v)| format!("claim {c} (volume {v})"))
                .collect();
            list.join(", ")
        }
        Detail::VolumeZone { volumes } => {
            let list: Vec<String> = volumes
                .iter()
                .map(|v| {
                    let labels: Vec<String> = v
                        .labels
                        .iter()
                        .map(|(k, value, _)| format!("{k}={value}"))
                        .collect();
                    format!(
                        "claim {} (volume {}) is in {}",
                        v.claim,
                        v.volume,
                        labels.join(", ")
                    )
                })
                .collect();
            list.join("; ")
        }
        Detail::ReadWriteOncePod { holders } => {
            let list: BTreeSet<String> = holders
                .iter()
                .map(|(c, p, _)| format!("claim {c} used by {p}"))
                .collect();
            list.into_iter().collect::<Vec<_>>().join(", ")
        }
        Detail::DiskConflict { .. } => "an in-tree disk a pod on the node mounts".to_string(),
        Detail::VolumeLimit { drivers } => {
            let list: BTreeSet<String> = drivers
                .iter()
                .map(|d| format!("{} limit {}", d.driver, d.limit))
                .collect();
            list.into_iter().collect::<Vec<_>>().join(", ")
        }
        Detail::ResourceClaimNodes { claims } => {
            let list: Vec<&str> = claims.iter().map(|c| c.claim.as_str()).collect();
            format!(
                "outside the allocation of ResourceClaim {}",
                list.join(", ")
            )
        }
    };
    format!("{}: {what}", short_message(&reason.message))
}

/// A volume's name, or what stands for one podplace assumed provisioned.
pub fn volume_name(volume: &str) -> &str {
    if volume.is_empty() {
        "to be provisioned"
    } else {
        volume
    }
}

/// kube-scheduler's reason without the `node(s) ` prefix.
pub fn short_message(message: &str) -> &str {
    message.strip_prefix("node(s) ").unwrap_or(message)
}

/// Groups verdicts by their summaries: groups with the fewest reasons (the
/// nodes closest to fitting) first, then the largest, then by node order.
pub fn group(nodes: &[NodeVerdict], terms: &[TermView]) -> Vec<Group> {
    let mut summaries = Summaries::default();
    let mut index: FxHashMap<Vec<usize>, usize> = FxHashMap::default();
    let mut groups: Vec<Group> = Vec::new();
    for (i, verdict) in nodes.iter().enumerate() {
        let key: Vec<usize> = verdict
            .reasons
            .iter()
            .map(|r| summaries.of(r, terms))
            .collect();
        match index.get(&key) {
            Some(&g) => groups[g].members.push(i),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push(Group {
                    members: vec![i],
                    summaries: key.iter().map(|&s| summaries.text[s].clone()).collect(),
                });
            }
        }
    }
    // Nodes closest to fitting (fewest reasons) first, then the largest groups.
    groups.sort_by(|a, b| {
        a.summaries
            .len()
            .cmp(&b.summaries.len())
            .then(b.members.len().cmp(&a.members.len()))
            .then(a.members[0].cmp(&b.members[0]))
    });
    groups
}

/// Each distinct [`summary`] once, numbered: nodes are grouped by the
/// numbers, which are equal exactly when the texts are. An inter-pod
/// reason's summary depends only on its message and its counts, and the
/// nodes of one domain share one counts list ([`crate::model::Shared`]),
/// so it is worded once per list, not once per node (a zone's summary
/// names hundreds of workloads).
#[derive(Default)]
struct Summaries {
    /// The texts, by number.
    text: Vec<String>,
    /// The number of each text.
    number: FxHashMap<String, usize>,
    /// The number of an inter-pod reason's summary by (its kind, its
    /// message, its counts list's [`crate::model::Shared::id`]).
    by_list: FxHashMap<(bool, String, usize), usize>,
}

impl Summaries {
    /// The number of `reason`'s summary.
    fn of(&mut self, reason: &Reason, terms: &[TermView]) -> usize {
        let shared = match reason.detail {
            Detail::PodAntiAffinity => Some(true),
            Detail::ExistingAntiAffinity => Some(false),
            _ => None,
        };
        let Some(incoming) = shared else {
            return self.number(summary(reason, terms));
        };
        let key = (incoming, reason.message.clone(), reason.counts.id());
        if let Some(&n) = self.by_list.get(&key) {
            return n;
        }
        let n = self.number(summary(reason, terms));
        self.by_list.insert(key, n);
        n
    }

    fn number(&mut self, text: String) -> usize {
        if let Some(&n) = self.number.get(&text) {
            return n;
        }
        self.text.push(text.clone());
        self.number.insert(text, self.text.len() - 1);
        self.text.len() - 1
    }
}
