//! Volumes and scheduling gates in time: StatefulSet claims made from
//! `volumeClaimTemplates` and kept across pod deletions, WaitForFirstConsumer
//! provisioning pinning each replica where it first landed, node loss and
//! drains keeping replicas within their volume's reach, and the `ungate`
//! step.

use std::path::Path;

use podplace_sim::findings::FindingKind;
use podplace_sim::report::StepReport;
use podplace_sim::{run, NoExtensions, Run, Scenario};

fn replay(text: &str) -> Run {
    let s = Scenario::from_str("inline.yaml", text, Path::new(".")).expect("scenario");
    run(&s, &mut NoExtensions).unwrap_or_else(|e| panic!("{e}"))
}

fn replay_file(path: &str) -> Run {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s = Scenario::from_file(&root.join(path)).expect("scenario");
    run(&s, &mut NoExtensions).unwrap_or_else(|e| panic!("{e}"))
}

fn lines(step: &StepReport) -> Vec<String> {
    step.changes.iter().map(ToString::to_string).collect()
}

fn node_of(step: &StepReport, pod: &str) -> Option<String> {
    step.pods
        .iter()
        .find(|p| p.pod == pod && !p.terminating)
        .and_then(|p| p.node.clone())
}

fn node(name: &str, zone: &str, cpu: &str) -> String {
    format!(
        "  - {{apiVersion: v1, kind: Node, metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: {zone}}}}}, status: {{allocatable: {{cpu: \"{cpu}\", memory: 16Gi, pods: \"110\"}}}}}}\n"
    )
}

fn csi_node(name: &str) -> String {
    format!(
        "  - {{apiVersion: storage.k8s.io/v1, kind: CSINode, metadata: {{name: {name}}}, spec: {{drivers: [{{name: ebs.csi.aws.com, nodeID: {name}, topologyKeys: [topology.kubernetes.io/zone]}}]}}}}\n"
    )
}

/// A StatefulSet `db` of `replicas` with one claim template of `class`.
fn sts(replicas: u32, class: &str) -> String {
    format!(
        r#"  - apply:
      objects:
        - apiVersion: apps/v1
          kind: StatefulSet
          metadata: {{name: db}}
          spec:
            replicas: {replicas}
            serviceName: db
            selector: {{matchLabels: {{app: db}}}}
            template:
              metadata: {{labels: {{app: db}}}}
              spec:
                containers: [{{name: db, image: "postgres:16", resources: {{requests: {{cpu: "1"}}}}}}]
            volumeClaimTemplates:
              - metadata: {{name: data}}
                spec: {{storageClassName: {class}, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
"#
    )
}

const ZONAL_CLASS: &str = "  - {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: zonal}, provisioner: ebs.csi.aws.com, volumeBindingMode: WaitForFirstConsumer}\n";

/// Zone a lost: its replica, force-deleted as the StatefulSet docs say,
/// comes back with the same claim, whose volume was provisioned in zone a:
/// it stays Pending, and the finding names the claim, the volume and its
/// reach. The other replicas keep running.
#[test]
fn zonal_statefulset_replica_stays_pending_after_its_zone_is_lost() {
    let r = replay_file("examples/simulate/zone-loss.yaml");
    let created = &r.steps[0];
    let l = lines(created);
    for i in 0..3 {
        assert!(
            l.iter().any(|x| x
                == &format!("created claim default/data-db-{i} (class zonal) from StatefulSet/default/db's volumeClaimTemplate data")),
            "{l:#?}"
        );
    }
    let first = node_of(created, "default/db-0").expect("db-0 placed");
    assert!(
        first.starts_with('a'),
        "db-0 on the larger zone-a nodes: {first}"
    );
    assert!(
        l.iter().any(|x| x
            == &format!("claim default/data-db-0: volume provisioned for {first}, reaching topology.kubernetes.io/zone=a")),
        "{l:#?}"
    );
    // Evicted from the lost zone, it stays Terminating: no replacement.
    let l = lines(&r.steps[2]);
    assert!(
        l.contains(&"default/db-0 stays Terminating on a1 (NotReady): StatefulSet/default/db creates no replacement until the kubelet confirms it (restore a1) or it is force-deleted".to_string()),
        "{l:#?}"
    );
    // The force-deleted replica is back, Pending, with the same claim.
    let last = r.steps.last().expect("steps");
    let after = &r.steps[3];
    let l = lines(after);
    assert!(
        l.contains(&"deleted default/db-0 (force-deleted)".to_string()),
        "{l:#?}"
    );
    assert!(l.contains(&"created default/db-0".to_string()), "{l:#?}");
    assert!(
        !l.iter().any(|x| x.starts_with("created claim")),
        "the claim is kept, not created again: {l:#?}"
    );
    let pending: Vec<_> = after.pending().map(|p| p.pod.clone()).collect();
    assert_eq!(pending, ["default/db-0"]);
    let f = after
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::VolumeUnreachable)
        .expect("VolumeUnreachable finding");
    assert_eq!(
        f.message,
        format!("default/db-0 (StatefulSet/default/db) is Pending: its claim default/data-db-0 is bound to the volume provisioned for node {first}, which reaches only topology.kubernetes.io/zone=a; no Ready, schedulable node is there (the nodes there: a1 (NotReady), a2 (NotReady))")
    );
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("delete claim default/data-db-0"));
    // Kubernetes's own message: the volume's zone is not the nodes'.
    let msg = &after.pending().next().unwrap().message;
    assert!(
        msg.contains("4 node(s) didn't match PersistentVolume's node affinity"),
        "{msg}"
    );
    for p in ["default/db-1", "default/db-2"] {
        assert!(
            node_of(after, p).is_some_and(|n| !n.starts_with('a')),
            "{p}"
        );
    }
    assert_eq!(
        last.findings
            .iter()
            .filter(|f| f.kind == FindingKind::ExpectFailed)
            .count(),
        0
    );
}

