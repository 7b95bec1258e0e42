//! simulate's `rebalance` step carries out the whole plan (issue 19 §2):
//! nine replicas collapsed into one zone of three are spread one per node
//! again, wave after wave — each wave once the previous wave's replacements
//! are Ready, never more pods in flight than the workload's disruption
//! budget allows — and the step reports per wave what was evicted and
//! where it landed.

use std::collections::BTreeMap;
use std::path::Path;

use podplace_rebalance::sim_step::SimRebalance;
use podplace_sim::{run, Run, Scenario};

fn example_dir() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/simulate"
    ))
}

/// The example scenario with its `apply` replaced by `workload` (YAML of
/// one object, indented as an item of the inline `objects:` list), and
/// `readyAfter` for every pod.
fn scenario(workload: Option<&str>, ready_after: &str) -> Scenario {
    let dir = example_dir();
    let mut text = std::fs::read_to_string(dir.join("zone-rebalance.yaml")).unwrap();
    if let Some(w) = workload {
        text = text.replace(
            "  - apply: zone-rebalance/search.yaml\n",
            &format!("  - apply:\n      objects:\n{w}"),
        );
    }
    text = text.replace(
        "steps:\n",
        &format!("readyAfter: {{'*': {ready_after}}}\nsteps:\n"),
    );
    Scenario::from_str("zone-rebalance.yaml", &text, dir).unwrap()
}

/// The search replicas per node after the rebalance step.
fn per_node(result: &Run, workload: &str) -> BTreeMap<String, usize> {
    let after = result
        .steps
        .iter()
        .find(|s| s.step.starts_with("rebalance"))
        .unwrap();
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for p in &after.pods {
        if p.workload.contains(workload) {
            assert!(p.ready, "{} is not Ready after the step", p.pod);
            *per.entry(p.node.clone().unwrap_or_default()).or_insert(0) += 1;
        }
    }
    per
}

/// Runs the scenario; checks the spread is one per node, every landing
/// was as planned or on a node scored equal, and at most `per_wave`
/// evictions share a wave. Returns the step's evictions and notes.
fn rebalanced(s: &Scenario, workload: &str, per_wave: usize) -> SimRebalance {
    let mut ext = SimRebalance::default();
    let result = run(s, &mut ext).unwrap();
    assert_eq!(ext.steps.len(), 1);
    let evictions = &ext.steps[0];
    let notes = &ext.notes[0];
    let report = notes.join("\n");
    assert_eq!(result.failed_expectations(), 0, "{report}");
    let per = per_node(&result, workload);
    assert_eq!(per.len(), 9, "{per:?}\n{report}");
    assert!(per.values().all(|&n| n == 1), "{per:?}\n{report}");
    // Three per node in zone a: two of each node's three move.
    assert_eq!(evictions.len(), 6, "{report}");
    let mut waves: BTreeMap<usize, usize> = BTreeMap::new();
    for e in evictions {
        assert!(e.refused.is_none(), "{e:?}");
        assert!(e.as_predicted(), "{e:?}");
        assert!(e.from.starts_with('a'), "{e:?}");
        assert!(!e.landed.as_deref().unwrap().starts_with('a'), "{e:?}");
        *waves.entry(e.wave).or_insert(0) += 1;
    }
    assert!(
        waves.values().all(|&n| n <= per_wave),
        "more than {per_wave} in flight in a wave: {waves:?}\n{report}"
    );
    assert_eq!(
        waves.keys().copied().collect::<Vec<_>>(),
        (1..=waves.len()).collect::<Vec<_>>(),
        "{report}"
    );
    // The step's report says it too, in the same lines.
    let step = result
        .steps
        .iter()
        .find(|s| s.step.starts_with("rebalance"))
        .unwrap();
    let said: Vec<String> = step.changes.iter().map(ToString::to_string).collect();
    for line in notes {
        assert!(said.contains(line), "{said:#?}");
    }
    assert!(
        said.iter()
            .any(|l| l.starts_with("rebalance: 6 eviction(s) in ")),
        "{said:#?}"
    );
    // One line per eviction, saying its wave and where it landed.
    for e in evictions {
        let line = notes
            .iter()
            .find(|l| l.contains(&e.pod))
            .unwrap_or_else(|| panic!("no line for {}: {report}", e.pod));
        assert!(
            line.starts_with(&format!(
                "wave {}: evicted {} from {}",
                e.wave, e.pod, e.from
            )),
            "{line}"
        );
        assert!(
            line.contains(&format!("landed on {}", e.landed.as_deref().unwrap())),
            "{line}"
        );
    }
    ext
}

