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
    // Two nodes: repo-server and server (2 replicas each) hold required
    // hostname anti-affinity; each stall names its own pods. haproxy (3
    // replicas) cannot come up on two nodes at all: PP006, no rollout verdict.
    let report = on("argocd-ha", "cluster-2-nodes.yaml").lint();
    let pp003: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.rule.id == "PP003")
        .collect();
    let objects: Vec<&str> = pp003.iter().map(|f| f.object.as_str()).collect();
    assert_eq!(
        objects,
        [
            "Deployment/argocd/argocd-repo-server",
            "Deployment/argocd/argocd-server"
        ],
        "{:#?}",
        summary(&report.findings)
    );
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
    let mut found = summary(&report.findings);
    found.sort();
    assert_eq!(
        found,
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
    let haproxy = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP003")
        .expect("PP003");
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
        .filter(|f| !(f.severity == Severity::Note && f.rule.id == "PP011"))
        .map(|f| (f.object.clone(), f.rule.id))
        .collect();
    let expected: Vec<_> = labelled
        .findings
        .iter()
        .map(|f| (f.object.clone(), f.rule.id))
        .collect();
    assert_eq!(rest, expected);
}

fn pp005(report: &podplace_lint::Report) -> Vec<&Finding> {
    report
        .findings
        .iter()
        .filter(|f| f.rule.id == "PP005")
        .collect()
}

#[test]
fn the_zookeeper_tutorial_selector_that_misses_its_own_pods_is_caught_with_a_placed_fix() {
    for cluster in [true, false] {
        let dir = install("zookeeper-tutorial");
        let loaded = if cluster {
            on("zookeeper-tutorial", "cluster.yaml")
        } else {
            load_paths(&[dir.join("manifests.yaml")], &[])
        };
        let report = loaded.lint();
        let found = pp005(&report);
        assert_eq!(found.len(), 1, "{:#?}", report.findings);
        let f = found[0];
        assert_eq!(f.object, "StatefulSet/default/zk");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("`app In [zk]`"), "{}", f.message);
        assert!(
            f.notes
                .iter()
                .any(|n| n.starts_with("confidence high") && n.contains("`zk`")),
            "{:#?}",
            f.notes
        );
        let fix = f.fix.as_ref().expect("a fix");
        assert!(
            fix.patch.contains("app.kubernetes.io/name: zk"),
            "{}",
            fix.patch
        );
        let verified = fix.verified.as_deref().expect("verified");
        if cluster {
            assert!(
                verified.contains("puts them in 3 distinct kubernetes.io/hostname domain(s) (kube-node-1, kube-node-2, kube-node-3)"),
                "{verified}"
            );
        } else {
            assert!(!verified.contains("placing"), "{verified}");
        }
    }
}

const TWO_NODES: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {kubernetes.io/hostname: a, topology.kubernetes.io/zone: z1}}\n\
    status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n\
    apiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {kubernetes.io/hostname: b, topology.kubernetes.io/zone: z2}}\n\
    status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n";

fn web(affinity: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: 2\n  \
         selector: {{matchLabels: {{app.kubernetes.io/name: web}}}}\n  template:\n    \
         metadata: {{labels: {{app.kubernetes.io/name: web}}}}\n    spec:\n{affinity}      containers: [{{name: c, image: nginx}}]\n"
    )
}

const DB: &str = "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\nspec:\n  replicas: 1\n  \
    serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    \
    spec: {containers: [{name: c, image: postgres}]}\n";

#[test]
fn a_term_that_targets_another_workload_present_stays_silent() {
    let away_from_db = "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          \
        - labelSelector: {matchLabels: {app: db}}\n            topologyKey: kubernetes.io/hostname\n";
    let with_db =
        crate::support::yaml("web.yaml", &format!("{TWO_NODES}{}{DB}", web(away_from_db))).lint();
    assert!(pp005(&with_db).is_empty(), "{:#?}", with_db.findings);
    // Without the database in sight the term selects nothing; nothing in it
    // names web, so it is only a note.
    let alone =
        crate::support::yaml("web.yaml", &format!("{TWO_NODES}{}", web(away_from_db))).lint();
    let found = pp005(&alone);
    assert_eq!(found.len(), 1, "{:#?}", alone.findings);
    assert_eq!(found[0].severity, Severity::Note);
    assert!(found[0]
        .notes
        .iter()
        .any(|n| n.starts_with("confidence low")));
}

