//! Workload expansion and admission defaults: the pods the controllers and
//! the API server would create, so that a world read from manifests can be
//! scheduled like a real cluster.
//!
//! [`expand_workloads`] appends, as pending pods (no `spec.nodeName`), the
//! missing replicas of every Deployment, ReplicaSet, ReplicationController,
//! StatefulSet, DaemonSet and Job, named and labelled as their controllers
//! name and label them, with the controller's owner reference. It then
//! applies the API server's defaulting and admission (priority, default
//! tolerations, RuntimeClass overhead, ...) to those pods and to bare pods
//! that come from manifests. Objects read from a snapshot (they carry a uid,
//! a creationTimestamp or a status) are taken exactly as they are.
//!
//! One module per controller ([`deployment`], [`replica_set`],
//! [`stateful_set`], [`daemon_set`], [`job`], [`cron_job`]) builds its pods;
//! the simulation's controllers call the same functions for the pods they
//! create over time, and [`admission::Admission`] for their admission.
//! Names follow the controllers' schemes, deterministically: see [`crate::naming`].

pub mod admission;
mod cron_job;
pub mod daemon_set;
pub mod deployment;
mod job;
pub mod replica_set;
pub mod stateful_set;

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

pub use self::admission::Admission;
use crate::inventory::{CountedReplicas, Inventory, PodList, Sourced};
use crate::naming::UsedNames;
pub use crate::naming::{name_suffix, pod_template_hash, synthetic_uid, NAME_ALPHABET};
use crate::pod_summary::PodSummary;
use crate::workloads::WorkloadKind;

/// `system-cluster-critical`'s value, a built-in class every cluster has.
pub const SYSTEM_CLUSTER_CRITICAL: i32 = 2_000_000_000;
/// `system-node-critical`'s value, a built-in class every cluster has.
pub const SYSTEM_NODE_CRITICAL: i32 = 2_000_001_000;

/// Seconds a pod tolerates not-ready/unreachable nodes by default
/// (the DefaultTolerationSeconds admission plugin).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Whether an object came from a manifest rather than from a cluster: the
/// API server always sets uid and creationTimestamp, and the status of a
/// live object.
pub fn is_manifest(meta: &ObjectMeta, has_status: bool) -> bool {
    meta.uid.as_deref().unwrap_or("").is_empty() && meta.creation_timestamp.is_none() && !has_status
}

/// Neither being deleted nor finished: a replica its controller counts.
pub(crate) fn is_active(pod: &Pod) -> bool {
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("");
    pod.metadata.deletion_timestamp.is_none() && phase != "Succeeded" && phase != "Failed"
}

fn controller_ref(meta: &ObjectMeta) -> Option<&OwnerReference> {
    let refs = meta.owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true))
        .or_else(|| refs.first())
}

/// Identity of a workload: kind, namespace, name, and uid when it has one.
struct Owner<'a> {
    kind: WorkloadKind,
    namespace: &'a str,
    name: &'a str,
    uid: Option<&'a str>,
}

impl Owner<'_> {
    fn new(kind: WorkloadKind, meta: &ObjectMeta) -> Owner<'_> {
        Owner {
            kind,
            namespace: meta.namespace.as_deref().unwrap_or("default"),
            name: meta.name.as_deref().unwrap_or(""),
            uid: meta.uid.as_deref().filter(|u| !u.is_empty()),
        }
    }

    fn uid(&self) -> String {
        self.uid
            .map(str::to_string)
            .unwrap_or_else(|| synthetic_uid(self.kind.as_str(), self.namespace, self.name))
    }

    fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.kind.api_version().unwrap_or_default().to_string(),
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            uid: self.uid(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// [`Owner::owns`] read from a pod's [`PodSummary`].
    fn owns_summary(&self, summary: &PodSummary) -> bool {
        summary.namespace_or_default() == self.namespace
            && summary.owner.as_ref().is_some_and(|r| {
                self.kind == *r.kind
                    && *r.name == *self.name
                    && (self.uid.is_none() || Some(&*r.uid) == self.uid)
            })
    }

    fn owns(&self, meta: &ObjectMeta) -> bool {
        meta.namespace.as_deref().unwrap_or("default") == self.namespace
            && controller_ref(meta).is_some_and(|r| {
                self.kind == r.kind.as_str()
                    && r.name == self.name
                    && (self.uid.is_none() || Some(r.uid.as_str()) == self.uid)
            })
    }
}

