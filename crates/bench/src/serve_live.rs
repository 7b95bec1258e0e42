//! `podplace-bench serve-live`: `podplace serve`'s sync and explain against
//! a real API server (issue 18: a 500-node / 15,000-pod cluster syncs and
//! answers within the per-update ≤ 1 ms and per-explain ≤ 50 ms bounds).
//!
//! It starts etcd and kube-apiserver from the envtest binaries
//! (`PODPLACE_E2E_ASSETS`; no controllers and no scheduler, so Pending pods
//! stay Pending), creates the generated cluster through the API
//! ([`plan`], [`create`]: pods created bound with `spec.nodeName`, the
//! rest Pending), then runs serve's own sync
//! ([`podplace_serve::sync::Sync`] over [`podplace_kube::watch_cluster`],
//! the code `podplace serve` runs) and measures:
//!
//! - the first sync: from the watch's start until the model is ready;
//! - updates made through the API one at a time — a Pending pod bound
//!   (binding subresource), a bound pod deleted (grace 0), relabelled or
//!   given a status condition, a node tainted — each timed from the request
//!   to the model showing it (end to end), and the model's own apply of
//!   the event ([`probe`]);
//! - explaining Pending pods on the synced model: serve's path per pod
//!   ([`explain_one`]: a pod that fits now is left at once, a stuck one
//!   gets its note) and one explainer tick over them;
//! - at the end, that the model holds exactly the pods and nodes a fresh
//!   list returns.
//!
//! Every request and wait is bounded; the control plane is stopped at the
//! end, on error and on panic (its processes are killed by PID when it is
//! dropped) and on Ctrl-C.

mod create;
pub mod plan;
pub mod probe;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use podplace_envtest::{Component, ControlPlane, Options};
use podplace_kube::{connect_with, watch_cluster, watch_limits, ApiLimits, ConnectOptions};
use podplace_kube::{Client, WatchOptions};
use podplace_model::inventory::{ObjectKey, ObjectKind};
use podplace_serve::explain::{explain_one, Explainer};
use podplace_serve::shared::Model;
use podplace_serve::sync::{Sync, SyncMetrics, SyncOptions};
use podplace_world::World;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::generate::{generate, Shape};
use crate::loads::load_average;
use crate::rng::Rng;
use probe::{Batch, Probe};

/// What `serve-live` does.
#[derive(Debug, Clone)]
pub struct LiveArgs {
    /// The generated cluster.
    pub shape: Shape,
    /// Updates made through the API after the sync.
    pub updates: usize,
    /// Pending pods explained one by one (at most).
    pub explains: usize,
    /// Create requests in flight at once.
    pub concurrency: usize,
    /// Where to write the results as JSON.
    pub out: Option<PathBuf>,
}

/// The default shape: 500 nodes, 15,000 bound and 500 Pending pods.
pub fn default_shape() -> Shape {
    Shape {
        nodes: 500,
        pods: 15_000,
        workloads: 300,
        new_pods: 500,
        new_workloads: 10,
        seed: 1,
    }
}

/// The kinds of update, in the order of the report.
const KINDS: [&str; 5] = ["bind", "delete", "relabel pod", "pod status", "taint node"];
/// Share of each kind among the updates.
const SHARES: [f64; 5] = [0.25, 0.2, 0.2, 0.2, 0.15];
/// The longest the first sync may take.
const SYNC_DEADLINE: Duration = Duration::from_secs(600);
/// The longest one update may take to show in the model.
const UPDATE_DEADLINE: Duration = Duration::from_secs(30);
/// The longest creating the whole cluster may take.
const CREATE_DEADLINE: Duration = Duration::from_secs(3600);
/// Label and condition the updates set.
const LABEL: &str = "bench.podplace.io/rev";
const CONDITION: &str = "bench.podplace.io/Probed";
const TAINT: &str = "bench.podplace.io/drain";

/// CPU seconds (user + system) of process `pid` so far (0 when unknown).
fn cpu_seconds(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let Ok(stat) = std::fs::read_to_string(path) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): state is 3rd.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 here.
    (ticks(11) + ticks(12)) / 100.0
}

