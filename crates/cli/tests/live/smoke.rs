//! The harness itself, against the real processes: the server's version,
//! simulated nodes, the real scheduler binding a Deployment's pods, a real
//! `kubectl drain`, and a `podplace snapshot` of the live cluster.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use podplace_envtest::wait_until;

use crate::support::*;
use podplace_envtest::Component;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        serves_version_1_36,
        nodes_become_ready,
        deployment_scheduled_and_available,
        kubectl_drain_moves_pods,
        snapshot_loads_back,
        service_account_token_authenticates,
        fresh_control_plane_restarts_apiserver_and_takes_scheduler_config,
    ]
}

async fn serves_version_1_36(live: &Live) -> Result<()> {
    let v = live.client.apiserver_version().await?;
    ensure!(
        v.major == "1" && v.minor == "36",
        "server version {}.{}",
        v.major,
        v.minor
    );
    Ok(())
}

async fn nodes_become_ready(live: &Live) -> Result<()> {
    let names = live
        .add_simple_nodes("smoke-ready", 2, 1, "4", "8Gi")
        .await?;
    let nodes: Api<Node> = Api::all(live.client.clone());
    for n in &names {
        let node = nodes.get(n).await?;
        ensure!(
            podplace_envtest::node_ready(&node),
            "{n} is not ready: {node:?}"
        );
        let cpu = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("cpu"));
        ensure!(
            cpu.is_some_and(|q| q.0 == "4"),
            "{n} allocatable cpu {cpu:?}"
        );
    }
    // The Lease is renewed (heartbeats keep the node Ready).
    let leases: Api<Lease> = Api::namespaced(live.client.clone(), "kube-node-lease");
    let renew = |l: Lease| l.spec.and_then(|s| s.renew_time).map(|t| t.0);
    let first = renew(leases.get(&names[0]).await?).context("lease has no renewTime")?;
    wait_until(
        "the node Lease to be renewed",
        Duration::from_secs(30),
        Duration::from_millis(500),
        || {
            let leases = leases.clone();
            let name = names[0].clone();
            async move {
                let l = leases.get(&name).await?;
                Ok::<_, kube::Error>(renew(l).filter(|t| *t > first).map(|_| ()))
            }
        },
    )
    .await?;
    Ok(())
}

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: web
        image: registry.example/web:1
        resources:
          requests: {cpu: 500m, memory: 256Mi}
"#;

