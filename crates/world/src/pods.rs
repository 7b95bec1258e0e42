//! The pod table: for every pod of the cluster state, the API object it was
//! compiled from, the workload an operator would name it by, and its
//! controlling owner; and the name index `why <pod>` looks pods up in.
//!
//! The engine keeps only what scheduling needs of a pod; every command also
//! needs the object as written (terms as the user spelled them, patches,
//! volumes, annotations) and the workload. Before this table each command
//! rebuilt those lookups its own way.

use podplace_engine::{ClusterState, PodId};
use podplace_model::cow::Sharded;
use podplace_model::inventory::Inventory;
use podplace_model::workloads::{WorkloadKind, WorkloadRef, Workloads};
use rustc_hash::FxHashMap;

use crate::column::PodColumn;

/// A pod's controlling owner reference (`controller: true`), typed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    /// The owner's kind (`ReplicaSet`, `StatefulSet`, an operator's kind).
    pub kind: WorkloadKind,
    /// The owner's name.
    pub name: String,
}

/// What the world knows about one pod beyond the engine's compiled form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    /// Index of the pod's API object in [`Inventory::pods`], when the pod
    /// was loaded (a pod a what-if adds has none).
    pub api: Option<usize>,
    /// The workload it belongs to: its controller resolved through
    /// ReplicaSet to Deployment and Job to CronJob; the pod itself when it
    /// has none.
    pub workload: WorkloadRef,
    /// Its controlling owner, if any.
    pub owner: Option<Owner>,
}

/// Rows by [`PodId`] and pods by name (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct PodTable {
    rows: PodColumn<Option<PodRow>>,
    /// Live pods by bare name, in id order, for `name` without a namespace.
    /// (Sharded: a copy of the world shares it, see [`PodColumn`].)
    by_name: Sharded<Box<str>, Vec<PodId>>,
}

/// The workload and owner of a pod known only in compiled form: its
/// controlling owner taken as the workload (no ReplicaSet → Deployment
/// step: the ReplicaSet objects are not at hand), else the pod itself.
pub(crate) fn compiled_row(state: &ClusterState, id: PodId) -> (WorkloadRef, Option<Owner>) {
    let pod = state.pod(id);
    let namespace = state.interner().resolve(pod.namespace).to_string();
    match &pod.owner {
        Some(o) => {
            let kind = WorkloadKind::of(&o.kind);
            let owner = Owner {
                kind: kind.clone(),
                name: o.name.to_string(),
            };
            (WorkloadRef::new(kind, namespace, &*o.name), Some(owner))
        }
        None => (
            WorkloadRef::new(WorkloadKind::Pod, namespace, &*pod.name),
            None,
        ),
    }
}

impl PodTable {
    /// Indexes every live pod of `state`, which was built from `inventory`.
    /// A pod's API object is found by namespace and name (an empty or
    /// missing namespace is `default`; of two objects with one name the
    /// later is taken, as a later document replaces an earlier one).
    pub fn new(inventory: &Inventory, state: &ClusterState) -> Self {
        let workloads = Workloads::new(inventory);
        // Keys and workloads without decoding a packed pod.
        let api: FxHashMap<(&str, &str), usize> = (0..inventory.pods.len())
            .filter_map(|i| Some((inventory.pods.key(i)?, i)))
            .collect();
        let mut rows = PodColumn::from_fn(state.pod_slots(), |_| None);
        let mut by_name: Sharded<Box<str>, Vec<PodId>> = Sharded::default();
        for (id, entry) in state.live_pods() {
            let ns = state.interner().resolve(entry.pod.namespace);
            let index = api.get(&(ns, &*entry.pod.name)).copied();
            let (fallback, owner) = compiled_row(state, id);
            let workload = match index {
                Some(i) => match inventory.pods.packed_summary(i) {
                    Some(summary) => workloads.of_summary(summary),
                    None => workloads.of(&inventory.pods[i].object),
                },
                None => fallback,
            };
            rows[id] = Some(PodRow {
                api: index,
                workload,
                owner,
            });
            by_name
                .get_or_insert_with(entry.pod.name.clone(), Vec::new)
                .push(id);
        }
        PodTable { rows, by_name }
    }

    /// Gives `id` (a pod named `name` just added to the state) its row.
    pub fn insert(&mut self, id: PodId, name: &str, row: PodRow) {
        self.rows.set(id, Some(row));
        let ids = self.by_name.get_or_insert_with(name.into(), Vec::new);
        if let Err(at) = ids.binary_search(&id) {
            ids.insert(at, id);
        }
    }

    /// Forgets the row of `id` (a pod named `name` removed from the state),
    /// so its slot can be given to another pod.
    pub fn remove(&mut self, id: PodId, name: &str) {
        if let Some(row) = self.rows.get_mut(id) {
            *row = None;
        }
        if let Some(ids) = self.by_name.get_mut(name) {
            ids.retain(|&p| p != id);
            if ids.is_empty() {
                self.by_name.remove(name);
            }
        }
    }

    /// The row of a pod, to change (its API index after the inventory
    /// moved an object, its workload after a ReplicaSet or Job changed).
    pub(crate) fn row_mut(&mut self, id: PodId) -> Option<&mut PodRow> {
        self.rows.get_mut(id).and_then(Option::as_mut)
    }

    /// The row of a pod; `None` for an id the table was not built with.
    pub fn get(&self, id: PodId) -> Option<&PodRow> {
        self.rows.get(id).and_then(Option::as_ref)
    }

    /// Every pod with a row, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (PodId, &PodRow)> + '_ {
        self.rows
            .iter()
            .filter_map(|(id, r)| r.as_ref().map(|r| (id, r)))
    }

    /// Pods with this bare name, in any namespace, in id order.
    pub fn named(&self, name: &str) -> &[PodId] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }
}
