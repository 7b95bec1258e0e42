//! One scheduling cycle over a [`ClusterState`] with an explicit
//! [`SchedulerCache`], shaped like kube-scheduler's framework: PreFilter,
//! Filter over every node, PostFilter (preemption) when nothing fits, then
//! PreScore, Score and NormalizeScore over the feasible nodes, and host
//! selection.

use podplace_model::intern::Sym;
use podplace_model::objects::{Pod, Taint};
use smallvec::SmallVec;
use std::sync::Arc;

use crate::cache::SchedulerCache;
use crate::fit_verdicts::FitVerdicts;
use crate::ids::NodeId;
use crate::message::fit_error_message;
use crate::plugins::inter_pod_affinity::{
    filter as ipa_filter, kept as ipa_kept, score as ipa_score,
};
use crate::plugins::{
    default_normalize, default_preemption, dynamic_resources, node_affinity, node_ports,
    node_resources_balanced_allocation, node_resources_fit, node_volume_limits,
    pod_topology_spread, scheduling_gates, volume_binding, volume_restrictions, volume_zone,
};
use crate::profile::Profile;
use crate::state::{ClusterState, NodeInfo};
use crate::statics::{static_rejection_with, unschedulable_taint, NodeStatics};
use crate::status::{Code, Plugin, Status};

pub use crate::names::WILDCARD_IP;

/// The state PreFilter leaves for Filter (and for preemption's dry runs,
/// which clone and update it).
#[derive(Debug, Clone)]
pub struct CycleState {
    wildcard_ip: Sym,
    unschedulable_taint: Taint,
    /// PodTopologySpread's counts (`None`: skipped).
    pub spread: Option<pod_topology_spread::FilterState>,
    /// InterPodAffinity's counts (`None`: skipped); shared with the state
    /// kept for the template until preemption's dry run changes it.
    pub affinity: Option<Arc<ipa_filter::State>>,
    /// VolumeRestrictions' claims in use (`None`: skipped).
    pub restrictions: Option<volume_restrictions::State>,
    /// Whether NodeVolumeLimits counts this pod's volumes.
    pub volume_limits: bool,
    /// VolumeBinding's claims (`None`: skipped).
    pub volumes: Option<volume_binding::State>,
    /// VolumeZone's volume labels (`None`: skipped).
    pub zone: Option<volume_zone::State>,
    /// DynamicResources' allocated claims (`None`: skipped).
    pub claims: Option<dynamic_resources::State>,
    /// The profile this cycle runs.
    pub profile: Arc<Profile>,
    /// Its addedAffinity, compiled for the state.
    pub added_affinity: Option<Arc<crate::cache::AddedAffinity>>,
}

/// The score of one feasible node, per plugin (weighted) and in total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeScore {
    /// The node.
    pub node: NodeId,
    /// Weighted normalised score per plugin that did not skip.
    pub plugins: SmallVec<[(Plugin, i64); 8]>,
    /// Sum of the plugin scores.
    pub total: i64,
}

/// Everything one scheduling cycle found out about one pod.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The Filter verdict for every node, indexed by node id.
    pub statuses: Vec<Status>,
    /// Nodes that passed every filter, in node order.
    pub feasible: Vec<NodeId>,
    /// Scores of the feasible nodes, parallel to `feasible`.
    pub scores: Vec<NodeScore>,
    /// Feasible nodes sharing the best total, in node order.
    pub best: Vec<NodeId>,
    /// The node chosen among `best` (deterministically, from the seed).
    pub chosen: Option<NodeId>,
    /// The FailedScheduling message (empty when the pod fits).
    pub message: String,
    /// What preemption found when nothing fit.
    pub preemption: Option<default_preemption::Preemption>,
    /// SchedulingGates' PreEnqueue message when the pod is gated: it was
    /// not tried (no statuses, no FailedScheduling message).
    pub gated: Option<String>,
}

/// Score plugin weights of the default profile ([`Profile::weight`] gives
/// a configured profile's).
pub fn weight(plugin: Plugin) -> i64 {
    match plugin {
        Plugin::TaintToleration => 3,
        Plugin::NodeAffinity
        | Plugin::PodTopologySpread
        | Plugin::InterPodAffinity
        | Plugin::DynamicResources => 2,
        _ => 1,
    }
}