/// A local PersistentVolume pins its replica to one node: draining that
/// node evicts the replica and the new pod stays Pending, as on a real
/// cluster (the volume's node is cordoned).
#[test]
fn local_volume_replica_stays_pending_after_its_node_is_drained() {
    let mut text = String::from("nodes:\n");
    for (n, z) in [("n1", "a"), ("n2", "a"), ("n3", "b")] {
        text.push_str(&node(n, z, "4"));
    }
    text.push_str("objects:\n  - {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: local}, provisioner: kubernetes.io/no-provisioner, volumeBindingMode: WaitForFirstConsumer}\n");
    for n in ["n1", "n2", "n3"] {
        text.push_str(&format!(
            "  - {{apiVersion: v1, kind: PersistentVolume, metadata: {{name: pv-{n}}}, spec: {{storageClassName: local, capacity: {{storage: 10Gi}}, accessModes: [ReadWriteOnce], local: {{path: /mnt/disk}}, nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{n}]}}]}}]}}}}}}}}\n"
        ));
    }
    text.push_str("steps:\n");
    text.push_str(&sts(1, "local"));
    // Drain wherever db-0 went: every node, one step each, stops at the first.
    let r = replay(&format!("{text}  - expect: {{pending: 0}}\n"));
    let first = node_of(&r.steps[0], "default/db-0").expect("placed");
    let l = lines(&r.steps[0]);
    assert!(
        l.contains(&format!("claim default/data-db-0 bound to PersistentVolume pv-{first}, which reaches kubernetes.io/hostname={first}")),
        "{l:#?}"
    );
    let r = replay(&format!("{text}  - drain: {first}\n"));
    let drained = &r.steps[1];
    let pending: Vec<_> = drained.pending().map(|p| p.pod.clone()).collect();
    assert_eq!(pending, ["default/db-0"], "{:#?}", lines(drained));
    let f = drained
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::VolumeUnreachable)
        .expect("finding");
    assert!(
        f.message.contains(&format!("its claim default/data-db-0 is bound to PersistentVolume pv-{first}, which reaches only kubernetes.io/hostname={first}; no Ready, schedulable node is there (the nodes there: {first} (cordoned))")),
        "{}",
        f.message
    );
}

/// Draining the node of a zonal replica moves it within its zone, even
/// when a node of another zone scores better.
#[test]
fn drained_zonal_replica_moves_within_its_zone() {
    let mut text = String::from("nodes:\n");
    // a1 is the largest (db-0 lands there), b1 is larger than a2.
    for (n, z, cpu) in [("a1", "a", "16"), ("a2", "a", "2"), ("b1", "b", "8")] {
        text.push_str(&node(n, z, cpu));
    }
    text.push_str("objects:\n");
    text.push_str(ZONAL_CLASS);
    for n in ["a1", "a2", "b1"] {
        text.push_str(&csi_node(n));
    }
    text.push_str("steps:\n");
    text.push_str(&sts(1, "zonal"));
    text.push_str("  - drain: a1\n");
    let r = replay(&text);
    assert_eq!(node_of(&r.steps[0], "default/db-0").as_deref(), Some("a1"));
    assert_eq!(
        node_of(&r.steps[1], "default/db-0").as_deref(),
        Some("a2"),
        "{:#?}",
        lines(&r.steps[1])
    );
    assert!(r.steps[1].findings.is_empty(), "{:#?}", r.steps[1].findings);
    // Without the volume the replacement goes to the better-scored b1.
    let plain = text.replace(
        "            volumeClaimTemplates:\n              - metadata: {name: data}\n                spec: {storageClassName: zonal, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
        "",
    );
    assert_ne!(plain, text);
    let r = replay(&plain);
    assert_eq!(node_of(&r.steps[1], "default/db-0").as_deref(), Some("b1"));
}

