//! Storage for the generated cluster (`--volumes N`): a realistic share of
//! the workloads become StatefulSet-like, each replica with its own
//! PersistentVolumeClaim, so matching volumes is measured at scale.
//!
//! - About 60% of the `N` PersistentVolumes are zonal EBS-like volumes
//!   (`ebs.csi.aws.com`), pre-bound to the claims of running replicas and
//!   pinned by node affinity to the zone of the node each replica runs on
//!   (claims `Bound`, with `selected-node`), in the WaitForFirstConsumer
//!   class `ebs-wffc` whose `allowedTopologies` names the cluster's zones
//!   (the default class).
//! - The rest are local volumes (`local-nvme`, no provisioner,
//!   WaitForFirstConsumer), pinned to one node's hostname each, spread over
//!   the nodes, `Available`, of 100–400 GiB.
//! - Every node has a CSINode with an attach limit of 25 EBS volumes; the
//!   CSIDriver is there.
//! - Among the pending workloads, every fourth (from the first, the
//!   required hostname anti-affinity kind) gets a 100 GiB `local-nvme`
//!   claim per pod (matched against the local volumes of each node), and
//!   every fourth from the second (the hard zone spread kind) a 50 GiB
//!   `ebs-wffc` claim to provision; the others use no claims.
//!
//! Running workloads become stateful in the order they were generated,
//! those of 2 to 60 replicas, every third one, until the pre-bound volumes
//! are allotted.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, LocalVolumeSource, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, PersistentVolumeClaimVolumeSource,
    PersistentVolumeSpec, PersistentVolumeStatus, Pod, Volume, VolumeNodeAffinity,
    VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSIDriverSpec, CSINode, CSINodeDriver, CSINodeSpec, StorageClass,
    VolumeNodeResources,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::generate::{Object, Snapshot, HOSTNAME, INCOMING_NAMESPACE, ZONE, ZONES};
use crate::rng::Rng;

/// The zonal class (the default).
pub const ZONAL_CLASS: &str = "ebs-wffc";
/// The local class.
pub const LOCAL_CLASS: &str = "local-nvme";
/// The CSI driver of the zonal volumes.
pub const EBS_DRIVER: &str = "ebs.csi.aws.com";
/// EBS volumes a node can attach.
pub const ATTACH_LIMIT: i32 = 25;

/// What [`add_storage`] added, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Zonal volumes pre-bound to running replicas' claims.
    pub prebound: usize,
    /// Local volumes, available.
    pub local: usize,
    /// Running workloads made stateful.
    pub stateful_workloads: usize,
    /// Pending pods with a local claim.
    pub pending_local: usize,
    /// Pending pods with a zonal claim to provision.
    pub pending_zonal: usize,
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        ..ObjectMeta::default()
    }
}

fn storage(size: &str) -> BTreeMap<String, Quantity> {
    [("storage".to_string(), Quantity(size.to_string()))].into()
}

fn pinned(key: &str, value: &str) -> VolumeNodeAffinity {
    VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: key.to_string(),
                    operator: "In".to_string(),
                    values: Some(vec![value.to_string()]),
                }]),
                match_fields: None,
            }],
        }),
    }
}

fn claim(name: &str, namespace: &str, class: &str, size: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(name, Some(namespace)),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            storage_class_name: Some(class.to_string()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(storage(size)),
                ..VolumeResourceRequirements::default()
            }),
            volume_mode: Some("Filesystem".to_string()),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: Some(PersistentVolumeClaimStatus {
            phase: Some("Pending".to_string()),
            ..PersistentVolumeClaimStatus::default()
        }),
    }
}

fn mount(pod: &mut Pod, claim: &str) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: "data".to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.to_string(),
            read_only: None,
        }),
        ..Volume::default()
    });
}

