//! Explaining Pending pods as `PodplaceWhy` Events: the main cause the way
//! `podplace why` names it and the first verified fix.
//!
//! Each tick the serve loop hands the [`Explainer`] the model's world (a
//! read guard), its generation and the time; it answers with the
//! [`EventDraft`]s due, which the leader records with
//! [`EventRecorder`](podplace_kube::events::EventRecorder). A pod is
//! explained when it has been unschedulable for
//! [`Explainer::explain_after`] — since its `PodScheduled=False`
//! condition's `lastTransitionTime`, else its `creationTimestamp` (a pod
//! kube-scheduler has not tried or reported yet is Pending all the same),
//! else since the explainer first saw it — and it is none of:
//!
//! - bound, terminating or finished;
//! - scheduling-gated (`spec.schedulingGates`: kube-scheduler never tries
//!   it, there is nothing to explain yet);
//! - asking for a scheduler no profile serves (`spec.schedulerName`: not
//!   kube-scheduler's pod, podplace would explain the wrong scheduler);
//! - nominated (`status.nominatedNodeName`: preemption is under way, the
//!   pod is about to fit).
//!
//! The work is bounded: at most [`Explainer::max_per_tick`] explanations a
//! tick and no new one past [`Explainer::max_tick_time`] (pods never
//! explained first, then the longest unrefreshed), each
//! kept until the model's generation changes (or
//! [`Explainer::reexplain_every`] passes), so a thousand Pending pods cost
//! a few explanations a tick, not a thousand.
//!
//! A draft is made when a pod's cause changes (its `cause_key`, so the
//! recorder makes a new Event) and then every [`Explainer::repeat_every`]
//! while it stays the same (the recorder counts those as the Event's
//! series).

mod note;

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::jiff::Timestamp;
use podplace_engine::PodId;
use podplace_kube::events::{object_reference, EventDraft, EventType};
use podplace_world::World;

pub use note::{cause_key, note, NoteParts};

/// `reason` of the Events.
pub const REASON: &str = "PodplaceWhy";
/// `action` of the Events.
pub const ACTION: &str = "Explain";

/// Decides which Pending pods get a `PodplaceWhy` draft (see the module doc).
#[derive(Debug, Clone)]
pub struct Explainer {
    /// How long a pod must be unschedulable before it is explained
    /// (`--explain-after`, default 30 s).
    pub explain_after: Duration,
    /// How often an unchanged cause is drafted again (counted by the
    /// recorder as a repeat of the same Event); default 60 s.
    pub repeat_every: Duration,
    /// A cached explanation is recomputed after this long even when the
    /// generation did not change; default 5 minutes.
    pub reexplain_every: Duration,
    /// Explanations computed per tick at most; default 8.
    pub max_per_tick: usize,
    /// Time a tick may spend explaining (the caller holds the model's read
    /// guard meanwhile, which holds up the watches' next write): no new
    /// explanation starts past it, though one always does; default 200 ms.
    pub max_tick_time: Duration,
    pods: HashMap<PodKey, Seen>,
    stats: TickStats,
}

/// What the last [`Explainer::due`] did, for metrics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Pods Pending and eligible (not gated, served, not nominated).
    pub pending: usize,
    /// Of those, Pending for at least `explain_after`.
    pub due: usize,
    /// Explanations computed this tick.
    pub explained: usize,
    /// Due pods whose explanation waits for a later tick (the bound).
    pub deferred: usize,
    /// Drafts returned.
    pub drafts: usize,
}

/// A pod, across re-creations (a new uid is a new pod).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PodKey {
    namespace: String,
    name: String,
    uid: String,
}

#[derive(Debug, Clone)]
struct Seen {
    first_seen: Timestamp,
    explained: Option<Explained>,
    drafted: Option<(String, Timestamp)>,
    touched: bool,
}

#[derive(Debug, Clone)]
struct Explained {
    generation: u64,
    at: Timestamp,
    /// `None`: nothing to say (the pod fits now, or is not Pending).
    cause: Option<(String, String)>,
    /// The workloads whose pods keep it off some node (`Kind/ns/name`),
    /// each once.
    blockers: Vec<String>,
}

