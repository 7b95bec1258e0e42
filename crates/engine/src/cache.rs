//! What scheduling caches between cycles, passed explicitly next to the
//! state: spec-only per-node verdicts per pod template, image spread,
//! node → domain tables per topology key, resource scores per node, and the
//! cycle's buffers. Everything here is derived from the state and rebuilt
//! when the state's nodes change ([`ClusterState::node_epoch`]), so one
//! cache may serve a state and its overlays in turn.

use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::objects::Pod;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::cycle::Scratch;
use crate::ids::NodeId;
use crate::profile::{Profile, SchedulerSetup};
use crate::state::ClusterState;
use crate::statics::{unschedulable_taint, NodeStatics, ResourceScores, StaticsCache};
use crate::topology::{KeyTable, Topology};
use podplace_model::selector::{NodeSelector, NodeSelectorTerm};

/// The scheduler's caches (see the module doc).
#[derive(Debug, Clone)]
pub struct SchedulerCache {
    /// The node epoch the node-derived parts were built for.
    epoch: Option<u64>,
    statics: StaticsCache,
    /// Per image name: on how many nodes, and the size reported by the
    /// first node (by name) that has it.
    images: FxHashMap<Sym, (u32, i64)>,
    topology: Topology,
    resource_scores: Box<ResourceScores>,
    scratch: Box<Scratch>,
    /// The profile every cycle through this cache runs.
    profile: Arc<Profile>,
    /// The profile's addedAffinity compiled against the state's names
    /// (rebuilt with the node-derived parts).
    added_affinity: Option<Arc<AddedAffinity>>,
    /// Caches of the setup's other profiles, made when a pod names them.
    siblings: Vec<SchedulerCache>,
    /// The scheduler this cache is part of: every profile and its sampling.
    setup: Arc<SchedulerSetup>,
    /// The node tree's list (zones interleaved), built with the
    /// node-derived parts when sampling is on.
    node_order: Vec<NodeId>,
    /// kube-scheduler's `nextStartNodeIndex`.
    next_start: usize,
    /// The nodes the last sampled cycle scored (empty: every feasible node).
    sampled: Option<SampledSet>,
    /// Sampling for this cache (the setup's unless set apart).
    sampling: crate::sampling::Sampling,
}

/// What the last cycle's sampling did, for answers that report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledSet {
    /// How many feasible nodes kube-scheduler looks for.
    pub to_find: usize,
    /// The index the node list was visited from.
    pub start: usize,
    /// How many nodes were processed.
    pub processed: usize,
    /// How many nodes passed the filters in all.
    pub feasible_total: usize,
}

impl Default for SchedulerCache {
    /// A cache of kube-scheduler without a configuration: the default
    /// profile, every feasible node scored.
    fn default() -> Self {
        SchedulerCache::for_setup(&SchedulerSetup::default())
    }
}

impl SchedulerCache {
    /// An empty cache of a scheduler: running the setup's first profile,
    /// serving the others by `spec.schedulerName`, sampling as it says.
    pub fn for_setup(setup: &SchedulerSetup) -> Self {
        let setup = Arc::new(setup.clone());
        let profile = setup.profiles.first().cloned().unwrap_or_default();
        SchedulerCache::running(profile, setup)
    }

    fn running(profile: Arc<Profile>, setup: Arc<SchedulerSetup>) -> Self {
        SchedulerCache {
            epoch: None,
            statics: StaticsCache::default(),
            images: FxHashMap::default(),
            topology: Topology::default(),
            resource_scores: Box::default(),
            scratch: Box::default(),
            profile,
            added_affinity: None,
            siblings: Vec::new(),
            sampling: setup.sampling,
            setup,
            node_order: Vec::new(),
            next_start: 0,
            sampled: None,
        }
    }
}

/// NodeAffinityArgs.addedAffinity compiled against a state's names.
#[derive(Debug, Clone)]
pub struct AddedAffinity {
    /// Required terms (ANDed with the pod's own).
    pub required: Option<NodeSelector>,
    /// Preferred terms (added to the pod's own): (weight, term).
    pub preferred: Vec<(i32, NodeSelectorTerm)>,
}

impl SchedulerCache {
    /// An empty cache running the default profile.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache running `profile` alone (a scheduler with that one
    /// profile, every feasible node scored): every cycle through it uses
    /// the profile's plugins, weights and arguments.
    pub fn with_profile(profile: Arc<Profile>) -> Self {
        SchedulerCache::for_setup(&SchedulerSetup {
            profiles: vec![profile],
            ..SchedulerSetup::default()
        })
    }

