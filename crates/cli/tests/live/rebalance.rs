//! `podplace rebalance` against the real control plane (issue 10, section 3):
//! story 2 ("drift") collapsed with real `kubectl drain`s and restored by
//! `rebalance --execute` where the plan said, next to the real descheduler
//! on the same state (check 3); two `--interval` processes electing a leader
//! on a real Lease, failing over after SIGKILL (check 4) and handing over
//! after SIGTERM (check 7); an API server outage in the middle of a run and
//! a real PodDisruptionBudget's 429 (check 8).
//!
//! What the modules share lives here: the story's Deployment, collapsing it
//! onto one node, counting the spread, cordoning.

pub(crate) mod daemon;
mod descheduler;
mod election;
mod faults;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use podplace_envtest::wait_until;

use crate::support::*;

use descheduler::drift_story_rebalanced_live_then_descheduler_side_by_side;
use election::{only_the_lease_holder_evicts_and_sigkill_fails_over, sigterm_hands_the_lease_over};
use faults::{
    apiserver_outage_and_pdb_429_on_a_fresh_control_plane,
    eviction_of_a_pod_replaced_under_its_name_is_refused,
};

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        drift_story_rebalanced_live_then_descheduler_side_by_side,
        only_the_lease_holder_evicts_and_sigkill_fails_over,
        sigterm_hands_the_lease_over,
        apiserver_outage_and_pdb_429_on_a_fresh_control_plane,
        eviction_of_a_pod_replaced_under_its_name_is_refused,
    ]
}

/// The label of story 2's pods.
pub const APP: &str = "demo-app";

/// Story 2's Deployment (`examples/stories/drift/demo-app.yaml`: preferred
/// hostname anti-affinity) with `replicas` and, when given, `app` as its
/// name and pod label instead of demo-app.
pub fn demo_app(replicas: u32, app: &str) -> Result<Deployment> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/stories/drift/demo-app.yaml"
    );
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    ensure!(
        text.contains("replicas: 3") && text.matches(APP).count() >= 4,
        "{path} no longer has the shape this test edits"
    );
    let text = text
        .replace("replicas: 3", &format!("replicas: {replicas}"))
        .replace(APP, app);
    serde_saphyr::from_str(&text).with_context(|| format!("reading {path} as a Deployment"))
}

/// Creates `d` in `ns` and waits until it is available.
pub async fn create_available(client: &Client, ns: &str, d: &Deployment) -> Result<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let name = d.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), d)
        .await
        .with_context(|| format!("creating deployment {ns}/{name}"))?;
    wait_available(client, ns, &name).await
}

