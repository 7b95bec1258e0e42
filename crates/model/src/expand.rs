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
//! Names follow the controllers' schemes, deterministically: see [`crate::naming`].

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolumeClaimVolumeSource, Pod, PodAffinityTerm, PodSpec,
    PodTemplateSpec, Taint, Toleration, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelectorRequirement, ObjectMeta, OwnerReference,
};

use crate::inventory::{Inventory, Origin, Sourced};

use crate::naming::UsedNames;
pub use crate::naming::{name_suffix, pod_template_hash, synthetic_uid, NAME_ALPHABET};

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

fn is_active(pod: &Pod) -> bool {
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
    api_version: &'static str,
    kind: &'static str,
    namespace: &'a str,
    name: &'a str,
    uid: Option<&'a str>,
}

impl Owner<'_> {
    fn new<'a>(api_version: &'static str, kind: &'static str, meta: &'a ObjectMeta) -> Owner<'a> {
        Owner {
            api_version,
            kind,
            namespace: meta.namespace.as_deref().unwrap_or("default"),
            name: meta.name.as_deref().unwrap_or(""),
            uid: meta.uid.as_deref().filter(|u| !u.is_empty()),
        }
    }

    fn uid(&self) -> String {
        self.uid
            .map(str::to_string)
            .unwrap_or_else(|| synthetic_uid(self.kind, self.namespace, self.name))
    }

    fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_string(),
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            uid: self.uid(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn owns(&self, meta: &ObjectMeta) -> bool {
        meta.namespace.as_deref().unwrap_or("default") == self.namespace
            && controller_ref(meta).is_some_and(|r| {
                r.kind == self.kind
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
    fn new(pods: &[Sourced<Pod>]) -> Self {
        let mut by_owner: HashMap<(String, String, String), Vec<usize>> = HashMap::new();
        let mut names = UsedNames::new();
        for (i, p) in pods.iter().enumerate() {
            let ns = p
                .object
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string());
            if let Some(r) = controller_ref(&p.object.metadata) {
                by_owner
                    .entry((r.kind.clone(), ns.clone(), r.name.clone()))
                    .or_default()
                    .push(i);
            }
            names.reserve(&ns, p.object.metadata.name.as_deref().unwrap_or_default());
        }
        PodIndex { by_owner, names }
    }

    /// Indices of the pods `owner` controls.
    fn owned<'p>(&self, pods: &'p [Sourced<Pod>], owner: &Owner<'_>) -> Vec<&'p Pod> {
        self.by_owner
            .get(&(
                owner.kind.to_string(),
                owner.namespace.to_string(),
                owner.name.to_string(),
            ))
            .into_iter()
            .flatten()
            .map(|&i| &pods[i].object)
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
}

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
    };
    let mut new_replica_sets: Vec<Sourced<ReplicaSet>> = Vec::new();
    // ReplicaSets a Deployment of the world controls: expanded through it.
    let mut handled_rs: HashSet<(String, String)> = HashSet::new();

    for d in &inv.deployments {
        let Some(spec) = d.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new("apps/v1", "Deployment", &d.object.metadata);
        let want = replicas(spec.replicas);
        let owned_rs: Vec<&Sourced<ReplicaSet>> = inv
            .replica_sets
            .iter()
            .filter(|rs| owner.owns(&rs.object.metadata))
            .collect();
        for rs in &owned_rs {
            handled_rs.insert((
                rs.object.metadata.namespace.clone().unwrap_or_default(),
                rs.object.metadata.name.clone().unwrap_or_default(),
            ));
        }
        if let Some(newest) = owned_rs.iter().max_by_key(|rs| {
            rs.object
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0)
        }) {
            let active: usize = owned_rs
                .iter()
                .map(|rs| {
                    let o = Owner::new("apps/v1", "ReplicaSet", &rs.object.metadata);
                    index
                        .owned(&inv.pods, &o)
                        .into_iter()
                        .filter(|p| is_active(p))
                        .count()
                })
                .sum();
            let rs_owner = Owner::new("apps/v1", "ReplicaSet", &newest.object.metadata);
            let template = newest
                .object
                .spec
                .as_ref()
                .and_then(|s| s.template.clone())
                .unwrap_or_else(|| spec.template.clone());
            for _ in active..want {
                if new_pods.full() {
                    break;
                }
                let base = format!("{}-", rs_owner.name);
                let name = index.fresh_name(rs_owner.namespace, &base);
                let pod = pod_from_template(
                    &template,
                    rs_owner.namespace,
                    name,
                    Some(base),
                    rs_owner.reference(),
                    &[],
                );
                new_pods.push(Sourced {
                    object: pod,
                    origin: d.origin.clone(),
                });
            }
            continue;
        }
        // No ReplicaSet yet: the Deployment controller creates `name-<hash>`.
        let hash = pod_template_hash(&spec.template);
        let rs_name = format!("{}-{hash}", owner.name);
        let mut template = spec.template.clone();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert("pod-template-hash".to_string(), hash.clone());
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert("pod-template-hash".to_string(), hash.clone());
        let rs_labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
        let rs_meta = ObjectMeta {
            name: Some(rs_name.clone()),
            namespace: Some(owner.namespace.to_string()),
            labels: rs_labels,
            annotations: Some(BTreeMap::from([(
                "deployment.kubernetes.io/revision".to_string(),
                "1".to_string(),
            )])),
            owner_references: Some(vec![owner.reference()]),
            ..Default::default()
        };
        let rs_owner = Owner::new("apps/v1", "ReplicaSet", &rs_meta);
        let base = format!("{rs_name}-");
        for _ in 0..want {
            if new_pods.full() {
                break;
            }
            let name = index.fresh_name(owner.namespace, &base);
            let pod = pod_from_template(
                &template,
                owner.namespace,
                name,
                Some(base.clone()),
                rs_owner.reference(),
                &[],
            );
            new_pods.push(Sourced {
                object: pod,
                origin: d.origin.clone(),
            });
        }
        handled_rs.insert((owner.namespace.to_string(), rs_name.clone()));
        new_replica_sets.push(Sourced {
            object: ReplicaSet {
                metadata: rs_meta,
                spec: Some(ReplicaSetSpec {
                    replicas: Some(i32::try_from(want).unwrap_or(i32::MAX)),
                    selector,
                    template: Some(template),
                    ..Default::default()
                }),
                status: None,
            },
            origin: d.origin.clone(),
        });
    }

    for rs in &inv.replica_sets {
        let key = (
            rs.object.metadata.namespace.clone().unwrap_or_default(),
            rs.object.metadata.name.clone().unwrap_or_default(),
        );
        if handled_rs.contains(&key) {
            continue;
        }
        let Some(spec) = rs.object.spec.as_ref() else {
            continue;
        };
        let Some(template) = spec.template.as_ref() else {
            continue;
        };
        let owner = Owner::new("apps/v1", "ReplicaSet", &rs.object.metadata);
        expand_replicated(
            &owner,
            template,
            replicas(spec.replicas),
            &rs.origin,
            inv,
            &mut index,
            &mut new_pods,
        );
    }

    for rc in &inv.replication_controllers {
        let Some(spec) = rc.object.spec.as_ref() else {
            continue;
        };
        let Some(template) = spec.template.as_ref() else {
            continue;
        };
        let owner = Owner::new("v1", "ReplicationController", &rc.object.metadata);
        expand_replicated(
            &owner,
            template,
            replicas(spec.replicas),
            &rc.origin,
            inv,
            &mut index,
            &mut new_pods,
        );
    }

    for sts in &inv.stateful_sets {
        let Some(spec) = sts.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new("apps/v1", "StatefulSet", &sts.object.metadata);
        let revision = sts
            .object
            .status
            .as_ref()
            .and_then(|s| {
                s.update_revision
                    .clone()
                    .or_else(|| s.current_revision.clone())
            })
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| format!("{}-{}", owner.name, pod_template_hash(&spec.template)));
        let start = spec
            .ordinals
            .as_ref()
            .and_then(|o| o.start)
            .unwrap_or(0)
            .max(0);
        let start = usize::try_from(start).unwrap_or(0);
        for ordinal in start..start + replicas(spec.replicas) {
            if new_pods.full() {
                break;
            }
            let name = format!("{}-{ordinal}", owner.name);
            if index.taken(owner.namespace, &name) {
                continue;
            }
            index.reserve(owner.namespace, &name);
            let mut pod = pod_from_template(
                &spec.template,
                owner.namespace,
                name.clone(),
                Some(format!("{}-", owner.name)),
                owner.reference(),
                &[
                    ("controller-revision-hash", revision.clone()),
                    ("statefulset.kubernetes.io/pod-name", name.clone()),
                    ("apps.kubernetes.io/pod-index", ordinal.to_string()),
                ],
            );
            if let Some(ps) = pod.spec.as_mut() {
                ps.hostname = Some(name.clone());
                if let Some(svc) = spec.service_name.as_ref().filter(|s| !s.is_empty()) {
                    ps.subdomain = Some(svc.clone());
                }
                for claim in spec.volume_claim_templates.iter().flatten() {
                    let claim_name = claim.metadata.name.clone().unwrap_or_default();
                    let volumes = ps.volumes.get_or_insert_with(Vec::new);
                    if !volumes.iter().any(|v| v.name == claim_name) {
                        volumes.push(Volume {
                            name: claim_name.clone(),
                            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                                claim_name: format!("{claim_name}-{name}"),
                                read_only: None,
                            }),
                            ..Default::default()
                        });
                    }
                }
            }
            new_pods.push(Sourced {
                object: pod,
                origin: sts.origin.clone(),
            });
        }
    }

    for ds in &inv.daemon_sets {
        let Some(spec) = ds.object.spec.as_ref() else {
            continue;
        };
        let owner = Owner::new("apps/v1", "DaemonSet", &ds.object.metadata);
        let owned = index.owned(&inv.pods, &owner);
        let covered: HashSet<String> = owned
            .iter()
            .filter(|p| is_active(p))
            .filter_map(|p| daemon_pod_node(p))
            .collect();
        let revision = owned
            .iter()
            .find_map(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("controller-revision-hash"))
                    .cloned()
            })
            .unwrap_or_else(|| pod_template_hash(&spec.template));
        let generation = ds
            .object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deprecated.daemonset.template.generation").cloned())
            .or_else(|| ds.object.metadata.generation.map(|g| g.to_string()))
            .unwrap_or_else(|| "1".to_string());
        let mut template = spec.template.clone();
        add_daemon_tolerations(template.spec.get_or_insert_with(Default::default));
        let pod_spec = template.spec.clone().unwrap_or_default();
        for node in &inv.nodes {
            if new_pods.full() {
                break;
            }
            let node_name = node.object.metadata.name.clone().unwrap_or_default();
            if covered.contains(&node_name) || !daemon_should_run(&pod_spec, &node.object) {
                continue;
            }
            let base = format!("{}-", owner.name);
            let name = index.fresh_name(owner.namespace, &base);
            let mut pod = pod_from_template(
                &template,
                owner.namespace,
                name,
                Some(base),
                owner.reference(),
                &[
                    ("controller-revision-hash", revision.clone()),
                    ("pod-template-generation", generation.clone()),
                ],
            );
            if let Some(ps) = pod.spec.as_mut() {
                pin_to_node(ps, &node_name);
            }
            new_pods.push(Sourced {
                object: pod,
                origin: ds.origin.clone(),
            });
        }
    }

    for job in &inv.jobs {
        let Some(spec) = job.object.spec.as_ref() else {
            continue;
        };
        if spec.suspend == Some(true) {
            continue;
        }
        let owner = Owner::new("batch/v1", "Job", &job.object.metadata);
        let uid = owner.uid();
        let owned = index.owned(&inv.pods, &owner);
        let active: Vec<&Pod> = owned.into_iter().filter(|p| is_active(p)).collect();
        let succeeded = job
            .object
            .status
            .as_ref()
            .and_then(|s| s.succeeded)
            .unwrap_or(0)
            .max(0);
        let succeeded = usize::try_from(succeeded).unwrap_or(0);
        // Job defaulting: both unset means one pod to completion.
        let (parallelism, completions) = match (spec.parallelism, spec.completions) {
            (None, None) => (1, Some(1)),
            (p, c) => (
                usize::try_from(p.unwrap_or(1)).unwrap_or(0),
                c.map(|c| usize::try_from(c).unwrap_or(0)),
            ),
        };
        let want_active = match completions {
            Some(c) => parallelism.min(c.saturating_sub(succeeded)),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let busy_indexes: HashSet<String> = active
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("batch.kubernetes.io/job-completion-index"))
                    .cloned()
            })
            .collect();
        let mut next_index = 0usize;
        for _ in active.len()..want_active {
            if new_pods.full() {
                break;
            }
            let mut labels = vec![
                ("batch.kubernetes.io/controller-uid", uid.clone()),
                ("batch.kubernetes.io/job-name", owner.name.to_string()),
                ("controller-uid", uid.clone()),
                ("job-name", owner.name.to_string()),
            ];
            let mut base = format!("{}-", owner.name);
            let mut completion_index = None;
            if indexed {
                while busy_indexes.contains(&next_index.to_string()) {
                    next_index += 1;
                }
                labels.push((
                    "batch.kubernetes.io/job-completion-index",
                    next_index.to_string(),
                ));
                base = format!("{}-{next_index}-", owner.name);
                completion_index = Some(next_index);
                next_index += 1;
            }
            let name = index.fresh_name(owner.namespace, &base);
            let mut pod = pod_from_template(
                &spec.template,
                owner.namespace,
                name,
                Some(base),
                owner.reference(),
                &[],
            );
            // Template labels win over the ones the Job API adds (they are the same on real Jobs).
            let pod_labels = pod.metadata.labels.get_or_insert_with(Default::default);
            for (k, v) in labels {
                pod_labels.entry(k.to_string()).or_insert(v);
            }
            if let Some(i) = completion_index {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(
                        "batch.kubernetes.io/job-completion-index".to_string(),
                        i.to_string(),
                    );
            }
            new_pods.push(Sourced {
                object: pod,
                origin: job.origin.clone(),
            });
        }
    }

    for cj in &inv.cron_jobs {
        inv.notices.push(format!(
            "CronJob/{}/{}: not expanded (its Jobs are created on a schedule)",
            cj.object.metadata.namespace.as_deref().unwrap_or("default"),
            cj.object.metadata.name.as_deref().unwrap_or("")
        ));
    }
    let generated = new_pods.pods.len();
    if new_pods.truncated {
        inv.warnings.push(format!(
            "workload expansion stopped after {generated} new pods (the limit); some replicas were not created"
        ));
    }
    inv.replica_sets.extend(new_replica_sets);
    let first_new = inv.pods.len();
    inv.pods.extend(new_pods.pods);
    let admission = Admission::new(inv);
    let mut warnings = Vec::new();
    for (i, pod) in inv.pods.iter_mut().enumerate() {
        let has_status = pod.object.status.is_some();
        if i >= first_new || is_manifest(&pod.object.metadata, has_status) {
            admission.admit(&mut pod.object, &mut warnings);
        }
    }
    inv.warnings.extend(warnings);
    if generated > 0 {
        inv.notices.push(format!(
            "{generated} pod(s) added for missing workload replicas"
        ));
    }
}

