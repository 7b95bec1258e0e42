//! Against the test API server that answers with a real v1.36 API server's
//! recorded JSON (podplace-kube's `testserver`): story 2 executed — evictions
//! POSTed to the eviction subresource one at a time, every replacement
//! checked against the plan; a 429 retried and reported; a mismatch
//! reported; two replicas with leader election never both act; `/metrics`.

use std::io::{Read, Write};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use podplace_kube::testserver::{Misbehavior, TestServer};
use podplace_kube::{connect, fetch_inventory, Client, ConnectOptions, FetchOptions, LeaseConfig};
use podplace_rebalance::{plan, PlanOptions, Planned, Policy};
use podplace_runtime::daemon::{serve, Daemon, RunResult};
use podplace_runtime::live::{execute, ExecuteOptions, StepOutcome};
use podplace_runtime::metrics::Metrics;
use serde_json::{json, Value};

const COLLAPSED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/fixtures/snapshots/drift-collapsed.yaml"
);

fn now() -> Timestamp {
    "2026-11-22T03:42:00Z".parse().unwrap()
}

fn plan_opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: now(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

fn exec_opts(max_retries: u32) -> ExecuteOptions {
    ExecuteOptions {
        poll_interval: Duration::from_millis(10),
        wait_timeout: Duration::from_secs(2),
        retry_backoff: Duration::from_millis(10),
        max_retries,
        max_replans: 0,
        fetch: FetchOptions::default(),
    }
}

/// Serves the collapsed drift cluster's lists instead of the rv-413 ones.
fn serve_drift(server: &TestServer) {
    let text = std::fs::read_to_string(COLLAPSED).unwrap();
    let list: Value = serde_saphyr::from_str(&text).unwrap();
    let items = list["items"].as_array().unwrap();
    let lists = [
        ("Node", "/api/v1/nodes", "v1", "NodeList"),
        ("Pod", "/api/v1/pods", "v1", "PodList"),
        ("Namespace", "/api/v1/namespaces", "v1", "NamespaceList"),
        ("Service", "/api/v1/services", "v1", "ServiceList"),
        (
            "Deployment",
            "/apis/apps/v1/deployments",
            "apps/v1",
            "DeploymentList",
        ),
        (
            "ReplicaSet",
            "/apis/apps/v1/replicasets",
            "apps/v1",
            "ReplicaSetList",
        ),
        (
            "StatefulSet",
            "/apis/apps/v1/statefulsets",
            "apps/v1",
            "StatefulSetList",
        ),
        (
            "DaemonSet",
            "/apis/apps/v1/daemonsets",
            "apps/v1",
            "DaemonSetList",
        ),
        (
            "PodDisruptionBudget",
            "/apis/policy/v1/poddisruptionbudgets",
            "policy/v1",
            "PodDisruptionBudgetList",
        ),
    ];
    for (kind, path, api_version, list_kind) in lists {
        let of_kind: Vec<Value> = items
            .iter()
            .filter(|i| i["kind"] == kind)
            .cloned()
            .collect();
        server.answer(
            "GET",
            path,
            &[],
            200,
            json!({"kind": list_kind, "apiVersion": api_version, "metadata": {"resourceVersion": "900"}, "items": of_kind}),
            None,
        );
    }
}

/// The pods of `shop` after the first `k` evictions, as a PodList.
fn shop_after(planned: &Planned, inv: &podplace_model::inventory::Inventory, k: usize) -> Value {
    let world = planned.apply_prefix(inv, now(), k);
    let items: Vec<Value> = world
        .pods
        .iter()
        .filter(|p| p.object.metadata.namespace.as_deref() == Some("shop"))
        .map(|p| serde_json::to_value(&p.object).unwrap())
        .collect();
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": format!("{}", 901 + k)}, "items": items})
}

struct Setup {
    server: TestServer,
    client: Client,
    inv: podplace_model::inventory::Inventory,
    _dir: tempdir::Dir,
}

mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

async fn setup(name: &str) -> Setup {
    let server = TestServer::start().unwrap();
    serve_drift(&server);
    let dir =
        std::env::temp_dir().join(format!("podplace-rebalance-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = dir.join("kubeconfig");
    server.write_kubeconfig(&kc).unwrap();
    let client = connect(&ConnectOptions {
        kubeconfig: Some(kc),
        context: None,
    })
    .await
    .unwrap();
    let inv = fetch_inventory(&client, &FetchOptions::default())
        .await
        .unwrap()
        .inventory;
    Setup {
        server,
        client,
        inv,
        _dir: tempdir::Dir(dir),
    }
}

fn evictions_posted(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/eviction"))
        .map(|r| {
            assert_eq!(r.body.as_ref().unwrap()["kind"], "Eviction");
            r.path.clone()
        })
        .collect()
}

/// The recorded server only knows the rv-413 pods: answer the planned
/// evictions as the real server answered web-7c67b8584c-k4mnm's (201).
fn allow_evictions(server: &TestServer, planned: &Planned) {
    for e in &planned.plan.evictions {
        server
            .answer_fixture(
                "POST",
                &eviction_path(&e.pod),
                &[],
                "evictions/web-201.json",
                None,
            )
            .unwrap();
    }
}

fn eviction_path(pod: &str) -> String {
    let (ns, name) = pod.split_once('/').unwrap();
    format!("/api/v1/namespaces/{ns}/pods/{name}/eviction")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_executed_every_replacement_lands_as_planned() {
    let s = setup("execute").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let evictions = planned.plan.evictions.clone();
    assert_eq!(evictions.len(), 3);
    allow_evictions(&s.server, &planned);
    for k in 1..=3 {
        s.server.answer(
            "GET",
            "/api/v1/namespaces/shop/pods",
            &[],
            200,
            shop_after(&planned, &s.inv, k),
            Some(1),
        );
    }
    let metrics = Metrics::new();
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(3),
        &metrics,
        &|| true,
    )
    .await
    .unwrap();
    assert!(report.clean(), "{report:#?}");
    assert_eq!(report.steps.len(), 3);
    for (step, e) in report.steps.iter().zip(&evictions) {
        assert_eq!(step.outcome, StepOutcome::AsPredicted);
        assert_eq!(step.landed.as_deref(), Some(e.to.as_str()));
        assert_eq!(step.attempts, 1);
    }
    let posted = evictions_posted(&s.server);
    let want: Vec<String> = evictions.iter().map(|e| eviction_path(&e.pod)).collect();
    assert_eq!(posted, want, "one eviction per planned pod, in plan order");
    let text = metrics.render();
    assert!(
        text.contains(
            "podplace_rebalance_evictions_total{strategy=\"SoftRules\",result=\"evicted\"} 3"
        ),
        "{text}"
    );
    assert!(
        text.contains("podplace_rebalance_landings_total{outcome=\"as_predicted\"} 3"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_and_reported() {
    let s = setup("retry").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let first = eviction_path(&planned.plan.evictions[0].pod);
    s.server
        .answer_fixture("POST", &first, &[], "evictions/db-pdb-429.json", Some(1))
        .unwrap();
    allow_evictions(&s.server, &planned);
    for k in 1..=3 {
        s.server.answer(
            "GET",
            "/api/v1/namespaces/shop/pods",
            &[],
            200,
            shop_after(&planned, &s.inv, k),
            Some(1),
        );
    }
    let metrics = Metrics::new();
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(3),
        &metrics,
        &|| true,
    )
    .await
    .unwrap();
    assert_eq!(report.steps[0].attempts, 2, "{report:#?}");
    assert_eq!(report.steps[0].outcome, StepOutcome::AsPredicted);
    assert!(report.steps[0]
        .message
        .as_deref()
        .unwrap()
        .contains("The disruption budget db-pdb needs 2 healthy pods and has 2 currently"));
    assert_eq!(
        evictions_posted(&s.server)
            .iter()
            .filter(|p| **p == first)
            .count(),
        2
    );
    assert!(metrics.render().contains("result=\"blocked\"} 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_beyond_the_retry_budget_stops_and_is_reported() {
    let s = setup("blocked").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let first = eviction_path(&planned.plan.evictions[0].pod);
    s.server
        .answer_fixture("POST", &first, &[], "evictions/db-pdb-429.json", None)
        .unwrap();
    let metrics = Metrics::new();
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(2),
        &metrics,
        &|| true,
    )
    .await
    .unwrap();
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].outcome, StepOutcome::Blocked);
    assert_eq!(report.steps[0].attempts, 3);
    assert!(
        report
            .stopped
            .as_deref()
            .unwrap()
            .contains("could not be evicted after 3 attempts"),
        "{report:#?}"
    );
    assert_eq!(evictions_posted(&s.server), vec![first.clone(); 3]);
    // Three requests refused: three counted, not a fourth for giving up.
    let text = metrics.render();
    assert!(text.contains("result=\"blocked\"} 3"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_carry_the_seen_pods_uid_as_a_precondition() {
    let s = setup("uid").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let pod = planned.plan.evictions[0].pod.clone();
    let first = eviction_path(&pod);
    // The name belongs to another pod now: the server refuses the
    // precondition with 409 Conflict (a real v1.36 server's answer, from the
    // live suite's rebalance::eviction_of_a_pod_replaced_under_its_name_is_refused).
    s.server.answer(
        "POST",
        &first,
        &[],
        409,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Operation cannot be fulfilled on Pod \"same\": the UID in the precondition (bfd3f64e-b5a5-462a-a986-949e255e2a67) does not match the UID in record (7f1ff65b-cdca-4356-a44e-add9461ff34d). The object might have been deleted and then recreated",
               "reason": "Conflict", "details": {"name": "same", "kind": "Pod"}, "code": 409}),
        None,
    );
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(3),
        &Metrics::new(),
        &|| true,
    )
    .await
    .unwrap();
    let uid = s
        .inv
        .pods
        .iter()
        .find(|p| {
            format!(
                "{}/{}",
                p.object.metadata.namespace.as_deref().unwrap_or(""),
                p.object.metadata.name.as_deref().unwrap_or("")
            ) == pod
        })
        .and_then(|p| p.object.metadata.uid.clone())
        .unwrap();
    let posted: Vec<Value> = s
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == first)
        .filter_map(|r| r.body)
        .collect();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0]["deleteOptions"]["preconditions"]["uid"], uid);
    // The planned pod is gone (its name is another pod's): a deviation, not
    // an eviction of the newcomer.
    assert_eq!(report.steps[0].outcome, StepOutcome::Gone, "{report:#?}");
    assert_eq!(report.evicted(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_loses_the_lease_during_a_429_backoff_sends_no_more_evictions() {
    let s = setup("lost-lease").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let first = eviction_path(&planned.plan.evictions[0].pod);
    s.server
        .answer_fixture("POST", &first, &[], "evictions/db-pdb-429.json", Some(1))
        .unwrap();
    allow_evictions(&s.server, &planned);
    // Leading when the step starts; no longer after the first refusal.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let still_leader = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(3),
        &Metrics::new(),
        &still_leader,
    )
    .await
    .unwrap();
    assert_eq!(evictions_posted(&s.server), vec![first]);
    assert_eq!(
        report.stopped.as_deref(),
        Some("this replica lost the leader lease")
    );
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].outcome, StepOutcome::Blocked);
    assert_eq!(report.evicted(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_elsewhere_is_a_reported_mismatch() {
    let s = setup("mismatch").await;
    let policy = Policy::default_profile();
    let planned = plan(&s.inv, &policy, &plan_opts()).unwrap();
    let e = planned.plan.evictions[0].clone();
    let mut state = shop_after(&planned, &s.inv, 1);
    let other = if e.to == "worker-2" {
        "worker-3"
    } else {
        "worker-2"
    };
    for p in state["items"].as_array_mut().unwrap() {
        if p["metadata"]["name"] == e.replacement.as_str() {
            p["spec"]["nodeName"] = json!(other);
        }
    }
    s.server.answer(
        "GET",
        "/api/v1/namespaces/shop/pods",
        &[],
        200,
        state,
        Some(1),
    );
    allow_evictions(&s.server, &planned);
    let metrics = Metrics::new();
    let report = execute(
        &s.client,
        &policy,
        &plan_opts(),
        planned,
        &s.inv,
        &exec_opts(3),
        &metrics,
        &|| true,
    )
    .await
    .unwrap();
    assert_eq!(report.mismatches(), 1, "{report:#?}");
    assert_eq!(report.steps[0].outcome, StepOutcome::Elsewhere);
    assert_eq!(report.steps[0].landed.as_deref(), Some(other));
    assert!(report.stopped.is_some());
    assert_eq!(
        evictions_posted(&s.server).len(),
        1,
        "nothing more is evicted on a stale plan"
    );
    assert!(metrics
        .render()
        .contains("podplace_rebalance_landings_total{outcome=\"elsewhere\"} 1"));
}

fn lease(identity: &str) -> LeaseConfig {
    LeaseConfig::new("kube-system", "podplace-rebalancer", identity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_both_act() {
    let s = setup("election").await;
    let a = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        Some(lease("replica-a")),
        Metrics::new(),
    )
    .unwrap();
    let b = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        Some(lease("replica-b")),
        Metrics::new(),
    )
    .unwrap();
    a.start_election(Duration::from_millis(20));
    b.start_election(Duration::from_millis(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !(a.is_leader() || b.is_leader()) {
        assert!(std::time::Instant::now() < deadline, "nobody became leader");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (leader, follower) = if a.is_leader() { (&a, &b) } else { (&b, &a) };
    for _ in 0..50 {
        assert!(!(a.is_leader() && b.is_leader()), "both replicas lead");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(matches!(
        leader.run_once().await.unwrap(),
        RunResult::Ran { .. }
    ));
    assert!(matches!(
        follower.run_once().await.unwrap(),
        RunResult::NotLeader
    ));
    assert!(leader
        .metrics
        .render()
        .contains("podplace_rebalance_leader 1"));
    assert!(follower
        .metrics
        .render()
        .contains("podplace_rebalance_leader 0"));
    // The leader steps down; the other takes over, and they still never overlap.
    leader.release().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !follower.is_leader() {
        assert!(!(a.is_leader() && b.is_leader()), "both replicas lead");
        assert!(std::time::Instant::now() < deadline, "no takeover");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(matches!(
        follower.run_once().await.unwrap(),
        RunResult::Ran { .. }
    ));
    let holder = s
        .server
        .lease("kube-system", "podplace-rebalancer")
        .unwrap();
    assert!(holder["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .starts_with("replica-"));
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_and_metrics_are_served() {
    let s = setup("metrics").await;
    let metrics = Metrics::new();
    let daemon = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        metrics.clone(),
    )
    .unwrap();
    assert!(matches!(
        daemon.run_once().await.unwrap(),
        RunResult::Ran { planned: 3, .. }
    ));
    let addr = serve("127.0.0.1:0", metrics, daemon.health())
        .await
        .unwrap();
    let (health, body) = tokio::task::spawn_blocking(move || {
        (http_get(addr, "/healthz"), http_get(addr, "/metrics"))
    })
    .await
    .unwrap();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.ends_with("ok\n"));
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(
        body.contains("content-type: application/openmetrics-text"),
        "{body}"
    );
    assert!(
        body.contains("podplace_rebalance_runs_total{result=\"ok\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("podplace_rebalance_planned_evictions 3"),
        "{body}"
    );
    assert!(
        body.contains("podplace_rebalance_plan_duration_seconds_count 1"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_runs_as_soon_as_it_holds_the_lease() {
    let s = setup("run-at-once").await;
    let daemon = |identity: &str| {
        Daemon::new(
            s.client.clone(),
            Policy::default_profile(),
            false,
            Some(lease(identity)),
            Metrics::new(),
        )
        .unwrap()
    };
    let (a, b) = (daemon("replica-a"), daemon("replica-b"));
    a.start_election(Duration::from_millis(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !a.is_leader() {
        assert!(std::time::Instant::now() < deadline, "a never led");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    b.start_election(Duration::from_millis(20));
    // b runs every hour: its first run finds a leading; when a hands the
    // lease over, b must act at once, not an hour later.
    let (tx, mut runs) = tokio::sync::mpsc::unbounded_channel();
    let b_loop = b.run_loop(
        Duration::from_secs(3600),
        std::future::pending(),
        move |r| {
            let _ = tx.send(matches!(r, Ok(RunResult::Ran { .. })));
        },
    );
    let check = async {
        assert_eq!(runs.recv().await, Some(false), "b's first run: a leads");
        a.release().await.unwrap();
        let released = std::time::Instant::now();
        let ran = tokio::time::timeout(Duration::from_secs(10), runs.recv())
            .await
            .expect("b did not run within 10 s of taking the lease over");
        assert_eq!(ran, Some(true));
        released.elapsed()
    };
    let took = tokio::select! {
        _ = b_loop => unreachable!("the loop only ends when stopped"),
        took = check => took,
    };
    assert!(
        took < Duration::from_secs(5),
        "first run {took:?} after the hand-over"
    );
}

/// A client of the test server as `context` (`pod-lister`, `bad-token`).
async fn client_as(s: &Setup, context: &str) -> Client {
    connect(&ConnectOptions {
        kubeconfig: Some(s._dir.0.join("kubeconfig")),
        context: Some(context.to_string()),
    })
    .await
    .unwrap()
}

/// A lease config with short durations, so failures show within a test.
fn short_lease(identity: &str) -> LeaseConfig {
    let mut l = lease(identity);
    l.lease_duration = Duration::from_millis(600);
    l.renew_deadline = Duration::from_millis(400);
    l
}

/// Polls `/healthz` until it answers 503 (within 10 s); the response.
async fn wait_unhealthy(addr: std::net::SocketAddr) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let health = tokio::task::spawn_blocking(move || http_get(addr, "/healthz"))
            .await
            .unwrap();
        if health.starts_with("HTTP/1.1 503") {
            return health;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/healthz stayed healthy: {health}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One context whose requests for the Lease fail: its /healthz turns 503
/// naming the failure once it lasts a lease duration, and runs are errors.
async fn election_failure_is_unhealthy(context: &str, status: &str) {
    let s = setup(&format!("election-{context}")).await;
    let metrics = Metrics::new();
    let daemon = Daemon::new(
        client_as(&s, context).await,
        Policy::default_profile(),
        true,
        Some(short_lease("replica-a")),
        metrics.clone(),
    )
    .unwrap();
    let addr = serve("127.0.0.1:0", metrics.clone(), daemon.health())
        .await
        .unwrap();
    let health = tokio::task::spawn_blocking(move || http_get(addr, "/healthz"))
        .await
        .unwrap();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    daemon.start_election(Duration::from_millis(20));
    let health = wait_unhealthy(addr).await;
    assert!(
        health.contains("unhealthy: leader election has failed for")
            && health.contains("get lease kube-system/podplace-rebalancer")
            && health.contains(status),
        "{health}"
    );
    let run = daemon.run_once().await;
    let err = run.expect_err("a run while the election fails is an error");
    assert!(err.to_string().contains(status), "{err}");
    assert_eq!(err.exit_code(), 3);
    let text = metrics.render();
    assert!(
        text.contains("podplace_rebalance_runs_total{result=\"error\"} 1"),
        "{text}"
    );
    assert!(!text.contains("result=\"not_leader\""), "{text}");
    assert!(text.contains("podplace_rebalance_leader 0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_lease_makes_healthz_unhealthy_and_runs_errors() {
    election_failure_is_unhealthy("pod-lister", "403 Forbidden").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_token_makes_healthz_unhealthy_and_runs_errors() {
    election_failure_is_unhealthy("bad-token", "401 Unauthorized").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_makes_healthz_unhealthy_until_a_run_succeeds() {
    let s = setup("run-fails").await;
    let metrics = Metrics::new();
    // Without leader election: the run itself meets the API's refusal.
    let daemon = Daemon::new(
        client_as(&s, "bad-token").await,
        Policy::default_profile(),
        true,
        None,
        metrics.clone(),
    )
    .unwrap();
    let addr = serve("127.0.0.1:0", metrics.clone(), daemon.health())
        .await
        .unwrap();
    let err = daemon.run_once().await.expect_err("401");
    assert!(err.to_string().contains("401 Unauthorized"), "{err}");
    let health = wait_unhealthy(addr).await;
    assert!(
        health.contains(
            "unhealthy: the last run failed: list nodes: the API server answered 401 Unauthorized"
        ),
        "{health}"
    );
    assert!(metrics
        .render()
        .contains("podplace_rebalance_runs_total{result=\"error\"} 1"));
    // The admin's daemon shares nothing with it: a run that succeeds is healthy.
    let ok = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        Metrics::new(),
    )
    .unwrap();
    ok.run_once().await.unwrap();
    assert_eq!(ok.health().problem(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_recovers_when_the_lease_can_be_written_again() {
    let s = setup("election-recovers").await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/podplace-rebalancer";
    let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "leases.coordination.k8s.io \"podplace-rebalancer\" is forbidden", "reason": "Forbidden", "code": 403});
    // Forbidden for the first 40 rounds (about a second), then allowed.
    s.server.answer("GET", path, &[], 403, forbidden, Some(40));
    let daemon = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        Some(short_lease("replica-a")),
        Metrics::new(),
    )
    .unwrap();
    let addr = serve("127.0.0.1:0", Metrics::new(), daemon.health())
        .await
        .unwrap();
    daemon.start_election(Duration::from_millis(20));
    wait_unhealthy(addr).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !daemon.is_leader() {
        assert!(std::time::Instant::now() < deadline, "never led");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(daemon.health().problem(), None);
    assert!(matches!(
        daemon.run_once().await.unwrap(),
        RunResult::Ran { .. }
    ));
    daemon.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_goes_away_keeps_healthz_unhealthy_from_the_first_failed_run() {
    let Setup {
        server,
        client,
        _dir,
        ..
    } = setup("goes-away").await;
    let metrics = Metrics::new();
    // Leading stops 2 s after the last renewal; /healthz counts the
    // election's failure only after 5 s.
    let mut lease = lease("replica-a");
    lease.renew_deadline = Duration::from_secs(2);
    lease.lease_duration = Duration::from_secs(5);
    let daemon = Daemon::new(
        client,
        Policy::default_profile(),
        true,
        Some(lease),
        metrics.clone(),
    )
    .unwrap();
    let addr = serve("127.0.0.1:0", metrics.clone(), daemon.health())
        .await
        .unwrap();
    daemon.start_election(Duration::from_millis(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !daemon.is_leader() {
        assert!(std::time::Instant::now() < deadline, "never led");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(server);
    let gone = std::time::Instant::now();
    // Still within its renew deadline: the run meets the unreachable server.
    let err = daemon.run_once().await.expect_err("the server is gone");
    assert!(
        !matches!(err, podplace_runtime::Error::LeaderElection { .. }),
        "{err}"
    );
    let health = wait_unhealthy(addr).await;
    assert!(
        health.contains("unhealthy: the last run failed"),
        "{health}"
    );
    // Past the renew deadline the next run meets the failing election; the
    // server is still gone, so /healthz stays unhealthy.
    while daemon.is_leader() {
        assert!(gone.elapsed() < Duration::from_secs(4), "still leading");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let err = daemon.run_once().await.expect_err("the election fails");
    assert!(
        matches!(err, podplace_runtime::Error::LeaderElection { .. }),
        "{err}"
    );
    assert!(
        gone.elapsed() < Duration::from_secs(5),
        "too slow to tell the two failures apart"
    );
    let health = tokio::task::spawn_blocking(move || http_get(addr, "/healthz"))
        .await
        .unwrap();
    assert!(
        health.starts_with("HTTP/1.1 503") && health.contains("the last run failed"),
        "{health}"
    );
}

/// A TCP proxy in front of `target` that, once `stall` is set, reads what
/// clients send and forwards nothing: requests on new and kept-alive
/// connections alike are accepted and never answered.
async fn stalling_proxy(
    target: std::net::SocketAddr,
    stall: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::net::SocketAddr {
    use std::sync::atomic::Ordering::SeqCst;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let stall = stall.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if !stall.load(SeqCst) && server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Leadership cannot outlive the Lease: when renewals hang (the API server
/// accepts them and never answers), the leader stops acting at the renew
/// deadline of its last renewal, its leader gauge drops when the hung round
/// is given up (at the deadline, not whenever an answer comes), and a run
/// then evicts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_hangs_stops_leading_at_the_renew_deadline() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let s = setup("renewal-hangs").await;
    let stall = std::sync::Arc::new(AtomicBool::new(false));
    let target: std::net::SocketAddr = s
        .server
        .url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = stalling_proxy(target, stall.clone()).await;
    let kc = s._dir.0.join("kubeconfig-proxied");
    std::fs::write(
        &kc,
        s.server
            .kubeconfig()
            .replace(&s.server.url(), &format!("http://{proxy}")),
    )
    .unwrap();
    let client = connect(&ConnectOptions {
        kubeconfig: Some(kc),
        context: None,
    })
    .await
    .unwrap();
    let metrics = Metrics::new();
    let mut l = lease("replica-a");
    l.renew_deadline = Duration::from_millis(800);
    l.lease_duration = Duration::from_millis(1500);
    let daemon = Daemon::new(
        client,
        Policy::default_profile(),
        true,
        Some(l),
        metrics.clone(),
    )
    .unwrap();
    daemon.start_election(Duration::from_millis(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !daemon.is_leader() {
        assert!(std::time::Instant::now() < deadline, "never led");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(metrics.render().contains("podplace_rebalance_leader 1"));
    stall.store(true, SeqCst);
    let stalled = std::time::Instant::now();
    while daemon.is_leader() {
        assert!(
            // The deadline plus room for a loaded machine to wake this
            // poll, still well before the Lease (1.5 s) could pass on.
            stalled.elapsed() < Duration::from_millis(800 + 450),
            "still leading {:?} after renewals began to hang (renew deadline 800 ms)",
            stalled.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The gauge follows once the hung round is given up at its deadline.
    loop {
        if metrics.render().contains("podplace_rebalance_leader 0") {
            break;
        }
        assert!(
            stalled.elapsed() < Duration::from_millis(2 * 800 + 600),
            "the leader gauge still says 1 {:?} after renewals began to hang",
            stalled.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Well before another replica could take the Lease over.
    assert!(stalled.elapsed() < Duration::from_millis(1500 + 800));
    s.server.clear_requests();
    let run = daemon.run_once().await;
    assert!(!matches!(run, Ok(RunResult::Ran { .. })), "{run:?}");
    assert!(evictions_posted(&s.server).is_empty());
}

/// A loop hung on an API server that accepts and never answers: `/healthz`
/// turns 503 naming how long the loop made no progress, once that exceeds
/// the stall bound (and not before); a loop that runs stays healthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_turns_unhealthy_when_the_loop_hangs() {
    let s = setup("stalled-loop").await;
    let metrics = Metrics::new();
    let mut daemon = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        metrics.clone(),
    )
    .unwrap();
    // Far above one run of this small world even on a loaded 2-core
    // machine, so only the hang below can exceed it.
    let bound = Duration::from_secs(3);
    daemon.stall_after = Some(bound);
    assert_eq!(daemon.stall_bound(Duration::from_millis(50)), bound);
    let addr = serve("127.0.0.1:0", metrics, daemon.health())
        .await
        .unwrap();
    let (tx, mut runs) = tokio::sync::mpsc::unbounded_channel();
    let looping = daemon.run_loop(
        Duration::from_millis(50),
        std::future::pending(),
        move |r| {
            let _ = tx.send(r.is_ok());
        },
    );
    let check = async {
        // Running every 50 ms: progress well within the bound.
        for _ in 0..3 {
            assert_eq!(runs.recv().await, Some(true));
        }
        let health = tokio::task::spawn_blocking(move || http_get(addr, "/healthz"))
            .await
            .unwrap();
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        // Every later read of the nodes hangs (the request timeout is 60 s).
        s.server
            .misbehave("GET", "/api/v1/nodes", Misbehavior::Hang);
        let hung = std::time::Instant::now();
        let health = wait_unhealthy(addr).await;
        (hung.elapsed(), health)
    };
    let (took, health) = tokio::select! {
        _ = looping => unreachable!("the loop only ends when stopped"),
        out = check => out,
    };
    assert!(
        health.contains("the loop has made no progress for"),
        "{health}"
    );
    assert!(health.contains("longer than its bound, 3.0s"), "{health}");
    assert!(took >= bound, "unhealthy after {took:?}, before the bound");
}

/// The default stall bound: three intervals, or one interval and the
/// slowest step (wait timeout + request timeout + margin), whichever is
/// longer.
#[tokio::test]
async fn the_stall_bound_covers_an_interval_and_the_slowest_step() {
    let s = setup("stall-bound").await;
    let mut daemon = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        Metrics::new(),
    )
    .unwrap();
    daemon.exec_opts.wait_timeout = Duration::from_secs(300);
    daemon.request_timeout = Duration::from_secs(60);
    let min = Duration::from_secs(60);
    for (interval, bound) in [
        (5 * min, 15 * min),
        (
            Duration::from_secs(30),
            Duration::from_secs(30 + 300 + 60 + 60),
        ),
        (60 * min, 180 * min),
    ] {
        assert_eq!(daemon.stall_bound(interval), bound, "interval {interval:?}");
    }
}

/// `podplace serve`'s rebalance loop: a daemon given the cluster as the
/// process holds it plans on that, sends no request to list the cluster,
/// and plans what a daemon that lists it plans; before the holder has
/// the cluster, a run does nothing and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_given_the_model_plans_on_it_without_listing() {
    let s = setup("model-source").await;
    let listing = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        Metrics::new(),
    )
    .unwrap();
    let RunResult::Ran { planned: want, .. } = listing.run_once().await.unwrap() else {
        panic!("without election a daemon leads")
    };
    assert!(want > 0, "the drift story plans evictions");
    let inv = s.inv.clone();
    let modelled = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        Metrics::new(),
    )
    .unwrap()
    .with_inventory(std::sync::Arc::new(move || Ok(inv.clone())));
    s.server.clear_requests();
    let RunResult::Ran { planned: got, .. } = modelled.run_once().await.unwrap() else {
        panic!("without election a daemon leads")
    };
    assert_eq!(got, want);
    let gets: Vec<String> = s
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path.clone())
        .collect();
    assert!(gets.is_empty(), "listed the cluster: {gets:?}");

    let unready = Daemon::new(
        s.client.clone(),
        Policy::default_profile(),
        false,
        None,
        Metrics::new(),
    )
    .unwrap()
    .with_inventory(std::sync::Arc::new(|| {
        Err("the first sync is not done".to_string())
    }));
    let err = unready.run_once().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model is not ready: the first sync is not done"
    );
    assert!(unready
        .metrics
        .render()
        .contains("podplace_rebalance_runs_total{result=\"error\"} 1"));
}

/// `/readyz` (serve's) follows its probe: 503 with the reason, then 200;
/// `/healthz` and `/metrics` as the rebalance daemon serves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_503_until_ready() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let ready = Arc::new(AtomicBool::new(false));
    let probe = ready.clone();
    let addr = podplace_runtime::daemon::serve_endpoints(
        "127.0.0.1:0",
        podplace_runtime::daemon::Endpoints {
            metrics: Arc::new(|| "# EOF\n".to_string()),
            healthz: Arc::new(|| None),
            readyz: Some(Arc::new(move || {
                (!probe.load(Ordering::SeqCst)).then(|| "the first sync is not done".to_string())
            })),
        },
    )
    .await
    .unwrap();
    let get = |path: &'static str| tokio::task::spawn_blocking(move || http_get(addr, path));
    let before = get("/readyz").await.unwrap();
    assert!(before.starts_with("HTTP/1.1 503"), "{before}");
    assert!(
        before.ends_with("not ready: the first sync is not done\n"),
        "{before}"
    );
    ready.store(true, Ordering::SeqCst);
    let after = get("/readyz").await.unwrap();
    assert!(after.starts_with("HTTP/1.1 200"), "{after}");
    assert!(after.ends_with("ok\n"), "{after}");
    let health = get("/healthz").await.unwrap();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let metrics = get("/metrics").await.unwrap();
    assert!(metrics.ends_with("# EOF\n"), "{metrics}");
}

/// The endpoints close a connection that sends nothing (never its headers)
/// and an idle keep-alive connection after one answered request, within
/// the header timeout; without a bound both would stay open forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_close_idle_connections() {
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let bounds = podplace_runtime::daemon::EndpointBounds {
        header_timeout: Duration::from_millis(300),
        connection_lifetime: Duration::from_secs(60),
        max_connections: 4,
    };
    let addr = podplace_runtime::daemon::serve_endpoints_with(
        "127.0.0.1:0",
        podplace_runtime::daemon::Endpoints {
            metrics: Arc::new(|| "# EOF\n".to_string()),
            healthz: Arc::new(|| None),
            readyz: None,
        },
        bounds,
    )
    .await
    .unwrap();
    for send_one in [false, true] {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        if send_one {
            tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
        }
        let started = Instant::now();
        let mut got = Vec::new();
        // Read until the server closes (EOF), bounded by the test.
        let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut got)).await;
        assert!(
            read.is_ok(),
            "connection (one request: {send_one}) still open after 10s"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "closed only after {:?}",
            started.elapsed()
        );
        let text = String::from_utf8_lossy(&got);
        if send_one {
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        }
    }
}
