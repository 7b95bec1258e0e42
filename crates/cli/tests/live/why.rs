//! Check 2 of the live suite: `podplace why` on the real Pending vault pod
//! of story 1. Its FailedScheduling line is the real Event's, word for
//! word; it names prometheus-server's term; and its first fix, applied with
//! the pinned kubectl, lets the real kube-scheduler bind the pod on the
//! node `why` said, once the patched StatefulSet's rollout has settled.
//!
//! The story's namespace (`stokesnet`) and node names are its own, so this
//! module creates and removes the namespace itself and waits until it is
//! gone (tests run one at a time; a namespace still terminating cannot be
//! created again).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, ensure, Context as _, Result};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::Api;
use podplace_envtest::{wait_default_service_account, wait_until};
use serde_json::Value;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![
        why_vault_matches_the_real_event_and_its_fix_binds,
        why_without_n_uses_the_context_namespace
    ]
}

/// The story's namespace, fixed by its manifests.
pub(crate) const NS: &str = "stokesnet";

/// `examples/stories/NAME` of the repository.
pub fn story(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/stories")
        .join(name)
}

/// The documents of a story file, as JSON values.
pub fn story_docs(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Creates namespace `name` (a story's fixed one) after any earlier one of
/// that name is gone, and waits for its `default` ServiceAccount.
pub async fn create_fixed_namespace(live: &Live, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(live.client.clone());
    wait_gone(live, name).await?;
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"podplace-live": "true"}}
    }))?;
    api.create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    wait_default_service_account(&live.client, name, POLL).await?;
    live.note(format!("namespace {name} created"));
    Ok(())
}

/// Deletes namespace `name` (its pods at once: there is no kubelet to wait
/// for) and waits until the namespace object itself is gone, so the next
/// test can create it again.
pub async fn delete_fixed_namespace(live: &Live, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(live.client.clone());
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => bail!("deleting namespace {name}: {e}"),
    }
    let pods: Api<Pod> = Api::namespaced(live.client.clone(), name);
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    if let Err(e) = pods.delete_collection(&force, &ListParams::default()).await {
        live.note(format!("deleting the pods of {name}: {e}"));
    }
    wait_gone(live, name).await?;
    live.note(format!("namespace {name} deleted"));
    Ok(())
}

async fn wait_gone(live: &Live, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(live.client.clone());
    wait_until(
        format_args!("namespace {name} to be gone"),
        Duration::from_secs(120),
        Duration::from_millis(300),
        || {
            let api = api.clone();
            async move { api.get_opt(name).await.map(|o| o.is_none().then_some(())) }
        },
    )
    .await?;
    Ok(())
}

