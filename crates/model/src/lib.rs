//! Cluster state for podplace: the typed objects of a world ([`inventory`]),
//! and the compact, interned form the engine schedules against.

pub mod inventory;
