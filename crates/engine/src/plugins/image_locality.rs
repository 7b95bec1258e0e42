//! ImageLocality: prefer nodes that already have the pod's images, scaled by
//! how widely each image is spread (so one node does not attract everything).

use podplace_model::intern::Sym;
use podplace_model::objects::{Node, Pod};
use rustc_hash::FxHashMap;

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// Score (0..=100, not normalised).
pub fn score(
    pod: &Pod,
    node: &Node,
    images: &FxHashMap<Sym, (u32, i64)>,
    total_nodes: usize,
) -> i64 {
    let mut sum: i64 = 0;
    for image in &pod.images {
        if !node.images.iter().any(|(n, _)| n == image) {
            continue;
        }
        if let Some(&(num_nodes, size)) = images.get(image) {
            let spread = f64::from(num_nodes) / total_nodes as f64;
            sum = sum.saturating_add((size as f64 * spread) as i64);
        }
    }
    let max_threshold = MAX_CONTAINER_THRESHOLD * pod.container_count as i64;
    let clamped = sum.clamp(MIN_THRESHOLD, max_threshold.max(MIN_THRESHOLD));
    if max_threshold <= MIN_THRESHOLD {
        return 0;
    }
    100 * (clamped - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}
