//! `podplace serve` on the real control plane (issue 18): the chart that
//! runs it ([`chart`]), and the process itself, started from the built
//! binary as the chart's pods would run it, against the shared cluster:
//! story 1's Pending vault-2 explained by a `PodplaceWhy` Event and silent
//! once fixed ([`stories`]), story 2's collapse found as HALost until a
//! rebalance ([`stories`]), story 4's deadlocking rollout warned about at
//! `kubectl apply` through a real webhook registration ([`admission`]),
//! one acting leader among two replicas and the old `rebalance` pod of an
//! upgrade ([`leader`]), and the chart's RBAC as all it needs
//! ([`least_privilege`]).
//!
//! What they share lives here: starting serve (the rebalance tests'
//! process wrapper, stopped by its PID), and reading its Events.

mod admission;
mod chart;
mod leader;
mod least_privilege;
mod stories;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context as _, Result};
use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;
use kube::{Api, Client};
use podplace_envtest::{wait_until, Timeline};

use crate::rebalance::daemon::Rebalancer;
use crate::support::*;

use admission::serve_warns_at_kubectl_apply_of_a_rollout_that_deadlocks;
use chart::{
    chart_install_then_upgrade_keeps_the_webhook_ca, chart_serve_webhook_rbac_and_alerts_render,
};
use leader::serve_replicas_and_an_old_rebalance_pod_act_one_at_a_time;
use least_privilege::serve_runs_on_the_charts_rbac_and_nothing_more;
use stories::{serve_explains_vault_2_then_falls_silent, serve_finds_drift_until_rebalanced};

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        chart_serve_webhook_rbac_and_alerts_render,
        chart_install_then_upgrade_keeps_the_webhook_ca,
        serve_explains_vault_2_then_falls_silent,
        serve_finds_drift_until_rebalanced,
        serve_warns_at_kubectl_apply_of_a_rollout_that_deadlocks,
        serve_replicas_and_an_old_rebalance_pod_act_one_at_a_time,
        serve_runs_on_the_charts_rbac_and_nothing_more,
    ]
}

/// The `reportingController` of serve's Events.
pub const CONTROLLER: &str = "podplace.io/serve";

/// Election timing for the tests: short, so a failover costs seconds.
pub const ELECTION: [&str; 6] = [
    "--lease-duration",
    "6s",
    "--renew-deadline",
    "4s",
    "--retry-period",
    "1s",
];

/// Starts `podplace serve ARGS` (with `--identity`, `--listen 127.0.0.1:0`
/// and `--kubeconfig` added) and waits until its /readyz answers 200: the
/// initial sync is done.
pub async fn spawn_serve(
    kubeconfig: &Path,
    identity: &str,
    args: &[&str],
    timeline: &Timeline,
) -> Result<Rebalancer> {
    let serve = Rebalancer::spawn_command(kubeconfig, "serve", identity, args, timeline).await?;
    wait_until(
        format_args!("podplace[{identity}] serve's /readyz to answer 200"),
        Duration::from_secs(60),
        POLL,
        || async {
            let (code, _) = serve.get("/readyz").await?;
            Ok::<_, anyhow::Error>((code == 200).then_some(()))
        },
    )
    .await
    .with_context(|| format!("podplace[{identity}] output:\n{}", serve.output()))?;
    Ok(serve)
}

/// The address serve's webhook listens on (`--webhook-listen
/// 127.0.0.1:0`), from the line it prints.
pub fn webhook_addr(serve: &Rebalancer) -> Result<SocketAddr> {
    const MARK: &str = "webhook on ";
    let line = serve
        .lines()
        .into_iter()
        .find_map(|l| l.split_once(MARK).map(|(_, a)| a.trim().to_string()))
        .with_context(|| format!("serve printed no {MARK:?} line:\n{}", serve.output()))?;
    let addr = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    addr.parse().map_err(|e| anyhow!("{MARK}{line:?}: {e}"))
}

/// serve's Events (events.k8s.io/v1, reportingController
/// podplace.io/serve) in `ns`.
pub async fn serve_events(client: &Client, ns: &str) -> Result<Vec<Event>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    Ok(api
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing the Events of {ns}"))?
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some(CONTROLLER))
        .collect())
}

/// serve's Events with `reason` about the object `kind`/`name` of `ns`.
pub async fn events_about(
    client: &Client,
    ns: &str,
    kind: &str,
    name: &str,
    reason: &str,
) -> Result<Vec<Event>> {
    Ok(serve_events(client, ns)
        .await?
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .collect())
}

/// Waits (within `deadline`) for serve's first Event with `reason` about
/// `kind`/`name` in `ns`.
pub async fn wait_event(
    live: &Live,
    ns: &str,
    (kind, name): (&str, &str),
    reason: &str,
    deadline: Duration,
) -> Result<Event> {
    let event = wait_until(
        format_args!("a {reason} Event from {CONTROLLER} on {kind} {ns}/{name}"),
        deadline,
        POLL,
        || async move {
            let found = events_about(&live.client, ns, kind, name, reason).await?;
            Ok::<_, anyhow::Error>(found.into_iter().next())
        },
    )
    .await?;
    live.note(format!(
        "{reason} on {kind} {ns}/{name}: {}",
        event.note.as_deref().unwrap_or("")
    ));
    Ok(event)
}

/// How many times an Event has been seen: 1, or its series' count.
pub fn occurrences(e: &Event) -> i32 {
    e.series.as_ref().map_or(1, |s| s.count)
}
