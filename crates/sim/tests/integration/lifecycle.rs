//! Controllers and node lifecycle through scenarios written inline:
//! StatefulSet ordering and updates, node failure and recovery, drains
//! through PodDisruptionBudgets, DaemonSets following nodes, readiness.

use std::path::Path;

use podplace_sim::findings::FindingKind;
use podplace_sim::report::{Change, StepReport};
use podplace_sim::{run, NoExtensions, Run, Scenario};

const NODES: &str = r#"
nodes:
  - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: a}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n3, labels: {kubernetes.io/hostname: n3, topology.kubernetes.io/zone: b}}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
"#;

fn replay(text: &str) -> Run {
    let s = Scenario::from_str("inline.yaml", text, Path::new(".")).expect("scenario");
    run(&s, &mut NoExtensions).unwrap_or_else(|e| panic!("{e}"))
}

fn lines(step: &StepReport) -> Vec<String> {
    step.changes.iter().map(ToString::to_string).collect()
}

fn running(step: &StepReport, prefix: &str) -> Vec<(String, String)> {
    step.pods
        .iter()
        .filter(|p| p.pod.starts_with(prefix) && !p.terminating)
        .filter_map(|p| p.node.clone().map(|n| (p.pod.clone(), n)))
        .collect()
}

const STS: &str = r#"
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: StatefulSet
          metadata: {name: db}
          spec:
            replicas: 3
            serviceName: db
            selector: {matchLabels: {app: db}}
            template:
              metadata: {labels: {app: db}}
              spec: {containers: [{name: db, image: "postgres:16"}]}
"#;

#[test]
fn ordered_ready_statefulset_creates_in_order_and_updates_in_reverse() {
    let r = replay(&format!(
        "{NODES}readyAfter: {{statefulset/db: 10s}}\nsteps:{STS}  - rollout: {{workload: statefulset/db, set: {{image: \"postgres:17\"}}}}\n"
    ));
    let created: Vec<String> = lines(&r.steps[0])
        .into_iter()
        .filter(|l| l.starts_with("created"))
        .collect();
    assert_eq!(
        created,
        [
            "created default/db-0",
            "created default/db-1",
            "created default/db-2"
        ]
    );
    // One at a time, each after the previous is Ready: 3 × 10 s.
    assert_eq!(r.steps[0].time, 30);
    let deleted: Vec<String> = lines(&r.steps[1])
        .into_iter()
        .filter(|l| l.starts_with("deleted"))
        .collect();
    assert_eq!(
        deleted,
        [
            "deleted default/db-2 (updated (rolling update))",
            "deleted default/db-1 (updated (rolling update))",
            "deleted default/db-0 (updated (rolling update))",
        ]
    );
    assert!(lines(&r.steps[1]).contains(&"rollout of StatefulSet/default/db complete".to_string()));
    // Each replacement waits for the old pod's 30 s grace period and 10 s readiness.
    assert_eq!(r.steps[1].time, 30 + 3 * 40);
}

#[test]
fn parallel_statefulset_with_partition_updates_only_high_ordinals() {
    let sts = STS.replace("serviceName: db", "serviceName: db\n            podManagementPolicy: Parallel\n            updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}");
    let r = replay(&format!(
        "{NODES}readyAfter: {{statefulset/db: 10s}}\nsteps:{sts}  - rollout: {{workload: statefulset/db, set: {{image: \"postgres:17\"}}}}\n"
    ));
    assert_eq!(r.steps[0].time, 10, "all three at once");
    let deleted: Vec<String> = lines(&r.steps[1])
        .into_iter()
        .filter(|l| l.starts_with("deleted"))
        .collect();
    assert_eq!(deleted, ["deleted default/db-2 (updated (rolling update))"]);
}

