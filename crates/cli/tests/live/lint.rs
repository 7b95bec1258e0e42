//! Section 4's lint items on the real control plane: story 4 (rollout) set
//! up for real — its nodes, `web` applied with kubectl, its pods bound by
//! kube-scheduler and Ready — then `podplace lint rollout/web.yaml` against
//! that cluster, live (`--kubeconfig`) and through a `podplace snapshot` of
//! it (`--cluster`), reports PP003 with the verified `maxUnavailable: 50%`
//! fix, replayed from web's real ReplicaSet and pods; and
//! `rollout-fixed/web.yaml` lints clean against the same cluster; with no
//! files, lint finds the same on the running `web` itself. Then the real
//! controllers agree: a new revision stalls with the surge pod Pending, and
//! the fix completes it. On 3 nodes with web's 3 pods running (the issue's
//! localized case) a 3-replica manifest gets its own verified fix.
//!
//! The story's Deployment has no namespace (`default`, which cannot be
//! deleted), so the test removes it itself and waits until its pods and
//! ReplicaSets are gone.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::Api;
use podplace_envtest::wait_until;
use serde_json::Value;

use crate::support::*;
use crate::why::story;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![lint_rollout_story_gets_the_verified_fix_against_the_live_cluster]
}

/// The label of story 4's pods.
const WEB_PODS: &str = "app=web-store";

/// The fix PP003 must propose for story 4's 2 replicas.
const FIX_50: &str = "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 50%\n";

async fn lint_rollout_story_gets_the_verified_fix_against_the_live_cluster(
    live: &Live,
) -> Result<()> {
    remove_web(live).await?;
    let outcome = rollout(live).await;
    let cleanup = remove_web(live).await;
    outcome.and(cleanup)
}

