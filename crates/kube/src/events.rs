//! Recording events.k8s.io/v1 Events the way Kubernetes counts them, never
//! as a storm.
//!
//! A feature hands the recorder an [`EventDraft`]: what the Event is about
//! (`regarding`), its type, reason, action, note, and a `cause_key` naming
//! the cause behind the note. The recorder turns drafts into API writes with
//! the semantics of client-go's `tools/events` broadcaster:
//!
//! - the first draft of a series creates an Event (`reportingController`,
//!   `reportingInstance`, `action`, `eventTime`, a generated name);
//! - a repeat of the same series (same object, type, reason, action and
//!   cause) counts: the second occurrence patches `series` (`count: 2`,
//!   `lastObservedTime`) at once, later ones only count in memory and are
//!   written when the series is refreshed ([`RecorderConfig::refresh_every`],
//!   which also keeps the Event from expiring) or ends (nothing new for
//!   [`RecorderConfig::finish_after`]: the final count is written and the
//!   series forgotten);
//! - a changed cause is another series: a new Event.
//!
//! Every write spends a token of the object's bucket and of a global one
//! ([`Budget`]): when either is empty a new Event is dropped (and counted in
//! [`EventBook::dropped`]) and a series patch waits for the next
//! [`EventRecorder::maintain`], so however often features draft, the API
//! sees a bounded number of writes per object and per minute.
//!
//! [`EventBook`] holds all of that and decides; it does no I/O and takes the
//! time as an argument, so it is tested with a fake clock.
//! [`EventRecorder`] carries its decisions out against the API server, each
//! request bounded by [`RecorderConfig::request_timeout`].

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

use crate::error::Error;

/// `reportingController` of every Event podplace serve writes.
pub const REPORTING_CONTROLLER: &str = "podplace.io/serve";

/// The API's limit on an Event's `note`, in bytes (events.k8s.io/v1
/// validation: `NoteLengthLimit`).
pub const NOTE_LIMIT: usize = 1024;

/// The API's limit on `reason`, `action` and `reportingInstance`, in bytes.
pub const FIELD_LIMIT: usize = 128;

/// Appended where a note was cut.
const ELLIPSIS: &str = "…";

/// `type` of an Event: the API accepts exactly these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something worked as expected.
    Normal,
    /// Something needs a person's attention (a pod that cannot schedule).
    Warning,
}

impl EventType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One Event a feature wants recorded; the recorder decides whether it
/// becomes a new Event, a repeat of a series, or nothing (budget spent).
#[derive(Debug, Clone, PartialEq)]
pub struct EventDraft {
    /// The object the Event is about (`kind`, `namespace`, `name`, `uid`,
    /// `apiVersion`): `kubectl describe` of that object shows it. Make one
    /// with [`object_reference`].
    pub regarding: ObjectReference,
    /// Normal or Warning.
    pub type_: EventType,
    /// Why, in UpperCamelCase (`PodplaceWhy`, `HALost`); at most 128 bytes.
    pub reason: String,
    /// What podplace did or would do about it (`Explain`, `Watch`); at most
    /// 128 bytes.
    pub action: String,
    /// The human-readable message; cut to [`NOTE_LIMIT`] at a clause.
    pub note: String,
    /// Names the cause behind the note: drafts about the same object with
    /// the same reason and cause are one series (counted), a different cause
    /// makes a new Event. Not written to the API.
    pub cause_key: String,
}

/// An `ObjectReference` for [`EventDraft::regarding`]; `namespace` is
/// `None` for cluster-scoped kinds.
pub fn object_reference(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    uid: Option<&str>,
) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        namespace: namespace.map(str::to_string),
        name: Some(name.to_string()),
        uid: uid.map(str::to_string),
        ..ObjectReference::default()
    }
}

/// A token bucket: `burst` writes at once, then one more every `refill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Tokens when full.
    pub burst: u32,
    /// Time to earn one token back.
    pub refill: Duration,
}

