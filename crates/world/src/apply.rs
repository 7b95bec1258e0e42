//! The world as a watch keeps it: built from the cluster as it is
//! ([`World::observed`], pending pods left unbound) and changed one watch
//! event at a time ([`World::apply`]) — never rebuilt.
//!
//! `podplace serve` answers from the real cluster: what is bound is bound,
//! what is pending waits. Each event updates the engine's indexes (a bind,
//! a deletion, a label or taint change), the inventory (each object in
//! place, a deleted one swapped out with its index moved), the pod table
//! (API index, workload through ReplicaSet → Deployment and Job → CronJob)
//! and the side indexes of [`crate::live`], at the cost of the object and
//! what it touches:
//! - a pod: its terms, labels and groups; a node: the pods bound to it
//!   (removing a node also walks the pod slots once, in the engine);
//! - a Service or a ReplicationController, ReplicaSet or StatefulSet: the
//!   pending pods of its namespace (their default spread follows it), and
//!   for a ReplicaSet or Job the rows of the pods it controls;
//! - a namespace whose labels changed: the kept groups whose term selects
//!   namespaces by label are counted again;
//! - storage and claim objects: the engine's per-object changes.
//!
//! PriorityClasses and RuntimeClasses are kept in the inventory only: the
//! API server resolved them into each pod when it was created
//! (`spec.priority`, `spec.overhead`, the RuntimeClass's node selector and
//! tolerations), which is what a pod compiles from, and a later change of
//! a class does not change pods that exist (kube-apiserver's Priority and
//! RuntimeClass admission run at creation only). What-ifs that admit a new
//! pod read the classes from the inventory, so they see the change.

use k8s_openapi::api::core::v1 as core;
use podplace_engine::{
    build_state, BuildError, NodeId, PodId, SchedulerCache, SchedulerSetup, StorageChange,
    StorageKind, StorageObject,
};
use podplace_model::inventory::{Inventory, Object, ObjectKey, ObjectKind, Origin};
use podplace_model::objects::CompileError;
use podplace_model::storage::StorageError;
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use thiserror::Error;

use crate::column::PodColumn;
use crate::live::{self, Live};
use crate::pods::{self, PodRow, PodTable};
use crate::World;

/// One watch event: an object added or modified (as it is now), or deleted.
/// (Events are moved, not stored: the size of [`Object`] is not boxed away.)
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Change {
    /// Added or modified.
    Upsert(Object),
    /// Deleted.
    Delete(ObjectKey),
}

/// What one [`Change`] did to the object it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The world did not have it; now it does.
    Added,
    /// The world had it; it is replaced.
    Updated,
    /// The world had it; it is gone.
    Deleted,
    /// A delete of an object the world did not have (nothing changed).
    Absent,
}

/// What happened to one pod through a [`Change`], so a caller can react
/// (explain a pod that became pending, forget one that went).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodEvent {
    /// The pod is pending now (added unbound, or unbound because its node
    /// went).
    Pending,
    /// The pod is bound to this node now (added bound, bound by the
    /// scheduler, or its node arrived).
    Bound(NodeId),
    /// The pod changed and stayed as bound or pending as it was.
    Updated,
    /// The pod is gone (its id may be given to a later pod).
    Removed,
}

/// What [`World::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The object the change named.
    pub key: ObjectKey,
    /// What happened to it.
    pub action: Action,
    /// The pods whose binding or existence changed (the pod itself for a
    /// pod; the pods of a node that came or went).
    pub pods: Vec<(PodId, PodEvent)>,
}

/// Why a change could not be applied. The world stays consistent: an
/// object that no longer compiles is dropped from it (as if deleted).
#[derive(Debug, Error)]
pub enum ApplyError {
    /// The object has no name.
    #[error("{kind}: metadata.name is empty")]
    NoName {
        /// The object's kind.
        kind: &'static str,
    },
    /// The object could not be compiled (a bad quantity or selector).
    #[error("{object}: {source}")]
    Compile {
        /// `Kind/namespace/name`.
        object: ObjectKey,
        /// What was wrong.
        source: CompileError,
    },
    /// A storage or claim object could not be compiled.
    #[error("{object}: {source}")]
    Storage {
        /// `Kind/namespace/name`.
        object: ObjectKey,
        /// What was wrong.
        source: Box<StorageError>,
    },
}