fn expand_replicated(
    owner: &Owner<'_>,
    template: &PodTemplateSpec,
    want: usize,
    origin: &Origin,
    inv: &Inventory,
    index: &mut PodIndex,
    new_pods: &mut NewPods,
) {
    let active = index
        .owned(&inv.pods, owner)
        .into_iter()
        .filter(|p| is_active(p))
        .count();
    let base = format!("{}-", owner.name);
    for _ in active..want {
        if new_pods.full() {
            break;
        }
        let name = index.fresh_name(owner.namespace, &base);
        let pod = pod_from_template(
            template,
            owner.namespace,
            name,
            Some(base.clone()),
            owner.reference(),
            &[],
        );
        new_pods.push(Sourced {
            object: pod,
            origin: origin.clone(),
        });
    }
}

/// The node a DaemonSet pod is for: its nodeName, or the node its
/// `matchFields metadata.name` affinity pins it to.
fn daemon_pod_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(n.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().find_map(|t| {
        t.match_fields.iter().flatten().find_map(|r| {
            (r.key == "metadata.name" && r.operator == "In")
                .then(|| r.values.as_ref().and_then(|v| v.first().cloned()))
                .flatten()
        })
    })
}

/// The tolerations the DaemonSet controller adds to its pods
/// (`AddOrUpdateDaemonPodTolerations`).
fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut add = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        add.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in add {
        let present = tolerations.iter().any(|t| {
            t.key.as_deref() == Some(key)
                && t.effect.as_deref() == Some(effect)
                && t.operator.as_deref() == Some("Exists")
        });
        if !present {
            tolerations.push(Toleration {
                key: Some(key.to_string()),
                operator: Some("Exists".to_string()),
                effect: Some(effect.to_string()),
                ..Default::default()
            });
        }
    }
}

