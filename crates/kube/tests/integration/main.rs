//! podplace-kube's integration tests, one binary (each test file used to be
//! its own binary, and every binary is a link on CI's two cores):
//! - `bounds`: every API request is bounded in time and memory;
//! - `events`: the Event recorder (series, budgets, notes under 1 KB);
//! - `live`: the live-cluster code against the recorded-response test server;
//! - `watch`: the watch stream against the recorded-response test server.

mod bounds;
mod events;
mod live;
mod watch;
