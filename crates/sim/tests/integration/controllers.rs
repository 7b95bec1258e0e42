//! The controllers as kube-controller-manager runs them (issue 15 §2):
//! DaemonSet rolling updates within maxUnavailable / maxSurge, StatefulSet
//! partitions, OnDelete and maxUnavailable, `kubectl set image` and
//! `rollout restart` semantics, and steps that change nothing saying so.

use std::path::Path;

use podplace_sim::findings::FindingKind;
use podplace_sim::report::{Change, StepReport};
use podplace_sim::{run, NoExtensions, Run, Scenario, SimError};

const NODES: &str = r#"
nodes:
  - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
"#;

fn try_replay(text: &str) -> Result<Run, SimError> {
    let s = Scenario::from_str("inline.yaml", text, Path::new(".")).expect("scenario");
    run(&s, &mut NoExtensions)
}

fn replay(text: &str) -> Run {
    try_replay(text).unwrap_or_else(|e| panic!("{e}"))
}

fn lines(step: &StepReport) -> Vec<String> {
    step.changes.iter().map(ToString::to_string).collect()
}

fn stuck(step: &StepReport) -> bool {
    step.findings
        .iter()
        .any(|f| f.kind == FindingKind::RolloutStuck)
}

fn daemon_set(strategy: &str) -> String {
    format!(
        r#"
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: DaemonSet
          metadata: {{name: agent}}
          spec:
            selector: {{matchLabels: {{app: agent}}}}
            updateStrategy: {strategy}
            template:
              metadata: {{labels: {{app: agent}}}}
              spec: {{terminationGracePeriodSeconds: 1, containers: [{{name: agent, image: "agent:1"}}]}}
  - rollout: {{workload: daemonset/agent, set: {{image: "agent:2"}}}}
"#
    )
}

/// Per node, the order of deletions and creations of agent pods in `step`
/// (`-` deleted, `+` bound there).
fn per_node(step: &StepReport) -> Vec<String> {
    let mut out = Vec::new();
    let mut node_of = std::collections::BTreeMap::new();
    for c in &step.changes {
        match c {
            Change::Bound { pod, node } => {
                node_of.insert(pod.clone(), node.clone());
                out.push(format!("+{node}"));
            }
            Change::Deleted { pod, .. } => out.push(format!(
                "-{}",
                node_of.get(pod).cloned().unwrap_or_else(|| pod.clone())
            )),
            _ => {}
        }
    }
    out
}

#[test]
fn daemon_set_max_unavailable_waits_for_the_replacement_to_be_available() {
    let r = replay(&format!(
        "{NODES}readyAfter: {{daemonset/agent: 5m}}\nsteps:{}",
        daemon_set("{type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}")
    ));
    let update = &r.steps[1];
    // The second node's old pod goes only once the first node's new pod is
    // available: 2 × (1 s grace + 5 m readiness), never both nodes without
    // an agent.
    assert_eq!(update.time - r.steps[0].time, 602, "{:#?}", lines(update));
    let deleted: Vec<usize> = update
        .changes
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, Change::Deleted { .. }))
        .map(|(i, _)| i)
        .collect();
    let first_bound = update
        .changes
        .iter()
        .position(|c| matches!(c, Change::Bound { .. }))
        .expect("a new pod");
    assert_eq!(deleted.len(), 2);
    assert!(
        deleted[0] < first_bound && first_bound < deleted[1],
        "{:#?}",
        lines(update)
    );
    assert!(lines(update)
        .iter()
        .any(|l| l == "rollout of DaemonSet/default/agent complete"));
    assert!(!stuck(update));
}

#[test]
fn daemon_set_max_surge_starts_the_new_pod_beside_the_old_one() {
    let r = replay(&format!(
        "{NODES}readyAfter: {{daemonset/agent: 5m}}\nsteps:{}",
        daemon_set("{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}")
    ));
    let update = &r.steps[1];
    // New pod first, old one deleted once the new one is available, one
    // node at a time: 2 × 5 m, and the last old pod's 1 s grace period.
    assert_eq!(update.time - r.steps[0].time, 601, "{:#?}", lines(update));
    let order = per_node(update);
    assert_eq!(
        order.iter().map(|s| &s[..1]).collect::<String>(),
        "+-+-",
        "{order:?}"
    );
    assert!(!stuck(update));
}

