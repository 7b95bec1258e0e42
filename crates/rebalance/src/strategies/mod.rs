//! The strategies, one module each, named as the descheduler names them.
//!
//! A strategy does two things. It *nominates* pods it would like to see
//! elsewhere (cheaply, from the engine's indexes), and it *measures* its
//! objective: a number that is a function of where pods are, lower is
//! better (pods above an even share, violating pod pairs, untolerated
//! taints, overutilization...). The planner moves a nominated pod only when
//! the replacement the engine schedules lands on another node, the
//! nominating strategy's number strictly drops and no enabled strategy's
//! number rises; so strategies cannot undo each other's moves and a plan
//! always ends.
//!
//! Objectives are measured locally: `pod_cost` covers everything that
//! changes when one pod moves (its groups, the pairs it is part of, its own
//! violation) and `node_cost` what a node contributes; the planner takes
//! both before and after a move.

pub mod high_node_utilization;
pub mod low_node_utilization;
pub mod pod_life_time;
pub mod remove_duplicates;
pub mod remove_failed_pods;
pub mod remove_pods_having_too_many_restarts;
pub mod remove_pods_violating_inter_pod_anti_affinity;
pub mod remove_pods_violating_node_affinity;
pub mod remove_pods_violating_node_taints;
pub mod remove_pods_violating_topology_spread_constraint;
pub mod soft_rules;

use k8s_openapi::jiff::Timestamp;
use podplace_engine::state::terms::{existing_term_matches, incoming_term_matches};
use podplace_engine::{ClusterState, GroupKey, HeldKind, NodeId, PodId};
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, Pod, SpreadConstraint, WhenUnsatisfiable};
use podplace_model::selector::{LabelSelector, Requirement};
use rustc_hash::FxHashMap;

use crate::policy::{Namespaces, StrategyArgs};
use crate::world::PodFacts;

/// What strategies read and the planner changes.
pub struct Cx<'a> {
    /// The engine's cluster state being evaluated (read only: the planner
    /// applies the moves).
    pub state: &'a ClusterState,
    /// Facts of every pod, indexed by [`PodId`].
    pub facts: &'a [PodFacts],
    /// The time lifecycle strategies measure against.
    pub now: Timestamp,
}

impl Cx<'_> {
    /// The node a pod is bound to (alive pods only).
    pub fn node_of(&self, pod: PodId) -> Option<NodeId> {
        self.state.pod_node(pod)
    }
}

/// A pod a strategy would like to see elsewhere, and why.
#[derive(Debug, Clone)]
pub struct Nomination {
    /// The pod.
    pub pod: PodId,
    /// The rule it breaks, in words.
    pub rule: String,
}

