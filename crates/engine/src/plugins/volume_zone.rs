//! VolumeZone: a bound volume labelled with a zone or region (the
//! `topology.kubernetes.io` labels and the legacy
//! `failure-domain.beta.kubernetes.io` ones) restricts the pod to nodes in
//! it. UnschedulableAndUnresolvable.

use podplace_model::intern::{Interner, Sym};
use podplace_model::objects::Pod;
use smallvec::SmallVec;

use crate::state::ClusterState;
use crate::status::{Code, Plugin, Status};

/// Filter reason.
pub const REASON: &str = "node(s) had no available volume zone";

/// The labels VolumeZone reads, with the GA label each stands for.
pub const TOPOLOGY_LABELS: [(&str, &str); 4] = [
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
    ("topology.kubernetes.io/zone", "topology.kubernetes.io/zone"),
    (
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
];

/// One label of a bound volume: its key, the GA key, and the values
/// (`a__b` lists several).
#[derive(Debug, Clone)]
pub struct Topology {
    key: Box<str>,
    ga: &'static str,
    values: SmallVec<[Box<str>; 1]>,
}

/// What PreFilter found: the pod's volumes' topology labels.
#[derive(Debug, Clone)]
pub struct State {
    /// The labels.
    pub topologies: Vec<Topology>,
}

/// PreFilter: `Ok(None)` when no bound volume has a topology label (Skip).
pub fn pre_filter(cluster: &ClusterState, pod: &Pod) -> Result<Option<State>, Status> {
    if pod.volumes.claims.is_empty() {
        return Ok(None);
    }
    let storage = cluster.storage();
    let interner = cluster.interner();
    let reject =
        |r: String| Status::reject(Code::UnschedulableAndUnresolvable, Plugin::VolumeZone, r);
    let mut topologies = Vec::new();
    for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        let Some(claim) = storage.pod_claim(pod, c) else {
            return Err(reject(format!(
                "persistentvolumeclaim {:?} not found",
                &*c.claim
            )));
        };
        if claim.volume_name.is_empty() {
            if claim.provisioned_reach.is_some() {
                continue;
            }
            if claim.class.is_empty() {
                return Err(reject(
                    "PersistentVolumeClaim had no pv name and storageClass name".into(),
                ));
            }
            if storage.delays_binding(&claim) {
                continue;
            }
            return Err(reject("PersistentVolume had no name".into()));
        }
        let Some(v) = storage.volume_named(&claim.volume_name) else {
            return Err(reject(format!(
                "persistentvolume {:?} not found",
                &*claim.volume_name
            )));
        };
        let v = storage.volume(v);
        for (key, ga) in TOPOLOGY_LABELS {
            let Some(k) = interner.lookup(key) else {
                continue;
            };
            if let Some(value) = v.labels.get(k) {
                topologies.push(Topology {
                    key: key.into(),
                    ga,
                    values: interner
                        .resolve(value)
                        .split("__")
                        .map(Into::into)
                        .collect(),
                });
            }
        }
    }
    if topologies.is_empty() {
        return Ok(None);
    }
    Ok(Some(State { topologies }))
}

fn label(labels: &podplace_model::labels::Labels, interner: &Interner, key: &str) -> Option<Sym> {
    interner.lookup(key).and_then(|k| labels.get(k))
}

/// Filter: a node without any zone or region label passes.
pub fn filter(cluster: &ClusterState, state: &State, node: crate::ids::NodeId) -> Status {
    let interner = cluster.interner();
    let labels = &cluster.node(node).labels;
    if TOPOLOGY_LABELS
        .iter()
        .all(|(key, _)| label(labels, interner, key).is_none())
    {
        return Status::success();
    }
    for t in &state.topologies {
        let value = label(labels, interner, &t.key).or_else(|| label(labels, interner, t.ga));
        let ok = value.is_some_and(|v| {
            let v = interner.resolve(v);
            t.values.iter().any(|x| &**x == v)
        });
        if !ok {
            return Status::reject(
                Code::UnschedulableAndUnresolvable,
                Plugin::VolumeZone,
                REASON,
            );
        }
    }
    Status::success()
}
