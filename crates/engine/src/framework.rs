//! One scheduling cycle, shaped like kube-scheduler's framework: PreFilter,
//! Filter over every node, PostFilter (preemption) when nothing fits, then
//! PreScore, Score and NormalizeScore over the feasible nodes, and host
//! selection.

use podplace_model::intern::Sym;
use podplace_model::objects::{Pod, Taint, TaintEffect};
use smallvec::SmallVec;

use crate::cluster::{Cluster, NodeId, NodeInfo};
use crate::message::fit_error_message;
use crate::plugins::inter_pod_affinity::{filter as ipa_filter, score as ipa_score};
use crate::plugins::{
    default_normalize, default_preemption, image_locality, node_affinity, node_name, node_ports,
    node_resources_balanced_allocation, node_resources_fit, node_unschedulable,
    pod_topology_spread, taint_toleration,
};
use crate::status::{Code, Plugin, Status};

/// The state PreFilter leaves for Filter (and for preemption's dry runs,
/// which clone and update it).
#[derive(Debug, Clone)]
pub struct CycleState {
    wildcard_ip: Sym,
    unschedulable_taint: Taint,
    /// PodTopologySpread's counts (`None`: skipped).
    pub spread: Option<pod_topology_spread::FilterState>,
    /// InterPodAffinity's counts (`None`: skipped).
    pub affinity: Option<ipa_filter::State>,
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
}

/// Score plugin weights of the default profile.
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
fn pre_filter(
    cluster: &mut Cluster,
    pod: &Pod,
) -> Result<(CycleState, node_affinity::PreFilter), Status> {
    let narrowed = node_affinity::pre_filter(pod);
    if narrowed == node_affinity::PreFilter::Conflict {
        return Err(Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::NodeAffinity,
            node_affinity::REASON_CONFLICT,
        ));
    }
    let state = CycleState {
        wildcard_ip: cluster.interner.intern("0.0.0.0"),
        unschedulable_taint: Taint {
            key: cluster.interner.intern("node.kubernetes.io/unschedulable"),
            value: cluster.interner.intern(""),
            effect: TaintEffect::NoSchedule,
        },
        spread: pod_topology_spread::pre_filter(cluster, pod),
        affinity: ipa_filter::pre_filter(cluster, pod),
    };
    Ok((state, narrowed))
}

/// Runs every Filter plugin in profile order on one node; the first
/// rejection wins. `info` is passed separately so preemption can filter
/// against a node with victims removed.
pub fn run_filters(
    cluster: &Cluster,
    state: &CycleState,
    pod: &Pod,
    node: NodeId,
    info: &NodeInfo,
) -> Status {
    let n = cluster.node(node);
    let checks: [&dyn Fn() -> Status; 8] = [
        &|| node_unschedulable::filter(pod, n, &state.unschedulable_taint),
        &|| node_name::filter(pod, n),
        &|| taint_toleration::filter(pod, n),
        &|| node_affinity::filter(pod, n, &cluster.interner),
        &|| node_ports::filter(pod, info, state.wildcard_ip),
        &|| node_resources_fit::filter(pod, n, info, &cluster.interner),
        &|| match &state.spread {
            Some(s) => pod_topology_spread::filter(s, cluster, node),
            None => Status::success(),
        },
        &|| match &state.affinity {
            Some(s) => ipa_filter::filter(s, cluster, n),
            None => Status::success(),
        },
    ];
    for check in checks {
        let status = check();
        if !status.is_success() {
            return status;
        }
    }
    Status::success()
}

