//! Story 2 ("drift"): after the uncordon all five demo-app replicas are on
//! worker-1 (`shared/fixtures/snapshots/drift-collapsed.yaml`, the real
//! cluster in that state). The plan restores the spread with the fewest
//! evictions, and every replacement lands where the plan says.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, Source};
use podplace_rebalance::{plan, PlanOptions, Policy};

const COLLAPSED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/fixtures/snapshots/drift-collapsed.yaml"
);

fn world() -> Inventory {
    load(&[Source::Path(COLLAPSED.into())]).expect("the recorded snapshot loads")
}

fn opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-22T03:42:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

fn demo_app_per_node(inv: &Inventory) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in &inv.pods {
        let labels = p.object.metadata.labels.as_ref();
        if labels.and_then(|l| l.get("app")).map(String::as_str) == Some("demo-app") {
            let node = p
                .object
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            *m.entry(node).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn drift_is_restored_with_three_evictions() {
    let inv = world();
    assert_eq!(demo_app_per_node(&inv).get("worker-1"), Some(&5));
    let planned = plan(&inv, &Policy::default_profile(), &opts()).unwrap();
    let p = &planned.plan;
    for e in &p.evictions {
        eprintln!("{e:?}");
    }
    for k in &p.kept {
        eprintln!("{k:?}");
    }
    assert_eq!(p.evictions.len(), 3, "{:#?}", p.evictions);
    for e in &p.evictions {
        assert_eq!(e.from, "worker-1");
        assert_ne!(e.to, "worker-1");
        assert!(e.workload.ends_with("demo-app"), "{}", e.workload);
    }
    let after = planned.apply(&inv, opts().now);
    let mut counts: Vec<usize> = demo_app_per_node(&after).into_values().collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 2, 2]);
}

/// Each replacement, created while its predecessor terminates (as the
/// ReplicaSet creates it), is placed by a fresh scheduling of the world
/// loaded from objects — independently of the planner's incremental state —
/// on the node the plan says.
#[test]
fn each_replacement_lands_where_the_plan_says() {
    use podplace_engine::{build_state, place_all, PlaceOptions, SchedulerCache};
    let inv = world();
    let planned = plan(&inv, &Policy::default_profile(), &opts()).unwrap();
    assert_eq!(planned.plan.evictions.len(), 3);
    for (k, e) in planned.plan.evictions.iter().enumerate() {
        let mut before = planned.apply_prefix(&inv, opts().now, k);
        let after = planned.apply_prefix(&inv, opts().now, k + 1);
        let mut replacement = after.pods.last().unwrap().clone();
        assert_eq!(
            replacement.object.metadata.name.as_deref(),
            Some(e.replacement.as_str())
        );
        replacement.object.spec.as_mut().unwrap().node_name = None;
        replacement.object.status = None;
        let (ns, name) = e.pod.split_once('/').unwrap();
        let old = before
            .pods
            .iter_mut()
            .find(|p| {
                p.object.metadata.namespace.as_deref() == Some(ns)
                    && p.object.metadata.name.as_deref() == Some(name)
            })
            .unwrap();
        old.object.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(opts().now),
        );
        before.pods.push(replacement);
        let (mut cluster, pending) = build_state(&before).unwrap();
        assert_eq!(pending.len(), 1);
        let mut cache = SchedulerCache::new();
        let placed = place_all(&mut cluster, &mut cache, &pending, PlaceOptions::default());
        let node = placed[0].node.map(|n| cluster.node(n).name.to_string());
        assert_eq!(node.as_deref(), Some(e.to.as_str()), "eviction {k}: {e:?}");
    }
}
