//! SchedulingGates (PreEnqueue): a pod with `spec.schedulingGates` is never
//! tried, so it gets no FailedScheduling message until its gates are removed.

use podplace_model::objects::Pod;

/// The PreEnqueue message kube-scheduler logs for a gated pod,
/// `waiting for scheduling gates: [a b]`; `None` when the pod is not gated.
pub fn pre_enqueue(pod: &Pod) -> Option<String> {
    if pod.scheduling_gates.is_empty() {
        return None;
    }
    let names: Vec<&str> = pod.scheduling_gates.iter().map(|g| &**g).collect();
    Some(format!(
        "waiting for scheduling gates: [{}]",
        names.join(" ")
    ))
}
