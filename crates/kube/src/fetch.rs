//! Listing a live cluster into the model's [`Inventory`]: every kind the
//! engine and the workload resolution read, page by page with
//! `limit`/`continue`, restarting a list whose continue token expired
//! (410 Gone), and carrying on past resources the user may not read (403).

use std::collections::HashSet;
use std::fmt::Debug;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::NamespaceResourceScope;
use kube::api::ListParams;
use kube::{Api, Client};
use podplace_model::inventory::{Inventory, List, Origin, Sourced};
use podplace_model::load::limits;
use podplace_model::validate::{self, FieldError};
use serde::de::DeserializeOwned;

use crate::error::Error;

/// What to read and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// Namespaces to read namespaced kinds from (kubectl's `-n`); empty means
    /// all namespaces (`-A`). Nodes, namespaces, priority and runtime classes are
    /// cluster-scoped and always read whole.
    pub namespaces: Vec<String>,
    /// Objects per page (`limit`); the API server hands out a continue token
    /// for the rest. kubectl uses 500.
    pub page_size: u32,
    /// How many times one list may be restarted after its continue token
    /// expired (410 Gone) before giving up with [`Error::ListExpired`].
    pub max_restarts: u32,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            namespaces: Vec::new(),
            page_size: 500,
            max_restarts: 3,
        }
    }
}

/// A list the API server refused (403 Forbidden) or does not serve (404):
/// the rest of the cluster was read, and answers must say what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The resource, as the API names it (`nodes`, `pods`, `poddisruptionbudgets`).
    pub resource: String,
    /// The namespace that was listed, `None` for a cluster-wide list.
    pub namespace: Option<String>,
    /// The server's message (`nodes is forbidden: User ... cannot list ...`).
    pub reason: String,
    /// The HTTP status it answered (403, 404): what a partial snapshot
    /// records ([`crate::snapshot::render`]).
    pub code: u16,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} in namespace {ns}: {}", self.resource, self.reason),
            None => write!(f, "{}: {}", self.resource, self.reason),
        }
    }
}

/// What [`fetch_inventory`] read.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// The objects, exactly as the API returned them (workloads not
    /// expanded: a live cluster already has its pods). Each origin's file is
    /// `api:<resource>` (`api:pods`). Restarted lists and objects that fail
    /// the model's validation (skipped) are in `inventory.warnings`.
    pub inventory: Inventory,
    /// The lists that could not be read, in the order they were tried.
    pub unreadable: Vec<Unreadable>,
}

/// Reads the cluster: nodes, namespaces, priority classes, runtime classes,
/// pods, services, PodDisruptionBudgets, Deployments, ReplicaSets,
/// StatefulSets, DaemonSets, Jobs, CronJobs and ReplicationControllers,
/// and for the volume and DRA plugins PersistentVolumes,
/// PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers,
/// CSIStorageCapacities, ResourceClaims, DeviceClasses and ResourceSlices.
///
/// RuntimeClasses are read because a pod that names one gets its overhead,
/// node selector and tolerations from it at admission: without them, a pod
/// placed on a snapshot (`place -f snap.json -f pod.yaml`) would be
/// scheduled without them.
///
/// A 403 or 404 on a list is recorded in [`Fetched::unreadable`] and the
/// other lists are still read; a 410 on a continue token restarts that list
/// from the first page (said in `inventory.warnings`); any other failure
/// stops with an [`Error`].
pub async fn fetch_inventory(client: &Client, opts: &FetchOptions) -> Result<Fetched, Error> {
    let mut f = Fetcher {
        opts,
        unreadable: Vec::new(),
        warnings: Vec::new(),
    };
    let mut inv = Inventory {
        nodes: f
            .fetch("nodes", cluster::<Node>(client), validate::validate_node)
            .await?,
        namespaces: f
            .fetch("namespaces", cluster::<Namespace>(client), no_checks)
            .await?,
        priority_classes: f
            .fetch(
                "priorityclasses",
                cluster::<PriorityClass>(client),
                no_checks,
            )
            .await?,
        runtime_classes: f
            .fetch(
                "runtimeclasses",
                cluster::<RuntimeClass>(client),
                validate::validate_runtime_class,
            )
            .await?,
        pods: f
            .fetch("pods", scoped::<Pod>(client, opts), validate::validate_pod)
            .await?
            .into(),
        services: f
            .fetch("services", scoped::<Service>(client, opts), no_checks)
            .await?,
        pod_disruption_budgets: f
            .fetch(
                "poddisruptionbudgets",
                scoped::<PodDisruptionBudget>(client, opts),
                validate::validate_pod_disruption_budget,
            )
            .await?,
        deployments: f
            .fetch(
                "deployments",
                scoped::<Deployment>(client, opts),
                validate::validate_deployment,
            )
            .await?,
        replica_sets: f
            .fetch(
                "replicasets",
                scoped::<ReplicaSet>(client, opts),
                validate::validate_replica_set,
            )
            .await?,
        stateful_sets: f
            .fetch(
                "statefulsets",
                scoped::<StatefulSet>(client, opts),
                validate::validate_stateful_set,
            )
            .await?,
        daemon_sets: f
            .fetch(
                "daemonsets",
                scoped::<DaemonSet>(client, opts),
                validate::validate_daemon_set,
            )
            .await?,
        jobs: f
            .fetch("jobs", scoped::<Job>(client, opts), validate::validate_job)
            .await?,
        cron_jobs: f
            .fetch(
                "cronjobs",
                scoped::<CronJob>(client, opts),
                validate::validate_cron_job,
            )
            .await?,
        replication_controllers: f
            .fetch(
                "replicationcontrollers",
                scoped::<ReplicationController>(client, opts),
                validate::validate_replication_controller,
            )
            .await?,
        persistent_volumes: f
            .fetch(
                "persistentvolumes",
                cluster::<PersistentVolume>(client),
                no_checks,
            )
            .await?,
        persistent_volume_claims: f
            .fetch(
                "persistentvolumeclaims",
                scoped::<PersistentVolumeClaim>(client, opts),
                no_checks,
            )
            .await?,
        storage_classes: f
            .fetch("storageclasses", cluster::<StorageClass>(client), no_checks)
            .await?,
        csi_nodes: f
            .fetch("csinodes", cluster::<CSINode>(client), no_checks)
            .await?,
        csi_drivers: f
            .fetch("csidrivers", cluster::<CSIDriver>(client), no_checks)
            .await?,
        csi_storage_capacities: f
            .fetch(
                "csistoragecapacities",
                scoped::<CSIStorageCapacity>(client, opts),
                no_checks,
            )
            .await?,
        resource_claims: f
            .fetch(
                "resourceclaims",
                scoped::<ResourceClaim>(client, opts),
                no_checks,
            )
            .await?,
        device_classes: f
            .fetch("deviceclasses", cluster::<DeviceClass>(client), no_checks)
            .await?,
        resource_slices: f
            .fetch(
                "resourceslices",
                cluster::<ResourceSlice>(client),
                no_checks,
            )
            .await?,
        ..Inventory::default()
    };
    if inv.nodes.is_empty() && !f.unreadable.iter().any(|u| u.resource == "nodes") {
        f.warnings.push("the cluster has no nodes".to_string());
    }
    inv.warnings = f.warnings;
    Ok(Fetched {
        inventory: inv,
        unreadable: f.unreadable,
    })
}

