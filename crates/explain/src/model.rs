//! The explanation of one pod: what the scheduler says, what every node
//! holds against the pod, who blocks it with which term, which rules did
//! not constrain anything, and the fixes that were shown to work.
//!
//! Plain data, no printing: the CLI renders it as text or JSON.

use std::sync::Arc;

/// A list that nodes failing alike share instead of copying: every node of
/// a topology domain is blocked by the same pods, so their reasons hold one
/// list (5,000 nodes in three zones, each zone blocked by hundreds of
/// workloads, would otherwise copy millions of counts). It reads as a
/// slice; two lists are equal when their items are.
#[derive(Clone, PartialEq, Eq)]
pub struct Shared<T>(Arc<[T]>);

impl<T> Shared<T> {
    /// Whether `self` and `other` are the same list, not just equal ones:
    /// a reader may compute something once per list.
    pub fn same(&self, other: &Shared<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// An address that identifies the list while it lives (for a reader
    /// that keys what it computed once per list, [`Shared::same`]).
    pub fn id(&self) -> usize {
        self.0.as_ptr() as *const u8 as usize
    }
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Shared(Arc::from(Vec::new()))
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> From<Vec<T>> for Shared<T> {
    fn from(v: Vec<T>) -> Self {
        Shared(Arc::from(v))
    }
}

impl<T> FromIterator<T> for Shared<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Shared(iter.into_iter().collect())
    }
}

impl<'a, T> IntoIterator for &'a Shared<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// Whose rule an inter-pod (anti-)affinity blocker enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleOwner {
    /// The explained pod's own rule.
    Incoming,
    /// The existing pod's required anti-affinity, applied symmetrically.
    Existing,
}

impl RuleOwner {
    /// The spelling used in JSON (`incoming` / `existing`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleOwner::Incoming => "incoming",
            RuleOwner::Existing => "existing",
        }
    }
}

/// The kind of an inter-pod rule (which list of `spec.affinity` it is in).
pub use podplace_model::terms::TermKind;

/// One inter-pod affinity term as its author wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermView {
    /// Which list it is in.
    pub kind: TermKind,
    /// The workload whose pods hold the term (`StatefulSet/ns/name`, or `Pod/ns/name`).
    pub owner_workload: String,
    /// Position in its list (0-based).
    pub index: usize,
    /// The `labelSelector` as YAML.
    pub selector: String,
    /// `topologyKey`.
    pub topology_key: String,
    /// The whole term as YAML (selector, namespaces, namespaceSelector, topologyKey).
    pub yaml: String,
}

/// An existing pod that keeps the explained pod off a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// `ns/name`.
    pub pod: String,
    /// Its workload, `Kind/ns/name`.
    pub workload: String,
    /// The node it runs on.
    pub node: String,
    /// The term that matched, as an index into [`Explanation::terms`].
    pub term: usize,
    /// The topology domain where the term met the pod (`key=value`'s value).
    pub domain: String,
    /// Whose rule it is.
    pub rule_owner: RuleOwner,
}

/// How many pods of one workload block the pod in one domain through one
/// term: exact even when [`Reason::blockers`] is cut short. A pod lies in
/// exactly one domain per topology key, so summing over distinct domains
/// counts distinct pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockerCount {
    /// The blocking pods' workload, `Kind/ns/name`.
    pub workload: String,
    /// The term, an index into [`Explanation::terms`].
    pub term: usize,
    /// Whose rule it is.
    pub rule_owner: RuleOwner,
    /// The topology domain (value of the term's topology key).
    pub domain: String,
    /// Matching pods of that workload in that domain.
    pub pods: usize,
}

/// A label requirement a node fails, with the node's own value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelMiss {
    /// The requirement as written (`zone In [a, b]`, `disk=ssd`, `metadata.name In [n1]`).
    pub requirement: String,
    /// The label key (or `metadata.name`).
    pub key: String,
    /// The node's value for the key, `None` when it has no such label.
    pub node_value: Option<String>,
}

/// A taint the pod does not tolerate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaintView {
    /// Key.
    pub key: String,
    /// Value (empty when unset).
    pub value: String,
    /// `NoSchedule` or `NoExecute`.
    pub effect: String,
}

