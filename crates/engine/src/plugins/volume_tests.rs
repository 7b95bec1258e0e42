//! Table-driven tests of the volume, gate and claim plugins through a whole
//! scheduling cycle: each case is a small world, the pod to place, and
//! where kube-scheduler v1.36 puts it or its FailedScheduling message.

use k8s_openapi::api::core::v1 as core;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use serde_json::{json, Value};

use crate::cache::SchedulerCache;
use crate::place::{build_state, place_all, PlaceOptions};

fn sourced<T>(object: T) -> Sourced<T> {
    Sourced {
        object,
        origin: Origin::default(),
    }
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("test object")
}

fn node(name: &str, zone: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "pause"}]);
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}, "spec": spec})
}

fn claim_volume(claim: &str) -> Value {
    json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]})
}

fn pvc(name: &str, class: &str, size: &str, bound_to: Option<&str>) -> Value {
    let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": size}}}});
    if let Some(pv) = bound_to {
        v["spec"]["volumeName"] = json!(pv);
        v["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
        v["status"] = json!({"phase": "Bound"});
    }
    v
}

fn pv(name: &str, class: &str, size: &str, affinity: Option<(&str, &str)>) -> Value {
    let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                 "capacity": {"storage": size}, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": name}},
        "status": {"phase": "Available"}});
    if let Some((key, value)) = affinity {
        v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}});
    }
    v
}

fn class(name: &str, mode: &str, provisioner: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode})
}

/// Builds the inventory: nodes, running pods (with `nodeName`), objects by kind.
fn world(nodes: &[Value], pods: &[Value], objects: &[Value]) -> Inventory {
    let mut inv = Inventory::default();
    for n in nodes {
        inv.nodes.push(sourced(from::<core::Node>(n.clone())));
    }
    for p in pods {
        inv.pods.push(sourced(from::<core::Pod>(p.clone())));
    }
    for o in objects {
        match o["kind"].as_str().unwrap_or("") {
            "PersistentVolume" => inv.persistent_volumes.push(sourced(from(o.clone()))),
            "PersistentVolumeClaim" => inv.persistent_volume_claims.push(sourced(from(o.clone()))),
            "StorageClass" => inv.storage_classes.push(sourced(from(o.clone()))),
            "CSINode" => inv.csi_nodes.push(sourced(from(o.clone()))),
            "CSIDriver" => inv.csi_drivers.push(sourced(from(o.clone()))),
            "CSIStorageCapacity" => inv.csi_storage_capacities.push(sourced(from(o.clone()))),
            "ResourceClaim" => inv.resource_claims.push(sourced(from(o.clone()))),
            other => panic!("unexpected kind {other}"),
        }
    }
    inv
}

/// Places every pending pod; returns (pod, node or message) in load order.
fn place(inv: &Inventory) -> Vec<(String, Result<String, String>)> {
    let (mut state, pending) = build_state(inv).expect("world builds");
    let mut cache = SchedulerCache::new();
    let placed = place_all(&mut state, &mut cache, &pending, PlaceOptions::default());
    placed
        .iter()
        .map(|p| {
            let name = state.pod(p.pod).name.to_string();
            let r = match p.node {
                Some(n) => Ok(state.node(n).name.to_string()),
                None => Err(p.message.clone()),
            };
            (name, r)
        })
        .collect()
}

const TAIL: &str =
    "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";

fn three_nodes() -> Vec<Value> {
    vec![node("a1", "a"), node("b1", "b"), node("c1", "c")]
}

struct Case {
    name: &'static str,
    objects: Vec<Value>,
    running: Vec<Value>,
    pending: Vec<Value>,
    /// Per pending pod: the node, or the message.
    want: Vec<Result<&'static str, String>>,
}

