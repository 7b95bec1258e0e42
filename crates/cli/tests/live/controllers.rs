//! kube-controller-manager's controllers next to `simulate`'s (issue 15,
//! section 3). Each test runs one update on the real v1.36 control plane —
//! its own namespace, its own nodes and node simulator (pods Ready 1–2 s
//! after they are bound, terminating pods gone after their 1 s grace
//! period) — records the pods' creations and deletions from a watch and the
//! unavailable replicas after every event, then replays the same world and
//! update in [`podplace_sim::Simulation`] (readyAfter the same delay) and
//! compares:
//!
//! - creations and deletions per node (DaemonSets, drains, scale-downs),
//!   per ordinal (StatefulSets) or per revision (Deployments), in order;
//! - the same events grouped in rounds (what happens at one instant in the
//!   simulation, within a fraction of the delay in the cluster), in order;
//! - the peak number of unavailable replicas;
//! - completion within one readiness delay of the real one.
//!
//! Both timelines are noted in the live timeline
//! (`PODPLACE_LIVE_TIMELINE=1`) and printed on a mismatch.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use kube::Api;
use podplace_envtest::{wait_until, NodeSimulator, SimConfig};
use podplace_sim::scenario::DrainOptions;
use podplace_sim::{Options, Simulation};
use serde_json::{json, Value};

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        deployment_surge_1_unavailable_0,
        deployment_surge_0_unavailable_1,
        deployment_surge_1_unavailable_1,
        deployment_recreate,
        statefulset_ordered_ready,
        statefulset_ordered_ready_max_unavailable_2,
        statefulset_parallel_max_unavailable_2,
        statefulset_partition,
        statefulset_on_delete,
        daemonset_max_unavailable_1,
        daemonset_max_surge_1,
        drain_under_a_pdb,
        scale_down_ranks_doubled_up_pods_first,
    ]
}

/// The label on a test's nodes that its pods select.
const NODE_LABEL: &str = "podplace-live/controllers";

/// How events are grouped for the per-key comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// The pod's node.
    Node,
    /// The StatefulSet ordinal (the name's last `-` part).
    Ordinal,
    /// `new` for pods created after the update, `old` for the others.
    Revision,
}

/// What one comparison expects of the pods.
struct Spec {
    /// Replicas wanted once done.
    desired: usize,
    /// DaemonSet: unavailable counts nodes without a Ready pod.
    per_node: bool,
    /// The nodes (DaemonSet: those that run it).
    nodes: Vec<String>,
    /// Which pods must run the new revision when done (by name).
    must_update: fn(&str) -> bool,
    /// A node that must be empty when done (drain).
    empty_node: Option<String>,
    /// Grouping of the per-key comparison.
    key: Key,
    /// Readiness delay of the node simulator (and readyAfter).
    delay: Duration,
}

fn every(_: &str) -> bool {
    true
}

fn none(_: &str) -> bool {
    false
}

/// One pod as both sides see it.
#[derive(Debug, Clone)]
struct PodState {
    name: String,
    node: Option<String>,
    ready: bool,
    terminating: bool,
    new: bool,
}

impl Spec {
    fn unavailable(&self, pods: &[PodState]) -> usize {
        let live = pods.iter().filter(|p| !p.terminating && p.ready);
        if self.per_node {
            let covered: BTreeSet<&str> = live.filter_map(|p| p.node.as_deref()).collect();
            self.nodes
                .iter()
                .filter(|n| !covered.contains(n.as_str()))
                .count()
        } else {
            self.desired.saturating_sub(live.count())
        }
    }

    fn complete(&self, pods: &[PodState]) -> bool {
        let active: Vec<&PodState> = pods.iter().filter(|p| !p.terminating).collect();
        if let Some(n) = &self.empty_node {
            if pods.iter().any(|p| p.node.as_deref() == Some(n.as_str())) {
                return false;
            }
        }
        let count_ok = if self.per_node {
            self.nodes.iter().all(|n| {
                active
                    .iter()
                    .filter(|p| p.node.as_deref() == Some(n.as_str()))
                    .count()
                    == 1
            }) && active.len() == self.nodes.len()
        } else {
            active.len() == self.desired
        };
        count_ok
            && active
                .iter()
                .all(|p| p.ready && (p.new || !(self.must_update)(&p.name)))
    }

    fn key_of(&self, name: &str, rec: &Record) -> String {
        match self.key {
            Key::Node => rec
                .nodes
                .get(name)
                .cloned()
                .unwrap_or_else(|| "unbound".to_string()),
            Key::Ordinal => name.rsplit('-').next().unwrap_or(name).to_string(),
            Key::Revision => {
                if rec.new.contains(name) {
                    "new".to_string()
                } else {
                    "old".to_string()
                }
            }
        }
    }
}