fn classes() -> Vec<Object> {
    let mut zonal = StorageClass {
        metadata: meta(ZONAL_CLASS, None),
        provisioner: EBS_DRIVER.to_string(),
        volume_binding_mode: Some("WaitForFirstConsumer".to_string()),
        reclaim_policy: Some("Delete".to_string()),
        allowed_topologies: Some(vec![k8s_openapi::api::core::v1::TopologySelectorTerm {
            match_label_expressions: Some(vec![
                k8s_openapi::api::core::v1::TopologySelectorLabelRequirement {
                    key: ZONE.to_string(),
                    values: ZONES.iter().map(|z| z.to_string()).collect(),
                },
            ]),
        }]),
        ..StorageClass::default()
    };
    zonal.metadata.annotations = Some(
        [(
            "storageclass.kubernetes.io/is-default-class".to_string(),
            "true".to_string(),
        )]
        .into(),
    );
    let local = StorageClass {
        metadata: meta(LOCAL_CLASS, None),
        provisioner: "kubernetes.io/no-provisioner".to_string(),
        volume_binding_mode: Some("WaitForFirstConsumer".to_string()),
        ..StorageClass::default()
    };
    let driver = CSIDriver {
        metadata: meta(EBS_DRIVER, None),
        spec: CSIDriverSpec {
            attach_required: Some(true),
            storage_capacity: Some(false),
            ..CSIDriverSpec::default()
        },
    };
    vec![
        Object::StorageClass(Box::new(zonal)),
        Object::StorageClass(Box::new(local)),
        Object::CsiDriver(Box::new(driver)),
    ]
}

