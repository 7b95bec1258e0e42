//! `why` under a `--scheduler-config` whose profile disables a Filter
//! plugin: kube-scheduler never asks a disabled plugin, so `why` must not
//! list its reasons (here: a taint the profile ignores), while `place`
//! uses the node the taint would otherwise close.

use serde_json::Value;

use crate::support::{podplace_in, Scratch};

/// The tainted node is the only one big enough for `web`; `big` fits
/// nowhere (its only honest reason on `n-taint` is cpu).
const WORLD: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n-taint
  labels: {kubernetes.io/hostname: n-taint}
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: n-small
  labels: {kubernetes.io/hostname: n-small}
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
metadata: {name: big, namespace: shop}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "8", memory: 1Gi}}
"#;

/// The default profile, except that TaintToleration does not filter.
const NO_TAINTS: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      disabled:
      - name: TaintToleration
"#;

fn scratch() -> Scratch {
    let dir = Scratch::new("profile-filters");
    std::fs::write(dir.join("world.yaml"), WORLD).unwrap();
    std::fs::write(dir.join("no-taints.yaml"), NO_TAINTS).unwrap();
    dir
}

/// The plugins `why -o json` blames on `node` for `pod`, and its exit code.
fn blamed(dir: &Scratch, pod: &str, config: &[&str], node: &str) -> (Vec<String>, i32) {
    let mut args = vec!["why", "-f", "world.yaml", pod, "-o", "json"];
    args.extend_from_slice(config);
    let (out, err, code) = podplace_in(&dir.0, &args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let plugins = v["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["node"] == node)
        .flat_map(|n| n["reasons"].as_array().unwrap().iter())
        .map(|r| r["plugin"].as_str().unwrap().to_string())
        .collect();
    (plugins, code)
}

/// One row: pod, extra arguments, exit code, the plugins that must blame
/// n-taint, the ones that must not.
type Row<'a> = (&'a str, &'a [&'a str], i32, &'a [&'a str], &'a [&'a str]);

#[test]
fn why_follows_the_profiles_enabled_filters() {
    let dir = scratch();
    let config = ["--scheduler-config", "no-taints.yaml"];
    let table: [Row<'_>; 3] = [
        ("shop/web", &[], 1, &["TaintToleration"], &[]),
        (
            "shop/big",
            &[],
            1,
            &["TaintToleration", "NodeResourcesFit"],
            &[],
        ),
        (
            "shop/big",
            &config,
            1,
            &["NodeResourcesFit"],
            &["TaintToleration"],
        ),
    ];
    for (pod, cfg, code, present, absent) in table {
        let (plugins, got) = blamed(&dir, pod, cfg, "n-taint");
        assert_eq!(got, code, "{pod} {cfg:?}: {plugins:?}");
        for p in present {
            assert!(plugins.iter().any(|x| x == p), "{pod} {cfg:?}: {plugins:?}");
        }
        for p in absent {
            assert!(
                !plugins.iter().any(|x| x == p),
                "{pod} {cfg:?}: {plugins:?}"
            );
        }
    }

    // With taints ignored, web is placed on the tainted node, and why does
    // not say the taint would reject it there.
    // (Text, not JSON: `place -o json` is about to list only pending pods.)
    let (out, err, code) =
        podplace_in(&dir.0, &["place", "-f", "world.yaml", config[0], config[1]]);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().eq(["shop/web", "n-taint"])),
        "{out}{err}"
    );
    assert_eq!(code, 1, "big stays Pending: {out}{err}");
    let (plugins, _) = blamed(&dir, "shop/web", &config, "n-taint");
    assert!(plugins.is_empty(), "{plugins:?}");
}
