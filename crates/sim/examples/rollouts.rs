//! Benchmark: a 500-node cluster with 10 Deployments of 200 replicas, each
//! rolled out once (issue: under 5 s). Reported, not asserted:
//!
//! ```text
//! cargo run --release -p podplace-sim --example rollouts [nodes] [deployments] [replicas]
//! ```

use std::path::Path;
use std::time::Instant;

use podplace_sim::findings::FindingKind;
use podplace_sim::scenario::{Apply, OneOrMany, Rollout, SetSpec, Step};
use podplace_sim::{run, NoExtensions, Scenario};
use serde_json::json;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let nodes = args.first().copied().unwrap_or(500);
    let deployments = args.get(1).copied().unwrap_or(10);
    let replicas = args.get(2).copied().unwrap_or(200);

    let mut objects = Vec::new();
    for i in 0..nodes {
        objects.push(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i:04}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i:04}"),
                "topology.kubernetes.io/zone": format!("zone-{}", i % 3)}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}
        }));
    }
    let mut steps = Vec::new();
    let mut apps = Vec::new();
    for d in 0..deployments {
        apps.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("app-{d}"), "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": format!("app-{d}")}},
                "template": {
                    "metadata": {"labels": {"app": format!("app-{d}")}},
                    "spec": {
                        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                            "weight": 100,
                            "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": format!("app-{d}")}},
                                                 "topologyKey": "kubernetes.io/hostname"}}]}},
                        "containers": [{"name": "app", "image": "app:1",
                                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]
                    }
                }
            }
        }));
    }
    steps.push(Step::Apply(Apply::Detailed {
        files: OneOrMany::Many(Vec::new()),
        objects: apps,
    }));
    for d in 0..deployments {
        steps.push(Step::Rollout(Rollout {
            workload: format!("deployment/app-{d}"),
            namespace: None,
            set: Some(SetSpec {
                image: Some("app:2".to_string()),
                images: Default::default(),
            }),
            restart: false,
            patch: None,
        }));
    }
    let scenario = Scenario {
        file: "generated".to_string(),
        base_dir: Path::new(".").to_path_buf(),
        cluster: Vec::new(),
        inline_objects: objects,
        seed: 0,
        ready_after: Default::default(),
        steps,
        text: None,
    };
    let start = Instant::now();
    let result = run(&scenario, &mut NoExtensions).expect("run");
    let elapsed = start.elapsed();
    let pods = result.steps.last().map_or(0, |s| s.pods.len());
    let stuck = result
        .steps
        .iter()
        .flat_map(|s| &s.findings)
        .filter(|f| f.kind == FindingKind::RolloutStuck)
        .count();
    let complete = result
        .steps
        .iter()
        .flat_map(|s| &s.changes)
        .filter(|c| c.to_string().starts_with("rollout of") && c.to_string().ends_with("complete"))
        .count();
    println!(
        "{nodes} nodes, {deployments} Deployments x {replicas} replicas, {deployments} rollouts: {:.2} s ({pods} pods at the end, {complete} rollouts complete, {stuck} stuck, simulated time {})",
        elapsed.as_secs_f64(),
        result.steps.last().map(|s| s.elapsed()).unwrap_or_default()
    );
}
