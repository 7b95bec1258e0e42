//! Table-driven tests of the semantics that are easy to get wrong, each case
//! built to read like the situation it pins.

use crate::support::*;

const ANTI: &str = "node(s) didn't match pod anti-affinity rules";
const EXISTING_ANTI: &str = "node(s) didn't satisfy existing pods anti-affinity rules";
const AFFINITY: &str = "node(s) didn't match pod affinity rules";
const SPREAD: &str = "node(s) didn't match pod topology spread constraints";
const SPREAD_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
const TAINT: &str = "node(s) had untolerated taint(s)";
const PORTS: &str = "node(s) didn't have free ports for the requested pod ports";

struct Case {
    name: &'static str,
    nodes: Vec<NodeB>,
    pods: Vec<PodB>,
    incoming: PodB,
    /// Expected first reason per node, "ok" when feasible.
    want: Vec<(&'static str, &'static str)>,
}

fn two_nodes() -> Vec<NodeB> {
    vec![node("n1"), node("n2")]
}

#[test]
fn filter_verdicts() {
    let cases = vec![
        Case {
            name: "existing pod's anti-affinity is symmetric (story 1)",
            nodes: two_nodes(),
            pods: vec![pod("prom").label("component", "server").on("n1").anti(
                "component",
                "In",
                &["server"],
                HOST,
            )],
            incoming: pod("vault").label("component", "server"),
            want: vec![("n1", EXISTING_ANTI), ("n2", "ok")],
        },
        Case {
            name: "own anti-affinity keeps off the matching pod's node",
            nodes: two_nodes(),
            pods: vec![pod("a").label("app", "web").on("n1")],
            incoming: pod("b")
                .label("app", "web")
                .anti("app", "In", &["web"], HOST),
            want: vec![("n1", ANTI), ("n2", "ok")],
        },
        Case {
            name: "anti-affinity in another namespace does not apply by default",
            nodes: two_nodes(),
            pods: vec![pod("a").ns("other").label("app", "web").on("n1")],
            incoming: pod("b")
                .label("app", "web")
                .anti("app", "In", &["web"], HOST),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "a running pod's requests fill its node",
            nodes: vec![node("n1").capacity("1", "16Gi", "110")],
            pods: vec![pod("job")
                .requests("900m", "128Mi")
                .on("n1")
                .phase("Running")],
            incoming: pod("new").requests("500m", "128Mi"),
            want: vec![("n1", "Insufficient cpu")],
        },
        Case {
            name: "a finished (Succeeded) pod holds no resources: the scheduler does not see it",
            nodes: vec![node("n1").capacity("1", "16Gi", "110")],
            pods: vec![pod("job")
                .requests("900m", "128Mi")
                .on("n1")
                .phase("Succeeded")],
            incoming: pod("new").requests("500m", "128Mi"),
            want: vec![("n1", "ok")],
        },
        Case {
            name: "a Failed pod's anti-affinity and labels bind nothing",
            nodes: two_nodes(),
            pods: vec![
                pod("prom")
                    .label("component", "server")
                    .on("n1")
                    .anti("component", "In", &["server"], HOST)
                    .phase("Failed"),
                pod("web").label("app", "web").on("n2").phase("Failed"),
            ],
            incoming: pod("vault")
                .label("component", "server")
                .anti("app", "In", &["web"], HOST),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "namespaceSelector {} reaches every namespace",
            nodes: two_nodes(),
            pods: vec![pod("a").ns("other").label("app", "web").on("n1")],
            incoming: pod("b").anti_term(serde_json::json!({
                "labelSelector": {"matchLabels": {"app": "web"}},
                "namespaceSelector": {},
                "topologyKey": HOST
            })),
            want: vec![("n1", ANTI), ("n2", "ok")],
        },
        Case {
            name: "a nil labelSelector matches no pod",
            nodes: two_nodes(),
            pods: vec![pod("a").label("app", "web").on("n1")],
            incoming: pod("b").anti_term(serde_json::json!({"topologyKey": HOST})),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "first pod of a group passes its own affinity (story 3's branch)",
            nodes: two_nodes(),
            pods: vec![pod("pod-1").label("app", "pod-1").on("n1")],
            incoming: pod("pod-2").affinity("app", "DoesNotExist", &[], HOST),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "affinity to a pod that exists elsewhere is required",
            nodes: two_nodes(),
            pods: vec![pod("db").label("app", "db").on("n2")],
            incoming: pod("web").affinity("app", "In", &["db"], HOST),
            want: vec![("n1", AFFINITY), ("n2", "ok")],
        },
        Case {
            name: "affinity needs the topology key on the node even for the first pod",
            nodes: vec![node("n1"), node("n2").without(HOST)],
            pods: vec![],
            incoming: pod("web")
                .label("app", "web")
                .affinity("app", "In", &["web"], HOST),
            want: vec![("n1", "ok"), ("n2", AFFINITY)],
        },
        Case {
            name: "required affinity counts only pods matching every term",
            nodes: two_nodes(),
            pods: vec![
                pod("a").label("app", "db").on("n1"),
                pod("b").label("tier", "x").on("n2"),
            ],
            incoming: pod("c").affinity("app", "In", &["db"], HOST).affinity(
                "tier",
                "In",
                &["x"],
                HOST,
            ),
            want: vec![("n1", AFFINITY), ("n2", AFFINITY)],
        },
        Case {
            name: "terminating pods still count for anti-affinity",
            nodes: two_nodes(),
            pods: vec![pod("old").label("app", "web").on("n1").terminating()],
            incoming: pod("new")
                .label("app", "web")
                .anti("app", "In", &["web"], HOST),
            want: vec![("n1", ANTI), ("n2", "ok")],
        },
        Case {
            name: "terminating pods do not count for topology spread",
            nodes: two_nodes(),
            pods: vec![
                pod("a").label("app", "web").on("n1").terminating(),
                pod("b").label("app", "web").on("n1").terminating(),
            ],
            incoming: pod("c")
                .label("app", "web")
                .spread(1, HOST, "DoNotSchedule", "web", None),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "spread skew over maxSkew is rejected; a node without the key is unresolvable",
            nodes: vec![node("n1"), node("n2"), node("n3").without(HOST)],
            pods: vec![pod("a").label("app", "web").on("n1")],
            incoming: pod("b")
                .label("app", "web")
                .spread(1, HOST, "DoNotSchedule", "web", None),
            want: vec![("n1", SPREAD), ("n2", "ok"), ("n3", SPREAD_LABEL)],
        },
        Case {
            name: "minDomains above the domain count makes the global minimum 0",
            nodes: two_nodes(),
            pods: vec![
                pod("a").label("app", "web").on("n1"),
                pod("b").label("app", "web").on("n2"),
            ],
            incoming: pod("c")
                .label("app", "web")
                .spread(1, HOST, "DoNotSchedule", "web", Some(3)),
            want: vec![("n1", SPREAD), ("n2", SPREAD)],
        },
        Case {
            name: "NoSchedule taints filter, PreferNoSchedule ones do not",
            nodes: vec![
                node("n1").taint("dedicated", "gpu", "NoSchedule"),
                node("n2").taint("x", "y", "PreferNoSchedule"),
            ],
            pods: vec![],
            incoming: pod("p"),
            want: vec![("n1", TAINT), ("n2", "ok")],
        },
        Case {
            name: "an empty key with Exists tolerates every taint",
            nodes: vec![
                node("n1").taint("dedicated", "gpu", "NoSchedule"),
                node("n2"),
            ],
            pods: vec![],
            incoming: pod("p").tolerate("", "Exists", "", ""),
            want: vec![("n1", "ok"), ("n2", "ok")],
        },
        Case {
            name: "host port on the wildcard IP conflicts with any IP",
            nodes: two_nodes(),
            pods: vec![pod("a").host_port(8080, Some("10.0.0.1")).on("n1")],
            incoming: pod("b").host_port(8080, None),
            want: vec![("n1", PORTS), ("n2", "ok")],
        },
        Case {
            name: "more CPU than the node has at all is unresolvable",
            nodes: vec![node("n1").capacity("1", "16Gi", "110"), node("n2")],
            pods: vec![],
            incoming: pod("p").requests("2", "1Gi"),
            want: vec![("n1", "Insufficient cpu"), ("n2", "ok")],
        },
    ];
    for case in cases {
        let mut c = cluster(case.nodes, case.pods);
        let outcome = run(&mut c, case.incoming);
        let got = verdicts(&c, &outcome);
        let want: Vec<(String, String)> = case
            .want
            .iter()
            .map(|(n, r)| (n.to_string(), r.to_string()))
            .collect();
        assert_eq!(got, want, "case: {}", case.name);
    }
}

