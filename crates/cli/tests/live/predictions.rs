//! Check 1 of the live suite: podplace's predictions equal the real
//! kube-scheduler's decisions, pod by pod.
//!
//! Every pod is created alone. Before it exists, podplace is asked where it
//! will land, on the live cluster's real state: a snapshot of the cluster
//! plus the new pod. Then the real controllers create it, the real
//! kube-scheduler decides it, and the two answers are compared before the
//! next pod: the real node must be podplace's node or one of the nodes it
//! reported as tied, or both must leave the pod Pending with exactly the
//! real FailedScheduling event's message. A Pending pod is deleted (and
//! gone) before the next one, so both sides keep the same world.
//!
//! - The four stories (`examples/stories/`) go through the real binary:
//!   `podplace snapshot --kubeconfig K -o snap.json`, then `podplace place
//!   -f snap.json [-f new.json] -o json`. Nodes come from each story's
//!   `cluster.yaml`, names and labels as given (tests run one at a time and
//!   each removes its nodes). Workload pods are created by the real
//!   Deployment, ReplicaSet and StatefulSet controllers, scaled one replica
//!   (or drained one eviction) at a time; the snapshot is edited to say what
//!   is about to happen (the workload's new replica count, the evicted pod
//!   terminating), so podplace's own workload expansion makes the pod the
//!   controller is about to make.
//! - A randomized world (25–49 nodes in zones and racks, with pools, taints,
//!   cordons and varied allocatable; 250 pods of 32 apps in two namespaces,
//!   mixing required and preferred pod (anti-)affinity on hostname, rack
//!   and zone, across namespaces and with match/mismatchLabelKeys, topology
//!   spread (DoNotSchedule/ScheduleAnyway, minDomains, node policies,
//!   matchLabelKeys) with and without Services for the default spreading,
//!   node selectors and node affinity (matchFields, Gt/Lt), tolerations,
//!   host ports and host networking, init and sidecar containers, limits
//!   only, an extended resource, a RuntimeClass with overhead, and requests
//!   that do not always fit). The seed is printed; `PODPLACE_PREDICT_SEED`
//!   repeats a world and `PODPLACE_PREDICT_VERBOSE=1` prints every pod.
//!   Each pod is checked in-process (the same live read and placement code
//!   the binary runs, without two process starts per pod: about 150 ms
//!   instead of 550 ms in a debug build), every 25th through the binary. It
//!   also prints how often one `place` of the whole batch up front matches.
//!
//! A disagreement fails the test naming the pod, both answers and the seed;
//! the world and the pod are kept in a directory the message names, ready
//! for `podplace place -f world.json -f pod.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context as _, Result};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kube::api::{DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use podplace_envtest::wait_until;
use podplace_kube::snapshot::{render, Format};
use podplace_kube::FetchOptions;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_world::World as Placed;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        vault_story,
        doesnotexist_story,
        drift_story,
        rollout_story,
        random_world,
    ]
}

/// Polling interval while waiting for one pod's fate: the loop waits on
/// hundreds of pods, so 200 ms per wait would dominate its time.
const FAST_POLL: Duration = Duration::from_millis(25);

// ---------------------------------------------------------------------------
// Answers and their comparison

/// What podplace said about one pod.
#[derive(Debug, Clone)]
struct Prediction {
    node: Option<String>,
    tied: Vec<String>,
    message: String,
}

impl std::fmt::Display for Prediction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(n) if self.tied.len() > 1 => {
                write!(f, "{n} (tied: {})", self.tied.join(", "))
            }
            Some(n) => write!(f, "{n}"),
            None => write!(f, "Pending: {}", self.message),
        }
    }
}

/// What the real kube-scheduler did with one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Real {
    Bound(String),
    /// The FailedScheduling event's message.
    Pending(String),
}

impl std::fmt::Display for Real {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Real::Bound(n) => write!(f, "{n}"),
            Real::Pending(m) => write!(f, "Pending: {m}"),
        }
    }
}

/// The real binding is podplace's node or one it tied with, or both left
/// the pod Pending with the same message.
fn agrees(p: &Prediction, r: &Real) -> bool {
    match (r, &p.node) {
        (Real::Bound(real), Some(node)) => real == node || p.tied.contains(real),
        (Real::Pending(real), None) => *real == p.message,
        _ => false,
    }
}

/// One placement of `podplace place -o json`.
#[derive(Debug, Deserialize)]
struct JsonPlacement {
    pod: String,
    node: Option<String>,
    message: String,
    tied: Vec<String>,
}

