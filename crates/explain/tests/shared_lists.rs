//! The fast paths of explaining a pod no node admits, each against the
//! plain computation it replaces:
//!
//! - the pods an incoming anti-affinity term could match come from the
//!   label index ([`ClusterState::bound_pods_carrying`]), not a walk over
//!   every bound pod;
//! - a domain's blockers are counted once, by hash, and shared by its
//!   nodes (`Shared` lists), a node blocked in several domains joining
//!   them;
//! - grouping words each shared list's summary once.

use podplace_engine::ClusterState;
use podplace_explain::group::{group, summary};
use podplace_explain::{explain, Detail, Explanation, Group, NodeVerdict, World, MAX_BLOCKERS};
use podplace_model::load::{load, Source};
use podplace_testkit::{node, pod, HOST, ZONE};
use proptest::prelude::*;
use rustc_hash::FxHashMap;

const TIERS: [&str; 3] = ["backend", "frontend", "cache"];
const APPS: [&str; 3] = ["a0", "a1", "a2"];

/// One existing pod: tier, app, owner ReplicaSet, node, finished.
type PodSpec = (usize, usize, usize, usize, bool);

fn world(zones: usize, nodes: usize, pods: &[PodSpec], terms: &[usize]) -> World {
    let mut docs = Vec::new();
    for n in 0..nodes {
        docs.push(
            node(&format!("n{n}"))
                .label(ZONE, &format!("z{}", n % zones))
                .yaml(),
        );
    }
    for (i, &(tier, app, rs, n, finished)) in pods.iter().enumerate() {
        let mut p = pod(&format!("p{i}"))
            .uid(&format!("uid-p{i}"))
            .label("tier", TIERS[tier])
            .label("app", APPS[app])
            .owner("ReplicaSet", &format!("rs{rs}"), &format!("uid-rs{rs}"))
            .on(&format!("n{}", n % nodes));
        if finished {
            p = p.phase("Succeeded");
        }
        docs.push(p.yaml());
    }
    let mut stuck = pod("stuck").uid("uid-stuck").label("app", "stuck");
    for &t in terms {
        stuck = match t {
            0 => stuck.anti("tier", "In", &["backend"], ZONE),
            _ => stuck.anti("app", "In", &["a1"], HOST),
        };
    }
    docs.push(stuck.yaml());
    let mut inv = load(&[Source::Bytes {
        name: "world.yaml".into(),
        data: docs.concat().into_bytes(),
    }])
    .expect("world loads");
    podplace_model::expand::expand_workloads(&mut inv);
    World::new(inv, &Default::default(), 0).expect("cluster builds")
}

/// What a node's anti-affinity reason should say, counted by walking every
/// bound pod: (pod, workload, node, domain) of the first blockers, and
/// (workload, domain, pods) per term in first-seen order.
type Plain = (
    Vec<(String, String, String, String)>,
    Vec<(String, String, usize)>,
);

fn plain(world: &World, state: &ClusterState, node: &str, terms: &[usize]) -> Plain {
    let (mut blockers, mut counts) = (Vec::new(), Vec::new());
    let n = state.node_id(node).expect("node");
    for &t in terms {
        let (key, label, value) = match t {
            0 => (ZONE, "tier", "backend"),
            _ => (HOST, "app", "a1"),
        };
        let key = state.interner().lookup(key).expect("key");
        let Some(domain) = state.node(n).labels.get(key) else {
            continue;
        };
        let mut per: Vec<(String, String, usize)> = Vec::new();
        for (id, on) in state.bound_pods() {
            let carries = |k: &str, v: &str| {
                let (Some(k), Some(v)) = (state.interner().lookup(k), state.interner().lookup(v))
                else {
                    return false;
                };
                state.pod(id).labels.get(k) == Some(v)
            };
            if state.node(on).labels.get(key) != Some(domain) || !carries(label, value) {
                continue;
            }
            let workload = world.base.workload(id).to_string();
            let domain = state.interner().resolve(domain).to_string();
            if blockers.len() < MAX_BLOCKERS {
                blockers.push((
                    world.base.pod_name(id),
                    workload.clone(),
                    state.node(on).name.to_string(),
                    domain.clone(),
                ));
            }
            match per.iter_mut().find(|c| c.0 == workload) {
                Some(c) => c.2 += 1,
                None => per.push((workload, domain, 1)),
            }
        }
        counts.extend(per);
    }
    (blockers, counts)
}

