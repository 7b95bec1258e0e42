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
    "/../../../shared/fixtures/snapshots/drift-collapsed.yaml"
);

fn world() -> Inventory {
    load(&[Source::Path(COLLAPSED.into())]).expect("the recorded snapshot loads")
}

fn opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-22T03:42:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
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
