//! The world an explanation is computed in: podplace-world's [`Base`] (the
//! loaded objects, the cluster after every waiting pod was placed in queue
//! order, so that `why vault-2` sees vault-0 and vault-1 bound as the real
//! cluster would, and the pod table). Each explanation takes a what-if of it
//! ([`Base::overlay`]) to unbind its pod, schedule and verify fixes on.

use podplace_engine::{BuildError, PodId, SchedulerSetup};
use podplace_model::inventory::Inventory;
pub use podplace_world::FindError;
use podplace_world::World as Base;

/// A world ready to explain pods in.
#[derive(Debug)]
pub struct World {
    /// The objects, the placed cluster and the pod table (API objects,
    /// workloads, lookup by name), as built; explanations never change it.
    pub base: Base,
}

impl World {
    /// Builds the cluster and places every waiting pod in queue order,
    /// with the scheduler `setup` describes (profiles, sampling).
    pub fn new(
        inventory: Inventory,
        setup: &SchedulerSetup,
        seed: u64,
    ) -> Result<Self, BuildError> {
        Ok(World {
            base: Base::build(inventory, setup, seed)?,
        })
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
