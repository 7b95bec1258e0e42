//! Story 4 at `kubectl apply`: web (2 replicas, required hostname
//! anti-affinity, the default strategy's maxUnavailable 0) running on the
//! story's 2 nodes, and serve's webhook registered with the real API server
//! (`clientConfig.url` on 127.0.0.1, the caBundle of the certificate serve
//! presents): applying a new revision of web prints podplace's PP003
//! warning, from the API server, through the pinned kubectl. The
//! registration selects only the test's namespace.

use anyhow::{ensure, Result};
use serde_json::json;

use super::*;
use crate::why::story;

pub async fn serve_warns_at_kubectl_apply_of_a_rollout_that_deadlocks(live: &Live) -> Result<()> {
    let nodes = podplace_envtest::nodes_from_world(&story("rollout").join("cluster.yaml"))?;
    live.add_nodes(nodes).await?;
    let ns = live.namespace("serve-adm").await?;
    let name = format!("podplace-live-{ns}");
    let outcome = warns(live, &ns, &name).await;
    let unregister = live.kubectl(&[
        "delete",
        "validatingwebhookconfiguration",
        &name,
        "--ignore-not-found",
    ]);
    outcome.and(unregister.map(|_| ()))
}

async fn warns(live: &Live, ns: &str, name: &str) -> Result<()> {
    // The control plane's serving certificate (IP SAN 127.0.0.1), signed
    // by its CA: the caBundle.
    let pki = live.cp.pki();
    let (cert, key) = (
        pki.serving.cert.display().to_string(),
        pki.serving.key.display().to_string(),
    );
    let lease = format!("{ns}/podplace");
    let mut args = vec![
        "--lease",
        &lease,
        "--webhook-listen",
        "127.0.0.1:0",
        "--tls-cert-file",
        &cert,
        "--tls-private-key-file",
        &key,
    ];
    args.extend(ELECTION);
    let serve = spawn_serve(live.kubeconfig(), "webhook", &args, &live.timeline).await?;
    let addr = webhook_addr(&serve)?;
    let ca = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&pki.ca.cert_pem)
    };
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "validate.podplace.io",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 5,
            "clientConfig": {"url": format!("https://{addr}/validate"), "caBundle": ca},
            "rules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["deployments"], "scope": "Namespaced",
            }],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        }],
    });
    live.apply_yaml(ns, &config.to_string()).await?;

    let web = story("rollout").join("web.yaml");
    let first = live.kubectl(&["apply", "-n", ns, "-f", &web.display().to_string()])?;
    let first_err = String::from_utf8_lossy(&first.stderr).into_owned();
    live.note(format!("first apply of web: {first_err}"));
    live.wait_deployment_available(ns, "web").await?;

    // A new revision of web: its surge pod fits nowhere, and nothing may
    // go unavailable.
    let text = std::fs::read_to_string(&web)?;
    ensure!(text.contains("nginx:1.27"), "web.yaml's image changed");
    let scratch = Scratch::new("serve-adm")?;
    let next = scratch.join("web.yaml");
    std::fs::write(&next, text.replace("nginx:1.27", "nginx:1.28"))?;
    let out = live.kubectl(&["apply", "-n", ns, "-f", &next.display().to_string()])?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let msg = format!(
        "kubectl apply of web's new revision:\n{}{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    eprintln!("{msg}");
    live.note(&msg);
    ensure!(
        stderr
            .lines()
            .any(|l| l.starts_with("Warning: podplace PP003")),
        "{msg}\n(first apply: {first_err})\nserve:\n{}",
        serve.output()
    );
    // A warning, not a denial: the change was accepted.
    ensure!(
        String::from_utf8_lossy(&out.stdout).contains("deployment.apps/web configured"),
        "{msg}"
    );
    Ok(())
}
