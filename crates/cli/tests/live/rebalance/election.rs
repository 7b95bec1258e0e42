//! Checks 4 and 7: two `podplace rebalance --execute --interval` processes
//! on one real Lease. Only its holder evicts; SIGKILL of the holder hands
//! the Lease over once it has stayed unrenewed for a lease duration (never
//! sooner: that would be two leaders), and the new leader runs at once;
//! SIGTERM releases the Lease, so the other takes over within about one
//! retry period instead of a lease duration.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use super::daemon::{holder, wait_holder, Rebalancer};
use super::*;

const LEASE: &str = "podplace-rebalancer";

/// Election timing for check 4: short, so a failover costs seconds.
const LEASE_DURATION: Duration = Duration::from_secs(6);
const RETRY: Duration = Duration::from_secs(1);

pub async fn only_the_lease_holder_evicts_and_sigkill_fails_over(live: &Live) -> Result<()> {
    let client = &live.client;
    let nodes = live
        .add_simple_nodes("rebal-lead", 3, 1, "2", "4Gi")
        .await?;
    let ns = live.namespace("rebal-lead").await?;
    // 4 replicas on one of 3 nodes: 2 evictions (one per wave).
    let collapsed = collapse_quickly(client, &ns, &nodes, APP, 4).await?;
    let lease = format!("{ns}/{LEASE}");
    // A long interval: each process runs once when it starts, and again
    // only when it takes the Lease over (at once, or it would wait an hour).
    let args = [
        "--execute",
        "--interval",
        "1h",
        "--lease",
        &lease,
        "--lease-duration",
        "6s",
        "--renew-deadline",
        "4s",
        "--retry-period",
        "1s",
        "-n",
        &ns,
        "--poll-interval",
        "250ms",
    ];
    let mut a = Rebalancer::spawn(live.kubeconfig(), "live-a", &args, &live.timeline).await?;
    wait_holder(client, &ns, LEASE, "live-a", Duration::from_secs(30)).await?;
    let b = Rebalancer::spawn(live.kubeconfig(), "live-b", &args, &live.timeline).await?;

    // b's first run finds a leading: it does nothing.
    b.wait_metric(
        "podplace_rebalance_runs_total",
        &[("result", "not_leader")],
        1.0,
        Duration::from_secs(30),
    )
    .await?;
    // a's first run restores the spread.
    let counts = wait_balanced(client, &ns, &nodes, APP, Duration::from_secs(90)).await?;
    wait_until(
        "live-a's first run to finish",
        Duration::from_secs(60),
        POLL,
        || async {
            let ok = a
                .metric("podplace_rebalance_runs_total", &[("result", "ok")])
                .await?;
            let deviated = a
                .metric("podplace_rebalance_runs_total", &[("result", "deviated")])
                .await?;
            Ok::<_, anyhow::Error>((ok + deviated >= 1.0).then_some(()))
        },
    )
    .await?;
    let evicted = gone(&collapsed, &app_pods(client, &ns, APP).await?).len();
    let a_evicted = a
        .metric(
            "podplace_rebalance_evictions_total",
            &[("result", "evicted")],
        )
        .await?;
    let b_requests = b.metric("podplace_rebalance_evictions_total", &[]).await?;
    let b_landings = b.metric("podplace_rebalance_landings_total", &[]).await?;
    ensure!(
        evicted == 2 && a_evicted == 2.0,
        "{evicted} pods gone, live-a counts {a_evicted} evictions (want 2); spread {}\n{}",
        spread_text(&counts, &nodes),
        a.output()
    );
    ensure!(
        b_requests == 0.0 && b_landings == 0.0,
        "the follower live-b counted {b_requests} eviction requests and {b_landings} landings:\n{}",
        b.output()
    );
    ensure!(
        holder(client, &ns, LEASE).await?.as_deref() == Some("live-a"),
        "live-a no longer holds the Lease"
    );
    ensure!(
        a.lines().iter().any(|l| l.contains("evicted 2")),
        "live-a's output does not report its evictions:\n{}",
        a.output()
    );
    for (r, leader) in [(&a, 1.0), (&b, 0.0)] {
        let (code, body) = r.get("/healthz").await?;
        ensure!(
            code == 200,
            "{}'s /healthz: {code} {body}\n{}",
            r.identity,
            r.output()
        );
        let (code, body) = r.get("/metrics").await?;
        ensure!(
            code == 200 && body.ends_with("# EOF\n"),
            "{}'s /metrics: {code} {body}",
            r.identity
        );
        let gauge = r.metric("podplace_rebalance_leader", &[]).await?;
        ensure!(
            gauge == leader,
            "{}'s leader gauge is {gauge}, want {leader}",
            r.identity
        );
    }

    // SIGKILL the holder: no release; live-b must wait the Lease out.
    a.kill()?;
    let failover = wait_holder(client, &ns, LEASE, "live-b", Duration::from_secs(30)).await?;
    let msg = format!(
        "failover after SIGKILL of the holder: {:.2}s (lease duration {}s, retry period {}s)",
        failover.as_secs_f64(),
        LEASE_DURATION.as_secs(),
        RETRY.as_secs()
    );
    eprintln!("{msg}");
    live.note(&msg);
    // The holder renewed at most a retry period (plus a request) before it
    // died, and live-b counts a lease duration from when it saw that
    // renewal, polling every retry period.
    ensure!(
        failover >= LEASE_DURATION - 2 * RETRY,
        "{msg}: taken over before the Lease could have expired"
    );
    ensure!(
        failover <= LEASE_DURATION + 2 * RETRY + Duration::from_secs(3),
        "{msg}: not within the lease duration"
    );
    // The new leader acts at once, not an --interval (1h) later.
    b.wait_metric(
        "podplace_rebalance_runs_total",
        &[("result", "ok")],
        1.0,
        Duration::from_secs(15),
    )
    .await?;
    ensure!(
        b.metric("podplace_rebalance_leader", &[]).await? == 1.0,
        "live-b's leader gauge after the takeover"
    );
    let (code, body) = b.get("/healthz").await?;
    ensure!(code == 200, "live-b's /healthz as leader: {code} {body}");
    Ok(())
}