/// Grouping as it was before summaries were numbered: by the texts.
fn plain_groups(nodes: &[NodeVerdict], e: &Explanation) -> Vec<Group> {
    let mut index: FxHashMap<Vec<String>, usize> = FxHashMap::default();
    let mut groups: Vec<Group> = Vec::new();
    for (i, verdict) in nodes.iter().enumerate() {
        let key: Vec<String> = verdict
            .reasons
            .iter()
            .map(|r| summary(r, &e.terms))
            .collect();
        match index.get(&key) {
            Some(&g) => groups[g].members.push(i),
            None => {
                index.insert(key.clone(), groups.len());
                groups.push(Group {
                    members: vec![i],
                    summaries: key,
                });
            }
        }
    }
    groups.sort_by(|a, b| {
        a.summaries
            .len()
            .cmp(&b.summaries.len())
            .then(b.members.len().cmp(&a.members.len()))
            .then(a.members[0].cmp(&b.members[0]))
    });
    groups
}

fn pods() -> impl Strategy<Value = Vec<PodSpec>> {
    prop::collection::vec(
        (
            0..3usize,
            0..3usize,
            0..4usize,
            0..8usize,
            prop::bool::weighted(0.15),
        ),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The label index yields, in id order, every bound pod a walk finds
    /// carrying the pairs, even after pods were removed (which reorders
    /// the index's lists) and with pairs no pod carries.
    #[test]
    fn label_index_candidates_are_the_bound_pods_a_walk_finds(
        nodes in 1..5usize,
        pods in pods(),
        removed in prop::collection::vec(0..40usize, 0..10),
        pairs in prop::collection::vec((0..2usize, 0..4usize), 0..3),
    ) {
        let world = world(2, nodes, &pods, &[]);
        let mut what_if = world.base.overlay();
        for r in removed {
            if let Some(id) = what_if.state().pod_id("default", &format!("p{r}")) {
                what_if.state_mut().remove_pod(id);
            }
        }
        let state = what_if.state_mut();
        let pairs: Vec<_> = pairs
            .into_iter()
            .map(|(k, v)| {
                let (key, values) = if k == 0 { ("tier", &TIERS) } else { ("app", &APPS) };
                let value = values.get(v).copied().unwrap_or("nobody");
                (state.intern(key), state.intern(value))
            })
            .collect();
        let state = what_if.state();
        let carries = |id: podplace_engine::PodId| {
            pairs.iter().all(|&(k, v)| state.pod(id).labels.get(k) == Some(v))
        };
        let walk: Vec<_> = state.bound_pods().filter(|&(id, _)| carries(id)).collect();
        let listed = state.bound_pods_carrying(pairs.iter().copied());
        let bound: Vec<_> = state.bound_pods().collect();
        prop_assert!(listed.windows(2).all(|w| w[0].0 < w[1].0), "not in id order: {listed:?}");
        prop_assert!(listed.iter().all(|p| bound.contains(p)));
        let kept: Vec<_> = listed.into_iter().filter(|&(id, _)| carries(id)).collect();
        prop_assert_eq!(kept, walk);
    }

    /// Every node's anti-affinity reason names the blockers and counts a
    /// walk over every bound pod finds (one term, or two whose domains a
    /// node joins), and the groups are those grouping by the texts gives.
    #[test]
    fn shared_blockers_are_what_a_walk_counts(
        zones in 1..4usize,
        nodes in 1..8usize,
        pods in pods(),
        terms in prop::sample::select(vec![vec![0], vec![1], vec![0, 1], vec![1, 0]]),
    ) {
        let world = world(zones, nodes, &pods, &terms);
        let id = world.find_pod("stuck", None).expect("stuck pod");
        let e = explain(&world, id);
        let mut what_if = world.base.overlay();
        if what_if.state().pod_node(id).is_some() {
            what_if.state_mut().unbind(id);
        }
        let state = what_if.state();
        for n in 0..nodes {
            let name = format!("n{n}");
            let (blockers, counts) = plain(&world, state, &name, &terms);
            let reason = e
                .nodes
                .iter()
                .find(|v| v.node == name)
                .and_then(|v| {
                    v.reasons.iter().find(|r| r.detail == Detail::PodAntiAffinity)
                });
            let Some(r) = reason else {
                prop_assert!(counts.is_empty(), "{name} not blocked, yet {counts:?}");
                continue;
            };
            let got: Vec<_> = r
                .blockers
                .iter()
                .map(|b| (b.pod.clone(), b.workload.clone(), b.node.clone(), b.domain.clone()))
                .collect();
            prop_assert_eq!(got, blockers, "{}", name);
            let got: Vec<_> = r
                .counts
                .iter()
                .map(|c| (c.workload.clone(), c.domain.clone(), c.pods))
                .collect();
            prop_assert_eq!(&got, &counts, "{}", name);
            prop_assert_eq!(r.blockers_total, counts.iter().map(|c| c.2).sum::<usize>());
        }
        prop_assert_eq!(&e.groups, &plain_groups(&e.nodes, &e));
        prop_assert_eq!(&group(&e.nodes, &e.terms), &e.groups);
    }
}