/// Runs PreFilter. `Err` carries the status of a PreFilter plugin that
/// rejected the pod outright.
pub(crate) fn pre_filter(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Result<(CycleState, Narrowed), Status> {
    let profile = cache.profile().clone();
    let on = |p: Plugin| profile.filters_with(p);
    let narrowed = if on(Plugin::NodeAffinity) {
        node_affinity::pre_filter(pod)
    } else {
        node_affinity::PreFilter::AllNodes
    };
    if narrowed == node_affinity::PreFilter::Conflict {
        return Err(Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::NodeAffinity,
            node_affinity::REASON_CONFLICT,
        ));
    }
    let restrictions = if on(Plugin::VolumeRestrictions) {
        volume_restrictions::pre_filter(cluster, pod)?
    } else {
        None
    };
    let volume_limits = on(Plugin::NodeVolumeLimits) && node_volume_limits::pre_filter(pod);
    let volumes = if on(Plugin::VolumeBinding) {
        volume_binding::pre_filter(cluster, pod)?
    } else {
        None
    };
    let zone = if on(Plugin::VolumeZone) {
        volume_zone::pre_filter(cluster, pod)?
    } else {
        None
    };
    let spread = if on(Plugin::PodTopologySpread) {
        pod_topology_spread::pre_filter_with(cluster, cache, pod)
    } else {
        None
    };
    let affinity = if on(Plugin::InterPodAffinity) {
        ipa_kept::pre_filter(cluster, cache, pod)
    } else {
        None
    };
    let claims = if on(Plugin::DynamicResources) {
        dynamic_resources::pre_filter(cluster, pod)?
    } else {
        None
    };
    let narrowed = match narrowed {
        node_affinity::PreFilter::Only(names) => {
            Some((names, node_affinity::REASON_EXCLUDED.into()))
        }
        _ => None,
    };
    let state = CycleState {
        wildcard_ip: wildcard_ip(cluster),
        unschedulable_taint: unschedulable_taint(cluster),
        spread,
        affinity,
        restrictions,
        volume_limits,
        volumes,
        zone,
        claims,
        profile,
        added_affinity: cache.added_affinity().cloned(),
    };
    Ok((state, narrowed))
}

/// The nodes PreFilter results leave, with the reason the others get.
pub(crate) type Narrowed = Option<(rustc_hash::FxHashSet<Sym>, crate::status::Reason)>;

/// Runs every Filter plugin in profile order on one node; the first
/// rejection wins. `info` is passed separately so preemption can filter
/// against a node with victims removed.
pub fn run_filters(
    cluster: &ClusterState,
    state: &CycleState,
    pod: &Pod,
    node: NodeId,
    info: &NodeInfo,
) -> Status {
    let n = cluster.node(node);
    let interner = cluster.interner();
    let added_ok = state
        .added_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
        .is_none_or(|r| r.matches(&n.labels, n.name_sym, interner));
    if let Some(rejected) = static_rejection_with(
        pod,
        n,
        interner,
        &state.unschedulable_taint,
        &state.profile,
        added_ok,
    ) {
        return rejected;
    }
    run_dynamic_filters(cluster, state, pod, node, info, None)
}

/// The Filter plugins that look at the node's pods (NodePorts,
/// NodeResourcesFit, PodTopologySpread, InterPodAffinity), in profile
/// order; the ones before them depend only on the pod's spec and the node
/// and are evaluated once per template ([`crate::statics`]). With `fit`
/// (only when `info` is the node's accounting in `cluster`), the
/// NodeResourcesFit verdict is read from the kept ones.
fn run_dynamic_filters(
    cluster: &ClusterState,
    state: &CycleState,
    pod: &Pod,
    node: NodeId,
    info: &NodeInfo,
    fit: Option<&FitVerdicts>,
) -> Status {
    let profile = &state.profile;
    if !pod.host_ports.is_empty() && profile.filters_with(Plugin::NodePorts) {
        let status = node_ports::filter(pod, info, state.wildcard_ip);
        if !status.is_success() {
            return status;
        }
    }
    let n = cluster.node(node);
    if profile.filters_with(Plugin::NodeResourcesFit)
        && !match fit {
            Some(fit) => fit.fits(&profile.fit, cluster, pod, node),
            None => node_resources_fit::fits_with(&profile.fit, pod, n, info, cluster.interner()),
        }
    {
        return node_resources_fit::filter_with(&profile.fit, pod, n, info, cluster.interner());
    }
    if let Some(s) = &state.restrictions {
        let status = volume_restrictions::filter(cluster, s, pod, info);
        if !status.is_success() {
            return status;
        }
    }
    if state.volume_limits {
        let status = node_volume_limits::filter(cluster, pod, node, info);
        if !status.is_success() {
            return status;
        }
    }
    if let Some(s) = &state.volumes {
        let status = volume_binding::filter(cluster, s, node);
        if !status.is_success() {
            return status;
        }
    }
    if let Some(s) = &state.zone {
        let status = volume_zone::filter(cluster, s, node);
        if !status.is_success() {
            return status;
        }
    }
    if let Some(s) = &state.spread {
        let status = pod_topology_spread::filter(s, cluster, node);
        if !status.is_success() {
            return status;
        }
    }
    if let Some(s) = &state.affinity {
        let status = ipa_filter::filter(s, cluster, node);
        if !status.is_success() {
            return status;
        }
    }
    if let Some(s) = &state.claims {
        return dynamic_resources::filter(cluster, s, node);
    }
    Status::success()
}