/// Waits until Deployment `ns/name` is rolled out and available, exactly
/// its replicas of pods labelled `app=NAME` are bound and none of them is
/// terminating (so the spread counted next is final).
pub async fn wait_available(client: &Client, ns: &str, name: &str) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().labels(&format!("app={name}"));
    wait_until(
        format_args!("deployment {ns}/{name} available with no pod terminating"),
        SETTLE,
        POLL,
        || {
            let (deployments, pods, lp) = (deployments.clone(), pods.clone(), lp.clone());
            async move {
                let Some(d) = deployments.get_opt(name).await? else {
                    return Ok::<_, kube::Error>(None);
                };
                if !deployment_available(&d) {
                    return Ok(None);
                }
                let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let list = pods.list(&lp).await?.items;
                let settled = list.len() == usize::try_from(want).unwrap_or(0)
                    && list
                        .iter()
                        .all(|p| p.metadata.deletion_timestamp.is_none() && node_of(p).is_some());
                Ok(settled.then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// The bound, non-terminating pods labelled `app=APP` in `ns`, by uid:
/// (name, node).
pub async fn app_pods(
    client: &Client,
    ns: &str,
    app: &str,
) -> Result<BTreeMap<String, (String, String)>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = api
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .with_context(|| format!("listing the {app} pods of {ns}"))?
        .items;
    Ok(list
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            Some((
                p.metadata.uid.clone()?,
                (p.metadata.name.clone()?, node_of(p)?.to_string()),
            ))
        })
        .collect())
}

/// How many of `pods` (from [`app_pods`]) each of `nodes` runs, in order.
pub fn spread(pods: &BTreeMap<String, (String, String)>, nodes: &[String]) -> Vec<usize> {
    nodes
        .iter()
        .map(|n| pods.values().filter(|(_, on)| on == n).count())
        .collect()
}

/// `w1=5 w2=0 w3=0`, with the nodes' names shortened to their last part.
pub fn spread_text(counts: &[usize], nodes: &[String]) -> String {
    nodes
        .iter()
        .zip(counts)
        .map(|(n, c)| format!("{}={c}", short(n)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A node's name without the test's prefix (`rebal-drift-w1` → `w1`).
pub fn short(node: &str) -> &str {
    node.rsplit('-').next().unwrap_or(node)
}

/// True when no node runs more than one pod above any other: the best
/// spread preferred hostname anti-affinity can give.
pub fn balanced(counts: &[usize]) -> bool {
    let max = counts.iter().max().copied().unwrap_or(0);
    let min = counts.iter().min().copied().unwrap_or(0);
    max - min <= 1
}

/// Marks nodes (un)schedulable, as `kubectl cordon`/`uncordon` do.
pub async fn cordon(client: &Client, nodes: &[String], on: bool) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    for n in nodes {
        api.patch(
            n,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}})),
        )
        .await
        .with_context(|| format!("setting {n} unschedulable={on}"))?;
    }
    Ok(())
}

/// Waits until kube-scheduler itself treats `nodes` as cordoned: a probe
/// pod that may go only to them is found unschedulable (its PodScheduled
/// condition False). The scheduler learns of a cordon through its node
/// watch, which lags right after an API server restart: a probe bound
/// there means it has not seen the cordon yet, so it is deleted and the
/// next one tried.
pub async fn wait_scheduler_sees_cordon(client: &Client, ns: &str, nodes: &[String]) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let gone = kube::api::DeleteParams {
        grace_period_seconds: Some(0),
        ..kube::api::DeleteParams::default()
    };
    // matchFields takes one node name per term; terms are ORed.
    let terms: Vec<serde_json::Value> = nodes
        .iter()
        .map(|n| {
            serde_json::json!({"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [n]}
            ]})
        })
        .collect();
    // Probes go on until the scheduler has caught up or SETTLE has passed
    // (a count of attempts is no bound in time: on a loaded machine its
    // informers relist slowly after the restart).
    let deadline = std::time::Instant::now() + SETTLE;
    let mut attempt = 0u32;
    while std::time::Instant::now() < deadline {
        let name = format!("cordon-probe-{attempt}");
        attempt += 1;
        let probe: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"podplace-live": "cordon-probe"}},
            "spec": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": terms
                }}},
                "containers": [{"name": "probe", "image": "probe"}],
                "terminationGracePeriodSeconds": 0,
            },
        }))?;
        api.create(&PostParams::default(), &probe)
            .await
            .with_context(|| format!("creating {name}"))?;
        let api2 = api.clone();
        let unschedulable = wait_until(
            format_args!("kube-scheduler's verdict on {name}"),
            SETTLE,
            POLL,
            || {
                let api = api2.clone();
                let name = name.clone();
                async move {
                    let pod = api.get(&name).await?;
                    let bound = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.clone())
                        .is_some();
                    let refused = pod
                        .status
                        .iter()
                        .flat_map(|s| s.conditions.iter().flatten())
                        .any(|c| c.type_ == "PodScheduled" && c.status == "False");
                    Ok::<_, kube::Error>(match (bound, refused) {
                        (true, _) => Some(false),
                        (false, true) => Some(true),
                        (false, false) => None,
                    })
                }
            },
        )
        .await?;
        api.delete(&name, &gone)
            .await
            .with_context(|| format!("deleting {name}"))?;
        let api2 = api.clone();
        wait_until(format_args!("{name} to be gone"), SETTLE, POLL, || {
            let api = api2.clone();
            let name = name.clone();
            async move { api.get_opt(&name).await.map(|p| p.is_none().then_some(())) }
        })
        .await?;
        if unschedulable {
            return Ok(());
        }
    }
    anyhow::bail!(
        "kube-scheduler kept binding probes to the cordoned nodes {nodes:?} for {SETTLE:?} ({attempt} probes)"
    )
}