/// A timeline from the update on.
#[derive(Debug, Default, Clone)]
struct Record {
    /// (seconds since the update, '+' created or '-' deleted, pod name).
    events: Vec<(f64, char, String)>,
    /// Each pod's node, once bound.
    nodes: BTreeMap<String, String>,
    /// Pods created after the update.
    new: BTreeSet<String>,
    /// (seconds, unavailable replicas) whenever it changes.
    unavailable: Vec<(f64, usize)>,
    /// The first time the update was complete.
    complete_at: Option<f64>,
    /// Whether every pod was Ready and none terminating at the end.
    quiet: bool,
}

impl Record {
    fn observe(&mut self, spec: &Spec, t: f64, pods: &[PodState]) {
        let u = spec.unavailable(pods);
        if self.unavailable.last().map(|l| l.1) != Some(u) {
            self.unavailable.push((t, u));
        }
        if self.complete_at.is_none() && spec.complete(pods) {
            self.complete_at = Some(t);
        }
        self.quiet = pods.iter().all(|p| !p.terminating && p.ready);
    }

    /// Times from the first event on (for an update whose start is a
    /// client's own start-up, such as kubectl drain's).
    fn timed_from_first_event(mut self) -> Record {
        let first = self.events.first().map_or(0.0, |e| e.0);
        for e in &mut self.events {
            e.0 -= first;
        }
        for u in &mut self.unavailable {
            u.0 = (u.0 - first).max(0.0);
        }
        self.complete_at = self.complete_at.map(|c| c - first);
        self
    }

    fn peak(&self) -> usize {
        self.unavailable.iter().map(|u| u.1).max().unwrap_or(0)
    }

    /// Per key, the signs of its events in order.
    fn per_key(&self, spec: &Spec) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for (_, sign, name) in &self.events {
            out.entry(spec.key_of(name, self)).or_default().push(*sign);
        }
        out
    }

    /// The events in rounds: a new round starts after a gap of more than
    /// `gap` seconds; each round is a sorted list of `sign key`.
    fn rounds(&self, spec: &Spec, gap: f64) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        let mut last: Option<f64> = None;
        for (t, sign, name) in &self.events {
            if last.is_none_or(|l| t - l > gap) {
                out.push(Vec::new());
            }
            last = Some(*t);
            if let Some(r) = out.last_mut() {
                r.push(format!("{sign}{}", spec.key_of(name, self)));
            }
        }
        for r in &mut out {
            r.sort();
        }
        if spec.key == Key::Node {
            canonical_nodes(&mut out);
        }
        out
    }

    fn render(&self, spec: &Spec) -> String {
        let mut s = String::new();
        for (t, sign, name) in &self.events {
            let _ = write!(s, "{t:.1}s {sign}{} ", spec.key_of(name, self));
        }
        let _ = write!(
            s,
            "| unavailable {:?} | complete at {:?}",
            self.unavailable
                .iter()
                .map(|(t, u)| format!("{t:.1}s:{u}"))
                .collect::<Vec<_>>(),
            self.complete_at.map(|c| format!("{c:.1}s"))
        );
        s
    }
}

/// Renames nodes in rounds by order of first appearance (`node-0`, ...):
/// which node the DaemonSet controller updates first is a Go map's order,
/// so rounds compare the pattern, and the per-node comparison the names.
fn canonical_nodes(rounds: &mut [Vec<String>]) {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    for r in rounds.iter_mut() {
        // Known nodes first, then new ones by sign.
        r.sort_by_key(|e| {
            let (sign, node) = e.split_at(1);
            (
                ids.get(node).cloned().unwrap_or_else(|| "~".to_string()),
                sign.to_string(),
            )
        });
        for e in r.iter_mut() {
            let (sign, node) = e.split_at(1);
            let next = format!("node-{}", ids.len());
            let id = ids.entry(node.to_string()).or_insert(next).clone();
            *e = format!("{sign}{id}");
        }
        r.sort();
    }
}

/// A test's nodes, with a node simulator of its own (its readiness delay).
struct Bench {
    ns: String,
    nodes: Vec<String>,
    sim: NodeSimulator,
    delay: Duration,
}

