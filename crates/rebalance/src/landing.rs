//! Where an evicted pod's replacement lands: the one landing rule the
//! planner proves every eviction with, public so that tests can search
//! over evictions with exactly the same rule.
//!
//! The replacement (the evicted pod's spec as its controller recreates it)
//! is scheduled at once, while the evicted pod terminates — it still holds
//! its resources and counts for inter-pod (anti-)affinity, not for topology
//! spread — and, when it fits nowhere then, once the evicted pod is gone; a
//! StatefulSet's replacement reuses the pod's name, so it is always
//! scheduled once the pod is gone. Volumes are part of the rule: the engine
//! runs VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits
//! on the replacement's claims, so it only lands where its volumes reach.
//!
//! Among nodes the scheduler scores equal, kube-scheduler picks at random.
//! The plan names one of them; it picks by the seed and the node's name
//! alone — never by the pod's name — so renaming pods never changes a plan.

use podplace_engine::{schedule_watching, Choice, ClusterState, NodeId, PodId, SchedulerCache};
use podplace_engine::{Outcome, Verdict};
use podplace_model::objects::Pod;

use crate::plan::Scheduled;

/// Where a replacement lands, as the scheduler's cycle saw it.
#[derive(Debug, Clone)]
pub struct Landing {
    /// The node the plan names (among the tied ones, see [`pick_tied`]).
    pub to: NodeId,
    /// Its total score.
    pub score: i64,
    /// Every node scored as high (`to` and, maybe, the node left).
    pub tied: Vec<NodeId>,
    /// The scheduler's verdict on the node the pod leaves.
    pub verdict: Option<Verdict>,
    /// When it is scheduled.
    pub scheduled: Scheduled,
    /// What node sampling did in the cycle that found it (`None`: fewer
    /// than 100 nodes, or sampling off): which nodes were scored and how
    /// certain that set is.
    pub sampled: Option<podplace_engine::sampling::SampledSet>,
}

/// Schedules the replacement of `pod` (bound on `from`) in `state`, leaving
/// the state as the landing found it: `pod` terminating (or unbound, when
/// the replacement is scheduled once it is gone) and the replacement added
/// but not bound. The caller binds the replacement or rolls back with
/// [`rollback`]. `replacement` is the replacement's compiled spec (name
/// set, unbound, not terminating).
pub fn land(
    state: &mut ClusterState,
    cache: &mut SchedulerCache,
    pod: PodId,
    from: NodeId,
    replacement: &Pod,
    stateful: bool,
    seed: u64,
) -> (PodId, Result<Landing, Box<Outcome>>) {
    let mut scheduled = Scheduled::AtOnce;
    let mut found = None;
    let id;
    if stateful {
        state.unbind(pod);
        id = state.add_pod(replacement.clone());
        scheduled = Scheduled::OnceGone;
    } else {
        state.set_terminating(pod, true);
        id = state.add_pod(replacement.clone());
        match schedule_watching(state, cache, replacement, seed, from) {
            Ok(f) => found = Some(f),
            Err(_) => {
                state.unbind(pod);
                scheduled = Scheduled::OnceGone;
            }
        }
    }
    let result = match found {
        Some(f) => Ok(f),
        None => schedule_watching(state, cache, replacement, seed, from),
    };
    // The last cycle run is the one that found the landing.
    let sampled = cache
        .serving(&replacement.scheduler_name)
        .and_then(|c| c.last_sample().cloned());
    let landing = result.map(|(choice, verdict)| {
        let Choice { node, score, tied } = choice;
        let to = pick_tied(state, &tied, seed).unwrap_or(node);
        Landing {
            to,
            score,
            tied,
            verdict,
            scheduled,
            sampled,
        }
    });
    (id, landing)
}

/// Undoes [`land`]: the replacement removed (its slot stays, dead), the
/// evicted pod bound on `from` again and no longer terminating.
pub fn rollback(state: &mut ClusterState, pod: PodId, from: NodeId, replacement: PodId) {
    if state.pod_node(replacement).is_some() {
        state.unbind(replacement);
    }
    state.remove_pod(replacement);
    if state.pod_node(pod).is_none() {
        state.bind(pod, from);
    }
    state.set_terminating(pod, false);
}

/// Where the replacement of `pod` would land in `state` now, leaving the
/// state as it was (the replacement's slot stays, dead): the landing rule
/// of [`land`] for tests and searches.
pub fn predict(
    state: &mut ClusterState,
    cache: &mut SchedulerCache,
    pod: PodId,
    stateful: bool,
    seed: u64,
) -> Option<Landing> {
    let from = state.pod_node(pod)?;
    let mut compiled = state.pod(pod).clone();
    compiled.name = format!("{}-replacement", compiled.name).into();
    compiled.node_name = None;
    compiled.terminating = false;
    let (id, landing) = land(state, cache, pod, from, &compiled, stateful, seed);
    rollback(state, pod, from, id);
    landing.ok()
}

/// The node the plan names among equally scored ones: the least hash of
/// the seed and the node's name (so a seed spreads such picks over the
/// cluster, and no pod's name takes part).
pub fn pick_tied(state: &ClusterState, tied: &[NodeId], seed: u64) -> Option<NodeId> {
    tied.iter()
        .copied()
        .min_by_key(|&n| (node_hash(seed, &state.node(n).name), n))
}

fn node_hash(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
