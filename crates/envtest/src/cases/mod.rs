//! Live cases: small worlds of volumes, claims, scheduling gates and DRA
//! claims, applied to the real control plane, with the real
//! kube-scheduler's decision recorded next to them (the format is
//! `tests/data/live-cases/README.md`; `podplace conformance` checks them).
//!
//! A [`Spec`] says what to create; [`record`] creates it in its own
//! namespace and nodes (named after the case, so cases never see each
//! other), creates the pod under test, waits with deadlines for its binding,
//! its FailedScheduling event, its SchedulingGated condition or its claim's
//! selected-node annotation, reads every object back as the scheduler saw
//! it, and removes the case again.

pub mod build;
pub mod configs;
pub mod families;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client};
use serde_json::{json, Value};

use crate::error::{Context, Error, Result};
use crate::sim::NodeSimulator;
use crate::wait::wait_until;

/// The `format` field of every case file.
pub const FORMAT: &str = "podplace.io/live-case/v1";
/// How long to wait for the scheduler's answer.
const ANSWER: Duration = Duration::from_secs(40);
/// After a FailedScheduling event, how long the pod must stay unbound for
/// the answer to count (a first attempt racing an informer is retried by
/// kube-scheduler at once when the missing event arrives).
const SETTLED: Duration = Duration::from_millis(2500);
const POLL: Duration = Duration::from_millis(50);

