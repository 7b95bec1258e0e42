//! The storage and claim objects of the state ([`Storage`]), which the
//! volume and DRA plugins read; the volume bindings and claim reservations
//! a bind assumes; and per-object changes (a watch's events) that keep the
//! available-volume index current without building it again.

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::resource::v1 as resource;
use k8s_openapi::api::storage::v1 as storage;
use podplace_model::inventory::Inventory;
use podplace_model::storage::{Storage, StorageError, VolumeId};

use super::ClusterState;
use crate::ids::{NodeId, PodId};

impl ClusterState {
    /// The world's PersistentVolumes, claims, classes, CSI and DRA objects.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Replaces the storage objects with those of an inventory.
    pub fn load_storage(&mut self, inv: &Inventory) -> Result<(), StorageError> {
        self.storage = Arc::new(Storage::compile(inv, &mut self.interner)?);
        Ok(())
    }

    /// The storage objects to change (copied first when an overlay shares them).
    pub fn storage_mut(&mut self) -> &mut Storage {
        Arc::make_mut(&mut self.storage)
    }

    /// What VolumeBinding's Reserve assumes when a pod is bound: its claims
    /// that wait for their first consumer are bound to the volumes chosen
    /// for the node, or provisioned there, so the next pod is not offered
    /// the same volume.
    pub(crate) fn assume_volumes(&mut self, id: PodId, node: NodeId) {
        if self.pods[id.index()].pod.volumes.claims.is_empty() {
            return;
        }
        crate::plugins::volume_binding::assume(self, id, node);
    }

    /// What DynamicResources' PreBind writes when podplace binds a pod: the
    /// pod joins `status.reservedFor` of each allocated ResourceClaim it
    /// uses (up to 256 consumers), so the next pod of the same run sees the
    /// claim as kube-scheduler would after this binding.
    pub(crate) fn reserve_claims(&mut self, id: PodId) {
        self.each_resource_claim(id, |claim, name, uid| {
            claim.reserve(name, uid);
        });
    }

    /// What the resourceclaim controller does once a pod is deleted or
    /// done: it leaves `status.reservedFor` of every claim it used, freeing
    /// its place for another consumer.
    pub(crate) fn release_claims(&mut self, id: PodId) {
        self.each_resource_claim(id, |claim, name, uid| {
            claim.release(name, uid);
        });
    }

    fn each_resource_claim(
        &mut self,
        id: PodId,
        mut f: impl FnMut(&mut podplace_model::storage::ResourceClaim, &str, &str),
    ) {
        let pod = &self.pods[id.index()].pod;
        if pod.resource_claims.is_empty() {
            return;
        }
        let (ns, name, uid) = (pod.namespace, pod.name.clone(), pod.uid.clone());
        let claims: Vec<Box<str>> = pod
            .resource_claims
            .iter()
            .filter(|c| !c.skipped)
            .filter_map(|c| c.claim.clone())
            .collect();
        let present = claims
            .iter()
            .any(|c| self.storage.resource_claim(ns, c).is_some());
        if !present {
            return;
        }
        let storage = self.storage_mut();
        for c in claims {
            if let Some(claim) = storage.resource_claims.get_mut(&(ns, c)) {
                f(claim, &name, &uid);
            }
        }
    }

    /// Adds a PersistentVolume or replaces the one of the same name (a
    /// watch's add or update); the available-volume index follows.
    pub fn upsert_persistent_volume(
        &mut self,
        pv: &core::PersistentVolume,
    ) -> Result<VolumeId, StorageError> {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_volume(pv, &mut self.interner)
    }

    /// Deletes a PersistentVolume by name; whether it existed.
    pub fn delete_persistent_volume(&mut self, name: &str) -> bool {
        self.storage.volume_named(name).is_some() && self.storage_mut().delete_volume(name)
    }

    /// Adds a PersistentVolumeClaim or replaces the one of the same
    /// namespace and name.
    pub fn upsert_persistent_volume_claim(
        &mut self,
        pvc: &core::PersistentVolumeClaim,
    ) -> Result<(), StorageError> {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_claim(pvc, &mut self.interner)
    }

    /// Deletes a PersistentVolumeClaim; whether it existed.
    pub fn delete_persistent_volume_claim(&mut self, namespace: &str, name: &str) -> bool {
        let Some(ns) = self.interner.lookup(namespace) else {
            return false;
        };
        self.storage.claim(ns, name).is_some() && self.storage_mut().delete_claim(ns, name)
    }

    /// Adds a StorageClass or replaces the one of the same name.
    pub fn upsert_storage_class(&mut self, sc: &storage::StorageClass) {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_storage_class(sc, &mut self.interner);
    }

    /// Deletes a StorageClass; whether it existed.
    pub fn delete_storage_class(&mut self, name: &str) -> bool {
        self.storage.classes.contains_key(name) && self.storage_mut().delete_storage_class(name)
    }

    /// Adds a CSINode or replaces the one of the same name.
    pub fn upsert_csi_node(&mut self, node: &storage::CSINode) {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_csi_node(node, &mut self.interner);
    }

    /// Deletes a CSINode; whether it existed.
    pub fn delete_csi_node(&mut self, name: &str) -> bool {
        self.storage.csi_nodes.contains_key(name) && self.storage_mut().delete_csi_node(name)
    }

