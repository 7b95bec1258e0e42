//! The small integer ids the engine hands out: nodes, pods, shared affinity
//! terms and topology groups.

/// Index of a node in the cluster state (node order is load order; removing
/// a node moves the last node into its slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// As an index into per-node tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a pod in the cluster state: stable for the pod's lifetime; the
/// slot of a removed pod is reused (oldest freed first) by a later pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodId(pub u32);

impl PodId {
    /// As an index into per-pod tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A pod's id together with the generation of its slot, for holders that
/// keep an id across events (a watch's uid map, a what-if's victims): once
/// the pod is removed and its slot reused, [`crate::ClusterState::resolve`]
/// says the handle is stale instead of naming the new pod.
///
/// [`PodId`] itself stays the bare slot index (every per-pod table, the
/// world's columns included, is indexed by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PodHandle {
    pub(crate) id: PodId,
    pub(crate) generation: u32,
}

/// Index of a distinct affinity term (identical terms of many pods share one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TermId(pub u32);

/// Index of a [`crate::groups::TopologyGroup`] (reused once the group is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(pub u32);

impl GroupId {
    /// As an index into the group table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
