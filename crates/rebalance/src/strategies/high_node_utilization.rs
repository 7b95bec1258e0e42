//! HighNodeUtilization: empty underutilized nodes so their pods pack onto
//! the others (for the cluster autoscaler to remove the empty nodes).
//! Objective: the pods on underutilized nodes. With kube-scheduler's
//! default LeastAllocated scoring the replacements usually go back to an
//! empty node, so podplace's proof keeps few or no such evictions; the
//! descheduler documents that this strategy needs a MostAllocated scheduler.

use podplace_engine::ClusterState;
use podplace_engine::NodeId;
use podplace_model::workloads::WorkloadKind;

use super::low_node_utilization::usage_mp;
use super::{Cx, Nomination, Strategy};
use crate::policy::{HighNodeUtilizationArgs, Namespaces};

/// The HighNodeUtilization strategy.
#[derive(Debug)]
pub struct HighNodeUtilization {
    thresholds: Vec<(String, i64)>,
    number_of_nodes: i64,
    evictable: Option<Namespaces>,
    only_thresholding: bool,
}

impl HighNodeUtilization {
    /// Reads the thresholds.
    pub fn new(args: &HighNodeUtilizationArgs, _cluster: &ClusterState) -> Self {
        HighNodeUtilization {
            thresholds: args
                .thresholds
                .iter()
                .map(|(r, t)| (r.clone(), (t * 1000.0) as i64))
                .collect(),
            number_of_nodes: args.number_of_nodes,
            evictable: args.evictable_namespaces.clone(),
            only_thresholding: args
                .eviction_modes
                .iter()
                .any(|m| m == "OnlyThresholdingResources"),
        }
    }

    fn under(&self, cluster: &ClusterState, node: NodeId) -> bool {
        self.thresholds
            .iter()
            .all(|(r, t)| usage_mp(cluster, node, r).is_none_or(|u| u < *t))
    }

    fn movable(cx: &Cx<'_>, node: NodeId) -> i64 {
        cx.state
            .node_info(node)
            .pods
            .iter()
            .filter(|p| {
                let f = &cx.facts[p.index()];
                !f.static_pod
                    && f.owner
                        .as_ref()
                        .is_some_and(|o| o.kind != WorkloadKind::DaemonSet)
            })
            .count() as i64
    }
}

impl Strategy for HighNodeUtilization {
    fn name(&self) -> &'static str {
        "HighNodeUtilization"
    }

    fn measures(&self) -> String {
        "pods on underutilized nodes".to_string()
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let nodes: Vec<NodeId> = cx
            .state
            .node_ids()
            .filter(|n| !cx.state.node(*n).unschedulable)
            .collect();
        let under: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|&n| self.under(cx.state, n))
            .collect();
        if under.is_empty()
            || under.len() as i64 <= self.number_of_nodes
            || under.len() == nodes.len()
        {
            return Vec::new();
        }
        let mut out = Vec::new();
        for n in under {
            for &p in &cx.state.node_info(n).pods {
                let f = &cx.facts[p.index()];
                if self
                    .evictable
                    .as_ref()
                    .is_some_and(|ns| !ns.admits(&f.namespace))
                {
                    continue;
                }
                if self.only_thresholding {
                    let r = &cx.state.pod(p).requests;
                    let requests_any = self.thresholds.iter().any(|(res, _)| match res.as_str() {
                        "cpu" => r.milli_cpu > 0,
                        "memory" => r.memory > 0,
                        "pods" => true,
                        other => cx
                            .state
                            .interner()
                            .lookup(other)
                            .is_some_and(|s| r.scalar(s) > 0),
                    });
                    if !requests_any {
                        continue;
                    }
                }
                out.push(Nomination {
                    pod: p,
                    rule: format!("node {} is underutilized", cx.state.node(n).name),
                });
            }
        }
        out
    }

    fn node_cost(&mut self, cx: &Cx<'_>, node: NodeId) -> i64 {
        if self.under(cx.state, node) {
            Self::movable(cx, node)
        } else {
            0
        }
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        let nodes: Vec<NodeId> = cx.state.node_ids().collect();
        nodes.into_iter().map(|n| self.node_cost(cx, n)).sum()
    }
}
