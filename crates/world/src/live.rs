//! The indexes a watch-fed world keeps so that one change costs the object
//! and what it touches, never a walk over every pod: where each object sits
//! in its kind's inventory list, which pods a ReplicaSet or Job controls
//! (their workload row follows the controller's owner), which pods name a
//! node the world does not have yet, and which pods are pending per
//! namespace (their default spread follows Services and controllers).

use k8s_openapi::api::core::v1 as core;
use podplace_engine::{ClusterState, PodId};
use podplace_model::cow::Sharded;
use podplace_model::inventory::{Inventory, ObjectKey, ObjectKind};
use rustc_hash::FxHashSet;

use crate::World;

/// A controller whose pods' workload row depends on it: a ReplicaSet (its
/// Deployment) or a Job (its CronJob), by kind, namespace and name.
pub(crate) type ControllerKey = (ObjectKind, String, String);

/// The indexes (see the module doc). Each is sharded copy-on-write: a
/// copy of the world (serve's admission view) shares them, and the next
/// change copies one shard.
#[derive(Debug, Clone, Default)]
pub(crate) struct Live {
    /// Position of each object in its kind's inventory list.
    pub(crate) at: Sharded<ObjectKey, usize>,
    /// Pods by the ReplicaSet or Job that controls them.
    pub(crate) owned: Sharded<ControllerKey, FxHashSet<PodId>>,
    /// Pods whose `spec.nodeName` names a node the world does not have, by
    /// that name: bound when the node arrives.
    pub(crate) waiting: Sharded<String, FxHashSet<PodId>>,
    /// Pending pods (alive, unbound, not finished) by namespace.
    pub(crate) pending: Sharded<String, FxHashSet<PodId>>,
}

/// The namespace of an API object as keys spell it (`default` when unset).
pub(crate) fn namespace_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> &str {
    meta.namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
}

/// The ReplicaSet or Job controlling an API pod, if any.
pub(crate) fn controller_of(pod: &core::Pod) -> Option<ControllerKey> {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))?;
    let kind = match owner.kind.as_str() {
        "ReplicaSet" => ObjectKind::ReplicaSet,
        "Job" => ObjectKind::Job,
        _ => return None,
    };
    Some((
        kind,
        namespace_of(&pod.metadata).to_string(),
        owner.name.clone(),
    ))
}

/// The node an API pod says it is bound to (`spec.nodeName`), if any.
pub(crate) fn named_node(pod: &core::Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Whether a live pod of the state is pending (unbound, not finished).
pub(crate) fn is_pending(state: &ClusterState, id: PodId) -> bool {
    state
        .pod_entry(id)
        .is_some_and(|e| e.node.is_none() && !e.pod.finished)
}

impl Live {
    /// The indexes of a world, built once (an observed world at its
    /// initial sync, or a built world at its first change).
    pub(crate) fn index(world: &World) -> Live {
        let inventory = world.inventory();
        let mut live = Live::keyed(inventory);
        let state = world.state();
        for (id, row) in world.pods().iter() {
            // A packed pod is decoded for this and not kept.
            let Some(api) = row.api.and_then(|i| inventory.pods.object(i)) else {
                if is_pending(state, id) {
                    live.track(state, id);
                }
                continue;
            };
            live.note_pod(state, id, &api);
        }
        live
    }

    /// Only the keyed index of `inventory`'s objects (each object's
    /// position in its kind's list), the part every build starts from.
    pub(crate) fn keyed(inventory: &Inventory) -> Live {
        let mut live = Live::default();
        for &kind in ObjectKind::ALL {
            for i in 0..inventory.count(kind) {
                if let Some(meta) = inventory.metadata_at(kind, i) {
                    live.at.insert(ObjectKey::of(kind, &meta), i);
                }
            }
        }
        live
    }

    /// Indexes one pod that was added or updated (`api` its object now).
    pub(crate) fn note_pod(&mut self, state: &ClusterState, id: PodId, api: &core::Pod) {
        if let Some(c) = controller_of(api) {
            self.owned
                .get_or_insert_with(c, Default::default)
                .insert(id);
        }
        if let Some(n) = named_node(api) {
            if state.pod_node(id).is_none() && state.node_id(n).is_none() {
                self.waiting
                    .get_or_insert_with(n.to_string(), Default::default)
                    .insert(id);
            }
        }
        self.track(state, id);
    }

    /// Forgets one pod's entries as `api` (its object before) made them.
    pub(crate) fn forget_pod(&mut self, id: PodId, api: &core::Pod) {
        if let Some(c) = controller_of(api) {
            remove_from(&mut self.owned, &c, id);
        }
        if let Some(n) = named_node(api) {
            remove_from(&mut self.waiting, n, id);
        }
        remove_from(&mut self.pending, namespace_of(&api.metadata), id);
    }

    /// Puts a pod in or out of its namespace's pending set as the state
    /// says it is now.
    pub(crate) fn track(&mut self, state: &ClusterState, id: PodId) {
        let Some(entry) = state.pod_entry(id) else {
            return;
        };
        let ns = state.interner().resolve(entry.pod.namespace);
        if is_pending(state, id) {
            // Looked at first: a shard shared with a copy is copied only
            // to change.
            if !self.pending.get(ns).is_some_and(|set| set.contains(&id)) {
                self.pending
                    .get_or_insert_with(ns.to_string(), Default::default)
                    .insert(id);
            }
        } else {
            remove_from(&mut self.pending, ns, id);
        }
    }
}

/// Removes `id` from the set under `key`, and the set once empty.
pub(crate) fn remove_from<K, Q>(map: &mut Sharded<K, FxHashSet<PodId>>, key: &Q, id: PodId)
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq + Clone,
    Q: std::hash::Hash + Eq + ?Sized,
{
    // Looked at first: a shard shared with a copy is copied only to change.
    if !map.get(key).is_some_and(|set| set.contains(&id)) {
        return;
    }
    if let Some(set) = map.get_mut(key) {
        set.remove(&id);
        if set.is_empty() {
            map.remove(key);
        }
    }
}
