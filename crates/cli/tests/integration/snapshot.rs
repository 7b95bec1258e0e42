//! `podplace snapshot` end to end, as a user runs it: the real binary, a
//! kubeconfig file, and the test API server answering with a real v1.36
//! API server's recorded responses. The file it writes loads with `-f`.

use crate::support::*;
use std::path::Path;

use podplace_model::load::{load, Source};

fn names<'a, K>(
    objects: impl IntoIterator<Item = &'a podplace_model::inventory::Sourced<K>>,
) -> Vec<String>
where
    K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> + 'a,
{
    objects
        .into_iter()
        .map(|s| {
            let m = s.object.metadata();
            match &m.namespace {
                Some(ns) => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
                None => m.name.clone().unwrap_or_default(),
            }
        })
        .collect()
}

/// The recorded `kubectl get ... -A -o yaml` of the same cluster state.
fn kubectl_snapshot() -> podplace_model::inventory::Inventory {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fixtures/snapshots/cluster.yaml");
    load(&[Source::Path(path)]).expect("kubectl snapshot loads")
}

#[test]
fn snapshot_yaml_end_to_end_then_place_loads_it() {
    let (_server, dir) = live_cluster("yaml");
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "x.yaml", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "wrote x.yaml: 4 nodes, 10 pods, 6 namespaces, 4 workloads, 1 PodDisruptionBudgets, \
         3 services, 3 priority classes\n"
    );
    let text = std::fs::read_to_string(dir.join("x.yaml")).expect("written");
    // Keys sorted, as kubectl writes them: apiVersion, items, kind, metadata.
    assert!(
        text.starts_with("apiVersion: v1\nitems:\n"),
        "{}",
        &text[..80]
    );
    assert!(text.contains("\nkind: List\n"));
    assert!(!text.contains("managedFields"));

    // It loads with the model's loader and holds what kubectl would have dumped.
    let ours = load(&[Source::Path(dir.join("x.yaml"))]).expect("snapshot loads");
    let kubectl = kubectl_snapshot();
    assert_eq!(names(&ours.nodes), names(&kubectl.nodes));
    assert_eq!(names(&ours.pods), names(&kubectl.pods));
    assert_eq!(names(&ours.namespaces), names(&kubectl.namespaces));
    assert_eq!(names(&ours.deployments), names(&kubectl.deployments));
    assert_eq!(names(&ours.replica_sets), names(&kubectl.replica_sets));
    assert_eq!(names(&ours.stateful_sets), names(&kubectl.stateful_sets));
    assert_eq!(names(&ours.daemon_sets), names(&kubectl.daemon_sets));
    assert_eq!(
        names(&ours.pod_disruption_budgets),
        names(&kubectl.pod_disruption_budgets)
    );
    assert_eq!(names(&ours.services), names(&kubectl.services));
    assert_eq!(
        names(&ours.priority_classes),
        names(&kubectl.priority_classes)
    );
    // Field for field the same objects as kubectl's dump (both drop managedFields).
    for (a, b) in ours.pods.iter().zip(&kubectl.pods) {
        assert_eq!(a.object.spec, b.object.spec, "{:?}", a.object.metadata.name);
        assert_eq!(a.object.metadata.labels, b.object.metadata.labels);
    }
    for (a, b) in ours.nodes.iter().zip(&kubectl.nodes) {
        assert_eq!(a.object.spec, b.object.spec);
        assert_eq!(a.object.metadata.labels, b.object.metadata.labels);
        assert_eq!(
            a.object.status.as_ref().map(|s| &s.allocatable),
            b.object.status.as_ref().map(|s| &s.allocatable)
        );
    }

    // Every command loads it with -f: `place` has nothing pending to place.
    let (stdout, stderr, code) = podplace_in(&dir.0, &["place", "-f", "x.yaml", "-o", "json"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["pending"], 0, "{stdout}");
}

