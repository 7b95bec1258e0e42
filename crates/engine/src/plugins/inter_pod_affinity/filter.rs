//! InterPodAffinity PreFilter and Filter.

use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, Node, Pod};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::{REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY};
use crate::cache::SchedulerCache;
use crate::ids::NodeId;
use crate::state::terms::{existing_term_matches, incoming_term_matches, PodTerms, TermKind};
use crate::state::ClusterState;
use crate::status::{Code, Plugin, Status};
use crate::topology::DomainValues;

/// Counts per (topology key, value), as kube-scheduler's `topologyToMatchedTermCount`.
pub type PairCounts = FxHashMap<(Sym, Sym), i64>;

/// What PreFilter computed for one incoming pod.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Existing pods whose required anti-affinity matches the incoming pod, by their domain.
    pub existing_anti: PairCounts,
    /// Existing pods matching all of the incoming pod's required affinity terms.
    pub affinity: PairCounts,
    /// Existing pods matching any of the incoming pod's required anti-affinity terms.
    pub anti: PairCounts,
    /// The incoming pod's terms as the state's ids (empty lists when the
    /// state does not know them: the pod is neither in the state nor prepared).
    pub terms: PodTerms,
    /// The incoming pod's required affinity terms.
    pub(crate) affinity_terms: Vec<AffinityTerm>,
    /// The incoming pod's required anti-affinity terms.
    pub(crate) anti_terms: Vec<AffinityTerm>,
    /// The incoming pod matches all its own required affinity terms (first pod of a group).
    pub matches_own_affinity: bool,
    /// The incoming pod's namespace labels (empty when the Namespace is unknown).
    pub namespace_labels: Labels,
    /// The three counts as dense per-domain vectors for the per-node loop;
    /// `None` once [`update_with_pod`] changed the counts (preemption's dry
    /// runs then read the maps).
    pub(crate) dense: Option<Dense>,
}

/// The counts of one topology key among the (key, value) pairs.
fn domain_values(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    key: Sym,
    pairs: &PairCounts,
) -> DomainValues {
    DomainValues::new(
        cluster,
        cache,
        key,
        pairs
            .iter()
            .filter(|((k, _), _)| *k == key)
            .map(|((_, v), c)| (v, c)),
    )
}

/// The counts of [`State`] per domain of each term's key.
#[derive(Debug, Clone)]
pub(crate) struct Dense {
    /// Per required affinity term, in order.
    pub(crate) affinity: Vec<DomainValues>,
    /// Per required anti-affinity term, in order.
    pub(crate) anti: Vec<DomainValues>,
    /// Per distinct key of the existing pods' anti-affinity (a key whose
    /// counts are all zero filters nothing).
    pub(crate) existing_anti: Vec<DomainValues>,
}

impl Dense {
    fn new(cluster: &ClusterState, cache: &mut SchedulerCache, state: &State) -> Self {
        let mut key_counts = |terms: &[AffinityTerm], pairs: &PairCounts| -> Vec<DomainValues> {
            terms
                .iter()
                .map(|t| domain_values(cluster, cache, t.topology_key, pairs))
                .collect()
        };
        let affinity = key_counts(&state.affinity_terms, &state.affinity);
        let anti = key_counts(&state.anti_terms, &state.anti);
        let mut keys: SmallVec<[Sym; 2]> = SmallVec::new();
        for &(key, _) in state.existing_anti.keys() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let existing_anti = keys
            .into_iter()
            .map(|key| domain_values(cluster, cache, key, &state.existing_anti))
            .collect();
        Dense {
            affinity,
            anti,
            existing_anti,
        }
    }
}

pub(crate) fn add(counts: &mut PairCounts, pair: (Sym, Sym), delta: i64) {
    let c = counts.entry(pair).or_insert(0);
    *c += delta;
    if *c == 0 {
        counts.remove(&pair);
    }
}