/// A strategy's side of the planner.
pub trait Strategy {
    /// The plugin name.
    fn name(&self) -> &'static str;
    /// What the objective counts, in words (`pods above an even share per node`).
    fn measures(&self) -> String;
    /// Whether the replacement must land on another node for the eviction
    /// to help (false for lifecycle strategies: a fresh pod is the point).
    fn requires_move(&self) -> bool {
        true
    }
    /// Pods this strategy would move, in the order it prefers.
    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination>;
    /// The part of the objective that depends on where `pod` is (the pod
    /// bound where it is now).
    fn pod_cost(&mut self, _cx: &Cx<'_>, _pod: PodId) -> i64 {
        0
    }
    /// What `node` contributes to the objective.
    fn node_cost(&mut self, _cx: &Cx<'_>, _node: NodeId) -> i64 {
        0
    }
    /// The whole objective.
    fn total(&mut self, cx: &Cx<'_>) -> i64;
    /// The rule `pod` breaks in the current state, when it can change as
    /// other pods move (the planner refreshes nominations with it).
    fn explain(&mut self, _cx: &Cx<'_>, _pod: PodId) -> Option<String> {
        None
    }
    /// Most evictions this strategy may make from one node (its own
    /// `evictionLimits.node`), beyond the policy's global limits.
    fn node_limit(&self) -> Option<u32> {
        None
    }
    /// The topology groups whose counts this strategy reads over and over:
    /// the planner keeps them counted on its state while it moves pods, so
    /// a read is a lookup instead of a count.
    fn groups(&self, _state: &ClusterState) -> Vec<GroupKey> {
        Vec::new()
    }
}

/// The single-term matching groups of the terms of `kinds` that bound pods
/// hold (what [`pair_cost`] reads).
pub fn term_groups(state: &ClusterState, kinds: &[HeldKind]) -> Vec<GroupKey> {
    let mut keys: Vec<GroupKey> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for (pod, _) in state.bound_pods() {
        let Some(entry) = state.pod_entry(pod) else {
            continue;
        };
        let t = &entry.terms;
        let ids = kinds.iter().flat_map(|k| -> Vec<podplace_engine::TermId> {
            match k {
                HeldKind::RequiredAntiAffinity => t.required_anti_affinity.to_vec(),
                HeldKind::RequiredAffinity => t.required_affinity.to_vec(),
                HeldKind::PreferredAffinity => {
                    t.preferred_affinity.iter().map(|&(id, _)| id).collect()
                }
                HeldKind::PreferredAntiAffinity => t
                    .preferred_anti_affinity
                    .iter()
                    .map(|&(id, _)| id)
                    .collect(),
            }
        });
        for id in ids {
            if seen.insert(id) {
                keys.push(GroupKey::Matching(smallvec::smallvec![id]));
            }
        }
    }
    keys
}

/// Builds the strategy for a configured plugin.
pub fn build(
    args: &StrategyArgs,
    cluster: &mut ClusterState,
    facts: &[PodFacts],
) -> Box<dyn Strategy> {
    match args {
        StrategyArgs::RemoveDuplicates(a) => Box::new(remove_duplicates::RemoveDuplicates::new(a, cluster, facts)),
        StrategyArgs::LowNodeUtilization(a) => Box::new(low_node_utilization::LowNodeUtilization::new(a, cluster)),
        StrategyArgs::HighNodeUtilization(a) => Box::new(high_node_utilization::HighNodeUtilization::new(a, cluster)),
        StrategyArgs::InterPodAntiAffinity(a) => Box::new(
            remove_pods_violating_inter_pod_anti_affinity::RemovePodsViolatingInterPodAntiAffinity::new(a, cluster),
        ),
        StrategyArgs::NodeAffinity(a) => Box::new(remove_pods_violating_node_affinity::RemovePodsViolatingNodeAffinity::new(a, cluster)),
        StrategyArgs::NodeTaints(a) => Box::new(remove_pods_violating_node_taints::RemovePodsViolatingNodeTaints::new(a, cluster)),
        StrategyArgs::TopologySpread(a) => Box::new(
            remove_pods_violating_topology_spread_constraint::RemovePodsViolatingTopologySpreadConstraint::new(a, cluster),
        ),
        StrategyArgs::TooManyRestarts(a) => Box::new(
            remove_pods_having_too_many_restarts::RemovePodsHavingTooManyRestarts::new(a, cluster),
        ),
        StrategyArgs::PodLifeTime(a) => Box::new(pod_life_time::PodLifeTime::new(a, cluster)),
        StrategyArgs::RemoveFailedPods(a) => Box::new(remove_failed_pods::RemoveFailedPods::new(a, cluster)),
        StrategyArgs::SoftRules(a) => Box::new(soft_rules::SoftRules::new(a, cluster)),
    }
}

/// The namespace and label filters most strategies take.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    namespaces: Option<Namespaces>,
    selector: Option<LabelSelector>,
}

impl Scope {
    /// Compiles the filters against the cluster's interner.
    pub fn new(
        namespaces: &Option<Namespaces>,
        selector: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
        cluster: &mut ClusterState,
    ) -> Scope {
        Scope {
            namespaces: namespaces.clone(),
            selector: selector
                .as_ref()
                .and_then(|s| cluster.compile_selector(Some(s)).ok()),
        }
    }

    /// Whether the pod is one this strategy may nominate.
    pub fn admits(&self, cx: &Cx<'_>, pod: PodId) -> bool {
        let f = &cx.facts[pod.index()];
        if let Some(ns) = &self.namespaces {
            if !ns.admits(&f.namespace) {
                return false;
            }
        }
        match &self.selector {
            Some(sel) => sel.matches(&cx.state.pod(pod).labels, cx.state.interner()),
            None => true,
        }
    }
}