fn cases() -> Vec<Case> {
    let gp2 = || class("gp2", "Immediate", "ebs.csi.aws.com");
    let wffc = || class("local", "WaitForFirstConsumer", NO_PROV);
    vec![
        Case {
            name: "missing claim",
            objects: vec![],
            running: vec![],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Err(
                "0/3 nodes are available: persistentvolumeclaim \"data\" not found. not found".into(),
            )],
        },
        Case {
            name: "bound zonal volume restricts the pod to its zone",
            objects: vec![gp2(), pv("pv1", "gp2", "10Gi", Some(("topology.kubernetes.io/zone", "b"))),
                pvc("data", "gp2", "10Gi", Some("pv1"))],
            running: vec![],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Ok("b1")],
        },
        Case {
            name: "bound zonal volume, its zone's node taken by anti-affinity",
            objects: vec![gp2(), pv("pv1", "gp2", "10Gi", Some(("topology.kubernetes.io/zone", "b"))),
                pvc("data", "gp2", "10Gi", Some("pv1"))],
            running: vec![{
                let mut p = pod("other", json!({"nodeName": "b1"}));
                p["metadata"]["labels"] = json!({"app": "x"});
                p
            }],
            pending: vec![{
                let mut p = pod("p", claim_volume("data"));
                p["metadata"]["labels"] = json!({"app": "x"});
                p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}});
                p
            }],
            want: vec![Err("0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 node(s) didn't match PersistentVolume's node affinity. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.".into())],
        },
        Case {
            name: "unbound immediate claim",
            objects: vec![gp2(), pvc("data", "gp2", "10Gi", None)],
            running: vec![],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Err(
                "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found".into(),
            )],
        },
        Case {
            name: "WaitForFirstConsumer: the only matching local volume decides the node; the next pod finds none",
            objects: vec![wffc(),
                pv("small", "local", "1Gi", Some(("kubernetes.io/hostname", "a1"))),
                pv("big", "local", "100Gi", Some(("kubernetes.io/hostname", "c1"))),
                pvc("d1", "local", "10Gi", None), pvc("d2", "local", "10Gi", None)],
            running: vec![],
            pending: vec![pod("p1", claim_volume("d1")), pod("p2", claim_volume("d2"))],
            want: vec![Ok("c1"), Err(format!(
                "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. {TAIL}"
            ))],
        },
        Case {
            name: "WaitForFirstConsumer: smallest fitting volume is chosen",
            objects: vec![wffc(),
                pv("v20", "local", "20Gi", Some(("topology.kubernetes.io/zone", "a"))),
                pv("v12", "local", "12Gi", Some(("topology.kubernetes.io/zone", "b"))),
                pv("v5", "local", "5Gi", Some(("topology.kubernetes.io/zone", "c"))),
                pvc("d1", "local", "10Gi", None)],
            running: vec![],
            pending: vec![pod("p1", claim_volume("d1"))],
            // Both a1 and b1 fit; scores tie, so only check it is not c1.
            want: vec![],
        },
        Case {
            name: "dynamic provisioning limited by allowedTopologies",
            objects: vec![{
                let mut c = class("zonal", "WaitForFirstConsumer", "ebs.csi.aws.com");
                c["allowedTopologies"] = json!([{"matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": ["c"]}]}]);
                c
            }, pvc("d1", "zonal", "10Gi", None)],
            running: vec![],
            pending: vec![pod("p1", claim_volume("d1"))],
            want: vec![Ok("c1")],
        },
        Case {
            name: "storage capacity too small where the driver asks for it",
            objects: vec![class("cap", "WaitForFirstConsumer", "ebs.csi.aws.com"),
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": {"name": "ebs.csi.aws.com"}, "spec": {"storageCapacity": true}}),
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": "cap-a", "namespace": "kube-system"}, "storageClassName": "cap",
                    "capacity": "100Gi", "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}}),
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": "cap-b", "namespace": "kube-system"}, "storageClassName": "cap",
                    "capacity": "1Gi", "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "b"}}}),
                pvc("d1", "cap", "10Gi", None)],
            running: vec![],
            pending: vec![pod("p1", claim_volume("d1"))],
            want: vec![Ok("a1")],
        },
        Case {
            name: "scheduling gates keep the pod out of the queue",
            objects: vec![],
            running: vec![],
            pending: vec![pod("p", json!({"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}]}))],
            want: vec![Err("waiting for scheduling gates: [example.com/a example.com/b]".into())],
        },
        Case {
            name: "ReadWriteOncePod claim used by a running pod",
            objects: vec![gp2(), pv("pv1", "gp2", "10Gi", None), {
                let mut c = pvc("data", "gp2", "10Gi", Some("pv1"));
                c["spec"]["accessModes"] = json!(["ReadWriteOncePod"]);
                c
            }],
            running: vec![{
                let mut p = pod("holder", claim_volume("data"));
                p["spec"]["nodeName"] = json!("a1");
                p
            }],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Err("0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.".into())],
        },
        Case {
            name: "CSINode attach limit",
            objects: vec![gp2(), pv("pv1", "gp2", "10Gi", Some(("kubernetes.io/hostname", "a1"))),
                pvc("data", "gp2", "10Gi", Some("pv1")),
                pv("pv0", "gp2", "10Gi", None), pvc("old", "gp2", "10Gi", Some("pv0")),
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "a1"},
                    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "a1", "allocatable": {"count": 1}}]}})],
            running: vec![{
                let mut p = pod("holder", claim_volume("old"));
                p["spec"]["nodeName"] = json!("a1");
                p
            }],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Err("0/3 nodes are available: 1 node(s) exceed max volume count, 2 node(s) didn't match PersistentVolume's node affinity. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.".into())],
        },
        Case {
            name: "preemption frees a ReadWriteOncePod claim held by a lower-priority pod, never a volume's reach",
            objects: vec![gp2(), pv("pv1", "gp2", "10Gi", Some(("topology.kubernetes.io/zone", "a"))), {
                let mut c = pvc("data", "gp2", "10Gi", Some("pv1"));
                c["spec"]["accessModes"] = json!(["ReadWriteOncePod"]);
                c
            }],
            running: vec![{
                let mut p = pod("holder", claim_volume("data"));
                p["spec"]["nodeName"] = json!("a1");
                p
            }],
            pending: vec![{
                let mut p = pod("p", claim_volume("data"));
                p["spec"]["priority"] = json!(1000);
                p
            }],
            // (VolumeRestrictions filters before VolumeBinding, so every node
            // reports the claim; preemption finds a victim on a1 only, and
            // with a candidate the message has no PostFilter part.)
            want: vec![Err("0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.".into())],
        },
        Case {
            name: "a volume already attached to the node does not count twice against its CSI limit",
            objects: vec![gp2(), pv("pv0", "gp2", "10Gi", None), {
                let mut c = pvc("shared", "gp2", "10Gi", Some("pv0"));
                c["spec"]["accessModes"] = json!(["ReadWriteMany"]);
                c
            },
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "a1"},
                    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "a1", "allocatable": {"count": 1}}]}})],
            running: vec![{
                let mut p = pod("holder", claim_volume("shared"));
                p["spec"]["nodeName"] = json!("a1");
                p
            }],
            pending: vec![{
                let mut p = pod("p", claim_volume("shared"));
                p["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "a1"});
                p
            }],
            want: vec![Ok("a1")],
        },
        Case {
            name: "in-tree disks: the same GCE PD conflicts unless both mount it read-only",
            objects: vec![],
            running: vec![{
                let mut p = pod("ro", json!({"nodeName": "a1", "volumes": [{"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": true}}]}));
                p["spec"]["nodeName"] = json!("a1");
                p
            }, {
                let mut p = pod("rw", json!({"volumes": [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}]}));
                p["spec"]["nodeName"] = json!("b1");
                p
            }],
            pending: vec![
                pod("p-ro", json!({"nodeSelector": {"kubernetes.io/hostname": "a1"}, "volumes": [{"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": true}}]})),
                pod("p-ebs", json!({"nodeSelector": {"kubernetes.io/hostname": "b1"}, "volumes": [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}]})),
            ],
            want: vec![Ok("a1"), Err("0/3 nodes are available: 1 node(s) had no available disk, 2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.".into())],
        },
        Case {
            name: "volume zone label",
            objects: vec![gp2(), {
                let mut v = pv("pv1", "gp2", "10Gi", None);
                v["metadata"]["labels"] = json!({"failure-domain.beta.kubernetes.io/zone": "c"});
                v
            }, pvc("data", "gp2", "10Gi", Some("pv1"))],
            running: vec![],
            pending: vec![pod("p", claim_volume("data"))],
            want: vec![Ok("c1")],
        },
        Case {
            name: "a StatefulSet's claim is created by its controller: without storage classes it goes anywhere",
            objects: vec![],
            running: vec![],
            pending: vec![{
                let mut p = pod("db-0", claim_volume("data-db-0"));
                p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
                    "name": "db", "uid": "u", "controller": true}]);
                p
            }],
            want: vec![Ok("*")],
        },
        Case {
            name: "a StatefulSet's claim of a WaitForFirstConsumer default class binds a local volume",
            objects: vec![{
                let mut c = wffc();
                c["metadata"]["annotations"] = json!({"storageclass.kubernetes.io/is-default-class": "true"});
                c
            }, pv("local-b", "local", "10Gi", Some(("kubernetes.io/hostname", "b1")))],
            running: vec![],
            pending: vec![{
                let mut p = pod("db-0", claim_volume("data-db-0"));
                p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
                    "name": "db", "uid": "u", "controller": true}]);
                p
            }],
            want: vec![Ok("b1")],
        },
        Case {
            name: "a generic ephemeral volume's claim is created from its template",
            objects: vec![wffc(), pv("local-c", "local", "10Gi", Some(("kubernetes.io/hostname", "c1")))],
            running: vec![],
            pending: vec![pod("p", json!({"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}}}]}))],
            want: vec![Ok("c1")],
        },
        Case {
            name: "missing ResourceClaim",
            objects: vec![],
            running: vec![],
            pending: vec![pod("p", json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}))],
            want: vec![Err("0/3 nodes are available: resourceclaim.resource.k8s.io \"gpu-claim\" not found. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.".into())],
        },
        Case {
            name: "allocated ResourceClaim restricts the nodes; unallocated is not modelled",
            objects: vec![
                json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": "gpu-claim", "namespace": "default"},
                    "spec": {"devices": {}},
                    "status": {"allocation": {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["b1"]}]}]}}}}),
                json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": "free", "namespace": "default"}, "spec": {"devices": {}}})],
            running: vec![],
            pending: vec![
                pod("p", json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]})),
                pod("q", json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "free"}]})),
            ],
            want: vec![Ok("b1"), Err("not modelled: device allocation (ResourceClaim \"free\" is not allocated)".into())],
        },
    ]
}

