//! What `podplace_pending_pods` counts: the model's Pending pods, each with
//! the Filter plugin that rejects most nodes for it. One pod per workload
//! is scheduled (on the model's state with a copy of its cache: nothing is
//! bound), at most `limit` workloads per call, most Pending first; the
//! other pods of a workload share its verdict (replicas share a template),
//! and pods of workloads past the limit are counted with plugin `unknown`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use podplace_engine::status::Plugin;
use podplace_engine::{Outcome, PodId};
use podplace_model::workloads::WorkloadRef;
use podplace_world::World;

/// One Pending pod, as the metric labels it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSample {
    /// Its namespace.
    pub namespace: String,
    /// Its workload's name (the pod's own name for a bare pod).
    pub workload: String,
    /// The Filter plugin rejecting most nodes; `SchedulingGates` for a
    /// gated pod, `none` when a node fits now (a bind is under way),
    /// `unknown` when not evaluated (past the limit) or rejected before
    /// Filter without a plugin.
    pub plugin: String,
}

/// The plugin that rejected most nodes in `outcome` (ties: the first in
/// kube-scheduler's plugin order).
pub fn main_plugin(outcome: &Outcome) -> &'static str {
    if outcome.gated.is_some() {
        return Plugin::SchedulingGates.name();
    }
    if outcome.chosen.is_some() {
        return "none";
    }
    let mut counts: BTreeMap<Plugin, usize> = BTreeMap::new();
    for s in &outcome.statuses {
        if let Some(p) = s.plugin.filter(|_| !s.is_success()) {
            *counts.entry(p).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map_or("unknown", |(p, _)| p.name())
}

/// The Pending pods of `world` (alive, unbound, not finished, not
/// terminating), see the module doc.
pub fn samples(world: &World, limit: usize) -> Vec<PendingSample> {
    let state = world.state();
    let mut by_workload: BTreeMap<Cow<'_, WorkloadRef>, Vec<PodId>> = BTreeMap::new();
    for (id, e) in state.live_pods() {
        if e.node.is_some() || e.pod.finished || e.pod.terminating {
            continue;
        }
        by_workload.entry(world.workload(id)).or_default().push(id);
    }
    let mut ranked: Vec<(Cow<'_, WorkloadRef>, Vec<PodId>)> = by_workload.into_iter().collect();
    ranked.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    let mut cache = None;
    let mut out = Vec::new();
    for (i, (w, pods)) in ranked.into_iter().enumerate() {
        let plugin = if !state.pod(pods[0]).scheduling_gates.is_empty() {
            Plugin::SchedulingGates.name()
        } else if i < limit {
            let cache = cache.get_or_insert_with(|| world.cache().clone());
            let outcome = podplace_engine::schedule(state, cache, state.pod(pods[0]), world.seed());
            main_plugin(&outcome)
        } else {
            "unknown"
        };
        for _ in &pods {
            out.push(PendingSample {
                namespace: w.namespace.clone(),
                workload: w.name.clone(),
                plugin: plugin.to_string(),
            });
        }
    }
    out
}
