//! The story scenarios replay what the stories (and a real cluster) show.

use std::collections::BTreeMap;
use std::path::PathBuf;

use podplace_sim::findings::FindingKind;
use podplace_sim::report::{Change, StepReport};
use podplace_sim::{run, NoExtensions, Run, Scenario};

fn stories() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories"
    ))
}

fn replay(file: &str) -> Run {
    let scenario = Scenario::from_file(&stories().join(file)).expect("scenario");
    run(&scenario, &mut NoExtensions).expect("run")
}

/// Pods of `workload` per node (running, not terminating).
fn per_node(step: &StepReport, workload: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in &step.pods {
        if p.workload == workload && !p.terminating {
            if let Some(n) = &p.node {
                *m.entry(n.clone()).or_default() += 1;
            }
        }
    }
    m
}

fn shape(step: &StepReport, workload: &str) -> Vec<usize> {
    let mut v: Vec<usize> = per_node(step, workload).into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn debug(run: &Run) -> String {
    let mut s = String::new();
    for step in std::iter::once(&run.initial).chain(&run.steps) {
        s.push_str(&format!(
            "== {} {} t={}\n",
            step.index, step.step, step.time
        ));
        for c in &step.changes {
            s.push_str(&format!("   {c}\n"));
        }
        for p in &step.pods {
            s.push_str(&format!(
                "   {} {:?} ready={} term={}\n",
                p.pod, p.node, p.ready, p.terminating
            ));
        }
        for f in &step.findings {
            s.push_str(&format!("   ! {} {}\n", f.kind, f.message));
        }
    }
    s
}

const DEMO: &str = "Deployment/default/demo-app";

#[test]
fn drift_replays_story_2() {
    let r = replay("drift.yaml");
    let d = debug(&r);
    println!("{d}");
    let s = &r.steps;
    assert_eq!(shape(&s[0], DEMO), vec![1, 1, 1], "one per node\n{d}");
    assert_eq!(shape(&s[1], DEMO), vec![2, 2, 1], "after the scale\n{d}");
    let after_drains = per_node(&s[3], DEMO);
    assert_eq!(
        after_drains,
        BTreeMap::from([("worker1".to_string(), 5)]),
        "{d}"
    );
    assert_eq!(
        per_node(&s[4], DEMO),
        after_drains,
        "uncordon moves nothing\n{d}"
    );
    let ha: Vec<bool> = s
        .iter()
        .map(|st| st.findings.iter().any(|f| f.kind == FindingKind::HALost))
        .collect();
    assert_eq!(ha, [false, false, false, true, true, true], "{d}");
    assert_eq!(r.failed_expectations(), 1, "{d}");
}

#[test]
fn rollout_stalls_at_the_deadline_and_the_fix_completes() {
    let r = replay("rollout.yaml");
    let d = debug(&r);
    println!("{d}");
    let step = &r.steps[1];
    let stuck: Vec<_> = step
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::RolloutStuck)
        .collect();
    assert_eq!(stuck.len(), 1, "{d}");
    assert_eq!(step.time, 600, "{d}");
    let pending: Vec<_> = step.pending().collect();
    assert_eq!(pending.len(), 1, "{d}");
    let f = stuck[0];
    assert!(
        f.fix
            .as_deref()
            .unwrap_or("")
            .starts_with("maxUnavailable: 50%"),
        "{f:?}"
    );
    assert!(
        f.rule.as_deref().unwrap_or("").contains("InterPodAffinity"),
        "{f:?}"
    );

    let fixed = replay("rollout-fixed.yaml");
    let d = debug(&fixed);
    println!("{d}");
    assert_eq!(fixed.failed_expectations(), 0, "{d}");
    assert!(fixed.steps.iter().all(|s| s.findings.is_empty()), "{d}");
}

