//! Keeping the model up to date: one kube-rs watch per kind, each event
//! applied to the world incrementally, a re-list reconciled without losing
//! or doubling objects.
