//! Check 5 of the live suite, least privilege for real: the chart rendered
//! by the real helm (which also lints it), its ServiceAccount, ClusterRole,
//! Role and bindings applied with kubectl, and `podplace rebalance
//! --execute` run with a token of that ServiceAccount against a collapsed
//! Deployment: the run succeeds with every request allowed, and
//! SelfSubjectAccessReviews with the same token prove what it may not do.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};

use crate::support::*;
use crate::why::uncordon;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![chart_rbac_runs_rebalance_and_nothing_more]
}

/// The kinds of the chart applied here: all but the Deployment (there is no
/// kubelet to run it), its Service and ConfigMap.
const RBAC_KINDS: [&str; 5] = [
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/podplace")
}

/// Runs the real helm; fails with its output when it exits non-zero.
fn helm(live: &Live, args: &[&str]) -> Result<String> {
    let helm = podplace_envtest::helm()?;
    live.note(format!("helm {}", args.join(" ")));
    let out = Command::new(&helm)
        .args(args)
        .output()
        .with_context(|| format!("running {}", helm.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "helm {} failed ({}): {stdout}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// A Deployment of 2 whose pods prefer different nodes (weight 100); one
/// may be unavailable (the default 25% of 2 rounds down to none, and the
/// plan never goes below what the rollout strategy allows).
const SPREAD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: spread
spec:
  replicas: 2
  strategy:
    rollingUpdate: {maxUnavailable: 1}
  selector:
    matchLabels: {app: spread}
  template:
    metadata:
      labels: {app: spread}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchLabels: {app: spread}
              topologyKey: kubernetes.io/hostname
      containers:
      - name: app
        image: registry.example/spread:1
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"#;

async fn chart_rbac_runs_rebalance_and_nothing_more(live: &Live) -> Result<()> {
    let chart = chart().display().to_string();
    let lint = helm(live, &["lint", &chart])?;
    ensure!(
        lint.contains("0 chart(s) failed"),
        "helm lint did not pass: {lint}"
    );

    // The chart's RBAC, rendered for a release named after the namespace
    // (its ClusterRole and binding are cluster-wide: unique names, removed
    // at the end).
    let ns = live.namespace("rbac").await?;
    let release = ns.clone();
    let rendered = helm(live, &["template", &release, &chart, "--namespace", &ns])?;
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&rendered).context("parsing helm template's output")?;
    let rbac: Vec<&Value> = docs
        .iter()
        .filter(|d| RBAC_KINDS.iter().any(|k| d["kind"] == *k))
        .collect();
    for k in RBAC_KINDS {
        ensure!(
            rbac.iter().any(|d| d["kind"] == k),
            "helm template renders no {k}"
        );
    }
    let scratch = Scratch::new("rbac")?;
    let manifest = scratch.join("rbac.json");
    std::fs::write(
        &manifest,
        serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": rbac}))?,
    )?;
    let outcome = with_rbac(live, &ns, &release, &manifest, &scratch).await;
    let cluster_scoped = live.kubectl(&[
        "delete",
        "clusterrolebinding,clusterrole",
        &format!("{release}-podplace"),
        "--ignore-not-found",
    ]);
    outcome.and(cluster_scoped.map(|_| ()))
}

async fn with_rbac(
    live: &Live,
    ns: &str,
    release: &str,
    manifest: &Path,
    scratch: &Scratch,
) -> Result<()> {
    live.kubectl(&["apply", "-f", &manifest.display().to_string()])?;
    let sa = format!("{release}-podplace");

    // A collapsed world: both replicas on rbac-0 while rbac-1 is cordoned;
    // after the uncordon, the plan moves one to rbac-1.
    let mut second = node("rbac-1", "2", "4Gi", &[]);
    second
        .spec
        .get_or_insert_with(Default::default)
        .unschedulable = Some(true);
    live.add_nodes(vec![node("rbac-0", "2", "4Gi", &[]), second])
        .await?;
    let app = live.namespace("rbac-app").await?;
    live.apply_yaml(&app, SPREAD).await?;
    live.wait_deployment_available(&app, "spread").await?;
    uncordon(live, "rbac-1").await?;

    // The ServiceAccount's token (TokenRequest API, through kubectl).
    let token = live.kubectl(&["create", "token", &sa, "-n", ns])?;
    let token = String::from_utf8(token.stdout)?.trim().to_string();
    ensure!(!token.is_empty(), "kubectl create token printed nothing");
    let kc = scratch.join("sa.kubeconfig");
    live.cp
        .write_token_kubeconfig(&kc, &format!("system:serviceaccount:{ns}:{sa}"), &token)?;
    let kcs = kc.display().to_string();

    let (out, err, code) = live.podplace(
        &scratch.0,
        &[
            "rebalance",
            "--execute",
            "--kubeconfig",
            &kcs,
            "--poll-interval",
            "200ms",
            "--wait-timeout",
            "60s",
        ],
    );
    ensure!(
        code == 0,
        "rebalance --execute with the chart's ServiceAccount: exit {code}\n{out}{err}"
    );
    let all = format!("{out}{err}");
    let lower = all.to_lowercase();
    ensure!(
        !lower.contains("forbidden") && !all.contains("403") && !lower.contains("could not read"),
        "a request of the run was refused:\n{all}"
    );
    let evicted: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("executed: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no `executed:` line:\n{all}"))?;
    ensure!(evicted >= 1, "the run evicted nothing:\n{all}");
    // The real cluster agrees: one replica per node now.
    let mut nodes: Vec<String> = live
        .pods(&app)
        .await?
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| node_of(p).map(str::to_string))
        .collect();
    nodes.sort();
    ensure!(
        nodes == ["rbac-0", "rbac-1"],
        "after the run the replicas are on {nodes:?}"
    );

    // What the token may and may not do.
    let client = kube::Client::try_from(podplace_envtest::config_from(&kc).await?)?;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let checks: [(&str, &str, &str, &str, &str, bool); 12] = [
        // (verb, group, resource, subresource, namespace, allowed)
        ("create", "", "pods", "eviction", &app, true),
        ("list", "", "pods", "", "", true),
        ("list", "", "nodes", "", "", true),
        ("delete", "", "pods", "", &app, false),
        ("delete", "", "pods", "", "", false),
        ("get", "", "secrets", "", &app, false),
        ("list", "", "secrets", "", "", false),
        ("get", "", "secrets", "", ns, false),
        ("patch", "apps", "deployments", "", &app, false),
        ("patch", "apps", "statefulsets", "", &app, false),
        ("update", "apps", "deployments", "", &app, false),
        ("watch", "", "pods", "", "", false),
    ];
    let mut wrong = Vec::new();
    for (verb, group, resource, sub, namespace, want) in checks {
        let review: SelfSubjectAccessReview = serde_json::from_value(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "verb": verb, "group": group, "resource": resource,
                "subresource": sub, "namespace": namespace,
            }},
        }))?;
        let got = reviews
            .create(&PostParams::default(), &review)
            .await
            .with_context(|| format!("SelfSubjectAccessReview {verb} {resource}"))?
            .status
            .map(|s| s.allowed)
            .unwrap_or(false);
        let what = format!(
            "{verb} {}{resource}{}{}",
            if group.is_empty() {
                String::new()
            } else {
                format!("{group}/")
            },
            if sub.is_empty() {
                String::new()
            } else {
                format!("/{sub}")
            },
            if namespace.is_empty() {
                " (cluster-wide)".to_string()
            } else {
                format!(" in {namespace}")
            }
        );
        live.note(format!("may {what}: {got}"));
        if got != want {
            wrong.push(format!("{what}: allowed={got}, want {want}"));
        }
    }
    ensure!(
        wrong.is_empty(),
        "the chart's ServiceAccount: {}",
        wrong.join("; ")
    );
    Ok(())
}
