//! Keeping the model up to date: the merged watch of every kind
//! ([`podplace_kube::watch_cluster`]) applied to the world incrementally,
//! a re-list reconciled without losing or doubling objects.
//!
//! Until every kind has been listed once (or refused: a kind the API server
//! will not show cannot be waited for), nothing is built: events are
//! gathered into one inventory, and the world is built from it once
//! ([`World::observed_packed`]: each pod compiled and packed in turn, the
//! gathered objects moved in, never copied); only then is the model marked
//! ready. A failed
//! build is retried with backoff while events keep being gathered (the
//! model stays not ready; nothing a user passed can fail it: the scheduler
//! config is read before the sync starts). From then on
//! each event is one [`Change`], applied in batches: the task waits for one
//! event, takes every event already waiting (at most
//! [`SyncOptions::max_batch`]) and applies them under one write lock, so
//! readers wait for at most one batch and never see half of one.
//!
//! A re-list ([`WatchEvent::Listed`], after 410 Gone or an API-server
//! restart) upserts every listed object and deletes every object of the kind
//! the world holds that the list lacks: what was deleted while no watch was
//! open.
//!
//! A kind the API server refuses (403/404) after the first sync keeps the
//! objects the model holds: a refusal is not a list, and emptying the kind
//! on a transient 403 would make HA findings and explanations flap. The
//! refusal is logged and counted (`podplace_model_unreadable_total{kind}`);
//! only the kind's next real list replaces its objects.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, Stream, StreamExt};
use podplace_engine::SchedulerSetup;
use podplace_kube::WatchEvent;
use podplace_model::inventory::{Inventory, Object, ObjectKey, ObjectKind, Origin};
use podplace_world::{Change, World};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::shared::Model;

/// How the model is built and fed.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The scheduler the world models (`--scheduler-config`).
    pub setup: SchedulerSetup,
    /// The seed of the world's tie-breaking.
    pub seed: u64,
    /// The most events applied under one write lock; a longer burst is
    /// applied in several batches, letting readers in between.
    pub max_batch: usize,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            setup: SchedulerSetup::default(),
            seed: 0,
            max_batch: 1024,
        }
    }
}

/// Why the sync stopped.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The first lists could not be built into a world (the sync itself
    /// retries; kept for callers that build once).
    #[error("building the model from the first lists: {0}")]
    Build(#[from] podplace_engine::BuildError),
    /// The watch ended (it does not, unless the process is stopping).
    #[error("the watch of the cluster ended")]
    Ended,
}

type KindLabel = Vec<(String, String)>;

/// The sync's metrics: how many objects of each kind the model holds
/// (compare with `kubectl get KIND -A | wc -l`), whether it is ready,
/// events applied and changes refused.
#[derive(Debug, Clone, Default)]
pub struct SyncMetrics {
    objects: Family<KindLabel, Gauge>,
    ready: Gauge,
    events: Family<KindLabel, Counter>,
    refused: Counter,
    relists: Family<KindLabel, Counter>,
    unreadable: Family<KindLabel, Counter>,
    build_failures: Counter,
}

impl SyncMetrics {
    /// Registers the metrics into `registry` (`podplace_model_objects{kind}`,
    /// `podplace_model_ready`, `podplace_model_events_total{type}`,
    /// `podplace_model_refused_changes_total`,
    /// `podplace_model_relists_total{kind}`,
    /// `podplace_model_unreadable_total{kind}`,
    /// `podplace_model_build_failures_total`).
    pub fn register(registry: &mut Registry) -> SyncMetrics {
        let m = SyncMetrics::default();
        let r = registry.sub_registry_with_prefix("podplace_model");
        r.register(
            "objects",
            "Objects the model holds, by kind (what a fresh list would count)",
            m.objects.clone(),
        );
        r.register(
            "ready",
            "1 once every kind was listed and the model built",
            m.ready.clone(),
        );
        r.register(
            "events",
            "Watch events applied, by type (applied, deleted, listed, skipped, unreadable)",
            m.events.clone(),
        );
        r.register(
            "refused_changes",
            "Changes the world could not apply (the object is left out, as if deleted)",
            m.refused.clone(),
        );
        r.register(
            "relists",
            "Full lists of a kind after the first (410 Gone, API server restarts)",
            m.relists.clone(),
        );
        r.register(
            "build_failures",
            "Failed builds of the first lists (retried with backoff, not ready meanwhile)",
            m.build_failures.clone(),
        );
        r.register(
            "unreadable",
            "Refusals (403/404) of a kind after the first sync; its objects are kept as last known",
            m.unreadable.clone(),
        );
        m
    }

