//! The `rebalance` step of `podplace simulate`: story 2 replayed (scale,
//! two drains, uncordon), then rebalanced inside the simulation — each
//! eviction through the simulated Eviction API, each replacement created by
//! the simulated ReplicaSet and placed by the simulated scheduler — lands
//! where the plan said and restores the 2-2-1 spread.

use std::collections::BTreeMap;
use std::path::Path;

use podplace_rebalance::sim_step::SimRebalance;
use podplace_sim::{run, Scenario};

#[test]
fn story_2_rebalanced_in_the_simulation() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories"
    ));
    let text = std::fs::read_to_string(dir.join("drift.yaml")).unwrap();
    // The story's steps up to the uncordon, then a rebalance and the
    // expectation that fails without it.
    let text = text.replace("  - expect:", "  - rebalance: {}\n  - expect:");
    let scenario = Scenario::from_str("drift.yaml", &text, dir).unwrap();
    let mut ext = SimRebalance::default();
    let result = run(&scenario, &mut ext).unwrap();
    assert_eq!(
        result.failed_expectations(),
        0,
        "max 2 per node after the rebalance"
    );
    assert_eq!(ext.steps.len(), 1);
    let evictions = &ext.steps[0];
    assert_eq!(evictions.len(), 3, "{evictions:#?}");
    for e in evictions {
        assert!(e.refused.is_none(), "{e:?}");
        // Where the plan said, or on a node it scored equal (the
        // simulated scheduler, like kube-scheduler, picks among those).
        let landed = e.landed.clone().unwrap_or_default();
        assert!(
            landed == e.predicted || e.tied_with.contains(&landed),
            "{e:?}"
        );
    }
    let after = result
        .steps
        .iter()
        .find(|s| s.step.starts_with("rebalance"))
        .unwrap();
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in &after.pods {
        if p.workload.contains("demo-app") {
            *per_node
                .entry(p.node.clone().unwrap_or_default())
                .or_insert(0) += 1;
        }
    }
    let mut counts: Vec<usize> = per_node.into_values().collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 2, 2]);
}