/// The most packed pods a watch-fed world keeps decoded between changes
/// (about 200 MB at 12 KB a decoded pod): enough for serve's explainer to
/// read every Pending pod of a large cluster once, not again at each tick;
/// a reader that walks every pod (160,000 at the benchmark's scale) has
/// its decodings given back at the next change.
pub const KEEP_DECODED: usize = 16_384;

impl World {
    /// The cluster as it is, for a watch-fed model's initial sync: the
    /// objects compiled as [`World::build`] compiles them, but no waiting
    /// pod is placed — pending pods stay unbound, and
    /// [`World::placements`] is empty. Changes then go through
    /// [`World::apply`].
    pub fn observed(
        inventory: Inventory,
        setup: &SchedulerSetup,
        seed: u64,
    ) -> Result<World, BuildError> {
        let (state, _pending) = build_state(&inventory)?;
        let pods = PodTable::new(&inventory, &state);
        let mut world = World {
            inventory,
            state,
            cache: SchedulerCache::for_setup(setup),
            pods,
            placements: Vec::new(),
            placement_of: PodColumn::default(),
            seed,
            placing_seconds: 0.0,
            live: None,
        };
        world.live = Some(Box::new(Live::index(&world)));
        Ok(world)
    }

    /// The keys of every object of `kind` the world holds, for reconciling
    /// a re-list: what the new list lacks was deleted meanwhile. Sorted
    /// when the apply indexes exist (they hold every key, so packed pods
    /// are not decoded); in inventory order otherwise.
    pub fn keys(&self, kind: ObjectKind) -> Vec<ObjectKey> {
        if let Some(live) = &self.live {
            let mut keys: Vec<ObjectKey> =
                live.at.keys().filter(|k| k.kind == kind).cloned().collect();
            keys.sort_unstable();
            return keys;
        }
        (0..self.inventory.count(kind))
            .filter_map(|i| self.inventory.metadata_at(kind, i))
            .map(|meta| ObjectKey::of(kind, &meta))
            .collect()
    }

    /// Keeps the world's pods packed (`true`: each as its JSON, decoded
    /// when read; see [`podplace_model::pod_list`]) or as objects. A
    /// watch-fed world that lives as long as `podplace serve` packs them:
    /// about a quarter of the memory, the same objects to every reader
    /// (packing is lossless). What readers decode is kept for the next
    /// reader (serve's explainer reads every Pending pod at each tick), a
    /// changed pod's decoding dropped with it, until more than
    /// [`KEEP_DECODED`] pods are held decoded: then the next change gives
    /// them all back. The indexes [`World::apply`] keeps are made first,
    /// so they are not made from packed pods.
    pub fn set_packed_pods(&mut self, packed: bool) {
        if self.live.is_none() {
            self.live = Some(Box::new(Live::index(self)));
        }
        self.inventory.pods.set_packed(packed);
    }

    /// Applies one watch event incrementally (see the module doc for what
    /// each kind touches). A world made by [`World::build`] indexes its
    /// objects at its first change.
    pub fn apply(&mut self, change: Change) -> Result<Applied, ApplyError> {
        // What readers decoded of packed pods is given back once it
        // grows past the bound (see `set_packed_pods`).
        self.inventory.pods.trim_decoded_over(KEEP_DECODED);
        let mut live = match self.live.take() {
            Some(live) => live,
            None => Box::new(Live::index(self)),
        };
        let result = self.apply_with(&mut live, change);
        self.live = Some(live);
        result
    }

