//! The node simulator: the part of a kubelet that scheduling sees, as KWOK
//! plays it on real clusters. It registers Nodes, keeps their Ready
//! condition and node Leases fresh, turns pods bound to them Running and
//! Ready after a delay, and finishes deleting terminating pods after their
//! grace period (capped). Nodes can be added and removed while it runs, so
//! each test brings its own.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeSpec, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::error::{Context, Error, Result};
use crate::wait::{wait_until, Timeline};

/// The taint the node lifecycle controller keeps on a node until it
/// reports Ready.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// The taint it puts on a node whose heartbeats stopped.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const MANAGER: &str = "podplace-node-simulator";

/// How the simulator behaves.
#[derive(Clone)]
pub struct SimConfig {
    /// How long after a pod is bound to one of its nodes it turns Running
    /// and Ready (a container start).
    pub pod_start_delay: Duration,
    /// The longest a terminating pod is kept: it is deleted after its grace
    /// period or this, whichever is shorter.
    pub max_grace: Duration,
    /// How often node Leases are renewed and Ready heartbeats posted: well
    /// inside kube-controller-manager's node-monitor grace period (50 s).
    pub heartbeat: Duration,
    /// Where its actions are noted (pods started and deleted, nodes
    /// registered, failed heartbeats).
    pub timeline: Timeline,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            pod_start_delay: Duration::from_millis(500),
            max_grace: Duration::from_secs(2),
            heartbeat: Duration::from_secs(10),
            timeline: Timeline::new(),
        }
    }
}

struct SimNode {
    /// The node's status without conditions: capacity, allocatable,
    /// addresses, nodeInfo, images.
    status: Value,
    ip: String,
    since: Timestamp,
    heartbeat: bool,
}

#[derive(Default)]
struct State {
    nodes: BTreeMap<String, SimNode>,
    /// Nodes removed from the simulator: their terminating pods are still
    /// finished, so a test's namespace can go after its nodes.
    retired: BTreeSet<String>,
    /// (pod uid, action) pairs in progress.
    busy: HashSet<(String, Action)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Action {
    Start,
    Finish,
}

struct Inner {
    client: Client,
    config: SimConfig,
    state: Mutex<State>,
    next_pod_ip: AtomicU32,
    next_node_ip: AtomicU32,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running node simulator; dropping it stops its tasks (the Node objects
/// stay).
pub struct NodeSimulator {
    inner: Arc<Inner>,
    tasks: Vec<JoinHandle<()>>,
}

impl NodeSimulator {
    /// Starts the pod watcher and the heartbeat loop on the current tokio
    /// runtime (use a multi-threaded one, so they run while a test blocks).
    pub async fn start(client: Client, config: SimConfig) -> Result<NodeSimulator> {
        let inner = Arc::new(Inner {
            client,
            config,
            state: Mutex::default(),
            next_pod_ip: AtomicU32::new(0),
            next_node_ip: AtomicU32::new(0),
        });
        let watch = tokio::spawn(watch_pods(inner.clone()));
        let beat = tokio::spawn(heartbeat_loop(inner.clone()));
        Ok(NodeSimulator {
            inner,
            tasks: vec![watch, beat],
        })
    }

    /// The timeline the simulator notes its actions in.
    pub fn timeline(&self) -> &Timeline {
        &self.inner.config.timeline
    }

    /// Registers `nodes` (name, labels, annotations, taints, unschedulable,
    /// status capacity/allocatable/images/addresses are taken; the rest is
    /// the simulator's): creates the Node objects (taking over existing
    /// ones), posts Ready status and a Lease, and starts heartbeating them.
    /// Returns their names. Follow with [`NodeSimulator::wait_nodes_ready`].
    pub async fn add_nodes(&self, nodes: Vec<Node>) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for node in nodes {
            let name = self.create_node(node).await?;
            self.start_node(&name).await?;
            names.push(name);
        }
        Ok(names)
    }

    /// Registers many nodes quickly, as [`NodeSimulator::add_nodes`] does
    /// one by one: the Node objects of each lane are created in the lane's
    /// order, the lanes side by side, then statuses and Leases are posted
    /// for up to `concurrency` nodes at a time. Returns the names in lane
    /// order; follow with [`NodeSimulator::wait_nodes_ready`], one deadline
    /// for them all.
    ///
    /// Why lanes: kube-scheduler's node tree lists zones in the order their
    /// first node reached it and, within a zone, nodes in creation order. A
    /// test that needs that order to be by name registers the first node of
    /// every zone first (a call with one lane), then one lane per zone.
    pub async fn add_nodes_concurrently(
        &self,
        lanes: Vec<Vec<Node>>,
        concurrency: usize,
    ) -> Result<Vec<String>> {
        let created = futures::future::try_join_all(lanes.into_iter().map(|lane| async move {
            let mut names = Vec::with_capacity(lane.len());
            for node in lane {
                names.push(self.create_node(node).await?);
            }
            Ok::<_, Error>(names)
        }))
        .await?;
        let names: Vec<String> = created.into_iter().flatten().collect();
        futures::stream::iter(names.iter())
            .map(|name| self.start_node(name))
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<Result<()>>>()
            .await
            .into_iter()
            .collect::<Result<()>>()?;
        Ok(names)
    }

    /// Creates one Node object (taking over an existing one) and starts
    /// simulating it; [`NodeSimulator::start_node`] posts its status.
    async fn create_node(&self, node: Node) -> Result<String> {
        let api: Api<Node> = Api::all(self.inner.client.clone());
        let name = node
            .metadata
            .name
            .clone()
            .ok_or_else(|| Error::msg("a node to register has no metadata.name"))?;
        let mut labels = node.metadata.labels.clone().unwrap_or_default();
        for (k, v) in [
            ("kubernetes.io/hostname", name.as_str()),
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
        ] {
            labels.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        let spec = node.spec.clone().map(|s| NodeSpec {
            taints: s.taints,
            unschedulable: s.unschedulable,
            pod_cidr: s.pod_cidr,
            pod_cidrs: s.pod_cidrs,
            provider_id: s.provider_id,
            ..NodeSpec::default()
        });
        let body = Node {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels),
                annotations: node.metadata.annotations.clone(),
                ..ObjectMeta::default()
            },
            spec,
            status: None,
        };
        match api.create(&PostParams::default(), &body).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(Error(format!("creating node {name}: {e}"))),
        }
        let n = self.inner.next_node_ip.fetch_add(1, Ordering::Relaxed);
        let ip = format!("172.18.{}.{}", (n / 250) % 256, n % 250 + 2);
        let status = base_status(&node, &name, &ip);
        self.inner.state().nodes.insert(
            name.clone(),
            SimNode {
                status,
                ip,
                since: Timestamp::now(),
                heartbeat: true,
            },
        );
        self.inner.state().retired.remove(&name);
        Ok(name)
    }

