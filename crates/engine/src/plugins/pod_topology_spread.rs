//! PodTopologySpread: DoNotSchedule constraints filter on skew;
//! ScheduleAnyway constraints (or the system defaults, for pods with no
//! constraints that a Service/ReplicaSet/StatefulSet/ReplicationController
//! selects) score.

use podplace_model::intern::Sym;
use podplace_model::objects::{Pod, SpreadConstraint, WhenUnsatisfiable};
use podplace_model::selector::{LabelSelector, Requirement};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{node_affinity, taint_toleration};
use crate::cluster::{Cluster, NodeId, SpreadCounts};
use crate::status::{Code, Plugin, Status};

/// Filter reason when the node lacks a constraint's topology key.
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
/// Filter reason when placing the pod would exceed maxSkew.
pub const REASON_SKEW: &str = "node(s) didn't match pod topology spread constraints";

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

/// A constraint as the plugin evaluates it.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The constraint.
    pub spec: SpreadConstraint,
    /// Whether the incoming pod matches the selector itself.
    pub self_match: bool,
}

/// Whether a node counts for a constraint under its inclusion policies.
fn includes(cluster: &Cluster, c: &SpreadConstraint, pod: &Pod, node: NodeId) -> bool {
    let n = cluster.node(node);
    (!c.honor_node_affinity || node_affinity::matches(pod, n, &cluster.interner))
        && (!c.honor_node_taints || taint_toleration::untolerated_taint(pod, n).is_none())
}

fn has_all_keys(cluster: &Cluster, constraints: &[Constraint], node: NodeId) -> bool {
    let labels = &cluster.node(node).labels;
    constraints.iter().all(|c| labels.has(c.spec.topology_key))
}

/// Matching pods per node for each constraint, prepared once per cycle so
/// the per-node loops only read.
fn per_node_counts(
    cluster: &mut Cluster,
    pod: &Pod,
    constraints: &[Constraint],
) -> Vec<Option<SpreadCounts>> {
    constraints
        .iter()
        .map(|c| {
            // kube-scheduler counts nothing for an everything-selector.
            if c.spec.selector.is_everything() {
                return None;
            }
            cluster.ensure_spread_counts(pod.namespace, &c.spec.selector);
            cluster
                .spread_counts(pod.namespace, &c.spec.selector)
                .cloned()
        })
        .collect()
}

fn count(counts: &Option<SpreadCounts>, node: NodeId) -> i64 {
    counts
        .as_ref()
        .and_then(|c| c.get(&node))
        .map_or(0, |&c| i64::from(c))
}

/// What PreFilter computed.
#[derive(Debug, Clone, Default)]
pub struct FilterState {
    /// The DoNotSchedule constraints.
    pub constraints: Vec<Constraint>,
    /// Per constraint: matching pods per domain (eligible nodes only).
    pub domain_counts: Vec<FxHashMap<Sym, i64>>,
}

impl FilterState {
    /// The global minimum for constraint `i`, honouring minDomains.
    pub fn min_match(&self, i: usize) -> i64 {
        let domains = &self.domain_counts[i];
        let min_domains = self.constraints[i].spec.min_domains.unwrap_or(1);
        if (domains.len() as i64) < i64::from(min_domains) {
            return 0;
        }
        domains
            .values()
            .copied()
            .min()
            .unwrap_or(i64::from(i32::MAX))
    }
}

fn constraints_of(pod: &Pod, cluster: &Cluster, action: WhenUnsatisfiable) -> Vec<Constraint> {
    pod.spread
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
        .map(|c| Constraint {
            self_match: c.selector.matches(&pod.labels, &cluster.interner),
            spec: c.clone(),
        })
        .collect()
}

/// PreFilter: `None` means Skip (no DoNotSchedule constraints).
pub fn pre_filter(cluster: &mut Cluster, pod: &Pod) -> Option<FilterState> {
    let constraints = constraints_of(pod, cluster, WhenUnsatisfiable::DoNotSchedule);
    if constraints.is_empty() {
        return None;
    }
    let mut domain_counts = vec![FxHashMap::default(); constraints.len()];
    let counts = per_node_counts(cluster, pod, &constraints);
    for node in cluster.node_ids() {
        if !has_all_keys(cluster, &constraints, node) {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !includes(cluster, &c.spec, pod, node) {
                continue;
            }
            let Some(value) = cluster.node(node).labels.get(c.spec.topology_key) else {
                continue;
            };
            *domain_counts[i].entry(value).or_insert(0) += count(&counts[i], node);
        }
    }
    Some(FilterState {
        constraints,
        domain_counts,
    })
}