#[test]
fn a_spread_selector_that_misses_its_own_pods_is_caught() {
    let stale = "      topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        \
        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {matchLabels: {app: web}}\n";
    let report = crate::support::yaml("web.yaml", &format!("{TWO_NODES}{}", web(stale))).lint();
    let found = pp005(&report);
    assert_eq!(found.len(), 1, "{:#?}", report.findings);
    let f = found[0];
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.location.field,
        "spec.template.spec.topologySpreadConstraints[0].labelSelector"
    );
    let fix = f.fix.as_ref().expect("fix");
    assert!(
        fix.patch.contains("app.kubernetes.io/name: web"),
        "{}",
        fix.patch
    );
    assert!(
        fix.verified.as_deref().is_some_and(
            |v| v.contains("2 distinct topology.kubernetes.io/zone domain(s) (z1, z2)")
        ),
        "{fix:#?}"
    );
}

#[test]
fn pp008_on_a_bare_pod_speaks_of_the_pod_itself() {
    let report = crate::support::yaml(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: cache-client, namespace: shop}\nspec:\n  affinity:\n    podAffinity:\n      \
         requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {matchLabels: {app: cache}}\n        \
         topologyKey: kubernetes.io/hostname\n  containers: [{name: c, image: busybox}]\n",
    )
    .lint();
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP008")
        .unwrap_or_else(|| panic!("{:#?}", report.findings));
    assert!(
        f.message
            .contains("and not the pod itself: it can never be scheduled"),
        "{}",
        f.message
    );
    assert!(!f.message.contains("own pods"), "{}", f.message);
}

#[test]
fn a_tainted_control_plane_zone_and_min_domains_get_verified_spread_fixes() {
    // ingress-nginx's cluster: the kubeadm control plane is alone in its
    // zone; podinfo spreads over zones with the default nodeTaintsPolicy.
    let report = on("ingress-nginx", "cluster.yaml").lint();
    let podinfo: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.object == "Deployment/podinfo/podinfo")
        .collect();
    assert_eq!(podinfo.len(), 1, "{:#?}", summary(&report.findings));
    let f = podinfo[0];
    assert_eq!(f.rule.id, "PP006");
    assert!(f.message.contains("counts dc1-rack-a"), "{}", f.message);
    let fix = f.fix.as_ref().expect("fix");
    assert!(
        fix.patch.contains("nodeTaintsPolicy: Honor"),
        "{}",
        fix.patch
    );
    assert!(fix.verified.is_some());
    // minDomains beyond the two zones there are.
    let spread = "      topologySpreadConstraints:\n      - maxSkew: 1\n        \
        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n        \
        minDomains: 3\n        labelSelector: {matchLabels: {app.kubernetes.io/name: web}}\n";
    let three = web(spread).replace("replicas: 2", "replicas: 3");
    let min = crate::support::yaml("web.yaml", &format!("{TWO_NODES}{three}")).lint();
    let f = min
        .findings
        .iter()
        .find(|f| f.rule.id == "PP006")
        .unwrap_or_else(|| panic!("{:#?}", summary(&min.findings)));
    assert!(
        f.message.contains("minDomains 3 exceeds the 2 eligible"),
        "{}",
        f.message
    );
    assert!(
        !min.findings.iter().any(|f| f.rule.id == "PP003"),
        "{:#?}",
        summary(&min.findings)
    );
}

#[test]
fn a_host_port_rollout_deadlock_is_pp003_with_a_verified_fix() {
    let report = on("ingress-nginx", "cluster.yaml").lint();
    let f = report
        .findings
        .iter()
        .find(|f| f.object == "Deployment/ingress-nginx/ingress-nginx-controller")
        .unwrap_or_else(|| panic!("{:#?}", summary(&report.findings)));
    assert_eq!(f.rule.id, "PP003");
    assert!(
        f.message.contains("hostPort 80: one pod per node"),
        "{}",
        f.message
    );
    assert!(f.fix.as_ref().is_some_and(|x| x.verified.is_some()));
}

#[test]
fn a_multi_replica_workload_without_any_spread_rule_gets_a_verified_note() {
    let report = crate::support::yaml("web.yaml", &format!("{TWO_NODES}{}", web(""))).lint();
    let f = report
        .findings
        .iter()
        .find(|f| f.rule.id == "PP004")
        .unwrap_or_else(|| panic!("{:#?}", summary(&report.findings)));
    assert_eq!(f.severity, Severity::Note);
    assert!(
        f.message.contains("no anti-affinity or spread rule"),
        "{}",
        f.message
    );
    let fix = f.fix.as_ref().expect("fix");
    assert!(
        fix.patch.contains("whenUnsatisfiable: DoNotSchedule"),
        "{}",
        fix.patch
    );
    assert!(
        fix.verified
            .as_deref()
            .is_some_and(|v| v.contains("puts them on 2 node(s), none Pending")),
        "{fix:#?}"
    );
}
