//! `--threads N` never changes an answer: placing the same random world
//! on one worker and on several (the parallel Filter and Score of
//! [`podplace_engine::cycle`]) gives every pod the same node, score, tied
//! set and message, and with full outcomes every node's status and scores,
//! with every node scored and with kube-scheduler's node sampling.

use crate::support::*;
use podplace_engine::place::{place_all, PlaceOptions};
use podplace_engine::sampling::Sampling;
use podplace_engine::{PodId, SchedulerCache, SchedulerSetup};
use proptest::prelude::*;

fn arb_pod(i: usize) -> impl Strategy<Value = PodB> {
    (
        prop::sample::select(vec!["a", "b", "c"]),
        0u8..7,
        prop::sample::select(vec![HOST, ZONE]),
        prop::sample::select(vec!["a", "b", "c"]),
        1i32..100,
        prop::sample::select(vec!["100m", "900m", "3"]),
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
                _ => p,
            }
        })
}

/// `n` nodes in three zones, some small, some tainted (also the early-stop
/// property test's nodes).
pub(super) fn nodes(n: usize, small_every: usize) -> Vec<NodeB> {
    (0..n)
        .map(|i| {
            let mut b = node(&format!("n{i:03}")).label(ZONE, ["z1", "z2", "z3"][i % 3]);
            if i % small_every == 0 {
                b = b.capacity("1", "2Gi", "4");
            }
            if i % 11 == 0 {
                b = b.taint("dedicated", "infra", "NoSchedule");
            }
            b
        })
        .collect()
}

/// Places `pods` (pending, in order) into a fresh cluster of `nodes` on a
/// pool of `threads` workers; every placement as comparable text.
fn place(
    nodes: &[NodeB],
    pods: &[PodB],
    threads: usize,
    sampling: bool,
    keep_outcomes: bool,
) -> Vec<String> {
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
        sampling: Sampling {
            enabled: sampling,
            ..Sampling::default()
        },
        ..SchedulerSetup::default()
    });
    // Every step of every cycle on the pool's workers, however few nodes
    // (by default only steps of 1,024 nodes and more are).
    cache.set_min_parallel_nodes(1);
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
            let full = p.outcome.as_ref().map(|o| {
                format!(
                    "{:?} {:?} {:?} {:?}",
                    o.statuses, o.feasible, o.scores, o.best
                )
            });
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                p.pod, p.node, p.score, p.tied, p.message, p.sampled, full
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn every_thread_count_places_alike(
        node_count in 130usize..260,
        small_every in 2usize..5,
        pods in prop::collection::vec((0usize..1000).prop_flat_map(arb_pod), 20..40),
        sampling in prop::bool::ANY,
        keep_outcomes in prop::bool::ANY,
    ) {
        let nodes = nodes(node_count, small_every);
        let one = place(&nodes, &pods, 1, sampling, keep_outcomes);
        for threads in [2, 3] {
            let many = place(&nodes, &pods, threads, sampling, keep_outcomes);
            prop_assert_eq!(&one, &many, "{} threads", threads);
        }
    }
}