impl JsonPlacement {
    fn prediction(&self) -> Prediction {
        Prediction {
            node: self.node.clone(),
            tied: self.tied.clone(),
            message: self.message.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct JsonOutput {
    placements: Vec<JsonPlacement>,
}

/// The comparisons of one test: each printed as it happens, mismatches
/// collected and reported together at the end.
struct Checks {
    what: String,
    total: usize,
    pending: usize,
    mismatches: Vec<String>,
}

impl Checks {
    fn new(what: impl Into<String>) -> Checks {
        Checks {
            what: what.into(),
            total: 0,
            pending: 0,
            mismatches: Vec::new(),
        }
    }

    /// Compares one pod's answers; `verbose` prints the step.
    fn record(&mut self, live: &Live, pod: &str, p: &Prediction, r: &Real, verbose: bool) {
        self.total += 1;
        if matches!(r, Real::Pending(_)) {
            self.pending += 1;
        }
        let ok = agrees(p, r);
        let line = format!(
            "{}: {pod}: podplace {p} | kube-scheduler {r}{}",
            self.what,
            if ok { "" } else { "  <-- MISMATCH" }
        );
        if verbose || !ok {
            eprintln!("{line}");
        }
        live.note(&line);
        if !ok {
            self.mismatches.push(format!(
                "pod {pod}\n  podplace:       {p}\n  kube-scheduler: {r}"
            ));
        }
    }

    /// `N of N` as a line, or the mismatches as an error.
    fn finish(&self, context: &str) -> Result<String> {
        let summary = format!(
            "{}: {} of {} predictions equal reality ({} Pending)",
            self.what,
            self.total - self.mismatches.len(),
            self.total,
            self.pending
        );
        if self.mismatches.is_empty() {
            Ok(summary)
        } else {
            bail!(
                "{summary}; {} mismatch(es){context}:\n{}",
                self.mismatches.len(),
                self.mismatches.join("\n")
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Asking podplace

/// `podplace snapshot --kubeconfig K -o snap.json` of the live cluster in
/// `dir`, then `edit` on its JSON (what is about to happen), written back.
fn snapshot(
    live: &Live,
    dir: &Path,
    edit: impl FnOnce(&mut Value) -> Result<()>,
) -> Result<PathBuf> {
    let kc = live.kubeconfig().display().to_string();
    let (out, err, code) =
        live.podplace(dir, &["snapshot", "--kubeconfig", &kc, "-o", "snap.json"]);
    ensure!(code == 0, "podplace snapshot exit {code}: {out}{err}");
    let path = dir.join("snap.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let mut snap: Value = serde_json::from_str(&text).context("the snapshot is not JSON")?;
    edit(&mut snap)?;
    std::fs::write(&path, serde_json::to_vec_pretty(&snap)?)?;
    Ok(path)
}

/// `podplace place -f F... -o json` in `dir`: every placement.
fn place(live: &Live, dir: &Path, files: &[&str]) -> Result<Vec<JsonPlacement>> {
    let mut args = vec!["place"];
    for f in files {
        args.extend(["-f", f]);
    }
    args.extend(["-o", "json"]);
    let (out, err, code) = live.podplace(dir, &args);
    let parsed: JsonOutput = serde_json::from_str(&out)
        .with_context(|| format!("podplace place -o json printed: {out}{err} (exit {code})"))?;
    // Exit 1 exactly when a pod stays Pending.
    let pending = parsed.placements.iter().any(|p| p.node.is_none());
    ensure!(
        code == i32::from(pending),
        "podplace {} exit {code}: {out}{err}",
        args.join(" ")
    );
    Ok(parsed.placements)
}

/// The binary's answer for the one pod about to be created: a snapshot
/// edited by `edit`, plus `extra` files written into `dir` (name, text).
fn predict_binary(
    live: &Live,
    dir: &Path,
    edit: impl FnOnce(&mut Value) -> Result<()>,
    extra: &[(&str, String)],
) -> Result<(String, Prediction)> {
    snapshot(live, dir, edit)?;
    let mut files = vec!["snap.json"];
    for (name, text) in extra {
        std::fs::write(dir.join(name), text)?;
        files.push(name);
    }
    let placements = place(live, dir, &files)?;
    match placements.as_slice() {
        [one] => Ok((one.pod.clone(), one.prediction())),
        _ => bail!(
            "podplace placed {} pods, expected exactly the new one: {:?}",
            placements.len(),
            placements.iter().map(|p| &p.pod).collect::<Vec<_>>()
        ),
    }
}

/// The in-process answer for `pod` on the live cluster: the same read
/// (`fetch_inventory`) and placement (podplace-world's `World::build` after
/// the workload expansion and admission defaults) as `podplace snapshot` +
/// `podplace place`, without starting two processes. Returns the prediction
/// and the world it was made on, the new pod included.
async fn predict_in_process(live: &Live, pod: &Pod) -> Result<(Prediction, Inventory)> {
    let fetched = podplace_kube::fetch_inventory(&live.client, &FetchOptions::default())
        .await
        .map_err(|e| anyhow!("reading the live cluster: {e}"))?;
    ensure!(
        fetched.unreadable.is_empty(),
        "could not read {:?}",
        fetched.unreadable
    );
    let mut inv = fetched.inventory;
    inv.pods.push(Sourced {
        object: pod.clone(),
        origin: Origin {
            file: "pod.json".to_string(),
            line: 1,
            column: 1,
        },
    });
    podplace_model::expand::expand_workloads(&mut inv);
    let world = Placed::build(inv, &Default::default(), 0).map_err(|e| anyhow!("{e}"))?;
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let [one] = world.placements() else {
        bail!(
            "{} pods wait in the live cluster besides the new one, expected none",
            world.placements().len().saturating_sub(1)
        );
    };
    let state = world.state();
    ensure!(
        *state.pod(one.pod).name == *name,
        "podplace placed {} instead of {name}",
        state.pod(one.pod).name
    );
    let node_name = |n| state.node(n).name.to_string();
    let prediction = Prediction {
        node: one.node.map(node_name),
        tied: one.tied.iter().map(|&n| node_name(n)).collect(),
        message: one.message.clone(),
    };
    Ok((prediction, world.into_inventory()))
}

/// The world of an in-process prediction without its new pod, as a
/// snapshot file's text (rendered only for a mismatch: it costs as much as
/// the prediction).
fn world_without(mut inv: Inventory, pod: &Pod) -> Result<String> {
    inv.pods.retain(|p| {
        p.object.metadata.namespace != pod.metadata.namespace
            || p.object.metadata.name != pod.metadata.name
    });
    render(&inv, Format::Json).map_err(|e| anyhow!("{e}"))
}

// ---------------------------------------------------------------------------
// Watching the real cluster

/// Waits until the real kube-scheduler decided `ns/name`: bound (its node)
/// or unschedulable (its first FailedScheduling event's message).
async fn outcome(live: &Live, ns: &str, name: &str) -> Result<Real> {
    let api: Api<Pod> = Api::namespaced(live.client.clone(), ns);
    let bound = wait_until(
        format_args!("pod {ns}/{name} to be bound or found unschedulable"),
        SETTLE,
        FAST_POLL,
        || {
            let api = api.clone();
            async move {
                let Some(pod) = api.get_opt(name).await? else {
                    return Ok::<_, kube::Error>(None);
                };
                if let Some(node) = node_of(&pod) {
                    return Ok(Some(Some(node.to_string())));
                }
                let unschedulable = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "PodScheduled" && c.status == "False")
                    });
                Ok(unschedulable.then_some(None))
            }
        },
    )
    .await?;
    if let Some(node) = bound {
        return Ok(Real::Bound(node));
    }
    // The event is recorded just before the condition, but asynchronously.
    let message = wait_until(
        format_args!("a FailedScheduling event for {ns}/{name}"),
        SETTLE,
        FAST_POLL,
        || async move {
            live.failed_scheduling(ns, name)
                .await
                .map(|m| m.first().cloned())
        },
    )
    .await?;
    Ok(Real::Pending(message))
}

/// Deletes `ns/name` at once and waits until it is gone.
async fn delete_pod(live: &Live, ns: &str, name: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(live.client.clone(), ns);
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e).with_context(|| format!("deleting pod {ns}/{name}")),
    }
    wait_until(
        format_args!("pod {ns}/{name} to be gone"),
        SETTLE,
        FAST_POLL,
        || {
            let api = api.clone();
            async move { api.get_opt(name).await.map(|p| p.is_none().then_some(())) }
        },
    )
    .await?;
    Ok(())
}

/// The names of the pods of `ns`.
async fn pod_names(live: &Live, ns: &str) -> Result<BTreeSet<String>> {
    Ok(live
        .pods(ns)
        .await?
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect())
}

/// Waits for the one pod of `ns` not in `known` (a controller made it).
async fn new_pod(live: &Live, ns: &str, known: &BTreeSet<String>) -> Result<String> {
    wait_until(
        format_args!("a new pod in {ns}"),
        SETTLE,
        FAST_POLL,
        || async move {
            let names = pod_names(live, ns).await?;
            let fresh: Vec<String> = names.difference(known).cloned().collect();
            match fresh.as_slice() {
                [] => Ok(None),
                [one] => Ok(Some(one.clone())),
                more => Err(anyhow!("more than one new pod: {more:?}")),
            }
        },
    )
    .await
    .map_err(Into::into)
}

/// Cordons (or uncordons) `node` and waits until the node lifecycle
/// controller has added (or removed) the unschedulable taint, so that a
/// snapshot and the scheduler see the same node.
async fn set_unschedulable(live: &Live, node: &str, on: bool) -> Result<()> {
    let api: Api<Node> = Api::all(live.client.clone());
    api.patch(
        node,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"unschedulable": on}})),
    )
    .await
    .with_context(|| format!("cordoning {node}: {on}"))?;
    wait_until(
        format_args!("{node}'s unschedulable taint to be {on}"),
        SETTLE,
        FAST_POLL,
        || {
            let api = api.clone();
            async move {
                let n = api.get(node).await?;
                let tainted = n
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_some_and(|ts| {
                        ts.iter()
                            .any(|t| t.key == "node.kubernetes.io/unschedulable")
                    });
                Ok::<_, kube::Error>((tainted == on).then_some(()))
            }
        },
    )
    .await?;
    live.note(format!("{node} unschedulable={on}"));
    Ok(())
}