/// How the recorder names itself and bounds its writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// `reportingController`: [`REPORTING_CONTROLLER`].
    pub reporting_controller: String,
    /// `reportingInstance`: this process (pod name and identity suffix,
    /// the Lease identity); cut to 128 bytes.
    pub reporting_instance: String,
    /// Writes per object (per `regarding`): default a burst of 5, then one
    /// every 2 minutes.
    pub per_object: Budget,
    /// Writes for the whole process: default a burst of 60, then one per
    /// second (60 a minute).
    pub global: Budget,
    /// A series seen nothing new for this long ends: its final count is
    /// written and it is forgotten (client-go: 6 minutes).
    pub finish_after: Duration,
    /// A live series' count is written at least this often, which also
    /// keeps the Event from expiring (client-go: 30 minutes).
    pub refresh_every: Duration,
    /// Series remembered at most; past it the longest-quiet one is forgotten.
    pub max_series: usize,
    /// Each API request's deadline.
    pub request_timeout: Duration,
}

impl RecorderConfig {
    /// The defaults, for `reporting_instance`.
    pub fn new(reporting_instance: &str) -> RecorderConfig {
        RecorderConfig {
            reporting_controller: REPORTING_CONTROLLER.to_string(),
            reporting_instance: reporting_instance.to_string(),
            per_object: Budget {
                burst: 5,
                refill: Duration::from_secs(120),
            },
            global: Budget {
                burst: 60,
                refill: Duration::from_secs(1),
            },
            finish_after: Duration::from_secs(6 * 60),
            refresh_every: Duration::from_secs(30 * 60),
            max_series: 10_000,
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// What the recorder did with a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A new Event was created (or is to be: see [`Write`]).
    Created {
        /// Its name.
        name: String,
    },
    /// A repeat: the series' count was written (`count: 2`, or a count the
    /// budget had held back).
    Patched {
        /// The Event's name.
        name: String,
        /// `series.count` written.
        count: i32,
    },
    /// A repeat counted in memory; written at the next refresh or end of
    /// the series.
    Counted {
        /// The Event's name.
        name: String,
        /// The series' count now.
        count: i32,
    },
    /// Not recorded: the object's or the global budget is spent.
    Dropped(Dropped),
}

/// Which budget dropped a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// The object's budget ([`RecorderConfig::per_object`]).
    Object,
    /// The global budget ([`RecorderConfig::global`]).
    Global,
}

/// One API write the book decided on.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create this Event.
    Create(Event),
    /// Patch this Event's `series`; if it is gone (404), create it as it is
    /// (with its series), as client-go does.
    PatchSeries(Event),
}

impl Write {
    /// The Event written.
    pub fn event(&self) -> &Event {
        match self {
            Write::Create(e) | Write::PatchSeries(e) => e,
        }
    }
}

/// What makes drafts one series.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    object: ObjectKey,
    type_: EventType,
    reason: String,
    action: String,
    cause: String,
}

/// The object a draft is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ObjectKey {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
}

impl ObjectKey {
    fn of(r: &ObjectReference) -> ObjectKey {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        ObjectKey {
            api_version: s(&r.api_version),
            kind: s(&r.kind),
            namespace: s(&r.namespace),
            name: s(&r.name),
            uid: s(&r.uid),
        }
    }
}

/// A remembered series: the Event as last written or to be written.
#[derive(Debug, Clone)]
struct Entry {
    event: Event,
    /// The count written last (1: the Event alone).
    written_count: i32,
    /// When the count was last written (or the Event created).
    written_at: Timestamp,
    /// When the series was last observed.
    seen_at: Timestamp,
}