/// Buffers one scheduling cycle fills, kept by the cache between cycles
/// so that scheduling thousands of pods on thousands of nodes does not
/// allocate and free per-node tables for every pod.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    statuses: Vec<Status>,
    feasible: Vec<NodeId>,
    /// Weighted normalised score per plugin, parallel to `feasible`.
    columns: Vec<(Plugin, Vec<i64>)>,
    /// Reusable column buffers.
    spare: Vec<Vec<i64>>,
    totals: Vec<i64>,
    best: Vec<NodeId>,
    /// Per-node Filter verdicts of a parallel cycle, before they are
    /// gathered in node order.
    verdicts: Vec<(bool, Option<Status>)>,
    /// The node list a sampling search visits.
    visit: Vec<NodeId>,
    /// [`MIN_PARALLEL_NODES`] unless set
    /// ([`crate::SchedulerCache::set_min_parallel_nodes`]).
    min_parallel_nodes: Option<usize>,
    /// Which nodes of one block of a parallel search are feasible.
    passes: Vec<bool>,
    /// NodeResourcesFit verdicts kept across cycles.
    fit: FitVerdicts,
}

/// Fewest nodes one worker takes at a time in a parallel step.
const PARALLEL_CHUNK: usize = 64;

/// Fewest nodes a step of a cycle (a block of Filter, a column of Score)
/// needs before it runs on several workers. A node's verdict or score
/// with the per-template state kept across replicas takes tens of
/// nanoseconds, and waking the other workers and gathering their results
/// takes microseconds: on the benchmark cluster under node sampling
/// (about 500 nodes filtered and scored per pod), 2 workers placed the
/// 10,000 pending pods in the same wall time as 1 (0.65 s) for twice the
/// CPU (1.12 s) when steps of 128 nodes ran in parallel; scoring every
/// one of 5,000 nodes still gains from it (3.05 → 2.57 s wall).
const MIN_PARALLEL_NODES: usize = 1024;

impl Scratch {
    /// Whether a step over `nodes` nodes runs its per-node work on the
    /// current rayon pool's workers (more than one, and enough nodes). The
    /// result never depends on it: verdicts and scores are gathered in
    /// node order.
    fn parallel(&self, nodes: usize) -> bool {
        nodes >= self.min_parallel_nodes.unwrap_or(MIN_PARALLEL_NODES)
            && rayon::current_num_threads() > 1
    }

    /// Sets the fewest nodes of a parallel step (see
    /// [`crate::SchedulerCache::set_min_parallel_nodes`]).
    pub(crate) fn set_min_parallel_nodes(&mut self, nodes: usize) {
        self.min_parallel_nodes = Some(nodes);
    }

    fn column(&mut self) -> Vec<i64> {
        let mut c = self.spare.pop().unwrap_or_default();
        c.clear();
        c
    }

    fn recycle_columns(&mut self) {
        for (_, c) in self.columns.drain(..) {
            self.spare.push(c);
        }
    }
}

/// Which Filter verdicts a cycle keeps in [`Scratch::statuses`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    /// Every node's, in node order (for messages, preemption, explanations).
    All,
    /// None: only which nodes are feasible.
    Feasible,
    /// Only this node's.
    Watch(NodeId),
}

impl Record {
    fn keeps(self, node: NodeId) -> bool {
        match self {
            Record::All => true,
            Record::Feasible => false,
            Record::Watch(watched) => watched == node,
        }
    }
}

