//! Waiting on conditions with deadlines (never fixed sleeps), and a timeline
//! of what a test did, printed with the components' logs when it fails.

use std::fmt::{Display, Write as _};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

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