#[test]
fn snapshot_json_with_small_pages_equals_the_yaml_one() {
    let (server, dir) = live_cluster("json");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &[
            "snapshot",
            "-o",
            "x.json",
            "--kubeconfig",
            "kubeconfig",
            "--page-size",
            "3",
        ],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    // The pods came in the recorded pages of 3.
    let pages = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/pods")
        .count();
    assert_eq!(pages, 4);
    let text = std::fs::read_to_string(dir.join("x.json")).expect("written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["kind"], "List");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "x.yml", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    let from_json = load(&[Source::Path(dir.join("x.json"))]).expect("json loads");
    let from_yaml = load(&[Source::Path(dir.join("x.yml"))]).expect("yaml loads");
    assert_eq!(from_json.pods.len(), 10);
    for (a, b) in from_json.pods.iter().zip(&from_yaml.pods) {
        assert_eq!(a.object, b.object);
    }
    for (a, b) in from_json.nodes.iter().zip(&from_yaml.nodes) {
        assert_eq!(a.object, b.object);
    }
}

/// A pod that names a RuntimeClass gets its overhead, node selector and
/// tolerations at admission; placed on a snapshot, it needs the snapshot to
/// carry the cluster's RuntimeClasses (found on a real control plane: the
/// live read skipped them, and such a pod was scheduled without them).
#[test]
fn snapshot_keeps_runtime_classes_for_new_pods_admission() {
    let (server, dir) = live_cluster("runtimeclass");
    server.answer(
        "GET",
        "/apis/node.k8s.io/v1/runtimeclasses",
        &[],
        200,
        serde_json::json!({
            "kind": "RuntimeClassList",
            "apiVersion": "node.k8s.io/v1",
            "metadata": {"resourceVersion": "413"},
            "items": [{
                "metadata": {
                    "name": "sandboxed",
                    "uid": "6d2f9a4e-1c3b-4e5f-8a7b-9c0d1e2f3a4b",
                    "resourceVersion": "300",
                    "creationTimestamp": "2026-11-22T03:40:08Z"
                },
                "handler": "runsc",
                "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
                "scheduling": {
                    "nodeSelector": {"node-role.kubernetes.io/infra": ""},
                    "tolerations": [{"key": "dedicated", "operator": "Equal",
                                     "value": "infra", "effect": "NoSchedule"}]
                }
            }]
        }),
        None,
    );
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "snap.json", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    let snap = load(&[Source::Path(dir.join("snap.json"))]).expect("snapshot loads");
    assert_eq!(names(&snap.runtime_classes), ["sandboxed"]);
    let gvisor = podplace_testkit::pod("gvisor")
        .ns("shop")
        .image("busybox")
        .merge(serde_json::json!({"spec": {"runtimeClassName": "sandboxed"}}));
    std::fs::write(dir.join("pod.yaml"), gvisor.yaml()).expect("pod written");
    // Without the RuntimeClass the pod would go to a worker (infra-1 is
    // tainted) and podplace would warn that its overhead is not counted.
    let (stdout, stderr, code) = podplace_in(
        &dir.0,
        &["place", "-f", "snap.json", "-f", "pod.yaml", "-o", "json"],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    assert!(!stderr.contains("RuntimeClass"), "{stderr}");
    let out: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(out["placements"][0]["pod"], "shop/gvisor");
    assert_eq!(out["placements"][0]["node"], "infra-1", "{stdout}");
}

/// Nodes forbidden: no snapshot is written (the loader would refuse one
/// whose pods are bound to nodes it does not hold), exit 3, and the error
/// names the list, the server's reason and the RBAC that would allow it.
#[test]
fn snapshot_without_nodes_fails_naming_the_rbac_needed() {
    let (_server, dir) = live_cluster("forbidden");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &[
            "snapshot",
            "-o",
            "shop.yaml",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "pod-lister",
            "-n",
            "shop",
        ],
    );
    assert_eq!(code, 3, "stderr: {stderr}");
    let last = stderr.lines().last().expect("an error");
    assert_eq!(
        last,
        "error: cannot snapshot the cluster: list nodes (cluster-wide) failed: nodes is forbidden: User \"system:serviceaccount:shop:pod-lister\" cannot list resource \"nodes\" in API group \"\" at the cluster scope; a snapshot needs the nodes to place anything: nodes are cluster-scoped: grant `list` on `nodes` with a ClusterRole and a ClusterRoleBinding (`kubectl create clusterrole podplace-read-nodes --verb=list --resource=nodes`, then `kubectl create clusterrolebinding podplace-read-nodes --clusterrole=podplace-read-nodes --serviceaccount=NAMESPACE:NAME` or `--user=NAME`); nothing was written"
    );
    assert!(!dir.join("shop.yaml").exists(), "no snapshot is written");
}

#[test]
fn cluster_errors_exit_3_and_kubeconfig_errors_exit_2() {
    let (server, dir) = live_cluster("errors");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &[
            "snapshot",
            "-o",
            "x.yaml",
            "--kubeconfig",
            "kubeconfig",
            "--context",
            "bad-token",
        ],
    );
    assert_eq!(code, 3, "stderr: {stderr}");
    assert_eq!(
        stderr,
        "error: list nodes: the API server answered 401 Unauthorized: Unauthorized\n"
    );
    assert!(!dir.join("x.yaml").exists());
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "x.yaml", "--kubeconfig", "missing"],
    );
    assert_eq!(code, 2, "stderr: {stderr}");
    assert!(
        stderr.starts_with("error: cannot use the kubeconfig missing: "),
        "{stderr}"
    );
    drop(server);
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "x.yaml", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(code, 3, "stderr: {stderr}");
    assert!(stderr.starts_with("error: list nodes: "), "{stderr}");
}

