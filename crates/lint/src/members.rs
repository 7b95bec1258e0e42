//! The pod groups a lint run's terms may match ([`crate::world::Member`]s),
//! as one sequence that may share most of its entries with other runs: a
//! run over `podplace serve`'s live world reads the live workloads'
//! templates and running pods from a [`crate::live::LiveIndex`] built
//! once per model generation, and keeps only what the reviewed object
//! changes (its own templates and pods, the live template it replaces, a
//! live group its pod joins) beside it. Iteration order is the order a
//! run built from scratch has: the manifests' templates, the live
//! templates, the pods.

use podplace_model::workloads::WorkloadRef;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::world::Member;

/// Every member of one run (see the module doc).
#[derive(Debug, Default)]
pub struct Members<'a> {
    /// Members before the shared ones (the manifests' templates).
    head: Vec<Member>,
    /// Members shared with other runs over the same live world.
    shared: &'a [Member],
    /// Workloads whose shared templates this run replaces.
    skipped: FxHashSet<WorkloadRef>,
    /// Shared members this run counts differently, by index.
    replaced: FxHashMap<usize, Member>,
    /// Members after the shared ones (the manifests' own pod groups).
    tail: Vec<Member>,
}

impl<'a> Members<'a> {
    /// Members all of this run.
    pub fn owned(members: Vec<Member>) -> Members<'a> {
        Members {
            head: members,
            ..Members::default()
        }
    }

    /// `head`, then `shared` without the templates of `skipped`
    /// workloads and with `replaced` entries in place, then `tail`.
    pub(crate) fn sharing(
        head: Vec<Member>,
        shared: &'a [Member],
        skipped: FxHashSet<WorkloadRef>,
        replaced: FxHashMap<usize, Member>,
        tail: Vec<Member>,
    ) -> Members<'a> {
        Members {
            head,
            shared,
            skipped,
            replaced,
            tail,
        }
    }

    /// Every member, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Member> + '_ {
        let shared = self.shared.iter().enumerate().filter_map(move |(i, m)| {
            if m.template && self.skipped.contains(&m.workload) {
                return None;
            }
            Some(self.replaced.get(&i).unwrap_or(m))
        });
        self.head.iter().chain(shared).chain(self.tail.iter())
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}
