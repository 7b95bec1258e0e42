//! The chart of `podplace serve`, as the real helm renders it: the
//! Deployment runs `serve` on the Lease the `rebalance` Deployment used
//! (an upgrade never runs two acting leaders), the ClusterRole is exactly
//! list and watch on every kind the model holds
//! ([`ObjectKind::ALL`]), Events and evictions, the webhook configuration
//! fails open within 5 s and skips podplace's namespace and the operator's
//! list, its CA is the Secret's (self-signed at install and kept across a
//! real `helm upgrade`) or cert-manager's, and the alerts are off unless
//! asked for.

use std::collections::BTreeSet;

use anyhow::{ensure, Context as _, Result};
use podplace_model::inventory::ObjectKind;
use serde_json::{json, Value};

use crate::rbac::{args_of, chart, container, flag, helm, kind, render};
use crate::support::*;

/// The API group of each kind the model watches. A kind added to the
/// inventory does not compile here until its group is named, and the
/// chart's ClusterRole is then checked to grant it.
pub fn group(kind: ObjectKind) -> &'static str {
    use ObjectKind::*;
    match kind {
        Node
        | Namespace
        | Service
        | ReplicationController
        | PersistentVolume
        | PersistentVolumeClaim
        | Pod => "",
        PriorityClass => "scheduling.k8s.io",
        RuntimeClass => "node.k8s.io",
        StorageClass | CSINode | CSIDriver | CSIStorageCapacity => "storage.k8s.io",
        DeviceClass | ResourceSlice | ResourceClaim => "resource.k8s.io",
        PodDisruptionBudget => "policy",
        Deployment | ReplicaSet | StatefulSet | DaemonSet => "apps",
        Job | CronJob => "batch",
    }
}

/// Every (group, resource, verb) a set of RBAC rules grants (no rule of
/// the chart uses `*` or resourceNames in the ClusterRole).
pub fn grants(rules: &Value) -> Result<BTreeSet<(String, String, String)>> {
    let mut out = BTreeSet::new();
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    for rule in rules.as_array().context("rules is not a list")? {
        ensure!(
            rule.get("resourceNames").is_none(),
            "a ClusterRole rule limited by name: {rule}"
        );
        for g in strs(&rule["apiGroups"]) {
            for r in strs(&rule["resources"]) {
                for v in strs(&rule["verbs"]) {
                    ensure!(
                        g != "*" && r != "*" && v != "*",
                        "a wildcard in a ClusterRole rule: {rule}"
                    );
                    out.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    Ok(out)
}

/// What the chart's ClusterRole must grant, and nothing more: list and
/// watch on every watched kind, Events, evictions.
pub fn wanted_grants() -> BTreeSet<(String, String, String)> {
    let mut want = BTreeSet::new();
    for k in ObjectKind::ALL {
        for verb in ["list", "watch"] {
            want.insert((group(*k).into(), k.resource().into(), verb.into()));
        }
    }
    for verb in ["create", "patch"] {
        want.insert(("events.k8s.io".into(), "events".into(), verb.into()));
    }
    want.insert(("".into(), "pods/eviction".into(), "create".into()));
    want
}

fn secret_data<'a>(docs: &'a [Value], name: &str) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == name)
        .map(|d| &d["data"])
}

fn webhook(docs: &[Value]) -> Result<&Value> {
    kind(docs, "ValidatingWebhookConfiguration")
        .map(|c| &c["webhooks"][0])
        .context("no ValidatingWebhookConfiguration rendered")
}

/// The Deployment's volume mounted at `dir`: (volume, mount).
fn volume_at<'a>(docs: &'a [Value], dir: &str) -> Result<&'a Value> {
    let c = container(docs)?;
    let mount = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["mountPath"] == dir)
        .with_context(|| format!("nothing mounted at {dir}: {}", c["volumeMounts"]))?;
    let pod = &kind(docs, "Deployment").context("no Deployment")?["spec"]["template"]["spec"];
    pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .with_context(|| format!("no volume {} for {dir}", mount["name"]))
}

