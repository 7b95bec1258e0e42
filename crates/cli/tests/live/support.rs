//! What every live test shares: the one control plane and node simulator of
//! the binary ([`Live`]), the test table, and helpers to create namespaces
//! and nodes (removed again after each test), apply YAML, run `podplace`
//! and kubectl against the cluster, and wait for bindings and events.

// Helpers for every module: some are used only by modules added later.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, ServiceAccount};
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::pinned_kind;
use kube::{Api, Client, ResourceExt};
use podplace_envtest::{
    wait_default_service_account, wait_until, ControlPlane, NodeSimulator, Options, SimConfig,
    Timeline,
};

pub use podplace_envtest::node;

/// A live test: an async function of the shared [`Live`] cluster.
pub type TestFn = for<'a> fn(&'a Live) -> Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// One entry of the test table: its name (`module::function`) and body.
pub struct LiveTest {
    /// `module::function`, as `cargo test` filters and lists it.
    pub name: String,
    /// The test.
    pub run: TestFn,
}

/// The tests of a module, for its `tests()` function:
/// `live_tests![first_test, second_test]` where each is an
/// `async fn(&Live) -> anyhow::Result<()>` of the module.
macro_rules! live_tests {
    ($($f:ident),* $(,)?) => {
        vec![$(
            $crate::support::LiveTest {
                name: format!(
                    "{}::{}",
                    module_path!().rsplit("::").next().unwrap_or(""),
                    stringify!($f)
                ),
                run: {
                    fn run(live: &$crate::support::Live) -> ::std::pin::Pin<Box<
                        dyn ::std::future::Future<Output = ::anyhow::Result<()>> + '_,
                    >> {
                        Box::pin($f(live))
                    }
                    run
                },
            },
        )*]
    };
}
pub(crate) use live_tests;

/// Generous deadlines for 2 loaded cores.
pub const NODES_READY: Duration = Duration::from_secs(60);
/// How long a pod may take to be bound, or a workload to become available.
pub const SETTLE: Duration = Duration::from_secs(60);
/// Polling interval inside deadlines.
pub const POLL: Duration = Duration::from_millis(200);

/// The shared cluster of the live test binary: a control plane, a node
/// simulator, an admin client, the run's timeline. Started once, on the
/// first test that runs; dropped (processes stopped) at the end of main.
pub struct Live {
    /// The node simulator (nodes come and go per test).
    pub sim: NodeSimulator,
    /// The admin client.
    pub client: Client,
    /// The control plane.
    pub cp: ControlPlane,
    /// What happened, printed when a test fails.
    pub timeline: Timeline,
    scope: Mutex<Scope>,
    /// Fresh control planes shared by several tests ([`Live::shared_fresh`]).
    shared: Mutex<Vec<(String, Arc<Fresh>)>>,
    /// The runtime the tests and the simulator run on (dropped last).
    pub rt: tokio::runtime::Runtime,
}

/// Whether [`Live::namespace_workloads`] counts or deletes.
#[derive(Clone, Copy)]
enum Wipe {
    Count,
    Delete,
}

/// What the running test created, removed after it.
#[derive(Default)]
struct Scope {
    namespaces: Vec<String>,
    nodes: Vec<String>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Live {
    /// Starts the control plane and the node simulator.
    pub fn start() -> Result<Live> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("building the tokio runtime")?;
        let timeline = Timeline::new();
        let (cp, sim) = rt.block_on(async {
            podplace_envtest::stop_all_on_signal();
            let cp = ControlPlane::start(Options::default()).await?;
            let sim = NodeSimulator::start(
                cp.client(),
                SimConfig {
                    timeline: timeline.clone(),
                    ..SimConfig::default()
                },
            )
            .await?;
            Ok::<_, podplace_envtest::Error>((cp, sim))
        })?;
        let msg = format!(
            "live: control plane ready in {:.1}s ({})",
            cp.started_in().as_secs_f64(),
            cp.dir().display()
        );
        eprintln!("{msg}");
        timeline.note(msg);
        Ok(Live {
            client: cp.client(),
            sim,
            cp,
            timeline,
            scope: Mutex::default(),
            shared: Mutex::default(),
            rt,
        })
    }

    /// Notes a step of the running test in the timeline.
    pub fn note(&self, what: impl std::fmt::Display) {
        self.timeline.note(what);
    }

    /// The admin kubeconfig file.
    pub fn kubeconfig(&self) -> &Path {
        self.cp.kubeconfig()
    }

