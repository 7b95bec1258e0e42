//! The typed objects of one world, as loaded from files, a snapshot or a live
//! cluster, before they are compiled into the engine's compact form.
//!
//! Everything here is a plain `k8s-openapi` type so that loaders, the live
//! client and tests all speak the Kubernetes API's own vocabulary.

use crate::cow::Chunked;
use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub use crate::pod_list::PodList;

/// The objects of one kind, in load order: shared copy-on-write by chunks
/// ([`Chunked`]), so a copy of an inventory (serve's admission view of its
/// model) copies no object, and a change after it copies one chunk.
pub type List<T> = Chunked<Sourced<T>>;

/// The list of one kind's objects, as [`Inventory`]'s per-kind methods
/// use it: a [`List`] for every kind, a [`PodList`] for pods.
trait KindList<T> {
    /// The metadata of the `i`th object.
    fn meta_at(&self, i: usize) -> Option<Cow<'_, ObjectMeta>>;
    /// Puts `object` in place of the `i`th; the old one.
    fn put(&mut self, i: usize, object: T) -> Option<T>;
    /// Removes the `i`th object (the last takes its place), if any.
    fn take(&mut self, i: usize) -> Option<T>;
}

impl<T: k8s_openapi::Metadata<Ty = ObjectMeta> + Clone> KindList<T> for List<T> {
    fn meta_at(&self, i: usize) -> Option<Cow<'_, ObjectMeta>> {
        self.get(i).map(|o| Cow::Borrowed(o.object.metadata()))
    }
    fn put(&mut self, i: usize, object: T) -> Option<T> {
        self.get_mut(i)
            .map(|slot| std::mem::replace(&mut slot.object, object))
    }
    fn take(&mut self, i: usize) -> Option<T> {
        self.swap_remove(i).map(|s| s.object)
    }
}

impl KindList<Pod> for PodList {
    fn meta_at(&self, i: usize) -> Option<Cow<'_, ObjectMeta>> {
        self.metadata(i)
    }
    fn put(&mut self, i: usize, object: Pod) -> Option<Pod> {
        self.replace(i, object)
    }
    fn take(&mut self, i: usize) -> Option<Pod> {
        (i < self.len()).then(|| self.swap_remove(i).object)
    }
}

/// Where an object came from, so messages can point back at it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// File path as given by the user (`-` for stdin), empty for objects built in memory.
    pub file: String,
    /// 1-based line of the object's first line in that file, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
}

/// An object together with where it was read from.
#[derive(Debug, Clone)]
pub struct Sourced<T> {
    /// The object itself.
    pub object: T,
    /// Where it was read.
    pub origin: Origin,
}

/// All objects of one world, grouped by kind.
///
/// Pods with `spec.nodeName` are running; pods without it are waiting to be
/// scheduled (including the pods expanded from workloads).
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Nodes, in load order.
    pub nodes: List<Node>,
    /// Pods, running and pending, in load order (packed in a watch-fed
    /// world: see [`PodList`]).
    pub pods: PodList,
    /// Namespaces (their labels feed namespaceSelector).
    pub namespaces: List<Namespace>,
    /// Services (their selectors feed default topology spread).
    pub services: List<Service>,
    /// ReplicaSets.
    pub replica_sets: List<ReplicaSet>,
    /// StatefulSets.
    pub stateful_sets: List<StatefulSet>,
    /// ReplicationControllers.
    pub replication_controllers: List<ReplicationController>,
    /// Deployments.
    pub deployments: List<Deployment>,
    /// DaemonSets.
    pub daemon_sets: List<DaemonSet>,
    /// Jobs.
    pub jobs: List<Job>,
    /// CronJobs.
    pub cron_jobs: List<CronJob>,
    /// PodDisruptionBudgets (preemption and eviction respect them).
    pub pod_disruption_budgets: List<PodDisruptionBudget>,
    /// PriorityClasses (admission resolves `priorityClassName` through them).
    pub priority_classes: List<PriorityClass>,
    /// RuntimeClasses (admission adds their pod overhead).
    pub runtime_classes: List<RuntimeClass>,
    /// PersistentVolumes (VolumeBinding, VolumeZone, NodeVolumeLimits).
    pub persistent_volumes: List<PersistentVolume>,
    /// PersistentVolumeClaims.
    pub persistent_volume_claims: List<PersistentVolumeClaim>,
    /// StorageClasses (binding mode, provisioner, allowed topologies).
    pub storage_classes: List<StorageClass>,
    /// CSINodes (per-driver attach limits, topology keys, migrated plugins).
    pub csi_nodes: List<CSINode>,
    /// CSIDrivers (which ask for storage capacity checks).
    pub csi_drivers: List<CSIDriver>,
    /// CSIStorageCapacities.
    pub csi_storage_capacities: List<CSIStorageCapacity>,
    /// ResourceClaims (DynamicResources).
    pub resource_claims: List<ResourceClaim>,
    /// DeviceClasses (read; device allocation is not modelled).
    pub device_classes: List<DeviceClass>,
    /// ResourceSlices (read; device allocation is not modelled).
    pub resource_slices: List<ResourceSlice>,
    /// Objects of kinds podplace does not use, counted per `apiVersion/kind`.
    pub skipped_kinds: BTreeMap<String, usize>,
    /// Things the loader did on the user's behalf (`-v` prints them).
    pub notices: Vec<String>,
    /// Problems that did not stop loading but the user should see.
    pub warnings: Vec<String>,
    /// Replicas that workload expansion counted instead of creating (see
    /// [`CountedReplicas`]): `replicas: 2000000000` on one small node
    /// creates the replicas that can matter, not two billion pods.
    pub counted_replicas: Vec<CountedReplicas>,
}

