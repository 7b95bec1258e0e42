//! Per-object storage updates (what a watch-based `serve` applies) against
//! a fresh build: a random sequence of upserts and deletes of
//! PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
//! CSIDrivers, CSIStorageCapacities and ResourceClaims must leave the state
//! with the same canonical dump (objects and the available-volume and
//! claim-reference indexes, in order) as compiling the final objects at
//! once. Claims always name their class, as the API returns them after
//! admission.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::resource::v1 as resource;
use k8s_openapi::api::storage::v1 as storage;
use podplace_engine::ClusterState;
use podplace_model::inventory::{Inventory, Sourced};
use proptest::prelude::*;
use serde_json::{json, Value};

const CLASSES: [&str; 4] = ["", "sc0", "sc1", "sc2"];
const HOSTS: [&str; 3] = ["n0", "n1", "n2"];
const ZONES: [&str; 2] = ["z0", "z1"];
const SIZES: [&str; 3] = ["1Gi", "5Gi", "10Gi"];

/// The kinds of object, in the order they are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Volume,
    Claim,
    Class,
    CsiNode,
    CsiDriver,
    Capacity,
    ResourceClaim,
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(Kind, usize, Value),
    Delete(Kind, usize),
}

fn arb_volume(i: usize) -> impl Strategy<Value = Value> {
    (
        0..CLASSES.len(),
        0..SIZES.len(),
        0u8..5,
        0u8..4,
        0u8..3,
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_map(
            move |(class, size, pin, claim, phase, deleting, labelled)| {
                let phase = ["Available", "Bound", "Released"][phase as usize];
                let mut v = json!({"metadata": {"name": format!("pv{i}")},
                "spec": {"storageClassName": CLASSES[class], "accessModes": ["ReadWriteOnce"],
                    "capacity": {"storage": SIZES[size]},
                    "csi": {"driver": "d0", "volumeHandle": format!("h{i}")}},
                "status": {"phase": phase}});
                let expr = |key: &str, values: &[&str]| {
                    json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": key, "operator": "In", "values": values}]}]}})
                };
                match pin {
                    1 => {
                        v["spec"]["nodeAffinity"] = expr("kubernetes.io/hostname", &[HOSTS[i % 3]])
                    }
                    2 => v["spec"]["nodeAffinity"] = expr("kubernetes.io/hostname", &HOSTS[..2]),
                    3 => {
                        v["spec"]["nodeAffinity"] =
                            expr("topology.kubernetes.io/zone", &[ZONES[i % 2]])
                    }
                    _ => {}
                }
                if claim > 0 {
                    v["spec"]["claimRef"] =
                        json!({"namespace": "default", "name": format!("pvc{}", claim - 1)});
                }
                if deleting {
                    v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
                }
                if labelled {
                    v["metadata"]["labels"] = json!({"tier": "fast"});
                }
                v
            },
        )
}

fn arb_claim(i: usize) -> impl Strategy<Value = Value> {
    (0..CLASSES.len(), 0..SIZES.len(), 0u8..4, prop::bool::ANY).prop_map(
        move |(class, size, volume, selector)| {
            let mut v = json!({"metadata": {"name": format!("pvc{i}"), "namespace": "default"},
                "spec": {"storageClassName": CLASSES[class], "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": SIZES[size]}}}});
            if volume > 0 {
                v["spec"]["volumeName"] = json!(format!("pv{}", volume - 1));
                v["status"] = json!({"phase": "Bound"});
            }
            if selector {
                v["spec"]["selector"] = json!({"matchLabels": {"tier": "fast"}});
            }
            v
        },
    )
}

fn arb_class(i: usize) -> impl Strategy<Value = Value> {
    (prop::bool::ANY, prop::bool::ANY, 0u8..3, prop::bool::ANY).prop_map(
        move |(wffc, default, created, topology)| {
            let provisioner = if i == 0 {
                "kubernetes.io/no-provisioner"
            } else {
                "d1"
            };
            let mode = if wffc {
                "WaitForFirstConsumer"
            } else {
                "Immediate"
            };
            let mut v = json!({"metadata": {"name": format!("sc{i}"),
                    "creationTimestamp": format!("2026-01-0{}T00:00:00Z", created + 1)},
                "provisioner": provisioner, "volumeBindingMode": mode});
            if default {
                v["metadata"]["annotations"] =
                    json!({"storageclass.kubernetes.io/is-default-class": "true"});
            }
            if topology {
                v["allowedTopologies"] = json!([{"matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": [ZONES[i % 2]]}]}]);
            }
            v
        },
    )
}

