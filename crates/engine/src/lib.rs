//! The scheduling engine.
