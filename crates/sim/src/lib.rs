//! `podplace simulate`: replays a scenario (scale, drain, node loss,
//! rollouts, waits) through simulated time on top of the scheduling engine,
//! with the Kubernetes controllers' own rules, and reports where every pod
//! is after each step and what went wrong.
//!
//! [`controllers`] holds the controllers' arithmetic as pure functions, so
//! that lint and rebalance can ask the same questions without a simulation.

pub mod controllers;
