//! What a scheduler carries for sampling from cycle to cycle: the node
//! tree's list, the one `nextStartNodeIndex` every profile of the
//! scheduler shares, whether that index is still known, and what the last
//! cycle sampled, with how certain its candidate set is.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use podplace_model::intern::Sym;
use rustc_hash::FxHashSet;

use super::MIN_FEASIBLE_NODES_TO_FIND;
use super::{node_tree_order, num_feasible_nodes_to_find, sample, Sampling};
use crate::ids::NodeId;
use crate::state::ClusterState;

/// Why a sampled candidate set is one of several possible ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Race {
    /// More than one filter worker: which feasible nodes are found first
    /// is a race among them.
    Parallelism(i32),
    /// A PreFilter narrowed the nodes to a list kube-scheduler visits in
    /// Go map order, which is random.
    MapOrder,
    /// An earlier search was a race (or the scheduler ran before podplace
    /// saw it), so the start index this one began at is not known.
    UnknownStart,
}

/// How certain an answer's set of scored nodes is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// Exactly the nodes kube-scheduler scores: every feasible node, or,
    /// with `parallelism: 1` from a known start index, the first ones
    /// found.
    Exact,
    /// One of the candidate sets kube-scheduler may score: the answer is
    /// the best node of the set podplace took, and kube-scheduler's may
    /// differ.
    CandidateSet(Race),
}

impl Certainty {
    /// The kind, as answers spell it in JSON: `exact` or `candidate-set`.
    pub fn kind(self) -> &'static str {
        match self {
            Certainty::Exact => "exact",
            Certainty::CandidateSet(_) => "candidate-set",
        }
    }

    /// Whether the answer is exactly kube-scheduler's.
    pub fn is_exact(self) -> bool {
        self == Certainty::Exact
    }

    /// One sentence saying which certainty this is and why.
    pub fn describe(self) -> String {
        match self {
            Certainty::Exact => "Exact: kube-scheduler scores these same nodes (every \
                                 feasible one, or with parallelism 1 the first ones found from \
                                 the known start index)."
                .to_string(),
            Certainty::CandidateSet(Race::Parallelism(p)) => format!(
                "One of the candidate sets: with parallelism {p}, which nodes are found first \
                 is a race among the filter workers, so the answer is the best node of the set \
                 podplace took (parallelism: 1 makes it exact)."
            ),
            Certainty::CandidateSet(Race::MapOrder) => "One of the candidate sets: a PreFilter \
                 narrowed the nodes to a list kube-scheduler visits in random (Go map) order."
                .to_string(),
            Certainty::CandidateSet(Race::UnknownStart) => "One of the candidate sets: the \
                 start index is not known (an earlier search was a race, or the scheduler has \
                 been running before), so which nodes come first is not either."
                .to_string(),
        }
    }
}

/// A search a sampling cycle is about to run ([`Sampler::plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Search {
    /// The index in the visit list the search starts at.
    pub start: usize,
    /// How many feasible nodes it looks for (numFeasibleNodesToFind).
    pub to_find: usize,
    /// Whether a PreFilter narrowed the list (visited in Go map order).
    pub narrowed: bool,
}

/// What one cycle's sampling did, for answers that report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledSet {
    /// How many feasible nodes kube-scheduler looks for.
    pub to_find: usize,
    /// The index the node list was visited from.
    pub start: usize,
    /// How many nodes were processed.
    pub processed: usize,
    /// Feasible nodes the search found: every feasible node when it did
    /// not stop early; when it did, the `to_find` it scores and the one
    /// more it stopped at (so `found > to_find` says it stopped early).
    pub found: usize,
    /// How many nodes pass the filters in all, when the cycle filtered
    /// every node (`why`); `None` when it stopped filtering early, as
    /// kube-scheduler does (placing, simulating, rebalancing).
    pub feasible_total: Option<usize>,
    /// How certain the set of nodes scored is.
    pub certainty: Certainty,
}

