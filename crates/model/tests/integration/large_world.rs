//! Load time of a generated world at Kubernetes' published scalability limits
//! (5,000 nodes, 150,000 pods) as `kubectl get -o json` and `-o yaml` print it.
//! Reported, never asserted: run with
//! `cargo test --release -p podplace-model --test integration large_world -- --ignored --nocapture`.

use std::time::Instant;

use podplace_model::load::{load, Source};
use podplace_testkit::{node, pod, HOST, ZONE};
use serde_json::json;

fn world_json(nodes: usize, pods: usize) -> String {
    serde_json::to_string_pretty(&world(nodes, pods)).unwrap()
}

fn world(nodes: usize, pods: usize) -> serde_json::Value {
    let created = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
    let mut items = Vec::with_capacity(nodes + pods);
    for n in 0..nodes {
        let node = node(&format!("node-{n}"))
            .uid(&format!("uid-n{n}"))
            .label(ZONE, &format!("zone-{}", n % 3))
            .capacity("31500m", "120Gi", "110")
            .merge(created.clone())
            .merge(json!({"spec": {}, "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}));
        items.push(node.value());
    }
    for p in 0..pods {
        let app = format!("app-{}", p % 500);
        let pod = pod(&format!("{app}-{p}"))
            .ns(&format!("ns-{}", p % 50))
            .uid(&format!("uid-p{p}"))
            .label("app", &app)
            .label("tier", "web")
            .on(&format!("node-{}", p % nodes))
            .image("nginx")
            .requests("100m", "128Mi")
            .prefer_anti(100, "app", &[&app], HOST)
            .phase("Running")
            .merge(created.clone())
            .merge(
                json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/not-ready",
                "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}}),
            );
        items.push(pod.value());
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Compact JSON is one line: positions of list items must be found by
/// walking the line once, not by counting it again from its start for every
/// item (which took minutes for a snapshot of this size).
#[test]
fn compact_json_loads_in_linear_time() {
    let (nodes, pods) = (100, 20_000);
    let json = serde_json::to_string(&world(nodes, pods)).unwrap();
    assert!(!json.contains('\n'));
    let t = Instant::now();
    let inv = load(&[Source::Bytes {
        name: "compact.json".into(),
        data: json.as_bytes().to_vec(),
    }])
    .unwrap();
    let elapsed = t.elapsed();
    assert_eq!(inv.nodes.len(), nodes);
    assert_eq!(inv.pods.len(), pods);
    // Every object sits on line 1, at the column of its opening brace.
    let mut from = 0;
    for pod in &inv.pods {
        let name = pod.object.metadata.name.as_deref().unwrap();
        let named = from + json[from..].find(&format!("\"name\":\"{name}\"")).unwrap();
        let at = json[..named].rfind("{\"apiVersion\"").unwrap();
        assert_eq!((pod.origin.line, pod.origin.column), (1, at + 1), "{name}");
        from = named;
    }
    println!(
        "{nodes} nodes, {pods} pods: compact JSON ({} MB) loaded in {elapsed:.2?}",
        json.len() >> 20
    );
}

#[test]
#[ignore = "benchmark: run explicitly"]
fn load_time_at_scalability_limits() {
    // LARGE_WORLD_SMALL=1 runs only the small world (for profiling).
    let sizes: &[(usize, usize)] = if std::env::var_os("LARGE_WORLD_SMALL").is_some() {
        &[(500, 15_000)]
    } else {
        &[(500, 15_000), (5_000, 150_000)]
    };
    for &(nodes, pods) in sizes {
        let json = world_json(nodes, pods);
        let t = Instant::now();
        let inv = load(&[Source::Bytes {
            name: "world.json".into(),
            data: json.as_bytes().to_vec(),
        }])
        .unwrap();
        assert_eq!(inv.pods.len(), pods);
        println!(
            "{nodes} nodes, {pods} pods: JSON ({} MB) loaded in {:.2?}",
            json.len() >> 20,
            t.elapsed()
        );
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let yaml = serde_saphyr::to_string(&value).unwrap();
        drop(value);
        let t = Instant::now();
        let inv = load(&[Source::Bytes {
            name: "world.yaml".into(),
            data: yaml.into_bytes(),
        }])
        .unwrap();
        assert_eq!(inv.pods.len(), pods);
        println!(
            "{nodes} nodes, {pods} pods: YAML loaded in {:.2?}",
            t.elapsed()
        );
    }
}
