//! One world, built once: the loaded objects, the cluster state after every
//! waiting pod was placed, the placements, and a pod table every command
//! reads the same way.
//!
//! `place`, `why`, `lint`, `rebalance` and `simulate` all start from the same
//! thing: an [`Inventory`], compiled into the engine's [`ClusterState`], its
//! pending pods placed in queue order (so `why vault-2` sees vault-0 and
//! vault-1 bound, as the real cluster would). Each used to build that itself
//! and keep its own pod-indexed side tables (a `(namespace, name)` map to
//! the API objects, a `Vec` parallel to the cluster's pods). A [`World`]
//! does it once; commands add what only they need as [`PodColumn`]s keyed
//! by the same [`PodId`].
//!
//! A world is read with `&self`. A what-if (fix verification, a rollout
//! replay, an admission check) takes an [`World::overlay`]: a copy of the
//! state to change and schedule on, sharing the objects and the pod table
//! with the world, which stays as it was for every other reader.
//!
//! ```
//! use podplace_model::inventory::{Inventory, Origin, Sourced};
//! use podplace_world::World;
//!
//! let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
//!     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
//! })).unwrap();
//! let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "web", "namespace": "shop"},
//!     "spec": {"containers": [{"name": "c", "image": "nginx"}]}
//! })).unwrap();
//! let origin = Origin { file: String::new(), line: 0, column: 0 };
//! let mut inventory = Inventory::default();
//! inventory.nodes.push(Sourced { object: node, origin: origin.clone() });
//! inventory.pods.push(Sourced { object: pod, origin });
//!
//! // kube-scheduler without a configuration (a KubeSchedulerConfiguration
//! // gives its profiles and sampling: `SchedulerSetup::configured`).
//! let world = World::build(inventory, &podplace_world::SchedulerSetup::default(), 0).unwrap();
//! let web = world.find_pod("web", None).unwrap();
//! assert_eq!(world.pod_name(web), "shop/web");
//! assert_eq!(world.workload(web).to_string(), "Pod/shop/web");
//! assert!(world.placed_by_podplace(web));
//! assert_eq!(world.state().pod_node(web), world.state().node_id("n1"));
//!
//! // A what-if changes its own copy of the state; the world is unchanged.
//! let mut what_if = world.overlay();
//! what_if.state_mut().unbind(web);
//! assert_eq!(what_if.state().pod_node(web), None);
//! assert!(world.state().pod_node(web).is_some());
//! ```

pub mod apply;
pub mod column;
pub mod find;
mod live;
mod observe_packed;
pub mod pods;

use std::borrow::Cow;

use k8s_openapi::api::core::v1 as core;
use podplace_engine::{
    build_state_taking, schedule, ClusterState, Outcome, PlaceOptions, Placement, SchedulerCache,
};
use podplace_model::inventory::Inventory;
use podplace_model::objects::Pod;
use podplace_model::workloads::WorkloadRef;

pub use apply::{Action, Applied, ApplyError, Change, PodEvent};
pub use column::PodColumn;
pub use find::FindError;
pub use podplace_engine::{
    BuildError, NodeId, PodId, SchedulerSetup, StorageChange, StorageKind, StorageObject,
};
pub use pods::{Owner, PodRow, PodTable};

/// The objects, the placed cluster state and the pod table (see the crate doc).
#[derive(Debug, Clone)]
pub struct World {
    inventory: Inventory,
    state: ClusterState,
    /// What the placement cached; what-ifs start from a copy of it, so their
    /// first cycle does not recompute every node's static verdicts.
    cache: SchedulerCache,
    pods: PodTable,
    placements: Vec<Placement>,
    /// Per pod: its index in `placements` (pods that were waiting).
    placement_of: PodColumn<Option<usize>>,
    seed: u64,
    /// How long placing the waiting pods took.
    placing_seconds: f64,
    /// The indexes [`World::apply`] keeps (made at the first change;
    /// dropped when the world is changed another way, and made again).
    live: Option<Box<live::Live>>,
}

