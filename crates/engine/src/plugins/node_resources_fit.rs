//! NodeResourcesFit: requests must fit in allocatable minus what the node's
//! pods request; scores with LeastAllocated over CPU and memory.

use podplace_model::intern::Interner;
use podplace_model::objects::{Node, Pod};
use smallvec::SmallVec;

use crate::profile::{broken_linear, FitArgs, ScoringStrategy};
use crate::state::NodeInfo;
use crate::status::{Code, Plugin, Reason, Status};

/// One resource the node is short of, for the filter reason and for `why`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortage {
    /// `Too many pods` or `Insufficient <resource>`.
    pub reason: Reason,
    /// What the pod asks for.
    pub requested: i64,
    /// What the node's pods already use.
    pub used: i64,
    /// What the node offers.
    pub capacity: i64,
    /// The pod asks for more than the node's whole allocatable: preemption cannot help.
    pub unresolvable: bool,
}

/// Every resource the node is short of, in kube-scheduler's order.
pub fn shortages(
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
) -> SmallVec<[Shortage; 1]> {
    let mut out = SmallVec::new();
    let alloc = &node.allocatable;
    let used = &info.requested;
    let pod_count = info.pods.len() as i64;
    if pod_count + 1 > alloc.pods {
        out.push(Shortage {
            reason: "Too many pods".into(),
            requested: 1,
            used: pod_count,
            capacity: alloc.pods,
            unresolvable: false,
        });
    }
    let req = &pod.requests;
    if req.milli_cpu == 0 && req.memory == 0 && req.ephemeral_storage == 0 && req.scalar.is_empty()
    {
        return out;
    }
    let mut check = |reason: Reason, r: i64, a: i64, u: i64| {
        if r > 0 && r > a.saturating_sub(u) {
            out.push(Shortage {
                reason,
                requested: r,
                used: u,
                capacity: a,
                unresolvable: r > a,
            });
        }
    };
    check(
        "Insufficient cpu".into(),
        req.milli_cpu,
        alloc.milli_cpu,
        used.milli_cpu,
    );
    check(
        "Insufficient memory".into(),
        req.memory,
        alloc.memory,
        used.memory,
    );
    check(
        "Insufficient ephemeral-storage".into(),
        req.ephemeral_storage,
        alloc.ephemeral_storage,
        used.ephemeral_storage,
    );
    for &(name, r) in &req.scalar {
        if r == 0 {
            continue;
        }
        let reason: Reason = format!("Insufficient {}", interner.resolve(name)).into();
        check(reason, r, alloc.scalar(name), used.scalar(name));
    }
    out
}

/// Whether the pod fits: the same test as [`shortages`] being empty,
/// without building reasons (the per-node hot path).
pub fn fits(pod: &Pod, node: &Node, info: &NodeInfo) -> bool {
    let alloc = &node.allocatable;
    let used = &info.requested;
    let req = &pod.requests;
    let fits_one = |r: i64, a: i64, u: i64| r <= 0 || r <= a.saturating_sub(u);
    (info.pods.len() as i64) < alloc.pods
        && fits_one(req.milli_cpu, alloc.milli_cpu, used.milli_cpu)
        && fits_one(req.memory, alloc.memory, used.memory)
        && fits_one(
            req.ephemeral_storage,
            alloc.ephemeral_storage,
            used.ephemeral_storage,
        )
        && req
            .scalar
            .iter()
            .all(|&(name, r)| fits_one(r, alloc.scalar(name), used.scalar(name)))
}

/// Filter.
pub fn filter(pod: &Pod, node: &Node, info: &NodeInfo, interner: &Interner) -> Status {
    let short = shortages(pod, node, info, interner);
    if short.is_empty() {
        return Status::success();
    }
    let code = if short.iter().any(|s| s.unresolvable) {
        Code::UnschedulableAndUnresolvable
    } else {
        Code::Unschedulable
    };
    Status {
        code,
        plugin: Some(Plugin::NodeResourcesFit),
        reasons: short.into_iter().map(|s| s.reason).collect(),
    }
}

/// `(capacity - requested) * 100 / capacity`, 0 when over capacity.
///
/// Computed in 128 bits: kube-scheduler's int64 product wraps once the
/// free amount exceeds `i64::MAX / 100` (about 92 billion cores in
/// millicores, or 92 PB of memory), giving a meaningless score; below that
/// the result is kube-scheduler's exactly, and above it is the true one.
fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 || requested > capacity {
        0
    } else {
        let free = i128::from(capacity) - i128::from(requested);
        // At most 100 (requested is never negative): fits an i64.
        i64::try_from(free * 100 / i128::from(capacity)).unwrap_or(0)
    }
}

/// Score: LeastAllocated over CPU and memory, weight 1 each. The incoming
/// pod counts with 100m / 200Mi defaults and without pod-level requests.
pub fn score(pod: &Pod, node: &Node, info: &NodeInfo) -> i64 {
    let (pod_cpu, pod_mem) = pod.non_zero_ignoring_pod_level;
    let mut total = 0;
    let mut weights = 0;
    for (requested, capacity) in [
        (
            info.non_zero_requested.0.saturating_add(pod_cpu),
            node.allocatable.milli_cpu,
        ),
        (
            info.non_zero_requested.1.saturating_add(pod_mem),
            node.allocatable.memory,
        ),
    ] {
        if capacity == 0 {
            continue;
        }
        total += least_requested(requested, capacity);
        weights += 1;
    }
    if weights == 0 {
        0
    } else {
        total / weights
    }
}

