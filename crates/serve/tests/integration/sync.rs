//! The sync task against generated watch streams: whatever the order of
//! applies, deletes and re-lists (a re-list lacking objects deleted while
//! no watch was open, or holding ones created meanwhile), the model ends
//! holding exactly the objects a fresh list would — none lost, none
//! doubled — its per-kind gauge says so, and it is ready only once every
//! kind was listed.

use std::collections::BTreeMap;
use std::sync::Arc;

use podplace_engine::SchedulerSetup;
use podplace_kube::{Unreadable, WatchEvent};
use podplace_model::inventory::{Object, ObjectKey, ObjectKind};
use podplace_serve::shared::Model;
use podplace_serve::sync::{Sync, SyncError, SyncMetrics, SyncOptions};
use podplace_world::World;
use prometheus_client::registry::Registry;
use proptest::prelude::*;
use serde_json::json;

fn node(i: u8, zone: u8) -> Object {
    Object::Node(
        serde_json::from_value(json!({
            "metadata": {"name": format!("n{i}"), "labels": {
                "kubernetes.io/hostname": format!("n{i}"),
                "topology.kubernetes.io/zone": format!("z{zone}")}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap(),
    )
}

fn pod(i: u8, app: u8, on: Option<u8>) -> Object {
    let mut spec = json!({"containers": [{"name": "c", "image": "x",
        "resources": {"requests": {"cpu": "100m"}}}]});
    if let Some(n) = on {
        spec["nodeName"] = json!(format!("n{n}"));
    }
    Object::Pod(
        serde_json::from_value(json!({
            "metadata": {"name": format!("p{i}"), "namespace": "default",
                "uid": format!("uid-{i}"), "labels": {"app": format!("a{app}")}},
            "spec": spec
        }))
        .unwrap(),
    )
}

/// One generated object: a node or a pod, by small index (so events on
/// the same object recur).
fn object() -> impl Strategy<Value = Object> {
    prop_oneof![
        (0u8..4, 0u8..2).prop_map(|(i, z)| node(i, z)),
        (0u8..6, 0u8..2, proptest::option::of(0u8..5)).prop_map(|(i, a, n)| pod(i, a, n)),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Apply(Object),
    Delete(Object),
    Relist(ObjectKind, Vec<Object>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => object().prop_map(Op::Apply),
        2 => object().prop_map(Op::Delete),
        1 => (prop_oneof![Just(ObjectKind::Node), Just(ObjectKind::Pod)],
              proptest::collection::vec(object(), 0..6))
            .prop_map(|(k, v)| Op::Relist(k, v.into_iter().filter(|o| o.kind() == k).collect())),
    ]
}

/// The first lists: every kind, nodes and pods from `initial`.
fn first_lists(initial: &[Object]) -> Vec<WatchEvent> {
    ObjectKind::ALL
        .iter()
        .map(|&kind| {
            let mut objects: BTreeMap<ObjectKey, Object> = BTreeMap::new();
            for o in initial.iter().filter(|o| o.kind() == kind) {
                objects.insert(o.key(), o.clone());
            }
            WatchEvent::Listed {
                kind,
                objects: objects.into_values().collect(),
                warnings: Vec::new(),
            }
        })
        .collect()
}

fn model() -> (Arc<Model>, SyncMetrics) {
    let mut registry = Registry::default();
    let metrics = SyncMetrics::register(&mut registry);
    let model = Arc::new(Model::new(World::empty(&SchedulerSetup::default(), 1)));
    (model, metrics)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_model_holds_what_a_fresh_list_would(
        initial in proptest::collection::vec(object(), 0..8),
        ops in proptest::collection::vec(op(), 0..40),
        batch in 1usize..8,
        gathered in 0usize..40,
    ) {
        let mut truth: BTreeMap<ObjectKey, Object> = BTreeMap::new();
        for o in &initial {
            truth.insert(o.key(), o.clone());
        }
        let mut events = first_lists(&initial);
        for op in ops {
            match op {
                Op::Apply(o) => {
                    truth.insert(o.key(), o.clone());
                    events.push(WatchEvent::Applied(o));
                }
                Op::Delete(o) => {
                    // The watch only deletes what exists.
                    if truth.remove(&o.key()).is_some() {
                        events.push(WatchEvent::Deleted(o));
                    }
                }
                Op::Relist(kind, objects) => {
                    truth.retain(|k, _| k.kind != kind);
                    let mut listed: BTreeMap<ObjectKey, Object> = BTreeMap::new();
                    for o in objects {
                        listed.insert(o.key(), o);
                    }
                    for (k, o) in &listed {
                        truth.insert(k.clone(), o.clone());
                    }
                    events.push(WatchEvent::Listed {
                        kind,
                        objects: listed.into_values().collect(),
                        warnings: Vec::new(),
                    });
                }
            }
        }
        // The last kind's list (neither nodes nor pods) arrives after the
        // first `gathered` changes: those are folded into the first sync's
        // gathered lists, the rest applied to the built model.
        let claims = ObjectKind::ALL.iter().position(|k| *k == ObjectKind::ResourceClaim);
        let held = events.remove(claims.expect("a kind of its own"));
        let lists = ObjectKind::ALL.len() - 1;
        events.insert((lists + gathered).min(events.len()), held);
        let (model, metrics) = model();
        let sync = Sync::new(
            model.clone(),
            SyncOptions { max_batch: batch, ..SyncOptions::default() },
            metrics.clone(),
        );
        let ended = runtime().block_on(sync.run(futures::stream::iter(events)));
        prop_assert!(matches!(ended, Err(SyncError::Ended)), "{ended:?}");
        prop_assert!(model.ready());
        let world = model.read();
        for kind in [ObjectKind::Node, ObjectKind::Pod] {
            let mut got = world.keys(kind);
            got.sort();
            let want: Vec<ObjectKey> = truth.keys().filter(|k| k.kind == kind).cloned().collect();
            prop_assert_eq!(&got, &want, "{:?}", kind);
            prop_assert_eq!(metrics.objects(kind), want.len() as i64);
        }
        // Every pod row holds the pod as last applied (binding included).
        for (key, o) in truth.iter().filter(|(k, _)| k.kind == ObjectKind::Pod) {
            let Object::Pod(want) = o else { unreachable!() };
            let id = world.pod_id(&key.namespace, &key.name);
            prop_assert!(id.is_some(), "{key} has no row");
            let got = world.api_pod(id.unwrap()).unwrap();
            prop_assert_eq!(&got.metadata.labels, &want.metadata.labels);
            prop_assert_eq!(
                got.spec.as_ref().and_then(|s| s.node_name.clone()),
                want.spec.as_ref().and_then(|s| s.node_name.clone())
            );
        }
    }
}

#[test]
fn not_ready_until_every_kind_was_listed() {
    let (model, metrics) = model();
    let mut lists = first_lists(&[node(0, 0), pod(0, 0, Some(0))]);
    // Changes before the last kind's list are kept, nothing is built yet.
    let last = lists.pop().unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let rt = runtime();
    rt.block_on(async {
        for e in lists {
            tx.unbounded_send(e).unwrap();
        }
        tx.unbounded_send(WatchEvent::Applied(node(1, 1))).unwrap();
        let task =
            tokio::spawn(Sync::new(model.clone(), SyncOptions::default(), metrics.clone()).run(rx));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!model.ready(), "ready before the last kind was listed");
        assert_eq!(model.read().keys(ObjectKind::Node).len(), 0);
        tx.unbounded_send(last).unwrap();
        tx.unbounded_send(WatchEvent::Deleted(node(0, 0))).unwrap();
        drop(tx);
        ends_with_its_stream(task).await;
    });
    assert!(model.ready());
    let world = model.read();
    assert_eq!(world.keys(ObjectKind::Node).len(), 1);
    assert_eq!(world.keys(ObjectKind::Node)[0].name, "n1");
    assert_eq!(metrics.objects(ObjectKind::Node), 1);
    assert_eq!(metrics.objects(ObjectKind::Pod), 1);
    assert!(world.pod_id("default", "p0").is_some());
}

/// Waits (10 s at most) for a spawned sync whose event stream was closed,
/// and checks it ended because the stream did.
async fn ends_with_its_stream(task: tokio::task::JoinHandle<Result<(), SyncError>>) {
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), task)
        .await
        .expect("the sync ends within 10 s of its stream")
        .expect("the sync task does not panic");
    assert!(matches!(ended, Err(SyncError::Ended)), "{ended:?}");
}

fn refused(kind: ObjectKind, code: u16) -> WatchEvent {
    WatchEvent::Unreadable {
        kind,
        unreadable: Unreadable {
            resource: kind.resource().to_string(),
            namespace: None,
            reason: format!("{} is forbidden", kind.resource()),
            code,
        },
    }
}

/// A kind refused after the first sync (a transient 403, a 404) keeps its
/// objects as last known, and the refusal is counted; only the kind's next
/// real list replaces them. Table: (refusal code, whether a list follows).
#[test]
fn a_kind_refused_after_the_first_sync_keeps_its_objects() {
    for (code, relisted) in [(403, false), (404, false), (403, true)] {
        let (model, metrics) = model();
        let mut events = first_lists(&[node(0, 0), node(1, 1), pod(0, 0, Some(0))]);
        events.push(refused(ObjectKind::Pod, code));
        events.push(refused(ObjectKind::Node, code));
        // Events keep flowing after the refusals.
        events.push(WatchEvent::Applied(pod(1, 1, Some(1))));
        if relisted {
            events.push(WatchEvent::Listed {
                kind: ObjectKind::Node,
                objects: vec![node(2, 0)],
                warnings: Vec::new(),
            });
        }
        let sync = Sync::new(model.clone(), SyncOptions::default(), metrics.clone());
        let ended = runtime().block_on(sync.run(futures::stream::iter(events)));
        assert!(matches!(ended, Err(SyncError::Ended)), "{ended:?}");
        let world = model.read();
        let mut nodes: Vec<String> = world
            .keys(ObjectKind::Node)
            .into_iter()
            .map(|k| k.name)
            .collect();
        nodes.sort();
        let want_nodes: Vec<&str> = if relisted {
            vec!["n2"]
        } else {
            vec!["n0", "n1"]
        };
        assert_eq!(nodes, want_nodes, "code {code}, relisted {relisted}");
        assert_eq!(metrics.objects(ObjectKind::Node), want_nodes.len() as i64);
        assert!(world.pod_id("default", "p0").is_some(), "code {code}");
        assert!(world.pod_id("default", "p1").is_some(), "code {code}");
        assert_eq!(metrics.objects(ObjectKind::Pod), 2, "code {code}");
        assert_eq!(metrics.unreadable(ObjectKind::Pod), 1);
        assert_eq!(metrics.unreadable(ObjectKind::Node), 1);
        assert!(model.ready());
    }
}

/// A pod whose affinity selector the world cannot compile (an unknown
/// operator): the first build fails on it.
fn bad_pod() -> Object {
    Object::Pod(
        serde_json::from_value(json!({
            "metadata": {"name": "bad", "namespace": "default", "uid": "uid-bad"},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchExpressions": [
                        {"key": "app", "operator": "Bogus", "values": ["a"]}]}}]}}}
        }))
        .unwrap(),
    )
}