/// One case to record.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Case name: also its namespace and the prefix of its nodes and
    /// cluster-scoped objects.
    pub name: String,
    /// Its family (a short kebab-case word group).
    pub family: &'static str,
    /// What it tests, in a sentence.
    pub description: String,
    /// Nodes (registered with the simulator).
    pub nodes: Vec<Value>,
    /// Objects created in order before the pod (cluster-scoped ones
    /// anywhere; namespaced ones go to the case's namespace). Pods among
    /// them name their node: existing pods.
    pub objects: Vec<Value>,
    /// Status patches applied after creation: (kind, name, status body).
    pub statuses: Vec<(&'static str, String, Value)>,
    /// Objects deleted before the pod is created (they carry the hold
    /// finalizer, so they stay "being deleted"): (kind, name).
    pub deletions: Vec<(&'static str, String)>,
    /// The pod under test.
    pub pod: Value,
    /// The scheduler may pick any of several equally good nodes.
    pub ties_allowed: bool,
    /// The pod has scheduling gates: after recording that it is gated,
    /// remove them and record what happens then.
    pub ungate: bool,
    /// The scheduler is expected never to try the pod (a PreEnqueue plugin
    /// holds it): after [`UNTRIED`] without a binding or event, its
    /// PodScheduled condition (if any) is the answer.
    pub untried: bool,
}

/// How long a pod expected to be held before scheduling must see nothing.
const UNTRIED: Duration = Duration::from_secs(6);

/// Where a kind lives in the API.
fn resource(kind: &str) -> Option<(ApiResource, bool)> {
    let (group, version, plural, namespaced) = match kind {
        "Namespace" => ("", "v1", "namespaces", false),
        "Node" => ("", "v1", "nodes", false),
        "Pod" => ("", "v1", "pods", true),
        "Service" => ("", "v1", "services", true),
        "PersistentVolume" => ("", "v1", "persistentvolumes", false),
        "PersistentVolumeClaim" => ("", "v1", "persistentvolumeclaims", true),
        "StorageClass" => ("storage.k8s.io", "v1", "storageclasses", false),
        "CSINode" => ("storage.k8s.io", "v1", "csinodes", false),
        "CSIDriver" => ("storage.k8s.io", "v1", "csidrivers", false),
        "CSIStorageCapacity" => ("storage.k8s.io", "v1", "csistoragecapacities", true),
        "DeviceClass" => ("resource.k8s.io", "v1", "deviceclasses", false),
        "ResourceClaim" => ("resource.k8s.io", "v1", "resourceclaims", true),
        "ResourceSlice" => ("resource.k8s.io", "v1", "resourceslices", false),
        _ => return None,
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Some((ApiResource::from_gvk_with_plural(&gvk, plural), namespaced))
}

fn api_for(client: &Client, kind: &str, ns: &str) -> Result<Api<DynamicObject>> {
    let (ar, namespaced) =
        resource(kind).ok_or_else(|| Error(format!("the recorder does not know kind {kind}")))?;
    Ok(if namespaced {
        Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    })
}

fn kind_of(v: &Value) -> String {
    v["kind"].as_str().unwrap_or_default().to_string()
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Drops what only the server's bookkeeping needs (managedFields).
fn tidy(mut v: Value) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    v
}

/// The real scheduler's answer for the pod under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Bound to this node.
    Bound(String),
    /// Not bound: the (first) FailedScheduling message.
    Pending(String),
    /// Never tried: the scheduling gates it waits for.
    Gated(Vec<String>),
    /// Dynamic provisioning started on this node (the claim's
    /// selected-node annotation); no provisioner runs, so it stays unbound.
    Provisioning(String),
    /// Never tried and not gated: no binding, event or provisioning within
    /// the wait; the PodScheduled condition's reason and message, if any.
    Untried(Option<(String, String)>),
}

/// Creates the case on the cluster, records the scheduler's answer and
/// returns the case file's JSON; the case is removed again either way.
pub async fn record(client: &Client, sim: &NodeSimulator, spec: &Spec) -> Result<Value> {
    let out = record_inner(client, sim, spec).await;
    let clean = cleanup(client, sim, spec).await;
    let out = out?;
    clean?;
    Ok(out)
}

async fn record_inner(client: &Client, sim: &NodeSimulator, spec: &Spec) -> Result<Value> {
    let nodes = prepare(client, sim, spec).await?;
    decide(client, spec, &nodes).await
}

/// Creates the case's world (namespace, nodes, objects, statuses,
/// deletions) and waits until it is settled: pre-bound claims Bound,
/// existing pods Running, deleted objects terminating. Returns the case's
/// node names. Follow with [`decide`], and [`cleanup`] in any case.
pub async fn prepare(client: &Client, sim: &NodeSimulator, spec: &Spec) -> Result<Vec<String>> {
    let ns = spec.name.as_str();
    wait_gone(client, spec).await?;
    let nss: Api<Namespace> = Api::all(client.clone());
    let body: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).context("namespace body")?;
    nss.create(&PostParams::default(), &body)
        .await
        .with_context(|| format!("creating namespace {ns}"))?;
    crate::wait::wait_default_service_account(client, ns, POLL).await?;

    let nodes: Vec<Node> = spec
        .nodes
        .iter()
        .map(|n| serde_json::from_value(n.clone()))
        .collect::<std::result::Result<_, _>>()
        .context("a node of the case")?;
    let names = sim.add_nodes(nodes).await?;
    sim.wait_nodes_ready(&names, Duration::from_secs(60))
        .await?;

    for obj in &spec.objects {
        let kind = kind_of(obj);
        let api = api_for(client, &kind, ns)?;
        let o: DynamicObject = serde_json::from_value(obj.clone())
            .with_context(|| format!("{kind} {}", name_of(obj)))?;
        api.create(&PostParams::default(), &o)
            .await
            .with_context(|| format!("creating {kind} {}", name_of(obj)))?;
    }
    for (kind, name, status) in &spec.statuses {
        let api = api_for(client, kind, ns)?;
        let status = with_pod_uids(client, ns, status.clone()).await?;
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("setting the status of {kind} {name}"))?;
    }
    // Pre-bound claims: wait until the PV controller has bound them.
    for obj in &spec.objects {
        if kind_of(obj) == "PersistentVolumeClaim" && obj["spec"]["volumeName"].is_string() {
            let api = api_for(client, "PersistentVolumeClaim", ns)?;
            let name = name_of(obj);
            wait_until(
                format_args!("claim {ns}/{name} to be Bound"),
                ANSWER,
                POLL,
                || {
                    let (api, name) = (api.clone(), name.clone());
                    async move {
                        let c = api.get(&name).await?;
                        Ok::<_, kube::Error>(
                            (c.data["status"]["phase"].as_str() == Some("Bound")).then_some(()),
                        )
                    }
                },
            )
            .await?;
        }
        if kind_of(obj) == "Pod" {
            // Existing pods: running on their node before the new one comes.
            let api: Api<Pod> = Api::namespaced(client.clone(), ns);
            let name = name_of(obj);
            wait_until(
                format_args!("existing pod {ns}/{name} to be Running"),
                ANSWER,
                POLL,
                || {
                    let (api, name) = (api.clone(), name.clone());
                    async move {
                        let p = api.get(&name).await?;
                        let phase = p.status.and_then(|s| s.phase);
                        Ok::<_, kube::Error>((phase.as_deref() == Some("Running")).then_some(()))
                    }
                },
            )
            .await?;
        }
    }
    for (kind, name) in &spec.deletions {
        let api = api_for(client, kind, ns)?;
        api.delete(name, &DeleteParams::background())
            .await
            .with_context(|| format!("deleting {kind} {name}"))?;
        wait_until(
            format_args!("{kind} {name} to be terminating"),
            ANSWER,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let o = api.get(name).await?;
                    Ok::<_, kube::Error>(o.metadata.deletion_timestamp.map(|_| ()))
                }
            },
        )
        .await?;
    }

    Ok(names)
}