    fn apply_with(&mut self, live: &mut Live, change: Change) -> Result<Applied, ApplyError> {
        let key = match &change {
            Change::Upsert(o) => o.key(),
            Change::Delete(k) => k.clone(),
        };
        if key.name.is_empty() {
            return Err(ApplyError::NoName {
                kind: key.kind.name(),
            });
        }
        let mut applied = Applied {
            key: key.clone(),
            action: if live.at.contains_key(&key) {
                Action::Updated
            } else {
                Action::Added
            },
            pods: Vec::new(),
        };
        let object = match change {
            Change::Upsert(o) => o,
            Change::Delete(_) => {
                applied.action = if live.at.contains_key(&key) {
                    Action::Deleted
                } else {
                    Action::Absent
                };
                if applied.action == Action::Deleted {
                    self.delete(live, &key, &mut applied.pods);
                }
                return Ok(applied);
            }
        };
        match self.upsert(live, &key, object, &mut applied.pods) {
            Ok(()) => Ok(applied),
            Err(e) => {
                // What no longer compiles leaves the world whole.
                if live.at.contains_key(&key) {
                    self.delete(live, &key, &mut applied.pods);
                }
                Err(e)
            }
        }
    }

    /// Adds or replaces `object` in its kind's inventory list; the object
    /// it replaced.
    fn put(&mut self, live: &mut Live, key: &ObjectKey, object: Object) -> Option<Object> {
        match live.at.get(key) {
            Some(&i) => self.inventory.replace(i, object),
            None => {
                live.at.insert(key.clone(), self.inventory.count(key.kind));
                self.inventory.push(object, Origin::default());
                None
            }
        }
    }

    /// Takes an object out of the inventory; the last object of its list
    /// moves into its place (its index, and a pod's row, follow).
    fn take(&mut self, live: &mut Live, key: &ObjectKey) -> Option<Object> {
        let i = live.at.remove(key)?;
        let removed = self.inventory.swap_remove(key.kind, i)?;
        if let Some(meta) = self.inventory.metadata_at(key.kind, i) {
            let moved = ObjectKey::of(key.kind, &meta);
            if key.kind == ObjectKind::Pod {
                if let Some(id) = self.pod_id(&moved.namespace, &moved.name) {
                    if let Some(row) = self.pods.row_mut(id) {
                        row.api = Some(i);
                    }
                }
            }
            live.at.insert(moved, i);
        }
        Some(removed)
    }

