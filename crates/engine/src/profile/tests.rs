//! Table tests of every profile argument through a whole scheduling cycle,
//! with the expected numbers worked out from kube-scheduler v1.36's own
//! formulas (noderesources' least/most-allocated and
//! requested-to-capacity-ratio scorers, helper.BuildBrokenLinearFunction,
//! InterPodAffinity's and PodTopologySpread's args, NodeAffinity's
//! addedAffinity, DefaultPreemption).

use std::sync::Arc;

use podplace_model::inventory::{Inventory, Origin, Sourced};
use serde_json::{json, Value};

use super::*;
use crate::cache::SchedulerCache;
use crate::cycle::{schedule, Outcome};
use crate::place::build_state;
use crate::status::Plugin;

fn sourced<T>(object: T) -> Sourced<T> {
    Sourced {
        object,
        origin: Origin::default(),
    }
}

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("test object")
}

fn node(name: &str, labels: Value, allocatable: Value) -> Value {
    let mut labels = labels;
    labels["kubernetes.io/hostname"] = json!(name);
    json!({"metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable}})
}

fn plain_node(name: &str) -> Value {
    node(
        name,
        json!({}),
        json!({"cpu": "4", "memory": "8Gi", "pods": "110"}),
    )
}

fn pod(name: &str, labels: Value, requests: Value, extra: Value) -> Value {
    let mut spec = extra;
    spec["containers"] = json!([{"name": "c", "image": "pause",
        "resources": {"requests": requests}}]);
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
        "labels": labels}, "spec": spec})
}

/// Schedules the last pod of `pods` (the others are bound where their
/// `nodeName` says) under `profile`.
fn run(
    profile: Profile,
    nodes: &[Value],
    pods: &[Value],
    services: &[Value],
) -> (Outcome, Vec<String>) {
    let mut inv = Inventory::default();
    for n in nodes {
        inv.nodes.push(sourced(from(n.clone())));
    }
    for p in pods {
        inv.pods.push(sourced(from(p.clone())));
    }
    for s in services {
        inv.services.push(sourced(from(s.clone())));
    }
    let (state, pending) = build_state(&inv).expect("state");
    let id = *pending.last().expect("a pending pod");
    let mut cache = SchedulerCache::with_profile(Arc::new(profile));
    let outcome = schedule(&state, &mut cache, &state.pod(id).clone(), 0);
    let names = state.nodes().iter().map(|n| n.name.to_string()).collect();
    (outcome, names)
}

/// The weighted score one plugin gave the first feasible node (`None`
/// when the plugin did not score).
fn column(outcome: &Outcome, plugin: Plugin) -> Option<i64> {
    outcome.scores.first().and_then(|s| {
        s.plugins
            .iter()
            .find(|(p, _)| *p == plugin)
            .map(|&(_, v)| v)
    })
}

fn with_fit(strategy: ScoringStrategy, resources: &[(&str, i64)]) -> Profile {
    Profile {
        fit: FitArgs {
            strategy,
            resources: resources
                .iter()
                .map(|&(n, w)| ResourceSpec::new(n, w))
                .collect(),
            ..FitArgs::default()
        },
        ..Profile::default()
    }
}

fn shape(points: &[(i64, i64)]) -> ScoringStrategy {
    ScoringStrategy::RequestedToCapacityRatio(
        points
            .iter()
            .map(|&(utilization, score)| ShapePoint { utilization, score })
            .collect(),
    )
}

#[test]
fn broken_linear_function_of_a_shape() {
    let up = [
        ShapePoint {
            utilization: 0,
            score: 0,
        },
        ShapePoint {
            utilization: 100,
            score: 10,
        },
    ];
    let steps = [
        ShapePoint {
            utilization: 20,
            score: 2,
        },
        ShapePoint {
            utilization: 50,
            score: 8,
        },
        ShapePoint {
            utilization: 80,
            score: 3,
        },
    ];
    // (shape, utilization, score on 0..=100)
    let table: [(&[ShapePoint], i64, i64); 10] = [
        (&up, 0, 0),
        (&up, 37, 37),
        (&up, 100, 100),
        (&steps, 0, 20),  // below the first point: its score
        (&steps, 20, 20), // on a point
        (&steps, 35, 50), // 20 + (80-20)*(35-20)/(50-20)
        (&steps, 50, 80), // on a point
        (&steps, 65, 55), // 80 + (30-80)*(65-50)/(80-50)
        (&steps, 79, 32), // 80 + (-50)*29/30 = 80 - 48 (Go truncates toward zero)
        (&steps, 95, 30), // above the last point: its score
    ];
    for (s, u, want) in table {
        assert_eq!(broken_linear(s, u), want, "utilization {u}");
    }
}