/// Replicas of one workload that expansion counted instead of creating,
/// because each is provably decided as the pod it follows: they are
/// identical to it (same template, same owner, nothing per pod such as a
/// generic ephemeral volume), queue right after it, and it can never be
/// bound — more replicas of the workload were created before it than all
/// the nodes' `pods` allocatable together — so nothing binds between its
/// verdict and theirs and each stays Pending with its message. (At least
/// `expand::ALWAYS_CREATED` replicas are created either way.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountedReplicas {
    /// The pods' namespace.
    pub namespace: String,
    /// The last replica created, whose verdict the counted ones share.
    pub pod: String,
    /// How many replicas were counted.
    pub count: u64,
}

/// Declares [`ObjectKind`], [`Object`] and the Inventory field of each kind
/// in one table, so a kind added to the inventory is added everywhere.
macro_rules! object_kinds {
    ($( $variant:ident => $ty:ty, $field:ident, $resource:literal, $namespaced:literal; )*) => {
        /// Every kind of object an [`Inventory`] holds: what `podplace
        /// snapshot` lists and `podplace serve` watches (one list for both).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ObjectKind {
            $(
                #[doc = concat!("`", stringify!($variant), "`.")]
                $variant,
            )*
        }

        impl ObjectKind {
            /// Every kind, in the order a world is best built in (nodes and
            /// namespaces before what lands on them, owners before pods).
            pub const ALL: &'static [ObjectKind] = &[$(ObjectKind::$variant),*];

            /// The API's plural resource name (`pods`, `persistentvolumes`).
            pub fn resource(self) -> &'static str {
                match self { $(ObjectKind::$variant => $resource),* }
            }

            /// The API's kind name (`Pod`).
            pub fn name(self) -> &'static str {
                match self { $(ObjectKind::$variant => stringify!($variant)),* }
            }

            /// Whether objects of this kind live in a namespace.
            pub fn namespaced(self) -> bool {
                match self { $(ObjectKind::$variant => $namespaced),* }
            }
        }

        /// One API object of any kind an [`Inventory`] holds: a watch event's
        /// payload, or one item of a list.
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)]
        pub enum Object {
            $(
                #[doc = concat!("A ", stringify!($variant), ".")]
                $variant($ty),
            )*
        }

        impl Object {
            /// The object's kind.
            pub fn kind(&self) -> ObjectKind {
                match self { $(Object::$variant(_) => ObjectKind::$variant),* }
            }

            /// The object's metadata.
            pub fn metadata(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                match self { $(Object::$variant(o) => &o.metadata),* }
            }

            /// The object's kind, namespace and name.
            pub fn key(&self) -> ObjectKey {
                ObjectKey::of(self.kind(), self.metadata())
            }
        }

        impl Inventory {
            /// Appends `object` to its kind's list.
            pub fn push(&mut self, object: Object, origin: Origin) {
                match object {
                    $(Object::$variant(o) => self.$field.push(Sourced { object: o, origin }),)*
                }
            }

            /// The metadata of the `index`th object of `kind` (in its
            /// kind's list), for a keyed index over the lists (a packed
            /// pod's is decoded, not kept).
            pub fn metadata_at(
                &self,
                kind: ObjectKind,
                index: usize,
            ) -> Option<Cow<'_, ObjectMeta>> {
                match kind { $(ObjectKind::$variant => KindList::meta_at(&self.$field, index)),* }
            }

            /// Puts `object` at `index` of its kind's list in place of the
            /// object there (a watch's update keeps the position, and so the
            /// indexes pointing at it); the old object, or `None` (and
            /// nothing changed) when `index` is past the list.
            pub fn replace(&mut self, index: usize, object: Object) -> Option<Object> {
                match object {
                    $(Object::$variant(o) => KindList::put(&mut self.$field, index, o).map(Object::$variant),)*
                }
            }

            /// Removes the `index`th object of `kind`; the last object of
            /// the list takes its position (a caller keeping indexes moves
            /// that one's entry). The removed object, or `None` when
            /// `index` is past the list.
            pub fn swap_remove(&mut self, kind: ObjectKind, index: usize) -> Option<Object> {
                match kind {
                    $(ObjectKind::$variant => KindList::take(&mut self.$field, index).map(Object::$variant),)*
                }
            }

            /// Every object, moved out, kind by kind (a packed pod decoded):
            /// for a caller that keys them again (serve's first sync, after
            /// a failed build).
            pub fn into_objects(self) -> impl Iterator<Item = Object> {
                std::iter::empty()
                    $(.chain(self.$field.into_iter().map(|s| Object::$variant(s.object))))*
            }

            /// How many objects of `kind` the inventory holds.
            pub fn count(&self, kind: ObjectKind) -> usize {
                match kind { $(ObjectKind::$variant => self.$field.len()),* }
            }
        }
    };
}

