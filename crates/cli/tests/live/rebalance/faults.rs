//! Check 8, on a control plane of its own (it stops the API server): a
//! `podplace rebalance --execute --interval 2s` process loses the API server
//! right after the first eviction of a plan. It must say so (output,
//! `/healthz` 503 until the server is back, errors counted), evict nothing
//! from the plan it made before (the API server's audit log shows a fresh
//! list of nodes and pods before its next eviction) and resume on its own.
//! Then a real PodDisruptionBudget (maxUnavailable 0), created while the
//! process works through another plan, answers its next eviction with 429:
//! retried, reported in the output and metrics, and nothing is evicted past
//! it.
//!
//! The simulated kubelet starts pods after 4 s here, so each wave's wait for
//! Ready leaves a window to act in between two evictions of one plan.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, ensure, Context as _, Result};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use podplace_envtest::{wait_until, ControlPlane, NodeSimulator, Options, SimConfig};

use super::daemon::Rebalancer;
use super::*;

const NS: &str = "default";
const USER: &str = "podplace-live";
const LEASE_DURATION: Duration = Duration::from_secs(6);

/// Records podplace's requests only (its own client certificate's user).
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [podplace-live]
- level: None
"#;

pub async fn apiserver_outage_and_pdb_429_on_a_fresh_control_plane(live: &Live) -> Result<()> {
    let dir = Scratch::new("rebalance-faults")?;
    let audit_log = dir.join("audit.log");
    std::fs::write(dir.join("audit-policy.yaml"), AUDIT_POLICY)?;
    live.note("starting a fresh control plane (audited) for the faults test");
    let mut cp = ControlPlane::start(Options {
        apiserver_args: vec![
            format!(
                "--audit-policy-file={}",
                dir.join("audit-policy.yaml").display()
            ),
            format!("--audit-log-path={}", audit_log.display()),
        ],
        ..Options::default()
    })
    .await?;
    let sim = NodeSimulator::start(
        cp.client(),
        SimConfig {
            pod_start_delay: Duration::from_secs(4),
            timeline: live.timeline.clone(),
            ..SimConfig::default()
        },
    )
    .await?;
    live.note(format!(
        "fresh control plane ready in {:.1}s",
        cp.started_in().as_secs_f64()
    ));
    let client = cp.client();
    // Three sizes: every replacement has one best node, so no landing is a
    // tie (a tie is a deviation that plans again, which would read the PDB
    // below before evicting and never meet its 429).
    let nodes = sim
        .add_nodes(
            [("2", "4Gi"), ("4", "8Gi"), ("3", "6Gi")]
                .iter()
                .enumerate()
                .map(|(i, (cpu, mem))| node(&format!("rebal-fault-{i}"), cpu, mem, &[]))
                .collect(),
        )
        .await?;
    sim.wait_nodes_ready(&nodes, NODES_READY).await?;
    let kubeconfig = cp.user_kubeconfig(USER, &["system:masters"])?;

    let collapsed = collapse_quickly(&client, NS, &nodes, APP, 4).await?;
    let lease = format!("{NS}/podplace-rebalancer");
    let r = Rebalancer::spawn(
        &kubeconfig,
        "fault-a",
        &[
            "--execute",
            "--interval",
            "2s",
            "--lease",
            &lease,
            "--lease-duration",
            "6s",
            "--renew-deadline",
            "4s",
            "--retry-period",
            "1s",
            "-n",
            NS,
            "--poll-interval",
            "250ms",
            "--retries",
            "2",
            "--retry-backoff",
            "500ms",
            "--wait-timeout",
            "60s",
        ],
        &live.timeline,
    )
    .await?;

    // The API server goes away right after the plan's first eviction, while
    // podplace waits for that replacement to be Ready. /healthz is sampled
    // from the moment it is killed until the lease duration has
    // passed (and the server is gone).
    first_eviction(&client, APP, &collapsed).await?;
    let stopped_at = SystemTime::now();
    let t_stop = Instant::now();
    let lines_before = r.lines().len();
    let mut samples: Vec<(Duration, u16, String)> = Vec::new();
    let stopping = tokio::task::spawn_blocking(move || {
        let took = cp.kill_apiserver();
        (cp, took)
    });
    let (mut cp, took) = {
        let sampler = async {
            loop {
                sample(&r, t_stop, &mut samples).await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            stopped = stopping => stopped.context("killing kube-apiserver")?,
            failed = sampler => return failed,
        }
    };
    live.note(format!("kube-apiserver killed in {took:?}"));
    while t_stop.elapsed() < LEASE_DURATION + Duration::from_secs(3) {
        sample(&r, t_stop, &mut samples).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first_503 = samples
        .iter()
        .position(|(_, code, _)| *code == 503)
        .with_context(|| format!("/healthz never answered 503: {samples:?}\n{}", r.output()))?;
    let flaps: Vec<&(Duration, u16, String)> = samples[first_503..]
        .iter()
        .filter(|(_, code, _)| *code != 503)
        .collect();
    ensure!(
        flaps.is_empty(),
        "/healthz turned healthy again while the API server was down: {flaps:?}\n{}",
        r.output()
    );
    let (unhealthy_after, _, body) = samples[first_503].clone();
    let said: Vec<String> = r.lines()[lines_before..]
        .iter()
        .filter(|l| l.starts_with("error:") || l.starts_with("warning:"))
        .cloned()
        .collect();
    ensure!(
        !said.is_empty(),
        "podplace said nothing about the outage:\n{}",
        r.output()
    );
    let errors = r
        .metric("podplace_rebalance_runs_total", &[("result", "error")])
        .await?;
    ensure!(
        errors >= 1.0,
        "no run counted as error during the outage:\n{}",
        r.output()
    );

    let restarted_at = SystemTime::now();
    cp.start_apiserver().await?;
    let outage = t_stop.elapsed();
    live.note("kube-apiserver restarted");
    // The simulated kubelets resync their nodes once the server is back
    // (a pod start that failed while it was away is retried now, not when
    // the simulator's watch happens to list again).
    for n in &nodes {
        sim.set_heartbeat(n, true).await?;
    }
    sim.wait_nodes_ready(&nodes, NODES_READY).await?;
    let t_back = Instant::now();
    r.wait_healthz(200, "", Duration::from_secs(60)).await?;
    let healthy_after = t_back.elapsed();
    let ok_before = r
        .metric("podplace_rebalance_runs_total", &[("result", "ok")])
        .await?;
    let counts = wait_balanced(&client, NS, &nodes, APP, Duration::from_secs(90)).await?;
    r.wait_metric(
        "podplace_rebalance_runs_total",
        &[("result", "ok")],
        ok_before + 1.0,
        Duration::from_secs(30),
    )
    .await?;
    let audit = read_audit(&audit_log)?;
    let evictions = |after: SystemTime, before: SystemTime, app: &str| -> Vec<&AuditEvent> {
        audit
            .iter()
            .filter(|e| e.eviction() && e.name.starts_with(app))
            .filter(|e| e.at > ts(after) && e.at < ts(before))
            .collect()
    };
    let far = SystemTime::now() + Duration::from_secs(3600);
    let before_outage = evictions(SystemTime::UNIX_EPOCH, stopped_at, APP);
    let after_outage = evictions(restarted_at, far, APP);
    ensure!(
        before_outage.len() == 1,
        "evictions before the outage: {before_outage:?}"
    );
    let first_after = after_outage
        .first()
        .ok_or_else(|| anyhow!("no eviction after the outage"))?;
    for resource in ["nodes", "pods"] {
        ensure!(
            audit.iter().any(|e| e.verb == "list"
                && e.resource == resource
                && e.at > ts(restarted_at)
                && e.at < first_after.at),
            "podplace evicted {} at {} after the outage without listing {resource} first: {:#?}",
            first_after.name,
            first_after.at,
            audit
                .iter()
                .filter(|e| e.at > ts(restarted_at) && e.at <= first_after.at)
                .collect::<Vec<_>>()
        );
    }
    let msg = format!(
        "outage: /healthz 503 {:.1}s after the API server was killed (\"{}\"), and until it was back; {errors} run(s) counted as error; down {:.1}s; 200 again {:.1}s after it was back; evictions: {} before, {} after (the first after a fresh list of nodes and pods); spread {}",
        unhealthy_after.as_secs_f64(),
        body.trim(),
        outage.as_secs_f64(),
        healthy_after.as_secs_f64(),
        before_outage.len(),
        after_outage.len(),
        spread_text(&counts, &nodes)
    );
    eprintln!("{msg}");
    live.note(&msg);

    // A PodDisruptionBudget appears while a plan for "web" is carried out.
    let web = collapse_quickly(&client, NS, &nodes, "web", 4).await?;
    let first = first_eviction(&client, "web", &web).await?;
    let pdb_at = SystemTime::now();
    create_pdb(&client, "web").await?;
    live.note(format!("web's first eviction ({first}); PDB web created"));
    let blocked = r
        .wait_metric(
            "podplace_rebalance_evictions_total",
            &[("result", "blocked")],
            3.0,
            Duration::from_secs(60),
        )
        .await?;
    let report = wait_until(
        "podplace to report the refused eviction",
        Duration::from_secs(30),
        POLL,
        || {
            let line = r
                .lines()
                .into_iter()
                .find(|l| l.contains("could not be evicted"));
            async move { Ok::<_, anyhow::Error>(line) }
        },
    )
    .await?;
    // Two more runs find the budget exhausted and plan nothing for web.
    let runs = r.metric("podplace_rebalance_runs_total", &[]).await?;
    r.wait_metric(
        "podplace_rebalance_runs_total",
        &[],
        runs + 2.0,
        Duration::from_secs(30),
    )
    .await?;
    let kept = r
        .lines()
        .into_iter()
        .rev()
        .find(|l| l.starts_with("nothing to evict"))
        .unwrap_or_default();
    ensure!(
        kept.contains("nominated pod(s) left in place"),
        "a run after the refusal does not say web's pods are left in place: {kept:?}\n{}",
        r.output()
    );
    let audit = read_audit(&audit_log)?;
    let tries: Vec<&AuditEvent> = audit
        .iter()
        .filter(|e| e.eviction() && e.name.starts_with("web-") && e.at > ts(pdb_at))
        .collect();
    ensure!(
        tries.len() == 3 && tries.iter().all(|e| e.code == 429),
        "evictions of web pods after the PDB (want 3 refused with 429): {tries:#?}"
    );
    ensure!(
        blocked == 3.0,
        "podplace_rebalance_evictions_total{{result=\"blocked\"}} is {blocked}, it sent 3 eviction requests refused with 429"
    );
    let gone_web = gone(&web, &app_pods(&client, NS, "web").await?);
    ensure!(
        gone_web.len() == 1,
        "{} web pods were evicted, only the one before the PDB may be",
        gone_web.len()
    );
    let msg = format!(
        "PDB: {} eviction requests refused with 429 after it appeared, {blocked} counted as blocked; reported: {}; later runs: {kept}",
        tries.len(),
        report.trim()
    );
    eprintln!("{msg}");
    live.note(&msg);
    drop(r);
    drop(sim);
    drop(cp);
    Ok(())
}

/// podplace evicts the pod it saw, not one created since under its name (a
/// StatefulSet's replacement): its evictions carry a UID precondition, which
/// the real server refuses with 409 for the newcomer (podplace: the planned
/// pod is gone) and honours for the pod itself.
pub async fn eviction_of_a_pod_replaced_under_its_name_is_refused(live: &Live) -> Result<()> {
    let nodes = live.add_simple_nodes("rebal-uid", 1, 1, "2", "4Gi").await?;
    let ns = live.namespace("rebal-uid").await?;
    let api: Api<Pod> = Api::namespaced(live.client.clone(), &ns);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "same", "labels": {"app": "same"}},
        "spec": {"nodeName": nodes[0],
                 "containers": [{"name": "c", "image": "registry.example/c:1"}]},
    }))?;
    let first = api.create(&PostParams::default(), &pod).await?;
    let first_uid = first.metadata.uid.clone().context("no uid")?;
    live.wait_pod_ready(&ns, "same").await?;
    api.delete("same", &kube::api::DeleteParams::default().grace_period(0))
        .await?;
    let second = wait_until("a second pod named same", SETTLE, POLL, || {
        let (api, pod) = (api.clone(), pod.clone());
        async move {
            match api.create(&PostParams::default(), &pod).await {
                Ok(p) => Ok::<_, kube::Error>(Some(p)),
                // The first is still being removed.
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
                Err(e) => Err(e),
            }
        }
    })
    .await?;
    let second_uid = second.metadata.uid.clone().context("no uid")?;
    ensure!(first_uid != second_uid, "the same uid twice");
    live.wait_pod_ready(&ns, "same").await?;

    // What the real server answers an eviction for the first pod's uid.
    // (kube-rs 5's Api::evict sends EvictParams' delete options as
    // "delete_options", which the server ignores: the body is written out.)
    let body = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "same", "namespace": ns},
        "deleteOptions": {"preconditions": {"uid": first_uid}},
    });
    let answer = api
        .create_subresource::<_, kube::core::Status>(
            "eviction",
            "same",
            &PostParams::default(),
            &body,
        )
        .await;
    match answer {
        Err(kube::Error::Api(s)) => ensure!(
            s.code == 409
                && s.reason == "Conflict"
                && s.message.contains("the UID in the precondition"),
            "the server answered {s:?}"
        ),
        other => anyhow::bail!("evicting with a stale uid: {other:?}"),
    }
    let got = podplace_kube::evict_uid(&live.client, &ns, "same", &first_uid, false).await?;
    ensure!(
        got == podplace_kube::EvictionOutcome::Gone,
        "podplace's answer to a stale uid: {got:?}"
    );
    let still = api.get("same").await?;
    ensure!(
        still.metadata.uid.as_deref() == Some(second_uid.as_str())
            && still.metadata.deletion_timestamp.is_none(),
        "the newcomer was touched: {:?}",
        still.metadata
    );
    let got = podplace_kube::evict_uid(&live.client, &ns, "same", &second_uid, false).await?;
    ensure!(
        got == podplace_kube::EvictionOutcome::Evicted,
        "evicting the pod by its own uid: {got:?}"
    );
    Ok(())
}

