//! Benchmark of podplace over generated clusters.
//!
//! [`generate`] builds a deterministic snapshot of a large cluster (nodes in
//! zones and racks, namespaces, ReplicaSets, running pods with a realistic
//! mix of pod (anti-)affinity, topology spread and node affinity, and a batch
//! of pending pods), [`snapshot`] writes it as one `v1 List` in JSON and YAML,
//! and [`measure`] loads such a file through podplace's loader, builds the
//! engine's cluster and places the pending pods, timing each step and reading
//! the process's peak memory. [`storage`] adds StatefulSet-like claims and
//! their PersistentVolumes (`--volumes N`).

pub mod ci;
pub mod generate;
pub mod loads;
pub mod measure;
pub mod memory;
pub mod placement;
pub mod replicas;
pub mod rng;
pub mod scale_args;
pub mod serve;
pub mod serve_features;
pub mod serve_live;
pub mod serve_sync;
pub mod snapshot;
pub mod storage;
