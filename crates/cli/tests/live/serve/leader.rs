//! One acting leader: the `rebalance` pod of the chart's earlier version
//! holds the Lease while two serve replicas (the upgrade's new pods) start
//! on the same Lease: neither writes an Event. SIGKILL the old pod by its
//! PID: one serve replica takes the Lease over and explains the Pending
//! pod once; SIGKILL that one: the other takes over and the pod still has
//! one PodplaceWhy Event (a repeat is counted in its series, never a
//! second Event). Only the leader exports the findings gauges.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};

use super::*;
use crate::rebalance::daemon::{holder, wait_holder, Rebalancer};

const LEASE: &str = "podplace";

/// A pod no node can take (its nodeSelector matches none).
const STUCK: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: stuck
spec:
  nodeSelector: {podplace-live/none: "true"}
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
"#;

pub async fn serve_replicas_and_an_old_rebalance_pod_act_one_at_a_time(live: &Live) -> Result<()> {
    let client = &live.client;
    live.add_simple_nodes("serve-lead", 1, 1, "2", "4Gi")
        .await?;
    let ns = live.namespace("serve-lead").await?;
    let lease = format!("{ns}/{LEASE}");

    // The old chart's pod: rebalance on the Lease.
    let mut old_args = vec!["--interval", "1h", "--lease", &lease, "-n", &ns];
    old_args.extend(ELECTION);
    let mut old = Rebalancer::spawn(live.kubeconfig(), "old", &old_args, &live.timeline).await?;
    wait_holder(client, &ns, LEASE, "old", Duration::from_secs(30)).await?;

    let mut args = vec![
        "--lease",
        &lease,
        "--explain-after",
        "1s",
        "--tick",
        "500ms",
    ];
    args.extend(ELECTION);
    let mut a = Some(spawn_serve(live.kubeconfig(), "new-a", &args, &live.timeline).await?);
    let mut b = Some(spawn_serve(live.kubeconfig(), "new-b", &args, &live.timeline).await?);
    live.apply_yaml(&ns, STUCK).await?;
    live.wait_failed_scheduling(&ns, "stuck").await?;
    // Both replicas pass rounds as standbys: once each has counted more
    // rounds since the FailedScheduling than --explain-after (1s) takes at
    // --tick 500ms, a replica that acted without the Lease would have
    // written its Event (a round's Events are written before it counts).
    for replica in [&a, &b] {
        let replica = replica.as_ref().context("a serve replica")?;
        let standby = [("role", "standby")];
        let seen = replica.metric("podplace_rounds_total", &standby).await?;
        replica
            .wait_metric(
                "podplace_rounds_total",
                &standby,
                seen + 4.0,
                Duration::from_secs(30),
            )
            .await?;
    }
    let early = events_about(client, &ns, "Pod", "stuck", "PodplaceWhy").await?;
    ensure!(
        early.is_empty() && holder(client, &ns, LEASE).await?.as_deref() == Some("old"),
        "a serve replica wrote {} Event(s) while the old rebalance pod held the Lease",
        early.len()
    );

    old.kill()?;
    let first = wait_until(
        "a serve replica to take the Lease over",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || async {
            let h = holder(client, &ns, LEASE).await?;
            Ok::<_, anyhow::Error>(h.filter(|h| h.starts_with("new-")))
        },
    )
    .await?;
    live.note(format!("{first} leads after the old pod's SIGKILL"));
    wait_event(
        live,
        &ns,
        ("Pod", "stuck"),
        "PodplaceWhy",
        Duration::from_secs(30),
    )
    .await?;
    let (leader, follower) = if first == "new-a" {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let (l, f) = (
        leader.as_ref().context("the leader")?,
        follower.as_ref().context("the follower")?,
    );
    // Findings gauges from the leader only: two replicas never double an
    // alert.
    let on_leader = l
        .metric("podplace_pending_pods", &[("namespace", &ns)])
        .await?;
    let on_follower = f
        .metric("podplace_pending_pods", &[("namespace", &ns)])
        .await?;
    ensure!(
        on_leader == 1.0 && on_follower == 0.0,
        "podplace_pending_pods of {ns}: leader {on_leader}, follower {on_follower}"
    );

    // SIGKILL the leader by its PID: the other takes over, and the pod
    // keeps one Event.
    let mut gone = leader.take().context("the leader")?;
    let killed_at = k8s_openapi::jiff::Timestamp::now();
    gone.kill()?;
    let next = f.identity.clone();
    let took = wait_holder(client, &ns, LEASE, &next, Duration::from_secs(30)).await?;
    live.note(format!(
        "{next} took over {:.1}s after the SIGKILL of {}",
        took.as_secs_f64(),
        gone.identity
    ));
    let f = follower.as_ref().context("the new leader")?;
    f.wait_metric(
        "podplace_pending_pods",
        &[("namespace", &ns)],
        1.0,
        Duration::from_secs(15),
    )
    .await?;
    // The new leader explains the pod afresh: its create meets the first
    // leader's Event (same series, same name) and counts a repeat on it
    // instead of writing a second one.
    let events = wait_until(
        "the new leader to count a repeat on the PodplaceWhy Event of stuck",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || async {
            let events = events_about(client, &ns, "Pod", "stuck", "PodplaceWhy").await?;
            let counted = events.len() > 1
                || events.iter().any(|e| {
                    e.series
                        .as_ref()
                        .is_some_and(|s| s.last_observed_time.0 >= killed_at)
                });
            Ok::<_, anyhow::Error>(counted.then_some(events))
        },
    )
    .await
    .with_context(|| f.output())?;
    let summary: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{} by {} x{}",
                e.metadata.name.as_deref().unwrap_or("?"),
                e.reporting_instance.as_deref().unwrap_or("?"),
                occurrences(e)
            )
        })
        .collect();
    live.note(format!("PodplaceWhy Events on stuck: {summary:?}"));
    ensure!(
        events.len() == 1,
        "{} PodplaceWhy Events on one unchanged cause after the leader change: {summary:?}\n{}",
        events.len(),
        f.output()
    );
    Ok(())
}
