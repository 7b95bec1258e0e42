//! The cluster state: nodes, the pods bound to them, and the topology
//! groups every scheduling decision reads, kept current by every change.
//!
//! kube-scheduler recomputes inter-pod affinity and spread counts by walking
//! every pod for every scheduled pod. Here the counts are kept per distinct
//! term and per topology domain ([`crate::groups`]) and updated on each bind
//! and unbind, so scheduling a pod costs in the order of its terms times the
//! domains. The state follows a watch for weeks: pods and nodes are added,
//! updated and removed, pod slots are reused, and groups and terms nobody
//! needs are released. Reading takes `&self`; what a scheduling cycle
//! caches lives in [`crate::cache::SchedulerCache`]. `Clone` gives an
//! independent copy for what-ifs ([`ClusterState::overlay`]); the large
//! tables (pod slots, pods by name, the label index, nodes, terms, groups)
//! are shared with it copy-on-write ([`chunked`]), so it costs the nodes
//! and the number of chunks, not the pods.

mod compact;
mod dump;
mod dump_storage;
mod nodes;
mod observe;
mod pods;
pub mod selectors;
mod storage;
pub mod terms;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use podplace_model::intern::{Interner, Sym};
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, HostPort, Node, Pod, Resources};
use podplace_model::selector::LabelSelector;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::groups::{
    empty_counts, Counts, DomainCounts, GroupKey, Groups, HeldGroup, NodeCounts, TermSet,
    TopologyGroup,
};
use crate::ids::{GroupId, NodeId, PodHandle, PodId, TermId};
pub use compact::{CompactError, SymRemap};
use podplace_model::cow::{Chunked, Sharded};
pub use selectors::OwnerSelectors;
pub use storage::{StorageChange, StorageKind, StorageObject};
use terms::{PodTerms, TermRegistry};

/// A fresh value for a node version or node epoch, unique across every
/// state of the process, so a [`crate::cache::SchedulerCache`] shared by a
/// state and its overlays never mistakes one for the other.
pub(crate) fn next_version() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What the scheduler accounts on a node for the pods bound to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// Sum of the pods' actual requests.
    pub requested: Resources,
    /// Sum of the pods' requests with 100m / 200Mi defaults, for scoring.
    pub non_zero_requested: (i64, i64),
    /// Pods bound to the node, terminating ones included.
    pub pods: Vec<PodId>,
    /// Host ports in use.
    pub used_ports: SmallVec<[HostPort; 2]>,
    /// How many claims and in-tree volumes the pods use in all (an upper
    /// bound of the distinct volumes the node attaches, per driver): a node
    /// far below its CSINode limits passes NodeVolumeLimits without
    /// looking at its pods.
    pub attachable: u32,
}

impl NodeInfo {
    fn add(&mut self, id: PodId, pod: &Pod) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.0 += pod.non_zero.0;
        self.non_zero_requested.1 += pod.non_zero.1;
        self.pods.push(id);
        self.used_ports.extend(pod.host_ports.iter().cloned());
        self.attachable += attachable(pod);
    }

    /// Removes a pod's accounting (used by unbind and by preemption's dry run).
    pub fn remove(&mut self, id: PodId, pod: &Pod) {
        self.requested.sub(&pod.requests);
        self.non_zero_requested.0 -= pod.non_zero.0;
        self.non_zero_requested.1 -= pod.non_zero.1;
        if let Some(i) = self.pods.iter().position(|&p| p == id) {
            self.pods.remove(i);
        }
        self.attachable = self.attachable.saturating_sub(attachable(pod));
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.remove(i);
            }
        }
    }
}

/// How many volumes of a pod NodeVolumeLimits may count: its claims and
/// in-tree volumes.
pub(crate) fn attachable(pod: &Pod) -> u32 {
    (pod.volumes.claims.len() + pod.volumes.in_tree.len()) as u32
}

