//! The explainer over worlds built from files: the vault story's
//! `PodplaceWhy` note, the pods that get none (gated, unserved, nominated,
//! terminating, bound), the wait before the first note, no new draft while
//! the cause stays, a new one when it changes, and the bound on the work
//! per tick.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use podplace_kube::events::{EventType, NOTE_LIMIT};
use podplace_model::load::{load, Source};
use podplace_serve::explain::{Explainer, ACTION, REASON};
use podplace_world::World;

fn t0() -> Timestamp {
    "2026-11-27T12:00:00Z".parse().unwrap()
}

fn at(secs: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(secs)).unwrap()
}

fn story(dir: &str) -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/stories")
        .join(dir);
    let mut inv = load(&[Source::Path(path)]).expect("the story loads");
    // The StatefulSet's pods, as its controller creates them.
    podplace_model::expand::expand_workloads(&mut inv);
    // The story as the cluster has it after kube-scheduler ran: the
    // waiting replicas placed where they fit, the rest Pending, unbound.
    World::build(inv, &Default::default(), 0).expect("builds")
}

fn observed(yaml: &str) -> World {
    let inv = load(&[Source::Bytes {
        name: "w.yaml".into(),
        data: yaml.as_bytes().to_vec(),
    }])
    .expect("loads");
    World::observed(inv, &Default::default(), 0).expect("builds")
}

#[test]
fn vault_2_is_explained_after_explain_after_naming_the_blocker_and_the_fix() {
    let world = story("vault");
    let mut ex = Explainer::new(Duration::from_secs(30));
    // Files carry no timestamps: the wait starts when the explainer first
    // sees the pod.
    assert!(ex.due(&world, 1, at(0)).is_empty());
    assert!(ex.due(&world, 1, at(29)).is_empty());
    let drafts = ex.due(&world, 1, at(30));
    assert_eq!(drafts.len(), 1, "{drafts:#?}");
    let d = &drafts[0];
    assert_eq!(d.regarding.kind.as_deref(), Some("Pod"));
    assert_eq!(d.regarding.namespace.as_deref(), Some("stokesnet"));
    assert_eq!(d.regarding.name.as_deref(), Some("vault-2"));
    assert_eq!(d.type_, EventType::Warning);
    assert_eq!(d.reason, REASON);
    assert_eq!(d.action, ACTION);
    println!("{}", d.note);
    for part in [
        "InterPodAffinity",
        "blocked by StatefulSet/stokesnet/prometheus-server",
        "the existing pod's podAntiAffinity term 1",
        "on 1 of 4 nodes",
        "Verified fix: Narrow StatefulSet/stokesnet/prometheus-server's podAntiAffinity",
        "lands on leela",
        "Assumed scheduler profile default-scheduler",
    ] {
        assert!(d.note.contains(part), "{part:?} not in {:?}", d.note);
    }
    assert!(d.note.len() <= NOTE_LIMIT && !d.note.contains('\n'));
    // Same cause: nothing until repeat_every, then the same cause again
    // (the recorder counts it in the Event's series).
    assert!(ex.due(&world, 1, at(45)).is_empty());
    assert!(
        ex.due(&world, 2, at(60)).is_empty(),
        "re-explained, unchanged"
    );
    let repeat = ex.due(&world, 2, at(90));
    assert_eq!(repeat.len(), 1);
    assert_eq!(repeat[0].cause_key, d.cause_key);
    assert_eq!(repeat[0].note, d.note);
}

#[test]
fn blocked_by_counts_the_pending_pods_each_workload_blocks() {
    let world = story("vault");
    let mut ex = Explainer::new(Duration::from_secs(30));
    ex.due(&world, 1, at(0));
    // Not explained yet: nothing is known to block anything.
    assert!(ex.blocked_by().is_empty());
    ex.due(&world, 1, at(30));
    // vault-2 is kept off nodes by prometheus-server's rule and by its own
    // StatefulSet's anti-affinity (vault-0 and vault-1).
    assert_eq!(
        ex.blocked_by(),
        [
            ("StatefulSet/stokesnet/prometheus-server".to_string(), 1),
            ("StatefulSet/stokesnet/vault".to_string(), 1)
        ]
    );
    // Once the pod is no longer Pending it counts for no workload.
    let fixed = story("vault-fixed");
    ex.due(&fixed, 2, at(31));
    assert!(ex.blocked_by().is_empty());
}