/// Lists pods (all pages, a 410 restarts the list), in one namespace or all,
/// optionally filtered by a label selector (`app=web`): what a rebalancer
/// polls to see where replacements landed. A 403 or 404 is an [`Error`] here.
pub async fn list_pods(
    client: &Client,
    namespace: Option<&str>,
    label_selector: Option<&str>,
    opts: &FetchOptions,
) -> Result<Vec<Pod>, Error> {
    let api: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut f = Fetcher {
        opts,
        unreadable: Vec::new(),
        warnings: Vec::new(),
    };
    match f.list("pods", namespace, &api, label_selector).await? {
        Listed::Items(items) => Ok(items),
        Listed::Refused(code, message) => Err(Error::Api {
            action: action("pods", namespace),
            code,
            reason: if code == 403 { "Forbidden" } else { "NotFound" }.to_string(),
            message,
        }),
    }
}

fn no_checks<K>(_: &K) -> Vec<FieldError> {
    Vec::new()
}

/// One cluster-wide list.
fn cluster<K>(client: &Client) -> Vec<(Option<String>, Api<K>)>
where
    K: kube::Resource<DynamicType = ()>,
{
    vec![(None, Api::all(client.clone()))]
}

/// One list per requested namespace, or one across all namespaces.
fn scoped<K>(client: &Client, opts: &FetchOptions) -> Vec<(Option<String>, Api<K>)>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    if opts.namespaces.is_empty() {
        return vec![(None, Api::all(client.clone()))];
    }
    opts.namespaces
        .iter()
        .map(|ns| (Some(ns.clone()), Api::namespaced(client.clone(), ns)))
        .collect()
}

/// `list pods`, `list pods in namespace shop`.
fn action(resource: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("list {resource} in namespace {ns}"),
        None => format!("list {resource}"),
    }
}

/// The state of one [`fetch_inventory`] call.
struct Fetcher<'o> {
    opts: &'o FetchOptions,
    unreadable: Vec<Unreadable>,
    warnings: Vec<String>,
}

/// How one list ended.
enum Listed<K> {
    Items(Vec<K>),
    Refused(u16, String),
}

