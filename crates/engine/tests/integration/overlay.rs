//! What-ifs on an overlay: random changes (binds, unbinds, evictions, new
//! pods, pods finishing or terminating, nodes relabelled or removed) and
//! scheduling on an overlay of a state leave the base exactly as it was
//! (its full debug text, byte for byte, and its answers through a shared
//! cache), and answer as the same changes on an independently built copy.

use podplace_engine::{schedule, ClusterState, NodeId, Outcome, PodId, SchedulerCache};
use podplace_model::objects::Pod;
use proptest::prelude::*;

use crate::support::*;

#[derive(Debug, Clone)]
enum Op {
    Bind(usize, usize),
    Unbind(usize),
    Remove(usize),
    Add(PodB, Option<usize>),
    Terminating(usize),
    Finished(usize),
    RelabelNode(usize, &'static str),
    RemoveNode(usize),
    PlaceProbe,
}

fn arb_pod(i: usize) -> impl Strategy<Value = PodB> {
    (
        prop::sample::select(vec!["a", "b", "c"]),
        0u8..7,
        prop::sample::select(vec![HOST, ZONE]),
        prop::sample::select(vec!["a", "b", "c"]),
    )
        .prop_map(move |(app, rule, key, target)| {
            let p = pod(&format!("p{i}"))
                .label("app", app)
                .requests("100m", "128Mi");
            match rule {
                0 => p.anti("app", "In", &[target], key),
                1 => p.prefer_anti(7, "app", &[target], key),
                2 => p.prefer_affinity(3, "app", &[target], key),
                3 => p.spread(1, key, "ScheduleAnyway", target, None),
                4 => p.spread(1, key, "DoNotSchedule", target, None),
                5 => p.affinity("app", "In", &[target], key),
                _ => p,
            }
        })
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0usize..40, 0usize..8).prop_map(|(p, n)| Op::Bind(p, n)),
        (0usize..40).prop_map(Op::Unbind),
        (0usize..40).prop_map(Op::Remove),
        (
            (100usize..200).prop_flat_map(arb_pod),
            prop::option::of(0usize..8)
        )
            .prop_map(|(p, n)| Op::Add(p, n)),
        (0usize..40).prop_map(Op::Terminating),
        (0usize..40).prop_map(Op::Finished),
        (0usize..8, prop::sample::select(vec!["z1", "z2", "z3"]))
            .prop_map(|(n, z)| Op::RelabelNode(n, z)),
        (0usize..8).prop_map(Op::RemoveNode),
        Just(Op::PlaceProbe),
    ]
}

fn build(node_count: usize, pods: &[(PodB, Option<usize>)]) -> (ClusterState, Vec<PodId>) {
    let mut s = ClusterState::new();
    for ns in ["default", "other"] {
        s.add_namespace(&podplace_testkit::namespace(ns).build());
    }
    for i in 0..node_count {
        let n = node(&format!("n{i}")).label(ZONE, ["z1", "z2", "z3"][i % 3]);
        s.add_node(&n.build()).unwrap();
    }
    let mut ids = Vec::new();
    for (i, (p, on)) in pods.iter().enumerate() {
        let mut v = p.value();
        v["metadata"]["name"] = serde_json::json!(format!("p{i}"));
        let mut p = PodB::from_json(v);
        if let Some(n) = on {
            p = p.on(&format!("n{}", n % node_count));
        }
        ids.push(s.add_api_pod(&p.build()).unwrap());
    }
    (s, ids)
}