impl Entry {
    fn count(&self) -> i32 {
        self.event.series.as_ref().map_or(1, |s| s.count)
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

impl Bucket {
    fn full(budget: Budget, now: Timestamp) -> Bucket {
        Bucket {
            tokens: f64::from(budget.burst),
            at: now,
        }
    }

    /// Tokens now, after refilling since `at`.
    fn refill(&mut self, budget: Budget, now: Timestamp) {
        let elapsed = nanos_between(self.at, now).max(0) as f64;
        let per = budget.refill.as_nanos().max(1) as f64;
        self.tokens = (self.tokens + elapsed / per).min(f64::from(budget.burst));
        self.at = now;
    }

    fn is_full(&self, budget: Budget) -> bool {
        self.tokens >= f64::from(budget.burst)
    }
}

fn nanos_between(earlier: Timestamp, later: Timestamp) -> i128 {
    later.as_nanosecond() - earlier.as_nanosecond()
}

fn older_than(then: Timestamp, now: Timestamp, d: Duration) -> bool {
    nanos_between(then, now) >= d.as_nanos() as i128
}

/// The recorder's memory and decisions, without I/O (see the module doc).
#[derive(Debug, Clone)]
pub struct EventBook {
    config: RecorderConfig,
    series: HashMap<SeriesKey, Entry>,
    objects: HashMap<ObjectKey, Bucket>,
    global: Option<Bucket>,
    dropped: u64,
}

impl EventBook {
    /// An empty book.
    pub fn new(config: RecorderConfig) -> EventBook {
        EventBook {
            config,
            series: HashMap::new(),
            objects: HashMap::new(),
            global: None,
            dropped: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RecorderConfig {
        &self.config
    }

    /// Series remembered now.
    pub fn series_len(&self) -> usize {
        self.series.len()
    }

    /// Drafts dropped for a spent budget since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Decides what to do with `draft` at `now`: the outcome, and the API
    /// write to make, if any.
    pub fn record(&mut self, draft: &EventDraft, now: Timestamp) -> (Recorded, Option<Write>) {
        let object = ObjectKey::of(&draft.regarding);
        let key = SeriesKey {
            object: object.clone(),
            type_: draft.type_,
            reason: draft.reason.clone(),
            action: draft.action.clone(),
            cause: draft.cause_key.clone(),
        };
        if let Some(entry) = self.series.get_mut(&key) {
            let count = entry.count() + 1;
            entry.event.series = Some(EventSeries {
                count,
                last_observed_time: MicroTime(now),
            });
            entry.seen_at = now;
            let name = entry.event.metadata.name.clone().unwrap_or_default();
            // client-go writes the second occurrence at once and later ones
            // with the periodic refresh.
            if entry.written_count >= 2 {
                return (Recorded::Counted { name, count }, None);
            }
            // A held-back patch waits for the next maintain.
            if self.spend(&object, now).is_err() {
                return (Recorded::Counted { name, count }, None);
            }
            let entry = self.series.get_mut(&key).expect("just found");
            entry.written_count = count;
            entry.written_at = now;
            return (
                Recorded::Patched { name, count },
                Some(Write::PatchSeries(entry.event.clone())),
            );
        }
        if let Err(d) = self.spend(&object, now) {
            self.dropped += 1;
            return (Recorded::Dropped(d), None);
        }
        let event = self.new_event(draft, now);
        let name = event.metadata.name.clone().unwrap_or_default();
        if self.series.len() >= self.config.max_series.max(1) {
            self.forget_quietest();
        }
        self.series.insert(
            key,
            Entry {
                event: event.clone(),
                written_count: 1,
                written_at: now,
                seen_at: now,
            },
        );
        (Recorded::Created { name }, Some(Write::Create(event)))
    }

    /// The periodic work at `now` (call it every minute or so): series
    /// whose count changed since written and that ended or are due for a
    /// refresh are written; ended series and old single Events are
    /// forgotten; full buckets are dropped. Writes the budget holds back
    /// stay for the next call.
    pub fn maintain(&mut self, now: Timestamp) -> Vec<Write> {
        let finish = self.config.finish_after;
        let refresh = self.config.refresh_every;
        let mut due: Vec<(SeriesKey, bool)> = Vec::new();
        let mut forget = Vec::new();
        for (key, entry) in &self.series {
            let ended = older_than(entry.seen_at, now, finish);
            let unwritten = entry.count() != entry.written_count;
            if entry.event.series.is_none() || (ended && !unwritten) {
                if ended {
                    forget.push(key.clone());
                }
            } else if ended || older_than(entry.written_at, now, refresh) {
                due.push((key.clone(), ended));
            }
        }
        for key in forget {
            self.series.remove(&key);
        }
        // Oldest first, so a held-back budget serves the longest-waiting.
        due.sort_by_key(|(k, _)| self.series.get(k).map(|e| e.written_at.as_nanosecond()));
        let mut writes = Vec::new();
        for (key, ended) in due {
            if self.spend(&key.object, now).is_err() {
                continue;
            }
            if ended {
                if let Some(entry) = self.series.remove(&key) {
                    writes.push(Write::PatchSeries(entry.event));
                }
            } else if let Some(entry) = self.series.get_mut(&key) {
                entry.written_count = entry.count();
                entry.written_at = now;
                writes.push(Write::PatchSeries(entry.event.clone()));
            }
        }
        let per_object = self.config.per_object;
        self.objects.retain(|_, b| {
            b.refill(per_object, now);
            !b.is_full(per_object)
        });
        writes
    }

    /// Takes one token from the object's and the global bucket, or neither.
    fn spend(&mut self, object: &ObjectKey, now: Timestamp) -> Result<(), Dropped> {
        let per_object = self.config.per_object;
        let global_budget = self.config.global;
        let global = self
            .global
            .get_or_insert_with(|| Bucket::full(global_budget, now));
        global.refill(global_budget, now);
        let bucket = self
            .objects
            .entry(object.clone())
            .or_insert_with(|| Bucket::full(per_object, now));
        bucket.refill(per_object, now);
        if bucket.tokens < 1.0 {
            return Err(Dropped::Object);
        }
        if global.tokens < 1.0 {
            return Err(Dropped::Global);
        }
        bucket.tokens -= 1.0;
        global.tokens -= 1.0;
        Ok(())
    }

    fn forget_quietest(&mut self) {
        let quietest = self
            .series
            .iter()
            .min_by_key(|(_, e)| e.seen_at.as_nanosecond())
            .map(|(k, _)| k.clone());
        if let Some(k) = quietest {
            self.series.remove(&k);
        }
    }

    /// The Event named `name` already existed when we created it (another
    /// replica wrote it before a leader change, or the series ended and
    /// came back): from now on it is a series, written next as a patch of
    /// at least `count: 2`. Returns that patch's Event.
    pub fn existed(&mut self, name: &str, now: Timestamp) -> Option<Event> {
        let entry = self
            .series
            .values_mut()
            .find(|e| e.event.metadata.name.as_deref() == Some(name))?;
        let count = entry.count().max(2);
        entry.event.series = Some(EventSeries {
            count,
            last_observed_time: MicroTime(now),
        });
        entry.written_count = count;
        entry.written_at = now;
        Some(entry.event.clone())
    }

    fn new_event(&mut self, draft: &EventDraft, now: Timestamp) -> Event {
        let regarding = &draft.regarding;
        let object_name = regarding.name.clone().unwrap_or_default();
        // `<object>.<hash of the series>`: client-go suffixes the time, but a
        // name the series determines lets a new leader find the Event the
        // old one wrote (its create answers 409 AlreadyExists and it patches
        // the series instead) without reading Events. The object part is
        // cut so the whole stays a valid name (253 bytes).
        let suffix = format!(".{:016x}", series_hash(&self.config, draft));
        let head = cut_bytes(&object_name, 253 - suffix.len()).trim_end_matches(['.', '-']);
        let name = format!("{head}{suffix}");
        // Events live in their object's namespace; cluster-scoped objects'
        // in `default`.
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(draft.type_.as_str().to_string()),
            reason: Some(cut_bytes(&draft.reason, FIELD_LIMIT).to_string()),
            action: Some(cut_bytes(&draft.action, FIELD_LIMIT).to_string()),
            note: Some(cut_note(&draft.note, NOTE_LIMIT)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(
                cut_bytes(&self.config.reporting_controller, FIELD_LIMIT).to_string(),
            ),
            reporting_instance: Some(
                cut_bytes(&self.config.reporting_instance, FIELD_LIMIT).to_string(),
            ),
            ..Event::default()
        }
    }
}

/// FNV-1a (64 bits) of everything that makes a series, stable across
/// processes and builds (std's hasher promises neither).
fn series_hash(config: &RecorderConfig, draft: &EventDraft) -> u64 {
    let r = &draft.regarding;
    let parts = [
        config.reporting_controller.as_str(),
        r.api_version.as_deref().unwrap_or_default(),
        r.kind.as_deref().unwrap_or_default(),
        r.namespace.as_deref().unwrap_or_default(),
        r.name.as_deref().unwrap_or_default(),
        r.uid.as_deref().unwrap_or_default(),
        draft.type_.as_str(),
        draft.reason.as_str(),
        draft.action.as_str(),
        draft.cause_key.as_str(),
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The longest prefix of `s` of at most `limit` bytes that ends on a
/// character boundary.
fn cut_bytes(s: &str, limit: usize) -> &str {
    if s.len() <= limit {
        return s;
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `note` within `limit` bytes: unchanged when it fits; else cut at the
/// last clause boundary (`; `, `: `, `, `, `. `, ` — `) that fits with a
/// trailing `…`, else at the last space, never inside a word (a single
/// word longer than the limit is cut at a character boundary).
pub fn cut_note(note: &str, limit: usize) -> String {
    if note.len() <= limit {
        return note.to_string();
    }
    let room = limit.saturating_sub(ELLIPSIS.len());
    let head = cut_bytes(note, room);
    let clause = ["; ", ": ", ", ", ". ", " — ", " ("]
        .iter()
        .filter_map(|sep| head.rfind(sep))
        .max()
        .filter(|&i| i > 0);
    let word = head.rfind(char::is_whitespace).filter(|&i| i > 0);
    let end = clause.or(word).unwrap_or(head.len());
    let kept = head[..end].trim_end_matches([' ', ',', ';', ':', '—']);
    format!("{kept}{ELLIPSIS}")
}

/// Records drafts against the API server through an [`EventBook`].
///
/// Hold one per process (the Lease holder's acting half); call
/// [`record`](Self::record) with each draft and [`maintain`](Self::maintain)
/// about once a minute.
pub struct EventRecorder {
    client: Client,
    book: EventBook,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("book", &self.book)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder writing with `client`.
    pub fn new(client: Client, config: RecorderConfig) -> EventRecorder {
        EventRecorder {
            client,
            book: EventBook::new(config),
        }
    }

    /// The book, for metrics and tests.
    pub fn book(&self) -> &EventBook {
        &self.book
    }

    /// Records one draft now: creates an Event, patches its series, counts
    /// it, or drops it (budget spent). A failed write is an error naming
    /// the Event; the series stays remembered, so the next repeat patches
    /// (or re-creates) it.
    pub async fn record(&mut self, draft: &EventDraft) -> Result<Recorded, Error> {
        let (outcome, write) = self.book.record(draft, Timestamp::now());
        if let Some(write) = write {
            self.write(&write).await?;
        }
        Ok(outcome)
    }

    /// The periodic work ([`EventBook::maintain`]) carried out; returns the
    /// number of writes made and the errors of those that failed.
    pub async fn maintain(&mut self) -> (usize, Vec<Error>) {
        let writes = self.book.maintain(Timestamp::now());
        let mut errors = Vec::new();
        let mut done = 0;
        for w in &writes {
            match self.write(w).await {
                Ok(()) => done += 1,
                Err(e) => errors.push(e),
            }
        }
        (done, errors)
    }

    async fn write(&mut self, write: &Write) -> Result<(), Error> {
        match (write, self.send(write).await) {
            (Write::Create(e), Err(Error::Api { code: 409, .. })) => {
                let name = e.metadata.name.clone().unwrap_or_default();
                match self.book.existed(&name, Timestamp::now()) {
                    Some(event) => self.send(&Write::PatchSeries(event)).await,
                    None => Ok(()),
                }
            }
            (_, r) => r,
        }
    }

    async fn send(&self, write: &Write) -> Result<(), Error> {
        let event = write.event();
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let name = event.metadata.name.clone().unwrap_or_default();
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        match write {
            Write::Create(e) => self.create(&api, e, &namespace, &name).await,
            Write::PatchSeries(e) => {
                let action = format!("patch event {namespace}/{name}");
                let body = serde_json::json!({ "series": e.series });
                let params = PatchParams::default();
                let patch = Patch::Merge(&body);
                match self
                    .bounded(&action, api.patch(&name, &params, &patch))
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(Error::Api { code: 404, .. }) => {
                        self.create(&api, e, &namespace, &name).await
                    }
                    Err(err) => Err(err),
                }
            }
        }
    }

    async fn create(
        &self,
        api: &Api<Event>,
        event: &Event,
        namespace: &str,
        name: &str,
    ) -> Result<(), Error> {
        let action = format!("create event {namespace}/{name}");
        let mut event = event.clone();
        event.metadata.resource_version = None;
        self.bounded(&action, api.create(&PostParams::default(), &event))
            .await
            .map(|_| ())
    }

    async fn bounded<T>(
        &self,
        action: &str,
        request: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, Error> {
        let timeout = self.book.config.request_timeout;
        match tokio::time::timeout(timeout, request).await {
            Ok(r) => r.map_err(|e| Error::from_kube(action.to_string(), e)),
            Err(_) => Err(Error::Timeout {
                action: action.to_string(),
                server: "the API server".to_string(),
                detail: format!(
                    "no answer within the event request timeout of {} s",
                    timeout.as_secs_f64()
                ),
            }),
        }
    }
}