    /// How many objects of `kind` the model holds now, as exported.
    pub fn objects(&self, kind: ObjectKind) -> i64 {
        self.objects
            .get_or_create(&label("kind", kind.name()))
            .get()
    }

    /// How many builds of the first lists failed (each is retried).
    pub fn build_failures(&self) -> u64 {
        self.build_failures.get()
    }

    /// How many times `kind` was refused after the first sync.
    pub fn unreadable(&self, kind: ObjectKind) -> u64 {
        self.unreadable
            .get_or_create(&label("kind", kind.name()))
            .get()
    }

    fn count(&self, world: &World) {
        for kind in ObjectKind::ALL {
            self.objects
                .get_or_create(&label("kind", kind.name()))
                .set(world.inventory().count(*kind) as i64);
        }
    }

    fn event(&self, kind: &str) {
        self.events.get_or_create(&label("type", kind)).inc();
    }
}

fn label(key: &str, value: &str) -> KindLabel {
    vec![(key.to_string(), value.to_string())]
}

/// The longest wait between two builds of the first lists.
pub const MAX_BUILD_BACKOFF: Duration = Duration::from_secs(60);

/// One kind's objects during the first sync: its list as it came, and the
/// changes since folded in. The position of each object by key is made
/// only when a change arrives, so a list is kept as the watch gave it,
/// not copied into a map (at 150,000 pods, hundreds of MB moved).
#[derive(Debug, Default)]
struct KindObjects {
    objects: Vec<Object>,
    at: Option<HashMap<ObjectKey, usize>>,
}

impl KindObjects {
    /// A kind's list, kept in place with its index; of two objects with
    /// one key the later is kept, as in a map.
    fn listed(objects: Vec<Object>) -> KindObjects {
        let mut at = HashMap::with_capacity(objects.len());
        let mut unique = true;
        for (i, o) in objects.iter().enumerate() {
            unique &= at.insert(o.key(), i).is_none();
        }
        if unique {
            return KindObjects {
                objects,
                at: Some(at),
            };
        }
        let mut k = KindObjects::default();
        for o in objects {
            k.upsert(o);
        }
        k
    }

    fn index(&mut self) -> &mut HashMap<ObjectKey, usize> {
        let objects = &self.objects;
        self.at.get_or_insert_with(|| {
            objects
                .iter()
                .enumerate()
                .map(|(i, o)| (o.key(), i))
                .collect()
        })
    }

    fn upsert(&mut self, o: Object) {
        let key = o.key();
        match self.index().get(&key).copied() {
            Some(i) => self.objects[i] = o,
            None => {
                let i = self.objects.len();
                self.index().insert(key, i);
                self.objects.push(o);
            }
        }
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(i) = self.index().remove(key) else {
            return;
        };
        self.objects.swap_remove(i);
        if let Some(moved) = self.objects.get(i).map(Object::key) {
            self.index().insert(moved, i);
        }
    }
}

/// The first sync's events folded per kind (a kind is present once listed
/// or refused).
#[derive(Debug, Default)]
struct Gathered {
    kinds: BTreeMap<ObjectKind, KindObjects>,
    warnings: Vec<String>,
}

impl Gathered {
    /// The inventory the gathered lists make, the objects moved out (not
    /// copied: at 150,000 pods a copy is gigabytes); give it back with
    /// [`Gathered::restore`] when the build fails.
    fn take_inventory(&mut self) -> Inventory {
        let mut inventory = Inventory::default();
        for (kind, objects) in &mut self.kinds {
            let origin = Origin {
                file: format!("api:{}", kind.resource()),
                line: 0,
                column: 0,
            };
            for o in std::mem::take(objects).objects {
                inventory.push(o, origin.clone());
            }
        }
        inventory.warnings = self.warnings.clone();
        inventory
    }