impl World {
    /// Compiles `inventory` into a cluster state and places every waiting
    /// pod in queue order with the scheduler `setup` describes (its
    /// profiles and sampling), choosing among equally scored nodes with
    /// `seed`.
    pub fn build(
        inventory: Inventory,
        setup: &SchedulerSetup,
        seed: u64,
    ) -> Result<World, BuildError> {
        World::build_with(
            inventory,
            setup,
            PlaceOptions {
                seed,
                keep_outcomes: false,
            },
        )
    }

    /// [`World::build`] with every [`PlaceOptions`] (`keep_outcomes` keeps
    /// each placement's full scheduling result).
    pub fn build_with(
        mut inventory: Inventory,
        setup: &SchedulerSetup,
        options: PlaceOptions,
    ) -> Result<World, BuildError> {
        let (mut state, pending) = build_state_taking(&mut inventory)?;
        let mut cache = SchedulerCache::for_setup(setup);
        let placing = std::time::Instant::now();
        // Identical replicas that cannot fit are decided once per state
        // (`replicas: 2000000000`), not filtered again one by one.
        let runs = podplace_engine::place::ReplicaRuns::of(&inventory, &state);
        let placements = podplace_engine::place::place_all_runs(
            &mut state, &mut cache, &pending, options, &runs,
        );
        let placing_seconds = placing.elapsed().as_secs_f64();
        let mut placement_of = PodColumn::from_fn(state.pod_slots(), |_| None);
        for (i, p) in placements.iter().enumerate() {
            placement_of[p.pod] = Some(i);
        }
        let pods = PodTable::new(&inventory, &state);
        // What building decoded of packed pods (the waiting ones) is given
        // back; readers decode what they read.
        inventory.pods.trim_decoded();
        Ok(World {
            inventory,
            state,
            cache,
            pods,
            placements,
            placement_of,
            seed: options.seed,
            placing_seconds,
            live: None,
        })
    }

    /// How long placing the waiting pods took (the rest of building is
    /// compiling the objects).
    pub fn placing_seconds(&self) -> f64 {
        self.placing_seconds
    }

    /// An empty world (no objects, no nodes, no pods) for a caller that
    /// builds it up change by change: the simulation, which adds nodes and
    /// pods as its controllers create them. Removed pods' slots are reused.
    pub fn empty(setup: &SchedulerSetup, seed: u64) -> World {
        World {
            inventory: Inventory::default(),
            state: ClusterState::new(),
            cache: SchedulerCache::for_setup(setup),
            pods: PodTable::default(),
            placements: Vec::new(),
            placement_of: PodColumn::default(),
            seed,
            placing_seconds: 0.0,
            live: None,
        }
    }

    /// The state, to change what does not add or remove pods: binding,
    /// unbinding, terminating, nodes, namespaces, selectors, interning.
    /// Pods are added and removed through [`World::add_pod`] and
    /// [`World::remove_pod`], so the pod table follows.
    pub fn state_mut(&mut self) -> &mut ClusterState {
        self.live = None;
        &mut self.state
    }

    /// The state (node changes accounted) and the cache, for the engine's
    /// scheduling entry points.
    pub fn parts(&mut self) -> (&ClusterState, &mut SchedulerCache) {
        self.state.settle();
        (&self.state, &mut self.cache)
    }

    /// Adds a compiled pod to the state and its row to the pod table: `row`
    /// when the caller knows the workload (a simulated controller's pod),
    /// else the pod's controlling owner or itself.
    pub fn add_pod(&mut self, pod: Pod, row: Option<PodRow>) -> PodId {
        self.live = None;
        let name = pod.name.clone();
        let id = self.state.add_pod(pod);
        let row = row.unwrap_or_else(|| {
            let (workload, owner) = pods::compiled_row(&self.state, id);
            PodRow {
                api: None,
                workload,
                owner,
            }
        });
        self.pods.insert(id, &name, row);
        if let Some(p) = self.placement_of.get_mut(id) {
            *p = None;
        }
        id
    }

