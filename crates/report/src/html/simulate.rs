//! `simulate -o html`: a timeline of the steps, each with the placement
//! map, the Pending pods and the findings, and a chart of each workload's
//! replicas per column (zone, or `--group-by`) or per node over time.
//!
//! Size grows linearly with the run, not with steps × pods: nodes and pods
//! are written once (the union over all steps, with their last-seen
//! attributes), and each step carries only what changed since the step
//! before (docs/html-report.md, "simulate").

use std::collections::{BTreeMap, HashMap};

use podplace_sim::report::{Change, StepReport};
use podplace_sim::Run;
use serde_json::{json, Value};

use super::{render, Page};
use crate::encode::{ceil_mib, split_name, Interner};

/// A pod's state flags in a step delta.
const READY: u8 = 1;
const TERMINATING: u8 = 2;
const GATED: u8 = 4;
/// A node's state flags in a step delta.
const CORDONED: u8 = 1;
const NOT_READY: u8 = 2;
const ABSENT: u8 = 4;
/// A pod's node in a step delta when the pod is gone (-1 is Pending).
const GONE: i64 = -2;
/// Changes of one kind in a step beyond this are summed up in one line
/// (a scale to 1,000 creates 1,000 pods; the pod deltas carry each).
const LISTED_CHANGES: usize = 20;

/// Renders `simulate -o html` for a finished run: `group_by` is the node
/// label whose values are the map's columns and the charts' series.
pub fn simulate_html(run: &Run, group_by: &str) -> String {
    let data = simulate_data(run, group_by);
    let failed = run.failed_expectations();
    let title = format!(
        "podplace simulate: {} steps, {} finding(s), {}",
        run.steps.len(),
        run.steps.iter().map(|s| s.findings.len()).sum::<usize>(),
        if failed == 0 {
            "all expectations held".to_string()
        } else {
            format!("{failed} expectation(s) failed")
        }
    );
    render(Page::Simulate, &title, &data)
}