/// Reads the prepared world back, creates the pod under test, waits for the
/// scheduler's answer (and, for a gated pod, removes its gates and waits
/// again) and returns the case file's JSON.
pub async fn decide(client: &Client, spec: &Spec, names: &[String]) -> Result<Value> {
    let ns = spec.name.as_str();
    // The world as the scheduler sees it when the pod arrives.
    let world = read_world(client, spec, names).await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod_name = name_of(&spec.pod);
    let body: Pod = serde_json::from_value(spec.pod.clone()).context("the pod under test")?;
    let created = pods
        .create(&PostParams::default(), &body)
        .await
        .with_context(|| format!("creating the pod under test {ns}/{pod_name}"))?;
    let created = tidy(serde_json::to_value(&created).context("the created pod")?);
    let answer = wait_answer(client, ns, &pod_name, spec).await?;
    let mut expected = answer_json(&answer);
    if let Answer::Bound(_) = &answer {
        expected["claims"] = claims_of(client, ns, &spec.pod).await?;
    }
    if let Answer::Provisioning(_) = &answer {
        expected["claims"] = claims_of(client, ns, &spec.pod).await?;
    }
    if spec.ties_allowed {
        expected["tiesAllowed"] = json!(true);
    }
    if spec.ungate {
        let Answer::Gated(_) = &answer else {
            return Err(Error(format!(
                "{}: the gated pod was not held by its gates: {answer:?}",
                spec.name
            )));
        };
        pods.patch(
            &pod_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"schedulingGates": null}})),
        )
        .await
        .with_context(|| format!("removing {ns}/{pod_name}'s scheduling gates"))?;
        let mut ungated = spec.clone();
        ungated.ungate = false;
        let after = wait_answer(client, ns, &pod_name, &ungated).await?;
        let mut a = answer_json(&after);
        if spec.ties_allowed {
            a["tiesAllowed"] = json!(true);
        }
        if let Answer::Bound(_) | Answer::Provisioning(_) = &after {
            a["claims"] = claims_of(client, ns, &spec.pod).await?;
        }
        expected["afterGatesRemoved"] = a;
    }
    Ok(json!({
        "format": FORMAT,
        "name": spec.name,
        "family": spec.family,
        "description": spec.description,
        "objects": world,
        "pod": created,
        "expected": expected,
    }))
}

fn answer_json(a: &Answer) -> Value {
    match a {
        Answer::Bound(n) => json!({"node": n}),
        Answer::Pending(m) => json!({"node": null, "message": m}),
        Answer::Gated(g) => json!({"node": null, "gated": g}),
        Answer::Provisioning(n) => json!({"node": n, "provisioning": true}),
        Answer::Untried(None) => json!({"node": null, "untried": true}),
        Answer::Untried(Some((reason, message))) => json!({
            "node": null, "untried": true,
            "condition": {"reason": reason, "message": message},
        }),
    }
}

/// The claims the pod mounts, each with the volume it was bound to or the
/// node chosen for provisioning.
async fn claims_of(client: &Client, ns: &str, pod: &Value) -> Result<Value> {
    let api = api_for(client, "PersistentVolumeClaim", ns)?;
    let mut out = serde_json::Map::new();
    for v in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let Some(name) = v["persistentVolumeClaim"]["claimName"].as_str() else {
            continue;
        };
        let Some(c) = api.get_opt(name).await.context("reading a claim")? else {
            continue;
        };
        let mut entry = serde_json::Map::new();
        if let Some(vn) = c.data["spec"]["volumeName"].as_str() {
            entry.insert("volumeName".into(), json!(vn));
        }
        if let Some(n) = c
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(build::SELECTED_NODE))
        {
            entry.insert("selectedNode".into(), json!(n));
        }
        out.insert(name.to_string(), Value::Object(entry));
    }
    Ok(Value::Object(out))
}

