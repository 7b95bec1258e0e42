//! Building the state of a world and placing every waiting pod, one at a time in queue order, as
//! kube-scheduler would: PrioritySort orders the queue, each bind updates
//! the indexes, and pods that did not fit are retried after others bound
//! (the scheduler's unschedulable queue is flushed on cluster events).

use podplace_model::inventory::Inventory;
use thiserror::Error;

use crate::cache::SchedulerCache;
use crate::cycle::{schedule, schedule_choice, Outcome};
use crate::ids::{NodeId, PodId};
use crate::state::ClusterState;

/// Why a world could not be turned into a cluster.
#[derive(Debug, Error)]
pub enum BuildError {
    /// An object could not be compiled (a bad quantity or selector).
    #[error("{object}: {source}")]
    Compile {
        /// `Kind/namespace/name` of the object.
        object: String,
        /// What was wrong.
        source: podplace_model::objects::CompileError,
    },
    /// A storage object (PersistentVolume, claim, CSIStorageCapacity)
    /// could not be compiled.
    #[error("{0}")]
    Storage(#[from] podplace_model::storage::StorageError),
}

/// The scheduler name podplace plays.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// `Kind/namespace/name` (or `Kind/name`), as build errors name objects:
/// a caller building part of a state itself names its objects alike.
pub fn object_name(
    kind: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> String {
    qualified_name(
        kind,
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or(""),
    )
}

/// [`object_name`] from the parts, for an object no longer held whole (a
/// pod packed as it loaded).
fn qualified_name(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Builds the state of a world: nodes, namespaces, the objects default
/// spreading reads, and every pod (bound when it names a node). Returns the
/// state and the pods waiting to be scheduled, in load order.
pub fn build_state(inv: &Inventory) -> Result<(ClusterState, Vec<PodId>), BuildError> {
    let mut cluster = ClusterState::new();
    add_all_but_pods(&mut cluster, inv)?;
    let mut pending = Vec::new();
    for pod in &inv.pods {
        let id = cluster
            .add_api_pod(&pod.object)
            .map_err(|e| compile_error("Pod", &pod.object.metadata, e))?;
        note_pending(&cluster, id, &mut pending);
    }
    Ok((cluster, pending))
}

/// [`build_state`] for a caller that owns the objects: the pods compiled
/// as they were loaded ([`podplace_model::pod_list::PodList::pack_compiled`])
/// are taken from `inv` into the state instead of being decoded and
/// compiled again; the rest are compiled as [`build_state`] does.
pub fn build_state_taking(inv: &mut Inventory) -> Result<(ClusterState, Vec<PodId>), BuildError> {
    let mut cluster = match inv.pods.strings() {
        Some(strings) => ClusterState::with_strings(strings.clone()),
        None => ClusterState::new(),
    };
    add_all_but_pods(&mut cluster, inv)?;
    let mut pending = Vec::new();
    for i in 0..inv.pods.len() {
        let id = match inv.pods.take_compiled(i) {
            Some(Ok(pod)) => cluster.add_pod(pod),
            Some(Err(source)) => {
                let summary = inv.pods.summary(i).unwrap_or_default();
                return Err(BuildError::Compile {
                    object: qualified_name("Pod", summary.namespace.as_deref(), &summary.name),
                    source,
                });
            }
            None => {
                let pod = &inv.pods[i].object;
                cluster
                    .add_api_pod(pod)
                    .map_err(|e| compile_error("Pod", &pod.metadata, e))?
            }
        };
        note_pending(&cluster, id, &mut pending);
    }
    Ok((cluster, pending))
}

fn compile_error(
    kind: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    source: podplace_model::objects::CompileError,
) -> BuildError {
    BuildError::Compile {
        object: object_name(kind, meta),
        source,
    }
}

/// Adds `id` to `pending` when it waits to be scheduled.
fn note_pending(cluster: &ClusterState, id: PodId, pending: &mut Vec<PodId>) {
    if cluster
        .pod_entry(id)
        .is_some_and(|e| e.node.is_none() && !e.pod.finished)
    {
        pending.push(id);
    }
}

/// Every object of `inv` but its pods, into `cluster` (the engine adds
/// pods last, after nodes and storage).
fn add_all_but_pods(cluster: &mut ClusterState, inv: &Inventory) -> Result<(), BuildError> {
    for ns in &inv.namespaces {
        cluster.add_namespace(&ns.object);
    }
    for node in &inv.nodes {
        cluster
            .add_node(&node.object)
            .map_err(|e| compile_error("Node", &node.object.metadata, e))?;
    }
    for svc in &inv.services {
        cluster.add_service(&svc.object);
    }
    for rc in &inv.replication_controllers {
        cluster.add_replication_controller(&rc.object);
    }
    for rs in &inv.replica_sets {
        cluster
            .add_replica_set(&rs.object)
            .map_err(|e| compile_error("ReplicaSet", &rs.object.metadata, e))?;
    }
    for sts in &inv.stateful_sets {
        cluster
            .add_stateful_set(&sts.object)
            .map_err(|e| compile_error("StatefulSet", &sts.object.metadata, e))?;
    }
    cluster.load_storage(inv)?;
    Ok(())
}

/// Where one pod went.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The pod.
    pub pod: PodId,
    /// The node it was bound to, or `None` when it stays Pending.
    pub node: Option<NodeId>,
    /// The FailedScheduling message of its last attempt (empty when placed).
    pub message: String,
    /// The chosen node's total score (when placed).
    pub score: Option<i64>,
    /// The nodes that tied for the best score, the chosen one included.
    pub tied: Vec<NodeId>,
    /// The last scheduling cycle's full result (with
    /// [`PlaceOptions::keep_outcomes`]: every node's status and scores).
    pub outcome: Option<Outcome>,
    /// SchedulingGates' message when the pod is gated (`waiting for
    /// scheduling gates: [...]`): it was never tried and has no
    /// FailedScheduling message; `message` repeats this text.
    pub gated: Option<String>,
    /// What sampling (percentageOfNodesToScore) did in the attempt that
    /// placed the pod: the candidate set was `to_find` feasible nodes found
    /// from `start` (`None`: every feasible node was scored).
    pub sampled: Option<crate::cache::SampledSet>,
}

/// Options for [`place_all`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PlaceOptions {
    /// Seed for choosing among equally scored nodes.
    pub seed: u64,
    /// Keep each pod's full [`Outcome`] (scores of every node) in the result.
    pub keep_outcomes: bool,
}

/// Runs of identical replicas among a world's waiting pods: pods of one
/// controller that are identical but for their name (and uid and
/// creation time), with nothing made per pod (no generic ephemeral
/// volume, no resource claim). Such a pod, scheduled on the same cluster
/// state as an identical one that did not fit, does not fit either with
/// the same message: [`place_all_runs`] decides it in O(1) instead of
/// filtering every node again (`replicas: 2000000000`).
#[derive(Debug, Clone, Default)]
pub struct ReplicaRuns {
    run: rustc_hash::FxHashMap<PodId, u32>,
}

impl ReplicaRuns {
    /// The runs among the waiting pods of `inv`, built into `cluster`.
    pub fn of(inv: &Inventory, cluster: &ClusterState) -> ReplicaRuns {
        type Key<'a> = (&'a str, &'a str, &'a str, &'a str);
        let mut last: rustc_hash::FxHashMap<Key<'_>, (usize, u32)> =
            rustc_hash::FxHashMap::default();
        let mut runs = ReplicaRuns::default();
        let mut next = 0u32;
        for i in 0..inv.pods.len() {
            // Bound pods are passed over without decoding a packed one.
            if inv.pods.node_name(i).is_some() {
                continue;
            }
            let pod = &inv.pods[i].object;
            let Some(spec) = pod.spec.as_ref() else {
                continue;
            };
            if spec.node_name.is_some() || !nothing_per_pod(spec) {
                continue;
            }
            let meta = &pod.metadata;
            let Some(owner) = meta
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
            else {
                continue;
            };
            let ns = meta.namespace.as_deref().unwrap_or("default");
            let Some(id) = cluster.pod_id(ns, meta.name.as_deref().unwrap_or("")) else {
                continue;
            };
            let key = (
                ns,
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
            );
            let run = match last.get(&key) {
                Some(&(j, run)) if same_but_name(&inv.pods[j].object, pod) => run,
                _ => {
                    next += 1;
                    next
                }
            };
            last.insert(key, (i, run));
            runs.run.insert(id, run);
        }
        runs
    }
}

/// No generic ephemeral volume (a claim named after the pod) and no
/// resource claim (per pod, or reserved for pods by name).
fn nothing_per_pod(spec: &k8s_openapi::api::core::v1::PodSpec) -> bool {
    !spec.volumes.iter().flatten().any(|v| v.ephemeral.is_some())
        && spec.resource_claims.as_ref().is_none_or(Vec::is_empty)
}

/// Identical but for name, uid and creation time.
fn same_but_name(a: &k8s_openapi::api::core::v1::Pod, b: &k8s_openapi::api::core::v1::Pod) -> bool {
    let (ma, mb) = (&a.metadata, &b.metadata);
    ma.namespace == mb.namespace
        && ma.generate_name == mb.generate_name
        && ma.labels == mb.labels
        && ma.annotations == mb.annotations
        && ma.owner_references == mb.owner_references
        && ma.deletion_timestamp == mb.deletion_timestamp
        && ma.finalizers == mb.finalizers
        && a.spec == b.spec
        && a.status == b.status
}

/// Schedules every pending pod in PrioritySort order (higher priority first,
/// then arrival order), binding each as it is placed, and retries the pods
/// that did not fit while binds keep happening.
pub fn place_all(
    cluster: &mut ClusterState,
    cache: &mut SchedulerCache,
    pending: &[PodId],
    options: PlaceOptions,
) -> Vec<Placement> {
    place_all_runs(cluster, cache, pending, options, &ReplicaRuns::default())
}

/// [`place_all`], deciding a pod of a [`ReplicaRuns`] run in O(1) when an
/// identical pod did not fit and nothing was bound since: the cluster
/// state is the one that pod saw, so its verdict and message are this
/// pod's. (Not with [`PlaceOptions::keep_outcomes`], whose every
/// placement carries its own full result.)
pub fn place_all_runs(
    cluster: &mut ClusterState,
    cache: &mut SchedulerCache,
    pending: &[PodId],
    options: PlaceOptions,
    runs: &ReplicaRuns,
) -> Vec<Placement> {
    let mut queue: Vec<PodId> = pending.to_vec();
    queue.sort_by_key(|&id| std::cmp::Reverse(cluster.pod(id).priority));
    let mut results: Vec<Option<Placement>> = vec![None; cluster.pod_slots()];
    // Binds so far, and per run the bind count and message of its last
    // pod that did not fit.
    let mut binds = 0u64;
    let mut unfit: rustc_hash::FxHashMap<u32, (u64, String)> = rustc_hash::FxHashMap::default();
    loop {
        let mut bound_any = false;
        let mut still = Vec::new();
        for &id in &queue {
            let run = (!options.keep_outcomes)
                .then(|| runs.run.get(&id).copied())
                .flatten();
            if let Some((_, message)) = run
                .and_then(|r| unfit.get(&r))
                .filter(|(at, _)| *at == binds)
            {
                results[id.index()] = Some(Placement {
                    pod: id,
                    node: None,
                    message: message.clone(),
                    score: None,
                    tied: Vec::new(),
                    outcome: None,
                    gated: None,
                    sampled: None,
                });
                still.push(id);
                continue;
            }
            let scheduler = &*cluster.pod(id).scheduler_name;
            // Pods no profile serves are never scheduled (another
            // scheduler's, or a profile the configuration lacks).
            if cache.serving(scheduler).is_none() {
                let message = format!(
                    "not scheduled by {}: spec.schedulerName is {scheduler:?}",
                    cache.scheduler_names().join(", ")
                );
                results[id.index()] = Some(Placement {
                    pod: id,
                    node: None,
                    message,
                    score: None,
                    tied: Vec::new(),
                    outcome: None,
                    gated: None,
                    sampled: None,
                });
                continue;
            }
            let pod = cluster.pod(id).clone();
            if let Some(gated) = crate::plugins::scheduling_gates::pre_enqueue(&pod) {
                results[id.index()] = Some(Placement {
                    pod: id,
                    node: None,
                    message: gated.clone(),
                    score: None,
                    tied: Vec::new(),
                    outcome: None,
                    gated: Some(gated),
                    sampled: None,
                });
                continue;
            }
            let (node, message, score, tied, outcome) = if options.keep_outcomes {
                let outcome = schedule(cluster, cache, &pod, options.seed);
                let score = outcome.chosen.and_then(|chosen| {
                    outcome
                        .scores
                        .iter()
                        .find(|s| s.node == chosen)
                        .map(|s| s.total)
                });
                (
                    outcome.chosen,
                    outcome.message.clone(),
                    score,
                    outcome.best.clone(),
                    Some(outcome),
                )
            } else {
                match schedule_choice(cluster, cache, &pod, options.seed) {
                    Ok(choice) => (
                        Some(choice.node),
                        String::new(),
                        Some(choice.score),
                        choice.tied,
                        None,
                    ),
                    Err(outcome) => (None, outcome.message, None, Vec::new(), None),
                }
            };
            if let Some(node) = node {
                cluster.bind(id, node);
                bound_any = true;
                binds += 1;
            } else {
                if let Some(r) = run {
                    unfit.insert(r, (binds, message.clone()));
                }
                still.push(id);
            }
            let sampled = node
                .and_then(|_| cache.serving(&pod.scheduler_name))
                .and_then(|c| c.last_sample().cloned());
            results[id.index()] = Some(Placement {
                pod: id,
                node,
                message,
                score,
                tied,
                outcome,
                gated: None,
                sampled,
            });
        }
        if !bound_any || still.is_empty() {
            break;
        }
        queue = still;
    }
    pending
        .iter()
        .filter_map(|id| results[id.index()].take())
        .collect()
}

#[cfg(test)]
mod tests {
    use podplace_model::load::{load, Source};

