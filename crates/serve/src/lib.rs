//! `podplace serve`: podplace always on, inside the cluster.
//!
//! One process keeps one [`World`](podplace_world::World) up to date from
//! watches on every kind `podplace snapshot` reads ([`sync`]), and the
//! features read it through [`shared::Model`]:
//!
//! - [`explain`]: a Pending pod gets a `PodplaceWhy` Event naming what
//!   blocks it and the first verified fix;
//! - [`ha`]: high-availability findings as Events on the workload and as
//!   metrics ([`metrics`]);
//! - [`admission`]: a validating webhook that answers `kubectl apply` with
//!   lint warnings computed against the live cluster.
//!
//! Acting parts (Events, evictions) run on the Lease holder only; [`run`]
//! is the process that wires it all together ([`serve`]).

pub mod admission;
pub mod explain;
pub mod ha;
pub mod metrics;
pub mod run;
pub mod shared;
pub mod sync;

pub use run::{serve, Error, RebalanceOptions, ServeOptions, WebhookConfig};
