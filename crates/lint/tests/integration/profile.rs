//! PP011 no-eligible-node under a `--scheduler-config` profile: the
//! profile's `addedAffinity` closes nodes to every pod it serves, and a
//! Filter plugin the profile disables closes none (kube-scheduler never
//! asks it), so the rule must see what kube-scheduler would.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use podplace_engine::profile::Profile;
use podplace_engine::status::Plugin;
use podplace_engine::SchedulerSetup;
use podplace_lint::LintOptions;

/// Nodes in za, zb and zc (zc's tainted); a Deployment without node rules.
const WORLD: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n-a
  labels: {topology.kubernetes.io/zone: za, kubernetes.io/hostname: n-a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: n-b
  labels: {topology.kubernetes.io/zone: zb, kubernetes.io/hostname: n-b}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: n-c
  labels: {topology.kubernetes.io/zone: zc, kubernetes.io/hostname: n-c}
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx
        resources: {requests: {cpu: 100m}}
"#;

/// `addedAffinity` requiring the zone `operator` `zones`.
fn added(operator: &str, zones: &[&str]) -> NodeAffinity {
    NodeAffinity {
        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "topology.kubernetes.io/zone".into(),
                    operator: operator.into(),
                    values: Some(zones.iter().map(|z| z.to_string()).collect()),
                }]),
                match_fields: None,
            }],
        }),
        preferred_during_scheduling_ignored_during_execution: None,
    }
}

/// A configured scheduler with one default-scheduler profile.
fn setup(added_affinity: Option<NodeAffinity>, disabled: &[Plugin]) -> SchedulerSetup {
    let mut p = Profile {
        added_affinity,
        ..Profile::default()
    };
    p.filters.retain(|f| !disabled.contains(f));
    SchedulerSetup::configured(vec![Arc::new(p)], 0)
}

#[test]
fn pp011_sees_the_profiles_added_affinity_and_disabled_filters() {
    let loaded = crate::support::yaml("web.yaml", WORLD);
    let all = ["za", "zb", "zc"];
    // (case, setup, whether PP011 fires, text its notes must hold).
    let table = [
        (
            "default profile: za and zb take it",
            setup(None, &[]),
            false,
            "",
        ),
        (
            "addedAffinity excludes every zone",
            setup(Some(added("NotIn", &all)), &[]),
            true,
            "3 node(s) are excluded by scheduler profile default-scheduler's addedAffinity",
        ),
        (
            "NodeAffinity disabled: addedAffinity is never checked",
            setup(Some(added("NotIn", &all)), &[Plugin::NodeAffinity]),
            false,
            "",
        ),
        (
            "addedAffinity keeps only the tainted zc",
            setup(Some(added("In", &["zc"])), &[]),
            true,
            "1 have taints",
        ),
        (
            "same, with TaintToleration disabled: zc takes it",
            setup(Some(added("In", &["zc"])), &[Plugin::TaintToleration]),
            false,
            "",
        ),
    ];
    for (case, scheduler, fires, note) in table {
        let report = loaded.lint_with(&LintOptions {
            scheduler,
            ..LintOptions::default()
        });
        let hits: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule.id == "PP011")
            .collect();
        assert_eq!(!hits.is_empty(), fires, "{case}: {hits:#?}");
        if fires {
            let notes = hits[0].notes.join("\n");
            assert!(notes.contains(note), "{case}: {notes}");
            let help = hits[0].help.as_deref().unwrap_or("");
            assert_eq!(
                help.contains("addedAffinity"),
                note.contains("addedAffinity"),
                "{case}: {help}"
            );
        }
    }
}
