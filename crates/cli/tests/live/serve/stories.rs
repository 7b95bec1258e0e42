//! Stories 1 and 2 with serve watching: vault-2's `PodplaceWhy` Event names
//! prometheus-server's rule and the fix `why` verifies, and none follows
//! once the fix is applied and vault-2 binds; demo-app collapsed onto one
//! node is an HALost Event and `podplace_ha_lost` 1 until a rebalance
//! spreads it, then 0.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use podplace_envtest::wait_until;
use serde_json::Value;

use super::*;
use crate::rebalance::daemon::metric_sum;
use crate::rebalance::{collapse_quickly, wait_balanced, APP};
use crate::why::{
    apply_prometheus_fix, create_fixed_namespace, delete_fixed_namespace, vault_pending, NS,
};

pub async fn serve_explains_vault_2_then_falls_silent(live: &Live) -> Result<()> {
    create_fixed_namespace(live, NS).await?;
    let outcome = vault(live).await;
    let cleanup = delete_fixed_namespace(live, NS).await;
    outcome.and(cleanup)
}

async fn vault(live: &Live) -> Result<()> {
    let lease = format!("{NS}/podplace");
    let mut args = vec![
        "--lease",
        &lease,
        "--explain-after",
        "2s",
        "--tick",
        "500ms",
    ];
    args.extend(ELECTION);
    let serve = spawn_serve(live.kubeconfig(), "vault", &args, &live.timeline).await?;
    vault_pending(live).await?;
    let pending_at = Instant::now();
    let event = wait_event(
        live,
        NS,
        ("Pod", "vault-2"),
        "PodplaceWhy",
        Duration::from_secs(60),
    )
    .await
    .with_context(|| serve.output())?;
    let took = pending_at.elapsed();
    let note = event.note.clone().unwrap_or_default();
    let msg = format!(
        "PodplaceWhy on vault-2 {:.1}s after its FailedScheduling: {note}",
        took.as_secs_f64()
    );
    eprintln!("{msg}");
    live.note(&msg);
    ensure!(event.type_.as_deref() == Some("Warning"), "{event:?}");
    ensure!(
        event.event_time.is_some()
            && event.action.as_deref().is_some_and(|a| !a.is_empty())
            && event
                .reporting_instance
                .as_deref()
                .is_some_and(|i| !i.is_empty()),
        "an Event without eventTime, action or reportingInstance: {event:?}"
    );
    ensure!(note.len() <= 1024, "a note of {} bytes", note.len());
    // What an operator sees (the README's "In the cluster" shows it).
    let described = live.kubectl(&["describe", "pod", "vault-2", "-n", NS])?;
    let described = String::from_utf8_lossy(&described.stdout).into_owned();
    let events = described
        .split_once("\nEvents:")
        .map(|(_, e)| e)
        .unwrap_or(&described);
    eprintln!("$ kubectl describe pod vault-2 -n {NS}\n...\nEvents:{events}");
    ensure!(
        events.contains("PodplaceWhy"),
        "kubectl describe shows no PodplaceWhy Event:{events}"
    );

    // The fix why verifies for it: the Event names the same workload and
    // the node the fix lands vault-2 on.
    let scratch = Scratch::new("serve-vault")?;
    let kc = live.kubeconfig().display().to_string();
    let (json, err, code) = live.podplace(
        &scratch.0,
        &[
            "why",
            &format!("{NS}/vault-2"),
            "--kubeconfig",
            &kc,
            "-o",
            "json",
        ],
    );
    ensure!(code == 1, "why -o json exit {code}: {json}{err}");
    let why: Value = serde_json::from_str(&json).context("why -o json is not JSON")?;
    let fix = why["fixes"].get(0).context("why proposes no fix")?;
    let lands_on = fix["lands_on"].as_str().context("no lands_on")?;
    for want in ["StatefulSet/stokesnet/prometheus-server", lands_on] {
        ensure!(
            note.contains(want),
            "the Event's note does not name {want:?}: {note}"
        );
    }

    // Applied: once vault-2 binds, serve says no more about it.
    let patch = fix["patch"].as_str().context("no patch")?;
    apply_prometheus_fix(live, &scratch.0, patch).await?;
    live.wait_bound(NS, "vault-2").await?;
    let seen = |events: &[k8s_openapi::api::events::v1::Event]| -> i32 {
        events.iter().map(occurrences).sum()
    };
    let at_bind = events_about(&live.client, NS, "Pod", "vault-2", "PodplaceWhy").await?;
    // The leader's model has the binding: nothing Pending in the story.
    serve
        .wait_metric("podplace_model_ready", &[], 1.0, Duration::from_secs(10))
        .await?;
    wait_until(
        "serve to count no Pending pod of stokesnet",
        Duration::from_secs(30),
        POLL,
        || async {
            let (_, body) = serve.get("/metrics").await?;
            let n = metric_sum(&body, "podplace_pending_pods", &[("namespace", NS)]);
            Ok::<_, anyhow::Error>((n == 0.0).then_some(()))
        },
    )
    .await
    .with_context(|| serve.output())?;
    // Two complete leader rounds more (a round counts once its Events are
    // written): a leader that still explained the bound pod would have
    // written by now.
    let leader = [("role", "leader")];
    let rounds = serve.metric("podplace_rounds_total", &leader).await?;
    serve
        .wait_metric(
            "podplace_rounds_total",
            &leader,
            rounds + 2.0,
            Duration::from_secs(30),
        )
        .await?;
    let after = events_about(&live.client, NS, "Pod", "vault-2", "PodplaceWhy").await?;
    ensure!(
        after.len() == at_bind.len() && seen(&after) == seen(&at_bind),
        "PodplaceWhy Events on vault-2 after it was bound: {} then {} (occurrences {} then {})",
        at_bind.len(),
        after.len(),
        seen(&at_bind),
        seen(&after)
    );
    Ok(())
}

