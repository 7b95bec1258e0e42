use k8s_openapi::api::apps::v1::ReplicaSet;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_model::workloads::WorkloadKind;
use podplace_testkit::{node, pod, replicaset, PodB};

use super::*;

fn sourced<T>(object: T) -> Sourced<T> {
    Sourced {
        object,
        origin: Origin {
            file: String::new(),
            line: 0,
            column: 0,
        },
    }
}

/// Two nodes; `web-*` pods of ReplicaSet web-abc (owned by Deployment web)
/// in `shop`, `db-0` in `default` and in `data`, plus `pods`.
fn world_with(pods: Vec<PodB>) -> World {
    let mut inv = Inventory::default();
    for n in ["n1", "n2"] {
        inv.nodes.push(sourced(node(n).build()));
    }
    let rs: ReplicaSet = replicaset("web-abc", 2)
        .ns("shop")
        .merge(serde_json::json!({"metadata": {"ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": "d1", "controller": true
        }]}}))
        .build();
    inv.replica_sets.push(sourced(rs));
    let web = |n: &str| pod(n).ns("shop").owner("ReplicaSet", "web-abc", "r1");
    let defaults = [
        web("web-abc-1").on("n1"),
        web("web-abc-2"),
        pod("db-0").owner("StatefulSet", "db", "s1"),
        pod("db-0").ns("data"),
    ];
    for p in defaults.into_iter().chain(pods) {
        inv.pods.push(sourced(p.build()));
    }
    World::build(inv, &SchedulerSetup::default(), 0).expect("world builds")
}

fn world() -> World {
    world_with(Vec::new())
}

#[test]
fn the_pod_table_resolves_objects_workloads_and_owners() {
    let w = world();
    let rows: Vec<(String, Option<usize>, String, Option<String>)> = w
        .pods()
        .iter()
        .map(|(id, row)| {
            (
                w.pod_name(id),
                row.api,
                row.workload.to_string(),
                row.owner.as_ref().map(|o| format!("{}/{}", o.kind, o.name)),
            )
        })
        .collect();
    let owner = |s: &str| Some(s.to_string());
    assert_eq!(
        rows,
        [
            (
                "shop/web-abc-1".into(),
                Some(0),
                "Deployment/shop/web".into(),
                owner("ReplicaSet/web-abc")
            ),
            (
                "shop/web-abc-2".into(),
                Some(1),
                "Deployment/shop/web".into(),
                owner("ReplicaSet/web-abc")
            ),
            (
                "default/db-0".into(),
                Some(2),
                "StatefulSet/default/db".into(),
                owner("StatefulSet/db")
            ),
            ("data/db-0".into(), Some(3), "Pod/data/db-0".into(), None),
        ]
    );
    let id = w.pod_id("shop", "web-abc-2").expect("pod");
    let api = w.api_pod(id).expect("api object");
    assert_eq!(api.metadata.name.as_deref(), Some("web-abc-2"));
    assert_eq!(
        w.pod(id).and_then(|r| r.owner.clone()),
        Some(Owner {
            kind: WorkloadKind::ReplicaSet,
            name: "web-abc".into()
        })
    );
}

#[test]
fn waiting_pods_are_placed_and_bound_ones_kept() {
    let w = world_with(vec![pod("other").merge(serde_json::json!({
        "spec": {"schedulerName": "my-scheduler"}
    }))]);
    let id = |ns: &str, n: &str| w.pod_id(ns, n).expect("pod");
    let bound = id("shop", "web-abc-1");
    let placed = id("shop", "web-abc-2");
    let other = id("default", "other");
    assert!(w.placement(bound).is_none() && !w.placed_by_podplace(bound));
    assert!(w.placed_by_podplace(placed));
    assert_eq!(
        w.placement(placed).and_then(|p| p.node),
        w.state().pod_node(placed)
    );
    assert!(w.other_scheduler(other) && !w.other_scheduler(placed));
    assert_eq!(w.state().pod_node(other), None);
    let waiting: Vec<String> = w.placements().iter().map(|p| w.pod_name(p.pod)).collect();
    assert_eq!(
        waiting,
        [
            "shop/web-abc-2",
            "default/db-0",
            "data/db-0",
            "default/other"
        ]
    );
}

