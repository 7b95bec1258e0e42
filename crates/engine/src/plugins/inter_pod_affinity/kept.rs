//! InterPodAffinity's PreFilter and PreScore state kept across the
//! replicas of one template and updated where binds changed it.
//!
//! Both states are sums, per (topology key, value), of counts the state's
//! topology groups keep: the held anti-affinity groups that match the pod
//! and the matching counts of its own terms (PreFilter); its preferred
//! terms' matching counts and the held groups scoring it (PreScore).
//! Built afresh, they cost a pass over every domain the workload's own
//! replicas reach, per replica. Kept, a replica pays only for the domains
//! of the nodes whose accounting changed since the last replica (their
//! [`ClusterState::node_versions`] entry differs; versions are unique in
//! the process, so an equal version means the same accounting even across
//! a state and its overlays): each such domain's sum is read again from
//! the groups. The state is kept with what it was built from — the pod's
//! namespace, labels and terms, its namespace's labels, the term ids, and
//! which groups it sums (each cycle finds them again; any difference
//! rebuilds) — and dropped with the node epoch.
//!
//! A term with a namespaceSelector reads other namespaces' labels, which
//! change without a node version: such pods are computed afresh. So is a
//! pod whose own terms' counts are not kept by the state (not a pending or
//! prepared pod: counted on the fly).

use std::borrow::Cow;
use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, Pod, WeightedTerm};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::filter::{self, Dense, PairCounts};
use super::score;
use crate::cache::SchedulerCache;
use crate::groups::DomainCounts;
use crate::ids::TermId;
use crate::state::terms::{existing_term_matches, incoming_term_matches, PodTerms, TermKind};
use crate::state::ClusterState;
use crate::topology::{DomainValues, TableId};

/// Rebuild instead of updating when more than this share (1/n) of the
/// nodes changed since the state was kept.
const REBUILD_SHARE: usize = 8;

/// Nodes whose version differs from the kept one (updated in place), or
/// `None` when the node count differs or more than `limit` changed.
fn changed_nodes(kept: &mut [u64], now: &[u64], limit: usize) -> Option<SmallVec<[usize; 8]>> {
    if kept.len() != now.len() {
        return None;
    }
    let mut changed = SmallVec::new();
    for (i, (k, &n)) in kept.iter_mut().zip(now).enumerate() {
        if *k != n {
            if changed.len() == limit {
                return None;
            }
            *k = n;
            changed.push(i);
        }
    }
    Some(changed)
}

fn no_namespace_selector(terms: &[AffinityTerm]) -> bool {
    terms.iter().all(|t| t.namespace_selector.is_nothing())
}

fn set_pair(map: &mut PairCounts, pair: (Sym, Sym), value: i64) {
    if value == 0 {
        map.remove(&pair);
    } else {
        map.insert(pair, value);
    }
}

fn get(domains: Option<&FxHashMap<Sym, i64>>, value: Sym) -> i64 {
    domains.and_then(|d| d.get(&value)).copied().unwrap_or(0)
}

/// A held required anti-affinity group matching the pod: its term, the
/// term's key and the holders per value.
type HeldSource<'a> = (TermId, Sym, &'a FxHashMap<Sym, i64>);

/// The counts PreFilter sums, borrowed from the state's groups.
struct FilterSources<'a> {
    /// Held required anti-affinity groups matching the pod.
    existing_anti: SmallVec<[HeldSource<'a>; 4]>,
    /// Pods matching all the pod's required affinity terms.
    affinity: Option<Cow<'a, DomainCounts>>,
    /// Pods matching each required anti-affinity term.
    anti: SmallVec<[Cow<'a, DomainCounts>; 2]>,
}

impl FilterSources<'_> {
    fn all_kept(&self) -> bool {
        self.affinity
            .as_ref()
            .is_none_or(|c| matches!(c, Cow::Borrowed(_)))
            && self.anti.iter().all(|c| matches!(c, Cow::Borrowed(_)))
    }

    fn signature(&self) -> SmallVec<[(TermId, Sym); 4]> {
        self.existing_anti.iter().map(|&(t, k, _)| (t, k)).collect()
    }
}

