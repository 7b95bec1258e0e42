//! `podplace simulate`: the story scenarios, pod lifecycle, and rollouts as
//! the API drives them.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod controllers;
mod lifecycle;
mod rollout_api;
mod stories;
mod volumes;
