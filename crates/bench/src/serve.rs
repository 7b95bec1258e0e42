//! `podplace-bench serve`: the scale rows of `podplace serve` (issue 18).
//! The generated cluster is fed as a stream of watch events
//! (`Change::Upsert`, in the generator's order: namespaces, nodes,
//! ReplicaSets, running pods, pending pods) into an empty observed world —
//! the initial sync — and then random updates are applied one by one: a
//! pending pod bound, a running pod deleted, relabelled or given a new
//! status, a node tainted. Each update is timed alone (median and p99 per
//! kind); peak and steady memory are read from `/proc/self/status`.
//! Pushing 150,000 pods through a real API server on two cores takes too
//! long, hence the in-process stream.

use std::path::PathBuf;
use std::time::Instant;

use k8s_openapi::api::core::v1 as core;
use podplace_model::inventory::{Inventory, Object, ObjectKey, ObjectKind};
use podplace_world::{Change, SchedulerSetup, World};
use serde_json::{json, Value};

use crate::generate::{self, generate, Shape};
use crate::loads::load_average;
use crate::memory::{rss_split_kib, Sampler};
use crate::rng::Rng;

/// What `serve` measures.
#[derive(Debug, Clone)]
pub struct ServeArgs {
    /// The generated cluster.
    pub shape: Shape,
    /// How many updates to apply after the sync.
    pub updates: usize,
    /// How many Pending pods to explain on the synced world.
    pub explains: usize,
    /// How many times the pod no node admits is explained (median / max).
    pub stuck_runs: usize,
    /// Where to write the results as JSON.
    pub out: Option<PathBuf>,
}

/// The kinds of update, in the order of the report.
const KINDS: [&str; 5] = ["bind", "delete", "relabel pod", "pod status", "taint node"];

/// Share of each kind among the updates (sums to 1).
const SHARES: [f64; 5] = [0.25, 0.2, 0.2, 0.2, 0.15];

/// A watch event as it arrives: the object's JSON (what a watch stream
/// carries), decoded only when applied, so the objects waiting to be fed
/// hold no more than a watch's buffer would, and the memory rows measure
/// the model.
#[derive(Debug)]
enum Event {
    /// An added or modified object, as JSON.
    Upsert(ObjectKind, Vec<u8>),
    /// A deleted object.
    Delete(ObjectKey),
}

impl Event {
    /// The event of an object added or modified.
    fn of(o: Object) -> Event {
        let kind = o.kind();
        Event::Upsert(kind, object_json(&o))
    }

    /// The change to apply (the JSON decoded).
    fn change(self) -> anyhow::Result<Change> {
        Ok(match self {
            Event::Delete(k) => Change::Delete(k),
            Event::Upsert(kind, json) => Change::Upsert(decode(kind, &json)?),
        })
    }
}

/// The JSON of an object of a kind the generator makes.
fn object_json(o: &Object) -> Vec<u8> {
    let json = match o {
        Object::Namespace(x) => serde_json::to_vec(x),
        Object::Node(x) => serde_json::to_vec(x),
        Object::ReplicaSet(x) => serde_json::to_vec(x),
        Object::Pod(x) => serde_json::to_vec(x),
        Object::PersistentVolume(x) => serde_json::to_vec(x),
        Object::PersistentVolumeClaim(x) => serde_json::to_vec(x),
        Object::StorageClass(x) => serde_json::to_vec(x),
        Object::CSINode(x) => serde_json::to_vec(x),
        Object::CSIDriver(x) => serde_json::to_vec(x),
        _ => Ok(Vec::new()),
    };
    json.unwrap_or_default()
}