/// Updates the state for a pod added (`+1`) or removed (`-1`) on `node`
/// (preemption's dry run).
pub fn update_with_pod(
    state: &mut FilterState,
    cluster: &Cluster,
    pod: &Pod,
    other: &Pod,
    node: NodeId,
    delta: i64,
) {
    if other.namespace != pod.namespace || !has_all_keys(cluster, &state.constraints, node) {
        return;
    }
    for (i, c) in state.constraints.iter().enumerate() {
        if !c.spec.selector.matches(&other.labels, &cluster.interner)
            || !includes(cluster, &c.spec, pod, node)
        {
            continue;
        }
        if let Some(value) = cluster.node(node).labels.get(c.spec.topology_key) {
            *state.domain_counts[i].entry(value).or_insert(0) += delta;
        }
    }
}

/// Filter.
pub fn filter(state: &FilterState, cluster: &Cluster, node: NodeId) -> Status {
    let labels = &cluster.node(node).labels;
    for (i, c) in state.constraints.iter().enumerate() {
        let Some(value) = labels.get(c.spec.topology_key) else {
            return Status::reject(
                Code::UnschedulableAndUnresolvable,
                Plugin::PodTopologySpread,
                REASON_MISSING_LABEL,
            );
        };
        let matched = state.domain_counts[i].get(&value).copied().unwrap_or(0);
        let skew = matched + i64::from(c.self_match) - state.min_match(i);
        if skew > i64::from(c.spec.max_skew) {
            return Status::reject(Code::Unschedulable, Plugin::PodTopologySpread, REASON_SKEW);
        }
    }
    Status::success()
}

/// The selector of the system default constraints: what the Services,
/// ReplicationControllers, ReplicaSets and StatefulSets that own or select
/// the pod select.
pub fn default_selector(cluster: &mut Cluster, pod: &Pod) -> LabelSelector {
    let mut requirements: Vec<Requirement> = Vec::new();
    let mut label_set: Vec<(Sym, Sym)> = Vec::new();
    for (ns, selector) in &cluster.service_selectors {
        if *ns == pod.namespace
            && !selector.is_nothing()
            && selector.matches(&pod.labels, &cluster.interner)
        {
            for r in selector.requirements() {
                if let Some(pair) = r.necessary_pair() {
                    if let Some(existing) = label_set.iter_mut().find(|(k, _)| *k == pair.0) {
                        existing.1 = pair.1;
                    } else {
                        label_set.push(pair);
                    }
                }
            }
        }
    }
    if let Some(owner) = &pod.owner {
        let name = cluster.interner.lookup(&owner.name);
        let find = |list: &[(Sym, Sym, LabelSelector)]| {
            list.iter()
                .find(|(ns, n, _)| *ns == pod.namespace && Some(*n) == name)
                .map(|(_, _, s)| s.clone())
        };
        match &*owner.kind {
            "ReplicationController" => {
                if let Some(s) = find(&cluster.owner_selectors.replication_controllers) {
                    for r in s.requirements() {
                        if let Some(pair) = r.necessary_pair() {
                            if let Some(existing) = label_set.iter_mut().find(|(k, _)| *k == pair.0)
                            {
                                existing.1 = pair.1;
                            } else {
                                label_set.push(pair);
                            }
                        }
                    }
                }
            }
            "ReplicaSet" => {
                if let Some(s) = find(&cluster.owner_selectors.replica_sets) {
                    requirements.extend(s.requirements().iter().cloned());
                }
            }
            "StatefulSet" => {
                if let Some(s) = find(&cluster.owner_selectors.stateful_sets) {
                    requirements.extend(s.requirements().iter().cloned());
                }
            }
            _ => {}
        }
    }
    let mut selector = LabelSelector::everything();
    for (k, v) in label_set {
        selector.push(Requirement::In(k, smallvec::smallvec![v]));
    }
    for r in requirements {
        selector.push(r);
    }
    selector
}

/// What PreScore computed.
#[derive(Debug, Clone, Default)]
pub struct ScoreState {
    /// The scoring constraints.
    pub constraints: Vec<Constraint>,
    /// Feasible nodes lacking a required key: scored 0.
    pub ignored: FxHashSet<NodeId>,
    /// Matching pods per (key, value), shared by constraints with the same key.
    pub pair_counts: FxHashMap<(Sym, Sym), i64>,
    /// `ln(domains + 2)` per constraint.
    pub weights: Vec<f64>,
    /// Matching pods per node, per constraint.
    counts: Vec<Option<SpreadCounts>>,
}