/// Pods of the world indexed by their controller (kind, namespace, name).
struct PodIndex {
    by_owner: HashMap<(String, String, String), Vec<usize>>,
    names: UsedNames,
}

impl PodIndex {
    /// Indexes `pods` from their summaries (a packed pod is not decoded).
    fn new(pods: &PodList) -> Self {
        let mut by_owner: HashMap<(String, String, String), Vec<usize>> = HashMap::new();
        let mut names = UsedNames::new();
        for i in 0..pods.len() {
            let Some(summary) = pods.summary(i) else {
                continue;
            };
            let ns = summary.namespace_or_default();
            if let Some(r) = &summary.owner {
                by_owner
                    .entry((r.kind.to_string(), ns.to_string(), r.name.to_string()))
                    .or_default()
                    .push(i);
            }
            names.reserve(ns, &summary.name);
        }
        PodIndex { by_owner, names }
    }

    /// Indices of the pods indexed under `owner`'s kind, namespace and
    /// name (the callers check the uid).
    fn indexed(&self, owner: &Owner<'_>) -> impl Iterator<Item = usize> + '_ {
        self.by_owner
            .get(&(
                owner.kind.as_str().to_string(),
                owner.namespace.to_string(),
                owner.name.to_string(),
            ))
            .into_iter()
            .flatten()
            .copied()
    }

    /// How many of the pods `owner` controls are active (counted as its
    /// replicas), read from their summaries.
    fn active_owned(&self, pods: &PodList, owner: &Owner<'_>) -> usize {
        self.indexed(owner)
            .filter_map(|i| pods.summary(i))
            .filter(|f| f.active && owner.owns_summary(f))
            .count()
    }

    /// The pods `owner` controls.
    fn owned<'p>(&self, pods: &'p PodList, owner: &Owner<'_>) -> Vec<&'p Pod> {
        self.indexed(owner)
            .map(|i| &pods[i].object)
            .filter(|p| owner.owns(&p.metadata))
            .collect()
    }

    /// A free name `base` + suffix in `namespace`, reserved on return.
    fn fresh_name(&mut self, namespace: &str, base: &str) -> String {
        self.names.fresh(namespace, base)
    }

    fn taken(&self, namespace: &str, name: &str) -> bool {
        self.names.contains(namespace, name)
    }

    fn reserve(&mut self, namespace: &str, name: &str) {
        self.names.reserve(namespace, name);
    }
}

/// A new pod from a template, as a controller creates it.
fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    name: String,
    generate_name: Option<String>,
    owner: OwnerReference,
    extra_labels: &[(&str, String)],
) -> Pod {
    let tmeta = template.metadata.clone().unwrap_or_default();
    let mut labels = tmeta.labels.unwrap_or_default();
    for (k, v) in extra_labels {
        labels.insert((*k).to_string(), v.clone());
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            generate_name,
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            annotations: tmeta.annotations,
            owner_references: Some(vec![owner]),
            finalizers: tmeta.finalizers,
            ..Default::default()
        },
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    }
}

fn replicas(r: Option<i32>) -> usize {
    usize::try_from(r.unwrap_or(1)).unwrap_or(0)
}

/// Most pods [`expand_workloads`] creates in one world: a typo such as
/// `replicas: 1000000000` should not exhaust memory (Kubernetes' published
/// limit is 150,000 pods per cluster).
pub const MAX_EXPANDED_PODS: usize = 1_000_000;