/// A failed first build does not end the sync: it stays not ready, counts
/// the failure, keeps folding events in, and builds once the offending
/// object is gone.
#[test]
fn a_failed_first_build_is_retried_not_fatal() {
    let (model, metrics) = model();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let rt = runtime();
    rt.block_on(async {
        for e in first_lists(&[node(0, 0), pod(0, 0, Some(0)), bad_pod()]) {
            tx.unbounded_send(e).unwrap();
        }
        let task =
            tokio::spawn(Sync::new(model.clone(), SyncOptions::default(), metrics.clone()).run(rx));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while metrics.build_failures() == 0 {
            assert!(!task.is_finished(), "the sync ended on a failed build");
            assert!(tokio::time::Instant::now() < deadline, "no build failed");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!model.ready());
        tx.unbounded_send(WatchEvent::Deleted(bad_pod())).unwrap();
        while !model.ready() {
            assert!(!task.is_finished(), "the sync ended before it was ready");
            assert!(tokio::time::Instant::now() < deadline, "never ready");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        drop(tx);
        ends_with_its_stream(task).await;
    });
    let world = model.read();
    assert!(world.pod_id("default", "p0").is_some());
    assert!(world.pod_id("default", "bad").is_none());
    assert!(metrics.build_failures() >= 1);
}
