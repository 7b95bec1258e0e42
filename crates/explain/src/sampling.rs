//! Node sampling in `why`: which nodes kube-scheduler scored for the pod
//! (`percentageOfNodesToScore` from its rotating start index), how certain
//! that set is, and whether the best node of the whole cluster was left
//! out of it.

use podplace_engine::{schedule, ClusterState, NodeId, Outcome, SchedulerCache};
use podplace_model::objects::Pod;

use crate::model::{Note, NoteKind};

/// The note about sampling for a pod scheduled in `cache` (the cache the
/// cycle ran in, its last sample still recorded): `None` when every
/// feasible node was scored. When the best node overall was not among
/// those scored, it names that node and its score with every node scored.
pub(crate) fn note(
    state: &ClusterState,
    cache: &mut SchedulerCache,
    pod: &Pod,
    seed: u64,
    outcome: &Outcome,
) -> Option<Note> {
    let sampled = cache.serving(&pod.scheduler_name)?.last_sample()?.clone();
    if sampled.found <= sampled.to_find {
        // Every feasible node was found and scored.
        return None;
    }
    let mut text = format!(
        "kube-scheduler scores only the first {} feasible nodes it finds, visiting its \
         zone-interleaved list of {} nodes from its rotating start index ({} for this pod); \
         {} of the nodes pass every filter. {}",
        sampled.to_find,
        state.nodes().len(),
        sampled.start,
        sampled.feasible_total.unwrap_or(sampled.found),
        sampled.certainty.describe(),
    );
    if let Some(chosen) = outcome.chosen {
        if let Some(outside) = best_outside(state, cache, pod, seed, outcome, chosen) {
            text.push(' ');
            text.push_str(&outside);
        }
    }
    Some(Note {
        kind: NoteKind::Sampling,
        term: None,
        text,
    })
}

/// With every node scored (in a copy of the cache, so the start index is
/// untouched): the node that would win when it is not one of the nodes
/// sampled, with its score and the sampled winner's in that same run.
fn best_outside(
    state: &ClusterState,
    cache: &SchedulerCache,
    pod: &Pod,
    seed: u64,
    outcome: &Outcome,
    chosen: NodeId,
) -> Option<String> {
    let mut all = cache.clone();
    all.set_sampling(podplace_engine::sampling::Sampling::default());
    let everywhere = schedule(state, &mut all, pod, seed);
    let best_total = everywhere.scores.iter().map(|s| s.total).max()?;
    let sampled: Vec<NodeId> = outcome.scores.iter().map(|s| s.node).collect();
    let outside: Vec<NodeId> = everywhere
        .scores
        .iter()
        .filter(|s| s.total == best_total && !sampled.contains(&s.node))
        .map(|s| s.node)
        .collect();
    let first = *outside.first()?;
    let chosen_total = everywhere
        .scores
        .iter()
        .find(|s| s.node == chosen)
        .map(|s| s.total)?;
    if chosen_total >= best_total {
        return None;
    }
    let more = match outside.len() {
        1 => String::new(),
        2 => " (or 1 other node scoring the same)".to_string(),
        n => format!(" (or {} other nodes scoring the same)", n - 1),
    };
    Some(format!(
        "Node {} (score {best_total}){more} would win if scored: it was not among the nodes \
         sampled; scored together with it, {} scores {chosen_total}. \
         --score-all-nodes scores every node.",
        state.node(first).name,
        state.node(chosen).name,
    ))
}

/// When more nodes would make room by preemption than kube-scheduler's
/// dry run looks for (`minCandidateNodesPercentage` /
/// `minCandidateNodesAbsolute`): it starts at a random offset and stops
/// after that many, so the node it nominates is one of a set, not
/// necessarily the one the preemption note names.
pub(crate) fn preemption_note(
    cache: &mut SchedulerCache,
    pod: &Pod,
    outcome: &Outcome,
) -> Option<Note> {
    use podplace_engine::plugins::default_preemption::CandidateSearch;
    let found = outcome.preemption.as_ref()?.candidates.len();
    let profile = cache.serving(&pod.scheduler_name)?.profile().clone();
    let search = CandidateSearch::for_statuses(&profile, &outcome.statuses);
    if found == 0 || search.finds_all(found) {
        return None;
    }
    Some(Note {
        kind: NoteKind::Preemption,
        term: None,
        text: format!(
            "Preemption would make room on {found} nodes, but kube-scheduler's dry run looks \
             for only {} candidates (minCandidateNodesPercentage {}% of the {} nodes where \
             preemption may help, at least minCandidateNodesAbsolute {}), starting at a random \
             offset: the node it nominates is the best of one of those random sets, so it may \
             be another than the one named here.",
            search.to_find,
            profile.min_candidate_nodes_percentage,
            search.potential,
            profile.min_candidate_nodes_absolute,
        ),
    })
}