    /// Posts a created node's Ready status and Lease, and takes over the
    /// pods already bound to it.
    async fn start_node(&self, name: &str) -> Result<()> {
        heartbeat(&self.inner, name).await?;
        self.inner
            .config
            .timeline
            .note(format!("sim: node {name} registered"));
        rescan(&self.inner, name).await;
        Ok(())
    }

    /// Stops simulating `names` and deletes their Node objects and Leases.
    /// Terminating pods that were on them are still finished.
    pub async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        {
            let mut st = self.inner.state();
            for n in names {
                st.nodes.remove(n);
                st.retired.insert(n.clone());
            }
        }
        let nodes: Api<Node> = Api::all(self.inner.client.clone());
        let leases: Api<Lease> = Api::namespaced(self.inner.client.clone(), NODE_LEASE_NAMESPACE);
        for n in names {
            for r in [
                nodes.delete(n, &DeleteParams::default()).await.map(|_| ()),
                leases.delete(n, &DeleteParams::default()).await.map(|_| ()),
            ] {
                match r {
                    Ok(()) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(Error(format!("deleting node {n}: {e}"))),
                }
            }
            self.inner
                .config
                .timeline
                .note(format!("sim: node {n} removed"));
        }
        Ok(())
    }

    /// The names of the nodes it simulates now.
    pub fn nodes(&self) -> Vec<String> {
        self.inner.state().nodes.keys().cloned().collect()
    }

    /// Turns a node's kubelet off (`false`: no heartbeats, Lease renewals,
    /// pod starts or deletions, as a node failure) or on again.
    pub async fn set_heartbeat(&self, name: &str, on: bool) -> Result<()> {
        {
            let mut st = self.inner.state();
            let node = st
                .nodes
                .get_mut(name)
                .ok_or_else(|| Error(format!("node {name} is not simulated")))?;
            node.heartbeat = on;
        }
        self.inner.config.timeline.note(format!(
            "sim: node {name} heartbeat {}",
            if on { "on" } else { "off" }
        ));
        if on {
            heartbeat(&self.inner, name).await?;
            rescan(&self.inner, name).await;
        }
        Ok(())
    }

    /// Waits until every node in `names` is Ready and has neither the
    /// not-ready nor the unreachable taint (only then does kube-scheduler
    /// place pods there).
    pub async fn wait_nodes_ready(&self, names: &[String], deadline: Duration) -> Result<()> {
        let api: Api<Node> = Api::all(self.inner.client.clone());
        let want: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        wait_until(
            format_args!(
                "nodes {} to be Ready without the not-ready taint",
                names.join(", ")
            ),
            deadline,
            Duration::from_millis(200),
            || {
                let api = api.clone();
                let want = want.clone();
                async move {
                    let list = api.list(&ListParams::default()).await?;
                    let ready = list
                        .items
                        .iter()
                        .filter(|n| node_ready(n))
                        .filter(|n| n.metadata.name.as_deref().is_some_and(|n| want.contains(n)))
                        .count();
                    Ok::<_, kube::Error>((ready == want.len()).then_some(()))
                }
            },
        )
        .await
    }
}