const WEB: &str = r#"
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: Deployment
          metadata: {name: web}
          spec:
            replicas: 3
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec: {containers: [{name: web, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]}
        - apiVersion: policy/v1
          kind: PodDisruptionBudget
          metadata: {name: web}
          spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
        - apiVersion: apps/v1
          kind: DaemonSet
          metadata: {name: agent}
          spec:
            selector: {matchLabels: {app: agent}}
            template:
              metadata: {labels: {app: agent}}
              spec: {containers: [{name: agent, image: "agent:1"}]}
"#;

#[test]
fn failed_node_pods_are_evicted_after_toleration_seconds_and_restore_finishes_them() {
    let r = replay(&format!(
        "{NODES}steps:{WEB}  - fail: n1\n  - wait: 4m\n  - wait: 2m\n  - restore: n1\n  - expect: {{pending: 0, ready: {{workload: deployment/web, replicas: 3}}}}\n"
    ));
    let web_on_n1 = running(&r.steps[0], "default/web-")
        .into_iter()
        .filter(|(_, n)| n == "n1")
        .count();
    assert_eq!(web_on_n1, 1);
    // Failing: NotReady, nothing evicted before the default 300 s.
    assert!(lines(&r.steps[1]).contains(&"n1 is NotReady (unreachable)".to_string()));
    assert!(
        !lines(&r.steps[2]).iter().any(|l| l.starts_with("evicted")),
        "{:?}",
        lines(&r.steps[2])
    );
    // At 300 s the web pod is evicted (the DaemonSet pod tolerates the taint),
    // replaced elsewhere, and stays terminating on the unreachable node.
    let evicted: Vec<String> = lines(&r.steps[3])
        .into_iter()
        .filter(|l| l.starts_with("evicted"))
        .collect();
    assert_eq!(evicted.len(), 1, "{evicted:?}");
    assert!(evicted[0].contains("tolerationSeconds"), "{evicted:?}");
    assert!(running(&r.steps[3], "default/web-")
        .iter()
        .all(|(_, n)| n != "n1"));
    assert!(r.steps[3]
        .pods
        .iter()
        .any(|p| p.terminating && p.node.as_deref() == Some("n1")));
    // Restore: the terminating pod is finally gone; the agent is Ready again.
    assert!(lines(&r.steps[4]).iter().any(|l| l.ends_with("is gone")));
    assert!(r.steps[4].pods.iter().all(|p| !p.terminating && p.ready));
    assert_eq!(r.failed_expectations(), 0);
}

#[test]
fn drain_goes_through_the_budget_one_pod_at_a_time() {
    // Put all three web pods on n1 by cordoning the others first.
    let r = replay(&format!(
        "{NODES}steps:\n  - cordon: [n2, n3]\n{WEB}  - uncordon: [n2, n3]\n  - drain: n1\n"
    ));
    assert_eq!(running(&r.steps[1], "default/web-").len(), 3);
    let drain = lines(&r.steps[3]);
    let refused = drain
        .iter()
        .filter(|l| l.starts_with("eviction of"))
        .count();
    assert!(refused >= 1, "{drain:?}");
    assert!(
        drain
            .iter()
            .any(|l| l
                .contains("The disruption budget web needs 2 healthy pods and has 2 currently")),
        "{drain:?}"
    );
    assert!(running(&r.steps[3], "default/web-")
        .iter()
        .all(|(_, n)| n != "n1"));
    assert!(!r.steps[3]
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::DrainBlocked));
    // kubectl waits 5 s between attempts: three evictions, each after the
    // previous pod's replacement is Ready (the replacements land at once).
    assert!(r.steps[3].time >= 10, "t={}", r.steps[3].time);
}

#[test]
fn drain_blocked_by_a_budget_is_reported() {
    let zero = WEB.replace("maxUnavailable: 1", "maxUnavailable: 0");
    let r = replay(&format!("{NODES}steps:{zero}  - drain: n1\n"));
    let blocked: Vec<_> = r.steps[1]
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::DrainBlocked)
        .collect();
    assert_eq!(blocked.len(), 1, "{:?}", r.steps[1].findings);
    assert!(blocked[0]
        .message
        .contains("Cannot evict pod as it would violate the pod's disruption budget"));
    // The agent is ignored and the node stays cordoned.
    assert!(r.steps[1]
        .nodes
        .iter()
        .any(|n| n.name == "n1" && n.unschedulable));
    assert!(lines(&r.steps[1])
        .iter()
        .any(|l| l.starts_with("ignoring DaemonSet-managed Pods: default/agent-")));
}

#[test]
fn daemonset_follows_new_nodes_and_ha_checks_zones() {
    let r = replay(&format!(
        "{NODES}steps:{WEB}  - add-node: {{name: n4, from: n3}}\n  - cordon: [n3, n4]\n  - scale: {{workload: deployment/web, replicas: 2}}\n"
    ));
    let agents = |s: &StepReport| running(s, "default/agent-").len();
    assert_eq!(agents(&r.steps[0]), 3);
    assert_eq!(agents(&r.steps[1]), 4, "{:?}", lines(&r.steps[1]));
    assert!(r.steps[1].changes.contains(&Change::NodeAdded {
        node: "n4".to_string()
    }));
    // Scale-down deletes the pods doubled up first; here one per node, so
    // two web pods remain; all in zone a only if n3's was deleted.
    let web: Vec<(String, String)> = running(&r.steps[3], "default/web-");
    assert_eq!(web.len(), 2);
    let zone_lost = r.steps[3]
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::HALost && f.message.contains("zone a"));
    let in_a = web.iter().all(|(_, n)| n == "n1" || n == "n2");
    assert_eq!(zone_lost, in_a);
}

