//! podplace-serve's integration tests, one binary (each file used to be a
//! binary of its own, and every binary is a link on CI's two cores):
//! - `admission`: reviews answered from the stories' worlds, and the review
//!   cache's views against reviews from scratch;
//! - `explain`: the `PodplaceWhy` explainer over worlds built from files;
//! - `ha`: the HA watch's findings and Events, and its incremental ticks;
//! - `sync`: the sync task against generated watch streams;
//! - `webhook`: the webhook over HTTPS (ready gate, certificate reload,
//!   bounds, a review end to end).

mod admission;
mod explain;
mod ha;
mod sync;
mod webhook;