/// The object of `kind` that `json` holds.
fn decode(kind: ObjectKind, json: &[u8]) -> anyhow::Result<Object> {
    use serde_json::from_slice as de;
    Ok(match kind {
        ObjectKind::Namespace => Object::Namespace(de(json)?),
        ObjectKind::Node => Object::Node(de(json)?),
        ObjectKind::ReplicaSet => Object::ReplicaSet(de(json)?),
        ObjectKind::Pod => Object::Pod(de(json)?),
        ObjectKind::PersistentVolume => Object::PersistentVolume(de(json)?),
        ObjectKind::PersistentVolumeClaim => Object::PersistentVolumeClaim(de(json)?),
        ObjectKind::StorageClass => Object::StorageClass(de(json)?),
        ObjectKind::CSINode => Object::CSINode(de(json)?),
        ObjectKind::CSIDriver => Object::CSIDriver(de(json)?),
        other => anyhow::bail!("the generator makes no {}", other.name()),
    })
}

/// The watch-event form of a generated object.
pub(crate) fn to_object(o: generate::Object) -> Object {
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

/// `count` distinct numbers below `n` (fewer when `n` is smaller).
fn distinct(rng: &mut Rng, n: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    let count = count.min(n);
    for i in 0..count {
        let j = i + rng.below(n - i);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// The updates to apply, made before the sync so that only applying them
/// is timed: `(kind index, change)`, shuffled.
fn updates(objects: &[generate::Object], count: usize, seed: u64) -> Vec<(usize, Event)> {
    let mut rng = Rng::new(seed ^ 0x5E4E_u64);
    let (mut pending, mut running, mut nodes) = (Vec::new(), Vec::new(), Vec::new());
    for (i, o) in objects.iter().enumerate() {
        match o {
            generate::Object::Pod(p)
                if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() =>
            {
                running.push(i)
            }
            generate::Object::Pod(_) => pending.push(i),
            generate::Object::Node(_) => nodes.push(i),
            _ => {}
        }
    }
    let wanted = |k: usize| (count as f64 * SHARES[k]).round() as usize;
    let binds = distinct(&mut rng, pending.len(), wanted(0));
    // Running pods are picked once each, for one of the three pod updates.
    let pod_updates = wanted(1) + wanted(2) + wanted(3);
    let picked = distinct(&mut rng, running.len(), pod_updates);
    let taints = distinct(&mut rng, nodes.len(), wanted(4));
    let name = |i: usize| match &objects[i] {
        generate::Object::Node(n) => n.metadata.name.clone().unwrap_or_default(),
        _ => String::new(),
    };
    let pod = |i: usize| match &objects[i] {
        generate::Object::Pod(p) => (**p).clone(),
        _ => core::Pod::default(),
    };
    let mut out: Vec<(usize, Event)> = Vec::new();
    for i in binds {
        let mut p = pod(pending[i]);
        let node = name(nodes[rng.below(nodes.len())]);
        p.spec.get_or_insert_with(Default::default).node_name = Some(node);
        out.push((0, Event::of(Object::Pod(p))));
    }
    for (n, i) in picked.into_iter().enumerate() {
        let p = pod(running[i]);
        let kind = if n < wanted(1) {
            1
        } else if n < wanted(1) + wanted(2) {
            2
        } else {
            3
        };
        match kind {
            1 => out.push((1, Event::Delete(Object::Pod(p).key()))),
            2 => {
                let mut p = p;
                p.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert("bench.podplace.io/rev".to_string(), format!("r{n}"));
                out.push((2, Event::of(Object::Pod(p))));
            }
            _ => {
                let mut p = p;
                let status = p.status.get_or_insert_with(Default::default);
                status.pod_ip = Some(format!("10.{}.{}.{}", n >> 16, (n >> 8) & 255, n & 255));
                out.push((3, Event::of(Object::Pod(p))));
            }
        }
    }
    for i in taints {
        let generate::Object::Node(n) = &objects[nodes[i]] else {
            continue;
        };
        let mut n = (**n).clone();
        n.spec
            .get_or_insert_with(Default::default)
            .taints
            .get_or_insert_with(Vec::new)
            .push(core::Taint {
                key: "bench.podplace.io/drain".to_string(),
                effect: "NoSchedule".to_string(),
                ..Default::default()
            });
        out.push((4, Event::of(Object::Node(n))));
    }
    // Shuffled, so each kind meets the others' effects.
    for i in (1..out.len()).rev() {
        let j = rng.below(i + 1);
        out.swap(i, j);
    }
    out
}

/// CPU time this thread has used so far, in seconds
/// (`/proc/thread-self/schedstat`; 0 when unknown). Kept up to date by the
/// kernel at ticks and switches, so it is read around many updates, not
/// one: their mean cost without the time they waited for a core.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns * 1e-9)
}

/// Median and 99th percentile of durations in seconds, and the largest.
fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    (at(0.5), at(0.99), v[v.len() - 1])
}

/// Runs the rows; the results as JSON (printed as markdown too).
pub fn serve(args: &ServeArgs) -> anyhow::Result<Value> {
    let load_before = load_average();
    let (anon_start, _) = rss_split_kib();
    let started = Instant::now();
    let snapshot = generate(&args.shape);
    let generate_secs = started.elapsed().as_secs_f64();
    let changes = updates(&snapshot.objects, args.updates, args.shape.seed);
    // The generated objects become the watch stream's events (JSON), each
    // object dropped as it is encoded: what the sync then holds besides
    // the model is the stream not yet applied, as a watch's would be.
    let events: Vec<Event> = snapshot
        .objects
        .into_iter()
        .map(|o| Event::of(to_object(o)))
        .collect();
    let count = events.len();
    let (anon_before, _) = rss_split_kib();

    let sampler = Sampler::start();
    let sync = Instant::now();
    let mut world = World::observed(Inventory::default(), &SchedulerSetup::default(), 0)?;
    // As podplace serve's model: pods packed (World::set_packed_pods).
    world.set_packed_pods(true);
    let mut apply_secs = 0.0;
    for e in events {
        let change = e.change()?;
        let t = Instant::now();
        world.apply(change)?;
        apply_secs += t.elapsed().as_secs_f64();
    }
    let sync_secs = sync.elapsed().as_secs_f64();
    let (anon_synced, _) = rss_split_kib();
    let stats = world.state().stats();

    let mut times: Vec<Vec<f64>> = vec![Vec::new(); KINDS.len()];
    let total = changes.len();
    let mut cpu_spent = 0.0;
    let mut wall_spent = 0.0;
    for (kind, event) in changes {
        let change = event.change()?;
        let (cpu, t) = (thread_cpu_seconds(), Instant::now());
        world.apply(change)?;
        let secs = t.elapsed().as_secs_f64();
        cpu_spent += thread_cpu_seconds() - cpu;
        wall_spent += secs;
        times[kind].push(secs);
    }
    let cpu_mean = cpu_spent / total.max(1) as f64;
    let wall_mean = wall_spent / total.max(1) as f64;
    let (anon_after, _) = rss_split_kib();
    let peak = sampler.peaks();
    drop(sampler);

    // One what-if on the synced world: an overlay and one scheduling
    // cycle for a pod still pending (what explain and admission start from).
    let pending = world
        .state()
        .live_pods()
        .find(|(_, e)| e.node.is_none() && !e.pod.finished)
        .map(|(id, _)| id);
    let what_if_secs = pending.map(|id| {
        let pod = world.state().pod(id).clone();
        let t = Instant::now();
        let mut overlay = world.overlay();
        let outcome = overlay.schedule(&pod);
        let secs = t.elapsed().as_secs_f64();
        std::hint::black_box(outcome);
        secs
    });
    let stuck = add_stuck_pod(&mut world)?;
    let explained = explain_times(&world, args.explains, stuck, args.stuck_runs);
    drop(world);

    // The other way to sync: one World::observed over the whole list.
    let objects = generate(&args.shape).objects.into_iter().map(to_object);
    let mut inventory = Inventory::default();
    for o in objects {
        inventory.push(o, podplace_model::inventory::Origin::default());
    }
    let (observed_anon_before, _) = rss_split_kib();
    let observed_sampler = Sampler::start();
    let listed = Instant::now();
    let mut world = World::observed(inventory, &SchedulerSetup::default(), 0)?;
    world.set_packed_pods(true);
    let observed_secs = listed.elapsed().as_secs_f64();
    let observed_peak = observed_sampler.peaks().anon_kib;
    drop(observed_sampler);
    drop(world);
    // The first sync as serve does it: the lists through serve's Sync.
    let first =
        crate::serve_sync::first_sync(generate(&args.shape).objects.into_iter().map(to_object))?;
    let load_after = load_average();

    let all: Vec<f64> = times.iter().flatten().copied().collect();
    let (p50, p99, max) = percentiles(all);

    let mut rows = Vec::new();
    println!("## podplace serve at scale\n");
    println!(
        "{} nodes, {} running + {} pending pods ({} objects), {} updates; load average {:.2} → {:.2}\n",
        args.shape.nodes, args.shape.pods, args.shape.new_pods, count, total, load_before, load_after
    );
    println!("| row | result | target |\n|---|---|---|");
    println!("| generate (not timed in the rows) | {generate_secs:.2} s | |");
    println!(
        "| initial sync: {count} watch events into an empty world (decoding the events' JSON included) | {sync_secs:.2} s ({:.0} events/s) | ≤ 10 s |",
        count as f64 / sync_secs.max(1e-9)
    );
    println!("| of which World::apply | {apply_secs:.2} s | |");
    println!(
        "| initial sync the other way: World::observed over the whole list, then its pods packed | {observed_secs:.2} s | ≤ 10 s |"
    );
    println!(
        "| memory of that way: RssAnon with the list's objects / peak (the objects, the build and the packing) | {} / {} MiB | |",
        observed_anon_before / 1024,
        observed_peak / 1024
    );
    println!(
        "| initial sync as podplace serve does it: one list per kind through serve's Sync until the model is ready (pods packed as built: {}) | {:.2} s (thread CPU {:.2} s) | ≤ 10 s |",
        first.packed, first.secs, first.cpu_secs
    );
    println!(
        "| memory of that sync: RssAnon with the lists' objects / peak during the sync / after (the model) | {} / {} / {} MiB | |",
        first.anon_before_kib / 1024,
        first.anon_peak_kib / 1024,
        first.anon_after_kib / 1024
    );
    println!(
        "| update, all kinds: median / p99 / max | {:.3} / {:.3} / {:.3} ms | ≤ 1 ms |",
        p50 * 1e3,
        p99 * 1e3,
        max * 1e3
    );
    println!(
        "| update, all kinds: mean thread CPU time / mean wall time | {:.3} / {:.3} ms | |",
        cpu_mean * 1e3,
        wall_mean * 1e3
    );
    for (k, name) in KINDS.iter().enumerate() {
        let n = times[k].len();
        let (a, b, c) = percentiles(times[k].clone());
        println!(
            "| update {name} ({n}): median / p99 / max | {:.3} / {:.3} / {:.3} ms | ≤ 1 ms |",
            a * 1e3,
            b * 1e3,
            c * 1e3
        );
        rows.push(json!({"kind": name, "count": n, "median_s": a, "p99_s": b, "max_s": c}));
    }
    if let Some(s) = what_if_secs {
        println!(
            "| overlay + one scheduling cycle of a pending pod | {:.1} ms | (explain ≤ 50 ms) |",
            s * 1e3
        );
    }
    let (o50, o99, _) = percentiles(explained.overlay.clone());
    println!(
        "| overlay (World::overlay taken and dropped): median / p99 | {:.3} / {:.3} ms | |",
        o50 * 1e3,
        o99 * 1e3
    );
    let (e50, e99, emax) = percentiles(explained.explain.clone());
    println!(
        "| explain a Pending pod as serve does ({} pods, {} with a note): median / p99 / max | {:.1} / {:.1} / {:.1} ms | ≤ 50 ms |",
        explained.pods,
        explained.notes,
        e50 * 1e3,
        e99 * 1e3,
        emax * 1e3
    );
    let stuck_secs = explained.stuck.as_ref().map(|s| {
        let (m, _, max) = percentiles(s.wall.clone());
        let (c, _, cmax) = percentiles(s.cpu.clone());
        println!(
            "| explain a pod no node admits (anti-affinity to tier=backend per zone; note: {}): median / max of {} | {:.1} / {:.1} ms wall, {:.1} / {:.1} ms thread CPU | ≤ 50 ms |",
            s.note.is_some(),
            s.wall.len(),
            m * 1e3,
            max * 1e3,
            c * 1e3,
            cmax * 1e3
        );
        if let Some(note) = &s.note {
            println!("|   its note | {} | |", note.replace('|', "/"));
        }
        (m, max, s.note.is_some(), c, s.note.clone())
    });
    println!(
        "| explain: mean thread CPU time per pod | {:.1} ms | |",
        explained.explain_cpu * 1e3 / explained.pods.max(1) as f64
    );
    println!(
        "| one explainer tick explaining {} of the Pending pods | {:.1} ms | |",
        explained.tick.1,
        explained.tick.0 * 1e3
    );
    println!(
        "| memory: RssAnon at start / with the events' JSON before sync / after sync / after updates / peak during sync and updates | {} / {} / {} / {} / {} MiB | ≤ 1536 MiB (steady) |",
        anon_start / 1024,
        anon_before / 1024,
        anon_synced / 1024,
        anon_after / 1024,
        peak.anon_kib / 1024
    );
    println!(
        "\nstate: {} live pods, {} nodes, {} groups, {} terms, {} label pairs",
        stats.live_pods, stats.nodes, stats.groups, stats.terms, stats.label_pairs
    );
    let result = json!({
        "shape": {"nodes": args.shape.nodes, "pods": args.shape.pods,
                  "new_pods": args.shape.new_pods, "workloads": args.shape.workloads,
                  "seed": args.shape.seed},
        "objects": count,
        "load_average": {"before": load_before, "after": load_after},
        "sync_s": sync_secs,
        "observed_s": observed_secs,
        "observed_rss_anon_kib": {"before": observed_anon_before, "peak": observed_peak},
        "serve_sync": {"s": first.secs, "cpu_s": first.cpu_secs, "objects": first.objects,
                       "pods": first.pods, "packed": first.packed,
                       "rss_anon_kib": {"before": first.anon_before_kib, "peak": first.anon_peak_kib,
                                        "after": first.anon_after_kib}},
        "update": {"median_s": p50, "p99_s": p99, "max_s": max, "count": total, "kinds": rows,
                   "mean_cpu_s": cpu_mean, "mean_wall_s": wall_mean},
        "what_if_s": what_if_secs,
        "explain": {"pods": explained.pods, "notes": explained.notes,
                    "overlay_median_s": o50, "overlay_p99_s": o99,
                    "median_s": e50, "p99_s": e99, "max_s": emax,
                    "mean_cpu_s": explained.explain_cpu / explained.pods.max(1) as f64,
                    "tick_s": explained.tick.0, "tick_explained": explained.tick.1,
                    "stuck_median_s": stuck_secs.as_ref().map(|s| s.0),
                    "stuck_max_s": stuck_secs.as_ref().map(|s| s.1),
                    "stuck_noted": stuck_secs.as_ref().map(|s| s.2),
                    "stuck_cpu_median_s": stuck_secs.as_ref().map(|s| s.3),
                    "stuck_note": stuck_secs.as_ref().and_then(|s| s.4.clone())},
        "sync_apply_s": apply_secs,
        "rss_anon_kib": {"start": anon_start, "before_sync": anon_before, "after_sync": anon_synced,
                         "after_updates": anon_after, "peak": peak.anon_kib},
    });
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    }
    Ok(result)
}