/// Node 4 CPU / 8Gi with a pod of 2 CPU / 1Gi; the new pod asks 1 CPU /
/// 1Gi: CPU 75% used, memory 25% used.
#[test]
fn node_resources_fit_scoring_strategies() {
    let nodes = [plain_node("a")];
    let pods = [
        pod(
            "old",
            json!({}),
            json!({"cpu": "2", "memory": "1Gi"}),
            json!({"nodeName": "a"}),
        ),
        pod(
            "new",
            json!({}),
            json!({"cpu": "1", "memory": "1Gi"}),
            json!({}),
        ),
    ];
    let table: Vec<(&str, Profile, i64)> = vec![
        ("default", Profile::default(), 50),
        (
            "least, cpu 3",
            with_fit(
                ScoringStrategy::LeastAllocated,
                &[("cpu", 3), ("memory", 1)],
            ),
            37, // (25*3 + 75) / 4 = 37.5, integer division
        ),
        (
            "most",
            with_fit(ScoringStrategy::MostAllocated, &[("cpu", 1), ("memory", 1)]),
            50,
        ),
        (
            "most, cpu 3",
            with_fit(ScoringStrategy::MostAllocated, &[("cpu", 3), ("memory", 1)]),
            62, // (75*3 + 25) / 4 = 62.5, integer division
        ),
        (
            "most, cpu only",
            with_fit(ScoringStrategy::MostAllocated, &[("cpu", 1)]),
            75,
        ),
        (
            "ratio up, cpu 3",
            with_fit(shape(&[(0, 0), (100, 10)]), &[("cpu", 3), ("memory", 1)]),
            63, // 62.5 rounded half away from zero
        ),
        (
            "ratio down, cpu 3",
            with_fit(shape(&[(0, 10), (100, 0)]), &[("cpu", 3), ("memory", 1)]),
            38, // (25*3 + 75) / 4 = 37.5 rounded
        ),
        (
            "ratio with a zero-scoring resource left out",
            with_fit(
                shape(&[(0, 0), (50, 0), (100, 10)]),
                &[("cpu", 1), ("memory", 1)],
            ),
            50, // cpu 75% → 50; memory 25% → 0 and not counted
        ),
    ];
    for (name, profile, want) in table {
        let (outcome, _) = run(profile, &nodes, &pods, &[]);
        assert_eq!(
            column(&outcome, Plugin::NodeResourcesFit),
            Some(want),
            "{name}"
        );
    }
}

/// More requested than allocatable (the Fit filter disabled, so the node
/// stays feasible): leastRequestedScore gives the resource 0,
/// mostRequestedScore caps it at the capacity (100), and
/// RequestedToCapacityRatio scores it at 100 % utilization (the shape's
/// last point), a 0 being left out of the average.
#[test]
fn node_resources_fit_overcommitted() {
    let nodes = [plain_node("a")];
    let pods = [
        pod(
            "old",
            json!({}),
            json!({"cpu": "2", "memory": "1Gi"}),
            json!({"nodeName": "a"}),
        ),
        pod(
            "new",
            json!({}),
            json!({"cpu": "3", "memory": "1Gi"}),
            json!({}),
        ),
    ];
    let no_fit_filter = |mut p: Profile| {
        p.filters.retain(|f| *f != Plugin::NodeResourcesFit);
        p
    };
    let both = [("cpu", 1), ("memory", 1)];
    let table: Vec<(&str, Profile, i64)> = vec![
        // cpu 5 of 4: 0; memory 2Gi of 8Gi: 75.
        (
            "least",
            with_fit(ScoringStrategy::LeastAllocated, &both),
            37,
        ),
        // cpu capped: 100; memory 25.
        ("most", with_fit(ScoringStrategy::MostAllocated, &both), 62),
        // cpu at 100 %: 100; memory 25: (100 + 25) / 2 rounded.
        ("ratio up", with_fit(shape(&[(0, 0), (100, 10)]), &both), 63),
        // cpu at 100 %: 0, left out; memory 25 % → 75.
        (
            "ratio down",
            with_fit(shape(&[(0, 10), (100, 0)]), &both),
            75,
        ),
    ];
    for (name, profile, want) in table {
        let (outcome, _) = run(no_fit_filter(profile), &nodes, &pods, &[]);
        assert_eq!(
            column(&outcome, Plugin::NodeResourcesFit),
            Some(want),
            "{name}"
        );
    }
}