async fn rollout(live: &Live) -> Result<()> {
    let nodes = podplace_envtest::nodes_from_world(&story("rollout").join("cluster.yaml"))?;
    let mut names = live.add_nodes(nodes).await?;
    let web = story("rollout").join("web.yaml").display().to_string();
    let fixed = story("rollout-fixed")
        .join("web.yaml")
        .display()
        .to_string();
    live.kubectl(&["apply", "-n", "default", "-f", &web])?;
    live.wait_deployment_available("default", "web").await?;
    let mut bound: Vec<String> = live
        .pods("default")
        .await?
        .iter()
        .filter_map(|p| node_of(p).map(str::to_string))
        .collect();
    bound.sort();
    names.sort();
    ensure!(
        bound == names,
        "web's pods are on {bound:?}, not one per node"
    );

    let scratch = Scratch::new("lint")?;
    let kc = live.kubeconfig().display().to_string();
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["snapshot", "--kubeconfig", &kc, "-o", "snap.yaml"],
    );
    ensure!(code == 0, "snapshot exit {code}: {out}{err}");
    for cluster in [["--kubeconfig", kc.as_str()], ["--cluster", "snap.yaml"]] {
        let mut args = vec!["lint", web.as_str(), "-o", "json"];
        args.extend(cluster);
        let (out, err, code) = live.podplace(&scratch.0, &args);
        ensure!(code == 1, "{cluster:?}: lint exit {code}: {out}{err}");
        let v: Value = serde_json::from_str(&out)
            .with_context(|| format!("{cluster:?}: lint -o json printed {out}{err}"))?;
        let pp003 = v["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["rule"] == "PP003")
            .with_context(|| format!("{cluster:?}: no PP003: {out}"))?;
        ensure!(
            pp003["fix"]["patch"] == FIX_50
                && pp003["fix"]["verified"]
                    .as_str()
                    .is_some_and(|s| s.contains("maxUnavailable: 50% completes")),
            "{cluster:?}: PP003 without the verified maxUnavailable: 50% fix: {pp003:#}"
        );
        // Replayed from web's real ReplicaSet: its pods are named in the
        // stalled replay.
        let notes = pp003["notes"].to_string();
        ensure!(
            live.pods("default")
                .await?
                .iter()
                .filter_map(|p| p.metadata.name.as_deref())
                .any(|p| notes.contains(p)),
            "{cluster:?}: the replay does not start from web's running pods: {notes}"
        );

        let mut args = vec!["lint", fixed.as_str()];
        args.extend(cluster);
        let (out, err, code) = live.podplace(&scratch.0, &args);
        ensure!(
            code == 0 && out.contains("no findings"),
            "{cluster:?}: rollout-fixed/web.yaml: lint exit {code}: {out}{err}"
        );
    }

    // With no files, lint lints what runs: web itself, with the story's
    // strategy, live and from the snapshot.
    for cluster in [["--kubeconfig", kc.as_str()], ["--cluster", "snap.yaml"]] {
        let mut args = vec!["lint", "-o", "json"];
        args.extend(cluster);
        let (out, err, code) = live.podplace(&scratch.0, &args);
        ensure!(
            code == 1,
            "{cluster:?}, no files: lint exit {code}: {out}{err}"
        );
        let v: Value = serde_json::from_str(&out)
            .with_context(|| format!("{cluster:?}, no files: lint -o json printed {out}{err}"))?;
        let findings = v["findings"].as_array().cloned().unwrap_or_default();
        ensure!(
            findings.len() == 1
                && findings[0]["rule"] == "PP003"
                && findings[0]["object"] == "Deployment/default/web"
                && findings[0]["fix"]["patch"] == FIX_50,
            "{cluster:?}, no files: want PP003 on the running web with the 50% fix: {out}"
        );
    }

    // What lint predicts is what the real controllers and scheduler do: a
    // new revision with the story's strategy stalls (its surge pod fits
    // nowhere), and the fix lint verified completes it.
    live.kubectl(&[
        "set",
        "image",
        "-n",
        "default",
        "deployment/web",
        "web=nginx:1.28",
    ])?;
    let surge = wait_until("web's surge pod", SETTLE, POLL, || async move {
        let pods = live.pods("default").await?;
        Ok::<_, anyhow::Error>(
            pods.iter()
                .find(|p| node_of(p).is_none())
                .and_then(|p| p.metadata.name.clone()),
        )
    })
    .await?;
    let stalled = live.wait_failed_scheduling("default", &surge).await?;
    ensure!(
        stalled.starts_with(
            "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
        ),
        "the surge pod {surge} is Pending for another reason: {stalled}"
    );
    let patch = scratch.join("fix.yaml");
    std::fs::write(&patch, FIX_50)?;
    let patch = patch.display().to_string();
    live.kubectl(&[
        "patch",
        "-n",
        "default",
        "deployment/web",
        "--patch-file",
        &patch,
    ])?;
    live.wait_deployment_available("default", "web").await?;
    let (out, err, code) = live.podplace(&scratch.0, &["lint", "--kubeconfig", &kc]);
    ensure!(
        code == 0 && out.contains("no findings"),
        "no files, web fixed: lint exit {code}: {out}{err}"
    );

    // On 3 nodes with web's 3 pods running, one per node (the issue's
    // localized case): the manifest at 3 replicas gets its own verified fix.
    let third = podplace_envtest::node("node2", "4", "16Gi", &[]);
    live.add_nodes(vec![third]).await?;
    live.kubectl(&["scale", "-n", "default", "deployment/web", "--replicas=3"])?;
    live.wait_deployment_available("default", "web").await?;
    let three = |path: &str| -> Result<String> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
        ensure!(
            text.contains("  replicas: 2\n"),
            "{path} no longer has 2 replicas"
        );
        Ok(text.replace("  replicas: 2\n", "  replicas: 3\n"))
    };
    std::fs::write(scratch.join("web3.yaml"), three(&web)?)?;
    std::fs::write(scratch.join("web3-fixed.yaml"), three(&fixed)?)?;
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["lint", "web3.yaml", "-o", "json", "--kubeconfig", &kc],
    );
    ensure!(code == 1, "3 nodes: lint exit {code}: {out}{err}");
    let v: Value =
        serde_json::from_str(&out).with_context(|| format!("lint printed {out}{err}"))?;
    let fix = &v["findings"][0]["fix"];
    ensure!(
        v["findings"][0]["rule"] == "PP003"
            && fix["patch"] == FIX_50.replace("50%", "34%")
            && fix["verified"]
                .as_str()
                .is_some_and(|s| s.contains("maxUnavailable: 34% completes")),
        "3 nodes: no PP003 with the verified maxUnavailable: 34% fix: {out}"
    );
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["lint", "web3-fixed.yaml", "--kubeconfig", &kc],
    );
    ensure!(
        code == 0 && out.contains("no findings"),
        "3 nodes: rollout-fixed/web.yaml at 3 replicas: lint exit {code}: {out}{err}"
    );
    Ok(())
}

/// Deletes story 4's Deployment from `default` (its pods at once: there is
/// no kubelet to wait for) and waits until no ReplicaSet or pod of it is
/// left.
async fn remove_web(live: &Live) -> Result<()> {
    live.kubectl(&[
        "delete",
        "deployment",
        "web",
        "-n",
        "default",
        "--ignore-not-found",
        "--wait=false",
    ])?;
    let pods: Api<Pod> = Api::namespaced(live.client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(live.client.clone(), "default");
    let by_label = ListParams::default().labels(WEB_PODS);
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    wait_until(
        "story 4's pods and ReplicaSets to be gone from default",
        Duration::from_secs(60),
        POLL,
        || {
            let (pods, sets, by_label, force) = (&pods, &sets, &by_label, &force);
            async move {
                let left = pods.list_metadata(by_label).await?.items.len()
                    + sets.list_metadata(by_label).await?.items.len();
                if left > 0 {
                    pods.delete_collection(force, by_label).await?;
                }
                Ok::<_, kube::Error>((left == 0).then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}
