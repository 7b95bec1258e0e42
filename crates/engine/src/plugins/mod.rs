//! The default profile's plugins, one module each, named as kube-scheduler
//! names them. Each module exposes the extension points it implements
//! (`pre_filter`, `filter`, `pre_score`, `score`, `normalize`).

pub mod default_preemption;
pub mod dynamic_resources;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

#[cfg(test)]
mod volume_tests;

/// kube-scheduler's `DefaultNormalizeScore`: scale to 0..=100 by the
/// maximum, optionally reversed (lower raw score is better).
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = 100);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = 100 * *s / max;
        *s = if reverse { 100 - scaled } else { scaled };
    }
}
