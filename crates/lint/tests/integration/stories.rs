//! The four stories of STORIES.md, linted: each triggers its rule at the
//! offending term, and the fixed manifests produce no finding.

use podplace_lint::{Finding, Severity};

fn only(report: &podplace_lint::Report) -> &Finding {
    assert_eq!(
        report.findings.len(),
        1,
        "expected one finding, got {:#?}",
        report.findings
    );
    &report.findings[0]
}

fn file_name(f: &Finding) -> &str {
    f.location.file.rsplit('/').next().unwrap_or("")
}

#[test]
fn vault_flags_prometheus_selector_naming_vault() {
    let report = crate::support::story("vault").lint();
    let f = only(&report);
    assert_eq!(f.rule.id, "PP001");
    assert_eq!(f.object, "StatefulSet/stokesnet/prometheus-server");
    assert_eq!(file_name(f), "prometheus.yaml");
    // `matchExpressions:` of prometheus' term, the selector that is too broad.
    assert_eq!((f.location.line, f.location.column), (23, 15));
    assert_eq!((f.location.end_line, f.location.end_column), (24, 65));
    assert_eq!(
        f.location.field,
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
    );
    assert!(
        f.message.contains("StatefulSet/stokesnet/vault"),
        "{}",
        f.message
    );
    let related = &f.related[0];
    assert_eq!(related.object, "StatefulSet/stokesnet/vault");
    let loc = related
        .location
        .as_ref()
        .expect("vault's labels are located");
    assert!(loc.file.ends_with("vault.yaml"));
    assert_eq!(loc.field, "spec.template.metadata.labels");
    let fix = f.fix.as_ref().expect("a narrowed selector");
    assert!(
        fix.patch.contains(
            "          - labelSelector:\n              matchLabels:\n                app: prometheus\n                component: server\n                release: prometheus\n"
        ),
        "{}",
        fix.patch
    );
    assert!(fix.verified.is_some());
}

#[test]
fn doesnotexist_flags_the_negative_operator() {
    let report = crate::support::story("doesnotexist").lint();
    let f = only(&report);
    assert_eq!(f.rule.id, "PP002");
    assert_eq!(f.object, "Pod/default/pod-2");
    assert_eq!(file_name(f), "pod-2.yaml");
    assert_eq!((f.location.line, f.location.column), (15, 34));
    assert!(
        f.notes.iter().any(|n| n.contains("constrains nothing")),
        "{:?}",
        f.notes
    );
    let fix = f.fix.as_ref().expect("the anti-affinity rewrite");
    assert!(fix.patch.contains("podAffinity: null"), "{}", fix.patch);
    assert!(fix.patch.contains("podAntiAffinity:"), "{}", fix.patch);
    assert!(fix.patch.contains("operator: Exists"), "{}", fix.patch);
}

#[test]
fn rollout_flags_the_deadlock_with_a_verified_strategy_fix() {
    let report = crate::support::story("rollout").lint();
    let f = only(&report);
    assert_eq!(f.rule.id, "PP003");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.object, "Deployment/default/web");
    // No strategy is written: the span is the replica count it rounds against.
    assert_eq!((f.location.line, f.location.column), (8, 13));
    assert_eq!(f.location.field, "spec.replicas");
    let term = f.related[0]
        .location
        .as_ref()
        .expect("the anti-affinity term");
    assert_eq!((term.line, term.column), (18, 13));
    let fix = f.fix.as_ref().expect("a strategy fix");
    assert_eq!(
        fix.patch,
        "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 50%\n"
    );
    let verified = fix.verified.as_deref().expect("verified by replay");
    assert!(verified.contains("maxSurge: 0"), "{verified}");
}

#[test]
fn drift_flags_preferred_only_spread() {
    let report = crate::support::story("drift").lint();
    let f = only(&report);
    assert_eq!(f.rule.id, "PP004");
    assert_eq!(f.object, "Deployment/default/demo-app");
    assert_eq!((f.location.line, f.location.column), (17, 13));
    assert!(f
        .help
        .as_deref()
        .unwrap_or("")
        .contains("podplace rebalance"));
    let fix = f.fix.as_ref().expect("a spread constraint");
    assert!(
        fix.patch.contains("whenUnsatisfiable: DoNotSchedule"),
        "{}",
        fix.patch
    );
}