    /// Removes a pod from the state and the pod table; its id may be given
    /// to a later pod.
    pub fn remove_pod(&mut self, id: PodId) {
        self.live = None;
        if self.state.pod_entry(id).is_none() {
            return;
        }
        let name = self.state.pod(id).name.clone();
        self.state.remove_pod(id);
        self.pods.remove(id, &name);
        if let Some(p) = self.placement_of.get_mut(id) {
            *p = None;
        }
    }

    /// Applies one watch event on a storage or claim object (a
    /// PersistentVolume, claim, class, CSI object or ResourceClaim) to the
    /// state: the available-volume index follows without being rebuilt.
    /// The loaded objects ([`World::inventory`]) stay as they were read;
    /// the state is what scheduling reads. For a delete, whether the object
    /// was there.
    pub fn apply_storage_change(
        &mut self,
        change: StorageChange<'_>,
    ) -> Result<bool, podplace_model::storage::StorageError> {
        self.state.apply_storage_change(change)
    }

    /// Everything loaded (workloads expanded into pods).
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    /// The cluster state after placement.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// What scheduling cached while placing (topology tables, per-node
    /// verdicts), for readers of those tables.
    pub fn cache(&self) -> &SchedulerCache {
        &self.cache
    }

    /// The scheduler this world is placed by: its profiles (which serves a
    /// pod's `spec.schedulerName`) and its sampling.
    pub fn setup(&self) -> &SchedulerSetup {
        self.cache.setup()
    }

    /// The profile serving a pod's `spec.schedulerName`, when the world's
    /// scheduler was configured (`None` without a configuration, where
    /// every pod is default-scheduler's, and for names no profile serves).
    pub fn configured_profile(&self, scheduler_name: &str) -> Option<&str> {
        let setup = self.setup();
        if !setup.configured {
            return None;
        }
        setup
            .serving(scheduler_name)
            .map(|p| p.scheduler_name.as_str())
    }

    /// The seed placement chose among equally scored nodes with; what-ifs
    /// schedule with it too, so they agree with the placement.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Where each waiting pod went, in load order.
    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }

    /// Where a pod that was waiting went; `None` for pods that were bound
    /// (or finished) in the input.
    pub fn placement(&self, id: PodId) -> Option<&Placement> {
        let i = (*self.placement_of.get(id)?)?;
        self.placements.get(i)
    }

    /// Whether podplace placed this pod (it was waiting in the input).
    pub fn placed_by_podplace(&self, id: PodId) -> bool {
        self.placement(id).is_some_and(|p| p.node.is_some())
    }

    /// Whether the pod was waiting for a scheduler no profile of the
    /// world's scheduler serves (`spec.schedulerName`), so podplace left it
    /// alone.
    pub fn other_scheduler(&self, id: PodId) -> bool {
        self.placement(id).is_some_and(|p| {
            p.node.is_none()
                && self
                    .setup()
                    .serving(&self.state.pod(id).scheduler_name)
                    .is_none()
        })
    }

    /// The pod table.
    pub fn pods(&self) -> &PodTable {
        &self.pods
    }

    /// A pod's row: API object, workload, owner.
    pub fn pod(&self, id: PodId) -> Option<&PodRow> {
        self.pods.get(id)
    }

    /// The bound of every [`PodId`] of this world, for [`PodColumn`]s.
    pub fn pod_slots(&self) -> usize {
        self.state.pod_slots()
    }

    /// A column with a value for every pod slot, made by `f`.
    pub fn column<T: Clone>(&self, f: impl FnMut(PodId) -> T) -> PodColumn<T> {
        PodColumn::from_fn(self.pod_slots(), f)
    }

    /// A live pod by namespace and name.
    pub fn pod_id(&self, namespace: &str, name: &str) -> Option<PodId> {
        self.state
            .pod_id(namespace, name)
            .filter(|&id| self.state.pod_entry(id).is_some())
    }

    /// `namespace/name` of a pod.
    pub fn pod_name(&self, id: PodId) -> String {
        pod_name(&self.state, id)
    }

    /// The API object a pod was compiled from, when it was loaded.
    pub fn api_pod(&self, id: PodId) -> Option<&core::Pod> {
        let i = self.pods.get(id)?.api?;
        self.inventory.pods.get(i).map(|p| &p.object)
    }

    /// The workload a pod belongs to (resolved through ReplicaSet to
    /// Deployment and Job to CronJob); for a pod without a row, its
    /// controlling owner or itself.
    pub fn workload(&self, id: PodId) -> Cow<'_, WorkloadRef> {
        match self.pods.get(id) {
            Some(row) => Cow::Borrowed(&row.workload),
            None => Cow::Owned(pods::compiled_row(&self.state, id).0),
        }
    }

    /// A what-if over this world: its own copy of the state (and of the
    /// scheduler cache) to change and schedule on, sharing the objects and
    /// pod table. The world itself is never changed by it.
    pub fn overlay(&self) -> WhatIf<'_> {
        WhatIf {
            base: self,
            state: self.state.overlay(),
            cache: self.cache.clone(),
        }
    }

    /// Gives the objects back (for a command that continues with them).
    pub fn into_inventory(self) -> Inventory {
        self.inventory
    }

    /// Gives the placed state and the scheduler cache away, for a caller
    /// that goes on changing them alone (a planner's what-if that needs no
    /// base to compare with: no copy is made).
    pub fn into_state(self) -> (ClusterState, SchedulerCache) {
        (self.state, self.cache)
    }
}

