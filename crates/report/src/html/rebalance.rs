//! `rebalance -o html`: the cluster before the plan and after it, each
//! eviction an arrow from the node it leaves to the node its replacement
//! lands on (colored by wave), and each strategy's objective before → after.
//!
//! The after map is not written out: it is the before map with each
//! evicted pod moved to its eviction's `to` node, which the page computes
//! (docs/html-report.md, "rebalance").

use std::collections::HashMap;

use podplace_rebalance::Plan;
use serde_json::{json, Value};

use super::{render, Page};
use crate::encode::{encode_map, Interner};
use crate::Map;

/// Kept pods and Pending pods listed on the page (the rest are counted).
const LISTED: usize = 300;

/// Renders `rebalance -o html`: `before` is the map the plan was made on
/// (every pod where it runs, or was placed, before any eviction).
pub fn rebalance_html(plan: &Plan, before: &Map) -> String {
    let data = rebalance_data(plan, before);
    let title = format!(
        "podplace rebalance: {} eviction{} in {} wave{}",
        plan.evictions.len(),
        if plan.evictions.len() == 1 { "" } else { "s" },
        plan.waves,
        if plan.waves == 1 { "" } else { "s" }
    );
    render(Page::Rebalance, &title, &data)
}

fn rebalance_data(plan: &Plan, before: &Map) -> Value {
    let mut strings = Interner::default();
    let map = encode_map(before, &mut strings);
    let node_of: HashMap<&str, usize> = before
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let pod_of: HashMap<&str, usize> = before
        .pods
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.as_str(), i))
        .collect();
    let node = |name: &str| node_of.get(name).map_or(-1, |&i| i as i64);
    let e = &plan.evictions;
    let evictions = json!({
        "wave": e.iter().map(|x| x.wave).collect::<Vec<_>>(),
        "pod": e.iter().map(|x| pod_of.get(x.pod.as_str()).map_or(-1, |&i| i as i64)).collect::<Vec<_>>(),
        "name": e.iter().map(|x| strings.intern(&x.pod)).collect::<Vec<_>>(),
        "workload": e.iter().map(|x| strings.intern(&x.workload)).collect::<Vec<_>>(),
        "from": e.iter().map(|x| node(&x.from)).collect::<Vec<_>>(),
        "to": e.iter().map(|x| node(&x.to)).collect::<Vec<_>>(),
        "strategy": e.iter().map(|x| strings.intern(&x.strategy)).collect::<Vec<_>>(),
        "rule": e.iter().map(|x| strings.intern(&x.rule)).collect::<Vec<_>>(),
        "replacement": e.iter().map(|x| x.replacement.as_str()).collect::<Vec<_>>(),
        "tied": e.iter().map(|x| x.tied_with.iter().map(|t| node(t)).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "score_from": e.iter().map(|x| x.score.from).collect::<Vec<_>>(),
        "score_to": e.iter().map(|x| x.score.to).collect::<Vec<_>>(),
        "objective_before": e.iter().map(|x| x.objective_before).collect::<Vec<_>>(),
        "objective_after": e.iter().map(|x| x.objective_after).collect::<Vec<_>>(),
        "scheduled": e.iter().map(|x| x.scheduled.text()).collect::<Vec<_>>(),
    });
    let kept: Vec<Value> = plan
        .kept
        .iter()
        .take(LISTED)
        .map(|k| json!({"pod": k.pod, "strategy": k.strategy, "rule": k.rule, "reason": k.reason.to_string()}))
        .collect();
    json!({
        "v": 1,
        "kind": "rebalance",
        "map": map,
        "evictions": evictions,
        "waves": plan.waves,
        "strategies": plan.strategies,
        "policy": plan.policy,
        "model": plan.model,
        "kept": kept,
        "kept_total": plan.kept.len(),
        "pending": plan.pending.iter().take(LISTED).collect::<Vec<_>>(),
        "pending_total": plan.pending.len(),
        "warnings": plan.warnings,
        "stopped_at_limit": plan.stopped_at_limit,
        "strings": strings.into_strings(),
    })
}
