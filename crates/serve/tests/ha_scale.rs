//! What the HA watch costs on the benchmark cluster (5,000 nodes, 150,000
//! running pods in 3,000 workloads with the benchmark's mix of pod
//! (anti-)affinity and topology spread, 10,000 Pending pods), built as
//! serve builds its model (`World::observed`: Pending pods unbound).
//! Ignored by default (minutes in a debug build):
//! `cargo test -p podplace-serve --test ha_scale -- --ignored --nocapture`.

use std::time::Instant;

use podplace_bench::generate::{generate, Shape};
use podplace_model::load::{load, Source};
use podplace_serve::ha::{HaKind, HaWatch};
use podplace_serve::metrics::{pending, ServeMetrics};
use podplace_world::{SchedulerSetup, World};

#[test]
#[ignore = "scale measurement: run with --ignored"]
fn ha_findings_on_the_benchmark_cluster() {
    let shape = Shape::default();
    let snapshot = generate(&shape);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": snapshot.objects});
    let data = serde_json::to_vec(&list).expect("serializes");
    let inventory = load(&[Source::Bytes {
        name: "bench.json".to_string(),
        data,
    }])
    .expect("loads");
    let t = Instant::now();
    let world = World::observed(inventory, &SchedulerSetup::default(), 0).expect("builds");
    eprintln!(
        "model: {} nodes, {} pod slots, built in {:.2?}",
        world.state().nodes().len(),
        world.pod_slots(),
        t.elapsed()
    );
    let mut watch = HaWatch::new();
    let t = Instant::now();
    let report = watch.compute(&world, 1);
    let first = t.elapsed();
    let t = Instant::now();
    let again = watch.compute(&world, 2);
    let second = t.elapsed();
    assert_eq!(report.findings, again.findings);
    let t = Instant::now();
    let cached = watch.current(2).expect("kept");
    let hit = t.elapsed();
    assert!(std::sync::Arc::ptr_eq(&cached, &again));
    let count = |k| report.of_kind(k).count();
    eprintln!(
        "findings: {} (HALost {}, SpreadSkewed {}, AntiAffinityCollapsed {}, RuleViolated {}, RolloutStuck {}), {} domain rows",
        report.findings.len(),
        count(HaKind::HALost),
        count(HaKind::SpreadSkewed),
        count(HaKind::AntiAffinityCollapsed),
        count(HaKind::RuleViolated),
        count(HaKind::RolloutStuck),
        report.domains.len()
    );
    eprintln!("costs of the first report: {:?}", report.costs);
    eprintln!("HA report: first {first:.2?}, recomputed {second:.2?}, same generation {hit:.2?}");
    let t = Instant::now();
    let samples = pending::samples(&world, 20);
    let sampled = t.elapsed();
    let metrics = ServeMetrics::default();
    metrics.set_leader(true);
    let t = Instant::now();
    metrics.set_ha(&report);
    metrics.set_pending(&samples);
    let exported = t.elapsed();
    eprintln!(
        "pending samples: {} pods, 20 workloads scheduled in {sampled:.2?}; gauges set in {exported:.2?}",
        samples.len()
    );
}