    fn upsert(
        &mut self,
        live: &mut Live,
        key: &ObjectKey,
        object: Object,
        events: &mut Vec<(PodId, PodEvent)>,
    ) -> Result<(), ApplyError> {
        let compile = |source| ApplyError::Compile {
            object: key.clone(),
            source,
        };
        let storage = |source| ApplyError::Storage {
            object: key.clone(),
            source: Box::new(source),
        };
        match object {
            Object::Pod(pod) => self.upsert_pod(live, key, pod, events),
            Object::Node(node) => {
                match self.state.node_id(&key.name) {
                    Some(id) => self.state.update_node(id, &node).map_err(compile)?,
                    None => {
                        let id = self.state.add_node(&node).map_err(compile)?;
                        self.bind_waiting(live, &key.name, id, events);
                    }
                }
                self.put(live, key, Object::Node(node));
                Ok(())
            }
            Object::Namespace(ns) => {
                let changed = match live.at.get(key) {
                    Some(&i) => {
                        self.inventory.namespaces[i].object.metadata.labels != ns.metadata.labels
                    }
                    None => true,
                };
                self.state.add_namespace(&ns);
                self.put(live, key, Object::Namespace(ns));
                if changed {
                    self.state.recount_namespace_groups();
                }
                Ok(())
            }
            Object::Service(svc) => {
                let mut selectors = vec![service_selector(&svc)];
                if let Some(old) = live
                    .at
                    .get(key)
                    .and_then(|&i| self.inventory.services.get(i))
                {
                    self.state.remove_service(&old.object);
                    selectors.push(service_selector(&old.object));
                }
                self.state.add_service(&svc);
                self.put(live, key, Object::Service(svc));
                self.refresh_pending(live, &key.namespace, &Affected::Selected(selectors));
                Ok(())
            }
            Object::ReplicationController(rc) => {
                self.state
                    .remove_replication_controller(&key.namespace, &key.name);
                self.state.add_replication_controller(&rc);
                self.put(live, key, Object::ReplicationController(rc));
                self.refresh_owned_pending(live, key);
                Ok(())
            }
            Object::ReplicaSet(rs) => {
                self.state.remove_replica_set(&key.namespace, &key.name);
                let result = self.state.add_replica_set(&rs).map_err(compile);
                if result.is_ok() {
                    self.put(live, key, Object::ReplicaSet(rs));
                }
                self.refresh_owned_pending(live, key);
                self.refresh_rows(live, key);
                result
            }
            Object::StatefulSet(sts) => {
                self.state.remove_stateful_set(&key.namespace, &key.name);
                let result = self.state.add_stateful_set(&sts).map_err(compile);
                if result.is_ok() {
                    self.put(live, key, Object::StatefulSet(sts));
                }
                self.refresh_owned_pending(live, key);
                result
            }
            Object::Job(job) => {
                self.put(live, key, Object::Job(job));
                self.refresh_rows(live, key);
                Ok(())
            }
            object @ (Object::PersistentVolume(_)
            | Object::PersistentVolumeClaim(_)
            | Object::StorageClass(_)
            | Object::CSINode(_)
            | Object::CSIDriver(_)
            | Object::CSIStorageCapacity(_)
            | Object::ResourceClaim(_)) => {
                if let Some(view) = storage_object(&object) {
                    let change = StorageChange::Upsert(view);
                    self.state.apply_storage_change(change).map_err(storage)?;
                }
                self.put(live, key, object);
                Ok(())
            }
            Object::DeviceClass(o) => {
                self.state
                    .storage_mut()
                    .device_classes
                    .insert(key.name.as_str().into());
                self.put(live, key, Object::DeviceClass(o));
                Ok(())
            }
            Object::ResourceSlice(o) => {
                self.put(live, key, Object::ResourceSlice(o));
                self.state.storage_mut().resource_slices =
                    self.inventory.count(ObjectKind::ResourceSlice);
                Ok(())
            }
            // Read from the inventory only (see the module doc for the
            // classes; Deployments, DaemonSets, CronJobs and budgets are
            // read by the features, not by scheduling).
            other @ (Object::PriorityClass(_)
            | Object::RuntimeClass(_)
            | Object::PodDisruptionBudget(_)
            | Object::Deployment(_)
            | Object::DaemonSet(_)
            | Object::CronJob(_)) => {
                self.put(live, key, other);
                Ok(())
            }
        }
    }

    fn delete(&mut self, live: &mut Live, key: &ObjectKey, events: &mut Vec<(PodId, PodEvent)>) {
        let (ns, name) = (key.namespace.as_str(), key.name.as_str());
        let storage = |kind| StorageChange::Delete {
            kind,
            namespace: ns,
            name,
        };
        match key.kind {
            ObjectKind::Pod => {
                let old = self.take(live, key);
                if let Some(id) = self.pod_id(ns, name) {
                    if let Some(Object::Pod(api)) = &old {
                        live.forget_pod(id, api);
                    }
                    self.remove_pod(id);
                    events.push((id, PodEvent::Removed));
                }
                return;
            }
            ObjectKind::Node => {
                if let Some(id) = self.state.node_id(name) {
                    for p in self.state.remove_node(id) {
                        live.waiting
                            .get_or_insert_with(name.to_string(), Default::default)
                            .insert(p);
                        live.track(&self.state, p);
                        events.push((p, PodEvent::Pending));
                    }
                }
            }
            ObjectKind::Namespace => {
                self.state.remove_namespace(name);
                self.take(live, key);
                self.state.recount_namespace_groups();
                return;
            }
            ObjectKind::Service => {
                let mut selectors = Vec::new();
                if let Some(old) = live
                    .at
                    .get(key)
                    .and_then(|&i| self.inventory.services.get(i))
                {
                    self.state.remove_service(&old.object);
                    selectors.push(service_selector(&old.object));
                }
                self.take(live, key);
                self.refresh_pending(live, ns, &Affected::Selected(selectors));
                return;
            }
            ObjectKind::ReplicationController => {
                self.state.remove_replication_controller(ns, name);
                self.take(live, key);
                self.refresh_owned_pending(live, key);
                return;
            }
            ObjectKind::ReplicaSet => {
                self.state.remove_replica_set(ns, name);
                self.take(live, key);
                self.refresh_owned_pending(live, key);
                self.refresh_rows(live, key);
                return;
            }
            ObjectKind::StatefulSet => {
                self.state.remove_stateful_set(ns, name);
                self.take(live, key);
                self.refresh_owned_pending(live, key);
                return;
            }
            ObjectKind::Job => {
                self.take(live, key);
                self.refresh_rows(live, key);
                return;
            }
            kind @ (ObjectKind::PersistentVolume
            | ObjectKind::PersistentVolumeClaim
            | ObjectKind::StorageClass
            | ObjectKind::CSINode
            | ObjectKind::CSIDriver
            | ObjectKind::CSIStorageCapacity
            | ObjectKind::ResourceClaim) => {
                if let Some(kind) = storage_kind(kind) {
                    let _ = self.state.apply_storage_change(storage(kind));
                }
            }
            ObjectKind::DeviceClass => {
                self.state.storage_mut().device_classes.remove(name);
            }
            ObjectKind::ResourceSlice => {
                self.take(live, key);
                self.state.storage_mut().resource_slices =
                    self.inventory.count(ObjectKind::ResourceSlice);
                return;
            }
            ObjectKind::PriorityClass
            | ObjectKind::RuntimeClass
            | ObjectKind::PodDisruptionBudget
            | ObjectKind::Deployment
            | ObjectKind::DaemonSet
            | ObjectKind::CronJob => {}
        }
        self.take(live, key);
    }