/// How a cycle ended, with its details in the [`Scratch`].
enum CycleEnd {
    /// A PreFilter plugin rejected the pod on every node.
    PreFilterRejected(Status),
    /// No node passed the filters.
    NoFit(Box<CycleState>),
    /// Scored; the chosen node.
    Chosen(NodeId),
}

/// Schedules one pod against the state without binding it. `seed` makes
/// the choice among equally scored nodes reproducible. The pod need not be
/// in the state; its counts are read from the groups kept for pending
/// (or [`ClusterState::prepare`]d) pods, or counted on the fly.
pub fn schedule(state: &ClusterState, cache: &mut SchedulerCache, pod: &Pod, seed: u64) -> Outcome {
    if let Some(gated) = scheduling_gates::pre_enqueue(pod) {
        return gated_outcome(gated);
    }
    let cache = route(cache, pod);
    cache.sync(state);
    let mut scratch = cache.take_scratch();
    let end = run_cycle(state, cache, pod, seed, &mut scratch, Record::All);
    let mut outcome = outcome_of(state, pod, end, &scratch);
    cache.put_scratch(scratch);
    pre_bind(state, pod, &mut outcome);
    outcome
}

/// PreBind once a node is chosen: when it fails (a ResourceClaim whose
/// `reservedFor` is full), the pod is not bound and the message is
/// PreBind's error; the statuses and scores stay (every filter passed).
/// Returns whether it failed.
fn pre_bind(cluster: &ClusterState, pod: &Pod, outcome: &mut Outcome) -> bool {
    if outcome.chosen.is_none() || pod.resource_claims.is_empty() {
        return false;
    }
    match dynamic_resources::pre_bind(cluster, pod) {
        Ok(()) => false,
        Err(message) => {
            outcome.chosen = None;
            outcome.message = message;
            true
        }
    }
}

/// Where a pod fits, as [`schedule_choice`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The chosen node.
    pub node: NodeId,
    /// Its total weighted score (the best of all feasible nodes).
    pub score: i64,
    /// Every feasible node with that score, the chosen one included, in
    /// node order: kube-scheduler's pick among them is effectively arbitrary.
    pub tied: Vec<NodeId>,
}

/// Like [`schedule`], but when the pod fits only the chosen node is
/// returned, without the per-node statuses and scores: what placing
/// thousands of pods needs. When it does not fit, the full [`Outcome`]
/// (message, preemption) is returned.
pub fn schedule_choice(
    state: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
) -> Result<Choice, Box<Outcome>> {
    quick_cycle(state, cache, pod, seed, Record::Feasible, |_, choice| {
        choice
    })
}

/// What a cycle found about one node besides the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The node passed every filter and scored this total.
    Feasible(i64),
    /// A filter rejected the node.
    Rejected(Status),
}

/// Like [`schedule_choice`], and also the verdict on `watched`: its score
/// or why it is filtered out (`None` if it is not a node of the cluster).
/// What proving a move needs (how the node a pod leaves compares with the
/// one it lands on), without every node's status.
pub fn schedule_watching(
    state: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
    watched: NodeId,
) -> Result<(Choice, Option<Verdict>), Box<Outcome>> {
    quick_cycle(
        state,
        cache,
        pod,
        seed,
        Record::Watch(watched),
        |scratch, choice| {
            let verdict = match scratch.statuses.first() {
                Some(status) if !status.is_success() => Some(Verdict::Rejected(status.clone())),
                Some(_) => scratch
                    .feasible
                    .binary_search(&watched)
                    .ok()
                    .map(|i| Verdict::Feasible(scratch.totals[i])),
                None => None,
            };
            (choice, verdict)
        },
    )
}

/// A cycle that keeps only what `record` asks for; when nothing fits, the
/// cycle is run again with every node's status for the full [`Outcome`].
fn quick_cycle<T>(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
    record: Record,
    finish: impl FnOnce(&Scratch, Choice) -> T,
) -> Result<T, Box<Outcome>> {
    if let Some(gated) = scheduling_gates::pre_enqueue(pod) {
        return Err(Box::new(gated_outcome(gated)));
    }
    let cache = route(cache, pod);
    cache.sync(cluster);
    let mut scratch = cache.take_scratch();
    let start = cache.start_index();
    let result = match run_cycle(cluster, cache, pod, seed, &mut scratch, record) {
        CycleEnd::Chosen(_)
            if !pod.resource_claims.is_empty()
                && dynamic_resources::pre_bind(cluster, pod).is_err() =>
        {
            // PreBind fails: the full outcome, with PreBind's message.
            let end = run_cycle(cluster, cache, pod, seed, &mut scratch, Record::All);
            let mut outcome = outcome_of(cluster, pod, end, &scratch);
            pre_bind(cluster, pod, &mut outcome);
            Err(Box::new(outcome))
        }
        CycleEnd::Chosen(node) => {
            let choice = Choice {
                node,
                score: scratch.totals.iter().copied().max().unwrap_or(0),
                tied: scratch.best.clone(),
            };
            Ok(finish(&scratch, choice))
        }
        _ => {
            // The second run is the same attempt: the start index moves once.
            cache.set_start_index(start);
            // Nothing fits: run again with every node's status, for the
            // message and preemption.
            let end = run_cycle(cluster, cache, pod, seed, &mut scratch, Record::All);
            Err(Box::new(outcome_of(cluster, pod, end, &scratch)))
        }
    };
    cache.put_scratch(scratch);
    result
}

