//! The gauges as the `/metrics` server encodes them: expected lines,
//! bounded label values, leader only.

use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use super::*;
use crate::ha::{HaFinding, HaReport, WorkloadDomains, HOSTNAME, ZONE};

fn text(m: &ServeMetrics) -> String {
    let mut registry = Registry::default();
    m.register(&mut registry);
    let mut out = String::new();
    encode(&mut out, &registry).expect("encodes");
    out
}

/// The sample lines of one metric, sorted.
fn samples(text: &str, name: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

fn workload(name: &str) -> WorkloadRef {
    WorkloadRef::new(WorkloadKind::Deployment, "default", name)
}

/// A workload: name, running replicas, nodes used, HA lost.
type Row = (&'static str, usize, usize, bool);

fn report(workloads: &[Row]) -> HaReport {
    let mut r = HaReport::default();
    for &(name, running, nodes, lost) in workloads {
        for (key, domains) in [(HOSTNAME, nodes), (ZONE, 1)] {
            r.domains.push(WorkloadDomains {
                workload: workload(name),
                running,
                topology_key: key.to_string(),
                domains,
            });
        }
        if lost {
            r.findings.push(HaFinding {
                kind: HaKind::HALost,
                workload: workload(name),
                topology_key: Some(HOSTNAME.to_string()),
                domain: Some("worker1".to_string()),
                message: String::new(),
                fix: None,
            });
        }
    }
    r
}

fn leader(top: usize) -> ServeMetrics {
    let m = ServeMetrics::new(top);
    m.set_leader(true);
    m
}

#[test]
fn ha_gauges_encode_as_expected_lines() {
    let m = leader(10);
    m.set_ha(&report(&[
        ("demo-app", 5, 1, true),
        ("web", 3, 3, false),
        ("solo", 1, 1, false),
    ]));
    let t = text(&m);
    assert!(t.ends_with("# EOF\n"), "{t}");
    assert!(t.contains("# TYPE podplace_ha_lost gauge\n"), "{t}");
    assert!(
        t.contains("# TYPE podplace_workload_domains gauge\n"),
        "{t}"
    );
    assert_eq!(
        samples(&t, "podplace_ha_lost"),
        [
            r#"podplace_ha_lost{namespace="default",workload="demo-app"} 1"#,
            r#"podplace_ha_lost{namespace="default",workload="web"} 0"#,
        ],
        "a single replica is no HA series"
    );
    assert_eq!(
        samples(&t, "podplace_workload_domains"),
        [
            r#"podplace_workload_domains{namespace="default",workload="demo-app",topology_key="kubernetes.io/hostname"} 1"#,
            r#"podplace_workload_domains{namespace="default",workload="demo-app",topology_key="topology.kubernetes.io/zone"} 1"#,
            r#"podplace_workload_domains{namespace="default",workload="web",topology_key="kubernetes.io/hostname"} 3"#,
            r#"podplace_workload_domains{namespace="default",workload="web",topology_key="topology.kubernetes.io/zone"} 1"#,
        ]
    );
    // After a rebalance the workload spreads: the series stays, at 0.
    m.set_ha(&report(&[("demo-app", 5, 3, false), ("web", 3, 3, false)]));
    assert_eq!(
        samples(&text(&m), "podplace_ha_lost")[0],
        r#"podplace_ha_lost{namespace="default",workload="demo-app"} 0"#
    );
}

#[test]
fn labels_past_the_top_fold_into_other() {
    // (top, workloads as (name, running, nodes, lost), expected ha_lost lines)
    let table: [(usize, Vec<Row>, Vec<&str>); 3] = [
        (
            2,
            vec![
                ("a", 9, 1, false),
                ("b", 2, 1, true),
                ("c", 5, 1, true),
                ("d", 3, 2, false),
            ],
            // Lost first (c has more replicas than b), the rest folded.
            vec![
                r#"podplace_ha_lost{namespace="default",workload="b"} 1"#,
                r#"podplace_ha_lost{namespace="default",workload="c"} 1"#,
                r#"podplace_ha_lost{namespace="other",workload="other"} 0"#,
            ],
        ),
        (
            1,
            vec![("a", 9, 1, true), ("b", 2, 1, true), ("c", 5, 1, true)],
            vec![
                r#"podplace_ha_lost{namespace="default",workload="a"} 1"#,
                r#"podplace_ha_lost{namespace="other",workload="other"} 2"#,
            ],
        ),
        (
            5,
            vec![("a", 9, 1, false)],
            vec![r#"podplace_ha_lost{namespace="default",workload="a"} 0"#],
        ),
    ];
    for (i, (top, workloads, want)) in table.into_iter().enumerate() {
        let m = leader(top);
        m.set_ha(&report(&workloads));
        let t = text(&m);
        assert_eq!(samples(&t, "podplace_ha_lost"), want, "row {i}");
        // At most top + 1 workloads per metric, whatever the cluster.
        let series = samples(&t, "podplace_workload_domains").len();
        assert!(series <= 2 * (top + 1), "row {i}: {series}");
    }
    // `other` in workload_domains holds the fewest domains of the rest.
    let m = leader(1);
    m.set_ha(&report(&[
        ("a", 9, 4, false),
        ("b", 3, 2, false),
        ("c", 3, 3, false),
    ]));
    assert!(samples(&text(&m), "podplace_workload_domains").contains(
        &r#"podplace_workload_domains{namespace="other",workload="other",topology_key="kubernetes.io/hostname"} 2"#.to_string()
    ));
}

fn pending(ns: &str, w: &str, plugin: &str) -> PendingSample {
    PendingSample {
        namespace: ns.to_string(),
        workload: w.to_string(),
        plugin: plugin.to_string(),
    }
}

#[test]
fn pending_and_blockers_are_bounded() {
    let m = leader(1);
    let mut rows = vec![pending("db", "vault", "InterPodAffinity"); 3];
    rows.push(pending("web", "shop", "NodeResourcesFit"));
    rows.push(pending("web", "cart", "NodeResourcesFit"));
    rows.push(pending("web", "cart", "TaintToleration"));
    m.set_pending(&rows);
    m.set_blocked_by(&[
        ("StatefulSet/stokesnet/prometheus-server".to_string(), 3),
        ("Deployment/web/a".to_string(), 1),
        ("Deployment/web/b".to_string(), 1),
    ]);
    let t = text(&m);
    assert_eq!(
        samples(&t, "podplace_pending_pods"),
        [
            r#"podplace_pending_pods{namespace="db",workload="vault",plugin="InterPodAffinity"} 3"#,
            r#"podplace_pending_pods{namespace="other",workload="other",plugin="NodeResourcesFit"} 2"#,
            r#"podplace_pending_pods{namespace="other",workload="other",plugin="TaintToleration"} 1"#,
        ]
    );
    assert_eq!(
        samples(&t, "podplace_blocked_by"),
        [
            r#"podplace_blocked_by{blocking_workload="StatefulSet/stokesnet/prometheus-server"} 3"#,
            r#"podplace_blocked_by{blocking_workload="other"} 2"#,
        ]
    );
    // The next tick replaces the series: a pod that bound is gone.
    m.set_pending(&rows[..1]);
    assert_eq!(samples(&text(&m), "podplace_pending_pods").len(), 1);
}

#[test]
fn only_the_leader_exports_findings() {
    let m = ServeMetrics::new(10);
    let r = report(&[("demo-app", 5, 1, true)]);
    // Not leading: updates are ignored.
    m.set_ha(&r);
    m.set_pending(&[pending("db", "vault", "InterPodAffinity")]);
    let t = text(&m);
    assert!(samples(&t, "podplace_ha_lost").is_empty(), "{t}");
    assert!(samples(&t, "podplace_pending_pods").is_empty(), "{t}");
    // Leading: exported.
    m.set_leader(true);
    m.set_ha(&r);
    m.set_pending(&[pending("db", "vault", "InterPodAffinity")]);
    assert_eq!(samples(&text(&m), "podplace_ha_lost").len(), 1);
    // Lease lost: cleared at once, and later updates stay out.
    m.set_leader(false);
    m.set_ha(&r);
    let t = text(&m);
    assert!(samples(&t, "podplace_ha_lost").is_empty(), "{t}");
    assert!(samples(&t, "podplace_pending_pods").is_empty(), "{t}");
    assert_eq!(t, "# EOF\n", "no findings series at all");
}

#[test]
fn bound_keys_keeps_the_first_top() {
    let map = bound_keys(&["a", "b", "c"], 2, &"other");
    assert_eq!(map["a"], "a");
    assert_eq!(map["b"], "b");
    assert_eq!(map["c"], "other");
}

#[test]
fn rounds_are_counted_by_role_whoever_leads() {
    let m = ServeMetrics::new(10);
    m.count_round(Round::Standby);
    m.count_round(Round::Standby);
    m.set_leader(true);
    m.count_round(Round::Leader);
    // Unlike the findings, the counts stay when the Lease is lost.
    m.set_leader(false);
    assert_eq!(
        samples(&text(&m), "podplace_rounds_total"),
        [
            "podplace_rounds_total{role=\"leader\"} 1",
            "podplace_rounds_total{role=\"standby\"} 2",
        ]
    );
}