    fn upsert_pod(
        &mut self,
        live: &mut Live,
        key: &ObjectKey,
        api: core::Pod,
        events: &mut Vec<(PodId, PodEvent)>,
    ) -> Result<(), ApplyError> {
        let existing = self.pod_id(&key.namespace, &key.name);
        if let (Some(id), Some(&i)) = (existing, live.at.get(key)) {
            if self
                .inventory
                .pods
                .get(i)
                .is_some_and(|old| same_scheduling_inputs(&old.object, &api))
            {
                // Most pod events change only its status (conditions,
                // container states): the compiled pod would be the same.
                self.inventory.replace(i, Object::Pod(api));
                events.push((id, PodEvent::Updated));
                return Ok(());
            }
        }
        let mut pod = self
            .state
            .compile_pod(&api)
            .map_err(|source| ApplyError::Compile {
                object: key.clone(),
                source,
            })?;
        let named = live::named_node(&api).map(str::to_string);
        let target = named.as_deref().and_then(|n| self.state.node_id(n));
        let id = match existing {
            Some(id) => {
                let was = self.state.pod_node(id);
                if let Some(old) = live.at.get(key).and_then(|&i| self.inventory.pods.get(i)) {
                    live.forget_pod(id, &old.object);
                }
                // A pod is never moved; one with another node (or none)
                // under the same name was deleted and created again.
                if was.is_some() && was != target {
                    self.state.unbind(id);
                }
                if self.state.pod_node(id).is_none() && target.is_some() {
                    pod.node_name = None;
                    self.state.update_pod(id, pod);
                    if let Some(node) = target {
                        self.state.bind_observed(id, node);
                    }
                } else {
                    self.state.update_pod(id, pod);
                }
                let now = self.state.pod_node(id);
                events.push((
                    id,
                    match (was, now) {
                        (_, Some(n)) if was != now => PodEvent::Bound(n),
                        (Some(_), None) => PodEvent::Pending,
                        _ => PodEvent::Updated,
                    },
                ));
                id
            }
            None => {
                let id = self.state.add_pod(pod);
                let (_, owner) = pods::compiled_row(&self.state, id);
                let name = self.state.pod(id).name.clone();
                self.pods.insert(
                    id,
                    &name,
                    PodRow {
                        api: None,
                        workload: WorkloadRef::new(WorkloadKind::Pod, "", ""),
                        owner,
                    },
                );
                if let Some(p) = self.placement_of.get_mut(id) {
                    *p = None;
                }
                events.push((
                    id,
                    match self.state.pod_node(id) {
                        Some(n) => PodEvent::Bound(n),
                        None => PodEvent::Pending,
                    },
                ));
                id
            }
        };
        let workload = self.workload_of(live, &api);
        live.note_pod(&self.state, id, &api);
        self.put(live, key, Object::Pod(api));
        let (_, owner) = pods::compiled_row(&self.state, id);
        if let Some(row) = self.pods.row_mut(id) {
            row.api = live.at.get(key).copied();
            row.workload = workload;
            row.owner = owner;
        }
        Ok(())
    }

