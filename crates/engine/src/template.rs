//! PreFilter and PreScore state that the replicas of one pod template
//! share, kept across their cycles by the [`crate::SchedulerCache`].
//!
//! Placing 10,000 pending pods of 20 workloads recomputed, for every pod,
//! results that depend only on the template and on cluster parts no bind
//! touches: the selector of the system default spread constraints (a
//! match of the pod's labels against every Service and controller
//! selector) and which topology domains are eligible for a spread
//! constraint (a pass over every node). Each is kept here with exactly
//! what it read, and is used again only when that is unchanged:
//!
//! - a default selector, per (namespace, labels, owner), for one
//!   [`ClusterState::selectors_version`] (every Service or controller
//!   added takes a new version, and versions are never reused, so a cache
//!   serving a state and its overlays cannot mix them up);
//! - the eligible domains of a pod's spread constraints, per the pod's
//!   spec-only verdicts ([`NodeStatics`], per template and node epoch),
//!   the constraints' node → domain tables and inclusion policies; they
//!   read nodes only, so they are dropped with everything else derived
//!   from nodes when the node epoch changes.
//!
//! InterPodAffinity's PreFilter and PreScore sums are kept here too, and
//! brought up to date on the nodes binds changed
//! ([`crate::plugins::inter_pod_affinity::kept`]); they are dropped with
//! the node epoch.

use std::sync::Arc;

use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::{OwnerRef, Pod};
use podplace_model::selector::LabelSelector;

use crate::plugins::inter_pod_affinity::kept::{KeptFilter, KeptScore};
use crate::state::ClusterState;
use crate::statics::NodeStatics;
use crate::topology::TableId;

/// How many entries of each kind are kept (most recently used last): more
/// than the templates a placement interleaves.
const CAPACITY: usize = 64;

/// A default spread selector and what it was computed from.
#[derive(Debug, Clone)]
struct SelectorEntry {
    version: u64,
    namespace: Sym,
    labels: Labels,
    owner: Option<OwnerRef>,
    selector: LabelSelector,
}

impl SelectorEntry {
    fn matches(&self, state: &ClusterState, pod: &Pod) -> bool {
        self.version == state.selectors_version()
            && self.namespace == pod.namespace
            && self.labels == pod.labels
            && self.owner == pod.owner
    }
}

/// The eligible domains of a pod's spread constraints, and what they were
/// computed from.
#[derive(Debug, Clone)]
struct EligibleEntry {
    /// Held so the pointer cannot be reused by another template's.
    statics: Arc<NodeStatics>,
    tables: Vec<TableId>,
    /// (honorNodeAffinity, honorNodeTaints) per constraint.
    policies: Vec<(bool, bool)>,
    eligible: Arc<Eligible>,
}

/// Per constraint: which domains (by the table's domain index) hold at
/// least one node the constraint counts, and how many do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eligible {
    /// Per constraint, per domain.
    pub domains: Vec<Vec<bool>>,
    /// Per constraint: how many domains are eligible.
    pub counts: Vec<usize>,
}

/// The per-template state kept between cycles (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct TemplateCache {
    selectors: Vec<SelectorEntry>,
    eligible: Vec<EligibleEntry>,
    /// InterPodAffinity PreFilter states.
    ipa_filter: Vec<KeptFilter>,
    /// InterPodAffinity PreScore states.
    ipa_score: Vec<KeptScore>,
    /// Computes everything afresh for every cycle (the reference the
    /// property tests compare the kept state against).
    off: bool,
}

fn touch<T>(entries: &mut Vec<T>, i: usize) -> &T {
    let entry = entries.remove(i);
    entries.push(entry);
    entries.last().expect("just pushed")
}

fn keep<T>(entries: &mut Vec<T>, entry: T) {
    if entries.len() >= CAPACITY {
        entries.remove(0);
    }
    entries.push(entry);
}

impl TemplateCache {
    /// Whether state is kept across cycles (on by default); off, every
    /// cycle computes it afresh and nothing is kept.
    pub fn set_reuse(&mut self, reuse: bool) {
        self.off = !reuse;
        if self.off {
            self.selectors.clear();
            self.clear_nodes();
        }
    }

    /// Whether state is kept across cycles.
    pub fn reuses(&self) -> bool {
        !self.off
    }

    /// Forgets what was derived from nodes (the node epoch changed). The
    /// default selectors do not read nodes and stay.
    pub fn clear_nodes(&mut self) {
        self.eligible.clear();
        self.ipa_filter.clear();
        self.ipa_score.clear();
    }

    /// Takes out the kept InterPodAffinity PreFilter state `same` picks
    /// (put it back with [`TemplateCache::keep_ipa_filter`]).
    pub(crate) fn take_ipa_filter(
        &mut self,
        same: impl Fn(&KeptFilter) -> bool,
    ) -> Option<KeptFilter> {
        let i = self.ipa_filter.iter().rposition(same)?;
        Some(self.ipa_filter.remove(i))
    }

    /// Keeps an InterPodAffinity PreFilter state (most recently used).
    pub(crate) fn keep_ipa_filter(&mut self, entry: KeptFilter) {
        if !self.off {
            keep(&mut self.ipa_filter, entry);
        }
    }

    /// Takes out the kept InterPodAffinity PreScore state `same` picks.
    pub(crate) fn take_ipa_score(
        &mut self,
        same: impl Fn(&KeptScore) -> bool,
    ) -> Option<KeptScore> {
        let i = self.ipa_score.iter().rposition(same)?;
        Some(self.ipa_score.remove(i))
    }

    /// Keeps an InterPodAffinity PreScore state (most recently used).
    pub(crate) fn keep_ipa_score(&mut self, entry: KeptScore) {
        if !self.off {
            keep(&mut self.ipa_score, entry);
        }
    }

    /// [`ClusterState::default_selector`] of the pod, computed once per
    /// (namespace, labels, owner) and selectors version.
    pub fn default_selector(&mut self, state: &ClusterState, pod: &Pod) -> LabelSelector {
        if self.off {
            return state.default_selector(pod);
        }
        if let Some(i) = self.selectors.iter().rposition(|e| e.matches(state, pod)) {
            return touch(&mut self.selectors, i).selector.clone();
        }
        let selector = state.default_selector(pod);
        keep(
            &mut self.selectors,
            SelectorEntry {
                version: state.selectors_version(),
                namespace: pod.namespace,
                labels: pod.labels.clone(),
                owner: pod.owner.clone(),
                selector: selector.clone(),
            },
        );
        selector
    }

    /// The eligible domains for constraints with these tables and
    /// inclusion policies under these statics: `compute` runs only when
    /// no kept entry was computed from the same ones.
    pub fn eligible(
        &mut self,
        statics: &Arc<NodeStatics>,
        tables: &[TableId],
        policies: &[(bool, bool)],
        compute: impl FnOnce() -> Eligible,
    ) -> Arc<Eligible> {
        if self.off {
            return Arc::new(compute());
        }
        let same = |e: &EligibleEntry| {
            Arc::ptr_eq(&e.statics, statics)
                && e.policies == policies
                && e.tables.len() == tables.len()
                && e.tables.iter().zip(tables).all(|(a, b)| Arc::ptr_eq(a, b))
        };
        if let Some(i) = self.eligible.iter().rposition(same) {
            return touch(&mut self.eligible, i).eligible.clone();
        }
        let eligible = Arc::new(compute());
        keep(
            &mut self.eligible,
            EligibleEntry {
                statics: statics.clone(),
                tables: tables.to_vec(),
                policies: policies.to_vec(),
                eligible: eligible.clone(),
            },
        );
        eligible
    }
}
