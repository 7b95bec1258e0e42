//! NodeResourcesBalancedAllocation: in v1.36 it scores how much placing the
//! pod improves the balance between the node's CPU and memory use.

use podplace_model::objects::{Node, Pod};

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