#[test]
fn fixed_stories_produce_no_finding() {
    for dir in ["vault-fixed", "rollout-fixed", "drift-fixed"] {
        let report = crate::support::story(dir).lint();
        assert!(report.findings.is_empty(), "{dir}: {:#?}", report.findings);
        assert!(report.objects > 0, "{dir}");
    }
    let s = crate::support::stories();
    let report = crate::support::load_paths(
        &[s.join("doesnotexist-fixed")],
        &[s.join("doesnotexist/cluster.yaml")],
    )
    .lint();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn the_stalled_rollout_state_lints_against_its_cluster() {
    // Pods of the manifests bound to nodes of the snapshot load fine.
    let s = crate::support::stories();
    let loaded = crate::support::load_paths(
        &[s.join("rollout-stalled")],
        &[s.join("rollout/cluster.yaml")],
    );
    let report = loaded.lint();
    assert!(
        report.findings.iter().all(|f| f.rule.id != "PP001"),
        "{:#?}",
        report.findings
    );
}

#[test]
fn vault_linted_alone_against_a_cluster_running_prometheus() {
    // prometheus runs in the cluster now: its term is not reported on, but
    // Vault learns that prometheus keeps it off leela, leaving 2 nodes for 3
    // replicas (story 1 from Vault's side).
    let s = crate::support::stories();
    let loaded = crate::support::load_paths(
        &[s.join("vault/vault.yaml")],
        &[
            s.join("vault/cluster.yaml"),
            s.join("vault/prometheus.yaml"),
        ],
    );
    let report = loaded.lint();
    let f = only(&report);
    assert_eq!(f.rule.id, "PP012");
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.object, "StatefulSet/stokesnet/vault");
    assert_eq!(f.location.field, "spec.template.metadata.labels");
    assert_eq!((f.location.line, f.location.column), (20, 9));
    assert!(
        f.message.contains("kubernetes.io/hostname=leela"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("StatefulSet/stokesnet/prometheus-server"),
        "{}",
        f.message
    );
    assert!(
        f.notes.iter().any(|n| n.contains(
            "2 of 3 eligible node(s) remain (bender, farnsworth): 1 pod(s) will stay Pending"
        )),
        "{:#?}",
        f.notes
    );
    // With prometheus fixed, nothing keeps Vault away.
    let fixed = crate::support::load_paths(
        &[s.join("vault-fixed/vault.yaml")],
        &[
            s.join("vault-fixed/cluster.yaml"),
            s.join("vault-fixed/prometheus.yaml"),
        ],
    )
    .lint();
    assert!(fixed.findings.is_empty(), "{:#?}", fixed.findings);
}

/// The PP003 finding of a report, with its verified fix patch.
fn pp003_fix(report: &podplace_lint::Report) -> (String, String) {
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP003")
        .unwrap_or_else(|| panic!("no PP003: {:#?}", report.findings));
    assert_eq!(f.object, "Deployment/default/web");
    assert_eq!(f.help, None, "{f:#?}");
    let fix = f.fix.as_ref().unwrap_or_else(|| panic!("no fix: {f:#?}"));
    (
        fix.patch.clone(),
        fix.verified.clone().expect("verified by replay"),
    )
}

#[test]
fn the_story_rollout_over_its_running_pods_gets_the_verified_fix() {
    // Story 4 as a snapshot shows it while web runs: the replay starts from
    // web's real ReplicaSet and pods (one per node), and the manifest rolls
    // out over them.
    let s = crate::support::stories();
    let cluster = s.join("rollout-running/cluster.yaml");
    let report = crate::support::load_paths(
        &[s.join("rollout/web.yaml")],
        std::slice::from_ref(&cluster),
    )
    .lint();
    assert_eq!(only(&report).rule.id, "PP003");
    let (patch, verified) = pp003_fix(&report);
    assert_eq!(
        patch,
        "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 50%\n"
    );
    assert!(
        verified.contains("maxUnavailable: 50% completes"),
        "{verified}"
    );
    let fixed = crate::support::load_paths(&[s.join("rollout-fixed/web.yaml")], &[cluster]).lint();
    assert!(fixed.findings.is_empty(), "{:#?}", fixed.findings);
}

#[test]
fn a_new_revision_over_three_running_pods_gets_the_verified_fix() {
    // The live control plane's shape: 3 nodes, the Deployment's 3 pods.
    let dir = crate::support::fixtures().join("PP003/positive");
    let loaded = crate::support::load_paths(
        &[dir.join("new-revision-over-running-pods.yaml")],
        &[dir.join("new-revision-over-running-pods.cluster.yaml")],
    );
    let report = loaded.lint();
    assert_eq!(only(&report).rule.id, "PP003");
    let (patch, verified) = pp003_fix(&report);
    assert_eq!(
        patch,
        "spec:\n  strategy:\n    rollingUpdate:\n      maxUnavailable: 34%\n"
    );
    assert!(
        verified.contains("maxUnavailable: 34% completes"),
        "{verified}"
    );
}

#[test]
fn orphaned_replica_sets_and_pods_are_adopted_by_selector_for_the_replay() {
    // Without owner references (e.g. the Deployment was deleted with
    // --cascade=orphan and applied again), the controllers adopt the
    // ReplicaSet and the pods their selectors match, as in the cluster.
    let dir = crate::support::fixtures().join("PP003/positive");
    let mut loaded = crate::support::load_paths(
        &[dir.join("new-revision-over-running-pods.yaml")],
        &[dir.join("new-revision-over-running-pods.cluster.yaml")],
    );
    let snapshot = loaded.snapshot.as_mut().expect("a snapshot");
    for rs in &mut snapshot.replica_sets {
        rs.object.metadata.owner_references = None;
    }
    for pod in &mut snapshot.pods {
        pod.object.metadata.owner_references = None;
    }
    let (patch, _) = pp003_fix(&loaded.lint());
    assert!(patch.contains("maxUnavailable: 34%"), "{patch}");
}

#[test]
fn a_snapshot_alone_is_linted_as_the_workloads_running_there() {
    // `podplace lint --cluster FILE` with no manifests: the Deployment of
    // the snapshot is the subject, its ReplicaSet and pods stay running.
    let s = crate::support::stories();
    let cluster = crate::support::load_paths(&[s.join("rollout-running/cluster.yaml")], &[]);
    let (workloads, rest) = podplace_lint::running_workloads(&cluster.manifests);
    assert_eq!(workloads.deployments.len(), 1);
    assert!(workloads.pods.is_empty() && workloads.replica_sets.is_empty());
    assert_eq!(
        (rest.pods.len(), rest.replica_sets.len(), rest.nodes.len()),
        (2, 1, 2)
    );
    let report = podplace_lint::lint(
        &workloads,
        &cluster.map,
        Some(&rest),
        &podplace_lint::LintOptions::default(),
    )
    .unwrap();
    assert_eq!(
        only(&report).location.field,
        "spec.strategy.rollingUpdate.maxUnavailable"
    );
    let (patch, _) = pp003_fix(&report);
    assert!(patch.contains("maxUnavailable: 50%"), "{patch}");
}
