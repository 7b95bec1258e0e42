//! DefaultPreemption (PostFilter): when no node fits, would evicting
//! lower-priority pods make room? kube-scheduler's dry run, used here for the
//! FailedScheduling message and for `why`.

use std::sync::Arc;

use podplace_model::objects::Pod;

use crate::cycle::{run_filters, CycleState};
use crate::ids::{NodeId, PodId};
use crate::message::histogram;
use crate::plugins::{
    dynamic_resources, inter_pod_affinity::filter as ipa_filter, pod_topology_spread,
    volume_restrictions,
};
use crate::state::ClusterState;
use crate::status::{Code, Plugin, Status};

/// Reason for nodes where preemption was not attempted.
pub const REASON_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// Reason for nodes without lower-priority pods.
pub const REASON_NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// DynamicResources' PostFilter reason for pods without claims.
pub const DRA_NOTHING_TO_DEALLOCATE: &str = "no new claims to deallocate";

/// A node where preemption would let the pod fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// All lower-priority pods on it (removing them makes the pod fit).
    pub victims: Vec<PodId>,
}

/// What PostFilter found.
#[derive(Debug, Clone, Default)]
pub struct Preemption {
    /// Nodes where preemption helps.
    pub candidates: Vec<Candidate>,
    /// The PostFilter message (empty when candidates exist).
    pub message: String,
}

/// How kube-scheduler's dry run searches for preemption candidates: from
/// a random offset among the nodes where preemption may help (those a
/// filter rejected as `Unschedulable`), it stops once it has found
/// `to_find` of them (`minCandidateNodesPercentage` of the potential
/// nodes, at least `minCandidateNodesAbsolute`, at most all). When more
/// nodes would do, the candidates it finds, and so the node it nominates,
/// are one of many sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CandidateSearch {
    /// Nodes where preemption may help.
    pub potential: usize,
    /// How many candidates the dry run looks for.
    pub to_find: usize,
}

impl CandidateSearch {
    /// The search kube-scheduler makes with `profile`'s DefaultPreemption
    /// args among `potential` nodes (`calculateNumCandidates`).
    pub fn of(profile: &crate::profile::Profile, potential: usize) -> CandidateSearch {
        let nodes = i64::try_from(potential).unwrap_or(i64::MAX);
        let mut n = nodes * i64::from(profile.min_candidate_nodes_percentage) / 100;
        n = n.max(i64::from(profile.min_candidate_nodes_absolute));
        n = n.min(nodes);
        CandidateSearch {
            potential,
            to_find: usize::try_from(n).unwrap_or(0),
        }
    }

    /// The search for an outcome's statuses (one per node).
    pub fn for_statuses(profile: &crate::profile::Profile, statuses: &[Status]) -> CandidateSearch {
        let potential = statuses
            .iter()
            .filter(|s| s.code == Code::Unschedulable)
            .count();
        CandidateSearch::of(profile, potential)
    }

    /// Whether `found` candidates are all kube-scheduler finds whatever
    /// its offset (it stops only after `to_find`).
    pub fn finds_all(&self, found: usize) -> bool {
        found <= self.to_find
    }
}

/// DynamicResources' PostFilter message: no claims of its own (a pod
/// without claims, or one its PreFilter rejected), an allocated claim nobody
/// reserved (deallocated, so the next attempt may allocate elsewhere), or
/// nothing it can do.
pub(crate) fn dra_message(claims: Option<&dynamic_resources::State>) -> &'static str {
    match claims {
        None => DRA_NOTHING_TO_DEALLOCATE,
        Some(s) if s.deallocatable => dynamic_resources::DEALLOCATED,
        Some(_) => dynamic_resources::STILL_NOT_SCHEDULABLE,
    }
}

/// The PostFilter message when DynamicResources' own PreFilter rejected the
/// pod: every node is UnschedulableAndUnresolvable and it has no claims of
/// its own yet.
pub fn unresolvable_message(pod: &Pod, node_count: usize) -> String {
    if pod.never_preempts {
        return format!(
            "{}, preemption: not eligible due to preemptionPolicy=Never.",
            dra_message(None)
        );
    }
    let inner = histogram(node_count, &[], Some((node_count, REASON_NOT_HELPFUL)));
    format!("{}, preemption: {inner}", dra_message(None))
}

/// PostFilter: DynamicResources (nothing to deallocate), then DefaultPreemption.
pub fn post_filter(
    cluster: &ClusterState,
    state: &CycleState,
    pod: &Pod,
    statuses: &[Status],
) -> Preemption {
    if pod.never_preempts {
        return Preemption {
            candidates: Vec::new(),
            message: format!(
                "{}, preemption: not eligible due to preemptionPolicy=Never.",
                dra_message(state.claims.as_ref())
            ),
        };
    }
    let mut candidates = Vec::new();
    let mut node_statuses = Vec::new();
    for (i, status) in statuses.iter().enumerate() {
        if status.code != Code::Unschedulable {
            continue;
        }
        let node = NodeId(i as u32);
        match select_victims(cluster, state, pod, node) {
            Ok(victims) => candidates.push(Candidate { node, victims }),
            Err(status) => node_statuses.push(status),
        }
    }
    if !candidates.is_empty() {
        return Preemption {
            candidates,
            message: String::new(),
        };
    }
    let absent = statuses.len() - node_statuses.len();
    let inner = histogram(
        statuses.len(),
        &node_statuses,
        Some((absent, REASON_NOT_HELPFUL)),
    );
    Preemption {
        candidates,
        message: format!(
            "{}, preemption: {inner}",
            dra_message(state.claims.as_ref())
        ),
    }
}

/// Removes every lower-priority pod from the node (in a copy) and filters
/// again, updating the PreFilter state as kube-scheduler's RemovePod does.
fn select_victims(
    cluster: &ClusterState,
    state: &CycleState,
    pod: &Pod,
    node: NodeId,
) -> Result<Vec<PodId>, Status> {
    let mut info = cluster.node_info(node).clone();
    let victims: Vec<PodId> = info
        .pods
        .iter()
        .copied()
        .filter(|&p| cluster.pod(p).priority < pod.priority)
        .collect();
    if victims.is_empty() {
        return Err(Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::DefaultPreemption,
            REASON_NO_VICTIMS,
        ));
    }
    let mut state = state.clone();
    let n = cluster.node(node);
    for &v in &victims {
        let Some(entry) = cluster.pod_entry(v) else {
            continue;
        };
        info.remove(v, &entry.pod);
        if let Some(s) = state.affinity.as_mut() {
            let s = Arc::make_mut(s);
            ipa_filter::update_with_pod(s, cluster, pod, &entry.terms, &entry.pod, n, -1);
        }
        if let Some(s) = state.spread.as_mut() {
            pod_topology_spread::update_with_pod(s, cluster, pod, &entry.pod, node, -1);
        }
        if let Some(s) = state.restrictions.as_mut() {
            volume_restrictions::remove_pod(s, &entry.pod);
        }
    }
    let status = run_filters(cluster, &state, pod, node, &info);
    if status.is_success() {
        Ok(victims)
    } else {
        Err(status)
    }
}
