//! NodePorts: a host port can be bound once per (IP, protocol, port); the
//! wildcard IP `0.0.0.0` conflicts with every IP.

use podplace_model::intern::Sym;
use podplace_model::objects::{HostPort, Pod};

use crate::cluster::NodeInfo;
use crate::status::{Code, Plugin, Status};

/// The reason kube-scheduler gives.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// Whether `wanted` conflicts with a port in use.
fn conflicts(wanted: &HostPort, used: &HostPort, wildcard: Sym) -> bool {
    wanted.port == used.port
        && wanted.protocol == used.protocol
        && (wanted.ip == wildcard || used.ip == wildcard || wanted.ip == used.ip)
}

/// Whether a host port the pod wants is taken on the node.
fn clashes(pod: &Pod, info: &NodeInfo, wildcard: Sym) -> bool {
    pod.host_ports
        .iter()
        .any(|w| info.used_ports.iter().any(|u| conflicts(w, u, wildcard)))
}

/// Filter.
pub fn filter(pod: &Pod, info: &NodeInfo, wildcard: Sym) -> Status {
    if clashes(pod, info, wildcard) {
        Status::reject(Code::Unschedulable, Plugin::NodePorts, REASON)
    } else {
        Status::success()
    }
}