impl TaintView {
    /// `key=value:Effect`, as kubectl prints taints.
    pub fn display(&self) -> String {
        if self.value.is_empty() {
            format!("{}:{}", self.key, self.effect)
        } else {
            format!("{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

/// A resource a node is short of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortageView {
    /// `cpu`, `memory`, `ephemeral-storage`, `pods` or an extended resource.
    pub resource: String,
    /// What the pod asks for (milli-cores for cpu, bytes for memory, pods for pods).
    pub requested: i64,
    /// What the node offers (allocatable).
    pub allocatable: i64,
    /// What the pods already on the node request.
    pub used: i64,
    /// `allocatable - used`.
    pub free: i64,
    /// `requested - free`: how much more the node would need.
    pub short_by: i64,
    /// The pod asks for more than the node's whole allocatable: preemption cannot help.
    pub exceeds_node: bool,
}

/// A host port conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortView {
    /// The port.
    pub port: i32,
    /// Protocol.
    pub protocol: String,
    /// Host IP (`0.0.0.0` binds every address).
    pub ip: String,
    /// `ns/name` of the pod holding it.
    pub used_by: String,
}

/// Matching pods in one topology domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainCount {
    /// The domain (value of the topology key).
    pub domain: String,
    /// Matching pods there.
    pub pods: i64,
}

/// A required pod affinity term a node does not satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityMiss {
    /// The term, an index into [`Explanation::terms`].
    pub term: usize,
    /// The node's value of the term's topology key (`None`: the node lacks the key).
    pub domain: Option<String>,
    /// Pods matching the term in the node's domain (0 when it fails).
    pub matching_here: i64,
    /// Pods matching the term anywhere in the cluster.
    pub matching_anywhere: i64,
}

/// What exactly a node holds against the pod, per kind of reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// The node is cordoned (`spec.unschedulable`).
    Cordoned,
    /// The pod names another node in `spec.nodeName`.
    NodeName {
        /// The node the pod asks for.
        wanted: String,
    },
    /// NoSchedule/NoExecute taints the pod does not tolerate.
    Taints {
        /// All of them, in the node's order.
        taints: Vec<TaintView>,
    },
    /// `nodeSelector` or required node affinity does not match.
    NodeAffinity {
        /// `nodeSelector` entries the node fails.
        node_selector: Vec<LabelMiss>,
        /// Per required node affinity term (all fail, since they are ORed):
        /// its index and the requirements the node fails.
        terms: Vec<(usize, Vec<LabelMiss>)>,
        /// The pod's required node affinity names nodes (matchFields
        /// `metadata.name`) and this is not one of them, so the scheduler
        /// did not even run the filters here.
        excluded_by_name: bool,
    },
    /// The scheduler profile's `addedAffinity` (NodeAffinityArgs in the
    /// KubeSchedulerConfiguration) excludes the node: kube-scheduler
    /// enforces it on every pod the profile serves, so no change to the
    /// pod lifts it (only the configuration, or the node's labels, can).
    EnforcedAffinity {
        /// The profile's schedulerName.
        profile: String,
        /// Per required term of addedAffinity (all fail, since they are
        /// ORed): its index and the requirements the node fails.
        terms: Vec<(usize, Vec<LabelMiss>)>,
    },
    /// Host ports already bound on the node.
    Ports {
        /// The conflicts.
        ports: Vec<PortView>,
    },
    /// Requests do not fit (one reason per resource, as kube-scheduler lists them).
    Resource(ShortageView),
    /// The node lacks a DoNotSchedule spread constraint's topology key.
    SpreadMissingLabel {
        /// The constraint's position among the pod's DoNotSchedule constraints.
        constraint: usize,
        /// Its topology key.
        topology_key: String,
    },
    /// Placing the pod here would exceed a spread constraint's maxSkew.
    SpreadSkew {
        /// The constraint's position among the pod's DoNotSchedule constraints.
        constraint: usize,
        /// Its topology key.
        topology_key: String,
        /// The node's domain.
        domain: String,
        /// Matching pods in the node's domain now.
        matching: i64,
        /// Whether the pod itself matches the selector (counts +1 here).
        self_match: bool,
        /// The global minimum (0 below minDomains).
        min: i64,
        /// The constraint's minDomains (1 when unset): with fewer eligible
        /// domains than this, the global minimum is 0.
        min_domains: i32,
        /// The skew the pod would cause.
        skew: i64,
        /// Allowed skew.
        max_skew: i32,
        /// Matching pods per eligible domain, fewest first (at most 12).
        domains: Vec<DomainCount>,
        /// Number of eligible domains.
        domain_total: usize,
    },
    /// Required pod affinity is not met.
    PodAffinity {
        /// The terms that fail here.
        misses: Vec<AffinityMiss>,
    },
    /// The pod's own required anti-affinity matches pods in the node's domain.
    PodAntiAffinity,
    /// Existing pods' required anti-affinity matches the pod.
    ExistingAntiAffinity,
    /// The pod's required node affinity terms name disjoint node sets.
    Conflict,
    /// Bound claims whose PersistentVolume's node affinity excludes the node
    /// (VolumeBinding).
    VolumeNodeAffinity {
        /// Each such claim with its volume and the requirements the node misses.
        volumes: Vec<VolumeReach>,
    },
    /// Claims that wait for their first consumer and for which neither an
    /// available PersistentVolume nor provisioning works on the node
    /// (VolumeBinding).
    VolumeUnbound {
        /// Each such claim and why.
        claims: Vec<UnboundClaim>,
    },
    /// Claims whose class provisions only where a CSIStorageCapacity
    /// reachable from the node is large enough, and none is (VolumeBinding).
    VolumeCapacity {
        /// Each such claim.
        claims: Vec<UnboundClaim>,
    },
    /// Bound claims whose PersistentVolume does not exist (VolumeBinding).
    VolumeMissing {
        /// (claim, the volume it names).
        claims: Vec<(String, String)>,
    },
    /// Bound volumes labelled with a zone or region the node is not in
    /// (VolumeZone).
    VolumeZone {
        /// Each such volume with the labels the node does not match.
        volumes: Vec<ZoneMiss>,
    },
    /// A ReadWriteOncePod claim another scheduled pod uses (VolumeRestrictions;
    /// it holds on every node).
    ReadWriteOncePod {
        /// (claim, holding pod `ns/name`, the node it runs on).
        holders: Vec<(String, String, String)>,
    },
    /// An in-tree disk (GCE PD, AWS EBS, iSCSI, RBD) a pod on the node
    /// already mounts (VolumeRestrictions).
    DiskConflict {
        /// The pods on the node mounting it, `ns/name`.
        pods: Vec<String>,
    },
    /// The node's CSINode attach limit for a driver would be exceeded
    /// (NodeVolumeLimits).
    VolumeLimit {
        /// One per exceeded driver.
        drivers: Vec<VolumeLimitView>,
    },
    /// Allocated ResourceClaims whose allocation is not available on the
    /// node (DynamicResources).
    ResourceClaimNodes {
        /// Each such claim with the allocation's node selector terms the
        /// node fails.
        claims: Vec<ClaimNodes>,
    },
}