/// How sampling went over a scheduler's attempts: every command reports
/// it, so each answer says how certain it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Tally {
    /// Scheduling attempts that found a feasible node with sampling on
    /// and 100 nodes or more.
    pub attempts: usize,
    /// Those where kube-scheduler stops before it has found every
    /// feasible node (so only part of them are scored).
    pub sampled: usize,
    /// Those whose scored set is one of several possible ones.
    pub candidate_sets: usize,
    /// Why (the first reason met), when any is.
    #[serde(skip)]
    pub race: Option<Race>,
}

impl Tally {
    /// The certainty of answers built on these attempts: exact unless one
    /// was a candidate set.
    pub fn certainty(&self) -> Certainty {
        match self.race {
            Some(race) if self.candidate_sets > 0 => Certainty::CandidateSet(race),
            _ => Certainty::Exact,
        }
    }

    /// One sentence for a command's output.
    pub fn describe(&self) -> String {
        if self.sampled == 0 {
            return format!(
                "every feasible node was scored in all {} attempts (as kube-scheduler does: it \
                 samples only when it finds more feasible nodes than percentageOfNodesToScore \
                 asks for): exact",
                self.attempts
            );
        }
        let certainty = self.certainty();
        format!(
            "kube-scheduler scored only the first feasible nodes it found in {} of {} \
             attempts (percentageOfNodesToScore); {} {}",
            self.sampled,
            self.attempts,
            if certainty.is_exact() {
                "all as podplace visits them.".to_string()
            } else {
                format!(
                    "{} of them are one of the candidate sets.",
                    self.candidate_sets
                )
            },
            certainty.describe()
        )
    }

    /// What answers print about sampling: `None` when no attempt was
    /// made with sampling on and 100 nodes or more (every node scored,
    /// exact).
    pub fn report(&self) -> Option<TallyReport> {
        (self.attempts > 0).then(|| TallyReport {
            certainty: self.certainty().kind(),
            attempts: self.attempts,
            sampled: self.sampled,
            candidate_sets: self.candidate_sets,
            statement: self.describe(),
        })
    }

    fn count(&mut self, set: &SampledSet) {
        self.attempts += 1;
        if set.found > set.to_find {
            self.sampled += 1;
        }
        if let Certainty::CandidateSet(race) = set.certainty {
            self.candidate_sets += 1;
            self.race.get_or_insert(race);
        }
    }
}

/// [`Tally::report`]: the certainty of a command's answers, for its text
/// and `-o json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TallyReport {
    /// `exact` or `candidate-set`.
    pub certainty: &'static str,
    /// Scheduling attempts with sampling in play.
    pub attempts: usize,
    /// Those that scored only part of the feasible nodes.
    pub sampled: usize,
    /// Those whose scored set is one of several possible ones.
    pub candidate_sets: usize,
    /// The same in one sentence.
    pub statement: String,
}

#[derive(Debug, Default)]
struct Carried {
    next: AtomicUsize,
    unknown: AtomicBool,
    tally: std::sync::Mutex<Tally>,
}

impl Carried {
    fn tally(&self) -> Tally {
        *self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_tally(&self, tally: Tally) {
        *self.tally.lock().unwrap_or_else(|e| e.into_inner()) = tally;
    }
}

/// The start index one scheduler carries: shared by the caches of its
/// profiles (kube-scheduler has one per scheduler, not per profile), but a
/// clone of a cache (a what-if) gets its own copy.
#[derive(Debug, Default)]
struct SharedStart(Arc<Carried>);

impl Clone for SharedStart {
    fn clone(&self) -> Self {
        SharedStart(Arc::new(Carried {
            next: AtomicUsize::new(self.0.next.load(Ordering::Relaxed)),
            unknown: AtomicBool::new(self.0.unknown.load(Ordering::Relaxed)),
            tally: std::sync::Mutex::new(self.0.tally()),
        }))
    }
}

/// A point to come back to after a hypothetical attempt
/// ([`Sampler::mark`], [`Sampler::restore`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    next: usize,
    unknown: bool,
    tally: Tally,
}