/// Waits until none of `nodes` is cordoned: `spec.unschedulable` unset and
/// the `node.kubernetes.io/unschedulable` taint, which the node lifecycle
/// controller removes a moment after an uncordon, gone (until then the real
/// scheduler, and podplace, rightly place nothing there).
pub async fn wait_schedulable(client: &Client, nodes: &[String]) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    for n in nodes {
        let api = api.clone();
        wait_until(
            format_args!("{n} to be schedulable (uncordoned, untainted)"),
            SETTLE,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let node = api.get(n).await?;
                    let spec = node.spec.unwrap_or_default();
                    let tainted = spec
                        .taints
                        .iter()
                        .flatten()
                        .any(|t| t.key == "node.kubernetes.io/unschedulable");
                    Ok::<_, kube::Error>(
                        (!spec.unschedulable.unwrap_or(false) && !tainted).then_some(()),
                    )
                }
            },
        )
        .await?;
    }
    Ok(())
}

/// Collapses a fresh `app` Deployment of `replicas` onto `nodes[0]` the
/// quick way (the other nodes cordoned while it is created, then
/// uncordoned): the state story 2's drains end in, for tests about the
/// process rather than the story. Returns the collapsed pods.
pub async fn collapse_quickly(
    client: &Client,
    ns: &str,
    nodes: &[String],
    app: &str,
    replicas: u32,
) -> Result<BTreeMap<String, (String, String)>> {
    cordon(client, &nodes[1..], true).await?;
    wait_scheduler_sees_cordon(client, ns, &nodes[1..]).await?;
    create_available(client, ns, &demo_app(replicas, app)?).await?;
    // Read before the uncordon: a running rebalancer may act at once.
    let pods = app_pods(client, ns, app).await?;
    cordon(client, &nodes[1..], false).await?;
    wait_schedulable(client, &nodes[1..]).await?;
    let counts = spread(&pods, nodes);
    ensure!(
        counts[0] == replicas as usize,
        "the {app} pods did not collapse onto {}: {}",
        nodes[0],
        spread_text(&counts, nodes)
    );
    Ok(pods)
}

/// Waits until the `app` pods of `ns` are spread as evenly as they can be
/// over `nodes` and the Deployment is available; returns the counts.
pub async fn wait_balanced(
    client: &Client,
    ns: &str,
    nodes: &[String],
    app: &str,
    deadline: Duration,
) -> Result<Vec<usize>> {
    let counts = wait_until(
        format_args!("the {app} pods of {ns} to spread over {nodes:?}"),
        deadline,
        POLL,
        || async move {
            let pods = app_pods(client, ns, app).await?;
            let counts = spread(&pods, nodes);
            Ok::<_, anyhow::Error>(balanced(&counts).then_some(counts))
        },
    )
    .await?;
    wait_available(client, ns, app).await?;
    Ok(counts)
}

/// The pods of `before` (by uid) that are gone from `after`: evicted.
pub fn gone(
    before: &BTreeMap<String, (String, String)>,
    after: &BTreeMap<String, (String, String)>,
) -> BTreeSet<String> {
    before
        .keys()
        .filter(|u| !after.contains_key(*u))
        .cloned()
        .collect()
}