/// A pod known to the state and where it is.
#[derive(Debug, Clone)]
pub struct PodEntry {
    /// The compiled pod.
    pub pod: Pod,
    /// The node it is bound to, if any.
    pub node: Option<NodeId>,
    /// The distinct ids of its affinity terms, by kind.
    pub terms: PodTerms,
    /// A removed pod's slot is dead until a new pod reuses it.
    pub alive: bool,
    /// The matching and spread groups this pending pod needs.
    pub(crate) needs: SmallVec<[GroupId; 2]>,
    /// How many pods the slot held before this one ([`PodHandle`]).
    pub(crate) generation: u32,
}

/// Sizes of the state's tables, to show memory stays flat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateStats {
    /// Live pods.
    pub live_pods: usize,
    /// Pod slots (live and free).
    pub pod_slots: usize,
    /// Nodes.
    pub nodes: usize,
    /// Distinct label pairs in the pod label index.
    pub label_pairs: usize,
    /// Entries over all lists of the pod label index.
    pub label_entries: usize,
    /// Live topology groups.
    pub groups: usize,
    /// Group slots (live and free).
    pub group_slots: usize,
    /// Label pairs of the group index.
    pub group_index: usize,
    /// Live distinct terms.
    pub terms: usize,
    /// Term slots (live and free).
    pub term_slots: usize,
    /// Pods by name.
    pub names: usize,
    /// Interned strings.
    pub interned: usize,
}

/// Alive pods by label pair, each list shared apart, the pairs sharded: a
/// copy of the state shares both, and a change copies one shard of the
/// pairs and the lists it changes.
type LabelIndex = Sharded<(Sym, Sym), Arc<Vec<PodId>>>;

/// A world ready to schedule into (see the module doc).
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// Every string of this world (read through [`ClusterState::interner`],
    /// added to through [`ClusterState::intern`] and the compile methods).
    interner: Interner,
    /// Pod slots by [`PodId`] (read through [`ClusterState::pod_entry`] and
    /// friends), in chunks shared with overlays until written ([`Chunked`]).
    pods: Chunked<PodEntry>,
    /// Per-node accounting, parallel to the nodes ([`ClusterState::node_info`]),
    /// in chunks shared with copies until written.
    node_infos: Chunked<NodeInfo>,
    /// Namespaces and their labels ([`ClusterState::namespace_labels`]).
    namespaces: FxHashMap<Sym, Labels>,
    /// Selectors of Services by namespace (nil selectors are left out), for
    /// the default topology spread constraints.
    service_selectors: Vec<(Sym, LabelSelector)>,
    /// Selectors of the controllers that own pods, for the same purpose.
    owner_selectors: OwnerSelectors,
    /// A fresh [`next_version`] whenever `service_selectors` or
    /// `owner_selectors` change, so a cache of default selectors knows
    /// when to forget (every change to them must take a new one).
    selectors_version: u64,
    /// Number of bound pods with any inter-pod affinity rule, per node (for
    /// the "nodes having pods with affinity" lists).
    pods_with_affinity: Vec<u32>,
    // The parts below are shared with overlays until written (`Arc::make_mut`).
    nodes: Arc<Vec<Arc<Node>>>,
    node_by_name: Arc<FxHashMap<Sym, NodeId>>,
    pod_by_name: Sharded<(Sym, Box<str>), PodId>,
    /// Free pod slots, oldest first (a stale id is reused as late as possible).
    free_pods: VecDeque<u32>,
    /// Whether removed pods' slots are reused (off for callers that keep
    /// tables parallel to the pod slots).
    reuse_slots: bool,
    live_pods: usize,
    /// Alive pods by each of their label pairs, so a count built on demand
    /// visits only the pods its selector could match.
    /// Each list is shared apart and the pairs are sharded, so a what-if
    /// that adds or removes a pod copies the shards of its pairs and the
    /// lists of its labels only.
    pods_by_label: LabelIndex,
    terms: TermRegistry,
    groups: Groups,
    /// Per node: a fresh [`next_version`] whenever its accounting changes.
    node_versions: Vec<u64>,
    /// A fresh [`next_version`] whenever any node changes.
    node_epoch: u64,
    /// Nodes changed through [`ClusterState::node_mut`] and their labels before.
    unsettled: Vec<(NodeId, Labels)>,
    /// Groups taken by [`ClusterState::prepare`], with how many times.
    prepared: FxHashMap<GroupKey, u32>,
    /// Groups [`ClusterState::pin_group`] keeps for the life of the state.
    pinned: rustc_hash::FxHashSet<GroupKey>,
    /// PersistentVolumes, claims, classes, CSI and DRA objects ([`storage`]).
    storage: Arc<podplace_model::storage::Storage>,
}

