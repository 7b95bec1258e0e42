//! The world an explanation is computed in: podplace-world's [`Base`] (the
//! loaded objects, the cluster after every waiting pod was placed in queue
//! order, so that `why vault-2` sees vault-0 and vault-1 bound as the real
//! cluster would, and the pod table), and a copy of its cluster state that
//! explanations unbind, schedule and verify fixes on.

use podplace_engine::cluster::{Cluster, PodId};
use podplace_engine::placement::BuildError;
use podplace_model::inventory::Inventory;
pub use podplace_world::FindError;
use podplace_world::World as Base;

/// A world ready to explain pods in.
#[derive(Debug)]
pub struct World {
    /// The objects, the placed cluster and the pod table (API objects,
    /// workloads, lookup by name), as built; explanations never change it.
    pub base: Base,
    /// A copy of the placed state (an overlay of `base`'s) that an
    /// explanation takes its pod off, schedules on and tries fixes on.
    pub cluster: Cluster,
}

impl World {
    /// Builds the cluster and places every waiting pod in queue order.
    pub fn new(inventory: Inventory, seed: u64) -> Result<Self, BuildError> {
        let base = Base::build(inventory, seed)?;
        let cluster = Cluster::from_state(base.state().overlay());
        Ok(World { base, cluster })
    }

    /// Seed for choosing among equally scored nodes.
    pub fn seed(&self) -> u64 {
        self.base.seed()
    }

    /// Whether podplace placed this pod (it was waiting in the input).
    pub fn placed_by_podplace(&self, id: PodId) -> bool {
        self.base.placed_by_podplace(id)
    }

    /// Whether the pod asks for a scheduler other than kube-scheduler.
    pub fn other_scheduler(&self, id: PodId) -> bool {
        self.base.other_scheduler(id)
    }

    /// Finds a pod given as `name` or `ns/name`; `namespace` is `-n`. A bare
    /// name without `-n` is looked up in `default`, then in every namespace
    /// when it is unique there.
    pub fn find_pod(&self, pod: &str, namespace: Option<&str>) -> Result<PodId, FindError> {
        self.base.find_pod(pod, namespace)
    }
}
