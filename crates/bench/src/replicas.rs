//! One workload with many replicas: a short manifest (one Deployment on a
//! few nodes) expanded and placed the way `podplace place -f` does it, to
//! show that the cost grows with the replicas linearly (issue 17: it grew
//! with their square).
//!
//! The manifest is generated in memory: `nodes` nodes in three zones, each
//! with room for every replica, and a Deployment whose pods carry a zone
//! spread constraint (ScheduleAnyway) and preferred hostname
//! anti-affinity against each other: every bind changes the counts of one
//! selector that every later replica reads.

use podplace_engine::place::{place_all_runs, ReplicaRuns};
use podplace_engine::{build_state, PlaceOptions, SchedulerCache};
use podplace_model::load::{load, Source};
use serde_json::{json, Value};

use crate::measure::{peak_rss_kib, MeasureError, Timer};

/// The manifest: `nodes` nodes and one Deployment of `replicas` replicas.
/// `tight` gives the nodes room for only a tenth of the replicas (the rest
/// stay Pending).
pub fn manifest(nodes: usize, replicas: usize, tight: bool) -> String {
    let per_node = if tight {
        (replicas / 10 / nodes.max(1)).max(1)
    } else {
        replicas / nodes.max(1) + 10
    };
    let mut text = String::new();
    for i in 0..nodes {
        text.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: node-{i:03}, labels: {{kubernetes.io/hostname: node-{i:03}, \
             topology.kubernetes.io/zone: zone-{zone}}}}}\nstatus: {{allocatable: {{cpu: '{cpu}', memory: {mem}Gi, pods: '{per_node}'}}}}\n---\n",
            zone = ["a", "b", "c"][i % 3],
            cpu = per_node,
            mem = per_node,
        ));
    }
    text.push_str(&format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      topologySpreadConstraints:
      - {{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {{matchLabels: {{app: web}}}}}}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 10
            podAffinityTerm: {{topologyKey: kubernetes.io/hostname, labelSelector: {{matchLabels: {{app: web}}}}}}
      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m, memory: 100Mi}}}}}}]
"
    ));
    text
}

/// Loads, expands, builds and places the manifest of [`manifest`], timing
/// each step (wall and CPU) as `podplace place -f` runs them.
pub fn run(nodes: usize, replicas: usize, tight: bool) -> Result<Value, MeasureError> {
    let text = manifest(nodes, replicas, tight);
    let mut out =
        json!({"nodes": nodes, "replicas": replicas, "tight": tight, "bytes": text.len()});
    let total = Timer::start();
    let t = Timer::start();
    let mut inv = load(&[Source::Bytes {
        name: "replicas.yaml".to_string(),
        data: text.into_bytes(),
    }])?;
    t.stop(&mut out, "load");
    let t = Timer::start();
    podplace_model::expand::expand_workloads(&mut inv);
    t.stop(&mut out, "expand");
    out["pods"] = json!(inv.pods.len());
    let t = Timer::start();
    let (mut state, pending) = build_state(&inv)?;
    t.stop(&mut out, "build");
    let t = Timer::start();
    let mut cache = SchedulerCache::new();
    let runs = ReplicaRuns::of(&inv, &state);
    let placements = place_all_runs(
        &mut state,
        &mut cache,
        &pending,
        PlaceOptions::default(),
        &runs,
    );
    t.stop(&mut out, "place");
    total.stop(&mut out, "total");
    out["pending"] = json!(pending.len());
    out["placed"] = json!(placements.iter().filter(|p| p.node.is_some()).count());
    out["peak_kib"] = json!(peak_rss_kib());
    Ok(out)
}
