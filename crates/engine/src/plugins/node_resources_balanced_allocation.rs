//! NodeResourcesBalancedAllocation: in v1.36 it scores how much placing the
//! pod improves the balance between the node's CPU and memory use.

use podplace_model::intern::Interner;
use podplace_model::objects::{Node, Pod};

use crate::plugins::node_resources_fit;
use crate::profile::{default_resources, ResourceSpec};
use crate::state::NodeInfo;

/// Whether Score runs: PreScore skips pods that request neither CPU nor memory.
pub fn scores(pod: &Pod) -> bool {
    pod.requests.milli_cpu != 0 || pod.requests.memory != 0
}

/// `int64((1 - std) * 100)` of the used fractions (capped at 1) of the
/// resources the node has.
fn balance(used: [i64; 2], allocatable: [i64; 2]) -> i64 {
    let mut fractions = [0.0f64; 2];
    let mut n = 0;
    for (u, a) in used.into_iter().zip(allocatable) {
        if a != 0 {
            fractions[n] = (u as f64 / a as f64).min(1.0);
            n += 1;
        }
    }
    // With two resources the standard deviation is half their distance.
    let std = if n == 2 {
        ((fractions[0] - fractions[1]) / 2.0).abs()
    } else {
        0.0
    };
    ((1.0 - std) * 100.0) as i64
}

/// Score: `50 + (50 + balance(with pod) - balance(without)) / 2`.
pub fn score(pod: &Pod, node: &Node, info: &NodeInfo) -> i64 {
    let allocatable = [node.allocatable.milli_cpu, node.allocatable.memory];
    let without = [info.requested.milli_cpu, info.requested.memory];
    let with = [
        without[0] + pod.requests.milli_cpu,
        without[1] + pod.requests.memory,
    ];
    50 + (50 + balance(with, allocatable) - balance(without, allocatable)) / 2
}

/// Whether Score runs under a profile's resources: PreScore skips pods
/// that request none of them.
pub fn scores_with(resources: &[ResourceSpec], pod: &Pod, interner: &Interner) -> bool {
    resources.iter().any(|r| match r.name.as_str() {
        "cpu" => pod.requests.milli_cpu != 0,
        "memory" => pod.requests.memory != 0,
        "ephemeral-storage" => pod.requests.ephemeral_storage != 0,
        other => interner
            .lookup(other)
            .is_some_and(|s| pod.requests.scalar(s) != 0),
    })
}

/// `int64((1 - std) * 100)` of used fractions (capped at 1): with two the
/// standard deviation is half their distance, with more the population one.
fn balance_of(fractions: &[f64]) -> i64 {
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            let var = fractions
                .iter()
                .map(|f| (f - mean) * (f - mean))
                .sum::<f64>()
                / n as f64;
            var.sqrt()
        }
    };
    ((1.0 - std) * 100.0) as i64
}

/// Score over a profile's resources (their weights are not used): the
/// same improvement formula as [`score`], over the resources the node
/// offers and, for scalar ones, the pod requests.
pub fn score_with(
    resources: &[ResourceSpec],
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
) -> i64 {
    if resources == default_resources().as_slice() {
        return score(pod, node, info);
    }
    let mut with = Vec::with_capacity(resources.len());
    let mut without = Vec::with_capacity(resources.len());
    for r in resources {
        let Some((requested, capacity)) =
            node_resources_fit::resource_pair(&r.name, pod, node, info, interner, false)
        else {
            continue;
        };
        let own = own_request(&r.name, pod, interner);
        with.push((requested as f64 / capacity as f64).min(1.0));
        without.push(((requested - own) as f64 / capacity as f64).min(1.0));
    }
    50 + (50 + balance_of(&with) - balance_of(&without)) / 2
}

/// What the pod itself requests of a resource.
fn own_request(name: &str, pod: &Pod, interner: &Interner) -> i64 {
    match name {
        "cpu" => pod.requests.milli_cpu,
        "memory" => pod.requests.memory,
        "ephemeral-storage" => pod.requests.ephemeral_storage,
        other => interner.lookup(other).map_or(0, |s| pod.requests.scalar(s)),
    }
}