    /// The scheduler this cache is part of (its profiles and sampling).
    pub fn setup(&self) -> &SchedulerSetup {
        &self.setup
    }

    /// Switches to another profile, forgetting what depended on the old one.
    pub fn set_profile(&mut self, profile: Arc<Profile>) {
        if self.profile != profile {
            self.profile = profile;
            self.epoch = None;
        }
    }

    /// The profile cycles through this cache run.
    pub fn profile(&self) -> &Arc<Profile> {
        &self.profile
    }

    /// The cache of the profile serving `scheduler_name` (empty means
    /// default-scheduler): this one, or one made for another configured
    /// profile. `None` when no profile serves the name: such pods are
    /// never scheduled.
    pub fn serving(&mut self, scheduler_name: &str) -> Option<&mut SchedulerCache> {
        let name = if scheduler_name.is_empty() {
            crate::profile::DEFAULT_SCHEDULER_NAME
        } else {
            scheduler_name
        };
        if self.profile.scheduler_name == name {
            return Some(self);
        }
        if let Some(i) = self
            .siblings
            .iter()
            .position(|c| c.profile.scheduler_name == name)
        {
            return Some(&mut self.siblings[i]);
        }
        let profile = self.setup.serving(name)?.clone();
        let mut sibling = SchedulerCache::running(profile, self.setup.clone());
        sibling.sampling = self.sampling;
        self.siblings.push(sibling);
        self.siblings.last_mut()
    }

    /// Sets sampling for this cache alone (tests, and callers that must
    /// score every node whatever the setup says).
    pub fn set_sampling(&mut self, sampling: crate::sampling::Sampling) {
        self.sampling = sampling;
    }

    fn sampling(&self) -> crate::sampling::Sampling {
        self.sampling
    }

    /// kube-scheduler's `nextStartNodeIndex` as this cache carries it.
    pub fn start_index(&self) -> usize {
        self.next_start
    }

    /// Sets the start index (a fresh scheduler starts at 0).
    pub fn set_start_index(&mut self, start: usize) {
        self.next_start = start;
    }

    /// What the last cycle's sampling did (`None`: every feasible node was
    /// scored).
    pub fn last_sample(&self) -> Option<&SampledSet> {
        self.sampled.as_ref()
    }

    /// The node list a cycle visits: the node tree's, or only the nodes a
    /// PreFilter result names (in the tree's order).
    fn visit_list(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&rustc_hash::FxHashSet<Sym>>,
    ) -> Vec<NodeId> {
        if self.node_order.len() != state.nodes().len() {
            self.node_order = crate::sampling::node_tree_order(state);
        }
        match narrowed {
            None => self.node_order.clone(),
            Some(names) => self
                .node_order
                .iter()
                .copied()
                .filter(|&n| names.contains(&state.node(n).name_sym))
                .collect(),
        }
    }

    /// Keeps only the feasible nodes kube-scheduler's sampling finds
    /// (sorted by id again), and moves the start index on by the nodes
    /// processed. Does nothing when sampling is off.
    pub(crate) fn sample(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&rustc_hash::FxHashSet<Sym>>,
        feasible: &mut Vec<NodeId>,
    ) {
        let sampling = self.sampling();
        self.sampled = None;
        if !sampling.enabled || state.nodes().len() < crate::sampling::MIN_FEASIBLE_NODES_TO_FIND {
            return;
        }
        let list = self.visit_list(state, narrowed);
        let to_find = crate::sampling::num_feasible_nodes_to_find(
            self.profile.percentage_of_nodes_to_score,
            sampling.percentage,
            list.len(),
        );
        let all = state.nodes().len();
        let start = self.next_start % list.len().max(1);
        let (found, processed) = crate::sampling::sample(&list, start, to_find, |n| {
            feasible.binary_search(&n).is_ok()
        });
        self.next_start = (self.next_start + processed) % all;
        self.sampled = Some(SampledSet {
            to_find,
            start,
            processed,
            feasible_total: feasible.len(),
        });
        let mut found = found;
        found.sort_unstable();
        *feasible = found;
    }

    /// Moves the start index on after a cycle where nothing fit (every
    /// node of the list processed).
    pub(crate) fn advance_start(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&rustc_hash::FxHashSet<Sym>>,
    ) {
        let sampling = self.sampling();
        self.sampled = None;
        let all = state.nodes().len();
        if !sampling.enabled || all < crate::sampling::MIN_FEASIBLE_NODES_TO_FIND {
            return;
        }
        let processed = match narrowed {
            None => all,
            Some(_) => self.visit_list(state, narrowed).len(),
        };
        self.next_start = (self.next_start + processed) % all;
    }

