//! `podplace-bench serve-features`: what `podplace serve`'s features cost
//! per request on the benchmark cluster (issue 18): admission reviews
//! answered as the webhook answers them (everything but TLS and HTTP:
//! the review cache's newest view of the model, rebuilt off the request
//! path by its refresher thread while watch updates land, the lint rules
//! with PP003's rollout replay on), and the HA watch's report per
//! tick (a full recompute against the incremental one after a few
//! updates).
//!
//! The cluster is the generated one (default 5,000 nodes, 150,000 running
//! and 10,000 pending pods), synced as watch events into an empty
//! observed world like `podplace-bench serve`, plus a pool of three nodes
//! (`pool=story4`) where the story-4 Deployment (required anti-affinity on
//! the hostname, `maxUnavailable: 0`) deadlocks, so its review must warn
//! PP003 at any cluster size.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use podplace_model::inventory::{Inventory, Object, Origin};
use podplace_serve::admission::check::AdmissionOptions;
use podplace_serve::admission::review::{AdmissionRequest, GroupVersionKind};
use podplace_serve::admission::ReviewCache;
use podplace_serve::shared::Model;
use podplace_world::{Change, SchedulerSetup, World};
use serde_json::{json, Value};

use crate::generate::{self, generate, Shape};
use crate::loads::load_average;

/// What `serve-features` measures.
#[derive(Debug, Clone)]
pub struct FeaturesArgs {
    /// The generated cluster.
    pub shape: Shape,
    /// Admission reviews to answer.
    pub reviews: usize,
    /// Apply one watch update (a model generation) every this many
    /// reviews (0: never), so reviews meet a model newer than their view
    /// (the p99 then counts them).
    pub update_every: usize,
    /// HA ticks to time, each after a few updates.
    pub ticks: usize,
    /// Copies of the model to time, each followed by one change to the
    /// model while the copy is kept (what a view costs the watch).
    pub copies: usize,
    /// Where to write the results as JSON.
    pub out: Option<PathBuf>,
}

/// The review kinds of the mix, in the report's order.
pub const REVIEW_KINDS: [&str; 5] = [
    "new Deployment",
    "Deployment template update",
    "story-4 Deployment",
    "StatefulSet",
    "bare Pod",
];

/// The label of the story-4 node pool.
const POOL: (&str, &str) = ("pool", "story4");

/// Thread CPU time so far, in seconds (0 when unknown).
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns * 1e-9)
}

/// Median, 99th percentile and largest of durations in seconds.
pub fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    (at(0.5), at(0.99), v[v.len() - 1])
}

fn to_object(o: generate::Object) -> Object {
    match o {
        generate::Object::Namespace(x) => Object::Namespace(*x),
        generate::Object::Node(x) => Object::Node(*x),
        generate::Object::ReplicaSet(x) => Object::ReplicaSet(*x),
        generate::Object::Pod(x) => Object::Pod(*x),
        generate::Object::PersistentVolume(x) => Object::PersistentVolume(*x),
        generate::Object::PersistentVolumeClaim(x) => Object::PersistentVolumeClaim(*x),
        generate::Object::StorageClass(x) => Object::StorageClass(*x),
        generate::Object::CsiNode(x) => Object::CSINode(*x),
        generate::Object::CsiDriver(x) => Object::CSIDriver(*x),
    }
}

/// The three nodes of the story-4 pool.
fn pool_nodes() -> Vec<Object> {
    (0..3)
        .map(|i| {
            let name = format!("story4-{i}");
            let node = json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name, POOL.0: POOL.1,
                    "topology.kubernetes.io/zone": "story4-zone"}},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
            });
            Object::Node(serde_json::from_value(node).unwrap_or_default())
        })
        .collect()
}

/// A workload template of the generated cluster.
#[derive(Debug, Clone)]
struct Template {
    namespace: String,
    name: String,
    selector: Value,
    template: Value,
}

