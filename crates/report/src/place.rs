//! `place`'s report value: where every waiting pod lands (or why it stays
//! Pending), as `place -o json` prints it. The text renderer
//! ([`crate::text::place`]) and the HTML page read the same value.

use podplace_world::World;
use serde::Serialize;

use crate::Counted;

/// `podplace place`'s answer: one row per pod it tried, the replicas it
/// counted rather than created, and the totals. Serialized as it is, this is
/// `place -o json` (docs/json-schema.md#place).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlaceResult {
    /// Every pod tried, in queue order.
    pub placements: Vec<Placement>,
    /// Counted replicas (`replicas: 2000000000`), not listed one by one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<Counted>,
    /// Pods placed.
    pub placed: u64,
    /// Pending pods, counted replicas included.
    pub pending: u64,
}

/// One pod's placement.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Placement {
    /// `namespace/name`.
    pub pod: String,
    /// The owning workload as podplace names it (`Deployment ns/name`).
    pub workload: String,
    /// The node it lands on; `None` while Pending or gated.
    pub node: Option<String>,
    /// The FailedScheduling message when Pending (empty when placed).
    pub message: String,
    /// Nodes that tied for the best score (the chosen one among them).
    pub tied: Vec<String>,
    /// The chosen node's total score.
    pub score: Option<i64>,
    /// SchedulingGates' message when the pod is gated (never tried).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gated: Option<String>,
    /// With `--scheduler-config`: the profile (scheduler name) that placed
    /// or tried the pod; absent when no profile serves its spec.schedulerName.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// With 100 nodes or more: the candidate set kube-scheduler's sampling
    /// scored (`tied` and `node` are among them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<Sampled>,
}

/// What sampling did for one pod, so a reader can tell a tie broken inside
/// a sampled window from one across the whole cluster.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sampled {
    /// Feasible nodes kube-scheduler looks for (numFeasibleNodesToFind).
    pub to_find: usize,
    /// The start index in the zone-interleaved node list.
    pub start: usize,
    /// Nodes processed before it stopped (the start index moves on by this).
    pub processed: usize,
    /// Feasible nodes the search found (the candidates are the first
    /// `to_find` of them found from `start`): every feasible node when it
    /// is at most `to_find`; otherwise `to_find + 1`, since the search
    /// stops filtering at the first feasible node beyond those it needs,
    /// as kube-scheduler's does (schemaVersion 1.1; 1.0 gave every
    /// feasible node of the cluster).
    pub feasible: usize,
    /// `exact` (kube-scheduler scores these same nodes: every feasible
    /// one, or with parallelism 1 the first found from the known start
    /// index) or `candidate-set` (with more workers which nodes are found
    /// first is a race: `node` is the best of one possible set).
    pub certainty: &'static str,
}

impl PlaceResult {
    /// The answer of a built world: every placement it made (node names,
    /// ties, scores, the profile and sampling that decided it) and the
    /// replicas it counted rather than created, with the totals. The
    /// command line only builds the world and hands this to a renderer.
    pub fn of(world: &World) -> PlaceResult {
        let state = world.state();
        let node_name = |n| state.node(n).name.to_string();
        let placements: Vec<Placement> = world
            .placements()
            .iter()
            .map(|p| Placement {
                pod: world.pod_name(p.pod),
                workload: world.workload(p.pod).to_string(),
                node: p.node.map(node_name),
                message: p.message.clone(),
                tied: p.tied.iter().copied().map(node_name).collect(),
                score: p.score,
                gated: p.gated.clone(),
                profile: world
                    .configured_profile(&state.pod(p.pod).scheduler_name)
                    .map(str::to_string),
                sampled: p.sampled.as_ref().map(|s| Sampled {
                    to_find: s.to_find,
                    start: s.start,
                    processed: s.processed,
                    feasible: s.found,
                    certainty: s.certainty.kind(),
                }),
            })
            .collect();
        // Replicas counted by expansion share the verdict of the replica
        // they follow, which can never be bound (see CountedReplicas).
        let counted: Vec<Counted> = world
            .inventory()
            .counted_replicas
            .iter()
            .filter_map(|c| {
                let id = world.pod_id(&c.namespace, &c.pod)?;
                let p = world.placement(id).filter(|p| p.node.is_none())?;
                Some(Counted {
                    workload: world.workload(id).to_string(),
                    pod: world.pod_name(id),
                    replicas: c.count,
                    message: p.message.clone(),
                })
            })
            .collect();
        let placed = placements.iter().filter(|r| r.node.is_some()).count() as u64;
        let pending =
            placements.len() as u64 - placed + counted.iter().map(|c| c.replicas).sum::<u64>();
        PlaceResult {
            placements,
            counted,
            placed,
            pending,
        }
    }
}
