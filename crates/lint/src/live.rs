//! What every lint run over the same live world shares
//! ([`LiveIndex`]): `podplace serve` answers each admission review with
//! the lint rules over its live model, and all but the reviewed object is
//! the same from one review to the next until the model changes — the
//! live workloads' templates compiled, the running pods grouped into
//! members, the namespaces' labels, workload resolution, and each
//! workload's pods (the rollout replay's own pods). Built once per model
//! generation; [`crate::world::World::over_indexed`] reads it.

use podplace_engine::{ClusterState, PodId};
use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::workloads::{WorkloadRef, Workloads};
use podplace_world::World as Base;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::world::{self, Member, OwnedGroupKey};
use crate::LintError;

/// What runs over one live world share (see the module doc). It answers
/// for the world it was built from only: build a new one when the world
/// changes.
pub struct LiveIndex {
    /// The live state without its pods, with the live templates' strings.
    pub(crate) state: ClusterState,
    /// The live templates, then the live pods grouped.
    pub(crate) members: Vec<Member>,
    /// Workloads that have a template among `members`.
    pub(crate) templates: FxHashSet<WorkloadRef>,
    /// Each live pod group's index in `members`.
    pub(crate) groups: FxHashMap<OwnedGroupKey, usize>,
    /// Namespace labels (declared, or the API server's name label).
    pub(crate) namespaces: FxHashMap<Sym, Labels>,
    /// Workload resolution over the live ReplicaSets and Jobs.
    pub(crate) workloads: Workloads,
    /// Each workload's live pods.
    pub(crate) pods_of: FxHashMap<WorkloadRef, Vec<PodId>>,
    /// Each node's index in the live inventory, by name.
    pub(crate) node_objects: FxHashMap<String, usize>,
}

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("members", &self.members.len())
            .field("groups", &self.groups.len())
            .finish_non_exhaustive()
    }
}

impl LiveIndex {
    /// Everything runs over `live` share, computed from `live` as it is.
    pub fn new(live: &Base) -> Result<LiveIndex, LintError> {
        let mut state = live.state().without_pods();
        let mut members = world::live_templates(&mut state, live)?;
        let templates = members.iter().map(|m| m.workload.clone()).collect();
        let groups = world::live_groups(live, &mut members);
        let namespaces = world::live_namespaces(&mut state, &members);
        let mut pods_of: FxHashMap<WorkloadRef, Vec<PodId>> = FxHashMap::default();
        for (id, _) in live.state().live_pods() {
            pods_of
                .entry(live.workload(id).into_owned())
                .or_default()
                .push(id);
        }
        let node_objects = node_objects(live);
        Ok(LiveIndex {
            state,
            members,
            templates,
            groups,
            namespaces,
            workloads: world::live_workloads(live),
            pods_of,
            node_objects,
        })
    }

    /// The live pods of `workload`.
    pub fn pods_of(&self, workload: &WorkloadRef) -> &[PodId] {
        self.pods_of.get(workload).map_or(&[], Vec::as_slice)
    }
}

/// Each node's index in `live`'s inventory, by name.
pub(crate) fn node_objects(live: &Base) -> FxHashMap<String, usize> {
    live.inventory()
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.object.metadata.name.clone().map(|name| (name, i)))
        .collect()
}
