//! The simulation: the engine's [`ClusterState`] and scheduler cache plus
//! what the engine does not keep — which controller owns each pod,
//! readiness, terminating pods and their grace periods, node conditions —
//! and a queue of timed events.
//!
//! Time advances from event to event. At each instant the simulation
//! handles the events due, lets the controllers reconcile, and runs a
//! scheduling pass over the waiting pods, until nothing changes. A step
//! then [`Simulation::settle`]s: it keeps advancing while *settling* events
//! (pods becoming Ready, grace periods ending, drain retries) are queued;
//! *background* timers (taint evictions after tolerationSeconds, progress
//! deadlines) fire only when time reaches them, for example during `wait`.

mod apply;
mod ctl;
mod nodes;
mod sched;
mod volumes;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use podplace_engine::ids::{NodeId, PodId};
use podplace_engine::state::ClusterState;
use podplace_model::inventory::{Inventory, List};
use podplace_model::naming::UsedNames;
use podplace_model::objects::{Pod, Toleration};
use podplace_model::selector::LabelSelector;
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_world::{Owner, PodColumn, PodRow, World};
use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

use crate::findings::Finding;
use crate::report::{Change, PodView};
use crate::time::{Duration, Time};

pub use nodes::EvictionError;

/// Default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;
/// kubectl drain retries a refused eviction after this many seconds.
pub const DRAIN_RETRY_SECONDS: i64 = 5;
/// Most pods a simulation creates over its lifetime (the model's limit
/// for workload expansion).
pub const MAX_PODS: usize = podplace_model::expand::MAX_EXPANDED_PODS;
/// Most rounds of controllers and scheduling at one instant before the
/// simulation gives up (controllers that never agree).
const MAX_ROUNDS_PER_INSTANT: usize = 100_000;

/// Why a simulation could not go on.
#[derive(Debug, Error)]
pub enum SimError {
    /// The world could not be loaded.
    #[error(transparent)]
    Load(#[from] podplace_model::load::LoadError),
    /// An object could not be compiled for the engine.
    #[error("{object}: {message}")]
    Compile {
        /// `Kind/namespace/name`.
        object: String,
        /// What was wrong.
        message: String,
    },
    /// A step names something that does not exist or cannot be done.
    #[error("{0}")]
    Invalid(String),
    /// Controllers kept changing the cluster without time passing.
    #[error("the simulation did not settle at t={0}: controllers kept changing the cluster")]
    NoFixpoint(Duration),
}

/// Index of a workload in the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadId(pub u32);

impl WorkloadId {
    fn index(self) -> usize {
        self.0 as usize
    }
}

/// What happens at a point in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The kubelet reports the pod Ready (after `readyAfter`).
    PodReady(PodId),
    /// A workload's pods became available (minReadySeconds): resync it.
    Resync(WorkloadId),
    /// A terminating pod's grace period is over: it is gone.
    PodGone(PodId),
    /// kubectl drain retries its refused evictions.
    DrainRetry(usize),
    /// A pod's toleration of a NoExecute taint runs out.
    TaintEviction { pod: PodId, epoch: u32 },
    /// A Deployment's progress deadline.
    ProgressCheck { workload: WorkloadId, epoch: u32 },
}

impl Event {
    /// Settling events are waited for at the end of every step.
    fn settles(self) -> bool {
        matches!(
            self,
            Event::PodReady(_) | Event::Resync(_) | Event::PodGone(_) | Event::DrainRetry(_)
        )
    }
}

/// Everything the simulation keeps about one pod beyond the engine.
#[derive(Debug, Clone)]
struct PodInfo {
    /// The controller that owns it (a ReplicaSet for Deployment pods).
    owner: Option<WorkloadId>,
    /// Creation time.
    created: Time,
    /// Order of arrival in the scheduling queue.
    queued: u64,
    /// When it was bound.
    bound_at: Option<Time>,
    /// Ready since (None: not Ready).
    ready_since: Option<Time>,
    /// Deletion timestamp.
    deleting_since: Option<Time>,
    /// terminationGracePeriodSeconds.
    grace: i64,
    /// Tolerations that may match NoExecute taints, with their seconds.
    no_execute: Vec<(Toleration, Option<i64>)>,
    /// The revision it runs (pod-template-hash or controller-revision-hash).
    revision: String,
    /// StatefulSet ordinal.
    ordinal: Option<i32>,
    /// DaemonSet pods: the node they are for.
    daemon_node: Option<NodeId>,
    /// `controller.kubernetes.io/pod-deletion-cost`.
    deletion_cost: i32,
    /// The last FailedScheduling message.
    message: String,
    /// Node nominated by preemption.
    nominated: Option<NodeId>,
    /// Uid (victim order tie-break).
    uid: String,
}