#[test]
fn unresolvable_nodes_are_not_preemption_candidates() {
    let mut c = cluster(
        vec![
            node("n1").capacity("1", "16Gi", "110"),
            node("n2").capacity("2", "16Gi", "110"),
        ],
        vec![pod("low").requests("1", "1Gi").priority(0).on("n2")],
    );
    let outcome = run(&mut c, pod("high").requests("2", "1Gi").priority(100));
    // n1 can never fit 2 CPUs; evicting `low` from n2 makes room.
    assert_eq!(
        outcome.message,
        "0/2 nodes are available: 2 Insufficient cpu."
    );
    let preemption = outcome.preemption.expect("preemption ran");
    assert_eq!(preemption.candidates.len(), 1);
    assert_eq!(&*c.node(preemption.candidates[0].node).name, "n2");
}

#[test]
fn binding_updates_the_indexes_incrementally() {
    // Two replicas with hostname anti-affinity: the second must avoid the first.
    let mut c = cluster(two_nodes(), vec![]);
    let replica = || {
        pod("r")
            .label("app", "web")
            .anti("app", "In", &["web"], HOST)
    };
    let first = run(&mut c, replica());
    assert_eq!(first.feasible.len(), 2);
    let id = c.add_api_pod(&replica().build()).unwrap();
    let target = first.chosen.unwrap();
    c.bind(id, target);
    let second = run(&mut c, replica());
    assert_eq!(second.feasible.len(), 1);
    assert_ne!(second.feasible[0], target);
    // Unbinding gives the node back.
    c.unbind(id);
    assert_eq!(run(&mut c, replica()).feasible.len(), 2);
}

#[test]
fn preferred_anti_affinity_scores_away_from_matching_pods() {
    let mut c = cluster(
        vec![node("n1"), node("n2"), node("n3")],
        vec![
            pod("a").label("app", "demo").on("n1"),
            pod("b").label("app", "demo").on("n1"),
            pod("c").label("app", "demo").on("n2"),
        ],
    );
    let outcome = run(
        &mut c,
        pod("d")
            .label("app", "demo")
            .prefer_anti(100, "app", &["demo"], HOST),
    );
    let ipa = |node: &str| {
        let id = c.node_id(node).unwrap();
        outcome
            .scores
            .iter()
            .find(|s| s.node == id)
            .and_then(|s| {
                s.plugins
                    .iter()
                    .find(|(p, _)| p.name() == "InterPodAffinity")
            })
            .map(|(_, v)| *v)
    };
    // raw: n1 -200, n2 -100, n3 0 → normalised 0, 50, 100 → weighted ×2.
    assert_eq!(
        (ipa("n1"), ipa("n2"), ipa("n3")),
        (Some(0), Some(100), Some(200))
    );
    assert_eq!(outcome.best.len(), 1);
    assert_eq!(&*c.node(outcome.best[0]).name, "n3");
}
