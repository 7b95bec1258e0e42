//! InterPodAffinity PreScore, Score and NormalizeScore.

use podplace_model::intern::Sym;
use podplace_model::objects::{AffinityTerm, Pod};
use rustc_hash::FxHashMap;

use crate::cache::SchedulerCache;
use crate::ids::NodeId;
use crate::state::terms::{existing_term_matches, TermKind};
use crate::state::ClusterState;
use crate::topology::DomainValues;

/// Score contributions per topology key and value.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// kube-scheduler's `topologyScore[key][value]`, per key by the key's
    /// domains, for the per-node loop.
    dense: Vec<DomainValues>,
}

impl State {
    /// A state from its per-key sums.
    pub(crate) fn from_dense(dense: Vec<DomainValues>) -> Self {
        State { dense }
    }

    /// The per-key sums, to update in place.
    pub(crate) fn dense_mut(&mut self) -> &mut [DomainValues] {
        &mut self.dense
    }
}

/// PreScore: `None` means Skip (no term matched anything anywhere).
pub fn pre_score(cluster: &ClusterState, cache: &mut SchedulerCache, pod: &Pod) -> Option<State> {
    let profile = cache.profile().clone();
    if profile.ignore_preferred_terms_of_existing_pods
        && pod.affinity.preferred_affinity.is_empty()
        && pod.affinity.preferred_anti_affinity.is_empty()
    {
        // ignorePreferredTermsOfExistingPods: a pod without preferred terms
        // of its own is not scored at all.
        return None;
    }
    let hard_weight = profile.hard_pod_affinity_weight;
    let mut topology_score: FxHashMap<Sym, FxHashMap<Sym, i64>> = FxHashMap::default();
    let mut touched = false;
    let own = own_preferred_terms(pod);
    for (t, weight) in own {
        let key = t.topology_key;
        let counts = cluster.matching_counts(&[t]);
        for (&value, &count) in counts.domains(key).into_iter().flatten() {
            touched = true;
            *topology_score
                .entry(key)
                .or_default()
                .entry(value)
                .or_insert(0) += weight * count;
        }
    }
    let ns_labels = cluster
        .namespace_labels(pod.namespace)
        .cloned()
        .unwrap_or_default();
    for group in cluster.held_groups_for(&pod.labels) {
        let weight = match group.kind {
            TermKind::RequiredAntiAffinity => continue,
            TermKind::RequiredAffinity if hard_weight > 0 => hard_weight,
            TermKind::RequiredAffinity => continue,
            TermKind::PreferredAffinity => i64::from(group.weight),
            TermKind::PreferredAntiAffinity => -i64::from(group.weight),
        };
        let term = cluster.term(group.term);
        if group.domains.is_empty()
            || !existing_term_matches(term, pod, &ns_labels, cluster.interner())
        {
            continue;
        }
        touched = true;
        let scores = topology_score.entry(term.topology_key).or_default();
        for (&value, &count) in group.domains {
            *scores.entry(value).or_insert(0) += weight * count;
        }
    }
    if !touched {
        return None;
    }
    let dense = topology_score
        .iter()
        .map(|(&key, scores)| DomainValues::new(cluster, cache, key, scores))
        .collect();
    Some(State { dense })
}

/// The pod's own preferred terms with their weights, negative for
/// anti-affinity: what PreScore adds per domain of each term's matches.
pub(crate) fn own_preferred_terms(pod: &Pod) -> impl Iterator<Item = (&AffinityTerm, i64)> {
    pod.affinity
        .preferred_affinity
        .iter()
        .map(|w| (&w.term, i64::from(w.weight)))
        .chain(
            pod.affinity
                .preferred_anti_affinity
                .iter()
                .map(|w| (&w.term, -i64::from(w.weight))),
        )
}

/// Raw score of a node: the sum over topology keys it carries.
pub fn score(state: &State, _cluster: &ClusterState, node: NodeId) -> i64 {
    state
        .dense
        .iter()
        .filter_map(|values| values.at(node))
        .sum()
}

/// NormalizeScore: min-max scaling to 0..=100 in float64, truncated.
pub fn normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    let diff = max - min;
    for s in scores.iter_mut() {
        let f = if diff > 0 {
            100.0 * ((*s - min) as f64 / diff as f64)
        } else {
            0.0
        };
        *s = f as i64;
    }
}