pub async fn chart_serve_webhook_rbac_and_alerts_render(live: &Live) -> Result<()> {
    let chart = chart().display().to_string();
    let lint = helm(live, &["lint", &chart])?;
    ensure!(lint.contains("0 chart(s) failed"), "helm lint: {lint}");

    // Defaults: serve, on the rebalance Deployment's Lease, the webhook on,
    // a dry-run rebalance loop.
    let docs = render(live, &chart, &[])?;
    let args = args_of(&docs)?;
    ensure!(
        args.first().map(String::as_str) == Some("serve"),
        "{args:?}"
    );
    ensure!(flag(&args, "--lease") == Some("ns/r-podplace"), "{args:?}");
    let role = kind(&docs, "Role").context("no Role")?;
    ensure!(
        role["rules"][1]["resourceNames"] == json!(["r-podplace"]),
        "the Role does not name the Lease serve uses: {}",
        role["rules"]
    );
    // The Deployment keeps the name and (immutable) selector of the
    // chart's rebalance version, so helm upgrades it in place.
    let deployment = kind(&docs, "Deployment").context("no Deployment")?;
    ensure!(
        deployment["metadata"]["name"] == "r-podplace"
            && deployment["spec"]["selector"]
                == json!({"matchLabels": {"app.kubernetes.io/name": "podplace",
                    "app.kubernetes.io/instance": "r"}}),
        "the Deployment's name or selector changed: {}",
        deployment["spec"]["selector"]
    );
    ensure!(flag(&args, "--listen") == Some("0.0.0.0:8080"), "{args:?}");
    ensure!(
        flag(&args, "--webhook-listen") == Some("0.0.0.0:9443"),
        "{args:?}"
    );
    ensure!(flag(&args, "--explain-after") == Some("30s"), "{args:?}");
    ensure!(
        flag(&args, "--rebalance-interval") == Some("5m"),
        "{args:?}"
    );
    ensure!(!args.iter().any(|a| a == "--execute"), "{args:?}");
    ensure!(!args.iter().any(|a| a == "--admission-deny"), "{args:?}");
    let c = container(&docs)?;
    ensure!(
        c["readinessProbe"]["httpGet"]["path"] == "/readyz",
        "ready before the initial sync: {}",
        c["readinessProbe"]
    );
    ensure!(
        flag(&args, "--tls-cert-file") == Some("/etc/podplace/tls/tls.crt")
            && flag(&args, "--tls-private-key-file") == Some("/etc/podplace/tls/tls.key"),
        "{args:?}"
    );
    let tls = volume_at(&docs, "/etc/podplace/tls")?;
    ensure!(
        tls["secret"]["secretName"] == "r-podplace-webhook-tls",
        "{tls}"
    );
    ensure!(
        c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"] == "webhook" && p["containerPort"] == 9443),
        "no webhook port: {}",
        c["ports"]
    );
    let service = docs
        .iter()
        .find(|d| d["kind"] == "Service" && d["metadata"]["name"] == "r-podplace-webhook")
        .context("no webhook Service")?;
    ensure!(
        service["spec"]["ports"][0]["targetPort"] == "webhook"
            && service["spec"]["ports"][0]["port"] == 443,
        "{service}"
    );

    // RBAC: exactly the watches, Events and evictions.
    let cr = kind(&docs, "ClusterRole").context("no ClusterRole")?;
    let got = grants(&cr["rules"])?;
    let want = wanted_grants();
    let extra: Vec<_> = got.difference(&want).collect();
    let missing: Vec<_> = want.difference(&got).collect();
    ensure!(
        extra.is_empty() && missing.is_empty(),
        "the ClusterRole grants more {extra:?} or less {missing:?} than serve needs"
    );

    // The webhook: fails open, quickly, and skips podplace's own namespace
    // and kube-system; its CA signed the Secret's certificate.
    let w = webhook(&docs)?;
    ensure!(w["failurePolicy"] == "Ignore", "{w}");
    ensure!(w["timeoutSeconds"].as_i64().is_some_and(|t| t <= 5), "{w}");
    ensure!(w["sideEffects"] == "None", "{w}");
    ensure!(w["admissionReviewVersions"] == json!(["v1"]), "{w}");
    ensure!(
        w["clientConfig"]["service"]
            == json!({"name": "r-podplace-webhook", "namespace": "ns", "path": "/validate", "port": 443}),
        "{}",
        w["clientConfig"]
    );
    ensure!(
        w["namespaceSelector"]
            == json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "NotIn", "values": ["ns", "kube-system"]}]}),
        "{}",
        w["namespaceSelector"]
    );
    let resources: BTreeSet<String> = w["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    for r in [
        "pods",
        "deployments",
        "statefulsets",
        "daemonsets",
        "replicasets",
        "jobs",
        "cronjobs",
        "replicationcontrollers",
    ] {
        ensure!(
            resources.contains(r),
            "the webhook skips {r}: {resources:?}"
        );
    }
    let data = secret_data(&docs, "r-podplace-webhook-tls").context("no TLS Secret")?;
    ensure!(
        w["clientConfig"]["caBundle"] == data["ca.crt"] && data["tls.key"].is_string(),
        "the caBundle is not the Secret's CA"
    );
    let cert = String::from_utf8(base64_decode(
        data["tls.crt"].as_str().context("no tls.crt")?,
    )?)?;
    ensure!(cert.contains("BEGIN CERTIFICATE"), "tls.crt: {cert}");
    ensure!(kind(&docs, "PrometheusRule").is_none(), "alerts by default");

    // Values: denials, a scheduler configuration, acting, other excluded
    // namespaces, controllers' objects reviewed too, alerts on.
    let docs = render(
        live,
        &chart,
        &[
            "admission.deny={PP001,PP011}",
            "schedulerConfig.apiVersion=kubescheduler.config.k8s.io/v1",
            "schedulerConfig.kind=KubeSchedulerConfiguration",
            "execute=true",
            "explainAfter=1m",
            "admission.excludeNamespaces={kube-system,monitoring}",
            "admission.skipOwned=false",
            "prometheusRule.enabled=true",
            "prometheusRule.labels.release=prom",
        ],
    )?;
    let args = args_of(&docs)?;
    ensure!(
        flag(&args, "--admission-deny") == Some("PP001,PP011"),
        "{args:?}"
    );
    ensure!(flag(&args, "--explain-after") == Some("1m"), "{args:?}");
    ensure!(args.iter().any(|a| a == "--execute"), "{args:?}");
    ensure!(
        flag(&args, "--scheduler-config") == Some("/etc/podplace/scheduler/config.yaml"),
        "{args:?}"
    );
    let cm = volume_at(&docs, "/etc/podplace/scheduler")?;
    let cm_name = cm["configMap"]["name"]
        .as_str()
        .context("not a ConfigMap")?;
    let config = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == cm_name)
        .with_context(|| format!("no ConfigMap {cm_name}"))?;
    ensure!(
        config["data"]["config.yaml"]
            .as_str()
            .is_some_and(|t| t.contains("kind: KubeSchedulerConfiguration")),
        "{config}"
    );
    let w = webhook(&docs)?;
    ensure!(
        w["namespaceSelector"]["matchExpressions"][0]["values"]
            == json!(["ns", "kube-system", "monitoring"]),
        "{}",
        w["namespaceSelector"]
    );
    ensure!(w.get("matchConditions").is_none(), "{w}");
    let rule = kind(&docs, "PrometheusRule").context("no PrometheusRule")?;
    ensure!(rule["metadata"]["labels"]["release"] == "prom", "{rule}");
    let exprs: Vec<(String, String)> = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["alert"].as_str().unwrap_or("").to_string(),
                r["expr"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for (alert, metric) in [
        ("PodplaceHALost", "podplace_ha_lost"),
        ("PodplacePodsBlocked", "podplace_pending_pods"),
    ] {
        ensure!(
            exprs.iter().any(|(a, e)| a == alert && e.contains(metric)),
            "no alert {alert} on {metric}: {exprs:?}"
        );
    }

    // cert-manager: a Certificate for the Service's names, the cainjector
    // fills the caBundle, the Deployment mounts the Certificate's Secret.
    let docs = render(live, &chart, &["certManager.enabled=true"])?;
    ensure!(
        secret_data(&docs, "r-podplace-webhook-tls").is_none(),
        "a self-signed Secret besides cert-manager's"
    );
    let cert = docs
        .iter()
        .find(|d| d["kind"] == "Certificate" && d["metadata"]["name"] == "r-podplace-webhook-tls")
        .context("no serving Certificate")?;
    ensure!(
        cert["spec"]["dnsNames"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n == "r-podplace-webhook.ns.svc")),
        "{cert}"
    );
    let vwc = kind(&docs, "ValidatingWebhookConfiguration").context("no webhook")?;
    ensure!(
        vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            == "ns/r-podplace-webhook-tls",
        "{}",
        vwc["metadata"]
    );
    ensure!(
        volume_at(&docs, "/etc/podplace/tls")?["secret"]["secretName"]
            == cert["spec"]["secretName"],
        "the Deployment does not mount the Certificate's Secret"
    );
    let docs = render(
        live,
        &chart,
        &[
            "certManager.enabled=true",
            "certManager.issuerRef.name=corp",
            "certManager.issuerRef.kind=ClusterIssuer",
        ],
    )?;
    ensure!(
        !docs.iter().any(|d| d["kind"] == "Issuer"),
        "an Issuer of its own besides the operator's"
    );

    // No webhook: no Secret, Service, port or flags for it.
    let docs = render(live, &chart, &["admission.enabled=false"])?;
    let args = args_of(&docs)?;
    ensure!(
        kind(&docs, "ValidatingWebhookConfiguration").is_none()
            && secret_data(&docs, "r-podplace-webhook-tls").is_none()
            && flag(&args, "--webhook-listen").is_none(),
        "admission.enabled=false still renders the webhook: {args:?}"
    );

    // A timeout past 5 s is refused by name.
    let bad = render(live, &chart, &["admission.timeoutSeconds=10"]);
    let message = format!("{:#}", bad.err().context("timeoutSeconds=10 rendered")?);
    ensure!(
        message.contains("admission.timeoutSeconds 10 is out of range"),
        "{message}"
    );
    Ok(())
}

