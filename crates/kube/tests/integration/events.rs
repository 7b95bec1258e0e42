//! The Event recorder: series counted the way client-go's events.k8s.io/v1
//! broadcaster counts them, budgets that make an Event storm impossible,
//! notes cut under the API's 1 KB at a clause, and the writes themselves
//! against the test API server (create, series patch, 404 → create,
//! 409 → patch, a hung server bounded by the request timeout).

use std::time::{Duration, Instant};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use podplace_kube::events::{
    cut_note, object_reference, Budget, Dropped, EventBook, EventDraft, EventRecorder, EventType,
    Recorded, RecorderConfig, Write, NOTE_LIMIT, REPORTING_CONTROLLER,
};
use podplace_kube::testserver::{Misbehavior, TestServer};
use podplace_kube::{ApiLimits, Error};
use serde_json::json;

fn t0() -> Timestamp {
    "2026-11-27T12:00:00Z".parse().unwrap()
}

fn at(secs: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(secs)).unwrap()
}

fn draft(pod: &str, cause: &str) -> EventDraft {
    EventDraft {
        regarding: object_reference("v1", "Pod", Some("stokesnet"), pod, Some("uid-1")),
        type_: EventType::Warning,
        reason: "PodplaceWhy".to_string(),
        action: "Explain".to_string(),
        note: format!("{pod} is blocked by {cause}"),
        cause_key: cause.to_string(),
    }
}

fn book() -> EventBook {
    EventBook::new(RecorderConfig::new("podplace-serve-abc"))
}

fn write_count(w: &Option<Write>) -> Option<i32> {
    w.as_ref()
        .and_then(|w| w.event().series.as_ref().map(|s| s.count))
}

#[test]
fn a_first_draft_creates_an_event_with_every_field_the_api_requires() {
    let mut b = book();
    let (outcome, write) = b.record(&draft("vault-2", "prometheus"), t0());
    let Some(Write::Create(event)) = write else {
        panic!("a create: {write:?}")
    };
    let name = event.metadata.name.clone().unwrap();
    assert_eq!(outcome, Recorded::Created { name: name.clone() });
    assert!(name.starts_with("vault-2."), "{name}");
    assert_eq!(event.metadata.namespace.as_deref(), Some("stokesnet"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some(REPORTING_CONTROLLER)
    );
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("podplace-serve-abc")
    );
    assert_eq!(event.action.as_deref(), Some("Explain"));
    assert_eq!(event.reason.as_deref(), Some("PodplaceWhy"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.event_time.as_ref().map(|t| t.0), Some(t0()));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("vault-2")
    );
    assert!(event.series.is_none());
}

