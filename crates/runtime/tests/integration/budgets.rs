//! The policy's limits are budgets for the whole run: carried across the
//! plans made again after a replacement lands elsewhere, and every eviction
//! carried out is itemized in the report (issue 12's first safety item).
//!
//! The run goes against a cluster of the test's own ([`LiveCluster`]): it
//! lands each replacement on a node the test chooses (where the plan said,
//! or anywhere else), makes it Ready after a few reads, and records every
//! eviction and every moment a PodDisruptionBudget had fewer healthy pods
//! than it asks for.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use podplace_kube::EvictionOutcome;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_rebalance::policy::Limits;
use podplace_rebalance::{plan, PlanOptions, Policy};
use podplace_runtime::live::{execute_on, ExecuteOptions, ExecutionReport, LiveCluster};
use podplace_runtime::metrics::Metrics;
use proptest::prelude::*;
use serde_json::{json, Value};

fn sourced<T>(object: T) -> Sourced<T> {
    Sourced {
        object,
        origin: Origin::default(),
    }
}

fn obj<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// A world to rebalance: `nodes` workers, the first `tainted` of them
/// tainted NoSchedule (their pods are nominated), one Deployment per
/// namespace (`a`, `b`) whose pods sit where `pods` says, and optionally a
/// PodDisruptionBudget per namespace (minAvailable).
#[derive(Debug, Clone)]
struct Scenario {
    nodes: usize,
    tainted: usize,
    /// (namespace index, node index) of each pod.
    pods: Vec<(usize, usize)>,
    /// minAvailable per namespace, when it has a budget.
    pdbs: [Option<i32>; 2],
    limits: Limits,
    /// Node index each replacement lands on, in eviction order (modulo
    /// the nodes; past the list, the count of replacements so far).
    landings: Vec<usize>,
    /// Reads of its namespace before a replacement is Ready.
    ready_after: u8,
    max_replans: u32,
}

const NAMESPACES: [&str; 2] = ["a", "b"];

fn node(i: usize, tainted: bool) -> Value {
    let mut n = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("worker-{i}"), "labels": {"kubernetes.io/hostname": format!("worker-{i}")}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    });
    if tainted {
        n["spec"] = json!({"taints": [{"key": "example.com/drain", "value": "true", "effect": "NoSchedule"}]});
    }
    n
}

fn pod(ns: &str, name: &str, uid: &str, node: &str, ready: bool) -> Pod {
    obj(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "uid": uid, "generateName": "web-7d4b9c-",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c",
                "uid": format!("rs-{ns}"), "controller": true}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "web", "image": "web",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Running", "startTime": "2026-11-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
    }))
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn set_ready(p: &mut Pod) {
    if let Some(c) = p
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .and_then(|c| c.first_mut())
    {
        c.status = "True".to_string();
    }
}

/// The state of the test's cluster.
struct State {
    /// Pods, each with the reads of its namespace left before it is Ready.
    pods: Vec<(Pod, u8)>,
    landings: std::vec::IntoIter<usize>,
    created: usize,
    /// (namespace, node left) of every eviction carried out.
    evicted: Vec<(String, String)>,
    /// PodDisruptionBudgets found short of healthy pods.
    violations: Vec<String>,
}

struct TestCluster {
    scenario: Scenario,
    state: Mutex<State>,
}

impl TestCluster {
    fn new(s: &Scenario) -> TestCluster {
        let pods = s
            .pods
            .iter()
            .enumerate()
            .map(|(i, &(ns, n))| {
                let ns = NAMESPACES[ns];
                (
                    pod(
                        ns,
                        &format!("web-7d4b9c-{i:05}"),
                        &format!("uid-{i}"),
                        &format!("worker-{n}"),
                        true,
                    ),
                    0,
                )
            })
            .collect();
        TestCluster {
            scenario: s.clone(),
            state: Mutex::new(State {
                pods,
                landings: s.landings.clone().into_iter(),
                created: 0,
                evicted: Vec::new(),
                violations: Vec::new(),
            }),
        }
    }

    fn inventory(&self) -> Inventory {
        let s = &self.scenario;
        let state = self.state.lock().unwrap();
        let mut inv = Inventory::default();
        for i in 0..s.nodes {
            inv.nodes.push(sourced(obj(node(i, i < s.tainted))));
        }
        for (p, _) in &state.pods {
            inv.pods.push(sourced(p.clone()));
        }
        for (k, ns) in NAMESPACES.iter().enumerate() {
            let replicas = s.pods.iter().filter(|(n, _)| *n == k).count();
            inv.deployments.push(sourced(obj(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": ns, "uid": format!("deploy-{ns}")},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "strategy": {"rollingUpdate": {"maxUnavailable": "100%"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web"}]}}},
            }))));
            inv.replica_sets.push(sourced(obj(json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-7d4b9c", "namespace": ns, "uid": format!("rs-{ns}"),
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                        "uid": format!("deploy-{ns}"), "controller": true}]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "web"}]}}},
            }))));
            if let Some(min) = s.pdbs[k] {
                inv.pod_disruption_budgets.push(sourced(obj(json!({
                    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web", "namespace": ns},
                    "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": "web"}}},
                }))));
            }
        }
        inv
    }

    fn report_of(&self) -> (Vec<(String, String)>, Vec<String>) {
        let state = self.state.lock().unwrap();
        (state.evicted.clone(), state.violations.clone())
    }
}

