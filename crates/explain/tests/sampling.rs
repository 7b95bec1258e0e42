//! `why` with node sampling: it says how certain the set of scored nodes
//! is, and names the best node of the cluster when kube-scheduler's
//! sampled search left it out; preemption's candidate search
//! (minCandidateNodesPercentage / minCandidateNodesAbsolute).

use podplace_engine::sampling::Sampling;
use podplace_engine::SchedulerSetup;
use podplace_explain::{explain, Explanation, NoteKind, World};
use podplace_model::load::{load, Source};

/// 150 nodes in three zones (named so that the node tree's order is by
/// name), all with 4 CPUs but `n-140` with 64: the best node for any pod,
/// and outside the first 100 feasible nodes kube-scheduler finds from
/// start index 0.
fn world_yaml(pod: &str, extra: &str) -> String {
    let mut y = String::new();
    for i in 0..150 {
        let cpu = if i == 140 { 64 } else { 4 };
        y.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n-{i:03}, labels: \
             {{kubernetes.io/hostname: n-{i:03}, topology.kubernetes.io/zone: z-{}}}}}\n\
             status: {{allocatable: {{cpu: '{cpu}', memory: {}Gi, pods: '110'}}}}\n---\n",
            i % 3,
            cpu * 2
        ));
    }
    y.push_str(extra);
    y.push_str(pod);
    y
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\n\
spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: '1', memory: 1Gi}}}]}\n";

fn why(yaml: String, sampling: Sampling, pod: &str) -> Explanation {
    let inv = load(&[Source::Bytes {
        name: "w.yaml".into(),
        data: yaml.into_bytes(),
    }])
    .expect("loads");
    let setup = SchedulerSetup {
        sampling,
        ..SchedulerSetup::default()
    };
    let world = World::new(inv, &setup, 0).expect("builds");
    let id = world.find_pod(pod, None).expect("pod");
    explain(&world, id)
}

fn sampling_note(e: &Explanation) -> Option<&str> {
    e.notes
        .iter()
        .find(|n| n.kind == NoteKind::Sampling)
        .map(|n| n.text.as_str())
}

#[test]
fn why_names_the_best_node_left_out_of_the_sampled_set() {
    // (parallelism, certainty sentence)
    for (parallelism, certainty) in [(1, "Exact"), (16, "One of the candidate sets")] {
        let e = why(
            world_yaml(POD, ""),
            Sampling::on(0, parallelism),
            "shop/web",
        );
        let note = sampling_note(&e).unwrap_or_else(|| panic!("no sampling note: {:#?}", e.notes));
        assert!(note.contains("first 100 feasible nodes"), "{note}");
        assert!(note.contains(certainty), "{parallelism}: {note}");
        assert!(note.contains("Node n-140 ("), "{note}");
        assert!(note.contains("would win if scored"), "{note}");
        let chosen = e.would_land_on.clone().expect("placed");
        assert_ne!(chosen, "n-140");
        assert!(note.contains(&format!("{chosen} scores")), "{note}");
        // The scores shown are the sampled nodes' only.
        assert_eq!(e.scores.len(), 100);
        assert!(!e.scores.iter().any(|s| s.node == "n-140"));
    }
    // --score-all-nodes: every node scored, n-140 wins, nothing to say.
    let e = why(world_yaml(POD, ""), Sampling::default(), "shop/web");
    assert_eq!(e.would_land_on.as_deref(), Some("n-140"));
    assert_eq!(sampling_note(&e), None);
}

#[test]
fn why_says_nothing_when_the_best_node_was_sampled() {
    // 100% of the nodes: every feasible node is scored.
    let e = why(world_yaml(POD, ""), Sampling::on(100, 16), "shop/web");
    assert_eq!(e.would_land_on.as_deref(), Some("n-140"));
    assert_eq!(sampling_note(&e), None);
}

#[test]
fn preemption_candidate_search_is_reported_as_a_set() {
    // Every node full of a low-priority pod: preemption would make room on
    // all 150, but the dry run looks for max(10% of 150, 100) = 100.
    let mut fillers = String::new();
    for i in 0..150 {
        let cpu = if i == 140 { 64 } else { 4 };
        fillers.push_str(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: fill-{i}, namespace: shop}}\n\
             spec: {{nodeName: n-{i:03}, priority: 0, containers: [{{name: c, image: nginx, \
             resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}\n---\n"
        ));
    }
    let urgent = "apiVersion: v1\nkind: Pod\nmetadata: {name: urgent, namespace: shop}\n\
spec: {priority: 1000, containers: [{name: c, image: nginx, resources: {requests: {cpu: '1'}}}]}\n";
    let e = why(
        world_yaml(urgent, &fillers),
        Sampling::on(0, 16),
        "shop/urgent",
    );
    let note = e
        .notes
        .iter()
        .find(|n| n.kind == NoteKind::Preemption && n.text.contains("dry run"))
        .unwrap_or_else(|| panic!("no candidate-search note: {:#?}", e.notes));
    assert!(note.text.contains("on 150 nodes"), "{}", note.text);
    assert!(note.text.contains("only 100 candidates"), "{}", note.text);
    assert!(note.text.contains("random offset"), "{}", note.text);
}
