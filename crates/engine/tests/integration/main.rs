//! The scheduling engine against kube-scheduler: the conformance corpus,
//! table-driven plugin semantics, and incremental indexes against from-
//! scratch builds.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod conformance;
mod early_stop;
mod incremental;
mod lifecycle;
mod overlay;
mod plugins;
mod storage_updates;
mod support;
mod templates;
mod threads;