/// The cache of the profile serving the pod's `spec.schedulerName` (this
/// one when no configured profile does: callers that place check first).
fn route<'c>(cache: &'c mut SchedulerCache, pod: &Pod) -> &'c mut SchedulerCache {
    let own = {
        let name = &*pod.scheduler_name;
        name.is_empty() && cache.profile().scheduler_name == crate::profile::DEFAULT_SCHEDULER_NAME
            || cache.profile().scheduler_name == name
    };
    if own || cache.serving(&pod.scheduler_name).is_none() {
        return cache;
    }
    cache
        .serving(&pod.scheduler_name)
        .expect("checked just above")
}

/// The outcome for a pod SchedulingGates keeps out of the queue.
fn gated_outcome(message: String) -> Outcome {
    Outcome {
        statuses: Vec::new(),
        feasible: Vec::new(),
        scores: Vec::new(),
        best: Vec::new(),
        chosen: None,
        message: String::new(),
        preemption: None,
        gated: Some(message),
    }
}

fn outcome_of(cluster: &ClusterState, pod: &Pod, end: CycleEnd, scratch: &Scratch) -> Outcome {
    let node_count = cluster.nodes().len();
    match end {
        CycleEnd::PreFilterRejected(status) => {
            // A PreFilter before DynamicResources' rejected the pod:
            // DynamicResources' PostFilter finds no state of its own and
            // fails with "not found", which ends PostFilter (no preemption).
            // When its own PreFilter rejected the pod, it has an (empty)
            // state and preemption runs.
            let message = if dynamic_resources::is_not_modelled(&status) {
                status.reasons.join(", ")
            } else if node_count == 0 {
                crate::message::NO_NODES.to_string()
            } else if status.plugin == Some(Plugin::DynamicResources) {
                format!(
                    "0/{node_count} nodes are available: {}. {}",
                    status.reasons.join(", "),
                    default_preemption::unresolvable_message(pod, node_count)
                )
            } else {
                format!(
                    "0/{node_count} nodes are available: {}. not found",
                    status.reasons.join(", ")
                )
            };
            Outcome {
                statuses: vec![status; node_count],
                feasible: Vec::new(),
                scores: Vec::new(),
                best: Vec::new(),
                chosen: None,
                message,
                preemption: None,
                gated: None,
            }
        }
        CycleEnd::NoFit(state) => {
            let preemption = if state.profile.preemption {
                default_preemption::post_filter(cluster, &state, pod, &scratch.statuses)
            } else {
                default_preemption::Preemption {
                    candidates: Vec::new(),
                    message: if state.profile.filters_with(Plugin::DynamicResources) {
                        default_preemption::dra_message(state.claims.as_ref()).to_string()
                    } else {
                        String::new()
                    },
                }
            };
            let message = fit_error_message(node_count, &scratch.statuses, &preemption.message);
            Outcome {
                statuses: scratch.statuses.clone(),
                feasible: Vec::new(),
                scores: Vec::new(),
                best: Vec::new(),
                chosen: None,
                message,
                preemption: Some(preemption),
                gated: None,
            }
        }
        CycleEnd::Chosen(node) => Outcome {
            statuses: scratch.statuses.clone(),
            feasible: scratch.feasible.clone(),
            scores: scratch
                .feasible
                .iter()
                .enumerate()
                .map(|(i, &n)| NodeScore {
                    node: n,
                    plugins: scratch.columns.iter().map(|(p, c)| (*p, c[i])).collect(),
                    total: scratch.totals[i],
                })
                .collect(),
            best: scratch.best.clone(),
            chosen: Some(node),
            message: String::new(),
            preemption: None,
            gated: None,
        },
    }
}