impl Default for ClusterState {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterState {
    /// An empty state.
    pub fn new() -> Self {
        ClusterState::with_strings(Interner::new())
    }

    /// An empty state holding `strings`, so objects compiled against them
    /// (pods compiled as they were loaded,
    /// [`podplace_model::pod_list::PodList::pack_compiled`]) can be added.
    pub fn with_strings(mut interner: Interner) -> Self {
        // What every cycle looks up: NodeUnschedulable's taint key and the
        // wildcard host IP.
        for name in crate::names::ALL {
            interner.intern(name);
        }
        ClusterState {
            interner,
            pods: Chunked::default(),
            node_infos: Chunked::default(),
            namespaces: FxHashMap::default(),
            service_selectors: Vec::new(),
            owner_selectors: OwnerSelectors::default(),
            selectors_version: next_version(),
            pods_with_affinity: Vec::new(),
            nodes: Arc::default(),
            node_by_name: Arc::default(),
            pod_by_name: Sharded::default(),
            free_pods: VecDeque::new(),
            reuse_slots: true,
            live_pods: 0,
            pods_by_label: LabelIndex::default(),
            terms: TermRegistry::default(),
            groups: Groups::default(),
            node_versions: Vec::new(),
            node_epoch: next_version(),
            unsettled: Vec::new(),
            prepared: FxHashMap::default(),
            pinned: Default::default(),
            storage: Arc::default(),
        }
    }

    /// An independent copy to try changes on: whatever is applied to it
    /// (binds, evictions, node or pod updates) leaves `self` untouched, so a
    /// what-if (fix verification, a rollout replay, an admission check)
    /// schedules on it and drops it. The pod slots, names, label index,
    /// nodes, terms and groups are shared until one side writes them, in
    /// chunks copied on the first write ([`chunked`]): taking it costs
    /// O(nodes + chunks), not O(pods) (a deep copy of a 160,000-pod state
    /// took hundreds of milliseconds). A
    /// [`crate::cache::SchedulerCache`] may serve both.
    pub fn overlay(&self) -> ClusterState {
        self.clone()
    }

    /// A copy of this state without its pods: the same nodes (same
    /// [`NodeId`]s, nothing accounted on them), namespaces, storage and
    /// strings. For readers that ask node questions and compile objects
    /// but schedule nothing — an admission review on a live 150,000-pod
    /// world — at the cost of a copy of the nodes, not of every pod. A
    /// what-if that schedules takes [`ClusterState::overlay`] and
    /// [`ClusterState::adopt_strings`].
    pub fn without_pods(&self) -> ClusterState {
        let mut state = ClusterState::new();
        state.interner = self.interner.clone();
        state.namespaces = self.namespaces.clone();
        state.storage = self.storage.clone();
        for node in self.nodes.iter() {
            state.insert_node((**node).clone());
        }
        state
    }

    /// Takes `strings` as this state's strings. They must extend this
    /// state's own — a copy of its interner (or of the interner of the
    /// state it is an overlay of) to which more strings were added, as
    /// [`ClusterState::without_pods`] copies it — so every symbol the state
    /// holds keeps its text, and objects compiled against `strings` can be
    /// added here.
    pub fn adopt_strings(&mut self, strings: &Interner) {
        self.interner = strings.clone();
    }

