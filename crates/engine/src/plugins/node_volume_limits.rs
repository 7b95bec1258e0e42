//! NodeVolumeLimits: a CSINode's `allocatable.count` per driver bounds how
//! many distinct volumes of that driver the node attaches. The pod's CSI
//! volumes (bound claims' PersistentVolumes, unbound claims counted under
//! their class's provisioner, and in-tree volumes whose plugin the CSINode
//! lists as migrated) are added to those of the pods on the node.
//! Unschedulable: evicting pods frees attachments.

use podplace_model::objects::Pod;
use podplace_model::storage::{CsiNode, InTreePlugin, Storage};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::ids::NodeId;
use crate::state::{ClusterState, NodeInfo};
use crate::status::{Code, Plugin, Status};

/// Filter reason.
pub const REASON: &str = "node(s) exceed max volume count";

/// PreFilter: whether the pod has volumes this plugin counts.
pub fn pre_filter(pod: &Pod) -> bool {
    !pod.volumes.claims.is_empty() || !pod.volumes.in_tree.is_empty()
}

fn migrated(csi: &CsiNode, plugin: InTreePlugin) -> bool {
    csi.migrated.iter().any(|m| &**m == plugin.name())
}

/// The driver of a class's provisioner on this node.
fn class_driver(storage: &Storage, class: &str, csi: &CsiNode) -> Option<String> {
    let provisioner = &storage.classes.get(class)?.provisioner;
    match InTreePlugin::from_provisioner(provisioner) {
        Some(p) if migrated(csi, p) => Some(p.driver().to_string()),
        Some(_) => None,
        None => Some(provisioner.to_string()),
    }
}

/// The (driver, volume handle) pairs of a pod's attachable volumes.
fn volumes(
    cluster: &ClusterState,
    pod: &Pod,
    csi: &CsiNode,
    out: &mut FxHashMap<String, FxHashSet<String>>,
) {
    let storage = cluster.storage();
    let ns = cluster.interner().resolve(pod.namespace);
    for c in &pod.volumes.claims {
        let Some(claim) = storage.pod_claim(pod, c) else {
            continue;
        };
        let pv = storage
            .volume_named(&claim.volume_name)
            .map(|v| storage.volume(v));
        let pair = match pv {
            Some(v) => match (&v.csi, &v.in_tree) {
                (Some((driver, handle)), _) => Some((driver.to_string(), handle.to_string())),
                (None, Some((plugin, id))) if migrated(csi, *plugin) => {
                    Some((plugin.driver().to_string(), id.to_string()))
                }
                _ => None,
            },
            None => class_driver(storage, &claim.class, csi)
                .map(|d| (d, format!("{ns}-{}", &*claim.name))),
        };
        if let Some((driver, handle)) = pair {
            out.entry(driver).or_default().insert(handle);
        }
    }
    for (plugin, id) in &pod.volumes.in_tree {
        if migrated(csi, *plugin) {
            out.entry(plugin.driver().to_string())
                .or_default()
                .insert(id.to_string());
        }
    }
}

/// Filter.
pub fn filter(cluster: &ClusterState, pod: &Pod, node: NodeId, info: &NodeInfo) -> Status {
    let Some(csi) = cluster.storage().csi_nodes.get(&cluster.node(node).name) else {
        return Status::success();
    };
    let Some(lowest) = csi.drivers.iter().filter_map(|d| d.count).min() else {
        return Status::success();
    };
    // Every driver's distinct volumes on the node, with the pod's, are at
    // most all the volumes its pods and the pod use: when that is within
    // the lowest limit, no driver can exceed its own (no need to look at
    // the pods, which a node full of stateful pods would make costly for
    // every pod and node).
    if i64::from(info.attachable) + i64::from(crate::state::attachable(pod)) <= lowest {
        return Status::success();
    }
    if excesses(cluster, pod, csi, info).is_empty() {
        Status::success()
    } else {
        Status::reject(Code::Unschedulable, Plugin::NodeVolumeLimits, REASON)
    }
}

/// One CSI driver whose attach limit the pod would exceed on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeLimitExcess {
    /// The driver (`ebs.csi.aws.com`).
    pub driver: String,
    /// The CSINode's `allocatable.count` for it.
    pub limit: i64,
    /// Distinct volumes of the driver the node's pods already use.
    pub attached: usize,
    /// Volumes of the pod the node does not attach yet.
    pub adding: usize,
}

/// Every driver of the node's CSINode whose limit the distinct volumes its
/// pods attach, plus the pod's new ones, exceed: the Filter's count (it
/// rejects when there is any), which `why` lists in full.
pub(crate) fn excesses(
    cluster: &ClusterState,
    pod: &Pod,
    csi: &CsiNode,
    info: &NodeInfo,
) -> Vec<VolumeLimitExcess> {
    let mut out = Vec::new();
    let mut new = FxHashMap::default();
    volumes(cluster, pod, csi, &mut new);
    if new.is_empty() {
        return out;
    }
    let mut attached = FxHashMap::default();
    for &p in &info.pods {
        let existing = cluster.pod(p);
        if !existing.volumes.is_empty() {
            volumes(cluster, existing, csi, &mut attached);
        }
    }
    for (driver, handles) in new {
        let Some(limit) = csi
            .drivers
            .iter()
            .find(|d| *d.name == *driver)
            .and_then(|d| d.count)
        else {
            continue;
        };
        let current = attached.get(&driver);
        let count = current.map_or(0, FxHashSet::len);
        let adding = handles
            .iter()
            .filter(|h| current.is_none_or(|c| !c.contains(*h)))
            .count();
        if (count + adding) as i64 > limit {
            out.push(VolumeLimitExcess {
                driver,
                limit,
                attached: count,
                adding,
            });
        }
    }
    out
}