/// Adds about `volumes` PersistentVolumes, their claims, classes, CSINodes
/// and the pending pods' claims to `snap` (see the module doc).
pub fn add_storage(snap: &mut Snapshot, volumes: usize, seed: u64) -> StorageStats {
    let mut rng = Rng::new(seed ^ 0x5707_a6e5);
    let mut stats = StorageStats::default();
    let mut zone_of: BTreeMap<String, String> = BTreeMap::new();
    let mut node_names: Vec<String> = Vec::new();
    // Running and pending pods by their ReplicaSet, in generation order.
    let mut running: Vec<(String, Vec<usize>)> = Vec::new();
    let mut pending: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, o) in snap.objects.iter().enumerate() {
        match o {
            Object::Node(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                let zone = n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(ZONE))
                    .cloned()
                    .unwrap_or_default();
                zone_of.insert(name.clone(), zone);
                node_names.push(name);
            }
            Object::Pod(p) => {
                let owner = p
                    .metadata
                    .owner_references
                    .as_ref()
                    .and_then(|o| o.first())
                    .map(|o| o.name.clone())
                    .unwrap_or_default();
                let bound = p.spec.as_ref().is_some_and(|s| s.node_name.is_some());
                let groups = if bound { &mut running } else { &mut pending };
                match groups.last_mut() {
                    Some((o, pods)) if *o == owner => pods.push(i),
                    _ => groups.push((owner, vec![i])),
                }
            }
            _ => {}
        }
    }
    let mut added = classes();
    let target_prebound = volumes * 3 / 5;
    let mut k = 0usize;
    for (w, (_, pods)) in running.iter().enumerate() {
        if stats.prebound >= target_prebound {
            break;
        }
        if !(2..=60).contains(&pods.len()) || w % 3 != 0 {
            continue;
        }
        stats.stateful_workloads += 1;
        let size = *rng.pick(&["10Gi", "20Gi", "50Gi", "100Gi"]);
        for &i in pods {
            let Object::Pod(pod) = &mut snap.objects[i] else {
                continue;
            };
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            let zone = zone_of.get(&node).cloned().unwrap_or_default();
            let claim_name = format!("data-{pod_name}");
            let volume_name = format!("pvc-{k:08x}-{}", rng.suffix(8));
            k += 1;
            let uid = rng.uid();
            let mut c = claim(&claim_name, &namespace, ZONAL_CLASS, size);
            c.metadata.uid = Some(uid.clone());
            c.metadata.annotations = Some(
                [
                    ("pv.kubernetes.io/bind-completed", "yes"),
                    ("pv.kubernetes.io/bound-by-controller", "yes"),
                    ("volume.kubernetes.io/selected-node", node.as_str()),
                    ("volume.kubernetes.io/storage-provisioner", EBS_DRIVER),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            );
            if let Some(spec) = c.spec.as_mut() {
                spec.volume_name = Some(volume_name.clone());
            }
            c.status = Some(PersistentVolumeClaimStatus {
                phase: Some("Bound".to_string()),
                access_modes: Some(vec!["ReadWriteOnce".to_string()]),
                capacity: Some(storage(size)),
                ..PersistentVolumeClaimStatus::default()
            });
            let pv = PersistentVolume {
                metadata: meta(&volume_name, None),
                spec: Some(PersistentVolumeSpec {
                    access_modes: Some(vec!["ReadWriteOnce".to_string()]),
                    capacity: Some(storage(size)),
                    storage_class_name: Some(ZONAL_CLASS.to_string()),
                    persistent_volume_reclaim_policy: Some("Delete".to_string()),
                    volume_mode: Some("Filesystem".to_string()),
                    csi: Some(CSIPersistentVolumeSource {
                        driver: EBS_DRIVER.to_string(),
                        volume_handle: format!("vol-{}", rng.suffix(17)),
                        fs_type: Some("ext4".to_string()),
                        ..CSIPersistentVolumeSource::default()
                    }),
                    node_affinity: Some(pinned(ZONE, &zone)),
                    claim_ref: Some(ObjectReference {
                        api_version: Some("v1".to_string()),
                        kind: Some("PersistentVolumeClaim".to_string()),
                        name: Some(claim_name.clone()),
                        namespace: Some(namespace.clone()),
                        uid: Some(uid),
                        ..ObjectReference::default()
                    }),
                    ..PersistentVolumeSpec::default()
                }),
                status: Some(PersistentVolumeStatus {
                    phase: Some("Bound".to_string()),
                    ..PersistentVolumeStatus::default()
                }),
            };
            mount(pod, &claim_name);
            added.push(Object::PersistentVolume(Box::new(pv)));
            added.push(Object::PersistentVolumeClaim(Box::new(c)));
            stats.prebound += 1;
        }
    }
    // Local volumes over the nodes, round-robin.
    let local = volumes.saturating_sub(stats.prebound);
    for j in 0..local {
        let node = &node_names[j % node_names.len()];
        let size = ["100Gi", "200Gi", "400Gi"][(j / node_names.len()) % 3];
        let name = format!("local-pv-{j:06}");
        let pv = PersistentVolume {
            metadata: meta(&name, None),
            spec: Some(PersistentVolumeSpec {
                access_modes: Some(vec!["ReadWriteOnce".to_string()]),
                capacity: Some(storage(size)),
                storage_class_name: Some(LOCAL_CLASS.to_string()),
                persistent_volume_reclaim_policy: Some("Retain".to_string()),
                volume_mode: Some("Filesystem".to_string()),
                local: Some(LocalVolumeSource {
                    path: format!("/mnt/disks/ssd{}", j / node_names.len()),
                    fs_type: None,
                }),
                node_affinity: Some(pinned(HOSTNAME, node)),
                ..PersistentVolumeSpec::default()
            }),
            status: Some(PersistentVolumeStatus {
                phase: Some("Available".to_string()),
                ..PersistentVolumeStatus::default()
            }),
        };
        added.push(Object::PersistentVolume(Box::new(pv)));
        stats.local += 1;
    }
    for name in &node_names {
        let csi = CSINode {
            metadata: meta(name, None),
            spec: CSINodeSpec {
                drivers: vec![CSINodeDriver {
                    name: EBS_DRIVER.to_string(),
                    node_id: format!("i-{}", rng.suffix(17)),
                    allocatable: Some(VolumeNodeResources {
                        count: Some(ATTACH_LIMIT),
                    }),
                    topology_keys: Some(vec![ZONE.to_string()]),
                }],
            },
        };
        added.push(Object::CsiNode(Box::new(csi)));
    }
    // Pending pods' claims.
    for (w, (_, pods)) in pending.iter().enumerate() {
        let (class, size) = match w % 4 {
            0 => (LOCAL_CLASS, "100Gi"),
            1 => (ZONAL_CLASS, "50Gi"),
            _ => continue,
        };
        for &i in pods {
            let Object::Pod(pod) = &mut snap.objects[i] else {
                continue;
            };
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let claim_name = format!("data-{pod_name}");
            mount(pod, &claim_name);
            added.push(Object::PersistentVolumeClaim(Box::new(claim(
                &claim_name,
                INCOMING_NAMESPACE,
                class,
                size,
            ))));
            if class == LOCAL_CLASS {
                stats.pending_local += 1;
            } else {
                stats.pending_zonal += 1;
            }
        }
    }
    // Storage objects go before the pods, as a snapshot lists them.
    let first_pod = snap
        .objects
        .iter()
        .position(|o| matches!(o, Object::Pod(_)))
        .unwrap_or(snap.objects.len());
    snap.objects.splice(first_pod..first_pod, added);
    stats
}
