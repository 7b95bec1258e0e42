//! Every kind of reason `why` reports, one small world per row, and the
//! grouping of nodes that fail alike. Each row also checks that the first
//! reason is the one kube-scheduler reports (the engine's Filter status).

use podplace_explain::{
    explain, group, Blocker, BlockerCount, Detail, Explanation, LabelMiss, NodeVerdict, Reason,
    RuleOwner, TaintView, TermKind, TermView, World,
};
use podplace_model::load::{load, Source};
use podplace_testkit::{label_term, node, pod, NodeB, PodB, HOST, ZONE};

/// A node in `zone` (hostname label, 4 CPU, 16Gi, 110 pods).
fn zoned(name: &str, zone: &str) -> NodeB {
    node(name).label(ZONE, zone)
}

/// A pod in `default` with uid `uid-<name>` and one nginx container.
fn waiting(name: &str) -> PodB {
    pod(name).uid(&format!("uid-{name}")).image("nginx:1.27")
}

/// A pod bound to `node`.
fn running(name: &str, node: &str) -> PodB {
    waiting(name).on(node)
}

/// Loads a world from YAML documents and places its waiting pods.
fn world(docs: &[String]) -> World {
    let text = docs.concat();
    let mut inv = load(&[Source::Bytes {
        name: "world.yaml".into(),
        data: text.into_bytes(),
    }])
    .expect("world loads");
    podplace_model::expand::expand_workloads(&mut inv);
    World::new(inv, &Default::default(), 0).expect("cluster builds")
}

/// Loads a world, places its waiting pods and explains `target`; also
/// returns the engine's Filter statuses for the pod, per node name.
fn why(docs: &[String], target: &str) -> (Explanation, Vec<(String, Vec<String>)>) {
    let world = world(docs);
    let id = world.find_pod(target, None).expect("pod exists");
    let e = explain(&world, id);
    let mut what_if = world.base.overlay();
    if what_if.state().pod_node(id).is_some() {
        what_if.state_mut().unbind(id);
    }
    let pod = what_if.state().pod(id).clone();
    let outcome = what_if.schedule(&pod);
    let state = what_if.state();
    let statuses = state
        .node_ids()
        .map(|n| {
            (
                state.node(n).name.to_string(),
                outcome.statuses[n.index()]
                    .reasons
                    .iter()
                    .map(|r| r.to_string())
                    .collect(),
            )
        })
        .collect();
    (e, statuses)
}

fn verdict<'a>(e: &'a Explanation, node: &str) -> &'a NodeVerdict {
    e.nodes
        .iter()
        .find(|v| v.node == node)
        .unwrap_or_else(|| panic!("{node} does not reject the pod: {:#?}", e.nodes))
}

/// The first reason of every verdict is what kube-scheduler's Filter reports.
fn agrees_with_engine(e: &Explanation, statuses: &[(String, Vec<String>)]) {
    for (node, reasons) in statuses {
        match e.nodes.iter().find(|v| &v.node == node) {
            None => assert!(
                reasons.is_empty(),
                "{node}: engine rejects with {reasons:?}"
            ),
            Some(v) => assert_eq!(
                Some(&v.reasons[0].message),
                reasons.first(),
                "{node}: first reason differs from the engine's"
            ),
        }
    }
}

struct Case {
    name: &'static str,
    world: Vec<String>,
    pod: &'static str,
    node: &'static str,
    /// (plugin, message) of every reason on `node`, in order.
    reasons: &'static [(&'static str, &'static str)],
    check: fn(&Explanation, &[Reason]),
}

fn no_check(_: &Explanation, _: &[Reason]) {}

