//! RemovePodsViolatingNodeTaints: pods on nodes with NoSchedule taints (and
//! PreferNoSchedule ones when asked) they do not tolerate — taints added
//! after the pods were placed. Objective: such (pod, taint) pairs.

use podplace_engine::{ClusterState, NodeId, PodId};
use podplace_model::objects::{Taint, TaintEffect};

use super::{Cx, Nomination, Scope, Strategy};
use crate::policy::NodeTaintsArgs;

/// The RemovePodsViolatingNodeTaints strategy.
#[derive(Debug)]
pub struct RemovePodsViolatingNodeTaints {
    scope: Scope,
    prefer_no_schedule: bool,
    excluded: Vec<(String, Option<String>)>,
    included: Vec<(String, Option<String>)>,
}

fn split(t: &str) -> (String, Option<String>) {
    match t.split_once('=') {
        Some((k, v)) => (k.to_string(), Some(v.to_string())),
        None => (t.to_string(), None),
    }
}

impl RemovePodsViolatingNodeTaints {
    /// Reads the taint filters.
    pub fn new(args: &NodeTaintsArgs, cluster: &mut ClusterState) -> Self {
        RemovePodsViolatingNodeTaints {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            prefer_no_schedule: args.include_prefer_no_schedule,
            excluded: args.excluded_taints.iter().map(|t| split(t)).collect(),
            included: args.included_taints.iter().map(|t| split(t)).collect(),
        }
    }

    fn considered(&self, cluster: &ClusterState, t: &Taint) -> bool {
        let effect_ok = t.effect == TaintEffect::NoSchedule
            || (self.prefer_no_schedule && t.effect == TaintEffect::PreferNoSchedule);
        if !effect_ok {
            return false;
        }
        let key = cluster.interner().resolve(t.key);
        let value = cluster.interner().resolve(t.value);
        let hit = |list: &[(String, Option<String>)]| {
            list.iter()
                .any(|(k, v)| k == key && v.as_deref().is_none_or(|v| v == value))
        };
        if hit(&self.excluded) {
            return false;
        }
        self.included.is_empty() || hit(&self.included)
    }

    fn untolerated<'a>(
        &self,
        cluster: &'a ClusterState,
        pod: PodId,
        node: NodeId,
    ) -> Vec<&'a Taint> {
        let p = cluster.pod(pod);
        cluster
            .node(node)
            .taints
            .iter()
            .filter(|t| self.considered(cluster, t))
            .filter(|t| !p.tolerations.iter().any(|tol| tol.tolerates(t)))
            .collect()
    }
}

impl Strategy for RemovePodsViolatingNodeTaints {
    fn name(&self) -> &'static str {
        "RemovePodsViolatingNodeTaints"
    }

    fn measures(&self) -> String {
        "untolerated taints".to_string()
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut out = Vec::new();
        for (p, n) in super::bound(cx.state) {
            if !self.scope.admits(cx, p) {
                continue;
            }
            let bad = self.untolerated(cx.state, p, n);
            if let Some(t) = bad.first() {
                let i = cx.state.interner();
                let value = i.resolve(t.value);
                out.push(Nomination {
                    pod: p,
                    rule: format!(
                        "node {} has taint {}{}:{} that the pod does not tolerate",
                        cx.state.node(n).name,
                        i.resolve(t.key),
                        if value.is_empty() {
                            String::new()
                        } else {
                            format!("={value}")
                        },
                        t.effect.as_str()
                    ),
                });
            }
        }
        out
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        match cx.node_of(pod) {
            Some(n) => self.untolerated(cx.state, pod, n).len() as i64,
            None => 0,
        }
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        super::bound(cx.state)
            .into_iter()
            .map(|(p, n)| self.untolerated(cx.state, p, n).len() as i64)
            .sum()
    }
}
