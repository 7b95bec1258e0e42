//! The term registry: identical affinity terms of many pods share one
//! [`TermId`], refcounted by the pods (and prepared pods) that carry them
//! and released when none does, and how a term matches a pod.

use podplace_model::cow::{Chunked, Sharded};
use podplace_model::intern::{Interner, Sym};
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, Pod};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

use crate::ids::TermId;

pub use podplace_model::terms::TermKind;

/// The kind of rule an existing pod holds, for the symmetric checks.
/// Transition: the model's [`TermKind`] under its old engine name.
pub type HeldKind = TermKind;

/// A pod's affinity terms as shared term ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PodTerms {
    /// Required pod affinity.
    pub required_affinity: SmallVec<[TermId; 1]>,
    /// Required pod anti-affinity.
    pub required_anti_affinity: SmallVec<[TermId; 1]>,
    /// Preferred pod affinity with weights.
    pub preferred_affinity: SmallVec<[(TermId, i32); 1]>,
    /// Preferred pod anti-affinity with weights.
    pub preferred_anti_affinity: SmallVec<[(TermId, i32); 1]>,
}

impl PodTerms {
    /// Every term id, with repeats.
    pub fn all(&self) -> impl Iterator<Item = TermId> + '_ {
        self.required_affinity
            .iter()
            .chain(&self.required_anti_affinity)
            .copied()
            .chain(self.preferred_affinity.iter().map(|&(t, _)| t))
            .chain(self.preferred_anti_affinity.iter().map(|&(t, _)| t))
    }

    /// The (term, kind, weight) rules an existing pod holds.
    pub fn held(&self) -> SmallVec<[(TermId, TermKind, i32); 4]> {
        let mut held = SmallVec::new();
        held.extend(
            self.required_anti_affinity
                .iter()
                .map(|&t| (t, TermKind::RequiredAntiAffinity, 1)),
        );
        held.extend(
            self.required_affinity
                .iter()
                .map(|&t| (t, TermKind::RequiredAffinity, 1)),
        );
        held.extend(
            self.preferred_affinity
                .iter()
                .map(|&(t, w)| (t, TermKind::PreferredAffinity, w)),
        );
        held.extend(
            self.preferred_anti_affinity
                .iter()
                .map(|&(t, w)| (t, TermKind::PreferredAntiAffinity, w)),
        );
        held
    }
}

/// Distinct terms, refcounted. Shared copy-on-write in chunks and shards,
/// each term once behind an `Arc`: a copy of the state (an overlay, serve's
/// admission view) shares them, and a pod added or changed afterwards
/// copies the chunk of slots and the shard of ids it touches, not every
/// term.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermRegistry {
    slots: Chunked<Option<(Arc<AffinityTerm>, u32)>>,
    ids: Sharded<Arc<AffinityTerm>, TermId>,
    free: Vec<u32>,
}