/// A scheduler's sampling state (see the module doc), held by each
/// [`crate::SchedulerCache`].
#[derive(Debug, Clone, Default)]
pub struct Sampler {
    /// The node tree's list, built on first use for a node set.
    order: Vec<NodeId>,
    start: SharedStart,
    last: Option<SampledSet>,
    sampling: Sampling,
}

impl Sampler {
    /// A sampler with this configuration, from a fresh scheduler's index 0.
    pub fn new(sampling: Sampling) -> Sampler {
        Sampler {
            sampling,
            ..Sampler::default()
        }
    }

    /// Makes `self` (a sibling profile's) use `root`'s start index and
    /// configuration: one scheduler, one index.
    pub fn join(&mut self, root: &Sampler) {
        if !Arc::ptr_eq(&self.start.0, &root.start.0) {
            self.start = SharedStart(root.start.0.clone());
        }
        self.sampling = root.sampling;
    }

    /// The configuration.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Sets the configuration.
    pub fn set_sampling(&mut self, sampling: Sampling) {
        self.sampling = sampling;
    }

    /// kube-scheduler's `nextStartNodeIndex`.
    pub fn start_index(&self) -> usize {
        self.start.0.next.load(Ordering::Relaxed)
    }

    /// Sets the start index (a fresh scheduler starts at 0).
    pub fn set_start_index(&self, start: usize) {
        self.start.0.next.store(start, Ordering::Relaxed);
    }

    /// Says the start index is not known (a scheduler that has run before
    /// podplace saw the cluster), or known again.
    pub fn set_start_unknown(&self, unknown: bool) {
        self.start.0.unknown.store(unknown, Ordering::Relaxed);
    }

    /// Whether the start index is known.
    pub fn start_known(&self) -> bool {
        !self.start.0.unknown.load(Ordering::Relaxed)
    }

    /// Where the start index is now, to come back to.
    pub fn mark(&self) -> Mark {
        Mark {
            next: self.start_index(),
            unknown: !self.start_known(),
            tally: self.tally(),
        }
    }

    /// How sampling went over this scheduler's attempts so far.
    pub fn tally(&self) -> Tally {
        self.start.0.tally()
    }

    /// Comes back to `mark`.
    pub fn restore(&self, mark: Mark) {
        self.set_start_index(mark.next);
        self.set_start_unknown(mark.unknown);
        self.start.0.set_tally(mark.tally);
    }

    /// What the last cycle sampled (`None`: every feasible node scored).
    pub fn last(&self) -> Option<&SampledSet> {
        self.last.as_ref()
    }

    /// Forgets the node list (the nodes changed).
    pub fn clear_order(&mut self) {
        self.order.clear();
    }

    /// The node list a cycle visits: the node tree's, or only the nodes a
    /// PreFilter result names (in the tree's order; kube-scheduler's is
    /// random, and the certainty says so).
    fn visit_list(
        &mut self,
        state: &ClusterState,
        narrowed: Option<&FxHashSet<Sym>>,
        list: &mut Vec<NodeId>,
    ) {
        if self.order.len() != state.nodes().len() {
            self.order = node_tree_order(state);
        }
        list.clear();
        match narrowed {
            None => list.extend_from_slice(&self.order),
            Some(names) => list.extend(
                self.order
                    .iter()
                    .copied()
                    .filter(|&n| names.contains(&state.node(n).name_sym)),
            ),
        }
    }

