//! The PreFilter/PreScore state kept across the replicas of one template
//! ([`podplace_engine::template`]: default spread selectors, eligible
//! spread domains) never changes an answer. Random clusters of 100–220
//! nodes get workloads of several replicas each (interleaved, with
//! Services and ReplicaSets selecting some of them, spread constraints
//! with every inclusion policy, minDomains, affinity and anti-affinity),
//! are placed in two rounds with a Service, a ReplicaSet and a node added
//! and a Service and a ReplicaSet removed in between (so the kept state
//! must be dropped), then pods are removed and new replicas placed on an
//! overlay and on the base state with the same cache (the kept
//! InterPodAffinity sums follow node versions, which must tell the two
//! apart), and every placement is
//! compared with the same placement computed afresh for every cycle: with
//! every node scored and with kube-scheduler's node sampling, with the
//! system default constraints and a `List` of defaults, with full outcomes
//! and the quick path, on one worker and on two.

use std::sync::Arc;

use crate::support::*;
use crate::threads::nodes;
use podplace_engine::place::{place_all, PlaceOptions};
use podplace_engine::profile::{DefaultConstraint, Profile, SpreadDefaults};
use podplace_engine::sampling::Sampling;
use podplace_engine::{PodId, SchedulerCache, SchedulerSetup};
use proptest::prelude::*;

/// One workload: its app label, rule, topology key, target app, weight,
/// CPU request, whether a ReplicaSet owns it, and how many replicas.
#[derive(Debug, Clone)]
struct Workload {
    app: &'static str,
    rule: u8,
    key: &'static str,
    target: &'static str,
    weight: i32,
    cpu: &'static str,
    owned: bool,
    replicas: usize,
}

fn arb_workload() -> impl Strategy<Value = Workload> {
    (
        prop::sample::select(vec!["a", "b", "c", "d"]),
        0u8..11,
        prop::sample::select(vec![HOST, ZONE]),
        prop::sample::select(vec!["a", "b", "c", "d"]),
        1i32..100,
        prop::sample::select(vec!["100m", "900m", "3"]),
        any::<bool>(),
        1usize..8,
    )
        .prop_map(
            |(app, rule, key, target, weight, cpu, owned, replicas)| Workload {
                app,
                rule,
                key,
                target,
                weight,
                cpu,
                owned,
                replicas,
            },
        )
}

impl Workload {
    fn pod(&self, name: &str) -> PodB {
        let mut p = pod(name).label("app", self.app).requests(self.cpu, "128Mi");
        if self.owned {
            p = p.owner("ReplicaSet", &format!("rs-{}", self.app), "u");
        }
        let (key, target) = (self.key, self.target);
        match self.rule {
            0 => p.anti("app", "In", &[target], key),
            1 => p.prefer_anti(self.weight, "app", &[target], key),
            2 => p.prefer_affinity(self.weight, "app", &[target], key),
            3 => p.spread(1, key, "ScheduleAnyway", target, None),
            4 => p.spread(1, key, "DoNotSchedule", target, None),
            5 => p.spread(2, key, "DoNotSchedule", self.app, Some(4)),
            6 => p.merge(serde_json::json!({"spec": {"topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": self.app}},
                    "nodeTaintsPolicy": "Honor", "nodeAffinityPolicy": "Ignore"}]}})),
            7 => p.affinity("app", "In", &[target], key),
            8 => p
                .node_selector(ZONE, "z2")
                .spread(1, key, "DoNotSchedule", target, None),
            // No rules of its own: the default constraints apply.
            _ => p,
        }
    }
}

fn service(app: &str) -> k8s_openapi::api::core::v1::Service {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("svc-{app}"), "namespace": "default"},
        "spec": {"selector": {"app": app}}
    }))
    .unwrap()
}

fn replica_set(app: &str) -> k8s_openapi::api::apps::v1::ReplicaSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("rs-{app}"), "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}}}}
    }))
    .unwrap()
}

/// What a run places: nodes, workloads in `order` (indexes into
/// `workloads`, one replica each time), the Services and ReplicaSets of the
/// first round, and the scheduler.
#[derive(Debug, Clone)]
struct Case {
    nodes: Vec<NodeB>,
    workloads: Vec<Workload>,
    order: Vec<usize>,
    services: Vec<&'static str>,
    owners: Vec<&'static str>,
    sampling: Option<(i32, usize)>,
    listed: bool,
}