/// One eligible Pending pod this tick.
struct Candidate {
    id: PodId,
    key: PodKey,
    since: Option<Timestamp>,
}

impl Explainer {
    /// An explainer with `explain_after` and the other defaults.
    pub fn new(explain_after: Duration) -> Explainer {
        Explainer {
            explain_after,
            repeat_every: Duration::from_secs(60),
            reexplain_every: Duration::from_secs(300),
            max_per_tick: 8,
            max_tick_time: Duration::from_millis(200),
            pods: HashMap::new(),
            stats: TickStats::default(),
        }
    }

    /// What the last tick did.
    pub fn stats(&self) -> TickStats {
        self.stats
    }

    /// Per blocking workload (`Kind/ns/name`), how many of the Pending pods
    /// seen by the last [`Explainer::due`] its pods keep off some node, as
    /// their latest explanations say (`podplace_blocked_by`). Pods not yet
    /// explained count for no workload.
    pub fn blocked_by(&self) -> Vec<(String, i64)> {
        let mut counts: std::collections::BTreeMap<&str, i64> = Default::default();
        for explained in self.pods.values().filter_map(|s| s.explained.as_ref()) {
            if explained.cause.is_none() {
                continue;
            }
            for w in &explained.blockers {
                *counts.entry(w).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .map(|(w, n)| (w.to_string(), n))
            .collect()
    }

    /// The drafts due at `now` for `world` at `generation`
    /// ([`Model::generation`](crate::shared::Model::generation)).
    pub fn due(&mut self, world: &World, generation: u64, now: Timestamp) -> Vec<EventDraft> {
        let mut stats = TickStats::default();
        for seen in self.pods.values_mut() {
            seen.touched = false;
        }
        let candidates = pending(world);
        stats.pending = candidates.len();
        let mut due = Vec::new();
        for c in candidates {
            let seen = self.pods.entry(c.key.clone()).or_insert(Seen {
                first_seen: now,
                explained: None,
                drafted: None,
                touched: false,
            });
            seen.touched = true;
            let since = c.since.unwrap_or(seen.first_seen);
            if elapsed(since, now) >= self.explain_after {
                due.push(c);
            }
        }
        self.pods.retain(|_, s| s.touched);
        stats.due = due.len();

        // Which explanations to (re)compute: missing first, then the
        // oldest; at most max_per_tick.
        let stale = |s: &Seen| match &s.explained {
            None => true,
            Some(e) => e.generation != generation || elapsed(e.at, now) >= self.reexplain_every,
        };
        let mut todo: Vec<(Option<i128>, usize)> = due
            .iter()
            .enumerate()
            .filter(|(_, c)| self.pods.get(&c.key).is_some_and(stale))
            .map(|(i, c)| {
                let at = self.pods[&c.key]
                    .explained
                    .as_ref()
                    .map(|e| e.at.as_nanosecond());
                (at, i)
            })
            .collect();
        todo.sort();
        let started = std::time::Instant::now();
        for &(_, i) in todo.iter().take(self.max_per_tick) {
            if stats.explained > 0 && started.elapsed() >= self.max_tick_time {
                break;
            }
            let c = &due[i];
            let (cause, blockers) = explain_one(world, c.id);
            stats.explained += 1;
            if let Some(seen) = self.pods.get_mut(&c.key) {
                seen.explained = Some(Explained {
                    generation,
                    at: now,
                    cause,
                    blockers,
                });
            }
        }

        stats.deferred = todo.len() - stats.explained;
        let mut drafts = Vec::new();
        for c in &due {
            let Some(seen) = self.pods.get_mut(&c.key) else {
                continue;
            };
            let Some((text, key)) = seen.explained.as_ref().and_then(|e| e.cause.clone()) else {
                continue;
            };
            let repeat = match &seen.drafted {
                Some((k, at)) if *k == key => elapsed(*at, now) >= self.repeat_every,
                _ => true,
            };
            if !repeat {
                continue;
            }
            seen.drafted = Some((key.clone(), now));
            drafts.push(EventDraft {
                regarding: object_reference(
                    "v1",
                    "Pod",
                    Some(&c.key.namespace),
                    &c.key.name,
                    Some(&c.key.uid)
                        .filter(|u| !u.is_empty())
                        .map(|u| u.as_str()),
                ),
                type_: EventType::Warning,
                reason: REASON.to_string(),
                action: ACTION.to_string(),
                note: text,
                cause_key: key,
            });
        }
        stats.drafts = drafts.len();
        self.stats = stats;
        drafts
    }
}

/// Explains one pod as each tick does: its note and cause key, or `None`
/// when there is nothing to say (it fits now, or is not Pending after
/// all); and the workloads whose pods block it on some node. Public so the
/// benchmark times the path serve runs.
pub fn explain_one(world: &World, id: PodId) -> (Option<(String, String)>, Vec<String>) {
    // A pod that fits now needs no analysis: it is left out at once.
    let Some(e) = podplace_explain::explain_if_stuck(world, id) else {
        return (None, Vec::new());
    };
    if e.phase != podplace_explain::Phase::Pending || e.would_land_on.is_some() {
        return (None, Vec::new());
    }
    // The nodes of one domain share one counts list: each list is read
    // once (a zone blocked by hundreds of workloads, 5,000 nodes).
    let mut lists = std::collections::HashSet::new();
    let blockers: std::collections::BTreeSet<&str> = e
        .nodes
        .iter()
        .flat_map(|n| &n.reasons)
        .filter(|r| lists.insert(r.counts.id()))
        .flat_map(|r| &r.counts)
        .map(|c| c.workload.as_str())
        .collect();
    let blockers = blockers.into_iter().map(str::to_string).collect();
    let scheduler = &world.state().pod(id).scheduler_name;
    let profile = world
        .setup()
        .serving(scheduler)
        .map(|p| p.scheduler_name.clone())
        .unwrap_or_default();
    let parts = NoteParts::of(&e, &profile);
    (Some((note(&parts), cause_key(&parts))), blockers)
}

/// Time from `since` to `now` (zero when `since` is later).
fn elapsed(since: Timestamp, now: Timestamp) -> Duration {
    let nanos = now.as_nanosecond() - since.as_nanosecond();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

/// The world's Pending pods that may be explained (see the module doc),
/// with the time they became unschedulable when the API object says.
fn pending(world: &World) -> Vec<Candidate> {
    let state = world.state();
    let setup = world.setup();
    let mut out = Vec::new();
    for (id, entry) in state.live_pods() {
        let pod = &entry.pod;
        if entry.node.is_some() || pod.finished || pod.terminating {
            continue;
        }
        if !pod.scheduling_gates.is_empty() || setup.serving(&pod.scheduler_name).is_none() {
            continue;
        }
        let api = world.api_pod(id);
        if api.is_some_and(bound_or_nominated) {
            continue;
        }
        let (namespace, name) = world
            .pod_name(id)
            .split_once('/')
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .unwrap_or_else(|| ("default".to_string(), pod.name.to_string()));
        out.push(Candidate {
            id,
            key: PodKey {
                namespace,
                name,
                uid: pod.uid.to_string(),
            },
            since: api.and_then(unschedulable_since),
        });
    }
    out
}

/// Bound per the API object (`spec.nodeName`: a node the world lacks),
/// being deleted, finished, or nominated for preemption.
fn bound_or_nominated(pod: &core::Pod) -> bool {
    let spec_bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let status = pod.status.as_ref();
    let nominated = status
        .and_then(|s| s.nominated_node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let finished = status
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    spec_bound || nominated || finished || pod.metadata.deletion_timestamp.is_some()
}

/// When the pod became unschedulable: its `PodScheduled=False` condition's
/// `lastTransitionTime`, else its `creationTimestamp`.
fn unschedulable_since(pod: &core::Pod) -> Option<Timestamp> {
    let condition = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
    match condition {
        Some(c) if c.status == "False" => c
            .last_transition_time
            .as_ref()
            .map(|t| t.0)
            .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0)),
        _ => pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
    }
}