/// Waits for the scheduler's answer about `ns/pod`.
async fn wait_answer(client: &Client, ns: &str, pod: &str, spec: &Spec) -> Result<Answer> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let claims = api_for(client, "PersistentVolumeClaim", ns)?;
    let claim_names: Vec<String> = spec.pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .map(str::to_string)
        .collect();
    let gated = spec.ungate;
    let first = wait_until(
        format_args!("kube-scheduler's answer for {ns}/{pod}"),
        if spec.untried { UNTRIED } else { ANSWER },
        POLL,
        || {
            let (pods, events, claims, claim_names) = (
                pods.clone(),
                events.clone(),
                claims.clone(),
                claim_names.clone(),
            );
            async move {
                let p = pods.get(pod).await?;
                if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                    return Ok::<_, kube::Error>(Some(Answer::Bound(n)));
                }
                if gated {
                    let cond = p
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled").cloned());
                    if cond.is_some_and(|c| c.reason.as_deref() == Some("SchedulingGated")) {
                        let g = p
                            .spec
                            .as_ref()
                            .and_then(|s| s.scheduling_gates.as_ref())
                            .map(|gs| gs.iter().map(|g| g.name.clone()).collect())
                            .unwrap_or_default();
                        return Ok(Some(Answer::Gated(g)));
                    }
                }
                for c in &claim_names {
                    if let Some(obj) = claims.get_opt(c).await? {
                        if let Some(n) = obj
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(build::SELECTED_NODE))
                        {
                            return Ok(Some(Answer::Provisioning(n.clone())));
                        }
                    }
                }
                let lp = ListParams::default().fields(&format!(
                    "involvedObject.name={pod},reason=FailedScheduling"
                ));
                let mut evs = events.list(&lp).await?.items;
                evs.sort_by_key(|e| {
                    e.event_time
                        .as_ref()
                        .map(|t| t.0)
                        .or(e.first_timestamp.as_ref().map(|t| t.0))
                });
                Ok(evs.into_iter().find_map(|e| e.message).map(Answer::Pending))
            }
        },
    )
    .await;
    let first = match first {
        Ok(a) => a,
        Err(_) if spec.untried => {
            let p = pods.get(pod).await.context("reading the untried pod")?;
            let cond = p
                .status
                .and_then(|s| s.conditions)
                .and_then(|cs| cs.into_iter().find(|c| c.type_ == "PodScheduled"))
                .map(|c| (c.reason.unwrap_or_default(), c.message.unwrap_or_default()));
            return Ok(Answer::Untried(cond));
        }
        Err(e) => return Err(e),
    };
    match first {
        Answer::Pending(_) | Answer::Gated(_) => {
            // It must stay so: a bind (or provisioning) now means the first
            // attempt raced an informer.
            let later = wait_until(
                format_args!("{ns}/{pod} to stay unbound"),
                SETTLED,
                POLL,
                || {
                    let (pods, claims, names) = (pods.clone(), claims.clone(), claim_names.clone());
                    async move {
                        let p = pods.get(pod).await?;
                        if p.spec.and_then(|s| s.node_name).is_some() {
                            return Ok::<_, kube::Error>(Some(()));
                        }
                        for c in &names {
                            if let Some(obj) = claims.get_opt(c).await? {
                                if obj
                                    .metadata
                                    .annotations
                                    .is_some_and(|a| a.contains_key(build::SELECTED_NODE))
                                {
                                    return Ok(Some(()));
                                }
                            }
                        }
                        Ok(None)
                    }
                },
            )
            .await;
            if later.is_ok() {
                return Err(Error(format!(
                    "{}: {ns}/{pod} was first {first:?}, then went on: an unsettled answer",
                    spec.name
                )));
            }
            Ok(first)
        }
        other => Ok(other),
    }
}

/// Reads every object of the case back, as the scheduler sees it.
async fn read_world(client: &Client, spec: &Spec, nodes: &[String]) -> Result<Vec<Value>> {
    let ns = spec.name.as_str();
    let mut out = Vec::new();
    let nss: Api<Namespace> = Api::all(client.clone());
    let n = nss.get(ns).await.context("reading the case's namespace")?;
    out.push(tidy(
        json!({"apiVersion": "v1", "kind": "Namespace"}).merge(serde_json::to_value(n)?),
    ));
    let node_api: Api<Node> = Api::all(client.clone());
    for name in nodes {
        let n = node_api
            .get(name)
            .await
            .with_context(|| format!("reading node {name}"))?;
        out.push(tidy(
            json!({"apiVersion": "v1", "kind": "Node"}).merge(serde_json::to_value(n)?),
        ));
    }
    for obj in &spec.objects {
        let kind = kind_of(obj);
        let name = name_of(obj);
        let api = api_for(client, &kind, ns)?;
        let o = api
            .get(&name)
            .await
            .with_context(|| format!("reading {kind} {name}"))?;
        let (ar, _) = resource(&kind).ok_or_else(|| Error(format!("kind {kind}")))?;
        let v = json!({"apiVersion": ar.api_version, "kind": kind}).merge(serde_json::to_value(o)?);
        out.push(tidy(v));
    }
    Ok(out)
}