impl Bench {
    async fn new(live: &Live, prefix: &str, count: usize, delay: Duration) -> Result<Bench> {
        let ns = live.namespace(prefix).await?;
        let sim = NodeSimulator::start(
            live.client.clone(),
            SimConfig {
                pod_start_delay: delay,
                max_grace: Duration::from_secs(1),
                timeline: live.timeline.clone(),
                ..SimConfig::default()
            },
        )
        .await?;
        let nodes: Vec<Node> = (0..count)
            .map(|i| {
                node(
                    &format!("{ns}-n{i}"),
                    "4",
                    "8Gi",
                    &[(NODE_LABEL, ns.as_str())],
                )
            })
            .collect();
        let names = sim.add_nodes(nodes).await?;
        let bench = Bench {
            ns,
            nodes: names,
            sim,
            delay,
        };
        if let Err(e) = bench.sim.wait_nodes_ready(&bench.nodes, NODES_READY).await {
            bench.finish().await?;
            return Err(e.into());
        }
        Ok(bench)
    }

    /// Removes the nodes (the namespace goes with the test's cleanup).
    async fn finish(&self) -> Result<()> {
        self.sim.remove_nodes(&self.nodes).await?;
        Ok(())
    }

    /// The same nodes for the simulation.
    fn sim_nodes(&self) -> Vec<Value> {
        self.nodes
            .iter()
            .map(|n| {
                json!({
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": n, "labels": {
                        "kubernetes.io/hostname": n, "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64", NODE_LABEL: self.ns}},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                               "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                })
            })
            .collect()
    }

    fn spec(&self, desired: usize, key: Key) -> Spec {
        Spec {
            desired,
            per_node: false,
            nodes: self.nodes.clone(),
            must_update: every,
            empty_node: None,
            key,
            delay: self.delay,
        }
    }
}

/// The pod template every workload here uses: selecting the test's nodes,
/// 1 s grace period, a small request.
fn template(ns: &str, app: &str, image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {
            "nodeSelector": {NODE_LABEL: ns},
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": app, "image": image,
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]
        }
    })
}

fn workload(kind: &str, ns: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": spec
    })
}

/// Watch events with when they arrived.
type Events = Arc<Mutex<Vec<(Instant, watcher::Event<Pod>)>>>;