// ---------------------------------------------------------------------------
// The stories

/// The path of a file under `examples/stories/`.
fn story(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/stories")
        .join(file)
}

/// The objects of a story file, as JSON.
fn story_docs(file: &str) -> Result<Vec<Value>> {
    let path = story(file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// The story's object of `kind` named `name`, made fit to create in `ns`:
/// namespace, uid and owner references dropped (the test's namespace and
/// the real controllers take their place).
fn story_object(file: &str, kind: &str, name: &str, ns: &str) -> Result<Value> {
    let mut obj = story_docs(file)?
        .into_iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .ok_or_else(|| anyhow!("{file} has no {kind} {name}"))?;
    let meta = obj["metadata"]
        .as_object_mut()
        .ok_or_else(|| anyhow!("{kind} {name} has no metadata"))?;
    meta.remove("uid");
    meta.remove("ownerReferences");
    meta.insert("namespace".to_string(), json!(ns));
    Ok(obj)
}

/// Registers the nodes of a story's `cluster.yaml`, names and labels as given.
async fn story_nodes(live: &Live, story_dir: &str) -> Result<Vec<String>> {
    let nodes = podplace_envtest::nodes_from_world(&story(&format!("{story_dir}/cluster.yaml")))?;
    live.add_nodes(nodes).await
}

/// The items of a snapshot (a `v1 List`).
fn items(snap: &mut Value) -> Result<&mut Vec<Value>> {
    snap["items"]
        .as_array_mut()
        .ok_or_else(|| anyhow!("the snapshot is not a List"))
}

fn is(item: &Value, kind: &str, ns: &str, name: &str) -> bool {
    item["kind"] == kind && item["metadata"]["namespace"] == ns && item["metadata"]["name"] == name
}

/// Sets `kind ns/name`'s `spec.replicas` in a snapshot: the scale about to
/// happen, whose new pod podplace's workload expansion then makes.
fn set_replicas(snap: &mut Value, kind: &str, ns: &str, name: &str, replicas: i32) -> Result<()> {
    let item = items(snap)?
        .iter_mut()
        .find(|i| is(i, kind, ns, name))
        .ok_or_else(|| anyhow!("the snapshot has no {kind} {ns}/{name}"))?;
    item["spec"]["replicas"] = json!(replicas);
    Ok(())
}

/// Drops pod `ns/name` from a snapshot: the eviction about to happen (its
/// controller's replacement is then a missing replica podplace expands).
fn remove_pod(snap: &mut Value, ns: &str, name: &str) -> Result<()> {
    let items = items(snap)?;
    let before = items.len();
    items.retain(|i| !is(i, "Pod", ns, name));
    ensure!(
        items.len() + 1 == before,
        "the snapshot has no pod {ns}/{name}"
    );
    Ok(())
}

/// Scales `kind ns/name` (Deployment or StatefulSet) to `replicas`.
async fn scale(live: &Live, kind: &str, ns: &str, name: &str, replicas: i32) -> Result<()> {
    let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
    let pp = PatchParams::default();
    match kind {
        "Deployment" => {
            Api::<Deployment>::namespaced(live.client.clone(), ns)
                .patch(name, &pp, &patch)
                .await?;
        }
        "StatefulSet" => {
            Api::<StatefulSet>::namespaced(live.client.clone(), ns)
                .patch(name, &pp, &patch)
                .await?;
        }
        other => bail!("cannot scale a {other}"),
    }
    live.note(format!("scaled {kind} {ns}/{name} to {replicas}"));
    Ok(())
}

/// One story step through the binary: podplace predicts on the snapshot
/// edited by `edit` (plus `extra` files), then `act` makes the real
/// controllers create the pod, and the real scheduler's decision is
/// compared. Returns the real outcome.
async fn step<F, Fut>(
    live: &Live,
    checks: &mut Checks,
    dir: &Path,
    ns: &str,
    edit: impl FnOnce(&mut Value) -> Result<()>,
    extra: &[(&str, String)],
    act: F,
) -> Result<(String, Real)>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let known = pod_names(live, ns).await?;
    let (predicted_pod, prediction) = predict_binary(live, dir, edit, extra)?;
    act().await?;
    let pod = new_pod(live, ns, &known).await?;
    let real = outcome(live, ns, &pod).await?;
    checks.record(
        live,
        &format!("{pod} (podplace: {predicted_pod})"),
        &prediction,
        &real,
        true,
    );
    Ok((pod, real))
}

/// Waits until Deployment `ns/name` has its first ReplicaSet (created even
/// at 0 replicas), so a snapshot carries the template its pods come from.
async fn wait_replica_set(live: &Live, ns: &str, name: &str) -> Result<()> {
    let api: Api<ReplicaSet> = Api::namespaced(live.client.clone(), ns);
    wait_until(
        format_args!("deployment {ns}/{name}'s ReplicaSet"),
        SETTLE,
        POLL,
        || {
            let api = api.clone();
            async move {
                let list = api.list(&ListParams::default()).await?;
                Ok::<_, kube::Error>(
                    list.items
                        .iter()
                        .any(|rs| {
                            rs.metadata
                                .owner_references
                                .iter()
                                .flatten()
                                .any(|o| o.kind == "Deployment" && o.name == name)
                        })
                        .then_some(()),
                )
            }
        },
    )
    .await?;
    Ok(())
}

/// Waits until StatefulSet `ns/name`'s controller has observed it (its
/// update revision is known, which labels its pods).
async fn wait_stateful_set(live: &Live, ns: &str, name: &str) -> Result<()> {
    let api: Api<StatefulSet> = Api::namespaced(live.client.clone(), ns);
    wait_until(
        format_args!("statefulset {ns}/{name} to be observed"),
        SETTLE,
        POLL,
        || {
            let api = api.clone();
            async move {
                let s = api.get(name).await?;
                let seen = s.status.as_ref().is_some_and(|st| {
                    st.observed_generation >= s.metadata.generation
                        && st.update_revision.as_deref().is_some_and(|r| !r.is_empty())
                });
                Ok::<_, kube::Error>(seen.then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// The story's workload with `replicas` set, created in `ns`.
async fn create_workload(
    live: &Live,
    file: &str,
    kind: &str,
    name: &str,
    ns: &str,
    replicas: i32,
) -> Result<()> {
    let mut obj = story_object(file, kind, name, ns)?;
    obj["spec"]["replicas"] = json!(replicas);
    live.apply_yaml(ns, &serde_json::to_string(&obj)?).await?;
    match kind {
        "Deployment" => wait_replica_set(live, ns, name).await,
        "StatefulSet" => wait_stateful_set(live, ns, name).await,
        _ => Ok(()),
    }
}

/// Story 1: Prometheus' StatefulSet (its pods steered onto leela and hermes
/// by cordoning the other nodes, as the story has them), then Vault's three
/// replicas one at a time: two placed, the third Pending with the story's
/// message.
async fn vault_story(live: &Live) -> Result<()> {
    let start = Instant::now();
    let ns = live.namespace("pred-vault").await?;
    story_nodes(live, "vault").await?;
    let dir = Scratch::new("predict-vault")?;
    let mut checks = Checks::new("vault");
    create_workload(
        live,
        "vault/prometheus.yaml",
        "StatefulSet",
        "prometheus-server",
        &ns,
        0,
    )
    .await?;
    create_workload(live, "vault/vault.yaml", "StatefulSet", "vault", &ns, 0).await?;

    // prometheus-server-0 on leela, prometheus-server-1 on hermes.
    for (replicas, only, others) in [
        (1, "leela", ["bender", "farnsworth", "hermes"]),
        (2, "hermes", ["bender", "farnsworth", "leela"]),
    ] {
        for n in others {
            set_unschedulable(live, n, true).await?;
        }
        set_unschedulable(live, only, false).await?;
        let (pod, real) = step(
            live,
            &mut checks,
            &dir.0,
            &ns,
            |s| set_replicas(s, "StatefulSet", &ns, "prometheus-server", replicas),
            &[],
            || scale(live, "StatefulSet", &ns, "prometheus-server", replicas),
        )
        .await?;
        ensure!(
            real == Real::Bound(only.to_string()),
            "{pod}: {real}, the story has it on {only}"
        );
    }
    for n in ["bender", "farnsworth", "leela"] {
        set_unschedulable(live, n, false).await?;
    }

    let mut last = None;
    for replicas in 1..=3 {
        last = Some(
            step(
                live,
                &mut checks,
                &dir.0,
                &ns,
                |s| set_replicas(s, "StatefulSet", &ns, "vault", replicas),
                &[],
                || scale(live, "StatefulSet", &ns, "vault", replicas),
            )
            .await?,
        );
    }
    let summary = checks.finish("")?;
    // The story itself: vault-2 stays Pending with the message it quotes.
    let story_message = "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't satisfy existing pods anti-affinity rules, 2 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.";
    ensure!(
        last == Some((
            "vault-2".to_string(),
            Real::Pending(story_message.to_string())
        )),
        "the story ends with vault-2 Pending with its message, not {last:?}"
    );
    report(live, &summary, start);
    Ok(())
}

/// Story 3: pod-1 runs on node-1; pod-2's `DoesNotExist` pod affinity
/// constrains nothing, so it goes to the emptier node-2. With node-2
/// cordoned, a copy of pod-2 (pod-3) stays Pending: pod-2 itself now
/// matches the selector, so the first-pod exception is over and the only
/// domain with a matching pod is cordoned. Without pod-2, the same pod goes
/// to node-1 without complaint (the story's "cordon node-2").
async fn doesnotexist_story(live: &Live) -> Result<()> {
    let start = Instant::now();
    let ns = live.namespace("pred-dne").await?;
    story_nodes(live, "doesnotexist").await?;
    let dir = Scratch::new("predict-dne")?;
    let mut checks = Checks::new("doesnotexist");
    // pod-1 is the story's running state: bound by its nodeName.
    let pod1 = story_object("doesnotexist/cluster.yaml", "Pod", "pod-1", &ns)?;
    live.apply_yaml(&ns, &serde_json::to_string(&pod1)?).await?;
    live.wait_pod_ready(&ns, "pod-1").await?;

    /// A copy of pod-2 named `name`, created after cordoning `cordon` and
    /// deleting `delete_first`; the story says where it lands (None: Pending).
    struct Step {
        name: &'static str,
        cordon: Option<&'static str>,
        delete_first: Option<&'static str>,
        expect: Option<&'static str>,
    }
    let steps = [
        Step {
            name: "pod-2",
            cordon: None,
            delete_first: None,
            expect: Some("node-2"),
        },
        Step {
            name: "pod-3",
            cordon: Some("node-2"),
            delete_first: None,
            expect: None,
        },
        Step {
            name: "pod-2",
            cordon: None,
            delete_first: Some("pod-2"),
            expect: Some("node-1"),
        },
    ];
    for Step {
        name,
        cordon,
        delete_first,
        expect,
    } in steps
    {
        if let Some(n) = cordon {
            set_unschedulable(live, n, true).await?;
        }
        if let Some(p) = delete_first {
            delete_pod(live, &ns, p).await?;
        }
        let mut pod = story_object("doesnotexist/pod-2.yaml", "Pod", "pod-2", &ns)?;
        pod["metadata"]["name"] = json!(name);
        let text = serde_json::to_string_pretty(&pod)?;
        let (_, real) = step(
            live,
            &mut checks,
            &dir.0,
            &ns,
            |_| Ok(()),
            &[("new.json", text.clone())],
            || async {
                live.apply_yaml(&ns, &text).await?;
                Ok(())
            },
        )
        .await?;
        match expect {
            Some(node) => ensure!(
                real == Real::Bound(node.to_string()),
                "{name}: {real}, the story has it on {node}"
            ),
            None => {
                ensure!(
                    matches!(real, Real::Pending(_)),
                    "{name}: {real}, expected Pending"
                );
                delete_pod(live, &ns, name).await?;
            }
        }
    }
    let summary = checks.finish("")?;
    report(live, &summary, start);
    Ok(())
}

/// Marks pod `ns/name` terminating in a snapshot, as the API shows an
/// evicted pod until its node has finished it: its controller's replacement
/// is then a missing replica podplace expands, scheduled beside it.
fn mark_terminating(snap: &mut Value, ns: &str, name: &str) -> Result<()> {
    let item = items(snap)?
        .iter_mut()
        .find(|i| is(i, "Pod", ns, name))
        .ok_or_else(|| anyhow!("the snapshot has no pod {ns}/{name}"))?;
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    item["metadata"]["deletionTimestamp"] = serde_json::to_value(now)?;
    item["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    Ok(())
}

/// One eviction of a drain, as `kubectl drain` does it (Eviction API, the
/// pod's own grace period): the ReplicaSet controller replaces the pod at
/// once, while the evicted one is still terminating on its node (the node
/// simulator finishes it about 2 s later). podplace predicts for both
/// states; the one the scheduler saw is known afterwards: when the evicted
/// pod still exists once the replacement is bound, it was terminating
/// throughout; otherwise both predictions must hold.
async fn evict_step(
    live: &Live,
    checks: &mut Checks,
    dir: &Path,
    ns: &str,
    victim: &str,
) -> Result<()> {
    let known = pod_names(live, ns).await?;
    let (_, terminating) = predict_binary(live, dir, |s| mark_terminating(s, ns, victim), &[])?;
    // The same snapshot without the pod: the state should the node finish
    // it before the scheduler gets to the replacement.
    let mut snap: Value = serde_json::from_slice(&std::fs::read(dir.join("snap.json"))?)?;
    remove_pod(&mut snap, ns, victim)?;
    std::fs::write(dir.join("snap-gone.json"), serde_json::to_vec(&snap)?)?;
    let gone = match place(live, dir, &["snap-gone.json"])?.as_slice() {
        [one] => one.prediction(),
        more => bail!("podplace placed {} pods, expected one", more.len()),
    };
    let api: Api<Pod> = Api::namespaced(live.client.clone(), ns);
    api.evict(victim, &EvictParams::default())
        .await
        .with_context(|| format!("evicting {ns}/{victim}"))?;
    live.note(format!("evicted {ns}/{victim}"));
    let pod = new_pod(live, ns, &known).await?;
    let real = outcome(live, ns, &pod).await?;
    let still_there = api.get_opt(victim).await?.is_some();
    checks.record(
        live,
        &format!("{pod} (replaces {victim}, terminating)"),
        &terminating,
        &real,
        true,
    );
    if !still_there {
        checks.record(
            live,
            &format!("{pod} (replaces {victim}, gone)"),
            &gone,
            &real,
            true,
        );
    }
    // The next step starts from a world without it.
    wait_until(
        format_args!("evicted pod {ns}/{victim} to be finished"),
        SETTLE,
        FAST_POLL,
        || {
            let api = api.clone();
            async move { api.get_opt(victim).await.map(|p| p.is_none().then_some(())) }
        },
    )
    .await?;
    Ok(())
}

/// Story 2: demo-app scaled to 5 one replica at a time, then worker3 and
/// worker2 drained one eviction at a time (cordon, then the Eviction API):
/// every replica ends up on worker1.
async fn drift_story(live: &Live) -> Result<()> {
    let start = Instant::now();
    let ns = live.namespace("pred-drift").await?;
    story_nodes(live, "drift").await?;
    let dir = Scratch::new("predict-drift")?;
    let mut checks = Checks::new("drift");
    create_workload(
        live,
        "drift/demo-app.yaml",
        "Deployment",
        "demo-app",
        &ns,
        0,
    )
    .await?;
    for replicas in 1..=5 {
        step(
            live,
            &mut checks,
            &dir.0,
            &ns,
            |s| set_replicas(s, "Deployment", &ns, "demo-app", replicas),
            &[],
            || scale(live, "Deployment", &ns, "demo-app", replicas),
        )
        .await?;
    }
    let running = |pods: Vec<Pod>| -> Vec<Pod> {
        pods.into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect()
    };
    for node in ["worker3", "worker2"] {
        set_unschedulable(live, node, true).await?;
        let on_node: Vec<String> = running(live.pods(&ns).await?)
            .into_iter()
            .filter(|p| node_of(p) == Some(node))
            .filter_map(|p| p.metadata.name)
            .collect();
        for victim in on_node {
            evict_step(live, &mut checks, &dir.0, &ns, &victim).await?;
        }
    }
    let summary = checks.finish("")?;
    let pods = running(live.pods(&ns).await?);
    ensure!(
        pods.len() == 5 && pods.iter().all(|p| node_of(p) == Some("worker1")),
        "the story ends with all five replicas on worker1: {:?}",
        pods.iter().map(node_of).collect::<Vec<_>>()
    );
    report(live, &summary, start);
    Ok(())
}

/// Story 4: web's two replicas one at a time, then a new image: the
/// Deployment controller's surge pod stays Pending (the stall). podplace is
/// asked with the snapshot before the update plus the new ReplicaSet the
/// controller is about to create (its pod-template-hash is the server's to
/// choose, so a stand-in value; only its selector matters to scheduling).
async fn rollout_story(live: &Live) -> Result<()> {
    let start = Instant::now();
    let ns = live.namespace("pred-rollout").await?;
    story_nodes(live, "rollout").await?;
    let dir = Scratch::new("predict-rollout")?;
    let mut checks = Checks::new("rollout");
    create_workload(live, "rollout/web.yaml", "Deployment", "web", &ns, 0).await?;
    for replicas in 1..=2 {
        step(
            live,
            &mut checks,
            &dir.0,
            &ns,
            |s| set_replicas(s, "Deployment", &ns, "web", replicas),
            &[],
            || scale(live, "Deployment", &ns, "web", replicas),
        )
        .await?;
    }
    // The update: nginx:1.28. maxSurge 25% of 2 rounds up to 1 new pod.
    let web = story_object("rollout/web.yaml", "Deployment", "web", &ns)?;
    let mut template = web["spec"]["template"].clone();
    template["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    template["metadata"]["labels"]["pod-template-hash"] = json!("next");
    let next = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-next", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web-store", "pod-template-hash": "next"}},
            "template": template,
        },
    });
    let deployments: Api<Deployment> = Api::namespaced(live.client.clone(), &ns);
    let (pod, real) = step(
        live,
        &mut checks,
        &dir.0,
        &ns,
        |_| Ok(()),
        &[("next.json", serde_json::to_string_pretty(&next)?)],
        || async {
            let patch = json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.28"}
            ]}}}});
            deployments
                .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
                .await?;
            live.note("web's image set to nginx:1.28");
            Ok(())
        },
    )
    .await?;
    let summary = checks.finish("")?;
    ensure!(
        matches!(real, Real::Pending(_)),
        "the story's surge pod {pod} stays Pending, not {real}"
    );
    report(live, &summary, start);
    Ok(())
}