/// Places the case's pods in two rounds and returns every placement as
/// comparable text; `reuse` keeps state across replicas or not.
fn place(case: &Case, reuse: bool, threads: usize, keep_outcomes: bool) -> Vec<String> {
    let mut c = cluster(case.nodes.clone(), vec![]);
    for app in &case.services {
        c.add_service(&service(app));
    }
    for app in &case.owners {
        c.add_replica_set(&replica_set(app)).unwrap();
    }
    let mut profile = Profile::default();
    if case.listed {
        profile.spread = SpreadDefaults::List(vec![
            DefaultConstraint {
                max_skew: 1,
                topology_key: ZONE.into(),
                do_not_schedule: true,
            },
            DefaultConstraint {
                max_skew: 2,
                topology_key: HOST.into(),
                do_not_schedule: false,
            },
        ]);
    }
    let mut cache = SchedulerCache::for_setup(&SchedulerSetup {
        profiles: vec![Arc::new(profile)],
        sampling: match case.sampling {
            Some((parallelism, _)) => Sampling::on(0, parallelism),
            None => Sampling::default(),
        },
        ..SchedulerSetup::default()
    });
    // Every step of every cycle on the pool's workers, however few nodes.
    cache.set_min_parallel_nodes(1);
    if let Some((_, start)) = case.sampling {
        cache.set_start_index(start);
    }
    cache.set_template_reuse(reuse);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let options = PlaceOptions {
        seed: 7,
        keep_outcomes,
    };
    let half = case.order.len() / 2;
    let mut lines = Vec::new();
    let mut placed_ids = Vec::new();
    for (round, slice) in [&case.order[..half], &case.order[half..]]
        .into_iter()
        .enumerate()
    {
        if round == 1 {
            // What the kept state read changes: a Service and a ReplicaSet
            // (default selectors), a node (eligible domains).
            c.add_service(&service("d"));
            c.add_replica_set(&replica_set("c")).unwrap();
            c.remove_service(&service("a"));
            c.remove_replica_set("default", "rs-b");
            c.add_node(&node("extra").label(ZONE, "z5").build())
                .unwrap();
        }
        let pending: Vec<PodId> = slice
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let name = format!("r{round}-p{i}");
                c.add_api_pod(&case.workloads[w].pod(&name).build())
                    .unwrap()
            })
            .collect();
        let placed = pool.install(|| place_all(&mut c.state, &mut cache, &pending, options));
        lines.extend(placed.iter().map(describe));
        placed_ids.extend(placed.iter().filter(|p| p.node.is_some()).map(|p| p.pod));
    }
    // Round three: pods leave (their nodes' counts shrink), and the same
    // new replicas are placed on an overlay and then on the base state
    // with the same cache (what the overlay's binds changed must not leak
    // into the base's kept state).
    for &id in placed_ids.iter().step_by(3) {
        c.state.remove_pod(id);
    }
    let pending: Vec<PodId> = case
        .order
        .iter()
        .take(6)
        .enumerate()
        .map(|(i, &w)| {
            c.add_api_pod(&case.workloads[w].pod(&format!("r2-p{i}")).build())
                .unwrap()
        })
        .collect();
    let mut overlay = c.state.overlay();
    let placed = pool.install(|| place_all(&mut overlay, &mut cache, &pending, options));
    lines.extend(placed.iter().map(describe));
    let placed = pool.install(|| place_all(&mut c.state, &mut cache, &pending, options));
    lines.extend(placed.iter().map(describe));
    lines
}

/// A placement as comparable text.
fn describe(p: &podplace_engine::place::Placement) -> String {
    let full = p.outcome.as_ref().map(|o| {
        format!(
            "{:?} {:?} {:?} {:?}",
            o.statuses, o.feasible, o.scores, o.best
        )
    });
    let sampled = p
        .sampled
        .as_ref()
        .map(|s| (s.to_find, s.start, s.processed, s.found, s.certainty));
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        p.pod, p.node, p.score, p.tied, p.message, sampled, full
    )
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        100usize..220,
        2usize..5,
        prop::collection::vec(arb_workload(), 2..6),
        prop::collection::vec(any::<prop::sample::Index>(), 6..20),
        prop::sample::subsequence(vec!["a", "b", "c"], 0..3),
        prop::sample::subsequence(vec!["a", "b", "d"], 0..3),
        prop::option::of((prop::sample::select(vec![1, 16]), 0usize..220)),
        any::<bool>(),
    )
        .prop_map(
            |(n, small_every, workloads, picks, services, owners, sampling, listed)| {
                // Replicas of a workload come in runs, as a queue of
                // Deployments gives them, interleaved with other runs.
                let mut order = Vec::new();
                for pick in picks {
                    let w = pick.index(workloads.len());
                    order.extend(std::iter::repeat_n(w, workloads[w].replicas));
                }
                // A zone of tainted nodes only: eligible for a constraint
                // that ignores taints, not for one that honours them.
                let mut nodes = nodes(n, small_every);
                for i in 0..2 {
                    nodes.push(node(&format!("t{i}")).label(ZONE, "z4").taint(
                        "dedicated",
                        "infra",
                        "NoSchedule",
                    ));
                }
                Case {
                    nodes,
                    workloads,
                    order,
                    services,
                    owners,
                    sampling,
                    listed,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn kept_template_state_places_as_computing_it_afresh(
        case in arb_case(),
        keep_outcomes in any::<bool>(),
    ) {
        let fresh = place(&case, false, 1, keep_outcomes);
        // A case that places nothing (say, only required affinity to pods
        // no workload makes) compares nothing kept: draw another.
        prop_assume!(fresh.iter().any(|p| p.contains("Some(NodeId")));
        for threads in [1, 2] {
            let kept = place(&case, true, threads, keep_outcomes);
            prop_assert_eq!(&fresh, &kept, "{} threads", threads);
        }
    }
}