impl Fetcher<'_> {
    /// Lists one resource in each scope, validates each object and wraps it
    /// with its origin.
    async fn fetch<K>(
        &mut self,
        resource: &'static str,
        scopes: Vec<(Option<String>, Api<K>)>,
        check: fn(&K) -> Vec<FieldError>,
    ) -> Result<List<K>, Error>
    where
        K: kube::Resource<DynamicType = ()>
            + k8s_openapi::Metadata<Ty = ObjectMeta>
            + Clone
            + DeserializeOwned
            + Debug
            + validate::ApiRules,
    {
        let file = format!("api:{resource}");
        let mut out = List::default();
        for (namespace, api) in scopes {
            let items = match self
                .list(resource, namespace.as_deref(), &api, None)
                .await?
            {
                Listed::Items(items) => items,
                Listed::Refused(code, reason) => {
                    let reason = if code == 404 {
                        format!("not served by this API server (404): {reason}")
                    } else {
                        reason
                    };
                    self.unreadable.push(Unreadable {
                        resource: resource.to_string(),
                        namespace,
                        reason,
                        code,
                    });
                    continue;
                }
            };
            for object in items {
                let errs = check(&object);
                if let Some(first) = errs.first() {
                    let meta = object.metadata();
                    let id = match &meta.namespace {
                        Some(ns) => {
                            format!("{}/{ns}/{}", K::KIND, meta.name.as_deref().unwrap_or(""))
                        }
                        None => format!("{}/{}", K::KIND, meta.name.as_deref().unwrap_or("")),
                    };
                    self.warnings.push(format!(
                        "{file}: {id}: {}: {}; skipped (podplace cannot model it)",
                        first.path, first.message
                    ));
                    continue;
                }
                // Names, labels and ports the API server already accepted:
                // rules tightened since are warnings, the object is kept.
                for e in object.api_rules() {
                    let meta = object.metadata();
                    let id = match &meta.namespace {
                        Some(ns) => {
                            format!("{}/{ns}/{}", K::KIND, meta.name.as_deref().unwrap_or(""))
                        }
                        None => format!("{}/{}", K::KIND, meta.name.as_deref().unwrap_or("")),
                    };
                    self.warnings.push(format!("{file}: {id}: {e}"));
                }
                out.push(Sourced {
                    object,
                    origin: Origin {
                        file: file.clone(),
                        line: 0,
                        column: 0,
                    },
                });
            }
        }
        Ok(out)
    }

    /// Reads every page of one list, restarting it when its continue token
    /// expires.
    async fn list<K>(
        &mut self,
        resource: &str,
        namespace: Option<&str>,
        api: &Api<K>,
        label_selector: Option<&str>,
    ) -> Result<Listed<K>, Error>
    where
        K: kube::Resource + Clone + DeserializeOwned + Debug,
    {
        let mut items: Vec<K> = Vec::new();
        let mut token: Option<String> = None;
        let mut starts = 1;
        // Every token handed out since the list (re)started, and its pages:
        // a server repeating a token, or never ending, is stopped.
        let mut tokens: HashSet<String> = HashSet::new();
        let mut pages: u64 = 0;
        let max_pages = limits::max_list_pages(self.opts.page_size);
        loop {
            let mut params = ListParams::default();
            if self.opts.page_size > 0 {
                params = params.limit(self.opts.page_size);
            }
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            if let Some(s) = label_selector {
                params = params.labels(s);
            }
            match api.list(&params).await {
                Ok(page) => {
                    pages += 1;
                    items.extend(page.items);
                    let next = match page.metadata.continue_ {
                        Some(t) if !t.is_empty() => t,
                        _ => return Ok(Listed::Items(items)),
                    };
                    let endless = |message: String| Error::EndlessList {
                        action: action(resource, namespace),
                        message,
                    };
                    if items.len() as u64 > limits::MAX_LIST_OBJECTS {
                        return Err(endless(format!(
                            "the API server returned more than {} objects in {pages} pages and the list goes on; stopping (no supported cluster is that large)",
                            limits::MAX_LIST_OBJECTS
                        )));
                    }
                    if pages >= max_pages {
                        return Err(endless(format!(
                            "the API server returned {pages} pages ({} objects) and the list goes on; stopping (at --page-size {} no supported cluster needs more than {max_pages})",
                            items.len(),
                            self.opts.page_size
                        )));
                    }
                    if !tokens.insert(next.clone()) {
                        return Err(endless(format!(
                            "the API server handed out the same continue token again after {pages} pages: the list would never end; stopping"
                        )));
                    }
                    token = Some(next);
                }
                Err(kube::Error::Api(status)) if status.code == 410 && token.is_some() => {
                    if starts > self.opts.max_restarts {
                        return Err(Error::ListExpired {
                            action: action(resource, namespace),
                            attempts: starts,
                        });
                    }
                    self.warnings.push(format!(
                        "{}: the continue token expired (410 Gone) after {} object(s); listing again from the start for a consistent result",
                        action(resource, namespace),
                        items.len()
                    ));
                    starts += 1;
                    items.clear();
                    token = None;
                    tokens.clear();
                    pages = 0;
                }
                Err(kube::Error::Api(status)) if status.code == 403 || status.code == 404 => {
                    return Ok(Listed::Refused(status.code, status.message.clone()));
                }
                Err(e) => return Err(Error::from_kube(action(resource, namespace), e)),
            }
        }
    }
}