#[test]
fn after_the_fix_no_pod_is_explained() {
    let world = story("vault-fixed");
    let mut ex = Explainer::new(Duration::from_secs(30));
    ex.due(&world, 1, at(0));
    assert!(ex.due(&world, 1, at(300)).is_empty());
    assert_eq!(ex.stats().pending, 0);
}

const NODE: &str =
    "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {kubernetes.io/hostname: a}}\n\
status: {allocatable: {cpu: '1', memory: 1Gi, pods: '110'}}\n";

/// A pod asking for 2 CPUs of node `a`'s 1, with `extra` merged in.
fn big_pod(name: &str, spec_extra: &str, meta_extra: &str, status: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop, uid: uid-{name}{meta_extra}}}\n\
         spec:\n  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: '2'}}}}}}]\n{spec_extra}{status}"
    )
}

#[test]
fn gated_unserved_nominated_and_terminating_pods_get_no_note() {
    let cases = [
        ("plain", "", "", "", true),
        (
            "gated",
            "  schedulingGates: [{name: example.com/wait}]\n",
            "",
            "",
            false,
        ),
        ("unserved", "  schedulerName: my-scheduler\n", "", "", false),
        (
            "nominated",
            "",
            "",
            "status: {phase: Pending, nominatedNodeName: a}\n",
            false,
        ),
        (
            "terminating",
            "",
            ", deletionTimestamp: '2026-11-27T11:00:00Z', finalizers: [x]",
            "",
            false,
        ),
        ("finished", "", "", "status: {phase: Failed}\n", false),
    ];
    for (name, spec, meta, status, explained) in cases {
        let world = observed(&format!("{NODE}{}", big_pod(name, spec, meta, status)));
        let mut ex = Explainer::new(Duration::from_secs(30));
        ex.due(&world, 1, at(0));
        let drafts = ex.due(&world, 1, at(60));
        assert_eq!(drafts.len(), usize::from(explained), "{name}: {drafts:#?}");
        if explained {
            assert!(
                drafts[0].note.starts_with("NodeResourcesFit: "),
                "{}",
                drafts[0].note
            );
            assert!(
                drafts[0].note.contains("No verified fix found")
                    || drafts[0].note.contains("Verified fix")
            );
        }
    }
}

#[test]
fn the_wait_starts_at_the_unschedulable_condition_else_at_creation() {
    let condition = "status:\n  phase: Pending\n  conditions:\n  - {type: PodScheduled, status: 'False', reason: Unschedulable, \
                     lastTransitionTime: '2026-11-27T12:00:20Z'}\n";
    let world = observed(&format!(
        "{NODE}{}{}",
        big_pod(
            "recent",
            "",
            ", creationTimestamp: '2026-11-27T11:00:00Z'",
            condition
        ),
        big_pod(
            "created",
            "",
            ", creationTimestamp: '2026-11-27T12:00:10Z'",
            ""
        )
    ));
    let mut ex = Explainer::new(Duration::from_secs(30));
    let names = |d: Vec<podplace_kube::events::EventDraft>| {
        d.into_iter()
            .map(|d| d.regarding.name.unwrap_or_default())
            .collect::<Vec<_>>()
    };
    // Created at 12:00:10, unschedulable since 12:00:20.
    assert!(names(ex.due(&world, 1, at(39))).is_empty());
    assert_eq!(names(ex.due(&world, 1, at(40))), ["created"]);
    assert_eq!(names(ex.due(&world, 1, at(50))), ["recent"]);
}

#[test]
fn a_changed_cause_is_drafted_at_once() {
    let pod = big_pod("p", "", "", "");
    let small = observed(&format!("{NODE}{pod}"));
    let tainted = observed(&format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: a, labels: {{kubernetes.io/hostname: a}}}}\n\
         spec: {{taints: [{{key: dedicated, value: db, effect: NoSchedule}}]}}\n\
         status: {{allocatable: {{cpu: '4', memory: 1Gi, pods: '110'}}}}\n{pod}"
    ));
    let mut ex = Explainer::new(Duration::from_secs(30));
    ex.due(&small, 1, at(0));
    let first = ex.due(&small, 1, at(30));
    assert_eq!(first.len(), 1);
    // A taint instead of the shortage, 5 seconds later: a new cause, at once.
    let second = ex.due(&tainted, 2, at(35));
    assert_eq!(second.len(), 1, "{second:#?}");
    assert_ne!(second[0].cause_key, first[0].cause_key);
    assert!(
        second[0].note.contains("TaintToleration"),
        "{}",
        second[0].note
    );
    assert!(ex.due(&tainted, 2, at(40)).is_empty());
}