fn arb_csi_node(i: usize) -> impl Strategy<Value = Value> {
    (0u8..3, 1i32..40).prop_map(move |(drivers, count)| {
        let drivers: Vec<Value> = (0..drivers)
            .map(|d| {
                json!({"name": format!("d{d}"), "nodeID": format!("id{i}"),
                "allocatable": {"count": count + d as i32},
                "topologyKeys": ["topology.kubernetes.io/zone"]})
            })
            .collect();
        json!({"metadata": {"name": HOSTS[i % 3]}, "spec": {"drivers": drivers}})
    })
}

fn arb_csi_driver(i: usize) -> impl Strategy<Value = Value> {
    prop::bool::ANY.prop_map(move |capacity| {
        json!({"metadata": {"name": format!("d{i}")}, "spec": {"storageCapacity": capacity}})
    })
}

fn arb_capacity(i: usize) -> impl Strategy<Value = Value> {
    (1..CLASSES.len(), 0..SIZES.len(), 0..ZONES.len()).prop_map(move |(class, size, zone)| {
        json!({"metadata": {"name": format!("cap{i}"), "namespace": "default"},
            "storageClassName": CLASSES[class], "capacity": SIZES[size],
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": ZONES[zone]}}})
    })
}

fn arb_resource_claim(i: usize) -> impl Strategy<Value = Value> {
    (prop::bool::ANY, 0usize..4, prop::bool::ANY).prop_map(move |(allocated, reserved, pinned)| {
        let mut v = json!({"metadata": {"name": format!("rc{i}"), "namespace": "default",
                "uid": format!("rc-uid-{i}")},
            "spec": {"devices": {}}});
        if allocated {
            let consumers: Vec<Value> = (0..reserved)
                .map(|k| json!({"resource": "pods", "name": format!("p{k}"), "uid": format!("u{k}")}))
                .collect();
            v["status"] = json!({"allocation": {"devices": {}}, "reservedFor": consumers});
            if pinned {
                v["status"]["allocation"]["nodeSelector"] = json!({"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [HOSTS[i % 3]]}]}]});
            }
        }
        v
    })
}

fn arb_op() -> impl Strategy<Value = Op> {
    let kind = prop::sample::select(vec![
        Kind::Volume,
        Kind::Volume,
        Kind::Volume,
        Kind::Claim,
        Kind::Class,
        Kind::CsiNode,
        Kind::CsiDriver,
        Kind::Capacity,
        Kind::ResourceClaim,
    ]);
    (kind, 0usize..8, 0u8..4).prop_flat_map(|(kind, i, delete)| {
        let object: BoxedStrategy<Value> = match kind {
            Kind::Volume => arb_volume(i).boxed(),
            Kind::Claim => arb_claim(i % 4).boxed(),
            Kind::Class => arb_class(i % 3).boxed(),
            Kind::CsiNode => arb_csi_node(i % 3).boxed(),
            Kind::CsiDriver => arb_csi_driver(i % 3).boxed(),
            Kind::Capacity => arb_capacity(i % 4).boxed(),
            Kind::ResourceClaim => arb_resource_claim(i % 4).boxed(),
        };
        let index = match kind {
            Kind::Volume => i,
            Kind::Claim | Kind::Capacity | Kind::ResourceClaim => i % 4,
            _ => i % 3,
        };
        object.prop_map(move |o| {
            if delete == 0 {
                Op::Delete(kind, index)
            } else {
                Op::Upsert(kind, index, o)
            }
        })
    })
}

fn api<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).expect("test object")
}

fn apply(state: &mut ClusterState, op: &Op) {
    match op {
        Op::Upsert(kind, _, v) => match kind {
            Kind::Volume => {
                state.upsert_persistent_volume(&api(v)).unwrap();
            }
            Kind::Claim => state.upsert_persistent_volume_claim(&api(v)).unwrap(),
            Kind::Class => state.upsert_storage_class(&api(v)),
            Kind::CsiNode => state.upsert_csi_node(&api(v)),
            Kind::CsiDriver => state.upsert_csi_driver(&api(v)),
            Kind::Capacity => state.upsert_csi_storage_capacity(&api(v)).unwrap(),
            Kind::ResourceClaim => state.upsert_resource_claim(&api(v)),
        },
        Op::Delete(kind, i) => {
            match kind {
                Kind::Volume => state.delete_persistent_volume(&format!("pv{i}")),
                Kind::Claim => state.delete_persistent_volume_claim("default", &format!("pvc{i}")),
                Kind::Class => state.delete_storage_class(&format!("sc{i}")),
                Kind::CsiNode => state.delete_csi_node(HOSTS[i % 3]),
                Kind::CsiDriver => state.delete_csi_driver(&format!("d{i}")),
                Kind::Capacity => state.delete_csi_storage_capacity("default", &format!("cap{i}")),
                Kind::ResourceClaim => state.delete_resource_claim("default", &format!("rc{i}")),
            };
        }
    }
}

fn sourced<T>(object: T) -> Sourced<T> {
    Sourced {
        object,
        origin: Default::default(),
    }
}

/// The final objects, loaded at once (in an order unrelated to the updates').
fn fresh(objects: &BTreeMap<(Kind, usize), Value>) -> ClusterState {
    let mut inv = Inventory::default();
    for ((kind, _), v) in objects.iter().rev() {
        match kind {
            Kind::Volume => inv
                .persistent_volumes
                .push(sourced(api::<core::PersistentVolume>(v))),
            Kind::Claim => inv
                .persistent_volume_claims
                .push(sourced(api::<core::PersistentVolumeClaim>(v))),
            Kind::Class => inv
                .storage_classes
                .push(sourced(api::<storage::StorageClass>(v))),
            Kind::CsiNode => inv.csi_nodes.push(sourced(api::<storage::CSINode>(v))),
            Kind::CsiDriver => inv.csi_drivers.push(sourced(api::<storage::CSIDriver>(v))),
            Kind::Capacity => inv
                .csi_storage_capacities
                .push(sourced(api::<storage::CSIStorageCapacity>(v))),
            Kind::ResourceClaim => inv
                .resource_claims
                .push(sourced(api::<resource::ResourceClaim>(v))),
        }
    }
    let mut state = ClusterState::new();
    state.load_storage(&inv).unwrap();
    state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn per_object_storage_updates_equal_a_fresh_build(
        ops in prop::collection::vec(arb_op(), 1..80),
    ) {
        let mut state = ClusterState::new();
        let mut objects: BTreeMap<(Kind, usize), Value> = BTreeMap::new();
        for op in &ops {
            apply(&mut state, op);
            match op {
                Op::Upsert(kind, i, v) => {
                    objects.insert((*kind, *i), v.clone());
                }
                Op::Delete(kind, i) => {
                    objects.remove(&(*kind, *i));
                }
            }
        }
        let got = state.canonical_dump();
        let want = fresh(&objects).canonical_dump();
        prop_assert_eq!(got, want);
    }
}

/// The index answers a node's candidates after updates as it does after a
/// fresh build: volumes pinned to the node's hostname, to its zone, and
/// the rest, smallest first.
#[test]
fn candidates_follow_updates() {
    let mut state = ClusterState::new();
    let volume = |name: &str, size: &str, host: Option<&str>| {
        let mut v = json!({"metadata": {"name": name},
            "spec": {"storageClassName": "local", "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"]}});
        if let Some(h) = host {
            v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [h]}]}]}});
        }
        api::<core::PersistentVolume>(&v)
    };
    state
        .upsert_persistent_volume(&volume("big", "10Gi", Some("n0")))
        .unwrap();
    state
        .upsert_persistent_volume(&volume("small", "1Gi", Some("n0")))
        .unwrap();
    state
        .upsert_persistent_volume(&volume("any", "5Gi", None))
        .unwrap();
    let names = |state: &ClusterState| {
        let n0 = state.interner().lookup("n0");
        state
            .storage()
            .candidates("local", n0, None)
            .iter()
            .map(|l| {
                l.iter()
                    .map(|&id| state.storage().volume(id).name.to_string())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&state),
        vec![vec!["small", "big"], vec![], vec!["any"]]
    );
    // "small" grows past "big"; "any" is claimed; "big" is deleted.
    state
        .upsert_persistent_volume(&volume("small", "20Gi", Some("n0")))
        .unwrap();
    let mut claimed = volume("any", "5Gi", None);
    claimed.spec.as_mut().unwrap().claim_ref = Some(core::ObjectReference {
        namespace: Some("default".into()),
        name: Some("data".into()),
        ..Default::default()
    });
    state.upsert_persistent_volume(&claimed).unwrap();
    assert_eq!(names(&state), vec![vec!["big", "small"], vec![], vec![]]);
    assert!(state.delete_persistent_volume("big"));
    assert!(!state.delete_persistent_volume("big"));
    assert_eq!(names(&state), vec![vec!["small"], vec![], vec![]]);
}