/// `kubectl cordon|uncordon NODE`; after an uncordon, also waits until
/// kube-controller-manager has removed the `node.kubernetes.io/unschedulable`
/// taint (kube-scheduler and podplace both honour it until then).
pub async fn uncordon(live: &Live, node: &str) -> Result<()> {
    live.kubectl(&["uncordon", node])?;
    let api: Api<Node> = Api::all(live.client.clone());
    wait_until(
        format_args!("node {node}'s unschedulable taint to go"),
        SETTLE,
        POLL,
        || {
            let api = api.clone();
            async move {
                let n = api.get(node).await?;
                let spec = n.spec.unwrap_or_default();
                let tainted = spec
                    .taints
                    .unwrap_or_default()
                    .iter()
                    .any(|t| t.key == "node.kubernetes.io/unschedulable");
                Ok::<_, kube::Error>((!tainted && spec.unschedulable != Some(true)).then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

/// True when a StatefulSet's rollout has settled: the controller saw its
/// latest spec, every replica is updated and Ready, and the current
/// revision is the update revision.
pub(crate) fn statefulset_settled(s: &StatefulSet) -> bool {
    let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(st) = s.status.as_ref() else {
        return false;
    };
    st.observed_generation >= s.metadata.generation
        && st.replicas == want
        && st.updated_replicas == Some(want)
        && st.ready_replicas == Some(want)
        && st.current_revision.is_some()
        && st.current_revision == st.update_revision
}

/// Applies why's fix of prometheus-server (`patch`, a strategic merge
/// patch) with the pinned kubectl and waits for its rollout to settle.
pub(crate) async fn apply_prometheus_fix(live: &Live, scratch: &Path, patch: &str) -> Result<()> {
    let patch_file = scratch.join("fix.yaml");
    std::fs::write(&patch_file, patch)?;
    live.kubectl(&[
        "patch",
        "statefulset",
        "prometheus-server",
        "-n",
        NS,
        "--type=strategic",
        "--patch-file",
        &patch_file.display().to_string(),
    ])?;
    let sts: Api<StatefulSet> = Api::namespaced(live.client.clone(), NS);
    wait_until(
        "prometheus-server's rollout to settle",
        Duration::from_secs(120),
        POLL,
        || {
            let sts = sts.clone();
            async move {
                let s = sts.get("prometheus-server").await?;
                Ok::<_, kube::Error>(statefulset_settled(&s).then_some(()))
            }
        },
    )
    .await?;
    Ok(())
}

async fn why_vault_matches_the_real_event_and_its_fix_binds(live: &Live) -> Result<()> {
    create_fixed_namespace(live, NS).await?;
    let outcome = vault(live).await;
    let cleanup = delete_fixed_namespace(live, NS).await;
    outcome.and(cleanup)
}

async fn vault(live: &Live) -> Result<()> {
    let event = vault_pending(live).await?;
    vault_explained(live, &event).await
}

/// Story 1 set up for real in [`NS`] (created by the caller): Prometheus
/// on leela and hermes, vault-0 and vault-1 on bender and farnsworth, then
/// vault scaled to 3: vault-2 Pending. Returns its FailedScheduling
/// message.
pub async fn vault_pending(live: &Live) -> Result<String> {
    let dir = story("vault");
    // The four nodes, hermes, bender and farnsworth cordoned for now, so
    // the real scheduler puts Prometheus where the story has it: -0 on
    // leela, -1 on hermes.
    let mut nodes = podplace_envtest::nodes_from_world(&dir.join("cluster.yaml"))?;
    for n in &mut nodes {
        if n.metadata.name.as_deref() != Some("leela") {
            n.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
        }
    }
    live.add_nodes(nodes).await?;

    // prometheus.yaml's StatefulSet (the story's pods are what it creates;
    // the uid is the story's, not this cluster's).
    let mut prometheus = story_docs(&dir.join("prometheus.yaml"))?
        .into_iter()
        .find(|d| d["kind"] == "StatefulSet")
        .context("prometheus.yaml has no StatefulSet")?;
    if let Some(m) = prometheus["metadata"].as_object_mut() {
        m.remove("uid");
    }
    live.apply_yaml(NS, &prometheus.to_string()).await?;
    let p0 = live.wait_bound(NS, "prometheus-server-0").await?;
    ensure!(
        p0 == "leela",
        "prometheus-server-0 bound to {p0}, not leela"
    );
    uncordon(live, "hermes").await?;
    let p1 = live.wait_bound(NS, "prometheus-server-1").await?;
    ensure!(
        p1 == "hermes",
        "prometheus-server-1 bound to {p1}, not hermes"
    );
    live.wait_pod_ready(NS, "prometheus-server-1").await?;
    uncordon(live, "bender").await?;
    uncordon(live, "farnsworth").await?;

    // vault.yaml: two replicas first so vault-0 and vault-1 take bender and
    // farnsworth (Parallel creates all pods at once, in no fixed order),
    // then the story's three: vault-2 fits nowhere.
    let mut vault = story_docs(&dir.join("vault.yaml"))?
        .into_iter()
        .find(|d| d["kind"] == "StatefulSet")
        .context("vault.yaml has no StatefulSet")?;
    ensure!(
        vault["spec"]["replicas"] == 3,
        "vault.yaml's replicas changed"
    );
    vault["spec"]["replicas"] = 2.into();
    live.apply_yaml(NS, &vault.to_string()).await?;
    let v0 = live.wait_bound(NS, "vault-0").await?;
    let v1 = live.wait_bound(NS, "vault-1").await?;
    ensure!(
        [v0.as_str(), v1.as_str()] == ["bender", "farnsworth"]
            || [v0.as_str(), v1.as_str()] == ["farnsworth", "bender"],
        "vault-0 on {v0}, vault-1 on {v1}"
    );
    live.kubectl(&["scale", "statefulset", "vault", "-n", NS, "--replicas=3"])?;
    live.wait_failed_scheduling(NS, "vault-2").await
}

/// `why` on the Pending vault-2 against its real FailedScheduling `event`,
/// then its first fix applied and vault-2 bound where it said.
async fn vault_explained(live: &Live, event: &str) -> Result<()> {
    // why, as text: the Event's line word for word, and prometheus-server's
    // term named.
    let scratch = Scratch::new("why")?;
    let kc = live.kubeconfig().display().to_string();
    let pod = format!("{NS}/vault-2");
    let (out, err, code) = live.podplace(&scratch.0, &["why", &pod, "--kubeconfig", &kc]);
    ensure!(code == 1, "why exit {code} (want 1, Pending): {out}{err}");
    let line = out
        .lines()
        .skip_while(|l| l.trim() != "kube-scheduler's FailedScheduling event:")
        .nth(1)
        .map(str::trim)
        .with_context(|| format!("why printed no FailedScheduling line:\n{out}"))?;
    ensure!(
        line == event,
        "why's FailedScheduling line differs from the real Event:\n  why:   {line}\n  event: {event}"
    );
    for want in [
        "blocked by stokesnet/prometheus-server-0 on leela (StatefulSet/stokesnet/prometheus-server)",
        "a rule of ANOTHER workload, StatefulSet/stokesnet/prometheus-server",
        "- key: component",
        "operator: In",
        "values: [server]",
    ] {
        ensure!(out.contains(want), "why does not say {want:?}:\n{out}");
    }

    // why -o json: the same message, the term, and the first fix.
    let (json, err, code) = live.podplace(
        &scratch.0,
        &["why", &pod, "--kubeconfig", &kc, "-o", "json"],
    );
    ensure!(code == 1, "why -o json exit {code}: {json}{err}");
    let why: Value = serde_json::from_str(&json).context("why -o json is not JSON")?;
    ensure!(why["message"] == event, "JSON message {}", why["message"]);
    ensure!(
        why["unreadable"].as_array().is_some_and(|u| u.is_empty()),
        "why could not read everything: {}",
        why["unreadable"]
    );
    let term = why["terms"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["owner_workload"] == "StatefulSet/stokesnet/prometheus-server")
        .with_context(|| format!("no term of prometheus-server in {}", why["terms"]))?;
    ensure!(
        term["kind"] == "podAntiAffinity"
            && term["required"] == true
            && term["topology_key"] == "kubernetes.io/hostname"
            && term["selector"]
                .as_str()
                .is_some_and(|s| s.contains("component")),
        "prometheus-server's term: {term}"
    );
    pending_summary(live, &scratch, &kc).await?;
    let fix = why["fixes"]
        .get(0)
        .with_context(|| format!("why proposes no fix: {json}"))?;
    ensure!(
        fix["target"] == "StatefulSet/stokesnet/prometheus-server",
        "the first fix targets {}",
        fix["target"]
    );
    let lands_on = fix["lands_on"]
        .as_str()
        .with_context(|| format!("the first fix says no node: {fix}"))?
        .to_string();
    let patch = fix["patch"]
        .as_str()
        .with_context(|| format!("the first fix has no patch: {fix}"))?;

    // Apply it with the pinned kubectl, as its strategic merge patch.
    apply_prometheus_fix(live, &scratch.0, patch).await?;
    live.note("prometheus-server's rollout settled");
    let landed = live.wait_bound(NS, "vault-2").await?;
    let pods = live.pods(NS).await?;
    let placement: Vec<String> = pods
        .iter()
        .map(|p| {
            format!(
                "{} on {}",
                p.metadata.name.as_deref().unwrap_or("?"),
                node_of(p).unwrap_or("-")
            )
        })
        .collect();
    live.note(format!("after the fix: {}", placement.join(", ")));
    if landed != lands_on {
        return Err(anyhow!(
            "vault-2 was bound to {landed}, why's first fix said {lands_on} (pods: {})",
            placement.join(", ")
        ));
    }
    live.wait_pod_ready(NS, "vault-2").await?;
    Ok(())
}

/// `why POD` without `-n` looks in the kubeconfig context's namespace, as
/// kubectl does: a pod of the same name in two namespaces is found in the
/// context's one (files would call the name ambiguous), `-n` and
/// `namespace/name` still win, and a context without a namespace means
/// `default`.
async fn why_without_n_uses_the_context_namespace(live: &Live) -> Result<()> {
    let first = live.namespace("why-ctx").await?;
    let second = live.namespace("why-ctx").await?;
    // Pending everywhere: no node has the label it selects.
    let pod = |ns: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: ctx-probe, namespace: {ns}}}\n\
             spec:\n  nodeSelector: {{podplace-live/none: \"true\"}}\n  \
             containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]\n"
        )
    };
    for ns in [&first, &second] {
        live.apply_yaml(ns, &pod(ns)).await?;
    }
    let scratch = Scratch::new("why-ctx")?;
    // The admin kubeconfig with its context's namespace set (the context
    // each test's kubeconfig names is its current one).
    let text = std::fs::read_to_string(live.kubeconfig())?;
    let mut kubeconfig: Value = serde_saphyr::from_str(&text).context("parsing the kubeconfig")?;
    let current = kubeconfig["current-context"].clone();
    let contexts = kubeconfig["contexts"]
        .as_array_mut()
        .context("the kubeconfig has no contexts")?;
    let context = contexts
        .iter_mut()
        .find(|c| c["name"] == current)
        .context("the kubeconfig's current context is not among its contexts")?;
    context["context"]["namespace"] = second.clone().into();
    let with_ns = scratch.join("with-namespace.kubeconfig");
    std::fs::write(&with_ns, kubeconfig.to_string())?;
    let with_ns = with_ns.display().to_string();
    let admin = live.kubeconfig().display().to_string();
    let first_pod = format!("{first}/ctx-probe");
    let second_pod = format!("{second}/ctx-probe");

    struct Case<'a> {
        what: &'a str,
        args: Vec<&'a str>,
        pod: &'a str,
    }
    let cases = [
        Case {
            what: "the context's namespace",
            args: vec!["why", "ctx-probe", "--kubeconfig", &with_ns],
            pod: &second_pod,
        },
        Case {
            what: "-n over the context's namespace",
            args: vec!["why", "ctx-probe", "-n", &first, "--kubeconfig", &with_ns],
            pod: &first_pod,
        },
        Case {
            what: "namespace/name over the context's namespace",
            args: vec!["why", &first_pod, "--kubeconfig", &with_ns],
            pod: &first_pod,
        },
    ];
    for case in &cases {
        let mut args = case.args.clone();
        args.extend(["-o", "json"]);
        let (out, err, code) = live.podplace(&scratch.0, &args);
        ensure!(
            code == 1,
            "{}: why exit {code} (want 1, Pending): {out}{err}",
            case.what
        );
        let why: Value = serde_json::from_str(&out)
            .with_context(|| format!("{}: why -o json is not JSON: {out}{err}", case.what))?;
        ensure!(
            why["pod"] == case.pod,
            "{}: why explained {} (want {})",
            case.what,
            why["pod"],
            case.pod
        );
    }
    // The admin context names no namespace: `default`, where no ctx-probe
    // is (kubectl's answer too), not the files' "the only namespace
    // holding it".
    let (out, err, code) = live.podplace(&scratch.0, &["why", "ctx-probe", "--kubeconfig", &admin]);
    ensure!(
        code == 2 && err.contains("default/ctx-probe"),
        "without a context namespace: why exit {code}, want 2 naming default/ctx-probe: {out}{err}"
    );
    Ok(())
}

/// `kubectl podplace why` without a pod (issue 21), on the real Pending
/// vault-2 of [`vault`] (no cluster of its own, so it adds only its
/// podplace runs): the summary line names the blocking workload and rule
/// in `why POD`'s words, exit 1; its `waitingSince` is the real
/// PodScheduled condition's lastTransitionTime; `sts/vault` selects the
/// StatefulSet's pods through their ownerReferences.
async fn pending_summary(live: &Live, scratch: &Scratch, kc: &str) -> Result<()> {
    // As a kubectl plugin: kubectl finds kubectl-podplace on PATH and
    // passes the exit code through.
    let (out, err, code) = kubectl_podplace(live, scratch, &["why", "-n", NS])?;
    let (summary_text, summary_code) = (out.clone(), code);
    ensure!(
        code == 1,
        "kubectl podplace why (no pod) exit {code} (want 1): {out}{err}"
    );
    let want = "StatefulSet/stokesnet/vault\n  stokesnet/vault-2  InterPodAffinity  node(s) didn't satisfy existing pods anti-affinity rules: blocked by StatefulSet/stokesnet/prometheus-server (the existing pod's podAntiAffinity term 1, applied symmetrically: a rule of ANOTHER workload, StatefulSet/stokesnet/prometheus-server) on ";
    ensure!(out.starts_with(want), "why (no pod) says:\n{out}");
    ensure!(
        out.ends_with("\n1 pending; `podplace why POD` explains one\n"),
        "why (no pod) says:\n{out}"
    );
    let (json, err, code) = live.podplace(
        &scratch.0,
        &["why", "--kubeconfig", kc, "-n", NS, "-o", "json"],
    );
    ensure!(code == 1, "why -o json (no pod) exit {code}: {json}{err}");
    let summary: Value = serde_json::from_str(&json).context("why -o json is not JSON")?;
    let pods: Api<Pod> = Api::namespaced(live.client.clone(), NS);
    let pod = pods.get("vault-2").await?;
    let since = pod
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.last_transition_time)
        .map(|t| t.0.to_string())
        .context("vault-2 has no PodScheduled=False condition")?;
    ensure!(
        summary["pending"][0]["waitingSince"] == since.as_str() && summary["count"] == 1,
        "summary {summary} (PodScheduled False since {since})"
    );
    let (names, err, code) = live.podplace(
        &scratch.0,
        &[
            "why",
            "sts/vault",
            "--kubeconfig",
            kc,
            "-n",
            NS,
            "-o",
            "name",
        ],
    );
    ensure!(code == 1, "why sts/vault exit {code}: {names}{err}");
    let mut names: Vec<&str> = names.lines().collect();
    ensure!(
        names.first() == Some(&"pod/vault-2"),
        "why sts/vault: {names:?}"
    );
    names.sort();
    ensure!(
        names == ["pod/vault-0", "pod/vault-1", "pod/vault-2"],
        "why sts/vault: {names:?}"
    );
    let (labelled, err, code) = live.podplace(
        &scratch.0,
        &[
            "why",
            "-l",
            "component=server,app notin (prometheus)",
            "--kubeconfig",
            kc,
            "-n",
            NS,
            "-o",
            "name",
        ],
    );
    ensure!(
        code == 1
            && labelled.lines().next() == Some("pod/vault-2")
            && labelled.lines().count() == 3,
        "why -l: exit {code}: {labelled}{err}"
    );
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["why", "deploy/nope", "--kubeconfig", kc, "-n", NS],
    );
    ensure!(
        code == 2
            && err.trim() == r#"Error from server (NotFound): deployments.apps "nope" not found"#,
        "why deploy/nope: exit {code}: {out}{err}"
    );
    // Without -n: the context's namespace, as kubectl (the admin context
    // names none: `default`, where nothing is Pending), and one line
    // pointing at -A for the Pending pods elsewhere (vault-2 at least).
    let (plain, err, plain_code) = kubectl_podplace(live, scratch, &["why"])?;
    let hint = plain
        .strip_prefix("No Pending pods in default namespace.\n")
        .and_then(|rest| {
            rest.strip_suffix(" pending in other namespaces; `podplace why -A` lists them\n")
        })
        .and_then(|n| n.parse::<usize>().ok());
    ensure!(
        plain_code == 0 && hint.is_some_and(|n| n >= 1),
        "kubectl podplace why (context namespace default) exit {plain_code} (want 0 and the -A hint): {plain}{err}"
    );
    // PODPLACE_README_TRANSCRIPT=FILE: the README's `kubectl podplace why`
    // transcript, from this real cluster (the two runs above).
    if let Some(path) = std::env::var_os("PODPLACE_README_TRANSCRIPT") {
        // The docs' convention: `? N` only for a non-zero exit.
        let exit = |code: i32| match code {
            0 => String::new(),
            n => format!("? {n}\n"),
        };
        std::fs::write(
            &path,
            format!(
                "$ kubectl podplace why\n{}{plain}$ kubectl podplace why -n {NS}\n{}{summary_text}",
                exit(plain_code),
                exit(summary_code)
            ),
        )?;
    }
    live.note("why without a pod and why sts/vault checked");
    Ok(())
}

/// `kubectl podplace ARGS` with the pinned kubectl, this build's podplace
/// installed as `kubectl-podplace` on PATH, the admin kubeconfig and no
/// colour: (stdout, stderr, exit code).
fn kubectl_podplace(
    live: &Live,
    scratch: &Scratch,
    args: &[&str],
) -> Result<(String, String, i32)> {
    let bin = scratch.join("bin");
    let plugin = bin.join("kubectl-podplace");
    if !plugin.exists() {
        std::fs::create_dir_all(&bin)?;
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_podplace"), &plugin)?;
    }
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    live.note(format!("kubectl podplace {}", args.join(" ")));
    let out = std::process::Command::new(podplace_envtest::kubectl()?)
        .arg("podplace")
        .args(args)
        .current_dir(&scratch.0)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("KUBECONFIG", live.kubeconfig())
        .output()
        .context("running kubectl podplace")?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    ))
}
