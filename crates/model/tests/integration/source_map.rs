//! `load_with_source_map`: field positions of loaded objects, for
//! diagnostics that point at a field (`podplace lint`).

use podplace_model::load::{load_with_source_map, FieldSpan, LoadOptions, Source};
use podplace_model::validate::{FieldPath, PathSegment};

fn path(text: &str) -> FieldPath {
    // `a.b[0].c` → segments.
    let mut p = FieldPath::root();
    for part in text.split('.') {
        let (field, rest) = part.split_once('[').unwrap_or((part, ""));
        p.push(PathSegment::Field(field.to_string()));
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            p.push(PathSegment::Index(
                idx.trim_end_matches(']').parse().unwrap(),
            ));
        }
    }
    p
}

const STREAM: &str = "\
# Source: chart/templates/a.yaml
apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
  - {name: c, image: x}
---
# Source: chart/templates/b.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  selector:
    matchLabels: {app: b}
  template:
    metadata:
      labels: {app: b}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - {key: app, operator: In, values: [b]}
            topologyKey: kubernetes.io/hostname
      containers:
      - {name: c, image: x}
";

#[test]
fn multi_document_stdin_keeps_file_lines_per_document() {
    let (inv, map) = load_with_source_map(
        &[Source::Bytes {
            name: "-".to_string(),
            data: STREAM.as_bytes().to_vec(),
        }],
        &LoadOptions::default(),
    )
    .unwrap();
    let pod = &inv.pods[0];
    assert_eq!(
        map.locate(&pod.origin, &path("spec.containers[0].image")),
        Some(FieldSpan {
            line: 8,
            column: 22,
            exact: true
        })
    );
    let d = &inv.deployments[0];
    let term = "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
    let cases = [
        (term.to_string(), (25, 13, true)),
        (
            format!("{term}.labelSelector.matchExpressions[0].operator"),
            (27, 38, true),
        ),
        (format!("{term}.topologyKey"), (28, 26, true)),
        // Not written: the deepest written field, marked inexact.
        ("spec.strategy.rollingUpdate".to_string(), (16, 3, false)),
    ];
    for (p, (line, column, exact)) in cases {
        assert_eq!(
            map.locate(&d.origin, &path(&p)),
            Some(FieldSpan {
                line,
                column,
                exact
            }),
            "{p}"
        );
    }
    assert!(map
        .source("-")
        .unwrap()
        .contains("# Source: chart/templates/b.yaml"));
}

#[test]
fn json_lists_locate_items_fields() {
    let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
   "spec": {"containers": [{"name": "c", "image": "x"}]}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
   "spec": {"containers": [{"name": "c", "image": "y"}]}}
]}"#;
    let (inv, map) = load_with_source_map(
        &[Source::Bytes {
            name: "pods.json".to_string(),
            data: text.as_bytes().to_vec(),
        }],
        &LoadOptions::default(),
    )
    .unwrap();
    let span = map
        .locate(&inv.pods[1].origin, &path("spec.containers[0].image"))
        .unwrap();
    assert_eq!((span.line, span.column, span.exact), (5, 51, true));
    let missing = map
        .locate(&inv.pods[1].origin, &path("spec.affinity"))
        .unwrap();
    assert!(!missing.exact);
}

#[test]
fn ordinary_loads_and_unknown_origins_have_no_spans() {
    let (_, map) = load_with_source_map(&[], &LoadOptions::default()).unwrap();
    let origin = podplace_model::inventory::Origin {
        file: "nope.yaml".to_string(),
        line: 1,
        column: 1,
    };
    assert_eq!(map.locate(&origin, &FieldPath::root()), None);
    assert_eq!(map.source("nope.yaml"), None);
}

#[test]
fn pods_may_be_bound_to_nodes_of_another_load() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeName: n1\n  containers: [{name: c, image: x}]\n";
    let sources = [Source::Bytes {
        name: "p.yaml".to_string(),
        data: pod.as_bytes().to_vec(),
    }];
    let err = load_with_source_map(&sources, &LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not loaded"), "{err}");
    let opts = LoadOptions {
        external_nodes: vec!["n1".to_string()],
        ..LoadOptions::default()
    };
    let (inv, _) = load_with_source_map(&sources, &opts).unwrap();
    assert_eq!(inv.pods.len(), 1);
}