fn base64_decode(text: &str) -> Result<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("decoding base64")
}

/// A real `helm install` and `helm upgrade` on the live API server: the
/// self-signed CA made at install is looked up and kept by the upgrade
/// (Secret and caBundle unchanged), and the webhook configuration the API
/// server stored is the chart's. No node runs podplace's pods (they stay
/// Pending); the release is uninstalled at the end.
pub async fn chart_install_then_upgrade_keeps_the_webhook_ca(live: &Live) -> Result<()> {
    let ns = live.namespace("serve-chart").await?;
    let release = ns.clone();
    let chart = chart().display().to_string();
    let kc = live.kubeconfig().display().to_string();
    let base = |verb: &'static str| {
        vec![
            verb.to_string(),
            release.clone(),
            chart.clone(),
            "--namespace".into(),
            ns.clone(),
            "--kubeconfig".into(),
            kc.clone(),
            "--set".into(),
            "replicas=1".into(),
        ]
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        helm(live, &args)
    };
    // Every non-default value, checked by the real API server's validation
    // (a server-side dry run: schemas, the webhook's CEL matchConditions,
    // selectors), but the kinds of CRDs this cluster lacks.
    let docs = render(
        live,
        &chart,
        &[
            "admission.deny={PP001,PP011}",
            "schedulerConfig.apiVersion=kubescheduler.config.k8s.io/v1",
            "schedulerConfig.kind=KubeSchedulerConfiguration",
            "policy.apiVersion=descheduler/v1alpha2",
            "policy.kind=DeschedulerPolicy",
            "execute=true",
            "admission.excludeNamespaces={kube-system,monitoring}",
            "admission.objectSelector.matchExpressions[0].key=podplace.io/skip",
            "admission.objectSelector.matchExpressions[0].operator=DoesNotExist",
            "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ],
    )?;
    let checked: Vec<Value> = docs
        .iter()
        .filter(|d| {
            let api = d["apiVersion"].as_str().unwrap_or("");
            !api.starts_with("cert-manager.io/") && !api.starts_with("monitoring.coreos.com/")
        })
        .map(|d| {
            let mut d = d.clone();
            if d["metadata"]["namespace"] == "ns" {
                d["metadata"]["namespace"] = json!(ns);
            }
            d
        })
        .collect();
    let scratch = Scratch::new("serve-chart")?;
    let manifest = scratch.join("all.json");
    std::fs::write(
        &manifest,
        serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": checked}))?,
    )?;
    live.kubectl(&[
        "apply",
        "--dry-run=server",
        "-f",
        &manifest.display().to_string(),
    ])?;

    run(base("install"))?;
    let outcome = async {
        let first = installed_ca(live, &ns, &release).await?;
        let mut up = base("upgrade");
        up.extend(["--set".into(), "explainAfter=45s".into()]);
        run(up)?;
        let second = installed_ca(live, &ns, &release).await?;
        ensure!(
            first == second,
            "helm upgrade replaced the webhook's CA or certificate"
        );
        let args = live.kubectl(&[
            "get",
            "deployment",
            &format!("{release}-podplace"),
            "-n",
            &ns,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
        ])?;
        let args: Vec<String> = serde_json::from_slice(&args.stdout)?;
        ensure!(
            flag(&args, "--explain-after") == Some("45s")
                && flag(&args, "--lease") == Some(&format!("{ns}/{release}-podplace")),
            "the upgraded Deployment's args: {args:?}"
        );
        Ok(())
    }
    .await;
    let uninstall = run(vec![
        "uninstall".into(),
        release.clone(),
        "--namespace".into(),
        ns.clone(),
        "--kubeconfig".into(),
        kc.clone(),
        "--wait".into(),
        "--timeout".into(),
        "60s".into(),
    ]);
    outcome.and(uninstall.map(|_| ()))
}