#[test]
fn rollout_of_a_deployment_respects_surge_and_unavailable() {
    // 4 replicas, maxSurge 1, maxUnavailable 0: never more than 5 pods,
    // never fewer than 4 ready.
    let r = replay(&format!(
        "{NODES}readyAfter: {{deployment/web: 5s}}\nsteps:{}  - rollout: {{workload: deployment/web, set: {{image: \"nginx:1.28\"}}}}\n",
        WEB.replace("replicas: 3", "replicas: 4\n            strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}")
    ));
    let scaled: Vec<String> = lines(&r.steps[1])
        .into_iter()
        .filter(|l| l.starts_with("scaled ReplicaSet"))
        .collect();
    // Up by one, down by one, alternately.
    assert_eq!(scaled.len(), 8, "{scaled:?}");
    for pair in scaled.chunks(2) {
        assert!(pair[0].contains(" to ") && pair[1].contains(" to "));
    }
    assert!(lines(&r.steps[1]).contains(&"rollout of Deployment/default/web complete".to_string()));
}

#[test]
fn replacement_pods_are_what_the_controllers_would_create() {
    use podplace_model::inventory::Inventory;
    use podplace_sim::{Options, Simulation};
    let s = Scenario::from_str(
        "inline.yaml",
        &format!("{NODES}steps:{WEB}"),
        Path::new("."),
    )
    .unwrap();
    let inv: Inventory = podplace_sim::runner::load_world(&s).unwrap();
    let mut sim = Simulation::new(&inv, Options::default()).unwrap();
    sim.settle().unwrap();
    sim.run_step(1, &s.steps[0], &s, &mut NoExtensions).unwrap();
    let web = sim
        .pod_ids()
        .find(|&id| sim.pod_name(id).starts_with("default/web-"))
        .unwrap();
    let agent = sim
        .pod_ids()
        .find(|&id| sim.pod_name(id).starts_with("default/agent-"))
        .unwrap();
    let r = sim
        .replacement_pod(web)
        .expect("a ReplicaSet pod is replaced");
    assert_eq!(&*r.name, "<replacement>");
    assert!(r.node_name.is_none());
    assert_eq!(r.labels, sim.state().pod(web).labels);
    let d = sim
        .replacement_pod(agent)
        .expect("a DaemonSet pod is replaced");
    assert_eq!(d.name, sim.state().pod(agent).name);
    // Evicting goes through the budget: one at a time.
    assert!(sim.evict(web).is_ok());
    let other = sim
        .pod_ids()
        .find(|&id| id != web && sim.pod_name(id).starts_with("default/web-"))
        .unwrap();
    let refused = sim.evict(other).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("needs 2 healthy pods and has 2 currently"),
        "{refused}"
    );
}

#[test]
fn absurd_replica_counts_are_refused_not_allocated() {
    let s = Scenario::from_str(
        "inline.yaml",
        &format!(
            "{NODES}steps:{WEB}  - scale: {{workload: deployment/web, replicas: 2000000000}}\n"
        ),
        Path::new("."),
    )
    .unwrap();
    let e = run(&s, &mut NoExtensions).unwrap_err().to_string();
    assert!(
        e.contains("the simulation holds at most 1000000 pods"),
        "{e}"
    );
}

#[test]
fn applying_an_existing_node_takes_its_taints_and_allocatable() {
    let r = replay(&format!(
        r#"{NODES}steps:
  - apply:
      objects:
        - {{apiVersion: v1, kind: Node, metadata: {{name: n1, labels: {{kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}}}, spec: {{taints: [{{key: dedicated, value: infra, effect: NoSchedule}}]}}, status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}}}
        - {{apiVersion: v1, kind: Node, metadata: {{name: n2, labels: {{kubernetes.io/hostname: n2, topology.kubernetes.io/zone: a}}}}, status: {{allocatable: {{cpu: "1", memory: 8Gi, pods: "110"}}}}}}
  - apply:
      objects:
        - apiVersion: apps/v1
          kind: Deployment
          metadata: {{name: web}}
          spec:
            replicas: 2
            selector: {{matchLabels: {{app: web}}}}
            template:
              metadata: {{labels: {{app: web}}}}
              spec: {{containers: [{{name: web, image: nginx, resources: {{requests: {{cpu: "2"}}}}}}]}}
"#
    ));
    let web = running(&r.steps[1], "default/web-");
    assert_eq!(web.len(), 2, "{web:?}");
    assert!(web.iter().all(|(_, n)| n == "n3"), "{web:?}");
}
