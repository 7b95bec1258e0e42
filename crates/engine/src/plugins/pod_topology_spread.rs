//! PodTopologySpread: DoNotSchedule constraints filter on skew;
//! ScheduleAnyway constraints (or the system defaults, for pods with no
//! constraints that a Service/ReplicaSet/StatefulSet/ReplicationController
//! selects) score.

use std::borrow::Cow;
use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::objects::{Pod, SpreadConstraint, WhenUnsatisfiable};
use podplace_model::selector::LabelSelector;
use rustc_hash::FxHashMap;

use crate::cache::SchedulerCache;
use crate::groups::NodeCounts;
use crate::ids::NodeId;
use crate::profile::{DefaultConstraint, SpreadDefaults};
use crate::state::ClusterState;
use crate::statics::NodeStatics;
use crate::status::{Code, Plugin, Status};
use crate::template::Eligible;
use crate::topology::{Domain, KeyTable, TableId};

/// Filter reason when the node lacks a constraint's topology key.
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
/// Filter reason when placing the pod would exceed maxSkew.
pub const REASON_SKEW: &str = "node(s) didn't match pod topology spread constraints";

use crate::names::{HOSTNAME, ZONE};

/// A constraint as the plugin evaluates it.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The constraint.
    pub spec: SpreadConstraint,
    /// Whether the incoming pod matches the selector itself.
    pub self_match: bool,
}

/// Whether a node counts for a constraint under its inclusion policies.
fn includes(statics: &NodeStatics, c: &SpreadConstraint, node: NodeId) -> bool {
    (!c.honor_node_affinity || statics.node_affinity_ok[node.index()])
        && (!c.honor_node_taints || statics.taints_tolerated[node.index()])
}

/// The node → domain table of each constraint's topology key.
fn tables_of(
    state: &ClusterState,
    cache: &mut SchedulerCache,
    constraints: &[Constraint],
) -> Vec<TableId> {
    constraints
        .iter()
        .map(|c| cache.topology_table(state, c.spec.topology_key))
        .collect()
}

fn has_all_keys(tables: &[TableId], node: NodeId) -> bool {
    tables.iter().all(|t| t.domain(node.index()).is_some())
}

/// The per-node match counts of each constraint (`None`: the selector
/// matches everything, and kube-scheduler counts nothing for it), kept
/// current by the state on every bind (or counted now when no pending pod
/// needs them).
fn per_node_counts<'a>(
    state: &'a ClusterState,
    pod: &Pod,
    constraints: &[Constraint],
) -> Vec<Option<Cow<'a, NodeCounts>>> {
    constraints
        .iter()
        .map(|c| {
            if c.spec.selector.is_everything() {
                return None;
            }
            Some(state.spread_counts(pod.namespace, &c.spec.selector))
        })
        .collect()
}

fn count(counts: Option<&Cow<'_, NodeCounts>>, node: NodeId) -> i64 {
    counts.map_or(0, |c| i64::from(c.get(node)))
}

/// What PreFilter computed.
#[derive(Debug, Clone)]
pub struct FilterState {
    /// The DoNotSchedule constraints.
    pub constraints: Vec<Constraint>,
    /// The node → domain table of each constraint's key.
    tables: Vec<TableId>,
    /// Per constraint: matching pods per domain (by the table's domain index).
    counts: Vec<Vec<i64>>,
    /// Per constraint: domains with at least one eligible node (shared by
    /// the replicas of a template until preemption's dry run changes it).
    eligible: Arc<Eligible>,
    /// Per constraint: the global minimum, honouring minDomains.
    min: Vec<i64>,
    /// The pod's spec-only verdicts (inclusion policies).
    statics: Arc<NodeStatics>,
}

impl FilterState {
    /// The global minimum for constraint `i`, honouring minDomains.
    pub fn min_match(&self, i: usize) -> i64 {
        self.min[i]
    }

    fn recompute_min(&mut self, i: usize) {
        let domains = self.eligible.counts[i];
        let min_domains = self.constraints[i].spec.min_domains.unwrap_or(1);
        self.min[i] = if (domains as i64) < i64::from(min_domains) {
            0
        } else {
            self.counts[i]
                .iter()
                .zip(&self.eligible.domains[i])
                .filter(|(_, &e)| e)
                .map(|(&c, _)| c)
                .min()
                .unwrap_or(i64::from(i32::MAX))
        };
    }

    /// Matching pods per eligible domain of constraint `i`, by label value.
    pub fn domain_counts(&self, i: usize, _state: &ClusterState) -> FxHashMap<Sym, i64> {
        let table = &self.tables[i];
        self.counts[i]
            .iter()
            .zip(&self.eligible.domains[i])
            .enumerate()
            .filter(|(_, (_, &e))| e)
            .map(|(d, (&c, _))| (table.value(d as Domain), c))
            .collect()
    }

