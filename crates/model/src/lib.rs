//! Cluster state for podplace: the typed objects of a world ([`inventory`]),
//! and the compact, interned form the engine schedules against
//! ([`objects`], [`selector`], [`labels`], [`intern`], [`quantity`]).

pub mod cow;
pub mod expand;
pub mod intern;
pub mod intstr;
pub mod inventory;
pub mod labels;
pub mod load;
pub mod naming;
pub mod objects;
pub mod pdb;
pub mod pod_list;
pub mod pod_summary;
pub mod quantity;
pub mod resym;
pub mod selector;
pub mod spread_selectors;
pub mod storage;
pub mod terms;
pub mod validate;
pub mod workloads;
