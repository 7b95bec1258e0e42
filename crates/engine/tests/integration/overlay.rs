//! What-ifs on an overlay: random changes (binds, unbinds, evictions, new
//! pods, pods finishing or terminating, nodes relabelled or removed) and
//! scheduling on an overlay of a state leave the base exactly as it was
//! (its full debug text, byte for byte, and its answers through a shared
//! cache), and answer as the same changes on an independently built copy.

use k8s_openapi::api::core::v1 as core;
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
        (0usize..1000, 0usize..8).prop_map(|(p, n)| Op::Bind(p, n)),
        (0usize..1000).prop_map(Op::Unbind),
        (0usize..1000).prop_map(Op::Remove),
        (
            (100usize..200).prop_flat_map(arb_pod),
            prop::option::of(0usize..8)
        )
            .prop_map(|(p, n)| Op::Add(p, n)),
        (0usize..1000).prop_map(Op::Terminating),
        (0usize..1000).prop_map(Op::Finished),
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

/// A change to a pod or node beyond [`Op`]: what a watch also delivers.
#[derive(Debug, Clone)]
enum Change {
    Op(Op),
    /// The pod's object replaced by another (labels, rules), same name.
    UpdatePod(usize, PodB),
    /// A new node in a zone.
    AddNode(&'static str),
    /// A node cordoned, or uncordoned.
    Cordon(usize),
    /// A node renamed (its pods' `nodeName` follow).
    RenameNode(usize),
}

fn arb_change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => arb_op().prop_map(Change::Op),
        1 => (0usize..1000, (0usize..100).prop_flat_map(arb_pod))
            .prop_map(|(p, b)| Change::UpdatePod(p, b)),
        1 => prop::sample::select(vec!["z1", "z2", "z4"]).prop_map(Change::AddNode),
        1 => (0usize..8).prop_map(Change::Cordon),
        1 => (0usize..8).prop_map(Change::RenameNode),
    ]
}

/// One state of the test: its pods' ids as the ops pick them, and every
/// change applied to it since it was built (its own and, for an overlay,
/// those of the state it was taken from).
struct Copy {
    state: ClusterState,
    ids: Vec<PodId>,
    log: Vec<Change>,
}

/// Applies a change; deterministic, so replaying a log on a fresh build
/// makes an independent copy with the same content.
fn change(s: &mut ClusterState, ids: &mut Vec<PodId>, c: &Change, probe: &core::Pod) {
    let node_of = |s: &ClusterState, n: usize| NodeId((n % s.nodes().len().max(1)) as u32);
    match c {
        Change::Op(op) => {
            let probe = s.compile_pod(probe).unwrap();
            apply(s, ids, op, &probe, &mut SchedulerCache::new());
        }
        Change::UpdatePod(p, b) => {
            let Some(&id) = ids.get(p % ids.len().max(1)) else {
                return;
            };
            if s.pod_entry(id).is_none() {
                return;
            }
            let mut v = b.value();
            v["metadata"]["name"] = serde_json::json!(s.pod(id).name.to_string());
            let mut b = PodB::from_json(v);
            if let Some(n) = s.pod_node(id) {
                b = b.on(s.node(n).name.as_ref());
            }
            s.update_api_pod(id, &b.build()).unwrap();
        }
        Change::AddNode(zone) => {
            let name = format!("m{}", ids.len() + s.nodes().len());
            if s.node_id(&name).is_none() {
                s.add_node(&node(&name).label(ZONE, zone).build()).unwrap();
            }
        }
        Change::Cordon(n) => {
            if !s.nodes().is_empty() {
                let id = node_of(s, *n);
                let mut changed = s.node(id).clone();
                changed.unschedulable = !changed.unschedulable;
                s.replace_node(id, changed);
            }
        }
        Change::RenameNode(n) => {
            if !s.nodes().is_empty() {
                let id = node_of(s, *n);
                let name = format!("r{}-{}", s.node(id).name, ids.len());
                if s.node_id(&name).is_none() {
                    let mut changed = s.node(id).clone();
                    changed.name = name.as_str().into();
                    changed.name_sym = s.intern(&name);
                    s.replace_node(id, changed);
                }
            }
        }
    }
}

/// The canonical dump plus what it leaves out that overlays must keep
/// apart too: each live pod's `nodeName`, and the probe's cycle.
fn observed(s: &mut ClusterState, probe: &core::Pod) -> String {
    let mut names: Vec<String> = s
        .live_pods()
        .map(|(_, e)| format!("{} on {:?}", e.pod.name, e.pod.node_name))
        .collect();
    names.sort();
    let probe = s.compile_pod(probe).unwrap();
    let a = answer(&schedule(s, &mut SchedulerCache::new(), &probe, 0));
    format!("{}\n{}\n{a:?}", s.canonical_dump(), names.join("\n"))
}

/// Plain pods enough to fill several chunks of the pod store.
fn filler(s: &mut ClusterState, ids: &mut Vec<PodId>, count: usize, node_count: usize) {
    for i in 0..count {
        let mut b = pod(&format!("f{i}")).label("app", ["a", "b", "c"][i % 3]);
        if i % 4 != 0 {
            b = b.on(&format!("n{}", i % node_count));
        }
        ids.push(s.add_api_pod(&b.build()).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Several overlays of one base (and overlays of overlays) changed in
    /// turn, the base changed too while they live: each ends as its own
    /// changes replayed on a fresh build, whatever the others did with the
    /// chunks they shared.
    #[test]
    fn overlays_used_alternately_stay_independent(
        node_count in 2usize..6,
        pods in prop::collection::vec(
            ((0usize..100).prop_flat_map(arb_pod), prop::option::of(0usize..8)),
            0..12,
        ),
        fill in 0usize..700,
        steps in prop::collection::vec(
            (0usize..4, prop::option::weighted(0.15, 0usize..4), arb_change()),
            1..30,
        ),
        probe in arb_pod(9999),
    ) {
        let probe = probe.build();
        let fresh = || {
            let (mut s, mut ids) = build(node_count, &pods);
            filler(&mut s, &mut ids, fill, node_count);
            (s, ids)
        };
        let (state, ids) = fresh();
        let mut copies = vec![Copy { state, ids, log: Vec::new() }];
        for (target, fork, c) in &steps {
            if let Some(from) = fork.filter(|_| copies.len() < 4) {
                let from = &copies[from % copies.len()];
                let copy = Copy {
                    state: from.state.overlay(),
                    ids: from.ids.clone(),
                    log: from.log.clone(),
                };
                copies.push(copy);
            }
            let k = target % copies.len();
            let Copy { state, ids, log } = &mut copies[k];
            change(state, ids, c, &probe);
            log.push(c.clone());
        }
        for (k, copy) in copies.iter_mut().enumerate() {
            let (mut twin, mut ids) = fresh();
            for c in &copy.log {
                change(&mut twin, &mut ids, c, &probe);
            }
            prop_assert_eq!(
                observed(&mut copy.state, &probe),
                observed(&mut twin, &probe),
                "copy {} (0 is the base) after {} changes", k, copy.log.len()
            );
        }
    }
}
