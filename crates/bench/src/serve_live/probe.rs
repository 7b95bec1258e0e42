//! When the sync applied an event, seen from its input: a wrapper of the
//! watch stream that notes when each event was handed over and when the
//! batch holding it was applied.
//!
//! [`Sync::run`](podplace_serve::sync::Sync::run) takes one event (waiting),
//! then every event already waiting (polls that return at once), applies
//! that batch under the model's write lock and only then polls again. So,
//! after an event was handed over, the first poll that finds nothing
//! waiting closes its batch (or the batch reached `max_batch`), and the
//! next poll comes when the batch is applied: the time between the two is
//! the model's apply (write lock, every change, the object counts). The
//! bench checks afterwards that the model shows the change, so a change in
//! how the sync batches could not go unnoticed.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::{Stream, StreamExt};
use podplace_kube::WatchEvent;
use podplace_model::inventory::ObjectKey;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// One applied batch.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The objects of its events (none for lists and failures), with when
    /// each was handed to the sync.
    pub events: Vec<(Option<ObjectKey>, Instant)>,
    /// When the sync found nothing more waiting: the apply starts.
    pub closed: Instant,
    /// When it asked for the next event: the apply is done.
    pub applied: Instant,
}

/// The wrapped stream (see the module doc).
pub struct Probe<S> {
    inner: S,
    max_batch: usize,
    batch: Vec<(Option<ObjectKey>, Instant)>,
    closed: Option<Instant>,
    tx: UnboundedSender<Batch>,
}

impl<S> Probe<S> {
    /// Wraps `inner` for a sync applying at most `max_batch` events at a
    /// time; the batches come out of the receiver as they are applied.
    pub fn wrap(inner: S, max_batch: usize) -> (Probe<S>, UnboundedReceiver<Batch>) {
        let (tx, rx) = unbounded_channel();
        let probe = Probe {
            inner,
            max_batch: max_batch.max(1),
            batch: Vec::new(),
            closed: None,
            tx,
        };
        (probe, rx)
    }
}

/// The object an event is about.
fn key(e: &WatchEvent) -> Option<ObjectKey> {
    match e {
        WatchEvent::Applied(o) | WatchEvent::Deleted(o) => Some(o.key()),
        WatchEvent::Skipped { key, .. } => Some(key.clone()),
        _ => None,
    }
}

impl<S: Stream<Item = WatchEvent> + Unpin> Stream for Probe<S> {
    type Item = WatchEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        let this = &mut *self;
        if let Some(closed) = this.closed.take() {
            let events = std::mem::take(&mut this.batch);
            // Nobody listening any more: nothing to tell.
            let _ = this.tx.send(Batch {
                events,
                closed,
                applied: Instant::now(),
            });
        }
        let r = this.inner.poll_next_unpin(cx);
        let now = Instant::now();
        match &r {
            Poll::Ready(Some(e)) => {
                this.batch.push((key(e), now));
                if this.batch.len() >= this.max_batch {
                    this.closed = Some(now);
                }
            }
            _ => {
                if !this.batch.is_empty() {
                    this.closed = Some(now);
                }
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use podplace_model::inventory::{Object, ObjectKind};
    use podplace_serve::shared::Model;
    use podplace_serve::sync::{Sync, SyncMetrics, SyncOptions};
    use podplace_world::{SchedulerSetup, World};

    use super::*;

    fn pod(name: &str) -> Object {
        Object::Pod(Pod {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some("default".to_string()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".to_string(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        })
    }

    /// The real sync over a channel: each event sent comes back in an
    /// applied batch, after which the model holds it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_event_is_reported_once_the_model_holds_it() {
        let (send, events) = futures::channel::mpsc::unbounded::<WatchEvent>();
        let (probe, mut batches) = Probe::wrap(events, 1024);
        let model = Arc::new(Model::new(World::empty(&SchedulerSetup::default(), 0)));
        let sync = Sync::new(
            model.clone(),
            SyncOptions::default(),
            SyncMetrics::default(),
        );
        let task = tokio::spawn(sync.run(probe));
        for kind in ObjectKind::ALL {
            send.unbounded_send(WatchEvent::Listed {
                kind: *kind,
                objects: Vec::new(),
                warnings: Vec::new(),
            })
            .expect("sent");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !model.ready() {
            assert!(Instant::now() < deadline, "the model never got ready");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while batches.try_recv().is_ok() {}
        for name in ["a", "b", "c"] {
            let sent = Instant::now();
            let o = pod(name);
            let want = o.key();
            send.unbounded_send(WatchEvent::Applied(o)).expect("sent");
            let batch = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    let b = batches.recv().await.expect("batches");
                    if b.events.iter().any(|(k, _)| k.as_ref() == Some(&want)) {
                        return b;
                    }
                }
            })
            .await
            .expect("the batch was reported");
            let (_, handed) = batch.events[0];
            assert!(sent <= handed && handed <= batch.closed && batch.closed <= batch.applied);
            assert!(model.read().pod_id("default", name).is_some(), "{name}");
        }
        task.abort();
    }
}