impl LiveCluster for TestCluster {
    async fn evict(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<EvictionOutcome, podplace_runtime::Error> {
        let mut state = self.state.lock().unwrap();
        let Some(at) = state.pods.iter().position(|(p, _)| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && p.metadata.name.as_deref() == Some(name)
                && uid.is_none_or(|u| p.metadata.uid.as_deref() == Some(u))
        }) else {
            return Ok(EvictionOutcome::Gone);
        };
        let (old, _) = state.pods.remove(at);
        let from = old
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        state.evicted.push((namespace.to_string(), from));
        let k = NAMESPACES.iter().position(|n| *n == namespace).unwrap();
        if let Some(min) = self.scenario.pdbs[k] {
            let healthy = state
                .pods
                .iter()
                .filter(|(p, _)| p.metadata.namespace.as_deref() == Some(namespace) && ready(p))
                .count() as i32;
            if healthy < min {
                state.violations.push(format!(
                    "evicting {namespace}/{name} left PodDisruptionBudget {namespace}/web {healthy} healthy pod(s), it needs {min}"
                ));
            }
        }
        // The controller's replacement, bound where the test says.
        let landing = state.landings.next().unwrap_or(state.created);
        let node = format!("worker-{}", landing % self.scenario.nodes);
        state.created += 1;
        let name = format!("web-7d4b9c-r{:04}", state.created);
        let uid = format!("uid-r{}", state.created);
        let mut new = pod(namespace, &name, &uid, &node, false);
        let countdown = self.scenario.ready_after;
        if countdown == 0 {
            set_ready(&mut new);
        }
        state.pods.push((new, countdown));
        Ok(EvictionOutcome::Evicted)
    }

    async fn list_pods(&self, namespace: &str) -> Result<Vec<Pod>, podplace_runtime::Error> {
        let mut state = self.state.lock().unwrap();
        let mut out = Vec::new();
        for (p, left) in state.pods.iter_mut() {
            if p.metadata.namespace.as_deref() != Some(namespace) {
                continue;
            }
            if *left > 0 {
                *left -= 1;
                if *left == 0 {
                    set_ready(p);
                }
            }
            out.push(p.clone());
        }
        Ok(out)
    }

    async fn read(&self) -> Result<Inventory, podplace_runtime::Error> {
        Ok(self.inventory())
    }
}

fn policy(limits: Limits) -> Policy {
    let mut text = String::from(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: taints\n  pluginConfig:\n  - name: DefaultEvictor\n  - name: RemovePodsViolatingNodeTaints\n  plugins:\n    deschedule:\n      enabled: [RemovePodsViolatingNodeTaints]\n",
    );
    if let Some(n) = limits.max_no_of_pods_to_evict_per_node {
        text.push_str(&format!("maxNoOfPodsToEvictPerNode: {n}\n"));
    }
    if let Some(n) = limits.max_no_of_pods_to_evict_per_namespace {
        text.push_str(&format!("maxNoOfPodsToEvictPerNamespace: {n}\n"));
    }
    if let Some(n) = limits.max_no_of_pods_to_evict_total {
        text.push_str(&format!("maxNoOfPodsToEvictTotal: {n}\n"));
    }
    Policy::parse(&text, "budgets.yaml").unwrap()
}

