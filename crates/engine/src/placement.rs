//! Transition facade over [`crate::place`]: building and placing with the
//! [`Cluster`] facade, as callers used them before the split.

use podplace_model::inventory::Inventory;

use crate::cluster::Cluster;
use crate::ids::PodId;

pub use crate::place::{BuildError, PlaceOptions, Placement, DEFAULT_SCHEDULER};

/// [`crate::place::build_state`] wrapped in the facade.
pub fn build_cluster(inv: &Inventory) -> Result<(Cluster, Vec<PodId>), BuildError> {
    let (state, pending) = crate::place::build_state(inv)?;
    Ok((Cluster::from_state(state), pending))
}

/// [`crate::place::place_all`] on the facade's state and cache.
pub fn place_all(
    cluster: &mut Cluster,
    pending: &[PodId],
    options: PlaceOptions,
) -> Vec<Placement> {
    let (state, cache) = cluster.parts_mut();
    crate::place::place_all(state, cache, pending, options)
}
