//! Loading real `kubectl get -o yaml|json` snapshots and real API list
//! responses (recorded from a v1.36.2 API server), multi-document streams,
//! directories, and the positions recorded for every object.

use std::path::PathBuf;

use podplace_model::expand::expand_workloads;
use podplace_model::inventory::Inventory;
use podplace_model::load::{load, LoadErrorKind, Source};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/fixtures");

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(SHARED).join(rel)
}

/// The `body` of a recorded API response, as an in-memory JSON source.
fn api_body(rel: &str) -> Source {
    let text = std::fs::read_to_string(fixture(rel)).expect("fixture readable");
    let v: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    Source::Bytes {
        name: rel.to_string(),
        data: serde_json::to_vec_pretty(&v["body"]).expect("serialisable"),
    }
}

fn names<
    'a,
    T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> + 'a,
>(
    objs: impl IntoIterator<Item = &'a podplace_model::inventory::Sourced<T>>,
) -> Vec<String> {
    objs.into_iter()
        .map(|o| {
            let m = o.object.metadata();
            match m.namespace.as_deref() {
                Some(ns) => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
                None => m.name.clone().unwrap_or_default(),
            }
        })
        .collect()
}

fn assert_cluster(inv: &Inventory) {
    assert_eq!(
        names(&inv.nodes),
        ["infra-1", "worker-1", "worker-2", "worker-3"]
    );
    assert_eq!(
        names(&inv.pods),
        [
            "data/db-0",
            "data/db-1",
            "kube-system/log-agent-jzplm",
            "kube-system/log-agent-lbrb9",
            "kube-system/log-agent-mx99z",
            "kube-system/log-agent-r6vrn",
            "shop/debug-shell",
            "shop/web-7c67b8584c-7qkt7",
            "shop/web-7c67b8584c-k4mnm",
            "shop/web-7c67b8584c-kdsmf",
        ]
    );
    assert_eq!(inv.namespaces.len(), 6);
    assert_eq!(
        names(&inv.services),
        ["data/db", "default/kubernetes", "shop/web"]
    );
    assert_eq!(names(&inv.deployments), ["shop/web"]);
    assert_eq!(names(&inv.replica_sets), ["shop/web-7c67b8584c"]);
    assert_eq!(names(&inv.stateful_sets), ["data/db"]);
    assert_eq!(names(&inv.daemon_sets), ["kube-system/log-agent"]);
    assert_eq!(names(&inv.pod_disruption_budgets), ["data/db-pdb"]);
    assert_eq!(
        names(&inv.priority_classes),
        [
            "data-critical",
            "system-cluster-critical",
            "system-node-critical"
        ]
    );
    assert!(inv.skipped_kinds.is_empty(), "{:?}", inv.skipped_kinds);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    // Every pod is bound, and snapshots keep their admission results.
    for p in &inv.pods {
        let spec = p.object.spec.as_ref().expect("spec");
        assert!(spec.node_name.is_some());
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    }
}

#[test]
fn loads_the_yaml_snapshot() {
    let path = fixture("snapshots/cluster.yaml");
    let inv = load(&[Source::Path(path.clone())]).expect("cluster.yaml loads");
    assert_cluster(&inv);
    // `kubectl get -o yaml` prints a List; each item's position is its own.
    let first = &inv.nodes[0].origin;
    assert_eq!(first.file, path.display().to_string());
    assert_eq!((first.line, first.column), (3, 3));
    let text = std::fs::read_to_string(&path).unwrap();
    for p in &inv.pods {
        let line = text.lines().nth(p.origin.line - 1).unwrap();
        assert_eq!(
            line.trim_start_matches("- "),
            "apiVersion: v1",
            "pod origin line {}",
            p.origin.line
        );
    }
}

#[test]
fn loads_the_json_snapshot() {
    let path = fixture("snapshots/cluster.json");
    let inv = load(&[Source::Path(path.clone())]).expect("cluster.json loads");
    assert_cluster(&inv);
    let text = std::fs::read_to_string(&path).unwrap();
    // Item positions point at each item's opening brace.
    for n in &inv.nodes {
        let line = text.lines().nth(n.origin.line - 1).unwrap();
        assert_eq!(
            line.chars().nth(n.origin.column - 1),
            Some('{'),
            "node at {:?}",
            n.origin
        );
    }
    assert!(inv.nodes[0].origin.line > 1);
    assert!(inv
        .nodes
        .iter()
        .zip(inv.nodes.iter().skip(1))
        .all(|(a, b)| a.origin.line < b.origin.line));
}

#[test]
fn yaml_and_json_snapshots_agree() {
    let y = load(&[Source::Path(fixture("snapshots/cluster.yaml"))]).unwrap();
    let j = load(&[Source::Path(fixture("snapshots/cluster.json"))]).unwrap();
    for (a, b) in y.pods.iter().zip(&j.pods) {
        assert_eq!(a.object, b.object);
    }
    for (a, b) in y.nodes.iter().zip(&j.nodes) {
        assert_eq!(a.object, b.object);
    }
}

