//! Topology groups: every count the scheduler keeps of pods per topology
//! domain, under one type.
//!
//! kube-scheduler walks every pod for every scheduled pod to count the pods
//! an affinity term or spread selector matches per domain. Here each
//! distinct question is a [`TopologyGroup`] kept current on every bind and
//! unbind, so scheduling a pod reads counts instead of walking pods:
//!
//! - [`GroupKey::Held`]: the existing pods holding one term of one kind and
//!   weight (the symmetric checks: an existing pod's anti-affinity against
//!   the incoming pod), counted per domain of the term's key. It lives
//!   while some bound pod holds the term.
//! - [`GroupKey::Matching`]: pods matching *all* of a set of an incoming
//!   pod's terms, per domain of each term's key (kube-scheduler counts an
//!   existing pod for required affinity only when it matches every required
//!   term; other terms are one-term sets).
//! - [`GroupKey::Spread`]: non-terminating pods a spread selector matches in
//!   a namespace, counted per node.
//!
//! The last two live while some pending pod (or an explicit
//! [`crate::state::ClusterState::prepare`]) needs them. One candidate index
//! (by a label pair every matched pod carries) serves all three, and one
//! accounting path updates them.

use std::sync::Arc;

use podplace_model::cow::{Chunked, Sharded};
use podplace_model::intern::{Interner, Sym};
use podplace_model::labels::Labels;
use podplace_model::objects::Pod;
use podplace_model::selector::LabelSelector;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::ids::{GroupId, NodeId, PodId, TermId};
use crate::state::terms::{incoming_term_matches, PodTerms, TermKind, TermRegistry};

/// A set of terms an existing pod must all match to be counted.
pub type TermSet = SmallVec<[TermId; 2]>;

/// What a group counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupKey {
    /// Bound pods holding `term` as a rule of `kind` with `weight` (1 for
    /// required terms), per domain of the term's key.
    Held {
        /// The shared term.
        term: TermId,
        /// What kind of rule it is.
        kind: TermKind,
        /// Its weight.
        weight: i32,
    },
    /// Bound pods matching every term of the set, per domain of each key.
    Matching(TermSet),
    /// Bound, non-terminating pods of `namespace` that `selector` matches, per node.
    Spread {
        /// The namespace counted.
        namespace: Sym,
        /// The selector.
        selector: LabelSelector,
    },
}

/// Counts per domain of one or more topology keys (zero entries removed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainCounts {
    /// Per topology key: pods per value (pods on nodes lacking the key are
    /// not counted).
    pub by_key: SmallVec<[(Sym, FxHashMap<Sym, i64>); 1]>,
}

impl DomainCounts {
    fn with_keys(keys: impl IntoIterator<Item = Sym>) -> Self {
        let mut counts = DomainCounts::default();
        for key in keys {
            if counts.domains(key).is_none() {
                counts.by_key.push((key, FxHashMap::default()));
            }
        }
        counts
    }

    /// Pods per value of `key`.
    pub fn domains(&self, key: Sym) -> Option<&FxHashMap<Sym, i64>> {
        self.by_key.iter().find(|(k, _)| *k == key).map(|(_, d)| d)
    }

    /// Counts a pod on a node with these labels `delta` times.
    pub(crate) fn add(&mut self, labels: &Labels, delta: i64) {
        for (key, domains) in self.by_key.iter_mut() {
            if let Some(value) = labels.get(*key) {
                let c = domains.entry(value).or_insert(0);
                *c += delta;
                if *c == 0 {
                    domains.remove(&value);
                }
            }
        }
    }
}

/// Counts per node, with the list of nodes that have any (so per-domain
/// sums visit only those).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeCounts {
    per_node: Vec<i32>,
    /// Nodes with a non-zero count, in no particular order.
    occupied: Vec<NodeId>,
    /// Position of each node in `occupied` (`u32::MAX`: absent).
    position: Vec<u32>,
}

