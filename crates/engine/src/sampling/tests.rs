//! Table tests of sampling at 500 and 5,000 nodes, from kube-scheduler's
//! rules (schedule_one.go's numFeasibleNodesToFind and
//! findNodesThatPassFilters, node_tree.go's zone interleaving).

use k8s_openapi::api::core::v1 as core;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use serde_json::json;

use super::*;
use crate::place::build_state;

#[test]
fn feasible_nodes_to_find() {
    let table = [
        // (profile %, global %, nodes, to find)
        (None, 0, 50, 50),
        (None, 0, 99, 99),
        (None, 0, 100, 100),
        (None, 0, 300, 144),   // 50 - 2 = 48%
        (None, 0, 500, 230),   // 50 - 4 = 46%
        (None, 0, 5_000, 500), // 50 - 40 = 10%
        (None, 0, 6_000, 300), // 50 - 48 = 2% → 5%
        (None, 0, 1_000, 420),
        (None, 30, 500, 150),
        (Some(100), 30, 500, 500),
        (Some(10), 0, 500, 100), // 50, raised to the minimum
        (Some(1), 0, 5_000, 100),
        (None, 100, 5_000, 5_000),
    ];
    for (profile, global, nodes, want) in table {
        assert_eq!(
            num_feasible_nodes_to_find(profile, global, nodes),
            want,
            "{profile:?} {global} {nodes}"
        );
    }
}

fn world(nodes: usize, zones: usize) -> ClusterState {
    let mut inv = Inventory::default();
    for i in 0..nodes {
        let name = format!("node-{i:05}");
        let mut labels = json!({"kubernetes.io/hostname": name});
        if zones > 0 {
            labels["topology.kubernetes.io/zone"] = json!(format!("zone-{}", i % zones));
        }
        let node: core::Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap();
        inv.nodes.push(Sourced {
            object: node,
            origin: Origin::default(),
        });
    }
    build_state(&inv).unwrap().0
}

#[test]
fn node_tree_interleaves_zones() {
    // Nodes named in zone order 0,1,2,0,1,2,...: the list is by name.
    let cluster = world(9, 3);
    let names: Vec<String> = node_tree_order(&cluster)
        .iter()
        .map(|&n| cluster.node(n).name.to_string())
        .collect();
    assert_eq!(
        names[..4],
        ["node-00000", "node-00001", "node-00002", "node-00003"]
    );
    // Unequal zones: zone-0 has 3 nodes, zone-1 has 1.
    let mut inv = Inventory::default();
    for (name, zone) in [("a1", "z0"), ("a2", "z0"), ("a3", "z0"), ("b1", "z1")] {
        let node: core::Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": "1", "pods": "1"}}
        }))
        .unwrap();
        inv.nodes.push(Sourced {
            object: node,
            origin: Origin::default(),
        });
    }
    let cluster = build_state(&inv).unwrap().0;
    let names: Vec<String> = node_tree_order(&cluster)
        .iter()
        .map(|&n| cluster.node(n).name.to_string())
        .collect();
    assert_eq!(names, ["a1", "b1", "a2", "a3"]);
}

#[test]
fn sampling_at_500_and_5000_nodes() {
    for (nodes, zones, to_find) in [(500, 3, 230), (5_000, 3, 500), (500, 0, 230)] {
        let cluster = world(nodes, zones);
        let order = node_tree_order(&cluster);
        assert_eq!(order.len(), nodes);
        let find = num_feasible_nodes_to_find(None, 0, nodes);
        assert_eq!(find, to_find);
        // All feasible: the next `find` nodes of the list from the start,
        // and the start moves on by as many.
        for start in [0, 7, nodes - 3] {
            let (found, processed) = sample(&order, start, find, |_| true);
            assert_eq!(processed, find);
            assert_eq!(found[0], order[start]);
            assert_eq!(found[find - 1], order[(start + find - 1) % nodes]);
        }
        // Every other node infeasible: twice as many processed (the
        // rejected node after the last one kept is processed too, before
        // the search stops at the next feasible one).
        let odd = |n: NodeId| order.iter().position(|&o| o == n).unwrap() % 2 == 0;
        let (found, processed) = sample(&order, 0, find, odd);
        assert_eq!(found.len(), find);
        assert_eq!(processed, 2 * find);
        // Fewer feasible than wanted: every node processed.
        let few = |n: NodeId| order.iter().position(|&o| o == n).unwrap() < 10;
        let (found, processed) = sample(&order, 5, find, few);
        assert_eq!((found.len(), processed), (10, nodes));
    }
}