/// What each command prints on stderr when it loads `file` (the
/// scenario-relative name for simulate), with its exit code.
fn load_with_every_command(dir: &Path, file: &str) -> Vec<(&'static str, String, i32)> {
    std::fs::write(
        dir.join("scenario.yaml"),
        format!("cluster: [{file}]\nsteps:\n  - wait: 1m\n"),
    )
    .expect("scenario written");
    let runs: [(&str, Vec<&str>); 5] = [
        ("place", vec!["place", "-f", file]),
        (
            "why",
            vec!["why", "web-7c67b8584c-k4mnm", "-n", "shop", "-f", file],
        ),
        ("lint --cluster", vec!["lint", "--cluster", file]),
        ("simulate", vec!["simulate", "scenario.yaml"]),
        ("rebalance -f", vec!["rebalance", "-f", file]),
    ];
    runs.into_iter()
        .map(|(name, args)| {
            let (_, stderr, code) = podplace_in(dir, &args);
            (name, stderr, code)
        })
        .collect()
}

/// PodDisruptionBudgets forbidden: the snapshot is written, marked partial
/// by its first item (podplace's own SnapshotStatus), and every command that
/// loads it warns once, naming the list and the server's answer; a
/// complete snapshot carries no mark and no command warns.
#[test]
fn partial_snapshot_is_marked_and_every_command_warns_once() {
    let (server, dir) = live_cluster("partial");
    let (_, stderr, code) = podplace_in(
        &dir.0,
        &["snapshot", "-o", "full.yaml", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    let full = std::fs::read_to_string(dir.join("full.yaml")).expect("written");
    assert!(
        !full.contains("unreadable") && !full.contains("name: partial"),
        "a complete snapshot is not marked partial"
    );
    assert!(
        full.contains("formatVersion: 1") && full.contains("- policy/v1/PodDisruptionBudget"),
        "a snapshot names its format and the kinds it holds"
    );

    server.answer(
        "GET",
        "/apis/policy/v1/poddisruptionbudgets",
        &[],
        403,
        serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "poddisruptionbudgets.policy is forbidden: User \"admin\" cannot list resource \"poddisruptionbudgets\" in API group \"policy\" at the cluster scope",
            "reason": "Forbidden",
            "details": {"group": "policy", "kind": "poddisruptionbudgets"},
            "code": 403
        }),
        None,
    );
    for file in ["partial.yaml", "partial.json"] {
        let (_, stderr, code) = podplace_in(
            &dir.0,
            &["snapshot", "-o", file, "--kubeconfig", "kubeconfig"],
        );
        assert_eq!(code, 0, "stderr: {stderr}");
        assert!(
            stderr.contains("(partial: 1 list(s) could not be read"),
            "{stderr}"
        );
    }
    let text = std::fs::read_to_string(dir.join("partial.yaml")).expect("written");
    // The mark is the List's first item, where a person reading the file sees it.
    assert!(
        text.starts_with("apiVersion: v1\nitems:\n- apiVersion: podplace.io/v1alpha1\n"),
        "{}",
        &text[..300.min(text.len())]
    );
    let list: serde_json::Value = serde_saphyr::from_str(&text).expect("the snapshot is YAML");
    let mark = &list["items"][0];
    assert_eq!(mark["kind"], "SnapshotStatus", "{mark}");
    assert_eq!(mark["metadata"]["name"], "partial", "{mark}");
    assert_eq!(mark["unreadable"][0]["code"], 403, "{mark}");
    assert_eq!(mark["formatVersion"], 1, "{mark}");
    let snap = load(&[Source::Path(dir.join("partial.json"))]).expect("partial snapshot loads");
    assert!(snap.pod_disruption_budgets.is_empty());
    assert!(snap.skipped_kinds.is_empty(), "{:?}", snap.skipped_kinds);

    let warning = |file: &str| {
        format!(
            "warning: {file} is a partial snapshot: poddisruptionbudgets (403 Forbidden) could not \
             be read when it was taken; answers that depend on them may be wrong"
        )
    };
    for file in ["partial.yaml", "partial.json"] {
        for (command, stderr, code) in load_with_every_command(&dir.0, file) {
            assert!(
                code == 0 || code == 1,
                "{command} {file}: exit {code}: {stderr}"
            );
            let count = stderr.lines().filter(|l| *l == warning(file)).count();
            assert_eq!(count, 1, "{command} {file} warns once:\n{stderr}");
        }
    }
    for (command, stderr, code) in load_with_every_command(&dir.0, "full.yaml") {
        assert!(code == 0 || code == 1, "{command}: exit {code}: {stderr}");
        assert!(!stderr.contains("partial snapshot"), "{command}: {stderr}");
    }
}