/// Prints a test's summary line with its time.
fn report(live: &Live, summary: &str, start: Instant) {
    let line = format!("{summary} in {:.1}s", start.elapsed().as_secs_f64());
    eprintln!("{line}");
    live.note(line);
}

// ---------------------------------------------------------------------------
// The randomized world

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";
const RACK: &str = "topology.example.com/rack";
const POOL: &str = "node.example.com/pool";
const DISK: &str = "disktype";
const GENERATION: &str = "node.example.com/generation";
const RUNTIME: &str = "node.example.com/runtime";
const GPU: &str = "example.com/gpu";
/// The RuntimeClass some pods of the randomized world run with: pod
/// overhead, a node selector and a toleration, all added by the API
/// server's admission.
const RUNTIME_CLASS: &str = "pred-sandboxed";

/// How many pods the randomized world creates. With 25–49 nodes this fills
/// the world about as much as 500 pods did 50–99 nodes (about a quarter of
/// the pods end Pending), in half the time: the per-pod read of the live
/// state grows with the pods already there.
const WORLD_PODS: usize = 250;
/// The randomized world's node count range.
const WORLD_NODES: std::ops::RangeInclusive<usize> = 25..=49;
/// Every this many pods, the per-pod check also runs the binary
/// (`podplace snapshot` + `podplace place`).
const BINARY_EVERY: usize = 25;