/// Median, 99th percentile and largest of `v` (seconds).
fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    (at(0.5), at(0.99), v[v.len() - 1])
}

fn ms(v: (f64, f64, f64)) -> String {
    format!("{:.3} / {:.3} / {:.3} ms", v.0 * 1e3, v.1 * 1e3, v.2 * 1e3)
}

/// One update to make through the API.
#[derive(Debug, Clone)]
enum Update {
    Bind {
        ns: String,
        pod: String,
        node: String,
    },
    Delete {
        ns: String,
        pod: String,
    },
    Relabel {
        ns: String,
        pod: String,
        value: String,
    },
    Status {
        ns: String,
        pod: String,
    },
    Taint {
        node: String,
        taints: Vec<Value>,
    },
}

impl Update {
    fn kind(&self) -> usize {
        match self {
            Update::Bind { .. } => 0,
            Update::Delete { .. } => 1,
            Update::Relabel { .. } => 2,
            Update::Status { .. } => 3,
            Update::Taint { .. } => 4,
        }
    }

    fn key(&self) -> ObjectKey {
        match self {
            Update::Bind { ns, pod, .. }
            | Update::Delete { ns, pod }
            | Update::Relabel { ns, pod, .. }
            | Update::Status { ns, pod } => ObjectKey {
                kind: ObjectKind::Pod,
                namespace: ns.clone(),
                name: pod.clone(),
            },
            Update::Taint { node, .. } => ObjectKey {
                kind: ObjectKind::Node,
                namespace: String::new(),
                name: node.clone(),
            },
        }
    }

    /// Sends it; bounded by the client's request timeout.
    async fn send(&self, client: &Client) -> anyhow::Result<()> {
        let pods = |ns: &str| Api::<Pod>::namespaced(client.clone(), ns);
        let pp = PatchParams::default();
        match self {
            Update::Bind { ns, pod, node } => {
                let binding = json!({
                    "apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": pod, "namespace": ns},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                });
                pods(ns)
                    .create_subresource::<Value, Value>(
                        "binding",
                        pod,
                        &PostParams::default(),
                        &binding,
                    )
                    .await
                    .with_context(|| format!("binding pod {ns}/{pod} to {node}"))?;
            }
            Update::Delete { ns, pod } => {
                let dp = DeleteParams {
                    grace_period_seconds: Some(0),
                    ..Default::default()
                };
                pods(ns)
                    .delete(pod, &dp)
                    .await
                    .with_context(|| format!("deleting pod {ns}/{pod}"))?;
            }
            Update::Relabel { ns, pod, value } => {
                let patch = Patch::Merge(json!({"metadata": {"labels": {LABEL: value}}}));
                pods(ns)
                    .patch(pod, &pp, &patch)
                    .await
                    .with_context(|| format!("relabelling pod {ns}/{pod}"))?;
            }
            Update::Status { ns, pod } => {
                let patch = Patch::Strategic(json!({"status": {"conditions": [
                    {"type": CONDITION, "status": "True"}
                ]}}));
                pods(ns)
                    .patch_status(pod, &pp, &patch)
                    .await
                    .with_context(|| format!("patching pod {ns}/{pod}'s status"))?;
            }
            Update::Taint { node, taints } => {
                let patch = Patch::Merge(json!({"spec": {"taints": taints}}));
                Api::<Node>::all(client.clone())
                    .patch(node, &pp, &patch)
                    .await
                    .with_context(|| format!("tainting node {node}"))?;
            }
        }
        Ok(())
    }

    /// Whether `world` shows it.
    fn shown(&self, world: &World) -> bool {
        let api_pod = |ns: &str, pod: &str| world.pod_id(ns, pod).and_then(|id| world.api_pod(id));
        match self {
            Update::Bind { ns, pod, node } => api_pod(ns, pod)
                .and_then(|p| p.spec.as_ref()?.node_name.as_deref())
                .is_some_and(|n| n == node),
            Update::Delete { ns, pod } => world.pod_id(ns, pod).is_none(),
            Update::Relabel { ns, pod, value } => api_pod(ns, pod)
                .and_then(|p| p.metadata.labels.as_ref()?.get(LABEL))
                .is_some_and(|v| v == value),
            Update::Status { ns, pod } => api_pod(ns, pod)
                .and_then(|p| p.status.as_ref()?.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == CONDITION)),
            Update::Taint { node, .. } => world.inventory().nodes.iter().any(|n| {
                n.object.metadata.name.as_deref() == Some(node)
                    && n.object
                        .spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|ts| ts.iter().any(|t| t.key == TAINT))
            }),
        }
    }
}

