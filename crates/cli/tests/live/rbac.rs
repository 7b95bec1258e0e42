//! Check 5 of the live suite, least privilege for real: the chart rendered
//! by the real helm (which also lints it), its ServiceAccount, ClusterRole,
//! Role and bindings applied with kubectl, and `podplace rebalance
//! --execute` run with a token of that ServiceAccount against a collapsed
//! Deployment: the run succeeds with every request allowed, and
//! SelfSubjectAccessReviews with the same token prove what it may not do:
//! among others, read or renew any Lease but its own (kube-scheduler's, in
//! the same namespace), which real requests confirm while podplace's own
//! leader election with that token holds its Lease.
//!
//! The chart's other safety defaults are checked on helm's rendering:
//! reporting only unless `execute` is set, `listenAddress`, a startupProbe,
//! a PodDisruptionBudget for podplace itself, the image pinnable by digest.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::PostParams;
use kube::Api;
use podplace_kube::{LeaderElector, LeaderState, LeaseConfig};
use serde_json::{json, Value};

use crate::support::*;
use crate::why::uncordon;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        chart_rbac_runs_rebalance_and_nothing_more,
        chart_defaults_report_and_pin
    ]
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

pub(crate) fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/podplace")
}

/// Runs the real helm; fails with its output when it exits non-zero.
pub(crate) fn helm(live: &Live, args: &[&str]) -> Result<String> {
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
    let checks: [(&str, &str, &str, &str, &str, bool); 29] = [
        // (verb, group, resource, subresource, namespace, allowed)
        ("create", "", "pods", "eviction", &app, true),
        ("list", "", "pods", "", "", true),
        ("list", "", "nodes", "", "", true),
        // Volumes and DRA claims: read and watched, never written.
        ("list", "", "persistentvolumes", "", "", true),
        ("list", "", "persistentvolumeclaims", "", "", true),
        ("list", "storage.k8s.io", "storageclasses", "", "", true),
        ("list", "storage.k8s.io", "csinodes", "", "", true),
        ("list", "storage.k8s.io", "csidrivers", "", "", true),
        (
            "list",
            "storage.k8s.io",
            "csistoragecapacities",
            "",
            "",
            true,
        ),
        ("list", "resource.k8s.io", "resourceclaims", "", "", true),
        ("list", "resource.k8s.io", "deviceclasses", "", "", true),
        ("list", "resource.k8s.io", "resourceslices", "", "", true),
        ("update", "", "persistentvolumeclaims", "", &app, false),
        // Watched by `podplace serve`, as every kind it reads.
        ("watch", "", "persistentvolumes", "", "", true),
        (
            "update",
            "resource.k8s.io",
            "resourceclaims",
            "status",
            &app,
            false,
        ),
        ("delete", "", "pods", "", &app, false),
        ("delete", "", "pods", "", "", false),
        ("get", "", "secrets", "", &app, false),
        ("list", "", "secrets", "", "", false),
        ("get", "", "secrets", "", ns, false),
        ("patch", "apps", "deployments", "", &app, false),
        ("patch", "apps", "statefulsets", "", &app, false),
        ("update", "apps", "deployments", "", &app, false),
        ("watch", "", "pods", "", "", true),
        // serve's Events: created and patched (a series), never read,
        // deleted or written through the core API.
        ("create", "events.k8s.io", "events", "", &app, true),
        ("patch", "events.k8s.io", "events", "", &app, true),
        ("list", "events.k8s.io", "events", "", &app, false),
        ("delete", "events.k8s.io", "events", "", &app, false),
        ("create", "", "events", "", &app, false),
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
    leases_but_its_own_are_out_of_reach(live, &reviews, &kc, ns, &sa).await
}

/// One SelfSubjectAccessReview: may the token `verb` the object?
pub(crate) async fn may(
    reviews: &Api<SelfSubjectAccessReview>,
    verb: &str,
    (group, resource): (&str, &str),
    namespace: &str,
    name: &str,
) -> Result<bool> {
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "verb": verb, "group": group, "resource": resource,
            "namespace": namespace, "name": name,
        }},
    }))?;
    Ok(reviews
        .create(&PostParams::default(), &review)
        .await
        .with_context(|| format!("SelfSubjectAccessReview {verb} {resource} {name:?}"))?
        .status
        .map(|s| s.allowed)
        .unwrap_or(false))
}