fn apply(
    s: &mut ClusterState,
    ids: &mut Vec<PodId>,
    op: &Op,
    probe: &Pod,
    cache: &mut SchedulerCache,
) {
    let pick = |ids: &[PodId], i: usize| ids.get(i % ids.len().max(1)).copied();
    let node = |s: &ClusterState, n: usize| NodeId((n % s.nodes().len().max(1)) as u32);
    match op {
        Op::Bind(p, n) => {
            if let (Some(id), false) = (pick(ids, *p), s.nodes().is_empty()) {
                let n = node(s, *n);
                s.bind(id, n);
            }
        }
        Op::Unbind(p) => {
            if let Some(id) = pick(ids, *p) {
                s.unbind(id);
            }
        }
        Op::Remove(p) => {
            if let Some(id) = pick(ids, *p) {
                s.remove_pod(id);
            }
        }
        Op::Add(p, on) => {
            let mut v = p.value();
            v["metadata"]["name"] = serde_json::json!(format!("added{}", ids.len()));
            let mut p = PodB::from_json(v);
            if let (Some(n), false) = (on, s.nodes().is_empty()) {
                p = p.on(s.node(node(s, *n)).name.as_ref());
            }
            ids.push(s.add_api_pod(&p.build()).unwrap());
        }
        Op::Terminating(p) => {
            if let Some(id) = pick(ids, *p) {
                s.set_terminating(id, true);
            }
        }
        Op::Finished(p) => {
            if let Some(id) = pick(ids, *p) {
                s.set_finished(id, true);
            }
        }
        Op::RelabelNode(n, zone) => {
            if !s.nodes().is_empty() {
                let id = node(s, *n);
                let mut changed = s.node(id).clone();
                let key = s.interner().lookup(ZONE).unwrap();
                let value = s.intern(zone);
                changed.labels.insert(key, value);
                s.replace_node(id, changed);
            }
        }
        Op::RemoveNode(n) => {
            if s.nodes().len() > 1 {
                s.remove_node(node(s, *n));
            }
        }
        Op::PlaceProbe => {
            let mut probe = probe.clone();
            probe.name = format!("probe{}", ids.len()).into();
            let id = s.add_pod(probe.clone());
            ids.push(id);
            if let Some(n) = schedule(s, cache, &probe, 0).chosen {
                s.bind(id, n);
            }
        }
    }
}

/// What a cycle answered: every node's status, the scores, the choice, the message.
type Answer = (Vec<String>, Vec<(u32, i64)>, Option<NodeId>, String);

fn answer(o: &Outcome) -> Answer {
    (
        o.statuses.iter().map(|s| format!("{s:?}")).collect(),
        o.scores.iter().map(|s| (s.node.0, s.total)).collect(),
        o.chosen,
        o.message.clone(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn what_if_on_overlay_leaves_base_unchanged(
        node_count in 2usize..6,
        pods in prop::collection::vec(
            ((0usize..100).prop_flat_map(arb_pod), prop::option::of(0usize..8)),
            0..20,
        ),
        ops in prop::collection::vec(arb_op(), 1..12),
        probe in arb_pod(9999),
    ) {
        let (mut base, ids) = build(node_count, &pods);
        let (mut deep, _) = build(node_count, &pods);
        let probe_api = probe.build();
        let probe_base = base.compile_pod(&probe_api).unwrap();
        let probe_deep = deep.compile_pod(&probe_api).unwrap();
        let base = base;
        let mut shared = SchedulerCache::new();
        let mut own = SchedulerCache::new();
        let base_answer = answer(&schedule(&base, &mut shared, &probe_base, 0));
        let before = format!("{base:?}");
        let dump = base.canonical_dump();

        let mut overlay = base.overlay();
        let (mut overlay_ids, mut deep_ids) = (ids.clone(), ids.clone());
        for op in &ops {
            apply(&mut overlay, &mut overlay_ids, op, &probe_base, &mut shared);
            apply(&mut deep, &mut deep_ids, op, &probe_deep, &mut own);
            let a = answer(&schedule(&overlay, &mut shared, &probe_base, 0));
            let b = answer(&schedule(&deep, &mut own, &probe_deep, 0));
            prop_assert_eq!(a, b);
            // The base answers as before, through the cache the overlay used.
            prop_assert_eq!(answer(&schedule(&base, &mut shared, &probe_base, 0)), base_answer.clone());
        }
        prop_assert_eq!(overlay.canonical_dump(), deep.canonical_dump());
        drop(overlay);
        prop_assert_eq!(format!("{base:?}"), before);
        prop_assert_eq!(base.canonical_dump(), dump);
    }
}