/// The real cluster of `shared/fixtures` (kube-scheduler v1.36.2): the
/// drift steps as kubectl ran them (`drift-steps.txt`), replayed from the
/// snapshot taken before them, with demo-app as the cluster had it
/// (`drift-collapsed.yaml`).
#[test]
fn drift_on_the_recorded_cluster_matches_what_it_did() {
    use podplace_model::load::{load, Source};
    use podplace_sim::scenario::{Apply, Drain, DrainOptions, OneOrMany, Step};

    let fixtures = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/fixtures/snapshots"
    ));
    let collapsed = load(&[Source::Path(fixtures.join("drift-collapsed.yaml"))]).expect("snapshot");
    let mut demo = collapsed
        .deployments
        .iter()
        .find(|d| d.object.metadata.name.as_deref() == Some("demo-app"))
        .expect("demo-app in the snapshot")
        .object
        .clone();
    // As applied: no server-set fields.
    demo.status = None;
    demo.metadata.uid = None;
    demo.metadata.resource_version = None;
    demo.metadata.creation_timestamp = None;
    demo.metadata.managed_fields = None;
    demo.metadata.generation = None;
    let drain = |node: &str| {
        Step::Drain(Drain::Detailed(DrainOptions {
            node: Some(node.to_string()),
            pod_selector: Some("app!=db".to_string()),
            ..Default::default()
        }))
    };
    let scenario = Scenario {
        file: "recorded drift".to_string(),
        base_dir: fixtures.clone(),
        cluster: vec![fixtures.join("cluster.yaml")],
        inline_objects: Vec::new(),
        seed: 0,
        ready_after: Default::default(),
        steps: vec![
            Step::Apply(Apply::Detailed {
                files: OneOrMany::Many(Vec::new()),
                objects: vec![serde_json::to_value(&demo).unwrap()],
            }),
            drain("worker-3"),
            drain("worker-2"),
            Step::Uncordon(OneOrMany::Many(vec!["worker-3".into(), "worker-2".into()])),
        ],
        text: None,
    };
    let r = run(&scenario, &mut NoExtensions).expect("run");
    let d = debug(&r);
    // The world as loaded is stable: nothing rolls out or moves at t=0.
    assert!(r.initial.changes.is_empty(), "{d}");
    let demo = "Deployment/shop/demo-app";
    let counts =
        |i: usize| -> Vec<(String, usize)> { per_node(&r.steps[i], demo).into_iter().collect() };
    let w = |n: &str, c: usize| (n.to_string(), c);
    // drift-steps.txt, "demo-app placement" after each step (the ties of
    // step 1 fall the way the real scheduler broke them with seed 0).
    assert_eq!(
        counts(0),
        vec![w("worker-1", 2), w("worker-2", 2), w("worker-3", 1)],
        "step 1\n{d}"
    );
    assert_eq!(
        counts(1),
        vec![w("worker-1", 3), w("worker-2", 2)],
        "step 2\n{d}"
    );
    assert_eq!(counts(2), vec![w("worker-1", 5)], "step 3\n{d}");
    assert_eq!(counts(3), vec![w("worker-1", 5)], "step 4\n{d}");
    // The evicted web replicas: Pending while cordoned, with the message
    // the real scheduler gave, then back on worker-2 and worker-3.
    let web_pending: Vec<_> = r.steps[1]
        .pending()
        .filter(|p| p.workload == "Deployment/shop/web")
        .collect();
    assert_eq!(web_pending.len(), 1, "{d}");
    assert_eq!(
        web_pending[0].message,
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, \
         2 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: \
         0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is \
         not helpful for scheduling."
    );
    assert_eq!(
        r.steps[2]
            .pending()
            .filter(|p| p.workload == "Deployment/shop/web")
            .count(),
        2,
        "{d}"
    );
    let web = per_node(&r.steps[3], "Deployment/shop/web");
    assert_eq!(
        web.into_iter().collect::<Vec<_>>(),
        vec![w("worker-1", 1), w("worker-2", 1), w("worker-3", 1)],
        "{d}"
    );
    // kubectl's warning, word for word.
    assert!(r.steps[1].changes.contains(&Change::Note {
        text: "ignoring DaemonSet-managed Pods: kube-system/log-agent-lbrb9".to_string()
    }));
    // db (PDB minAvailable 2) and the DaemonSet were never touched.
    for step in &r.steps {
        assert!(
            !step.changes.iter().any(|c| {
                let s = c.to_string();
                !matches!(c, Change::Note { .. })
                    && (s.contains("data/db-") || s.contains("log-agent"))
            }),
            "{d}"
        );
    }
    assert!(
        r.steps[2]
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::HALost),
        "{d}"
    );
}