/// A generated world: nodes, Services, and pods in creation order.
struct World {
    nodes: Vec<Node>,
    services: Vec<Service>,
    pods: Vec<Pod>,
}

/// One kind of pod of the randomized world: its labels and spec; its pods
/// differ only in name and (for some) a `version` label.
struct App {
    name: String,
    ns: String,
    tier: &'static str,
    weight: u32,
    versioned: bool,
    spec: Value,
}

type Rng = Xoshiro256PlusPlus;

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    items.choose(rng).unwrap_or(&items[0])
}

fn topology(rng: &mut Rng) -> &'static str {
    let keys = [HOSTNAME, HOSTNAME, ZONE, ZONE, RACK];
    keys[rng.random_range(0..keys.len())]
}

impl World {
    /// The world of `seed`, its namespaced objects in `namespaces`.
    fn generate(seed: u64, namespaces: [&str; 2]) -> Result<World> {
        let mut rng = Rng::seed_from_u64(seed);
        let nodes = (0..rng.random_range(WORLD_NODES))
            .map(|i| random_node(&mut rng, i))
            .collect::<Result<Vec<_>>>()?;
        let tiers = ["web", "api", "batch", "cache"];
        let names: Vec<(String, String, &'static str)> = (0..32)
            .map(|i| {
                (
                    format!("app{i:02}"),
                    namespaces[usize::from(rng.random_bool(0.3))].to_string(),
                    *pick(&mut rng, &tiers),
                )
            })
            .collect();
        let apps: Vec<App> = (0..names.len())
            .map(|i| random_app(&mut rng, &names, i, &nodes))
            .collect();
        let mut services = Vec::new();
        for a in &apps {
            if rng.random_bool(0.4) {
                services.push(serde_json::from_value(json!({
                    "metadata": {"name": a.name, "namespace": a.ns},
                    "spec": {"selector": {"app": a.name}, "ports": [{"port": 80}]},
                }))?);
            }
        }
        let total: u32 = apps.iter().map(|a| a.weight).sum();
        let mut counters = vec![0usize; apps.len()];
        let mut pods = Vec::with_capacity(WORLD_PODS);
        for _ in 0..WORLD_PODS {
            let mut ticket = rng.random_range(0..total);
            let i = apps
                .iter()
                .position(|a| {
                    if ticket < a.weight {
                        true
                    } else {
                        ticket -= a.weight;
                        false
                    }
                })
                .unwrap_or(0);
            let app = &apps[i];
            let mut labels = json!({"app": app.name, "tier": app.tier});
            if app.versioned {
                labels["version"] = json!(*pick(&mut rng, &["v1", "v2"]));
            }
            let pod = json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("{}-{}", app.name, counters[i]),
                    "namespace": app.ns,
                    "labels": labels,
                },
                "spec": app.spec,
            });
            counters[i] += 1;
            pods.push(serde_json::from_value(pod)?);
        }
        Ok(World {
            nodes,
            services,
            pods,
        })
    }
}

