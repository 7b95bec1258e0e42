//! Reviews answer from a [`View`]: a copy of the model taken at one
//! generation, with what every review of it shares (the live workloads'
//! templates compiled, the running pods grouped, namespace labels,
//! workload resolution, each workload's pods: a [`LiveIndex`]). Without
//! the index every review compiled and grouped the whole cluster again;
//! with an index rebuilt on the request path the first review after every
//! watch batch paid for the build (1.4 s at 5,000 nodes), so the p99 was
//! the build.
//!
//! Views are built off the request path: [`spawn_refresher`] copies the
//! model (under its read guard: a copy-on-write clone, the pods' slots
//! shared) and indexes the copy (without any lock), whenever the model's
//! generation moved, at most once per interval. A review answers from the
//! newest view ([`ReviewCache::review`]) and never waits for a build,
//! except the very first one (no view yet: it builds it, so a review never
//! answers from an empty model — the webhook answers 503 until the first
//! sync, and the first view is of a synced model).
//!
//! Staleness: a review sees the cluster as the watch had it at the view's
//! generation — at most one refresh interval plus one build behind the
//! model (a second or two at 5,000 nodes). That is the view the API
//! server's own watch cache gives, and a `kubectl apply` races with the
//! watch anyway. The view is consistent (the copy and its index are of
//! the same generation), so an answer is exactly the answer computed from
//! scratch on the model at that generation ([`check::review`]; tested).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use podplace_lint::live::LiveIndex;
use podplace_world::World;

use super::check::{self, AdmissionOptions, Answer};
use super::review::AdmissionRequest;
use crate::shared::Model;

/// A view this old whose model moved is rebuilt by the review that meets
/// it: the refresher ([`spawn_refresher`]) keeps views far younger, so
/// only a stuck or missing refresher puts a build on the request path.
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// The model at one generation and its review index (see the module doc).
#[derive(Debug)]
pub struct View {
    generation: u64,
    world: World,
    /// `None` when the live templates do not compile: reviews of this
    /// view are answered from scratch, which says why.
    index: Option<LiveIndex>,
    /// How long copying the model and indexing the copy took.
    built_in: Duration,
    /// When the model was copied.
    taken: Instant,
}

impl View {
    /// The view of `world` (the model read at `generation`), indexed.
    pub fn of(world: World, generation: u64) -> View {
        let started = Instant::now();
        let index = LiveIndex::new(&world).ok();
        View {
            generation,
            world,
            index,
            built_in: started.elapsed(),
            taken: started,
        }
    }

    /// The model generation this view is a copy of.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The copy of the model.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// How long building this view took (copy and index).
    pub fn built_in(&self) -> Duration {
        self.built_in
    }

    /// Answers `request` against this view.
    pub fn review(&self, request: &AdmissionRequest, options: &AdmissionOptions) -> Answer {
        check::review_indexed(&self.world, self.index.as_ref(), request, options)
    }
}

/// The newest [`View`] of the model (see the module doc). Shared by the
/// webhook's concurrent reviews and its refresher.
#[derive(Debug, Default)]
pub struct ReviewCache {
    newest: Mutex<Option<Arc<View>>>,
    /// Held while a view is built: one build at a time.
    building: Mutex<()>,
}

impl ReviewCache {
    /// A cache holding no view yet.
    pub fn new() -> ReviewCache {
        ReviewCache::default()
    }

    /// The newest view built, if any.
    pub fn view(&self) -> Option<Arc<View>> {
        self.newest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Answers `request` against the newest view of `model`. Built now
    /// when there is none yet (the first review only), or when the model
    /// moved since a view older than [`STALE_AFTER`] (the refresher is
    /// stuck or gone: staleness stays bounded).
    pub fn review(
        &self,
        model: &Model,
        request: &AdmissionRequest,
        options: &AdmissionOptions,
    ) -> Answer {
        let view = match self.view() {
            Some(view)
                if view.generation == model.generation() || view.taken.elapsed() <= STALE_AFTER =>
            {
                view
            }
            _ => self.refresh(model),
        };
        view.review(request, options)
    }

    /// A view of `model` as it is now: the newest one when it is of the
    /// model's generation, else a new one (kept for the next reviews).
    /// The model's read guard is held only while it is copied.
    pub fn refresh(&self, model: &Model) -> Arc<View> {
        let _building = self.building.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(view) = self.view() {
            if view.generation == model.generation() {
                return view;
            }
        }
        let started = Instant::now();
        let (generation, world) = {
            let world = model.read();
            // Read under the guard: no batch can land meanwhile.
            (model.generation(), world.clone())
        };
        let mut view = View::of(world, generation);
        view.built_in = started.elapsed();
        view.taken = started;
        let view = Arc::new(view);
        *self.newest.lock().unwrap_or_else(|e| e.into_inner()) = Some(view.clone());
        view
    }

    /// Forgets the kept view (its memory), e.g. when the model is rebuilt.
    pub fn clear(&self) {
        *self.newest.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The thread that keeps a [`ReviewCache`] fresh ([`spawn_refresher`]);
/// it stops when this is dropped (at once, or when the build under way
/// ends).
#[derive(Debug)]
pub struct Refresher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
        }
    }
}

/// Starts a thread that, every `interval` or as long as the last build
/// took if longer (the first time one interval after the start), builds a
/// new view of `model` into `cache` when the model is ready and its generation moved since
/// the newest view (see the module doc): reviews then never pay for a
/// build. One build at a time; the thread stops when the returned
/// [`Refresher`] is dropped.
pub fn spawn_refresher(
    cache: Arc<ReviewCache>,
    model: Arc<Model>,
    interval: Duration,
) -> std::io::Result<Refresher> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::Builder::new()
        .name("podplace-review-index".to_string())
        .spawn(move || {
            let mut pause = interval;
            loop {
                std::thread::park_timeout(pause);
                if stopped.load(Ordering::Acquire) {
                    return;
                }
                let stale = cache
                    .view()
                    .is_none_or(|v| v.generation != model.generation());
                if model.ready() && stale {
                    // At most half the thread's time goes to builds, however
                    // often the model moves: the watch and the reviews
                    // share the cores.
                    pause = interval.max(cache.refresh(&model).built_in);
                }
            }
        })?;
    Ok(Refresher {
        stop,
        thread: Some(thread),
    })
}