impl TermRegistry {
    /// The id of a term, taking one reference to it.
    pub(crate) fn acquire(&mut self, term: &AffinityTerm) -> TermId {
        if let Some(&id) = self.ids.get(term) {
            if let Some(Some((_, refs))) = self.slots.get_mut(id.0 as usize) {
                *refs += 1;
            }
            return id;
        }
        let term = Arc::new(term.clone());
        let entry = Some((term.clone(), 1));
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = entry;
                TermId(i)
            }
            None => {
                self.slots.push(entry);
                TermId((self.slots.len() - 1) as u32)
            }
        };
        self.ids.insert(term, id);
        id
    }

    /// Drops one reference; the term is forgotten with its last.
    pub(crate) fn release(&mut self, id: TermId) {
        let Some(slot) = self.slots.get_mut(id.0 as usize) else {
            return;
        };
        let gone = match slot {
            Some((_, refs)) => {
                *refs = refs.saturating_sub(1);
                *refs == 0
            }
            None => false,
        };
        if gone {
            if let Some((term, _)) = slot.take() {
                self.ids.remove(&*term);
            }
            self.free.push(id.0);
        }
    }

    /// The id of a term if some pod carries it.
    pub(crate) fn lookup(&self, term: &AffinityTerm) -> Option<TermId> {
        self.ids.get(term).copied()
    }

    /// The term behind an id (a released id reads as the empty term).
    pub(crate) fn get(&self, id: TermId) -> &AffinityTerm {
        match self.slots.get(id.0 as usize) {
            Some(Some((term, _))) => term,
            _ => empty_term(),
        }
    }

    /// Takes a reference to each of a pod's terms.
    pub(crate) fn acquire_pod(&mut self, pod: &Pod) -> PodTerms {
        let a = &pod.affinity;
        PodTerms {
            required_affinity: a
                .required_affinity
                .iter()
                .map(|t| self.acquire(t))
                .collect(),
            required_anti_affinity: a
                .required_anti_affinity
                .iter()
                .map(|t| self.acquire(t))
                .collect(),
            preferred_affinity: a
                .preferred_affinity
                .iter()
                .map(|w| (self.acquire(&w.term), w.weight))
                .collect(),
            preferred_anti_affinity: a
                .preferred_anti_affinity
                .iter()
                .map(|w| (self.acquire(&w.term), w.weight))
                .collect(),
        }
    }

    /// Drops the references [`TermRegistry::acquire_pod`] took.
    pub(crate) fn release_pod(&mut self, terms: &PodTerms) {
        for t in terms.all().collect::<SmallVec<[TermId; 4]>>() {
            self.release(t);
        }
    }

    /// A pod's term ids, if every one of its terms is known.
    pub(crate) fn lookup_pod(&self, pod: &Pod) -> Option<PodTerms> {
        let a = &pod.affinity;
        Some(PodTerms {
            required_affinity: a
                .required_affinity
                .iter()
                .map(|t| self.lookup(t))
                .collect::<Option<_>>()?,
            required_anti_affinity: a
                .required_anti_affinity
                .iter()
                .map(|t| self.lookup(t))
                .collect::<Option<_>>()?,
            preferred_affinity: a
                .preferred_affinity
                .iter()
                .map(|w| self.lookup(&w.term).map(|t| (t, w.weight)))
                .collect::<Option<_>>()?,
            preferred_anti_affinity: a
                .preferred_anti_affinity
                .iter()
                .map(|w| self.lookup(&w.term).map(|t| (t, w.weight)))
                .collect::<Option<_>>()?,
        })
    }

    /// Number of distinct live terms.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Slots allocated (live and free).
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }
}

fn empty_term() -> &'static AffinityTerm {
    static EMPTY: std::sync::OnceLock<AffinityTerm> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| AffinityTerm {
        selector: podplace_model::selector::LabelSelector::Nothing,
        namespaces: SmallVec::new(),
        namespace_selector: podplace_model::selector::LabelSelector::Nothing,
        topology_key: Interner::new().intern(""),
    })
}

/// `AffinityTerm.Matches` for the incoming pod's own terms. kube-scheduler
/// v1.36.2 adds the namespaces its namespaceSelector selects to the term's
/// namespace list but keeps the selector, and then matches it against an
/// empty label set: so a selector made only of `NotIn`/`DoesNotExist`
/// admits every namespace.
pub fn incoming_term_matches(
    term: &AffinityTerm,
    pod: &Pod,
    namespaces: &FxHashMap<Sym, Labels>,
    interner: &Interner,
) -> bool {
    let selector = &term.namespace_selector;
    let ns_ok = term.namespaces.contains(&pod.namespace)
        || (!selector.is_nothing()
            && (selector.matches(&Labels::default(), interner)
                || namespaces
                    .get(&pod.namespace)
                    .is_some_and(|l| selector.matches(l, interner))));
    ns_ok && term.selector.matches(&pod.labels, interner)
}

/// `AffinityTerm.Matches` for an existing pod's term against the incoming
/// pod, with the incoming pod's namespace labels (empty when unknown).
pub fn existing_term_matches(
    term: &AffinityTerm,
    pod: &Pod,
    namespace_labels: &Labels,
    interner: &Interner,
) -> bool {
    let ns_ok = term.namespaces.contains(&pod.namespace)
        || term.namespace_selector.matches(namespace_labels, interner);
    ns_ok && term.selector.matches(&pod.labels, interner)
}
