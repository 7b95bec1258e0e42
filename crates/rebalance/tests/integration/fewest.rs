//! The fewest evictions, whatever the pod order (issue 19 §1).
//!
//! On random small clusters (up to 6 nodes, 12 replicas of one workload)
//! under one strategy — RemoveDuplicates, topology spread or SoftRules —
//! a breadth-first search over every sequence of evictions, each
//! replacement landing by the planner's own rule
//! ([`podplace_rebalance::landing::predict`]), finds the fewest evictions
//! that reach an objective as low as the plan's end: the plan takes exactly
//! that many, and no sequence of evictions reaches a lower objective than
//! the plan's end. Renaming the pods (a permutation of their names) and
//! reversing their order in the input never changes the plan's length.
//! The nine-replica zone collapse of the issue plans 6, as the
//! descheduler's RemoveDuplicates evicts 6.

use std::collections::{HashMap, VecDeque};

use k8s_openapi::jiff::Timestamp;
use podplace_engine::{NodeId, PodId};
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_rebalance::planner::World;
use podplace_rebalance::strategies::{self, Cx};
use podplace_rebalance::{landing, plan, PlanOptions, Policy};
use proptest::prelude::*;
use serde_json::{json, Value};

fn sourced<T: serde::de::DeserializeOwned>(v: Value) -> Sourced<T> {
    Sourced {
        object: serde_json::from_value(v).unwrap(),
        origin: Origin::default(),
    }
}

/// The strategy under test and the rule the pods carry for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// RemoveDuplicates; the pods carry no rule.
    Duplicates,
    /// RemovePodsViolatingTopologySpreadConstraint on a DoNotSchedule spread.
    SpreadHard,
    /// RemovePodsViolatingTopologySpreadConstraint on a ScheduleAnyway spread.
    SpreadSoft,
    /// SoftRules on preferred pod anti-affinity.
    AntiAffinity,
    /// SoftRules on a ScheduleAnyway spread.
    SoftSpread,
}

#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    zones: usize,
    small: Vec<bool>,
    pods: usize,
    kind: Kind,
    zone_key: bool,
    cpu: u32,
    placement: Vec<usize>,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        2usize..=6,
        1usize..=3,
        proptest::collection::vec(any::<bool>(), 6),
        1usize..=12,
        prop_oneof![
            Just(Kind::Duplicates),
            Just(Kind::SpreadHard),
            Just(Kind::SpreadSoft),
            Just(Kind::AntiAffinity),
            Just(Kind::SoftSpread),
        ],
        any::<bool>(),
        1u32..=3,
        proptest::collection::vec(0usize..6, 12),
        0u64..4,
    )
        .prop_map(
            |(nodes, zones, small, pods, kind, zone_key, cpu, placement, seed)| Case {
                nodes,
                zones: zones.min(nodes),
                small,
                pods,
                kind,
                zone_key,
                cpu: cpu * 100,
                placement: placement.into_iter().map(|p| p % nodes).collect(),
                seed,
            },
        )
}

/// The cluster of a case; `names` gives each replica's name, `reverse`
/// lists the pods in reverse order.
fn build(c: &Case, names: &[String], reverse: bool) -> Inventory {
    let mut inv = Inventory::default();
    for n in 0..c.nodes {
        let cpu = if c.small[n] { "2" } else { "4" };
        inv.nodes.push(sourced(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("n{n}"), "uid": format!("node-{n}"),
                "labels": {"kubernetes.io/hostname": format!("n{n}"),
                           "topology.kubernetes.io/zone": format!("z{}", n % c.zones)}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
        })));
    }
    let key = if c.zone_key {
        "topology.kubernetes.io/zone"
    } else {
        "kubernetes.io/hostname"
    };
    let sel = json!({"matchLabels": {"app": "web"}});
    let spread = |when: &str| json!([{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": sel}]);
    let (affinity, spread) = match c.kind {
        Kind::Duplicates => (json!({}), json!([])),
        Kind::SpreadHard => (json!({}), spread("DoNotSchedule")),
        Kind::SpreadSoft | Kind::SoftSpread => (json!({}), spread("ScheduleAnyway")),
        Kind::AntiAffinity => (
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": sel, "topologyKey": key}}]}}),
            json!([]),
        ),
    };
    let containers = json!([{"name": "c", "image": "nginx:1.27",
        "resources": {"requests": {"cpu": format!("{}m", c.cpu), "memory": "256Mi"}}}]);
    let spec = json!({"containers": containers, "affinity": affinity, "topologySpreadConstraints": spread});
    inv.deployments.push(sourced(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "d-web", "generation": 1},
        "spec": {"replicas": c.pods, "selector": sel,
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
        "status": {"replicas": c.pods}
    })));
    inv.replica_sets.push(sourced(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-abc12", "namespace": "default", "uid": "rs-web",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-web", "controller": true}]},
        "spec": {"replicas": c.pods, "selector": sel, "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
        "status": {"replicas": c.pods}
    })));
    let mut order: Vec<usize> = (0..c.pods).collect();
    if reverse {
        order.reverse();
    }
    for r in order {
        inv.pods.push(sourced(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": names[r], "generateName": "web-abc12-", "namespace": "default",
                "uid": format!("pod-{}", names[r]), "labels": {"app": "web"},
                "creationTimestamp": "2026-11-22T03:00:00Z",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc12", "uid": "rs-web", "controller": true}]},
            "spec": {"nodeName": format!("n{}", c.placement[r]), "containers": containers,
                     "affinity": affinity, "topologySpreadConstraints": spread},
            "status": {"phase": "Running", "startTime": "2026-11-22T03:00:00Z",
                       "conditions": [{"type": "Ready", "status": "True"}]}
        })));
    }
    inv
}

