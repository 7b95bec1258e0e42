//! NodePorts: a host port can be bound once per (IP, protocol, port); the
//! wildcard IP `0.0.0.0` conflicts with every IP.

use podplace_model::intern::Sym;
use podplace_model::objects::{HostPort, Pod};

use crate::state::NodeInfo;
use crate::status::{Code, Plugin, Status};

/// The reason kube-scheduler gives.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// Whether `wanted` conflicts with a port in use.
fn conflicts(wanted: &HostPort, used: &HostPort, wildcard: Sym) -> bool {
    wanted.port == used.port
        && wanted.protocol == used.protocol
        && (wanted.ip == wildcard || used.ip == wildcard || wanted.ip == used.ip)
}

/// Filter.
pub fn filter(pod: &Pod, info: &NodeInfo, wildcard: Sym) -> Status {
    let clash = pod
        .host_ports
        .iter()
        .any(|w| info.used_ports.iter().any(|u| conflicts(w, u, wildcard)));
    if clash {
        Status::reject(Code::Unschedulable, Plugin::NodePorts, REASON)
    } else {
        Status::success()
    }
}