/// Node state the engine does not keep.
#[derive(Debug, Clone)]
struct NodeState {
    /// Ready condition (false after `fail`).
    ready: bool,
    /// Bumped on every taint change, so stale taint evictions are dropped.
    epoch: u32,
}

/// A node drain in progress (kubectl drain).
#[derive(Debug, Clone)]
struct DrainState {
    node: NodeId,
    /// Pods to evict and wait for.
    targets: Vec<PodId>,
    /// Pods whose eviction was accepted.
    evicted: FxHashSet<PodId>,
    /// Last refusal per pod.
    refused: BTreeMap<String, String>,
    grace: Option<i64>,
    deadline: Option<Time>,
    /// Finished (all targets gone) or abandoned.
    over: bool,
}

/// A PodDisruptionBudget and its compiled selector.
#[derive(Debug, Clone)]
struct Pdb {
    api: k8s_openapi::api::policy::v1::PodDisruptionBudget,
    namespace: String,
    name: String,
    selector: LabelSelector,
}

/// A compiled pod ready to be copied for each replica of a ReplicaSet.
#[derive(Debug, Clone)]
struct Proto {
    pod: Pod,
    grace: i64,
    no_execute: Vec<(Toleration, Option<i64>)>,
    deletion_cost: i32,
}

/// Progress bookkeeping of a Deployment (its `Progressing` condition).
#[derive(Debug, Clone, Default)]
struct Progress {
    updated: i32,
    ready: i32,
    available: i32,
    old: i32,
    epoch: u32,
    /// ProgressDeadlineExceeded has been reported for this rollout.
    exceeded: bool,
    /// A rollout (or scale) is under way.
    active: bool,
    /// When the current rollout started.
    started: Time,
    /// Report when it completes (a new revision or a new Deployment).
    announce: bool,
}

#[derive(Debug, Clone)]
struct DeployCtl {
    api: Deployment,
    replica_sets: Vec<WorkloadId>,
    /// Fingerprint of the template (without pod-template-hash).
    fingerprint: String,
    last_desired: i32,
    progress: Progress,
}

#[derive(Debug, Clone)]
struct RsCtl {
    api: ReplicaSet,
    /// Owning Deployment.
    owner: Option<WorkloadId>,
    fingerprint: String,
    revision: i64,
    proto: Option<Proto>,
}

#[derive(Debug, Clone)]
struct StsCtl {
    api: StatefulSet,
    current_revision: String,
    update_revision: String,
    templates: Vec<(String, PodTemplateSpec)>,
}

#[derive(Debug, Clone)]
struct DsCtl {
    api: DaemonSet,
    /// The revision new pods get (adopted pods' label until the template changes).
    revision: String,
    eligible: FxHashMap<NodeId, bool>,
}

#[derive(Debug, Clone)]
enum Ctl {
    Deployment(Box<DeployCtl>),
    ReplicaSet(Box<RsCtl>),
    StatefulSet(Box<StsCtl>),
    DaemonSet(Box<DsCtl>),
}

/// A workload and its pods.
#[derive(Debug, Clone)]
struct Workload {
    kind: WorkloadKind,
    namespace: String,
    name: String,
    /// Pods it owns directly, alive (terminating ones included).
    pods: Vec<PodId>,
    ctl: Ctl,
}

impl Workload {
    fn reference(&self) -> WorkloadRef {
        WorkloadRef::new(self.kind.clone(), &self.namespace, &self.name)
    }

    fn display(&self) -> String {
        self.reference().to_string()
    }
}

/// Options of a simulation.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Seed for choosing among equally scored nodes.
    pub seed: u64,
    /// Delay between binding and readiness per workload (`deployment/web`,
    /// `deployment/ns/web`, or `*`).
    pub ready_after: BTreeMap<String, Duration>,
    /// Do not search for strategy fixes when a rollout is stuck (used by
    /// the search itself).
    pub no_fix_search: bool,
    /// The scheduler that places the simulation's pods (profiles,
    /// sampling).
    pub scheduler: podplace_engine::SchedulerSetup,
}