impl NodeCounts {
    pub(crate) fn new(nodes: usize) -> Self {
        NodeCounts {
            per_node: vec![0; nodes],
            occupied: Vec::new(),
            position: vec![u32::MAX; nodes],
        }
    }

    fn push_node(&mut self) {
        self.per_node.push(0);
        self.position.push(u32::MAX);
    }

    /// Drops the slot of a node whose count is zero, moving the last node's
    /// count into it (the state moves the last node into a removed slot).
    fn swap_remove_node(&mut self, index: usize) {
        if index >= self.per_node.len() {
            return;
        }
        let last = self.per_node.len() - 1;
        if index != last {
            // Both are zero when the state calls this; move anyway.
            let moved = self.per_node[last];
            if moved != 0 {
                self.add(NodeId(last as u32), -moved);
                self.add(NodeId(index as u32), moved);
            }
        }
        self.per_node.pop();
        self.position.pop();
    }

    pub(crate) fn add(&mut self, node: NodeId, delta: i32) {
        let i = node.index();
        if i >= self.per_node.len() {
            return;
        }
        let before = self.per_node[i];
        self.per_node[i] += delta;
        let after = self.per_node[i];
        if before == 0 && after != 0 {
            self.position[i] = self.occupied.len() as u32;
            self.occupied.push(node);
        } else if before != 0 && after == 0 {
            let at = self.position[i] as usize;
            self.occupied.swap_remove(at);
            if let Some(&moved) = self.occupied.get(at) {
                self.position[moved.index()] = at as u32;
            }
            self.position[i] = u32::MAX;
        }
    }

    /// Matching pods on a node.
    #[inline]
    pub fn get(&self, node: NodeId) -> i32 {
        self.per_node.get(node.index()).copied().unwrap_or(0)
    }

    /// The nodes with at least one matching pod.
    pub fn occupied(&self) -> &[NodeId] {
        &self.occupied
    }
}

/// How a group counts: per domain of its keys, or per node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counts {
    /// Held and matching groups.
    PerDomain(DomainCounts),
    /// Spread groups.
    PerNode(NodeCounts),
}

/// One kept count of pods per topology domain (see the module doc).
#[derive(Debug, Clone)]
pub struct TopologyGroup {
    key: GroupKey,
    counts: Counts,
    /// The holders (held groups), for explanations.
    holders: Vec<PodId>,
    /// Pending or prepared pods that need the group.
    needs: u32,
}

static NO_DOMAINS: std::sync::OnceLock<FxHashMap<Sym, i64>> = std::sync::OnceLock::new();

impl TopologyGroup {
    /// What the group counts.
    pub fn key(&self) -> &GroupKey {
        &self.key
    }

    /// The counts.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Per-domain counts (held and matching groups).
    pub fn per_domain(&self) -> Option<&DomainCounts> {
        match &self.counts {
            Counts::PerDomain(d) => Some(d),
            Counts::PerNode(_) => None,
        }
    }

    /// Per-node counts (spread groups).
    pub fn per_node(&self) -> Option<&NodeCounts> {
        match &self.counts {
            Counts::PerNode(n) => Some(n),
            Counts::PerDomain(_) => None,
        }
    }

    /// A held group's holders per value of its term's key (empty for other kinds).
    pub fn held_domains(&self) -> &FxHashMap<Sym, i64> {
        match &self.counts {
            Counts::PerDomain(d) => d.by_key.first().map(|(_, m)| m),
            Counts::PerNode(_) => None,
        }
        .unwrap_or_else(|| NO_DOMAINS.get_or_init(FxHashMap::default))
    }

    /// The pods holding a held group's term.
    pub fn holders(&self) -> &[PodId] {
        &self.holders
    }

