//! Why a pod is Pending — or why it runs where it does — down to the pod,
//! workload and term that block it, with fixes the engine has verified.
//!
//! kube-scheduler's FailedScheduling event counts reasons per node and
//! names no culprit. [`explain`] asks every Filter plugin of the engine
//! about every node (not only the first that fails), names the existing
//! pods behind inter-pod (anti-)affinity rejections with their workload and
//! the exact term, groups nodes that fail alike, notes rules that constrain
//! nothing, and proposes patches, each re-run through the engine on a copy
//! of the world. Nothing here prints: see [`model`] for the result.

mod analyze;
mod fixes;
pub mod group;
pub mod model;
mod notes;
mod pod_level;
mod sampling;
mod self_block;
mod storage;
pub mod topology_typo;
pub mod world;
pub mod yaml;

use podplace_engine::ids::{NodeId, PodId};
use podplace_world::{WhatIf, World as Base};

pub use model::*;
pub use storage::bytes as storage_bytes;
pub use world::{FindError, World};

/// Blockers kept per reason (the total is counted).
pub const MAX_BLOCKERS: usize = 10;

/// Explains one pod of the world: as it stands now for a Pending pod; for
/// a bound pod, as if it were being scheduled again without itself. The
/// explanation works on a what-if of its own, so the world is only read and
/// many explanations can share it.
pub fn explain(world: &World, id: PodId) -> Explanation {
    explain_in(&world.base, id)
}

/// [`explain`] on any podplace-world [`Base`] as it stands, e.g. the
/// watch-fed world of `podplace serve` ([`Base::observed`]: the real
/// cluster, its Pending pods unbound) read through a lock guard, which
/// [`World`] (it owns its world and places the waiting pods first) cannot
/// borrow.
pub fn explain_in(world: &Base, id: PodId) -> Explanation {
    explain_with(world, id, Stop::Never)
        .expect("an explanation that never stops early always answers")
}

/// [`explain_in`] for a caller that only reports why a Pending pod stays
/// Pending (`podplace serve`'s Events): `None`, and nothing more computed,
/// when the pod is Pending and its scheduling cycle finds a node (it would
/// land there, [`Explanation::would_land_on`]); otherwise the same
/// explanation. The per-node analysis and the fix search cost many cycles
/// more than the answer "it fits now".
pub fn explain_if_stuck(world: &Base, id: PodId) -> Option<Explanation> {
    explain_with(world, id, Stop::WhenItLands)
}

/// Whether an explanation ends early when the Pending pod would land.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Never,
    WhenItLands,
}

fn explain_with(world: &Base, id: PodId, stop: Stop) -> Option<Explanation> {
    let mut what_if = world.overlay();
    // With node sampling, which nodes are scored depends on the start
    // index: rescore from the one the pod's own placement was visited
    // from, so `why` names the node `place` chose, not the next window's.
    if let Some(sampled) = world.placement(id).and_then(|p| p.sampled.as_ref()) {
        what_if.parts().1.set_start_index(sampled.start);
    }
    let bound = what_if.state().pod_node(id);
    if bound.is_some() {
        what_if.state_mut().unbind(id);
    }
    explain_unbound(world, &mut what_if, id, bound, stop)
}