/// The pod watch of a namespace: every event with when it arrived.
struct Watch {
    events: Events,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    fn start(live: &Live, ns: &str) -> Watch {
        let events: Events = Arc::default();
        let api: Api<Pod> = Api::namespaced(live.client.clone(), ns);
        let sink = events.clone();
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(e) = stream.next().await {
                if let Ok(e) = e {
                    sink.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((Instant::now(), e));
                }
            }
        });
        Watch { events, task }
    }

    /// The pods now and the record from `t0` on.
    fn replay(&self, spec: &Spec, t0: Option<Instant>) -> (Vec<PodState>, Record) {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let mut pods: BTreeMap<String, PodState> = BTreeMap::new();
        let mut rec = Record::default();
        let mut started = false;
        for (at, e) in events.iter() {
            let t = t0.map(|t0| at.saturating_duration_since(t0).as_secs_f64());
            let after = t0.is_some_and(|t0| *at >= t0);
            if after && !started {
                started = true;
                let now: Vec<PodState> = pods.values().cloned().collect();
                rec.observe(spec, 0.0, &now);
            }
            let t = t.unwrap_or(0.0);
            match e {
                watcher::Event::Init => pods.clear(),
                watcher::Event::InitApply(p) | watcher::Event::Apply(p) => {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
                    let terminating = p.metadata.deletion_timestamp.is_some();
                    let prev = pods.get(&name).cloned();
                    if after {
                        if prev.is_none() {
                            rec.events.push((t, '+', name.clone()));
                            rec.new.insert(name.clone());
                        }
                        if terminating && !prev.as_ref().is_some_and(|p| p.terminating) {
                            rec.events.push((t, '-', name.clone()));
                        }
                    }
                    if let Some(n) = &node {
                        rec.nodes.insert(name.clone(), n.clone());
                    }
                    pods.insert(
                        name.clone(),
                        PodState {
                            new: rec.new.contains(&name),
                            name,
                            node,
                            ready: pod_ready(p),
                            terminating,
                        },
                    );
                }
                watcher::Event::Delete(p) => {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    if let Some(prev) = pods.remove(&name) {
                        if after && !prev.terminating {
                            rec.events.push((t, '-', name));
                        }
                    }
                }
                watcher::Event::InitDone => {}
            }
            if after {
                let now: Vec<PodState> = pods.values().cloned().collect();
                rec.observe(spec, t, &now);
            }
        }
        (pods.into_values().collect(), rec)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits until the pods are settled: `desired` (DaemonSet: one per node)
/// Ready, none terminating.
async fn wait_pods_settled(watch: &Watch, spec: &Spec, initial: usize) -> Result<()> {
    wait_until(
        format_args!("{initial} pod(s) Ready, none terminating"),
        SETTLE,
        Duration::from_millis(50),
        || async move {
            let (pods, _) = watch.replay(spec, None);
            let ok = pods.len() == initial && pods.iter().all(|p| p.ready && !p.terminating);
            Ok::<_, std::convert::Infallible>(ok.then_some(()))
        },
    )
    .await?;
    Ok(())
}

/// Waits until a workload's status has caught up with its spec and says
/// every pod is up to date and available.
async fn wait_workload_settled(live: &Live, ns: &str, kind: &str, name: &str) -> Result<()> {
    let client = live.client.clone();
    wait_until(
        format_args!("{kind} {ns}/{name} to be settled"),
        SETTLE,
        POLL,
        || {
            let client = client.clone();
            async move {
                let obj: Value = match kind {
                    "Deployment" => serde_json::to_value(
                        Api::<Deployment>::namespaced(client, ns).get(name).await?,
                    ),
                    "StatefulSet" => serde_json::to_value(
                        Api::<StatefulSet>::namespaced(client, ns).get(name).await?,
                    ),
                    _ => serde_json::to_value(
                        Api::<DaemonSet>::namespaced(client, ns).get(name).await?,
                    ),
                }
                .unwrap_or_default();
                let st = &obj["status"];
                let generation_ok = st["observedGeneration"] == obj["metadata"]["generation"];
                let replicas = &obj["spec"]["replicas"];
                let ok = generation_ok
                    && match kind {
                        "Deployment" => {
                            st["updatedReplicas"] == *replicas
                                && st["availableReplicas"] == *replicas
                                && st["replicas"] == *replicas
                        }
                        "StatefulSet" => {
                            st["readyReplicas"] == *replicas
                                && st["availableReplicas"] == *replicas
                                && st["currentRevision"] == st["updateRevision"]
                        }
                        _ => {
                            st["desiredNumberScheduled"].as_i64().unwrap_or(0) > 0
                                && st["numberAvailable"] == st["desiredNumberScheduled"]
                                && st["updatedNumberScheduled"] == st["desiredNumberScheduled"]
                        }
                    };
                Ok::<_, kube::Error>(ok.then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// After the update at `t0`: waits until it is complete and every pod is
/// Ready with none terminating, then returns the real record.
async fn wait_real(watch: &Watch, spec: &Spec, t0: Instant) -> Result<Record> {
    let deadline = Duration::from_secs(60);
    let rec = wait_until(
        "the update to complete with no pod terminating",
        deadline,
        Duration::from_millis(50),
        || async move {
            let (_, rec) = watch.replay(spec, Some(t0));
            Ok::<_, std::convert::Infallible>(
                (rec.complete_at.is_some() && rec.quiet).then_some(rec),
            )
        },
    )
    .await;
    match rec {
        Ok(r) => Ok(r),
        Err(e) => {
            let (_, rec) = watch.replay(spec, Some(t0));
            Err(anyhow!("{e}; so far: {}", rec.render(spec)))
        }
    }
}

/// The simulation of the same world: built from `objects` on the bench's
/// nodes, `setup` before it settles, `update` at t0; stepped one second at
/// a time until complete and quiet (at most 120 s).
fn simulate(
    bench: &Bench,
    spec: &Spec,
    objects: &[Value],
    setup: impl FnOnce(&mut Simulation) -> Result<()>,
    update: impl FnOnce(&mut Simulation) -> Result<()>,
) -> Result<Record> {
    let mut items = bench.sim_nodes();
    items.extend(objects.iter().cloned());
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let inv = Simulation::load_sources(&[podplace_model::load::Source::Bytes {
        name: "controllers.json".to_string(),
        data: serde_json::to_vec(&list)?,
    }])?;
    let mut ready_after = BTreeMap::new();
    ready_after.insert(
        "*".to_string(),
        podplace_sim::time::Duration(bench.delay.as_secs() as i64),
    );
    let mut sim = Simulation::new(
        &inv,
        Options {
            ready_after,
            ..Options::default()
        },
    )?;
    setup(&mut sim)?;
    sim.settle()?;
    sim.take_changes();
    let t0 = sim.now();
    update(&mut sim)?;
    let mut rec = Record::default();
    let ns_prefix = format!("{}/", bench.ns);
    let short = |p: &str| p.strip_prefix(&ns_prefix).unwrap_or(p).to_string();
    for step in 0..=120 {
        sim.advance(podplace_sim::time::Duration(i64::from(step > 0)))?;
        let t = (sim.now() - t0) as f64;
        for c in sim.take_changes() {
            use podplace_sim::report::Change;
            match c {
                Change::Created { pod, .. } => {
                    rec.events.push((t, '+', short(&pod)));
                    rec.new.insert(short(&pod));
                }
                Change::Deleted { pod, .. } | Change::Evicted { pod, .. } => {
                    rec.events.push((t, '-', short(&pod)))
                }
                Change::Bound { pod, node } => {
                    rec.nodes.insert(short(&pod), node);
                }
                _ => {}
            }
        }
        let pods: Vec<PodState> = sim
            .pod_ids()
            .map(|id| sim.pod_view(id))
            .filter(|v| v.pod.starts_with(&ns_prefix))
            .map(|v| {
                let name = short(&v.pod);
                if let Some(n) = &v.node {
                    rec.nodes.insert(name.clone(), n.clone());
                }
                PodState {
                    new: rec.new.contains(&name),
                    name,
                    node: v.node,
                    ready: v.ready,
                    terminating: v.terminating,
                }
            })
            .collect();
        rec.observe(spec, t, &pods);
        if rec.complete_at.is_some() && rec.quiet {
            return Ok(rec);
        }
    }
    bail!(
        "the simulation did not complete in 120 s: {}",
        rec.render(spec)
    )
}

/// Compares the real and simulated records; notes both in the timeline.
fn compare(live: &Live, what: &str, spec: &Spec, real: &Record, sim: &Record) -> Result<()> {
    let delay = spec.delay.as_secs_f64();
    let summary = format!(
        "{what}\n  real: {}\n  sim:  {}",
        real.render(spec),
        sim.render(spec)
    );
    live.note(format!("controllers: {summary}"));
    eprintln!("controllers: {summary}");
    let mut problems = Vec::new();
    let (rk, sk) = (real.per_key(spec), sim.per_key(spec));
    if rk != sk {
        problems.push(format!(
            "creations/deletions per {:?} differ: real {rk:?}, sim {sk:?}",
            spec.key
        ));
    }
    let (rr, sr) = (real.rounds(spec, 0.45 * delay), sim.rounds(spec, 0.0));
    if rr != sr {
        problems.push(format!("rounds differ: real {rr:?}, sim {sr:?}"));
    }
    if real.peak() != sim.peak() {
        problems.push(format!(
            "peak unavailability differs: real {}, sim {}",
            real.peak(),
            sim.peak()
        ));
    }
    match (real.complete_at, sim.complete_at) {
        (Some(r), Some(s)) if (r - s).abs() <= delay => {}
        (r, s) => problems.push(format!(
            "completion differs by more than the readiness delay ({delay}s): real {r:?}, sim {s:?}"
        )),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}\n{summary}", problems.join("\n"))
    }
}

async fn patch_workload(
    live: &Live,
    ns: &str,
    kind: &str,
    name: &str,
    patch: &Value,
) -> Result<()> {
    let pp = PatchParams::default();
    let p = Patch::Merge(patch);
    match kind {
        "Deployment" => {
            Api::<Deployment>::namespaced(live.client.clone(), ns)
                .patch(name, &pp, &p)
                .await?;
        }
        "StatefulSet" => {
            Api::<StatefulSet>::namespaced(live.client.clone(), ns)
                .patch(name, &pp, &p)
                .await?;
        }
        _ => {
            Api::<DaemonSet>::namespaced(live.client.clone(), ns)
                .patch(name, &pp, &p)
                .await?;
        }
    }
    live.note(format!("patched {kind} {ns}/{name}: {patch}"));
    Ok(())
}

async fn set_unschedulable(live: &Live, node: &str, on: bool) -> Result<()> {
    let api: Api<Node> = Api::all(live.client.clone());
    let patch =
        json!({"spec": {"unschedulable": if on { Value::Bool(true) } else { Value::Null }}});
    api.patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cordoning {node}: {on}"))?;
    Ok(())
}

/// Runs `body` on a fresh bench and removes its nodes afterwards.
async fn on_bench<'a, F, Fut>(
    live: &'a Live,
    prefix: &str,
    nodes: usize,
    delay: Duration,
    body: F,
) -> Result<()>
where
    F: FnOnce(&'a Live, Bench) -> Fut,
    Fut: std::future::Future<Output = (Bench, Result<()>)> + 'a,
{
    let bench = Bench::new(live, prefix, nodes, delay).await?;
    let (bench, result) = body(live, bench).await;
    let finished = bench.finish().await;
    result.and(finished)
}

/// The common case: apply `kind` `name` built from `spec_json`, let it
/// settle, patch it with `patch` (in both worlds), compare.
async fn rollout_case(
    live: &Live,
    bench: &Bench,
    kind: &str,
    name: &str,
    spec_json: Value,
    patch: Value,
    spec: Spec,
) -> Result<()> {
    let ns = bench.ns.clone();
    let obj = workload(kind, &ns, name, spec_json);
    let watch = Watch::start(live, &ns);
    live.apply_yaml(&ns, &serde_json::to_string(&obj)?).await?;
    wait_pods_settled(&watch, &spec, spec.desired).await?;
    wait_workload_settled(live, &ns, kind, name).await?;
    let t0 = Instant::now();
    patch_workload(live, &ns, kind, name, &patch).await?;
    let real = wait_real(&watch, &spec, t0).await?;
    let reference = format!("{}/{ns}/{name}", kind.to_ascii_lowercase());
    let sim = simulate(
        bench,
        &spec,
        &[obj],
        |_| Ok(()),
        |s| {
            s.patch(&reference, None, &patch)?;
            Ok(())
        },
    )?;
    compare(live, &format!("{kind} {name} {patch}"), &spec, &real, &sim)
}

fn image_patch(app: &str, image: &str) -> Value {
    json!({"spec": {"template": {"spec": {"containers": [{"name": app, "image": image,
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
}

async fn deployment_case(live: &Live, prefix: &str, strategy: Value) -> Result<()> {
    on_bench(
        live,
        prefix,
        2,
        Duration::from_secs(1),
        |live, bench| async move {
            let ns = bench.ns.clone();
            let spec = bench.spec(3, Key::Revision);
            let r = rollout_case(
                live,
                &bench,
                "Deployment",
                "web",
                json!({
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "strategy": strategy,
                    "template": template(&ns, "web", "web:1"),
                }),
                image_patch("web", "web:2"),
                spec,
            )
            .await;
            (bench, r)
        },
    )
    .await
}

async fn deployment_surge_1_unavailable_0(live: &Live) -> Result<()> {
    deployment_case(
        live,
        "ctl-dep-10",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
    )
    .await
}

async fn deployment_surge_0_unavailable_1(live: &Live) -> Result<()> {
    deployment_case(
        live,
        "ctl-dep-01",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
    )
    .await
}

async fn deployment_surge_1_unavailable_1(live: &Live) -> Result<()> {
    deployment_case(
        live,
        "ctl-dep-11",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}),
    )
    .await
}

async fn deployment_recreate(live: &Live) -> Result<()> {
    deployment_case(live, "ctl-dep-re", json!({"type": "Recreate"})).await
}

async fn statefulset_case(
    live: &Live,
    prefix: &str,
    extra: Value,
    must_update: fn(&str) -> bool,
) -> Result<()> {
    on_bench(
        live,
        prefix,
        2,
        Duration::from_secs(2),
        |live, bench| async move {
            let ns = bench.ns.clone();
            let mut spec_json = json!({
                "replicas": 3,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": template(&ns, "db", "db:1"),
            });
            podplace_sim_merge(&mut spec_json, &extra);
            let spec = Spec {
                must_update,
                ..bench.spec(3, Key::Ordinal)
            };
            let r = rollout_case(
                live,
                &bench,
                "StatefulSet",
                "db",
                spec_json,
                image_patch("db", "db:2"),
                spec,
            )
            .await;
            (bench, r)
        },
    )
    .await
}

/// A JSON merge patch of `extra` into `target`.
fn podplace_sim_merge(target: &mut Value, extra: &Value) {
    if let (Value::Object(t), Value::Object(e)) = (target, extra) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
}

async fn statefulset_ordered_ready(live: &Live) -> Result<()> {
    statefulset_case(live, "ctl-sts-ord", json!({}), every).await
}

async fn statefulset_ordered_ready_max_unavailable_2(live: &Live) -> Result<()> {
    statefulset_case(
        live,
        "ctl-sts-ordmu",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}}),
        every,
    )
    .await
}

async fn statefulset_parallel_max_unavailable_2(live: &Live) -> Result<()> {
    statefulset_case(
        live,
        "ctl-sts-par",
        json!({"podManagementPolicy": "Parallel",
               "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}}),
        every,
    )
    .await
}

fn ordinal_at_least_2(name: &str) -> bool {
    name.rsplit('-')
        .next()
        .and_then(|o| o.parse::<i32>().ok())
        .is_some_and(|o| o >= 2)
}

async fn statefulset_partition(live: &Live) -> Result<()> {
    statefulset_case(
        live,
        "ctl-sts-part",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
        ordinal_at_least_2,
    )
    .await
}

fn ordinal_1(name: &str) -> bool {
    name.ends_with("-1")
}

/// OnDelete: the update replaces nothing; deleting db-1 brings it back on
/// the new revision, the others keep the old one.
async fn statefulset_on_delete(live: &Live) -> Result<()> {
    on_bench(
        live,
        "ctl-sts-ondel",
        2,
        Duration::from_secs(2),
        |live, bench| async move {
            let r = async {
                let ns = bench.ns.clone();
                let spec = Spec {
                    must_update: ordinal_1,
                    ..bench.spec(3, Key::Ordinal)
                };
                let obj = workload(
                    "StatefulSet",
                    &ns,
                    "db",
                    json!({
                        "replicas": 3,
                        "serviceName": "db",
                        "selector": {"matchLabels": {"app": "db"}},
                        "updateStrategy": {"type": "OnDelete"},
                        "template": template(&ns, "db", "db:1"),
                    }),
                );
                let watch = Watch::start(live, &ns);
                live.apply_yaml(&ns, &serde_json::to_string(&obj)?).await?;
                wait_pods_settled(&watch, &spec, 3).await?;
                wait_workload_settled(live, &ns, "StatefulSet", "db").await?;
                let patch = image_patch("db", "db:2");
                let t0 = Instant::now();
                patch_workload(live, &ns, "StatefulSet", "db", &patch).await?;
                // The controller has the new revision before the delete.
                let api: Api<StatefulSet> = Api::namespaced(live.client.clone(), &ns);
                wait_until("the StatefulSet's update revision", SETTLE, POLL, || {
                    let api = api.clone();
                    async move {
                        let s = api.get("db").await?;
                        let st = s.status.unwrap_or_default();
                        let seen = st.observed_generation == s.metadata.generation
                            && st.update_revision != st.current_revision;
                        Ok::<_, kube::Error>(seen.then_some(()))
                    }
                })
                .await?;
                Api::<Pod>::namespaced(live.client.clone(), &ns)
                    .delete("db-1", &DeleteParams::default())
                    .await?;
                let real = wait_real(&watch, &spec, t0).await?;
                let sim = simulate(
                    &bench,
                    &spec,
                    &[obj],
                    |_| Ok(()),
                    |s| {
                        s.patch(&format!("statefulset/{ns}/db"), None, &patch)?;
                        s.delete(&format!("{ns}/db-1"))?;
                        Ok(())
                    },
                )?;
                compare(
                    live,
                    "StatefulSet db OnDelete, db-1 deleted",
                    &spec,
                    &real,
                    &sim,
                )
            }
            .await;
            (bench, r)
        },
    )
    .await
}

async fn daemonset_case(live: &Live, prefix: &str, strategy: Value) -> Result<()> {
    on_bench(
        live,
        prefix,
        3,
        Duration::from_secs(2),
        |live, bench| async move {
            let ns = bench.ns.clone();
            let spec = Spec {
                per_node: true,
                ..bench.spec(3, Key::Node)
            };
            let r = rollout_case(
                live,
                &bench,
                "DaemonSet",
                "agent",
                json!({
                    "selector": {"matchLabels": {"app": "agent"}},
                    "updateStrategy": strategy,
                    "template": template(&ns, "agent", "agent:1"),
                }),
                image_patch("agent", "agent:2"),
                spec,
            )
            .await;
            (bench, r)
        },
    )
    .await
}

async fn daemonset_max_unavailable_1(live: &Live) -> Result<()> {
    daemonset_case(
        live,
        "ctl-ds-mu",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    )
    .await
}

async fn daemonset_max_surge_1(live: &Live) -> Result<()> {
    daemonset_case(
        live,
        "ctl-ds-ms",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
    )
    .await
}

/// Two replicas on node 0 under a PodDisruptionBudget allowing one
/// disruption; `kubectl drain` of node 0: the second eviction is refused
/// (429) until the first replacement is Ready, and retried every 5 s.
async fn drain_under_a_pdb(live: &Live) -> Result<()> {
    on_bench(
        live,
        "ctl-drain",
        2,
        Duration::from_secs(1),
        |live, bench| async move {
            let r = async {
                let ns = bench.ns.clone();
                let (n0, n1) = (bench.nodes[0].clone(), bench.nodes[1].clone());
                let spec = Spec {
                    must_update: none,
                    empty_node: Some(n0.clone()),
                    ..bench.spec(2, Key::Node)
                };
                let dep = workload(
                    "Deployment",
                    &ns,
                    "web",
                    json!({
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": template(&ns, "web", "web:1"),
                    }),
                );
                let pdb = json!({
                    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": ns},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
                });
                let watch = Watch::start(live, &ns);
                set_unschedulable(live, &n1, true).await?;
                live.apply_yaml(&ns, &serde_json::to_string(&dep)?).await?;
                live.apply_yaml(&ns, &serde_json::to_string(&pdb)?).await?;
                wait_pods_settled(&watch, &spec, 2).await?;
                wait_workload_settled(live, &ns, "Deployment", "web").await?;
                set_unschedulable(live, &n1, false).await?;
                let pdbs: Api<PodDisruptionBudget> = Api::namespaced(live.client.clone(), &ns);
                wait_until("the budget to allow one disruption", SETTLE, POLL, || {
                    let pdbs = pdbs.clone();
                    async move {
                        let p = pdbs.get("web").await?;
                        let st = p.status.unwrap_or_default();
                        Ok::<_, kube::Error>((st.disruptions_allowed == Some(1)).then_some(()))
                    }
                })
                .await?;
                let t0 = Instant::now();
                live.kubectl(&[
                    "drain",
                    &n0,
                    "--ignore-daemonsets",
                    "--delete-emptydir-data",
                    "--timeout=60s",
                ])?;
                // Timed from the first eviction: kubectl's start-up is no
                // part of the controllers'.
                let real = wait_real(&watch, &spec, t0).await?.timed_from_first_event();
                let drained = n0.clone();
                let sim = simulate(
                    &bench,
                    &spec,
                    &[dep, pdb],
                    |s| Ok(s.cordon(&n1)?),
                    |s| {
                        s.settle()?;
                        s.uncordon(&n1)?;
                        s.start_drain(
                            &drained,
                            &DrainOptions {
                                nodes: vec![drained.clone()],
                                ..DrainOptions::default()
                            },
                        )?;
                        Ok(())
                    },
                )?;
                compare(
                    live,
                    "drain of node 0 under minAvailable 1",
                    &spec,
                    &real,
                    &sim,
                )
            }
            .await;
            (bench, r)
        },
    )
    .await
}

/// Three replicas on node 0, a fourth on node 1, then scaled to 2: the
/// ReplicaSet deletes doubled-up pods first (node 0), not the newest.
async fn scale_down_ranks_doubled_up_pods_first(live: &Live) -> Result<()> {
    on_bench(
        live,
        "ctl-scale",
        2,
        Duration::from_secs(1),
        |live, bench| async move {
            let r = async {
                let ns = bench.ns.clone();
                let n1 = bench.nodes[1].clone();
                let spec = Spec {
                    must_update: none,
                    ..bench.spec(2, Key::Node)
                };
                let dep = workload(
                    "Deployment",
                    &ns,
                    "web",
                    json!({
                        "replicas": 3,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": template(&ns, "web", "web:1"),
                    }),
                );
                let watch = Watch::start(live, &ns);
                set_unschedulable(live, &n1, true).await?;
                live.apply_yaml(&ns, &serde_json::to_string(&dep)?).await?;
                wait_pods_settled(&watch, &spec, 3).await?;
                wait_workload_settled(live, &ns, "Deployment", "web").await?;
                set_unschedulable(live, &n1, false).await?;
                let four = json!({"spec": {"replicas": 4}});
                patch_workload(live, &ns, "Deployment", "web", &four).await?;
                wait_pods_settled(&watch, &spec, 4).await?;
                wait_workload_settled(live, &ns, "Deployment", "web").await?;
                let t0 = Instant::now();
                let two = json!({"spec": {"replicas": 2}});
                patch_workload(live, &ns, "Deployment", "web", &two).await?;
                let real = wait_real(&watch, &spec, t0).await?;
                let reference = format!("deployment/{ns}/web");
                let sim = simulate(
                    &bench,
                    &spec,
                    &[dep],
                    |s| {
                        s.cordon(&n1)?;
                        s.settle()?;
                        s.uncordon(&n1)?;
                        s.scale(&reference, None, 4)?;
                        Ok(())
                    },
                    |s| {
                        s.scale(&reference, None, 2)?;
                        Ok(())
                    },
                )?;
                compare(
                    live,
                    "scale 4 → 2 (3 pods on node 0, 1 on node 1)",
                    &spec,
                    &real,
                    &sim,
                )
            }
            .await;
            (bench, r)
        },
    )
    .await
}
