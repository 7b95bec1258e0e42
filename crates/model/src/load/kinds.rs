//! The kinds the loader reads: their apiVersion, whether they are
//! namespaced, how a second definition is treated, their validation and
//! where they go in an [`Inventory`].

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;

use super::partial;
use crate::inventory::{Inventory, Sourced};
use crate::validate::{self, FieldError};

/// Kinds podplace reads, with the apiVersion it reads them in.
pub(super) const KNOWN: [(&str, &str); 24] = [
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Namespace"),
    ("v1", "Service"),
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    (partial::API_VERSION, partial::KIND),
];

/// Every kind this podplace reads, as `apiVersion/kind` (`v1/Pod`,
/// `policy/v1/PodDisruptionBudget`): what a snapshot it writes lists as
/// held ([`partial::SnapshotStatus::kinds`]).
pub fn snapshot_kinds() -> Vec<String> {
    KNOWN
        .iter()
        .filter(|(_, k)| *k != partial::KIND)
        .map(|(a, k)| format!("{a}/{k}"))
        .collect()
}

/// What the loader needs to know about each kind it reads.
pub(super) trait Kind:
    super::compact::Fit
    + DeserializeOwned
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + validate::ApiRules
    + Sized
    + 'static
{
    const NAMESPACED: bool;
    /// Cluster-wide kinds that a snapshot and a chart commonly both carry:
    /// a second definition is ignored with a warning instead of failing.
    const DUPLICATE_KEEPS_FIRST: bool = false;
    fn validate(&self) -> Vec<FieldError>;
    /// Appends one object read to its kind's list.
    fn push(inv: &mut Inventory, object: Sourced<Self>);
}

macro_rules! kind {
    ($t:ty, $ns:expr, $keep:expr, $field:ident, $validate:expr) => {
        impl Kind for $t {
            const NAMESPACED: bool = $ns;
            const DUPLICATE_KEEPS_FIRST: bool = $keep;
            fn validate(&self) -> Vec<FieldError> {
                let f: fn(&$t) -> Vec<FieldError> = $validate;
                f(self)
            }
            fn push(inv: &mut Inventory, object: Sourced<Self>) {
                inv.$field.push(object)
            }
        }
    };
}

kind!(Node, false, false, nodes, validate::validate_node);
kind!(Pod, true, false, pods, validate::validate_pod);
kind!(Namespace, false, true, namespaces, |_| Vec::new());
kind!(Service, true, false, services, |_| Vec::new());
kind!(
    ReplicaSet,
    true,
    false,
    replica_sets,
    validate::validate_replica_set
);
kind!(
    StatefulSet,
    true,
    false,
    stateful_sets,
    validate::validate_stateful_set
);
kind!(
    ReplicationController,
    true,
    false,
    replication_controllers,
    validate::validate_replication_controller
);
kind!(
    Deployment,
    true,
    false,
    deployments,
    validate::validate_deployment
);
kind!(
    DaemonSet,
    true,
    false,
    daemon_sets,
    validate::validate_daemon_set
);
kind!(Job, true, false, jobs, validate::validate_job);
kind!(CronJob, true, false, cron_jobs, validate::validate_cron_job);
kind!(
    PodDisruptionBudget,
    true,
    false,
    pod_disruption_budgets,
    validate::validate_pod_disruption_budget
);
kind!(PriorityClass, false, true, priority_classes, |_| Vec::new());
kind!(PersistentVolume, false, false, persistent_volumes, |_| {
    Vec::new()
});
kind!(
    PersistentVolumeClaim,
    true,
    false,
    persistent_volume_claims,
    |_| Vec::new()
);
kind!(StorageClass, false, true, storage_classes, |_| Vec::new());
kind!(CSINode, false, false, csi_nodes, |_| Vec::new());
kind!(CSIDriver, false, true, csi_drivers, |_| Vec::new());
kind!(
    CSIStorageCapacity,
    true,
    false,
    csi_storage_capacities,
    |_| Vec::new()
);
kind!(ResourceClaim, true, false, resource_claims, |_| Vec::new());
kind!(DeviceClass, false, true, device_classes, |_| Vec::new());
kind!(ResourceSlice, false, false, resource_slices, |_| Vec::new());
kind!(
    RuntimeClass,
    false,
    true,
    runtime_classes,
    validate::validate_runtime_class
);

/// Whether an object was read from a cluster (`kubectl get -o yaml`, a
/// snapshot): only the API server sets `uid`, `resourceVersion` and
/// `creationTimestamp`. Such an object passed the API server's validation
/// of its day, which later releases may tighten (ratcheting).
pub(super) fn read_from_cluster(meta: &ObjectMeta) -> bool {
    meta.uid.as_deref().is_some_and(|u| !u.is_empty())
        || meta
            .resource_version
            .as_deref()
            .is_some_and(|r| !r.is_empty())
        || meta.creation_timestamp.is_some()
}