/// `count` distinct numbers below `n`.
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

/// The updates, made from the plan before anything is timed, shuffled.
fn updates(p: &plan::Plan, count: usize, seed: u64) -> Vec<Update> {
    let mut rng = Rng::new(seed ^ 0x11FE);
    let wanted = |k: usize| (count as f64 * SHARES[k]).round() as usize;
    let name = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        (
            m.namespace.clone().unwrap_or_default(),
            m.name.clone().unwrap_or_default(),
        )
    };
    let node_name = |i: usize| p.nodes[i].0.metadata.name.clone().unwrap_or_default();
    let mut out = Vec::new();
    for i in distinct(&mut rng, p.pending.len(), wanted(0)) {
        let (ns, pod) = name(&p.pending[i].metadata);
        let node = node_name(rng.below(p.nodes.len().max(1)));
        out.push(Update::Bind { ns, pod, node });
    }
    let (d, r, s) = (wanted(1), wanted(2), wanted(3));
    for (n, i) in distinct(&mut rng, p.bound.len(), d + r + s)
        .into_iter()
        .enumerate()
    {
        let (ns, pod) = name(&p.bound[i].metadata);
        out.push(if n < d {
            Update::Delete { ns, pod }
        } else if n < d + r {
            Update::Relabel {
                ns,
                pod,
                value: format!("r{n}"),
            }
        } else {
            Update::Status { ns, pod }
        });
    }
    for i in distinct(&mut rng, p.nodes.len(), wanted(4)) {
        let node = &p.nodes[i].0;
        let mut taints: Vec<Value> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        taints.push(json!({"key": TAINT, "effect": "NoSchedule"}));
        out.push(Update::Taint {
            node: node_name(i),
            taints,
        });
    }
    for i in (1..out.len()).rev() {
        let j = rng.below(i + 1);
        out.swap(i, j);
    }
    out
}

/// One update's times (seconds from the request).
#[derive(Debug, Clone, Copy, Default)]
struct Timed {
    /// The API's answer.
    answered: f64,
    /// The event handed to the sync.
    delivered: f64,
    /// The model showing it (end to end).
    shown: f64,
    /// The model's apply of the batch holding it.
    apply: f64,
    /// The model did not show it when its batch was applied (it was found
    /// by polling: then `shown` is when the poll saw it).
    late: bool,
}

/// Makes `u` and waits until the model shows it.
async fn timed(
    u: &Update,
    client: &Client,
    model: &Model,
    batches: &mut UnboundedReceiver<Batch>,
) -> anyhow::Result<Timed> {
    while batches.try_recv().is_ok() {}
    let key = u.key();
    let t0 = Instant::now();
    u.send(client).await?;
    let answered = t0.elapsed().as_secs_f64();
    // The first applied batch holding an event of the object after which
    // the model shows the update (a delete may first send the object with
    // its deletionTimestamp, then its deletion).
    let found = tokio::time::timeout(UPDATE_DEADLINE, async {
        let mut first = None;
        loop {
            let Some(b) = batches.recv().await else {
                return Ok::<_, anyhow::Error>((first, None));
            };
            let Some((_, at)) = b.events.iter().find(|(k, _)| k.as_ref() == Some(&key)) else {
                continue;
            };
            let at = *at;
            first.get_or_insert(at);
            if u.shown(&model.read()) {
                return Ok((first, Some((at, b))));
            }
        }
    })
    .await;
    let mut t = Timed {
        answered,
        ..Timed::default()
    };
    match found {
        Ok(Ok((_, Some((delivered, b))))) => {
            t.delivered = (delivered - t0).as_secs_f64();
            t.shown = (b.applied - t0).as_secs_f64();
            t.apply = (b.applied - b.closed).as_secs_f64();
        }
        Ok(Ok((_, None))) => bail!("the sync stopped"),
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            // No batch showed it: did the model change some other way?
            t.late = true;
            if !u.shown(&model.read()) {
                bail!("{key:?}: the model did not show the update within {UPDATE_DEADLINE:?}");
            }
            t.shown = t0.elapsed().as_secs_f64();
        }
    }
    Ok(t)
}