    /// Matching pods in the domain `value` of constraint `i` (0 when no
    /// eligible node is in it).
    pub fn domain_count(&self, i: usize, value: Sym, _state: &ClusterState) -> i64 {
        let table = &self.tables[i];
        table
            .domain_of_value(value)
            .map_or(0, |d| self.counts[i][d as usize])
    }

    /// One state per constraint, so Filter can be asked about each
    /// constraint on its own.
    pub fn split(&self) -> Vec<FilterState> {
        (0..self.constraints.len())
            .map(|i| FilterState {
                constraints: vec![self.constraints[i].clone()],
                tables: vec![self.tables[i].clone()],
                counts: vec![self.counts[i].clone()],
                eligible: Arc::new(Eligible {
                    domains: vec![self.eligible.domains[i].clone()],
                    counts: vec![self.eligible.counts[i]],
                }),
                min: vec![self.min[i]],
                statics: self.statics.clone(),
            })
            .collect()
    }
}

fn constraints_of(pod: &Pod, state: &ClusterState, action: WhenUnsatisfiable) -> Vec<Constraint> {
    pod.spread
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
        .map(|c| Constraint {
            self_match: c.selector.matches(&pod.labels, state.interner()),
            spec: c.clone(),
        })
        .collect()
}

/// A profile's `List` default constraints with `action`, for a pod without
/// constraints of its own: selecting what its Services, ReplicaSets,
/// StatefulSets and ReplicationControllers select (none when nothing does).
/// A topology key no node carries has no symbol in the state: such a
/// constraint is left out (podplace cannot name it).
fn listed_defaults(
    list: &[DefaultConstraint],
    pod: &Pod,
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    action: WhenUnsatisfiable,
) -> Vec<Constraint> {
    let wanted: Vec<&DefaultConstraint> = list
        .iter()
        .filter(|c| {
            let dns = action == WhenUnsatisfiable::DoNotSchedule;
            c.do_not_schedule == dns
        })
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let selector = cache.default_selector(cluster, pod);
    if selector.is_everything() {
        return Vec::new();
    }
    let self_match = selector.matches(&pod.labels, cluster.interner());
    wanted
        .into_iter()
        .filter_map(|c| {
            let key = cluster.interner().lookup(&c.topology_key)?;
            Some(Constraint {
                spec: SpreadConstraint {
                    max_skew: c.max_skew,
                    topology_key: key,
                    when_unsatisfiable: action,
                    selector: selector.clone(),
                    min_domains: None,
                    honor_node_affinity: true,
                    honor_node_taints: false,
                },
                self_match,
            })
        })
        .collect()
}

/// PreFilter: `None` means Skip (no DoNotSchedule constraints).
pub fn pre_filter_with(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Option<FilterState> {
    let profile = cache.profile().clone();
    let constraints = match (&profile.spread, pod.spread.is_empty()) {
        (SpreadDefaults::List(list), true) => {
            listed_defaults(list, pod, cluster, cache, WhenUnsatisfiable::DoNotSchedule)
        }
        _ => constraints_of(pod, cluster, WhenUnsatisfiable::DoNotSchedule),
    };
    if constraints.is_empty() {
        return None;
    }
    let statics = cache.statics_for(cluster, pod);
    let tables = tables_of(cluster, cache, &constraints);
    let per_node = per_node_counts(cluster, pod, &constraints);
    let mut counts: Vec<Vec<i64>> = tables.iter().map(|t| vec![0; t.domain_count()]).collect();
    let counted = |node: NodeId, c: &Constraint| {
        has_all_keys(&tables, node) && includes(&statics, &c.spec, node)
    };
    // Which domains hold a node the constraint counts reads only the
    // nodes and the template: computed once per template and node epoch.
    let policies: Vec<(bool, bool)> = constraints
        .iter()
        .map(|c| (c.spec.honor_node_affinity, c.spec.honor_node_taints))
        .collect();
    let eligible = cache.spread_eligible(cluster, &statics, &tables, &policies, || {
        let mut domains: Vec<Vec<bool>> = counts.iter().map(|c| vec![false; c.len()]).collect();
        let mut eligible_counts = vec![0; constraints.len()];
        for node in cluster.node_ids() {
            for (i, c) in constraints.iter().enumerate() {
                if let Some(d) = tables[i].domain(node.index()) {
                    if !domains[i][d as usize] && counted(node, c) {
                        domains[i][d as usize] = true;
                        eligible_counts[i] += 1;
                    }
                }
            }
        }
        Eligible {
            domains,
            counts: eligible_counts,
        }
    });
    // Only nodes with matching pods add to a domain's count (a domain
    // with a counted node is eligible); the domains they reach decide the
    // global minimum unless some eligible domain has none (minimum 0).
    let mut min = vec![0; constraints.len()];
    let mut reached: Vec<Domain> = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        reached.clear();
        if let Some(spread) = &per_node[i] {
            for &node in spread.occupied() {
                if !counted(node, c) {
                    continue;
                }
                if let Some(d) = tables[i].domain(node.index()) {
                    let n = i64::from(spread.get(node));
                    let count = &mut counts[i][d as usize];
                    if *count == 0 && n > 0 {
                        reached.push(d);
                    }
                    *count += n;
                }
            }
        }
        let domains = eligible.counts[i];
        let min_domains = c.spec.min_domains.unwrap_or(1);
        min[i] = if (domains as i64) < i64::from(min_domains) || reached.len() < domains {
            0
        } else {
            reached
                .iter()
                .map(|&d| counts[i][d as usize])
                .min()
                .unwrap_or(i64::from(i32::MAX))
        };
    }
    Some(FilterState {
        min,
        constraints,
        tables,
        counts,
        eligible,
        statics,
    })
}