impl Drop for NodeSimulator {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// True when `node` reports Ready=True and carries neither the not-ready
/// nor the unreachable taint.
pub fn node_ready(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == NOT_READY_TAINT || t.key == UNREACHABLE_TAINT)
        });
    ready && !tainted
}

/// The status the simulator reports for `node` (without conditions):
/// capacity and allocatable from the object (each defaults to the other,
/// then to 8 CPUs, 32Gi memory, 110 pods), its images, addresses (an
/// InternalIP and Hostname unless given) and a node info.
fn base_status(node: &Node, name: &str, ip: &str) -> Value {
    let status = node.status.clone().unwrap_or_default();
    let defaults: BTreeMap<String, Quantity> = [
        ("cpu", "8"),
        ("memory", "32Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "100Gi"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
    .collect();
    let capacity = status
        .capacity
        .clone()
        .or_else(|| status.allocatable.clone())
        .unwrap_or_else(|| defaults.clone());
    let allocatable = status
        .allocatable
        .clone()
        .unwrap_or_else(|| capacity.clone());
    let addresses = match &status.addresses {
        Some(a) if !a.is_empty() => json!(a),
        _ => json!([{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]),
    };
    let mut v = json!({
        "capacity": capacity,
        "allocatable": allocatable,
        "addresses": addresses,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": name, "systemUUID": name, "bootID": name,
            "kernelVersion": "simulated", "osImage": "podplace node simulator",
            "containerRuntimeVersion": "simulated://1", "kubeletVersion": "v1.36.2",
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"
        },
    });
    if let Some(images) = &status.images {
        v["images"] = json!(images);
    }
    v
}

/// Posts `name`'s Ready status (fresh heartbeat) and renews its Lease.
async fn heartbeat(inner: &Arc<Inner>, name: &str) -> Result<()> {
    let (mut status, since) = {
        let st = inner.state();
        match st.nodes.get(name) {
            Some(n) if n.heartbeat => (n.status.clone(), n.since),
            _ => return Ok(()),
        }
    };
    let now = json!(Time(Timestamp::now()));
    let since = json!(Time(since));
    let cond = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": since})
    };
    status["conditions"] = json!([
        cond(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        cond(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        cond(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        cond(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status"
        ),
    ]);
    let nodes: Api<Node> = Api::all(inner.client.clone());
    let node = nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .with_context(|| format!("posting node {name}'s status"))?;
    let leases: Api<Lease> = Api::namespaced(inner.client.clone(), NODE_LEASE_NAMESPACE);
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Node", "name": name,
                "uid": node.metadata.uid.unwrap_or_default(),
            }],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 40,
            "renewTime": MicroTime(Timestamp::now()),
        },
    });
    leases
        .patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(lease),
        )
        .await
        .with_context(|| format!("renewing node {name}'s Lease"))?;
    Ok(())
}