/// Replaces the pod's required node affinity with `metadata.name In [node]`,
/// as the DaemonSet controller does (`ReplaceDaemonSetPodNodeNameNodeAffinity`).
fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let term = NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".to_string(),
            operator: "In".to_string(),
            values: Some(vec![node.to_string()]),
        }]),
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    match na
        .required_during_scheduling_ignored_during_execution
        .as_mut()
    {
        Some(sel) => sel.node_selector_terms = vec![term],
        None => {
            na.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
                node_selector_terms: vec![term],
            })
        }
    }
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (value, values.first()) else {
                return false;
            };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) => {
                    if req.operator == "Gt" {
                        v > b
                    } else {
                        v < b
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.as_ref();
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.and_then(|l| l.get(&r.key)).map(String::as_str)))
        && fields.iter().all(|r| {
            let value = (r.key == "metadata.name")
                .then_some(node.metadata.name.as_deref())
                .flatten();
            requirement_matches(r, value)
        })
}

fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if effect != taint.effect {
            return false;
        }
    }
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("Equal");
    if key.is_empty() {
        return op == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match op {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// The DaemonSet controller's `nodeShouldRunDaemonPod`: node name, required
/// node affinity and nodeSelector, and NoSchedule/NoExecute taints.
fn daemon_should_run(spec: &PodSpec, node: &Node) -> bool {
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        if Some(n) != node.metadata.name.as_deref() {
            return false;
        }
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    if let Some(sel) = spec.node_selector.as_ref() {
        if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return false;
        }
    }
    if let Some(req) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    {
        if !req
            .node_selector_terms
            .iter()
            .any(|t| term_matches(t, node))
        {
            return false;
        }
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|taint| tolerations.iter().any(|t| tolerates(t, taint)))
}

/// What a PriorityClass gives a pod.
#[derive(Clone)]
struct ClassInfo {
    value: i32,
    preemption_policy: String,
}

/// The API server's defaulting and admission plugins that change scheduling
/// inputs, with the world's PriorityClasses and RuntimeClasses.
struct Admission {
    classes: HashMap<String, ClassInfo>,
    global_default: Option<(String, ClassInfo)>,
    runtime: HashMap<String, k8s_openapi::api::node::v1::RuntimeClass>,
}

impl Admission {
    fn new(inv: &Inventory) -> Self {
        let mut classes = HashMap::new();
        classes.insert(
            "system-cluster-critical".to_string(),
            ClassInfo {
                value: SYSTEM_CLUSTER_CRITICAL,
                preemption_policy: "PreemptLowerPriority".to_string(),
            },
        );
        classes.insert(
            "system-node-critical".to_string(),
            ClassInfo {
                value: SYSTEM_NODE_CRITICAL,
                preemption_policy: "PreemptLowerPriority".to_string(),
            },
        );
        let mut global_default: Option<(String, ClassInfo)> = None;
        for pc in &inv.priority_classes {
            let name = pc.object.metadata.name.clone().unwrap_or_default();
            let info = ClassInfo {
                value: pc.object.value.unwrap_or(0),
                preemption_policy: pc
                    .object
                    .preemption_policy
                    .clone()
                    .unwrap_or_else(|| "PreemptLowerPriority".to_string()),
            };
            // With several global defaults (a race in a real cluster) the lowest value wins.
            if pc.object.global_default == Some(true)
                && global_default
                    .as_ref()
                    .is_none_or(|(_, g)| g.value > info.value)
            {
                global_default = Some((name.clone(), info.clone()));
            }
            classes.insert(name, info);
        }
        let runtime = inv
            .runtime_classes
            .iter()
            .map(|rc| {
                (
                    rc.object.metadata.name.clone().unwrap_or_default(),
                    rc.object.clone(),
                )
            })
            .collect();
        Admission {
            classes,
            global_default,
            runtime,
        }
    }

    fn admit(&self, pod: &mut Pod, warnings: &mut Vec<String>) {
        let id = format!(
            "Pod/{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or("")
        );
        if pod.metadata.namespace.as_deref().unwrap_or("").is_empty() {
            pod.metadata.namespace = Some("default".to_string());
        }
        let spec = pod.spec.get_or_insert_with(Default::default);
        if spec.scheduler_name.as_deref().unwrap_or("").is_empty() {
            spec.scheduler_name = Some("default-scheduler".to_string());
        }
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            default_container(c);
        }
        // With host networking every container port is a host port: the
        // API server defaults hostPort to containerPort (SetDefaults_Pod).
        if spec.host_network == Some(true) {
            for c in spec
                .containers
                .iter_mut()
                .chain(spec.init_containers.iter_mut().flatten())
            {
                for port in c.ports.iter_mut().flatten() {
                    if port.host_port.unwrap_or(0) == 0 {
                        port.host_port = Some(port.container_port);
                    }
                }
            }
        }
        if let Some(r) = spec.resources.as_mut() {
            if let Some(limits) = r.limits.as_ref() {
                let requests = r.requests.get_or_insert_with(Default::default);
                for (k, v) in limits {
                    requests.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }

        // Priority admission plugin.
        let class_name = spec.priority_class_name.clone().filter(|n| !n.is_empty());
        let resolved = match class_name {
            Some(name) => match self.classes.get(&name) {
                Some(info) => Some(info.clone()),
                None => {
                    warnings.push(format!(
                        "{id}: no PriorityClass with name {name} was found; the API server would reject the pod, podplace uses priority 0"
                    ));
                    None
                }
            },
            None => self.global_default.as_ref().map(|(name, info)| {
                spec.priority_class_name = Some(name.clone());
                info.clone()
            }),
        };
        let (priority, policy) = resolved
            .map(|c| (c.value, c.preemption_policy))
            .unwrap_or((0, "PreemptLowerPriority".to_string()));
        if let Some(given) = spec.priority {
            if given != priority {
                warnings.push(format!(
                    "{id}: the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                ));
            }
        }
        spec.priority = Some(priority);
        spec.preemption_policy = Some(policy);

        // RuntimeClass admission: overhead and scheduling constraints.
        if let Some(rc_name) = spec.runtime_class_name.clone().filter(|n| !n.is_empty()) {
            match self.runtime.get(&rc_name) {
                Some(rc) => {
                    if let Some(fixed) = rc.overhead.as_ref().and_then(|o| o.pod_fixed.clone()) {
                        spec.overhead = Some(fixed);
                    }
                    if let Some(sched) = rc.scheduling.as_ref() {
                        for (k, v) in sched.node_selector.iter().flatten() {
                            let sel = spec.node_selector.get_or_insert_with(Default::default);
                            match sel.get(k) {
                                Some(existing) if existing != v => warnings.push(format!(
                                    "{id}: nodeSelector {k}={existing} conflicts with RuntimeClass {rc_name}'s {k}={v}; the API server would reject the pod"
                                )),
                                _ => {
                                    sel.insert(k.clone(), v.clone());
                                }
                            }
                        }
                        for t in sched.tolerations.iter().flatten() {
                            let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
                            if !tolerations.contains(t) {
                                tolerations.push(t.clone());
                            }
                        }
                    }
                }
                None => warnings.push(format!(
                    "{id}: RuntimeClass {rc_name} was not loaded; its pod overhead is not counted"
                )),
            }
        }

        // The API server merges matchLabelKeys/mismatchLabelKeys of pod
        // (anti-)affinity terms into their selectors on create;
        // kube-scheduler reads only the merged selector.
        merge_label_keys(spec, pod.metadata.labels.as_ref());

        // DefaultTolerationSeconds admission plugin.
        let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = tolerations.iter().any(|t| {
                let k = t.key.as_deref().unwrap_or("");
                let e = t.effect.as_deref().unwrap_or("");
                (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
            });
            if !tolerated {
                tolerations.push(Toleration {
                    key: Some(key.to_string()),
                    operator: Some("Exists".to_string()),
                    effect: Some("NoExecute".to_string()),
                    toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                    value: None,
                });
            }
        }
    }
}

/// Adds `key In [value]` for each `matchLabelKeys` key and `key NotIn
/// [value]` for each `mismatchLabelKeys` key the pod carries to the label
/// selector of every pod affinity and anti-affinity term, as the API server
/// does when a pod is created. Terms with a nil selector (which match
/// nothing) are left alone.
fn merge_label_keys(spec: &mut PodSpec, labels: Option<&BTreeMap<String, String>>) {
    let Some(affinity) = spec.affinity.as_mut() else {
        return;
    };
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    let merge = |term: &mut PodAffinityTerm| {
        let Some(selector) = term.label_selector.as_mut() else {
            return;
        };
        for (keys, operator) in [
            (&term.match_label_keys, "In"),
            (&term.mismatch_label_keys, "NotIn"),
        ] {
            for key in keys.iter().flatten() {
                if let Some(value) = labels.get(key) {
                    selector
                        .match_expressions
                        .get_or_insert_with(Vec::new)
                        .push(LabelSelectorRequirement {
                            key: key.clone(),
                            operator: operator.to_string(),
                            values: Some(vec![value.clone()]),
                        });
                }
            }
        }
    };
    let mut terms: Vec<&mut PodAffinityTerm> = Vec::new();
    if let Some(a) = affinity.pod_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten()
                .map(|w| &mut w.pod_affinity_term),
        );
    }
    if let Some(a) = affinity.pod_anti_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .flatten()
                .map(|w| &mut w.pod_affinity_term),
        );
    }
    for term in terms {
        merge(term);
    }
}

/// Container defaulting: port protocol TCP, requests from limits.
fn default_container(c: &mut Container) {
    for p in c.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".to_string());
        }
    }
    if let Some(r) = c.resources.as_mut() {
        if let Some(limits) = r.limits.as_ref() {
            let requests = r.requests.get_or_insert_with(Default::default);
            for (k, v) in limits {
                requests.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}
