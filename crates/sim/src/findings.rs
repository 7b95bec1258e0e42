//! What the simulation reports as wrong after a step: lost high
//! availability, Pending pods with their culprit, pods whose volume
//! reaches no usable node, rollouts that cannot progress, drains that
//! cannot finish, and failed expectations.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

/// The kinds of findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum FindingKind {
    /// Every running replica of a multi-replica workload is on one node or in one zone.
    HALost,
    /// Pods wait for a node.
    Pending,
    /// A rollout exceeded its progress deadline (or cannot progress).
    RolloutStuck,
    /// A drain could not evict every pod.
    DrainBlocked,
    /// An `expect` step failed.
    ExpectFailed,
    /// A Pending pod's claim is bound to a volume that reaches no Ready,
    /// schedulable node (its zone lost, its local node drained or failed).
    VolumeUnreachable,
}

impl FindingKind {
    /// The name used in output and in `expect: {no-finding: ...}`.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::HALost => "HALost",
            FindingKind::Pending => "Pending",
            FindingKind::RolloutStuck => "RolloutStuck",
            FindingKind::DrainBlocked => "DrainBlocked",
            FindingKind::ExpectFailed => "ExpectFailed",
            FindingKind::VolumeUnreachable => "VolumeUnreachable",
        }
    }

    /// Parses a kind name.
    pub fn parse(text: &str) -> Option<FindingKind> {
        [
            FindingKind::HALost,
            FindingKind::Pending,
            FindingKind::RolloutStuck,
            FindingKind::DrainBlocked,
            FindingKind::ExpectFailed,
            FindingKind::VolumeUnreachable,
        ]
        .into_iter()
        .find(|k| k.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// One sentence for people.
    pub message: String,
    /// `Kind/namespace/name` of the workload concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The node concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pod concerned (`namespace/name`): the Pending or blocking one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The rule that blocks (plugin, reason and culprit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where a rollout stands when it stalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled_at: Option<String>,
    /// A change that fixes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    /// A finding with only a kind and a message.
    pub fn new(kind: FindingKind, message: impl Into<String>) -> Finding {
        Finding {
            kind,
            message: message.into(),
            workload: None,
            node: None,
            pod: None,
            rule: None,
            stalled_at: None,
            fix: None,
        }
    }
}

/// A workload's running replicas for the high-availability check.
#[derive(Debug, Clone)]
pub struct Spread {
    /// `Kind/namespace/name`.
    pub workload: String,
    /// Desired replicas.
    pub desired: i32,
    /// Node of each running (bound, not terminating) replica.
    pub nodes: Vec<String>,
}

/// HALost findings: multi-replica workloads whose running replicas all sit
/// on one node, or all in one zone when the cluster has several zones.
/// `zones` maps node names to their `topology.kubernetes.io/zone`;
/// `node_count` is the number of nodes in the cluster.
pub fn high_availability(
    spreads: &[Spread],
    zones: &BTreeMap<String, String>,
    node_count: usize,
) -> Vec<Finding> {
    let cluster_zones: BTreeSet<&String> = zones.values().collect();
    let mut out = Vec::new();
    for s in spreads {
        if s.desired < 2 || s.nodes.is_empty() {
            continue;
        }
        let nodes: BTreeSet<&String> = s.nodes.iter().collect();
        let running = s.nodes.len();
        if nodes.len() == 1 && node_count > 1 {
            let node = nodes.into_iter().next().expect("one node").clone();
            out.push(Finding {
                node: Some(node.clone()),
                workload: Some(s.workload.clone()),
                ..Finding::new(
                    FindingKind::HALost,
                    format!(
                        "all {running} running replicas of {} (of {} desired) are on node {node}: losing that node takes the workload down",
                        s.workload, s.desired
                    ),
                )
            });
            continue;
        }
        if cluster_zones.len() > 1 {
            let in_zones: BTreeSet<&String> = s.nodes.iter().filter_map(|n| zones.get(n)).collect();
            if in_zones.len() == 1 && s.nodes.iter().all(|n| zones.contains_key(n)) {
                let zone = in_zones.into_iter().next().expect("one zone");
                out.push(Finding {
                    workload: Some(s.workload.clone()),
                    ..Finding::new(
                        FindingKind::HALost,
                        format!(
                            "all {running} running replicas of {} are in zone {zone}: losing that zone takes the workload down",
                            s.workload
                        ),
                    )
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(desired: i32, nodes: &[&str]) -> Spread {
        Spread {
            workload: "Deployment/default/demo-app".to_string(),
            desired,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
        }
    }

    #[test]
    fn ha_is_lost_on_one_node_or_one_zone() {
        let zones: BTreeMap<String, String> = [("a1", "a"), ("a2", "a"), ("b1", "b")]
            .iter()
            .map(|(n, z)| (n.to_string(), z.to_string()))
            .collect();
        let no_zones = BTreeMap::new();
        let table = [
            (spread(5, &["w1", "w1", "w1"]), &no_zones, 3, 1),
            (spread(5, &["w1", "w2"]), &no_zones, 3, 0),
            (spread(1, &["w1"]), &no_zones, 3, 0),
            (spread(2, &["w1", "w1"]), &no_zones, 1, 0),
            (spread(2, &["a1", "a2"]), &zones, 3, 1),
            (spread(2, &["a1", "b1"]), &zones, 3, 0),
            (spread(3, &[]), &no_zones, 3, 0),
        ];
        for (i, (s, z, nodes, want)) in table.into_iter().enumerate() {
            let got = high_availability(&[s], z, nodes);
            assert_eq!(got.len(), want, "row {i}: {got:?}");
        }
        let f = &high_availability(&[spread(5, &["w1"; 5])], &no_zones, 3)[0];
        assert_eq!(f.node.as_deref(), Some("w1"));
        assert!(f.message.contains("all 5 running replicas"));
    }
}
