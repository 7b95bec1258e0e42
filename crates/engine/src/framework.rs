//! Transition facade over [`crate::cycle`]: the scheduling entry points
//! taking the [`Cluster`] facade (state and cache together), as callers
//! used them before the split. New code calls [`crate::cycle::schedule`]
//! with a [`crate::state::ClusterState`] and a [`crate::cache::SchedulerCache`].

use podplace_model::objects::Pod;

use crate::cluster::Cluster;
use crate::ids::NodeId;

pub use crate::cycle::{
    run_filters, weight, Choice, CycleState, NodeScore, Outcome, Scratch, Verdict,
};

/// [`crate::cycle::schedule`] on the facade's state and cache.
pub fn schedule(cluster: &mut Cluster, pod: &Pod, seed: u64) -> Outcome {
    let (state, cache) = cluster.parts();
    crate::cycle::schedule(state, cache, pod, seed)
}

/// [`crate::cycle::schedule_choice`] on the facade's state and cache.
pub fn schedule_choice(
    cluster: &mut Cluster,
    pod: &Pod,
    seed: u64,
) -> Result<Choice, Box<Outcome>> {
    let (state, cache) = cluster.parts();
    crate::cycle::schedule_choice(state, cache, pod, seed)
}

/// [`crate::cycle::schedule_watching`] on the facade's state and cache.
pub fn schedule_watching(
    cluster: &mut Cluster,
    pod: &Pod,
    seed: u64,
    watched: NodeId,
) -> Result<(Choice, Option<Verdict>), Box<Outcome>> {
    let (state, cache) = cluster.parts();
    crate::cycle::schedule_watching(state, cache, pod, seed, watched)
}