/// The page's data: union node and pod tables, then the steps as deltas.
fn simulate_data(run: &Run, group_by: &str) -> Value {
    let steps: Vec<&StepReport> = std::iter::once(&run.initial)
        .chain(run.steps.iter())
        .collect();
    let mut strings = Interner::default();

    // Union tables, first-seen order, last-seen attributes.
    let mut node_index: HashMap<&str, usize> = HashMap::new();
    let mut nodes = Vec::new();
    let mut pod_index: HashMap<&str, usize> = HashMap::new();
    let mut pods = Vec::new();
    for step in &steps {
        for n in &step.nodes {
            match node_index.get(n.name.as_str()) {
                Some(&i) => nodes[i] = n,
                None => {
                    node_index.insert(&n.name, nodes.len());
                    nodes.push(n);
                }
            }
        }
        for p in &step.pods {
            match pod_index.get(p.pod.as_str()) {
                Some(&i) => pods[i] = p,
                None => {
                    pod_index.insert(&p.pod, pods.len());
                    pods.push(p);
                }
            }
        }
    }
    fn group<'a>(labels: &'a [(String, String)], group_by: &str) -> &'a str {
        labels
            .iter()
            .find(|(k, _)| k == group_by)
            .map_or("", |(_, v)| v.as_str())
    }
    let node_table = json!({
        "name": nodes.iter().map(|n| strings.intern(&n.name)).collect::<Vec<_>>(),
        "group": nodes.iter().map(|n| strings.intern(group(&n.labels, group_by))).collect::<Vec<_>>(),
        "cpu_m": nodes.iter().map(|n| n.cpu_milli).collect::<Vec<_>>(),
        "mem_mi": nodes.iter().map(|n| ceil_mib(n.memory)).collect::<Vec<_>>(),
        "labels": nodes.iter().map(|n| n.labels.iter().flat_map(|(k, v)| [strings.intern(k), strings.intern(v)]).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "taints": nodes.iter().map(|n| n.taints.iter().map(|t| strings.intern(t)).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let pod_table = json!({
        "name_prefix": pods.iter().map(|p| strings.intern(split_name(&p.pod).0)).collect::<Vec<_>>(),
        "name_rest": pods.iter().map(|p| split_name(&p.pod).1).collect::<Vec<_>>(),
        "workload": pods.iter().map(|p| strings.intern(&p.workload)).collect::<Vec<_>>(),
        "cpu_m": pods.iter().map(|p| p.cpu_milli).collect::<Vec<_>>(),
        "mem_mi": pods.iter().map(|p| ceil_mib(p.memory)).collect::<Vec<_>>(),
    });

    // Each step: what differs from the step before. Before step 0 every
    // node is absent and every pod gone.
    let mut pod_state: Vec<(i64, u8, i64)> = vec![(GONE, 0, -1); pods.len()];
    let mut node_state: Vec<u8> = vec![ABSENT; nodes.len()];
    let mut titles = Vec::new();
    let mut times = Vec::new();
    let mut changes = Vec::new();
    let mut findings = Vec::new();
    let mut pod_deltas = Vec::new();
    let mut node_deltas = Vec::new();
    for step in &steps {
        titles.push(strings.intern(&if step.index == 0 {
            "initial state".to_string()
        } else {
            step.step.clone()
        }));
        times.push(step.elapsed().to_string());
        changes.push(
            change_lines(&step.changes)
                .iter()
                .map(|l| strings.intern(l))
                .collect::<Vec<_>>(),
        );
        let mut flat = Vec::new();
        for f in &step.findings {
            let fix = f.fix.as_deref().filter(|_| !f.message.contains("fix:"));
            flat.extend([
                strings.intern(f.kind.as_str()) as i64,
                strings.intern(&f.message) as i64,
                f.workload
                    .as_deref()
                    .map_or(-1, |w| strings.intern(w) as i64),
                f.node
                    .as_deref()
                    .and_then(|n| node_index.get(n))
                    .map_or(-1, |&i| i as i64),
                fix.map_or(-1, |x| strings.intern(x) as i64),
            ]);
        }
        findings.push(flat);

        let mut seen = vec![false; nodes.len()];
        let mut delta = Vec::new();
        for n in &step.nodes {
            let i = node_index[n.name.as_str()];
            seen[i] = true;
            let flags = u8::from(n.unschedulable) * CORDONED + u8::from(!n.ready) * NOT_READY;
            if node_state[i] != flags {
                node_state[i] = flags;
                delta.extend([i as i64, i64::from(flags)]);
            }
        }
        for (i, s) in node_state.iter_mut().enumerate() {
            if !seen[i] && *s != ABSENT {
                *s = ABSENT;
                delta.extend([i as i64, i64::from(ABSENT)]);
            }
        }
        node_deltas.push(delta);

        let mut seen = vec![false; pods.len()];
        let mut delta = Vec::new();
        for p in &step.pods {
            let i = pod_index[p.pod.as_str()];
            seen[i] = true;
            let node = p
                .node
                .as_deref()
                .and_then(|n| node_index.get(n))
                .map_or(-1, |&n| n as i64);
            let flags = u8::from(p.ready) * READY
                + u8::from(p.terminating) * TERMINATING
                + u8::from(p.gated.is_some()) * GATED;
            let msg = match (&p.node, &p.gated) {
                (Some(_), _) => -1,
                (None, Some(g)) => strings.intern(g) as i64,
                (None, None) => strings.intern(&p.message) as i64,
            };
            let state = (node, flags, msg);
            if pod_state[i] != state {
                pod_state[i] = state;
                delta.extend([i as i64, node, i64::from(flags), msg]);
            }
        }
        for (i, s) in pod_state.iter_mut().enumerate() {
            if !seen[i] && s.0 != GONE {
                *s = (GONE, 0, -1);
                delta.extend([i as i64, GONE, 0, -1]);
            }
        }
        pod_deltas.push(delta);
    }
    json!({
        "v": 1,
        "kind": "simulate",
        "map": {"group_by": group_by, "nodes": node_table, "pods": pod_table},
        "steps": {
            "title": titles,
            "time": times,
            "changes": changes,
            "findings": findings,
            "nodes": node_deltas,
            "pods": pod_deltas,
        },
        "failed_expectations": run.failed_expectations(),
        "warnings": run.warnings,
        "strings": strings.into_strings(),
    })
}

/// A step's changes in words; a kind with more than [`LISTED_CHANGES`]
/// changes is one line with its count.
fn change_lines(changes: &[Change]) -> Vec<String> {
    let kind = |c: &Change| {
        serde_json::to_value(c)
            .ok()
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for c in changes {
        *count.entry(kind(c)).or_default() += 1;
    }
    let mut summed = std::collections::BTreeSet::new();
    let mut lines = Vec::new();
    for c in changes {
        let k = kind(c);
        let n = count[&k];
        if n > LISTED_CHANGES {
            if summed.insert(k.clone()) {
                lines.push(format!("{n} × {k}"));
            }
        } else {
            lines.push(c.to_string());
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use podplace_sim::report::{NodeView, PodView};
    use podplace_sim::time::Time;

    use super::*;

    fn node(name: &str, zone: &str, cordoned: bool) -> NodeView {
        NodeView {
            name: name.into(),
            unschedulable: cordoned,
            ready: true,
            labels: vec![("zone".into(), zone.into())],
            taints: vec![],
            cpu_milli: 2000,
            memory: 4 << 30,
        }
    }

    fn pod(name: &str, node: Option<&str>) -> PodView {
        PodView {
            pod: name.into(),
            workload: "Deployment/ns/web".into(),
            node: node.map(str::to_string),
            ready: node.is_some(),
            terminating: false,
            message: if node.is_none() {
                "0/2 nodes".into()
            } else {
                String::new()
            },
            gated: None,
            cpu_milli: 100,
            memory: 1 << 20,
        }
    }

    fn step(index: usize, nodes: Vec<NodeView>, pods: Vec<PodView>) -> StepReport {
        StepReport {
            index,
            step: format!("step {index}"),
            time: Time::default(),
            changes: vec![],
            pods,
            nodes,
            findings: vec![],
        }
    }

    /// Steps that change one pod carry one pod row, not the whole map:
    /// the page grows with the changes, not with steps × pods.
    #[test]
    fn steps_carry_only_what_changed() {
        let nodes = || vec![node("a1", "a", false), node("b1", "b", false)];
        let many: Vec<PodView> = (0..50)
            .map(|i| pod(&format!("ns/web-{i}"), Some("a1")))
            .collect();
        let mut moved = many.clone();
        moved[7].node = Some("b1".into());
        let mut gone = moved.clone();
        gone.remove(3);
        gone.push(pod("ns/web-x", None));
        let run = Run {
            initial: step(0, nodes(), many),
            steps: vec![
                step(1, nodes(), moved),
                step(2, vec![node("a1", "a", true)], gone),
            ],
            warnings: vec![],
            sampling: Default::default(),
        };
        let data = simulate_data(&run, "zone");
        let s = |v: &Value| data["strings"][v.as_u64().unwrap() as usize].clone();
        let deltas = &data["steps"]["pods"];
        assert_eq!(deltas[0].as_array().unwrap().len(), 50 * 4);
        // Step 1: web-7 moved to b1 (node index 1).
        assert_eq!(deltas[1], json!([7, 1, READY, -1]));
        // Step 2: web-3 gone, web-x Pending with its message.
        let d2 = deltas[2].as_array().unwrap();
        assert_eq!(d2.len(), 8);
        assert_eq!(&d2[0..3], &[json!(50), json!(-1), json!(0)]);
        assert_eq!(s(&d2[3]), "0/2 nodes");
        assert_eq!(&d2[4..8], &[json!(3), json!(GONE), json!(0), json!(-1)]);
        // Nodes: a1 cordoned, b1 absent at step 2; groups from the label.
        assert_eq!(data["steps"]["nodes"][2], json!([0, CORDONED, 1, ABSENT]));
        assert_eq!(s(&data["map"]["nodes"]["group"][1]), "b");
        assert_eq!(data["steps"]["title"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn the_page_fetches_nothing() {
        let run = Run {
            initial: step(
                0,
                vec![node("a1", "a", false)],
                vec![pod("ns/w-1", Some("a1"))],
            ),
            steps: vec![],
            warnings: vec![],
            sampling: Default::default(),
        };
        let html = simulate_html(&run, "zone");
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("default-src 'none'"));
        for fetches in ["src=", "href=\"http", "@import", "url("] {
            assert!(!html.contains(fetches), "page fetches with {fetches}");
        }
        assert_eq!(super::super::data_of(&html)["kind"], "simulate");
    }
}

/// Writes the simulate pages of the stories to `$PODPLACE_PAGE_DIR` (for
/// looking at them while changing the page; the browser tests in
/// crates/cli check what they show).
#[cfg(test)]
#[test]
#[ignore = "writes pages for a person to look at"]
fn write_story_pages() {
    let Some(dir) = std::env::var_os("PODPLACE_PAGE_DIR") else {
        return;
    };
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for story in ["drift", "drift-rebalanced", "rollout"] {
        let path = repo.join(format!("examples/stories/{story}.yaml"));
        let scenario = podplace_sim::Scenario::from_file(&path).unwrap();
        // A scenario's rebalance steps need podplace-rebalance's extension.
        let mut ext = podplace_rebalance::sim_step::SimRebalance {
            seed: scenario.seed,
            ..Default::default()
        };
        let run = podplace_sim::run(&scenario, &mut ext).unwrap();
        let page = simulate_html(&run, "topology.kubernetes.io/zone");
        std::fs::write(
            std::path::Path::new(&dir).join(format!("{story}.html")),
            page,
        )
        .unwrap();
    }
}