/// A running simulation.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The world every command reads: the engine's state, the scheduler's
    /// cache and the pod table, kept in step as pods come and go. Pod slots
    /// are not reused (events and drains hold pod ids across time).
    world: World,
    now: Time,
    queue: BinaryHeap<Reverse<(Time, u64, Event)>>,
    seq: u64,
    settling: usize,
    pods: PodColumn<Option<PodInfo>>,
    workloads: Vec<Workload>,
    by_key: FxHashMap<WorkloadRef, WorkloadId>,
    dirty: Vec<bool>,
    dirty_list: Vec<WorkloadId>,
    nodes: Vec<NodeState>,
    api_nodes: Vec<core::Node>,
    pdbs: Vec<Pdb>,
    drains: Vec<DrainState>,
    pending: Vec<PodId>,
    sched_dirty: bool,
    used_names: UsedNames,
    priority_classes: List<PriorityClass>,
    runtime_classes: List<RuntimeClass>,
    options: Options,
    changes: Vec<Change>,
    findings: Vec<Finding>,
    warnings: Vec<String>,
    /// Loading the initial world (adopted objects are not news).
    loading: bool,
    /// Revision labels of the initial pods per controller.
    pod_revisions: FxHashMap<WorkloadRef, String>,
    /// Every storage object loaded or applied so far (and the StatefulSets,
    /// for their claim templates): `apply` compiles the storage again from
    /// them.
    storage_objects: Inventory,
    /// Pods whose claims go with them (a StatefulSet scale-down under
    /// `persistentVolumeClaimRetentionPolicy.whenScaled: Delete`).
    drop_claims_with: FxHashSet<PodId>,
}

impl Simulation {
    /// Builds the world of `inv` (manifests or a snapshot, expanded or
    /// not): nodes, existing pods adopted by their controllers, and
    /// controllers that create what is missing at t=0. Call
    /// [`Simulation::settle`] to let them.
    pub fn new(inv: &Inventory, options: Options) -> Result<Simulation, SimError> {
        let mut sim = Simulation {
            world: {
                let mut world = World::empty(&options.scheduler, options.seed);
                // Events, drains and reports hold pod ids across time.
                world.state_mut().set_slot_reuse(false);
                world
            },
            now: 0,
            queue: BinaryHeap::new(),
            seq: 0,
            settling: 0,
            pods: PodColumn::default(),
            workloads: Vec::new(),
            by_key: FxHashMap::default(),
            dirty: Vec::new(),
            dirty_list: Vec::new(),
            nodes: Vec::new(),
            api_nodes: Vec::new(),
            pdbs: Vec::new(),
            drains: Vec::new(),
            pending: Vec::new(),
            sched_dirty: false,
            used_names: UsedNames::new(),
            priority_classes: inv.priority_classes.clone(),
            runtime_classes: inv.runtime_classes.clone(),
            options,
            changes: Vec::new(),
            findings: Vec::new(),
            warnings: inv.warnings.clone(),
            loading: true,
            pod_revisions: FxHashMap::default(),
            storage_objects: Inventory::default(),
            drop_claims_with: FxHashSet::default(),
        };
        sim.load(inv)?;
        sim.loading = false;
        Ok(sim)
    }

    /// The engine's state (nodes, bound pods, indexes). Pod ids are never
    /// reused, so they index tables kept beside it.
    pub fn state(&self) -> &ClusterState {
        self.world.state()
    }