    /// Adds a CSIDriver or replaces the one of the same name.
    pub fn upsert_csi_driver(&mut self, driver: &storage::CSIDriver) {
        self.storage_mut().upsert_csi_driver(driver);
    }

    /// Deletes a CSIDriver; whether it existed.
    pub fn delete_csi_driver(&mut self, name: &str) -> bool {
        self.storage.csi_drivers.contains(name) && self.storage_mut().delete_csi_driver(name)
    }

    /// Adds a CSIStorageCapacity or replaces the one of the same namespace
    /// and name.
    pub fn upsert_csi_storage_capacity(
        &mut self,
        c: &storage::CSIStorageCapacity,
    ) -> Result<(), StorageError> {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_capacity(c, &mut self.interner)
    }

    /// Deletes a CSIStorageCapacity; whether it existed.
    pub fn delete_csi_storage_capacity(&mut self, namespace: &str, name: &str) -> bool {
        let Some(ns) = self.interner.lookup(namespace) else {
            return false;
        };
        self.storage_mut().delete_capacity(ns, name)
    }

    /// Adds a ResourceClaim or replaces the one of the same namespace and
    /// name (its `reservedFor` as the API says it).
    pub fn upsert_resource_claim(&mut self, rc: &resource::ResourceClaim) {
        let storage = Arc::make_mut(&mut self.storage);
        storage.upsert_resource_claim(rc, &mut self.interner);
    }

    /// Deletes a ResourceClaim; whether it existed.
    pub fn delete_resource_claim(&mut self, namespace: &str, name: &str) -> bool {
        let Some(ns) = self.interner.lookup(namespace) else {
            return false;
        };
        self.storage.resource_claim(ns, name).is_some()
            && self.storage_mut().delete_resource_claim(ns, name)
    }
}

/// One storage or claim object as a watch delivers it, for
/// [`ClusterState::apply_storage_change`].
#[derive(Debug, Clone, Copy)]
pub enum StorageObject<'a> {
    /// A PersistentVolume.
    PersistentVolume(&'a core::PersistentVolume),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(&'a core::PersistentVolumeClaim),
    /// A StorageClass.
    StorageClass(&'a storage::StorageClass),
    /// A CSINode.
    CsiNode(&'a storage::CSINode),
    /// A CSIDriver.
    CsiDriver(&'a storage::CSIDriver),
    /// A CSIStorageCapacity.
    CsiStorageCapacity(&'a storage::CSIStorageCapacity),
    /// A ResourceClaim.
    ResourceClaim(&'a resource::ResourceClaim),
}

/// The kinds of [`StorageObject`], to name one that was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// PersistentVolume (cluster-scoped).
    PersistentVolume,
    /// PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// StorageClass (cluster-scoped).
    StorageClass,
    /// CSINode (cluster-scoped).
    CsiNode,
    /// CSIDriver (cluster-scoped).
    CsiDriver,
    /// CSIStorageCapacity.
    CsiStorageCapacity,
    /// ResourceClaim.
    ResourceClaim,
}

/// A watch event on a storage or claim object: added or modified (the
/// object as it is now), or deleted (its kind, namespace and name).
#[derive(Debug, Clone, Copy)]
pub enum StorageChange<'a> {
    /// Added or modified.
    Upsert(StorageObject<'a>),
    /// Deleted; `namespace` is ignored for cluster-scoped kinds.
    Delete {
        /// The kind.
        kind: StorageKind,
        /// The namespace of a namespaced kind.
        namespace: &'a str,
        /// The name.
        name: &'a str,
    },
}

impl ClusterState {
    /// Applies one watch event on a storage or claim object (one entry
    /// point for a watch-fed owner); for a delete, whether the object was
    /// there. The available-volume index follows without being rebuilt.
    pub fn apply_storage_change(
        &mut self,
        change: StorageChange<'_>,
    ) -> Result<bool, StorageError> {
        Ok(match change {
            StorageChange::Upsert(o) => {
                match o {
                    StorageObject::PersistentVolume(v) => {
                        self.upsert_persistent_volume(v)?;
                    }
                    StorageObject::PersistentVolumeClaim(c) => {
                        self.upsert_persistent_volume_claim(c)?
                    }
                    StorageObject::StorageClass(c) => self.upsert_storage_class(c),
                    StorageObject::CsiNode(n) => self.upsert_csi_node(n),
                    StorageObject::CsiDriver(d) => self.upsert_csi_driver(d),
                    StorageObject::CsiStorageCapacity(c) => self.upsert_csi_storage_capacity(c)?,
                    StorageObject::ResourceClaim(c) => self.upsert_resource_claim(c),
                }
                true
            }
            StorageChange::Delete {
                kind,
                namespace,
                name,
            } => match kind {
                StorageKind::PersistentVolume => self.delete_persistent_volume(name),
                StorageKind::PersistentVolumeClaim => {
                    self.delete_persistent_volume_claim(namespace, name)
                }
                StorageKind::StorageClass => self.delete_storage_class(name),
                StorageKind::CsiNode => self.delete_csi_node(name),
                StorageKind::CsiDriver => self.delete_csi_driver(name),
                StorageKind::CsiStorageCapacity => {
                    self.delete_csi_storage_capacity(namespace, name)
                }
                StorageKind::ResourceClaim => self.delete_resource_claim(namespace, name),
            },
        })
    }
}