    /// The search a cycle runs when it samples: the node list to visit,
    /// from which index, and how many feasible nodes it looks for; `None`
    /// when sampling is off or there are fewer than 100 nodes (every node
    /// is filtered and every feasible one scored). `list` is a buffer the
    /// caller keeps between cycles.
    pub fn plan(
        &mut self,
        state: &ClusterState,
        profile_percentage: Option<i32>,
        narrowed: Option<&FxHashSet<Sym>>,
        list: &mut Vec<NodeId>,
    ) -> Option<Search> {
        let all = state.nodes().len();
        if !self.sampling.enabled || all < MIN_FEASIBLE_NODES_TO_FIND {
            return None;
        }
        self.visit_list(state, narrowed, list);
        let to_find =
            num_feasible_nodes_to_find(profile_percentage, self.sampling.percentage, list.len());
        Some(Search {
            start: self.start_index() % list.len().max(1),
            to_find,
            narrowed: narrowed.is_some(),
        })
    }

    /// Records a search's result: moves the start index on by the nodes
    /// it processed, and records how certain the set it found is.
    /// `found` counts the feasible nodes it found, the one it stopped at
    /// included; `total` is every feasible node when every node was
    /// filtered.
    pub fn record(
        &mut self,
        state: &ClusterState,
        search: Search,
        processed: usize,
        found: usize,
        total: Option<usize>,
    ) {
        let all = state.nodes().len();
        // The search stopped early (more feasible nodes than it needs):
        // only then do order and timing decide which nodes are scored.
        let stopped_early = found > search.to_find;
        let certainty = if !stopped_early {
            Certainty::Exact
        } else if self.sampling.parallelism > 1 {
            Certainty::CandidateSet(Race::Parallelism(self.sampling.parallelism))
        } else if search.narrowed {
            Certainty::CandidateSet(Race::MapOrder)
        } else if !self.start_known() {
            Certainty::CandidateSet(Race::UnknownStart)
        } else {
            Certainty::Exact
        };
        if stopped_early && !certainty.is_exact() {
            // How many nodes the race processed is not known either.
            self.set_start_unknown(true);
        }
        self.set_start_index((self.start_index() + processed) % all.max(1));
        let set = SampledSet {
            to_find: search.to_find,
            start: search.start,
            processed,
            found,
            feasible_total: total,
            certainty,
        };
        let mut tally = self.tally();
        tally.count(&set);
        self.start.0.set_tally(tally);
        self.last = Some(set);
    }

    /// Keeps only the feasible nodes kube-scheduler's search finds (sorted
    /// by id again), given every feasible node; moves the start index on by
    /// the nodes processed, and records how certain the set is. Does
    /// nothing when sampling is off.
    pub fn sample(
        &mut self,
        state: &ClusterState,
        profile_percentage: Option<i32>,
        narrowed: Option<&FxHashSet<Sym>>,
        feasible: &mut Vec<NodeId>,
    ) {
        self.last = None;
        let mut list = Vec::new();
        let Some(search) = self.plan(state, profile_percentage, narrowed, &mut list) else {
            return;
        };
        let (mut found, processed) = sample(&list, search.start, search.to_find, |n| {
            feasible.binary_search(&n).is_ok()
        });
        let total = feasible.len();
        self.record(
            state,
            search,
            processed,
            total.min(search.to_find + 1),
            Some(total),
        );
        found.sort_unstable();
        *feasible = found;
    }

    /// Forgets the last cycle's sample (a cycle that did not sample).
    pub fn clear_last(&mut self) {
        self.last = None;
    }

    /// Moves the start index on after a cycle where nothing fit (every
    /// node of the list processed).
    pub fn advance(&mut self, state: &ClusterState, narrowed: Option<&FxHashSet<Sym>>) {
        self.last = None;
        let all = state.nodes().len();
        if !self.sampling.enabled || all < MIN_FEASIBLE_NODES_TO_FIND {
            return;
        }
        let processed = match narrowed {
            None => all,
            Some(names) => {
                if self.order.len() != all {
                    self.order = node_tree_order(state);
                }
                self.order
                    .iter()
                    .filter(|&&n| names.contains(&state.node(n).name_sym))
                    .count()
            }
        };
        self.set_start_index((self.start_index() + processed) % all);
    }
}
