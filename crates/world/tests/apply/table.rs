//! Each kind's update path, one table row per watch story: the events, and
//! what the world must say after them.

use podplace_model::inventory::{Inventory, Object, ObjectKey, ObjectKind};
use podplace_testkit::{namespace, node, pod, HOST, ZONE};
use podplace_world::{Action, Applied, ApplyError, Change, PodEvent, SchedulerSetup, World};
use serde_json::json;

use crate::universe;

fn up(o: Object) -> Change {
    Change::Upsert(o)
}

fn del(kind: ObjectKind, namespace: &str, name: &str) -> Change {
    Change::Delete(ObjectKey {
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

fn p(b: podplace_testkit::PodB) -> Object {
    Object::Pod(b.build())
}

fn n(b: podplace_testkit::NodeB) -> Object {
    Object::Node(b.build())
}

/// Applies every change; the results.
fn apply_all(changes: Vec<Change>) -> (World, Vec<Applied>) {
    let mut world =
        World::observed(Inventory::default(), &SchedulerSetup::default(), 1).expect("empty");
    let applied = changes
        .into_iter()
        .map(|c| world.apply(c).expect("applies"))
        .collect();
    (world, applied)
}

fn node_of(world: &World, ns: &str, name: &str) -> Option<String> {
    let id = world.pod_id(ns, name)?;
    let node = world.state().pod_node(id)?;
    Some(world.state().node(node).name.to_string())
}

type Check = fn(&World, &[Applied]);

#[test]
fn each_kind_updates_in_place() {
    let rows: Vec<(&str, Vec<Change>, Check)> = vec![
        (
            "a pod created pending, then bound by the scheduler",
            vec![
                up(n(node("n1"))),
                up(p(pod("web").ns("shop"))),
                up(p(pod("web").ns("shop").on("n1"))),
            ],
            |w, a| {
                let id = w.pod_id("shop", "web").unwrap();
                assert_eq!(a[1].pods, vec![(id, PodEvent::Pending)]);
                assert_eq!(a[2].action, Action::Updated);
                let n1 = w.state().node_id("n1").unwrap();
                assert_eq!(a[2].pods, vec![(id, PodEvent::Bound(n1))]);
                assert_eq!(node_of(w, "shop", "web").as_deref(), Some("n1"));
                assert!(w.placements().is_empty(), "observed: nothing placed");
            },
        ),
        (
            "a pod relabelled, then terminating, then Succeeded",
            vec![
                up(n(node("n1"))),
                up(p(pod("web").on("n1").label("app", "a"))),
                up(p(pod("web").on("n1").label("app", "b"))),
                up(p(pod("web").on("n1").label("app", "b").terminating())),
                up(p(pod("web")
                    .on("n1")
                    .label("app", "b")
                    .terminating()
                    .phase("Succeeded"))),
            ],
            |w, a| {
                let id = w.pod_id("default", "web").unwrap();
                assert!(a[2..].iter().all(|x| x.pods == vec![(id, PodEvent::Updated)]));
                let e = w.state().pod_entry(id).unwrap();
                let app = w.state().interner().lookup("app").unwrap();
                let b = w.state().interner().lookup("b").unwrap();
                assert_eq!(e.pod.labels.get(app), Some(b));
                assert!(e.pod.terminating && e.pod.finished);
                let n1 = w.state().node_id("n1").unwrap();
                assert!(w.state().node_info(n1).pods.is_empty(), "finished: not counted");
                assert_eq!(w.api_pod(id).unwrap().metadata.labels.as_ref().unwrap()["app"], "b");
            },
        ),
        (
            "a pod whose status alone changes: the object is replaced, nothing else",
            vec![
                up(n(node("n1"))),
                up(p(pod("web").on("n1"))),
                up(Object::Pod(
                    pod("web")
                        .on("n1")
                        .merge(json!({"status": {"podIP": "10.0.0.7"}}))
                        .build(),
                )),
            ],
            |w, a| {
                let id = w.pod_id("default", "web").unwrap();
                assert_eq!(a[2].pods, vec![(id, PodEvent::Updated)]);
                let ip = w.api_pod(id).unwrap().status.as_ref().unwrap().pod_ip.clone();
                assert_eq!(ip.as_deref(), Some("10.0.0.7"));
                assert_eq!(node_of(w, "default", "web").as_deref(), Some("n1"));
            },
        ),
        (
            "a pod deleted: the last pod's API index moves into its place",
            vec![
                up(p(pod("a"))),
                up(p(pod("b"))),
                up(p(pod("c"))),
                del(ObjectKind::Pod, "default", "a"),
                del(ObjectKind::Pod, "default", "zz"),
            ],
            |w, a| {
                assert_eq!(a[3].action, Action::Deleted);
                assert_eq!(a[3].pods[0].1, PodEvent::Removed);
                assert_eq!(a[4].action, Action::Absent);
                assert!(w.pod_id("default", "a").is_none());
                for name in ["b", "c"] {
                    let id = w.pod_id("default", name).unwrap();
                    assert_eq!(w.api_pod(id).unwrap().metadata.name.as_deref(), Some(name));
                }
                assert_eq!(w.keys(ObjectKind::Pod).len(), 2);
            },
        ),
        (
            "a pod bound to a node that arrives later; the node goes and comes back",
            vec![
                up(p(pod("web").on("n9"))),
                up(n(node("n9"))),
                del(ObjectKind::Node, "", "n9"),
                up(n(node("n9").label(ZONE, "z1"))),
            ],
            |w, a| {
                let id = w.pod_id("default", "web").unwrap();
                assert_eq!(a[0].pods, vec![(id, PodEvent::Pending)]);
                assert!(matches!(a[1].pods[..], [(p, PodEvent::Bound(_))] if p == id));
                assert_eq!(a[2].pods, vec![(id, PodEvent::Pending)]);
                assert!(matches!(a[3].pods[..], [(p, PodEvent::Bound(_))] if p == id));
                assert_eq!(node_of(w, "default", "web").as_deref(), Some("n9"));
            },
        ),
        (
            "a node relabelled, tainted and cordoned keeps its pods",
            vec![
                up(n(node("n1").label(ZONE, "z1"))),
                up(p(pod("web").on("n1"))),
                up(n(node("n1")
                    .label(ZONE, "z2")
                    .taint("k", "v", "NoSchedule")
                    .unschedulable())),
            ],
            |w, a| {
                assert_eq!(a[2].action, Action::Updated);
                let n1 = w.state().node_id("n1").unwrap();
                let node = w.state().node(n1);
                assert!(node.unschedulable);
                assert_eq!(node.taints.len(), 1);
                let zone = w.state().interner().lookup(ZONE).unwrap();
                let z2 = w.state().interner().lookup("z2").unwrap();
                assert_eq!(node.labels.get(zone), Some(z2));
                assert_eq!(w.state().node_info(n1).pods.len(), 1);
            },
        ),
        (
            "a ReplicaSet arriving after its pods resolves them to its Deployment; deleted, back to itself",
            vec![
                up(p(pod("web-1").owner("ReplicaSet", "web-x", "r"))),
                up(p(pod("web-2").owner("ReplicaSet", "web-x", "r"))),
                up(Object::ReplicaSet(rs_owned("web-x", "web"))),
            ],
            |w, _| {
                for name in ["web-1", "web-2"] {
                    let id = w.pod_id("default", name).unwrap();
                    assert_eq!(w.workload(id).to_string(), "Deployment/default/web");
                }
            },
        ),
        (
            "a ReplicaSet deleted: its pods are its own workload again",
            vec![
                up(Object::ReplicaSet(rs_owned("web-x", "web"))),
                up(p(pod("web-1").owner("ReplicaSet", "web-x", "r"))),
                del(ObjectKind::ReplicaSet, "default", "web-x"),
            ],
            |w, _| {
                let id = w.pod_id("default", "web-1").unwrap();
                assert_eq!(w.workload(id).to_string(), "ReplicaSet/default/web-x");
            },
        ),
        (
            "a Job's CronJob follows the Job",
            vec![
                up(p(pod("j-1").ns("ns-a").owner("Job", "j0", "j"))),
                up(Object::Job(universe::a_job(0, 1))),
            ],
            |w, _| {
                let id = w.pod_id("ns-a", "j-1").unwrap();
                assert_eq!(w.workload(id).to_string(), "CronJob/ns-a/cj");
            },
        ),
        (
            "a namespace relabelled under a namespaceSelector term",
            vec![
                up(n(node("n1").label(ZONE, "z1"))),
                up(n(node("n2").label(ZONE, "z2"))),
                up(Object::Namespace(namespace("ns-a").label("team", "t0").build())),
                up(p(pod("a").ns("ns-a").label("app", "a").on("n1"))),
                up(p(pod("probe").label("app", "p").anti_term(json!({
                    "labelSelector": {"matchLabels": {"app": "a"}},
                    "namespaceSelector": {"matchLabels": {"team": "t1"}},
                    "topologyKey": ZONE
                })))),
                up(Object::Namespace(namespace("ns-a").label("team", "t1").build())),
            ],
            |w, _| {
                // The pending probe's kept group now counts pod a: n1's
                // zone is excluded, as a fresh world says.
                let fresh = refreshed(w);
                assert_eq!(crate::compare::dump(w), crate::compare::dump(&fresh));
                assert!(w.state().canonical_dump().contains("team"));
            },
        ),
        (
            "a Service added after its pending pods changes their default spread",
            vec![
                up(n(node("n1").label(ZONE, "z1"))),
                up(p(pod("web-0").label("app", "web").on("n1"))),
                up(p(pod("web-1").label("app", "web"))),
                up(Object::Service(svc("web", "web"))),
            ],
            |w, _| {
                let fresh = refreshed(w);
                assert_eq!(crate::compare::dump(w), crate::compare::dump(&fresh));
                assert!(w.state().canonical_dump().contains("spread"));
            },
        ),
        (
            "a Service deleted: no default spread is kept for its pods",
            vec![
                up(Object::Service(svc("web", "web"))),
                up(p(pod("web-1").label("app", "web"))),
                del(ObjectKind::Service, "default", "web"),
            ],
            |w, _| {
                assert_eq!(crate::compare::dump(w), crate::compare::dump(&refreshed(w)));
                assert!(w.state().service_selectors().is_empty());
            },
        ),
        (
            "a PriorityClass changed: pods keep the priority admission gave them",
            vec![
                up(Object::PriorityClass(universe::a_priority_class(0, 5))),
                up(p(pod("web").priority(5))),
                up(Object::PriorityClass(universe::a_priority_class(0, 900))),
            ],
            |w, a| {
                assert_eq!(a[2].action, Action::Updated);
                let id = w.pod_id("default", "web").unwrap();
                assert_eq!(w.state().pod(id).priority, 5);
                assert_eq!(w.inventory().priority_classes[0].object.value, Some(900));
            },
        ),
        (
            "a PersistentVolume added and deleted",
            vec![
                up(Object::PersistentVolume(pv("v1"))),
                up(Object::PersistentVolume(pv("v2"))),
                del(ObjectKind::PersistentVolume, "", "v1"),
            ],
            |w, _| {
                assert!(w.state().storage().volume_named("v1").is_none());
                assert!(w.state().storage().volume_named("v2").is_some());
                assert_eq!(w.keys(ObjectKind::PersistentVolume).len(), 1);
            },
        ),
        (
            "anti-affinity of a bound pod follows its relabel",
            vec![
                up(n(node("n1"))),
                up(p(pod("db").label("app", "db").on("n1").anti("app", "In", &["web"], HOST))),
                up(p(pod("db").label("app", "db2").on("n1"))),
            ],
            |w, _| {
                assert_eq!(crate::compare::dump(w), crate::compare::dump(&refreshed(w)));
            },
        ),
    ];
    for (name, changes, check) in rows {
        let (world, applied) = apply_all(changes);
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&world, &applied)));
        assert!(result.is_ok(), "row failed: {name}");
    }
}

