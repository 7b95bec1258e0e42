//! Storage and claim objects the volume and DRA plugins read:
//! PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
//! CSIDrivers, CSIStorageCapacities and ResourceClaims, compiled into a
//! compact, interned [`Storage`] (DeviceClasses and ResourceSlices are only
//! counted: device allocation is not modelled).
//!
//! Available PersistentVolumes are indexed by class, then by the node a
//! local volume is pinned to, sorted by capacity, so matching a claim on a
//! node looks only at the volumes that node could use, smallest first.
//! Every object can be added, replaced or deleted one at a time (a watch's
//! events, [`Storage::upsert_volume`] and the rest): the index follows each
//! change without being built again.

mod compile;
mod index;
mod resym;
mod update;
mod volumes;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::intern::Sym;
use crate::labels::Labels;
use crate::selector::{LabelSelector, NodeSelector};

pub use compile::StorageError;
pub use volumes::{
    ephemeral_claim_name, Disk, InTreePlugin, PodClaim, PodResourceClaim, PodVolumes,
};

/// The annotation a claim's bind is finished with.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The annotation the scheduler sets on a claim to provision for a node.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The beta annotation naming a storage class (takes precedence over the field).
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The annotation marking the default StorageClass.
pub const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The CSINode annotation listing in-tree plugins migrated to CSI.
pub const ANN_MIGRATED_PLUGINS: &str = "storage.alpha.kubernetes.io/migrated-plugins";
/// A class's provisioner that provisions nothing.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// How many consumers a ResourceClaim's `status.reservedFor` holds at most.
pub const RESERVED_FOR_MAX: usize = 256;

/// Access modes as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AccessModes(pub u8);

impl AccessModes {
    /// ReadWriteOnce.
    pub const RWO: u8 = 1;
    /// ReadOnlyMany.
    pub const ROX: u8 = 2;
    /// ReadWriteMany.
    pub const RWX: u8 = 4;
    /// ReadWriteOncePod.
    pub const RWOP: u8 = 8;

    /// Reads the API's list (unknown modes are ignored).
    pub fn parse<'a>(modes: impl IntoIterator<Item = &'a String>) -> Self {
        let mut bits = 0;
        for m in modes {
            bits |= match m.as_str() {
                "ReadWriteOnce" => Self::RWO,
                "ReadOnlyMany" => Self::ROX,
                "ReadWriteMany" => Self::RWX,
                "ReadWriteOncePod" => Self::RWOP,
                _ => 0,
            };
        }
        AccessModes(bits)
    }

    /// Whether every mode of `self` is in `other` (the binder's access-mode check).
    pub fn within(self, other: AccessModes) -> bool {
        self.0 & !other.0 == 0
    }

    /// Whether ReadWriteOncePod is among them.
    pub fn read_write_once_pod(self) -> bool {
        self.0 & Self::RWOP != 0
    }
}

/// Index of a volume in [`Storage::volumes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolumeId(pub u32);

/// The claim a volume is (pre-)bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRef {
    /// Namespace.
    pub namespace: Sym,
    /// Name.
    pub name: Box<str>,
    /// UID (empty when not written).
    pub uid: Box<str>,
}

/// A compiled PersistentVolume.
#[derive(Debug, Clone)]
pub struct Volume {
    /// `metadata.name`.
    pub name: Box<str>,
    /// Its class (the beta annotation first, then `spec.storageClassName`).
    pub class: Box<str>,
    /// `spec.capacity.storage` in bytes (0 when unset).
    pub capacity: i64,
    /// `spec.accessModes`.
    pub access_modes: AccessModes,
    /// `spec.volumeMode: Block`.
    pub block: bool,
    /// `spec.volumeAttributesClassName` (empty when unset).
    pub attributes_class: Box<str>,
    /// `spec.nodeAffinity.required`.
    pub node_affinity: Option<NodeSelector>,
    /// `spec.claimRef`.
    pub claim_ref: Option<ClaimRef>,
    /// `status.phase` is Available (or not written).
    pub available: bool,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `metadata.labels` (claim selectors and VolumeZone read them).
    pub labels: Labels,
    /// The `kubernetes.io/hostname` values every node affinity term
    /// requires (index only).
    pub pinned_hosts: SmallVec<[Sym; 1]>,
    /// The `topology.kubernetes.io/zone` values every node affinity term
    /// requires (index only).
    pub pinned_zones: SmallVec<[Sym; 1]>,
    /// `spec.csi`: driver and volume handle.
    pub csi: Option<(Box<str>, Box<str>)>,
    /// An in-tree source that migrates to CSI, with its volume id.
    pub in_tree: Option<(InTreePlugin, Box<str>)>,
}