/// One GET of `/healthz`, kept with the time since `t0`.
async fn sample(
    r: &Rebalancer,
    t0: Instant,
    samples: &mut Vec<(Duration, u16, String)>,
) -> Result<()> {
    let (code, body) = r.get("/healthz").await?;
    samples.push((t0.elapsed(), code, body.trim().to_string()));
    Ok(())
}

/// Waits until one of `collapsed` (the `app` pods before podplace ran) is
/// evicted (terminating or gone); returns its name.
async fn first_eviction(
    client: &Client,
    app: &str,
    collapsed: &BTreeMap<String, (String, String)>,
) -> Result<String> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let lp = ListParams::default().labels(&format!("app={app}"));
    Ok(wait_until(
        format_args!("podplace's first eviction of an {app} pod"),
        Duration::from_secs(60),
        Duration::from_millis(50),
        || {
            let (api, lp) = (api.clone(), lp.clone());
            async move {
                let pods = api.list(&lp).await?.items;
                let live: BTreeMap<String, bool> = pods
                    .iter()
                    .filter_map(|p| {
                        Some((
                            p.metadata.uid.clone()?,
                            p.metadata.deletion_timestamp.is_some(),
                        ))
                    })
                    .collect();
                Ok::<_, kube::Error>(
                    collapsed
                        .iter()
                        .find(|(uid, _)| live.get(*uid).is_none_or(|terminating| *terminating))
                        .map(|(_, (name, _))| name.clone()),
                )
            }
        },
    )
    .await?)
}