/// Every key of `kind` a fresh list returns (pages of 500).
async fn listed<K>(api: Api<K>, kind: ObjectKind) -> anyhow::Result<BTreeSet<ObjectKey>>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let mut keys = BTreeSet::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.context("listing")?;
        for o in &page.items {
            let m = o.meta();
            keys.insert(ObjectKey {
                kind,
                namespace: m.namespace.clone().unwrap_or_default(),
                name: m.name.clone().unwrap_or_default(),
            });
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => token = Some(c),
            None => return Ok(keys),
        }
    }
}

/// Runs the benchmark (see the module doc); the results as JSON.
pub fn serve_live(args: &LiveArgs) -> anyhow::Result<Value> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: &LiveArgs) -> anyhow::Result<Value> {
    podplace_envtest::stop_all_on_signal();
    let load_start = load_average();
    let snapshot = generate(&args.shape);
    let plan = plan::plan(snapshot.objects)?;
    let changes = updates(&plan, args.updates, args.shape.seed);

    let t = Instant::now();
    let mut cp = ControlPlane::start(Options {
        apiserver_only: true,
        ..Options::default()
    })
    .await
    .map_err(|e| anyhow!("starting the control plane: {e}"))?;
    let started = t.elapsed().as_secs_f64();
    eprintln!(
        "serve-live: etcd and kube-apiserver ready in {started:.1}s ({})",
        cp.server()
    );
    let result = measure(args, &cp, plan, changes, started, load_start).await;
    if result.is_err() {
        eprintln!("{}", cp.logs_report(20));
    }
    cp.stop();
    result
}