#[test]
fn repeats_count_as_one_series_and_a_changed_cause_is_a_new_event() {
    let mut b = book();
    let (first, _) = b.record(&draft("vault-2", "prometheus"), at(0));
    let Recorded::Created { name } = first else {
        panic!("{first:?}")
    };
    // The second occurrence is patched at once with count 2 (client-go).
    let (second, w) = b.record(&draft("vault-2", "prometheus"), at(30));
    assert_eq!(
        second,
        Recorded::Patched {
            name: name.clone(),
            count: 2
        }
    );
    let Some(Write::PatchSeries(e)) = &w else {
        panic!("{w:?}")
    };
    assert_eq!(e.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(
        e.series.as_ref().map(|s| s.last_observed_time.0),
        Some(at(30))
    );
    // Later ones only count, without writing.
    for (i, secs) in [60, 90, 120].into_iter().enumerate() {
        let (n, w) = b.record(&draft("vault-2", "prometheus"), at(secs));
        assert_eq!(
            n,
            Recorded::Counted {
                name: name.clone(),
                count: 3 + i as i32
            }
        );
        assert!(w.is_none());
    }
    // Another cause: another Event, another name.
    let (changed, w) = b.record(&draft("vault-2", "memory"), at(150));
    let Recorded::Created { name: other } = changed else {
        panic!("{changed:?}")
    };
    assert_ne!(other, name);
    assert!(matches!(w, Some(Write::Create(_))));
    assert_eq!(b.series_len(), 2);
}

#[test]
fn the_name_is_the_same_for_the_same_series_in_another_process() {
    // A new leader derives the name the old one wrote (409 → patch).
    let (a, _) = book().record(&draft("vault-2", "prometheus"), at(0));
    let (b, _) = book().record(&draft("vault-2", "prometheus"), at(500));
    let (c, _) = book().record(&draft("vault-2", "memory"), at(0));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_series_is_refreshed_and_finished_with_its_final_count() {
    let mut b = book();
    let d = draft("vault-2", "prometheus");
    for secs in (0..=600).step_by(60) {
        b.record(&d, at(secs));
    }
    // 11 observations over 10 minutes: count 11 in memory, 2 written.
    // Nothing due before the 30-minute refresh (from the count-2 patch at
    // 60 s) while still observed.
    assert!(b.maintain(at(601)).is_empty());
    for secs in (660..=1800).step_by(60) {
        b.record(&d, at(secs));
    }
    let refreshed = b.maintain(at(1860));
    assert_eq!(refreshed.len(), 1, "{refreshed:?}");
    assert_eq!(write_count(&refreshed.first().cloned()), Some(31));
    // Unobserved for 6 minutes: the series ends; nothing unwritten, so it
    // is only forgotten.
    assert!(b.maintain(at(1800 + 6 * 60)).is_empty());
    assert_eq!(b.series_len(), 0);
    // Ended with unwritten counts: the final count is written.
    let mut b = book();
    for secs in [0, 10, 20, 30] {
        b.record(&d, at(secs));
    }
    assert!(b.maintain(at(100)).is_empty());
    let last = b.maintain(at(30 + 6 * 60));
    assert_eq!(last.len(), 1);
    assert_eq!(write_count(&last.first().cloned()), Some(4));
    assert_eq!(b.series_len(), 0);
    // A single Event is forgotten after the same quiet time, with no write.
    let mut b = book();
    b.record(&d, at(0));
    assert!(b.maintain(at(6 * 60)).is_empty());
    assert_eq!(b.series_len(), 0);
}

#[test]
fn the_per_object_budget_bounds_new_events_for_one_object() {
    let mut b = book();
    let burst = b.config().per_object.burst as usize;
    let outcomes: Vec<_> = (0..50)
        .map(|i| b.record(&draft("vault-2", &format!("cause-{i}")), at(0)).0)
        .collect();
    let created = outcomes
        .iter()
        .filter(|o| matches!(o, Recorded::Created { .. }))
        .count();
    assert_eq!(created, burst);
    assert!(outcomes[burst..]
        .iter()
        .all(|o| *o == Recorded::Dropped(Dropped::Object)));
    assert_eq!(b.dropped(), 50 - burst as u64);
    // Another pod is not held back by vault-2's bucket.
    let (other, _) = b.record(&draft("vault-1", "x"), at(0));
    assert!(matches!(other, Recorded::Created { .. }));
    // One refill period later, one more.
    let refill = b.config().per_object.refill.as_secs() as i64;
    let (one, _) = b.record(&draft("vault-2", "late-1"), at(refill));
    let (two, _) = b.record(&draft("vault-2", "late-2"), at(refill));
    assert!(matches!(one, Recorded::Created { .. }));
    assert_eq!(two, Recorded::Dropped(Dropped::Object));
}

#[test]
fn a_held_back_series_patch_is_written_by_the_next_maintain() {
    let mut config = RecorderConfig::new("i");
    config.per_object = Budget {
        burst: 1,
        refill: Duration::from_secs(60),
    };
    let mut b = EventBook::new(config);
    let d = draft("vault-2", "prometheus");
    assert!(matches!(b.record(&d, at(0)).0, Recorded::Created { .. }));
    // The bucket is empty: the count-2 patch is held back, not lost.
    let (n, w) = b.record(&d, at(1));
    assert!(matches!(n, Recorded::Counted { count: 2, .. }), "{n:?}");
    assert!(w.is_none());
    assert!(b.maintain(at(2)).is_empty(), "no token yet");
    // Quiet for 6 minutes: the series ends and its count is written.
    let w = b.maintain(at(1 + 6 * 60));
    assert_eq!(write_count(&w.first().cloned()), Some(2));
}

/// A storm: 2,000 pods, each drafting a new cause every second for 10
/// minutes. In every minute the writes stay within the global budget
/// (burst + one minute of refill), and no object gets more than its own.
#[test]
fn an_event_storm_is_impossible() {
    let mut b = book();
    let global = b.config().global;
    let per_object = b.config().per_object;
    let mut writes_per_minute = vec![0usize; 10];
    let mut per_pod = std::collections::HashMap::<String, usize>::new();
    for sec in 0..600i64 {
        for pod in 0..2000 {
            // Only some pods each second, to keep the test fast.
            if !(pod + sec as usize).is_multiple_of(50) {
                continue;
            }
            let name = format!("pod-{pod}");
            let (_, w) = b.record(&draft(&name, &format!("c{sec}")), at(sec));
            if w.is_some() {
                writes_per_minute[(sec / 60) as usize] += 1;
                *per_pod.entry(name).or_default() += 1;
            }
        }
        if sec.rem_euclid(60) == 59 {
            writes_per_minute[(sec / 60) as usize] += b.maintain(at(sec)).len();
        }
    }
    let minute_cap = global.burst as usize + (60.0 / global.refill.as_secs_f64()) as usize;
    assert!(
        writes_per_minute.iter().all(|&w| w <= minute_cap),
        "{writes_per_minute:?} > {minute_cap}"
    );
    assert!(writes_per_minute.iter().skip(1).all(|&w| w <= 61));
    let pod_cap = per_object.burst as usize + (600 / per_object.refill.as_secs() as usize) + 1;
    assert!(
        per_pod.values().all(|&n| n <= pod_cap),
        "per pod ≤ {pod_cap}"
    );
    assert!(b.dropped() > 0);
}

#[test]
fn a_long_note_is_cut_at_a_clause_under_the_limit() {
    let clause = "blocked by StatefulSet/stokesnet/prometheus-server on 3 nodes";
    let long = (0..40)
        .map(|i| format!("{clause} (term {i})"))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(long.len() > NOTE_LIMIT);
    let cut = cut_note(&long, NOTE_LIMIT);
    assert!(cut.len() <= NOTE_LIMIT, "{}", cut.len());
    assert!(cut.ends_with('…'));
    let kept = cut.trim_end_matches('…');
    assert!(long.starts_with(kept));
    // The cut falls at a clause: what follows the kept text starts one.
    let rest = &long[kept.len()..];
    assert!(
        ["; ", ": ", ", ", ". ", " (", " — "]
            .iter()
            .any(|s| rest.starts_with(s)),
        "cut mid-clause: …{:?}",
        &rest[..20]
    );
    // Never mid-word, whatever the limit; multi-byte text stays valid.
    let words = "ünschedulable pods wait; nodes didn't match Pod's node affinity, ".repeat(30);
    for limit in [40, 100, 333, 1000, NOTE_LIMIT] {
        let cut = cut_note(&words, limit);
        assert!(cut.len() <= limit);
        let kept = cut.trim_end_matches('…');
        let next = words[kept.len()..].chars().next().unwrap();
        assert!(
            !next.is_alphanumeric(),
            "limit {limit}: cut before {next:?}"
        );
    }
    assert_eq!(cut_note("short", NOTE_LIMIT), "short");
}

async fn client(server: &TestServer) -> podplace_kube::Client {
    server.client(None, &ApiLimits::default()).await.unwrap()
}

const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/stokesnet/events";

/// What the API server answers a create or patch with (its content does
/// not matter to the recorder, only that it is an Event).
fn written() -> serde_json::Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
           "metadata": {"name": "vault-2.x", "namespace": "stokesnet"},
           "eventTime": "2026-11-27T12:00:00.000000Z"})
}