fn filter_sources<'a>(
    cluster: &'a ClusterState,
    pod: &'a Pod,
    namespace_labels: &Labels,
) -> FilterSources<'a> {
    let interner = cluster.interner();
    let mut existing_anti = SmallVec::new();
    for group in cluster.held_groups_for(&pod.labels) {
        if group.kind != TermKind::RequiredAntiAffinity {
            continue;
        }
        let term = cluster.term(group.term);
        if existing_term_matches(term, pod, namespace_labels, interner) {
            existing_anti.push((group.term, term.topology_key, group.domains));
        }
    }
    let affinity = (!pod.affinity.required_affinity.is_empty()).then(|| {
        let set: SmallVec<[&AffinityTerm; 2]> = pod.affinity.required_affinity.iter().collect();
        cluster.matching_counts(&set)
    });
    let anti = pod
        .affinity
        .required_anti_affinity
        .iter()
        .map(|t| cluster.matching_counts(&[t]))
        .collect();
    FilterSources {
        existing_anti,
        affinity,
        anti,
    }
}

/// A kept PreFilter state and what it was built from.
#[derive(Debug, Clone)]
pub struct KeptFilter {
    namespace: Sym,
    labels: Labels,
    affinity_terms: Vec<AffinityTerm>,
    anti_terms: Vec<AffinityTerm>,
    namespace_labels: Labels,
    terms: PodTerms,
    signature: SmallVec<[(TermId, Sym); 4]>,
    versions: Vec<u64>,
    /// The distinct topology keys summed, with their tables.
    keys: SmallVec<[TableId; 2]>,
    state: Arc<filter::State>,
}

impl KeptFilter {
    fn same_template(&self, pod: &Pod) -> bool {
        self.namespace == pod.namespace
            && self.labels == pod.labels
            && self.affinity_terms == pod.affinity.required_affinity
            && self.anti_terms == pod.affinity.required_anti_affinity
    }
}

/// Whether the state says Skip (nothing to check).
fn filter_skips(state: &filter::State) -> bool {
    state.existing_anti.is_empty() && state.affinity_terms.is_empty() && state.anti_terms.is_empty()
}