/// The (requested with the pod, allocatable) pair Score weighs for one
/// configured resource, `None` when it is left out: a scalar resource the
/// pod does not request, or one the node does not offer. `non_zero`:
/// NodeResourcesFit counts requests with the 100m / 200Mi defaults,
/// BalancedAllocation counts them as they are.
pub(crate) fn resource_pair(
    name: &str,
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
    non_zero: bool,
) -> Option<(i64, i64)> {
    let alloc = &node.allocatable;
    let (requested, allocatable) = match name {
        "cpu" if non_zero => (
            info.non_zero_requested
                .0
                .saturating_add(pod.non_zero_ignoring_pod_level.0),
            alloc.milli_cpu,
        ),
        "memory" if non_zero => (
            info.non_zero_requested
                .1
                .saturating_add(pod.non_zero_ignoring_pod_level.1),
            alloc.memory,
        ),
        "cpu" => (
            info.requested
                .milli_cpu
                .saturating_add(pod.requests.milli_cpu),
            alloc.milli_cpu,
        ),
        "memory" => (
            info.requested.memory.saturating_add(pod.requests.memory),
            alloc.memory,
        ),
        "ephemeral-storage" => (
            info.requested
                .ephemeral_storage
                .saturating_add(pod.requests.ephemeral_storage),
            alloc.ephemeral_storage,
        ),
        other => {
            let sym = interner.lookup(other)?;
            let wanted = pod.requests.scalar(sym);
            if wanted == 0 {
                return None;
            }
            (
                info.requested.scalar(sym).saturating_add(wanted),
                alloc.scalar(sym),
            )
        }
    };
    (allocatable != 0).then_some((requested, allocatable))
}

/// `requested * 100 / capacity`, with requested capped at capacity
/// (MostAllocated), in 128 bits so it cannot wrap.
pub(crate) fn most_requested(requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 {
        return 0;
    }
    let requested = requested.min(capacity).max(0);
    i64::try_from(i128::from(requested) * 100 / i128::from(capacity)).unwrap_or(0)
}

/// RequestedToCapacityRatio's utilization: `requested * 100 / capacity`,
/// clamped to 0..=100.
pub(crate) fn utilization(requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 || requested <= 0 {
        return 0;
    }
    if requested >= capacity {
        return 100;
    }
    i64::try_from(i128::from(requested) * 100 / i128::from(capacity)).unwrap_or(100)
}

/// Score under `args`: the strategy's per-resource score, weighted by
/// the resources' weights, over the resources the node offers (and, for
/// scalar ones, the pod requests). LeastAllocated and MostAllocated divide
/// in integers; RequestedToCapacityRatio leaves out resources scoring 0
/// and rounds.
pub fn score_with(
    args: &FitArgs,
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
) -> i64 {
    let mut total: i64 = 0;
    let mut weights: i64 = 0;
    for spec in &args.resources {
        let Some((requested, capacity)) =
            resource_pair(&spec.name, pod, node, info, interner, true)
        else {
            continue;
        };
        let s = match &args.strategy {
            ScoringStrategy::LeastAllocated => least_requested(requested, capacity),
            ScoringStrategy::MostAllocated => most_requested(requested, capacity),
            ScoringStrategy::RequestedToCapacityRatio(shape) => {
                let s = broken_linear(shape, utilization(requested, capacity));
                if s <= 0 {
                    continue;
                }
                s
            }
        };
        total = total.saturating_add(s.saturating_mul(spec.weight));
        weights = weights.saturating_add(spec.weight);
    }
    if weights == 0 {
        return 0;
    }
    match args.strategy {
        ScoringStrategy::RequestedToCapacityRatio(_) => {
            (total as f64 / weights as f64).round() as i64
        }
        _ => total / weights,
    }
}

/// [`fits`] with `args`' ignored extended resources left unchecked.
pub fn fits_with(
    args: &FitArgs,
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
) -> bool {
    if !args.ignores_any() || pod.requests.scalar.is_empty() {
        return fits(pod, node, info);
    }
    let mut pod = pod.clone();
    pod.requests
        .scalar
        .retain(|(name, _)| !args.ignores(interner.resolve(*name)));
    fits(&pod, node, info)
}

/// [`filter`] with `args`' ignored extended resources left unchecked.
pub fn filter_with(
    args: &FitArgs,
    pod: &Pod,
    node: &Node,
    info: &NodeInfo,
    interner: &Interner,
) -> Status {
    if !args.ignores_any() || pod.requests.scalar.is_empty() {
        return filter(pod, node, info, interner);
    }
    let mut pod = pod.clone();
    pod.requests
        .scalar
        .retain(|(name, _)| !args.ignores(interner.resolve(*name)));
    filter(&pod, node, info, interner)
}

#[cfg(test)]
mod tests {
    use super::least_requested;

    /// At resource.Quantity's limits the score neither panics nor wraps:
    /// 1e14 cores free scores 99 (kube-scheduler's int64 product would
    /// wrap to a meaningless score), saturated quantities score as full.
    #[test]
    fn least_requested_at_the_limits_of_quantities() {
        let cores_1e14 = 100_000_000_000_000_000i64; // in millicores
        let table = [
            // (requested, capacity, score)
            (100, 4_000, 97),
            (0, 4_000, 100),
            (4_000, 4_000, 0),
            (5_000, 4_000, 0),
            (100, cores_1e14, 99),
            (cores_1e14 / 2, cores_1e14, 50),
            (100, i64::MAX, 99),
            (i64::MAX, i64::MAX, 0),
            (i64::MAX - 1, i64::MAX, 0),
            (0, i64::MAX, 100),
            (100, 0, 0),
            (100, -5, 0),
        ];
        for (requested, capacity, want) in table {
            assert_eq!(
                least_requested(requested, capacity),
                want,
                "requested {requested}, capacity {capacity}"
            );
        }
    }
}