impl Volume {
    /// Whether the volume's node affinity admits the node (none admits all).
    pub fn reaches(&self, labels: &Labels, name: Sym, interner: &crate::intern::Interner) -> bool {
        self.node_affinity
            .as_ref()
            .is_none_or(|a| a.matches(labels, name, interner))
    }

    /// Whether the volume is bound or pre-bound to the claim.
    pub fn bound_to(&self, claim: &Claim) -> bool {
        self.claim_ref.as_ref().is_some_and(|r| {
            r.namespace == claim.namespace
                && r.name == claim.name
                && (r.uid.is_empty() || claim.uid.is_empty() || r.uid == claim.uid)
        })
    }
}

/// A compiled PersistentVolumeClaim.
#[derive(Debug, Clone)]
pub struct Claim {
    /// `metadata.name`.
    pub name: Box<str>,
    /// `metadata.namespace`.
    pub namespace: Sym,
    /// `metadata.uid` (empty when not written).
    pub uid: Box<str>,
    /// Its class, with the default class filled in as admission does
    /// (empty: no class).
    pub class: Box<str>,
    /// `spec.volumeName` (empty when unset).
    pub volume_name: Box<str>,
    /// Bound and the bind finished (`pv.kubernetes.io/bind-completed`, or
    /// `status.phase: Bound`).
    pub fully_bound: bool,
    /// `volume.kubernetes.io/selected-node` (empty when unset).
    pub selected_node: Box<str>,
    /// `spec.resources.requests.storage` in bytes, when set.
    pub request: Option<i64>,
    /// `spec.accessModes`.
    pub access_modes: AccessModes,
    /// `spec.volumeMode: Block`.
    pub block: bool,
    /// `spec.volumeAttributesClassName` (empty when unset).
    pub attributes_class: Box<str>,
    /// `spec.selector` (`None` selects every volume).
    pub selector: Option<LabelSelector>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `status.phase: Lost`.
    pub lost: bool,
    /// The controlling owner's kind, name and uid (generic ephemeral volumes
    /// must be owned by their pod).
    pub owner: Option<(Box<str>, Box<str>, Box<str>)>,
    /// Where the volume of a claim podplace assumed provisioned reaches
    /// (see [`Storage::assume_provisioned`] and [`Storage::pod_claim`]).
    pub provisioned_reach: Option<NodeSelector>,
    /// A template's claim whose class was not written: the default class
    /// applies.
    pub default_class: bool,
    /// Built from a template, as a controller would create it (not read).
    pub template: bool,
}

/// A compiled StorageClass.
#[derive(Debug, Clone)]
pub struct StorageClass {
    /// `provisioner`.
    pub provisioner: Box<str>,
    /// `volumeBindingMode: WaitForFirstConsumer`.
    pub wait_for_first_consumer: bool,
    /// `allowedTopologies` as a node selector (`None`: everywhere).
    pub allowed_topologies: Option<NodeSelector>,
    /// `storageclass.kubernetes.io/is-default-class: "true"`.
    pub default: bool,
    /// `metadata.creationTimestamp` in seconds (0 when unset): the newest
    /// default class is the default.
    pub created: i64,
}

/// One CSI driver on a CSINode.
#[derive(Debug, Clone)]
pub struct CsiNodeDriver {
    /// Driver name.
    pub name: Box<str>,
    /// `allocatable.count`: how many of its volumes the node can attach.
    pub count: Option<i64>,
    /// `topologyKeys`: the node labels its volumes' reach is given in.
    pub topology_keys: Vec<Sym>,
}

/// A compiled CSINode.
#[derive(Debug, Clone, Default)]
pub struct CsiNode {
    /// `spec.drivers`.
    pub drivers: Vec<CsiNodeDriver>,
    /// In-tree plugins listed as migrated (`storage.alpha.kubernetes.io/migrated-plugins`).
    pub migrated: Vec<Box<str>>,
}

/// A compiled CSIStorageCapacity.
#[derive(Debug, Clone)]
pub struct Capacity {
    /// `storageClassName`.
    pub class: Box<str>,
    /// `nodeTopology` (`None`: no node has access).
    pub topology: Option<LabelSelector>,
    /// `maximumVolumeSize`, else `capacity`, in bytes (`None`: neither).
    pub limit: Option<i64>,
}