fn deployment(max_unavailable: &str) -> String {
    let text = std::fs::read_to_string(example_dir().join("zone-rebalance/search.yaml")).unwrap();
    let text = text.replace(
        "  replicas: 9\n",
        &format!("  replicas: 9\n  strategy:\n    rollingUpdate: {{maxUnavailable: {max_unavailable}}}\n"),
    );
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("      - {l}\n")
            } else {
                format!("        {l}\n")
            }
        })
        .collect()
}

#[test]
fn the_issue_scenario_runs_every_wave() {
    // maxUnavailable 25% of 9: at most two pods in flight per wave, so
    // at least three waves (a landing on a node scored equal makes the
    // step plan again, in a new wave).
    let ext = rebalanced(&scenario(None, "0s"), "search", 2);
    let waves = ext.steps[0].iter().map(|e| e.wave).max().unwrap();
    assert!(waves >= 3, "{:#?}", ext.notes);
}

#[test]
fn one_pod_in_flight_per_wave() {
    // Replacements Ready 20s after binding: each wave waits for them.
    let ext = rebalanced(&scenario(Some(&deployment("1")), "20s"), "search", 1);
    let waves = ext.steps[0].iter().map(|e| e.wave).max().unwrap();
    assert_eq!(waves, 6, "{:#?}", ext.notes);
}

/// Nodes of zones b and c sized 5 to 10 CPUs, so no two score equal for a
/// replacement of 1 CPU: every landing is the planned one and no wave is
/// cut short by a plan made again.
fn distinct_nodes(text: &str) -> String {
    let mut nodes = String::from("nodes:\n");
    for (i, n) in ["a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"]
        .iter()
        .enumerate()
    {
        let cpu = if i < 3 { 4 } else { i + 2 };
        nodes.push_str(&format!(
            "  - {{apiVersion: v1, kind: Node, metadata: {{name: {n}, labels: {{kubernetes.io/hostname: {n}, topology.kubernetes.io/zone: zone-{z}}}}}, status: {{allocatable: {{cpu: '{cpu}', memory: 16Gi, pods: '110'}}}}}}\n",
            z = &n[..1]
        ));
    }
    text.replace("cluster: [zone-rebalance/cluster.yaml]\n", &nodes)
}

#[test]
fn several_pods_in_flight_per_wave() {
    let workload = deployment("3").replace("cpu: 100m", "cpu: '1'");
    let s = scenario(Some(&workload), "2m");
    let text = distinct_nodes(s.text.as_deref().unwrap());
    let s = Scenario::from_str("zone-rebalance.yaml", &text, example_dir()).unwrap();
    let ext = rebalanced(&s, "search", 3);
    for e in &ext.steps[0] {
        assert_eq!(e.landed.as_deref(), Some(e.predicted.as_str()), "{e:?}");
    }
    let waves = ext.steps[0].iter().map(|e| e.wave).max().unwrap();
    assert!(waves >= 2, "{:#?}", ext.notes);
    let in_wave_1 = ext.steps[0].iter().filter(|e| e.wave == 1).count();
    assert_eq!(in_wave_1, 3, "{:#?}", ext.notes);
    // Within a wave, each eviction waits only for the previous pod to be
    // gone (30s grace) and its replacement bound: three in flight before
    // the first replacement is Ready (2m); the next wave waits for all.
    let at = |w: usize| -> Vec<i64> {
        ext.steps[0]
            .iter()
            .filter(|e| e.wave == w)
            .map(|e| e.at)
            .collect()
    };
    let (w1, w2) = (at(1), at(2));
    assert!(w1[2] - w1[0] < 120, "{w1:?}");
    assert!(w2[0] >= w1[2] + 120, "{w1:?} {w2:?}");
}

#[test]
fn a_stateful_set_is_rebalanced_too() {
    let text = std::fs::read_to_string(example_dir().join("zone-rebalance/search.yaml")).unwrap();
    let sts = text
        .replace("kind: Deployment", "kind: StatefulSet")
        .replace(
            "  replicas: 9\n",
            "  replicas: 9\n  serviceName: search\n  podManagementPolicy: Parallel\n",
        );
    let item: String = sts
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("      - {l}\n")
            } else {
                format!("        {l}\n")
            }
        })
        .collect();
    let s = scenario(Some(&item), "5s");
    let text = s
        .text
        .as_deref()
        .unwrap()
        .replace("deployment/web/search", "statefulset/web/search");
    let s = Scenario::from_str("zone-rebalance.yaml", &text, example_dir()).unwrap();
    // Its default update strategy lets one pod go at a time.
    let ext = rebalanced(&s, "search", 1);
    // A StatefulSet's replacement keeps the evicted pod's name.
    for e in &ext.steps[0] {
        assert!(e.pod.starts_with("web/search-"), "{e:?}");
    }
}
