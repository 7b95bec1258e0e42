//! The symbols storage and claim objects hold, rewritten (see
//! [`crate::resym`]): every field is named, so one added later does not
//! compile here until it says whether it holds symbols.

use super::volumes::{Disk, InTreePlugin, PodClaim, PodResourceClaim, PodVolumes};
use super::{
    AccessModes, Capacity, Claim, ClaimRef, Consumer, CsiNode, CsiNodeDriver, ResourceClaim,
    Storage, StorageClass, Volume, VolumeId,
};
use crate::intern::Sym;
use crate::resym::Resym;

impl Resym for AccessModes {
    fn resym(&mut self, _: &mut dyn FnMut(Sym) -> Sym) {}
}

impl Resym for VolumeId {
    fn resym(&mut self, _: &mut dyn FnMut(Sym) -> Sym) {}
}

impl Resym for InTreePlugin {
    fn resym(&mut self, _: &mut dyn FnMut(Sym) -> Sym) {}
}

impl Resym for Disk {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        match self {
            Disk::GcePd { name, read_only: _ } => name.resym(f),
            Disk::AwsEbs { id } => id.resym(f),
            Disk::Iscsi { iqn, read_only: _ } => iqn.resym(f),
            Disk::Rbd {
                monitors,
                pool,
                image,
                read_only: _,
            } => {
                monitors.resym(f);
                pool.resym(f);
                image.resym(f);
            }
        }
    }
}

impl Resym for PodClaim {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let PodClaim {
            claim,
            volume,
            ephemeral: _,
            template,
        } = self;
        claim.resym(f);
        volume.resym(f);
        template.resym(f);
    }
}

impl Resym for PodVolumes {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let PodVolumes {
            claims,
            disks,
            in_tree,
        } = self;
        claims.resym(f);
        disks.resym(f);
        in_tree.resym(f);
    }
}

impl Resym for PodResourceClaim {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let PodResourceClaim {
            name,
            claim,
            from_template: _,
            skipped: _,
        } = self;
        name.resym(f);
        claim.resym(f);
    }
}

impl Resym for ClaimRef {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let ClaimRef {
            namespace,
            name,
            uid,
        } = self;
        namespace.resym(f);
        name.resym(f);
        uid.resym(f);
    }
}

impl Resym for Volume {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Volume {
            name,
            class,
            capacity: _,
            access_modes,
            block: _,
            attributes_class,
            node_affinity,
            claim_ref,
            available: _,
            deleting: _,
            labels,
            pinned_hosts,
            pinned_zones,
            csi,
            in_tree,
        } = self;
        name.resym(f);
        class.resym(f);
        access_modes.resym(f);
        attributes_class.resym(f);
        node_affinity.resym(f);
        claim_ref.resym(f);
        labels.resym(f);
        pinned_hosts.resym(f);
        pinned_zones.resym(f);
        csi.resym(f);
        in_tree.resym(f);
    }
}

impl Resym for Claim {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Claim {
            name,
            namespace,
            uid,
            class,
            volume_name,
            fully_bound: _,
            selected_node,
            request: _,
            access_modes,
            block: _,
            attributes_class,
            selector,
            deleting: _,
            lost: _,
            owner,
            provisioned_reach,
            default_class: _,
            template: _,
        } = self;
        name.resym(f);
        namespace.resym(f);
        uid.resym(f);
        class.resym(f);
        volume_name.resym(f);
        selected_node.resym(f);
        access_modes.resym(f);
        attributes_class.resym(f);
        selector.resym(f);
        owner.resym(f);
        provisioned_reach.resym(f);
    }
}

impl Resym for StorageClass {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let StorageClass {
            provisioner,
            wait_for_first_consumer: _,
            allowed_topologies,
            default: _,
            created: _,
        } = self;
        provisioner.resym(f);
        allowed_topologies.resym(f);
    }
}

impl Resym for CsiNodeDriver {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let CsiNodeDriver {
            name,
            count: _,
            topology_keys,
        } = self;
        name.resym(f);
        topology_keys.resym(f);
    }
}

impl Resym for CsiNode {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let CsiNode { drivers, migrated } = self;
        drivers.resym(f);
        migrated.resym(f);
    }
}

impl Resym for Capacity {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Capacity {
            class,
            topology,
            limit: _,
        } = self;
        class.resym(f);
        topology.resym(f);
    }
}

impl Resym for Consumer {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Consumer {
            resource,
            name,
            uid,
        } = self;
        resource.resym(f);
        name.resym(f);
        uid.resym(f);
    }
}

impl Resym for ResourceClaim {
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let ResourceClaim {
            uid,
            allocated: _,
            allocation_nodes,
            reserved_for,
            deleting: _,
            owner,
        } = self;
        uid.resym(f);
        allocation_nodes.resym(f);
        reserved_for.resym(f);
        owner.resym(f);
    }
}

impl Resym for Storage {
    /// The objects' symbols are rewritten and the indexes keyed by symbols
    /// built again from them.
    fn resym(&mut self, f: &mut dyn FnMut(Sym) -> Sym) {
        let Storage {
            volumes,
            volume_by_name,
            claims,
            classes,
            csi_nodes,
            capacity_drivers,
            csi_drivers,
            capacities,
            capacity_keys,
            resource_claims,
            device_classes,
            resource_slices,
            default_class,
            claim_templates,
            // Derived from the volumes and claims: indexed again below.
            available: _,
            claim_refs: _,
        } = self;
        volumes.resym(f);
        volume_by_name.resym(f);
        claims.resym(f);
        classes.resym(f);
        csi_nodes.resym(f);
        capacity_drivers.resym(f);
        csi_drivers.resym(f);
        capacities.resym(f);
        capacity_keys.resym(f);
        resource_claims.resym(f);
        device_classes.resym(f);
        resource_slices.resym(f);
        default_class.resym(f);
        claim_templates.resym(f);
        self.index();
    }
}
