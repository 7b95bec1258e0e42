//! The engine's view of a cluster: nodes, the pods bound to them, and the
//! incremental indexes every scheduling decision reads.
//!
//! kube-scheduler recomputes inter-pod affinity and spread counts by walking
//! every pod for every scheduled pod. Here the counts are kept per distinct
//! term and per topology domain and updated on each bind and unbind, so
//! scheduling a pod costs in the order of its terms times the domains.

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use podplace_model::intern::{Interner, Sym};
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, CompileError, HostPort, Node, Pod, Resources};
use podplace_model::selector::{LabelSelector, Requirement};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::framework::Scratch;
use crate::statics::{NodeStatics, ResourceScores, StaticsCache};
use crate::topology::{TableId, Topology};

/// Index of a node in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// As an index into per-node tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a pod in the cluster (stable for the pod's lifetime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodId(pub u32);

impl PodId {
    /// As an index into per-pod tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a distinct affinity term (identical terms of many pods share one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TermId(pub u32);

/// What the scheduler accounts on a node for the pods bound to it.
#[derive(Debug, Clone, Default)]
pub struct NodeInfo {
    /// Sum of the pods' actual requests.
    pub requested: Resources,
    /// Sum of the pods' requests with 100m / 200Mi defaults, for scoring.
    pub non_zero_requested: (i64, i64),
    /// Pods bound to the node, terminating ones included.
    pub pods: Vec<PodId>,
    /// Host ports in use.
    pub used_ports: SmallVec<[HostPort; 2]>,
}

impl NodeInfo {
    fn add(&mut self, id: PodId, pod: &Pod) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.0 += pod.non_zero.0;
        self.non_zero_requested.1 += pod.non_zero.1;
        self.pods.push(id);
        self.used_ports.extend(pod.host_ports.iter().cloned());
    }

    /// Removes a pod's accounting (used by unbind and by preemption's dry run).
    pub fn remove(&mut self, id: PodId, pod: &Pod) {
        self.requested.sub(&pod.requests);
        self.non_zero_requested.0 -= pod.non_zero.0;
        self.non_zero_requested.1 -= pod.non_zero.1;
        if let Some(i) = self.pods.iter().position(|&p| p == id) {
            self.pods.remove(i);
        }
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.remove(i);
            }
        }
    }
}

/// A pod known to the cluster and where it is.
#[derive(Debug, Clone)]
pub struct PodEntry {
    /// The compiled pod.
    pub pod: Pod,
    /// The node it is bound to, if any.
    pub node: Option<NodeId>,
    /// The distinct ids of its affinity terms, by kind.
    pub terms: PodTerms,
    /// Removed pods keep their slot (ids stay stable) but are not alive.
    pub alive: bool,
}

/// A pod's affinity terms as shared term ids.
#[derive(Debug, Clone, Default)]
pub struct PodTerms {
    /// Required pod affinity.
    pub required_affinity: SmallVec<[TermId; 1]>,
    /// Required pod anti-affinity.
    pub required_anti_affinity: SmallVec<[TermId; 1]>,
    /// Preferred pod affinity with weights.
    pub preferred_affinity: SmallVec<[(TermId, i32); 1]>,
    /// Preferred pod anti-affinity with weights.
    pub preferred_anti_affinity: SmallVec<[(TermId, i32); 1]>,
}

/// The kind of rule an existing pod holds, for the symmetric checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeldKind {
    /// Required anti-affinity: blocks matching pods from its domain.
    RequiredAntiAffinity,
    /// Required affinity: scores matching pods towards it (hardPodAffinityWeight).
    RequiredAffinity,
    /// Preferred affinity: scores matching pods towards it.
    PreferredAffinity,
    /// Preferred anti-affinity: scores matching pods away from it.
    PreferredAntiAffinity,
}

/// All existing pods that hold the same term of the same kind and weight,
/// counted per domain of the term's topology key.
#[derive(Debug, Clone)]
pub struct HeldGroup {
    /// The shared term.
    pub term: TermId,
    /// What kind of rule it is.
    pub kind: HeldKind,
    /// Its weight (1 for required terms).
    pub weight: i32,
    /// Holders per topology value (holders on nodes without the key are not counted).
    pub domains: FxHashMap<Sym, u32>,
    /// The holders, for explanations.
    pub holders: Vec<PodId>,
}