    /// Puts back the objects of an inventory [`Gathered::take_inventory`]
    /// made (a failed build leaves them all with its caller).
    fn restore(&mut self, inventory: Inventory) {
        for o in inventory.into_objects() {
            self.kinds.entry(o.kind()).or_default().objects.push(o);
        }
    }
}

/// The sync task: see the module doc.
#[derive(Debug)]
pub struct Sync {
    model: Arc<Model>,
    opts: SyncOptions,
    metrics: SyncMetrics,
    /// The last failure logged per kind, so a failing watch is logged when
    /// its failure changes, not at every retry.
    failures: HashMap<ObjectKind, String>,
}

impl Sync {
    /// A sync of `model` (not ready yet; it holds an empty world until the
    /// first lists are in).
    pub fn new(model: Arc<Model>, opts: SyncOptions, metrics: SyncMetrics) -> Sync {
        Sync {
            model,
            opts,
            metrics,
            failures: HashMap::new(),
        }
    }

    /// Feeds the model from `events` until the stream ends (drop the task
    /// to stop it). Returns only on failure.
    pub async fn run<S>(mut self, mut events: S) -> Result<(), SyncError>
    where
        S: Stream<Item = WatchEvent> + Unpin,
    {
        let started = Instant::now();
        let (world, objects) = self.first_sync(&mut events).await?;
        self.metrics.count(&world);
        *self.model.write() = world;
        self.model.set_ready();
        self.metrics.ready.set(1);
        eprintln!(
            "podplace serve: model ready: {objects} objects in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        let mut batch = Vec::new();
        loop {
            let Some(first) = events.next().await else {
                return Err(SyncError::Ended);
            };
            batch.push(first);
            while batch.len() < self.opts.max_batch.max(1) {
                match events.next().now_or_never() {
                    Some(Some(e)) => batch.push(e),
                    Some(None) => break,
                    None => break,
                }
            }
            self.apply_batch(std::mem::take(&mut batch));
        }
    }

    /// Gathers events until every kind was listed or refused and builds
    /// the world from them. A failed build (an object the world cannot
    /// compile) is not the end: the events keep being folded in (the
    /// offending object may be fixed or deleted) and the build is retried
    /// with backoff (1 s doubling to [`MAX_BUILD_BACKOFF`]), the model
    /// staying not ready; the failure is logged when it changes and at
    /// attempts 1, 2, 4, 8, … (a bounded log), and counted.
    async fn first_sync<S>(&mut self, events: &mut S) -> Result<(World, usize), SyncError>
    where
        S: Stream<Item = WatchEvent> + Unpin,
    {
        let mut gathered = Gathered::default();
        let mut backoff = Duration::from_secs(1);
        let mut attempt: u64 = 0;
        let mut last_failure = String::new();
        loop {
            while gathered.kinds.len() < ObjectKind::ALL.len() {
                let Some(event) = events.next().await else {
                    return Err(SyncError::Ended);
                };
                self.fold(&mut gathered, event);
            }
            let mut inventory = gathered.take_inventory();
            let objects: usize = ObjectKind::ALL.iter().map(|k| inventory.count(*k)).sum();
            // The model lives as long as serve: its pods are kept packed
            // (lossless, decoded when read; issue 18 memory), each packed
            // as it is built, so the objects are never held twice.
            match World::observed_packed(&mut inventory, &self.opts.setup, self.opts.seed) {
                Ok(world) => {
                    for w in &gathered.warnings {
                        eprintln!("warning: {w}");
                    }
                    return Ok((world, objects));
                }
                Err(e) => {
                    gathered.restore(inventory);
                    attempt += 1;
                    self.metrics.build_failures.inc();
                    let message = e.to_string();
                    if message != last_failure || attempt.is_power_of_two() {
                        eprintln!(
                            "warning: building the model from the first lists (attempt {attempt}): {message}; retrying in {}s, not ready",
                            backoff.as_secs()
                        );
                    }
                    last_failure = message;
                    let until = tokio::time::Instant::now() + backoff;
                    loop {
                        match tokio::time::timeout_at(until, events.next()).await {
                            Err(_) => break,
                            Ok(None) => return Err(SyncError::Ended),
                            Ok(Some(event)) => self.fold(&mut gathered, event),
                        }
                    }
                    backoff = (backoff * 2).min(MAX_BUILD_BACKOFF);
                }
            }
        }
    }

    /// Folds one event of the first sync into what was gathered.
    fn fold(&mut self, gathered: &mut Gathered, event: WatchEvent) {
        let kinds = &mut gathered.kinds;
        match event {
            WatchEvent::Listed {
                kind,
                objects,
                warnings: w,
            } => {
                self.metrics.event("listed");
                gathered.warnings.extend(w);
                kinds.insert(kind, KindObjects::listed(objects));
            }
            WatchEvent::Unreadable { kind, unreadable } => {
                eprintln!("warning: could not read {unreadable}");
                kinds.entry(kind).or_default();
            }
            WatchEvent::Applied(o) => {
                // Only after its kind's list (the watch starts there).
                if let Some(k) = kinds.get_mut(&o.kind()) {
                    k.upsert(o);
                }
            }
            WatchEvent::Deleted(o) => {
                if let Some(k) = kinds.get_mut(&o.kind()) {
                    k.remove(&o.key());
                }
            }
            WatchEvent::Skipped { key, warning } => {
                eprintln!("warning: {warning}");
                if let Some(k) = kinds.get_mut(&key.kind) {
                    k.remove(&key);
                }
            }
            WatchEvent::Failed { kind, message } => self.failed(kind, message),
        }
    }

    /// Logs a failing watch when its failure changes.
    fn failed(&mut self, kind: ObjectKind, message: String) {
        if self.failures.get(&kind) != Some(&message) {
            eprintln!(
                "warning: watching {}: {message} (retrying with backoff)",
                kind.resource()
            );
            self.failures.insert(kind, message);
        }
    }

    /// Applies a batch of events under one write lock.
    fn apply_batch(&mut self, batch: Vec<WatchEvent>) {
        let model = self.model.clone();
        let mut world = model.write();
        for event in batch {
            match event {
                WatchEvent::Applied(o) => {
                    self.metrics.event("applied");
                    self.failures.remove(&o.kind());
                    change(&mut world, Change::Upsert(o), &self.metrics);
                }
                WatchEvent::Deleted(o) => {
                    self.metrics.event("deleted");
                    change(&mut world, Change::Delete(o.key()), &self.metrics);
                }
                WatchEvent::Skipped { key, warning } => {
                    self.metrics.event("skipped");
                    eprintln!("warning: {warning}");
                    change(&mut world, Change::Delete(key), &self.metrics);
                }
                WatchEvent::Listed {
                    kind,
                    objects,
                    warnings,
                } => {
                    self.metrics.event("listed");
                    self.failures.remove(&kind);
                    self.metrics
                        .relists
                        .get_or_create(&label("kind", kind.name()))
                        .inc();
                    for w in warnings {
                        eprintln!("warning: {w}");
                    }
                    relist(&mut world, kind, objects, &self.metrics);
                }
                WatchEvent::Unreadable { kind, unreadable } => {
                    // A refusal is not a list: keep the kind's objects as
                    // last known (a transient 403 must not empty it) until
                    // its next real list.
                    self.metrics.event("unreadable");
                    self.metrics
                        .unreadable
                        .get_or_create(&label("kind", kind.name()))
                        .inc();
                    eprintln!(
                        "warning: could not read {unreadable}; keeping the {} {} the model holds until the next list",
                        world.keys(kind).len(),
                        kind.resource()
                    );
                }
                WatchEvent::Failed { kind, message } => self.failed(kind, message),
            }
        }
        self.metrics.count(&world);
    }
}

/// Replaces everything of `kind` with `objects`.
fn relist(world: &mut World, kind: ObjectKind, objects: Vec<Object>, metrics: &SyncMetrics) {
    let listed: HashSet<ObjectKey> = objects.iter().map(Object::key).collect();
    for key in world.keys(kind) {
        if !listed.contains(&key) {
            change(world, Change::Delete(key), metrics);
        }
    }
    for o in objects {
        change(world, Change::Upsert(o), metrics);
    }
}

/// Applies one change; a refused one is logged and counted (the world
/// leaves the object out).
fn change(world: &mut World, change: Change, metrics: &SyncMetrics) {
    if let Err(e) = world.apply(change) {
        metrics.refused.inc();
        eprintln!("warning: {e}; left out of the model");
    }
}
