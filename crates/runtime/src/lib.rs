//! Acting on a live cluster: what `podplace rebalance --execute
//! [--interval]` runs, and what `podplace serve` reuses.
//!
//! The planner ([`podplace_rebalance`]) is pure: it plans on a world and
//! proves every move. This crate reads the world from a cluster, carries a
//! plan out and runs the loop:
//!
//! - [`live`]: carrying a plan out through the Eviction API, checking every
//!   landing and planning again within what the run has left of its limits;
//! - [`daemon`]: the in-cluster loop with leader election on a Lease,
//!   `/healthz` and [`metrics`].

pub mod daemon;
pub mod error;
pub mod live;
pub mod metrics;

pub use error::Error;