/// PreFilter, Filter on every node, and (when some node fits) PreScore,
/// Score, NormalizeScore and host selection, into `scratch`; the Filter
/// verdicts `record` asks for go to `scratch.statuses`.
fn run_cycle(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
    scratch: &mut Scratch,
    record: Record,
) -> CycleEnd {
    scratch.statuses.clear();
    scratch.feasible.clear();
    scratch.recycle_columns();
    scratch.totals.clear();
    scratch.best.clear();
    let (state, narrowed) = match pre_filter(cluster, cache, pod) {
        Ok(s) => s,
        Err(status) => return CycleEnd::PreFilterRejected(status),
    };
    let statics = cache.statics_for(cluster, pod);
    // Fit verdicts are kept across cycles with the template state (off:
    // computed afresh, the reference of the property tests).
    scratch.fit.prepare(cluster, pod, &state.profile.fit);
    let fit = std::mem::take(&mut scratch.fit);
    let kept = cache.template_reuse().then_some(&fit);
    let end = filter_and_score(
        cluster, cache, pod, seed, scratch, record, state, narrowed, &statics, kept,
    );
    scratch.fit = fit;
    end
}

/// [`run_cycle`] after PreFilter.
#[allow(clippy::too_many_arguments)]
fn filter_and_score(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
    scratch: &mut Scratch,
    record: Record,
    state: CycleState,
    narrowed: Narrowed,
    statics: &NodeStatics,
    fit: Option<&FitVerdicts>,
) -> CycleEnd {
    // One node's Filter verdict: whether it is feasible, and its status
    // when `record` keeps it (`None` also when rejected before the dynamic
    // filters and nobody reads why).
    let verdict = |node: NodeId| -> (bool, Option<Status>) {
        let i = node.index();
        let excluded = narrowed
            .as_ref()
            .is_some_and(|(names, _)| !names.contains(&cluster.node(node).name_sym));
        let statuses = record.keeps(node);
        let status = match (excluded, &statics.reject[i]) {
            (true, _) => statuses.then(|| Status {
                code: Code::UnschedulableAndUnresolvable,
                plugin: None,
                reasons: smallvec::smallvec![narrowed
                    .as_ref()
                    .map(|(_, reason)| reason.clone())
                    .unwrap_or_default()],
            }),
            (false, Some(rejected)) => statuses.then(|| rejected.clone()),
            (false, None) => {
                let status =
                    run_dynamic_filters(cluster, &state, pod, node, cluster.node_info(node), fit);
                if !statuses {
                    return (status.is_success(), None);
                }
                Some(status)
            }
        };
        (status.as_ref().is_some_and(Status::is_success), status)
    };
    let nodes = cluster.nodes().len();
    // Placing (not explaining every node): with sampling, stop filtering
    // once the search has found what it needs, as kube-scheduler does.
    let search = if record == Record::All {
        None
    } else {
        let mut visit = std::mem::take(&mut scratch.visit);
        let search = cache.plan_search(
            cluster,
            narrowed.as_ref().map(|(names, _)| names),
            &mut visit,
        );
        scratch.visit = visit;
        search
    };
    if let Some(search) = search {
        let (processed, found) = search_feasible(&verdict, search, scratch);
        if let Record::Watch(watched) = record {
            if watched.index() < nodes {
                scratch.statuses.extend(verdict(watched).1);
            }
        }
        if scratch.feasible.is_empty() {
            cache.advance_start(cluster, narrowed.as_ref().map(|(names, _)| names));
            return CycleEnd::NoFit(Box::new(state));
        }
        scratch.feasible.sort_unstable();
        cache.record_search(cluster, search, processed, found);
    } else if scratch.parallel(nodes) {
        // kube-scheduler's parallel Filter: chunks of nodes on every
        // worker, the verdicts gathered in node order, so the result is
        // the one a single worker gives.
        use rayon::prelude::*;
        let mut verdicts = std::mem::take(&mut scratch.verdicts);
        (0..nodes as u32)
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|i| verdict(NodeId(i)))
            .collect_into_vec(&mut verdicts);
        for (i, (feasible, status)) in verdicts.drain(..).enumerate() {
            if feasible {
                scratch.feasible.push(NodeId(i as u32));
            }
            scratch.statuses.extend(status);
        }
        scratch.verdicts = verdicts;
    } else {
        for node in cluster.node_ids() {
            let (feasible, status) = verdict(node);
            if feasible {
                scratch.feasible.push(node);
            }
            scratch.statuses.extend(status);
        }
    }
    if search.is_none() {
        if scratch.feasible.is_empty() {
            // Every node of the list was processed: the start index moves
            // on by the list's length.
            cache.advance_start(cluster, narrowed.as_ref().map(|(names, _)| names));
            return CycleEnd::NoFit(Box::new(state));
        }
        cache.sample(
            cluster,
            narrowed.as_ref().map(|(names, _)| names),
            &mut scratch.feasible,
        );
    }
    score_nodes(cluster, cache, pod, statics, scratch);
    let best_total = scratch.totals.iter().copied().max().unwrap_or(0);
    for (&node, &total) in scratch.feasible.iter().zip(&scratch.totals) {
        if total == best_total {
            scratch.best.push(node);
        }
    }
    match pick(&scratch.best, seed, pod, cluster) {
        Some(node) => CycleEnd::Chosen(node),
        None => CycleEnd::NoFit(Box::new(state)),
    }
}