/// One consumer in a ResourceClaim's `status.reservedFor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// `resource` (`pods` for pods).
    pub resource: Box<str>,
    /// Name.
    pub name: Box<str>,
    /// UID.
    pub uid: Box<str>,
}

/// A compiled ResourceClaim.
#[derive(Debug, Clone)]
pub struct ResourceClaim {
    /// `metadata.uid`.
    pub uid: Box<str>,
    /// `status.allocation` is set.
    pub allocated: bool,
    /// `status.allocation.nodeSelector` (`None`: every node).
    pub allocation_nodes: Option<NodeSelector>,
    /// `status.reservedFor`.
    pub reserved_for: Vec<Consumer>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The controlling owner's kind, name and uid.
    pub owner: Option<(Box<str>, Box<str>, Box<str>)>,
}

impl ResourceClaim {
    /// Whether `status.reservedFor` names the pod (by uid; by name when
    /// either uid is not written, as files often leave it out).
    pub fn is_reserved_for(&self, name: &str, uid: &str) -> bool {
        self.reserved_for.iter().any(|c| c.is_pod(name, uid))
    }

    /// Whether another consumer can still be added to `status.reservedFor`
    /// (it holds at most [`RESERVED_FOR_MAX`]).
    pub fn can_be_reserved(&self) -> bool {
        self.reserved_for.len() < RESERVED_FOR_MAX
    }

    /// Adds the pod to `status.reservedFor` (what kube-scheduler's PreBind
    /// writes for an allocated claim); whether it was added. A claim that
    /// is not allocated, already names the pod, or is full is left alone.
    pub fn reserve(&mut self, name: &str, uid: &str) -> bool {
        if !self.allocated || self.is_reserved_for(name, uid) || !self.can_be_reserved() {
            return false;
        }
        self.reserved_for.push(Consumer {
            resource: "pods".into(),
            name: name.into(),
            uid: uid.into(),
        });
        true
    }

    /// Drops the pod from `status.reservedFor` (what the resourceclaim
    /// controller does once the pod is deleted or done); whether it was there.
    pub fn release(&mut self, name: &str, uid: &str) -> bool {
        let before = self.reserved_for.len();
        self.reserved_for.retain(|c| !c.is_pod(name, uid));
        self.reserved_for.len() != before
    }
}

impl Consumer {
    /// Whether this consumer is the pod (by uid; by name when either uid
    /// is not written).
    pub fn is_pod(&self, name: &str, uid: &str) -> bool {
        &*self.resource == "pods"
            && if self.uid.is_empty() || uid.is_empty() {
                *self.name == *name
            } else {
                *self.uid == *uid
            }
    }
}

/// A StatefulSet's claim templates: each template's name and the claim it
/// makes (named when looked up for a pod).
pub type ClaimTemplates = Vec<(Box<str>, Claim)>;

/// Available volumes of one class, for matching claims that wait for their
/// first consumer.
#[derive(Debug, Clone, Default)]
pub struct ClassVolumes {
    /// Volumes pinned to hostnames, by hostname label value, by capacity.
    pub by_host: FxHashMap<Sym, Vec<VolumeId>>,
    /// Volumes pinned to zones, by zone label value, by capacity.
    pub by_zone: FxHashMap<Sym, Vec<VolumeId>>,
    /// Every other available volume, by capacity.
    pub anywhere: Vec<VolumeId>,
}

