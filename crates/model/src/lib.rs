//! Cluster state for podplace.
