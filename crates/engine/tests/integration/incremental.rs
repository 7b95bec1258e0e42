//! The engine's incremental indexes must give exactly the answers a
//! from-scratch build gives: schedule random pods one by one into a cluster
//! (indexes updated on every bind), then compare a probe pod's full outcome
//! with the same cluster built afresh. The quick path placement uses
//! (no per-node statuses, cached per-template and per-node results) must
//! choose what the full cycle chooses, after every bind; so must the cycle
//! rebalance proofs use, with the same verdict on the node it watches.

use crate::support::*;
use podplace_engine::{NodeId, Verdict};
use proptest::prelude::*;

fn arb_pod(i: usize) -> impl Strategy<Value = PodB> {
    let app = prop::sample::select(vec!["a", "b", "c"]);
    let key = prop::sample::select(vec![HOST, ZONE]);
    (
        app,
        0u8..6,
        key,
        prop::sample::select(vec!["a", "b", "c"]),
        1i32..100,
        prop::bool::ANY,
    )
        .prop_map(move |(app, rule, key, target, weight, other_ns)| {
            let mut p = pod(&format!("p{i}"))
                .label("app", app)
                .requests("100m", "128Mi");
            if other_ns {
                p = p.ns("other");
            }
            match rule {
                0 => p.anti("app", "In", &[target], key),
                1 => p.prefer_anti(weight, "app", &[target], key),
                2 => p.prefer_affinity(weight, "app", &[target], key),
                3 => p.spread(1, key, "ScheduleAnyway", target, None),
                4 => p.spread(2, key, "DoNotSchedule", target, None),
                _ => p,
            }
        })
}

fn nodes(n: usize) -> Vec<NodeB> {
    (0..n)
        .map(|i| node(&format!("n{i}")).label(ZONE, ["z1", "z2", "z3"][i % 3]))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn incremental_equals_rebuilt(
        node_count in 2usize..7,
        pods in prop::collection::vec((0usize..1000).prop_flat_map(arb_pod), 1..25),
        probe in arb_pod(9999),
    ) {
        let probe_json = serde_json::to_value(probe.build()).unwrap();
        let probe = || PodB::from_json(probe_json.clone());
        let mut incremental = cluster(nodes(node_count), vec![]);
        // Warm the lazy caches with the probe's terms before any bind.
        let _ = run(&mut incremental, probe());
        let mut bound = Vec::new();
        for (i, p) in pods.into_iter().enumerate() {
            let json = serde_json::to_value(p.build()).unwrap();
            let mut json = json;
            json["metadata"]["name"] = serde_json::json!(format!("p{i}"));
            let outcome = run(&mut incremental, PodB::from_json(json.clone()));
            let full = run(&mut incremental, probe());
            let quick = run_choice(&mut incremental, probe());
            let chosen_total = full
                .chosen
                .and_then(|n| full.scores.iter().find(|s| s.node == n).map(|s| s.total));
            prop_assert_eq!(quick.as_ref().ok().map(|c| c.node), full.chosen);
            prop_assert_eq!(quick.as_ref().ok().map(|c| c.score), chosen_total);
            prop_assert_eq!(
                quick.as_ref().map(|c| c.tied.clone()).unwrap_or_default(),
                full.best.clone()
            );
            prop_assert_eq!(quick.err().unwrap_or_default(), full.message);
            // The proof cycle's verdict on one watched node is that node's
            // status and score in the full cycle.
            let watched = NodeId((i % node_count) as u32);
            if let Ok((choice, verdict)) = run_watching(&mut incremental, probe(), watched) {
                prop_assert_eq!(Some(choice.node), full.chosen);
                let expected = match full.scores.iter().find(|s| s.node == watched) {
                    Some(s) => Verdict::Feasible(s.total),
                    None => Verdict::Rejected(full.statuses[watched.index()].clone()),
                };
                prop_assert_eq!(verdict, Some(expected));
            } else {
                prop_assert!(full.chosen.is_none());
            }
            if let Some(node) = outcome.chosen {
                let id = incremental.add_api_pod(&PodB::from_json(json.clone()).build()).unwrap();
                incremental.bind(id, node);
                json["spec"]["nodeName"] = serde_json::json!(&*incremental.node(node).name);
                bound.push(PodB::from_json(json));
            }
        }
        let mut rebuilt = cluster(nodes(node_count), bound);
        let a = run(&mut incremental, probe());
        let b = run(&mut rebuilt, probe());
        prop_assert_eq!(&a.statuses, &b.statuses);
        prop_assert_eq!(&a.scores, &b.scores);
        prop_assert_eq!(&a.message, &b.message);
    }
}