#[test]
fn pods_are_found_by_name_as_why_takes_them() {
    let w = world_with(vec![pod("api-1").ns("shop"), pod("api-1").ns("web")]);
    let name = |r: Result<PodId, FindError>| r.map(|id| w.pod_name(id));
    let cases: [(&str, Option<&str>, Result<&str, FindError>); 7] = [
        ("shop/web-abc-1", None, Ok("shop/web-abc-1")),
        ("web-abc-1", Some("shop"), Ok("shop/web-abc-1")),
        ("db-0", None, Ok("default/db-0")),
        ("web-abc-2", None, Ok("shop/web-abc-2")),
        (
            "api-1",
            None,
            Err(FindError::Ambiguous {
                name: "api-1".into(),
                candidates: vec!["shop/api-1".into(), "web/api-1".into()],
            }),
        ),
        (
            "web-abc-",
            None,
            Err(FindError::NotFound {
                pod: "default/web-abc-".into(),
                suggestions: vec!["shop/web-abc-1".into(), "shop/web-abc-2".into()],
            }),
        ),
        (
            "data/nope",
            None,
            Err(FindError::NotFound {
                pod: "data/nope".into(),
                suggestions: vec![],
            }),
        ),
    ];
    for (arg, ns, want) in cases {
        assert_eq!(name(w.find_pod(arg, ns)), want.map(String::from), "{arg}");
    }
    assert_eq!(
        w.find_pod("api-1", None).unwrap_err().to_string(),
        "pod name api-1 exists in several namespaces: shop/api-1, web/api-1; give ns/name or -n"
    );
    assert_eq!(
        w.find_pod("web-abc-", None).unwrap_err().to_string(),
        "pod default/web-abc- not found (did you mean shop/web-abc-1, shop/web-abc-2?)"
    );
}

#[test]
fn a_what_if_leaves_the_world_unchanged() {
    let w = world();
    let web = w.pod_id("shop", "web-abc-1").expect("pod");
    let before: Vec<(PodId, Option<NodeId>)> =
        w.state().live_pods().map(|(id, e)| (id, e.node)).collect();
    let mut what_if = w.overlay();
    what_if.state_mut().unbind(web);
    let pod = what_if.state().pod(web).clone();
    let outcome = what_if.schedule(&pod);
    assert!(outcome.chosen.is_some());
    assert_eq!(what_if.state().pod_node(web), None);
    assert_eq!(what_if.workload(web).to_string(), "Deployment/shop/web");
    assert!(what_if.api_pod(web).is_some());
    // A pod the what-if adds in a removed pod's slot has no row of the base.
    what_if.state_mut().remove_pod(web);
    let mut newcomer = pod.clone();
    newcomer.name = "newcomer".into();
    newcomer.owner = None;
    let id = what_if.state_mut().add_pod(newcomer);
    assert!(what_if.pod(id).is_none());
    assert_eq!(what_if.workload(id).to_string(), "Pod/shop/newcomer");
    assert_eq!(what_if.pod_name(id), "shop/newcomer");
    let after: Vec<(PodId, Option<NodeId>)> =
        w.state().live_pods().map(|(id, e)| (id, e.node)).collect();
    assert_eq!(before, after);
    assert_eq!(w.pod_name(web), "shop/web-abc-1");
    let kept = what_if.into_state();
    assert_eq!(kept.pod_id("shop", "newcomer"), Some(id));
    assert_eq!(w.pod_id("shop", "newcomer"), None);
}

#[test]
fn consumers_add_columns_keyed_by_pod_id() {
    let w = world();
    let nodes = w.column(|id| {
        w.state()
            .pod_node(id)
            .map(|n| w.state().node(n).name.to_string())
    });
    let web = w.pod_id("shop", "web-abc-1").expect("pod");
    assert_eq!(nodes[web].as_deref(), Some("n1"));
    assert_eq!(nodes.len(), w.pod_slots());
}

#[test]
fn pods_added_and_removed_keep_the_table_and_the_state_together() {
    let mut w = world();
    let old = w.find_pod("web-abc-2", Some("shop")).unwrap();
    assert!(w.placement(old).is_some());
    w.remove_pod(old);
    assert_eq!(w.pod(old), None);
    assert!(w.placement(old).is_none());
    assert!(matches!(
        w.find_pod("web-abc-2", Some("shop")),
        Err(FindError::NotFound { .. })
    ));

    // The next pod takes the freed slot; its row is the one given.
    let api = pod("web-abc-3").ns("shop").build();
    let compiled = w.state_mut().compile_pod(&api).unwrap();
    let row = PodRow {
        api: None,
        workload: WorkloadRef::new(WorkloadKind::Deployment, "shop", "web"),
        owner: None,
    };
    let new = w.add_pod(compiled, Some(row.clone()));
    assert_eq!(new, old);
    assert_eq!(w.pod(new), Some(&row));
    assert_eq!(w.find_pod("web-abc-3", None), Ok(new));
    assert!(w.placement(new).is_none());

    // Without a row, the pod's controlling owner (or itself) is its workload.
    let api = pod("db-1").owner("StatefulSet", "db", "s1").build();
    let compiled = w.state_mut().compile_pod(&api).unwrap();
    let db1 = w.add_pod(compiled, None);
    assert_eq!(w.workload(db1).to_string(), "StatefulSet/default/db");
    assert_eq!(
        w.pods().iter().count(),
        w.state().live_pods().count(),
        "one row per live pod"
    );
}