#[test]
fn a_pod_that_no_longer_compiles_is_dropped_with_an_error_naming_it() {
    let (mut world, _) = apply_all(vec![up(p(pod("web").requests("100m", "1Gi")))]);
    let bad = pod("web").requests("lots", "1Gi").build();
    let err = world.apply(Change::Upsert(Object::Pod(bad))).unwrap_err();
    assert!(matches!(err, ApplyError::Compile { .. }));
    assert!(err.to_string().starts_with("Pod/default/web: "), "{err}");
    assert!(world.pod_id("default", "web").is_none());
    assert!(world.keys(ObjectKind::Pod).is_empty());
}

#[test]
fn an_object_without_a_name_is_refused() {
    let (mut world, _) = apply_all(vec![]);
    let nameless: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(json!({"metadata": {}})).unwrap();
    let err = world
        .apply(Change::Upsert(Object::Pod(nameless)))
        .unwrap_err();
    assert_eq!(err.to_string(), "Pod: metadata.name is empty");
}

/// The world the objects of `w` give when observed afresh.
fn refreshed(w: &World) -> World {
    World::observed(w.inventory().clone(), &SchedulerSetup::default(), 1).expect("rebuilds")
}

fn rs_owned(name: &str, deployment: &str) -> k8s_openapi::api::apps::v1::ReplicaSet {
    podplace_testkit::replicaset(name, 1)
        .merge(json!({"metadata": {"ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": deployment,
            "uid": "d", "controller": true
        }]}}))
        .build()
}

fn svc(name: &str, app: &str) -> k8s_openapi::api::core::v1::Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": app}}
    }))
    .unwrap()
}

fn pv(name: &str) -> k8s_openapi::api::core::v1::PersistentVolume {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/x"}}
    }))
    .unwrap()
}
