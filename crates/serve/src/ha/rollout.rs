//! RolloutStuck: a Deployment whose new ReplicaSet's pods stay Pending
//! because the old pods' (anti-)affinity or spread keeps them off every
//! node. A cheap check first (new pods Pending next to running pods of
//! another ReplicaSet, and the scheduler rejecting nodes by
//! InterPodAffinity or PodTopologySpread); then the rollout is replayed by
//! podplace-sim's `simulate_rollout` (the controllers' rules over the
//! engine, as `lint` PP003 and `simulate` replay it), which also finds the
//! strategy change verified to let it complete. Replays are kept per
//! Deployment until its pods change.

use std::collections::BTreeMap;

use podplace_engine::status::Plugin;
use podplace_engine::PodId;
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_sim::{simulate_rollout, RolloutChange};
use podplace_world::World;

use super::{Groups, HaFinding, HaKind};

/// What a replay's verdict depends on: the Deployment's Pending and
/// running pods and the nodes.
type Signature = (Vec<String>, usize, usize);

/// Replayed verdicts per Deployment.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    verdicts: BTreeMap<WorkloadRef, (Signature, Option<HaFinding>)>,
}

/// Whether scheduling `pod` now fails with some node rejected by pod
/// (anti-)affinity or topology spread.
fn blocked_by_rules(world: &World, pod: PodId) -> bool {
    let state = world.state();
    let mut cache = world.cache().clone();
    let outcome = podplace_engine::schedule(state, &mut cache, state.pod(pod), world.seed());
    outcome.chosen.is_none()
        && outcome.statuses.iter().any(|s| {
            matches!(
                s.plugin,
                Some(Plugin::InterPodAffinity | Plugin::PodTopologySpread)
            )
        })
}

impl Cache {
    pub(crate) fn findings(&mut self, world: &World, groups: &Groups<'_>) -> Vec<HaFinding> {
        let mut out = Vec::new();
        let mut keep = BTreeMap::new();
        for (w, pending) in &groups.pending {
            if w.kind != WorkloadKind::Deployment {
                continue;
            }
            let running = groups.bound.get(w).map_or(&[][..], Vec::as_slice);
            let owner = |p: PodId| world.pod(p).and_then(|r| r.owner.clone());
            let new_owner = owner(pending[0]);
            // A rollout: running pods of another ReplicaSet.
            if !running.iter().any(|&(p, _)| owner(p) != new_owner) {
                continue;
            }
            let mut names: Vec<String> = pending.iter().map(|&p| world.pod_name(p)).collect();
            names.sort();
            let signature = (names, running.len(), world.state().nodes().len());
            let verdict = match self.verdicts.remove(w.as_ref()) {
                Some((s, v)) if s == signature => v,
                _ => {
                    if blocked_by_rules(world, pending[0]) {
                        replay(world, w)
                    } else {
                        None
                    }
                }
            };
            if let Some(f) = &verdict {
                out.push(f.clone());
            }
            keep.insert(w.as_ref().clone(), (signature, verdict));
        }
        self.verdicts = keep;
        out
    }
}

/// Replays the Deployment's rollout from what runs; a finding when it
/// does not complete.
fn replay(world: &World, w: &WorkloadRef) -> Option<HaFinding> {
    let change = RolloutChange {
        template: None,
        strategy: None,
        find_fix: true,
        scheduler: world.setup().clone(),
    };
    let result = simulate_rollout(world.inventory(), &w.namespace, &w.name, &change).ok()?;
    if result.completes {
        return None;
    }
    let stall = result.stall?;
    // The replay's own message speaks of simulated time and repeats the
    // fix; the note is built from its parts.
    let mut message = format!("the rollout of {w} cannot progress: {}", stall.stalled_at);
    match (&stall.blocking_pod, &stall.reason) {
        (Some(pod), Some(reason)) => message.push_str(&format!("; {pod} is blocked: {reason}")),
        (None, Some(reason)) => message.push_str(&format!("; {reason}")),
        _ => {}
    }
    Some(HaFinding {
        kind: HaKind::RolloutStuck,
        workload: w.clone(),
        topology_key: None,
        domain: stall.blocking_pod.clone(),
        message,
        fix: stall.fix,
    })
}
