//! Whether two worlds answer alike: the state's canonical dump, the pod
//! table (workload, owner, and the API object each row points at), the
//! keys of every kind, and a probe pod scheduled on an overlay of each.

use podplace_model::inventory::ObjectKind;
use podplace_testkit::{pod, HOST, ZONE};
use podplace_world::World;

/// The pod table as names: `ns/name → workload | owner | API object`
/// (as JSON: a packed world's pods read as the objects applied).
pub fn rows(world: &World) -> Vec<String> {
    let mut out: Vec<String> = world
        .pods()
        .iter()
        .map(|(id, row)| {
            let api = row
                .api
                .and_then(|i| world.inventory().pods.get(i))
                .map(|p| serde_json::to_string(&p.object).unwrap_or_default());
            format!(
                "{} | {} | {:?} | {:?}",
                world.pod_name(id),
                row.workload,
                row.owner,
                api
            )
        })
        .collect();
    out.sort();
    out
}

/// Every kind's keys, sorted.
pub fn keys(world: &World) -> Vec<String> {
    let mut out: Vec<String> = ObjectKind::ALL
        .iter()
        .flat_map(|&k| world.keys(k))
        .map(|k| k.to_string())
        .collect();
    out.sort();
    out
}

/// Probe pods: default spread through Services and controllers, a
/// namespaceSelector term, required anti-affinity, a spread constraint.
fn probes() -> Vec<k8s_openapi::api::core::v1::Pod> {
    vec![
        pod("probe-a")
            .ns("ns-a")
            .label("app", "a")
            .owner("ReplicaSet", "rs0", "r0")
            .requests("300m", "512Mi")
            .build(),
        pod("probe-b")
            .ns("ns-b")
            .label("app", "b")
            .requests("300m", "512Mi")
            .anti_term(serde_json::json!({
                "labelSelector": {"matchLabels": {"app": "a"}},
                "namespaceSelector": {"matchLabels": {"team": "t1"}},
                "topologyKey": ZONE
            }))
            .build(),
        pod("probe-c")
            .ns("ns-a")
            .label("app", "a")
            .anti("app", "In", &["a"], HOST)
            .spread(1, ZONE, "DoNotSchedule", "a", None)
            .build(),
    ]
}

/// What a scheduling cycle said, by node name (node ids and the tie-break
/// among the best nodes depend on node order, which may differ).
fn outcome_text(world: &World, probe: &k8s_openapi::api::core::v1::Pod) -> String {
    let mut what_if = world.overlay();
    let compiled = what_if
        .state_mut()
        .compile_pod(probe)
        .expect("a probe compiles");
    let outcome = what_if.schedule(&compiled);
    let state = what_if.state();
    let name = |n: podplace_world::NodeId| state.node(n).name.to_string();
    let mut statuses: Vec<String> = outcome
        .statuses
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}: {:?}", state.nodes()[i].name, s))
        .collect();
    statuses.sort();
    let mut scores: Vec<String> = outcome
        .scores
        .iter()
        .map(|s| format!("{}: {} {:?}", name(s.node), s.total, s.plugins))
        .collect();
    scores.sort();
    let mut best: Vec<String> = outcome.best.iter().map(|&n| name(n)).collect();
    best.sort();
    let chosen_is_best = outcome.chosen.is_none_or(|c| outcome.best.contains(&c));
    format!(
        "statuses {statuses:#?}\nscores {scores:#?}\nbest {best:?} chosen among best {chosen_is_best}\nmessage {}\npreempt {}",
        outcome.message,
        outcome.preemption.is_some()
    )
}

/// The state's canonical dump with its lines sorted: the dump lists nodes
/// in node order, which a removal (the last node takes the removed one's
/// id) changes without changing any answer.
pub fn dump(world: &World) -> String {
    let text = world.state().canonical_dump();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// Every difference between two worlds, as text (`None`: they agree).
pub fn differences(got: &World, want: &World) -> Option<String> {
    let mut out = String::new();
    let (a, b) = (dump(got), dump(want));
    if a != b {
        out.push_str(&format!(
            "state dump:\n--- incremental\n{a}\n--- fresh\n{b}\n"
        ));
    }
    let (a, b) = (rows(got), rows(want));
    if a != b {
        out.push_str(&format!("pod rows:\n{a:#?}\nvs\n{b:#?}\n"));
    }
    let (a, b) = (keys(got), keys(want));
    if a != b {
        out.push_str(&format!("keys:\n{a:#?}\nvs\n{b:#?}\n"));
    }
    for probe in probes() {
        let (a, b) = (outcome_text(got, &probe), outcome_text(want, &probe));
        if a != b {
            out.push_str(&format!("probe {:?}:\n{a}\nvs\n{b}\n", probe.metadata.name));
        }
    }
    (!out.is_empty()).then_some(out)
}