/// The `i`th review of the mix (kind index, request).
fn review_request(i: usize, templates: &[Template]) -> (usize, AdmissionRequest) {
    let kind = i % REVIEW_KINDS.len();
    let t = &templates[(i / REVIEW_KINDS.len()) % templates.len()];
    let request =
        |group: &str, kind: &str, operation: &str, ns: &str, name: &str, object| AdmissionRequest {
            uid: format!("uid-{i}"),
            kind: GroupVersionKind {
                group: group.to_string(),
                version: "v1".to_string(),
                kind: kind.to_string(),
            },
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            operation: operation.to_string(),
            object: Some(object),
            ..Default::default()
        };
    let ns = t.namespace.as_str();
    let r = match kind {
        0 => {
            let name = format!("review-{i}");
            let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "selector": t.selector, "template": t.template}});
            request("apps", "Deployment", "CREATE", ns, &name, object)
        }
        1 => {
            // The running workload's template, changed (a new image).
            let mut template = t.template.clone();
            if let Some(c) = template.pointer_mut("/spec/containers/0") {
                c["image"] = json!(format!("registry.example/app:{i}"));
            }
            let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": t.name, "namespace": ns},
                "spec": {"replicas": 3, "selector": t.selector, "template": template}});
            request("apps", "Deployment", "UPDATE", ns, &t.name, object)
        }
        2 => {
            let labels = json!({"app": "story4"});
            let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "story4", "namespace": "default"},
                "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                  "strategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                  "template": {"metadata": {"labels": labels}, "spec": {
                    "nodeSelector": {POOL.0: POOL.1},
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": labels},
                         "topologyKey": "kubernetes.io/hostname"}]}},
                    "containers": [{"name": "web", "image": "nginx",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}});
            request("apps", "Deployment", "CREATE", "default", "story4", object)
        }
        3 => {
            let name = format!("review-sts-{i}");
            let object = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "serviceName": name, "selector": t.selector,
                         "template": t.template}});
            request("apps", "StatefulSet", "CREATE", ns, &name, object)
        }
        _ => {
            let name = format!("review-pod-{i}");
            let object = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns,
                             "labels": t.template.pointer("/metadata/labels")},
                "spec": t.template.get("spec")});
            request("", "Pod", "CREATE", ns, &name, object)
        }
    };
    (kind, r)
}

/// A small watch update (a model generation): a node relabelled.
fn an_update(world: &World, n: usize) -> Option<Change> {
    let state = world.state();
    let count = state.nodes().len();
    let node = state.node_ids().nth(n.wrapping_mul(7919) % count.max(1))?;
    let name = state.node(node).name.to_string();
    let inv = world.inventory();
    let api = inv
        .nodes
        .iter()
        .find(|x| x.object.metadata.name.as_deref() == Some(name.as_str()))?;
    let mut object = api.object.clone();
    object
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("bench.podplace.io/rev".to_string(), format!("r{n}"));
    Some(Change::Upsert(Object::Node(object)))
}

/// A pod update (a model generation the HA watch recomputes only part
/// for): a running pod relabelled, or a pending pod bound to a node.
fn a_pod_update(world: &World, n: usize) -> Option<Change> {
    let state = world.state();
    let pods = &world.inventory().pods;
    if pods.is_empty() {
        return None;
    }
    let mut pod = pods
        .get(n.wrapping_mul(104_729) % pods.len())?
        .object
        .clone();
    let spec = pod.spec.get_or_insert_with(Default::default);
    if n.is_multiple_of(2) && spec.node_name.is_none() {
        let count = state.nodes().len().max(1);
        let node = state.node_ids().nth(n.wrapping_mul(7919) % count)?;
        spec.node_name = Some(state.node(node).name.to_string());
    } else {
        pod.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("bench.podplace.io/rev".to_string(), format!("r{n}"));
    }
    Some(Change::Upsert(Object::Pod(pod)))
}

