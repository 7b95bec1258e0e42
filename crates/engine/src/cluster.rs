//! Transition facade: [`Cluster`] is a [`ClusterState`] and a
//! [`SchedulerCache`] together, with the method names callers used before
//! the split (methods of the state are reached through `Deref`). It lets
//! every crate keep compiling while callers move to the state and cache
//! (`schedule(&state, &mut cache, pod, seed)`); new code should not use it.
//!
//! The facade's [`Cluster::match_counts`], [`Cluster::ensure_spread_counts`],
//! [`Cluster::term_id`] and [`Cluster::pod_terms`] pin what they register
//! for the life of the state, as the lazily filled caches did before.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::objects::{AffinityTerm, Pod};
use podplace_model::selector::LabelSelector;

use crate::cache::SchedulerCache;
use crate::groups::{GroupKey, TermSet};
use crate::statics::NodeStatics;
use crate::topology::{TableId, Topology};

pub use crate::groups::{
    DomainCounts as MatchCounts, HeldGroup, NodeCounts as SpreadCounts, TopologyGroup,
};
pub use crate::ids::{NodeId, PodId, TermId};
pub use crate::state::terms::{
    existing_term_matches, incoming_term_matches, HeldKind, PodTerms, TermKind,
};
pub use crate::state::{ClusterState, NodeInfo, OwnerSelectors, PodEntry};

/// Index of a pinned spread group (see [`Cluster::ensure_spread_counts`]).
pub type SpreadId = usize;

/// A state and its scheduler cache (see the module doc).
#[derive(Debug, Clone)]
pub struct Cluster {
    state: ClusterState,
    cache: SchedulerCache,
}

impl Default for Cluster {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Cluster {
    type Target = ClusterState;
    fn deref(&self) -> &ClusterState {
        &self.state
    }
}

impl DerefMut for Cluster {
    fn deref_mut(&mut self) -> &mut ClusterState {
        &mut self.state
    }
}

impl Cluster {
    /// An empty cluster (pod ids never reused, as before the split).
    pub fn new() -> Self {
        Self::from_state(ClusterState::new())
    }

    /// Wraps a state with a fresh cache. Pod slots are not reused from
    /// here on: callers of the facade keep tables parallel to them.
    pub fn from_state(mut state: ClusterState) -> Self {
        state.set_slot_reuse(false);
        Cluster {
            state,
            cache: SchedulerCache::new(),
        }
    }

    /// The state.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// The state and the cache, for the new entry points (label changes
    /// made through `node_mut` are accounted first).
    pub fn parts(&mut self) -> (&ClusterState, &mut SchedulerCache) {
        self.state.settle();
        (&self.state, &mut self.cache)
    }

    /// The state (mutable) and the cache.
    pub fn parts_mut(&mut self) -> (&mut ClusterState, &mut SchedulerCache) {
        self.state.settle();
        (&mut self.state, &mut self.cache)
    }

    /// Unwraps the state.
    pub fn into_state(self) -> ClusterState {
        self.state
    }

    /// The shared id of a term (registered for the life of the state).
    pub fn term_id(&mut self, term: &AffinityTerm) -> TermId {
        match self.state.lookup_term(term) {
            Some(id) => id,
            None => self.state.pin_term(term),
        }
    }

    /// Term ids for a pod's rules (registered for the life of the state).
    pub fn pod_terms(&mut self, pod: &Pod) -> PodTerms {
        if let Some(terms) = self.state.lookup_pod_terms(pod) {
            return terms;
        }
        let a = &pod.affinity;
        PodTerms {
            required_affinity: a
                .required_affinity
                .iter()
                .map(|t| self.term_id(t))
                .collect(),
            required_anti_affinity: a
                .required_anti_affinity
                .iter()
                .map(|t| self.term_id(t))
                .collect(),
            preferred_affinity: a
                .preferred_affinity
                .iter()
                .map(|w| (self.term_id(&w.term), w.weight))
                .collect(),
            preferred_anti_affinity: a
                .preferred_anti_affinity
                .iter()
                .map(|w| (self.term_id(&w.term), w.weight))
                .collect(),
        }
    }

    /// Pods matching all of a set of an incoming pod's terms, per domain of
    /// each term's topology key (the group is pinned).
    pub fn match_counts(&mut self, set: &[TermId]) -> &MatchCounts {
        let key = GroupKey::Matching(set.iter().copied().collect::<TermSet>());
        let id = self.state.pin_group(key);
        static EMPTY: std::sync::OnceLock<MatchCounts> = std::sync::OnceLock::new();
        self.state
            .group(id)
            .and_then(TopologyGroup::per_domain)
            .unwrap_or_else(|| EMPTY.get_or_init(MatchCounts::default))
    }

    /// Makes sure matching non-terminating pods per node are counted for a
    /// spread selector in a namespace (the group is pinned).
    pub fn ensure_spread_counts(&mut self, namespace: Sym, selector: &LabelSelector) -> SpreadId {
        let key = GroupKey::Spread {
            namespace,
            selector: selector.clone(),
        };
        self.state.pin_group(key).index()
    }

    /// The counts [`Cluster::ensure_spread_counts`] prepared, by the id it returned.
    pub fn spread_table(&self, id: SpreadId) -> &SpreadCounts {
        static EMPTY: std::sync::OnceLock<SpreadCounts> = std::sync::OnceLock::new();
        self.state
            .group(crate::ids::GroupId(id as u32))
            .and_then(TopologyGroup::per_node)
            .unwrap_or_else(|| EMPTY.get_or_init(SpreadCounts::default))
    }

    /// The node → domain table of a topology key, built on first use.
    pub fn topology_table(&mut self, key: Sym) -> TableId {
        let (state, cache) = self.parts();
        cache.topology_table(state, key)
    }

    /// The node → domain tables built so far.
    pub fn topology(&self) -> &Topology {
        self.cache.topology()
    }

    /// The spec-only per-node verdicts and scores for a pod.
    pub fn statics_for(&mut self, pod: &Pod) -> Arc<NodeStatics> {
        let (state, cache) = self.parts();
        cache.statics_for(state, pod)
    }
}