/// A bound claim's volume and how its node affinity misses a node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VolumeReach {
    /// The claim, `ns/name`.
    pub claim: String,
    /// Its PersistentVolume (empty for a volume podplace assumed
    /// provisioned, whose name is not known yet).
    pub volume: String,
    /// Per `spec.nodeAffinity.required` term (ORed, so all fail): its index
    /// and the requirements the node fails.
    pub terms: Vec<(usize, Vec<LabelMiss>)>,
}

/// A claim that waits for its first consumer, and why the node cannot
/// serve it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnboundClaim {
    /// The claim, `ns/name`.
    pub claim: String,
    /// Its StorageClass (empty: none).
    pub class: String,
    /// `spec.resources.requests.storage` in bytes, when set.
    pub request: Option<i64>,
    /// Why, one sentence per cause: no fitting PersistentVolume reaches
    /// the node, the class cannot provision there (and why), or the claim
    /// is already being provisioned for another node.
    pub causes: Vec<String>,
}

/// A bound volume's zone or region label the node does not match.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ZoneMiss {
    /// The claim, `ns/name`.
    pub claim: String,
    /// Its PersistentVolume.
    pub volume: String,
    /// (label key, the volume's value, the node's value or `None`).
    pub labels: Vec<(String, String, Option<String>)>,
}

/// One CSI driver's attach limit on a node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VolumeLimitView {
    /// The driver.
    pub driver: String,
    /// CSINode `allocatable.count`.
    pub limit: i64,
    /// Distinct volumes of the driver already attached by the node's pods.
    pub attached: usize,
    /// The pod's volumes not attached there yet.
    pub adding: usize,
}

/// An allocated ResourceClaim whose allocation misses a node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimNodes {
    /// The ResourceClaim, `ns/name`.
    pub claim: String,
    /// Per term of `status.allocation.nodeSelector`: its index and the
    /// requirements the node fails.
    pub terms: Vec<(usize, Vec<LabelMiss>)>,
}