fn status(code: u16, reason: &str) -> serde_json::Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "message": format!("events {reason}"), "reason": reason, "code": code})
}

#[tokio::test]
async fn the_recorder_creates_then_patches_the_series() {
    let server = TestServer::start().unwrap();
    server.answer("POST", EVENTS, &[], 201, written(), None);
    let mut rec = EventRecorder::new(client(&server).await, RecorderConfig::new("me"));
    let d = draft("vault-2", "prometheus");
    let Recorded::Created { name } = rec.record(&d).await.unwrap() else {
        panic!("created")
    };
    let path = format!("{EVENTS}/{name}");
    server.answer("PATCH", &path, &[], 200, written(), None);
    assert!(matches!(
        rec.record(&d).await.unwrap(),
        Recorded::Patched { count: 2, .. }
    ));
    assert!(matches!(
        rec.record(&d).await.unwrap(),
        Recorded::Counted { count: 3, .. }
    ));
    let log = server.requests();
    let posts: Vec<_> = log.iter().filter(|r| r.method == "POST").collect();
    let patches: Vec<_> = log.iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(posts.len(), 1, "{log:#?}");
    assert_eq!(posts[0].path, EVENTS);
    let body = posts[0].body.as_ref().unwrap();
    assert_eq!(body["reportingController"], REPORTING_CONTROLLER);
    assert_eq!(body["reportingInstance"], "me");
    assert_eq!(body["action"], "Explain");
    assert_eq!(body["regarding"]["kind"], "Pod");
    assert!(body["eventTime"].as_str().is_some());
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].path, path);
    let patch = patches[0].body.as_ref().unwrap();
    assert_eq!(patch["series"]["count"], 2);
    assert!(patch["series"]["lastObservedTime"].as_str().is_some());
}