    /// Creates a namespace `PREFIX-N` (unique in the run), waits for its
    /// `default` ServiceAccount (pods are refused before it exists), and
    /// deletes it after the test.
    pub async fn namespace(&self, prefix: &str) -> Result<String> {
        let name = format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"podplace-live": "true"}}
        }))?;
        api.create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        self.scope().namespaces.push(name.clone());
        wait_default_service_account(&self.client, &name, POLL).await?;
        self.note(format!("namespace {name} created"));
        Ok(name)
    }

    /// Registers `nodes` with the simulator, waits until they are Ready
    /// without the not-ready taint, and removes them after the test. Node
    /// names must be unique to the test (prefix them with its name).
    pub async fn add_nodes(&self, nodes: Vec<Node>) -> Result<Vec<String>> {
        let names = self.sim.add_nodes(nodes).await?;
        self.scope().nodes.extend(names.iter().cloned());
        self.sim.wait_nodes_ready(&names, NODES_READY).await?;
        self.note(format!("nodes ready: {}", names.join(", ")));
        Ok(names)
    }

    /// `count` nodes `PREFIX-0..` with `cpu` and `memory`, each labelled
    /// `topology.kubernetes.io/zone=zone-(i % zones)`, registered and Ready.
    pub async fn add_simple_nodes(
        &self,
        prefix: &str,
        count: usize,
        zones: usize,
        cpu: &str,
        memory: &str,
    ) -> Result<Vec<String>> {
        let nodes = (0..count)
            .map(|i| {
                let zone = format!("zone-{}", i % zones.max(1));
                node(
                    &format!("{prefix}-{i}"),
                    cpu,
                    memory,
                    &[("topology.kubernetes.io/zone", zone.as_str())],
                )
            })
            .collect();
        self.add_nodes(nodes).await
    }

    fn scope(&self) -> std::sync::MutexGuard<'_, Scope> {
        self.scope.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After each test: deletes its namespaces, and at once their workloads
    /// and pods (with no grace period: there is no kubelet to wait for;
    /// kube-controller-manager's namespace controller only starts after
    /// 5 s), removes its nodes, and waits until no pod or workload of those
    /// namespaces is left, so the next test sees none of them (the
    /// namespace object itself may linger a few seconds).
    pub async fn cleanup(&self) -> Result<()> {
        let scope = std::mem::take(&mut *self.scope());
        let api: Api<Namespace> = Api::all(self.client.clone());
        for ns in &scope.namespaces {
            match api.delete(ns, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => bail!("deleting namespace {ns}: {e}"),
            }
            // Terminating now: nothing new can be created in it.
            if let Err(e) = self.wipe_namespace(ns).await {
                self.note(format!("cleanup: emptying {ns}: {e}"));
            }
        }
        self.sim.remove_nodes(&scope.nodes).await?;
        for ns in &scope.namespaces {
            wait_until(
                format_args!("namespace {ns} to have no pods or workloads left"),
                Duration::from_secs(120),
                POLL,
                || async move {
                    self.namespace_workloads(ns, Wipe::Count)
                        .await
                        .map(|n| (n == 0).then_some(()))
                },
            )
            .await?;
        }
        if !scope.namespaces.is_empty() || !scope.nodes.is_empty() {
            self.note(format!(
                "cleaned up namespaces [{}] and nodes [{}]",
                scope.namespaces.join(", "),
                scope.nodes.join(", ")
            ));
        }
        Ok(())
    }

    async fn wipe_namespace(&self, ns: &str) -> Result<usize, kube::Error> {
        self.namespace_workloads(ns, Wipe::Delete).await
    }

    /// Counts (or deletes) the pods and workloads of `ns`: the objects a
    /// snapshot or `place` would act on.
    async fn namespace_workloads(&self, ns: &str, what: Wipe) -> Result<usize, kube::Error> {
        use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet, StatefulSet};
        use k8s_openapi::api::batch::v1::Job;
        use k8s_openapi::api::core::v1::ReplicationController;
        async fn one<K>(c: &Client, ns: &str, what: Wipe) -> Result<usize, kube::Error>
        where
            K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
                + Clone
                + serde::de::DeserializeOwned
                + std::fmt::Debug,
            K::DynamicType: Default,
        {
            let api: Api<K> = Api::namespaced(c.clone(), ns);
            match what {
                Wipe::Count => Ok(api
                    .list_metadata(&ListParams::default().limit(1))
                    .await?
                    .items
                    .len()),
                Wipe::Delete => {
                    let dp = DeleteParams {
                        grace_period_seconds: Some(0),
                        ..DeleteParams::background()
                    };
                    api.delete_collection(&dp, &ListParams::default()).await?;
                    Ok(0)
                }
            }
        }
        let c = &self.client;
        Ok(one::<Deployment>(c, ns, what).await?
            + one::<StatefulSet>(c, ns, what).await?
            + one::<DaemonSet>(c, ns, what).await?
            + one::<Job>(c, ns, what).await?
            + one::<ReplicaSet>(c, ns, what).await?
            + one::<ReplicationController>(c, ns, what).await?
            + one::<Pod>(c, ns, what).await?)
    }

    /// Server-side applies every object of `yaml` (multi-document) through
    /// the dynamic API, into namespace `ns` when the kind is namespaced and
    /// the object names none. Returns the applied objects.
    pub async fn apply_yaml(&self, ns: &str, yaml: &str) -> Result<Vec<DynamicObject>> {
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(yaml).context("parsing the YAML to apply")?;
        let mut applied = Vec::new();
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            let obj: DynamicObject =
                serde_json::from_value(doc).context("reading an object to apply")?;
            let types = obj
                .types
                .clone()
                .ok_or_else(|| anyhow!("an object to apply has no apiVersion/kind"))?;
            let gvk = kube::core::GroupVersionKind::try_from(&types)?;
            let (ar, caps) = pinned_kind(&self.client, &gvk)
                .await
                .with_context(|| format!("discovering {}/{}", types.api_version, types.kind))?;
            let name = obj.name_any();
            let api: Api<DynamicObject> = if caps.scope == kube::discovery::Scope::Namespaced {
                let ns = obj.namespace().unwrap_or_else(|| ns.to_string());
                Api::namespaced_with(self.client.clone(), &ns, &ar)
            } else {
                Api::all_with(self.client.clone(), &ar)
            };
            let out = api
                .patch(
                    &name,
                    &PatchParams::apply("podplace-live").force(),
                    &Patch::Apply(&obj),
                )
                .await
                .with_context(|| format!("applying {} {name}", types.kind))?;
            self.note(format!("applied {} {name}", types.kind));
            applied.push(out);
        }
        Ok(applied)
    }

    /// Runs the pinned kubectl (v1.36) with the admin kubeconfig; fails
    /// when none is found or it exits non-zero (with its stderr).
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        let kubectl = podplace_envtest::kubectl()?;
        self.note(format!("kubectl {}", args.join(" ")));
        let out = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .output()
            .with_context(|| format!("running {}", kubectl.display()))?;
        if !out.status.success() {
            bail!(
                "kubectl {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out)
    }

    /// Runs the `podplace` binary in `dir` with `KUBECONFIG` set to the
    /// admin kubeconfig and no colour: (stdout, stderr, exit code).
    pub fn podplace(&self, dir: &Path, args: &[&str]) -> (String, String, i32) {
        self.note(format!("podplace {}", args.join(" ")));
        let out = Command::new(env!("CARGO_BIN_EXE_podplace"))
            .args(args)
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env("KUBECONFIG", self.kubeconfig())
            .output();
        match out {
            Ok(out) => (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
                out.status.code().unwrap_or(-1),
            ),
            Err(e) => (String::new(), format!("cannot run podplace: {e}"), -1),
        }
    }

    /// Waits until pod `ns/name` is bound and returns its node.
    pub async fn wait_bound(&self, ns: &str, name: &str) -> Result<String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let node = wait_until(
            format_args!("pod {ns}/{name} to be bound"),
            SETTLE,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let pod = api.get_opt(name).await?;
                    Ok::<_, kube::Error>(pod.and_then(|p| p.spec.and_then(|s| s.node_name)))
                }
            },
        )
        .await?;
        self.note(format!("pod {ns}/{name} bound to {node}"));
        Ok(node)
    }

    /// Waits until pod `ns/name` is Running with condition Ready=True.
    pub async fn wait_pod_ready(&self, ns: &str, name: &str) -> Result<Pod> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        Ok(wait_until(
            format_args!("pod {ns}/{name} to be Ready"),
            SETTLE,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let pod = api.get_opt(name).await?;
                    Ok::<_, kube::Error>(pod.filter(pod_ready))
                }
            },
        )
        .await?)
    }

    /// The messages of `ns/pod`'s FailedScheduling events, oldest first.
    pub async fn failed_scheduling(&self, ns: &str, pod: &str) -> Result<Vec<String>> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), ns);
        let lp = ListParams::default().fields(&format!(
            "involvedObject.name={pod},reason=FailedScheduling"
        ));
        let mut events = api.list(&lp).await?.items;
        events.sort_by_key(|e| {
            e.event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.last_timestamp.as_ref().map(|t| t.0))
        });
        Ok(events.into_iter().filter_map(|e| e.message).collect())
    }

    /// Waits for a FailedScheduling event of `ns/pod` and returns its
    /// (latest) message.
    pub async fn wait_failed_scheduling(&self, ns: &str, pod: &str) -> Result<String> {
        let msg = wait_until(
            format_args!("a FailedScheduling event for {ns}/{pod}"),
            SETTLE,
            POLL,
            || async move {
                self.failed_scheduling(ns, pod)
                    .await
                    .map(|m| m.last().cloned())
            },
        )
        .await?;
        self.note(format!("pod {ns}/{pod} FailedScheduling: {msg}"));
        Ok(msg)
    }

    /// Waits until Deployment `ns/name` has all its replicas updated and
    /// available (condition Available=True) for its latest generation.
    pub async fn wait_deployment_available(&self, ns: &str, name: &str) -> Result<Deployment> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), ns);
        let d = wait_until(
            format_args!("deployment {ns}/{name} to be available"),
            SETTLE,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let d = api.get_opt(name).await?;
                    Ok::<_, kube::Error>(d.filter(deployment_available))
                }
            },
        )
        .await?;
        self.note(format!("deployment {ns}/{name} available"));
        Ok(d)
    }

    /// The pods of namespace `ns` (all of them, any phase).
    pub async fn pods(&self, ns: &str) -> Result<Vec<Pod>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        Ok(api.list(&ListParams::default()).await?.items)
    }

    /// A kubeconfig (written into `dir`) that authenticates as ServiceAccount
    /// `ns/sa` with a bound token from the TokenRequest API (1 h), for
    /// least-privilege runs of `podplace`.
    pub async fn service_account_kubeconfig(
        &self,
        ns: &str,
        sa: &str,
        dir: &Path,
    ) -> Result<PathBuf> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        let req = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        });
        let tr: k8s_openapi::api::authentication::v1::TokenRequest = api
            .create_subresource("token", sa, &PostParams::default(), &req)
            .await
            .with_context(|| format!("requesting a token for {ns}/{sa}"))?;
        let token = tr
            .status
            .and_then(|s| s.token)
            .context("the TokenRequest has no token")?;
        let path = dir.join(format!("{ns}-{sa}.kubeconfig"));
        self.cp.write_token_kubeconfig(
            &path,
            &format!("system:serviceaccount:{ns}:{sa}"),
            &token,
        )?;
        Ok(path)
    }

    /// Starts a separate control plane and node simulator for a test that
    /// stops, restarts or reconfigures it (the shared one stays untouched).
    pub async fn fresh(&self, options: Options) -> Result<Fresh> {
        self.note("starting a fresh control plane");
        let cp = ControlPlane::start(options).await?;
        let sim = NodeSimulator::start(
            cp.client(),
            SimConfig {
                timeline: self.timeline.clone(),
                ..SimConfig::default()
            },
        )
        .await?;
        self.note(format!(
            "fresh control plane ready in {:.1}s",
            cp.started_in().as_secs_f64()
        ));
        Ok(Fresh { sim, cp })
    }

    /// A fresh control plane shared by the tests that name the same `key`
    /// (each leaves it as it found it): the first of them starts it with
    /// `options`, the others reuse it, saving a start (~10 s) each. It is
    /// stopped by [`Live::release_shared_fresh`] or at the end of the run.
    pub async fn shared_fresh(&self, key: &str, options: Options) -> Result<Arc<Fresh>> {
        let found = self
            .shared_planes()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, f)| f.clone());
        if let Some(fresh) = found {
            self.note(format!("reusing the shared fresh control plane {key}"));
            return Ok(fresh);
        }
        let fresh = Arc::new(self.fresh(options).await?);
        self.shared_planes().push((key.to_string(), fresh.clone()));
        Ok(fresh)
    }

    /// Forgets the shared fresh control plane `key`: it stops when its last
    /// user drops it (the last test of those sharing it calls this).
    pub fn release_shared_fresh(&self, key: &str) {
        self.shared_planes().retain(|(k, _)| k != key);
    }

    fn shared_planes(&self) -> std::sync::MutexGuard<'_, Vec<(String, Arc<Fresh>)>> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A control plane of one test's own (see [`Live::fresh`]); dropping it
/// stops its simulator and processes.
pub struct Fresh {
    /// Its node simulator.
    pub sim: NodeSimulator,
    /// Its control plane.
    pub cp: ControlPlane,
}

/// True when the pod is Running with condition Ready=True.
pub fn pod_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// True when the Deployment's latest generation is fully rolled out and
/// available.
pub fn deployment_available(d: &Deployment) -> bool {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    s.observed_generation >= d.metadata.generation
        && s.updated_replicas.unwrap_or(0) == want
        && s.available_replicas.unwrap_or(0) == want
        && s.replicas.unwrap_or(0) == want
        && s.conditions.as_ref().is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

/// The node a pod is bound to, if any.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

/// A scratch directory of one test, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty directory; `name` only makes it recognisable.
    pub fn new(name: &str) -> Result<Scratch> {
        let p = std::env::temp_dir().join(format!(
            "podplace-live-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
        Ok(Scratch(p))
    }

    /// A path inside it.
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
