//! The rebalancer: story 2's plan, descheduler policies, no flapping, live
//! runs against the test API server, the Helm chart's RBAC and simulate's
//! rebalance step.
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod budgets;
mod chart;
mod drift;
mod live;
mod no_flapping;
mod policies;
mod simulate;