/// PreScore over the feasible nodes: `None` means Skip.
pub fn pre_score(cluster: &mut Cluster, pod: &Pod, feasible: &[NodeId]) -> Option<ScoreState> {
    if cluster.nodes.is_empty() {
        return None;
    }
    let require_all = !pod.spread.is_empty();
    let constraints = if require_all {
        constraints_of(pod, cluster, WhenUnsatisfiable::ScheduleAnyway)
    } else {
        let selector = default_selector(cluster, pod);
        if selector.is_everything() {
            Vec::new()
        } else {
            let self_match = selector.matches(&pod.labels, &cluster.interner);
            [(3, HOSTNAME), (5, ZONE)]
                .into_iter()
                .map(|(max_skew, key)| Constraint {
                    spec: SpreadConstraint {
                        max_skew,
                        topology_key: cluster.interner.intern(key),
                        when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
                        selector: selector.clone(),
                        min_domains: None,
                        honor_node_affinity: true,
                        honor_node_taints: false,
                    },
                    self_match,
                })
                .collect()
        }
    };
    if constraints.is_empty() {
        return None;
    }
    let hostname = cluster.interner.intern(HOSTNAME);
    let empty = cluster.interner.intern("");
    let mut state = ScoreState {
        constraints,
        ..Default::default()
    };
    let mut sizes = vec![0usize; state.constraints.len()];
    for &node in feasible {
        if require_all && !has_all_keys(cluster, &state.constraints, node) {
            state.ignored.insert(node);
            continue;
        }
        for (i, c) in state.constraints.iter().enumerate() {
            let key = c.spec.topology_key;
            if key == hostname {
                continue;
            }
            let value = cluster.node(node).labels.get(key).unwrap_or(empty);
            if let std::collections::hash_map::Entry::Vacant(e) =
                state.pair_counts.entry((key, value))
            {
                e.insert(0);
                sizes[i] += 1;
            }
        }
    }
    state.weights = state
        .constraints
        .iter()
        .zip(&sizes)
        .map(|(c, &size)| {
            let size = if c.spec.topology_key == hostname {
                feasible.len() - state.ignored.len()
            } else {
                size
            };
            ((size + 2) as f64).ln()
        })
        .collect();
    state.counts = per_node_counts(cluster, pod, &state.constraints);
    for node in cluster.node_ids() {
        if require_all && !has_all_keys(cluster, &state.constraints, node) {
            continue;
        }
        for (i, c) in state.constraints.iter().enumerate() {
            let key = c.spec.topology_key;
            if key == hostname || !includes(cluster, &c.spec, pod, node) {
                continue;
            }
            let value = cluster.node(node).labels.get(key).unwrap_or(empty);
            if let Some(slot) = state.pair_counts.get_mut(&(key, value)) {
                *slot += count(&state.counts[i], node);
            }
        }
    }
    Some(state)
}

/// Raw score of a node (lower is better before normalisation).
pub fn score(state: &ScoreState, cluster: &Cluster, node: NodeId, hostname: Sym) -> i64 {
    if state.ignored.contains(&node) {
        return 0;
    }
    let mut total = 0.0f64;
    for (i, c) in state.constraints.iter().enumerate() {
        let key = c.spec.topology_key;
        let Some(value) = cluster.node(node).labels.get(key) else {
            continue;
        };
        let count = if key == hostname {
            count(&state.counts[i], node)
        } else {
            state.pair_counts.get(&(key, value)).copied().unwrap_or(0)
        };
        total += count as f64 * state.weights[i] + f64::from(c.spec.max_skew - 1);
    }
    total.round() as i64
}

/// NormalizeScore: fewer matching pods is better; ignored nodes get 0.
pub fn normalize(state: &ScoreState, nodes: &[NodeId], scores: &mut [i64]) {
    let mut min = i64::MAX;
    let mut max = 0i64;
    for (node, &s) in nodes.iter().zip(scores.iter()) {
        if state.ignored.contains(node) {
            continue;
        }
        min = min.min(s);
        max = max.max(s);
    }
    for (node, s) in nodes.iter().zip(scores.iter_mut()) {
        if state.ignored.contains(node) {
            *s = 0;
        } else if max == 0 {
            *s = 100;
        } else {
            *s = 100 * (max + min - *s) / max;
        }
    }
}