async fn measure(
    args: &LiveArgs,
    cp: &ControlPlane,
    plan: plan::Plan,
    changes: Vec<Update>,
    started: f64,
    load_start: f64,
) -> anyhow::Result<Value> {
    let connect = ConnectOptions {
        kubeconfig: Some(cp.kubeconfig().to_path_buf()),
        context: None,
    };
    let limits = ApiLimits::default();
    let client = connect_with(&connect, &limits).await?;
    let servers = [cp.pid(Component::ApiServer), cp.pid(Component::Etcd)];
    let server_cpu = || servers.iter().map(|p| cpu_seconds(*p)).sum::<f64>();

    // Create.
    let (cpu0, own0) = (server_cpu(), cpu_seconds(None));
    let t = Instant::now();
    let created = tokio::time::timeout(
        CREATE_DEADLINE,
        create::create_all(&client, &plan, args.concurrency),
    )
    .await
    .map_err(|_| anyhow!("creating the cluster took over {CREATE_DEADLINE:?}"))??;
    let create_secs = t.elapsed().as_secs_f64();
    let create_server_cpu = server_cpu() - cpu0;
    let create_own_cpu = cpu_seconds(None) - own0;
    let pods = plan.bound.len() + plan.pending.len();
    let load_create = load_average();

    // The first sync, as `podplace serve` does it.
    let opts = SyncOptions::default();
    let watch_client = connect_with(&connect, &watch_limits(&limits)).await?;
    let model = Arc::new(Model::new(World::empty(&opts.setup, opts.seed)));
    let (events, mut batches) = Probe::wrap(
        watch_cluster(&watch_client, ObjectKind::ALL, &WatchOptions::default()),
        opts.max_batch,
    );
    let (cpu0, own0) = (server_cpu(), cpu_seconds(None));
    let t = Instant::now();
    let sync = Sync::new(model.clone(), opts, SyncMetrics::default());
    let task = tokio::spawn(sync.run(events));
    let _abort = AbortOnDrop(task.abort_handle());
    while !model.ready() {
        if task.is_finished() {
            bail!("the sync stopped before the model was ready");
        }
        if t.elapsed() > SYNC_DEADLINE {
            bail!("the model was not ready within {SYNC_DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sync_secs = t.elapsed().as_secs_f64();
    let sync_server_cpu = server_cpu() - cpu0;
    let sync_own_cpu = cpu_seconds(None) - own0;
    let synced_pods = model.read().keys(ObjectKind::Pod).len();
    eprintln!("serve-live: model ready in {sync_secs:.2}s with {synced_pods} pods");

    // Updates, one at a time.
    let load_updates = load_average();
    let mut times: Vec<Vec<Timed>> = vec![Vec::new(); KINDS.len()];
    let t = Instant::now();
    for u in &changes {
        let r = timed(u, &client, &model, &mut batches).await?;
        times[u.kind()].push(r);
    }
    let updates_secs = t.elapsed().as_secs_f64();

    // Explain each Pending pod on the synced model, as serve does.
    let load_explain = load_average();
    let (explain_times, tick) = {
        let world = model.read();
        let ids: Vec<_> = world
            .state()
            .live_pods()
            .filter(|(_, e)| e.node.is_none() && !e.pod.finished)
            .map(|(id, _)| id)
            .take(args.explains)
            .collect();
        let mut times = Vec::new();
        let mut notes = 0usize;
        for &id in &ids {
            let t = Instant::now();
            let (cause, _) = explain_one(&world, id);
            times.push(t.elapsed().as_secs_f64());
            notes += usize::from(cause.is_some());
        }
        // One tick of serve's explainer over as many pods.
        let mut explainer = Explainer::new(Duration::ZERO);
        explainer.max_per_tick = ids.len().max(1);
        explainer.max_tick_time = Duration::from_secs(3600);
        let t = Instant::now();
        let drafts = explainer.due(
            &world,
            model.generation(),
            k8s_openapi::jiff::Timestamp::now(),
        );
        let tick_secs = t.elapsed().as_secs_f64();
        let stats = explainer.stats();
        eprintln!(
            "serve-live: explained {} Pending pods ({notes} stuck, with a note); a tick explained {} in {tick_secs:.2}s ({} drafts)",
            ids.len(),
            stats.explained,
            drafts.len()
        );
        (
            times,
            (tick_secs, stats.explained, stats.pending, drafts.len()),
        )
    };

    // The model equals a fresh list.
    let api_pods = listed(Api::<Pod>::all(client.clone()), ObjectKind::Pod).await?;
    let api_nodes = listed(Api::<Node>::all(client.clone()), ObjectKind::Node).await?;
    let (model_pods, model_nodes): (BTreeSet<ObjectKey>, BTreeSet<ObjectKey>) = {
        let w = model.read();
        (
            w.keys(ObjectKind::Pod).into_iter().collect(),
            w.keys(ObjectKind::Node).into_iter().collect(),
        )
    };
    let equal = api_pods == model_pods && api_nodes == model_nodes;
    let load_end = load_average();

    // Report.
    let deletes = times[1].len();
    println!("## podplace serve against a real API server\n");
    println!(
        "{} nodes, {} bound + {} Pending pods, {} updates, {} explains; etcd + kube-apiserver (envtest) on this machine; load average {load_start:.2} at start, {load_create:.2} after creating, {load_updates:.2} before updates, {load_explain:.2} before explains, {load_end:.2} at the end\n",
        plan.nodes.len(),
        plan.bound.len(),
        plan.pending.len(),
        changes.len(),
        explain_times.len()
    );
    println!("| row | result | target |\n|---|---|---|");
    println!("| etcd + kube-apiserver ready | {started:.1} s | |");
    println!(
        "| create the cluster ({} objects, {} in flight) | {create_secs:.1} s ({:.0} pods/s); CPU: servers {create_server_cpu:.1} s, bench {create_own_cpu:.1} s; {} retries | |",
        plan.namespaces.len() + plan.nodes.len() + plan.replica_sets.len() + pods,
        args.concurrency,
        pods as f64 / created.steps.iter().filter(|s| s.0.ends_with("pods")).map(|s| s.2).sum::<f64>().max(1e-9),
        created.retries
    );
    for (name, n, secs) in &created.steps {
        println!("| create: {name} ({n}) | {secs:.1} s | |");
    }
    println!(
        "| first sync: watch start → model ready ({synced_pods} pods) | {sync_secs:.2} s; CPU: servers {sync_server_cpu:.1} s, bench {sync_own_cpu:.1} s | ≤ 10 s |"
    );
    let mut rows = Vec::new();
    let all: Vec<&Timed> = times.iter().flatten().collect();
    let pick = |v: &[&Timed], f: fn(&Timed) -> f64| percentiles(v.iter().map(|t| f(t)).collect());
    println!(
        "| update, all kinds: model apply, median / p99 / max | {} | ≤ 1 ms |",
        ms(pick(&all, |t| t.apply))
    );
    println!(
        "| update, all kinds: request → model shows it, median / p99 / max | {} | |",
        ms(pick(&all, |t| t.shown))
    );
    for (k, name) in KINDS.iter().enumerate() {
        let v: Vec<&Timed> = times[k].iter().collect();
        let (apply, shown) = (pick(&v, |t| t.apply), pick(&v, |t| t.shown));
        let (answered, delivered) = (pick(&v, |t| t.answered), pick(&v, |t| t.delivered));
        println!(
            "| update {name} ({}): apply / API answer / event delivered / shown, medians; apply p99 | {:.3} / {:.2} / {:.2} / {:.2} ms; {:.3} ms | ≤ 1 ms apply |",
            v.len(),
            apply.0 * 1e3,
            answered.0 * 1e3,
            delivered.0 * 1e3,
            shown.0 * 1e3,
            apply.1 * 1e3
        );
        rows.push(json!({"kind": name, "count": v.len(),
            "apply_s": {"median": apply.0, "p99": apply.1, "max": apply.2},
            "answered_s": {"median": answered.0, "p99": answered.1, "max": answered.2},
            "delivered_s": {"median": delivered.0, "p99": delivered.1, "max": delivered.2},
            "shown_s": {"median": shown.0, "p99": shown.1, "max": shown.2}}));
    }
    let late = all.iter().filter(|t| t.late).count();
    println!(
        "| updates shown by the batch that applied them | {}/{} ({late} late) | all |",
        all.len() - late,
        all.len()
    );
    let ex = percentiles(explain_times.clone());
    println!(
        "| explain one Pending pod (serve's explain_one), median / p99 / max | {} | ≤ 50 ms |",
        ms(ex)
    );
    println!(
        "| one explainer tick over {} of {} Pending pods | {:.2} s ({:.1} ms a pod) | |",
        tick.1,
        tick.2,
        tick.0,
        tick.0 * 1e3 / tick.1.max(1) as f64
    );
    println!(
        "| model = fresh list (pod and node keys) | {} ({} pods, {} nodes listed; {} bound − {deletes} deleted + {} Pending) | equal |",
        if equal { "equal" } else { "DIFFERENT" },
        api_pods.len(),
        api_nodes.len(),
        plan.bound.len(),
        plan.pending.len()
    );
    let result = json!({
        "shape": {"nodes": args.shape.nodes, "pods": args.shape.pods,
                  "new_pods": args.shape.new_pods, "workloads": args.shape.workloads,
                  "seed": args.shape.seed},
        "load_average": {"start": load_start, "after_create": load_create,
                         "before_updates": load_updates, "before_explains": load_explain,
                         "end": load_end},
        "control_plane_s": started,
        "create": {"s": create_secs, "concurrency": args.concurrency, "retries": created.retries,
                   "server_cpu_s": create_server_cpu, "bench_cpu_s": create_own_cpu,
                   "steps": created.steps.iter().map(|(n, c, s)| json!({"step": n, "count": c, "s": s})).collect::<Vec<_>>()},
        "sync": {"s": sync_secs, "pods": synced_pods, "server_cpu_s": sync_server_cpu,
                 "bench_cpu_s": sync_own_cpu},
        "update": {"count": all.len(), "s": updates_secs, "late": late, "kinds": rows,
                   "apply_s": {"median": pick(&all, |t| t.apply).0, "p99": pick(&all, |t| t.apply).1,
                               "max": pick(&all, |t| t.apply).2},
                   "shown_s": {"median": pick(&all, |t| t.shown).0, "p99": pick(&all, |t| t.shown).1,
                               "max": pick(&all, |t| t.shown).2}},
        "explain_s": {"count": explain_times.len(), "median": ex.0, "p99": ex.1, "max": ex.2},
        "tick": {"s": tick.0, "explained": tick.1, "pending": tick.2, "drafts": tick.3},
        "fresh_list": {"equal": equal, "pods": api_pods.len(), "nodes": api_nodes.len(),
                       "model_pods": model_pods.len(), "model_nodes": model_nodes.len()},
    });
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{}\n", serde_json::to_string_pretty(&result)?))?;
    }
    if !equal {
        let missing: Vec<_> = api_pods.difference(&model_pods).take(5).collect();
        let extra: Vec<_> = model_pods.difference(&api_pods).take(5).collect();
        bail!("the model differs from a fresh list: missing {missing:?}, extra {extra:?}");
    }
    Ok(result)
}

/// Aborts the sync task when the measurement ends (also on error).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Usage of `podplace-bench serve-live`.
pub const USAGE: &str = "\
usage: podplace-bench serve-live [--nodes N] [--pods N] [--workloads N]
                                 [--new-pods N] [--seed N] [--updates N]
                                 [--explains N] [--concurrency N]
                                 [--out RESULTS.json]

Starts etcd and kube-apiserver from the envtest binaries in
PODPLACE_E2E_ASSETS, creates the generated cluster through the API
(default 500 nodes, 15,000 bound and 500 Pending pods; --concurrency
creates in flight, default 32), runs podplace serve's watch and sync on it
and prints: the first sync, each update made through the API (default
500: binds, deletions, pod relabels, pod status, node taints) from the
request to the model showing it and the model's apply of it, explaining
Pending pods (default at most 200), and whether the model equals a fresh
list, with the load average. The control plane is stopped at the end.";

/// `podplace-bench serve-live ARGS`: parses `args`, runs [`serve_live`];
/// the exit code (2 for a bad argument).
pub fn command(args: &[String]) -> std::process::ExitCode {
    let mut a = LiveArgs {
        shape: default_shape(),
        updates: 500,
        explains: 200,
        concurrency: 32,
        out: None,
    };
    let own = |flag: &str, n: usize| {
        match flag {
            "--updates" => a.updates = n,
            "--explains" => a.explains = n,
            "--concurrency" if n > 0 => a.concurrency = n,
            _ => return false,
        }
        true
    };
    if let Some(code) =
        crate::scale_args::parse("serve-live", USAGE, args, &mut a.shape, &mut a.out, own)
    {
        return code;
    }
    crate::scale_args::finish("serve-live", serve_live(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_touch_distinct_objects_in_the_asked_shares() {
        let shape = Shape {
            nodes: 20,
            pods: 200,
            workloads: 12,
            new_pods: 40,
            new_workloads: 2,
            seed: 5,
        };
        let p = plan::plan(generate(&shape).objects).expect("plan");
        let u = updates(&p, 100, 5);
        let mut per_kind = [0usize; 5];
        for x in &u {
            per_kind[x.kind()] += 1;
        }
        assert_eq!(per_kind, [25, 20, 20, 20, 15]);
        let keys: BTreeSet<ObjectKey> = u.iter().map(Update::key).collect();
        assert_eq!(keys.len(), u.len(), "each update touches its own object");
        let pending: BTreeSet<&str> = p
            .pending
            .iter()
            .filter_map(|x| x.metadata.name.as_deref())
            .collect();
        for x in &u {
            match x {
                Update::Bind { pod, .. } => assert!(pending.contains(pod.as_str())),
                Update::Delete { pod, .. }
                | Update::Relabel { pod, .. }
                | Update::Status { pod, .. } => assert!(!pending.contains(pod.as_str())),
                Update::Taint { taints, .. } => {
                    assert_eq!(taints.last().unwrap()["key"], TAINT)
                }
            }
        }
    }

    #[test]
    fn bad_arguments_exit_2() {
        for args in [&["--nodes", "x"][..], &["--bogus", "1"], &["--nodes"]] {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            assert_eq!(command(&args), std::process::ExitCode::from(2), "{args:?}");
        }
    }
}
