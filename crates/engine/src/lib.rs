//! The scheduling engine: kube-scheduler v1.36's default profile over a
//! [`cluster::Cluster`] whose affinity and spread counts are kept
//! incrementally, so whole-cluster what-ifs take seconds.

pub mod cluster;
pub mod conformance;
pub mod explain_support;
pub mod framework;
pub mod message;
pub mod placement;
pub mod plugins;
pub mod statics;
pub mod status;
pub mod topology;