async fn deployment_scheduled_and_available(live: &Live) -> Result<()> {
    let nodes: BTreeSet<String> = live
        .add_simple_nodes("smoke-deploy", 3, 3, "2", "4Gi")
        .await?
        .into_iter()
        .collect();
    let ns = live.namespace("smoke-deploy").await?;
    live.apply_yaml(&ns, WEB).await?;
    live.wait_deployment_available(&ns, "web").await?;
    let pods = live.pods(&ns).await?;
    ensure!(pods.len() == 3, "{} pods", pods.len());
    for p in &pods {
        let node = node_of(p).context("a pod is not bound")?;
        ensure!(
            nodes.contains(node),
            "pod bound to {node}, not one of {nodes:?}"
        );
        ensure!(
            pod_ready(p),
            "pod {} not Ready",
            p.metadata.name.as_deref().unwrap_or("")
        );
    }
    // The real kube-scheduler bound them: its Scheduled events say so (they
    // are recorded asynchronously, so wait for them).
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(live.client.clone(), &ns);
    let lp = kube::api::ListParams::default().fields("reason=Scheduled");
    wait_until(
        "3 Scheduled events from default-scheduler",
        SETTLE,
        POLL,
        || {
            let (events, lp) = (events.clone(), lp.clone());
            async move {
                let n = events
                    .list(&lp)
                    .await?
                    .items
                    .iter()
                    .filter(|e| e.reporting_component.as_deref() == Some("default-scheduler"))
                    .count();
                Ok::<_, kube::Error>((n == 3).then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

async fn kubectl_drain_moves_pods(live: &Live) -> Result<()> {
    let nodes = live
        .add_simple_nodes("smoke-drain", 2, 1, "4", "8Gi")
        .await?;
    let ns = live.namespace("smoke-drain").await?;
    live.apply_yaml(&ns, WEB).await?;
    live.wait_deployment_available(&ns, "web").await?;
    // Drain the node with the most replicas; the others must move to the
    // remaining node.
    let pods = live.pods(&ns).await?;
    let on = |n: &str| pods.iter().filter(|p| node_of(p) == Some(n)).count();
    let (victim, other) = if on(&nodes[0]) >= on(&nodes[1]) {
        (&nodes[0], &nodes[1])
    } else {
        (&nodes[1], &nodes[0])
    };
    let before: Vec<String> = pods
        .iter()
        .filter(|p| node_of(p) == Some(victim.as_str()))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    ensure!(!before.is_empty(), "no pod on either node: {pods:?}");
    live.kubectl(&[
        "drain",
        victim,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=90s",
    ])?;
    live.wait_deployment_available(&ns, "web").await?;
    let pods = live.pods(&ns).await?;
    for p in &pods {
        let name = p.metadata.name.as_deref().unwrap_or("");
        ensure!(
            !before.iter().any(|b| b == name),
            "drained pod {name} still exists"
        );
        ensure!(
            node_of(p) == Some(other.as_str()),
            "pod {name} on {:?} after the drain",
            node_of(p)
        );
    }
    let node: Node = Api::all(live.client.clone()).get(victim).await?;
    ensure!(
        node.spec.and_then(|s| s.unschedulable) == Some(true),
        "{victim} is not cordoned"
    );
    Ok(())
}

async fn snapshot_loads_back(live: &Live) -> Result<()> {
    let nodes = live
        .add_simple_nodes("smoke-snap", 2, 2, "4", "8Gi")
        .await?;
    let ns = live.namespace("smoke-snap").await?;
    live.apply_yaml(&ns, WEB).await?;
    live.wait_deployment_available(&ns, "web").await?;
    let dir = Scratch::new("snapshot")?;
    let kc = live.kubeconfig().display().to_string();
    let (out, err, code) = live.podplace(
        &dir.0,
        &["snapshot", "--kubeconfig", &kc, "-o", "snap.yaml"],
    );
    ensure!(code == 0, "snapshot exit {code}: {out}{err}");
    let inv =
        podplace_model::load::load(&[podplace_model::load::Source::Path(dir.join("snap.yaml"))])
            .map_err(|e| anyhow::anyhow!("the snapshot does not load: {e}"))?;
    let snap_nodes: BTreeSet<&str> = inv
        .nodes
        .iter()
        .filter_map(|n| n.object.metadata.name.as_deref())
        .collect();
    for n in &nodes {
        ensure!(
            snap_nodes.contains(n.as_str()),
            "node {n} missing from the snapshot: {snap_nodes:?}"
        );
    }
    let ours: Vec<_> = inv
        .pods
        .iter()
        .filter(|p| p.object.metadata.namespace.as_deref() == Some(ns.as_str()))
        .collect();
    ensure!(
        ours.len() == 3,
        "{} pods of {ns} in the snapshot",
        ours.len()
    );
    ensure!(
        ours.iter()
            .all(|p| node_of(&p.object).is_some_and(|n| nodes.contains(&n.to_string()))),
        "snapshot pods not bound to our nodes"
    );
    let (out, err, code) = live.podplace(&dir.0, &["place", "-f", "snap.yaml"]);
    ensure!(code == 0, "place -f snap.yaml exit {code}: {out}{err}");
    Ok(())
}

async fn service_account_token_authenticates(live: &Live) -> Result<()> {
    // Tokens are signed with the harness's ECDSA service-account key: the
    // API server must accept them.
    let ns = live.namespace("smoke-sa").await?;
    let dir = Scratch::new("sa")?;
    let kc = live
        .service_account_kubeconfig(&ns, "default", &dir.0)
        .await?;
    let config = podplace_envtest::config_from(&kc).await?;
    let client = kube::Client::try_from(config)?;
    let review: k8s_openapi::api::authentication::v1::SelfSubjectReview = serde_json::from_value(
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )?;
    let api: Api<k8s_openapi::api::authentication::v1::SelfSubjectReview> = Api::all(client);
    let out = api
        .create(&kube::api::PostParams::default(), &review)
        .await?;
    let user = out
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username);
    ensure!(
        user.as_deref() == Some(format!("system:serviceaccount:{ns}:default").as_str()),
        "authenticated as {user:?}"
    );
    Ok(())
}

const SCHEDULER_CONFIG: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: podplace-live-scheduler
"#;

async fn fresh_control_plane_restarts_apiserver_and_takes_scheduler_config(
    live: &Live,
) -> Result<()> {
    let mut fresh = live
        .fresh(podplace_envtest::Options {
            scheduler_config: Some(SCHEDULER_CONFIG.to_string()),
            ..Default::default()
        })
        .await?;
    let names = fresh
        .sim
        .add_nodes(vec![node("fresh-0", "2", "4Gi", &[])])
        .await?;
    fresh.sim.wait_nodes_ready(&names, NODES_READY).await?;
    let client = fresh.cp.client();

    // The API server goes away (killed, as a crash: a SIGTERM'd one takes
    // the full 5 s of stop_apiserver's grace) and comes back on the same port.
    let took = fresh.cp.kill_apiserver();
    live.note(format!("fresh kube-apiserver killed in {took:?}"));
    ensure!(
        fresh.cp.pid(Component::ApiServer).is_none(),
        "kube-apiserver still has a PID"
    );
    ensure!(
        client.apiserver_version().await.is_err(),
        "the stopped API server answered"
    );
    fresh.cp.start_apiserver().await?;
    live.note("fresh kube-apiserver restarted");
    ensure!(
        client.apiserver_version().await?.minor == "36",
        "restarted server's version"
    );
    fresh.sim.wait_nodes_ready(&names, NODES_READY).await?;

    // A pod for the configured profile is bound by that scheduler.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "default");
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "custom"},
        "spec": {"schedulerName": "podplace-live-scheduler",
                 "containers": [{"name": "c", "image": "registry.example/c:1"}]},
    }))?;
    pods.create(&kube::api::PostParams::default(), &pod).await?;
    let node = wait_until("the custom-profile pod to be bound", SETTLE, POLL, || {
        let pods = pods.clone();
        async move {
            let p = pods.get("custom").await?;
            Ok::<_, kube::Error>(node_of(&p).map(str::to_string))
        }
    })
    .await?;
    ensure!(node == "fresh-0", "bound to {node}");
    Ok(())
}