/// Through whole cycles: 300 equal nodes in three zones, parallelism 1.
/// Each pod is scored on the 144 nodes found from the start index, which
/// moves on by 144 from pod to pod; with `percentageOfNodesToScore: 100`
/// every node is scored.
#[test]
fn cycles_sample_from_the_rotating_start_index() {
    use crate::cache::SchedulerCache;
    use crate::cycle::schedule_choice;
    use crate::profile::Profile;
    let mut cluster = world(300, 3);
    let order = node_tree_order(&cluster);
    let mut cache = SchedulerCache::new();
    cache.set_sampling(Sampling::on(0, 1));
    let pod_json = |name: &str| {
        json!({"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c", "image": "pause",
                "resources": {"requests": {"cpu": "100m"}}}]}})
    };
    let mut start = 0;
    for i in 0..4 {
        let api: core::Pod = serde_json::from_value(pod_json(&format!("p{i}"))).unwrap();
        let id = cluster.add_api_pod(&api).unwrap();
        let pod = cluster.pod(id).clone();
        let choice = schedule_choice(&cluster, &mut cache, &pod, 0).expect("fits");
        let window: Vec<NodeId> = (0..144).map(|k| order[(start + k) % 300]).collect();
        assert!(window.contains(&choice.node), "pod {i}");
        assert!(choice.tied.iter().all(|n| window.contains(n)), "pod {i}");
        let sampled = cache.last_sample().expect("sampled").clone();
        assert_eq!(
            (sampled.to_find, sampled.start, sampled.processed),
            (144, start, 144)
        );
        start = (start + 144) % 300;
        assert_eq!(cache.start_index(), start);
        cluster.bind(id, choice.node);
    }
    // percentageOfNodesToScore: 100 in the profile: every node scored.
    let mut cache = SchedulerCache::with_profile(std::sync::Arc::new(Profile {
        percentage_of_nodes_to_score: Some(100),
        ..Profile::default()
    }));
    cache.set_sampling(Sampling::on(0, 1));
    let api: core::Pod = serde_json::from_value(pod_json("all")).unwrap();
    let id = cluster.add_api_pod(&api).unwrap();
    let pod = cluster.pod(id).clone();
    schedule_choice(&cluster, &mut cache, &pod, 0).expect("fits");
    assert_eq!(cache.last_sample().map(|s| s.to_find), Some(300));
}

fn sampling(parallelism: i32) -> Sampling {
    Sampling::on(0, parallelism)
}

fn pod(
    cluster: &mut ClusterState,
    name: &str,
    scheduler: &str,
    extra: serde_json::Value,
) -> podplace_model::objects::Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "pause",
        "resources": {"requests": {"cpu": "100m"}}}]});
    if !scheduler.is_empty() {
        spec["schedulerName"] = json!(scheduler);
    }
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    let api: core::Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    }))
    .unwrap();
    let id = cluster.add_api_pod(&api).unwrap();
    cluster.pod(id).clone()
}

