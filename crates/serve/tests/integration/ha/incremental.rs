//! The HA watch's incremental report equals a full recompute: after random
//! sequences of model changes (pods deleted, relabelled into other
//! workloads' selectors, moved or bound, nodes tainted or relabelled,
//! workloads scaled), on generated clusters with the generator's mix of
//! (anti-)affinity and spread, the report `HaWatch` keeps (recomputing
//! only the workloads a change touches) is the one `findings` computes
//! from scratch.

use k8s_openapi::api::core::v1 as core;
use podplace_bench::generate::{self, generate, Shape};
use podplace_model::inventory::{Inventory, Object, Origin};
use podplace_serve::ha::{findings, HaWatch};
use podplace_world::{Change, SchedulerSetup, World};
use proptest::prelude::*;

fn cluster(seed: u64) -> World {
    let shape = Shape {
        nodes: 12,
        pods: 120,
        workloads: 14,
        new_pods: 12,
        new_workloads: 2,
        seed,
    };
    let mut inventory = Inventory::default();
    for o in generate(&shape).objects {
        let o = match o {
            generate::Object::Namespace(x) => Object::Namespace(*x),
            generate::Object::Node(x) => Object::Node(*x),
            generate::Object::ReplicaSet(x) => Object::ReplicaSet(*x),
            generate::Object::Pod(x) => Object::Pod(*x),
            _ => continue,
        };
        inventory.push(o, Origin::default());
    }
    World::observed(inventory, &SchedulerSetup::default(), 0).expect("world builds")
}

#[derive(Debug, Clone)]
enum Step {
    DeletePod(u16),
    /// Pod `a` takes the labels of pod `b` (joins its selectors).
    Relabel(u16, u16),
    /// Pod moved (or a pending pod bound) to node `n`.
    Bind(u16, u16),
    Taint(u16),
    /// Node `n` moved to the zone of node `m`.
    Rezone(u16, u16),
    /// ReplicaSet `r` scaled to `k` replicas.
    Scale(u16, u8),
    /// Pod `a` gains a label no selector reads (a relabel that moves no
    /// selector's answer).
    Tag(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => any::<u16>().prop_map(Step::DeletePod),
        3 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Step::Relabel(a, b)),
        3 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Step::Bind(a, b)),
        1 => any::<u16>().prop_map(Step::Taint),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Step::Rezone(a, b)),
        1 => (any::<u16>(), 0u8..6).prop_map(|(r, k)| Step::Scale(r, k)),
        2 => any::<u16>().prop_map(Step::Tag),
    ]
}

fn change(world: &World, step: &Step) -> Option<Change> {
    let inv = world.inventory();
    let pod = |i: u16| -> Option<core::Pod> {
        let n = inv.pods.len();
        (n > 0).then(|| inv.pods[usize::from(i) % n].object.clone())
    };
    let node = |i: u16| -> Option<core::Node> {
        let n = inv.nodes.len();
        (n > 0).then(|| inv.nodes[usize::from(i) % n].object.clone())
    };
    Some(match step {
        Step::DeletePod(i) => Change::Delete(Object::Pod(pod(*i)?).key()),
        Step::Relabel(a, b) => {
            let mut p = pod(*a)?;
            p.metadata.labels = pod(*b)?.metadata.labels;
            Change::Upsert(Object::Pod(p))
        }
        Step::Tag(a) => {
            let mut p = pod(*a)?;
            p.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("podplace.test/rev".to_string(), format!("r{a}"));
            Change::Upsert(Object::Pod(p))
        }
        Step::Bind(a, n) => {
            let mut p = pod(*a)?;
            p.spec.get_or_insert_with(Default::default).node_name = node(*n)?.metadata.name;
            Change::Upsert(Object::Pod(p))
        }
        Step::Taint(n) => {
            let mut x = node(*n)?;
            x.spec
                .get_or_insert_with(Default::default)
                .taints
                .get_or_insert_with(Vec::new)
                .push(core::Taint {
                    key: "test/drain".to_string(),
                    effect: "NoSchedule".to_string(),
                    ..Default::default()
                });
            Change::Upsert(Object::Node(x))
        }
        Step::Rezone(n, m) => {
            let mut x = node(*n)?;
            let zone = node(*m)?
                .metadata
                .labels
                .and_then(|l| l.get("topology.kubernetes.io/zone").cloned())?;
            x.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("topology.kubernetes.io/zone".to_string(), zone);
            Change::Upsert(Object::Node(x))
        }
        Step::Scale(r, k) => {
            let n = inv.replica_sets.len();
            let mut rs = inv
                .replica_sets
                .get(usize::from(*r) % n.max(1))?
                .object
                .clone();
            rs.spec.get_or_insert_with(Default::default).replicas = Some(i32::from(*k));
            Change::Upsert(Object::ReplicaSet(rs))
        }
    })
}

/// Runs `steps`, comparing the kept report with a full one after each;
/// how many ticks recomputed only part of the workloads.
fn run(seed: u64, steps: &[Step]) -> Result<usize, String> {
    run_counting(seed, steps).map(|r| r.iter().filter(|n| n.is_some()).count())
}

/// [`run`], with how many workloads each tick recomputed (`None`: all).
fn run_counting(seed: u64, steps: &[Step]) -> Result<Vec<Option<usize>>, String> {
    let mut world = cluster(seed);
    let mut watch = HaWatch::new();
    let mut recomputed = Vec::new();
    for (generation, s) in steps.iter().enumerate() {
        if let Some(c) = change(&world, s) {
            let _ = world.apply(c);
        }
        let kept = watch.compute(&world, generation as u64 + 1);
        let full = findings(&world);
        if kept.findings != full.findings || kept.domains != full.domains {
            return Err(format!(
                "after {:?}: kept\n{:#?}\nfull\n{:#?}",
                &steps[..=generation],
                kept.findings,
                full.findings
            ));
        }
        recomputed.push(watch.last_recomputed());
    }
    Ok(recomputed)
}

#[test]
fn a_pod_tagged_with_a_label_no_selector_reads_recomputes_its_workload_only() {
    // The first tick computes everything; each tag of a running replica
    // then recomputes its one workload (no term or spread selector's
    // answer moved, nothing moved on a node), and answers as a full
    // recompute.
    let mut steps = vec![Step::Tag(0)];
    steps.extend((1..12u16).map(|i| Step::Tag(i * 7)));
    let recomputed = run_counting(7, &steps).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(recomputed[0], None, "{recomputed:?}");
    assert!(
        recomputed[1..].iter().all(|n| matches!(n, Some(0 | 1))),
        "{recomputed:?}"
    );
    assert!(
        recomputed[1..].contains(&Some(1)),
        "some tag lands on a replicated workload: {recomputed:?}"
    );
}

#[test]
fn pod_changes_recompute_part_and_answer_as_a_full_recompute() {
    let steps: Vec<Step> = (0..30u16)
        .map(|i| match i % 3 {
            0 => Step::Relabel(i * 7, i * 13 + 1),
            1 => Step::Bind(i * 11, i * 3),
            _ => Step::DeletePod(i * 5),
        })
        .collect();
    let partial = run(7, &steps).unwrap_or_else(|e| panic!("{e}"));
    // The first tick computes everything; pod changes then recompute part.
    assert!(partial >= 20, "{partial} partial ticks of 30");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn kept_reports_equal_full_recomputes(
        seed in 1u64..6,
        steps in proptest::collection::vec(step(), 1..14),
    ) {
        if let Err(e) = run(seed, &steps) {
            prop_assert!(false, "{}", e);
        }
    }
}
