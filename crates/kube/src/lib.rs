//! podplace's only door to a live cluster, on kube-rs.
//!
//! Everything else in podplace is pure and works from files; this crate
//! turns a user's kubeconfig into a [`kube::Client`] ([`connect`]), lists
//! the cluster into the model's [`Inventory`](podplace_model::inventory::Inventory)
//! ([`fetch_inventory`]), writes it as one `v1 List` ([`snapshot`]), evicts
//! pods through the policy/v1 Eviction API ([`evict()`]) and elects a leader
//! with a coordination.k8s.io/v1 Lease ([`LeaderElector`]), and watches
//! every kind it lists for `podplace serve` ([`watch_cluster`]).
//!
//! With the `testserver` feature, [`testserver`] serves the recorded
//! responses of a real v1.36 API server so that every caller can be tested
//! end to end without a cluster.

pub mod bounded;
mod connect;
mod error;
pub mod events;
mod evict;
mod fetch;
mod lease;
pub mod snapshot;
#[cfg(feature = "testserver")]
pub mod testserver;
pub mod watch;

pub use bounded::ApiLimits;
pub use connect::{connect, connect_with, ConnectOptions};
pub use error::Error;
pub use evict::{evict, evict_uid, EvictionOutcome};
pub use fetch::{fetch_inventory, list_pods, FetchOptions, Fetched, Unreadable};
pub use lease::{LeaderElector, LeaderState, LeaseConfig};
pub use watch::{watch_cluster, watch_limits, WatchEvent, WatchOptions};

/// The kube-rs client type callers hold, re-exported so they need no
/// direct dependency on `kube`.
pub use kube::Client;
