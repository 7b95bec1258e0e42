//! A small universe of objects the property test picks from: a few names
//! per kind, each with variants (labels, taints, bindings, owners, terms),
//! so that random changes meet each other (a pod bound to a node that
//! goes, a ReplicaSet arriving after its pods, a relabelled namespace under
//! a namespaceSelector).

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::scheduling::v1 as scheduling;
use podplace_model::inventory::{Object, ObjectKey, ObjectKind};
use podplace_testkit::{namespace, node, pod, replicaset, PodB, HOST, ZONE};
use serde_json::json;

/// Namespaces of the universe.
pub const NAMESPACES: [&str; 2] = ["ns-a", "ns-b"];
/// Node names; the last is often absent, so pods wait for it.
pub const NODES: usize = 4;
/// Pod names per namespace.
pub const PODS: usize = 4;

/// The kinds the property test changes.
pub const KINDS: [ObjectKind; 8] = [
    ObjectKind::Node,
    ObjectKind::Namespace,
    ObjectKind::Pod,
    ObjectKind::Service,
    ObjectKind::ReplicaSet,
    ObjectKind::Job,
    ObjectKind::StatefulSet,
    ObjectKind::PriorityClass,
];

fn ns(i: usize) -> &'static str {
    NAMESPACES[i % NAMESPACES.len()]
}

/// A node: zone from the variant, sometimes a disk label, a taint or cordoned.
pub fn a_node(i: usize, v: u32) -> core::Node {
    let name = format!("n{}", i % NODES);
    let mut n = node(&name).label(ZONE, &format!("z{}", v % 2));
    if v & 2 != 0 {
        n = n.label("disk", "ssd");
    }
    if v & 4 != 0 {
        n = n.taint("dedicated", "x", "NoSchedule");
    }
    if v & 8 != 0 {
        n = n.unschedulable();
    }
    n.capacity("2", "8Gi", if v & 16 != 0 { "3" } else { "110" })
        .build()
}

/// A namespace labelled `team=t<v%3>`.
pub fn a_namespace(i: usize, v: u32) -> core::Namespace {
    namespace(ns(i))
        .label("team", &format!("t{}", v % 3))
        .build()
}

/// A pod: namespace and name from `i`; from the variant its app label,
/// binding (none or one of the nodes), owner (none, a ReplicaSet, a Job, a
/// StatefulSet), state (running, terminating, Succeeded) and rule (none,
/// required anti-affinity, preferred affinity, a namespaceSelector term, a
/// spread constraint).
pub fn a_pod(i: usize, v: u32) -> core::Pod {
    let namespace = ns(i);
    let name = format!("p{}", (i / NAMESPACES.len()) % PODS);
    let app = if v & 1 == 0 { "a" } else { "b" };
    let mut p: PodB = pod(&name)
        .ns(namespace)
        .uid(&format!("uid-{namespace}-{name}"))
        .label("app", app)
        .requests("300m", "512Mi");
    match (v >> 1) % 6 {
        0 | 1 => {}
        k => p = p.on(&format!("n{}", (k - 2) as usize % NODES)),
    }
    p = match (v >> 4) % 5 {
        0 => p,
        1 => p.owner("ReplicaSet", "rs0", "r0"),
        2 => p.owner("ReplicaSet", "rs1", "r1"),
        3 => p.owner("Job", "j0", "j0"),
        _ => p.owner("StatefulSet", "st0", "s0"),
    };
    p = match (v >> 7) % 5 {
        1 => p.terminating(),
        2 => p.phase("Succeeded"),
        _ => p,
    };
    p = match (v >> 10) % 6 {
        1 => p.anti("app", "In", &["a"], HOST),
        2 => p.prefer_affinity(10, "app", &["b"], ZONE),
        3 => p.anti_term(json!({
            "labelSelector": {"matchLabels": {"app": "a"}},
            "namespaceSelector": {"matchLabels": {"team": "t1"}},
            "topologyKey": ZONE
        })),
        4 => p.spread(1, ZONE, "DoNotSchedule", "a", None),
        _ => p,
    };
    p.build()
}

/// A Service selecting `app=a` or `app=b` (or nothing: no selector).
pub fn a_service(i: usize, v: u32) -> core::Service {
    let mut spec = json!({"ports": [{"port": 80}]});
    match v % 3 {
        0 => spec["selector"] = json!({"app": "a"}),
        1 => spec["selector"] = json!({"app": "b"}),
        _ => {}
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc{}", (i / 2) % 2), "namespace": ns(i)},
        "spec": spec
    }))
    .expect("a Service")
}

/// A ReplicaSet `rs0` or `rs1` selecting `app=a` or `app=b`, owned by a
/// Deployment or not.
pub fn a_replica_set(i: usize, v: u32) -> apps::ReplicaSet {
    let name = format!("rs{}", (i / 2) % 2);
    let app = if v & 1 == 0 { "a" } else { "b" };
    let mut rs = replicaset(&name, 1).ns(ns(i)).merge(json!({
        "spec": {"selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}}}}
    }));
    if v & 2 != 0 {
        rs = rs.merge(json!({"metadata": {"ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment",
            "name": format!("d{}", (v >> 2) % 2), "uid": "d", "controller": true
        }]}}));
    }
    rs.build()
}

/// A StatefulSet `st0` selecting `app=a` or `app=b`.
pub fn a_stateful_set(i: usize, v: u32) -> apps::StatefulSet {
    let app = if v & 1 == 0 { "a" } else { "b" };
    podplace_testkit::statefulset("st0", 1)
        .ns(ns(i))
        .merge(json!({
            "spec": {"selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}}}}
        }))
        .build()
}

/// A Job `j0`, owned by a CronJob or not.
pub fn a_job(i: usize, v: u32) -> batch::Job {
    let mut meta = json!({"name": "j0", "namespace": ns(i)});
    if v & 1 != 0 {
        meta["ownerReferences"] = json!([{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "cj", "uid": "c", "controller": true
        }]);
    }
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}}
    }))
    .expect("a Job")
}

/// A PriorityClass (kept, not compiled into pods).
pub fn a_priority_class(i: usize, v: u32) -> scheduling::PriorityClass {
    serde_json::from_value(json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": format!("pc{}", i % 2)}, "value": v % 1000
    }))
    .expect("a PriorityClass")
}

/// The object of `kind` number `i`, variant `v`.
pub fn object(kind: ObjectKind, i: usize, v: u32) -> Object {
    match kind {
        ObjectKind::Node => Object::Node(a_node(i, v)),
        ObjectKind::Namespace => Object::Namespace(a_namespace(i, v)),
        ObjectKind::Pod => Object::Pod(a_pod(i, v)),
        ObjectKind::Service => Object::Service(a_service(i, v)),
        ObjectKind::ReplicaSet => Object::ReplicaSet(a_replica_set(i, v)),
        ObjectKind::Job => Object::Job(a_job(i, v)),
        ObjectKind::StatefulSet => Object::StatefulSet(a_stateful_set(i, v)),
        _ => Object::PriorityClass(a_priority_class(i, v)),
    }
}

/// The key of `kind` number `i` (any variant has the same key).
pub fn key(kind: ObjectKind, i: usize) -> ObjectKey {
    object(kind, i, 0).key()
}