    /// Binds the pods that named a node the world did not have, now that
    /// it came.
    fn bind_waiting(
        &mut self,
        live: &mut Live,
        name: &str,
        node: NodeId,
        events: &mut Vec<(PodId, PodEvent)>,
    ) {
        let Some(ids) = live.waiting.remove(name) else {
            return;
        };
        let mut ids: Vec<PodId> = ids.into_iter().collect();
        ids.sort();
        for id in ids {
            if self.state.bind_observed(id, node) {
                live.track(&self.state, id);
                events.push((id, PodEvent::Bound(node)));
            }
        }
    }

    /// Takes anew the groups the pending pods of `namespace` that a
    /// Service's selectors (before and after) select need: their default
    /// spread selector follows the Services. Cost: the namespace's pending
    /// pods, and the groups of those selected.
    fn refresh_pending(&mut self, live: &Live, namespace: &str, affected: &Affected) {
        let Some(ids) = live.pending.get(namespace) else {
            return;
        };
        let mut ids: Vec<PodId> = ids
            .iter()
            .copied()
            .filter(|&id| match affected {
                Affected::Selected(selectors) => {
                    let labels = self.api_pod(id).and_then(|p| p.metadata.labels.as_ref());
                    selectors.iter().flatten().any(|sel| {
                        sel.iter()
                            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
                    })
                }
                Affected::Owned(kind, name) => self
                    .state
                    .pod(id)
                    .owner
                    .as_ref()
                    .is_some_and(|o| &*o.kind == *kind && &*o.name == *name),
            })
            .collect();
        ids.sort();
        for id in ids {
            self.state.refresh_pending(id);
        }
    }

    /// [`World::refresh_pending`] for the pending pods a
    /// ReplicationController, ReplicaSet or StatefulSet owns (its selector
    /// is their default spread's).
    fn refresh_owned_pending(&mut self, live: &Live, key: &ObjectKey) {
        let affected = Affected::Owned(key.kind.name(), &key.name);
        self.refresh_pending(live, &key.namespace, &affected);
    }

    /// Resolves the workload rows of the pods a ReplicaSet or Job controls
    /// again (its Deployment or CronJob came, changed or went).
    fn refresh_rows(&mut self, live: &Live, key: &ObjectKey) {
        let controller = (key.kind, key.namespace.clone(), key.name.clone());
        let Some(ids) = live.owned.get(&controller) else {
            return;
        };
        let workload = self.controller_workload(live, key.kind, &key.namespace, &key.name);
        for &id in ids {
            if let Some(row) = self.pods.row_mut(id) {
                row.workload = workload.clone();
            }
        }
    }

    /// The workload of an API pod as [`podplace_model::workloads::Workloads::of`]
    /// resolves it, from the indexed controllers.
    fn workload_of(&self, live: &Live, pod: &core::Pod) -> WorkloadRef {
        let namespace = live::namespace_of(&pod.metadata);
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        match owner {
            None => WorkloadRef::new(
                WorkloadKind::Pod,
                namespace,
                pod.metadata.name.clone().unwrap_or_default(),
            ),
            Some(o) => match o.kind.as_str() {
                "ReplicaSet" => {
                    self.controller_workload(live, ObjectKind::ReplicaSet, namespace, &o.name)
                }
                "Job" => self.controller_workload(live, ObjectKind::Job, namespace, &o.name),
                kind => WorkloadRef::new(WorkloadKind::of(kind), namespace, o.name.clone()),
            },
        }
    }