/// A PodDisruptionBudget that allows no disruption of the `app` pods.
async fn create_pdb(client: &Client, app: &str) -> Result<()> {
    let pdb: PodDisruptionBudget = serde_json::from_value(serde_json::json!({
        "metadata": {"name": app},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": app}}},
    }))?;
    Api::<PodDisruptionBudget>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pdb)
        .await
        .with_context(|| format!("creating PodDisruptionBudget {app}"))?;
    Ok(())
}

/// One request podplace made, from the API server's audit log.
#[derive(Debug)]
struct AuditEvent {
    at: Timestamp,
    verb: String,
    resource: String,
    subresource: String,
    name: String,
    code: i64,
}

impl AuditEvent {
    fn eviction(&self) -> bool {
        self.verb == "create" && self.resource == "pods" && self.subresource == "eviction"
    }
}

fn ts(t: SystemTime) -> Timestamp {
    Timestamp::try_from(t).unwrap_or(Timestamp::MIN)
}

/// podplace's requests (the audit policy records no one else's), in the
/// order the server received them.
fn read_audit(path: &Path) -> Result<Vec<AuditEvent>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut events = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("an audit line: {line}"))?;
        if v["user"]["username"] != USER {
            continue;
        }
        let s = |p: &serde_json::Value| p.as_str().unwrap_or("").to_string();
        events.push(AuditEvent {
            at: v["requestReceivedTimestamp"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .with_context(|| format!("no requestReceivedTimestamp in {line}"))?,
            verb: s(&v["verb"]),
            resource: s(&v["objectRef"]["resource"]),
            subresource: s(&v["objectRef"]["subresource"]),
            name: s(&v["objectRef"]["name"]),
            code: v["responseStatus"]["code"].as_i64().unwrap_or(0),
        });
    }
    events.sort_by_key(|e| e.at);
    Ok(events)
}
