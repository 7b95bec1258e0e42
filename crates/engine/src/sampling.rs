//! kube-scheduler's node sampling (`percentageOfNodesToScore`): with 100
//! nodes or more it stops filtering once it has found
//! `numFeasibleNodesToFind` feasible nodes, visiting its node list from a
//! start index that moves on by the nodes it processed, from pod to pod.
//!
//! The node list is the node tree's: zones interleaved (the first node of
//! each zone, in the order zones were first seen, then the second of each,
//! ...), nodes within a zone in the order they were added, which for a
//! snapshot is by name, as the informer lists them. With `parallelism: 1`
//! the nodes found are exactly these; with more, which feasible nodes are
//! found first is a race among the workers, and the answer is one of the
//! possible candidate sets.

use crate::ids::NodeId;
use crate::state::ClusterState;

mod sampler;
pub use sampler::{Certainty, Mark, Race, SampledSet, Sampler, Search, Tally, TallyReport};

/// kube-scheduler's `minFeasibleNodesToFind`: below this many nodes every
/// node is filtered.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;

/// kube-scheduler's `minFeasibleNodesPercentageToFind`.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How a scheduler samples nodes (part of its
/// [`crate::profile::SchedulerSetup`]); the default is off (every feasible
/// node scored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// Whether to sample at all (`false`: score every feasible node, as
    /// podplace did before; `--score-all-nodes`).
    pub enabled: bool,
    /// The configuration's global `percentageOfNodesToScore` (0: adaptive).
    pub percentage: i32,
    /// The configuration's `parallelism`: with more than one filter
    /// worker, which feasible nodes are found first is a race, and so is
    /// the next start index.
    pub parallelism: i32,
}

/// kube-scheduler's default `parallelism`.
pub const DEFAULT_PARALLELISM: i32 = 16;

impl Default for Sampling {
    /// Off, with kube-scheduler's default parallelism (16).
    fn default() -> Self {
        Sampling {
            enabled: false,
            percentage: 0,
            parallelism: DEFAULT_PARALLELISM,
        }
    }
}

impl Sampling {
    /// Sampling on, as a scheduler with this global
    /// `percentageOfNodesToScore` (0: adaptive) and `parallelism` does it.
    pub fn on(percentage: i32, parallelism: i32) -> Sampling {
        Sampling {
            enabled: true,
            percentage,
            parallelism,
        }
    }
}

/// `numFeasibleNodesToFind`: every node below 100; else the profile's
/// percentage, or the global one, or adaptively `50 - nodes/125` (at
/// least 5) percent of them, and at least 100.
pub fn num_feasible_nodes_to_find(profile: Option<i32>, global: i32, nodes: usize) -> usize {
    if nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return nodes;
    }
    let all = i64::try_from(nodes).unwrap_or(i64::MAX);
    let mut percentage = i64::from(profile.unwrap_or(global));
    if percentage == 0 {
        percentage = (50 - all / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let found = usize::try_from(all * percentage / 100).unwrap_or(nodes);
    found.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// GetZoneKey: region and zone labels (the GA ones, else the beta
/// failure-domain ones) joined by `:\0:`; empty without either.
fn zone_key(cluster: &ClusterState, node: NodeId) -> String {
    let n = cluster.node(node);
    let interner = cluster.interner();
    let label = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| {
                let sym = interner.lookup(k)?;
                n.labels.get(sym).map(|v| interner.resolve(v).to_string())
            })
            .unwrap_or_default()
    };
    let region = label([
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/region",
    ]);
    let zone = label([
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/zone",
    ]);
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// The node tree's list: nodes by name within their zone, zones in the
/// order their first node (by name) appears, interleaved.
pub fn node_tree_order(cluster: &ClusterState) -> Vec<NodeId> {
    let mut by_name: Vec<NodeId> = cluster.node_ids().collect();
    by_name.sort_by(|&a, &b| cluster.node(a).name.cmp(&cluster.node(b).name));
    let mut zones: Vec<(String, Vec<NodeId>)> = Vec::new();
    for node in by_name {
        let key = zone_key(cluster, node);
        match zones.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(node),
            None => zones.push((key, vec![node])),
        }
    }
    let total: usize = zones.iter().map(|(_, l)| l.len()).sum();
    let mut out = Vec::with_capacity(total);
    let mut i = 0;
    while out.len() < total {
        for (_, list) in &zones {
            if let Some(&n) = list.get(i) {
                out.push(n);
            }
        }
        i += 1;
    }
    out
}

/// Which feasible nodes one cycle scores, given every node's verdict:
/// visiting `order` from `start`, the first `to_find` feasible ones, and
/// how many nodes were processed (the start index moves on by that many:
/// the feasible ones kept and the rejected ones visited before the search
/// stopped at one more feasible node).
pub fn sample(
    order: &[NodeId],
    start: usize,
    to_find: usize,
    feasible: impl Fn(NodeId) -> bool,
) -> (Vec<NodeId>, usize) {
    let n = order.len();
    let mut found = Vec::new();
    if n == 0 {
        return (found, 0);
    }
    for k in 0..n {
        let node = order[(start + k) % n];
        if feasible(node) {
            found.push(node);
            if found.len() == to_find {
                // kube-scheduler stops when it finds one feasible node more
                // than it needs (that one is dropped unrecorded): the
                // infeasible nodes before it were processed too.
                let mut processed = k + 1;
                while processed < n && !feasible(order[(start + processed) % n]) {
                    processed += 1;
                }
                return (found, processed);
            }
        }
    }
    (found, n)
}

#[cfg(test)]
mod tests;
