//! Section 4 of issue 10: `podplace lint` with a cluster and no files lints
//! the workloads running there. A small world with story 1's pitfall runs
//! for real — Deployment `metrics`, whose required anti-affinity selects
//! `component In [server]`, next to Deployment `vault`, whose pods are
//! labelled `component=server` too, each bound by kube-scheduler on its own
//! node because of it — and:
//! - `lint --kubeconfig K` reports PP001 on `metrics` naming `vault`, exits
//!   1 (`--fail-on warning`, the default) and points at the live object as
//!   kubectl prints it (`live:Deployment/NS/metrics:LINE:COL`, checked
//!   against `kubectl get -o yaml`'s text);
//! - `lint --cluster SNAP` (a `podplace snapshot` of the same cluster) with
//!   no files gives the same findings, pointing into the snapshot file.

use std::collections::BTreeSet;

use anyhow::{ensure, Context as _, Result};
use serde_json::Value;

use crate::support::*;

/// This module's tests.
pub fn tests() -> Vec<LiveTest> {
    live_tests![lint_without_files_lints_what_runs_in_the_cluster]
}

/// Story 1's pitfall as two Deployments: `metrics`' required anti-affinity
/// is meant for its own pods but also selects `vault`'s.
const WORLD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics
spec:
  replicas: 1
  selector:
    matchLabels: {app: metrics}
  template:
    metadata:
      labels: {app: metrics, component: server}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - {key: component, operator: In, values: [server]}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: metrics
        image: registry.k8s.io/pause:3.10
        resources:
          requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vault
spec:
  replicas: 1
  selector:
    matchLabels: {app: vault}
  template:
    metadata:
      labels: {app: vault, component: server}
    spec:
      containers:
      - name: vault
        image: registry.k8s.io/pause:3.10
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"#;

async fn lint_without_files_lints_what_runs_in_the_cluster(live: &Live) -> Result<()> {
    let nodes = live.add_simple_nodes("lintcl", 2, 1, "2", "4Gi").await?;
    let ns = live.namespace("lintcl").await?;
    live.apply_yaml(&ns, WORLD).await?;
    live.wait_deployment_available(&ns, "metrics").await?;
    live.wait_deployment_available(&ns, "vault").await?;
    // The pitfall is real: kube-scheduler kept them apart.
    let on: BTreeSet<String> = live
        .pods(&ns)
        .await?
        .iter()
        .filter_map(|p| node_of(p).map(str::to_string))
        .collect();
    ensure!(
        on.len() == 2,
        "metrics and vault share a node ({on:?} of {nodes:?}) although metrics' anti-affinity selects vault's pods"
    );

    let scratch = Scratch::new("lint-cluster")?;
    let kc = live.kubeconfig().display().to_string();
    let object = format!("Deployment/{ns}/metrics");

    // Live, text: the finding points at the live object.
    let (out, err, code) = live.podplace(&scratch.0, &["lint", "--kubeconfig", &kc]);
    ensure!(
        code == 1,
        "lint --kubeconfig with no files: exit {code}, not 1:\n{out}{err}"
    );
    let arrow = format!("--> live:{object}:");
    let at = out
        .lines()
        .filter(|l| l.contains("warning[PP001]") || l.contains(&arrow))
        .collect::<Vec<_>>();
    let pointer = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("--> live:{object}:")))
        .with_context(|| format!("lint does not point at live:{object}:LINE:COL:\n{out}{err}"))?;
    let (line, column) = pointer
        .split_once(':')
        .and_then(|(l, c)| Some((l.parse::<usize>().ok()?, c.parse::<usize>().ok()?)))
        .with_context(|| format!("no LINE:COL in {pointer:?}"))?;
    ensure!(
        at.iter()
            .any(|l| l.contains("warning[PP001]") && l.contains(&format!("Deployment/{ns}/vault"))),
        "no PP001 on metrics naming vault:\n{out}"
    );
    // LINE:COL is where metrics' labelSelector starts (its
    // matchExpressions) in kubectl's own rendering of the object.
    let yaml = live.kubectl(&["get", "deployment", "metrics", "-n", &ns, "-o", "yaml"])?;
    let yaml = String::from_utf8_lossy(&yaml.stdout).into_owned();
    let text = yaml
        .lines()
        .nth(line - 1)
        .map(|l| l.chars().skip(column - 1).collect::<String>())
        .with_context(|| format!("kubectl's YAML of metrics has no line {line}:\n{yaml}"))?;
    live.note(format!(
        "PP001 at live:{object}:{line}:{column}, kubectl's text there: {text:?}"
    ));
    ensure!(
        text.starts_with("matchExpressions:"),
        "live:{object}:{line}:{column} is not metrics' labelSelector in `kubectl get -o yaml` ({text:?}):\n{yaml}"
    );

    // The same as JSON, live and from a snapshot: the same findings.
    let (out, err, code) = live.podplace(
        &scratch.0,
        &["snapshot", "--kubeconfig", &kc, "-o", "snap.yaml"],
    );
    ensure!(code == 0, "snapshot exit {code}: {out}{err}");
    let live_json = lint_json(live, &scratch, &["--kubeconfig", &kc])?;
    let snap_json = lint_json(live, &scratch, &["--cluster", "snap.yaml"])?;
    let pp001 = |v: &Value| -> Vec<Value> {
        v["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["object"] == object.as_str() && f["rule"] == "PP001")
            .cloned()
            .collect()
    };
    let (live_pp001, snap_pp001) = (pp001(&live_json), pp001(&snap_json));
    ensure!(
        live_pp001.len() == 1
            && live_pp001[0]["file"] == format!("live:{object}").as_str()
            && live_pp001[0]["line"] == line
            && live_pp001[0]["column"] == column,
        "lint --kubeconfig -o json: not one PP001 at live:{object}:{line}:{column}: {live_json:#}"
    );
    ensure!(
        snap_pp001.len() == 1 && snap_pp001[0]["file"] == "snap.yaml",
        "lint --cluster snap.yaml: not one PP001 in snap.yaml: {snap_json:#}"
    );
    ensure!(
        findings(&live_json) == findings(&snap_json),
        "lint --kubeconfig and lint --cluster (a snapshot of the same cluster) differ:\n{:#?}\n{:#?}",
        findings(&live_json),
        findings(&snap_json)
    );
    Ok(())
}

/// `lint -o json CLUSTER...` with no files: its JSON; fails unless it
/// exits 1 (findings at the default `--fail-on warning`).
fn lint_json(live: &Live, scratch: &Scratch, cluster: &[&str]) -> Result<Value> {
    let mut args = vec!["lint", "-o", "json"];
    args.extend(cluster);
    let (out, err, code) = live.podplace(&scratch.0, &args);
    ensure!(
        code == 1,
        "lint {cluster:?}: exit {code}, not 1:\n{out}{err}"
    );
    serde_json::from_str(&out)
        .with_context(|| format!("lint {cluster:?} -o json printed {out}{err}"))
}

/// What a finding says, without where it is written (a live object's text
/// or the snapshot file's): rule, object, field, message, fix.
fn findings(v: &Value) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            format!(
                "{} {} {} {} fix={}",
                f["rule"], f["object"], f["field"], f["message"], f["fix"]
            )
        })
        .collect()
}