/// kube-scheduler's findNodesThatPassFilters under sampling: filters the
/// search's visit list (`scratch.visit`) from its start index until it has
/// found `to_find` feasible nodes and reached one more, which stops it
/// (unrecorded); the ones found go to `scratch.feasible` in visit order.
/// Returns how many nodes were processed (the start index moves on by
/// that many: every node before the one it stopped at) and how many
/// feasible ones it found, the one it stopped at included. In parallel,
/// blocks of the list are filtered on every worker and read in list
/// order, so the result is the one a single worker gives (at most a block
/// of nodes past the stop is filtered for nothing).
fn search_feasible(
    verdict: &(impl Fn(NodeId) -> (bool, Option<Status>) + Sync),
    search: crate::sampling::Search,
    scratch: &mut Scratch,
) -> (usize, usize) {
    let list = std::mem::take(&mut scratch.visit);
    let n = list.len();
    let at = |k: usize| list[(search.start + k) % n];
    let mut result = (n, 0);
    let mut k = 0;
    let mut passes = std::mem::take(&mut scratch.passes);
    'blocks: while k < n {
        let found = scratch.feasible.len();
        let wanted = search.to_find + 1 - found;
        // How far the search should still read: `wanted` nodes when every
        // node passes (the first block, and the common case); later, the
        // nodes `wanted` takes at the pass rate seen so far, or as far
        // again as it has read when none passed yet. A search that must
        // read far reaches blocks worth handing out to every worker, and a
        // parallel block ends near the stop node. A block too short to
        // hand out is read on this worker, stopping at the stop node.
        let expected = match (k, found) {
            (0, _) => wanted,
            (_, 0) => k,
            _ => wanted.saturating_mul(k).div_ceil(found),
        };
        let block = expected.max(wanted).min(n - k);
        if !scratch.parallel(block) {
            for j in k..k + block {
                let node = at(j);
                if verdict(node).0 {
                    if scratch.feasible.len() == search.to_find {
                        result = (j, search.to_find + 1);
                        break 'blocks;
                    }
                    scratch.feasible.push(node);
                }
            }
            k += block;
            continue;
        }
        use rayon::prelude::*;
        (k..k + block)
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|j| verdict(at(j)).0)
            .collect_into_vec(&mut passes);
        for (j, &ok) in passes.iter().enumerate() {
            if !ok {
                continue;
            }
            if scratch.feasible.len() == search.to_find {
                result = (k + j, search.to_find + 1);
                break 'blocks;
            }
            scratch.feasible.push(at(k + j));
        }
        k += block;
    }
    scratch.passes = passes;
    if result.1 == 0 {
        result.1 = scratch.feasible.len();
    }
    scratch.visit = list;
    result
}

/// The interned wildcard host IP (every state interns it).
fn wildcard_ip(state: &ClusterState) -> Sym {
    let interner = state.interner();
    interner
        .lookup(WILDCARD_IP)
        .or_else(|| interner.lookup(""))
        .unwrap_or_else(|| podplace_model::intern::Interner::new().intern(""))
}