/// The chart's Role reaches its own Lease (named as the release, the
/// `--lease` the Deployment passes) and no other: kube-scheduler's Lease in
/// the same namespace can be neither read nor renewed, as the reviews say
/// and real requests show, while podplace's own election works.
async fn leases_but_its_own_are_out_of_reach(
    live: &Live,
    reviews: &Api<SelfSubjectAccessReview>,
    kubeconfig: &Path,
    ns: &str,
    own: &str,
) -> Result<()> {
    let leases = ("coordination.k8s.io", "leases");
    let checks: [(&str, &str, &str, bool); 9] = [
        // (verb, namespace, name, allowed)
        ("get", ns, own, true),
        ("update", ns, own, true),
        // create cannot be limited by name.
        ("create", ns, "", true),
        ("get", ns, "kube-scheduler", false),
        ("update", ns, "kube-scheduler", false),
        ("update", ns, "kube-controller-manager", false),
        ("delete", ns, own, false),
        ("list", ns, "", false),
        ("update", "kube-system", own, false),
    ];
    let mut wrong = Vec::new();
    for (verb, namespace, name, want) in checks {
        let got = may(reviews, verb, leases, namespace, name).await?;
        live.note(format!("may {verb} lease {namespace}/{name}: {got}"));
        if got != want {
            wrong.push(format!(
                "{verb} lease {namespace}/{name}: allowed={got}, want {want}"
            ));
        }
    }
    ensure!(wrong.is_empty(), "the chart's Role: {}", wrong.join("; "));

    // kube-scheduler's Lease, as the admin creates it; the token may
    // neither read nor take it.
    let admin: Api<Lease> = Api::namespaced(live.client.clone(), ns);
    let mut theirs: Lease = serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-scheduler"},
        "spec": {"holderIdentity": "kube-scheduler-0", "leaseDurationSeconds": 15},
    }))?;
    theirs = admin.create(&PostParams::default(), &theirs).await?;
    let client = kube::Client::try_from(podplace_envtest::config_from(kubeconfig).await?)?;
    let as_sa: Api<Lease> = Api::namespaced(client.clone(), ns);
    let code = |e: kube::Error| match e {
        kube::Error::Api(s) => s.code,
        _ => 0,
    };
    let got = as_sa.get("kube-scheduler").await.map_err(code).err();
    ensure!(
        got == Some(403),
        "get kube-scheduler's Lease: {got:?}, want 403"
    );
    theirs
        .spec
        .get_or_insert_with(Default::default)
        .holder_identity = Some(own.to_string());
    let got = as_sa
        .replace("kube-scheduler", &PostParams::default(), &theirs)
        .await
        .map_err(code)
        .err();
    ensure!(
        got == Some(403),
        "update kube-scheduler's Lease: {got:?}, want 403"
    );

    // Its own election, with the same token: created, then renewed.
    let sa = podplace_kube::connect(&podplace_kube::ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        context: None,
    })
    .await?;
    let mut elector = LeaderElector::new(sa, LeaseConfig::new(ns, own, "rbac-test"))?;
    for round in ["create", "renew"] {
        let state = elector.try_acquire_or_renew().await?;
        ensure!(
            matches!(state, LeaderState::Leader { .. }),
            "{round} of its own Lease {ns}/{own}: {state:?}"
        );
    }
    elector.release().await?;
    let still = admin.get("kube-scheduler").await?;
    ensure!(
        still.spec.and_then(|s| s.holder_identity).as_deref() == Some("kube-scheduler-0"),
        "kube-scheduler's Lease changed hands"
    );
    Ok(())
}