/// Pods matching *all* of a set of the incoming pod's terms, counted per
/// domain of each term's topology key. kube-scheduler counts an existing pod
/// for required pod affinity only when it matches every required term; each
/// anti-affinity or preferred term is its own one-term set.
#[derive(Debug, Clone, Default)]
pub struct MatchCounts {
    /// Per topology key of the set's terms: matching pods per value (pods on
    /// nodes lacking the key are not counted; zero entries are removed).
    pub by_key: SmallVec<[(Sym, FxHashMap<Sym, i64>); 1]>,
}

impl MatchCounts {
    /// Matching pods per value of `key`.
    pub fn domains(&self, key: Sym) -> Option<&FxHashMap<Sym, i64>> {
        self.by_key.iter().find(|(k, _)| *k == key).map(|(_, d)| d)
    }

    fn add(&mut self, labels: &Labels, delta: i64) {
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

/// A set of terms an existing pod must all match to be counted.
pub type TermSet = SmallVec<[TermId; 2]>;

/// Terms indexed by a label pair every pod they match must carry, so a pod
/// is only checked against terms that could match it.
#[derive(Debug, Clone, Default)]
struct PairIndex<T> {
    by_pair: FxHashMap<(Sym, Sym), Vec<T>>,
    unindexed: Vec<T>,
}

impl<T: Copy> PairIndex<T> {
    fn insert(&mut self, pair: Option<(Sym, Sym)>, item: T) {
        match pair {
            Some(p) => self.by_pair.entry(p).or_default().push(item),
            None => self.unindexed.push(item),
        }
    }

    /// Items that could match a pod with these labels.
    fn candidates<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = T> + 'a {
        labels
            .iter()
            .filter_map(|pair| self.by_pair.get(&pair))
            .flatten()
            .chain(self.unindexed.iter())
            .copied()
    }
}

/// Selectors of pod-owning controllers, by (namespace, name).
#[derive(Debug, Clone, Default)]
pub struct OwnerSelectors {
    /// ReplicationControllers.
    pub replication_controllers: Vec<(Sym, Sym, LabelSelector)>,
    /// ReplicaSets.
    pub replica_sets: Vec<(Sym, Sym, LabelSelector)>,
    /// StatefulSets.
    pub stateful_sets: Vec<(Sym, Sym, LabelSelector)>,
}

/// Count of matching, non-terminating pods per node for one (namespace,
/// selector), indexed by node, with the list of nodes that have any (so
/// per-domain sums visit only those).
#[derive(Debug, Clone, Default)]
pub struct SpreadCounts {
    per_node: Vec<i32>,
    /// Nodes with a non-zero count, in no particular order.
    occupied: Vec<NodeId>,
    /// Position of each node in `occupied` (`u32::MAX`: absent).
    position: Vec<u32>,
}

impl SpreadCounts {
    fn new(nodes: usize) -> Self {
        SpreadCounts {
            per_node: vec![0; nodes],
            occupied: Vec::new(),
            position: vec![u32::MAX; nodes],
        }
    }

    fn push_node(&mut self) {
        self.per_node.push(0);
        self.position.push(u32::MAX);
    }

