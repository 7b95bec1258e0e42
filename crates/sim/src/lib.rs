//! `podplace simulate`: replays a scenario (scale, drain, node loss,
//! rollouts, waits) through simulated time on top of the scheduling engine,
//! with the Kubernetes controllers' own rules, and reports where every pod
//! is after each step and what went wrong.
//!
//! - [`controllers`]: the controllers' arithmetic as pure functions, so
//!   lint and rebalance can ask the same questions without a simulation;
//! - [`sim::Simulation`]: the world in time — pods, owners, readiness,
//!   grace periods, node failures, drains — with a step API;
//! - [`scenario`]: the scenario file; [`runner`]: replaying it;
//! - [`findings`] and [`report`]: what each step reports;
//! - [`kubectl`]: what `kubectl set image` and `rollout restart` change;
//! - [`rollout::simulate_rollout`]: "does this Deployment's next rolling
//!   update complete, and if not, which strategy change fixes it?".

pub mod controllers;
pub mod findings;
pub mod kubectl;
pub mod report;
pub mod rollout;
pub mod runner;
pub mod scenario;
pub mod sim;
pub mod time;

pub use rollout::{simulate_rollout, RolloutChange, RolloutResult, Stall};
pub use runner::{run, run_with, Extensions, NoExtensions, Run};
pub use scenario::{Scenario, Step};
pub use sim::{Options, SimError, Simulation, WorkloadId};