#[tokio::test]
async fn a_missing_event_is_created_again_and_an_existing_one_patched() {
    let server = TestServer::start().unwrap();
    let mut rec = EventRecorder::new(client(&server).await, RecorderConfig::new("me"));
    let d = draft("vault-2", "prometheus");
    // Another replica already wrote this series: 409 → patch count 2.
    server.answer(
        "POST",
        EVENTS,
        &[],
        409,
        status(409, "AlreadyExists"),
        Some(1),
    );
    server.answer("POST", EVENTS, &[], 201, written(), None);
    let Recorded::Created { name } = rec.record(&d).await.unwrap() else {
        panic!("created")
    };
    let path = format!("{EVENTS}/{name}");
    server.answer("PATCH", &path, &[], 200, written(), None);
    let patches = |s: &TestServer| {
        s.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path == path)
            .map(|r| r.body.unwrap()["series"]["count"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(patches(&server), vec![json!(2)]);
    // The Event expired meanwhile: the patch's 404 falls back to a create
    // carrying the series.
    let d2 = draft("vault-3", "prometheus");
    let Recorded::Created { name: n3 } = rec.record(&d2).await.unwrap() else {
        panic!("created")
    };
    server.answer(
        "PATCH",
        &format!("{EVENTS}/{n3}"),
        &[],
        404,
        status(404, "NotFound"),
        None,
    );
    server.clear_requests();
    assert!(matches!(
        rec.record(&d2).await.unwrap(),
        Recorded::Patched { count: 2, .. }
    ));
    let log = server.requests();
    assert_eq!(
        log.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(),
        ["PATCH", "POST"]
    );
    assert_eq!(log[1].body.as_ref().unwrap()["series"]["count"], 2);
}

#[tokio::test]
async fn a_hung_server_costs_one_request_timeout() {
    let server = TestServer::start().unwrap();
    server.misbehave("POST", EVENTS, Misbehavior::Hang);
    let mut config = RecorderConfig::new("me");
    config.request_timeout = Duration::from_millis(300);
    let mut rec = EventRecorder::new(client(&server).await, config);
    let start = Instant::now();
    let err = rec.record(&draft("vault-2", "x")).await.unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(
        err.to_string().contains("create event stokesnet/vault-2."),
        "{err}"
    );
}

#[test]
fn names_and_fields_stay_within_the_api_limits() {
    let long = "p".repeat(250);
    let mut config = RecorderConfig::new(&"i".repeat(300));
    config.reporting_controller = REPORTING_CONTROLLER.to_string();
    let mut b = EventBook::new(config);
    let mut d = draft(&long, "x");
    d.reason = "R".repeat(200);
    d.note = "word ".repeat(400);
    let (_, w) = b.record(&d, at(0));
    let e = w.unwrap().event().clone();
    let name = e.metadata.name.unwrap();
    assert!(name.len() <= 253, "{}", name.len());
    assert!(name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-'));
    assert!(e.reporting_instance.unwrap().len() <= 128);
    assert!(e.reason.unwrap().len() <= 128);
    assert!(e.note.unwrap().len() <= NOTE_LIMIT);
}