/// PreFilter: `None` means Skip (nothing to check).
pub fn pre_filter_with(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Option<State> {
    let terms = cluster.lookup_pod_terms(pod).unwrap_or_default();
    let namespace_labels = cluster
        .namespace_labels(pod.namespace)
        .cloned()
        .unwrap_or_default();
    let mut state = State {
        terms,
        namespace_labels,
        affinity_terms: pod.affinity.required_affinity.clone(),
        anti_terms: pod.affinity.required_anti_affinity.clone(),
        ..Default::default()
    };
    let interner = cluster.interner();
    for group in cluster.held_groups_for(&pod.labels) {
        if group.kind != TermKind::RequiredAntiAffinity {
            continue;
        }
        let term = cluster.term(group.term);
        if !existing_term_matches(term, pod, &state.namespace_labels, interner) {
            continue;
        }
        for (&value, &count) in group.domains {
            add(&mut state.existing_anti, (term.topology_key, value), count);
        }
    }
    if !pod.affinity.required_affinity.is_empty() {
        let set: SmallVec<[&AffinityTerm; 2]> = pod.affinity.required_affinity.iter().collect();
        let counts = cluster.matching_counts(&set);
        for t in &set {
            let key = t.topology_key;
            for (&value, &count) in counts.domains(key).into_iter().flatten() {
                add(&mut state.affinity, (key, value), count);
            }
        }
        state.matches_own_affinity = set
            .iter()
            .all(|t| incoming_term_matches(t, pod, cluster.namespaces(), interner));
    }
    for t in &pod.affinity.required_anti_affinity {
        let key = t.topology_key;
        let counts = cluster.matching_counts(&[t]);
        for (&value, &count) in counts.domains(key).into_iter().flatten() {
            add(&mut state.anti, (key, value), count);
        }
    }
    if state.existing_anti.is_empty()
        && pod.affinity.required_affinity.is_empty()
        && pod.affinity.required_anti_affinity.is_empty()
    {
        return None;
    }
    state.dense = Some(Dense::new(cluster, cache, &state));
    Some(state)
}

/// Updates the state as if `other` (bound to `node`) were gone (`delta = -1`)
/// or added (`+1`): kube-scheduler's PreFilter extensions, used by preemption.
pub fn update_with_pod(
    state: &mut State,
    cluster: &ClusterState,
    pod: &Pod,
    other_terms: &PodTerms,
    other: &Pod,
    node: &Node,
    delta: i64,
) {
    state.dense = None;
    for &t in &other_terms.required_anti_affinity {
        let term = cluster.term(t);
        if existing_term_matches(term, pod, &state.namespace_labels, cluster.interner()) {
            if let Some(v) = node.labels.get(term.topology_key) {
                add(&mut state.existing_anti, (term.topology_key, v), delta);
            }
        }
    }
    let matches = |t: &AffinityTerm| {
        incoming_term_matches(t, other, cluster.namespaces(), cluster.interner())
    };
    if !state.affinity_terms.is_empty() && state.affinity_terms.iter().all(matches) {
        for t in &state.affinity_terms {
            let key = t.topology_key;
            if let Some(v) = node.labels.get(key) {
                add(&mut state.affinity, (key, v), delta);
            }
        }
    }
    for t in &state.anti_terms {
        if matches(t) {
            let key = t.topology_key;
            if let Some(v) = node.labels.get(key) {
                add(&mut state.anti, (key, v), delta);
            }
        }
    }
}

/// Whether the node satisfies the incoming pod's required affinity.
pub fn satisfies_affinity(state: &State, _cluster: &ClusterState, node: &Node) -> bool {
    let mut pods_exist = true;
    for t in &state.affinity_terms {
        let key = t.topology_key;
        match node.labels.get(key) {
            Some(v) => {
                if state.affinity.get(&(key, v)).copied().unwrap_or(0) <= 0 {
                    pods_exist = false;
                }
            }
            None => return false,
        }
    }
    pods_exist || (state.affinity.is_empty() && state.matches_own_affinity)
}

/// Whether the node satisfies the incoming pod's required anti-affinity.
pub fn satisfies_anti_affinity(state: &State, _cluster: &ClusterState, node: &Node) -> bool {
    if state.anti.is_empty() {
        return true;
    }
    state.anti_terms.iter().all(|t| {
        let key = t.topology_key;
        node.labels
            .get(key)
            .is_none_or(|v| state.anti.get(&(key, v)).copied().unwrap_or(0) <= 0)
    })
}

/// Whether the node satisfies existing pods' required anti-affinity.
pub fn satisfies_existing_anti_affinity(state: &State, node: &Node) -> bool {
    if state.existing_anti.is_empty() {
        return true;
    }
    node.labels
        .iter()
        .all(|pair| state.existing_anti.get(&pair).copied().unwrap_or(0) <= 0)
}

/// Filter: from the dense per-domain counts, or from the count maps once
/// preemption's dry run changed them.
pub fn filter(state: &State, cluster: &ClusterState, node: NodeId) -> Status {
    let Some(dense) = &state.dense else {
        return filter_by_maps(state, cluster, cluster.node(node));
    };
    let mut pods_exist = true;
    for counts in &dense.affinity {
        match counts.at(node) {
            Some(c) if c <= 0 => pods_exist = false,
            Some(_) => {}
            None => return reject_affinity(),
        }
    }
    if !(pods_exist || (state.affinity.is_empty() && state.matches_own_affinity)) {
        return reject_affinity();
    }
    if !state.anti.is_empty()
        && dense
            .anti
            .iter()
            .any(|counts| counts.at(node).is_some_and(|c| c > 0))
    {
        return reject_anti_affinity();
    }
    if dense
        .existing_anti
        .iter()
        .any(|counts| counts.at(node).is_some_and(|c| c > 0))
    {
        return reject_existing_anti_affinity();
    }
    Status::success()
}

fn reject_affinity() -> Status {
    Status::reject(
        Code::UnschedulableAndUnresolvable,
        Plugin::InterPodAffinity,
        REASON_AFFINITY,
    )
}

fn reject_anti_affinity() -> Status {
    Status::reject(
        Code::Unschedulable,
        Plugin::InterPodAffinity,
        REASON_ANTI_AFFINITY,
    )
}

fn reject_existing_anti_affinity() -> Status {
    Status::reject(
        Code::Unschedulable,
        Plugin::InterPodAffinity,
        REASON_EXISTING_ANTI_AFFINITY,
    )
}

/// Filter from the count maps (after preemption changed them).
fn filter_by_maps(state: &State, cluster: &ClusterState, node: &Node) -> Status {
    if !satisfies_affinity(state, cluster, node) {
        return reject_affinity();
    }
    if !satisfies_anti_affinity(state, cluster, node) {
        return reject_anti_affinity();
    }
    if !satisfies_existing_anti_affinity(state, node) {
        return reject_existing_anti_affinity();
    }
    Status::success()
}