    /// Whether a bound pod counts in a matching or spread group (held
    /// groups count their holders, not by labels; terminating pods are the
    /// caller's concern).
    fn counts_pod(&self, pod: &Pod, cx: &MatchContext) -> bool {
        match &self.key {
            GroupKey::Held { .. } => false,
            GroupKey::Matching(set) => set
                .iter()
                .all(|&t| incoming_term_matches(cx.terms.get(t), pod, cx.namespaces, cx.interner)),
            GroupKey::Spread {
                namespace,
                selector,
            } => *namespace == pod.namespace && selector.matches(&pod.labels, cx.interner),
        }
    }
}

/// A held group seen from an incoming pod (the symmetric checks).
#[derive(Debug, Clone, Copy)]
pub struct HeldGroup<'a> {
    /// The shared term.
    pub term: TermId,
    /// What kind of rule it is.
    pub kind: TermKind,
    /// Its weight (1 for required terms).
    pub weight: i32,
    /// Holders per topology value (holders on nodes without the key are not counted).
    pub domains: &'a FxHashMap<Sym, i64>,
    /// The holders, for explanations.
    pub holders: Holders<'a>,
}

/// The holders of a [`HeldGroup`] (iterate `&group.holders`).
#[derive(Debug, Clone, Copy)]
pub struct Holders<'a>(pub &'a [PodId]);

impl<'a> IntoIterator for &Holders<'a> {
    type Item = &'a PodId;
    type IntoIter = std::slice::Iter<'a, PodId>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> std::ops::Deref for Holders<'a> {
    type Target = [PodId];
    fn deref(&self) -> &[PodId] {
        self.0
    }
}

/// What deciding whether a pod counts in a group reads.
pub(crate) struct MatchContext<'a> {
    pub terms: &'a TermRegistry,
    pub namespaces: &'a FxHashMap<Sym, Labels>,
    pub interner: &'a Interner,
}

/// Which groups an accounting change touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope {
    /// Held and matching groups (inter-pod affinity).
    pub affinity: bool,
    /// Spread groups.
    pub spread: bool,
}

/// Every topology group, with one candidate index and one accounting path.
/// A copy (an overlay, serve's admission view) shares the slots in chunks
/// and the indexes in shards, copied when written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Groups {
    /// Shared with overlays until written ([`Arc::make_mut`] per group).
    slots: Chunked<Option<Arc<TopologyGroup>>>,
    free: Vec<u32>,
    ids: Sharded<GroupKey, GroupId>,
    /// Groups by a label pair every pod they could count (or, for held
    /// groups, every incoming pod their term could match) carries.
    by_pair: Sharded<(Sym, Sym), SmallVec<[GroupId; 2]>>,
    unindexed: Vec<GroupId>,
    /// Number of nodes, for new per-node counts.
    nodes: usize,
}

fn index_pair(key: &GroupKey, terms: &TermRegistry) -> Option<(Sym, Sym)> {
    match key {
        GroupKey::Held { term, .. } => terms.get(*term).selector.necessary_pair(),
        GroupKey::Matching(set) => set
            .iter()
            .find_map(|&t| terms.get(t).selector.necessary_pair()),
        GroupKey::Spread { selector, .. } => selector.necessary_pair(),
    }
}

/// Empty counts of the right shape for a key.
pub(crate) fn empty_counts(key: &GroupKey, terms: &TermRegistry, nodes: usize) -> Counts {
    match key {
        GroupKey::Held { term, .. } => {
            Counts::PerDomain(DomainCounts::with_keys([terms.get(*term).topology_key]))
        }
        GroupKey::Matching(set) => Counts::PerDomain(DomainCounts::with_keys(
            set.iter().map(|&t| terms.get(t).topology_key),
        )),
        GroupKey::Spread { .. } => Counts::PerNode(NodeCounts::new(nodes)),
    }
}

impl Groups {
    /// The group with this id, if it is live.
    pub(crate) fn get(&self, id: GroupId) -> Option<&TopologyGroup> {
        self.slots.get(id.index()).and_then(Option::as_deref)
    }

