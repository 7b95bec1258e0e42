//! The one model every feature reads: the world the watches keep up to
//! date, whether the first sync is done, and a generation that changes with
//! every applied batch of events.
//!
//! Readers (explain, the HA watch, admission reviews, metrics) take a read
//! guard for as long as one answer takes; the sync task takes the write
//! guard once per batch of watch events, so a review never sees half a
//! batch and the watches are never held up longer than one answer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use podplace_world::World;

/// The shared model (see the module doc). Held in an `Arc` by every task.
#[derive(Debug)]
pub struct Model {
    world: RwLock<World>,
    ready: AtomicBool,
    generation: AtomicU64,
}

impl Model {
    /// A model holding `world`, not ready until [`Model::set_ready`].
    pub fn new(world: World) -> Model {
        Model {
            world: RwLock::new(world),
            ready: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        }
    }

    /// Reads the world. A reader that panicked while holding the guard
    /// left nothing half-written (readers cannot write), so a poisoned
    /// lock is read through.
    pub fn read(&self) -> RwLockReadGuard<'_, World> {
        self.world.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the world: the sync task only. Bumps the generation once
    /// the write lock is held, so a reader that sees the new generation
    /// can only read the world after this batch (it waits for the guard):
    /// an answer is never cached under a generation whose world it did not
    /// see.
    pub fn write(&self) -> RwLockWriteGuard<'_, World> {
        let guard = self.world.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        guard
    }

    /// Whether the first sync of every watched kind is done: until then
    /// the model must not answer (an empty model would say "no problem").
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Marks the first sync done.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Changes with every batch written; readers cache answers by it.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
