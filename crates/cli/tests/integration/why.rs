//! `podplace why` on the stories (STORIES.md) names the right culprit and a
//! fix that the engine verified; its text and JSON are pinned by snapshots.
//! The live-cluster path runs against the recorded test API server.

use crate::support::*;

use serde_json::Value;

fn why_json(args: &[&str], want_code: i32) -> Value {
    let mut all = vec!["why"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let (stdout, stderr, code) = podplace(&all);
    assert_eq!(code, want_code, "stderr: {stderr}\nstdout: {stdout}");
    serde_json::from_str(&stdout).expect("valid JSON")
}

fn node<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["node"] == name)
        .unwrap_or_else(|| panic!("node {name} not in {v:#}"))
}

fn blockers(reason: &Value) -> Vec<&Value> {
    reason["blockers"]
        .as_array()
        .expect("blockers")
        .iter()
        .collect()
}

// ---------------------------------------------------------------------------
// Story 1: vault

#[test]
fn vault_names_prometheus_server_0_on_leela_and_narrows_its_selector() {
    let v = why_json(&["vault-2", "-f", "vault"], 1);
    assert_eq!(v["pod"], "stokesnet/vault-2");
    assert_eq!(v["workload"], "StatefulSet/stokesnet/vault");
    assert_eq!(v["phase"], "Pending");
    assert_eq!(
        v["message"],
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) \
         didn't satisfy existing pods anti-affinity rules, 2 node(s) didn't match pod \
         anti-affinity rules. no new claims to deallocate, preemption: 0/4 nodes are available: \
         1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
    );

    // leela: only prometheus-server-0's rule, applied symmetrically.
    let leela = node(&v, "leela");
    let reasons = leela["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1);
    assert_eq!(reasons[0]["plugin"], "InterPodAffinity");
    assert_eq!(
        reasons[0]["reason"],
        "node(s) didn't satisfy existing pods anti-affinity rules"
    );
    let b = blockers(&reasons[0]);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["pod"], "stokesnet/prometheus-server-0");
    assert_eq!(b[0]["workload"], "StatefulSet/stokesnet/prometheus-server");
    assert_eq!(b[0]["rule_owner"], "existing");
    assert_eq!(b[0]["term"]["topology_key"], "kubernetes.io/hostname");
    assert_eq!(b[0]["term"]["domain"], "leela");
    assert_eq!(
        b[0]["term"]["selector"],
        "matchExpressions:\n- key: component\n  operator: In\n  values: [server]"
    );

    // bender and farnsworth: vault's own rule (both directions), by the other replicas.
    for (name, other) in [
        ("bender", "stokesnet/vault-1"),
        ("farnsworth", "stokesnet/vault-0"),
    ] {
        let n = node(&v, name);
        let reasons = n["reasons"].as_array().unwrap();
        let owners: Vec<&str> = reasons
            .iter()
            .flat_map(|r| blockers(r))
            .map(|b| b["rule_owner"].as_str().unwrap())
            .collect();
        assert_eq!(owners, ["incoming", "existing"], "{name}");
        for r in reasons {
            assert_eq!(blockers(r)[0]["pod"], other, "{name}");
            assert_eq!(blockers(r)[0]["workload"], "StatefulSet/stokesnet/vault");
        }
    }

    // hermes: the nodeSelector with the node's (missing) label, and prometheus-server-1.
    let hermes = node(&v, "hermes");
    let r = hermes["reasons"].as_array().unwrap();
    assert_eq!(r[0]["plugin"], "NodeAffinity");
    assert_eq!(
        r[0]["detail"]["node_selector"][0],
        serde_json::json!({"requirement": "stokesnet/vault=enabled", "key": "stokesnet/vault", "node_value": null})
    );
    assert_eq!(blockers(&r[1])[0]["pod"], "stokesnet/prometheus-server-1");

    // The first fix narrows prometheus' selector to its own labels and lands vault-2 on leela.
    let fix = &v["fixes"][0];
    assert_eq!(fix["target"], "StatefulSet/stokesnet/prometheus-server");
    assert_eq!(fix["lands_on"], "leela");
    let patch = fix["patch"].as_str().unwrap();
    assert!(
        patch.contains(
            "matchLabels:\n                app: prometheus\n                component: server\n                release: prometheus"
        ),
        "{patch}"
    );
}

#[test]
fn vault_text() {
    let (stdout, stderr, code) = podplace(&["why", "vault-2", "-f", "vault"]);
    assert_eq!(code, 1, "{stderr}");
    insta::assert_snapshot!("vault_text", stdout);
}