/// `a` with `b`'s fields added over it (top level).
trait Merge {
    fn merge(self, b: Value) -> Value;
}

impl Merge for Value {
    fn merge(mut self, b: Value) -> Value {
        if let (Some(a), Value::Object(b)) = (self.as_object_mut(), b) {
            for (k, v) in b {
                a.insert(k, v);
            }
        }
        self
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error(format!("JSON: {e}"))
    }
}

/// Removes the case: the pod and existing pods at once, hold finalizers,
/// the namespace, its nodes and its cluster-scoped objects. Nodes are
/// gone (from the API) when it returns, so the next case counts only its
/// own.
pub async fn cleanup(client: &Client, sim: &NodeSimulator, spec: &Spec) -> Result<()> {
    let ns = spec.name.as_str();
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let _ = pods.delete_collection(&now, &ListParams::default()).await;
    let unhold = json!({"metadata": {"finalizers": null}});
    for obj in &spec.objects {
        let kind = kind_of(obj);
        let name = name_of(obj);
        let api = api_for(client, &kind, ns)?;
        if obj["metadata"]["finalizers"].is_array() {
            let _ = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&unhold))
                .await;
        }
        if kind != "Pod" {
            match api.delete(&name, &now).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(Error(format!("deleting {kind} {name}: {e}"))),
            }
        }
    }
    let nss: Api<Namespace> = Api::all(client.clone());
    match nss.delete(ns, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(Error(format!("deleting namespace {ns}: {e}"))),
    }
    let names: Vec<String> = spec.nodes.iter().map(name_of).collect();
    sim.remove_nodes(&names).await?;
    // Node objects are deleted synchronously; their pods too (grace 0).
    let node_api: Api<Node> = Api::all(client.clone());
    wait_until(
        format_args!("the nodes of {ns} to be gone"),
        ANSWER,
        POLL,
        || {
            let (api, names) = (node_api.clone(), names.clone());
            async move {
                let list = api.list_metadata(&ListParams::default()).await?;
                let left = list
                    .items
                    .iter()
                    .filter(|n| n.metadata.name.as_ref().is_some_and(|n| names.contains(n)))
                    .count();
                Ok::<_, kube::Error>((left == 0).then_some(()))
            }
        },
    )
    .await?;
    wait_until(
        format_args!("the pods of {ns} to be gone"),
        ANSWER,
        POLL,
        || {
            let pods = pods.clone();
            async move {
                let list = pods.list_metadata(&ListParams::default()).await?;
                Ok::<_, kube::Error>(list.items.is_empty().then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// `status` with every `"uid": "pod:NAME"` replaced by that pod's uid
/// (consumers in a ResourceClaim's reservedFor are real pods of the case).
async fn with_pod_uids(client: &Client, ns: &str, mut status: Value) -> Result<Value> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let entries = status["status"]["reservedFor"].as_array_mut();
    for r in entries.into_iter().flatten() {
        if let Some(name) = r["uid"].as_str().and_then(|u| u.strip_prefix("pod:")) {
            let name = name.to_string();
            let pod = pods
                .get(&name)
                .await
                .with_context(|| format!("reading consumer pod {ns}/{name}"))?;
            r["uid"] = json!(pod.metadata.uid.unwrap_or_default());
        }
    }
    Ok(status)
}

/// Waits until nothing of an earlier attempt at `spec` is left (its
/// namespace and cluster-scoped objects), so it can be created afresh.
async fn wait_gone(client: &Client, spec: &Spec) -> Result<()> {
    let ns = spec.name.as_str();
    let mut objects = vec![("Namespace".to_string(), ns.to_string())];
    for o in &spec.objects {
        let kind = kind_of(o);
        if resource(&kind).is_some_and(|(_, namespaced)| !namespaced) {
            objects.push((kind, name_of(o)));
        }
    }
    for (kind, name) in objects {
        let api = api_for(client, &kind, ns)?;
        wait_until(
            format_args!("{kind} {name} of an earlier attempt to be gone"),
            Duration::from_secs(120),
            POLL,
            || {
                let (api, name) = (api.clone(), name.clone());
                async move { Ok::<_, kube::Error>(api.get_opt(&name).await?.is_none().then_some(())) }
            },
        )
        .await?;
    }
    Ok(())
}

/// Counts of cases per family, for the recorder's summary.
pub fn family_counts(specs: &[Spec]) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for s in specs {
        *m.entry(s.family).or_default() += 1;
    }
    m
}