#[test]
fn loads_the_drift_snapshot() {
    let inv = load(&[Source::Path(fixture("snapshots/drift-collapsed.yaml"))]).expect("loads");
    let demo: Vec<_> = inv
        .pods
        .iter()
        .filter(|p| {
            p.object
                .metadata
                .name
                .as_deref()
                .unwrap_or("")
                .starts_with("demo-app-")
        })
        .collect();
    assert_eq!(demo.len(), 5);
    for p in demo {
        assert_eq!(
            p.object.spec.as_ref().unwrap().node_name.as_deref(),
            Some("worker-1")
        );
    }
    assert!(names(&inv.deployments).contains(&"shop/demo-app".to_string()));
}

#[test]
fn a_snapshot_expands_to_nothing_new() {
    for f in [
        "snapshots/cluster.yaml",
        "snapshots/cluster.json",
        "snapshots/drift-collapsed.yaml",
    ] {
        let mut inv = load(&[Source::Path(fixture(f))]).unwrap();
        let before = inv.pods.clone();
        expand_workloads(&mut inv);
        assert_eq!(
            inv.pods.len(),
            before.len(),
            "{f}: every workload already has its pods"
        );
        for (a, b) in inv.pods.iter().zip(&before) {
            assert_eq!(
                a.object, b.object,
                "{f}: snapshot pods are taken exactly as they are"
            );
        }
    }
}

#[test]
fn loads_recorded_api_lists() {
    type Count = fn(&Inventory) -> usize;
    let cases: &[(&str, Count, usize)] = &[
        ("lists/nodes.json", |i| i.nodes.len(), 4),
        ("lists/namespaces.json", |i| i.namespaces.len(), 6),
        ("lists/deployments.json", |i| i.deployments.len(), 1),
        ("lists/replicasets.json", |i| i.replica_sets.len(), 1),
        ("lists/statefulsets.json", |i| i.stateful_sets.len(), 1),
        ("lists/daemonsets.json", |i| i.daemon_sets.len(), 1),
        (
            "lists/poddisruptionbudgets.json",
            |i| i.pod_disruption_budgets.len(),
            1,
        ),
        ("lists/services.json", |i| i.services.len(), 3),
        (
            "lists/priorityclasses.json",
            |i| i.priority_classes.len(),
            3,
        ),
    ];
    for (rel, count, want) in cases {
        let inv = load(&[api_body(rel)]).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(count(&inv), *want, "{rel}");
        assert!(
            inv.skipped_kinds.is_empty(),
            "{rel}: {:?}",
            inv.skipped_kinds
        );
    }
    // Typed lists (`PodList`) carry no kind on their items; the list's kind is used.
    let inv = load(&[api_body("lists/nodes.json"), api_body("lists/pods.json")]).unwrap();
    assert_eq!(inv.pods.len(), 10);
    assert_eq!(inv.pods[0].object.metadata.name.as_deref(), Some("db-0"));
    // Leases are not a kind podplace uses: counted, not loaded.
    let inv = load(&[api_body("lists/leases.json")]).unwrap();
    assert_eq!(
        inv.skipped_kinds.get("coordination.k8s.io/v1/Lease"),
        Some(&5)
    );
    assert!(inv.warnings.iter().any(|w| w == "no nodes were loaded"));
}

#[test]
fn paginated_lists_add_up_to_the_full_list() {
    let pages = [
        "lists/pods-limit3-page1.json",
        "lists/pods-limit3-page2.json",
        "lists/pods-limit3-page3.json",
        "lists/pods-limit3-page4-last.json",
    ];
    let mut sources = vec![api_body("lists/nodes.json")];
    sources.extend(pages.iter().map(|p| api_body(p)));
    let paged = load(&sources).unwrap();
    let full = load(&[api_body("lists/nodes.json"), api_body("lists/pods.json")]).unwrap();
    assert_eq!(names(&paged.pods), names(&full.pods));
}

#[test]
fn pods_without_their_nodes_do_not_load() {
    let err = load(&[api_body("lists/pods.json")]).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::UnknownReference);
    let msg = err.to_string();
    assert!(
        msg.contains("Pod/data/db-0: spec.nodeName: Not found: \"worker-2\""),
        "{msg}"
    );
}

const STREAM: &str = "# Source: chart/templates/ns.yaml
---
# comment-only document
---
---
apiVersion: v1
kind: Node
metadata:
  name: n1
---
# Source: chart/templates/pod.yaml
apiVersion: v1
kind: Pod
metadata:
  name: p1
spec:
  containers:
  - name: c
    image: nginx
...
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n2
-   apiVersion: v1
    kind: Node
    metadata: {name: n3}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
";

