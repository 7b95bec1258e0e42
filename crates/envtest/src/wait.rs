//! Waiting on conditions with deadlines (never fixed sleeps), and a timeline
//! of what a test did, printed with the components' logs when it fails.

use std::fmt::{Display, Write as _};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::{Api, Client};

use crate::error::{Error, Result};

/// Waits (30 s at most, polling every `poll`) until namespace `ns` has its
/// `default` ServiceAccount: the API server refuses pods in a namespace
/// before kube-controller-manager has made it.
pub async fn wait_default_service_account(client: &Client, ns: &str, poll: Duration) -> Result<()> {
    let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    wait_until(
        format_args!("namespace {ns}'s default ServiceAccount"),
        Duration::from_secs(30),
        poll,
        || {
            let sa = sa.clone();
            async move { sa.get_opt("default").await.map(|o| o.map(|_| ())) }
        },
    )
    .await
}

/// Polls `check` every `poll` until it returns `Ok(Some(value))`, and returns
/// that value; fails naming `what` when `deadline` passes first. `Ok(None)`
/// means "not yet"; an `Err` is remembered (not fatal: the API server may be
/// restarting) and reported with the timeout.
pub async fn wait_until<T, E, F, Fut>(
    what: impl Display,
    deadline: Duration,
    poll: Duration,
    mut check: F,
) -> Result<T>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, E>>,
{
    let start = Instant::now();
    loop {
        let last_error = match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        };
        if start.elapsed() >= deadline {
            let mut msg = format!("timed out after {deadline:?} waiting for {what}");
            if let Some(e) = last_error {
                let _ = write!(msg, " (last error: {e})");
            }
            return Err(Error(msg));
        }
        tokio::time::sleep(poll.min(deadline.saturating_sub(start.elapsed()))).await;
    }
}

/// Timestamped notes of what happened during a run (test steps, simulator
/// actions), shared by clones. Printed when a test fails, so a failure shows
/// its own history next to the components' log tails.
#[derive(Clone)]
pub struct Timeline {
    start: Instant,
    notes: Arc<Mutex<Vec<(Duration, String)>>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    /// An empty timeline whose clock starts now.
    pub fn new() -> Timeline {
        Timeline {
            start: Instant::now(),
            notes: Arc::default(),
        }
    }

    /// Records `what` at the current time.
    pub fn note(&self, what: impl Display) {
        let at = self.start.elapsed();
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, what.to_string()));
    }

    /// The number of notes so far: pass it to [`Timeline::render_since`] to
    /// print only what one test added.
    pub fn mark(&self) -> usize {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The notes from index `mark` on, one per line, `[  12.345s] what`.
    pub fn render_since(&self, mark: usize) -> String {
        let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for (at, what) in notes.iter().skip(mark) {
            let _ = writeln!(out, "[{:>9.3}s] {what}", at.as_secs_f64());
        }
        out
    }

    /// Every note, as [`Timeline::render_since`] renders them.
    pub fn render(&self) -> String {
        self.render_since(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_until_returns_the_value_once_ready() {
        let mut calls = 0;
        let v = wait_until(
            "three calls",
            Duration::from_secs(5),
            Duration::from_millis(1),
            || {
                calls += 1;
                let n = calls;
                async move { Ok::<_, String>((n == 3).then_some(n)) }
            },
        )
        .await
        .expect("ready");
        assert_eq!(v, 3);
    }

    #[tokio::test]
    async fn wait_until_names_what_it_waited_for_and_the_last_error() {
        let err = wait_until(
            "the moon",
            Duration::from_millis(30),
            Duration::from_millis(5),
            || async { Err::<Option<()>, _>("connection refused") },
        )
        .await
        .expect_err("times out");
        assert!(
            err.0
                .starts_with("timed out after 30ms waiting for the moon"),
            "{err}"
        );
        assert!(err.0.ends_with("(last error: connection refused)"), "{err}");
    }

    #[test]
    fn timeline_renders_notes_since_a_mark() {
        let t = Timeline::new();
        t.note("first");
        let mark = t.mark();
        t.note("second");
        let text = t.render_since(mark);
        assert!(
            text.ends_with("s] second\n") && !text.contains("first"),
            "{text}"
        );
        assert_eq!(t.render().lines().count(), 2);
    }
}
