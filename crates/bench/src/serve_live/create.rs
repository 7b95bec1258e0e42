//! Creating the plan through the API server: namespaces and their `default`
//! ServiceAccounts (no controller makes them here), nodes and their status,
//! ReplicaSets, then the pods with at most `concurrency` requests in
//! flight. Every request is bounded (the client's request timeout, and an
//! outer deadline); a 409 means the object is there already; 429 and
//! server errors are retried a few times with backoff.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;

use super::plan::{rewrite_owner, Plan};

/// The longest one create may take, retries included.
const CREATE_DEADLINE: Duration = Duration::from_secs(120);
/// Tries of one request on 429 or a server error.
const TRIES: u32 = 5;

/// How long each step took.
#[derive(Debug, Clone, Default)]
pub struct Created {
    /// (step, objects, wall seconds), in order.
    pub steps: Vec<(&'static str, usize, f64)>,
    /// Requests retried (429, server errors, timeouts).
    pub retries: usize,
}

/// Whether an error is worth another try.
fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => true,
    }
}

/// Creates `obj` (a 409 is success: `None`), retrying transient failures.
async fn create<K>(api: &Api<K>, obj: &K, retries: &mut usize) -> anyhow::Result<Option<K>>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    let what = || {
        let m = obj.meta();
        format!(
            "{} {}/{}",
            K::kind(&Default::default()),
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or("")
        )
    };
    let mut backoff = Duration::from_millis(200);
    for attempt in 1..=TRIES {
        match api.create(&PostParams::default(), obj).await {
            Ok(k) => return Ok(Some(k)),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(None),
            Err(e) if attempt < TRIES && transient(&e) => {
                *retries += 1;
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            Err(e) => return Err(anyhow!("creating {}: {e}", what())),
        }
    }
    Err(anyhow!("creating {}: out of tries", what()))
}

/// [`create`] under [`CREATE_DEADLINE`]; the retries it made.
async fn bounded<K>(api: &Api<K>, obj: &K) -> anyhow::Result<(Option<K>, usize)>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    let mut retries = 0;
    let name = obj.meta().name.clone().unwrap_or_default();
    let r = tokio::time::timeout(CREATE_DEADLINE, create(api, obj, &mut retries))
        .await
        .map_err(|_| anyhow!("creating {name}: no answer within {CREATE_DEADLINE:?}"))??;
    Ok((r, retries))
}

/// Runs `f` over `items` with at most `concurrency` in flight; the total
/// retries.
async fn each<T, F, Fut>(items: Vec<T>, concurrency: usize, f: F) -> anyhow::Result<usize>
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<usize>>,
{
    futures::stream::iter(items)
        .map(f)
        .buffer_unordered(concurrency.max(1))
        .try_fold(0, |n, r| async move { Ok(n + r) })
        .await
}

/// Creates everything in `plan` through `client` (see the module doc).
pub async fn create_all(
    client: &Client,
    plan: &Plan,
    concurrency: usize,
) -> anyhow::Result<Created> {
    let mut out = Created::default();
    let mut step = |name, n, t: Instant, retries| {
        out.steps.push((name, n, t.elapsed().as_secs_f64()));
        out.retries += retries;
        eprintln!(
            "serve-live: {name}: {n} in {:.1}s",
            t.elapsed().as_secs_f64()
        );
    };

    let t = Instant::now();
    let api: Api<Namespace> = Api::all(client.clone());
    let r = each(plan.namespaces.clone(), concurrency, |ns| {
        let api = api.clone();
        async move { Ok(bounded(&api, &ns).await?.1) }
    })
    .await?;
    let namespaces = plan.pod_namespaces();
    let n = namespaces.len();
    let r2 = each(
        namespaces.into_iter().collect(),
        concurrency,
        |ns: String| {
            let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
            async move {
                let sa = ServiceAccount {
                    metadata: ObjectMeta {
                        name: Some("default".to_string()),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                Ok(bounded(&api, &sa).await?.1)
            }
        },
    )
    .await?;
    step(
        "namespaces and default ServiceAccounts",
        plan.namespaces.len() + n,
        t,
        r + r2,
    );

    let t = Instant::now();
    let api: Api<Node> = Api::all(client.clone());
    let r = each(plan.nodes.clone(), concurrency, |(node, status)| {
        let api = api.clone();
        async move {
            let (_, retries) = bounded(&api, &node).await?;
            if let Some(status) = status {
                let name = node.metadata.name.clone().unwrap_or_default();
                let patch = Patch::Merge(json!({ "status": status }));
                tokio::time::timeout(
                    CREATE_DEADLINE,
                    api.patch_status(&name, &PatchParams::default(), &patch),
                )
                .await
                .map_err(|_| anyhow!("posting node {name}'s status: no answer"))?
                .with_context(|| format!("posting node {name}'s status"))?;
            }
            Ok(retries)
        }
    })
    .await?;
    step("nodes with their status", plan.nodes.len(), t, r);

    let t = Instant::now();
    let created = futures::stream::iter(plan.replica_sets.clone())
        .map(|(old, rs)| {
            let ns = rs.metadata.namespace.clone().unwrap_or_default();
            let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
            async move {
                let name = rs.metadata.name.clone().unwrap_or_default();
                let (made, retries) = bounded(&api, &rs).await?;
                let made = match made {
                    Some(m) => m,
                    None => api
                        .get(&name)
                        .await
                        .with_context(|| format!("reading ReplicaSet {ns}/{name}"))?,
                };
                let uid = made
                    .metadata
                    .uid
                    .ok_or_else(|| anyhow!("ReplicaSet {ns}/{name} came back without a uid"))?;
                Ok::<_, anyhow::Error>((old, uid, retries))
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<_>>()
        .await?;
    let retries = created.iter().map(|c| c.2).sum();
    let uids: HashMap<String, String> = created.into_iter().map(|(o, n, _)| (o, n)).collect();
    step("ReplicaSets", plan.replica_sets.len(), t, retries);

    for (name, pods) in [("bound pods", &plan.bound), ("pending pods", &plan.pending)] {
        let t = Instant::now();
        let r = each(pods.clone(), concurrency, |mut pod| {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let uids = &uids;
            async move {
                rewrite_owner(&mut pod, uids)?;
                Ok(bounded(&api, &pod).await?.1)
            }
        })
        .await?;
        step(name, pods.len(), t, r);
    }
    Ok(out)
}
