//! `podplace-lint`'s rules on their fixtures and on the stories, SARIF
//! output, and a lint-time measurement.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod bench;
mod fixtures;
mod installs;
mod profile;
mod sarif;
mod stories;
mod support;
mod volumes;