/// A claim template whose class is applied later: the storage is compiled
/// again and the claims already provisioned stay where they are.
#[test]
fn applying_storage_later_keeps_provisioned_claims() {
    let mut text = String::from("nodes:\n");
    for (n, z, cpu) in [("a1", "a", "16"), ("b1", "b", "8")] {
        text.push_str(&node(n, z, cpu));
    }
    text.push_str("objects:\n");
    text.push_str(ZONAL_CLASS);
    for n in ["a1", "b1"] {
        text.push_str(&csi_node(n));
    }
    text.push_str("steps:\n");
    text.push_str(&sts(1, "zonal"));
    text.push_str("  - apply: {objects: [{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: other}, provisioner: x, volumeBindingMode: WaitForFirstConsumer}]}\n");
    text.push_str("  - cordon: a1\n  - delete: default/db-0\n");
    let r = replay(&text);
    let last = r.steps.last().unwrap();
    assert_eq!(
        last.pending().map(|p| p.pod.as_str()).collect::<Vec<_>>(),
        ["default/db-0"]
    );
}

/// Gated pods are never tried: reported as gated, naming the gates, with
/// no FailedScheduling message and no Pending finding; `ungate` removes
/// gates like `kubectl patch`, and once none is left the pod is placed.
#[test]
fn gated_pods_wait_until_ungated() {
    let mut text = String::from("nodes:\n");
    text.push_str(&node("n1", "a", "4"));
    text.push_str(
        r#"objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: batch}, spec: {schedulingGates: [{name: example.com/quota}, {name: example.com/review}], containers: [{name: c, image: x}]}}
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {schedulingGates: [{name: example.com/capacity}], containers: [{name: c, image: x}]}
steps:
  - expect: {pending: 0, gated: 3}
  - ungate: {pod: default/batch, gates: [example.com/quota]}
  - ungate: default/batch
  - ungate: {workload: deployment/web}
  - expect: {pending: 0, gated: 0}
"#,
    );
    let r = replay(&text);
    let gated: Vec<(String, String)> = r
        .initial
        .gated()
        .map(|p| (p.pod.clone(), p.gated.clone().unwrap()))
        .collect();
    assert_eq!(gated.len(), 3);
    assert!(gated.contains(&(
        "default/batch".to_string(),
        "waiting for scheduling gates: [example.com/quota example.com/review]".to_string()
    )));
    assert_eq!(r.initial.pending().count(), 0);
    assert!(r.initial.findings.is_empty(), "{:#?}", r.initial.findings);
    assert!(!lines(&r.initial)
        .iter()
        .any(|l| l.contains("could not be scheduled") || l.contains("Pending")));
    let l = lines(&r.steps[1]);
    assert_eq!(
        l,
        ["removed scheduling gate(s) [example.com/quota] from default/batch; still waiting for scheduling gates: [example.com/review]"]
    );
    let l = lines(&r.steps[2]);
    assert_eq!(
        l,
        [
            "removed scheduling gate(s) [example.com/review] from default/batch: it enters the scheduling queue",
            "bound default/batch to n1"
        ]
    );
    assert_eq!(r.steps[3].gated().count(), 0);
    assert!(
        r.steps.iter().all(|s| s.findings.is_empty()),
        "expectations hold"
    );
}

