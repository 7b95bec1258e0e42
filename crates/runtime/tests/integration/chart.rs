//! The Helm chart's RBAC is least privilege and enough: every request the
//! rebalancer makes in a run (read, plan, evict, leader election) against
//! the test API server is allowed by `charts/podplace`, and the chart grants
//! nothing beyond what a run uses except what `podplace serve` adds to it:
//! a watch on each kind a run lists, and Events (create, and patch for a
//! series). The live test `serve::serve_runs_on_the_charts_rbac_and_nothing_more`
//! checks serve itself on a real API server.

use std::collections::BTreeSet;
use std::time::Duration;

use podplace_kube::testserver::TestServer;
use podplace_kube::{connect, ConnectOptions, LeaseConfig};
use podplace_rebalance::Policy;
use podplace_runtime::daemon::{Daemon, RunResult};
use podplace_runtime::metrics::Metrics;
use serde_json::Value;

fn chart(rel: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../charts/podplace/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// (apiGroup, resource, verb) granted by the rules of a template, with the
/// templated lines (names, labels) left out.
fn granted(template: &str) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for doc in template.split("\n---\n") {
        let plain: String = doc
            .lines()
            .filter(|l| !l.contains("{{"))
            .collect::<Vec<_>>()
            .join("\n");
        let v: Value = serde_saphyr::from_str(&plain).unwrap();
        for rule in v["rules"].as_array().into_iter().flatten() {
            for g in rule["apiGroups"].as_array().unwrap() {
                for r in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        out.insert((
                            g.as_str().unwrap().to_string(),
                            r.as_str().unwrap().to_string(),
                            verb.as_str().unwrap().to_string(),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// What RBAC sees in a request: (apiGroup, resource[/subresource], verb).
fn attributes(method: &str, path: &str, watch: bool) -> Option<(String, String, String)> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", g, _v, rest @ ..] => (*g, rest),
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (resource, named) = match rest {
        [r] => (r.to_string(), false),
        [r, _name] => (r.to_string(), true),
        [r, _name, sub] => (format!("{r}/{sub}"), true),
        _ => return None,
    };
    let verb = match (method, named) {
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => return None,
    };
    Some((group.to_string(), resource, verb.to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_run_is_allowed_and_nothing_more_is_granted() {
    let cluster = granted(&chart("templates/clusterrole.yaml"));
    let role = granted(&chart("templates/role.yaml"));
    // Nothing destructive beyond evictions, no wildcards; writes only to
    // evictions, the Lease and Events.
    for (g, r, v) in cluster.iter().chain(&role) {
        assert!(!g.contains('*') && !r.contains('*') && !v.contains('*'));
        assert!(
            matches!(
                v.as_str(),
                "list" | "watch" | "get" | "create" | "update" | "patch"
            ),
            "{v}"
        );
        if !matches!(v.as_str(), "list" | "watch") {
            assert!(
                r == "pods/eviction" || r == "leases" || (g == "events.k8s.io" && r == "events"),
                "{g} {r} {v}"
            );
        }
    }
    assert_eq!(
        role,
        [
            ("coordination.k8s.io", "leases", "get"),
            ("coordination.k8s.io", "leases", "create"),
            ("coordination.k8s.io", "leases", "update")
        ]
        .into_iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
    );

    let server = TestServer::start().unwrap();
    let dir = std::env::temp_dir().join(format!("podplace-rebalance-chart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    server.write_kubeconfig(&dir.join("kubeconfig")).unwrap();
    let client = connect(&ConnectOptions {
        kubeconfig: Some(dir.join("kubeconfig")),
        context: None,
    })
    .await
    .unwrap();
    let lease = LeaseConfig::new("kube-system", "podplace-rebalancer", "replica-a");
    let daemon = Daemon::new(
        client,
        Policy::default_profile(),
        true,
        Some(lease),
        Metrics::new(),
    )
    .unwrap();
    daemon.start_election(Duration::from_millis(20));
    while !daemon.is_leader() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(matches!(
        daemon.run_once().await.unwrap(),
        RunResult::Ran { .. }
    ));
    // An eviction, as a run that plans one sends it.
    podplace_kube::evict(
        &daemon_client(&dir).await,
        "shop",
        "web-7c67b8584c-k4mnm",
        false,
    )
    .await
    .unwrap();
    daemon.release().await.unwrap();
    let mut seen = BTreeSet::new();
    for r in server.requests() {
        let watch = r
            .query_value("watch")
            .is_some_and(|w| w == "1" || w == "true");
        let Some(attr) = attributes(&r.method, &r.path, watch) else {
            continue;
        };
        let allowed = if attr.1 == "leases" {
            role.contains(&attr)
        } else {
            cluster.contains(&attr)
        };
        assert!(
            allowed,
            "the chart does not allow {attr:?} ({} {})",
            r.method, r.path
        );
        seen.insert(attr);
    }
    // Nothing more is granted: every permission of the chart is one a run
    // uses, or serve's watch of a kind a run lists, or serve's Events.
    for grant in cluster.iter().chain(&role) {
        let (g, r, v) = grant;
        let serves = match v.as_str() {
            "watch" => seen.contains(&(g.clone(), r.clone(), "list".to_string())),
            "create" | "patch" => g == "events.k8s.io" && r == "events",
            _ => false,
        };
        assert!(
            seen.contains(grant) || serves,
            "the chart grants {grant:?}, which neither a run nor serve uses: {seen:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

async fn daemon_client(dir: &std::path::Path) -> podplace_kube::Client {
    connect(&ConnectOptions {
        kubeconfig: Some(dir.join("kubeconfig")),
        context: None,
    })
    .await
    .unwrap()
}
