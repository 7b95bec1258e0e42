//! A pod moves only within its volumes' reach.
//!
//! A bound PersistentVolume with node affinity (a zonal disk, a local
//! volume) admits only some nodes; the replacement of a pod using it can
//! land only there. The landing proof enforces it — the engine runs
//! VolumeBinding on the replacement — and this module says it: which claim,
//! which volume and which nodes it reaches, for the plan's text; and when a
//! volume reaches no node but the one the pod runs on (a local volume),
//! the pod is not a candidate at all: evicting it could only bring it
//! back.

use podplace_engine::{ClusterState, NodeId, PodId};

/// One of a pod's volumes that restricts where it can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// The claim's name.
    pub claim: String,
    /// The PersistentVolume bound to it (empty for a provisioned reach not
    /// bound to a volume yet).
    pub volume: String,
    /// The nodes of the cluster its node affinity admits.
    pub nodes: Vec<NodeId>,
}

impl Reach {
    /// The volume and its claim (`PersistentVolume pv-a (claim data-db-0)`).
    pub fn describe(&self) -> String {
        if self.volume.is_empty() {
            format!("claim {}", self.claim)
        } else {
            format!("PersistentVolume {} (claim {})", self.volume, self.claim)
        }
    }

    /// In words, naming a handful of the nodes and counting the rest.
    pub fn text(&self, state: &ClusterState) -> String {
        let names: Vec<String> = self
            .nodes
            .iter()
            .map(|&n| state.node(n).name.to_string())
            .collect();
        format!(
            "{} reaches {} of {} nodes: {}",
            self.describe(),
            names.len(),
            state.nodes().len(),
            crate::plan::short_list(&names)
        )
    }
}

/// The claims of `pod` whose volume (or provisioned reach) has node
/// affinity: (claim, volume, affinity).
fn restricted(
    state: &ClusterState,
    pod: PodId,
) -> Vec<(String, String, podplace_model::selector::NodeSelector)> {
    let p = state.pod(pod);
    if p.volumes.claims.is_empty() {
        return Vec::new();
    }
    let storage = state.storage();
    let mut out = Vec::new();
    for pc in &p.volumes.claims {
        let Some(claim) = storage.pod_claim(p, pc) else {
            continue;
        };
        let (volume, affinity) = match storage.volume_named(&claim.volume_name) {
            Some(id) if !claim.volume_name.is_empty() => {
                let v = storage.volume(id);
                (v.name.to_string(), v.node_affinity.clone())
            }
            _ => (String::new(), claim.provisioned_reach.clone()),
        };
        if let Some(a) = affinity {
            out.push((claim.name.to_string(), volume, a));
        }
    }
    out
}

fn admits(state: &ClusterState, a: &podplace_model::selector::NodeSelector, n: NodeId) -> bool {
    let node = state.node(n);
    a.matches(&node.labels, node.name_sym, state.interner())
}

/// The volumes of `pod` whose node affinity leaves out some node of the
/// cluster, with the nodes each reaches (for the plan's text: a scan of
/// the nodes per such volume, made for planned evictions only).
pub fn reach(state: &ClusterState, pod: PodId) -> Vec<Reach> {
    let mut out = Vec::new();
    for (claim, volume, a) in restricted(state, pod) {
        let nodes: Vec<NodeId> = state.node_ids().filter(|&n| admits(state, &a, n)).collect();
        if nodes.len() < state.nodes().len() {
            out.push(Reach {
                claim,
                volume,
                nodes,
            });
        }
    }
    out
}

/// The volume that keeps `pod` on `from`, if one reaches no other node
/// (the scan stops at the first other node a volume reaches).
pub fn pinned(state: &ClusterState, pod: PodId, from: NodeId) -> Option<Reach> {
    restricted(state, pod)
        .into_iter()
        .find_map(|(claim, volume, a)| {
            let elsewhere = state.node_ids().any(|n| n != from && admits(state, &a, n));
            (!elsewhere).then(|| Reach {
                claim,
                volume,
                nodes: if admits(state, &a, from) {
                    vec![from]
                } else {
                    Vec::new()
                },
            })
        })
}