    /// The simulation's world: its state and the pod table (each pod's
    /// workload and owner as the simulated controllers created it), the same
    /// [`World`] the other commands read.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The options the simulation runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Warnings from loading and admission (unknown PriorityClasses, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Changes since the last call (what happened during a step).
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }

    /// Findings raised by events since the last call (deadlines, drains).
    pub fn take_event_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.findings)
    }

    fn info(&self, id: PodId) -> Option<&PodInfo> {
        self.pods.get(id).and_then(Option::as_ref)
    }

    fn info_mut(&mut self, id: PodId) -> Option<&mut PodInfo> {
        self.pods.get_mut(id).and_then(Option::as_mut)
    }

    fn alive(&self, id: PodId) -> bool {
        self.world.state().pod_entry(id).is_some() && self.info(id).is_some()
    }

    /// `namespace/name` of a pod.
    pub fn pod_name(&self, id: PodId) -> String {
        let p = self.world.state().pod(id);
        format!(
            "{}/{}",
            self.world.state().interner().resolve(p.namespace),
            p.name
        )
    }

    /// Every live pod (bound, pending or terminating), in creation order.
    pub fn pod_ids(&self) -> impl Iterator<Item = PodId> + '_ {
        self.pods
            .iter()
            .filter(|(_, info)| info.is_some())
            .map(|(id, _)| id)
            .filter(|&id| self.alive(id))
    }

    /// The workload a pod belongs to, as an operator names it (a
    /// ReplicaSet's Deployment; the pod itself when it has no controller).
    pub fn workload_ref(&self, id: PodId) -> WorkloadRef {
        if let Some(w) = self.info(id).and_then(|i| i.owner) {
            return self.workloads[self.top(w).index()].reference();
        }
        let p = self.world.state().pod(id);
        let ns = self.world.state().interner().resolve(p.namespace);
        match &p.owner {
            Some(o) => WorkloadRef::new(WorkloadKind::of(&o.kind), ns, &*o.name),
            None => WorkloadRef::new(WorkloadKind::Pod, ns, &*p.name),
        }
    }

    /// [`Simulation::workload_ref`] as `Kind/namespace/name`.
    pub fn workload_of(&self, id: PodId) -> String {
        self.workload_ref(id).to_string()
    }

    /// What a report shows about one pod.
    pub fn pod_view(&self, id: PodId) -> PodView {
        let info = self.info(id);
        PodView {
            pod: self.pod_name(id),
            workload: self.workload_of(id),
            node: self
                .world
                .state()
                .pod_node(id)
                .map(|n| self.world.state().node(n).name.to_string()),
            ready: info.is_some_and(|i| i.ready_since.is_some()),
            terminating: info.is_some_and(|i| i.deleting_since.is_some()),
            message: info.map(|i| i.message.clone()).unwrap_or_default(),
            gated: self.gated(id),
            cpu_milli: self.world.state().pod(id).requests.milli_cpu,
            memory: self.world.state().pod(id).requests.memory,
        }
    }

    /// The top-level workload (a ReplicaSet's Deployment).
    fn top(&self, w: WorkloadId) -> WorkloadId {
        match &self.workloads[w.index()].ctl {
            Ctl::ReplicaSet(rs) => rs.owner.unwrap_or(w),
            _ => w,
        }
    }

    /// Looks a workload up by `kind/name` or `kind/namespace/name`, with an
    /// optional namespace; without one, `default` or the only namespace
    /// that has a workload of that name.
    pub(crate) fn find_workload(
        &self,
        reference: &str,
        namespace: Option<&str>,
    ) -> Result<WorkloadId, SimError> {
        let parts: Vec<&str> = reference.split('/').collect();
        let (kind, ns, name) = match parts.as_slice() {
            [kind, name] => (*kind, namespace, *name),
            [kind, ns, name] => (*kind, Some(*ns), *name),
            _ => {
                return Err(SimError::Invalid(format!(
                    "workload {reference:?}: expected kind/name or kind/namespace/name (e.g. deployment/web)"
                )))
            }
        };
        let kind = WorkloadKind::from_resource(kind).ok_or_else(|| {
            SimError::Invalid(format!(
                "workload {reference:?}: unknown kind {kind:?} (deployment, statefulset, daemonset, replicaset)"
            ))
        })?;
        if let Some(ns) = ns {
            return self
                .by_key
                .get(&WorkloadRef::new(kind.clone(), ns, name))
                .copied()
                .ok_or_else(|| SimError::Invalid(format!("{kind} {ns}/{name} does not exist")));
        }
        if let Some(&w) = self
            .by_key
            .get(&WorkloadRef::new(kind.clone(), "default", name))
        {
            return Ok(w);
        }
        let found: Vec<WorkloadId> = self
            .by_key
            .iter()
            .filter(|(r, _)| r.kind == kind && r.name == name)
            .map(|(_, &w)| w)
            .collect();
        match found.as_slice() {
            [w] => Ok(*w),
            [] => Err(SimError::Invalid(format!("{kind} {name} does not exist"))),
            _ => Err(SimError::Invalid(format!(
                "{kind} {name} exists in several namespaces: write kind/namespace/name"
            ))),
        }
    }

    /// The display name of a workload found by reference.
    pub fn workload_display(
        &self,
        reference: &str,
        namespace: Option<&str>,
    ) -> Result<String, SimError> {
        Ok(self.workloads[self.find_workload(reference, namespace)?.index()].display())
    }

    fn ready_after(&self, owner: Option<WorkloadId>) -> i64 {
        let Some(w) = owner else {
            return self.options.ready_after.get("*").map_or(0, |d| d.seconds());
        };
        let top = &self.workloads[self.top(w).index()];
        let kind = top.kind.as_str().to_ascii_lowercase();
        for key in [
            format!("{kind}/{}/{}", top.namespace, top.name),
            format!("{kind}/{}", top.name),
            "*".to_string(),
        ] {
            if let Some(d) = self.options.ready_after.get(&key) {
                return d.seconds();
            }
        }
        0
    }

    fn push(&mut self, at: Time, event: Event) {
        self.seq += 1;
        if event.settles() {
            self.settling += 1;
        }
        self.queue
            .push(Reverse((at.max(self.now), self.seq, event)));
    }

    fn mark(&mut self, w: WorkloadId) {
        let top = self.top(w);
        for id in [w, top] {
            if !self.dirty[id.index()] {
                self.dirty[id.index()] = true;
                self.dirty_list.push(id);
            }
        }
    }

    fn mark_owner(&mut self, pod: PodId) {
        if let Some(w) = self.info(pod).and_then(|i| i.owner) {
            self.mark(w);
        }
    }

    fn add_workload(
        &mut self,
        kind: WorkloadKind,
        namespace: &str,
        name: &str,
        ctl: Ctl,
    ) -> WorkloadId {
        let id = WorkloadId(self.workloads.len() as u32);
        self.by_key
            .insert(WorkloadRef::new(kind.clone(), namespace, name), id);
        self.workloads.push(Workload {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            pods: Vec::new(),
            ctl,
        });
        self.dirty.push(false);
        self.mark(id);
        id
    }

    /// A fresh pod name `base` + five characters, as `generateName` does
    /// (deterministic: the same scheme as workload expansion).
    fn fresh_name(&mut self, namespace: &str, base: &str) -> String {
        self.used_names.fresh(namespace, base)
    }

    /// Adds a compiled pod to the cluster and to its owner.
    fn add_pod(&mut self, pod: Pod, owner: Option<WorkloadId>, mut info: PodInfo) -> PodId {
        let ns = self
            .world
            .state()
            .interner()
            .resolve(pod.namespace)
            .to_string();
        self.used_names.reserve(&ns, &pod.name);
        let row = owner.map(|w| {
            let direct = &self.workloads[w.index()];
            PodRow {
                api: None,
                workload: self.workloads[self.top(w).index()].reference(),
                owner: Some(Owner {
                    kind: direct.kind.clone(),
                    name: direct.name.clone(),
                }),
            }
        });
        let id = self.world.add_pod(pod, row);
        info.owner = owner;
        info.created = self.now;
        self.seq += 1;
        info.queued = self.seq;
        info.uid = podplace_model::naming::synthetic_uid(
            WorkloadKind::Pod.as_str(),
            &ns,
            &self.world.state().pod(id).name,
        );
        self.pods.set(id, Some(info));
        if let Some(w) = owner {
            self.workloads[w.index()].pods.push(id);
            self.mark(w);
        }
        if self.world.state().pod_node(id).is_some() {
            let now = self.now;
            if let Some(info) = self.info_mut(id) {
                info.bound_at = Some(now);
            }
        } else {
            // Unbound, or naming a node that does not exist (NodeName rejects it).
            self.pending.push(id);
            self.sched_dirty = true;
        }
        id
    }

    /// Deletes a pod gracefully: unbound pods go at once; bound pods turn
    /// terminating (still counted by inter-pod affinity) and are gone after
    /// their grace period, or when their failed node comes back.
    fn delete_pod(&mut self, id: PodId, grace: Option<i64>, why: Change) {
        if !self.alive(id) {
            return;
        }
        if self.info(id).is_some_and(|i| i.deleting_since.is_some()) {
            return;
        }
        self.changes.push(why);
        let node = self.world.state().pod_node(id);
        let now = self.now;
        let Some(node) = node else {
            self.remove(id);
            return;
        };
        let grace =
            grace.unwrap_or_else(|| self.info(id).map_or(DEFAULT_GRACE_SECONDS, |i| i.grace));
        if let Some(info) = self.info_mut(id) {
            info.deleting_since = Some(now);
            info.ready_since = None;
        }
        self.world.state_mut().set_terminating(id, true);
        self.sched_dirty = true;
        self.mark_owner(id);
        if self.nodes[node.index()].ready {
            self.push(now + grace.max(0), Event::PodGone(id));
        } else if let Some(w) = self
            .info(id)
            .and_then(|i| i.owner)
            .filter(|w| matches!(self.workloads[w.index()].ctl, Ctl::StatefulSet(_)))
        {
            // At most one pod per ordinal: no replacement until it is gone.
            let node_name = self.world.state().node(node).name.to_string();
            self.changes.push(Change::Note {
                text: format!(
                    "{} stays Terminating on {node_name} (NotReady): {} creates no replacement until the kubelet confirms it (restore {node_name}) or it is force-deleted",
                    self.pod_name(id),
                    self.workloads[w.index()].display()
                ),
            });
        }
    }

    /// Removes a pod from the world.
    fn remove(&mut self, id: PodId) {
        if !self.alive(id) {
            return;
        }
        let owner = self.info(id).and_then(|i| i.owner);
        if self.drop_claims_with.remove(&id) {
            self.delete_pod_claims(id);
        }
        self.world.remove_pod(id);
        self.pods.set(id, None);
        self.pending.retain(|&p| p != id);
        if let Some(w) = owner {
            self.workloads[w.index()].pods.retain(|&p| p != id);
            self.mark(w);
        }
        self.sched_dirty = true;
    }

    fn bind(&mut self, id: PodId, node: NodeId) {
        let claims = self.claim_statuses(id);
        self.world.state_mut().bind(id, node);
        let now = self.now;
        if let Some(info) = self.info_mut(id) {
            info.bound_at = Some(now);
            info.nominated = None;
            info.message.clear();
        }
        self.changes.push(Change::Bound {
            pod: self.pod_name(id),
            node: self.world.state().node(node).name.to_string(),
        });
        self.mark_owner(id);
        if !claims.is_empty() {
            self.note_claims_settled(id, node, &claims);
        }
        self.after_bind(id, node);
    }

    /// Readiness and NoExecute taints for a pod that just landed on `node`.
    fn after_bind(&mut self, id: PodId, node: NodeId) {
        if self.nodes[node.index()].ready {
            let delay = self.ready_after(self.info(id).and_then(|i| i.owner));
            if delay == 0 {
                self.set_ready(id);
            } else {
                self.push(self.now + delay, Event::PodReady(id));
            }
        }
        self.check_no_execute(id, node);
    }

    fn set_ready(&mut self, id: PodId) {
        let now = self.now;
        let Some(node) = self.world.state().pod_node(id) else {
            return;
        };
        if !self.nodes[node.index()].ready {
            return;
        }
        let Some(info) = self.info_mut(id) else {
            return;
        };
        if info.deleting_since.is_some() || info.ready_since.is_some() {
            return;
        }
        info.ready_since = Some(now);
        let owner = info.owner;
        self.mark_owner(id);
        if let Some(w) = owner {
            let min_ready = self.min_ready_seconds(w);
            if min_ready > 0 {
                self.push(now + min_ready, Event::Resync(w));
            }
        }
    }

    /// Runs the instant `self.now`: events due, controllers, scheduling,
    /// until nothing changes.
    fn run_instant(&mut self) -> Result<(), SimError> {
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            let mut busy = false;
            while let Some(Reverse((at, _, event))) = self.queue.peek().copied() {
                if at > self.now {
                    break;
                }
                self.queue.pop();
                if event.settles() {
                    self.settling -= 1;
                }
                self.handle(event);
                busy = true;
            }
            if self.sync_controllers()? {
                busy = true;
            }
            if self.sched_dirty {
                self.schedule_pending();
                busy = true;
            }
            if !busy {
                return Ok(());
            }
        }
        Err(SimError::NoFixpoint(Duration(self.now)))
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::PodReady(id) => self.set_ready(id),
            Event::Resync(w) => self.mark(w),
            Event::PodGone(id) => {
                let on_failed_node = self
                    .world
                    .state()
                    .pod_node(id)
                    .is_some_and(|n| !self.nodes[n.index()].ready);
                if self.alive(id) && !on_failed_node {
                    self.changes.push(Change::Gone {
                        pod: self.pod_name(id),
                    });
                    self.remove(id);
                }
            }
            Event::DrainRetry(d) => self.retry_drain(d),
            Event::TaintEviction { pod, epoch } => self.taint_eviction(pod, epoch),
            Event::ProgressCheck { workload, epoch } => self.progress_check(workload, epoch),
        }
    }

    /// Lets the cluster settle: handles everything due now, then keeps
    /// advancing time while settling events (readiness, grace periods,
    /// drain retries) are queued.
    pub fn settle(&mut self) -> Result<(), SimError> {
        self.run_instant()?;
        while self.settling > 0 {
            let Some(Reverse((at, _, _))) = self.queue.peek().copied() else {
                break;
            };
            self.now = at.max(self.now);
            self.run_instant()?;
        }
        Ok(())
    }

    /// Advances simulated time by `d`, handling every event on the way.
    pub fn advance(&mut self, d: Duration) -> Result<(), SimError> {
        let until = self.now + d.seconds();
        self.advance_until(until, |_| false)?;
        Ok(())
    }

    /// Advances until `until` or until `stop` holds after an instant;
    /// returns whether `stop` held.
    pub(crate) fn advance_until_pub(
        &mut self,
        until: Time,
        stop: impl FnMut(&Simulation) -> bool,
    ) -> Result<bool, SimError> {
        self.advance_until(until, stop)
    }

    fn advance_until(
        &mut self,
        until: Time,
        mut stop: impl FnMut(&Simulation) -> bool,
    ) -> Result<bool, SimError> {
        self.run_instant()?;
        if stop(self) {
            return Ok(true);
        }
        loop {
            let next = self.queue.peek().map(|Reverse((at, _, _))| *at);
            match next {
                Some(at) if at <= until => {
                    self.now = at.max(self.now);
                    self.run_instant()?;
                    if stop(self) {
                        return Ok(true);
                    }
                }
                _ => {
                    self.now = until.max(self.now);
                    self.run_instant()?;
                    return Ok(stop(self));
                }
            }
        }
    }

    /// Pods waiting to be scheduled, in queue order.
    pub fn pending_pods(&self) -> Vec<PodId> {
        let mut v: Vec<PodId> = self
            .pending
            .iter()
            .copied()
            .filter(|&id| self.alive(id) && self.world.state().pod_node(id).is_none())
            .collect();
        v.sort_by_key(|&id| self.info(id).map_or(0, |i| i.queued));
        v
    }

    /// Whether a workload is a Deployment.
    pub(crate) fn is_deployment(&self, w: WorkloadId) -> bool {
        matches!(self.workloads[w.index()].ctl, Ctl::Deployment(_))
    }

    /// Whether a workload is a DaemonSet.
    pub(crate) fn is_daemon_set(&self, w: WorkloadId) -> bool {
        matches!(self.workloads[w.index()].ctl, Ctl::DaemonSet(_))
    }

    /// `Kind/namespace/name` of a workload.
    pub(crate) fn workload_name(&self, w: WorkloadId) -> String {
        self.workloads[w.index()].display()
    }

    /// Whether a Deployment has ReplicaSets (those of the world it was
    /// loaded with, adopted by their owner references, or its own).
    pub(crate) fn has_replica_sets(&self, w: WorkloadId) -> bool {
        matches!(&self.workloads[w.index()].ctl, Ctl::Deployment(d) if !d.replica_sets.is_empty())
    }

    /// Whether a Deployment is paused (`spec.paused`).
    pub(crate) fn is_paused(&self, w: WorkloadId) -> bool {
        matches!(&self.workloads[w.index()].ctl,
            Ctl::Deployment(d) if d.api.spec.as_ref().and_then(|s| s.paused) == Some(true))
    }

    pub(crate) fn push_finding(&mut self, f: Finding) {
        self.findings.push(f);
    }

    /// Adds a line to the current step's changes (the runner's notes, and
    /// steps implemented elsewhere: the rebalance step's waves).
    pub fn push_change(&mut self, c: crate::report::Change) {
        self.changes.push(c);
    }

    /// Adds a line of text to the current step's changes, so steps that
    /// other crates implement through [`crate::Extensions`] (a rebalance's
    /// waves) say what they did in the step's report.
    pub fn note(&mut self, text: impl Into<String>) {
        self.changes.push(Change::Note { text: text.into() });
    }

    /// Whether a node is Ready.
    pub fn node_ready(&self, n: NodeId) -> bool {
        self.nodes[n.index()].ready
    }

    /// Top-level workloads (Deployments, StatefulSets, ReplicaSets without
    /// a Deployment) with their desired replicas.
    pub(crate) fn top_workloads(&self) -> Vec<(WorkloadId, String, i32)> {
        self.workloads
            .iter()
            .enumerate()
            .filter_map(|(i, w)| {
                let desired = match &w.ctl {
                    Ctl::Deployment(d) => d.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
                    Ctl::StatefulSet(s) => {
                        s.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
                    }
                    Ctl::ReplicaSet(r) if r.owner.is_none() => {
                        r.api.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
                    }
                    _ => return None,
                };
                Some((WorkloadId(i as u32), w.display(), desired))
            })
            .collect()
    }

    /// The live pods of a workload (a Deployment's through its ReplicaSets).
    pub(crate) fn workload_pods(&self, w: WorkloadId) -> Vec<PodId> {
        match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => d
                .replica_sets
                .iter()
                .flat_map(|r| self.workloads[r.index()].pods.iter().copied())
                .collect(),
            _ => self.workloads[w.index()].pods.clone(),
        }
    }

    /// The finding for a StatefulSet or DaemonSet rollout that cannot go on.
    pub(crate) fn stuck_workload_finding(&mut self, w: WorkloadId) -> Finding {
        let display = self.workloads[w.index()].display();
        let pods = self.workload_pods(w);
        let blocked = pods
            .iter()
            .copied()
            .find(|&p| self.world.state().pod_node(p).is_none());
        let (pod, rule) = match blocked {
            Some(p) => (Some(self.pod_name(p)), Some(self.culprit(p).line)),
            None => (None, None),
        };
        let mut message = format!("rollout of {display} cannot progress");
        if let (Some(p), Some(r)) = (&pod, &rule) {
            message.push_str(&format!(": {p} is blocked: {r}"));
        }
        Finding {
            workload: Some(display),
            pod,
            rule,
            ..Finding::new(crate::findings::FindingKind::RolloutStuck, message)
        }
    }

    /// Evicts a pod through the Eviction API: PodDisruptionBudgets are
    /// checked and a refusal says which budget, as the API server's 429.
    pub fn evict(&mut self, id: PodId) -> Result<(), EvictionError> {
        self.try_evict(id, None)
    }
}