/// The pods created so far, up to a limit.
struct NewPods {
    pods: Vec<Sourced<Pod>>,
    limit: usize,
    truncated: bool,
    /// Most replicas created per workload: one more than all the nodes'
    /// `pods` allocatable together, so the last one created can never be
    /// bound (see [`CountedReplicas`]).
    per_workload: usize,
    /// Replicas counted instead of created.
    counted: Vec<CountedReplicas>,
    /// Workloads whose replicas past `per_workload` were left out (not
    /// provably identical), in words.
    capped: Vec<String>,
}

/// Replicas of one workload always created, whatever the nodes hold:
/// worlds of every day (and nodes written without `status.allocatable`)
/// expand exactly as the controllers would.
pub const ALWAYS_CREATED: usize = 1_000;

/// The most replicas of one workload worth creating: one more than all
/// the nodes' `pods` allocatable together (the last one created can then
/// never be bound), and at least [`ALWAYS_CREATED`].
fn per_workload_limit(inv: &Inventory) -> usize {
    let slots: i64 = inv
        .nodes
        .iter()
        .filter_map(|n| n.object.status.as_ref()?.allocatable.as_ref()?.get("pods"))
        .filter_map(|q| crate::quantity::Quantity::parse(&q.0).ok())
        .map(|q| q.value().max(0))
        .fold(0i64, i64::saturating_add);
    usize::try_from(slots)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .max(ALWAYS_CREATED)
}

/// Whether every pod from `template` is identical but for its name: no
/// generic ephemeral volume (its claim is named after the pod) and no
/// ResourceClaimTemplate (a claim per pod).
fn identical_replicas(template: &PodTemplateSpec) -> bool {
    let Some(spec) = template.spec.as_ref() else {
        return true;
    };
    let ephemeral = spec.volumes.iter().flatten().any(|v| v.ephemeral.is_some());
    let claim_templates = spec
        .resource_claims
        .iter()
        .flatten()
        .any(|c| c.resource_claim_template_name.is_some());
    !ephemeral && !claim_templates
}

/// Creates `missing` replicas of a replicated controller (ReplicaSet,
/// ReplicationController) named from `generateName: <owner>-`: at most
/// [`NewPods::per_workload`], the rest counted ([`CountedReplicas`]) — or,
/// when the template makes each pod different, left out with a warning.
fn add_replicas(
    owner: &Owner<'_>,
    template: &PodTemplateSpec,
    missing: usize,
    origin: &crate::inventory::Origin,
    index: &mut PodIndex,
    new_pods: &mut NewPods,
) {
    let base = crate::naming::generate_name_base(owner.name);
    let create = missing.min(new_pods.per_workload);
    let mut last = None;
    for _ in 0..create {
        if new_pods.full() {
            return;
        }
        let name = index.fresh_name(owner.namespace, &base);
        last = Some(name.clone());
        new_pods.push(Sourced {
            object: replica_set::replicated_pod(owner, template, name),
            origin: origin.clone(),
        });
    }
    let rest = missing - create;
    if rest == 0 {
        return;
    }
    match last {
        Some(pod) if identical_replicas(template) => new_pods.counted.push(CountedReplicas {
            namespace: owner.namespace.to_string(),
            pod,
            count: rest as u64,
        }),
        _ => new_pods.capped.push(format!(
            "{}/{}/{}: {} replicas are not created: {} were, more than the nodes hold, and its pods differ (a generic ephemeral volume or a ResourceClaimTemplate), so the rest cannot be counted as one",
            owner.kind,
            owner.namespace,
            owner.name,
            rest,
            new_pods.per_workload
        )),
    }
}

impl NewPods {
    /// Whether the limit is reached (and remembers that replicas were dropped).
    fn full(&mut self) -> bool {
        if self.pods.len() >= self.limit {
            self.truncated = true;
        }
        self.truncated
    }

