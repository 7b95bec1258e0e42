//! RemovePodsViolatingTopologySpreadConstraint: topology domains whose
//! matching pods differ by more than maxSkew (after node loss, or because
//! ScheduleAnyway let them). Objective: the fewest pod moves that bring every
//! constraint back within its maxSkew — what the descheduler sets out to
//! evict — so each kept eviction removes one.

use podplace_engine::PodId;
use podplace_engine::{ClusterState, GroupKey};
use podplace_model::objects::WhenUnsatisfiable;

use super::{
    min_moves, selector_text, spread_groups, Cx, Nomination, Scope, SpreadGroup, Strategy,
};
use crate::policy::TopologySpreadArgs;

/// Pods matching a group, per domain above `high` (or above `low` when no
/// domain is above the band), for nomination.
pub fn nominate_group(
    cx: &Cx<'_>,
    g: &SpreadGroup,
    scope: &Scope,
    rule_prefix: &str,
) -> Vec<Nomination> {
    let (counts, occupied) = g.domain_counts(cx.state);
    let (cost, low, high) = min_moves(&counts, i64::from(g.constraint.max_skew));
    if cost <= 0 {
        return Vec::new();
    }
    let min = counts.iter().copied().min().unwrap_or(0);
    let above_band = counts.iter().any(|&c| c > high);
    let cut = if above_band { high } else { low };
    let key = cx
        .state
        .interner()
        .resolve(g.constraint.topology_key)
        .to_string();
    let sel = selector_text(&g.constraint.selector, cx.state);
    let mut out = Vec::new();
    for n in occupied {
        let Some(d) = g.domain_of(n) else { continue };
        let c = counts[d];
        if c <= cut {
            continue;
        }
        let pods = cx.state.node_info(n).pods.clone();
        for p in pods {
            let pod = cx.state.pod(p);
            if pod.terminating || !g.counts_pod(pod, cx.state) || !scope.admits(cx, p) {
                continue;
            }
            out.push(Nomination {
                pod: p,
                rule: format!(
                    "{rule_prefix} {sel} per {key}, maxSkew {}: {} {} holds {c}, the emptiest {min}",
                    g.constraint.max_skew,
                    key,
                    cx.state.interner().resolve(g.domains[d]),
                ),
            });
        }
    }
    out.sort_by_key(|n| {
        (
            cx.state.pod(n.pod).priority,
            cx.facts[n.pod.index()].qos,
            n.pod,
        )
    });
    out
}

/// The RemovePodsViolatingTopologySpreadConstraint strategy.
#[derive(Debug)]
pub struct RemovePodsViolatingTopologySpreadConstraint {
    scope: Scope,
    groups: Vec<SpreadGroup>,
}

impl RemovePodsViolatingTopologySpreadConstraint {
    /// Collects the constraint groups of the kinds asked for.
    pub fn new(args: &TopologySpreadArgs, cluster: &mut ClusterState) -> Self {
        let mut kinds = Vec::new();
        if args.constraints.iter().any(|c| c == "DoNotSchedule") {
            kinds.push(WhenUnsatisfiable::DoNotSchedule);
        }
        if args.constraints.iter().any(|c| c == "ScheduleAnyway") {
            kinds.push(WhenUnsatisfiable::ScheduleAnyway);
        }
        RemovePodsViolatingTopologySpreadConstraint {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            groups: spread_groups(cluster, &kinds),
        }
    }
}

impl Strategy for RemovePodsViolatingTopologySpreadConstraint {
    fn name(&self) -> &'static str {
        "RemovePodsViolatingTopologySpreadConstraint"
    }

    fn measures(&self) -> String {
        "moves needed to meet maxSkew".to_string()
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut out = Vec::new();
        for g in &self.groups {
            let prefix = match g.constraint.when_unsatisfiable {
                WhenUnsatisfiable::DoNotSchedule => "topology spread (DoNotSchedule)",
                WhenUnsatisfiable::ScheduleAnyway => "topology spread (ScheduleAnyway)",
            };
            out.extend(nominate_group(cx, g, &self.scope, prefix));
        }
        out
    }

    fn groups(&self, _state: &ClusterState) -> Vec<GroupKey> {
        self.groups.iter().map(SpreadGroup::key).collect()
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        let p = cx.state.pod(pod).clone();
        let mut c = 0;
        for g in &self.groups {
            if g.counts_pod(&p, cx.state) {
                c += g.cost(cx.state).0;
            }
        }
        c
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        self.groups.iter().map(|g| g.cost(cx.state).0).sum()
    }
}