#[test]
fn multi_document_streams_keep_each_documents_line() {
    let inv = load(&[Source::Bytes {
        name: "stream.yaml".to_string(),
        data: STREAM.as_bytes().to_vec(),
    }])
    .unwrap();
    let pos = |o: &podplace_model::inventory::Origin| (o.file.clone(), o.line, o.column);
    assert_eq!(pos(&inv.nodes[0].origin), ("stream.yaml".to_string(), 6, 1));
    assert_eq!(pos(&inv.pods[0].origin), ("stream.yaml".to_string(), 12, 1));
    assert_eq!(
        pos(&inv.nodes[1].origin),
        ("stream.yaml".to_string(), 25, 3)
    );
    assert_eq!(
        pos(&inv.nodes[2].origin),
        ("stream.yaml".to_string(), 29, 5)
    );
    assert_eq!(inv.skipped_kinds.get("example.com/v1/Widget"), Some(&1));
    // Namespaces default like kubectl's, and the loader says so.
    assert_eq!(
        inv.pods[0].object.metadata.namespace.as_deref(),
        Some("default")
    );
    assert!(
        inv.notices
            .iter()
            .any(|n| n.contains("namespace \"default\"")),
        "{:?}",
        inv.notices
    );
}

#[test]
fn errors_in_later_documents_point_at_their_own_lines() {
    let text = STREAM.replace(
        "    image: nginx",
        "    image: nginx\n    resources: {requests: {cpu: lots}}",
    );
    let err = load(&[Source::Bytes {
        name: "stream.yaml".to_string(),
        data: text.into_bytes(),
    }])
    .unwrap_err();
    assert_eq!((err.line, err.column), (20, 33), "{err}");
    assert!(err.to_string().starts_with("stream.yaml:20:33: Pod/default/p1: spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match"), "{err}");
}

#[test]
fn concatenated_json_objects_load_with_their_positions() {
    let text = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}}\n\n  {\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"b\"}}\n";
    let inv = load(&[Source::Bytes {
        name: "nodes.json".to_string(),
        data: text.as_bytes().to_vec(),
    }])
    .unwrap();
    assert_eq!(names(&inv.nodes), ["a", "b"]);
    assert_eq!(
        (inv.nodes[1].origin.line, inv.nodes[1].origin.column),
        (3, 3)
    );
    // Without an extension the format is sniffed.
    let inv = load(&[Source::Bytes {
        name: "-".to_string(),
        data: text.as_bytes().to_vec(),
    }])
    .unwrap();
    assert_eq!(inv.nodes.len(), 2);
}

#[test]
fn nodes_get_the_hostname_label_the_kubelet_sets() {
    let inv = load(&[Source::Bytes {
        name: "n.yaml".to_string(),
        data: b"apiVersion: v1\nkind: Node\nmetadata:\n  name: bare\n".to_vec(),
    }])
    .unwrap();
    let labels = inv.nodes[0].object.metadata.labels.as_ref().unwrap();
    assert_eq!(
        labels.get("kubernetes.io/hostname").map(String::as_str),
        Some("bare")
    );
    assert!(inv
        .notices
        .iter()
        .any(|n| n.contains("kubernetes.io/hostname=bare")));
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("podplace-load-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn directories_load_recursively_and_skip_empty_files() {
    let dir = TempDir::new("dir");
    let sub = dir.0.join("apps/web");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        dir.0.join("nodes.yaml"),
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("pod.yml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: web\nspec:\n  containers: [{name: c, image: x}]\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("svc.json"),
        "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\",\"namespace\":\"web\"}}",
    )
    .unwrap();
    std::fs::write(sub.join("empty.yaml"), "").unwrap();
    std::fs::write(sub.join("README.md"), "not a manifest: [").unwrap();
    let inv = load(&[Source::Path(dir.0.clone())]).unwrap();
    assert_eq!(inv.nodes.len(), 1);
    assert_eq!(inv.pods.len(), 1);
    assert_eq!(inv.services.len(), 1);
    assert!(
        inv.pods[0].origin.file.ends_with("apps/web/pod.yml"),
        "{:?}",
        inv.pods[0].origin
    );
    assert!(
        inv.notices
            .iter()
            .any(|n| n.contains("empty.yaml") && n.contains("skipped")),
        "{:?}",
        inv.notices
    );
    // The same empty file named explicitly is an error.
    let err = load(&[Source::Path(sub.join("empty.yaml"))]).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Empty);
    assert!(err.to_string().contains("no objects found in"), "{err}");
}

#[test]
fn missing_files_are_reported() {
    let err = load(&[Source::from_arg("/nonexistent/podplace/x.yaml")]).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Io);
    assert!(
        err.to_string()
            .starts_with("/nonexistent/podplace/x.yaml: cannot read"),
        "{err}"
    );
    assert_eq!(err.exit_code(), 2);
}
