//! NodeUnschedulable: cordoned nodes take only pods that tolerate the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use podplace_model::objects::{Node, Pod, Taint, TaintEffect};

use crate::status::{Code, Plugin, Status};

/// The reason kube-scheduler gives.
pub const REASON: &str = "node(s) were unschedulable";

/// Filter.
pub fn filter(pod: &Pod, node: &Node, unschedulable_taint: &Taint) -> Status {
    debug_assert_eq!(unschedulable_taint.effect, TaintEffect::NoSchedule);
    if node.unschedulable
        && !pod
            .tolerations
            .iter()
            .any(|t| t.tolerates(unschedulable_taint))
    {
        return Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::NodeUnschedulable,
            REASON,
        );
    }
    Status::success()
}