#[test]
fn the_work_per_tick_is_bounded_and_cached_by_generation() {
    let pods: String = (0..30)
        .map(|i| big_pod(&format!("p{i}"), "", "", ""))
        .collect();
    let world = observed(&format!("{NODE}{pods}"));
    let mut ex = Explainer::new(Duration::from_secs(30));
    ex.max_per_tick = 8;
    ex.max_tick_time = Duration::from_secs(3600);
    ex.due(&world, 1, at(0));
    assert_eq!(ex.stats().explained, 0, "nothing due yet");
    let mut drafted = 0;
    let mut ticks = 0;
    for s in 30..40 {
        drafted += ex.due(&world, 1, at(s)).len();
        let st = ex.stats();
        assert!(st.explained <= 8, "{st:?}");
        assert_eq!(st.due, 30);
        ticks += usize::from(st.explained > 0);
    }
    assert_eq!(drafted, 30, "every pod drafted once");
    assert_eq!(ticks, 4, "30 explanations at 8 a tick");
    // Same generation: nothing recomputed.
    ex.due(&world, 1, at(41));
    assert_eq!(ex.stats().explained, 0);
    // A new generation: recomputed, 8 at a time again.
    ex.due(&world, 2, at(42));
    assert_eq!(ex.stats().explained, 8);
    assert_eq!(ex.stats().deferred, 22);
    // Out of time: one explanation a tick, never none.
    ex.max_tick_time = Duration::ZERO;
    ex.due(&world, 3, at(43));
    assert_eq!(ex.stats().explained, 1);
    assert_eq!(ex.stats().deferred, 29);
}

/// One Pending pod's explanation on a generated 5,000-node world (three
/// zones, 10,000 running pods of 100 ReplicaSets, a Pending pod blocked by
/// a required anti-affinity everywhere). Prints the time; bounded
/// generously so a debug build on a busy machine passes.
#[test]
#[ignore = "builds a 5,000-node world: run with --ignored --nocapture to measure"]
fn explaining_one_pending_pod_at_5000_nodes() {
    let nodes = 5000;
    let mut yaml = String::new();
    for n in 0..nodes {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{n}, labels: {{kubernetes.io/hostname: n{n}, \
             topology.kubernetes.io/zone: z{}}}}}\nstatus: {{allocatable: {{cpu: '16', memory: 64Gi, pods: '110'}}}}\n",
            n % 3
        ));
    }
    for p in 0..2 * nodes {
        let app = p % 100;
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: w{p}, namespace: shop, uid: u{p}, labels: {{app: a{app}, tier: web}}, \
             ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: a{app}, uid: rs{app}, controller: true}}]}}\n\
             spec:\n  nodeName: n{}\n  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]\n",
            p % nodes
        ));
    }
    // Pending: anti-affinity to every tier=web pod per host, and every
    // node holds two.
    yaml.push_str(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pending, namespace: shop, uid: up}\nspec:\n  affinity:\n    \
         podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {matchLabels: {tier: web}}\n        \
         topologyKey: kubernetes.io/hostname\n  containers: [{name: c, image: nginx}]\n",
    );
    let start = Instant::now();
    let world = observed(&yaml);
    println!("built the world in {:?}", start.elapsed());
    // What one scheduling cycle costs here (the floor: an explanation
    // filters every node once, then verifies its fixes).
    let id = world.pod_id("shop", "pending").expect("the pending pod");
    let pod = world.state().pod(id).clone();
    let start = Instant::now();
    let _ = world.overlay().schedule(&pod);
    println!("one scheduling cycle: {:?}", start.elapsed());
    let start = Instant::now();
    let e = podplace_explain::explain_in(&world, id);
    println!(
        "explain_in: {:?} ({} fixes)",
        start.elapsed(),
        e.fixes.len()
    );
    let mut ex = Explainer::new(Duration::ZERO);
    ex.max_per_tick = 1;
    let start = Instant::now();
    let drafts = ex.due(&world, 1, at(0));
    let took = start.elapsed();
    println!(
        "explaining one pending pod at {nodes} nodes, {} pods: {took:?}",
        2 * nodes + 1
    );
    assert_eq!(drafts.len(), 1);
    println!("{}", drafts[0].note);
    assert!(
        drafts[0].note.contains("podAntiAffinity"),
        "{}",
        drafts[0].note
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}