#[test]
fn vault_json() {
    let (stdout, _, code) = podplace(&["why", "stokesnet/vault-2", "-f", "vault", "-o", "json"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("vault_json", stdout);
}

#[test]
fn vault_fix_applied_to_the_files_places_vault_2_on_leela() {
    // The patch, applied by hand to the manifests (examples/stories/vault-fixed
    // would hold the same), is what the verification simulated: place agrees.
    let v = why_json(&["vault-2", "-f", "vault"], 1);
    let fix = &v["fixes"][0];
    let text = std::fs::read_to_string(examples().join("vault/prometheus.yaml")).unwrap();
    let narrowed = text.replace(
        "matchExpressions:\n              - {key: component, operator: In, values: [server]}",
        "matchLabels: {component: server, app: prometheus, release: prometheus}",
    );
    let narrowed = narrowed.replace(
        "matchExpressions:\n          - {key: component, operator: In, values: [server]}",
        "matchLabels: {component: server, app: prometheus, release: prometheus}",
    );
    assert_ne!(narrowed, text);
    let dir = std::env::temp_dir().join(format!("podplace-why-vault-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("prometheus.yaml"), narrowed).unwrap();
    for f in ["cluster.yaml", "vault.yaml"] {
        std::fs::copy(examples().join("vault").join(f), dir.join(f)).unwrap();
    }
    let (stdout, stderr, code) =
        podplace(&["why", "vault-2", "-f", dir.to_str().unwrap(), "-o", "json"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 0, "{stderr}");
    let after: Value = serde_json::from_str(&stdout).unwrap();
    // With all three vault pods placed afresh, the third lands where the
    // fix said there was room: leela is no longer blocked by Prometheus.
    assert_eq!(after["phase"], "Placed");
    let leela_blocked_by_prometheus = after["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["node"] == "leela")
        .flat_map(|n| n["reasons"].as_array().unwrap())
        .flat_map(|r| r["blockers"].as_array().unwrap())
        .any(|b| b["workload"] == "StatefulSet/stokesnet/prometheus-server");
    assert!(!leela_blocked_by_prometheus, "{stdout}");
    assert_eq!(fix["lands_on"], "leela");
}

// ---------------------------------------------------------------------------
// Story 4: rollout

const SURGE_POD: &str = "web-6c9f8d7b5-xz4x4";

#[test]
fn rollout_surge_pod_is_blocked_by_the_running_web_pod_on_each_node() {
    let v = why_json(
        &[
            SURGE_POD,
            "-f",
            "rollout/cluster.yaml",
            "-f",
            "rollout-stalled",
        ],
        1,
    );
    assert_eq!(v["workload"], "Deployment/default/web");
    for (name, old) in [
        ("node0", "default/web-5d8c7b9f4-k2x7p"),
        ("node1", "default/web-5d8c7b9f4-q9w4m"),
    ] {
        let n = node(&v, name);
        for r in n["reasons"].as_array().unwrap() {
            let b = blockers(r);
            assert_eq!(b.len(), 1, "{name}");
            assert_eq!(b[0]["pod"], old);
            assert_eq!(b[0]["workload"], "Deployment/default/web");
            assert_eq!(b[0]["node"], name);
        }
    }
    let stalled = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "rollout_stalled")
        .expect("stall note");
    let text = stalled["text"].as_str().unwrap();
    assert!(text.contains("maxSurge 25% rounds up to 1"), "{text}");
    assert!(
        text.contains("maxUnavailable 25% rounds down to 0"),
        "{text}"
    );
    let fix = &v["fixes"][0];
    assert_eq!(fix["target"], "Deployment/default/web");
    assert_eq!(
        fix["patch"],
        "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 50%\n"
    );
    assert_eq!(fix["lands_on"], "node0");
    // web's two old pods were created in the same second: the controller
    // may delete either, and the fix says so.
    assert!(fix["verification"].as_str().unwrap().contains(
        "deletes one of the old pods created in the same second \
         (default/web-5d8c7b9f4-k2x7p on node0, default/web-5d8c7b9f4-q9w4m on node1)"
    ));
    assert_eq!(
        v["fixes"][1]["patch"],
        "spec:\n  strategy:\n    rollingUpdate:\n      maxSurge: 0\n"
    );
}

#[test]
fn rollout_text() {
    let (stdout, _, code) = podplace(&[
        "why",
        SURGE_POD,
        "-f",
        "rollout/cluster.yaml",
        "-f",
        "rollout-stalled",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("rollout_text", stdout);
}

#[test]
fn rollout_json() {
    let (stdout, _, code) = podplace(&[
        "why",
        SURGE_POD,
        "-n",
        "default",
        "-f",
        "rollout/cluster.yaml",
        "-f",
        "rollout-stalled",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("rollout_json", stdout);
}

// ---------------------------------------------------------------------------
// Story 3: doesnotexist

#[test]
fn doesnotexist_explains_the_first_pod_exception_and_rewrites_to_anti_affinity() {
    let v = why_json(&["pod-2", "-f", "doesnotexist"], 0);
    assert_eq!(v["phase"], "Placed");
    assert_eq!(v["node"], "node-2");
    assert_eq!(v["placed_by_podplace"], true);
    assert_eq!(v["message"], "");
    // Both nodes pass the filters: node-2 wins on score.
    let scores = v["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 2);
    assert_eq!(scores[0]["node"], "node-2");
    assert!(scores[0]["total"].as_i64() > scores[1]["total"].as_i64());
    let note = &v["notes"][0];
    assert_eq!(note["kind"], "first_pod_of_group");
    let text = note["text"].as_str().unwrap();
    assert!(text.starts_with(
        "The podAffinity term matches no pod in any domain; the pod was allowed because it \
         matches its own term (first pod of a group), so this rule does not constrain placement."
    ));
    let term = &v["terms"][note["term"].as_u64().unwrap() as usize];
    assert_eq!(term["kind"], "podAffinity");
    assert_eq!(
        term["selector"],
        "matchExpressions:\n- key: app\n  operator: DoesNotExist"
    );
    let fix = &v["fixes"][0];
    assert_eq!(fix["target"], "Pod/default/pod-2");
    assert!(fix["patch"]
        .as_str()
        .unwrap()
        .contains("podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchExpressions:\n          - key: app\n            operator: Exists"));
    assert_eq!(fix["lands_on"], "node-2");
    assert!(fix["verification"]
        .as_str()
        .unwrap()
        .contains("now rejects node-1"));
}

#[test]
fn doesnotexist_text() {
    let (stdout, _, code) = podplace(&["why", "pod-2", "-f", "doesnotexist"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("doesnotexist_text", stdout);
}

#[test]
fn doesnotexist_json() {
    let (stdout, _, code) = podplace(&["why", "default/pod-2", "-f", "doesnotexist", "-o", "json"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("doesnotexist_json", stdout);
}

#[test]
fn the_rewritten_rule_keeps_pod_2_off_node_1() {
    // examples/stories/doesnotexist-fixed holds the fix as a manifest.
    let v = why_json(
        &[
            "pod-2",
            "-f",
            "doesnotexist/cluster.yaml",
            "-f",
            "doesnotexist-fixed",
        ],
        0,
    );
    let n1 = node(&v, "node-1");
    let b = blockers(&n1["reasons"][0]);
    assert_eq!(b[0]["pod"], "default/pod-1");
    assert_eq!(b[0]["rule_owner"], "incoming");
    assert!(v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["kind"] != "first_pod_of_group"));
}

// ---------------------------------------------------------------------------
// Input errors and lookups

#[test]
fn unknown_pod_exits_2_with_suggestions() {
    let (_, stderr, code) = podplace(&["why", "vault", "-f", "vault"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "error: pod default/vault not found (did you mean stokesnet/vault-0, stokesnet/vault-1, \
         stokesnet/vault-2?)\n"
    );
    let (_, stderr, code) = podplace(&["why", "vault-2", "-n", "default", "-f", "vault"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: pod default/vault-2 not found"),
        "{stderr}"
    );
}

#[test]
fn bad_input_exits_2() {
    let (_, stderr, code) = podplace(&["why", "x", "-f", "does-not-exist.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("does-not-exist.yaml"), "{stderr}");
}

// ---------------------------------------------------------------------------
// Live cluster, through a kubeconfig, against the recorded test API server

#[test]
fn live_cluster_explains_a_running_web_pod() {
    let (_server, dir) = live_cluster("web");
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &[
            "why",
            "web-7c67b8584c-7qkt7",
            "-n",
            "shop",
            "--kubeconfig",
            "kubeconfig",
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    let v: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["phase"], "Placed");
    assert_eq!(v["node"], "worker-3");
    assert_eq!(v["workload"], "Deployment/shop/web");
    assert_eq!(v["would_land_on"], "worker-3");
    assert_eq!(v["unreadable"], serde_json::json!([]));
    // The other workers hold the other web replicas; infra-1 is tainted.
    for (n, other) in [
        ("worker-1", "shop/web-7c67b8584c-k4mnm"),
        ("worker-2", "shop/web-7c67b8584c-kdsmf"),
    ] {
        let b = blockers(&node(&v, n)["reasons"][0]);
        assert_eq!(b[0]["pod"], other, "{n}");
    }
    let infra = &node(&v, "infra-1")["reasons"][0];
    assert_eq!(infra["plugin"], "TaintToleration");
    assert_eq!(
        infra["detail"]["taints"][0],
        serde_json::json!({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
    );
}

#[test]
fn live_cluster_says_what_it_could_not_read() {
    let (_server, dir) = live_cluster("forbidden");
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &[
            "why",
            "shop/web-7c67b8584c-7qkt7",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "pod-lister",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: could not read nodes: nodes is forbidden"),
        "{stderr}"
    );
    assert!(
        stdout.contains("could not read"),
        "the answer itself says what is missing: {stdout}"
    );
    assert!(stdout.contains("runs on worker-3"), "{stdout}");
}

#[test]
fn live_cluster_pods_of_the_namespace_forbidden_exit_3() {
    // pod-lister may list pods in shop only: data/db-0 exists but cannot be
    // read, which is the cluster refusing (3), not a wrong name (2).
    let (_server, dir) = live_cluster("forbidden-namespace");
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &[
            "why",
            "data/db-0",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "pod-lister",
        ],
    );
    assert_eq!(code, 3, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "error: cannot explain pod data/db-0: could not read pods in namespace data: pods is forbidden"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("not found"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn live_cluster_errors_exit_3() {
    let (server, dir) = live_cluster("down");
    drop(server);
    let (_, stderr, code) = podplace_in(&dir.0, &["why", "shop/web", "--kubeconfig", "kubeconfig"]);
    assert_eq!(code, 3, "{stderr}");
}

#[test]
fn live_cluster_unauthorized_exits_3() {
    let (_server, dir) = live_cluster("unauthorized");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &[
            "why",
            "shop/web-7c67b8584c-7qkt7",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "bad-token",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("401 Unauthorized"), "{stderr}");
}

// ---------------------------------------------------------------------------
// Grouped nodes: what differs per node is said per node.

/// A node `name` in zone `zone`, with room for anything.
fn zone_node(name: &str, zone: &str, extra: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    \
         kubernetes.io/hostname: {name}\n    kubernetes.io/os: linux\n    \
         topology.kubernetes.io/zone: {zone}\nspec: {{{extra}}}\nstatus:\n  \
         allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n  \
         capacity: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n"
    )
}

/// A pod `name` labelled `app: APP`, on `node` (or Pending when empty),
/// with `spec` lines added.
fn bare_pod(name: &str, app: &str, node: &str, spec: &str) -> String {
    let node = if node.is_empty() {
        String::new()
    } else {
        format!("  nodeName: {node}\n")
    };
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  \
         labels: {{app: {app}}}\nspec:\n{node}{spec}  containers: [{{name: c, image: x}}]\n"
    )
}

#[test]
fn grouped_nodes_state_per_node_facts_per_node() {
    struct Case {
        name: &'static str,
        world: String,
        pod: &'static str,
        says: &'static [&'static str],
        never: &'static [&'static str],
    }
    let spread = |min_domains: &str| {
        format!(
            "  topologySpreadConstraints:\n  - {{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, \
             whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: w}}}}{min_domains}}}\n"
        )
    };
    let cases = [
        Case {
            name: "host port held by a different pod on each node",
            world: [
                zone_node("a", "z1", ""),
                zone_node("b", "z1", ""),
                bare_pod("edge-a", "edge", "a", "  hostNetwork: false\n"),
                bare_pod("edge-b", "edge", "b", ""),
                bare_pod("web", "web", "", ""),
            ]
            .concat()
            .replace(
                "containers: [{name: c, image: x}]",
                "containers: [{name: c, image: x, ports: [{containerPort: 80, hostPort: 80}]}]",
            ),
            pod: "web",
            says: &[
                "a, b (2 nodes)",
                "host port 80/TCP on 0.0.0.0 is held by default/edge-a on a, default/edge-b on b",
            ],
            never: &["is held by default/edge-a\n"],
        },
        Case {
            name: "pod affinity over zones for a group spanning two zones",
            world: [
                zone_node("a", "z1", ""),
                zone_node("b", "z2", ""),
                bare_pod(
                    "web",
                    "web",
                    "",
                    "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
                     - labelSelector: {matchLabels: {app: db}}\n        topologyKey: topology.kubernetes.io/zone\n",
                ),
            ]
            .concat(),
            pod: "web",
            says: &["no pod matching it runs in any of topology.kubernetes.io/zone=z1 (a), topology.kubernetes.io/zone=z2 (b)"],
            never: &["no pod matching it runs in topology.kubernetes.io/zone=z1 "],
        },
        Case {
            name: "spread skew for a group spanning two zones",
            world: [
                zone_node("a", "z1", ""),
                zone_node("b", "z2", ""),
                zone_node("c", "z3", "unschedulable: true"),
                bare_pod("w-1", "w", "a", ""),
                bare_pod("w-2", "w", "a", ""),
                bare_pod("w-3", "w", "b", ""),
                bare_pod("w-4", "w", "", &spread("")),
            ]
            .concat(),
            pod: "w-4",
            says: &[
                "topology.kubernetes.io/zone=z1 (a) has 2 matching pod(s) (+1 with this pod), the emptiest domain 0: skew 3 > maxSkew 1",
                "topology.kubernetes.io/zone=z2 (b) has 1 matching pod(s) (+1 with this pod), the emptiest domain 0: skew 2 > maxSkew 1",
            ],
            never: &["first node shown"],
        },
        Case {
            name: "minDomains beyond the zones that exist",
            world: [
                zone_node("a", "z1", ""),
                zone_node("b", "z2", ""),
                bare_pod("w-1", "w", "a", ""),
                bare_pod("w-2", "w", "b", ""),
                bare_pod("w-3", "w", "", &spread(", minDomains: 3")),
            ]
            .concat(),
            pod: "w-3",
            says: &[
                "has 1 matching pod(s) (+1 with this pod), the global minimum 0 (minDomains): skew 2 > maxSkew 1",
                "minDomains is 3 but only 2 topology.kubernetes.io/zone domain(s) exist, so kube-scheduler takes the global minimum as 0",
            ],
            never: &["the emptiest domain 0"],
        },
    ];
    for case in cases {
        let dir = Scratch::new("why-grouped");
        std::fs::write(dir.join("world.yaml"), &case.world).unwrap();
        let (out, err, code) = podplace_in(&dir.0, &["why", case.pod, "-f", "world.yaml"]);
        assert_eq!(code, 1, "{}: {err}\n{out}", case.name);
        for want in case.says {
            assert!(out.contains(want), "{}: no {want:?} in\n{out}", case.name);
        }
        for not in case.never {
            assert!(!out.contains(not), "{}: {not:?} in\n{out}", case.name);
        }
    }
}

/// A misspelt topologyKey: why's first fix uses the key lint PP007 names,
/// and placing the pod with it works.
#[test]
fn a_misspelt_topology_key_gets_the_key_lint_names() {
    let nodes = [zone_node("a", "z1", ""), zone_node("b", "z2", "")].concat();
    let cases = [
        (
            "spread",
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zon, \
             whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: w}}}\n",
            "topology.kubernetes.io/zone",
        ),
        (
            "required pod affinity",
            "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      \
             - labelSelector: {matchLabels: {app: db}}\n        topologyKey: kubernetes.io/hostnme\n",
            "kubernetes.io/hostname",
        ),
    ];
    for (name, spec, want) in cases {
        let dir = Scratch::new("why-typo");
        let world = [
            nodes.clone(),
            bare_pod("db-0", "db", "a", ""),
            bare_pod("w-0", "w", "", spec),
        ]
        .concat();
        std::fs::write(dir.join("world.yaml"), &world).unwrap();
        let (out, err, code) =
            podplace_in(&dir.0, &["why", "w-0", "-f", "world.yaml", "-o", "json"]);
        assert_eq!(code, 1, "{name}: {err}\n{out}");
        let v: Value = serde_json::from_str(&out).expect("JSON");
        let fix = &v["fixes"][0];
        assert!(
            fix["title"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("Use topologyKey {want} "))),
            "{name}: first fix {fix:#}"
        );
        assert!(
            fix["patch"]
                .as_str()
                .is_some_and(|p| p.contains(&format!("topologyKey: {want}"))),
            "{name}: {fix:#}"
        );
        assert!(
            fix["lands_on"]
                .as_str()
                .is_some_and(|n| n == "a" || n == "b"),
            "{name}: {fix:#}"
        );
        let (lint, err, _) = podplace_in(&dir.0, &["lint", "world.yaml"]);
        assert!(
            lint.contains("PP007") && lint.contains(&format!("use `{want}`")),
            "{name}: lint does not name {want}: {err}\n{lint}"
        );
    }
}
