//! NodeName: a pod that names its node fits only there.

use podplace_model::objects::{Node, Pod};

use crate::status::{Code, Plugin, Status};

/// The reason kube-scheduler gives.
pub const REASON: &str = "node(s) didn't match the requested node name";

/// Filter.
pub fn filter(pod: &Pod, node: &Node) -> Status {
    match &pod.node_name {
        Some(name) if **name != *node.name => {
            Status::reject(Code::UnschedulableAndUnresolvable, Plugin::NodeName, REASON)
        }
        _ => Status::success(),
    }
}
