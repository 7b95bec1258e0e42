//! No flapping: rebalancing the outcome of a rebalance plans nothing, on
//! randomized clusters with soft and hard rules and piled-up pods.

use k8s_openapi::jiff::Timestamp;
use podplace_model::inventory::{Inventory, Origin, Sourced};
use podplace_rebalance::{plan, KeptReason, PlanOptions, Policy};
use proptest::prelude::*;
use serde_json::{json, Value};

fn sourced<T: serde::de::DeserializeOwned>(v: Value) -> Sourced<T> {
    Sourced {
        object: serde_json::from_value(v).unwrap(),
        origin: Origin::default(),
    }
}

#[derive(Debug, Clone)]
struct App {
    replicas: usize,
    rule: u8,
    zone_key: bool,
    cpu: u32,
    max_unavailable: u32,
    placement: Vec<usize>,
}

fn app() -> impl Strategy<Value = App> {
    (
        1usize..7,
        0u8..7,
        any::<bool>(),
        1u32..8,
        1u32..3,
        proptest::collection::vec(0usize..16, 7),
    )
        .prop_map(|(replicas, rule, zone_key, cpu, mu, placement)| App {
            replicas,
            rule,
            zone_key,
            cpu: cpu * 100,
            max_unavailable: mu,
            placement,
        })
}

fn build(nodes: usize, taint: Option<usize>, apps: &[App]) -> Inventory {
    let mut inv = Inventory::default();
    for n in 0..nodes {
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("n{n}"), "uid": format!("node-{n}"),
                "labels": {"kubernetes.io/hostname": format!("n{n}"),
                           "topology.kubernetes.io/zone": format!("z{}", n % 2)}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
        });
        if taint == Some(n) {
            node["spec"] =
                json!({"taints": [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]});
        }
        inv.nodes.push(sourced(node));
    }
    for (i, a) in apps.iter().enumerate() {
        let name = format!("app{i}");
        let key = if a.zone_key {
            "topology.kubernetes.io/zone"
        } else {
            "kubernetes.io/hostname"
        };
        let sel = json!({"matchLabels": {"app": name}});
        let affinity = match a.rule {
            0 => json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": sel, "topologyKey": key}}]}}),
            1 => json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app0"}}, "topologyKey": key}}]}}),
            2 => json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": sel, "topologyKey": "kubernetes.io/hostname"}]}}),
            3 => json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 40, "preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}]}}]}}),
            _ => json!({}),
        };
        let spread = match a.rule {
            4 => {
                json!([{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}])
            }
            5 => {
                json!([{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}])
            }
            _ => json!([]),
        };
        let spec = json!({
            "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": format!("{}m", a.cpu), "memory": "256Mi"}}}],
            "affinity": affinity,
            "topologySpreadConstraints": spread,
        });
        inv.deployments.push(sourced(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "uid": format!("d-{i}"), "generation": 1},
            "spec": {"replicas": a.replicas, "selector": sel,
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": a.max_unavailable}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
            "status": {"replicas": a.replicas}
        })));
        let rs = format!("{name}-abc12");
        inv.replica_sets.push(sourced(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs, "namespace": "default", "uid": format!("rs-{i}"),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": format!("d-{i}"), "controller": true}]},
            "spec": {"replicas": a.replicas, "selector": sel, "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
            "status": {"replicas": a.replicas}
        })));
        for r in 0..a.replicas {
            let node = a.placement[r] % nodes;
            inv.pods.push(sourced(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{rs}-p{r}"), "generateName": format!("{rs}-"), "namespace": "default",
                    "uid": format!("pod-{i}-{r}"), "labels": {"app": name},
                    "creationTimestamp": "2026-11-22T03:00:00Z",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("rs-{i}"), "controller": true}]},
                "spec": {"nodeName": format!("n{node}"), "containers": spec["containers"], "affinity": spec["affinity"],
                         "topologySpreadConstraints": spec["topologySpreadConstraints"]},
                "status": {"phase": "Running", "startTime": "2026-11-22T03:00:00Z",
                           "conditions": [{"type": "Ready", "status": "True"}]}
            })));
        }
    }
    inv
}

const EVERYTHING: &str = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: everything
  pluginConfig:
  - name: RemovePodsViolatingNodeAffinity
    args: {nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution]}
  - name: RemovePodsViolatingNodeTaints
    args: {includePreferNoSchedule: true}
  - name: RemovePodsViolatingTopologySpreadConstraint
    args: {constraints: [DoNotSchedule, ScheduleAnyway]}
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints, RemovePodsViolatingNodeAffinity, RemovePodsViolatingInterPodAntiAffinity]
    balance:
      enabled: [RemovePodsViolatingTopologySpreadConstraint, SoftRules, RemoveDuplicates, LowNodeUtilization]
"#;