/// Bound, alive pods that have not finished, in id order: the pods the
/// descheduler's `ListPodsOnANode` returns (it leaves out Succeeded and
/// Failed ones).
pub fn bound(cluster: &ClusterState) -> Vec<(PodId, NodeId)> {
    cluster.bound_pods().collect()
}

/// Bound, alive pods including finished ones, in id order: what
/// RemoveFailedPods and PodLifeTime list (`ListAllPodsOnANode`).
pub fn bound_with_finished(cluster: &ClusterState) -> Vec<(PodId, NodeId)> {
    cluster.bound_pods_with_finished().collect()
}

/// Renders a compiled label selector (`app In [demo-app]`).
pub fn selector_text(sel: &LabelSelector, cluster: &ClusterState) -> String {
    let r = |s| cluster.interner().resolve(s).to_string();
    match sel {
        LabelSelector::Nothing => "no pods (nil selector)".to_string(),
        LabelSelector::All(reqs) if reqs.is_empty() => "every pod".to_string(),
        LabelSelector::All(reqs) => reqs
            .iter()
            .map(|q| match q {
                Requirement::In(k, vs) if vs.len() == 1 => format!("{}={}", r(*k), r(vs[0])),
                Requirement::In(k, vs) => format!(
                    "{} in ({})",
                    r(*k),
                    vs.iter().map(|v| r(*v)).collect::<Vec<_>>().join(",")
                ),
                Requirement::NotIn(k, vs) => format!(
                    "{} notin ({})",
                    r(*k),
                    vs.iter().map(|v| r(*v)).collect::<Vec<_>>().join(",")
                ),
                Requirement::Exists(k) => r(*k),
                Requirement::DoesNotExist(k) => format!("!{}", r(*k)),
                Requirement::Gt(k, b) => format!("{} > {b}", r(*k)),
                Requirement::Lt(k, b) => format!("{} < {b}", r(*k)),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Renders an affinity term (`app=demo-app on kubernetes.io/hostname`).
pub fn term_text(term: &AffinityTerm, cluster: &ClusterState) -> String {
    format!(
        "{} per {}",
        selector_text(&term.selector, cluster),
        cluster.interner().resolve(term.topology_key)
    )
}

/// Counts, for `pod` bound on `node`, the ordered pairs of pods in one
/// topology domain where one holds a term of the kinds asked for that
/// matches the other: the pod's own terms against others, and others' terms
/// against the pod. Each pair is weighted by the term's weight (1 for
/// required terms) and signed by `sign(kind)`.
pub fn pair_cost(
    cluster: &ClusterState,
    pod: PodId,
    kinds: &[HeldKind],
    sign: impl Fn(HeldKind) -> i64,
) -> i64 {
    let Some(entry) = cluster.pod_entry(pod) else {
        return 0;
    };
    let Some(node) = entry.node else {
        return 0;
    };
    // The pod's own terms, as the cluster's shared term ids.
    let terms = &entry.terms;
    let mut own: smallvec::SmallVec<[(podplace_engine::TermId, HeldKind, i64); 4]> =
        smallvec::SmallVec::new();
    for k in kinds {
        match k {
            HeldKind::RequiredAntiAffinity => {
                own.extend(terms.required_anti_affinity.iter().map(|&t| (t, *k, 1)))
            }
            HeldKind::RequiredAffinity => {
                own.extend(terms.required_affinity.iter().map(|&t| (t, *k, 1)))
            }
            HeldKind::PreferredAffinity => own.extend(
                terms
                    .preferred_affinity
                    .iter()
                    .map(|&(t, w)| (t, *k, i64::from(w))),
            ),
            HeldKind::PreferredAntiAffinity => own.extend(
                terms
                    .preferred_anti_affinity
                    .iter()
                    .map(|&(t, w)| (t, *k, i64::from(w))),
            ),
        }
    }
    let pod_terms = terms.clone();
    let mut total = 0i64;
    for (id, kind, weight) in own {
        let key = cluster.term(id).topology_key;
        let Some(value) = cluster.node(node).labels.get(key) else {
            continue;
        };
        let self_match = incoming_term_matches(
            cluster.term(id),
            cluster.pod(pod),
            cluster.namespaces(),
            cluster.interner(),
        );
        let counts = cluster.matching_counts(&[cluster.term(id)]);
        let mut n = counts
            .domains(key)
            .and_then(|d| d.get(&value))
            .copied()
            .unwrap_or(0);
        if self_match {
            n -= 1;
        }
        total += sign(kind) * weight * n.max(0);
    }
    let p = cluster.pod(pod);
    let empty = Labels::default();
    let ns_labels = cluster.namespace_labels(p.namespace).unwrap_or(&empty);
    let node_labels = &cluster.node(node).labels;
    let mut sym = 0i64;
    for g in cluster.held_groups_for(&p.labels) {
        if !kinds.contains(&g.kind) {
            continue;
        }
        let term = cluster.term(g.term);
        let Some(value) = node_labels.get(term.topology_key) else {
            continue;
        };
        if !existing_term_matches(term, p, ns_labels, cluster.interner()) {
            continue;
        }
        let mut n = g.domains.get(&value).copied().unwrap_or(0);
        let holds = match g.kind {
            HeldKind::RequiredAntiAffinity => pod_terms.required_anti_affinity.contains(&g.term),
            HeldKind::RequiredAffinity => pod_terms.required_affinity.contains(&g.term),
            HeldKind::PreferredAffinity => {
                pod_terms.preferred_affinity.contains(&(g.term, g.weight))
            }
            HeldKind::PreferredAntiAffinity => pod_terms
                .preferred_anti_affinity
                .contains(&(g.term, g.weight)),
        };
        if holds {
            n -= 1;
        }
        sym += sign(g.kind) * i64::from(g.weight) * n.max(0);
    }
    total + sym
}

/// A group of pods one topology spread constraint balances: the pods of a
/// namespace its selector matches, over the domains of the nodes eligible
/// for the pods that carry it.
#[derive(Debug, Clone)]
pub struct SpreadGroup {
    /// Namespace.
    pub namespace: podplace_model::intern::Sym,
    /// The constraint.
    pub constraint: SpreadConstraint,
    /// Per node (by index): the position of its domain in `domains`, or
    /// [`SpreadGroup::INELIGIBLE`]. Dense, so that counting visits only the
    /// nodes holding matching pods.
    domain_of: Vec<u32>,
    /// The distinct domains of the eligible nodes.
    pub domains: Vec<podplace_model::intern::Sym>,
}

/// The distinct spread constraints of the bound pods whose
/// whenUnsatisfiable is one of `kinds`.
pub fn spread_groups(cluster: &ClusterState, kinds: &[WhenUnsatisfiable]) -> Vec<SpreadGroup> {
    let mut seen: rustc_hash::FxHashSet<(podplace_model::intern::Sym, SpreadConstraint)> =
        rustc_hash::FxHashSet::default();
    let mut groups = Vec::new();
    let pods: Vec<PodId> = cluster.bound_pods().map(|(p, _)| p).collect();
    for id in pods {
        let pod = cluster.pod(id);
        for c in &pod.spread {
            if !kinds.contains(&c.when_unsatisfiable) || !seen.insert((pod.namespace, c.clone())) {
                continue;
            }
            let mut domain_of = vec![SpreadGroup::INELIGIBLE; cluster.nodes().len()];
            let mut domains = Vec::new();
            let mut position: FxHashMap<podplace_model::intern::Sym, u32> = FxHashMap::default();
            for n in cluster.node_ids() {
                let node = cluster.node(n);
                let Some(v) = node.labels.get(c.topology_key) else {
                    continue;
                };
                if c.honor_node_affinity
                    && !podplace_engine::plugins::node_affinity::matches(
                        pod,
                        node,
                        cluster.interner(),
                    )
                {
                    continue;
                }
                if c.honor_node_taints
                    && podplace_engine::plugins::taint_toleration::untolerated_taint(pod, node)
                        .is_some()
                {
                    continue;
                }
                domain_of[n.index()] = *position.entry(v).or_insert_with(|| {
                    domains.push(v);
                    domains.len() as u32 - 1
                });
            }
            groups.push(SpreadGroup {
                namespace: pod.namespace,
                constraint: c.clone(),
                domain_of,
                domains,
            });
        }
    }
    groups
}

impl SpreadGroup {
    /// `domain_of` of a node outside the group's eligible nodes.
    const INELIGIBLE: u32 = u32::MAX;

    /// Whether moving `pod` changes this group's counts.
    pub fn counts_pod(&self, pod: &Pod, cluster: &ClusterState) -> bool {
        pod.namespace == self.namespace
            && self
                .constraint
                .selector
                .matches(&pod.labels, cluster.interner())
    }

    /// The position in [`SpreadGroup::domains`] of an eligible node's domain.
    pub fn domain_of(&self, node: NodeId) -> Option<usize> {
        match self.domain_of.get(node.index()) {
            Some(&d) if d != Self::INELIGIBLE => Some(d as usize),
            _ => None,
        }
    }

    /// Matching pods per domain, parallel to [`SpreadGroup::domains`], and
    /// the eligible nodes holding any, from the cluster's kept counts.
    pub fn domain_counts(&self, cluster: &ClusterState) -> (Vec<i64>, Vec<NodeId>) {
        let counts = cluster.spread_counts(self.namespace, &self.constraint.selector);
        let mut by_domain = vec![0i64; self.domains.len()];
        let mut occupied = Vec::new();
        for &n in counts.occupied() {
            if let Some(d) = self.domain_of(n) {
                by_domain[d] += i64::from(counts.get(n));
                occupied.push(n);
            }
        }
        (by_domain, occupied)
    }

    /// The group of the engine's that keeps this group's counts.
    pub fn key(&self) -> GroupKey {
        GroupKey::Spread {
            namespace: self.namespace,
            selector: self.constraint.selector.clone(),
        }
    }

    /// The fewest pod moves that bring every domain within maxSkew of the
    /// emptiest, and the band `[low, high]` counts must end in.
    pub fn cost(&self, cluster: &ClusterState) -> (i64, i64, i64) {
        let (counts, _) = self.domain_counts(cluster);
        min_moves(&counts, i64::from(self.constraint.max_skew))
    }
}

/// The fewest single-pod moves that bring `counts` within `skew` of each
/// other (max − min ≤ skew), with the target band `[m, m + skew]`.
pub fn min_moves(counts: &[i64], skew: i64) -> (i64, i64, i64) {
    let d = counts.len() as i64;
    if d < 2 {
        return (0, 0, i64::MAX);
    }
    let total: i64 = counts.iter().sum();
    let max = counts.iter().copied().max().unwrap_or(0);
    let min = counts.iter().copied().min().unwrap_or(0);
    if max - min <= skew {
        return (0, min, min + skew);
    }
    let lo_m = ((total - d * skew) as f64 / d as f64).ceil().max(0.0) as i64;
    let hi_m = total / d;
    let mut best = (i64::MAX, 0, 0);
    for m in lo_m..=hi_m.max(lo_m) {
        let above: i64 = counts.iter().map(|&c| (c - (m + skew)).max(0)).sum();
        let below: i64 = counts.iter().map(|&c| (m - c).max(0)).sum();
        let cost = above.max(below);
        if cost < best.0 {
            best = (cost, m, m + skew);
        }
    }
    best
}

/// Whether `node` takes the pod by its node selector, required node
/// affinity and NoSchedule/NoExecute taints, and is not cordoned.
pub fn node_takes(pod: &Pod, cluster: &ClusterState, node: NodeId) -> bool {
    let n = cluster.node(node);
    !n.unschedulable
        && podplace_engine::plugins::node_affinity::matches(pod, n, cluster.interner())
        && podplace_engine::plugins::taint_toleration::untolerated_taint(pod, n).is_none()
}

/// Labels of a pod, for selectors.
pub fn labels_of(cluster: &ClusterState, pod: PodId) -> &Labels {
    &cluster.pod(pod).labels
}

#[cfg(test)]
mod tests {
    use super::min_moves;

    #[test]
    fn fewest_moves_to_balance_domains() {
        let table: [(&[i64], i64, i64); 7] = [
            (&[5, 0, 0], 1, 3),
            (&[4, 0, 0], 1, 2),
            (&[2, 2, 1], 1, 0),
            (&[3, 3, 0, 0], 1, 2),
            (&[6, 0], 2, 2),
            (&[1], 1, 0),
            (&[10, 0, 0, 0, 0], 1, 8),
        ];
        for (counts, skew, want) in table {
            assert_eq!(min_moves(counts, skew).0, want, "{counts:?} skew {skew}");
        }
    }
}