    fn add(&mut self, node: NodeId, delta: i32) {
        let i = node.index();
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

/// Index of a kept [`SpreadCounts`] (see [`Cluster::ensure_spread_counts`]).
pub type SpreadId = usize;

/// A world ready to schedule into.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Every string of this world.
    pub interner: Interner,
    /// Nodes, in load order (read through [`Cluster::nodes`]; changed only
    /// through [`Cluster::node_mut`], which keeps the per-node caches true).
    nodes: Vec<Node>,
    /// Per-node accounting, parallel to `nodes`.
    pub node_infos: Vec<NodeInfo>,
    node_by_name: FxHashMap<Sym, NodeId>,
    /// Every pod ever added.
    pub pods: Vec<PodEntry>,
    pod_by_name: FxHashMap<(Sym, Box<str>), PodId>,
    /// Namespaces and their labels.
    pub namespaces: FxHashMap<Sym, Labels>,
    /// Selectors of Services by namespace (nil selectors are left out), for
    /// the default topology spread constraints.
    pub service_selectors: Vec<(Sym, LabelSelector)>,
    /// Selectors of the controllers that own pods, for the same purpose.
    pub owner_selectors: OwnerSelectors,
    /// Per image name: on how many nodes, and the size reported by the
    /// first node (by name) that has it.
    images: FxHashMap<Sym, (u32, i64)>,
    images_stale: bool,
    terms: Vec<AffinityTerm>,
    term_ids: FxHashMap<AffinityTerm, TermId>,
    held_groups: Vec<HeldGroup>,
    held_ids: FxHashMap<(TermId, HeldKind, i32), usize>,
    held_index: PairIndex<usize>,
    match_cache: FxHashMap<TermSet, MatchCounts>,
    match_sets: Vec<TermSet>,
    match_index: PairIndex<usize>,
    spread_ids: FxHashMap<(Sym, LabelSelector), SpreadId>,
    spread_tables: Vec<(Sym, LabelSelector, SpreadCounts)>,
    spread_index: PairIndex<SpreadId>,
    /// Every pod ever added, by each of its label pairs (pods' labels never
    /// change once added), so that a count built on first use visits only
    /// the pods its selector could match instead of every pod.
    pods_by_label: FxHashMap<(Sym, Sym), Vec<PodId>>,
    topology: Topology,
    statics: StaticsCache,
    scratch: Box<Scratch>,
    /// Per node: bumped whenever its accounting (pods, requests) changes.
    node_versions: Vec<u64>,
    resource_scores: Box<ResourceScores>,
    /// Number of bound pods with any inter-pod affinity rule, per node (for
    /// the "nodes having pods with affinity" lists).
    pub pods_with_affinity: Vec<u32>,
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Self {
        Cluster {
            interner: Interner::new(),
            ..Default::default()
        }
    }

    /// Adds a node. Image sizes follow the first node by name that has the image.
    pub fn add_node(&mut self, node: &core::Node) -> Result<NodeId, CompileError> {
        let node = Node::compile(node, &mut self.interner)?;
        let id = NodeId(self.nodes.len() as u32);
        self.node_by_name.insert(node.name_sym, id);
        self.topology.push_node(&node);
        self.statics.clear();
        self.nodes.push(node);
        self.node_infos.push(NodeInfo::default());
        self.node_versions.push(0);
        for (_, _, counts) in &mut self.spread_tables {
            counts.push_node();
        }
        self.pods_with_affinity.push(0);
        self.images_stale = true;
        Ok(id)
    }

    /// Per image name: on how many nodes, and the size reported by the
    /// first node (by name) that has it (current as of the last
    /// [`Cluster::statics_for`]).
    pub(crate) fn images(&self) -> &FxHashMap<Sym, (u32, i64)> {
        &self.images
    }

    fn recompute_images(&mut self) {
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by(|&a, &b| self.nodes[a].name.cmp(&self.nodes[b].name));
        let mut images: FxHashMap<Sym, (u32, i64)> = FxHashMap::default();
        for i in order {
            let mut seen: SmallVec<[Sym; 8]> = SmallVec::new();
            for &(name, size) in &self.nodes[i].images {
                if seen.contains(&name) {
                    continue;
                }
                seen.push(name);
                let e = images.entry(name).or_insert((0, size));
                e.0 += 1;
            }
        }
        self.images = images;
    }

    /// Adds a namespace (its labels feed namespaceSelector).
    pub fn add_namespace(&mut self, ns: &core::Namespace) {
        let name = self
            .interner
            .intern(ns.metadata.name.as_deref().unwrap_or(""));
        let labels = Labels::from_map(&mut self.interner, ns.metadata.labels.iter().flatten());
        self.namespaces.insert(name, labels);
    }

    /// Adds a Service; only its selector matters (default spread).
    pub fn add_service(&mut self, svc: &core::Service) {
        let Some(map) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            return;
        };
        let ns = self.intern_namespace(svc.metadata.namespace.as_deref());
        let mut selector = LabelSelector::everything();
        for (k, v) in map {
            selector.push(Requirement::In(
                self.interner.intern(k),
                smallvec::smallvec![self.interner.intern(v)],
            ));
        }
        self.service_selectors.push((ns, selector));
    }

