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

fn object_name(
    kind: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> String {
    match &meta.namespace {
        Some(ns) => format!("{kind}/{ns}/{}", meta.name.as_deref().unwrap_or("")),
        None => format!("{kind}/{}", meta.name.as_deref().unwrap_or("")),
    }
}

/// Builds the state of a world: nodes, namespaces, the objects default
/// spreading reads, and every pod (bound when it names a node). Returns the
/// state and the pods waiting to be scheduled, in load order.
pub fn build_state(inv: &Inventory) -> Result<(ClusterState, Vec<PodId>), BuildError> {
    let mut cluster = ClusterState::new();
    let compile = |kind: &str, meta, source| BuildError::Compile {
        object: object_name(kind, meta),
        source,
    };
    for ns in &inv.namespaces {
        cluster.add_namespace(&ns.object);
    }
    for node in &inv.nodes {
        cluster
            .add_node(&node.object)
            .map_err(|e| compile("Node", &node.object.metadata, e))?;
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
            .map_err(|e| compile("ReplicaSet", &rs.object.metadata, e))?;
    }
    for sts in &inv.stateful_sets {
        cluster
            .add_stateful_set(&sts.object)
            .map_err(|e| compile("StatefulSet", &sts.object.metadata, e))?;
    }
    cluster.load_storage(inv)?;
    let mut pending = Vec::new();
    for pod in &inv.pods {
        let id = cluster
            .add_api_pod(&pod.object)
            .map_err(|e| compile("Pod", &pod.object.metadata, e))?;
        if cluster
            .pod_entry(id)
            .is_some_and(|e| e.node.is_none() && !e.pod.finished)
        {
            pending.push(id);
        }
    }
    Ok((cluster, pending))
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
}

/// Options for [`place_all`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PlaceOptions {
    /// Seed for choosing among equally scored nodes.
    pub seed: u64,
    /// Keep each pod's full [`Outcome`] (scores of every node) in the result.
    pub keep_outcomes: bool,
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
    let mut queue: Vec<PodId> = pending.to_vec();
    queue.sort_by_key(|&id| std::cmp::Reverse(cluster.pod(id).priority));
    let mut results: Vec<Option<Placement>> = vec![None; cluster.pod_slots()];
    loop {
        let mut bound_any = false;
        let mut still = Vec::new();
        for &id in &queue {
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
            } else {
                still.push(id);
            }
            results[id.index()] = Some(Placement {
                pod: id,
                node,
                message,
                score,
                tied,
                outcome,
                gated: None,
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
