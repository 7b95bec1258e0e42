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
use crate::template::{Eligible, TemplateCache};
use crate::topology::{KeyTable, TableId, Topology};
use podplace_model::selector::{LabelSelector, NodeSelector, NodeSelectorTerm};

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
    /// PreFilter/PreScore state shared by the replicas of one template.
    templates: TemplateCache,
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
    /// Node sampling: the node tree's list, the start index (one per
    /// scheduler, shared with the sibling profiles' caches), the last
    /// cycle's sample and how certain it is.
    sampler: crate::sampling::Sampler,
}

/// What the last cycle's sampling did (see [`crate::sampling::SampledSet`]).
pub use crate::sampling::SampledSet;

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
            templates: TemplateCache::default(),
            resource_scores: Box::default(),
            scratch: Box::default(),
            profile,
            added_affinity: None,
            siblings: Vec::new(),
            sampler: crate::sampling::Sampler::new(setup.sampling),
            setup,
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
            let sibling = &mut self.siblings[i];
            sibling.sampler.join(&self.sampler);
            return Some(sibling);
        }
        let profile = self.setup.serving(name)?.clone();
        let mut sibling = SchedulerCache::running(profile, self.setup.clone());
        sibling.sampler.join(&self.sampler);
        sibling.set_template_reuse(self.templates.reuses());
        self.siblings.push(sibling);
        self.siblings.last_mut()
    }

    /// Sets sampling for this cache alone (tests, and callers that must
    /// score every node whatever the setup says); its profiles follow.
    pub fn set_sampling(&mut self, sampling: crate::sampling::Sampling) {
        self.sampler.set_sampling(sampling);
    }

    /// kube-scheduler's `nextStartNodeIndex`, one per scheduler: this
    /// cache's and its sibling profiles'.
    pub fn start_index(&self) -> usize {
        self.sampler.start_index()
    }

    /// Sets the start index (a fresh scheduler starts at 0).
    pub fn set_start_index(&mut self, start: usize) {
        self.sampler.set_start_index(start);
    }

    /// Says whether the start index is unknown: a scheduler that ran
    /// before podplace saw the cluster (its sampled answers are then one
    /// of the candidate sets).
    pub fn set_start_unknown(&mut self, unknown: bool) {
        self.sampler.set_start_unknown(unknown);
    }

    /// What the last cycle's sampling did (`None`: every feasible node was
    /// scored).
    pub fn last_sample(&self) -> Option<&SampledSet> {
        self.sampler.last()
    }

    /// How sampling went over this scheduler's attempts (all profiles).
    pub fn sampling_tally(&self) -> crate::sampling::Tally {
        self.sampler.tally()
    }

    /// Runs `f` (scheduling attempts that are only hypothetical: a
    /// diagnosis, a what-if) and then puts the start index, whether it is
    /// known and the tally back as they were, so only real attempts move
    /// the scheduler on.
    pub fn hypothetical<T>(&mut self, f: impl FnOnce(&mut SchedulerCache) -> T) -> T {
        let mark = self.sampler.mark();
        let out = f(self);
        self.sampler.restore(mark);
        out
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
        let percentage = self.profile.percentage_of_nodes_to_score;
        self.sampler.sample(state, percentage, narrowed, feasible);
    }

    /// The search a sampling cycle runs (the visit list goes to `list`),
    /// or `None` when every node is filtered and every feasible one scored.
    pub(crate) fn plan_search(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&rustc_hash::FxHashSet<Sym>>,
        list: &mut Vec<NodeId>,
    ) -> Option<crate::sampling::Search> {
        let percentage = self.profile.percentage_of_nodes_to_score;
        self.sampler.plan(state, percentage, narrowed, list)
    }

    /// Records what a search that stopped filtering once it had found
    /// enough nodes did (see [`crate::sampling::Sampler::record`]).
    pub(crate) fn record_search(
        &mut self,
        state: &ClusterState,
        search: crate::sampling::Search,
        processed: usize,
        found: usize,
    ) {
        self.sampler.record(state, search, processed, found, None);
    }

    /// Moves the start index on after a cycle where nothing fit (every
    /// node of the list processed).
    pub(crate) fn advance_start(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&rustc_hash::FxHashSet<Sym>>,
    ) {
        self.sampler.advance(state, narrowed);
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
        self.sampler.clear_order();
        self.topology = Topology::default();
        self.templates.clear_nodes();
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

    /// The selector of the pod's system default spread constraints
    /// ([`ClusterState::default_selector`]), computed once per template
    /// and Services/controllers version.
    pub fn default_selector(&mut self, state: &ClusterState, pod: &Pod) -> LabelSelector {
        self.templates.default_selector(state, pod)
    }

    /// The eligible domains of spread constraints with these tables and
    /// inclusion policies for a pod with these statics, computed once per
    /// template and node epoch.
    pub(crate) fn spread_eligible(
        &mut self,
        state: &ClusterState,
        statics: &Arc<NodeStatics>,
        tables: &[TableId],
        policies: &[(bool, bool)],
        compute: impl FnOnce() -> Eligible,
    ) -> Arc<Eligible> {
        self.sync(state);
        self.templates.eligible(statics, tables, policies, compute)
    }

    /// Whether PreFilter/PreScore state ([`crate::template`]) and
    /// NodeResourcesFit verdicts ([`crate::fit_verdicts`]) are kept across
    /// the replicas of a template (on by default). Off, every cycle
    /// computes them afresh: the answers are the same (the property tests
    /// compare both), only slower.
    pub fn set_template_reuse(&mut self, reuse: bool) {
        self.templates.set_reuse(reuse);
        for sibling in &mut self.siblings {
            sibling.set_template_reuse(reuse);
        }
    }

    /// The state kept across the replicas of a template (synced first).
    pub(crate) fn templates_mut(&mut self) -> &mut TemplateCache {
        &mut self.templates
    }

    /// Whether state is kept across the replicas of a template
    /// ([`SchedulerCache::set_template_reuse`]).
    pub fn template_reuse(&self) -> bool {
        self.templates.reuses()
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

    /// Runs a cycle's steps (a block of Filter, a column of Score) on
    /// several workers from `nodes` nodes on, instead of the default
    /// (1,024, where handing work out starts to pay): tests of the
    /// parallel steps use small clusters. Answers never depend on it.
    pub fn set_min_parallel_nodes(&mut self, nodes: usize) {
        self.scratch.set_min_parallel_nodes(nodes);
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
