//! Acting on a cluster: story 2 executed against the test API server, the
//! policy's limits held across replans (a property test against a cluster
//! of the test's own), leader election and `/healthz`, the Helm chart's RBAC.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod budgets;
mod chart;
mod live;