fn random_node(rng: &mut Rng, i: usize) -> Result<Node> {
    let name = format!("pred-{i:02}");
    let zone = *pick(rng, &["zone-a", "zone-a", "zone-b", "zone-b", "zone-c"]);
    let rack = format!("{zone}-rack{}", rng.random_range(0..3));
    let pool = *pick(
        rng,
        &[
            "general", "general", "general", "general", "general", "general", "general", "highmem",
            "highmem", "gpu",
        ],
    );
    let (cpu, memory) = match pool {
        "highmem" => (*pick(rng, &["8", "16"]), *pick(rng, &["32Gi", "64Gi"])),
        "gpu" => (*pick(rng, &["8", "16"]), *pick(rng, &["16Gi", "32Gi"])),
        _ => (
            *pick(rng, &["4", "4", "8", "16"]),
            *pick(rng, &["8Gi", "16Gi", "32Gi"]),
        ),
    };
    let pods = if rng.random_bool(0.08) { "8" } else { "110" };
    let mut labels = json!({ZONE: zone, RACK: rack, POOL: pool,
                            GENERATION: rng.random_range(1..=5).to_string()});
    if rng.random_bool(0.6) {
        labels[RUNTIME] = json!("sandboxed");
    }
    match rng.random_range(0..5) {
        0 | 1 => labels[DISK] = json!("ssd"),
        2 | 3 => labels[DISK] = json!("hdd"),
        _ => {}
    }
    let mut taints = Vec::new();
    if pool == "gpu" {
        taints.push(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}));
    }
    if rng.random_bool(0.1) {
        taints
            .push(json!({"key": "maintenance", "value": "planned", "effect": "PreferNoSchedule"}));
    }
    // A taint of its own.
    if rng.random_bool(0.2) {
        taints
            .push(json!({"key": "team", "value": format!("team-{i:02}"), "effect": "NoSchedule"}));
    }
    let mut resources =
        json!({"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi"});
    if pool == "gpu" {
        resources[GPU] = json!("2");
    }
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints, "unschedulable": rng.random_bool(0.03)},
        "status": {"capacity": resources, "allocatable": resources},
    }))?)
}

/// A pod (anti-)affinity term: mostly about the app itself, sometimes about
/// another app or a tier, across namespaces when the target lives elsewhere.
fn pod_term(rng: &mut Rng, apps: &[(String, String, &'static str)], me: usize) -> Value {
    let target = if rng.random_bool(0.6) {
        me
    } else {
        rng.random_range(0..apps.len())
    };
    let (name, ns, tier) = &apps[target];
    let selector = match rng.random_range(0..6) {
        0..=2 => json!({"matchLabels": {"app": name}}),
        3 => json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": [tier]}]}),
        4 => json!({"matchExpressions": [
            {"key": "app", "operator": "In", "values": [name, apps[me].0]},
            {"key": "tier", "operator": "Exists"},
        ]}),
        _ => {
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [apps[me].0]}]})
        }
    };
    let mut term = json!({"labelSelector": selector, "topologyKey": topology(rng)});
    if *ns != apps[me].1 {
        term["namespaces"] = json!([ns]);
    } else if rng.random_bool(0.1) {
        term["namespaceSelector"] = json!({"matchLabels": {"podplace-live": "true"}});
    } else if rng.random_bool(0.05) {
        // Every namespace.
        term["namespaceSelector"] = json!({});
    }
    // Merged into the selector by the API server, from the pod's own labels.
    match rng.random_range(0..20) {
        0 | 1 => term["matchLabelKeys"] = json!(["version"]),
        2 => term["mismatchLabelKeys"] = json!(["version"]),
        _ => {}
    }
    term
}

fn weighted(rng: &mut Rng, term: Value) -> Value {
    json!({"weight": rng.random_range(1..=100), "podAffinityTerm": term})
}

fn node_requirement(rng: &mut Rng) -> Value {
    match rng.random_range(0..8) {
        0 => json!({"key": ZONE, "operator": "In", "values": ["zone-a", "zone-c"]}),
        1 => json!({"key": DISK, "operator": "Exists"}),
        2 => json!({"key": POOL, "operator": "NotIn", "values": ["gpu"]}),
        3 => json!({"key": DISK, "operator": "In", "values": ["ssd"]}),
        4 => json!({"key": RACK, "operator": "DoesNotExist"}),
        5 => json!({"key": GENERATION, "operator": "Gt", "values": ["2"]}),
        6 => json!({"key": GENERATION, "operator": "Lt", "values": ["4"]}),
        _ => json!({"key": POOL, "operator": "In", "values": ["highmem", "gpu"]}),
    }
}