fn policy(kind: Kind) -> Policy {
    let (plugin, args) = match kind {
        Kind::Duplicates => ("RemoveDuplicates", ""),
        Kind::SpreadHard => (
            "RemovePodsViolatingTopologySpreadConstraint",
            "\n    args: {constraints: [DoNotSchedule]}",
        ),
        Kind::SpreadSoft => (
            "RemovePodsViolatingTopologySpreadConstraint",
            "\n    args: {constraints: [ScheduleAnyway]}",
        ),
        Kind::AntiAffinity | Kind::SoftSpread => ("SoftRules", ""),
    };
    let text = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: one\n  pluginConfig:\n  - name: {plugin}{args}\n  plugins:\n    balance:\n      enabled: [{plugin}]\n"
    );
    Policy::parse(&text, "one strategy").unwrap()
}

fn opts(seed: u64) -> PlanOptions {
    PlanOptions {
        seed,
        now: "2026-11-22T04:00:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

/// What the search found from the input's state.
#[derive(Debug)]
struct Search {
    /// The fewest evictions reaching an objective at most the goal's.
    fewest: Option<usize>,
    /// The lowest objective any sequence of evictions reaches.
    lowest: i64,
    /// States visited.
    states: usize,
}

/// Breadth-first search over evictions: a state is how many replicas each
/// node holds (the replicas are alike but for their names, and the landing
/// rule reads no names), an eviction takes one replica off a node and its
/// replacement lands where [`landing::predict`] says — the planner's rule,
/// which also refuses a landing that may come back (the node left ties
/// for best).
fn search(inv: &Inventory, policy: &Policy, seed: u64, goal: i64, cap: usize) -> Option<Search> {
    let world = World::from_inventory(inv, &Default::default(), seed).unwrap();
    let World {
        mut state,
        mut cache,
        facts,
        ..
    } = world;
    let args = &policy.profiles[0].plugins[0].args;
    let mut strategy = strategies::build(args, &mut state, &facts);
    let pods: Vec<PodId> = (0..facts.len()).map(|i| PodId(i as u32)).collect();
    let nodes = state.nodes().len();
    let counts_of = |state: &podplace_engine::ClusterState| {
        let mut c = vec![0u8; nodes];
        for &p in &pods {
            if let Some(n) = state.pod_node(p) {
                c[n.index()] += 1;
            }
        }
        c
    };
    let set = |state: &mut podplace_engine::ClusterState, counts: &[u8]| {
        for &p in &pods {
            if state.pod_node(p).is_some() {
                state.unbind(p);
            }
        }
        let mut next = pods.iter();
        for (n, &k) in counts.iter().enumerate() {
            for _ in 0..k {
                state.bind(*next.next().unwrap(), NodeId(n as u32));
            }
        }
    };
    let start = counts_of(&state);
    let mut depth: HashMap<Vec<u8>, usize> = HashMap::new();
    depth.insert(start.clone(), 0);
    let mut queue = VecDeque::from([start]);
    let mut fewest = None;
    let mut lowest = i64::MAX;
    while let Some(counts) = queue.pop_front() {
        let d = depth[&counts];
        set(&mut state, &counts);
        let objective = strategy.total(&Cx {
            state: &state,
            facts: &facts,
            now: opts(seed).now,
        });
        lowest = lowest.min(objective);
        if objective <= goal && fewest.is_none() {
            fewest = Some(d);
        }
        for from in 0..nodes {
            if counts[from] == 0 {
                continue;
            }
            set(&mut state, &counts);
            let from = NodeId(from as u32);
            let pod = *pods
                .iter()
                .find(|&&p| state.pod_node(p) == Some(from))
                .unwrap();
            let Some(l) = landing::predict(&mut state, &mut cache, pod, false, seed) else {
                continue;
            };
            if l.to == from || l.tied.contains(&from) {
                continue;
            }
            let mut next = counts.clone();
            next[from.index()] -= 1;
            next[l.to.index()] += 1;
            if !depth.contains_key(&next) {
                if depth.len() >= cap {
                    return None;
                }
                depth.insert(next.clone(), d + 1);
                queue.push_back(next);
            }
        }
    }
    Some(Search {
        fewest,
        lowest,
        states: depth.len(),
    })
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("web-abc12-p{i}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 64, .. ProptestConfig::default() })]

    #[test]
    fn the_plan_takes_the_fewest_evictions_to_the_lowest_objective(
        c in case(),
        rotate in 1usize..12,
    ) {
        let policy = policy(c.kind);
        let inv = build(&c, &names(c.pods), false);
        let planned = plan(&inv, &policy, &opts(c.seed)).unwrap();
        let length = planned.plan.evictions.len();
        let end = planned.plan.strategies[0].after;
        let found = search(&inv, &policy, c.seed, end, 4000);
        prop_assume!(found.is_some(), "too many states to search");
        let found = found.unwrap();
        prop_assert_eq!(
            found.fewest, Some(length),
            "{:?}: the plan {:#?} ends at {} ({} states searched)",
            c, planned.plan.evictions, end, found.states
        );
        // A ScheduleAnyway spread's replacement goes wherever the scheduler
        // scores best, maybe elsewhere in the same domain: the order of
        // evictions can decide whether the last move is possible, and the
        // greedy plan may stop a move short of the best spread some order
        // reaches (see the README). Every other objective here ends lowest.
        if !matches!(c.kind, Kind::SpreadSoft | Kind::SoftSpread) {
            prop_assert_eq!(
                found.lowest, end,
                "{:?}: evictions reach {} but the plan ends at {}: {:#?}\nleft in place: {:#?}",
                c, found.lowest, end, planned.plan.evictions, planned.plan.kept
            );
        }
        // Renamed (names rotated among the pods) and listed backwards.
        let mut renamed = names(c.pods);
        renamed.rotate_left(rotate % c.pods.max(1));
        for (names, reverse) in [(renamed.clone(), false), (names(c.pods), true), (renamed, true)] {
            let other = plan(&build(&c, &names, reverse), &policy, &opts(c.seed)).unwrap();
            prop_assert_eq!(
                other.plan.evictions.len(), length,
                "{:?} renamed {:?} reversed {}", c, names, reverse
            );
        }
    }
}

/// Issue 19 §1: nine replicas bound a0, a0, a0, a1, a1, a1, a2, a2, a2 over
/// three zones of three nodes, preferred zone anti-affinity: the default
/// profile (SoftRules and RemoveDuplicates) plans 6 evictions — two from
/// each a-node, one pod per node at the end — whatever the pods' names.
#[test]
fn nine_replicas_collapsed_on_one_zone_take_six_evictions() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rebalance/zone-collapse.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    for rename in [false, true] {
        let text = if rename {
            // search-abc-0 becomes search-abc-8 and so on.
            (0..9).fold(text.clone(), |t, i| {
                t.replace(
                    &format!("search-abc-{i}\n"),
                    &format!("search-abc-x{}\n", 8 - i),
                )
            })
        } else {
            text.clone()
        };
        let dir = tempdir();
        let file = dir.join("collapse.yaml");
        std::fs::write(&file, text).unwrap();
        let inv = podplace_model::load::load(&[podplace_model::load::Source::Path(file)]).unwrap();
        let planned = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
        let p = &planned.plan;
        assert_eq!(p.evictions.len(), 6, "renamed {rename}: {:#?}", p.evictions);
        let mut from: HashMap<&str, usize> = HashMap::new();
        for e in &p.evictions {
            *from.entry(e.from.as_str()).or_insert(0) += 1;
        }
        assert_eq!(from.len(), 3, "two from each a-node: {from:?}");
        assert!(from.values().all(|&n| n == 2), "{from:?}");
        for s in &p.strategies {
            if s.strategy == "RemoveDuplicates" {
                assert_eq!((s.before, s.after), (6, 0));
            }
        }
        let after = planned.apply(&inv, opts(0).now);
        let mut per_node: HashMap<String, usize> = HashMap::new();
        for pod in &after.pods {
            let node = pod.object.spec.as_ref().and_then(|s| s.node_name.clone());
            *per_node.entry(node.unwrap_or_default()).or_insert(0) += 1;
        }
        assert_eq!(per_node.len(), 9, "one pod per node: {per_node:?}");
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "podplace-fewest-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