    use super::{build_state, place_all, place_all_runs, PlaceOptions, ReplicaRuns};
    use crate::cache::SchedulerCache;

    /// Deciding identical replicas once per cluster state gives every pod
    /// the node and message scheduling each of them gives: three node
    /// sizes, replicas of two Deployments interleaved with a bare pod, more
    /// than fit.
    #[test]
    fn runs_decide_as_scheduling_each_replica_does() {
        let mut text = String::new();
        for (i, cpu) in ["2", "3", "5"].iter().enumerate() {
            text.push_str(&format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}}}}}\nstatus: {{allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: '110'}}}}\n---\n"
            ));
        }
        for (name, cpu, replicas) in [("big", "1", 12), ("small", "300m", 20)] {
            text.push_str(&format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\n---\n"
            ));
        }
        text.push_str("apiVersion: v1\nkind: Pod\nmetadata: {name: bare, namespace: default}\nspec:\n  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]\n");
        let mut inv = load(&[Source::Bytes {
            name: "w.yaml".to_string(),
            data: text.into_bytes(),
        }])
        .unwrap();
        podplace_model::expand::expand_workloads(&mut inv);
        let placed = |with_runs: bool| {
            let (mut state, pending) = build_state(&inv).unwrap();
            let mut cache = SchedulerCache::new();
            let opts = PlaceOptions::default();
            let p = if with_runs {
                let runs = ReplicaRuns::of(&inv, &state);
                assert!(!runs.run.is_empty());
                place_all_runs(&mut state, &mut cache, &pending, opts, &runs)
            } else {
                place_all(&mut state, &mut cache, &pending, opts)
            };
            p.into_iter()
                .map(|p| (p.pod, p.node, p.message))
                .collect::<Vec<_>>()
        };
        let (plain, runs) = (placed(false), placed(true));
        assert!(plain.iter().any(|p| p.1.is_none()), "some stay Pending");
        assert_eq!(plain, runs);
    }
}