fn opts(seed: u64) -> PlanOptions {
    PlanOptions {
        seed,
        now: "2026-11-22T04:00:00Z".parse::<Timestamp>().unwrap(),
        max_rounds: 100,
        scheduler: Default::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn rebalancing_the_outcome_plans_nothing(
        nodes in 2usize..6,
        taint in proptest::option::of(0usize..6),
        apps in proptest::collection::vec(app(), 1..5),
        seed in 0u64..4,
        everything in any::<bool>(),
    ) {
        let inv = build(nodes, taint, &apps);
        let policy = if everything {
            Policy::parse(EVERYTHING, "everything").unwrap()
        } else {
            Policy::default_profile()
        };
        let first = plan(&inv, &policy, &opts(seed)).unwrap();
        for e in &first.plan.evictions {
            prop_assert!(e.objective_after < e.objective_before, "{e:?}");
            prop_assert!(e.from != e.to, "{e:?}");
        }
        for s in &first.plan.strategies {
            prop_assert!(s.after <= s.before, "{s:?}");
        }
        let outcome = first.apply(&inv, opts(seed).now);
        let second = plan(&outcome, &policy, &opts(seed)).unwrap();
        prop_assert!(
            second.plan.evictions.is_empty(),
            "first plan {:#?}\nsecond plan {:#?}",
            first.plan.evictions,
            second.plan.evictions
        );
    }
}

#[test]
fn the_generator_makes_work_for_the_planner() {
    // Five replicas with preferred anti-affinity piled on one of three nodes:
    // the same shape as story 2.
    let piled = App {
        replicas: 5,
        rule: 0,
        zone_key: false,
        cpu: 100,
        max_unavailable: 1,
        placement: vec![0; 7],
    };
    let inv = build(3, None, &[piled]);
    let first = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
    assert_eq!(first.plan.evictions.len(), 3);
    assert_eq!(first.plan.waves, 3, "maxUnavailable 1: one pod at a time");
    let second = plan(
        &first.apply(&inv, opts(0).now),
        &Policy::default_profile(),
        &opts(0),
    )
    .unwrap();
    assert!(second.plan.evictions.is_empty());
}

/// The default profile with another `maxNoOfPodsToEvictTotal`.
fn default_capped_at(limit: u32) -> Policy {
    let text = podplace_rebalance::policy::DEFAULT_POLICY.replace(
        "maxNoOfPodsToEvictTotal: 100",
        &format!("maxNoOfPodsToEvictTotal: {limit}"),
    );
    Policy::parse(&text, "capped").unwrap()
}

#[test]
fn a_capped_run_leaves_the_rest_to_the_next_run() {
    // Six replicas with preferred hostname anti-affinity on one of four
    // nodes: four moves restore 2-1-1-2 (or any 2-2-1-1).
    let piled = App {
        replicas: 6,
        rule: 0,
        zone_key: false,
        cpu: 100,
        max_unavailable: 1,
        placement: vec![0; 7],
    };
    let inv = build(4, None, &[piled]);
    let uncapped = plan(&inv, &default_capped_at(1000), &opts(0)).unwrap();
    assert_eq!(uncapped.plan.evictions.len(), 4);
    assert!(uncapped.plan.stopped_at_limit.is_none());

    let policy = default_capped_at(3);
    let first = plan(&inv, &policy, &opts(0)).unwrap();
    assert_eq!(first.plan.evictions.len(), 3);
    let stop = first
        .plan
        .stopped_at_limit
        .clone()
        .expect("the limit ended the plan");
    assert_eq!(stop.max_no_of_pods_to_evict_total, 3);
    assert!(stop.deferred >= 1, "{stop:?}");
    assert!(first
        .plan
        .kept
        .iter()
        .any(|k| k.reason == KeptReason::TotalLimit { limit: 3 }));
    // The next run goes on from the cluster as the first left it.
    let after_first = first.apply(&inv, opts(0).now);
    let second = plan(&after_first, &policy, &opts(0)).unwrap();
    assert_eq!(second.plan.evictions.len(), 1);
    assert!(second.plan.stopped_at_limit.is_none());
    let third = plan(&second.apply(&after_first, opts(0).now), &policy, &opts(0)).unwrap();
    assert!(third.plan.evictions.is_empty());
}

#[test]
fn anti_affinity_no_move_can_mend_is_not_nominated() {
    // Preferred zone anti-affinity, four replicas over two zones: every pod
    // shares its zone with another, but every zone holds as many, so no
    // move lowers the cost and nothing is nominated.
    let balanced = App {
        replicas: 4,
        rule: 0,
        zone_key: true,
        cpu: 100,
        max_unavailable: 1,
        placement: vec![0, 1, 2, 3, 0, 0, 0],
    };
    let inv = build(4, None, std::slice::from_ref(&balanced));
    let planned = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
    assert!(planned.plan.evictions.is_empty());
    assert!(planned.plan.kept.is_empty(), "{:#?}", planned.plan.kept);

    // All four in zone z0 (nodes n0 and n2): moves to z1 mend it.
    let piled = App {
        placement: vec![0, 2, 0, 2, 0, 0, 0],
        ..balanced
    };
    let inv = build(4, None, &[piled]);
    let planned = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
    assert_eq!(planned.plan.evictions.len(), 2, "{:#?}", planned.plan);
    assert!(planned
        .plan
        .evictions
        .iter()
        .all(|e| e.to == "n1" || e.to == "n3"));
}

#[test]
fn affinity_towards_domains_holding_no_more_is_not_nominated() {
    // app1 prefers app0's zone; app0 runs one pod in each zone, so every
    // app1 pod already has as many app0 pods in its zone as any zone has.
    let target = App {
        replicas: 2,
        rule: 6,
        zone_key: true,
        cpu: 100,
        max_unavailable: 1,
        placement: vec![0, 1, 0, 0, 0, 0, 0],
    };
    let follower = App {
        rule: 1,
        placement: vec![2, 3, 0, 0, 0, 0, 0],
        ..target.clone()
    };
    let inv = build(4, None, &[target.clone(), follower.clone()]);
    let planned = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
    assert!(planned.plan.kept.is_empty(), "{:#?}", planned.plan.kept);
    assert!(planned.plan.evictions.is_empty());

    // Both app0 pods in zone z0 (n0, n2): the app1 pod in z1 moves there.
    let target = App {
        placement: vec![0, 2, 0, 0, 0, 0, 0],
        ..target
    };
    let inv = build(4, None, &[target, follower]);
    let planned = plan(&inv, &Policy::default_profile(), &opts(0)).unwrap();
    assert_eq!(planned.plan.evictions.len(), 1, "{:#?}", planned.plan);
    assert_eq!(planned.plan.evictions[0].from, "n3");
}
