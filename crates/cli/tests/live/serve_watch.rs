//! `podplace serve`'s model follows the cluster (issue 18): pods and nodes
//! created, deleted and relabelled, then the API server killed and started
//! again (every watch breaks; the watchers list again), and after each step
//! the model's `podplace_model_objects{kind}` equals a fresh list of the
//! API, within a deadline — nothing lost, nothing doubled. Its own control
//! plane, since it restarts the API server.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use podplace_envtest::wait_until;
use serde_json::json;

use crate::rebalance::daemon::Rebalancer;
use crate::serve::spawn_serve;
use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![serve_model_equals_a_fresh_list_through_changes_and_an_apiserver_restart]
}

/// How long the model may take to catch up with a change.
const CATCH_UP: Duration = Duration::from_secs(30);

/// The kinds compared, by the gauge's `kind` label.
const KINDS: [&str; 4] = ["Pod", "Node", "Namespace", "Service"];

/// Objects of each of [`KINDS`] the API holds now.
async fn listed(client: &Client) -> Result<BTreeMap<&'static str, usize>> {
    let lp = ListParams::default();
    Ok(BTreeMap::from([
        (
            "Pod",
            Api::<Pod>::all(client.clone()).list(&lp).await?.items.len(),
        ),
        (
            "Node",
            Api::<Node>::all(client.clone())
                .list(&lp)
                .await?
                .items
                .len(),
        ),
        (
            "Namespace",
            Api::<Namespace>::all(client.clone())
                .list(&lp)
                .await?
                .items
                .len(),
        ),
        (
            "Service",
            Api::<Service>::all(client.clone())
                .list(&lp)
                .await?
                .items
                .len(),
        ),
    ]))
}

/// What serve's model holds of each of [`KINDS`].
async fn modelled(serve: &Rebalancer) -> Result<BTreeMap<&'static str, usize>> {
    let mut out = BTreeMap::new();
    for kind in KINDS {
        let n = serve
            .metric("podplace_model_objects", &[("kind", kind)])
            .await?;
        out.insert(kind, n as usize);
    }
    Ok(out)
}

/// Waits until the model equals a fresh list (`step` names the moment).
async fn wait_equal(serve: &Rebalancer, client: &Client, step: &str) -> Result<()> {
    let last = std::sync::Mutex::new(String::new());
    let waited = wait_until(
        format_args!("serve's model to equal a fresh list {step}"),
        CATCH_UP,
        POLL,
        || async {
            let (api, model) = (listed(client).await?, modelled(serve).await?);
            *last.lock().unwrap_or_else(|e| e.into_inner()) =
                format!("api {api:?}, model {model:?}");
            Ok::<_, anyhow::Error>((api == model).then_some(()))
        },
    )
    .await;
    let last = last.lock().unwrap_or_else(|e| e.into_inner()).clone();
    waited.with_context(|| format!("{last}\nserve's output:\n{}", serve.output()))?;
    Ok(())
}

fn pod(name: &str) -> Result<Pod> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "watched"}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/c:1",
            "resources": {"requests": {"cpu": "10m"}}}]},
    }))?)
}

async fn create_pods(pods: &Api<Pod>, names: &[&str]) -> Result<()> {
    for n in names {
        pods.create(&PostParams::default(), &pod(n)?).await?;
    }
    Ok(())
}

async fn delete_pods(pods: &Api<Pod>, names: &[&str]) -> Result<()> {
    for n in names {
        pods.delete(n, &DeleteParams::default().grace_period(0))
            .await?;
    }
    Ok(())
}

async fn serve_model_equals_a_fresh_list_through_changes_and_an_apiserver_restart(
    live: &Live,
) -> Result<()> {
    let mut fresh = live.fresh(podplace_envtest::Options::default()).await?;
    let client = fresh.cp.client();
    let names = fresh
        .sim
        .add_nodes(vec![
            node("watch-0", "4", "8Gi", &[]),
            node("watch-1", "4", "8Gi", &[]),
        ])
        .await?;
    fresh.sim.wait_nodes_ready(&names, NODES_READY).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    create_pods(&pods, &["w-0", "w-1", "w-2"]).await?;

    let serve = spawn_serve(
        fresh.cp.kubeconfig(),
        "watch",
        &["--lease", "none", "--tick", "1s"],
        &live.timeline,
    )
    .await?;
    wait_equal(&serve, &client, "after the first sync").await?;

    // Pods come, go and change; a node comes and one is relabelled.
    create_pods(&pods, &["w-3", "w-4", "w-5"]).await?;
    delete_pods(&pods, &["w-0", "w-4"]).await?;
    let relabel = Patch::Merge(json!({"metadata": {"labels": {"app": "moved"}}}));
    pods.patch("w-1", &PatchParams::default(), &relabel).await?;
    let more = fresh
        .sim
        .add_nodes(vec![node("watch-2", "4", "8Gi", &[("tier", "a")])])
        .await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let label = Patch::Merge(json!({"metadata": {"labels": {"tier": "b"}}}));
    nodes
        .patch("watch-0", &PatchParams::default(), &label)
        .await?;
    wait_equal(&serve, &client, "after creates, deletes and relabels").await?;

    // The API server crashes and comes back: every watch breaks, and the
    // changes made right after must reach the model whether the watchers
    // resume or list again.
    let took = fresh.cp.kill_apiserver();
    live.note(format!("kube-apiserver killed in {took:?}"));
    fresh.cp.start_apiserver().await?;
    live.note("kube-apiserver restarted");
    create_pods(&pods, &["w-6", "w-7"]).await?;
    delete_pods(&pods, &["w-2"]).await?;
    fresh.sim.remove_nodes(&more).await?;
    wait_equal(&serve, &client, "after the API server restart").await?;

    let (code, body) = serve.get("/readyz").await?;
    ensure!(code == 200, "/readyz after the restart: {code} {body}");
    let refused = serve
        .metric("podplace_model_refused_changes_total", &[])
        .await?;
    ensure!(refused == 0.0, "the model refused {refused} change(s)");
    Ok(())
}