const NO_PROV: &str = "kubernetes.io/no-provisioner";

#[test]
fn volume_gate_and_claim_cases() {
    let mut failures = Vec::new();
    for case in cases() {
        let mut pods = case.running.clone();
        pods.extend(case.pending.iter().cloned());
        let inv = world(&three_nodes(), &pods, &case.objects);
        let got = place(&inv);
        if case.want.is_empty() {
            if got.iter().any(|(_, r)| r.as_deref() == Ok("c1")) {
                failures.push(format!("{}: {got:?}", case.name));
            }
            continue;
        }
        let got: Vec<Result<String, String>> = got
            .into_iter()
            .zip(&case.want)
            .map(|((_, r), w)| match (r, w) {
                (Ok(_), Ok("*")) => Ok("*".to_string()),
                // A wanted message ending in ". " is a prefix (the rest is
                // preemption's choice of victims).
                (Err(m), Err(w)) if w.ends_with(". ") && m.starts_with(w.as_str()) => {
                    Err(w.clone())
                }
                (r, _) => r,
            })
            .collect();
        let want: Vec<Result<String, String>> = case
            .want
            .iter()
            .map(|w| w.clone().map(str::to_string))
            .collect();
        if got != want {
            failures.push(format!("{}:\n  got  {got:?}\n  want {want:?}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Which victims preemption picks: the pod holding a ReadWriteOncePod
/// claim (evicting it frees the claim), on the one node the claim's
/// volume reaches; the nodes outside the volume's reach are no candidates
/// whatever runs there.
#[test]
fn preemption_evicts_the_claims_holder_only_where_the_volume_reaches() {
    let mut claim = pvc("data", "gp2", "10Gi", Some("pv1"));
    claim["spec"]["accessModes"] = json!(["ReadWriteOncePod"]);
    let objects = vec![
        class("gp2", "Immediate", "ebs.csi.aws.com"),
        pv(
            "pv1",
            "gp2",
            "10Gi",
            Some(("topology.kubernetes.io/zone", "a")),
        ),
        claim,
    ];
    let mut holder = pod("holder", claim_volume("data"));
    holder["spec"]["nodeName"] = json!("a1");
    let mut bystander = pod("bystander", json!({}));
    bystander["spec"]["nodeName"] = json!("b1");
    let mut incoming = pod("p", claim_volume("data"));
    incoming["spec"]["priority"] = json!(1000);
    let inv = world(&three_nodes(), &[holder, bystander, incoming], &objects);
    let (state, pending) = build_state(&inv).expect("world builds");
    let mut cache = SchedulerCache::new();
    let pod = state.pod(pending[0]).clone();
    let outcome = crate::cycle::schedule(&state, &mut cache, &pod, 0);
    let preemption = outcome.preemption.expect("preemption ran");
    let candidates: Vec<(String, Vec<String>)> = preemption
        .candidates
        .iter()
        .map(|c| {
            (
                state.node(c.node).name.to_string(),
                c.victims
                    .iter()
                    .map(|&v| state.pod(v).name.to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        candidates,
        vec![("a1".to_string(), vec!["holder".to_string()])]
    );
}

/// Placement time with and without volumes: 1,000 nodes in 10 zones,
/// 20,000 local PersistentVolumes (20 per node) plus 2,000 zonal ones, and
/// 2,000 pending StatefulSet-like pods each with a WaitForFirstConsumer
/// claim, against the same pods without claims. Run in release:
/// `cargo test --release -p podplace-engine --lib placement_time_with_volumes -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run in release"]
fn placement_time_with_volumes() {
    let nodes: Vec<Value> = (0..1000)
        .map(|i| node(&format!("n{i}"), &format!("z{}", i % 10)))
        .collect();
    let mut objects = vec![wffc_default()];
    for i in 0..1000 {
        for j in 0..20 {
            objects.push(pv(
                &format!("local-{i}-{j}"),
                "local",
                &format!("{}Gi", 10 + j),
                Some(("kubernetes.io/hostname", &format!("n{i}"))),
            ));
        }
    }
    for i in 0..2000 {
        objects.push(pv(
            &format!("zonal-{i}"),
            "local",
            "50Gi",
            Some(("topology.kubernetes.io/zone", &format!("z{}", i % 10))),
        ));
    }
    let mut with = Vec::new();
    let mut without = Vec::new();
    for i in 0..2000 {
        objects.push(pvc(&format!("data-{i}"), "local", "15Gi", None));
        let mut p = pod(&format!("db-{i}"), claim_volume(&format!("data-{i}")));
        p["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": "100m", "memory": "128Mi"}});
        with.push(p.clone());
        p["spec"].as_object_mut().map(|s| s.remove("volumes"));
        without.push(p);
    }
    for (label, pods, objects) in [
        ("without volumes", &without, &Vec::new()),
        ("with volumes", &with, &objects),
    ] {
        let inv = world(&nodes, pods, objects);
        let started = std::time::Instant::now();
        let (mut state, pending) = build_state(&inv).expect("world builds");
        let built = started.elapsed();
        let mut cache = SchedulerCache::new();
        let started = std::time::Instant::now();
        let placed = place_all(&mut state, &mut cache, &pending, PlaceOptions::default());
        let placing = started.elapsed();
        let bound = placed.iter().filter(|p| p.node.is_some()).count();
        eprintln!(
            "{label}: build {:.3}s, place {} pods in {:.3}s ({bound} placed)",
            built.as_secs_f64(),
            pending.len(),
            placing.as_secs_f64()
        );
    }
}

fn wffc_default() -> Value {
    let mut c = class("local", "WaitForFirstConsumer", NO_PROV);
    c["metadata"]["annotations"] = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    c
}

/// An allocated ResourceClaim available on every node, reserved for
/// `reserved` pods that are not in the world.
fn shared_claim(reserved: usize) -> Value {
    let consumers: Vec<Value> = (0..reserved)
        .map(|i| json!({"resource": "pods", "name": format!("old-{i}"), "uid": format!("uid-old-{i}")}))
        .collect();
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default", "uid": "claim-uid"},
        "spec": {"devices": {}},
        "status": {"allocation": {"devices": {}}, "reservedFor": consumers}})
}

fn claim_user(name: &str) -> Value {
    pod(
        name,
        json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}]}),
    )
}

