//! Changing one storage or claim object at a time, as a watch reports
//! them: each upsert compiles the object and replaces the one of the same
//! name (or adds it); each delete removes it. The available-volume index
//! and the claim-reference index follow each change: only the lists the
//! volume was and is in are touched, so a long-lived `serve` never builds
//! them again. After any sequence of changes, the storage equals one
//! compiled afresh from the final objects (claims keep the class they were
//! compiled with, as admission writes it once, at creation).

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::resource::v1 as resource;
use k8s_openapi::api::storage::v1 as storage;

use super::compile::{
    compile_capacity, compile_claim, compile_class, compile_csi_node, compile_resource_claim,
    compile_volume,
};
use super::{Capacity, Storage, StorageError, VolumeId};
use crate::intern::{Interner, Sym};

impl Storage {
    /// Adds a PersistentVolume or replaces the one of the same name; its
    /// id is kept when it existed.
    pub fn upsert_volume(
        &mut self,
        pv: &core::PersistentVolume,
        interner: &mut Interner,
    ) -> Result<VolumeId, StorageError> {
        let v = compile_volume(pv, interner)?;
        match self.volume_by_name.get(&v.name).copied() {
            Some(id) => {
                self.unindex_volume(id);
                self.volumes[id.0 as usize] = v;
                self.index_volume(id);
                Ok(id)
            }
            None => {
                let id = VolumeId(self.volumes.len() as u32);
                self.volume_by_name.insert(v.name.clone(), id);
                self.volumes.push(v);
                self.index_volume(id);
                Ok(id)
            }
        }
    }

    /// Deletes a PersistentVolume by name; whether it existed. The last
    /// volume takes its id (ids are not stable across deletes; names are).
    pub fn delete_volume(&mut self, name: &str) -> bool {
        let Some(id) = self.volume_by_name.remove(name) else {
            return false;
        };
        let last = VolumeId(self.volumes.len() as u32 - 1);
        self.unindex_volume(id);
        if last != id {
            self.unindex_volume(last);
        }
        self.volumes.swap_remove(id.0 as usize);
        if last != id {
            let moved = self.volumes[id.0 as usize].name.clone();
            self.volume_by_name.insert(moved, id);
            self.index_volume(id);
        }
        true
    }

    /// Adds a PersistentVolumeClaim or replaces the one of the same
    /// namespace and name (a claim without a class gets the default one,
    /// as admission would).
    pub fn upsert_claim(
        &mut self,
        pvc: &core::PersistentVolumeClaim,
        interner: &mut Interner,
    ) -> Result<(), StorageError> {
        let c = compile_claim(pvc, self.default_class.as_deref(), interner)?;
        self.claims.insert((c.namespace, c.name.clone()), c);
        Ok(())
    }

    /// Deletes a PersistentVolumeClaim; whether it existed.
    pub fn delete_claim(&mut self, namespace: Sym, name: &str) -> bool {
        self.claims.remove(&(namespace, Box::from(name))).is_some()
    }

    /// Adds a StorageClass or replaces the one of the same name; the
    /// default class is chosen again.
    pub fn upsert_storage_class(&mut self, sc: &storage::StorageClass, interner: &mut Interner) {
        let (name, class) = compile_class(sc, interner);
        self.classes.insert(name, class);
        self.default_class = self.pick_default_class();
    }

    /// Deletes a StorageClass; whether it existed.
    pub fn delete_storage_class(&mut self, name: &str) -> bool {
        let existed = self.classes.remove(name).is_some();
        self.default_class = self.pick_default_class();
        existed
    }

    /// Adds a CSINode or replaces the one of the same (node) name.
    pub fn upsert_csi_node(&mut self, node: &storage::CSINode, interner: &mut Interner) {
        let (name, node) = compile_csi_node(node, interner);
        self.csi_nodes.insert(name, node);
    }

    /// Deletes a CSINode; whether it existed.
    pub fn delete_csi_node(&mut self, name: &str) -> bool {
        self.csi_nodes.remove(name).is_some()
    }

    /// Records a CSIDriver (and whether it asks for storage capacity).
    pub(super) fn put_csi_driver(&mut self, d: &storage::CSIDriver) {
        let name: Box<str> = d.metadata.name.as_deref().unwrap_or("").into();
        if d.spec.storage_capacity == Some(true) {
            self.capacity_drivers.insert(name.clone());
        } else {
            self.capacity_drivers.remove(&name);
        }
        self.csi_drivers.insert(name);
    }

    /// Adds a CSIDriver or replaces the one of the same name.
    pub fn upsert_csi_driver(&mut self, d: &storage::CSIDriver) {
        self.put_csi_driver(d);
    }

    /// Deletes a CSIDriver; whether it existed.
    pub fn delete_csi_driver(&mut self, name: &str) -> bool {
        self.capacity_drivers.remove(name);
        self.csi_drivers.remove(name)
    }

    /// Records a CSIStorageCapacity under its namespace and name.
    pub(super) fn put_capacity(&mut self, key: (Sym, Box<str>), capacity: Capacity) {
        match self.capacity_keys.iter().position(|k| *k == key) {
            Some(i) => self.capacities[i] = capacity,
            None => {
                self.capacity_keys.push(key);
                self.capacities.push(capacity);
            }
        }
    }

    /// Adds a CSIStorageCapacity or replaces the one of the same
    /// namespace and name.
    pub fn upsert_capacity(
        &mut self,
        c: &storage::CSIStorageCapacity,
        interner: &mut Interner,
    ) -> Result<(), StorageError> {
        let (key, capacity) = compile_capacity(c, interner)?;
        self.put_capacity(key, capacity);
        Ok(())
    }

    /// Deletes a CSIStorageCapacity; whether it existed.
    pub fn delete_capacity(&mut self, namespace: Sym, name: &str) -> bool {
        let Some(i) = self
            .capacity_keys
            .iter()
            .position(|(ns, n)| *ns == namespace && **n == *name)
        else {
            return false;
        };
        self.capacity_keys.swap_remove(i);
        self.capacities.swap_remove(i);
        true
    }

    /// The namespace and name of each CSIStorageCapacity, parallel to
    /// [`Storage::capacities`].
    pub fn capacity_keys(&self) -> &[(Sym, Box<str>)] {
        &self.capacity_keys
    }

    /// Adds a ResourceClaim or replaces the one of the same namespace and
    /// name.
    pub fn upsert_resource_claim(&mut self, rc: &resource::ResourceClaim, interner: &mut Interner) {
        let (key, claim) = compile_resource_claim(rc, interner);
        self.resource_claims.insert(key, claim);
    }

    /// Deletes a ResourceClaim; whether it existed.
    pub fn delete_resource_claim(&mut self, namespace: Sym, name: &str) -> bool {
        self.resource_claims
            .remove(&(namespace, Box::from(name)))
            .is_some()
    }

    /// Adds a DeviceClass (by name; device allocation is not modelled).
    pub fn upsert_device_class(&mut self, dc: &resource::DeviceClass) {
        self.device_classes
            .insert(dc.metadata.name.as_deref().unwrap_or("").into());
    }

    /// Deletes a DeviceClass; whether it existed.
    pub fn delete_device_class(&mut self, name: &str) -> bool {
        self.device_classes.remove(name)
    }
}