/// What explaining Pending pods costs on the synced world, as serve does
/// it: the bare what-if copy, each pod's explanation (serve's
/// `explain_one`: a pod that fits now is left out after one cycle, else
/// the why analysis with its fixes verified on the what-if, and the Event
/// note), and one explainer tick over as many pods.
struct ExplainTimes {
    /// Pods explained.
    pods: usize,
    /// `World::overlay` taken and dropped, seconds each.
    overlay: Vec<f64>,
    /// One pod's explanation and note, seconds each.
    explain: Vec<f64>,
    /// Thread CPU time over all the explanations, seconds.
    explain_cpu: f64,
    /// Of them, pods that get a note (they do not fit now).
    notes: usize,
    /// One [`Explainer::due`] tick explaining `pods` pods: seconds, and
    /// how many it explained.
    tick: (f64, usize),
    /// The pod no node admits ([`add_stuck_pod`]).
    stuck: Option<Stuck>,
}

/// Explaining the pod no node admits, `--stuck-runs` times.
struct Stuck {
    /// Wall seconds per explanation.
    wall: Vec<f64>,
    /// Thread CPU seconds per explanation.
    cpu: Vec<f64>,
    /// Its Event note, if it got one.
    note: Option<String>,
}

/// Adds to the synced world a Pending pod that no node admits, so the
/// explain rows include the whole analysis and fix search: required
/// anti-affinity to every `tier=backend` pod per zone (the generated
/// backend workloads run in every zone), the way a rule blocks a pod in
/// the stories. Its id, once added.
fn add_stuck_pod(world: &mut World) -> anyhow::Result<Option<podplace_world::PodId>> {
    let namespace = world
        .state()
        .live_pods()
        .next()
        .map(|(_, e)| {
            world
                .state()
                .interner()
                .resolve(e.pod.namespace)
                .to_string()
        })
        .unwrap_or_else(|| "default".to_string());
    let pod: core::Pod = serde_json::from_value(json!({
        "metadata": {"name": "bench-stuck", "namespace": namespace, "uid": "bench-stuck",
                     "labels": {"app": "bench-stuck"}},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"tier": "backend"}},
                 "topologyKey": generate::ZONE}]}}
        }
    }))?;
    world.apply(Change::Upsert(Object::Pod(pod)))?;
    Ok(world.pod_id(&namespace, "bench-stuck"))
}

