//! Section 4 of issue 10, live: `podplace rebalance --execute --interval`
//! processes with a ServiceAccount's token (the chart's ClusterRole rules,
//! and a Role for the Lease when the test grants it) against the real API
//! server:
//! - the Lease's namespace forbidden (403): `/healthz` turns 503 with the
//!   reason once the election has failed for a lease duration, runs count
//!   as `error` (never `not_leader`), and the election's warning is logged
//!   once, not every round;
//! - a token that stops working (its ServiceAccount deleted: 401 once
//!   kube-apiserver's 10 s token cache lets go of it): the same;
//! - a replica that takes over an expired Lease runs at once, not an
//!   `--interval` (5m) later, and its idle `--execute` run says "nothing to
//!   evict", never "(dry run)".
//!
//! Each process is killed by its PID when the test ends, also on failure;
//! `/healthz` and `/metrics` are polled with deadlines.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, ensure, Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use serde_json::json;

use crate::rebalance::daemon::{holder, Rebalancer};
use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        forbidden_lease_namespace_turns_healthz_503_and_counts_errors,
        revoked_token_turns_healthz_503_and_counts_errors,
        new_leader_runs_at_once_and_an_idle_execute_run_says_nothing_to_evict,
    ]
}

/// The Lease every process of this module elects on (in a namespace of the
/// test's).
const LEASE: &str = "podplace-rebalancer";
/// The ServiceAccount the processes run as.
const SA: &str = "rebalancer";
/// Short election timing (client-go's checks hold: 0.5 s × 1.2 < 2 s < 3 s),
/// so failures show within seconds.
const LEASE_DURATION: Duration = Duration::from_secs(3);
const TIMING: [&str; 6] = [
    "--lease-duration",
    "3s",
    "--renew-deadline",
    "2s",
    "--retry-period",
    "500ms",
];
/// How much later than the lease duration `/healthz` may turn on 2 loaded
/// cores (a round and a poll).
const SLACK: Duration = Duration::from_secs(10);
/// How long kube-apiserver goes on accepting a token it has accepted
/// (its token cache's TokenSuccessCacheTTL, fixed at 10 s): a deleted
/// ServiceAccount's token works that much longer.
const TOKEN_CACHE: Duration = Duration::from_secs(10);
/// What the election logs when a round fails.
const ELECTION_WARNING: &str = "warning: leader election: ";
const RUNS: &str = "podplace_rebalance_runs_total";

async fn forbidden_lease_namespace_turns_healthz_503_and_counts_errors(live: &Live) -> Result<()> {
    let scratch = Scratch::new("health-403")?;
    let creds = Creds::create(live, &scratch, false).await?;
    let outcome = async {
        let lease = format!("{}/{LEASE}", creds.lease_ns);
        let p = Rebalancer::spawn(&creds.kubeconfig, "health-403", &[&["--execute", "--interval", "2s", "--lease", &lease, "-n", &creds.ns], &TIMING[..]].concat(), &live.timeline)
        .await?;
        let body = p.wait_healthz(503, "", LEASE_DURATION + SLACK).await?;
        let after = p.started().elapsed();
        ensure!(
            after >= LEASE_DURATION,
            "/healthz turned 503 {:.1}s after start, before the election had failed for a lease duration",
            after.as_secs_f64()
        );
        live.note(format!(
            "health-403: /healthz 503 {:.1}s after start: {}",
            after.as_secs_f64(),
            body.trim()
        ));
        ensure!(
            body.starts_with("unhealthy: leader election has failed for ")
                && body.contains(&format!(
                    "leases.coordination.k8s.io \"{LEASE}\" is forbidden: User \"system:serviceaccount:{}:{SA}\"",
                    creds.ns
                )),
            "/healthz does not give the 403 as the reason: {body}\n{}",
            p.output()
        );
        // Several runs, every one an error (whether it leads is unknown).
        p.wait_metric(RUNS, &[("result", "error")], 3.0, Duration::from_secs(30))
            .await?;
        ensure_no_runs_but_errors(&p).await?;
        ensure!(
            p.metric("podplace_rebalance_leader", &[]).await? == 0.0,
            "it says it leads:\n{}",
            p.output()
        );
        // Over those runs (a dozen election rounds), the 403 was logged once.
        let warnings = p.count(ELECTION_WARNING);
        ensure!(
            warnings == 1,
            "the election's 403 was logged {warnings} times over {:.1}s, not once:\n{}",
            p.started().elapsed().as_secs_f64(),
            p.output()
        );
        Ok(())
    }
    .await;
    outcome.and(creds.remove(live).await)
}

