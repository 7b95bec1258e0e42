//! The watch stream against the recorded-response API server: the first
//! lists equal what `fetch_inventory` reads (same objects, same skips and
//! warnings, same refusals), a recorded watch's create and delete come
//! through, and a watch ended by 410 Gone is followed by a full re-list.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use podplace_kube::testserver::TestServer;
use podplace_kube::{
    fetch_inventory, watch_cluster, watch_limits, ApiLimits, FetchOptions, WatchEvent, WatchOptions,
};
use podplace_model::inventory::{ObjectKey, ObjectKind};

/// How long any case may take, whatever happens.
const CEILING: Duration = Duration::from_secs(30);

async fn client(server: &TestServer, context: &str) -> podplace_kube::Client {
    let limits = watch_limits(&ApiLimits::default());
    server.client(Some(context), &limits).await.unwrap()
}

/// Reads `stream` until `done` says so, under the ceiling.
async fn read_until(
    stream: &mut futures::stream::BoxStream<'static, WatchEvent>,
    mut done: impl FnMut(&WatchEvent) -> bool,
) -> Vec<WatchEvent> {
    let mut seen = Vec::new();
    tokio::time::timeout(CEILING, async {
        while let Some(e) = stream.next().await {
            let stop = done(&e);
            seen.push(e);
            if stop {
                return;
            }
        }
        panic!("the stream ended: {seen:?}");
    })
    .await
    .expect("bounded: the expected events came within the ceiling");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_lists_hold_what_fetch_reads() {
    let server = TestServer::start().unwrap();
    let client = client(&server, "admin").await;
    let fetched = fetch_inventory(&client, &FetchOptions::default())
        .await
        .unwrap();
    // snapshot and serve read one list of kinds: fetch lists exactly the
    // resources the watch watches.
    let fetched_resources: BTreeSet<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .filter_map(|r| r.path.rsplit('/').next().map(str::to_string))
        .collect();
    let all: BTreeSet<String> = ObjectKind::ALL
        .iter()
        .map(|k| k.resource().to_string())
        .collect();
    assert_eq!(fetched_resources, all);
    let mut stream = watch_cluster(&client, ObjectKind::ALL, &WatchOptions::default());
    let mut pending: BTreeSet<ObjectKind> = ObjectKind::ALL.iter().copied().collect();
    let events = read_until(&mut stream, |e| {
        match e {
            WatchEvent::Listed { kind, .. } => pending.remove(kind),
            WatchEvent::Unreadable { kind, .. } => pending.remove(kind),
            _ => false,
        };
        pending.is_empty()
    })
    .await;
    drop(stream);
    let mut listed: BTreeMap<ObjectKind, Vec<ObjectKey>> = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut unreadable = BTreeMap::new();
    for e in events {
        match e {
            WatchEvent::Listed {
                kind,
                objects,
                warnings: w,
            } => {
                assert!(
                    listed
                        .insert(kind, objects.iter().map(|o| o.key()).collect())
                        .is_none(),
                    "{kind:?} listed twice"
                );
                warnings.extend(w);
            }
            WatchEvent::Unreadable {
                kind,
                unreadable: u,
            } => {
                unreadable.insert(kind.resource().to_string(), (u.code, u.reason));
            }
            other => panic!("before the first lists: {other:?}"),
        }
    }
    for kind in ObjectKind::ALL {
        if unreadable.contains_key(kind.resource()) {
            continue;
        }
        assert_eq!(
            listed[kind].len(),
            fetched.inventory.count(*kind),
            "{kind:?}: watched list and fetch differ"
        );
    }
    assert!(listed[&ObjectKind::Pod].len() > 3, "{listed:?}");
    let fetched_unreadable: BTreeMap<String, (u16, String)> = fetched
        .unreadable
        .iter()
        .map(|u| (u.resource.clone(), (u.code, u.reason.clone())))
        .collect();
    assert_eq!(unreadable, fetched_unreadable);
    let mut fetched_warnings: Vec<String> = fetched
        .inventory
        .warnings
        .iter()
        .filter(|w| w.starts_with("api:"))
        .cloned()
        .collect();
    fetched_warnings.sort();
    warnings.sort();
    assert_eq!(warnings, fetched_warnings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_watch_then_410_gone_then_a_full_relist() {
    let server = TestServer::start().unwrap();
    // The first watch replays the recorded create, bind, run and delete of
    // shop/watch-demo; the second is told its resourceVersion is too old.
    server
        .answer_fixture(
            "GET",
            "/api/v1/pods",
            &[("watch", "true")],
            "watch/pods-create-delete.json",
            Some(1),
        )
        .unwrap();
    server
        .answer_fixture(
            "GET",
            "/api/v1/pods",
            &[("watch", "true")],
            "watch/pods-rv1-too-old.json",
            Some(1),
        )
        .unwrap();
    let client = client(&server, "admin").await;
    let mut stream = watch_cluster(&client, &[ObjectKind::Pod], &WatchOptions::default());
    let mut lists = 0;
    let events = read_until(&mut stream, |e| {
        if matches!(e, WatchEvent::Listed { .. }) {
            lists += 1;
        }
        lists == 2
    })
    .await;
    drop(stream);
    let demo = |e: &WatchEvent| -> Option<String> {
        let (what, o) = match e {
            WatchEvent::Applied(o) => ("applied", o),
            WatchEvent::Deleted(o) => ("deleted", o),
            _ => return None,
        };
        Some(format!("{what} {}", o.key()))
    };
    let changes: Vec<String> = events.iter().filter_map(demo).collect();
    // The recorded objects carry managedFields; the model never holds it.
    let recorded = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/fixtures/watch/pods-create-delete.json"),
    )
    .unwrap();
    assert!(recorded.contains("managedFields"));
    let objects = events.iter().flat_map(|e| match e {
        WatchEvent::Applied(o) | WatchEvent::Deleted(o) => std::slice::from_ref(o),
        WatchEvent::Listed { objects, .. } => objects.as_slice(),
        _ => &[],
    });
    for o in objects {
        assert_eq!(o.metadata().managed_fields, None, "{}", o.key());
    }
    assert_eq!(
        changes.first().map(String::as_str),
        Some("applied Pod/shop/watch-demo"),
        "{changes:?}"
    );
    assert_eq!(
        changes.last().map(String::as_str),
        Some("deleted Pod/shop/watch-demo"),
        "{changes:?}"
    );
    let first = events
        .iter()
        .position(|e| matches!(e, WatchEvent::Listed { .. }))
        .unwrap();
    assert_eq!(first, 0, "the list comes first: {events:?}");
    let (WatchEvent::Listed { objects: a, .. }, WatchEvent::Listed { objects: b, .. }) =
        (&events[0], events.last().unwrap())
    else {
        unreachable!()
    };
    // The re-list after 410 is the whole list again.
    let keys = |v: &Vec<podplace_model::inventory::Object>| {
        v.iter().map(|o| o.key()).collect::<BTreeSet<_>>()
    };
    assert_eq!(keys(a), keys(b));
    let relists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods" && r.query_value("watch").is_none())
        .collect();
    assert_eq!(relists.len(), 2, "one list, one re-list after 410");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_kind_is_reported_once() {
    let server = TestServer::start().unwrap();
    let client = client(&server, "pod-lister").await;
    let mut stream = watch_cluster(&client, &[ObjectKind::Node], &WatchOptions::default());
    let first = read_until(&mut stream, |_| true).await;
    let WatchEvent::Unreadable { kind, unreadable } = &first[0] else {
        panic!("{first:?}");
    };
    assert_eq!(*kind, ObjectKind::Node);
    assert_eq!(unreadable.code, 403);
    assert!(unreadable.reason.contains("forbidden"), "{unreadable:?}");
    // Retried with the backoff (0.8 s, then 1.6 s): nothing more is said.
    let more = tokio::time::timeout(Duration::from_secs(3), stream.next()).await;
    assert!(more.is_err(), "said again: {more:?}");
    let lists = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/nodes")
        .count();
    assert!(
        (2..=4).contains(&lists),
        "backoff between retries: {lists} lists"
    );
}
