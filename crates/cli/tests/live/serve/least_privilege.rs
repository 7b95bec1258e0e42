//! serve with only the chart's RBAC: the ServiceAccount, ClusterRole, Role
//! and bindings helm renders, applied with kubectl, and serve run with a
//! token of that ServiceAccount on the chart's Lease: every watch syncs
//! (/readyz 200), the leader writes its PodplaceWhy Event, no request is
//! refused; and SelfSubjectAccessReviews with the same token show that
//! what serve does not need is not granted.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::Api;
use serde_json::{json, Value};

use super::*;
use crate::rbac::{chart, helm, may};

const RBAC_KINDS: [&str; 5] = [
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

pub async fn serve_runs_on_the_charts_rbac_and_nothing_more(live: &Live) -> Result<()> {
    let ns = live.namespace("serve-rbac").await?;
    let release = ns.clone();
    let chart = chart().display().to_string();
    let rendered = helm(live, &["template", &release, &chart, "--namespace", &ns])?;
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&rendered).context("parsing helm template's output")?;
    let rbac: Vec<&Value> = docs
        .iter()
        .filter(|d| RBAC_KINDS.iter().any(|k| d["kind"] == *k))
        .collect();
    let scratch = Scratch::new("serve-rbac")?;
    let manifest = scratch.join("rbac.json");
    std::fs::write(
        &manifest,
        serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": rbac}))?,
    )?;
    live.kubectl(&["apply", "-f", &manifest.display().to_string()])?;
    let outcome = with_rbac(live, &ns, &release, &scratch).await;
    let cluster_scoped = live.kubectl(&[
        "delete",
        "clusterrolebinding,clusterrole",
        &format!("{release}-podplace"),
        "--ignore-not-found",
    ]);
    outcome.and(cluster_scoped.map(|_| ()))
}

async fn with_rbac(live: &Live, ns: &str, release: &str, scratch: &Scratch) -> Result<()> {
    let sa = format!("{release}-podplace");
    let kc = live.service_account_kubeconfig(ns, &sa, &scratch.0).await?;
    live.add_simple_nodes("serve-rbac", 1, 1, "2", "4Gi")
        .await?;
    let app = live.namespace("serve-rbac-app").await?;
    live.apply_yaml(
        &app,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: stuck}\nspec:\n  \
         nodeSelector: {podplace-live/none: \"true\"}\n  \
         containers: [{name: c, image: registry.k8s.io/pause:3.10}]\n",
    )
    .await?;

    // The chart's Lease (the Role names it), as the Deployment passes it.
    let lease = format!("{ns}/{release}-podplace");
    let mut args = vec![
        "--lease",
        &lease,
        "--explain-after",
        "1s",
        "--tick",
        "500ms",
    ];
    args.extend(ELECTION);
    let serve = spawn_serve(&kc, "rbac", &args, &live.timeline).await?;
    wait_event(
        live,
        &app,
        ("Pod", "stuck"),
        "PodplaceWhy",
        Duration::from_secs(30),
    )
    .await
    .with_context(|| serve.output())?;
    let all = serve.output();
    let lower = all.to_lowercase();
    ensure!(
        !lower.contains("forbidden") && !all.contains(" 403"),
        "a request of serve was refused:\n{all}"
    );

    // What it may not do.
    let client = kube::Client::try_from(podplace_envtest::config_from(&kc).await?)?;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let checks: [(&str, (&str, &str), &str, bool); 14] = [
        ("watch", ("", "pods"), "", true),
        ("watch", ("storage.k8s.io", "csinodes"), "", true),
        ("create", ("events.k8s.io", "events"), &app, true),
        ("patch", ("events.k8s.io", "events"), &app, true),
        ("get", ("", "pods"), &app, false),
        ("get", ("events.k8s.io", "events"), &app, false),
        ("list", ("events.k8s.io", "events"), &app, false),
        ("update", ("events.k8s.io", "events"), &app, false),
        ("create", ("", "events"), &app, false),
        ("list", ("", "secrets"), "", false),
        ("watch", ("", "configmaps"), "", false),
        ("patch", ("", "pods"), &app, false),
        ("create", ("", "pods"), &app, false),
        (
            "create",
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
            "",
            false,
        ),
    ];
    let mut wrong = Vec::new();
    for (verb, resource, namespace, want) in checks {
        let got = may(&reviews, verb, resource, namespace, "").await?;
        live.note(format!("may {verb} {resource:?} in {namespace:?}: {got}"));
        if got != want {
            wrong.push(format!(
                "{verb} {resource:?} in {namespace:?}: {got}, want {want}"
            ));
        }
    }
    ensure!(
        wrong.is_empty(),
        "the chart's ServiceAccount: {}",
        wrong.join("; ")
    );
    Ok(())
}