/// What a PreFilter rejection (or a hold before scheduling) is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodReasonKind {
    /// A PersistentVolumeClaim the pod names does not exist.
    ClaimNotFound,
    /// A generic ephemeral volume's claim is not created yet.
    EphemeralClaimNotCreated,
    /// A claim is being deleted.
    ClaimBeingDeleted,
    /// A claim is bound to a PersistentVolume that does not exist (Lost).
    ClaimLost,
    /// A generic ephemeral volume's claim is not owned by the pod.
    ClaimNotOwned,
    /// A claim whose class binds Immediately is not bound yet.
    UnboundImmediate,
    /// VolumeZone cannot read a bound claim's volume.
    VolumeUnreadable,
    /// A ResourceClaim the pod names does not exist (or is not created yet).
    ResourceClaimNotFound,
    /// A ResourceClaim is being deleted.
    ResourceClaimBeingDeleted,
    /// A template's ResourceClaim is not owned by the pod.
    ResourceClaimNotOwned,
    /// An allocated ResourceClaim's `status.reservedFor` is full.
    ResourceClaimInUse,
    /// A ResourceClaim needs devices allocated, which podplace does not model.
    NotModelled,
}

impl PodReasonKind {
    /// The spelling used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PodReasonKind::ClaimNotFound => "claim_not_found",
            PodReasonKind::EphemeralClaimNotCreated => "ephemeral_claim_not_created",
            PodReasonKind::ClaimBeingDeleted => "claim_being_deleted",
            PodReasonKind::ClaimLost => "claim_lost",
            PodReasonKind::ClaimNotOwned => "claim_not_owned",
            PodReasonKind::UnboundImmediate => "unbound_immediate",
            PodReasonKind::VolumeUnreadable => "volume_unreadable",
            PodReasonKind::ResourceClaimNotFound => "resource_claim_not_found",
            PodReasonKind::ResourceClaimBeingDeleted => "resource_claim_being_deleted",
            PodReasonKind::ResourceClaimNotOwned => "resource_claim_not_owned",
            PodReasonKind::ResourceClaimInUse => "resource_claim_in_use",
            PodReasonKind::NotModelled => "not_modelled",
        }
    }
}

/// A reason about the pod itself, before any node is looked at: a
/// PreFilter plugin rejected it (so every node "fails" alike and no Filter
/// runs), or a PreEnqueue plugin holds it out of the scheduling queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodReason {
    /// The plugin (`VolumeBinding`, `DynamicResources`, ...).
    pub plugin: &'static str,
    /// `UnschedulableAndUnresolvable` (preemption cannot help).
    pub code: &'static str,
    /// The reason as kube-scheduler words it (podplace's own words for
    /// [`PodReasonKind::NotModelled`]).
    pub message: String,
    /// What it is about.
    pub kind: PodReasonKind,
    /// The claims it names, `ns/name` (PersistentVolumeClaims or ResourceClaims).
    pub claims: Vec<String>,
    /// Whether kube-scheduler holds the pod before scheduling (PreEnqueue):
    /// it is never tried and gets no FailedScheduling event.
    pub held: bool,
    /// What it means and what to do, in a sentence or two.
    pub text: String,
}

/// One reason a node rejects the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The kube-scheduler plugin (`InterPodAffinity`, `TaintToleration`, ...).
    pub plugin: &'static str,
    /// `Unschedulable` (preemption might help) or `UnschedulableAndUnresolvable`.
    pub code: &'static str,
    /// The reason as kube-scheduler words it (`node(s) didn't match pod anti-affinity rules`).
    pub message: String,
    /// The specifics.
    pub detail: Detail,
    /// The pods that block the node (inter-pod rules only), at most
    /// [`crate::MAX_BLOCKERS`] of them.
    /// Nodes of one domain share the list.
    pub blockers: Shared<Blocker>,
    /// How many blockers there are in all.
    pub blockers_total: usize,
    /// Every blocker counted, per workload, term and domain (shared as
    /// [`Reason::blockers`] is).
    pub counts: Shared<BlockerCount>,
}

/// Every reason one node rejects the pod, in the scheduler's plugin order
/// (the first is the one kube-scheduler reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVerdict {
    /// The node.
    pub node: String,
    /// The reasons, never empty.
    pub reasons: Vec<Reason>,
}

/// Nodes that reject the pod for the same reasons and the same blocking
/// workloads and terms, so a large cluster reads as a few lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Indexes into [`Explanation::nodes`], in node order.
    pub members: Vec<usize>,
    /// One line per shared reason, independent of the node
    /// (`taint dedicated=gpu:NoSchedule`, `nodeSelector stokesnet/vault=enabled`).
    pub summaries: Vec<String>,
}

/// A feasible node's score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreRow {
    /// The node.
    pub node: String,
    /// Weighted total.
    pub total: i64,
    /// Weighted, normalised score per plugin that ran.
    pub plugins: Vec<(&'static str, i64)>,
}