#[test]
fn every_reason_kind() {
    let cases = vec![
        Case {
            name: "cordoned node",
            world: vec![zoned("n1", "a").unschedulable().yaml(), waiting("p").yaml()],
            pod: "p",
            node: "n1",
            reasons: &[("NodeUnschedulable", "node(s) were unschedulable")],
            check: |_, r| assert_eq!(r[0].detail, Detail::Cordoned),
        },
        Case {
            name: "every untolerated NoSchedule/NoExecute taint, not PreferNoSchedule",
            world: vec![
                zoned("n1", "a")
                    .taint("dedicated", "gpu", "NoSchedule")
                    .taint("soft", "", "PreferNoSchedule")
                    .taint("broken", "", "NoExecute")
                    .yaml(),
                waiting("p").yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[("TaintToleration", "node(s) had untolerated taint(s)")],
            check: |_, r| {
                let taint = |k: &str, v: &str, e: &str| TaintView {
                    key: k.into(),
                    value: v.into(),
                    effect: e.into(),
                };
                assert_eq!(
                    r[0].detail,
                    Detail::Taints {
                        taints: vec![
                            taint("dedicated", "gpu", "NoSchedule"),
                            taint("broken", "", "NoExecute")
                        ]
                    }
                );
            },
        },
        Case {
            name: "nodeSelector with the node's own value",
            world: vec![
                zoned("n1", "b").yaml(),
                waiting("p").node_selector(ZONE, "a").yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[(
                "NodeAffinity",
                "node(s) didn't match Pod's node affinity/selector",
            )],
            check: |_, r| {
                let Detail::NodeAffinity { node_selector, .. } = &r[0].detail else {
                    panic!("{:?}", r[0].detail)
                };
                assert_eq!(
                    node_selector,
                    &vec![LabelMiss {
                        requirement: "topology.kubernetes.io/zone=a".into(),
                        key: "topology.kubernetes.io/zone".into(),
                        node_value: Some("b".into()),
                    }]
                );
            },
        },
        Case {
            name: "required node affinity: the failing requirement of each term",
            world: vec![
                zoned("n1", "b").yaml(),
                waiting("p")
                    .node_affinity(&[(ZONE, "In", &["a", "c"]), (HOST, "Exists", &[])])
                    .node_affinity(&[("disk", "In", &["ssd"])])
                    .yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[(
                "NodeAffinity",
                "node(s) didn't match Pod's node affinity/selector",
            )],
            check: |_, r| {
                let Detail::NodeAffinity { terms, .. } = &r[0].detail else {
                    panic!()
                };
                type Misses<'a> = Vec<(&'a str, Option<&'a str>)>;
                let got: Vec<(usize, Misses<'_>)> = terms
                    .iter()
                    .map(|(i, ms)| {
                        (
                            *i,
                            ms.iter()
                                .map(|m| (m.requirement.as_str(), m.node_value.as_deref()))
                                .collect(),
                        )
                    })
                    .collect();
                assert_eq!(
                    got,
                    vec![
                        (
                            0,
                            vec![("topology.kubernetes.io/zone In [a, c]", Some("b"))]
                        ),
                        (1, vec![("disk In [ssd]", None)]),
                    ]
                );
            },
        },
        Case {
            name: "host port held by another pod",
            world: vec![
                zoned("n1", "a").yaml(),
                running("web", "n1").host_port(8080, None).yaml(),
                waiting("p").host_port(8080, None).yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[(
                "NodePorts",
                "node(s) didn't have free ports for the requested pod ports",
            )],
            check: |_, r| {
                let Detail::Ports { ports } = &r[0].detail else {
                    panic!()
                };
                assert_eq!(ports.len(), 1);
                assert_eq!(
                    (ports[0].port, ports[0].used_by.as_str()),
                    (8080, "default/web")
                );
            },
        },
        Case {
            name: "every short resource with requested, free and shortfall",
            world: vec![
                zoned("n1", "a").yaml(),
                running("big", "n1").requests("2", "15Gi").yaml(),
                waiting("p").requests("3", "2Gi").yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[
                ("NodeResourcesFit", "Insufficient cpu"),
                ("NodeResourcesFit", "Insufficient memory"),
            ],
            check: |_, r| {
                let Detail::Resource(cpu) = &r[0].detail else {
                    panic!()
                };
                assert_eq!(
                    (cpu.requested, cpu.free, cpu.short_by, cpu.exceeds_node),
                    (3000, 2000, 1000, false)
                );
                let Detail::Resource(mem) = &r[1].detail else {
                    panic!()
                };
                assert_eq!(mem.short_by, (1i64 << 30));
            },
        },
        Case {
            name: "topology spread: skew per domain",
            world: vec![
                zoned("n1", "a").yaml(),
                zoned("n2", "b").yaml(),
                running("w1", "n1").label("app", "w").yaml(),
                running("w2", "n1").label("app", "w").yaml(),
                waiting("p")
                    .label("app", "w")
                    .spread(1, ZONE, "DoNotSchedule", "w", None)
                    .yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[(
                "PodTopologySpread",
                "node(s) didn't match pod topology spread constraints",
            )],
            check: |_, r| {
                let Detail::SpreadSkew {
                    domain,
                    matching,
                    min,
                    skew,
                    max_skew,
                    domains,
                    ..
                } = &r[0].detail
                else {
                    panic!("{:?}", r[0].detail)
                };
                assert_eq!(
                    (domain.as_str(), *matching, *min, *skew, *max_skew),
                    ("a", 2, 0, 3, 1)
                );
                let d: Vec<(&str, i64)> = domains
                    .iter()
                    .map(|d| (d.domain.as_str(), d.pods))
                    .collect();
                assert_eq!(d, [("b", 0), ("a", 2)]);
            },
        },
        Case {
            name: "topology spread: node without the key",
            world: vec![
                zoned("n1", "a").yaml(),
                waiting("p")
                    .label("app", "w")
                    .spread(1, "rack", "DoNotSchedule", "w", None)
                    .yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[(
                "PodTopologySpread",
                "node(s) didn't match pod topology spread constraints (missing required label)",
            )],
            check: no_check,
        },
        Case {
            name: "required pod affinity with no matching pod in the node's domain",
            world: vec![
                zoned("n1", "a").yaml(),
                zoned("n2", "b").yaml(),
                running("db", "n1").label("app", "db").yaml(),
                waiting("p")
                    .affinity_term(label_term("app", "db", ZONE))
                    .yaml(),
            ],
            pod: "p",
            node: "n2",
            reasons: &[(
                "InterPodAffinity",
                "node(s) didn't match pod affinity rules",
            )],
            check: |e, r| {
                let Detail::PodAffinity { misses } = &r[0].detail else {
                    panic!()
                };
                assert_eq!(misses.len(), 1);
                assert_eq!(misses[0].domain.as_deref(), Some("b"));
                assert_eq!(
                    (misses[0].matching_here, misses[0].matching_anywhere),
                    (0, 1)
                );
                assert_eq!(e.terms[misses[0].term].kind, TermKind::RequiredAffinity);
                // n1 holds the db pod: not rejected.
                assert!(e.nodes.iter().all(|v| v.node != "n1"));
            },
        },
        Case {
            name: "the pod's own anti-affinity (incoming) and an existing pod's (existing)",
            world: vec![
                zoned("n1", "a").yaml(),
                running("guard", "n1")
                    .label("app", "guard")
                    .anti_term(label_term("tier", "web", HOST))
                    .yaml(),
                waiting("p")
                    .label("tier", "web")
                    .anti_term(label_term("app", "guard", ZONE))
                    .yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[
                (
                    "InterPodAffinity",
                    "node(s) didn't match pod anti-affinity rules",
                ),
                (
                    "InterPodAffinity",
                    "node(s) didn't satisfy existing pods anti-affinity rules",
                ),
            ],
            check: |e, r| {
                let one = |b: &[Blocker]| {
                    (
                        b.len(),
                        b[0].pod.clone(),
                        b[0].workload.clone(),
                        b[0].rule_owner,
                        b[0].domain.clone(),
                    )
                };
                assert_eq!(
                    one(&r[0].blockers),
                    (
                        1,
                        "default/guard".into(),
                        "Pod/default/guard".into(),
                        RuleOwner::Incoming,
                        "a".into()
                    )
                );
                assert_eq!(
                    one(&r[1].blockers),
                    (
                        1,
                        "default/guard".into(),
                        "Pod/default/guard".into(),
                        RuleOwner::Existing,
                        "n1".into()
                    )
                );
                let incoming = &e.terms[r[0].blockers[0].term];
                assert_eq!(incoming.topology_key, "topology.kubernetes.io/zone");
                assert_eq!(incoming.selector, "matchLabels:\n  app: guard");
                let existing = &e.terms[r[1].blockers[0].term];
                assert_eq!(existing.owner_workload, "Pod/default/guard");
                assert_eq!(existing.selector, "matchLabels:\n  tier: web");
            },
        },
        Case {
            name: "several plugins at once, in profile order",
            world: vec![
                zoned("n1", "a")
                    .unschedulable()
                    .taint("k", "v", "NoSchedule")
                    .yaml(),
                waiting("p").request("cpu", "8").yaml(),
            ],
            pod: "p",
            node: "n1",
            reasons: &[
                ("NodeUnschedulable", "node(s) were unschedulable"),
                ("TaintToleration", "node(s) had untolerated taint(s)"),
                ("NodeResourcesFit", "Insufficient cpu"),
            ],
            check: |_, r| {
                let Detail::Resource(cpu) = &r[2].detail else {
                    panic!()
                };
                assert!(cpu.exceeds_node);
                assert_eq!(r[2].code, "UnschedulableAndUnresolvable");
            },
        },
    ];
    for case in cases {
        let (e, statuses) = why(&case.world, case.pod);
        agrees_with_engine(&e, &statuses);
        let v = verdict(&e, case.node);
        let got: Vec<(&str, &str)> = v
            .reasons
            .iter()
            .map(|r| (r.plugin, r.message.as_str()))
            .collect();
        assert_eq!(got, case.reasons, "{}", case.name);
        (case.check)(&e, &v.reasons);
    }
}

#[test]
fn blockers_are_capped_but_counted() {
    let mut world = vec![zoned("n1", "a").yaml()];
    for i in 0..15 {
        world.push(running(&format!("w{i:02}"), "n1").label("app", "w").yaml());
    }
    world.push(waiting("p").anti_term(label_term("app", "w", HOST)).yaml());
    let (e, _) = why(&world, "p");
    let r = &verdict(&e, "n1").reasons[0];
    assert_eq!(r.blockers_total, 15);
    assert_eq!(r.blockers.len(), podplace_explain::MAX_BLOCKERS);
    assert_eq!(r.blockers[0].pod, "default/w00");
}

// ---------------------------------------------------------------------------
// Grouping

fn term(index: usize, workload: &str) -> TermView {
    TermView {
        kind: TermKind::RequiredAntiAffinity,
        owner_workload: workload.into(),
        index,
        selector: "matchLabels:\n  app: x".into(),
        topology_key: "kubernetes.io/hostname".into(),
        yaml: String::new(),
    }
}

fn taint(key: &str) -> Reason {
    Reason {
        plugin: "TaintToleration",
        code: "UnschedulableAndUnresolvable",
        message: "node(s) had untolerated taint(s)".into(),
        detail: Detail::Taints {
            taints: vec![TaintView {
                key: key.into(),
                value: "v".into(),
                effect: "NoSchedule".into(),
            }],
        },
        blockers: Default::default(),
        blockers_total: 0,
        counts: Default::default(),
    }
}

fn selector(value: Option<&str>) -> Reason {
    Reason {
        plugin: "NodeAffinity",
        code: "UnschedulableAndUnresolvable",
        message: "node(s) didn't match Pod's node affinity/selector".into(),
        detail: Detail::NodeAffinity {
            node_selector: vec![LabelMiss {
                requirement: "zone=a".into(),
                key: "zone".into(),
                node_value: value.map(Into::into),
            }],
            terms: Vec::new(),
            excluded_by_name: false,
        },
        blockers: Default::default(),
        blockers_total: 0,
        counts: Default::default(),
    }
}

fn anti(pod: &str, workload: &str, term: usize) -> Reason {
    Reason {
        plugin: "InterPodAffinity",
        code: "Unschedulable",
        message: "node(s) didn't match pod anti-affinity rules".into(),
        detail: Detail::PodAntiAffinity,
        blockers: vec![Blocker {
            pod: pod.into(),
            workload: workload.into(),
            node: String::new(),
            term,
            domain: String::new(),
            rule_owner: RuleOwner::Incoming,
        }]
        .into(),
        blockers_total: 1,
        counts: vec![BlockerCount {
            workload: workload.into(),
            term,
            rule_owner: RuleOwner::Incoming,
            domain: String::new(),
            pods: 1,
        }]
        .into(),
    }
}

fn v(node: &str, reasons: Vec<Reason>) -> NodeVerdict {
    NodeVerdict {
        node: node.into(),
        reasons,
    }
}

#[test]
fn grouping() {
    let terms = vec![term(0, "StatefulSet/ns/a"), term(1, "StatefulSet/ns/a")];
    // (case, verdicts, the expected groups as node lists, in order)
    type Row = (&'static str, Vec<NodeVerdict>, Vec<Vec<&'static str>>);
    let cases: Vec<Row> = vec![
        (
            "the same taint groups; another taint does not",
            vec![
                v("n1", vec![taint("gpu")]),
                v("n2", vec![taint("gpu")]),
                v("n3", vec![taint("infra")]),
            ],
            vec![vec!["n1", "n2"], vec!["n3"]],
        ),
        (
            "node values differ but the failing requirement is the same",
            vec![
                v("n1", vec![selector(Some("b"))]),
                v("n2", vec![selector(Some("c"))]),
                v("n3", vec![selector(None)]),
            ],
            vec![vec!["n1", "n2", "n3"]],
        ),
        (
            "blocking pods of one workload and term group; another workload or term does not",
            vec![
                v("n1", vec![anti("ns/a-0", "StatefulSet/ns/a", 0)]),
                v("n2", vec![anti("ns/a-1", "StatefulSet/ns/a", 0)]),
                v("n3", vec![anti("ns/b-0", "StatefulSet/ns/b", 0)]),
                v("n4", vec![anti("ns/a-2", "StatefulSet/ns/a", 1)]),
            ],
            vec![vec!["n1", "n2"], vec!["n3"], vec!["n4"]],
        ),
        (
            "nodes closest to fitting first, then the largest groups",
            vec![
                v("n1", vec![taint("gpu"), selector(None)]),
                v("n2", vec![taint("gpu"), selector(None)]),
                v("n3", vec![taint("gpu"), selector(None)]),
                v("n4", vec![selector(Some("b"))]),
                v("n5", vec![taint("infra")]),
                v("n6", vec![taint("infra")]),
            ],
            vec![vec!["n5", "n6"], vec!["n4"], vec!["n1", "n2", "n3"]],
        ),
    ];
    for (name, verdicts, want) in cases {
        let groups = group::group(&verdicts, &terms);
        let got: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| {
                g.members
                    .iter()
                    .map(|&i| verdicts[i].node.as_str())
                    .collect()
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn group_summaries_read_without_the_node() {
    let terms = vec![term(0, "StatefulSet/ns/a")];
    let verdicts = vec![
        v(
            "n1",
            vec![selector(Some("b")), anti("ns/a-0", "StatefulSet/ns/a", 0)],
        ),
        v(
            "n2",
            vec![selector(Some("c")), anti("ns/a-1", "StatefulSet/ns/a", 0)],
        ),
    ];
    let groups = group::group(&verdicts, &terms);
    assert_eq!(groups.len(), 1);
    assert_eq!(
        groups[0].summaries,
        [
            "didn't match Pod's node affinity/selector: nodeSelector zone=a not matched",
            "didn't match pod anti-affinity rules: blocked by StatefulSet/ns/a (by the pod's own podAntiAffinity term 1)",
        ]
    );
}

#[test]
fn five_thousand_nodes_read_as_a_few_groups() {
    let terms = Vec::new();
    let mut verdicts = Vec::new();
    for i in 0..4200 {
        verdicts.push(v(
            &format!("n{i}"),
            vec![selector(Some(if i % 2 == 0 { "b" } else { "c" }))],
        ));
    }
    for i in 4200..5000 {
        verdicts.push(v(&format!("n{i}"), vec![taint("gpu")]));
    }
    let groups = group::group(&verdicts, &terms);
    let sizes: Vec<usize> = groups.iter().map(|g| g.members.len()).collect();
    assert_eq!(sizes, [4200, 800]);
}

// ---------------------------------------------------------------------------
// Fix verification applies each change to the cluster and undoes it.

fn story(paths: &[&str]) -> World {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/stories/");
    let sources: Vec<Source> = paths
        .iter()
        .map(|p| Source::Path(format!("{root}{p}").into()))
        .collect();
    let mut inv = load(&sources).expect("story loads");
    podplace_model::expand::expand_workloads(&mut inv);
    World::new(inv, &Default::default(), 0).expect("cluster builds")
}

#[test]
fn verifying_fixes_leaves_the_world_as_it_was() {
    let cordoned_and_tainted = [
        zoned("n1", "a").unschedulable().yaml(),
        zoned("n2", "a")
            .taint("dedicated", "gpu", "NoSchedule")
            .yaml(),
        zoned("n3", "b").yaml(),
        waiting("p").node_selector("disk", "ssd").yaml(),
    ];
    let worlds = [
        (story(&["vault"]), "vault-2", 1),
        (
            story(&["rollout/cluster.yaml", "rollout-stalled"]),
            "web-6c9f8d7b5-xz4x4",
            2,
        ),
        (story(&["doesnotexist"]), "pod-2", 1),
        (world(&cordoned_and_tainted), "p", 1),
    ];
    for (world, pod, fixes) in worlds {
        let id = world.find_pod(pod, None).expect("pod");
        let first = explain(&world, id);
        assert!(first.fixes.len() >= fixes, "{pod}: {:#?}", first.fixes);
        let second = explain(&world, id);
        assert_eq!(first, second, "{pod}: the second answer differs");
    }
}

#[test]
fn a_finished_pod_is_explained_as_finished_and_blocks_nothing() {
    // A completed Job pod with hostname anti-affinity against `app: web`
    // sits on n1; a Failed one is in phase Failed. Neither counts.
    let anti = label_term("app", "web", HOST);
    let docs = [
        zoned("n1", "a").yaml(),
        running("job-x", "n1")
            .label("job", "x")
            .anti_term(anti.clone())
            .phase("Succeeded")
            .yaml(),
        running("crashed", "n1")
            .label("app", "other")
            .anti_term(anti)
            .phase("Failed")
            .yaml(),
        waiting("web").label("app", "web").yaml(),
    ];
    let world = world(&docs);
    let finished = world.find_pod("job-x", None).expect("pod exists");
    let e = explain(&world, finished);
    assert_eq!(
        e.phase,
        podplace_explain::Phase::Finished {
            phase: "Succeeded".to_string(),
            node: Some("n1".to_string())
        }
    );
    assert!(e.nodes.is_empty() && e.fixes.is_empty());
    let (web, _) = why(&docs, "web");
    assert_eq!(
        web.phase,
        podplace_explain::Phase::Placed {
            node: "n1".to_string(),
            by_podplace: true
        },
        "{:?}",
        web.message
    );
}
