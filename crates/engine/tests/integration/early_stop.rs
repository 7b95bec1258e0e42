//! Placing stops filtering once kube-scheduler's sampling search has found
//! what it needs (findNodesThatPassFilters), while `why`'s full cycle
//! filters every node and then takes the same search's nodes. Both must
//! give every pod the same node, score, tied set, message and sampled set
//! (start index, nodes processed, feasible nodes found, certainty), from
//! any start index, with parallelism 1 and 16, on one worker and on
//! several; and the proof cycle's verdict on a watched node must be the
//! full cycle's.

use crate::support::*;
use crate::threads::nodes;
use podplace_engine::place::{place_all, PlaceOptions};
use podplace_engine::sampling::Sampling;
use podplace_engine::{
    schedule, schedule_watching, NodeId, PodId, SchedulerCache, SchedulerSetup, Verdict,
};
use proptest::prelude::*;

fn arb_pod(i: usize) -> impl Strategy<Value = PodB> {
    (
        prop::sample::select(vec!["a", "b", "c"]),
        0u8..8,
        prop::sample::select(vec![HOST, ZONE]),
        prop::sample::select(vec!["a", "b", "c"]),
        1i32..100,
        prop::sample::select(vec!["100m", "900m", "3", "40"]),
    )
        .prop_map(move |(app, rule, key, target, weight, cpu)| {
            let p = pod(&format!("p{i}"))
                .label("app", app)
                .requests(cpu, "128Mi");
            match rule {
                0 => p.anti("app", "In", &[target], key),
                1 => p.prefer_anti(weight, "app", &[target], key),
                2 => p.prefer_affinity(weight, "app", &[target], key),
                3 => p.spread(1, key, "ScheduleAnyway", target, None),
                4 => p.spread(1, key, "DoNotSchedule", target, None),
                5 => p.affinity("app", "In", &[target], key),
                6 => p.node_selector(ZONE, "z2"),
                _ => p,
            }
        })
}

/// A fresh cluster of `nodes` with `pods` pending (in order), and a cache
/// sampling with `parallelism` from `start`.
fn world(
    nodes: &[NodeB],
    pods: &[PodB],
    parallelism: i32,
    start: usize,
) -> (Cluster, Vec<PodId>, SchedulerCache) {
    let mut c = cluster(nodes.to_vec(), vec![]);
    let pending: Vec<PodId> = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut json = serde_json::to_value(p.clone().build()).unwrap();
            json["metadata"]["name"] = serde_json::json!(format!("p{i}"));
            c.add_api_pod(&PodB::from_json(json).build()).unwrap()
        })
        .collect();
    let mut cache = SchedulerCache::for_setup(&SchedulerSetup {
        sampling: Sampling::on(0, parallelism),
        ..SchedulerSetup::default()
    });
    cache.set_start_index(start);
    // Every step of every cycle on the pool's workers, however few nodes.
    cache.set_min_parallel_nodes(1);
    (c, pending, cache)
}

/// Every placement as comparable text: the full cycle's sampled set also
/// knows every feasible node, which the early stop does not.
fn place(
    nodes: &[NodeB],
    pods: &[PodB],
    parallelism: i32,
    start: usize,
    threads: usize,
    keep_outcomes: bool,
) -> Vec<String> {
    let (mut c, pending, mut cache) = world(nodes, pods, parallelism, start);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let options = PlaceOptions {
        seed: 7,
        keep_outcomes,
    };
    pool.install(|| place_all(&mut c.state, &mut cache, &pending, options))
        .into_iter()
        .map(|p| {
            let sampled = p.sampled.map(|s| {
                if let Some(total) = s.feasible_total {
                    assert_eq!(s.found, total.min(s.to_find + 1), "found");
                }
                (s.to_find, s.start, s.processed, s.found, s.certainty)
            });
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?}",
                p.pod, p.node, p.score, p.tied, p.message, sampled
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn early_stop_places_as_the_full_cycle(
        node_count in 100usize..260,
        small_every in 2usize..5,
        pods in prop::collection::vec((0usize..1000).prop_flat_map(arb_pod), 10..40),
        parallelism in prop::sample::select(vec![1, 16]),
        start in 0usize..260,
    ) {
        let nodes = nodes(node_count, small_every);
        let full = place(&nodes, &pods, parallelism, start, 1, true);
        prop_assert!(full.iter().any(|p| !p.ends_with("None")), "something sampled");
        for threads in [1, 2] {
            let early = place(&nodes, &pods, parallelism, start, threads, false);
            prop_assert_eq!(&full, &early, "{} threads", threads);
        }
    }

    #[test]
    fn watched_verdict_is_the_full_cycles(
        node_count in 100usize..200,
        small_every in 2usize..5,
        pods in prop::collection::vec((0usize..1000).prop_flat_map(arb_pod), 5..15),
        start in 0usize..200,
        watched in 0u32..200,
    ) {
        let nodes = nodes(node_count, small_every);
        let (mut c, pending, mut cache) = world(&nodes, &pods, 1, start);
        let watched = NodeId(watched % node_count as u32);
        for id in pending {
            let pod = c.state.pod(id).clone();
            let mut probe = cache.clone();
            let full = schedule(&c.state, &mut probe, &pod, 0);
            match schedule_watching(&c.state, &mut cache, &pod, 0, watched) {
                Ok((choice, verdict)) => {
                    prop_assert_eq!(Some(choice.node), full.chosen);
                    let expected = match full.scores.iter().find(|s| s.node == watched) {
                        Some(s) => Some(Verdict::Feasible(s.total)),
                        None if full.statuses[watched.index()].is_success() => None,
                        None => Some(Verdict::Rejected(full.statuses[watched.index()].clone())),
                    };
                    prop_assert_eq!(verdict, expected);
                    prop_assert_eq!(cache.start_index(), probe.start_index());
                    c.state.bind(id, choice.node);
                }
                Err(outcome) => {
                    prop_assert!(full.chosen.is_none());
                    prop_assert_eq!(&outcome.message, &full.message);
                }
            }
        }
    }
}