/// Certainty over parallelism, node count and start-index knowledge, at
/// 500 and 5,000 nodes: exact with one worker from a known index; one of
/// the candidate sets with more workers (and from then on, since the race
/// leaves the next index unknown); exact whenever every feasible node is
/// scored.
#[test]
fn certainty_follows_parallelism_and_the_start_index() {
    use crate::cache::SchedulerCache;
    use crate::cycle::schedule_choice;
    use crate::sampling::{Certainty, Race};
    for nodes in [500, 5_000] {
        let mut cluster = world(nodes, 3);
        let p = pod(&mut cluster, "p", "", json!({}));
        // (parallelism, start known, certainty of two pods in a row)
        let table = [
            (1, true, [Certainty::Exact, Certainty::Exact]),
            (
                16,
                true,
                [
                    Certainty::CandidateSet(Race::Parallelism(16)),
                    Certainty::CandidateSet(Race::Parallelism(16)),
                ],
            ),
            (
                1,
                false,
                [
                    Certainty::CandidateSet(Race::UnknownStart),
                    Certainty::CandidateSet(Race::UnknownStart),
                ],
            ),
        ];
        for (parallelism, known, want) in table {
            let mut cache = SchedulerCache::new();
            cache.set_sampling(sampling(parallelism));
            cache.set_start_unknown(!known);
            for (i, want) in want.into_iter().enumerate() {
                schedule_choice(&cluster, &mut cache, &p, 0).expect("fits");
                let s = cache.last_sample().expect("sampled").clone();
                assert_eq!(
                    s.certainty, want,
                    "{nodes} nodes, parallelism {parallelism}, pod {i}"
                );
            }
            // After a race the start index is no longer known.
            let mut probe = cache.clone();
            probe.set_sampling(sampling(1));
            schedule_choice(&cluster, &mut probe, &p, 0).expect("fits");
            let after = probe.last_sample().expect("sampled").certainty;
            assert_eq!(
                after.is_exact(),
                parallelism == 1 && known,
                "{nodes} nodes, parallelism {parallelism}: then {after:?}"
            );
        }
        // percentageOfNodesToScore 100: every node scored, exact whatever
        // the parallelism.
        let mut cache = SchedulerCache::new();
        cache.set_sampling(Sampling::on(100, 16));
        schedule_choice(&cluster, &mut cache, &p, 0).expect("fits");
        let s = cache.last_sample().expect("sampled").clone();
        assert_eq!((s.to_find, s.certainty), (nodes, Certainty::Exact));
    }
}

/// The windows over the node list move on by the nodes processed, whatever
/// node the list starts from: at 500 and 5,000 nodes, for start indices
/// across the list (wrapping around its end), every pod's tied set lies in
/// the `to_find` nodes from its start.
#[test]
fn windows_from_every_start_index() {
    use crate::cache::SchedulerCache;
    use crate::cycle::schedule_choice;
    for (nodes, to_find) in [(500, 230), (5_000, 500)] {
        let mut cluster = world(nodes, 3);
        let order = node_tree_order(&cluster);
        let p = pod(&mut cluster, "p", "", json!({}));
        for start in [0, 1, nodes / 2, nodes - to_find, nodes - 1] {
            let mut cache = SchedulerCache::new();
            cache.set_sampling(sampling(1));
            cache.set_start_index(start);
            let choice = schedule_choice(&cluster, &mut cache, &p, 0).expect("fits");
            let window: rustc_hash::FxHashSet<NodeId> =
                (0..to_find).map(|k| order[(start + k) % nodes]).collect();
            assert_eq!(choice.tied.len(), to_find, "{nodes} from {start}");
            assert!(
                choice.tied.iter().all(|n| window.contains(n)),
                "{nodes} from {start}"
            );
            assert_eq!(cache.start_index(), (start + to_find) % nodes);
        }
    }
}

/// kube-scheduler has one nextStartNodeIndex per scheduler: a pod of a
/// second profile starts where the first profile's pod left it, and its
/// own search moves the index the first profile uses next.
#[test]
fn profiles_share_one_start_index() {
    use crate::cache::SchedulerCache;
    use crate::cycle::schedule_choice;
    use crate::profile::{Profile, SchedulerSetup};
    use std::sync::Arc;
    let mut cluster = world(500, 3);
    let setup = SchedulerSetup {
        profiles: vec![
            Arc::new(Profile::default()),
            Arc::new(Profile {
                scheduler_name: "ninety".to_string(),
                percentage_of_nodes_to_score: Some(90),
                ..Profile::default()
            }),
        ],
        sampling: sampling(1),
        configured: true,
    };
    let mut cache = SchedulerCache::for_setup(&setup);
    let a = pod(&mut cluster, "a", "", json!({}));
    let b = pod(&mut cluster, "b", "ninety", json!({}));
    schedule_choice(&cluster, &mut cache, &a, 0).expect("fits");
    assert_eq!(cache.start_index(), 230);
    schedule_choice(&cluster, &mut cache, &b, 0).expect("fits");
    let s = cache
        .serving("ninety")
        .and_then(|c| c.last_sample().cloned())
        .expect("sampled");
    assert_eq!((s.start, s.to_find), (230, 450));
    assert_eq!(cache.start_index(), (230 + 450) % 500);
    schedule_choice(&cluster, &mut cache, &a, 0).expect("fits");
    assert_eq!(cache.last_sample().map(|s| s.start), Some(180));
    // A copy (a what-if) carries its own index, its profiles still one.
    let mut copy = cache.clone();
    schedule_choice(&cluster, &mut copy, &b, 0).expect("fits");
    assert_eq!(cache.start_index(), 180 + 230);
    assert_eq!(copy.start_index(), (410 + 450) % 500);
}

