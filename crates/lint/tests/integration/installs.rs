//! Lint on the install corpus (`tests/data/installs`): rollout verdicts
//! are each Deployment's own, unplaceable workloads get PP011 and no
//! rollout verdict, and nodes written without kubelet labels give one note.

use std::path::PathBuf;

use podplace_lint::{Finding, Severity};

use crate::support::{load_paths, Loaded};

fn install(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/installs"
    ))
    .join(name)
}

fn on(name: &str, cluster: &str) -> Loaded {
    let dir = install(name);
    load_paths(&[dir.join("manifests.yaml")], &[dir.join(cluster)])
}

fn summary(findings: &[Finding]) -> Vec<(String, &'static str, Severity)> {
    findings
        .iter()
        .map(|f| (f.object.clone(), f.rule.id, f.severity))
        .collect()
}

fn stall_note(f: &Finding) -> &str {
    f.notes
        .iter()
        .find(|n| n.starts_with("replayed rollout stalls"))
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no stall note: {:#?}", f.notes))
}

#[test]
fn each_rollout_verdict_is_about_its_own_deployment() {
    // Two nodes: haproxy (3 replicas), repo-server and server (2 each) all
    // hold required hostname anti-affinity; each stall names its own pods.
    let report = on("argocd-ha", "cluster-2-nodes.yaml").lint();
    let pp003: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.rule.id == "PP003")
        .collect();
    assert_eq!(pp003.len(), 3, "{:#?}", summary(&report.findings));
    for f in pp003 {
        let name = f.object.rsplit('/').next().expect("name");
        let note = stall_note(f);
        assert!(
            note.contains(&format!("argocd/{name}-")),
            "{}: {note}",
            f.object
        );
    }
}

#[test]
fn an_unrelated_stuck_workload_leaves_other_verdicts_alone() {
    // A Deployment that can run nowhere (a node selector no node has)
    // is stuck; on three nodes only haproxy's own rollout deadlocks.
    let dir = install("argocd-ha");
    let stuck =
        std::env::temp_dir().join(format!("podplace-lint-stuck-{}.yaml", std::process::id()));
    std::fs::write(
        &stuck,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu-job, namespace: argocd}\n\
         spec:\n  replicas: 1\n  selector: {matchLabels: {app: gpu-job}}\n  template:\n    \
         metadata: {labels: {app: gpu-job}}\n    spec:\n      nodeSelector: {nvidia.com/gpu.present: \"true\"}\n      \
         containers: [{name: c, image: busybox}]\n",
    )
    .expect("write");
    let loaded = load_paths(
        &[dir.join("manifests.yaml"), stuck.clone()],
        &[dir.join("cluster.yaml")],
    );
    let report = loaded.lint();
    let _ = std::fs::remove_file(&stuck);
    assert_eq!(
        summary(&report.findings),
        [
            (
                "Deployment/argocd/argocd-redis-ha-haproxy".to_string(),
                "PP003",
                Severity::Error
            ),
            (
                "Deployment/argocd/gpu-job".to_string(),
                "PP011",
                Severity::Error
            ),
        ],
        "{:#?}",
        report.findings
    );
    let haproxy = &report.findings[0];
    assert!(stall_note(haproxy).contains("argocd/argocd-redis-ha-haproxy-"));
    assert!(haproxy.fix.as_ref().is_some_and(|f| f.verified.is_some()));
}

#[test]
fn a_deployment_that_cannot_be_placed_gets_pp011_and_no_rollout_verdict() {
    let loaded = crate::support::yaml(
        "unplaceable.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {kubernetes.io/hostname: a, kubernetes.io/os: linux}}\n\
         status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {kubernetes.io/hostname: b, kubernetes.io/os: linux}}\n\
         status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 2\n  \
         selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      \
         nodeSelector: {kubernetes.io/os: windows}\n      affinity:\n        podAntiAffinity:\n          \
         requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {app: web}}\n            \
         topologyKey: kubernetes.io/hostname\n      containers: [{name: c, image: nginx}]\n",
    );
    let report = loaded.lint();
    assert_eq!(
        summary(&report.findings),
        [("Deployment/shop/web".to_string(), "PP011", Severity::Error)],
        "{:#?}",
        report.findings
    );
}

#[test]
fn nodes_without_kubelet_labels_give_one_note_and_the_same_verdicts() {
    let labelled = on("argocd-ha", "cluster.yaml").lint();
    let bare = on("argocd-ha", "cluster-no-kubelet-labels.yaml").lint();
    let notes: Vec<&Finding> = bare
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .collect();
    assert_eq!(notes.len(), 1, "{:#?}", summary(&bare.findings));
    let note = notes[0];
    assert_eq!(note.rule.id, "PP011");
    assert!(
        note.message.contains("kubernetes.io/os"),
        "{}",
        note.message
    );
    assert!(
        note.notes
            .iter()
            .any(|n| n.contains("Deployment/argocd/argocd-server")),
        "{:#?}",
        note.notes
    );
    let rest: Vec<_> = bare
        .findings
        .iter()
        .filter(|f| f.severity != Severity::Note)
        .map(|f| (f.object.clone(), f.rule.id))
        .collect();
    let expected: Vec<_> = labelled
        .findings
        .iter()
        .map(|f| (f.object.clone(), f.rule.id))
        .collect();
    assert_eq!(rest, expected);
}