/// `ungate` of a gate the pod does not have is refused, naming its gates.
#[test]
fn ungate_of_an_unknown_gate_is_refused() {
    let text = format!(
        "nodes:\n{}objects:\n  - {{apiVersion: v1, kind: Pod, metadata: {{name: batch}}, spec: {{schedulingGates: [{{name: a}}], containers: [{{name: c, image: x}}]}}}}\nsteps:\n  - ungate: {{pod: default/batch, gates: [b]}}\n",
        node("n1", "a", "4")
    );
    let s = Scenario::from_str("inline.yaml", &text, Path::new(".")).expect("scenario");
    let e = match run(&s, &mut NoExtensions) {
        Ok(_) => panic!("an unknown gate is refused"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        e,
        "inline.yaml: step 1 (ungate default/batch [b]): ungate: pod default/batch has no scheduling gate \"b\": its gates are [a]"
    );
}

/// Scaled to zero and back, a StatefulSet's replica gets its kept claim
/// again: it returns to its volume's zone, and no claim is created anew.
#[test]
fn scaled_down_and_up_a_replica_returns_to_its_volume() {
    let mut text = String::from("nodes:\n");
    for (n, z, cpu) in [("a1", "a", "16"), ("b1", "b", "8")] {
        text.push_str(&node(n, z, cpu));
    }
    text.push_str("objects:\n");
    text.push_str(ZONAL_CLASS);
    for n in ["a1", "b1"] {
        text.push_str(&csi_node(n));
    }
    text.push_str("steps:\n");
    text.push_str(&sts(1, "zonal"));
    // a1 fills up meanwhile: without the volume, db-0 would go to b1.
    text.push_str(
        "  - scale: {workload: statefulset/db, replicas: 0}\n  - apply: {objects: [{apiVersion: v1, kind: Pod, metadata: {name: big}, spec: {nodeSelector: {kubernetes.io/hostname: a1}, containers: [{name: c, image: x, resources: {requests: {cpu: \"14\"}}}]}}]}\n  - scale: {workload: statefulset/db, replicas: 1}\n",
    );
    let r = replay(&text);
    assert_eq!(node_of(&r.steps[0], "default/db-0").as_deref(), Some("a1"));
    assert!(node_of(&r.steps[1], "default/db-0").is_none());
    let back = &r.steps[3];
    assert_eq!(
        node_of(back, "default/db-0").as_deref(),
        Some("a1"),
        "{:#?}",
        lines(back)
    );
    assert!(
        !lines(back).iter().any(|l| l.contains("claim")),
        "{:#?}",
        lines(back)
    );
}

/// A local volume bound by a bind stays bound when storage objects are
/// applied later: the storage is compiled again and the binding assumed
/// again, so another StatefulSet's claim does not get the same volume.
#[test]
fn applying_storage_later_keeps_bound_volumes_taken() {
    let mut text = String::from("nodes:\n");
    for (n, z) in [("n1", "a"), ("n2", "a")] {
        text.push_str(&node(n, z, "4"));
    }
    text.push_str("objects:\n  - {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: local}, provisioner: kubernetes.io/no-provisioner, volumeBindingMode: WaitForFirstConsumer}\n");
    text.push_str("  - {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-n1}, spec: {storageClassName: local, capacity: {storage: 10Gi}, accessModes: [ReadWriteOnce], local: {path: /mnt/disk}, nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]}]}}}}\nsteps:\n");
    text.push_str(&sts(1, "local"));
    text.push_str("  - apply: {objects: [{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: other}, provisioner: x}]}\n");
    text.push_str(
        &sts(1, "local")
            .replace("name: db}", "name: cache}")
            .replace("app: db", "app: cache")
            .replace("serviceName: db", "serviceName: cache"),
    );
    let r = replay(&text);
    assert_eq!(node_of(&r.steps[0], "default/db-0").as_deref(), Some("n1"));
    let last = r.steps.last().unwrap();
    let pending: Vec<_> = last.pending().collect();
    assert_eq!(pending.len(), 1, "{:#?}", lines(last));
    assert_eq!(pending[0].pod, "default/cache-0");
    assert!(
        pending[0]
            .message
            .contains("didn't find available persistent volumes to bind"),
        "{}",
        pending[0].message
    );
}

/// `persistentVolumeClaimRetentionPolicy.whenScaled: Delete`: the claim
/// goes with the scaled-down pod, so the replica scaled back up gets a new
/// claim, provisioned wherever it lands now.
#[test]
fn claims_deleted_when_scaled_are_made_anew() {
    let mut text = String::from("nodes:\n");
    for (n, z, cpu) in [("a1", "a", "16"), ("b1", "b", "8")] {
        text.push_str(&node(n, z, cpu));
    }
    text.push_str("objects:\n");
    text.push_str(ZONAL_CLASS);
    for n in ["a1", "b1"] {
        text.push_str(&csi_node(n));
    }
    text.push_str("steps:\n");
    text.push_str(&sts(1, "zonal").replace(
        "            serviceName: db\n",
        "            serviceName: db\n            persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}\n",
    ));
    text.push_str(
        "  - scale: {workload: statefulset/db, replicas: 0}\n  - apply: {objects: [{apiVersion: v1, kind: Pod, metadata: {name: big}, spec: {nodeSelector: {kubernetes.io/hostname: a1}, containers: [{name: c, image: x, resources: {requests: {cpu: \"14\"}}}]}}]}\n  - scale: {workload: statefulset/db, replicas: 1}\n",
    );
    let r = replay(&text);
    assert_eq!(node_of(&r.steps[0], "default/db-0").as_deref(), Some("a1"));
    assert!(
        lines(&r.steps[1]).contains(&"deleted claim default/data-db-0 with default/db-0 (persistentVolumeClaimRetentionPolicy whenScaled: Delete)".to_string()),
        "{:#?}",
        lines(&r.steps[1])
    );
    let back = &r.steps[3];
    assert_eq!(
        node_of(back, "default/db-0").as_deref(),
        Some("b1"),
        "{:#?}",
        lines(back)
    );
    assert!(
        lines(back)
            .iter()
            .any(|l| l.starts_with("created claim default/data-db-0")),
        "{:#?}",
        lines(back)
    );
}