/// InterPodAffinity PreFilter with the state kept per template (see the
/// module doc): the same answer as [`filter::pre_filter_with`].
pub fn pre_filter(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Option<Arc<filter::State>> {
    let own = &pod.affinity;
    if !cache.template_reuse()
        || !no_namespace_selector(&own.required_affinity)
        || !no_namespace_selector(&own.required_anti_affinity)
    {
        return filter::pre_filter_with(cluster, cache, pod).map(Arc::new);
    }
    cache.sync(cluster);
    let terms = cluster.lookup_pod_terms(pod).unwrap_or_default();
    let namespace_labels = cluster
        .namespace_labels(pod.namespace)
        .cloned()
        .unwrap_or_default();
    let sources = filter_sources(cluster, pod, &namespace_labels);
    if !sources.all_kept() {
        return filter::pre_filter_with(cluster, cache, pod).map(Arc::new);
    }
    let signature = sources.signature();
    let now = cluster.node_versions();
    let limit = now.len() / REBUILD_SHARE;
    let kept = cache
        .templates_mut()
        .take_ipa_filter(|e| e.same_template(pod));
    let updated = kept.and_then(|mut e| {
        if e.namespace_labels != namespace_labels || e.terms != terms || e.signature != signature {
            return None;
        }
        let changed = changed_nodes(&mut e.versions, now, limit)?;
        if !changed.is_empty() {
            update_filter(&mut e, &sources, &changed);
        }
        Some(e)
    });
    let entry = match updated {
        Some(e) => e,
        None => build_filter(
            cluster,
            cache,
            pod,
            terms,
            namespace_labels,
            &sources,
            signature,
        ),
    };
    let state = (!filter_skips(&entry.state)).then(|| entry.state.clone());
    cache.templates_mut().keep_ipa_filter(entry);
    state
}

/// The filter state from its sources, as [`filter::pre_filter_with`] sums
/// it, with the dense per-domain counts.
fn build_filter(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    terms: PodTerms,
    namespace_labels: Labels,
    sources: &FilterSources,
    signature: SmallVec<[(TermId, Sym); 4]>,
) -> KeptFilter {
    let interner = cluster.interner();
    let mut state = filter::State {
        terms: terms.clone(),
        namespace_labels: namespace_labels.clone(),
        affinity_terms: pod.affinity.required_affinity.clone(),
        anti_terms: pod.affinity.required_anti_affinity.clone(),
        ..Default::default()
    };
    let mut keys: SmallVec<[TableId; 2]> = SmallVec::new();
    let mut key = |cache: &mut SchedulerCache, k: Sym| -> TableId {
        if let Some(t) = keys.iter().find(|t| t.key() == k) {
            return t.clone();
        }
        let t = cache.topology_table(cluster, k);
        keys.push(t.clone());
        t
    };
    for &(_, k, domains) in &sources.existing_anti {
        for (&value, &count) in domains {
            filter::add(&mut state.existing_anti, (k, value), count);
        }
    }
    if let Some(counts) = &sources.affinity {
        for t in &pod.affinity.required_affinity {
            let k = t.topology_key;
            for (&value, &count) in counts.domains(k).into_iter().flatten() {
                filter::add(&mut state.affinity, (k, value), count);
            }
        }
        state.matches_own_affinity = pod
            .affinity
            .required_affinity
            .iter()
            .all(|t| incoming_term_matches(t, pod, cluster.namespaces(), interner));
    }
    for (t, counts) in pod
        .affinity
        .required_anti_affinity
        .iter()
        .zip(&sources.anti)
    {
        let k = t.topology_key;
        for (&value, &count) in counts.domains(k).into_iter().flatten() {
            filter::add(&mut state.anti, (k, value), count);
        }
    }
    let dense_of = |table: TableId, pairs: &PairCounts| {
        let mut values = DomainValues::zeros(table.clone());
        for (&(k, value), &count) in pairs {
            if k == table.key() {
                if let Some(d) = table.domain_of_value(value) {
                    values.add(d, count);
                }
            }
        }
        values
    };
    let affinity = state
        .affinity_terms
        .iter()
        .map(|t| dense_of(key(cache, t.topology_key), &state.affinity))
        .collect();
    let anti = state
        .anti_terms
        .iter()
        .map(|t| dense_of(key(cache, t.topology_key), &state.anti))
        .collect();
    let mut anti_keys: SmallVec<[Sym; 2]> = SmallVec::new();
    for &(_, k, _) in &sources.existing_anti {
        if !anti_keys.contains(&k) {
            anti_keys.push(k);
        }
    }
    let existing_anti = anti_keys
        .into_iter()
        .map(|k| dense_of(key(cache, k), &state.existing_anti))
        .collect();
    state.dense = Some(Dense {
        affinity,
        anti,
        existing_anti,
    });
    KeptFilter {
        namespace: pod.namespace,
        labels: pod.labels.clone(),
        affinity_terms: pod.affinity.required_affinity.clone(),
        anti_terms: pod.affinity.required_anti_affinity.clone(),
        namespace_labels,
        terms,
        signature,
        versions: cluster.node_versions().to_vec(),
        keys,
        state: Arc::new(state),
    }
}

/// Sums again every pair of the kept keys that a changed node is in.
fn update_filter(entry: &mut KeptFilter, sources: &FilterSources, changed: &[usize]) {
    let state = Arc::make_mut(&mut entry.state);
    let Some(dense) = state.dense.as_mut() else {
        return;
    };
    for table in &entry.keys {
        let k = table.key();
        for &node in changed {
            let Some(d) = table.domain(node) else {
                continue;
            };
            let value = table.value(d);
            let existing: i64 = sources
                .existing_anti
                .iter()
                .filter(|(_, key, _)| *key == k)
                .map(|(_, _, domains)| domains.get(&value).copied().unwrap_or(0))
                .sum();
            set_pair(&mut state.existing_anti, (k, value), existing);
            for values in &mut dense.existing_anti {
                if values.table().key() == k {
                    values.set(d, existing);
                }
            }
            if let Some(counts) = &sources.affinity {
                let per_term = get(counts.domains(k), value);
                let terms = state
                    .affinity_terms
                    .iter()
                    .filter(|t| t.topology_key == k)
                    .count() as i64;
                set_pair(&mut state.affinity, (k, value), per_term * terms);
                for (t, values) in state.affinity_terms.iter().zip(&mut dense.affinity) {
                    if t.topology_key == k {
                        values.set(d, per_term * terms);
                    }
                }
            }
            let anti: i64 = state
                .anti_terms
                .iter()
                .zip(&sources.anti)
                .filter(|(t, _)| t.topology_key == k)
                .map(|(_, counts)| get(counts.domains(k), value))
                .sum();
            if !state.anti_terms.is_empty() {
                set_pair(&mut state.anti, (k, value), anti);
            }
            for (t, values) in state.anti_terms.iter().zip(&mut dense.anti) {
                if t.topology_key == k {
                    values.set(d, anti);
                }
            }
        }
    }
}

/// One sum PreScore adds: `weight` × pods per value of `key`.
type ScoreSource<'a> = (Sym, i64, Option<&'a FxHashMap<Sym, i64>>);