    /// The live group counting this key.
    pub(crate) fn find(&self, key: &GroupKey) -> Option<&TopologyGroup> {
        self.ids.get(key).and_then(|&id| self.get(id))
    }

    /// The id of a live group.
    pub(crate) fn id_of(&self, key: &GroupKey) -> Option<GroupId> {
        self.ids.get(key).copied()
    }

    /// Live groups.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Slots allocated (live and free).
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Replaces a live group's counts (recounted after something its
    /// matching depends on changed: a namespace's labels).
    pub(crate) fn set_counts(&mut self, id: GroupId, counts: Counts) {
        if let Some(Some(g)) = self.slots.get_mut(id.index()) {
            Arc::make_mut(g).counts = counts;
        }
    }

    /// Every live group.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &TopologyGroup> + '_ {
        self.slots.iter().flatten().map(|g| &**g)
    }

    /// Whether a node whose labels change from `old` to `new` moves its
    /// pods between the domains some group counts: only the values of the
    /// per-domain groups' topology keys are read when a pod is counted
    /// (per-node counts read no label), so a change to any other label
    /// leaves every count as it is.
    pub(crate) fn domains_move(&self, old: &Labels, new: &Labels) -> bool {
        let changed: SmallVec<[Sym; 4]> = old
            .iter()
            .filter(|&(k, v)| new.get(k) != Some(v))
            .chain(new.iter().filter(|&(k, v)| old.get(k) != Some(v)))
            .map(|(k, _)| k)
            .collect();
        !changed.is_empty()
            && self.iter().any(|g| match &g.counts {
                Counts::PerDomain(d) => d.by_key.iter().any(|(k, _)| changed.contains(k)),
                Counts::PerNode(_) => false,
            })
    }

    /// Label pairs indexed.
    pub(crate) fn index_len(&self) -> usize {
        self.by_pair.len() + self.unindexed.len()
    }

    /// Adds a group with its initial counts.
    pub(crate) fn insert(
        &mut self,
        key: GroupKey,
        counts: Counts,
        terms: &TermRegistry,
    ) -> GroupId {
        let pair = index_pair(&key, terms);
        let group = TopologyGroup {
            key: key.clone(),
            counts,
            holders: Vec::new(),
            needs: 0,
        };
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(Arc::new(group));
                GroupId(i)
            }
            None => {
                self.slots.push(Some(Arc::new(group)));
                GroupId((self.slots.len() - 1) as u32)
            }
        };
        match pair {
            Some(p) => self.by_pair.get_or_insert_with(p, SmallVec::new).push(id),
            None => self.unindexed.push(id),
        }
        self.ids.insert(key, id);
        id
    }

    /// Drops a group nobody holds or needs.
    fn release_if_unused(&mut self, id: GroupId, terms: &TermRegistry) {
        let unused = self
            .get(id)
            .is_some_and(|g| g.needs == 0 && g.holders.is_empty());
        if !unused {
            return;
        }
        let Some(group) = self.slots[id.index()].take() else {
            return;
        };
        match index_pair(&group.key, terms) {
            Some(p) => {
                if let Some(list) = self.by_pair.get_mut(&p) {
                    list.retain(|g| *g != id);
                    if list.is_empty() {
                        self.by_pair.remove(&p);
                    }
                }
            }
            None => self.unindexed.retain(|g| *g != id),
        }
        self.ids.remove(&group.key);
        self.free.push(id.0);
    }

    /// Takes one need on a group (it must be live).
    pub(crate) fn need(&mut self, id: GroupId) {
        if let Some(Some(g)) = self.slots.get_mut(id.index()) {
            Arc::make_mut(g).needs += 1;
        }
    }

    /// Drops one need; the group goes with its last need and holder.
    pub(crate) fn unneed(&mut self, id: GroupId, terms: &TermRegistry) {
        if let Some(Some(g)) = self.slots.get_mut(id.index()) {
            let g = Arc::make_mut(g);
            g.needs = g.needs.saturating_sub(1);
        }
        self.release_if_unused(id, terms);
    }

    /// Groups that could apply to a pod with these labels, by the one index.
    fn candidates<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = GroupId> + 'a {
        labels
            .iter()
            .filter_map(|pair| self.by_pair.get(&pair))
            .flatten()
            .chain(self.unindexed.iter())
            .copied()
    }

    /// Held groups whose term could match an incoming pod with these labels.
    pub(crate) fn held_for<'a>(
        &'a self,
        labels: &'a Labels,
    ) -> impl Iterator<Item = HeldGroup<'a>> + 'a {
        self.candidates(labels).filter_map(|id| {
            let g = self.get(id)?;
            match g.key {
                GroupKey::Held { term, kind, weight } if !g.holders.is_empty() => Some(HeldGroup {
                    term,
                    kind,
                    weight,
                    domains: g.held_domains(),
                    holders: Holders(&g.holders),
                }),
                _ => None,
            }
        })
    }

    /// The one accounting path: a bound pod `id` on `node` (with
    /// `node_labels`) counts `sign` times more in every group it belongs to
    /// within `scope`. Held groups are created with their first holder and
    /// dropped with their last.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn account(
        &mut self,
        cx: &MatchContext,
        id: PodId,
        pod: &Pod,
        terms: &PodTerms,
        node: NodeId,
        node_labels: &Labels,
        sign: i32,
        scope: Scope,
    ) {
        let mut touched: SmallVec<[GroupId; 8]> = SmallVec::new();
        if scope.affinity {
            for (term, kind, weight) in terms.held() {
                let key = GroupKey::Held { term, kind, weight };
                let gid = match self.ids.get(&key) {
                    Some(&g) => g,
                    None if sign > 0 => {
                        let counts = empty_counts(&key, cx.terms, self.nodes);
                        self.insert(key, counts, cx.terms)
                    }
                    None => continue,
                };
                touched.push(gid);
            }
        }
        if !self.by_pair.is_empty() || !self.unindexed.is_empty() {
            for gid in self.candidates(&pod.labels) {
                let Some(g) = self.get(gid) else { continue };
                let wanted = match g.key {
                    GroupKey::Held { .. } => false,
                    GroupKey::Matching(_) => scope.affinity,
                    GroupKey::Spread { .. } => scope.spread,
                };
                if wanted && g.counts_pod(pod, cx) {
                    touched.push(gid);
                }
            }
        }
        for gid in touched {
            let Some(Some(g)) = self.slots.get_mut(gid.index()) else {
                continue;
            };
            let g = Arc::make_mut(g);
            if matches!(g.key, GroupKey::Held { .. }) {
                if sign > 0 {
                    g.holders.push(id);
                } else if let Some(i) = g.holders.iter().position(|&p| p == id) {
                    g.holders.swap_remove(i);
                }
            }
            match &mut g.counts {
                Counts::PerDomain(d) => d.add(node_labels, i64::from(sign)),
                Counts::PerNode(n) => n.add(node, sign),
            }
            if sign < 0 {
                self.release_if_unused(gid, cx.terms);
            }
        }
    }

    /// A node was appended.
    pub(crate) fn push_node(&mut self) {
        self.nodes += 1;
        for g in self.slots.iter_mut().flatten() {
            if let Counts::PerNode(n) = &mut Arc::make_mut(g).counts {
                n.push_node();
            }
        }
    }

    /// The last node moved into slot `index` (its pods are unaccounted).
    pub(crate) fn swap_remove_node(&mut self, index: usize) {
        self.nodes = self.nodes.saturating_sub(1);
        for g in self.slots.iter_mut().flatten() {
            if let Counts::PerNode(n) = &mut Arc::make_mut(g).counts {
                n.swap_remove_node(index);
            }
        }
    }
}
