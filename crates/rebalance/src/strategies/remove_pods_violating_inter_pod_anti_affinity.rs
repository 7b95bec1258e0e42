//! RemovePodsViolatingInterPodAntiAffinity: pods sharing a topology domain
//! with pods their required anti-affinity (or another pod's, symmetrically)
//! forbids — which happens when the rule was added after they were placed.
//! Objective: the ordered (holder, matched pod) pairs in one domain.

use podplace_engine::{ClusterState, GroupKey, HeldKind, PodId};

use super::{pair_cost, term_text, Cx, Nomination, Scope, Strategy};
use crate::policy::InterPodAntiAffinityArgs;

/// The RemovePodsViolatingInterPodAntiAffinity strategy.
#[derive(Debug)]
pub struct RemovePodsViolatingInterPodAntiAffinity {
    scope: Scope,
}

impl RemovePodsViolatingInterPodAntiAffinity {
    /// Compiles the filters.
    pub fn new(args: &InterPodAntiAffinityArgs, cluster: &mut ClusterState) -> Self {
        RemovePodsViolatingInterPodAntiAffinity {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
        }
    }
}

fn cost(cluster: &ClusterState, pod: PodId) -> i64 {
    pair_cost(cluster, pod, &[HeldKind::RequiredAntiAffinity], |_| 1)
}

impl Strategy for RemovePodsViolatingInterPodAntiAffinity {
    fn name(&self) -> &'static str {
        "RemovePodsViolatingInterPodAntiAffinity"
    }

    fn measures(&self) -> String {
        "forbidden pod pairs".to_string()
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut holders = Vec::new();
        let mut targets = Vec::new();
        for (p, _) in super::bound(cx.state) {
            if !self.scope.admits(cx, p) {
                continue;
            }
            let pod = cx.state.pod(p);
            let has_terms = !pod.affinity.required_anti_affinity.is_empty();
            let held = cx
                .state
                .held_groups_for(&pod.labels)
                .any(|g| g.kind == HeldKind::RequiredAntiAffinity);
            if !has_terms && !held {
                continue;
            }
            if cost(cx.state, p) <= 0 {
                continue;
            }
            let own = cx
                .state
                .pod(p)
                .affinity
                .required_anti_affinity
                .first()
                .cloned();
            match own {
                Some(t) if pair_cost_own(cx.state, p) > 0 => holders.push(Nomination {
                    pod: p,
                    rule: format!(
                        "required pod anti-affinity {} is violated where it runs",
                        term_text(&t, cx.state)
                    ),
                }),
                _ => targets.push(Nomination {
                    pod: p,
                    rule: "another pod's required anti-affinity forbids it where it runs"
                        .to_string(),
                }),
            }
        }
        holders.sort_by_key(|n| {
            (
                cx.state.pod(n.pod).priority,
                cx.facts[n.pod.index()].qos,
                n.pod,
            )
        });
        targets.sort_by_key(|n| {
            (
                cx.state.pod(n.pod).priority,
                cx.facts[n.pod.index()].qos,
                n.pod,
            )
        });
        holders.extend(targets);
        holders
    }

    fn groups(&self, state: &ClusterState) -> Vec<GroupKey> {
        super::term_groups(state, &[HeldKind::RequiredAntiAffinity])
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        cost(cx.state, pod)
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        let pods: Vec<PodId> = super::bound(cx.state).into_iter().map(|(p, _)| p).collect();
        // Each pair is seen from both of its pods.
        pods.into_iter().map(|p| cost(cx.state, p)).sum::<i64>() / 2
    }
}

/// Pairs where the pod's own terms match others.
fn pair_cost_own(cluster: &ClusterState, pod: PodId) -> i64 {
    let Some(node) = cluster.pod_node(pod) else {
        return 0;
    };
    let p = cluster.pod(pod).clone();
    let labels = cluster.node(node).labels.clone();
    let mut n = 0;
    for t in &p.affinity.required_anti_affinity {
        let Some(v) = labels.get(t.topology_key) else {
            continue;
        };
        let self_match = podplace_engine::state::terms::incoming_term_matches(
            t,
            &p,
            cluster.namespaces(),
            cluster.interner(),
        );
        let c = cluster
            .matching_counts(&[t])
            .domains(t.topology_key)
            .and_then(|d| d.get(&v))
            .copied()
            .unwrap_or(0);
        n += c - i64::from(self_match);
    }
    n
}
