//! The planner: story 2's plan, descheduler policies, no flapping and
//! simulate's rebalance step (acting on a cluster is podplace-runtime's).
//!
//! Each integration test file is a module of this one test binary, so the
//! crate links its tests once instead of once per file.

mod descheduler;
mod drift;
mod fewest;
mod no_flapping;
mod policies;
mod sim_waves;
mod simulate;
mod volumes;