/// Updates the state for a pod added (`+1`) or removed (`-1`) on `node`
/// (preemption's dry run).
pub fn update_with_pod(
    state: &mut FilterState,
    cluster: &ClusterState,
    pod: &Pod,
    other: &Pod,
    node: NodeId,
    delta: i64,
) {
    if other.namespace != pod.namespace || !has_all_keys(&state.tables, node) {
        return;
    }
    for i in 0..state.constraints.len() {
        let c = &state.constraints[i].spec;
        if !c.selector.matches(&other.labels, cluster.interner())
            || !includes(&state.statics, c, node)
        {
            continue;
        }
        if let Some(d) = state.tables[i].domain(node.index()) {
            if !state.eligible.domains[i][d as usize] {
                let eligible = Arc::make_mut(&mut state.eligible);
                eligible.domains[i][d as usize] = true;
                eligible.counts[i] += 1;
            }
            state.counts[i][d as usize] += delta;
            state.recompute_min(i);
        }
    }
}

/// Filter.
pub fn filter(state: &FilterState, _cluster: &ClusterState, node: NodeId) -> Status {
    for (i, c) in state.constraints.iter().enumerate() {
        let Some(d) = state.tables[i].domain(node.index()) else {
            return Status::reject(
                Code::UnschedulableAndUnresolvable,
                Plugin::PodTopologySpread,
                REASON_MISSING_LABEL,
            );
        };
        let matched = state.counts[i][d as usize];
        let skew = matched + i64::from(c.self_match) - state.min[i];
        if skew > i64::from(c.spec.max_skew) {
            return Status::reject(Code::Unschedulable, Plugin::PodTopologySpread, REASON_SKEW);
        }
    }
    Status::success()
}

/// The selector of the system default constraints: what the Services,
/// ReplicationControllers, ReplicaSets and StatefulSets that own or select
/// the pod select ([`ClusterState::default_selector`]).
pub fn default_selector(state: &ClusterState, pod: &Pod) -> LabelSelector {
    state.default_selector(pod)
}

/// What PreScore computed.
#[derive(Debug, Clone)]
pub struct ScoreState<'a> {
    /// The scoring constraints.
    pub constraints: Vec<Constraint>,
    /// Feasible nodes lacking a required key (by node index): scored 0.
    ignored: Vec<bool>,
    /// The node → domain table of each constraint's key.
    tables: Vec<TableId>,
    /// Per constraint: its slot in `pair_counts` (constraints with the same
    /// topology key share one, as topology pairs do).
    key_slot: Vec<usize>,
    /// Matching pods per (key, value): per key slot, per domain, with one
    /// more entry for the empty value nodes without the key carry.
    pair_counts: Vec<Vec<Option<i64>>>,
    /// `ln(domains + 2)` per constraint.
    pub weights: Vec<f64>,
    /// Matching pods per node, per constraint.
    counts: Vec<Option<Cow<'a, NodeCounts>>>,
    hostname: Sym,
}

impl ScoreState<'_> {
    /// Whether a feasible node is left out of scoring (it lacks a key).
    pub fn is_ignored(&self, node: NodeId) -> bool {
        self.ignored[node.index()]
    }
}

/// The pair slot of a node for a key: its domain, or for a node without
/// the key the domain of the empty value (or the extra last slot).
fn pair_slot(table: &KeyTable, node: NodeId, empty: Sym) -> usize {
    match table.domain(node.index()) {
        Some(d) => d as usize,
        None => table
            .domain_of_value(empty)
            .map_or(table.domain_count(), |d| d as usize),
    }
}

/// The symbol of a string every state interns (the empty one otherwise).
fn sym(state: &ClusterState, text: &str) -> Sym {
    let interner = state.interner();
    interner
        .lookup(text)
        .or_else(|| interner.lookup(""))
        .unwrap_or_else(|| podplace_model::intern::Interner::new().intern(""))
}

