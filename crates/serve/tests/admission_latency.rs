//! How long one admission review takes on the benchmark cluster
//! (podplace-bench's generator: 5,000 nodes, 150,000 running pods, 10,000
//! pending, unbound as serve's model holds them). Ignored by default (the
//! world takes a while to generate in a debug build):
//!
//! ```text
//! cargo test -p podplace-serve --test admission_latency -- --ignored --nocapture
//! PODPLACE_ADMISSION_NODES=1000 ... (a smaller cluster, pods scaled alike)
//! ```
//!
//! Each review is a Deployment applied over one of the generated
//! workloads (its template, 3 replicas, CREATE of a new name or UPDATE of
//! the running one) answered by `check::review` on the model's world, as
//! the server answers it under the read guard; p50 and p99 are printed.

use std::time::{Duration, Instant};

use podplace_bench::generate::{self, generate, Shape};
use podplace_model::inventory::{Inventory, Object, Origin};
use podplace_serve::admission::check::{review, AdmissionOptions};
use podplace_serve::admission::review::{AdmissionRequest, GroupVersionKind};
use podplace_world::{SchedulerSetup, World};
use serde_json::{json, Value};

fn shape() -> Shape {
    let nodes: usize = std::env::var("PODPLACE_ADMISSION_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let full = Shape::default();
    let scale = |n: usize| n * nodes / full.nodes;
    Shape {
        nodes,
        pods: scale(full.pods),
        workloads: scale(full.workloads).max(1),
        new_pods: scale(full.new_pods),
        new_workloads: full.new_workloads,
        seed: full.seed,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[test]
#[ignore = "generates the 5,000-node benchmark cluster; run with --ignored"]
fn one_review_at_benchmark_scale() {
    let shape = shape();
    let started = Instant::now();
    let snapshot = generate(&shape);
    let mut inventory = Inventory::default();
    let mut templates: Vec<Value> = Vec::new();
    for o in snapshot.objects {
        let object = match o {
            generate::Object::Namespace(x) => Object::Namespace(*x),
            generate::Object::Node(x) => Object::Node(*x),
            generate::Object::ReplicaSet(x) => {
                if templates.len() < 200 {
                    templates.push(json!({
                        "namespace": x.metadata.namespace,
                        "name": x.metadata.name,
                        "selector": x.spec.as_ref().map(|s| &s.selector),
                        "template": x.spec.as_ref().and_then(|s| s.template.as_ref()),
                    }));
                }
                Object::ReplicaSet(*x)
            }
            generate::Object::Pod(x) => Object::Pod(*x),
            _ => continue,
        };
        inventory.push(object, Origin::default());
    }
    let world = World::observed(inventory, &SchedulerSetup::default(), 0).expect("world");
    eprintln!(
        "{} nodes, {} pods: generated and observed in {:.1} s",
        world.state().nodes().len(),
        world.state().live_pods().count(),
        started.elapsed().as_secs_f64()
    );
    let options = AdmissionOptions::default();
    let reviews: usize = std::env::var("PODPLACE_ADMISSION_REVIEWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let mut times = Vec::with_capacity(reviews);
    let mut warned = 0;
    for i in 0..reviews {
        let t = &templates[i % templates.len()];
        let namespace = t["namespace"].as_str().unwrap_or("default").to_string();
        // Half the reviews apply a new Deployment, half one over a
        // running workload's name.
        let (operation, name) = if i % 2 == 0 {
            ("CREATE", format!("review-{i}"))
        } else {
            ("UPDATE", t["name"].as_str().unwrap_or("x").to_string())
        };
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 3, "selector": t["selector"], "template": t["template"]}
        });
        let request = AdmissionRequest {
            uid: format!("uid-{i}"),
            kind: GroupVersionKind {
                group: "apps".to_string(),
                version: "v1".to_string(),
                kind: "Deployment".to_string(),
            },
            name: Some(name),
            namespace: Some(namespace),
            operation: operation.to_string(),
            object: Some(object),
            ..Default::default()
        };
        let t0 = Instant::now();
        let answer = review(&world, &request, &options);
        let took = t0.elapsed();
        times.push(took);
        eprintln!(
            "review {i} ({operation}): {:.1} ms, {} warning(s)",
            took.as_secs_f64() * 1e3,
            answer.response.warnings.len()
        );
        assert!(answer.response.allowed);
        if !answer.response.warnings.is_empty() {
            warned += 1;
        }
    }
    times.sort();
    eprintln!(
        "{reviews} reviews ({warned} with warnings): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}