/// Heartbeats every simulated node each `config.heartbeat`.
async fn heartbeat_loop(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.config.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let names: Vec<String> = inner.state().nodes.keys().cloned().collect();
        let total = names.len();
        let errors: Vec<String> = futures::stream::iter(names)
            .map(|n| {
                let inner = inner.clone();
                async move { heartbeat(&inner, &n).await.err() }
            })
            .buffer_unordered(8)
            .filter_map(|e| async move { e.map(|e| e.to_string()) })
            .collect()
            .await;
        if let Some(first) = errors.first() {
            inner.config.timeline.note(format!(
                "sim: {} of {total} heartbeats failed, first: {first}",
                errors.len()
            ));
        }
    }
}

/// The pod watch's retry delays: 100 ms doubling up to 1 s. A kubelet-like
/// simulator must resume within a second of an API server restart; the
/// runtime's default backoff (up to 30 s, for controllers sparing a
/// struggling server) left pods unstarted and undeleted for 15–25 s after
/// one, which tests of outages then waited out.
#[derive(Debug, Clone, Copy)]
struct QuickBackoff {
    next: Duration,
}

impl QuickBackoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(1);
}

impl Default for QuickBackoff {
    fn default() -> Self {
        QuickBackoff { next: Self::FIRST }
    }
}

impl Iterator for QuickBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (now * 2).min(Self::MAX);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for QuickBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// Watches every pod and acts on those bound to simulated nodes.
async fn watch_pods(inner: Arc<Inner>) {
    let api: Api<Pod> = Api::all(inner.client.clone());
    let stream = watcher(api, watcher::Config::default())
        .backoff(QuickBackoff::default())
        .applied_objects();
    futures::pin_mut!(stream);
    let mut failing = false;
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(pod) => {
                failing = false;
                consider(&inner, &pod);
            }
            Err(e) => {
                if !failing {
                    inner
                        .config
                        .timeline
                        .note(format!("sim: pod watch failed: {e}"));
                }
                failing = true;
            }
        }
    }
}

/// Acts on the pods already bound to `node` (registered or resumed).
async fn rescan(inner: &Arc<Inner>, node: &str) {
    let api: Api<Pod> = Api::all(inner.client.clone());
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    if let Ok(list) = api.list(&lp).await {
        for pod in &list.items {
            consider(inner, pod);
        }
    }
}

/// Starts or finishes `pod` after the configured delay when it is bound to
/// a simulated node and not already being handled.
fn consider(inner: &Arc<Inner>, pod: &Pod) {
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
        return;
    };
    let Some(uid) = pod.metadata.uid.clone() else {
        return;
    };
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let (action, delay, node_ip) = {
        let mut st = inner.state();
        let live = st.nodes.get(&node).filter(|n| n.heartbeat);
        let node_ip = live.map(|n| n.ip.clone()).unwrap_or_default();
        let (action, delay) = if terminating && (live.is_some() || st.retired.contains(&node)) {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .unwrap_or(0)
                .max(0);
            let grace = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
            (Action::Finish, grace.min(inner.config.max_grace))
        } else if !terminating
            && live.is_some()
            && !matches!(phase, "Running" | "Succeeded" | "Failed")
        {
            (Action::Start, inner.config.pod_start_delay)
        } else {
            return;
        };
        if !st.busy.insert((uid.clone(), action)) {
            return;
        }
        (action, delay, node_ip)
    };
    let inner = inner.clone();
    let pod = pod.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(inner.client.clone(), &ns);
        let result = match action {
            Action::Start => {
                let n = inner.next_pod_ip.fetch_add(1, Ordering::Relaxed);
                let host_network = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.host_network)
                    .unwrap_or(false);
                let ip = if host_network {
                    node_ip.clone()
                } else {
                    format!("10.244.{}.{}", (n / 254) % 256, n % 254 + 1)
                };
                let status = running_status(&pod, &node_ip, &ip);
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await
                    .map(|_| format!("sim: pod {ns}/{name} Running and Ready on {node}"))
            }
            Action::Finish => {
                let dp = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &dp)
                    .await
                    .map(|_| format!("sim: pod {ns}/{name} deleted from {node}"))
            }
        };
        match result {
            Ok(note) => inner.config.timeline.note(note),
            // Gone or replaced meanwhile: nothing left to do.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => inner
                .config
                .timeline
                .note(format!("sim: {action:?} of pod {ns}/{name} failed: {e}")),
        }
        inner.state().busy.remove(&(uid, action));
    });
}