/// kube-scheduler v1.36 does not limit sharing at PreFilter: the pod
/// passes every filter and PreBind's reservation is refused by the API.
const IN_USE: &str = "running PreBind plugin \"DynamicResources\": add reservation to claim default/shared: ResourceClaim.resource.k8s.io \"shared\" is invalid: status.reservedFor: Too many: 257: must have at most 256 items";

/// Each placement of a run reserves the shared claim, as kube-scheduler's
/// PreBind does: with 250 consumers, 6 more pods are placed and the 7th
/// and 8th find `status.reservedFor` full (256): their PreBind fails. A
/// pod that is removed, or finishes, or is unbound leaves the list and
/// frees its place.
#[test]
fn a_shared_claim_is_reserved_by_each_placement_until_256() {
    let pending: Vec<Value> = (0..8).map(|i| claim_user(&format!("p{i}"))).collect();
    let inv = world(&three_nodes(), &pending, &[shared_claim(250)]);
    let (mut state, ids) = build_state(&inv).expect("world builds");
    let mut cache = SchedulerCache::new();
    let placed = place_all(&mut state, &mut cache, &ids, PlaceOptions::default());
    let answers: Vec<Result<(), String>> = placed
        .iter()
        .map(|p| p.node.map(|_| ()).ok_or_else(|| p.message.clone()))
        .collect();
    let mut want = vec![Ok(()); 6];
    want.extend([Err(IN_USE.to_string()), Err(IN_USE.to_string())]);
    assert_eq!(answers, want);
    let ns = state.interner().lookup("default").expect("namespace");
    let reserved = |state: &crate::state::ClusterState| {
        state
            .storage()
            .resource_claim(ns, "shared")
            .expect("claim")
            .reserved_for
            .iter()
            .map(|c| c.name.to_string())
            .collect::<Vec<_>>()
    };
    let names = reserved(&state);
    assert_eq!(names.len(), 256);
    assert_eq!(names[250..], ["p0", "p1", "p2", "p3", "p4", "p5"]);

    // A pod already among the consumers can use the full claim.
    let p0 = state.pod(ids[0]).clone();
    let outcome = crate::cycle::schedule(&state, &mut cache, &p0, 0);
    assert!(outcome.chosen.is_some(), "{}", outcome.message);

    // Removing a placed pod frees its place: p6 is placed now, p7 is not.
    state.remove_pod(ids[0]);
    assert_eq!(reserved(&state).len(), 255);
    let again = place_all(&mut state, &mut cache, &ids[6..], PlaceOptions::default());
    assert!(again[0].node.is_some(), "{}", again[0].message);
    assert_eq!(again[1].message, IN_USE);
    assert_eq!(reserved(&state).last().map(String::as_str), Some("p6"));

    // A pod that is done, or unbound, leaves the list too.
    state.set_finished(ids[1], true);
    assert!(!reserved(&state).contains(&"p1".to_string()));
    state.unbind(ids[2]);
    assert!(!reserved(&state).contains(&"p2".to_string()));
    assert_eq!(reserved(&state).len(), 254);
    // An overlay's reservations are its own.
    let mut what_if = state.overlay();
    what_if.remove_pod(ids[3]);
    assert_eq!(reserved(&what_if).len(), 253);
    assert_eq!(reserved(&state).len(), 254);
}

/// Pods bound in the input do not reserve: the claim's `reservedFor` is
/// what the objects say (kube-scheduler wrote it when it bound them).
#[test]
fn bound_pods_in_the_input_keep_the_claims_reservations_as_written() {
    let mut running = claim_user("running");
    running["spec"]["nodeName"] = json!("a1");
    let inv = world(&three_nodes(), &[running], &[shared_claim(3)]);
    let (state, _) = build_state(&inv).expect("world builds");
    let ns = state.interner().lookup("default").expect("namespace");
    let claim = state.storage().resource_claim(ns, "shared").expect("claim");
    assert_eq!(claim.reserved_for.len(), 3);
}