/// Runs the rows; the results as JSON (printed as markdown too).
pub fn features(args: &FeaturesArgs) -> anyhow::Result<Value> {
    let load_before = load_average();
    let snapshot = generate(&args.shape);
    let mut templates = Vec::new();
    let mut objects: Vec<Object> = Vec::new();
    for o in snapshot.objects {
        if let generate::Object::ReplicaSet(rs) = &o {
            if templates.len() < 200 {
                let spec = rs.spec.as_ref();
                templates.push(Template {
                    namespace: rs.metadata.namespace.clone().unwrap_or_default(),
                    name: rs.metadata.name.clone().unwrap_or_default(),
                    selector: json!(spec.map(|s| &s.selector)),
                    template: json!(spec.and_then(|s| s.template.as_ref())),
                });
            }
        }
        objects.push(to_object(o));
    }
    objects.extend(pool_nodes());
    // As podplace serve's first sync builds its model: every listed
    // object at once, the pods packed as they move in.
    let sync = Instant::now();
    let mut listed = Inventory::default();
    for o in objects {
        listed.push(o, Origin::default());
    }
    let world = World::observed_packed(&mut listed, &SchedulerSetup::default(), 0)?;
    drop(listed);
    let sync_secs = sync.elapsed().as_secs_f64();
    let (nodes, pods) = (
        world.state().nodes().len(),
        world.state().live_pods().count(),
    );
    let model = Arc::new(Model::new(world));
    model.set_ready();
    let rss_synced = crate::memory::rss_split_kib().0;

    // Admission: the webhook's path without TLS and HTTP, its refresher
    // thread building views off the request path as the webhook's does.
    let options = AdmissionOptions::default();
    let cache = Arc::new(ReviewCache::default());
    let t = Instant::now();
    let first_view = cache.refresh(&model);
    let first_view_secs = t.elapsed().as_secs_f64();
    let refresher = podplace_serve::admission::spawn_refresher(
        cache.clone(),
        model.clone(),
        podplace_serve::admission::WebhookOptions::default().index_refresh,
    )?;
    let mut views = vec![first_view.generation()];
    let mut view_secs = Vec::new();
    let mut stale = 0;
    let mut rss_peak = rss_synced;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); REVIEW_KINDS.len()];
    let mut all = Vec::new();
    let mut warned = vec![0usize; REVIEW_KINDS.len()];
    let mut story4_pp003 = 0;
    let mut updates = 0;
    let mut update_secs = Vec::new();
    let (cpu0, wall0) = (thread_cpu_seconds(), Instant::now());
    for i in 0..args.reviews {
        if args.update_every > 0 && i > 0 && i % args.update_every == 0 {
            // Alternately a node and a pod: both churn the model.
            let change = if (i / args.update_every).is_multiple_of(2) {
                an_update(&model.read(), i)
            } else {
                a_pod_update(&model.read(), i)
            };
            if let Some(change) = change {
                let t = Instant::now();
                model.write().apply(change)?;
                update_secs.push(t.elapsed().as_secs_f64());
                updates += 1;
            }
        }
        let (kind, request) = review_request(i, &templates);
        let t = Instant::now();
        let generation = model.generation();
        let answer = cache.review(&model, &request, &options);
        let took = t.elapsed().as_secs_f64();
        if let Some(view) = cache.view() {
            stale += usize::from(view.generation() < generation);
            if !views.contains(&view.generation()) {
                views.push(view.generation());
                view_secs.push(view.built_in().as_secs_f64());
            }
        }
        if i % 10 == 0 {
            rss_peak = rss_peak.max(crate::memory::rss_split_kib().0);
        }
        times[kind].push(took);
        all.push(took);
        if !answer.response.warnings.is_empty() {
            warned[kind] += 1;
        }
        if kind == 2
            && answer
                .response
                .warnings
                .iter()
                .any(|w| w.starts_with("podplace PP003:"))
        {
            story4_pp003 += 1;
        }
        if i < REVIEW_KINDS.len() {
            println!(
                "review {i} ({}): {:.1} ms, {:?}",
                REVIEW_KINDS[kind],
                took * 1e3,
                answer.response.warnings
            );
        }
    }
    let cpu_mean = (thread_cpu_seconds() - cpu0) / args.reviews.max(1) as f64;
    let wall_mean = wall0.elapsed().as_secs_f64() / args.reviews.max(1) as f64;
    drop(refresher);
    let (p50, p99, max) = percentiles(all);
    let (up50, up99, upmax) = percentiles(update_secs.clone());
    let (v50, _, vmax) = percentiles(view_secs.clone());
    // The same mix answered from scratch (no index), for comparison, and
    // what building the generation's index costs alone.
    let mut scratch = Vec::new();
    for i in 0..REVIEW_KINDS.len() {
        let (_, request) = review_request(i, &templates);
        let t = Instant::now();
        let answer = podplace_serve::admission::check::review(&model.read(), &request, &options);
        scratch.push(t.elapsed().as_secs_f64());
        std::hint::black_box(answer);
    }
    let t = Instant::now();
    let copy = model.read().clone();
    let copy_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let index = podplace_lint::live::LiveIndex::new(&copy);
    let index_secs = t.elapsed().as_secs_f64();
    drop((index, copy));

    // What a view costs the watch, without the lock: the copy taken under
    // the model's read guard, then the first change to the model while
    // the copy is kept (it copies whatever the copy shares and the change
    // writes), node and pod changes alternately.
    let mut copy_times = Vec::new();
    let mut first_write = [Vec::new(), Vec::new()];
    for k in 0..args.copies {
        let t = Instant::now();
        let copy = model.read().clone();
        copy_times.push(t.elapsed().as_secs_f64());
        let change = if k % 2 == 0 {
            an_update(&model.read(), 20_000 + k)
        } else {
            a_pod_update(&model.read(), 20_000 + k)
        };
        if let Some(change) = change {
            let t = Instant::now();
            model.write().apply(change)?;
            first_write[k % 2].push(t.elapsed().as_secs_f64());
        }
        drop(copy);
    }
    let (copy50, _, copy_max) = percentiles(copy_times);
    let (node50, node99, node_max) = percentiles(first_write[0].clone());
    let (pod50, pod99, pod_max) = percentiles(first_write[1].clone());

    // The HA watch: a full report, then ticks after a few updates each.
    let mut watch = podplace_serve::ha::HaWatch::new();
    let t = Instant::now();
    let first = watch.update(&model);
    let first_secs = t.elapsed().as_secs_f64();
    let mut full_secs = Vec::new();
    let mut tick_secs = Vec::new();
    let mut recomputed = Vec::new();
    let mut tick_costs = Vec::new();
    let mut same = true;
    for k in 0..args.ticks {
        for j in 0..5 {
            let change = a_pod_update(&model.read(), 10_000 + k * 5 + j);
            if let Some(change) = change {
                model.write().apply(change)?;
            }
        }
        let t = Instant::now();
        let report = watch.update(&model);
        tick_secs.push(t.elapsed().as_secs_f64());
        recomputed.push(watch.last_recomputed());
        tick_costs = report.costs.clone();
        let t = Instant::now();
        let full = podplace_serve::ha::findings(&model.read());
        full_secs.push(t.elapsed().as_secs_f64());
        same &= full.findings == report.findings && full.domains == report.domains;
    }
    let load_after = load_average();

    println!("## podplace serve features at scale\n");
    println!(
        "{nodes} nodes, {pods} pods (synced in {sync_secs:.1} s), {} reviews, an update every {} reviews ({updates} updates); load average {load_before:.2} → {load_after:.2}\n",
        args.reviews, args.update_every
    );
    println!("| row | result | target |\n|---|---|---|");
    println!(
        "| admission review, all kinds: median / p99 / max | {:.1} / {:.1} / {:.1} ms | p99 ≤ 100 ms |",
        p50 * 1e3,
        p99 * 1e3,
        max * 1e3
    );
    println!(
        "| admission review: mean thread CPU / mean wall | {:.1} / {:.1} ms | |",
        cpu_mean * 1e3,
        wall_mean * 1e3
    );
    println!(
        "| reviews that met a model newer than their view (answered from the previous view, off the request path) | {stale} of {} | |",
        args.reviews
    );
    println!(
        "| views built by the refresher during the reviews: count, copy + index median / max | {}, {:.1} / {:.1} ms (the first, before the reviews: {:.1} ms) | off the request path |",
        view_secs.len(),
        v50 * 1e3,
        vmax * 1e3,
        first_view_secs * 1e3
    );
    println!(
        "| the model copied under its read guard (a view's copy), {} copies: median / max | {:.3} / {:.3} ms | |",
        args.copies,
        copy50 * 1e3,
        copy_max * 1e3
    );
    println!(
        "| first change after a copy, the copy kept: node relabel ({}) median / p99 / max | {:.3} / {:.3} / {:.3} ms | ≤ 1 ms |",
        first_write[0].len(),
        node50 * 1e3,
        node99 * 1e3,
        node_max * 1e3
    );
    println!(
        "| first change after a copy, the copy kept: pod relabel or bind ({}) median / p99 / max | {:.3} / {:.3} / {:.3} ms | ≤ 1 ms |",
        first_write[1].len(),
        pod50 * 1e3,
        pod99 * 1e3,
        pod_max * 1e3
    );
    println!(
        "| one update applied while views are kept (copy-on-write): median / p99 / max | {:.3} / {:.3} / {:.3} ms | ≤ 1 ms |",
        up50 * 1e3,
        up99 * 1e3,
        upmax * 1e3
    );
    println!(
        "| memory (RssAnon): after the sync / peak during the reviews | {} / {} MiB | ≤ 1,536 MiB |",
        rss_synced / 1024,
        rss_peak / 1024
    );
    let mut rows = Vec::new();
    for (k, name) in REVIEW_KINDS.iter().enumerate() {
        let (a, b, c) = percentiles(times[k].clone());
        println!(
            "| review {name} ({}, {} warned): median / p99 / max | {:.1} / {:.1} / {:.1} ms | |",
            times[k].len(),
            warned[k],
            a * 1e3,
            b * 1e3,
            c * 1e3
        );
        rows.push(
            json!({"kind": name, "count": times[k].len(), "warned": warned[k],
                         "median_s": a, "p99_s": b, "max_s": c}),
        );
    }
    println!(
        "| story-4 reviews warning PP003 (replay on) | {story4_pp003} of {} | all |",
        times[2].len()
    );
    println!(
        "| one review of each kind from scratch (no index) | {} ms | |",
        scratch
            .iter()
            .map(|s| format!("{:.1}", s * 1e3))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!(
        "| one view built alone: copying the model / indexing the copy (LiveIndex) | {:.1} / {:.1} ms | |",
        copy_secs * 1e3,
        index_secs * 1e3
    );
    let (ha_full, _, ha_full_max) = percentiles(full_secs.clone());
    let (ha_tick, _, ha_tick_max) = percentiles(tick_secs.clone());
    println!(
        "| HA report: first (full) | {:.1} ms ({} findings) | tick 2 s |",
        first_secs * 1e3,
        first.findings.len()
    );
    println!(
        "| HA report after 5 pod updates: full recompute median / max | {:.1} / {:.1} ms | |",
        ha_full * 1e3,
        ha_full_max * 1e3
    );
    println!(
        "| HA report after 5 pod updates: the watch's incremental tick median / max (same findings as full: {same}; workloads recomputed {recomputed:?}) | {:.1} / {:.1} ms | |",
        ha_tick * 1e3,
        ha_tick_max * 1e3
    );
    println!(
        "| the last incremental tick by part | {} | |",
        tick_costs
            .iter()
            .map(|(n, d)| format!("{n} {:.1} ms", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let result = json!({
        "shape": {"nodes": args.shape.nodes, "pods": args.shape.pods,
                  "new_pods": args.shape.new_pods, "seed": args.shape.seed},
        "load_average": {"before": load_before, "after": load_after},
        "admission": {"reviews": args.reviews, "median_s": p50, "p99_s": p99, "max_s": max,
                      "mean_cpu_s": cpu_mean, "mean_wall_s": wall_mean, "kinds": rows,
                      "story4_pp003": story4_pp003, "updates": updates,
                      "update_every": args.update_every, "scratch_s": scratch,
                      "index_s": index_secs, "copy_s": copy_secs,
                      "stale_reviews": stale, "views_built": view_secs.len(),
                      "view_s": view_secs, "first_view_s": first_view_secs,
                      "update_s": {"median": up50, "p99": up99, "max": upmax},
                      "copy_kept_s": {"copies": args.copies, "copy_median": copy50,
                                      "copy_max": copy_max,
                                      "node_first_write": [node50, node99, node_max],
                                      "pod_first_write": [pod50, pod99, pod_max]},
                      "rss_kib": {"synced": rss_synced, "peak": rss_peak}},
        "ha": {"first_s": first_secs, "full_s": full_secs, "tick_s": tick_secs,
               "same_findings": same, "recomputed": recomputed,
               "tick_costs": tick_costs.iter().map(|(n, d)| json!([n, d.as_secs_f64()])).collect::<Vec<_>>(),
               "first_costs": first.costs.iter().map(|(n, d)| json!([n, d.as_secs_f64()])).collect::<Vec<_>>()},
    });
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    }
    Ok(result)
}

/// Usage of `podplace-bench serve-features`.
pub const USAGE: &str = "\
usage: podplace-bench serve-features [--nodes N] [--pods N] [--workloads N]
                                     [--new-pods N] [--seed N] [--reviews N]
                                     [--update-every N] [--ticks N]
                                     [--copies N] [--out RESULTS.json]

Syncs the generated cluster (default 5,000 nodes, 150,000 running and
10,000 pending pods) plus a three-node story-4 pool, answers --reviews
admission reviews (default 200: new Deployments, template updates of
running workloads, the story-4 Deployment, StatefulSets, bare Pods) as the
webhook answers them (from views of the model a refresher thread builds
off the request path, as the webhook's), with a watch update (a node or a
pod, alternately) every --update-every reviews (default 20; 0: none), so
reviews meet models newer than their view, then times --ticks HA watch ticks (default 5) after 5
updates each against a full recompute, and --copies copies of the model
(default 100) each followed by one change while the copy is kept (what a
view costs the watch); prints median / p99 / max.";

/// `podplace-bench serve-features ARGS`: parses `args`, runs
/// [`features`]; the exit code.
pub fn command(args: &[String]) -> std::process::ExitCode {
    let mut a = FeaturesArgs {
        shape: Shape::default(),
        reviews: 200,
        update_every: 20,
        ticks: 5,
        copies: 100,
        out: None,
    };
    let own = |flag: &str, n: usize| {
        match flag {
            "--reviews" if n > 0 => a.reviews = n,
            "--update-every" => a.update_every = n,
            "--ticks" => a.ticks = n,
            "--copies" => a.copies = n,
            _ => return false,
        }
        true
    };
    if let Some(code) =
        crate::scale_args::parse("serve-features", USAGE, args, &mut a.shape, &mut a.out, own)
    {
        return code;
    }
    crate::scale_args::finish("serve-features", features(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_cluster_reviews_and_the_story4_deployment_warns() {
        let shape = Shape {
            nodes: 30,
            pods: 300,
            workloads: 20,
            new_pods: 20,
            new_workloads: 2,
            seed: 3,
        };
        let r = features(&FeaturesArgs {
            shape,
            reviews: 10,
            update_every: 3,
            ticks: 1,
            copies: 4,
            out: None,
        })
        .expect("runs");
        assert_eq!(r["admission"]["story4_pp003"], json!(2));
        assert_eq!(r["ha"]["same_findings"], json!(true));
    }
}