/// A PreFilter that narrows the nodes (a pod naming its node, here
/// through required node affinity on metadata.name): kube-scheduler looks
/// for `numFeasibleNodesToFind` of the narrowed list, which below 100
/// nodes is all of them (exact), and moves the start index on by the
/// nodes processed, modulo all nodes.
#[test]
fn narrowed_lists_are_searched_whole_below_100_nodes() {
    use crate::cache::SchedulerCache;
    use crate::cycle::schedule_choice;
    use crate::sampling::Certainty;
    let mut cluster = world(500, 3);
    // One name per term (metadata.name takes exactly one value).
    let terms: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            json!({"matchFields": [{"key": "metadata.name", "operator": "In",
                "values": [format!("node-{:05}", i * 7)]}]})
        })
        .collect();
    let p = pod(
        &mut cluster,
        "narrow",
        "",
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": terms}}}}),
    );
    let mut cache = SchedulerCache::new();
    cache.set_sampling(sampling(16));
    cache.set_start_index(495);
    let choice = schedule_choice(&cluster, &mut cache, &p, 0)
        .map_err(|o| o.message)
        .expect("fits");
    let s = cache.last_sample().expect("sampled").clone();
    assert_eq!(
        (s.to_find, s.processed, s.certainty),
        (40, 40, Certainty::Exact)
    );
    assert_eq!(choice.tied.len(), 40);
    assert_eq!(cache.start_index(), (495 + 40) % 500);
    // 150 names: kube-scheduler looks for 100 of them, in Go map order
    // (random): one of the candidate sets even with parallelism 1.
    let terms: Vec<serde_json::Value> = (0..150)
        .map(|i| {
            json!({"matchFields": [{"key": "metadata.name", "operator": "In",
                "values": [format!("node-{:05}", i * 3)]}]})
        })
        .collect();
    let p = pod(
        &mut cluster,
        "wide",
        "",
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": terms}}}}),
    );
    let mut cache = SchedulerCache::new();
    cache.set_sampling(sampling(1));
    schedule_choice(&cluster, &mut cache, &p, 0)
        .map_err(|o| o.message)
        .expect("fits");
    let s = cache.last_sample().expect("sampled").clone();
    assert_eq!(
        (s.to_find, s.certainty),
        (
            100,
            Certainty::CandidateSet(crate::sampling::Race::MapOrder)
        )
    );
}

/// minCandidateNodesPercentage / minCandidateNodesAbsolute: how many
/// candidates preemption's dry run looks for among the potential nodes
/// (DefaultPreemption's calculateNumCandidates).
#[test]
fn preemption_candidate_search() {
    use crate::plugins::default_preemption::CandidateSearch;
    use crate::profile::Profile;
    // (percentage, absolute, potential nodes, to find)
    let table = [
        (10, 100, 50, 50),
        (10, 100, 500, 100),
        (10, 100, 5_000, 500),
        (0, 1, 5_000, 1),
        (100, 0, 300, 300),
        (30, 10, 200, 60),
        (0, 0, 200, 0),
    ];
    for (percentage, absolute, potential, want) in table {
        let profile = Profile {
            min_candidate_nodes_percentage: percentage,
            min_candidate_nodes_absolute: absolute,
            ..Profile::default()
        };
        let search = CandidateSearch::of(&profile, potential);
        assert_eq!(search.to_find, want, "{percentage}% {absolute} {potential}");
        assert!(search.finds_all(want));
        assert!(!search.finds_all(want + 1));
    }
}