/// The kind of a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoteKind {
    /// Required pod affinity passed only through the first-pod-of-a-group exception.
    FirstPodOfGroup,
    /// Required pod affinity that no pod matches and the pod does not match itself.
    AffinityUnsatisfiable,
    /// A rule that rejected no node and changed no score.
    ConstrainsNothing,
    /// Preemption would make room.
    Preemption,
    /// Node sampling: kube-scheduler scored only part of the feasible
    /// nodes (which, how certain, and the best node it left out).
    Sampling,
    /// The pod is not for kube-scheduler (another schedulerName).
    OtherScheduler,
    /// The pod has finished; the scheduler ignores it.
    Finished,
    /// The pod is gated (`spec.schedulingGates`).
    Gated,
    /// A rolling update that cannot progress (story 4).
    RolloutStalled,
    /// Anything else worth knowing.
    Info,
}

impl NoteKind {
    /// The spelling used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::FirstPodOfGroup => "first_pod_of_group",
            NoteKind::AffinityUnsatisfiable => "affinity_unsatisfiable",
            NoteKind::ConstrainsNothing => "constrains_nothing",
            NoteKind::Preemption => "preemption",
            NoteKind::Sampling => "sampling",
            NoteKind::OtherScheduler => "other_scheduler",
            NoteKind::Finished => "finished",
            NoteKind::Gated => "gated",
            NoteKind::RolloutStalled => "rollout_stalled",
            NoteKind::Info => "info",
        }
    }
}

/// An observation about the pod's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// What kind.
    pub kind: NoteKind,
    /// The rule it is about, an index into [`Explanation::terms`].
    pub term: Option<usize>,
    /// The observation in one or two sentences.
    pub text: String,
}

/// A change that makes the pod schedulable (or, for a placed pod, makes a
/// rule mean what its author meant), verified by re-running the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// One line: what to change.
    pub title: String,
    /// The object to patch, `Kind/ns/name` (`Node/name` for nodes).
    pub target: String,
    /// A strategic-merge patch for the target, as YAML.
    pub patch: String,
    /// A command that applies it.
    pub command: String,
    /// Why this works, and what it costs.
    pub rationale: String,
    /// The node the pod lands on with the patch applied (engine re-run).
    pub lands_on: String,
    /// What the verification run showed, in one sentence.
    pub verification: String,
}

/// Where the pod stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// No node fits.
    Pending,
    /// Bound to a node: already running in the input, or placed by podplace.
    Placed {
        /// The node.
        node: String,
        /// Whether podplace placed it (it was waiting in the input).
        by_podplace: bool,
    },
    /// The pod asks for another scheduler.
    OtherScheduler {
        /// `spec.schedulerName`.
        scheduler: String,
    },
    /// The pod has `spec.schedulingGates`: kube-scheduler never tries it
    /// (no FailedScheduling message) until they are all removed.
    Gated {
        /// The gates, in spec order.
        gates: Vec<String>,
    },
    /// The pod has finished (phase Succeeded or Failed): kube-scheduler no
    /// longer sees it, so there is nothing to schedule or to block.
    Finished {
        /// `status.phase`.
        phase: String,
        /// The node it ran on, if any.
        node: Option<String>,
    },
}

/// Everything `why` knows about one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// `ns/name`.
    pub pod: String,
    /// Its workload, `Kind/ns/name`.
    pub workload: String,
    /// Pending, placed, or not ours.
    pub phase: Phase,
    /// The FailedScheduling message kube-scheduler would give now (empty
    /// when a node fits).
    pub message: String,
    /// Number of nodes in the cluster.
    pub node_count: usize,
    /// Why no node was even looked at: a PreFilter plugin rejected the pod
    /// itself (then `nodes` is empty), or a PreEnqueue plugin holds it.
    pub pod_reasons: Vec<PodReason>,
    /// Nodes that reject the pod, in node order, each with every reason.
    pub nodes: Vec<NodeVerdict>,
    /// The same nodes grouped by identical reasons: the nodes closest to
    /// fitting (fewest reasons) first, then the largest groups.
    pub groups: Vec<Group>,
    /// Feasible nodes with scores, best first (empty when Pending).
    pub scores: Vec<ScoreRow>,
    /// Feasible nodes sharing the best score.
    pub tied: Vec<String>,
    /// Where kube-scheduler would put the pod now (for a placed pod this is
    /// computed as if it were being scheduled again, without itself).
    pub would_land_on: Option<String>,
    /// The inter-pod terms referred to by blockers, misses and notes.
    pub terms: Vec<TermView>,
    /// Rules that constrained nothing, and other observations.
    pub notes: Vec<Note>,
    /// Verified fixes, best first.
    pub fixes: Vec<Fix>,
}