/// The counts PreScore sums, and what identifies the held groups among them.
struct ScoreSources<'a> {
    /// Own preferred terms' counts, then the held groups scoring the pod.
    sums: SmallVec<[ScoreSource<'a>; 4]>,
    /// (kind, term, weight) of the held groups.
    signature: SmallVec<[(TermKind, TermId, i64); 4]>,
    /// Whether every own term's counts are kept by the state.
    kept: bool,
    /// Whether some sum has a count (otherwise PreScore skips).
    touched: bool,
}

fn score_sources<'a>(
    cluster: &'a ClusterState,
    pod: &'a Pod,
    namespace_labels: &Labels,
    hard_weight: i64,
) -> ScoreSources<'a> {
    let mut sources = ScoreSources {
        sums: SmallVec::new(),
        signature: SmallVec::new(),
        kept: true,
        touched: false,
    };
    let own = score::own_preferred_terms(pod);
    for (t, weight) in own {
        let key = t.topology_key;
        match cluster.matching_counts(&[t]) {
            Cow::Borrowed(counts) => {
                let domains = counts.domains(key);
                sources.touched |= domains.is_some_and(|d| !d.is_empty());
                sources.sums.push((key, weight, domains));
            }
            Cow::Owned(_) => sources.kept = false,
        }
    }
    for group in cluster.held_groups_for(&pod.labels) {
        let weight = match group.kind {
            TermKind::RequiredAntiAffinity => continue,
            TermKind::RequiredAffinity if hard_weight > 0 => hard_weight,
            TermKind::RequiredAffinity => continue,
            TermKind::PreferredAffinity => i64::from(group.weight),
            TermKind::PreferredAntiAffinity => -i64::from(group.weight),
        };
        let term = cluster.term(group.term);
        if !existing_term_matches(term, pod, namespace_labels, cluster.interner()) {
            continue;
        }
        sources.touched |= !group.domains.is_empty();
        sources
            .sums
            .push((term.topology_key, weight, Some(group.domains)));
        sources.signature.push((group.kind, group.term, weight));
    }
    sources
}

/// A kept PreScore state and what it was built from.
#[derive(Debug, Clone)]
pub struct KeptScore {
    namespace: Sym,
    labels: Labels,
    preferred: Vec<WeightedTerm>,
    preferred_anti: Vec<WeightedTerm>,
    namespace_labels: Labels,
    signature: SmallVec<[(TermKind, TermId, i64); 4]>,
    versions: Vec<u64>,
    state: Arc<score::State>,
}