/// PreScore over the feasible nodes: `None` means Skip.
pub fn pre_score<'a>(
    cluster: &'a ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    feasible: &[NodeId],
) -> Option<ScoreState<'a>> {
    if cluster.nodes().is_empty() {
        return None;
    }
    // requireAllTopologies: a pod's own constraints, or defaults from a List.
    let listed = match &cache.profile().spread {
        SpreadDefaults::List(list) => Some(list.clone()),
        SpreadDefaults::System => None,
    };
    let require_all = !pod.spread.is_empty() || listed.is_some();
    let constraints = if !pod.spread.is_empty() {
        constraints_of(pod, cluster, WhenUnsatisfiable::ScheduleAnyway)
    } else if let Some(list) = listed {
        listed_defaults(
            &list,
            pod,
            cluster,
            cache,
            WhenUnsatisfiable::ScheduleAnyway,
        )
    } else {
        let selector = cache.default_selector(cluster, pod);
        if selector.is_everything() {
            Vec::new()
        } else {
            let self_match = selector.matches(&pod.labels, cluster.interner());
            [(3, HOSTNAME), (5, ZONE)]
                .into_iter()
                .map(|(max_skew, key)| Constraint {
                    spec: SpreadConstraint {
                        max_skew,
                        topology_key: sym(cluster, key),
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
    let hostname = sym(cluster, HOSTNAME);
    let empty = sym(cluster, "");
    let statics = cache.statics_for(cluster, pod);
    let tables = tables_of(cluster, cache, &constraints);
    let counts = per_node_counts(cluster, pod, &constraints);
    let mut key_slot = Vec::with_capacity(constraints.len());
    let mut slot_tables: Vec<TableId> = Vec::new();
    for t in &tables {
        let slot = match slot_tables.iter().position(|s| Arc::ptr_eq(s, t)) {
            Some(slot) => slot,
            None => {
                slot_tables.push(t.clone());
                slot_tables.len() - 1
            }
        };
        key_slot.push(slot);
    }
    let mut pair_counts: Vec<Vec<Option<i64>>> = slot_tables
        .iter()
        .map(|t| vec![None; t.domain_count() + 1])
        .collect();
    let mut ignored = vec![false; cluster.nodes().len()];
    let mut ignored_count = 0;
    let mut sizes = vec![0usize; constraints.len()];
    for &node in feasible {
        if require_all && !has_all_keys(&tables, node) {
            ignored[node.index()] = true;
            ignored_count += 1;
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if c.spec.topology_key == hostname {
                continue;
            }
            let slot = pair_slot(&tables[i], node, empty);
            let pair = &mut pair_counts[key_slot[i]][slot];
            if pair.is_none() {
                *pair = Some(0);
                sizes[i] += 1;
            }
        }
    }
    let weights = constraints
        .iter()
        .zip(&sizes)
        .map(|(c, &size)| {
            let size = if c.spec.topology_key == hostname {
                feasible.len() - ignored_count
            } else {
                size
            };
            ((size + 2) as f64).ln()
        })
        .collect();
    // Only nodes with matching pods add to a pair's count.
    for (i, c) in constraints.iter().enumerate() {
        let Some(spread) = &counts[i] else { continue };
        if c.spec.topology_key == hostname {
            continue;
        }
        let table = &tables[i];
        for &node in spread.occupied() {
            if (require_all && !has_all_keys(&tables, node)) || !includes(&statics, &c.spec, node) {
                continue;
            }
            if let Some(pair) = &mut pair_counts[key_slot[i]][pair_slot(table, node, empty)] {
                *pair += i64::from(spread.get(node));
            }
        }
    }
    Some(ScoreState {
        constraints,
        ignored,
        tables,
        key_slot,
        pair_counts,
        weights,
        counts,
        hostname,
    })
}

/// Raw score of a node (lower is better before normalisation).
pub fn score(state: &ScoreState, _cluster: &ClusterState, node: NodeId) -> i64 {
    if state.ignored[node.index()] {
        return 0;
    }
    let mut total = 0.0f64;
    for (i, c) in state.constraints.iter().enumerate() {
        let Some(d) = state.tables[i].domain(node.index()) else {
            continue;
        };
        let count = if c.spec.topology_key == state.hostname {
            count(state.counts[i].as_ref(), node)
        } else {
            state.pair_counts[state.key_slot[i]][d as usize].unwrap_or(0)
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
        if state.ignored[node.index()] {
            continue;
        }
        min = min.min(s);
        max = max.max(s);
    }
    for (node, s) in nodes.iter().zip(scores.iter_mut()) {
        if state.ignored[node.index()] {
            *s = 0;
        } else if max == 0 {
            *s = 100;
        } else {
            *s = 100 * (max + min - *s) / max;
        }
    }
}
