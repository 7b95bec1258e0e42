//! `podplace`'s commands end to end, as a user runs them: the real binary on
//! the story manifests, descheduler policies and the test API server.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod added_affinity;
mod bounds;
mod counted;
mod hostile;
mod installs;
mod kubectl_habits;
mod lint;
mod live_cases;
mod place;
mod profile_filters;
mod rebalance;
mod rebalance_interval;
mod scheduler_config;
mod simulate;
mod snapshot;
mod support;
mod tied;
mod why;
mod why_select;
mod why_volumes;