object_kinds! {
    Node => Node, nodes, "nodes", false;
    Namespace => Namespace, namespaces, "namespaces", false;
    PriorityClass => PriorityClass, priority_classes, "priorityclasses", false;
    RuntimeClass => RuntimeClass, runtime_classes, "runtimeclasses", false;
    StorageClass => StorageClass, storage_classes, "storageclasses", false;
    CSINode => CSINode, csi_nodes, "csinodes", false;
    CSIDriver => CSIDriver, csi_drivers, "csidrivers", false;
    DeviceClass => DeviceClass, device_classes, "deviceclasses", false;
    ResourceSlice => ResourceSlice, resource_slices, "resourceslices", false;
    PersistentVolume => PersistentVolume, persistent_volumes, "persistentvolumes", false;
    Service => Service, services, "services", true;
    PodDisruptionBudget => PodDisruptionBudget, pod_disruption_budgets, "poddisruptionbudgets", true;
    Deployment => Deployment, deployments, "deployments", true;
    ReplicaSet => ReplicaSet, replica_sets, "replicasets", true;
    StatefulSet => StatefulSet, stateful_sets, "statefulsets", true;
    DaemonSet => DaemonSet, daemon_sets, "daemonsets", true;
    Job => Job, jobs, "jobs", true;
    CronJob => CronJob, cron_jobs, "cronjobs", true;
    ReplicationController => ReplicationController, replication_controllers, "replicationcontrollers", true;
    PersistentVolumeClaim => PersistentVolumeClaim, persistent_volume_claims, "persistentvolumeclaims", true;
    CSIStorageCapacity => CSIStorageCapacity, csi_storage_capacities, "csistoragecapacities", true;
    ResourceClaim => ResourceClaim, resource_claims, "resourceclaims", true;
    Pod => Pod, pods, "pods", true;
}

/// Which object: its kind, namespace (empty for cluster-scoped kinds; a
/// namespaced object without one is in `default`) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The kind.
    pub kind: ObjectKind,
    /// The namespace; empty for cluster-scoped kinds.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of an object of `kind` with `meta`.
    pub fn of(
        kind: ObjectKind,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> ObjectKey {
        let namespace = if kind.namespaced() {
            meta.namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        ObjectKey {
            kind,
            namespace,
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.kind.name(), self.name)
        } else {
            write!(f, "{}/{}/{}", self.kind.name(), self.namespace, self.name)
        }
    }
}
