//! Small helpers for `podplace why`, which must show *every* reason a node
//! rejects a pod where the Filter plugins stop at the first one. Each helper
//! answers with the plugins' own predicates, so explanations cannot
//! disagree with the scheduler.

use podplace_model::objects::{HostPort, Node, Pod, Taint, TaintEffect};

use crate::cache::SchedulerCache;
use crate::cycle::CycleState;
use crate::ids::{NodeId, PodId};
use crate::plugins::{node_ports, node_volume_limits, volume_restrictions};
use crate::state::{ClusterState, NodeInfo};
use crate::status::Status;

/// Every NoSchedule/NoExecute taint of the node that no toleration of the
/// pod tolerates, in the node's order (TaintToleration's Filter stops at the
/// first; its predicate is the same).
pub fn untolerated_taints<'a>(pod: &Pod, node: &'a Node) -> Vec<&'a Taint> {
    node.taints
        .iter()
        .filter(|taint| {
            matches!(
                taint.effect,
                TaintEffect::NoSchedule | TaintEffect::NoExecute
            ) && !pod.tolerations.iter().any(|t| t.tolerates(taint))
        })
        .collect()
}

/// A host port the pod wants that a pod on the node already binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConflict {
    /// The port the incoming pod asks for.
    pub wanted: HostPort,
    /// The pod on the node that holds a conflicting port.
    pub holder: PodId,
}

/// Every (wanted port, holding pod) pair that makes NodePorts reject the
/// node, decided by NodePorts' own Filter on one port at a time.
pub fn port_conflicts(cluster: &ClusterState, pod: &Pod, node: NodeId) -> Vec<PortConflict> {
    let mut out = Vec::new();
    if pod.host_ports.is_empty() {
        return out;
    }
    // Host ports without an IP are compiled as 0.0.0.0; when that string was
    // never interned no port is a wildcard, and the empty string (always
    // interned, never a host IP) stands in.
    let wildcard = cluster
        .interner()
        .lookup(crate::cycle::WILDCARD_IP)
        .or_else(|| cluster.interner().lookup(""));
    let Some(wildcard) = wildcard else {
        return out;
    };
    let mut single = pod.clone();
    for wanted in &pod.host_ports {
        single.host_ports = smallvec::smallvec![wanted.clone()];
        for &other in &cluster.node_info(node).pods {
            let holder = cluster.pod(other);
            if holder.host_ports.is_empty() {
                continue;
            }
            let info = NodeInfo {
                used_ports: holder.host_ports.iter().cloned().collect(),
                ..NodeInfo::default()
            };
            if !node_ports::filter(&single, &info, wildcard).is_success() {
                out.push(PortConflict {
                    wanted: wanted.clone(),
                    holder: other,
                });
            }
        }
    }
    out
}

/// The scheduling cycle's PreFilter, exactly as a cycle runs it: the state
/// each Filter plugin reads, or the status of the PreFilter plugin that
/// rejected the pod outright (then no node is filtered at all, which `why`
/// must say instead of blaming every node).
pub fn pre_filter(
    cluster: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
) -> Result<CycleState, Status> {
    crate::cycle::pre_filter(cluster, cache, pod).map(|(state, _)| state)
}

pub use crate::plugins::node_volume_limits::VolumeLimitExcess;

/// Every driver whose limit NodeVolumeLimits finds exceeded on the node
/// (its Filter rejects when there is any), by the plugin's own count.
pub fn volume_limit_excess(
    cluster: &ClusterState,
    pod: &Pod,
    node: NodeId,
    info: &NodeInfo,
) -> Vec<VolumeLimitExcess> {
    let Some(csi) = cluster.storage().csi_nodes.get(&cluster.node(node).name) else {
        return Vec::new();
    };
    let mut out = node_volume_limits::excesses(cluster, pod, csi, info);
    out.sort_by(|a, b| a.driver.cmp(&b.driver));
    out
}

/// The scheduled pods using each of the pod's ReadWriteOncePod claims:
/// (claim name, holder), as VolumeRestrictions' PreFilter counts them.
pub fn read_write_once_pod_holders(cluster: &ClusterState, pod: &Pod) -> Vec<(String, PodId)> {
    let storage = cluster.storage();
    let mut out = Vec::new();
    for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        let Some(claim) = storage.pod_claim(pod, c) else {
            continue;
        };
        if !claim.access_modes.read_write_once_pod() {
            continue;
        }
        for (id, _) in cluster.bound_pods() {
            if volume_restrictions::uses(cluster.pod(id), pod.namespace, &c.claim) {
                out.push((c.claim.to_string(), id));
            }
        }
    }
    out
}

/// The pods on the node mounting an in-tree disk the pod's own disks
/// conflict with (VolumeRestrictions' disk check, on every pod).
pub fn disk_conflicts(cluster: &ClusterState, pod: &Pod, info: &NodeInfo) -> Vec<PodId> {
    if pod.volumes.disks.is_empty() {
        return Vec::new();
    }
    info.pods
        .iter()
        .copied()
        .filter(|&other| {
            let existing = &cluster.pod(other).volumes.disks;
            pod.volumes
                .disks
                .iter()
                .any(|d| existing.iter().any(|e| d.conflicts(e)))
        })
        .collect()
}