/// `controller.kubernetes.io/pod-deletion-cost` of a pod.
fn deletion_cost(pod: &core::Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("controller.kubernetes.io/pod-deletion-cost"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Grace period and NoExecute-relevant tolerations of an API pod.
fn lifecycle_of(
    pod: &core::Pod,
    state: &mut ClusterState,
) -> (i64, Vec<(Toleration, Option<i64>)>) {
    let spec = pod.spec.as_ref();
    let grace = spec
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(DEFAULT_GRACE_SECONDS);
    let mut out = Vec::new();
    for t in spec
        .and_then(|s| s.tolerations.as_ref())
        .into_iter()
        .flatten()
    {
        let effect = t.effect.as_deref().unwrap_or("");
        if !effect.is_empty() && effect != "NoExecute" {
            continue;
        }
        // Compile the toleration through a throwaway pod so matching is the engine's.
        let probe = core::Pod {
            spec: Some(core::PodSpec {
                tolerations: Some(vec![t.clone()]),
                containers: vec![core::Container::default()],
                ..Default::default()
            }),
            ..Default::default()
        };
        if let Ok(compiled) = state.compile_pod(&probe) {
            if let Some(ct) = compiled.tolerations.into_iter().next() {
                out.push((ct, t.toleration_seconds));
            }
        }
    }
    (grace, out)
}

impl Simulation {
    /// The pod the controller of `id` would create to replace it if it
    /// were evicted now (unbound; named `<replacement>` for ReplicaSet
    /// pods, whose real name is random): what a rebalancer schedules to
    /// predict where an evicted pod lands. `None` for pods without a
    /// simulated controller (they are not replaced).
    pub fn replacement_pod(&mut self, id: PodId) -> Option<Pod> {
        let owner = self.info(id)?.owner?;
        match &self.workloads[owner.index()].ctl {
            Ctl::ReplicaSet(_) => {
                let mut pod = self.proto_for(owner).ok()??.pod;
                pod.name = "<replacement>".into();
                Some(pod)
            }
            Ctl::StatefulSet(_) | Ctl::DaemonSet(_) => {
                let mut pod = self.world.state().pod(id).clone();
                pod.node_name = None;
                pod.terminating = false;
                Some(pod)
            }
            Ctl::Deployment(_) => None,
        }
    }

    /// A Deployment object as the simulation holds it now.
    pub fn deployment(&self, reference: &str) -> Result<Deployment, SimError> {
        let w = self.find_workload(reference, None)?;
        match &self.workloads[w.index()].ctl {
            Ctl::Deployment(d) => Ok(d.api.clone()),
            _ => Err(SimError::Invalid(format!(
                "{reference} is not a Deployment"
            ))),
        }
    }
}