pub async fn serve_finds_drift_until_rebalanced(live: &Live) -> Result<()> {
    let client = &live.client;
    let nodes = live
        .add_simple_nodes("serve-drift", 3, 1, "2", "4Gi")
        .await?;
    let ns = live.namespace("serve-drift").await?;
    let lease = format!("{ns}/podplace");
    let mut args = vec!["--lease", &lease, "--tick", "500ms"];
    args.extend(ELECTION);
    let serve = spawn_serve(live.kubeconfig(), "drift", &args, &live.timeline).await?;

    // demo-app's replicas collapsed onto one node, the others uncordoned;
    // 4 of them, so that its rollout strategy (maxUnavailable 25%) lets one
    // go at a time and rebalance may evict.
    collapse_quickly(client, &ns, &nodes, APP, 4).await?;
    let uncordoned = Instant::now();
    let event = wait_event(
        live,
        &ns,
        ("Deployment", APP),
        "HALost",
        Duration::from_secs(30),
    )
    .await
    .with_context(|| serve.output())?;
    let gauge = serve
        .wait_metric(
            "podplace_ha_lost",
            &[("namespace", &ns)],
            1.0,
            Duration::from_secs(30) - uncordoned.elapsed().min(Duration::from_secs(29)),
        )
        .await?;
    let msg = format!(
        "HALost on {APP} and podplace_ha_lost {gauge} {:.1}s after the uncordon: {}",
        uncordoned.elapsed().as_secs_f64(),
        event.note.as_deref().unwrap_or("")
    );
    eprintln!("{msg}");
    live.note(&msg);
    ensure!(gauge == 1.0, "podplace_ha_lost {gauge}, want 1");
    let (_, body) = serve.get("/metrics").await?;
    let ours: Vec<&str> = body
        .lines()
        .filter(|l| l.contains(&format!("namespace=\"{ns}\"")))
        .collect();
    eprintln!(
        "$ curl -s localhost:8080/metrics | grep {ns}\n{}",
        ours.join("\n")
    );

    // A rebalance spreads it: the gauge falls to 0.
    let scratch = Scratch::new("serve-drift")?;
    let kc = live.kubeconfig().display().to_string();
    let (out, err, code) = live.podplace(
        &scratch.0,
        &[
            "rebalance",
            "--execute",
            "--kubeconfig",
            &kc,
            "-n",
            &ns,
            "--poll-interval",
            "250ms",
            "--wait-timeout",
            "60s",
        ],
    );
    live.note(format!("rebalance --execute: exit {code}\n{out}{err}"));
    ensure!(code == 0, "rebalance --execute exit {code}: {out}{err}");
    wait_balanced(client, &ns, &nodes, APP, Duration::from_secs(60)).await?;
    let rebalanced = Instant::now();
    wait_until(
        "podplace_ha_lost to fall to 0",
        Duration::from_secs(30),
        POLL,
        || async {
            let v = serve
                .metric("podplace_ha_lost", &[("namespace", &ns)])
                .await?;
            Ok::<_, anyhow::Error>((v == 0.0).then_some(()))
        },
    )
    .await
    .with_context(|| serve.output())?;
    live.note(format!(
        "podplace_ha_lost 0 {:.1}s after the rebalance",
        rebalanced.elapsed().as_secs_f64()
    ));
    Ok(())
}