/// The storage and claim objects of one world.
#[derive(Debug, Clone, Default)]
pub struct Storage {
    /// PersistentVolumes.
    pub volumes: Vec<Volume>,
    volume_by_name: FxHashMap<Box<str>, VolumeId>,
    /// PersistentVolumeClaims by namespace and name.
    pub claims: FxHashMap<(Sym, Box<str>), Claim>,
    /// StorageClasses by name.
    pub classes: FxHashMap<Box<str>, StorageClass>,
    /// CSINodes by node name.
    pub csi_nodes: FxHashMap<Box<str>, CsiNode>,
    /// CSIDrivers with `storageCapacity: true`.
    pub capacity_drivers: rustc_hash::FxHashSet<Box<str>>,
    /// CSIDriver names.
    pub csi_drivers: rustc_hash::FxHashSet<Box<str>>,
    /// CSIStorageCapacities.
    pub capacities: Vec<Capacity>,
    /// Namespace and name of each of `capacities` (parallel to it).
    capacity_keys: Vec<(Sym, Box<str>)>,
    /// ResourceClaims by namespace and name.
    pub resource_claims: FxHashMap<(Sym, Box<str>), ResourceClaim>,
    /// DeviceClass names.
    pub device_classes: rustc_hash::FxHashSet<Box<str>>,
    /// How many ResourceSlices were read (device allocation is not modelled).
    pub resource_slices: usize,
    /// The default StorageClass.
    pub default_class: Option<Box<str>>,
    /// StatefulSets' `volumeClaimTemplates` by namespace and StatefulSet name.
    pub claim_templates: FxHashMap<(Sym, Box<str>), ClaimTemplates>,
    /// Available, unclaimed volumes by class.
    available: FxHashMap<Box<str>, ClassVolumes>,
    /// Volumes whose `claimRef` names a claim, by that claim's namespace
    /// and name, by volume name.
    claim_refs: FxHashMap<(Sym, Box<str>), Vec<VolumeId>>,
}

impl Storage {
    /// Whether the world has no storage or claim objects at all.
    pub fn is_empty(&self) -> bool {
        self.volumes.is_empty()
            && self.claims.is_empty()
            && self.resource_claims.is_empty()
            && self.csi_nodes.is_empty()
    }

    /// A volume.
    pub fn volume(&self, id: VolumeId) -> &Volume {
        &self.volumes[id.0 as usize]
    }

    /// A volume by name.
    pub fn volume_named(&self, name: &str) -> Option<VolumeId> {
        self.volume_by_name.get(name).copied()
    }

    /// A claim.
    pub fn claim(&self, namespace: Sym, name: &str) -> Option<&Claim> {
        self.claims.get(&(namespace, Box::from(name)))
    }

