//! Reviews of one model generation share what does not depend on the
//! reviewed object ([`ReviewCache`]): the live workloads' templates
//! compiled, the running pods grouped, namespace labels, workload
//! resolution and each workload's pods ([`LiveIndex`]). Without it every
//! review compiled and grouped the whole cluster again (most of a review's
//! time at 5,000 nodes). The index answers for the generation it was built
//! at only: the model bumps its generation with every batch it applies
//! (under the write lock), so a review that reads a newer generation
//! builds a new index first, and answers are the same as computed from
//! scratch ([`check::review`]; tested).

use std::sync::{Arc, Mutex};

use podplace_lint::live::LiveIndex;
use podplace_world::World;

use super::check::{self, AdmissionOptions, Answer};
use super::review::AdmissionRequest;

/// The [`LiveIndex`] of the last model generation reviewed (see the
/// module doc). Shared by the webhook's concurrent reviews.
#[derive(Debug, Default)]
pub struct ReviewCache {
    last: Mutex<Option<(u64, Arc<LiveIndex>)>>,
}

impl ReviewCache {
    /// A cache holding nothing yet.
    pub fn new() -> ReviewCache {
        ReviewCache::default()
    }

    /// Answers `request` against `world`, which the caller reads at model
    /// generation `generation` (under the model's read guard, so the world
    /// cannot change meanwhile).
    pub fn review(
        &self,
        world: &World,
        generation: u64,
        request: &AdmissionRequest,
        options: &AdmissionOptions,
    ) -> Answer {
        match self.index(world, generation) {
            Some(index) => check::review_indexed(world, Some(&index), request, options),
            // The live world's templates do not compile: answered from
            // scratch, as that says why.
            None => check::review(world, request, options),
        }
    }

    /// The index of `world` at `generation`: the kept one when it was
    /// built at that generation, else a new one (kept for the next
    /// reviews). `None` when the live world cannot be indexed.
    pub fn index(&self, world: &World, generation: u64) -> Option<Arc<LiveIndex>> {
        let kept = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((g, index)) = kept {
            if g == generation {
                return Some(index);
            }
        }
        // Built outside the lock: concurrent reviews of a new generation
        // may each build one (the webhook bounds them), none waits on
        // another's.
        let index = Arc::new(LiveIndex::new(world).ok()?);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_ref().is_none_or(|(g, _)| *g < generation) {
            *last = Some((generation, index.clone()));
        }
        Some(index)
    }

    /// Forgets the kept index (its memory), e.g. when the model is rebuilt.
    pub fn clear(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