/// The installed Secret's (ca.crt, tls.crt) and the stored webhook
/// configuration's caBundle, which must be the Secret's CA.
async fn installed_ca(live: &Live, ns: &str, release: &str) -> Result<(String, String)> {
    let out = live.kubectl(&[
        "get",
        "secret",
        &format!("{release}-podplace-webhook-tls"),
        "-n",
        ns,
        "-o",
        "json",
    ])?;
    let secret: Value = serde_json::from_slice(&out.stdout)?;
    let out = live.kubectl(&[
        "get",
        "validatingwebhookconfiguration",
        &format!("{release}-podplace"),
        "-o",
        "json",
    ])?;
    let vwc: Value = serde_json::from_slice(&out.stdout)?;
    let w = &vwc["webhooks"][0];
    ensure!(
        w["clientConfig"]["caBundle"] == secret["data"]["ca.crt"],
        "the stored caBundle is not the Secret's CA"
    );
    ensure!(
        w["failurePolicy"] == "Ignore"
            && w["sideEffects"] == "None"
            && w["timeoutSeconds"] == 5
            && w["matchConditions"][0]["name"] == "skip-objects-of-controllers",
        "the stored webhook: {w}"
    );
    Ok((
        secret["data"]["ca.crt"].as_str().unwrap_or("").to_string(),
        secret["data"]["tls.crt"].as_str().unwrap_or("").to_string(),
    ))
}