/// The status patch of a pod whose containers all started and are ready.
fn running_status(pod: &Pod, host_ip: &str, pod_ip: &str) -> Value {
    let now = json!(Time(Timestamp::now()));
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let spec = pod.spec.clone().unwrap_or_default();
    let cond = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": now});
    let containers: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
                "containerID": format!("simulated://{uid}/{}", c.name),
                "ready": true, "started": true, "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            })
        })
        .collect();
    let inits: Vec<Value> = spec
        .init_containers
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let sidecar = c.restart_policy.as_deref() == Some("Always");
            let state = if sidecar {
                json!({"running": {"startedAt": now}})
            } else {
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}})
            };
            json!({
                "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
                "containerID": format!("simulated://{uid}/{}", c.name),
                "ready": sidecar, "started": sidecar, "restartCount": 0, "state": state,
            })
        })
        .collect();
    json!({"status": {
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"),
            cond("ContainersReady"), cond("PodScheduled"),
        ],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": now,
        "containerStatuses": containers,
        "initContainerStatuses": inits,
    }})
}

/// The Nodes of a world file (any file `podplace place -f` loads: YAML or
/// JSON, multi-document, Lists), to register with the simulator.
pub fn nodes_from_world(path: &Path) -> Result<Vec<Node>> {
    let inv = podplace_model::load::load(&[podplace_model::load::Source::Path(path.to_path_buf())])
        .with_context(|| format!("loading the world {}", path.display()))?;
    Ok(inv.nodes.into_iter().map(|s| s.object).collect())
}

/// A Node named `name` with `cpu` and `memory` as capacity and allocatable
/// (e.g. "4", "8Gi"), 110 pods, and `labels`.
pub fn node(name: &str, cpu: &str, memory: &str, labels: &[(&str, &str)]) -> Node {
    let resources: BTreeMap<String, Quantity> = [("cpu", cpu), ("memory", memory), ("pods", "110")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect();
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(k8s_openapi::api::core::v1::NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_watch_retries_within_a_second() {
        use kube::runtime::utils::Backoff as _;
        let mut b = QuickBackoff::default();
        let delays: Vec<u128> = b.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn a_node_reports_its_resources_or_defaults() {
        let n = node("n1", "4", "8Gi", &[("zone", "a")]);
        let s = base_status(&n, "n1", "172.18.0.2");
        assert_eq!(s["capacity"]["cpu"], "4");
        assert_eq!(s["allocatable"]["memory"], "8Gi");
        assert_eq!(s["addresses"][0]["address"], "172.18.0.2");
        let bare = Node {
            metadata: ObjectMeta {
                name: Some("n2".into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        let s = base_status(&bare, "n2", "172.18.0.3");
        assert_eq!(s["allocatable"]["pods"], "110");
        assert_eq!(s["nodeInfo"]["kubeletVersion"], "v1.36.2");
    }

    #[test]
    fn a_started_pod_is_running_ready_with_every_container_started() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "uid": "u1"},
            "spec": {
                "initContainers": [
                    {"name": "init", "image": "i"},
                    {"name": "sidecar", "image": "s", "restartPolicy": "Always"},
                ],
                "containers": [{"name": "main", "image": "m"}],
            },
        }))
        .expect("pod");
        let v = running_status(&pod, "172.18.0.2", "10.244.0.1");
        let s = &v["status"];
        assert_eq!(s["phase"], "Running");
        let types: Vec<&str> = s["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .filter(|c| c["status"] == "True")
            .filter_map(|c| c["type"].as_str())
            .collect();
        for t in ["Ready", "ContainersReady", "Initialized", "PodScheduled"] {
            assert!(types.contains(&t), "{t} in {types:?}");
        }
        assert_eq!(s["podIP"], "10.244.0.1");
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        assert!(s["initContainerStatuses"][0]["state"]["terminated"].is_object());
        assert!(s["initContainerStatuses"][1]["state"]["running"].is_object());
        // It deserializes as a PodStatus: the API server will accept it.
        let _: k8s_openapi::api::core::v1::PodStatus =
            serde_json::from_value(s.clone()).expect("a PodStatus");
    }

    #[test]
    fn readiness_needs_ready_true_and_no_not_ready_taint() {
        let mut n: Node = serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": NOT_READY_TAINT, "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .expect("node");
        assert!(!node_ready(&n));
        n.spec = None;
        assert!(node_ready(&n));
        n.status = None;
        assert!(!node_ready(&n));
    }
}
