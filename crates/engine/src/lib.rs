//! The scheduling engine: kube-scheduler v1.36's default profile over a
//! [`ClusterState`] whose affinity and spread counts are kept incrementally
//! in topology groups, so whole-cluster what-ifs take seconds.
//!
//! - [`state`]: nodes, pods, accounting and lookups; changed by add,
//!   update, remove, bind and unbind, read with `&self`.
//! - [`groups`]: the one topology-group type every count lives in.
//! - [`cache`]: what scheduling caches between cycles ([`SchedulerCache`]).
//! - [`cycle`]: one scheduling cycle ([`schedule`]); [`plugins`] are its steps.
//! - [`place`]: building the state of a world and placing its pending pods.
//!
//! ```
//! use k8s_openapi::api::core::v1 as core;
//! use podplace_engine::{place_all, build_state, PlaceOptions, SchedulerCache};
//! use podplace_model::inventory::{Inventory, Origin, Sourced};
//!
//! let node: core::Node = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
//!     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
//! })).unwrap();
//! let pod: core::Pod = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "web", "namespace": "default"},
//!     "spec": {"containers": [{"name": "c", "image": "nginx",
//!         "resources": {"requests": {"cpu": "1"}}}]}
//! })).unwrap();
//! let mut inventory = Inventory::default();
//! let origin = Origin { file: String::new(), line: 0, column: 0 };
//! inventory.nodes.push(Sourced { object: node, origin: origin.clone() });
//! inventory.pods.push(Sourced { object: pod, origin });
//!
//! let (mut state, pending) = build_state(&inventory).unwrap();
//! let mut cache = SchedulerCache::new();
//! let placed = place_all(&mut state, &mut cache, &pending, PlaceOptions::default());
//! assert_eq!(placed[0].node, state.node_id("n1"));
//! ```

pub mod cache;
pub mod conformance;
pub mod cycle;
pub mod explain_support;
pub mod fit_verdicts;
pub mod groups;
pub mod ids;
pub mod message;
pub mod names;
pub mod place;
pub mod plugins;
pub mod profile;
pub mod sampling;
pub mod state;
pub mod statics;
pub mod status;
pub mod template;
pub mod topology;

pub use cache::SchedulerCache;
pub use cycle::{schedule, schedule_choice, schedule_watching, Choice, Outcome, Verdict};
pub use groups::{GroupKey, TopologyGroup};
pub use ids::{GroupId, NodeId, PodHandle, PodId, TermId};
pub use place::{build_state, build_state_taking, place_all, BuildError, PlaceOptions, Placement};
pub use profile::{Profile, SchedulerSetup};
pub use state::terms::{HeldKind, PodTerms, TermKind};
pub use state::{
    ClusterState, CompactError, NodeInfo, PodEntry, StateStats, StorageChange, StorageKind,
    StorageObject, SymRemap,
};
