//! The storage and claim objects of the state ([`Storage`]), which the
//! volume and DRA plugins read, and the volume bindings a bind assumes.

use std::sync::Arc;

use podplace_model::inventory::Inventory;
use podplace_model::storage::{Storage, StorageError};

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
}