/// Renders the chart with `args` (`--set` pairs) for release `r` in
/// namespace `ns`: its documents.
pub(crate) fn render(live: &Live, chart: &str, sets: &[&str]) -> Result<Vec<Value>> {
    let mut args = vec!["template", "r", chart, "--namespace", "ns"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let rendered = helm(live, &args)?;
    serde_saphyr::from_multiple(&rendered).context("parsing helm template's output")
}

pub(crate) fn kind<'a>(docs: &'a [Value], kind: &str) -> Option<&'a Value> {
    docs.iter().find(|d| d["kind"] == kind)
}

/// The podplace container of the rendered Deployment.
pub(crate) fn container(docs: &[Value]) -> Result<&Value> {
    kind(docs, "Deployment")
        .map(|d| &d["spec"]["template"]["spec"]["containers"][0])
        .context("no Deployment rendered")
}

pub(crate) fn args_of(docs: &[Value]) -> Result<Vec<String>> {
    Ok(container(docs)?["args"]
        .as_array()
        .context("no args")?
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect())
}

/// The value following `flag` in the args.
pub(crate) fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

async fn chart_defaults_report_and_pin(live: &Live) -> Result<()> {
    let chart = chart().display().to_string();

    // The defaults: a report, never an eviction; probes with a startup
    // grace; podplace's own PodDisruptionBudget; the Role limited to the
    // Lease the Deployment names.
    let docs = render(live, &chart, &[])?;
    let args = args_of(&docs)?;
    ensure!(
        !args.iter().any(|a| a == "--execute"),
        "evicts by default: {args:?}"
    );
    ensure!(flag(&args, "--listen") == Some("0.0.0.0:8080"), "{args:?}");
    ensure!(flag(&args, "--lease") == Some("ns/r-podplace"), "{args:?}");
    let c = container(&docs)?;
    ensure!(
        c["image"] == "ghcr.io/podplace/podplace:0.1.0",
        "image {}",
        c["image"]
    );
    // Ready (serve) only after the initial sync.
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        ensure!(c[probe]["httpGet"]["path"] == path, "{probe}: {}", c[probe]);
    }
    let pdb = kind(&docs, "PodDisruptionBudget").context("no PodDisruptionBudget")?;
    ensure!(pdb["spec"]["maxUnavailable"] == 1, "{pdb}");
    ensure!(
        pdb["spec"]["selector"]["matchLabels"]
            == kind(&docs, "Deployment").context("no Deployment")?["spec"]["selector"]
                ["matchLabels"],
        "the PodDisruptionBudget does not select podplace's pods: {pdb}"
    );
    let role = kind(&docs, "Role").context("no Role")?;
    ensure!(
        role["rules"]
            == json!([
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                 "resourceNames": ["r-podplace"], "verbs": ["get", "update"]},
            ]),
        "Role rules: {}",
        role["rules"]
    );

    // Acting, a listen address, a pinned image, one replica (no budget
    // that would block every drain).
    let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
    let docs = render(
        live,
        &chart,
        &[
            "execute=true",
            "listenAddress=127.0.0.1",
            &format!("image.digest={digest}"),
            "replicas=1",
        ],
    )?;
    let args = args_of(&docs)?;
    ensure!(args.iter().any(|a| a == "--execute"), "{args:?}");
    ensure!(
        flag(&args, "--listen") == Some("127.0.0.1:8080"),
        "{args:?}"
    );
    let image = &container(&docs)?["image"];
    ensure!(
        *image == format!("ghcr.io/podplace/podplace@{digest}"),
        "image {image}"
    );
    ensure!(
        kind(&docs, "PodDisruptionBudget").is_none(),
        "a budget for one replica"
    );

    // A digest that is not one is refused by name.
    let bad = render(live, &chart, &["image.digest=latest"]);
    let message = format!("{:#}", bad.err().context("image.digest=latest rendered")?);
    ensure!(
        message.contains("image.digest \"latest\" is not a digest"),
        "{message}"
    );
    Ok(())
}