    /// Adds a ReplicationController (default spread of the pods it owns).
    pub fn add_replication_controller(&mut self, rc: &core::ReplicationController) {
        let ns = self.intern_namespace(rc.metadata.namespace.as_deref());
        let name = self
            .interner
            .intern(rc.metadata.name.as_deref().unwrap_or(""));
        let mut selector = LabelSelector::everything();
        for (k, v) in rc
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .into_iter()
            .flatten()
        {
            selector.push(Requirement::In(
                self.interner.intern(k),
                smallvec::smallvec![self.interner.intern(v)],
            ));
        }
        self.owner_selectors
            .replication_controllers
            .push((ns, name, selector));
    }

    /// Adds a ReplicaSet (default spread of the pods it owns).
    pub fn add_replica_set(&mut self, rs: &apps::ReplicaSet) -> Result<(), CompileError> {
        let ns = self.intern_namespace(rs.metadata.namespace.as_deref());
        let name = self
            .interner
            .intern(rs.metadata.name.as_deref().unwrap_or(""));
        let selector =
            LabelSelector::compile(rs.spec.as_ref().map(|s| &s.selector), &mut self.interner)?;
        self.owner_selectors.replica_sets.push((ns, name, selector));
        Ok(())
    }

    /// Adds a StatefulSet (default spread of the pods it owns).
    pub fn add_stateful_set(&mut self, sts: &apps::StatefulSet) -> Result<(), CompileError> {
        let ns = self.intern_namespace(sts.metadata.namespace.as_deref());
        let name = self
            .interner
            .intern(sts.metadata.name.as_deref().unwrap_or(""));
        let selector =
            LabelSelector::compile(sts.spec.as_ref().map(|s| &s.selector), &mut self.interner)?;
        self.owner_selectors
            .stateful_sets
            .push((ns, name, selector));
        Ok(())
    }

    fn intern_namespace(&mut self, ns: Option<&str>) -> Sym {
        self.interner
            .intern(ns.filter(|n| !n.is_empty()).unwrap_or("default"))
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

    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// Every node, in load order (indexed by [`NodeId::index`]).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node with this id, to change it (cordon, taints, allocatable).
    /// Drops the per-node caches that depend on nodes; bound pods keep
    /// their accounting, so labels must not change under bound pods.
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        self.statics.clear();
        self.topology = Topology::default();
        self.images_stale = true;
        self.resource_scores.clear();
        &mut self.nodes[id.index()]
    }

    /// The node → domain table of a topology key, built on first use.
    pub fn topology_table(&mut self, key: Sym) -> TableId {
        self.topology.ensure(key, &self.nodes)
    }

    /// The scheduling cycle's buffers, lent out for one cycle.
    pub(crate) fn take_scratch(&mut self) -> Box<Scratch> {
        std::mem::take(&mut self.scratch)
    }

    /// Returns the buffers [`Cluster::take_scratch`] lent.
    pub(crate) fn put_scratch(&mut self, scratch: Box<Scratch>) {
        self.scratch = scratch;
    }

    /// Fit and BalancedAllocation raw scores of `nodes` for `pod`, from
    /// the cache where the node did not change.
    pub(crate) fn resource_scores(&mut self, pod: &Pod, nodes: &[NodeId]) -> Box<ResourceScores> {
        let mut scores = std::mem::take(&mut self.resource_scores);
        scores.refresh(self, pod, nodes, &self.node_versions);
        scores
    }

    /// Returns the cache [`Cluster::resource_scores`] lent.
    pub(crate) fn put_resource_scores(&mut self, scores: Box<ResourceScores>) {
        self.resource_scores = scores;
    }

    /// The node → domain tables built so far.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The spec-only per-node verdicts and scores for a pod, computed once
    /// per distinct pod template and node set.
    pub fn statics_for(&mut self, pod: &Pod) -> std::sync::Arc<NodeStatics> {
        if let Some(s) = self.statics.get(pod) {
            return s;
        }
        if self.images_stale {
            self.recompute_images();
            self.images_stale = false;
        }
        let taint = crate::statics::unschedulable_taint(self);
        let statics = std::sync::Arc::new(NodeStatics::compute(self, pod, &taint));
        self.statics.insert(pod, statics.clone());
        statics
    }