fn random_app(
    rng: &mut Rng,
    apps: &[(String, String, &'static str)],
    me: usize,
    nodes: &[Node],
) -> App {
    let (name, ns, tier) = apps[me].clone();
    let huge = rng.random_bool(0.05);
    let requests = |rng: &mut Rng| {
        let mut r = serde_json::Map::new();
        let cpu = if huge {
            *pick(rng, &["6", "12"])
        } else {
            *pick(
                rng,
                &[
                    "", "", "50m", "100m", "250m", "250m", "500m", "1", "1500m", "2",
                ],
            )
        };
        let memory = if huge {
            *pick(rng, &["24Gi", "48Gi"])
        } else {
            *pick(
                rng,
                &["", "", "64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi"],
            )
        };
        if !cpu.is_empty() {
            r.insert("cpu".to_string(), json!(cpu));
        }
        if !memory.is_empty() {
            r.insert("memory".to_string(), json!(memory));
        }
        if rng.random_bool(0.05) {
            r.insert("ephemeral-storage".to_string(), json!("10Gi"));
        }
        // Limits alone: the API server copies them into requests.
        if rng.random_bool(0.1) {
            json!({"limits": r})
        } else {
            json!({"requests": r})
        }
    };
    let mut containers = vec![
        json!({"name": "main", "image": format!("registry.example/{name}:1"), "resources": requests(rng)}),
    ];
    if rng.random_bool(0.2) {
        containers.push(json!({"name": "helper", "image": "registry.example/helper:1", "resources": requests(rng)}));
    }
    let host_network = rng.random_bool(0.02);
    if host_network {
        // The host port defaults to the container port.
        containers[0]["ports"] = json!([{"containerPort": 9100}]);
    } else if rng.random_bool(0.04) {
        containers[0]["ports"] = json!([{"containerPort": 8080, "hostPort": 18080}]);
    }
    let mut spec = json!({"containers": containers, "terminationGracePeriodSeconds": 0});
    if host_network {
        spec["hostNetwork"] = json!(true);
    }
    if rng.random_bool(0.1) {
        spec["runtimeClassName"] = json!(RUNTIME_CLASS);
    }
    match rng.random_range(0..20) {
        0 | 1 => {
            spec["initContainers"] = json!([{"name": "init", "image": "registry.example/init:1", "resources": requests(rng)}]);
        }
        2 => {
            spec["initContainers"] = json!([{"name": "sidecar", "image": "registry.example/sidecar:1", "restartPolicy": "Always", "resources": requests(rng)}]);
        }
        _ => {}
    }

    let mut tolerations = Vec::new();
    if rng.random_bool(0.15) {
        tolerations.push(json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}));
        if rng.random_bool(0.5) {
            // Extended resources need a limit (requests default to it).
            spec["containers"][0]["resources"]["limits"][GPU] = json!("1");
        }
    }
    if rng.random_bool(0.1) {
        tolerations.push(json!({"key": "maintenance", "operator": "Exists"}));
    }
    if rng.random_bool(0.05) {
        tolerations.push(json!({"key": "team", "operator": "Exists", "effect": "NoSchedule"}));
    }
    if rng.random_bool(0.02) {
        tolerations.push(json!({"operator": "Exists"}));
    }
    if !tolerations.is_empty() {
        spec["tolerations"] = json!(tolerations);
    }

    if rng.random_bool(0.15) {
        spec["nodeSelector"] = match rng.random_range(0..3) {
            0 => json!({POOL: "highmem"}),
            1 => json!({DISK: "ssd"}),
            _ => {
                // One node by name: its hostname label.
                let node = pick(rng, nodes).metadata.name.clone().unwrap_or_default();
                json!({HOSTNAME: node})
            }
        };
    }
    let mut affinity = serde_json::Map::new();
    let mut node_affinity = serde_json::Map::new();
    if rng.random_bool(0.15) {
        let terms: Vec<Value> = (0..rng.random_range(1..=2))
            .map(|_| {
                let exprs: Vec<Value> = (0..rng.random_range(1..=2))
                    .map(|_| node_requirement(rng))
                    .collect();
                if rng.random_bool(0.15) {
                    // A node by name (one value: the API server allows no more).
                    let name = pick(rng, nodes).metadata.name.clone();
                    let operator = *pick(rng, &["In", "NotIn"]);
                    json!({"matchFields": [
                        {"key": "metadata.name", "operator": operator, "values": [name]}
                    ]})
                } else {
                    json!({"matchExpressions": exprs})
                }
            })
            .collect();
        node_affinity.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".to_string(),
            json!({"nodeSelectorTerms": terms}),
        );
    }
    if rng.random_bool(0.25) {
        let terms: Vec<Value> = (0..rng.random_range(1..=2))
            .map(|_| {
                json!({"weight": rng.random_range(1..=100),
                       "preference": {"matchExpressions": [node_requirement(rng)]}})
            })
            .collect();
        node_affinity.insert(
            "preferredDuringSchedulingIgnoredDuringExecution".to_string(),
            json!(terms),
        );
    }
    if !node_affinity.is_empty() {
        affinity.insert("nodeAffinity".to_string(), Value::Object(node_affinity));
    }
    for (kind, required, preferred) in [("podAntiAffinity", 0.25, 0.25), ("podAffinity", 0.1, 0.2)]
    {
        let mut a = serde_json::Map::new();
        if rng.random_bool(required) {
            let terms: Vec<Value> = (0..rng.random_range(1..=2))
                .map(|_| pod_term(rng, apps, me))
                .collect();
            a.insert(
                "requiredDuringSchedulingIgnoredDuringExecution".to_string(),
                json!(terms),
            );
        }
        if rng.random_bool(preferred) {
            let terms: Vec<Value> = (0..rng.random_range(1..=2))
                .map(|_| {
                    let t = pod_term(rng, apps, me);
                    weighted(rng, t)
                })
                .collect();
            a.insert(
                "preferredDuringSchedulingIgnoredDuringExecution".to_string(),
                json!(terms),
            );
        }
        if !a.is_empty() {
            affinity.insert(kind.to_string(), Value::Object(a));
        }
    }
    if !affinity.is_empty() {
        spec["affinity"] = Value::Object(affinity);
    }

    let versioned = rng.random_bool(0.2);
    if rng.random_bool(0.35) {
        let constraints: Vec<Value> = (0..rng.random_range(1..=2))
            .map(|_| {
                let hard = rng.random_bool(0.5);
                let mut c = json!({
                    "maxSkew": rng.random_range(1..=3),
                    "topologyKey": topology(rng),
                    "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
                    "labelSelector": {"matchLabels": {"app": name}},
                });
                if hard && rng.random_bool(0.2) {
                    c["minDomains"] = json!(rng.random_range(2..=5));
                }
                if rng.random_bool(0.2) {
                    c["nodeAffinityPolicy"] = json!(*pick(rng, &["Honor", "Ignore"]));
                }
                if rng.random_bool(0.2) {
                    c["nodeTaintsPolicy"] = json!(*pick(rng, &["Honor", "Ignore"]));
                }
                if versioned && rng.random_bool(0.5) {
                    c["matchLabelKeys"] = json!(["version"]);
                }
                c
            })
            .collect();
        // The API server refuses two constraints with the same topology
        // key and whenUnsatisfiable.
        let mut seen = BTreeSet::new();
        let constraints: Vec<Value> = constraints
            .into_iter()
            .filter(|c| {
                seen.insert((
                    c["topologyKey"].to_string(),
                    c["whenUnsatisfiable"].to_string(),
                ))
            })
            .collect();
        spec["topologySpreadConstraints"] = json!(constraints);
    }
    App {
        name,
        ns,
        tier,
        weight: rng.random_range(1..=10),
        versioned,
        spec,
    }
}

/// The seed: `PODPLACE_PREDICT_SEED` when set, else from the clock.
fn world_seed() -> Result<u64> {
    match std::env::var("PODPLACE_PREDICT_SEED") {
        Ok(s) => s
            .parse()
            .with_context(|| format!("PODPLACE_PREDICT_SEED={s} is not a number")),
        Err(_) => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)),
    }
}

/// Where a mismatch's world and pod are kept (not removed after the test).
fn keep_dir(seed: u64) -> PathBuf {
    std::env::temp_dir().join(format!("podplace-predictions-{seed}"))
}