fn explain_unbound(
    world: &Base,
    what_if: &mut WhatIf<'_>,
    id: PodId,
    bound: Option<NodeId>,
    stop: Stop,
) -> Option<Explanation> {
    let mut pod = what_if.state().pod(id).clone();
    // Bound to a node the world does not have (a live read that could not
    // list nodes): explain it as if it were scheduled again.
    let unknown_node = if bound.is_none() {
        pod.node_name.take()
    } else {
        None
    };
    let workload_ref = world.workload(id).into_owned();
    let workload = workload_ref.to_string();
    let pod_name = world.pod_name(id);
    let phase = match bound {
        _ if pod.finished => Phase::Finished {
            phase: world
                .api_pod(id)
                .and_then(|p| p.status.as_ref()?.phase.clone())
                .unwrap_or_default(),
            node: bound
                .map(|n| what_if.state().node(n).name.to_string())
                .or_else(|| unknown_node.as_deref().map(str::to_string)),
        },
        Some(n) => Phase::Placed {
            node: what_if.state().node(n).name.to_string(),
            by_podplace: world.placed_by_podplace(id),
        },
        None if unknown_node.is_some() => Phase::Placed {
            node: unknown_node.as_deref().unwrap_or_default().to_string(),
            by_podplace: false,
        },
        None if world.other_scheduler(id) => Phase::OtherScheduler {
            scheduler: pod.scheduler_name.to_string(),
        },
        None if !pod.scheduling_gates.is_empty() => Phase::Gated {
            gates: pod.scheduling_gates.iter().map(|g| g.to_string()).collect(),
        },
        None => Phase::Pending,
    };
    let early_note = match &phase {
        Phase::OtherScheduler { scheduler } => Some(Note {
            kind: NoteKind::OtherScheduler,
            term: None,
            text: format!(
                "spec.schedulerName is {scheduler:?}: kube-scheduler ({}) \
                 leaves this pod to that scheduler.",
                world.setup().scheduler_names().join(", ")
            ),
        }),
        Phase::Finished { phase, .. } => Some(Note {
            kind: NoteKind::Finished,
            term: None,
            text: format!(
                "status.phase is {phase}: the pod has finished, and kube-scheduler no longer \
                 sees it: it holds no resources and counts for no affinity, anti-affinity or \
                 topology spread rule."
            ),
        }),
        Phase::Gated { gates } => Some(gated_note(what_if, &pod, gates)),
        _ => None,
    };
    if let Some(note) = early_note {
        return Some(Explanation {
            pod: pod_name,
            workload,
            message: String::new(),
            pod_reasons: Vec::new(),
            node_count: what_if.state().nodes().len(),
            nodes: Vec::new(),
            groups: Vec::new(),
            scores: Vec::new(),
            tied: Vec::new(),
            would_land_on: None,
            terms: Vec::new(),
            notes: vec![note],
            fixes: Vec::new(),
            phase,
        });
    }

    let outcome = what_if.schedule(&pod);
    let sampling_note = {
        let seed = world.seed();
        let (state, cache) = what_if.parts();
        let note = sampling::note(state, cache, &pod, seed, &outcome);
        note.into_iter()
            .chain(sampling::preemption_note(cache, &pod, &outcome))
            .collect::<Vec<_>>()
    };
    let prepared = analyze::prepare(what_if, &pod);
    let refused = match &prepared.storage.cycle {
        Err(status) => pod_level::pod_reason(what_if.state(), &pod, status),
        // Every filter passed and a node was chosen, but PreBind refused.
        Ok(_) if outcome.chosen.is_none() && !outcome.best.is_empty() => {
            pod_level::pre_bind_reason(what_if.state(), &pod, &outcome.message)
        }
        Ok(_) => None,
    };
    let lands = refused.is_none() && phase == Phase::Pending && outcome.chosen.is_some();
    if stop == Stop::WhenItLands && lands {
        return None;
    }
    {
        if let Some(reason) = refused {
            // A PreFilter plugin rejected the pod itself (no node was
            // looked at), or binding failed whatever the node: no node's
            // verdict, note or fix applies.
            return Some(Explanation {
                pod: pod_name,
                workload,
                // A pod held before scheduling gets no FailedScheduling
                // event, and "not modelled" is podplace's own wording.
                message: if reason.held || reason.kind == PodReasonKind::NotModelled {
                    String::new()
                } else {
                    outcome.message.clone()
                },
                node_count: what_if.state().nodes().len(),
                pod_reasons: vec![reason],
                nodes: Vec::new(),
                groups: Vec::new(),
                scores: Vec::new(),
                tied: Vec::new(),
                would_land_on: None,
                terms: Vec::new(),
                notes: Vec::new(),
                fixes: Vec::new(),
                phase,
            });
        }
    }
    let mut terms = analyze::Terms::default();
    let world_ref: &Base = world;
    let cluster = what_if.state();
    let api_pod = world_ref.api_pod(id);
    let (verdicts, notes) = {
        let mut analyzer = analyze::Analyzer::new(
            cluster, world_ref, &pod, api_pod, &workload, &prepared, &mut terms,
        );
        let verdicts = analyzer.verdicts();
        let plain: Vec<NodeVerdict> = verdicts.iter().map(|(_, v)| v.clone()).collect();
        let placed = bound.is_some() || unknown_node.is_some();
        let notes = notes::notes(&mut analyzer, &prepared, &plain, &outcome, placed);
        (verdicts, notes)
    };
    let (candidates, fix_notes) = fixes::candidates(&fixes::Context {
        world: world_ref,
        state: cluster,
        pod_id: id,
        pod: &pod,
        api_pod,
        workload: workload_ref,
        verdicts: &verdicts,
        prepared: &prepared,
        pending: bound.is_none() && unknown_node.is_none(),
    });
    let mut notes = notes;
    notes.extend(sampling_note);
    notes.extend(fix_notes);
    if let Some(node) = &unknown_node {
        notes.push(Note {
            kind: NoteKind::Info,
            term: None,
            text: format!(
                "The pod is bound to node {node}, which is not in the world (it could not be \
                 read): the nodes below are the ones that were."
            ),
        });
    }
    let nodes: Vec<NodeVerdict> = verdicts.into_iter().map(|(_, v)| v).collect();
    if let Some(note) = storage::reach_note(what_if.state(), &pod, &nodes) {
        notes.push(note);
    }
    let groups = group::group(&nodes, &terms.views);
    let mut scores: Vec<ScoreRow> = outcome
        .scores
        .iter()
        .map(|s| ScoreRow {
            node: cluster.node(s.node).name.to_string(),
            total: s.total,
            plugins: s.plugins.iter().map(|(p, v)| (p.name(), *v)).collect(),
        })
        .collect();
    // Best first; equal totals keep node order.
    scores.sort_by_key(|s| std::cmp::Reverse(s.total));
    let tied = outcome
        .best
        .iter()
        .map(|&n| cluster.node(n).name.to_string())
        .collect();
    let would_land_on = outcome.chosen.map(|n| cluster.node(n).name.to_string());
    let node_count = cluster.nodes().len();
    let fixes = fixes::verify_all(what_if, &pod, candidates);
    Some(Explanation {
        pod: pod_name,
        workload,
        phase,
        message: outcome.message.clone(),
        node_count,
        pod_reasons: Vec::new(),
        nodes,
        groups,
        scores,
        tied,
        would_land_on,
        terms: terms.views,
        notes,
        fixes,
    })
}

/// The note for a gated pod: its gates, what kube-scheduler does with it
/// (nothing, until they are removed), and where it would land without them.
fn gated_note(
    what_if: &mut WhatIf<'_>,
    pod: &podplace_model::objects::Pod,
    gates: &[String],
) -> Note {
    let mut ungated = pod.clone();
    ungated.scheduling_gates.clear();
    let outcome = what_if.schedule(&ungated);
    let then = match outcome.chosen {
        Some(n) => format!(
            "With every gate removed, kube-scheduler would bind it to {}.",
            what_if.state().node(n).name
        ),
        None if !outcome.message.is_empty() => format!(
            "With every gate removed it would still stay Pending: {}",
            outcome.message
        ),
        None => "With every gate removed it would still not be placed.".to_string(),
    };
    Note {
        kind: NoteKind::Gated,
        term: None,
        text: format!(
            "spec.schedulingGates lists {}: kube-scheduler's SchedulingGates plugin keeps the \
             pod out of the scheduling queue (PreEnqueue), so it is never tried and gets no \
             FailedScheduling event until every gate is removed (whoever added a gate \
             removes it). {then}",
            gates.join(", ")
        ),
    }
}