    /// The pod with this id.
    pub fn pod(&self, id: PodId) -> &Pod {
        &self.pods[id.index()].pod
    }

    /// All node ids.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The labels of a namespace, or none when the Namespace object is unknown.
    pub fn namespace_labels(&self, ns: Sym) -> Option<&Labels> {
        self.namespaces.get(&ns)
    }

    /// The term behind an id.
    pub fn term(&self, id: TermId) -> &AffinityTerm {
        &self.terms[id.0 as usize]
    }

    /// The shared id of a term.
    pub fn term_id(&mut self, term: &AffinityTerm) -> TermId {
        if let Some(&id) = self.term_ids.get(term) {
            return id;
        }
        let id = TermId(self.terms.len() as u32);
        self.terms.push(term.clone());
        self.term_ids.insert(term.clone(), id);
        id
    }

    /// Term ids for a pod's rules.
    pub fn pod_terms(&mut self, pod: &Pod) -> PodTerms {
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

    /// Adds a pod; bound when it names an existing node, pending otherwise.
    pub fn add_pod(&mut self, pod: Pod) -> PodId {
        let id = PodId(self.pods.len() as u32);
        let terms = self.pod_terms(&pod);
        let node = pod.node_name.as_deref().and_then(|n| self.node_id(n));
        self.pod_by_name
            .insert((pod.namespace, pod.name.clone()), id);
        for pair in pod.labels.iter() {
            self.pods_by_label.entry(pair).or_default().push(id);
        }
        self.pods.push(PodEntry {
            pod,
            node: None,
            terms,
            alive: true,
        });
        if let Some(node) = node {
            self.bind(id, node);
        }
        id
    }

    /// Compiles and adds an API pod.
    pub fn add_api_pod(&mut self, pod: &core::Pod) -> Result<PodId, CompileError> {
        let pod = Pod::compile(pod, &mut self.interner)?;
        Ok(self.add_pod(pod))
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

    /// Binds a pending pod to a node and updates every index.
    pub fn bind(&mut self, id: PodId, node: NodeId) {
        let entry = &mut self.pods[id.index()];
        if entry.node.is_some() || !entry.alive {
            return;
        }
        entry.node = Some(node);
        let name: Box<str> = self.nodes[node.index()].name.clone();
        entry.pod.node_name = Some(name);
        self.account(id, node, 1);
    }

    /// Unbinds a pod (it is gone from its node) and updates every index.
    pub fn unbind(&mut self, id: PodId) {
        let Some(node) = self.pods[id.index()].node else {
            return;
        };
        self.account(id, node, -1);
        let entry = &mut self.pods[id.index()];
        entry.node = None;
        entry.pod.node_name = None;
    }

    /// Removes a pod from the world entirely.
    pub fn remove_pod(&mut self, id: PodId) {
        self.unbind(id);
        let entry = &mut self.pods[id.index()];
        entry.alive = false;
        let key = (entry.pod.namespace, entry.pod.name.clone());
        self.pod_by_name.remove(&key);
    }

    /// Marks a bound pod terminating: it keeps counting for inter-pod
    /// affinity but no longer for topology spread.
    pub fn set_terminating(&mut self, id: PodId, terminating: bool) {
        let entry = &mut self.pods[id.index()];
        let changed = std::mem::replace(&mut entry.pod.terminating, terminating) != terminating;
        // Only a bound pod that has not finished is counted anywhere.
        let counted_on = entry.node.filter(|_| !entry.pod.finished);
        if let (true, Some(node)) = (changed, counted_on) {
            self.account_spread(id, node, if terminating { -1 } else { 1 });
        }
    }

    fn account(&mut self, id: PodId, node: NodeId, sign: i32) {
        let pod = &self.pods[id.index()].pod;
        if pod.finished {
            // Bound, but invisible to scheduling: no resources, no matches.
            return;
        }
        self.node_versions[node.index()] += 1;
        if sign > 0 {
            self.node_infos[node.index()].add(id, pod);
        } else {
            self.node_infos[node.index()].remove(id, pod);
        }
        if pod.has_affinity() {
            let slot = &mut self.pods_with_affinity[node.index()];
            *slot = slot.saturating_add_signed(sign);
        }
        self.account_held(id, node, sign);
        self.account_matches(id, node, sign);
        if !self.pods[id.index()].pod.terminating {
            self.account_spread(id, node, sign);
        }
    }

    fn account_held(&mut self, id: PodId, node: NodeId, sign: i32) {
        let terms = self.pods[id.index()].terms.clone();
        let mut held: SmallVec<[(TermId, HeldKind, i32); 4]> = SmallVec::new();
        held.extend(
            terms
                .required_anti_affinity
                .iter()
                .map(|&t| (t, HeldKind::RequiredAntiAffinity, 1)),
        );
        held.extend(
            terms
                .required_affinity
                .iter()
                .map(|&t| (t, HeldKind::RequiredAffinity, 1)),
        );
        held.extend(
            terms
                .preferred_affinity
                .iter()
                .map(|&(t, w)| (t, HeldKind::PreferredAffinity, w)),
        );
        held.extend(
            terms
                .preferred_anti_affinity
                .iter()
                .map(|&(t, w)| (t, HeldKind::PreferredAntiAffinity, w)),
        );
        for key in held {
            let group = match self.held_ids.get(&key) {
                Some(&g) => g,
                None => {
                    let g = self.held_groups.len();
                    self.held_groups.push(HeldGroup {
                        term: key.0,
                        kind: key.1,
                        weight: key.2,
                        domains: FxHashMap::default(),
                        holders: Vec::new(),
                    });
                    self.held_ids.insert(key, g);
                    // Existing pods' terms are matched against the incoming pod's labels.
                    let pair = self.terms[key.0 .0 as usize].selector.necessary_pair();
                    self.held_index.insert(pair, g);
                    g
                }
            };
            let topology_key = self.terms[key.0 .0 as usize].topology_key;
            let group = &mut self.held_groups[group];
            if sign > 0 {
                group.holders.push(id);
            } else if let Some(i) = group.holders.iter().position(|&p| p == id) {
                group.holders.swap_remove(i);
            }
            if let Some(value) = self.nodes[node.index()].labels.get(topology_key) {
                let count = group.domains.entry(value).or_insert(0);
                *count = count.saturating_add_signed(sign);
                if *count == 0 {
                    group.domains.remove(&value);
                }
            }
        }
    }

    fn account_matches(&mut self, id: PodId, node: NodeId, sign: i32) {
        if self.match_cache.is_empty() {
            return;
        }
        let pod = &self.pods[id.index()].pod;
        let candidates: SmallVec<[usize; 8]> = self.match_index.candidates(&pod.labels).collect();
        let labels = &self.nodes[node.index()].labels;
        for set_index in candidates {
            let set = &self.match_sets[set_index];
            let all = set.iter().all(|t| {
                incoming_term_matches(
                    &self.terms[t.0 as usize],
                    pod,
                    &self.namespaces,
                    &self.interner,
                )
            });
            if all {
                if let Some(counts) = self.match_cache.get_mut(set) {
                    counts.add(labels, i64::from(sign));
                }
            }
        }
    }

    fn account_spread(&mut self, id: PodId, node: NodeId, sign: i32) {
        if self.spread_tables.is_empty() {
            return;
        }
        let pod = &self.pods[id.index()].pod;
        for table in self.spread_index.candidates(&pod.labels) {
            let (ns, selector, counts) = &mut self.spread_tables[table];
            if *ns == pod.namespace && selector.matches(&pod.labels, &self.interner) {
                counts.add(node, sign);
            }
        }
    }

    /// The alive, bound pods a selector with these necessary label pairs
    /// could match: those carrying the rarest of the pairs, or every pod
    /// when there is none.
    fn bound_candidates(
        &self,
        pairs: impl Iterator<Item = (Sym, Sym)>,
    ) -> impl Iterator<Item = (&PodEntry, NodeId)> + '_ {
        let rarest = pairs
            .map(|pair| self.pods_by_label.get(&pair).map_or(&[][..], Vec::as_slice))
            .min_by_key(|ids| ids.len());
        let (listed, all) = match rarest {
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

    /// Pods matching all of a set of an incoming pod's terms, per domain of
    /// each term's topology key; built on first use, then kept current by
    /// bind and unbind.
    pub fn match_counts(&mut self, set: &[TermId]) -> &MatchCounts {
        if !self.match_cache.contains_key(set) {
            let mut counts = MatchCounts::default();
            for t in set {
                let key = self.terms[t.0 as usize].topology_key;
                if counts.domains(key).is_none() {
                    counts.by_key.push((key, FxHashMap::default()));
                }
            }
            let pairs = set
                .iter()
                .filter_map(|t| self.terms[t.0 as usize].selector.necessary_pair());
            for (entry, node) in self.bound_candidates(pairs) {
                let all = set.iter().all(|t| {
                    incoming_term_matches(
                        &self.terms[t.0 as usize],
                        &entry.pod,
                        &self.namespaces,
                        &self.interner,
                    )
                });
                if all {
                    counts.add(&self.nodes[node.index()].labels, 1);
                }
            }
            let pair = set
                .iter()
                .find_map(|t| self.terms[t.0 as usize].selector.necessary_pair());
            let key: TermSet = set.iter().copied().collect();
            self.match_index.insert(pair, self.match_sets.len());
            self.match_sets.push(key.clone());
            self.match_cache.insert(key, counts);
        }
        &self.match_cache[set]
    }

    /// Makes sure matching non-terminating pods per node are counted for a
    /// spread selector in a namespace; counted on first use, then kept
    /// current by bind and unbind.
    pub fn ensure_spread_counts(&mut self, namespace: Sym, selector: &LabelSelector) -> SpreadId {
        if let Some(&id) = self.spread_ids.get(&(namespace, selector.clone())) {
            return id;
        }
        let mut counts = SpreadCounts::new(self.nodes.len());
        for (entry, node) in self.bound_candidates(selector.necessary_pair().into_iter()) {
            if !entry.pod.terminating
                && entry.pod.namespace == namespace
                && selector.matches(&entry.pod.labels, &self.interner)
            {
                counts.add(node, 1);
            }
        }
        let id = self.spread_tables.len();
        self.spread_index.insert(selector.necessary_pair(), id);
        self.spread_tables
            .push((namespace, selector.clone(), counts));
        self.spread_ids.insert((namespace, selector.clone()), id);
        id
    }

    /// The counts [`Cluster::ensure_spread_counts`] prepared, by the id it returned.
    pub fn spread_table(&self, id: SpreadId) -> &SpreadCounts {
        &self.spread_tables[id].2
    }

    /// Groups of existing pods' terms that could apply to a pod with these labels.
    pub fn held_groups_for<'a>(
        &'a self,
        labels: &'a Labels,
    ) -> impl Iterator<Item = &'a HeldGroup> + 'a {
        self.held_index
            .candidates(labels)
            .map(|g| &self.held_groups[g])
            .filter(|g| !g.holders.is_empty())
    }
}

/// `AffinityTerm.Matches` for the incoming pod's own terms. kube-scheduler
/// v1.36.2 adds the namespaces its namespaceSelector selects to the term's
/// namespace list but keeps the selector, and then matches it against an
/// empty label set: so a selector made only of `NotIn`/`DoesNotExist`
/// admits every namespace.
pub fn incoming_term_matches(
    term: &AffinityTerm,
    pod: &Pod,
    namespaces: &FxHashMap<Sym, Labels>,
    interner: &Interner,
) -> bool {
    let selector = &term.namespace_selector;
    let ns_ok = term.namespaces.contains(&pod.namespace)
        || (!selector.is_nothing()
            && (selector.matches(&Labels::default(), interner)
                || namespaces
                    .get(&pod.namespace)
                    .is_some_and(|l| selector.matches(l, interner))));
    ns_ok && term.selector.matches(&pod.labels, interner)
}

/// `AffinityTerm.Matches` for an existing pod's term against the incoming
/// pod, with the incoming pod's namespace labels (empty when unknown).
pub fn existing_term_matches(
    term: &AffinityTerm,
    pod: &Pod,
    namespace_labels: &Labels,
    interner: &Interner,
) -> bool {
    let ns_ok = term.namespaces.contains(&pod.namespace)
        || term.namespace_selector.matches(namespace_labels, interner);
    ns_ok && term.selector.matches(&pod.labels, interner)
}