impl KeptScore {
    fn same_template(&self, pod: &Pod) -> bool {
        self.namespace == pod.namespace
            && self.labels == pod.labels
            && self.preferred == pod.affinity.preferred_affinity
            && self.preferred_anti == pod.affinity.preferred_anti_affinity
    }
}

/// InterPodAffinity PreScore with the state kept per template (see the
/// module doc): the same scores as [`score::pre_score`].
pub fn pre_score(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Option<Arc<score::State>> {
    let profile = cache.profile().clone();
    let own = &pod.affinity;
    let own_terms = || {
        own.preferred_affinity
            .iter()
            .chain(&own.preferred_anti_affinity)
    };
    if !cache.template_reuse()
        || own_terms().any(|w| !w.term.namespace_selector.is_nothing())
        || (profile.ignore_preferred_terms_of_existing_pods
            && own.preferred_affinity.is_empty()
            && own.preferred_anti_affinity.is_empty())
    {
        return score::pre_score(cluster, cache, pod).map(Arc::new);
    }
    cache.sync(cluster);
    let namespace_labels = cluster
        .namespace_labels(pod.namespace)
        .cloned()
        .unwrap_or_default();
    let sources = score_sources(
        cluster,
        pod,
        &namespace_labels,
        profile.hard_pod_affinity_weight,
    );
    if !sources.kept {
        return score::pre_score(cluster, cache, pod).map(Arc::new);
    }
    let now = cluster.node_versions();
    let limit = now.len() / REBUILD_SHARE;
    let kept = cache
        .templates_mut()
        .take_ipa_score(|e| e.same_template(pod));
    let updated = kept.and_then(|mut e| {
        if e.namespace_labels != namespace_labels || e.signature != sources.signature {
            return None;
        }
        let changed = changed_nodes(&mut e.versions, now, limit)?;
        if !changed.is_empty() {
            update_score(&mut e, &sources, &changed);
        }
        Some(e)
    });
    let entry = match updated {
        Some(e) => e,
        None => build_score(cluster, cache, pod, namespace_labels, &sources),
    };
    let state = sources.touched.then(|| entry.state.clone());
    cache.templates_mut().keep_ipa_score(entry);
    state
}

fn build_score(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    namespace_labels: Labels,
    sources: &ScoreSources,
) -> KeptScore {
    let mut dense: Vec<DomainValues> = Vec::new();
    for &(k, weight, domains) in &sources.sums {
        let at = match dense.iter().position(|v| v.table().key() == k) {
            Some(at) => at,
            None => {
                dense.push(DomainValues::zeros(cache.topology_table(cluster, k)));
                dense.len() - 1
            }
        };
        let values = &mut dense[at];
        let table = values.table().clone();
        for (&value, &count) in domains.into_iter().flatten() {
            if let Some(d) = table.domain_of_value(value) {
                values.add(d, weight * count);
            }
        }
    }
    KeptScore {
        namespace: pod.namespace,
        labels: pod.labels.clone(),
        preferred: pod.affinity.preferred_affinity.clone(),
        preferred_anti: pod.affinity.preferred_anti_affinity.clone(),
        namespace_labels,
        signature: sources.signature.clone(),
        versions: cluster.node_versions().to_vec(),
        state: Arc::new(score::State::from_dense(dense)),
    }
}

fn update_score(entry: &mut KeptScore, sources: &ScoreSources, changed: &[usize]) {
    let state = Arc::make_mut(&mut entry.state);
    for values in state.dense_mut() {
        let table = values.table().clone();
        let k = table.key();
        for &node in changed {
            let Some(d) = table.domain(node) else {
                continue;
            };
            let value = table.value(d);
            let sum = sources
                .sums
                .iter()
                .filter(|(key, _, _)| *key == k)
                .map(|&(_, weight, domains)| weight * get(domains, value))
                .sum();
            values.set(d, sum);
        }
    }
}