fn plan_opts() -> PlanOptions {
    PlanOptions {
        seed: 0,
        now: "2026-11-25T00:00:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

/// Runs the scenario to the end: what was evicted, what the budgets saw,
/// the report and the first plan's length.
fn run(s: &Scenario) -> (Vec<(String, String)>, Vec<String>, ExecutionReport, usize) {
    let cluster = TestCluster::new(s);
    let inv = cluster.inventory();
    let policy = policy(s.limits);
    let planned = plan(&inv, &policy, &plan_opts()).unwrap();
    let first = planned.plan.evictions.len();
    let opts = ExecuteOptions {
        poll_interval: Duration::ZERO,
        wait_timeout: Duration::from_secs(5),
        retry_backoff: Duration::ZERO,
        max_retries: 0,
        max_replans: s.max_replans,
        ..ExecuteOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let report = runtime
        .block_on(execute_on(
            &cluster,
            &policy,
            &plan_opts(),
            planned,
            &inv,
            &opts,
            &Metrics::new(),
            &|| true,
        ))
        .unwrap();
    let (evicted, violations) = cluster.report_of();
    (evicted, violations, report, first)
}

fn check(s: &Scenario) -> Result<(), TestCaseError> {
    let (evicted, violations, report, _) = run(s);
    let l = &s.limits;
    let mut per_node: BTreeMap<&str, u32> = BTreeMap::new();
    let mut per_ns: BTreeMap<&str, u32> = BTreeMap::new();
    for (ns, node) in &evicted {
        *per_node.entry(node).or_default() += 1;
        *per_ns.entry(ns).or_default() += 1;
    }
    if let Some(t) = l.max_no_of_pods_to_evict_total {
        prop_assert!(
            evicted.len() as u32 <= t,
            "{} evicted, total limit {t}: {report:?}",
            evicted.len()
        );
    }
    if let Some(t) = l.max_no_of_pods_to_evict_per_node {
        for (node, n) in &per_node {
            prop_assert!(*n <= t, "{n} evicted from {node}, limit {t}: {report:?}");
        }
    }
    if let Some(t) = l.max_no_of_pods_to_evict_per_namespace {
        for (ns, n) in &per_ns {
            prop_assert!(*n <= t, "{n} evicted in {ns}, limit {t}: {report:?}");
        }
    }
    prop_assert!(violations.is_empty(), "{violations:?}: {report:?}");
    // Every eviction carried out is a step of the report, from the node it left.
    prop_assert_eq!(report.evicted(), evicted.len());
    let mut itemized: Vec<(String, String)> = report
        .steps
        .iter()
        .filter(|st| st.outcome != podplace_runtime::live::StepOutcome::Gone)
        .map(|st| {
            (
                st.pod.split_once('/').unwrap().0.to_string(),
                st.from.clone(),
            )
        })
        .collect();
    let mut seen = evicted.clone();
    itemized.sort();
    seen.sort();
    prop_assert_eq!(itemized, seen);
    Ok(())
}

fn limit() -> impl Strategy<Value = Option<u32>> {
    prop_oneof![Just(None), (1u32..=3).prop_map(Some)]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (2usize..=5, 1usize..=2)
        .prop_flat_map(|(nodes, tainted)| {
            (
                Just(nodes),
                Just(tainted.min(nodes - 1)),
                prop::collection::vec((0usize..2, 0..nodes), 1..=10),
                [prop::option::of(0i32..=4), prop::option::of(0i32..=4)],
                (
                    limit(),
                    limit(),
                    prop_oneof![Just(None), (1u32..=6).prop_map(Some)],
                ),
                prop::collection::vec(0..nodes, 12),
                0u8..=3,
                0u32..=4,
            )
        })
        .prop_map(
            |(
                nodes,
                tainted,
                pods,
                pdbs,
                (per_node, per_ns, total),
                landings,
                ready_after,
                max_replans,
            )| {
                Scenario {
                    nodes,
                    tainted,
                    pods,
                    pdbs,
                    limits: Limits {
                        max_no_of_pods_to_evict_per_node: per_node,
                        max_no_of_pods_to_evict_per_namespace: per_ns,
                        max_no_of_pods_to_evict_total: total,
                    },
                    landings,
                    ready_after,
                    max_replans,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// For random worlds, limits, budgets and landings, a run never evicts
    /// past a limit or a PodDisruptionBudget, and itemizes every eviction.
    #[test]
    fn evictions_never_exceed_any_limit_across_replans(s in scenario()) {
        check(&s)?;
    }
}

/// The run: one eviction per node, four pods on the drained
/// worker-1, each replacement landing elsewhere than planned. It printed a
/// plan of 1 eviction and evicted 4 pods from worker-1; the limit now holds
/// for the whole run, and what was evicted is itemized.
#[test]
fn one_per_node_holds_when_replacements_land_elsewhere() {
    let s = Scenario {
        nodes: 4,
        tainted: 1,
        pods: vec![(0, 0), (0, 0), (0, 0), (0, 0), (0, 2), (0, 3)],
        pdbs: [None, None],
        limits: Limits {
            max_no_of_pods_to_evict_per_node: Some(1),
            ..Limits::default()
        },
        // Planned on the least loaded node (worker-1); each lands on worker-3.
        landings: vec![3; 4],
        ready_after: 0,
        max_replans: 3,
    };
    let (evicted, violations, report, first) = run(&s);
    assert_eq!(first, 1, "{report:?}");
    assert_eq!(
        evicted,
        vec![("a".to_string(), "worker-0".to_string())],
        "{report:?}"
    );
    assert!(violations.is_empty());
    assert_eq!(report.steps.len(), 1, "{report:?}");
    assert_eq!(report.steps[0].from, "worker-0");
    assert_eq!(report.steps[0].landed.as_deref(), Some("worker-3"));
    assert_eq!(report.replans, 1, "{report:?}");
}

/// A replan's first wave goes on with the wave in progress: a budget that
/// allowed one disruption is not given a second before the first
/// replacement is Ready.
#[test]
fn a_budget_is_not_spent_twice_across_a_replan() {
    let s = Scenario {
        nodes: 3,
        tainted: 1,
        pods: vec![(0, 0), (0, 0), (0, 1), (0, 2)],
        // Four pods, three must stay healthy: one disruption at a time.
        pdbs: [Some(3), None],
        limits: Limits::default(),
        landings: vec![0, 1, 2, 1],
        ready_after: 2,
        max_replans: 4,
    };
    let (evicted, violations, report, _) = run(&s);
    assert!(violations.is_empty(), "{violations:?}: {report:?}");
    assert!(!evicted.is_empty(), "{report:?}");
}