    /// The claim a pod's volume uses: the one in the world, else the one
    /// its controller would create (a StatefulSet's claim template, a
    /// generic ephemeral volume's), with the default class filled in. A
    /// created claim whose class waits for the first consumer is unbound;
    /// any other (an Immediate class, or a class the world does not hold)
    /// is taken as provisioned where the pod goes: its reach is every node.
    pub fn pod_claim(
        &self,
        pod: &crate::objects::Pod,
        claim: &PodClaim,
    ) -> Option<std::borrow::Cow<'_, Claim>> {
        if let Some(c) = self.claims.get(&(pod.namespace, claim.claim.clone())) {
            return Some(std::borrow::Cow::Borrowed(c));
        }
        let prototype = if claim.ephemeral {
            claim.template.as_deref()?.clone()
        } else {
            let owner = pod.owner.as_ref().filter(|o| &*o.kind == "StatefulSet")?;
            if *claim.claim != *format!("{}-{}", claim.volume, pod.name) {
                return None;
            }
            match self
                .claim_templates
                .get(&(pod.namespace, owner.name.clone()))
                .and_then(|t| t.iter().find(|(name, _)| *name == claim.volume))
            {
                Some((_, c)) => c.clone(),
                None => Claim {
                    name: claim.claim.clone(),
                    namespace: pod.namespace,
                    uid: Box::default(),
                    class: Box::default(),
                    volume_name: Box::default(),
                    fully_bound: false,
                    selected_node: Box::default(),
                    request: None,
                    access_modes: AccessModes(AccessModes::RWO),
                    block: false,
                    attributes_class: Box::default(),
                    selector: None,
                    deleting: false,
                    lost: false,
                    owner: None,
                    provisioned_reach: None,
                    default_class: true,
                    template: true,
                },
            }
        };
        let mut c = prototype;
        c.name = claim.claim.clone();
        c.namespace = pod.namespace;
        if c.default_class {
            c.class = self.default_class.clone().unwrap_or_default();
        }
        if !self.delays_binding(&c) {
            c.fully_bound = true;
            c.provisioned_reach = Some(NodeSelector {
                terms: vec![crate::selector::NodeSelectorTerm {
                    labels: SmallVec::new(),
                    names: SmallVec::new(),
                    never: false,
                }],
            });
        }
        Some(std::borrow::Cow::Owned(c))
    }

    /// A ResourceClaim.
    pub fn resource_claim(&self, namespace: Sym, name: &str) -> Option<&ResourceClaim> {
        self.resource_claims.get(&(namespace, Box::from(name)))
    }

    /// Whether a claim waits for its first consumer (its class says so).
    pub fn delays_binding(&self, claim: &Claim) -> bool {
        !claim.class.is_empty()
            && self
                .classes
                .get(&claim.class)
                .is_some_and(|c| c.wait_for_first_consumer)
    }

    /// The available volumes of a class a node may use, given its hostname
    /// and zone label values: those pinned to its hostname, to its zone, and
    /// the rest, each sorted by capacity (each still to be checked against
    /// the node).
    pub fn candidates(
        &self,
        class: &str,
        host: Option<Sym>,
        zone: Option<Sym>,
    ) -> [&[VolumeId]; 3] {
        match self.available.get(class) {
            None => [&[], &[], &[]],
            Some(c) => [
                host.and_then(|k| c.by_host.get(&k))
                    .map_or(&[][..], Vec::as_slice),
                zone.and_then(|k| c.by_zone.get(&k))
                    .map_or(&[][..], Vec::as_slice),
                c.anywhere.as_slice(),
            ],
        }
    }

    /// Volumes pre-bound (`claimRef`) to a claim, by name (for a claim
    /// that does not name its volume yet: the binder takes one of them).
    pub fn prebound_to(&self, claim: &Claim) -> &[VolumeId] {
        self.claim_refs
            .get(&(claim.namespace, claim.name.clone()))
            .map_or(&[], Vec::as_slice)
    }

    /// Binds a claim to a volume (the binder's assumption after a pod is
    /// placed): the volume leaves the available index.
    pub fn assume_bound(&mut self, claim: &Claim, volume: VolumeId) {
        let namespace = claim.namespace;
        let key = (namespace, claim.name.clone());
        let c = self
            .claims
            .entry(key.clone())
            .or_insert_with(|| claim.clone());
        c.volume_name = self.volumes[volume.0 as usize].name.clone();
        c.fully_bound = true;
        let uid = c.uid.clone();
        self.unindex_volume(volume);
        let v = &mut self.volumes[volume.0 as usize];
        v.claim_ref = Some(ClaimRef {
            namespace,
            name: key.1,
            uid,
        });
        v.available = false;
        self.index_volume(volume);
    }

    /// Marks a claim as provisioned for a node (the scheduler's
    /// `selected-node`) and bound to the new volume, which reaches the
    /// nodes `reach` selects.
    pub fn assume_provisioned(&mut self, claim: &Claim, node: &str, reach: NodeSelector) {
        let c = self
            .claims
            .entry((claim.namespace, claim.name.clone()))
            .or_insert_with(|| claim.clone());
        c.selected_node = node.into();
        c.fully_bound = true;
        c.provisioned_reach = Some(reach);
    }
}

#[cfg(test)]
mod tests {
    use crate::intern::Interner;
    use crate::load::{load, Source};

    const WORLD: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: big}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/a}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [n1]}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: small}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}, topologyKeys: [topology.kubernetes.io/zone]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: default}
spec: {devices: {}}
"#;

    #[test]
    fn files_load_into_an_indexed_storage() {
        let inv = load(&[Source::Bytes {
            name: "world.yaml".into(),
            data: WORLD.as_bytes().to_vec(),
        }])
        .expect("loads");
        assert_eq!(inv.persistent_volumes.len(), 2);
        assert_eq!(inv.storage_classes.len(), 1);
        let mut interner = Interner::new();
        let storage = super::Storage::compile(&inv, &mut interner).expect("compiles");
        let ns = interner.intern("default");
        let claim = storage.claim(ns, "data").expect("claim");
        assert_eq!(&*claim.class, "local", "the default class is filled in");
        assert!(storage.delays_binding(claim));
        let n1 = interner.intern("n1");
        let n2 = interner.intern("n2");
        let names = |ids: &[super::VolumeId]| -> Vec<String> {
            ids.iter()
                .map(|&v| storage.volume(v).name.to_string())
                .collect()
        };
        let [local, _, anywhere] = storage.candidates("local", Some(n1), None);
        assert_eq!(
            (names(local), names(anywhere)),
            (vec!["big".to_string()], vec!["small".to_string()])
        );
        let [local, _, _] = storage.candidates("local", Some(n2), None);
        assert!(
            local.is_empty(),
            "a local volume is offered only on its node"
        );
        assert_eq!(storage.csi_nodes["n1"].drivers[0].count, Some(25));
        assert!(!storage.resource_claim(ns, "gpu").expect("claim").allocated);
    }
}