    fn push(&mut self, pod: Sourced<Pod>) {
        self.pods.push(pod);
    }

    /// How many of `want` pods of `owner` (whose pods differ, so are not
    /// counted) to create: at most [`NewPods::per_workload`]; the rest are
    /// left out with a warning.
    fn capped_count(&mut self, owner: &Owner<'_>, want: usize) -> usize {
        if want > self.per_workload {
            self.capped.push(format!(
                "{}/{}/{}: only the first {} of {want} replicas are created: the nodes hold fewer pods",
                owner.kind,
                owner.namespace,
                owner.name,
                self.per_workload
            ));
        }
        want.min(self.per_workload)
    }
}

/// Adds the pods (and, for Deployments without one, the ReplicaSet) that the
/// workload controllers would create for missing replicas, then applies
/// admission defaults to every pod that comes from a manifest.
///
/// Idempotent: running it twice adds nothing the second time, since the
/// generated pods are found through their owner references. At most
/// [`MAX_EXPANDED_PODS`] pods are added (with a warning when replicas are dropped).
/// Adds the pods (and, for Deployments without one, the ReplicaSet) that the
/// workload controllers would create for missing replicas, then applies
/// admission defaults to every pod that comes from a manifest.
///
/// Idempotent: running it twice adds nothing the second time, since the
/// generated pods are found through their owner references. At most
/// [`MAX_EXPANDED_PODS`] pods are added (with a warning when replicas are dropped).
pub fn expand_workloads(inv: &mut Inventory) {
    expand_workloads_up_to(inv, MAX_EXPANDED_PODS);
}

/// [`expand_workloads`] with a smaller limit on new pods (fuzzing, previews).
pub fn expand_workloads_up_to(inv: &mut Inventory, max_new_pods: usize) {
    let mut index = PodIndex::new(&inv.pods);
    let mut new_pods = NewPods {
        pods: Vec::new(),
        limit: max_new_pods,
        truncated: false,
        per_workload: per_workload_limit(inv),
        counted: Vec::new(),
        capped: Vec::new(),
    };
    // ReplicaSets a Deployment of the world controls: expanded through it.
    let mut handled_rs: HashSet<(String, String)> = HashSet::new();
    let new_replica_sets = deployment::expand(inv, &mut index, &mut new_pods, &mut handled_rs);
    replica_set::expand(inv, &mut index, &mut new_pods, &handled_rs);
    stateful_set::expand(inv, &mut index, &mut new_pods);
    daemon_set::expand(inv, &mut index, &mut new_pods);
    job::expand(inv, &mut index, &mut new_pods);
    cron_job::expand(inv);
    let generated = new_pods.pods.len();
    if new_pods.truncated {
        inv.warnings.push(format!(
            "workload expansion stopped after {generated} new pods (the limit); some replicas were not created"
        ));
    }
    inv.warnings.append(&mut new_pods.capped);
    let counted: u64 = new_pods.counted.iter().map(|c| c.count).sum();
    if counted > 0 {
        inv.notices.push(format!(
            "{counted} replica(s) counted, not created: each is identical to a replica created before it that can never be bound"
        ));
    }
    inv.counted_replicas.append(&mut new_pods.counted);
    inv.replica_sets.extend(new_replica_sets);
    let first_new = inv.pods.len();
    inv.pods.extend(new_pods.pods);
    let admission = Admission::for_inventory(inv);
    let mut warnings = Vec::new();
    // By index: only the pods admitted are changed (a packed one unpacked).
    for i in 0..inv.pods.len() {
        if i >= first_new || inv.pods.summary(i).is_some_and(|f| f.manifest) {
            if let Some(pod) = inv.pods.get_mut(i) {
                admission.admit(&mut pod.object, &mut warnings);
            }
        }
    }
    inv.warnings.extend(warnings);
    if generated > 0 {
        inv.notices.push(format!(
            "{generated} pod(s) added for missing workload replicas"
        ));
    }
}