pub async fn sigterm_hands_the_lease_over(live: &Live) -> Result<()> {
    let client = &live.client;
    let ns = live.namespace("rebal-term").await?;
    let lease = format!("{ns}/{LEASE}");
    // client-go's (and the chart's) timing: a 15 s Lease, 2 s retries.
    let args = [
        "--execute",
        "--interval",
        "1h",
        "--lease",
        &lease,
        "-n",
        &ns,
    ];
    let mut a = Rebalancer::spawn(live.kubeconfig(), "term-a", &args, &live.timeline).await?;
    wait_holder(client, &ns, LEASE, "term-a", Duration::from_secs(30)).await?;
    let mut b = Rebalancer::spawn(live.kubeconfig(), "term-b", &args, &live.timeline).await?;
    b.wait_metric(
        "podplace_rebalance_runs_total",
        &[("result", "not_leader")],
        1.0,
        Duration::from_secs(30),
    )
    .await?;

    let t0 = Instant::now();
    a.terminate()?;
    // Watch the Lease change hands and term-a exit, every 20 ms.
    let mut seen: Vec<(Duration, Option<String>)> = Vec::new();
    let mut exit = None;
    let handover = loop {
        let h = holder(client, &ns, LEASE).await?;
        let t = t0.elapsed();
        if seen.last().is_none_or(|(_, last)| *last != h) {
            seen.push((t, h.clone()));
        }
        if exit.is_none() {
            exit = a.exited().map(|s| (s, t));
        }
        if h.as_deref() == Some("term-b") {
            break t;
        }
        ensure!(
            t < Duration::from_secs(30),
            "term-b did not take the Lease over within 30s: {seen:?}\n{}",
            a.output()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (status, exited) = match exit {
        Some(e) => e,
        None => {
            let (s, _) = a.wait_exit(Duration::from_secs(15)).await?;
            (s, t0.elapsed())
        }
    };
    let msg = format!(
        "hand-over after SIGTERM of the holder: {:.2}s (holder: {}; term-a exited after {:.2}s; lease duration 15s, retry period 2s)",
        handover.as_secs_f64(),
        seen.iter()
            .map(|(t, h)| format!("{:.2}s {}", t.as_secs_f64(), h.as_deref().unwrap_or("(none)")))
            .collect::<Vec<_>>()
            .join(", "),
        exited.as_secs_f64(),
    );
    eprintln!("{msg}");
    live.note(&msg);
    ensure!(
        status.success(),
        "term-a exited with {status} after SIGTERM:\n{}",
        a.output()
    );
    ensure!(
        handover < Duration::from_secs(5),
        "{msg}: the Lease was not released\n{}",
        a.output()
    );

    // Alone, a SIGTERMed holder leaves the Lease released: no holder.
    b.terminate()?;
    let (status, _) = b.wait_exit(Duration::from_secs(15)).await?;
    ensure!(status.success(), "term-b exited with {status}");
    let left = holder(client, &ns, LEASE).await?;
    ensure!(
        left.is_none(),
        "after term-b's SIGTERM the Lease is held by {left:?}\n{}",
        b.output()
    );
    Ok(())
}
