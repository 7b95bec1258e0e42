//! The live-cluster code against the test API server, which answers with a
//! real v1.36.2 API server's recorded responses (`shared/fixtures/`).

use std::time::Duration;

use podplace_kube::testserver::{fixture_body, TestServer};
use podplace_kube::{
    connect, evict, fetch_inventory, list_pods, ConnectOptions, Error, EvictionOutcome,
    FetchOptions, LeaderElector, LeaderState, LeaseConfig,
};

/// A server and a client connected to it through a kubeconfig file, as a
/// user would connect (`--kubeconfig`, `--context`).
async fn setup(context: Option<&str>) -> (TestServer, podplace_kube::Client, tempdir::Dir) {
    let server = TestServer::start().expect("test server starts");
    let dir = tempdir::Dir::new();
    let path = dir.path().join("kubeconfig");
    server.write_kubeconfig(&path).expect("kubeconfig written");
    let client = connect(&ConnectOptions {
        kubeconfig: Some(path),
        context: context.map(str::to_string),
    })
    .await
    .expect("connects");
    (server, client, dir)
}

/// A scratch directory removed on drop (no extra dependency for one use).
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let p =
                std::env::temp_dir().join(format!("podplace-kube-test-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&p).expect("temp dir");
            Dir(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn names<
    'a,
    K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> + 'a,
>(
    objects: impl IntoIterator<Item = &'a podplace_model::inventory::Sourced<K>>,
) -> Vec<String> {
    objects
        .into_iter()
        .map(|s| {
            let m = s.object.metadata();
            match &m.namespace {
                Some(ns) => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
                None => m.name.clone().unwrap_or_default(),
            }
        })
        .collect()
}

fn recorded_pod_names() -> Vec<String> {
    let body = fixture_body("lists/pods.json").expect("recorded pods");
    body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["metadata"]["namespace"].as_str().unwrap_or(""),
                p["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// `(continue token or "-", status)` of every pods list request.
fn pod_list_calls(server: &TestServer) -> Vec<(String, u16)> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/pods")
        .map(|r| {
            (
                r.query_value("continue")
                    .unwrap_or("-")
                    .chars()
                    .take(12)
                    .collect(),
                r.status,
            )
        })
        .collect()
}

#[tokio::test]
async fn whole_cluster_is_read_with_every_kind() {
    let (server, client, _dir) = setup(None).await;
    let fetched = fetch_inventory(&client, &FetchOptions::default())
        .await
        .expect("fetch");
    let inv = &fetched.inventory;
    assert!(fetched.unreadable.is_empty(), "{:?}", fetched.unreadable);
    assert_eq!(
        names(&inv.nodes),
        ["infra-1", "worker-1", "worker-2", "worker-3"]
    );
    assert_eq!(names(&inv.pods), recorded_pod_names());
    assert_eq!(names(&inv.deployments), ["shop/web"]);
    assert_eq!(names(&inv.stateful_sets), ["data/db"]);
    assert_eq!(names(&inv.daemon_sets), ["kube-system/log-agent"]);
    assert_eq!(names(&inv.pod_disruption_budgets), ["data/db-pdb"]);
    assert_eq!(
        names(&inv.priority_classes),
        [
            "data-critical",
            "system-cluster-critical",
            "system-node-critical"
        ]
    );
    assert!(names(&inv.namespaces).contains(&"shop".to_string()));
    assert!(inv.jobs.is_empty() && inv.replication_controllers.is_empty());
    assert!(inv.runtime_classes.is_empty());
    assert_eq!(inv.pods[0].origin.file, "api:pods");
    assert_eq!(inv.nodes[0].origin.file, "api:nodes");
    // Every list was asked for in pages of the default size.
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .collect();
    // 14 kinds for pods and workloads, 9 for volumes and DRA claims.
    assert_eq!(lists.len(), 23, "{lists:#?}");
    assert!(lists.iter().all(|r| r.query_value("limit") == Some("500")));
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
}

#[tokio::test]
async fn pagination_follows_continue_tokens_and_yields_every_pod() {
    let (server, client, _dir) = setup(None).await;
    let opts = FetchOptions {
        page_size: 3,
        ..FetchOptions::default()
    };
    let fetched = fetch_inventory(&client, &opts).await.expect("fetch");
    assert_eq!(names(&fetched.inventory.pods), recorded_pod_names());
    // The recorded pages: the first without a token, three continues, all 200.
    let calls = pod_list_calls(&server);
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert_eq!(calls[0], ("-".to_string(), 200));
    assert!(calls[1..]
        .iter()
        .all(|(t, s)| t.starts_with("eyJ") && *s == 200));
    // Lists larger than a page elsewhere are paginated too (nodes: 4 in pages of 3).
    let node_calls = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/nodes")
        .count();
    assert_eq!(node_calls, 2);
    assert_eq!(fetched.inventory.nodes.len(), 4);
}

#[tokio::test]
async fn expired_continue_token_restarts_the_list_and_says_so() {
    let (server, client, _dir) = setup(None).await;
    server.expire_continue_once().expect("script");
    let opts = FetchOptions {
        page_size: 3,
        ..FetchOptions::default()
    };
    let fetched = fetch_inventory(&client, &opts).await.expect("fetch");
    // No pod is lost or doubled by the restart.
    assert_eq!(names(&fetched.inventory.pods), recorded_pod_names());
    let statuses: Vec<u16> = pod_list_calls(&server).iter().map(|c| c.1).collect();
    assert_eq!(statuses, [200, 410, 200, 200, 200, 200]);
    let calls = pod_list_calls(&server);
    assert_eq!(calls[2].0, "-", "the list restarts from the first page");
    let warning = fetched
        .inventory
        .warnings
        .iter()
        .find(|w| w.contains("410"))
        .expect("the restart is reported");
    assert_eq!(
        warning,
        "list pods: the continue token expired (410 Gone) after 3 object(s); listing again from the start for a consistent result"
    );
}

#[tokio::test]
async fn a_list_that_keeps_expiring_is_an_error() {
    let (server, client, _dir) = setup(None).await;
    let token = fixture_body("lists/pods-limit3-page1.json").expect("page 1")["metadata"]
        ["continue"]
        .as_str()
        .expect("token")
        .to_string();
    server
        .answer_fixture(
            "GET",
            "/api/v1/pods",
            &[("continue", &token)],
            "errors/pods-continue-page1-token.json",
            None,
        )
        .expect("script");
    let opts = FetchOptions {
        page_size: 3,
        max_restarts: 2,
        ..FetchOptions::default()
    };
    let err = fetch_inventory(&client, &opts).await.expect_err("gives up");
    assert!(
        matches!(err, Error::ListExpired { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(err.exit_code(), 3);
    assert_eq!(
        pod_list_calls(&server)
            .iter()
            .filter(|c| c.1 == 410)
            .count(),
        3
    );
}

#[tokio::test]
async fn forbidden_lists_are_reported_and_the_rest_still_loads() {
    // The admin, except that nodes and the pods of `data` answer the
    // recorded 403s of ServiceAccount shop/pod-lister.
    let (server, client, _dir) = setup(None).await;
    server
        .answer_fixture(
            "GET",
            "/api/v1/nodes",
            &[],
            "rbac/nodes-forbidden-403.json",
            None,
        )
        .expect("script");
    server
        .answer_fixture(
            "GET",
            "/api/v1/namespaces/data/pods",
            &[],
            "rbac/data-pods-forbidden-403.json",
            None,
        )
        .expect("script");
    let opts = FetchOptions {
        namespaces: vec!["shop".into(), "data".into()],
        ..FetchOptions::default()
    };
    let fetched = fetch_inventory(&client, &opts).await.expect("fetch");
    let unreadable: Vec<String> = fetched.unreadable.iter().map(|u| u.to_string()).collect();
    assert_eq!(
        unreadable,
        [
            "nodes: nodes is forbidden: User \"system:serviceaccount:shop:pod-lister\" cannot list resource \"nodes\" in API group \"\" at the cluster scope",
            "pods in namespace data: pods is forbidden: User \"system:serviceaccount:shop:pod-lister\" cannot list resource \"pods\" in API group \"\" in the namespace \"data\"",
        ]
    );
    let inv = &fetched.inventory;
    assert!(inv.nodes.is_empty());
    assert_eq!(
        names(&inv.pods),
        [
            "shop/debug-shell",
            "shop/web-7c67b8584c-7qkt7",
            "shop/web-7c67b8584c-k4mnm",
            "shop/web-7c67b8584c-kdsmf"
        ]
    );
    assert_eq!(names(&inv.stateful_sets), ["data/db"]);
    assert_eq!(names(&inv.pod_disruption_budgets), ["data/db-pdb"]);
    assert_eq!(names(&inv.deployments), ["shop/web"]);
}

#[tokio::test]
async fn a_user_who_may_only_list_shop_pods_gets_those_and_a_list_of_what_was_refused() {
    let (_server, client, _dir) = setup(Some("pod-lister")).await;
    let opts = FetchOptions {
        namespaces: vec!["shop".into()],
        ..FetchOptions::default()
    };
    let fetched = fetch_inventory(&client, &opts).await.expect("fetch");
    assert_eq!(fetched.inventory.pods.len(), 4);
    let refused: Vec<&str> = fetched
        .unreadable
        .iter()
        .map(|u| u.resource.as_str())
        .collect();
    assert_eq!(
        refused,
        [
            "nodes",
            "namespaces",
            "priorityclasses",
            "runtimeclasses",
            "services",
            "poddisruptionbudgets",
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "jobs",
            "cronjobs",
            "replicationcontrollers",
            "persistentvolumes",
            "persistentvolumeclaims",
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "resourceclaims",
            "deviceclasses",
            "resourceslices"
        ]
    );
    let deployments = &fetched.unreadable[6];
    assert_eq!(deployments.namespace.as_deref(), Some("shop"));
    assert_eq!(
        deployments.reason,
        "deployments.apps is forbidden: User \"system:serviceaccount:shop:pod-lister\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"shop\""
    );
}

#[tokio::test]
async fn an_unknown_token_is_an_api_error_with_exit_code_3() {
    let (_server, client, _dir) = setup(Some("bad-token")).await;
    let err = fetch_inventory(&client, &FetchOptions::default())
        .await
        .expect_err("401");
    assert_eq!(err.status_code(), Some(401));
    assert_eq!(err.exit_code(), 3);
    assert_eq!(
        err.to_string(),
        "list nodes: the API server answered 401 Unauthorized: Unauthorized"
    );
}

#[tokio::test]
async fn a_server_that_is_gone_is_a_transport_error() {
    let (server, client, _dir) = setup(None).await;
    drop(server);
    let err = fetch_inventory(&client, &FetchOptions::default())
        .await
        .expect_err("no server");
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 3);
}

#[tokio::test]
async fn kubeconfig_problems_are_usage_errors() {
    let dir = tempdir::Dir::new();
    let missing = dir.path().join("nope");
    let err = connect(&ConnectOptions {
        kubeconfig: Some(missing),
        context: None,
    })
    .await
    .err()
    .expect("a missing file is an error");
    assert_eq!(err.exit_code(), 2);
    let server = TestServer::start().expect("server");
    let path = dir.path().join("kubeconfig");
    server.write_kubeconfig(&path).expect("written");
    let err = connect(&ConnectOptions {
        kubeconfig: Some(path),
        context: Some("no-such-context".into()),
    })
    .await
    .err()
    .expect("an unknown context is an error");
    assert!(matches!(err, Error::Kubeconfig { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-context"), "{err}");
}

#[tokio::test]
async fn eviction_outcomes_follow_the_recorded_answers() {
    let (server, client, _dir) = setup(None).await;
    let cases: &[(&str, &str, bool, EvictionOutcome)] = &[
        (
            "shop",
            "web-7c67b8584c-k4mnm",
            true,
            EvictionOutcome::Evicted,
        ),
        (
            "shop",
            "web-7c67b8584c-k4mnm",
            false,
            EvictionOutcome::Evicted,
        ),
        (
            "data",
            "db-0",
            false,
            EvictionOutcome::Blocked {
                message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
                causes: vec![
                    "The disruption budget db-pdb needs 2 healthy pods and has 2 currently".into(),
                ],
            },
        ),
        (
            "data",
            "db-0",
            true,
            EvictionOutcome::Blocked {
                message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
                causes: vec![
                    "The disruption budget db-pdb needs 2 healthy pods and has 2 currently".into(),
                ],
            },
        ),
        ("shop", "web-does-not-exist", false, EvictionOutcome::Gone),
    ];
    for (ns, name, dry_run, want) in cases {
        let got = evict(&client, ns, name, *dry_run).await.expect("answer");
        assert_eq!(&got, want, "{ns}/{name} dry_run={dry_run}");
    }
    // Each went to the eviction subresource as a policy/v1 Eviction.
    let posts: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), cases.len());
    let statuses: Vec<u16> = posts.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [201, 201, 429, 429, 404]);
    assert_eq!(
        posts[0].path,
        "/api/v1/namespaces/shop/pods/web-7c67b8584c-k4mnm/eviction"
    );
    assert_eq!(posts[0].query_value("dryRun"), Some("All"));
    assert_eq!(posts[1].query_value("dryRun"), None);
    let body = posts[2].body.as_ref().expect("body");
    assert_eq!(body["apiVersion"], "policy/v1");
    assert_eq!(body["kind"], "Eviction");
    assert_eq!(body["metadata"]["name"], "db-0");
    assert_eq!(body["metadata"]["namespace"], "data");
}

#[tokio::test]
async fn eviction_forbidden_and_invalid_names() {
    let (_server, client, _dir) = setup(Some("pod-lister")).await;
    let got = evict(&client, "shop", "debug-shell", false)
        .await
        .expect("answer");
    assert_eq!(
        got,
        EvictionOutcome::Forbidden {
            message: "pods \"debug-shell\" is forbidden: User \"system:serviceaccount:shop:pod-lister\" cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"shop\"".into()
        }
    );
    let err = evict(&client, "shop", "../nodes", false)
        .await
        .expect_err("bad name");
    assert_eq!(err.exit_code(), 2);
}

#[tokio::test]
async fn a_blocked_eviction_then_allowed_is_two_answers_not_an_error() {
    // A 429 must come back at once (kube-rs' own retries are off) so the
    // caller can wait and retry within its budget.
    let (server, client, _dir) = setup(None).await;
    let path = "/api/v1/namespaces/shop/pods/web-7c67b8584c-kdsmf/eviction";
    server
        .answer_fixture("POST", path, &[], "evictions/db-pdb-429.json", Some(1))
        .expect("script");
    let started = std::time::Instant::now();
    let first = evict(&client, "shop", "web-7c67b8584c-kdsmf", false)
        .await
        .expect("429");
    assert!(
        matches!(first, EvictionOutcome::Blocked { .. }),
        "{first:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let second = evict(&client, "shop", "web-7c67b8584c-kdsmf", false)
        .await
        .expect("201");
    assert_eq!(second, EvictionOutcome::Evicted);
    assert_eq!(server.requests().len(), 2);
}

fn lease_config(identity: &str, seconds: u64) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(seconds),
        renew_deadline: Duration::from_millis(seconds * 1000 * 2 / 3),
        ..LeaseConfig::new("kube-system", "podplace-rebalancer", identity)
    }
}

#[tokio::test]
async fn lease_create_then_renew_and_a_second_candidate_follows() {
    let (server, client, _dir) = setup(None).await;
    let mut a = LeaderElector::new(client.clone(), lease_config("a", 15)).expect("a");
    let mut b = LeaderElector::new(client.clone(), lease_config("b", 15)).expect("b");
    assert_eq!(
        a.try_acquire_or_renew().await.expect("a"),
        LeaderState::Leader { transitions: 0 }
    );
    assert!(a.is_leader());
    // The server assigned the next resourceVersion after the recorded state.
    let lease = server
        .lease("kube-system", "podplace-rebalancer")
        .expect("lease");
    assert_eq!(lease["metadata"]["resourceVersion"], "467");
    assert_eq!(lease["spec"]["holderIdentity"], "a");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 15);
    assert_eq!(
        b.try_acquire_or_renew().await.expect("b"),
        LeaderState::Follower {
            holder: Some("a".into())
        }
    );
    assert!(!b.is_leader());
    assert_eq!(
        a.try_acquire_or_renew().await.expect("renew"),
        LeaderState::Leader { transitions: 0 }
    );
    let renewed = server
        .lease("kube-system", "podplace-rebalancer")
        .expect("lease");
    assert_eq!(renewed["metadata"]["resourceVersion"], "468");
    assert_ne!(renewed["spec"]["renewTime"], lease["spec"]["renewTime"]);
    assert_eq!(renewed["spec"]["acquireTime"], lease["spec"]["acquireTime"]);
    // The renewal was a PUT carrying the resourceVersion it read.
    let put = server
        .requests()
        .into_iter()
        .find(|r| r.method == "PUT")
        .expect("PUT");
    assert_eq!(
        put.body.expect("body")["metadata"]["resourceVersion"],
        "467"
    );
    assert_eq!(
        b.try_acquire_or_renew().await.expect("b"),
        LeaderState::Follower {
            holder: Some("a".into())
        }
    );
}

#[tokio::test]
async fn lease_recorded_conflicts_make_a_follower() {
    let (server, client, _dir) = setup(None).await;
    let lease_path =
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/podplace-rebalancer";
    // Create races: the GET finds nothing, the create is refused (409 AlreadyExists).
    server
        .answer_fixture(
            "GET",
            lease_path,
            &[],
            "leases/get-missing-404.json",
            Some(1),
        )
        .expect("script");
    server
        .answer_fixture(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            &[],
            "leases/create-again-409.json",
            Some(1),
        )
        .expect("script");
    let mut b = LeaderElector::new(client.clone(), lease_config("b", 15)).expect("b");
    assert_eq!(
        b.try_acquire_or_renew().await.expect("b"),
        LeaderState::Follower { holder: None }
    );
    // A renewal that finds the lease modified meanwhile (409 Conflict).
    let mut a = LeaderElector::new(client.clone(), lease_config("a", 15)).expect("a");
    assert!(matches!(
        a.try_acquire_or_renew().await.expect("a"),
        LeaderState::Leader { .. }
    ));
    server
        .answer_fixture(
            "PUT",
            lease_path,
            &[],
            "leases/takeover-put-stale-409.json",
            Some(1),
        )
        .expect("script");
    assert_eq!(
        a.try_acquire_or_renew().await.expect("a"),
        LeaderState::Follower {
            holder: Some("a".into())
        }
    );
    assert!(!a.is_leader(), "a lost renewal stops the leader at once");
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_the_old_leader_steps_down() {
    let (server, client, _dir) = setup(None).await;
    let mut a = LeaderElector::new(client.clone(), lease_config("a", 1)).expect("a");
    let mut b = LeaderElector::new(client.clone(), lease_config("b", 1)).expect("b");
    assert!(matches!(
        a.try_acquire_or_renew().await,
        Ok(LeaderState::Leader { .. })
    ));
    assert!(matches!(
        b.try_acquire_or_renew().await,
        Ok(LeaderState::Follower { .. })
    ));
    // `a` stops renewing; after the renew deadline it must not act any more...
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(!a.is_leader());
    // ...and after a whole lease duration unrenewed, `b` takes over.
    assert_eq!(
        b.try_acquire_or_renew().await.expect("b"),
        LeaderState::Leader { transitions: 1 }
    );
    let lease = server
        .lease("kube-system", "podplace-rebalancer")
        .expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "b");
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    // `a` comes back: it sees `b` holding a fresh lease and follows.
    assert_eq!(
        a.try_acquire_or_renew().await.expect("a"),
        LeaderState::Follower {
            holder: Some("b".into())
        }
    );
    // Released leases are taken at once.
    b.release().await.expect("release");
    assert_eq!(
        a.try_acquire_or_renew().await.expect("a"),
        LeaderState::Leader { transitions: 2 }
    );
}

#[tokio::test]
async fn two_candidates_are_never_both_leaders() {
    let (_server, client, _dir) = setup(None).await;
    let mut a = LeaderElector::new(client.clone(), lease_config("a", 1)).expect("a");
    let mut b = LeaderElector::new(client.clone(), lease_config("b", 1)).expect("b");
    let mut history = Vec::new();
    for round in 0..16 {
        // `a` leads, goes silent for a while (as if partitioned), comes back.
        if !(4..10).contains(&round) {
            a.try_acquire_or_renew().await.expect("a");
        }
        b.try_acquire_or_renew().await.expect("b");
        assert!(
            !(a.is_leader() && b.is_leader()),
            "round {round}: both lead"
        );
        history.push(match (a.is_leader(), b.is_leader()) {
            (true, _) => 'a',
            (_, true) => 'b',
            _ => '-',
        });
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let history: String = history.into_iter().collect();
    assert!(history.starts_with("aaaa"), "{history}");
    assert!(
        history.ends_with("bbbb"),
        "b keeps the lease once it has it: {history}"
    );
    assert!(
        history.contains("-b"),
        "a gap between the two leaders: {history}"
    );
}

#[tokio::test]
async fn list_pods_by_label_in_a_namespace() {
    let (server, client, _dir) = setup(None).await;
    let pods = list_pods(
        &client,
        Some("shop"),
        Some("app=web"),
        &FetchOptions::default(),
    )
    .await
    .expect("list");
    let mut names: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    // The recorded answer to exactly this request came after the eviction of
    // k4mnm (evictions/web-pods-after.json): its replacement qb7f5 is there.
    assert_eq!(
        names,
        [
            "web-7c67b8584c-7qkt7",
            "web-7c67b8584c-kdsmf",
            "web-7c67b8584c-qb7f5"
        ]
    );
    let request = server.requests().pop().expect("request");
    assert_eq!(request.query_value("labelSelector"), Some("app=web"));
    // An unrecorded selector is answered from the recorded list.
    let db = list_pods(
        &client,
        Some("data"),
        Some("app=db"),
        &FetchOptions::default(),
    )
    .await
    .expect("list");
    let db: Vec<_> = db.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert_eq!(db, ["db-0", "db-1"]);
    let (_s2, lister, _d2) = setup(Some("pod-lister")).await;
    let err = list_pods(&lister, Some("data"), None, &FetchOptions::default())
        .await
        .expect_err("403");
    assert_eq!(err.status_code(), Some(403));
}