/// Extended resources are weighed only when the pod requests them and the
/// node offers them.
#[test]
fn node_resources_fit_extended_resources() {
    let gpu_node = node(
        "a",
        json!({}),
        json!({"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "4"}),
    );
    let base = pod(
        "old",
        json!({}),
        json!({"cpu": "2", "memory": "1Gi"}),
        json!({"nodeName": "a"}),
    );
    let most = || {
        with_fit(
            ScoringStrategy::MostAllocated,
            &[("cpu", 1), ("example.com/gpu", 1)],
        )
    };
    let table = [
        // (pod requests, node, score)
        (
            json!({"cpu": "1", "memory": "1Gi", "example.com/gpu": "2"}),
            gpu_node.clone(),
            62, // cpu 75, gpu 50
        ),
        (json!({"cpu": "1", "memory": "1Gi"}), gpu_node.clone(), 75), // gpu not requested
        (json!({"cpu": "1", "memory": "1Gi"}), plain_node("a"), 75),
    ];
    for (requests, n, want) in table {
        let pods = [
            base.clone(),
            pod("new", json!({}), requests.clone(), json!({})),
        ];
        let (outcome, _) = run(most(), &[n], &pods, &[]);
        assert_eq!(
            column(&outcome, Plugin::NodeResourcesFit),
            Some(want),
            "{requests}"
        );
    }
}

#[test]
fn ignored_resources_and_groups() {
    let table = [
        // (resource, ignoredResources, ignoredResourceGroups, ignored)
        ("example.com/foo", vec!["example.com/foo"], vec![], true),
        ("example.com/foo", vec![], vec!["example.com"], true),
        (
            "example.com/foo",
            vec!["example.com/bar"],
            vec!["example.org"],
            false,
        ),
        ("hugepages-2Mi", vec!["hugepages-2Mi"], vec![], false), // not extended
        (
            "kubernetes.io/foo",
            vec!["kubernetes.io/foo"],
            vec!["kubernetes.io"],
            false,
        ),
        ("cpu", vec!["cpu"], vec![], false),
    ];
    for (resource, names, groups, want) in table {
        let args = FitArgs {
            ignored_resources: names.iter().map(|s| s.to_string()).collect(),
            ignored_resource_groups: groups.iter().map(|s| s.to_string()).collect(),
            ..FitArgs::default()
        };
        assert_eq!(args.ignores(resource), want, "{resource}");
    }
    // Through Filter: the node offers no example.com/foo.
    let pods = [pod(
        "new",
        json!({}),
        json!({"cpu": "1", "example.com/foo": "1"}),
        json!({}),
    )];
    let (outcome, _) = run(Profile::default(), &[plain_node("a")], &pods, &[]);
    assert!(outcome.chosen.is_none());
    assert_eq!(
        outcome.statuses[0].reasons[0],
        "Insufficient example.com/foo"
    );
    for (names, groups) in [
        (vec!["example.com/foo"], vec![]),
        (vec![], vec!["example.com"]),
    ] {
        let profile = Profile {
            fit: FitArgs {
                ignored_resources: names.iter().map(|s| s.to_string()).collect(),
                ignored_resource_groups: groups.iter().map(|s: &&str| s.to_string()).collect(),
                ..FitArgs::default()
            },
            ..Profile::default()
        };
        let (outcome, _) = run(profile, &[plain_node("a")], &pods, &[]);
        assert!(
            outcome.chosen.is_some(),
            "{names:?} {groups:?}: {}",
            outcome.message
        );
    }
}

/// BalancedAllocation over cpu, memory and an extended resource uses the
/// population standard deviation of the three fractions.
#[test]
fn balanced_allocation_resources() {
    let n = node(
        "a",
        json!({}),
        json!({"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/gpu": "4"}),
    );
    let pods = [pod(
        "new",
        json!({}),
        json!({"cpu": "2", "memory": "2Gi", "example.com/gpu": "4"}),
        json!({}),
    )];
    let three = Profile {
        balanced: vec![
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("memory", 1),
            ResourceSpec::new("example.com/gpu", 1),
        ],
        ..Profile::default()
    };
    // With the pod: 0.5, 0.25, 1 → mean 0.5833, std 0.3118 → 68;
    // without: 0, 0, 0 → 100. 50 + (50 + 68 - 100) / 2 = 59.
    let (outcome, _) = run(three, std::slice::from_ref(&n), &pods, &[]);
    assert_eq!(
        column(&outcome, Plugin::NodeResourcesBalancedAllocation),
        Some(59)
    );
    // Default (cpu, memory): 0.5, 0.25 → std 0.125 → 87: 50 + 37/2 = 68.
    let (outcome, _) = run(Profile::default(), &[n], &pods, &[]);
    assert_eq!(
        column(&outcome, Plugin::NodeResourcesBalancedAllocation),
        Some(68)
    );
}

#[test]
fn score_weights_and_disabled_score_plugins() {
    let nodes = [
        node(
            "a",
            json!({}),
            json!({"cpu": "4", "memory": "8Gi", "pods": "110"}),
        ),
        node(
            "b",
            json!({}),
            json!({"cpu": "8", "memory": "16Gi", "pods": "110"}),
        ),
    ];
    let pods = [pod(
        "new",
        json!({}),
        json!({"cpu": "1", "memory": "1Gi"}),
        json!({}),
    )];
    let (default, _) = run(Profile::default(), &nodes, &pods, &[]);
    let fit = column(&default, Plugin::NodeResourcesFit).expect("fit scores");
    assert_eq!(column(&default, Plugin::TaintToleration), Some(300));
    let profile = Profile {
        scores: vec![
            (Plugin::TaintToleration, 1),
            (Plugin::NodeResourcesFit, 5),
            (Plugin::NodeResourcesBalancedAllocation, 1),
        ],
        ..Profile::default()
    };
    let (custom, _) = run(profile, &nodes, &pods, &[]);
    assert_eq!(column(&custom, Plugin::TaintToleration), Some(100));
    assert_eq!(column(&custom, Plugin::NodeResourcesFit), Some(fit * 5));
    assert_eq!(column(&custom, Plugin::ImageLocality), None);
    assert_eq!(column(&custom, Plugin::PodTopologySpread), None);
    // Totals are the sums of the weighted columns.
    for s in &custom.scores {
        assert_eq!(s.total, s.plugins.iter().map(|(_, v)| v).sum::<i64>());
    }
}

/// An existing pod on `a` requires affinity to app=web; one on `b`
/// prefers it with weight 5. The incoming web pod has no terms.
#[test]
fn inter_pod_affinity_args() {
    let nodes = [plain_node("a"), plain_node("b")];
    let term = json!({"labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname"});
    let pods = [
        pod(
            "required",
            json!({}),
            json!({}),
            json!({"nodeName": "a", "affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term.clone()]}}}),
        ),
        pod(
            "preferred",
            json!({}),
            json!({}),
            json!({"nodeName": "b", "affinity": {"podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "podAffinityTerm": term}]}}}),
        ),
        pod("web", json!({"app": "web"}), json!({}), json!({})),
    ];
    let ipa = |outcome: &Outcome, names: &[String], node: &str| {
        outcome
            .scores
            .iter()
            .find(|s| names[s.node.index()] == node)
            .and_then(|s| {
                s.plugins
                    .iter()
                    .find(|(p, _)| *p == Plugin::InterPodAffinity)
                    .map(|&(_, v)| v)
            })
    };
    let table = [
        // (hardPodAffinityWeight, ignorePreferred, a, b)
        (1, false, Some(0), Some(200)),  // 1 vs 5
        (10, false, Some(200), Some(0)), // 10 vs 5
        (0, false, Some(0), Some(200)),  // required terms not counted
        (10, true, None, None),          // the pod has no preferred terms: Skip
    ];
    for (hard, ignore, a, b) in table {
        let profile = Profile {
            hard_pod_affinity_weight: hard,
            ignore_preferred_terms_of_existing_pods: ignore,
            ..Profile::default()
        };
        let (outcome, names) = run(profile, &nodes, &pods, &[]);
        assert_eq!(
            (ipa(&outcome, &names, "a"), ipa(&outcome, &names, "b")),
            (a, b),
            "hard {hard}, ignore {ignore}"
        );
    }
}

/// A Service selects app=web; one web pod runs on `a`.
#[test]
fn pod_topology_spread_default_constraints() {
    let nodes = [plain_node("a"), plain_node("b")];
    let service = json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}}});
    let pods = [
        pod(
            "w1",
            json!({"app": "web"}),
            json!({}),
            json!({"nodeName": "a"}),
        ),
        pod("w2", json!({"app": "web"}), json!({}), json!({})),
    ];
    let list = |dns: bool| {
        SpreadDefaults::List(vec![DefaultConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".into(),
            do_not_schedule: dns,
        }])
    };
    let spread_of = |spread: SpreadDefaults| Profile {
        spread,
        ..Profile::default()
    };
    // System: scored, both nodes feasible.
    let (o, _) = run(
        spread_of(SpreadDefaults::System),
        &nodes,
        &pods,
        std::slice::from_ref(&service),
    );
    assert_eq!(o.feasible.len(), 2);
    assert!(column(&o, Plugin::PodTopologySpread).is_some());
    // List with DoNotSchedule: `a` is filtered out.
    let (o, names) = run(
        spread_of(list(true)),
        &nodes,
        &pods,
        std::slice::from_ref(&service),
    );
    assert_eq!(o.feasible.len(), 1);
    assert_eq!(names[o.feasible[0].index()], "b");
    assert_eq!(
        o.statuses[0].reasons[0],
        "node(s) didn't match pod topology spread constraints"
    );
    // List with ScheduleAnyway: scored, `b` better.
    let (o, names) = run(
        spread_of(list(false)),
        &nodes,
        &pods,
        std::slice::from_ref(&service),
    );
    assert_eq!(o.feasible.len(), 2);
    assert_eq!(names[o.chosen.expect("placed").index()], "b");
    // An empty List: no defaults, no spread score.
    let (o, _) = run(
        spread_of(SpreadDefaults::List(Vec::new())),
        &nodes,
        &pods,
        std::slice::from_ref(&service),
    );
    assert_eq!(column(&o, Plugin::PodTopologySpread), None);
    // No Service: nothing selects the pod, no defaults.
    let (o, _) = run(spread_of(list(true)), &nodes, &pods, &[]);
    assert_eq!(o.feasible.len(), 2);
}

#[test]
fn node_affinity_added_affinity() {
    let nodes = [
        node(
            "a",
            json!({"pool": "x"}),
            json!({"cpu": "4", "memory": "8Gi", "pods": "110"}),
        ),
        node(
            "b",
            json!({"pool": "y"}),
            json!({"cpu": "4", "memory": "8Gi", "pods": "110"}),
        ),
    ];
    let pods = [pod("p", json!({}), json!({}), json!({}))];
    let required: k8s_openapi::api::core::v1::NodeAffinity = from(json!({
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]}]}}));
    let (o, names) = run(
        Profile {
            added_affinity: Some(required),
            ..Profile::default()
        },
        &nodes,
        &pods,
        &[],
    );
    assert_eq!(o.feasible.len(), 1);
    assert_eq!(names[o.feasible[0].index()], "a");
    assert_eq!(
        o.statuses[1].reasons[0],
        "node(s) didn't match scheduler-enforced node affinity"
    );
    let preferred: k8s_openapi::api::core::v1::NodeAffinity = from(json!({
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "preference":
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["y"]}]}}]}));
    let (o, names) = run(
        Profile {
            added_affinity: Some(preferred),
            ..Profile::default()
        },
        &nodes,
        &pods,
        &[],
    );
    assert_eq!(names[o.chosen.expect("placed").index()], "b");
    let b = o
        .scores
        .iter()
        .find(|s| names[s.node.index()] == "b")
        .expect("b");
    assert!(b.plugins.contains(&(Plugin::NodeAffinity, 200)));
}

#[test]
fn disabled_filter_and_preemption() {
    let nodes = [node(
        "a",
        json!({}),
        json!({"cpu": "1", "memory": "8Gi", "pods": "110"}),
    )];
    let pods = [
        pod(
            "low",
            json!({}),
            json!({"cpu": "1"}),
            json!({"nodeName": "a"}),
        ),
        pod(
            "high",
            json!({}),
            json!({"cpu": "1"}),
            json!({"priority": 100}),
        ),
    ];
    let (o, _) = run(Profile::default(), &nodes, &pods, &[]);
    assert!(o
        .preemption
        .as_ref()
        .is_some_and(|p| !p.candidates.is_empty()));
    let (o, _) = run(
        Profile {
            preemption: false,
            ..Profile::default()
        },
        &nodes,
        &pods,
        &[],
    );
    assert!(o
        .preemption
        .as_ref()
        .is_some_and(|p| p.candidates.is_empty()));
    assert_eq!(
        o.message,
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate"
    );
    let mut no_fit = Profile::default();
    no_fit.filters.retain(|p| *p != Plugin::NodeResourcesFit);
    let (o, _) = run(no_fit, &nodes, &pods, &[]);
    assert!(o.chosen.is_some(), "{}", o.message);
}