/// Deterministic choice among tied nodes: a hash of the seed and the pod's
/// name, so equal nodes are used evenly but reproducibly.
fn pick(best: &[NodeId], seed: u64, pod: &Pod, cluster: &ClusterState) -> Option<NodeId> {
    if best.len() <= 1 {
        return best.first().copied();
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in cluster
        .interner()
        .resolve(pod.namespace)
        .bytes()
        .chain(std::iter::once(b'/'))
        .chain(pod.name.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64 finaliser for a well-mixed index.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    best.get((h % best.len() as u64) as usize).copied()
}

/// PreScore, Score and NormalizeScore of every score plugin over the
/// feasible nodes, weighted, into `scratch.columns` and `scratch.totals`.
fn score_nodes(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    statics: &NodeStatics,
    scratch: &mut Scratch,
) {
    let feasible = std::mem::take(&mut scratch.feasible);
    fn column(
        scratch: &mut Scratch,
        feasible: &[NodeId],
        f: impl FnMut(NodeId) -> i64,
    ) -> Vec<i64> {
        let mut c = scratch.column();
        c.extend(feasible.iter().copied().map(f));
        c
    }
    /// A column whose per-node score reads the pod's counts: on every
    /// worker when the cycle runs in parallel, gathered in node order.
    fn column_par(
        scratch: &mut Scratch,
        feasible: &[NodeId],
        f: impl Fn(NodeId) -> i64 + Sync,
    ) -> Vec<i64> {
        if !scratch.parallel(feasible.len()) {
            return column(scratch, feasible, f);
        }
        use rayon::prelude::*;
        let mut c = scratch.column();
        feasible
            .par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|&n| f(n))
            .collect_into_vec(&mut c);
        c
    }

    let profile = cache.profile().clone();
    let on = |p: Plugin| profile.weight(p).is_some();
    if on(Plugin::TaintToleration) {
        let mut taints = column(scratch, &feasible, |n| statics.taint_score[n.index()]);
        default_normalize(&mut taints, true);
        scratch.columns.push((Plugin::TaintToleration, taints));
    }

    if on(Plugin::NodeAffinity)
        && (node_affinity::scores(pod)
            || profile.added_affinity.as_ref().is_some_and(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .is_some()
            }))
    {
        let mut s = column(scratch, &feasible, |n| {
            statics.node_affinity_score[n.index()]
        });
        default_normalize(&mut s, false);
        scratch.columns.push((Plugin::NodeAffinity, s));
    }

    let resources = cache.resource_scores(cluster, pod, &feasible);
    if on(Plugin::NodeResourcesFit) {
        let fit = column(scratch, &feasible, |n| resources.fit[n.index()]);
        scratch.columns.push((Plugin::NodeResourcesFit, fit));
    }

    let spread = if on(Plugin::PodTopologySpread) {
        pod_topology_spread::pre_score(cluster, cache, pod, &feasible)
    } else {
        None
    };
    if let Some(state) = spread {
        let mut s = column_par(scratch, &feasible, |n| {
            pod_topology_spread::score(&state, cluster, n)
        });
        pod_topology_spread::normalize(&state, &feasible, &mut s);
        scratch.columns.push((Plugin::PodTopologySpread, s));
    }

    let affinity = if on(Plugin::InterPodAffinity) {
        ipa_kept::pre_score(cluster, cache, pod)
    } else {
        None
    };
    if let Some(state) = affinity {
        let mut s = column_par(scratch, &feasible, |n| ipa_score::score(&state, cluster, n));
        ipa_score::normalize(&mut s);
        scratch.columns.push((Plugin::InterPodAffinity, s));
    }

    if on(Plugin::NodeResourcesBalancedAllocation)
        && node_resources_balanced_allocation::scores_with(
            &profile.balanced,
            pod,
            cluster.interner(),
        )
    {
        let s = column(scratch, &feasible, |n| resources.balanced[n.index()]);
        scratch
            .columns
            .push((Plugin::NodeResourcesBalancedAllocation, s));
    }
    cache.put_resource_scores(resources);

    if on(Plugin::ImageLocality) {
        let images = column(scratch, &feasible, |n| statics.image_score[n.index()]);
        scratch.columns.push((Plugin::ImageLocality, images));
    }

    if on(Plugin::DynamicResources) {
        let zeros = column(scratch, &feasible, |_| 0);
        scratch.columns.push((Plugin::DynamicResources, zeros));
    }

    scratch.totals.clear();
    scratch.totals.resize(feasible.len(), 0);
    for (plugin, c) in &mut scratch.columns {
        let w = profile.weight(*plugin).unwrap_or(0);
        for (score, total) in c.iter_mut().zip(scratch.totals.iter_mut()) {
            *score *= w;
            *total += *score;
        }
    }
    scratch.feasible = feasible;
}
