//! TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule
//! taints score (fewer untolerated is better).

use podplace_model::objects::{Node, Pod, Taint, TaintEffect};

use crate::status::{Code, Plugin, Status};

/// The reason kube-scheduler gives (v1.36 no longer names the taint).
pub const REASON: &str = "node(s) had untolerated taint(s)";

/// The first NoSchedule/NoExecute taint no toleration tolerates.
pub fn untolerated_taint<'a>(pod: &Pod, node: &'a Node) -> Option<&'a Taint> {
    node.taints.iter().find(|taint| {
        matches!(
            taint.effect,
            TaintEffect::NoSchedule | TaintEffect::NoExecute
        ) && !pod.tolerations.iter().any(|t| t.tolerates(taint))
    })
}

/// Filter.
pub fn filter(pod: &Pod, node: &Node) -> Status {
    match untolerated_taint(pod, node) {
        Some(_) => Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::TaintToleration,
            REASON,
        ),
        None => Status::success(),
    }
}

/// Raw score: PreferNoSchedule taints not tolerated by a toleration with
/// effect PreferNoSchedule or empty.
pub fn score(pod: &Pod, node: &Node) -> i64 {
    node.taints
        .iter()
        .filter(|taint| taint.effect == TaintEffect::PreferNoSchedule)
        .filter(|taint| {
            !pod.tolerations.iter().any(|t| {
                matches!(t.effect, None | Some(TaintEffect::PreferNoSchedule)) && t.tolerates(taint)
            })
        })
        .count() as i64
}
