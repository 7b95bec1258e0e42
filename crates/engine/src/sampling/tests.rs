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
    cache.set_sampling(Sampling {
        enabled: true,
        percentage: 0,
    });
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
    cache.set_sampling(Sampling {
        enabled: true,
        percentage: 0,
    });
    let api: core::Pod = serde_json::from_value(pod_json("all")).unwrap();
    let id = cluster.add_api_pod(&api).unwrap();
    let pod = cluster.pod(id).clone();
    schedule_choice(&cluster, &mut cache, &pod, 0).expect("fits");
    assert_eq!(cache.last_sample().map(|s| s.to_find), Some(300));
}