    /// A ReplicaSet's Deployment or a Job's CronJob (its controlling
    /// owner of that kind), else the controller itself.
    fn controller_workload(
        &self,
        live: &Live,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> WorkloadRef {
        let key = ObjectKey {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let (meta, parent) = match (kind, live.at.get(&key)) {
            (ObjectKind::ReplicaSet, Some(&i)) => (
                self.inventory
                    .replica_sets
                    .get(i)
                    .map(|o| &o.object.metadata),
                WorkloadKind::Deployment,
            ),
            (ObjectKind::Job, Some(&i)) => (
                self.inventory.jobs.get(i).map(|o| &o.object.metadata),
                WorkloadKind::CronJob,
            ),
            _ => (None, WorkloadKind::Pod),
        };
        let owner = meta.and_then(|m| {
            m.owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true) && WorkloadKind::of(&o.kind) == parent)
        });
        match owner {
            Some(o) => WorkloadRef::new(parent, namespace, o.name.clone()),
            None => WorkloadRef::new(WorkloadKind::of(kind.name()), namespace, name),
        }
    }
}

/// The storage index's kind of a storage or claim object kind; `None` for
/// the other kinds.
fn storage_kind(kind: ObjectKind) -> Option<StorageKind> {
    Some(match kind {
        ObjectKind::PersistentVolume => StorageKind::PersistentVolume,
        ObjectKind::PersistentVolumeClaim => StorageKind::PersistentVolumeClaim,
        ObjectKind::StorageClass => StorageKind::StorageClass,
        ObjectKind::CSINode => StorageKind::CsiNode,
        ObjectKind::CSIDriver => StorageKind::CsiDriver,
        ObjectKind::CSIStorageCapacity => StorageKind::CsiStorageCapacity,
        ObjectKind::ResourceClaim => StorageKind::ResourceClaim,
        _ => return None,
    })
}

/// What the storage index reads of a storage or claim object; `None` for
/// the other kinds.
fn storage_object(object: &Object) -> Option<StorageObject<'_>> {
    Some(match object {
        Object::PersistentVolume(o) => StorageObject::PersistentVolume(o),
        Object::PersistentVolumeClaim(o) => StorageObject::PersistentVolumeClaim(o),
        Object::StorageClass(o) => StorageObject::StorageClass(o),
        Object::CSINode(o) => StorageObject::CsiNode(o),
        Object::CSIDriver(o) => StorageObject::CsiDriver(o),
        Object::CSIStorageCapacity(o) => StorageObject::CsiStorageCapacity(o),
        Object::ResourceClaim(o) => StorageObject::ResourceClaim(o),
        _ => return None,
    })
}

/// Whether two versions of a pod compile alike: the same metadata the
/// compiled pod reads (name, namespace, uid, labels, owners, deletion),
/// the same spec, and the same phase and claim statuses.
fn same_scheduling_inputs(old: &core::Pod, new: &core::Pod) -> bool {
    let (a, b) = (&old.metadata, &new.metadata);
    let status = |p: &core::Pod| {
        p.status
            .as_ref()
            .map(|s| (s.phase.clone(), s.resource_claim_statuses.clone()))
    };
    a.name == b.name
        && a.namespace == b.namespace
        && a.uid == b.uid
        && a.labels == b.labels
        && a.owner_references == b.owner_references
        && a.deletion_timestamp == b.deletion_timestamp
        && old.spec == new.spec
        && status(old) == status(new)
}

/// Which pending pods a change of default spreading's inputs may concern.
enum Affected<'a> {
    /// Those a Service's selector selects (before or after the change; a
    /// Service without a selector selects none).
    Selected(Vec<Option<std::collections::BTreeMap<String, String>>>),
    /// Those a controller of this kind and name owns.
    Owned(&'static str, &'a str),
}

/// A Service's pod selector (`None`: it has none).
fn service_selector(svc: &core::Service) -> Option<std::collections::BTreeMap<String, String>> {
    svc.spec.as_ref().and_then(|s| s.selector.clone())
}
