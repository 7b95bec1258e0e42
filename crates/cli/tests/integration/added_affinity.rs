//! A pod Pending because of a scheduler profile's `addedAffinity`
//! (NodeAffinityArgs in `--scheduler-config`): `why` must blame the
//! configuration and the profile that enforces it, in kube-scheduler's
//! words ("didn't match scheduler-enforced node affinity"), never the pod's
//! own nodeSelector or node affinity (the pod may have none), and must not
//! offer a change to the pod's node rules as a way around it.

use serde_json::Value;

use crate::support::{podplace_in, Scratch};

/// Three nodes in zones za, zb and zc; the zc node is too small for the
/// pods. `web` has no node rules; `batch` is served by the second profile.
const WORLD: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n-a
  labels: {topology.kubernetes.io/zone: za, kubernetes.io/hostname: n-a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: n-b
  labels: {topology.kubernetes.io/zone: zb, kubernetes.io/hostname: n-b}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: n-c
  labels: {topology.kubernetes.io/zone: zc, kubernetes.io/hostname: n-c}
status:
  allocatable: {cpu: "1", memory: 8Gi, pods: "110"}
  capacity: {cpu: "1", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "2", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop}
spec:
  schedulerName: zc-only
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "2", memory: 1Gi}}
"#;

/// `web`'s profile keeps pods out of za and zb; `zc-only` keeps them in zc.
const CONFIG: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: NotIn, values: [za, zb]}
- schedulerName: zc-only
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [zc]}
"#;

const ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";

fn scratch() -> Scratch {
    let dir = Scratch::new("added-affinity");
    std::fs::write(dir.join("world.yaml"), WORLD).unwrap();
    std::fs::write(dir.join("cfg.yaml"), CONFIG).unwrap();
    dir
}

fn why(dir: &Scratch, pod: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "why",
        "-f",
        "world.yaml",
        pod,
        "--scheduler-config",
        "cfg.yaml",
    ];
    args.extend_from_slice(extra);
    let (out, err, code) = podplace_in(&dir.0, &args);
    assert_eq!(code, 1, "{pod} is Pending: {out}{err}");
    out
}

#[test]
fn why_blames_the_profile_not_the_pod() {
    let dir = scratch();
    let text = why(&dir, "shop/web", &[]);
    insta::assert_snapshot!("added_affinity_why_text", text);
    assert!(
        !text.contains("Pod's node affinity"),
        "the pod has no node rules: {text}"
    );

    // (pod, its profile, the nodes the profile's addedAffinity excludes).
    let table = [
        ("shop/web", "default-scheduler", vec!["n-a", "n-b"]),
        ("shop/batch", "zc-only", vec!["n-a", "n-b"]),
    ];
    for (pod, profile, excluded) in table {
        let v: Value = serde_json::from_str(&why(&dir, pod, &["-o", "json"])).unwrap();
        assert!(
            v["message"].as_str().unwrap().contains(ENFORCED),
            "{pod}: {v}"
        );
        let mut enforced = Vec::new();
        for node in v["nodes"].as_array().unwrap() {
            for r in node["reasons"].as_array().unwrap() {
                assert_ne!(r["detail"]["kind"], "node_affinity", "{pod}: {r}");
                if r["detail"]["kind"] == "enforced_node_affinity" {
                    assert_eq!(r["reason"], ENFORCED, "{pod}: {r}");
                    assert_eq!(r["detail"]["profile"], profile, "{pod}: {r}");
                    enforced.push(node["node"].as_str().unwrap().to_string());
                }
            }
        }
        assert_eq!(enforced, excluded, "{pod}: {v}");
        // No fix may edit the pod's node rules to get around the profile.
        for fix in v["fixes"].as_array().unwrap() {
            let patch = fix.to_string();
            assert!(
                !patch.contains("nodeSelector") && !patch.contains("nodeAffinity"),
                "{pod}: {fix}"
            );
        }
    }
}

#[test]
fn place_says_scheduler_enforced() {
    let dir = scratch();
    let (out, err, code) = podplace_in(
        &dir.0,
        &[
            "place",
            "-f",
            "world.yaml",
            "--scheduler-config",
            "cfg.yaml",
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    for p in v["placements"].as_array().unwrap() {
        let message = p["message"].as_str().unwrap();
        assert!(message.contains(ENFORCED), "{p}");
        assert!(!message.contains("Pod's node affinity"), "{p}");
    }
}

#[test]
fn pending_summary_names_the_profile_once() {
    let dir = scratch();
    let (out, err, code) = podplace_in(
        &dir.0,
        &["why", "-f", "world.yaml", "--scheduler-config", "cfg.yaml"],
    );
    assert_eq!(code, 1, "{out}{err}");
    insta::assert_snapshot!("added_affinity_pending_summary", out);
    for line in out.lines().filter(|l| l.contains("NodeAffinity")) {
        assert_eq!(line.matches("scheduler-enforced").count(), 1, "{line}");
        assert!(line.contains("addedAffinity"), "{line}");
    }
}