    /// Whether a removed pod's slot (its [`PodId`]) is given to a later pod
    /// (the default, so the pod table stays as large as the most pods alive
    /// at once). Off, ids are never reused and the table keeps every pod
    /// ever added, as callers that keep tables parallel to the slots need.
    pub fn set_slot_reuse(&mut self, reuse: bool) {
        self.reuse_slots = reuse;
        if !reuse {
            self.free_pods.clear();
        }
    }

    /// Every string of this world.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    /// Interns a string into this world's strings, for callers that build
    /// their own keys (a label key to look up, a namespace to match).
    pub fn intern(&mut self, text: &str) -> Sym {
        self.interner.intern(text)
    }

    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The node with this id, if there is one.
    pub fn get_node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index()).map(|n| &**n)
    }

    /// Every node, in order (indexed by [`NodeId::index`]).
    pub fn nodes(&self) -> &[Arc<Node>] {
        &self.nodes
    }

    /// All node ids.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// What the scheduler accounts on a node.
    pub fn node_info(&self, id: NodeId) -> &NodeInfo {
        &self.node_infos[id.index()]
    }

    /// How many bound pods with an inter-pod affinity rule a node holds.
    pub fn pods_with_affinity(&self, id: NodeId) -> u32 {
        self.pods_with_affinity
            .get(id.index())
            .copied()
            .unwrap_or(0)
    }

    /// Selectors of Services by namespace, for default spread constraints.
    pub fn service_selectors(&self) -> &[(Sym, LabelSelector)] {
        &self.service_selectors
    }

    /// Selectors of the controllers that own pods, for default spread
    /// constraints.
    pub fn owner_selectors(&self) -> &OwnerSelectors {
        &self.owner_selectors
    }

    /// Changes whenever the Service or controller selectors change (a
    /// value no other state or change ever had): what the default spread
    /// selectors read besides the pod itself.
    pub fn selectors_version(&self) -> u64 {
        self.selectors_version
    }

    /// Looks a node up by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.interner
            .lookup(name)
            .and_then(|s| self.node_by_name.get(&s).copied())
    }

    /// Looks a pod up by namespace and name.
    pub fn pod_id(&self, namespace: &str, name: &str) -> Option<PodId> {
        let ns = self.interner.lookup(namespace)?;
        self.pod_by_name.get(&(ns, name.into())).copied()
    }

    /// The pod with this id (a dead slot reads as the pod it last held).
    pub fn pod(&self, id: PodId) -> &Pod {
        &self.pods[id.index()].pod
    }

    /// The entry of a live pod; `None` for a removed pod or an unknown id.
    pub fn pod_entry(&self, id: PodId) -> Option<&PodEntry> {
        self.pods.get(id.index()).filter(|e| e.alive)
    }

    /// A handle on a live pod that goes stale once the pod is removed
    /// (see [`PodHandle`]); `None` for a removed pod or an unknown id.
    pub fn pod_handle(&self, id: PodId) -> Option<PodHandle> {
        self.pod_entry(id).map(|e| PodHandle {
            id,
            generation: e.generation,
        })
    }

    /// The id of the pod a handle was taken on, while that pod lives;
    /// `None` once it was removed (its slot free, or holding another pod).
    pub fn resolve(&self, handle: PodHandle) -> Option<PodId> {
        self.pod_entry(handle.id)
            .filter(|e| e.generation == handle.generation)
            .map(|_| handle.id)
    }

    /// The node a live pod is bound to.
    pub fn pod_node(&self, id: PodId) -> Option<NodeId> {
        self.pod_entry(id).and_then(|e| e.node)
    }

    /// Every live pod, in id order.
    pub fn live_pods(&self) -> impl Iterator<Item = (PodId, &PodEntry)> + '_ {
        self.pods
            .iter()
            .enumerate()
            .filter(|(_, e)| e.alive)
            .map(|(i, e)| (PodId(i as u32), e))
    }

    /// Number of pod slots: the bound of every [`PodId`], for side tables.
    pub fn pod_slots(&self) -> usize {
        self.pods.len()
    }

    /// Bound pods the scheduler sees, in id order (finished pods left out,
    /// as kube-scheduler's informer leaves them out).
    pub fn bound_pods(&self) -> impl Iterator<Item = (PodId, NodeId)> + '_ {
        self.bound_pods_with_finished()
            .filter(|(id, _)| !self.pods[id.index()].pod.finished)
    }

    /// Bound pods including finished (Succeeded or Failed) ones, which stay
    /// on their node until deleted: what the descheduler's RemoveFailedPods
    /// and PodLifeTime look at.
    pub fn bound_pods_with_finished(&self) -> impl Iterator<Item = (PodId, NodeId)> + '_ {
        self.pods
            .iter()
            .enumerate()
            .filter(|(_, e)| e.alive)
            .filter_map(|(i, e)| e.node.map(|n| (PodId(i as u32), n)))
    }

    /// The bound pods ([`ClusterState::bound_pods`], in id order) a selector
    /// requiring every label pair of `pairs` could match: those carrying
    /// the rarest pair, read from the label index, or every bound pod when
    /// `pairs` is empty. A caller naming the pods a term matches (`why`'s
    /// blockers) checks each one, without walking 150,000 pods.
    pub fn bound_pods_carrying(
        &self,
        pairs: impl Iterator<Item = (Sym, Sym)>,
    ) -> Vec<(PodId, NodeId)> {
        let Some(ids) = self.rarest_carriers(pairs) else {
            return self.bound_pods().collect();
        };
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|id| {
                let e = &self.pods[id.index()];
                (e.alive && !e.pod.finished)
                    .then_some(e.node)
                    .flatten()
                    .map(|n| (id, n))
            })
            .collect()
    }

    /// The term behind an id.
    pub fn term(&self, id: TermId) -> &AffinityTerm {
        self.terms.get(id)
    }

    /// The id of a term some pod carries.
    pub fn lookup_term(&self, term: &AffinityTerm) -> Option<TermId> {
        self.terms.lookup(term)
    }

    /// A pod's term ids, if the state knows every one of its terms (pods in
    /// the state and prepared pods).
    pub fn lookup_pod_terms(&self, pod: &Pod) -> Option<PodTerms> {
        self.terms.lookup_pod(pod)
    }

    /// Per node: a version that changes whenever the node's accounting does.
    pub fn node_versions(&self) -> &[u64] {
        &self.node_versions
    }

    /// A value that changes whenever any node (labels, taints, allocatable,
    /// the node set) changes: what node-derived caches are keyed by.
    pub fn node_epoch(&self) -> u64 {
        self.node_epoch
    }

    /// Held groups whose term could match an incoming pod with these labels.
    pub fn held_groups_for<'a>(
        &'a self,
        labels: &'a Labels,
    ) -> impl Iterator<Item = HeldGroup<'a>> + 'a {
        self.groups.held_for(labels)
    }

    /// Every live topology group.
    pub fn groups(&self) -> impl Iterator<Item = &TopologyGroup> + '_ {
        self.groups.iter()
    }

    /// The live group with this id.
    pub fn group(&self, id: GroupId) -> Option<&TopologyGroup> {
        self.groups.get(id)
    }

    /// The alive, bound, unfinished pods a selector with these necessary
    /// label pairs could match: those carrying the rarest of the pairs, or
    /// every pod when there is none.
    fn bound_candidates(
        &self,
        pairs: impl Iterator<Item = (Sym, Sym)>,
    ) -> impl Iterator<Item = (&PodEntry, NodeId)> + '_ {
        let (listed, all) = match self.rarest_carriers(pairs) {
            Some(ids) => (Some(ids.iter().map(|id| &self.pods[id.index()])), None),
            None => (None, Some(self.pods.iter())),
        };
        listed
            .into_iter()
            .flatten()
            .chain(all.into_iter().flatten())
            .filter(|e| e.alive && !e.pod.finished)
            .filter_map(|e| e.node.map(|n| (e, n)))
    }

    /// The pods (in the label index's order) carrying the rarest of these
    /// label pairs, or `None` when there is no pair: a selector requiring
    /// every pair can match no pod outside that list.
    fn rarest_carriers(&self, pairs: impl Iterator<Item = (Sym, Sym)>) -> Option<&[PodId]> {
        pairs
            .map(|pair| {
                self.pods_by_label
                    .get(&pair)
                    .map_or(&[][..], |ids| ids.as_slice())
            })
            .min_by_key(|ids| ids.len())
    }

    /// Counts a matching or spread group from the bound pods.
    fn count_group(&self, key: &GroupKey) -> Counts {
        let mut counts = empty_counts(key, &self.terms, self.nodes.len());
        match (key, &mut counts) {
            (GroupKey::Matching(set), Counts::PerDomain(d)) => {
                let terms: SmallVec<[&AffinityTerm; 2]> =
                    set.iter().map(|&t| self.terms.get(t)).collect();
                *d = self.count_matching_terms(&terms);
            }
            (
                GroupKey::Spread {
                    namespace,
                    selector,
                },
                Counts::PerNode(n),
            ) => *n = self.count_spread(*namespace, selector),
            _ => {}
        }
        counts
    }

    /// Pods matching all of `terms`, per domain of each term's key, counted
    /// now from the bound pods.
    fn count_matching_terms(&self, terms: &[&AffinityTerm]) -> DomainCounts {
        let mut counts = DomainCounts::default();
        for t in terms {
            if counts.domains(t.topology_key).is_none() {
                counts.by_key.push((t.topology_key, FxHashMap::default()));
            }
        }
        let pairs = terms.iter().filter_map(|t| t.selector.necessary_pair());
        for (entry, node) in self.bound_candidates(pairs) {
            let all = terms.iter().all(|t| {
                terms::incoming_term_matches(t, &entry.pod, &self.namespaces, &self.interner)
            });
            if all {
                counts.add(&self.nodes[node.index()].labels, 1);
            }
        }
        counts
    }

    /// Non-terminating pods of `namespace` matching `selector` per node,
    /// counted now from the bound pods.
    fn count_spread(&self, namespace: Sym, selector: &LabelSelector) -> NodeCounts {
        let mut counts = NodeCounts::new(self.nodes.len());
        for (entry, node) in self.bound_candidates(selector.necessary_pair().into_iter()) {
            if !entry.pod.terminating
                && entry.pod.namespace == namespace
                && selector.matches(&entry.pod.labels, &self.interner)
            {
                counts.add(node, 1);
            }
        }
        counts
    }

    /// Pods matching all of an incoming pod's `terms`, per domain of each
    /// term's key: from the kept group when some pod needs it, otherwise
    /// counted on the fly (correct, slower).
    pub fn matching_counts(&self, terms: &[&AffinityTerm]) -> Cow<'_, DomainCounts> {
        let ids: Option<TermSet> = terms.iter().map(|t| self.terms.lookup(t)).collect();
        if let Some(group) = ids.and_then(|set| self.groups.find(&GroupKey::Matching(set))) {
            if let Some(d) = group.per_domain() {
                return Cow::Borrowed(d);
            }
        }
        Cow::Owned(self.count_matching_terms(terms))
    }

    /// Matching, non-terminating pods per node for a spread selector in a
    /// namespace: from the kept group, or counted on the fly.
    pub fn spread_counts(&self, namespace: Sym, selector: &LabelSelector) -> Cow<'_, NodeCounts> {
        let key = GroupKey::Spread {
            namespace,
            selector: selector.clone(),
        };
        if let Some(n) = self.groups.find(&key).and_then(TopologyGroup::per_node) {
            return Cow::Borrowed(n);
        }
        Cow::Owned(self.count_spread(namespace, selector))
    }

    /// The keys of the matching and spread groups a pod needs to be
    /// scheduled fast (its terms must be acquired).
    fn needed_keys(&self, pod: &Pod, terms: &PodTerms) -> SmallVec<[GroupKey; 4]> {
        let mut keys: SmallVec<[GroupKey; 4]> = SmallVec::new();
        if !terms.required_affinity.is_empty() {
            keys.push(GroupKey::Matching(
                terms.required_affinity.iter().copied().collect(),
            ));
        }
        for t in terms
            .required_anti_affinity
            .iter()
            .copied()
            .chain(terms.preferred_affinity.iter().map(|&(t, _)| t))
            .chain(terms.preferred_anti_affinity.iter().map(|&(t, _)| t))
        {
            keys.push(GroupKey::Matching(smallvec::smallvec![t]));
        }
        let mut spread = |selector: LabelSelector| {
            if !selector.is_everything() {
                keys.push(GroupKey::Spread {
                    namespace: pod.namespace,
                    selector,
                });
            }
        };
        if pod.spread.is_empty() {
            spread(self.default_selector(pod));
        } else {
            for c in &pod.spread {
                spread(c.selector.clone());
            }
        }
        keys.dedup();
        keys
    }

    /// The group of a key, counted and added when missing.
    fn ensure_group(&mut self, key: GroupKey) -> GroupId {
        if let Some(id) = self.groups.id_of(&key) {
            return id;
        }
        let counts = self.count_group(&key);
        self.groups.insert(key, counts, &self.terms)
    }

    /// Registers what scheduling `pod` (not in the state) reads, so
    /// [`crate::cycle::schedule`] finds it kept instead of counting on the
    /// fly: its terms and its matching and spread groups, refcounted until
    /// [`ClusterState::release_prepared`]. Pods added to the state are
    /// prepared while they are pending without this; a caller that unbinds
    /// pods of the state and binds them back again and again (the
    /// rebalance planner ranking candidates) prepares them too, so their
    /// groups are not dropped and counted again at every bind.
    pub fn prepare(&mut self, pod: &Pod) {
        self.settle();
        let terms = self.terms.acquire_pod(pod);
        for key in self.needed_keys(pod, &terms) {
            let id = self.ensure_group(key.clone());
            self.groups.need(id);
            *self.prepared.entry(key).or_insert(0) += 1;
        }
    }

    /// Undoes one [`ClusterState::prepare`] of the same pod.
    pub fn release_prepared(&mut self, pod: &Pod) {
        let Some(terms) = self.terms.lookup_pod(pod) else {
            return;
        };
        for key in self.needed_keys(pod, &terms) {
            let Some(count) = self.prepared.get_mut(&key) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                self.prepared.remove(&key);
            }
            if let Some(id) = self.groups.id_of(&key) {
                self.groups.unneed(id, &self.terms);
            }
        }
        self.terms.release_pod(&terms);
    }

    /// Keeps a group counted for the life of this state (never released):
    /// for a reader that asks for the same counts over many changes (a
    /// planner trying moves on its own what-if), so that
    /// [`ClusterState::matching_counts`] and [`ClusterState::spread_counts`]
    /// find them kept instead of counting on every read.
    pub fn pin_group(&mut self, key: GroupKey) -> GroupId {
        self.settle();
        let id = self.ensure_group(key.clone());
        if self.pinned.insert(key.clone()) {
            if let GroupKey::Matching(set) = &key {
                for &t in set {
                    let term = self.terms.get(t).clone();
                    self.terms.acquire(&term);
                }
            }
            self.groups.need(id);
        }
        id
    }

    /// Sizes of the state's tables.
    pub fn stats(&self) -> StateStats {
        StateStats {
            live_pods: self.live_pods,
            pod_slots: self.pods.len(),
            nodes: self.nodes.len(),
            label_pairs: self.pods_by_label.len(),
            label_entries: self.pods_by_label.values().map(|ids| ids.len()).sum(),
            groups: self.groups.len(),
            group_slots: self.groups.capacity(),
            group_index: self.groups.index_len(),
            terms: self.terms.len(),
            term_slots: self.terms.capacity(),
            names: self.pod_by_name.len(),
            interned: interned_count(&self.interner),
        }
    }
}

fn interned_count(interner: &Interner) -> usize {
    // The interner hands out symbols densely: the next one is the count.
    let mut probe = interner.clone();
    probe.intern("\u{0}podplace-probe\u{0}").index()
}