    /// The scheduler names the setup's profiles serve, in order.
    pub fn scheduler_names(&self) -> Vec<String> {
        let mut names = vec![self.profile.scheduler_name.clone()];
        for p in &self.setup.profiles {
            if !names.contains(&p.scheduler_name) {
                names.push(p.scheduler_name.clone());
            }
        }
        names
    }

    /// The profile's addedAffinity, compiled for the synced state.
    pub fn added_affinity(&self) -> Option<&Arc<AddedAffinity>> {
        self.added_affinity.as_ref()
    }

    /// Forgets everything derived from nodes when `state`'s nodes are not
    /// the ones it was built for.
    pub fn sync(&mut self, state: &ClusterState) {
        if self.epoch == Some(state.node_epoch()) {
            return;
        }
        self.epoch = Some(state.node_epoch());
        self.statics.clear();
        self.node_order.clear();
        self.topology = Topology::default();
        self.resource_scores.clear();
        self.images = images_of(state);
        self.added_affinity = self
            .profile
            .added_affinity
            .as_ref()
            .map(|a| Arc::new(compile_added(a, state)));
    }

    /// Per image name: on how many nodes, and the size the first node (by
    /// name) that has it reports.
    pub fn images(&self) -> &FxHashMap<Sym, (u32, i64)> {
        &self.images
    }

    /// The spec-only per-node verdicts and scores for a pod, computed once
    /// per distinct pod template and node set.
    pub fn statics_for(&mut self, state: &ClusterState, pod: &Pod) -> Arc<NodeStatics> {
        self.sync(state);
        if let Some(s) = self.statics.get(pod) {
            return s;
        }
        let taint = unschedulable_taint(state);
        let statics = Arc::new(NodeStatics::compute_with(
            state,
            &self.images,
            pod,
            &taint,
            &self.profile,
            self.added_affinity.as_deref(),
        ));
        self.statics.insert(pod, statics.clone());
        statics
    }

    /// The node → domain table of a topology key, built on first use.
    pub fn topology_table(&mut self, state: &ClusterState, key: Sym) -> Arc<KeyTable> {
        self.sync(state);
        self.topology.ensure(key, state.nodes())
    }

    /// The node → domain tables built so far.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Fit and BalancedAllocation raw scores of `nodes` for `pod`, from
    /// the cache where the node did not change (lent out; give it back
    /// with [`SchedulerCache::put_resource_scores`]).
    pub(crate) fn resource_scores(
        &mut self,
        state: &ClusterState,
        pod: &Pod,
        nodes: &[NodeId],
    ) -> Box<ResourceScores> {
        let mut scores = std::mem::take(&mut self.resource_scores);
        scores.refresh(state, pod, nodes, state.node_versions(), &self.profile);
        scores
    }

    /// Returns the scores [`SchedulerCache::resource_scores`] lent.
    pub(crate) fn put_resource_scores(&mut self, scores: Box<ResourceScores>) {
        self.resource_scores = scores;
    }

    /// The cycle's buffers, lent out for one cycle.
    pub(crate) fn take_scratch(&mut self) -> Box<Scratch> {
        std::mem::take(&mut self.scratch)
    }

    /// Returns the buffers [`SchedulerCache::take_scratch`] lent.
    pub(crate) fn put_scratch(&mut self, scratch: Box<Scratch>) {
        self.scratch = scratch;
    }
}

/// Compiles addedAffinity against a copy of the state's interner: names
/// the state does not know get new symbols no node label carries (a node
/// carrying them would change the node epoch, and this is rebuilt).
fn compile_added(
    affinity: &k8s_openapi::api::core::v1::NodeAffinity,
    state: &ClusterState,
) -> AddedAffinity {
    let mut interner = state.interner().clone();
    AddedAffinity {
        required: affinity
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|s| NodeSelector::compile(s, &mut interner)),
        preferred: affinity
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .map(|t| {
                (
                    t.weight,
                    NodeSelectorTerm::compile(&t.preference, &mut interner),
                )
            })
            .collect(),
    }
}

fn images_of(state: &ClusterState) -> FxHashMap<Sym, (u32, i64)> {
    let nodes = state.nodes();
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| nodes[a].name.cmp(&nodes[b].name));
    let mut images: FxHashMap<Sym, (u32, i64)> = FxHashMap::default();
    for i in order {
        let mut seen: SmallVec<[Sym; 8]> = SmallVec::new();
        for &(name, size) in &nodes[i].images {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let e = images.entry(name).or_insert((0, size));
            e.0 += 1;
        }
    }
    images
}