/// Keeps the world a prediction was made on and the pod, for replaying the
/// mismatch offline: `podplace place -f world.json -f pod.json`.
fn keep(seed: u64, pod: &Pod, world: &str, p: &Prediction, r: &Real) -> Result<PathBuf> {
    let name = pod.metadata.name.as_deref().unwrap_or("pod");
    let dir = keep_dir(seed).join(name);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("world.json"), world)?;
    let mut pod_json = serde_json::to_value(pod)?;
    pod_json["apiVersion"] = json!("v1");
    pod_json["kind"] = json!("Pod");
    std::fs::write(dir.join("pod.json"), serde_json::to_vec_pretty(&pod_json)?)?;
    std::fs::write(
        dir.join("answers.txt"),
        format!("podplace:       {p}\nkube-scheduler: {r}\n"),
    )?;
    Ok(dir)
}

/// A pod as a manifest file podplace loads (`apiVersion`/`kind` set).
fn manifest(pod: &Pod) -> Result<Value> {
    let mut v = serde_json::to_value(pod)?;
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("Pod");
    Ok(v)
}

/// The randomized world: 250 pods, each predicted on the live state and
/// compared with the real scheduler before the next is created.
async fn random_world(live: &Live) -> Result<()> {
    let runtime_class = json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": RUNTIME_CLASS},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": "100m", "memory": "64Mi"}},
        "scheduling": {
            "nodeSelector": {RUNTIME: "sandboxed"},
            "tolerations": [{"key": "maintenance", "operator": "Exists"}],
        },
    });
    live.apply_yaml("default", &runtime_class.to_string())
        .await?;
    let outcome = random_world_checks(live).await;
    // Cluster-scoped: not removed with the test's namespaces.
    let api: Api<k8s_openapi::api::node::v1::RuntimeClass> = Api::all(live.client.clone());
    api.delete(RUNTIME_CLASS, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting RuntimeClass {RUNTIME_CLASS}"))?;
    outcome
}

async fn random_world_checks(live: &Live) -> Result<()> {
    let start = Instant::now();
    let seed = world_seed()?;
    let context = format!(
        " (world seed {seed}: PODPLACE_PREDICT_SEED={seed} repeats it; worlds kept in {})",
        keep_dir(seed).display()
    );
    eprintln!("predictions: random world seed {seed}");
    live.note(format!("random world seed {seed}"));
    let ns_a = live.namespace("pred-a").await?;
    let ns_b = live.namespace("pred-b").await?;
    let world = World::generate(seed, [&ns_a, &ns_b])?;
    let names = live.add_nodes(world.nodes.clone()).await?;
    for node in &world.nodes {
        if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            let name = node.metadata.name.as_deref().unwrap_or("");
            set_unschedulable(live, name, true).await?;
        }
    }
    for svc in &world.services {
        let ns = svc.metadata.namespace.as_deref().unwrap_or("");
        Api::<Service>::namespaced(live.client.clone(), ns)
            .create(&PostParams::default(), svc)
            .await
            .with_context(|| format!("creating service {:?}", svc.metadata.name))?;
    }
    let setup = start.elapsed();

    // One `place` of the whole batch up front, through the binary.
    let dir = Scratch::new("predict-random")?;
    snapshot(live, &dir.0, |_| Ok(()))?;
    let batch_pods = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": world.pods.iter().map(manifest).collect::<Result<Vec<_>>>()?,
    });
    std::fs::write(dir.join("pods.json"), serde_json::to_vec(&batch_pods)?)?;
    let batch: BTreeMap<String, Prediction> = place(live, &dir.0, &["snap.json", "pods.json"])?
        .into_iter()
        .map(|p| (p.pod.clone(), p.prediction()))
        .collect();
    ensure!(
        batch.len() == world.pods.len(),
        "the batch placed {} pods of {}",
        batch.len(),
        world.pods.len()
    );
    let batch_took = start.elapsed() - setup;

    let mut checks = Checks::new("random world");
    let mut real: BTreeMap<String, Real> = BTreeMap::new();
    let (mut t_predict, mut t_binary, mut t_real) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut binary_runs = 0;
    for (i, pod) in world.pods.iter().enumerate() {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let t = Instant::now();
        let (prediction, world) = if i % BINARY_EVERY == 0 {
            let text = serde_json::to_string_pretty(&manifest(pod)?)?;
            let (_, p) = predict_binary(live, &dir.0, |_| Ok(()), &[("pod.json", text)])?;
            binary_runs += 1;
            t_binary += t.elapsed();
            (p, None)
        } else {
            let (p, inv) = predict_in_process(live, pod).await?;
            t_predict += t.elapsed();
            (p, Some(inv))
        };
        let t = Instant::now();
        Api::<Pod>::namespaced(live.client.clone(), ns)
            .create(&PostParams::default(), pod)
            .await
            .with_context(|| format!("creating pod {ns}/{name}"))?;
        let r = outcome(live, ns, name).await?;
        if matches!(r, Real::Pending(_)) {
            delete_pod(live, ns, name).await?;
        }
        t_real += t.elapsed();
        checks.record(
            live,
            &format!("{ns}/{name}"),
            &prediction,
            &r,
            std::env::var_os("PODPLACE_PREDICT_VERBOSE").is_some(),
        );
        if !agrees(&prediction, &r) {
            let world = match world {
                Some(inv) => world_without(inv, pod)?,
                None => std::fs::read_to_string(dir.join("snap.json"))?,
            };
            let dir = keep(seed, pod, &world, &prediction, &r)?;
            eprintln!("predictions: {ns}/{name}'s world kept in {}", dir.display());
        }
        real.insert(format!("{ns}/{name}"), r);
        if (i + 1) % 100 == 0 {
            eprintln!(
                "predictions: {} pods checked in {:.1}s",
                i + 1,
                start.elapsed().as_secs_f64()
            );
        }
    }

    // The batch figure: one `place` of everything up front against reality.
    let (mut exact, mut in_tie) = (0, 0);
    for (pod, r) in &real {
        let Some(p) = batch.get(pod) else { continue };
        match (r, &p.node) {
            (Real::Bound(n), Some(b)) if n == b => {
                exact += 1;
                in_tie += 1;
            }
            (Real::Bound(n), Some(_)) if p.tied.contains(n) => in_tie += 1,
            (Real::Pending(_), None) => {
                exact += 1;
                in_tie += 1;
            }
            _ => {}
        }
    }
    let figure = format!(
        "batch prediction matched {exact} of {} ({in_tie} within the batch's tied set)",
        real.len()
    );
    eprintln!("predictions: {figure} (seed {seed})");
    live.note(&figure);
    let timing = format!(
        "{} nodes, {} pods: setup {:.1}s, batch place {:.1}s, {} in-process predictions {:.1}s \
         ({:.0} ms each), {binary_runs} binary predictions {:.1}s ({:.0} ms each), real scheduling \
         {:.1}s ({:.0} ms each)",
        names.len(),
        world.pods.len(),
        setup.as_secs_f64(),
        batch_took.as_secs_f64(),
        world.pods.len() - binary_runs,
        t_predict.as_secs_f64(),
        t_predict.as_secs_f64() * 1000.0 / (world.pods.len() - binary_runs).max(1) as f64,
        t_binary.as_secs_f64(),
        t_binary.as_secs_f64() * 1000.0 / binary_runs.max(1) as f64,
        t_real.as_secs_f64(),
        t_real.as_secs_f64() * 1000.0 / world.pods.len().max(1) as f64,
    );
    eprintln!("predictions: {timing}");
    live.note(&timing);
    let summary = checks.finish(&context)?;
    report(live, &format!("{summary}; {figure}"), start);
    Ok(())
}