/// Times [`ExplainTimes`] for `count` Pending pods spread over the world's
/// Pending pods (the generator's pending workloads in turn).
fn explain_times(
    world: &World,
    count: usize,
    stuck: Option<podplace_world::PodId>,
    stuck_runs: usize,
) -> ExplainTimes {
    use podplace_serve::explain::{explain_one, Explainer};
    let pending: Vec<podplace_world::PodId> = world
        .state()
        .live_pods()
        .filter(|(id, e)| e.node.is_none() && !e.pod.finished && Some(*id) != stuck)
        .map(|(id, _)| id)
        .collect();
    let step = (pending.len() / count.max(1)).max(1);
    let ids: Vec<_> = pending.iter().step_by(step).take(count).copied().collect();
    let overlay = (0..count.max(5))
        .map(|_| {
            let t = Instant::now();
            drop(std::hint::black_box(world.overlay()));
            t.elapsed().as_secs_f64()
        })
        .collect();
    let (mut explain, mut notes) = (Vec::new(), 0);
    let cpu = thread_cpu_seconds();
    for &id in &ids {
        let t = Instant::now();
        let (note, blockers) = explain_one(world, id);
        explain.push(t.elapsed().as_secs_f64());
        notes += usize::from(note.is_some());
        std::hint::black_box((note, blockers));
    }
    let explain_cpu = thread_cpu_seconds() - cpu;
    let stuck = stuck.map(|id| {
        let mut s = Stuck {
            wall: Vec::new(),
            cpu: Vec::new(),
            note: None,
        };
        for _ in 0..stuck_runs.max(1) {
            let (cpu, t) = (thread_cpu_seconds(), Instant::now());
            let (note, blockers) = explain_one(world, id);
            s.wall.push(t.elapsed().as_secs_f64());
            s.cpu.push(thread_cpu_seconds() - cpu);
            s.note = note.map(|(text, _)| text);
            std::hint::black_box(blockers);
        }
        s
    });
    let mut explainer = Explainer::new(std::time::Duration::ZERO);
    explainer.max_per_tick = ids.len().max(1);
    explainer.max_tick_time = std::time::Duration::from_secs(3600);
    let t = Instant::now();
    let drafts = explainer.due(world, 1, k8s_openapi::jiff::Timestamp::now());
    let tick = (t.elapsed().as_secs_f64(), explainer.stats().explained);
    std::hint::black_box(drafts);
    ExplainTimes {
        pods: ids.len(),
        overlay,
        explain,
        explain_cpu,
        notes,
        tick,
        stuck,
    }
}

