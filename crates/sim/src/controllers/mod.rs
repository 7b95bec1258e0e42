//! The workload controllers' decisions as pure functions of their inputs:
//! how many pods each ReplicaSet should have during a rolling update, which
//! pod a ReplicaSet deletes first, in which order a StatefulSet creates and
//! updates its pods, which DaemonSet pod goes next.

pub mod daemonset;
pub mod deployment;
pub mod replicaset;
pub mod statefulset;
