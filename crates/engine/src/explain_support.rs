//! Small helpers for `podplace why`, which must show *every* reason a node
//! rejects a pod where the Filter plugins stop at the first one. Each helper
//! answers with the plugins' own predicates, so explanations cannot
//! disagree with the scheduler.

use podplace_model::objects::{HostPort, Node, Pod, Taint, TaintEffect};

use crate::ids::{NodeId, PodId};
use crate::plugins::node_ports;
use crate::state::{ClusterState, NodeInfo};

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