/// Schedules one pod against the cluster without binding it. `seed` makes
/// the choice among equally scored nodes reproducible.
pub fn schedule(cluster: &mut Cluster, pod: &Pod, seed: u64) -> Outcome {
    let node_count = cluster.nodes.len();
    let (state, narrowed) = match pre_filter(cluster, pod) {
        Ok(s) => s,
        Err(status) => {
            let statuses = vec![status.clone(); node_count];
            let message = format!(
                "0/{node_count} nodes are available: {}. not found",
                status.reasons.join(", ")
            );
            return Outcome {
                statuses,
                feasible: Vec::new(),
                scores: Vec::new(),
                best: Vec::new(),
                chosen: None,
                message,
                preemption: None,
            };
        }
    };
    let mut statuses = Vec::with_capacity(node_count);
    let mut feasible = Vec::new();
    for node in cluster.node_ids() {
        let status = match &narrowed {
            node_affinity::PreFilter::Only(names)
                if !names.contains(&cluster.node(node).name_sym) =>
            {
                Status {
                    code: Code::UnschedulableAndUnresolvable,
                    plugin: None,
                    reasons: smallvec::smallvec![node_affinity::REASON_EXCLUDED.into()],
                }
            }
            _ => run_filters(
                cluster,
                &state,
                pod,
                node,
                &cluster.node_infos[node.index()],
            ),
        };
        if status.is_success() {
            feasible.push(node);
        }
        statuses.push(status);
    }
    if feasible.is_empty() {
        let preemption = default_preemption::post_filter(cluster, &state, pod, &statuses);
        let message = fit_error_message(node_count, &statuses, &preemption.message);
        return Outcome {
            statuses,
            feasible,
            scores: Vec::new(),
            best: Vec::new(),
            chosen: None,
            message,
            preemption: Some(preemption),
        };
    }
    let scores = score_nodes(cluster, pod, &feasible);
    let best_total = scores.iter().map(|s| s.total).max().unwrap_or(0);
    let best: Vec<NodeId> = scores
        .iter()
        .filter(|s| s.total == best_total)
        .map(|s| s.node)
        .collect();
    let chosen = pick(&best, seed, pod, cluster);
    Outcome {
        statuses,
        feasible,
        scores,
        best,
        chosen,
        message: String::new(),
        preemption: None,
    }
}

/// Deterministic choice among tied nodes: a hash of the seed and the pod's
/// name, so equal nodes are used evenly but reproducibly.
fn pick(best: &[NodeId], seed: u64, pod: &Pod, cluster: &Cluster) -> Option<NodeId> {
    if best.len() <= 1 {
        return best.first().copied();
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in cluster
        .interner
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

/// PreScore, Score and NormalizeScore of every score plugin over the feasible nodes.
fn score_nodes(cluster: &mut Cluster, pod: &Pod, feasible: &[NodeId]) -> Vec<NodeScore> {
    let mut per_plugin: Vec<(Plugin, Vec<i64>)> = Vec::new();
    let column =
        |f: &mut dyn FnMut(NodeId) -> i64| feasible.iter().map(|&n| f(n)).collect::<Vec<i64>>();

    let mut taints = column(&mut |n| taint_toleration::score(pod, cluster.node(n)));
    default_normalize(&mut taints, true);
    per_plugin.push((Plugin::TaintToleration, taints));

    if node_affinity::scores(pod) {
        let mut s = column(&mut |n| node_affinity::score(pod, cluster.node(n), &cluster.interner));
        default_normalize(&mut s, false);
        per_plugin.push((Plugin::NodeAffinity, s));
    }

    let fit = column(&mut |n| {
        node_resources_fit::score(pod, cluster.node(n), &cluster.node_infos[n.index()])
    });
    per_plugin.push((Plugin::NodeResourcesFit, fit));

    if let Some(state) = pod_topology_spread::pre_score(cluster, pod, feasible) {
        let hostname = cluster.interner.intern("kubernetes.io/hostname");
        let mut s: Vec<i64> = feasible
            .iter()
            .map(|&n| pod_topology_spread::score(&state, cluster, n, hostname))
            .collect();
        pod_topology_spread::normalize(&state, feasible, &mut s);
        per_plugin.push((Plugin::PodTopologySpread, s));
    }

    if let Some(state) = ipa_score::pre_score(cluster, pod) {
        let mut s = column(&mut |n| ipa_score::score(&state, cluster.node(n)));
        ipa_score::normalize(&mut s);
        per_plugin.push((Plugin::InterPodAffinity, s));
    }

    if node_resources_balanced_allocation::scores(pod) {
        let s = column(&mut |n| {
            node_resources_balanced_allocation::score(
                pod,
                cluster.node(n),
                &cluster.node_infos[n.index()],
            )
        });
        per_plugin.push((Plugin::NodeResourcesBalancedAllocation, s));
    }

    let total_nodes = cluster.nodes.len();
    let images =
        column(&mut |n| image_locality::score(pod, cluster.node(n), &cluster.images, total_nodes));
    per_plugin.push((Plugin::ImageLocality, images));

    per_plugin.push((Plugin::DynamicResources, vec![0; feasible.len()]));

    feasible
        .iter()
        .enumerate()
        .map(|(i, &node)| {
            let plugins: SmallVec<[(Plugin, i64); 8]> = per_plugin
                .iter()
                .map(|(p, s)| (*p, s[i] * weight(*p)))
                .collect();
            let total = plugins.iter().map(|(_, s)| s).sum();
            NodeScore {
                node,
                plugins,
                total,
            }
        })
        .collect()
}