/// A watch's storage events reach the world's state one object at a time:
/// a local volume added on n2 makes a waiting claim's pod schedulable
/// there, and deleting it makes the pod Pending again.
#[test]
fn storage_changes_reach_the_state() {
    let mut w = world();
    let class: k8s_openapi::api::storage::v1::StorageClass =
        serde_json::from_value(serde_json::json!({
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"}))
        .unwrap();
    let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim =
        serde_json::from_value(serde_json::json!({
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}))
        .unwrap();
    let volume: k8s_openapi::api::core::v1::PersistentVolume =
        serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pv-n2"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "10Gi"}, "local": {"path": "/mnt/a"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}}}))
        .unwrap();
    for change in [
        StorageChange::Upsert(StorageObject::StorageClass(&class)),
        StorageChange::Upsert(StorageObject::PersistentVolumeClaim(&claim)),
    ] {
        assert!(w.apply_storage_change(change).unwrap());
    }
    let p = podplace_testkit::pod("db-1")
        .merge(serde_json::json!({"spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}))
        .build();
    let pod = w.state_mut().compile_pod(&p).unwrap();
    let chosen = |w: &mut World| {
        let mut what_if = w.overlay();
        let outcome = what_if.schedule(&pod);
        outcome
            .chosen
            .map(|n| what_if.state().node(n).name.to_string())
    };
    assert_eq!(chosen(&mut w), None, "no volume yet");
    w.apply_storage_change(StorageChange::Upsert(StorageObject::PersistentVolume(
        &volume,
    )))
    .unwrap();
    assert_eq!(chosen(&mut w).as_deref(), Some("n2"));
    let gone = StorageChange::Delete {
        kind: StorageKind::PersistentVolume,
        namespace: "",
        name: "pv-n2",
    };
    assert!(w.apply_storage_change(gone).unwrap());
    assert!(!w.apply_storage_change(gone).unwrap());
    assert_eq!(chosen(&mut w), None);
}

/// Three nodes, `a` already half full; pods `p-*` requesting 1 CPU each.
fn packing_world(setup: &SchedulerSetup) -> World {
    let mut inv = Inventory::default();
    for n in ["a", "b", "c"] {
        inv.nodes
            .push(sourced(node(n).capacity("8", "16Gi", "110").build()));
    }
    inv.pods
        .push(sourced(pod("busy").requests("4", "8Gi").on("a").build()));
    for i in 0..3 {
        inv.pods
            .push(sourced(pod(&format!("p-{i}")).requests("1", "1Gi").build()));
    }
    World::build(inv, setup, 0).expect("world builds")
}

fn nodes_of(w: &World) -> Vec<String> {
    w.placements()
        .iter()
        .map(|p| {
            p.node
                .map_or("-".into(), |n| w.state().node(n).name.to_string())
        })
        .collect()
}

#[test]
fn each_world_places_with_its_own_scheduler_setup_even_in_parallel() {
    use podplace_engine::profile::{Profile, ScoringStrategy};
    use std::sync::Arc;
    let mut packing = Profile::default();
    packing.fit.strategy = ScoringStrategy::MostAllocated;
    let most = SchedulerSetup::configured(vec![Arc::new(packing)], 0);
    let default = SchedulerSetup::default();
    // Many threads at once: a process-wide profile would leak between them.
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let setup = if i % 2 == 0 {
                most.clone()
            } else {
                default.clone()
            };
            std::thread::spawn(move || (i, nodes_of(&packing_world(&setup))))
        })
        .collect();
    for h in handles {
        let (i, nodes) = h.join().expect("thread");
        if i % 2 == 0 {
            // MostAllocated packs onto the busiest node.
            assert_eq!(nodes, ["a", "a", "a"], "MostAllocated world {i}");
        } else {
            // LeastAllocated (the default) spreads away from it.
            assert!(
                !nodes.contains(&"a".to_string()),
                "default world {i}: {nodes:?}"
            );
        }
    }
}

#[test]
fn a_world_names_the_configured_profile_serving_each_pod() {
    use podplace_engine::profile::Profile;
    use std::sync::Arc;
    let batch = Profile {
        scheduler_name: "batch".into(),
        ..Profile::default()
    };
    let configured =
        SchedulerSetup::configured(vec![Arc::new(Profile::default()), Arc::new(batch)], 0);
    let w = world_with(vec![pod("other").merge(serde_json::json!({
        "spec": {"schedulerName": "nobody"}
    }))]);
    assert_eq!(w.configured_profile(""), None, "no configuration: no name");
    let other = w.find_pod("other", None).expect("other");
    assert!(w.other_scheduler(other));
    let mut inv = w.inventory().clone();
    inv.pods.push(sourced(
        pod("b")
            .merge(serde_json::json!({"spec": {"schedulerName": "batch"}}))
            .build(),
    ));
    let w = World::build(inv, &configured, 0).expect("world");
    assert_eq!(w.configured_profile(""), Some("default-scheduler"));
    assert_eq!(w.configured_profile("batch"), Some("batch"));
    assert_eq!(w.configured_profile("nobody"), None);
    let b = w.find_pod("b", None).expect("b");
    assert!(w.placed_by_podplace(b), "the batch profile serves b");
    assert!(w.other_scheduler(w.find_pod("other", None).expect("other")));
}
