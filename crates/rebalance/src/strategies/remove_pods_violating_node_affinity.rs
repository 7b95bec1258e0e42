//! RemovePodsViolatingNodeAffinity: pods whose node no longer satisfies
//! their required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`),
//! or, when asked, pods a node with more of their preferred terms would suit
//! better. Objective: required violations (each worth 10,000) plus the
//! weight of preferred terms the pod's node does not match.

use podplace_engine::plugins::node_affinity;
use podplace_engine::ClusterState;
use podplace_engine::{NodeId, PodId};
use podplace_model::selector::NodeSelectorTerm;
use rustc_hash::FxHashMap;

use super::{node_takes, Cx, Nomination, Scope, Strategy};
use crate::policy::NodeAffinityArgs;

/// What one required violation weighs against preferred weights.
pub const REQUIRED_WEIGHT: i64 = 10_000;

/// The RemovePodsViolatingNodeAffinity strategy.
#[derive(Debug)]
pub struct RemovePodsViolatingNodeAffinity {
    scope: Scope,
    required: bool,
    preferred: bool,
    best: FxHashMap<Vec<(i32, NodeSelectorTerm)>, i64>,
}

impl RemovePodsViolatingNodeAffinity {
    /// Reads which affinity types to enforce.
    pub fn new(args: &NodeAffinityArgs, cluster: &mut ClusterState) -> Self {
        let has = |t: &str| args.node_affinity_type.iter().any(|x| x == t);
        RemovePodsViolatingNodeAffinity {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            required: has("requiredDuringSchedulingIgnoredDuringExecution"),
            preferred: has("preferredDuringSchedulingIgnoredDuringExecution"),
            best: FxHashMap::default(),
        }
    }

    fn cost_at(&self, cluster: &ClusterState, pod: PodId, node: NodeId) -> i64 {
        let p = cluster.pod(pod);
        let n = cluster.node(node);
        let mut c = 0;
        if self.required && !node_affinity::matches(p, n, cluster.interner()) {
            c += REQUIRED_WEIGHT;
        }
        if self.preferred {
            let total: i64 = p
                .preferred_node_affinity
                .iter()
                .map(|(w, _)| i64::from(*w))
                .sum();
            c += total - node_affinity::score(p, n, cluster.interner());
        }
        c
    }

    fn best_preferred(&mut self, cluster: &ClusterState, pod: PodId) -> i64 {
        let p = cluster.pod(pod);
        if let Some(&b) = self.best.get(&p.preferred_node_affinity) {
            return b;
        }
        let b = cluster
            .node_ids()
            .filter(|&n| node_takes(p, cluster, n))
            .map(|n| node_affinity::score(p, cluster.node(n), cluster.interner()))
            .max()
            .unwrap_or(0);
        self.best.insert(p.preferred_node_affinity.clone(), b);
        b
    }
}

impl Strategy for RemovePodsViolatingNodeAffinity {
    fn name(&self) -> &'static str {
        "RemovePodsViolatingNodeAffinity"
    }

    fn measures(&self) -> String {
        match (self.required, self.preferred) {
            (true, false) => "node-affinity violations (x10000)".to_string(),
            (false, true) => "missed preferred node-affinity weight".to_string(),
            _ => "node-affinity violations (x10000) and missed preferred weight".to_string(),
        }
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut out = Vec::new();
        for (p, n) in super::bound(cx.state) {
            if !self.scope.admits(cx, p) {
                continue;
            }
            let pod = cx.state.pod(p);
            let node = cx.state.node(n);
            if self.required && !node_affinity::matches(pod, node, cx.state.interner()) {
                out.push(Nomination {
                    pod: p,
                    rule: format!(
                        "node {} no longer matches its required node affinity/selector",
                        node.name
                    ),
                });
                continue;
            }
            if self.preferred && !pod.preferred_node_affinity.is_empty() {
                let here = node_affinity::score(pod, node, cx.state.interner());
                let node_name = node.name.clone();
                let best = self.best_preferred(cx.state, p);
                if best > here {
                    out.push(Nomination {
                        pod: p,
                        rule: format!(
                            "node {node_name} matches preferred node-affinity weight {here}; another node matches {best}"
                        ),
                    });
                }
            }
        }
        out
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        match cx.node_of(pod) {
            Some(n) => self.cost_at(cx.state, pod, n),
            None => 0,
        }
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        super::bound(cx.state)
            .into_iter()
            .map(|(p, n)| self.cost_at(cx.state, p, n))
            .sum()
    }
}