async fn revoked_token_turns_healthz_503_and_counts_errors(live: &Live) -> Result<()> {
    let scratch = Scratch::new("health-401")?;
    let creds = Creds::create(live, &scratch, true).await?;
    let outcome = async {
        let lease = format!("{}/{LEASE}", creds.lease_ns);
        let mut p = Rebalancer::spawn(&creds.kubeconfig, "health-401", &[
                &["--execute", "--interval", "2s", "--lease", &lease, "-n", &creds.ns],
                &TIMING[..],
            ]
            .concat(), &live.timeline)
        .await?;
        // It works with the token: it leads, runs, and is healthy.
        p.wait_metric(RUNS, &[("result", "ok")], 1.0, Duration::from_secs(30))
            .await?;
        ensure!(
            holder(&live.client, &creds.lease_ns, LEASE).await?.as_deref() == Some("health-401"),
            "health-401 does not hold the Lease:\n{}",
            p.output()
        );
        p.wait_healthz(200, "ok", Duration::from_secs(10)).await?;

        // The token stops working: its ServiceAccount is deleted.
        let sas: Api<ServiceAccount> = Api::namespaced(live.client.clone(), &creds.ns);
        sas.delete(SA, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting ServiceAccount {}/{SA}", creds.ns))?;
        let revoked = Instant::now();
        live.note(format!("deleted ServiceAccount {}/{SA}", creds.ns));
        let errors_before = p.metric(RUNS, &[("result", "error")]).await?;
        // kube-apiserver keeps a token it has accepted valid for 10 s (its
        // token cache, TokenSuccessCacheTTL): the 401s start then.
        let (refused_at, _) = p
            .wait_line("401 Unauthorized", TOKEN_CACHE + SLACK)
            .await?;
        let refused = Instant::now();
        let body = p.wait_healthz(503, "", LEASE_DURATION + SLACK).await?;
        live.note(format!(
            "health-401: the token refused {:.1}s after the ServiceAccount was deleted, /healthz 503 {:.1}s after that: {}",
            (p.started() + refused_at).saturating_duration_since(revoked).as_secs_f64(),
            refused.elapsed().as_secs_f64(),
            body.trim()
        ));
        ensure!(
            body.contains("401 Unauthorized"),
            "/healthz does not give the 401 as the reason: {body}\n{}",
            p.output()
        );
        // Runs fail, counted as errors, and it never counts a run as
        // not_leader (the issue: an expired token looked like a follower).
        p.wait_metric(
            RUNS,
            &[("result", "error")],
            errors_before + 2.0,
            Duration::from_secs(30),
        )
        .await?;
        let body = p
            .wait_healthz(503, "leader election has failed", LEASE_DURATION + SLACK)
            .await?;
        ensure!(
            body.starts_with("unhealthy: leader election has failed for ")
                && body.contains("401 Unauthorized"),
            "/healthz, once the election has failed for a lease duration: {body}\n{}",
            p.output()
        );
        ensure!(
            p.metric(RUNS, &[("result", "not_leader")]).await? == 0.0
                && p.metric("podplace_rebalance_leader", &[]).await? == 0.0,
            "runs counted as not_leader, or it still says it leads:\n{}",
            p.output()
        );
        // The election's failure is logged when it starts (and when its
        // text changes: renewing, then reading the Lease), not every round.
        let warnings = p.count(ELECTION_WARNING);
        let rounds_later = p.metric(RUNS, &[("result", "error")]).await? + 2.0;
        p.wait_metric(
            RUNS,
            &[("result", "error")],
            rounds_later,
            Duration::from_secs(30),
        )
        .await?;
        ensure!(
            (1..=2).contains(&warnings) && p.count(ELECTION_WARNING) == warnings,
            "the election's 401 was logged {warnings} times, then {} after 8 more rounds:\n{}",
            p.count(ELECTION_WARNING),
            p.output()
        );
        Ok(())
    }
    .await;
    outcome.and(creds.remove(live).await)
}

async fn new_leader_runs_at_once_and_an_idle_execute_run_says_nothing_to_evict(
    live: &Live,
) -> Result<()> {
    let scratch = Scratch::new("health-takeover")?;
    let creds = Creds::create(live, &scratch, true).await?;
    let outcome = async {
        // Something runs, and nothing is to be done about it.
        live.add_simple_nodes("health", 1, 1, "2", "4Gi").await?;
        live.apply_yaml(&creds.ns, IDLE).await?;
        live.wait_deployment_available(&creds.ns, "idle").await?;
        // A holder that is gone: its Lease is fresh now, and expires 3 s
        // after the new replica first sees it.
        let leases: Api<Lease> = Api::namespaced(live.client.clone(), &creds.ns);
        let now = k8s_openapi::jiff::Timestamp::now();
        let ghost: Lease = serde_json::from_value(json!({
            "metadata": {"name": LEASE},
            "spec": {
                "holderIdentity": "gone-replica",
                "leaseDurationSeconds": 3,
                "acquireTime": now,
                "renewTime": now,
            },
        }))?;
        leases
            .create(&PostParams::default(), &ghost)
            .await
            .context("creating the gone replica's Lease")?;

        let lease = format!("{}/{LEASE}", creds.lease_ns);
        let mut p = Rebalancer::spawn(&creds.kubeconfig, "health-new", &[
                &["--execute", "--interval", "5m", "--lease", &lease, "-n", &creds.ns],
                &TIMING[..],
            ]
            .concat(), &live.timeline)
        .await?;
        // Its first run finds the Lease held: nothing done.
        p.wait_metric(RUNS, &[("result", "not_leader")], 1.0, Duration::from_secs(30))
            .await?;
        // It takes the expired Lease over, and runs at once.
        let (leading_at, _) = p
            .wait_line("leader election: leading", Duration::from_secs(30))
            .await?;
        let (ran_at, ran) = p
            .wait_line("nothing to evict", Duration::from_secs(30))
            .await?;
        live.note(format!(
            "health-new: leading {:.2}s after start, its first run's line {:.2}s after that",
            leading_at.as_secs_f64(),
            (ran_at.saturating_sub(leading_at)).as_secs_f64()
        ));
        ensure!(
            ran_at >= leading_at && ran_at - leading_at < Duration::from_secs(5),
            "the new leader's first run came {:.1}s after it took the Lease, not at once (--interval 5m):\n{}",
            ran_at.as_secs_f64() - leading_at.as_secs_f64(),
            p.output()
        );
        ensure!(
            ran.trim() == "nothing to evict",
            "the idle --execute run says {ran:?}, not \"nothing to evict\""
        );
        ensure!(
            p.count("(dry run)") == 0 && p.count("dry run") == 0,
            "an --execute process mentions a dry run:\n{}",
            p.output()
        );
        ensure!(
            holder(&live.client, &creds.lease_ns, LEASE).await?.as_deref() == Some("health-new"),
            "health-new does not hold the Lease:\n{}",
            p.output()
        );
        p.wait_metric(RUNS, &[("result", "ok")], 1.0, Duration::from_secs(10))
            .await?;
        ensure!(
            p.metric(RUNS, &[("result", "error")]).await? == 0.0
                && p.metric("podplace_rebalance_leader", &[]).await? == 1.0,
            "after taking over: errors, or not leading:\n{}",
            p.output()
        );
        p.wait_healthz(200, "ok", Duration::from_secs(10)).await?;
        Ok(())
    }
    .await;
    outcome.and(creds.remove(live).await)
}

/// One replica of a Deployment that needs nothing done.
const IDLE: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: idle
spec:
  replicas: 1
  selector:
    matchLabels: {app: idle}
  template:
    metadata:
      labels: {app: idle}
    spec:
      containers:
      - name: idle
        image: registry.k8s.io/pause:3.10
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"#;

/// ServiceAccount `NS/rebalancer` with what a run needs — the chart's
/// ClusterRole rules, bound cluster-wide — and, when granted, a Role for
/// the Lease in `NS`; without it the Lease lives in a namespace of its own
/// where the account may do nothing.
struct Creds {
    /// Where the account, the workloads and (granted) the Lease are.
    ns: String,
    /// The Lease's namespace.
    lease_ns: String,
    /// A kubeconfig with the account's token.
    kubeconfig: PathBuf,
    /// The ClusterRole and ClusterRoleBinding (cluster-scoped: removed by
    /// [`Creds::remove`], not by the namespace cleanup).
    cluster_rbac: String,
}

impl Creds {
    async fn create(live: &Live, scratch: &Scratch, lease_granted: bool) -> Result<Creds> {
        let ns = live.namespace("health").await?;
        let lease_ns = if lease_granted {
            ns.clone()
        } else {
            live.namespace("health-lease").await?
        };
        let cluster_rbac = format!("podplace-live-{ns}");
        let chart = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../charts/podplace/templates/clusterrole.yaml");
        let text = std::fs::read_to_string(&chart)
            .with_context(|| format!("reading {}", chart.display()))?;
        let rules = text
            .find("\nrules:")
            .map(|i| &text[i + 1..])
            .filter(|r| !r.contains("{{"))
            .with_context(|| format!("{} has no plain `rules:` at its end", chart.display()))?;
        let mut yaml = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {cluster_rbac}\n{rules}"
        );
        let sa = json!({"kind": "ServiceAccount", "name": SA, "namespace": ns});
        let docs = [
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA}}),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": cluster_rbac},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_rbac},
                "subjects": [sa],
            }),
        ];
        let lease_rbac = [
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "lease"},
                "rules": [{
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "create", "update"],
                }],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "lease"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
                "subjects": [sa],
            }),
        ];
        let granted = if lease_granted { &lease_rbac[..] } else { &[] };
        for d in docs.iter().chain(granted) {
            yaml.push_str(&format!("\n---\n{d}\n"));
        }
        let creds = Creds {
            kubeconfig: PathBuf::new(),
            ns,
            lease_ns,
            cluster_rbac,
        };
        let made = async {
            live.apply_yaml(&creds.ns, &yaml).await?;
            live.service_account_kubeconfig(&creds.ns, SA, &scratch.0)
                .await
        }
        .await;
        match made {
            Ok(kubeconfig) => Ok(Creds {
                kubeconfig,
                ..creds
            }),
            Err(e) => {
                if let Err(r) = creds.remove(live).await {
                    live.note(format!("health: {r:#}"));
                }
                Err(e)
            }
        }
    }

    /// Deletes the ClusterRole and its binding.
    async fn remove(&self, live: &Live) -> Result<()> {
        let roles: Api<ClusterRole> = Api::all(live.client.clone());
        let bindings: Api<ClusterRoleBinding> = Api::all(live.client.clone());
        for r in [
            bindings
                .delete(&self.cluster_rbac, &DeleteParams::default())
                .await
                .map(|_| ()),
            roles
                .delete(&self.cluster_rbac, &DeleteParams::default())
                .await
                .map(|_| ()),
        ] {
            match r {
                Ok(()) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(anyhow!(e).context(format!(
                        "deleting ClusterRole(Binding) {}",
                        self.cluster_rbac
                    )))
                }
            }
        }
        Ok(())
    }
}

/// Fails unless every run of `p` so far counted as an error.
async fn ensure_no_runs_but_errors(p: &Rebalancer) -> Result<()> {
    for result in ["ok", "deviated", "not_leader"] {
        let n = p.metric(RUNS, &[("result", result)]).await?;
        ensure!(
            n == 0.0,
            "podplace[{}] counted {n} run(s) as {result}:\n{}",
            p.identity,
            p.output()
        );
    }
    Ok(())
}