fn pod_name(state: &ClusterState, id: PodId) -> String {
    let pod = state.pod(id);
    format!("{}/{}", state.interner().resolve(pod.namespace), pod.name)
}

/// A what-if world: the base [`World`]'s objects and pod table, and a state
/// of its own (see [`World::overlay`]).
#[derive(Debug)]
pub struct WhatIf<'w> {
    base: &'w World,
    state: ClusterState,
    cache: SchedulerCache,
}

impl<'w> WhatIf<'w> {
    /// The world this what-if was taken from, as it was.
    pub fn base(&self) -> &'w World {
        self.base
    }

    /// The what-if's state.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// The what-if's state, to apply changes to (bind, unbind, add, remove,
    /// update): only this what-if sees them.
    pub fn state_mut(&mut self) -> &mut ClusterState {
        &mut self.state
    }

    /// The state (node changes accounted) and the cache, for the engine's
    /// entry points (`schedule_choice`, preemption).
    pub fn parts(&mut self) -> (&ClusterState, &mut SchedulerCache) {
        self.state.settle();
        (&self.state, &mut self.cache)
    }

    /// One scheduling cycle for `pod` on the what-if's state, with the
    /// world's seed.
    pub fn schedule(&mut self, pod: &Pod) -> Outcome {
        let seed = self.base.seed;
        let (state, cache) = self.parts();
        schedule(state, cache, pod, seed)
    }

    /// The what-if's state, kept after the what-if ends (a plan returns the
    /// state its moves lead to).
    pub fn into_state(self) -> ClusterState {
        self.state
    }

    /// A pod's row in the base world, when the what-if still holds that pod
    /// under the id (a pod it added, or one that reused a removed pod's
    /// slot, has none).
    pub fn pod(&self, id: PodId) -> Option<&'w PodRow> {
        let entry = self.state.pod_entry(id)?;
        let was = self.base.state.pod_entry(id)?;
        let same = entry.pod.namespace == was.pod.namespace && entry.pod.name == was.pod.name;
        if same {
            self.base.pod(id)
        } else {
            None
        }
    }

    /// `namespace/name` of a pod.
    pub fn pod_name(&self, id: PodId) -> String {
        pod_name(&self.state, id)
    }

    /// The workload a pod belongs to: the base world's answer for pods it
    /// knows, else the pod's controlling owner or itself.
    pub fn workload(&self, id: PodId) -> Cow<'w, WorkloadRef> {
        match self.pod(id) {
            Some(row) => Cow::Borrowed(&row.workload),
            None => Cow::Owned(pods::compiled_row(&self.state, id).0),
        }
    }

    /// The API object of a pod the base world loaded.
    pub fn api_pod(&self, id: PodId) -> Option<&'w core::Pod> {
        let i = self.pod(id)?.api?;
        self.base.inventory.pods.get(i).map(|p| &p.object)
    }
}

#[cfg(test)]
mod tests;
