//! LowNodeUtilization: move pods off nodes whose requests exceed the target
//! thresholds, when there are underutilized nodes to take them. Objective:
//! how far each node's requests are above the targets, in thousandths of a
//! percent, summed over nodes and resources.

use podplace_engine::ClusterState;
use podplace_engine::NodeId;

use super::{Cx, Nomination, Strategy};
use crate::policy::{LowNodeUtilizationArgs, Namespaces};

/// Requested / allocatable of one resource on one node, in thousandths of a percent.
pub fn usage_mp(cluster: &ClusterState, node: NodeId, resource: &str) -> Option<i64> {
    let n = cluster.node(node);
    let info = &cluster.node_info(node);
    let (used, alloc) = match resource {
        "cpu" => (info.requested.milli_cpu, n.allocatable.milli_cpu),
        "memory" => (info.requested.memory, n.allocatable.memory),
        "pods" => (info.pods.len() as i64, n.allocatable.pods),
        "ephemeral-storage" => (
            info.requested.ephemeral_storage,
            n.allocatable.ephemeral_storage,
        ),
        other => {
            let sym = cluster.interner().lookup(other)?;
            (info.requested.scalar(sym), n.allocatable.scalar(sym))
        }
    };
    if alloc <= 0 {
        return None;
    }
    Some(((i128::from(used) * 100_000) / i128::from(alloc)) as i64)
}

/// Per resource: (name, low, high) in thousandths of a percent.
pub type Bands = Vec<(String, i64, i64)>;

/// The LowNodeUtilization strategy.
#[derive(Debug)]
pub struct LowNodeUtilization {
    bands: Bands,
    number_of_nodes: i64,
    evictable: Option<Namespaces>,
    node_limit: Option<u32>,
}

fn mean_usage(cluster: &ClusterState, resource: &str) -> i64 {
    let v: Vec<i64> = cluster
        .node_ids()
        .filter_map(|n| usage_mp(cluster, n, resource))
        .collect();
    if v.is_empty() {
        0
    } else {
        v.iter().sum::<i64>() / v.len() as i64
    }
}

impl LowNodeUtilization {
    /// Resolves the thresholds (deviation thresholds against today's mean).
    pub fn new(args: &LowNodeUtilizationArgs, cluster: &ClusterState) -> Self {
        let bands = args
            .thresholds
            .iter()
            .map(|(r, low)| {
                let high = args.target_thresholds.get(r).copied().unwrap_or(100.0);
                let (low, high) = ((low * 1000.0) as i64, (high * 1000.0) as i64);
                if args.use_deviation_thresholds {
                    let mean = mean_usage(cluster, r);
                    (r.clone(), (mean - low).max(0), (mean + high).min(100_000))
                } else {
                    (r.clone(), low, high)
                }
            })
            .collect();
        LowNodeUtilization {
            bands,
            number_of_nodes: args.number_of_nodes,
            evictable: args.evictable_namespaces.clone(),
            node_limit: args.eviction_limits.as_ref().and_then(|l| l.node),
        }
    }

    /// Underutilized, and so a place to move pods to: a cordoned node is
    /// never one, however empty (the descheduler's low threshold filter).
    fn under(&self, cluster: &ClusterState, node: NodeId) -> bool {
        !cluster.node(node).unschedulable
            && self
                .bands
                .iter()
                .all(|(r, low, _)| usage_mp(cluster, node, r).is_none_or(|u| u < *low))
    }

    fn over(&self, cluster: &ClusterState, node: NodeId) -> Option<String> {
        self.bands.iter().find_map(|(r, _, high)| {
            let u = usage_mp(cluster, node, r)?;
            (u > *high).then(|| {
                format!(
                    "{r} {:.0}% > {:.0}%",
                    u as f64 / 1000.0,
                    *high as f64 / 1000.0
                )
            })
        })
    }
}

impl Strategy for LowNodeUtilization {
    fn name(&self) -> &'static str {
        "LowNodeUtilization"
    }

    fn measures(&self) -> String {
        "overutilization (thousandths of a percent above target)".to_string()
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let under = cx
            .state
            .node_ids()
            .filter(|&n| self.under(cx.state, n))
            .count() as i64;
        if under == 0 || under <= self.number_of_nodes {
            return Vec::new();
        }
        let mut out = Vec::new();
        for n in cx.state.node_ids() {
            let Some(why) = self.over(cx.state, n) else {
                continue;
            };
            let mut pods: Vec<_> = cx.state.node_info(n).pods.clone();
            pods.sort_by_key(|&p| (cx.state.pod(p).priority, cx.facts[p.index()].qos, p));
            for p in pods {
                let f = &cx.facts[p.index()];
                if self
                    .evictable
                    .as_ref()
                    .is_some_and(|ns| !ns.admits(&f.namespace))
                {
                    continue;
                }
                out.push(Nomination {
                    pod: p,
                    rule: format!(
                        "node {} is overutilized ({why}) while {under} node(s) are underutilized",
                        cx.state.node(n).name
                    ),
                });
            }
        }
        out
    }

    fn node_cost(&mut self, cx: &Cx<'_>, node: NodeId) -> i64 {
        self.bands
            .iter()
            .filter_map(|(r, _, high)| usage_mp(cx.state, node, r).map(|u| (u - high).max(0)))
            .sum()
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        let nodes: Vec<NodeId> = cx.state.node_ids().collect();
        nodes.into_iter().map(|n| self.node_cost(cx, n)).sum()
    }

    fn node_limit(&self) -> Option<u32> {
        self.node_limit
    }
}