#[test]
fn daemon_set_on_delete_waits_for_deletes_and_says_so() {
    let r = replay(&format!("{NODES}steps:{}", daemon_set("{type: OnDelete}")));
    let update = &r.steps[1];
    assert!(!stuck(update), "{:#?}", update.findings);
    let l = lines(update);
    assert!(
        l.iter().any(|l| l.contains("updateStrategy OnDelete")
            && l.contains("2 pod(s) still run the old revision")),
        "{l:#?}"
    );
    assert!(!l.iter().any(|l| l.starts_with("deleted")), "{l:#?}");
}

const STS_HEAD: &str = r#"
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: StatefulSet
          metadata: {name: db}
          spec:
            replicas: 3
            serviceName: db
"#;

fn sts(extra: &str, then: &str) -> String {
    format!(
        "{NODES}readyAfter: {{statefulset/db: 10s}}\nsteps:{STS_HEAD}{extra}            selector: {{matchLabels: {{app: db}}}}
            template:
              metadata: {{labels: {{app: db}}}}
              spec: {{terminationGracePeriodSeconds: 1, containers: [{{name: db, image: \"db:1\"}}]}}
{then}"
    )
}

#[test]
fn statefulset_rollout_reaching_its_partition_is_complete_not_stuck() {
    let r = replay(&sts(
        "            updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}\n",
        "  - rollout: {workload: statefulset/db, set: {image: \"db:2\"}}\n",
    ));
    let update = &r.steps[1];
    assert!(!stuck(update), "{:#?}", update.findings);
    let l = lines(update);
    assert!(
        l.iter()
            .any(|l| l.contains("partitioned roll out complete: 1 new pod(s)")),
        "{l:#?}"
    );
    assert_eq!(
        l.iter()
            .filter(|l| l.starts_with("deleted"))
            .collect::<Vec<_>>(),
        ["deleted default/db-2 (updated (rolling update))"]
    );
}

#[test]
fn statefulset_on_delete_waits_for_deletes_and_says_so() {
    let r = replay(&sts(
        "            updateStrategy: {type: OnDelete}\n",
        "  - rollout: {workload: statefulset/db, set: {image: \"db:2\"}}\n  - delete: default/db-1\n",
    ));
    let update = &r.steps[1];
    assert!(!stuck(update), "{:#?}", update.findings);
    let l = lines(update);
    assert!(
        l.iter().any(|l| l.contains("updateStrategy OnDelete")
            && l.contains("3 pod(s) still run the old revision")),
        "{l:#?}"
    );
    // The deleted pod comes back on the new revision.
    let after = lines(&r.steps[2]);
    assert!(
        after.iter().any(|l| l == "created default/db-1"),
        "{after:#?}"
    );
}

#[test]
fn statefulset_rollout_is_complete_only_once_the_last_pod_is_ready() {
    let r = replay(&sts(
        "",
        "  - rollout: {workload: statefulset/db, set: {image: \"db:2\"}}\n",
    ));
    let l = lines(&r.steps[1]);
    let bound_last = l
        .iter()
        .position(|x| x.starts_with("bound default/db-0"))
        .expect("db-0 replaced");
    let complete = l
        .iter()
        .position(|x| x == "rollout of StatefulSet/default/db complete")
        .expect("complete");
    assert!(bound_last < complete, "{l:#?}");
    // 3 × (1 s grace + 10 s readiness).
    assert_eq!(r.steps[1].time - r.steps[0].time, 33);
}

#[test]
fn statefulset_max_unavailable_is_ignored_as_v1_36_ships_it() {
    // MaxUnavailableStatefulSet is beta but off by default in v1.36 (the
    // live suite's StatefulSet tests show one pod at a time): as without it.
    for policy in ["OrderedReady", "Parallel"] {
        let r = replay(&sts(
            &format!("            podManagementPolicy: {policy}\n            updateStrategy: {{type: RollingUpdate, rollingUpdate: {{maxUnavailable: 2}}}}\n"),
            "  - rollout: {workload: statefulset/db, set: {image: \"db:2\"}}\n",
        ));
        let l = lines(&r.steps[1]);
        let deleted: Vec<&String> = l.iter().filter(|x| x.starts_with("deleted")).collect();
        assert_eq!(
            deleted,
            [
                "deleted default/db-2 (updated (rolling update))",
                "deleted default/db-1 (updated (rolling update))",
                "deleted default/db-0 (updated (rolling update))",
            ],
            "{policy}"
        );
        assert!(
            l.iter().any(|x| x.contains(
                "maxUnavailable 2 is ignored: the MaxUnavailableStatefulSet feature gate is off"
            )),
            "{policy}: {l:#?}"
        );
        // One at a time: 3 × (1 s grace + 10 s readiness).
        assert_eq!(r.steps[1].time - r.steps[0].time, 33, "{policy}: {l:#?}");
    }
}

const TWO_CONTAINERS: &str = r#"
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: Deployment
          metadata: {name: web}
          spec:
            replicas: 1
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                initContainers: [{name: init, image: "init:1"}]
                containers: [{name: app, image: "app:1"}, {name: proxy, image: "proxy:1"}]
"#;

#[test]
fn set_image_names_a_container_as_kubectl_does() {
    let err = try_replay(&format!(
        "{NODES}steps:{TWO_CONTAINERS}  - rollout: {{workload: deployment/web, set: {{image: \"app:2\"}}}}\n"
    ))
    .expect_err("ambiguous");
    let msg = err.to_string();
    assert!(
        msg.contains("the pod has 2 containers (app, proxy, init (init))"),
        "{msg}"
    );
    let err = try_replay(&format!(
        "{NODES}steps:{TWO_CONTAINERS}  - rollout: {{workload: deployment/web, set: {{images: {{nope: \"x:1\"}}}}}}\n"
    ))
    .expect_err("unknown");
    assert!(
        err.to_string()
            .contains("unable to find container named \"nope\""),
        "{err}"
    );
    for set in [
        "{images: {app: \"app:2\"}}",
        "{images: {\"*\": \"all:2\"}}",
        "{images: {init: \"init:2\"}}",
    ] {
        let r = replay(&format!(
            "{NODES}steps:{TWO_CONTAINERS}  - rollout: {{workload: deployment/web, set: {set}}}\n"
        ));
        let l = lines(&r.steps[1]);
        assert!(
            l.iter()
                .any(|x| x == "rollout of Deployment/default/web complete"),
            "{set}: {l:#?}"
        );
    }
    let r = replay(&format!(
        "{NODES}steps:{TWO_CONTAINERS}  - rollout: {{workload: deployment/web, set: {{images: {{app: \"app:1\"}}}}}}\n"
    ));
    let l = lines(&r.steps[1]);
    assert!(
        l.iter()
            .any(|x| x.contains("already runs these images: nothing changes")),
        "{l:#?}"
    );
}

#[test]
fn rollout_without_set_restarts_like_kubectl_rollout_restart() {
    let r = replay(&format!(
        "{NODES}steps:{TWO_CONTAINERS}  - rollout: {{workload: deployment/web}}\n"
    ));
    let l = lines(&r.steps[1]);
    assert!(
        l.iter()
            .any(|x| x == "rollout of Deployment/default/web started"),
        "{l:#?}"
    );
    assert!(
        l.iter().any(|x| x.starts_with("deleted default/web-")),
        "{l:#?}"
    );
    assert!(
        l.iter()
            .any(|x| x == "rollout of Deployment/default/web complete"),
        "{l:#?}"
    );
}

#[test]
fn steps_that_change_nothing_say_so() {
    let r = replay(&format!(
        "{NODES}steps:{TWO_CONTAINERS}  - scale: {{workload: deployment/web, replicas: 1}}\n  - cordon: n2\n  - drain: n2\n  - uncordon: n1\n  - cordon: n2\n"
    ));
    let said = |i: usize| lines(&r.steps[i]).join("\n");
    assert!(
        said(1).contains("already has 1 replica(s): nothing to scale"),
        "{}",
        said(1)
    );
    assert!(
        said(3).contains("node n2 was already cordoned"),
        "{}",
        said(3)
    );
    assert!(
        said(4).contains("node n1 is already schedulable: nothing to uncordon"),
        "{}",
        said(4)
    );
    assert!(
        said(5).contains("node n2 is already cordoned"),
        "{}",
        said(5)
    );
}