/// Usage of `podplace-bench serve`.
pub const USAGE: &str = "\
usage: podplace-bench serve [--nodes N] [--pods N] [--workloads N]
                            [--new-pods N] [--seed N] [--updates N]
                            [--explains N] [--stuck-runs N]
                            [--out RESULTS.json]

Feeds the generated cluster (default 5,000 nodes, 150,000 running and
10,000 pending pods) as watch events into an empty observed world (the
initial sync of podplace serve), then applies --updates random updates
(default 10000: binds, deletions, pod relabels, pod status changes, node
taints) one by one; prints the sync time, median and p99 per update, and
memory, with the load average. Then explains --explains Pending pods
(default 20) as serve does (the why analysis with its fixes verified on
a what-if, and the Event note): median and p99 per pod, the bare
overlay, and one explainer tick over as many pods; and a pod no node
admits, explained --stuck-runs times (default 3): median and max wall
and thread CPU, and its note.";

/// `podplace-bench serve ARGS`: parses `args`, runs [`serve`]; the exit code.
pub fn command(args: &[String]) -> std::process::ExitCode {
    let mut a = ServeArgs {
        shape: Shape::default(),
        updates: 10_000,
        explains: 20,
        stuck_runs: 3,
        out: None,
    };
    let own = |flag: &str, n: usize| {
        match flag {
            "--updates" => a.updates = n,
            "--explains" => a.explains = n,
            "--stuck-runs" => a.stuck_runs = n,
            _ => return false,
        }
        true
    };
    if let Some(code) =
        crate::scale_args::parse("serve", USAGE, args, &mut a.shape, &mut a.out, own)
    {
        return code;
    }
    crate::scale_args::finish("serve", serve(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_cluster_syncs_and_updates() {
        let shape = Shape {
            nodes: 30,
            pods: 300,
            workloads: 20,
            new_pods: 40,
            new_workloads: 2,
            seed: 3,
        };
        let r = serve(&ServeArgs {
            shape,
            updates: 100,
            explains: 3,
            stuck_runs: 2,
            out: None,
        })
        .unwrap();
        assert_eq!(r["update"]["count"], 100);
        assert!(r["sync_s"].as_f64().unwrap() > 0.0);
        let kinds = r["update"]["kinds"].as_array().unwrap();
        assert!(kinds.iter().all(|k| k["count"].as_u64().unwrap() > 0));
        // Pending pods were explained, and the pod no node admits got a note.
        assert_eq!(r["explain"]["pods"], 3);
        assert_eq!(r["explain"]["stuck_noted"], true);
        assert!(r["explain"]["stuck_note"]
            .as_str()
            .is_some_and(|n| !n.is_empty()));
    }

    #[test]
    fn picks_are_distinct() {
        let mut rng = Rng::new(1);
        let mut v = distinct(&mut rng, 50, 20);
        v.sort();
        v.dedup();
        assert_eq!(v.len(), 20);
        assert_eq!(distinct(&mut rng, 3, 10).len(), 3);
    }
}
