//! VolumeRestrictions: a ReadWriteOncePod claim another scheduled pod
//! uses, and in-tree disks (GCE PD, AWS EBS, iSCSI, RBD) a pod on the node
//! already mounts. Both are Unschedulable: evicting the pod that holds the
//! claim or disk frees it, so preemption may help.

use podplace_model::intern::Sym;
use podplace_model::objects::Pod;

use crate::state::{ClusterState, NodeInfo};
use crate::status::{Code, Plugin, Status};

/// Filter reason for an in-tree disk another pod on the node mounts.
pub const REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// Filter reason for a ReadWriteOncePod claim in use.
pub const REASON_RWOP_CONFLICT: &str =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

/// What PreFilter found.
#[derive(Debug, Clone)]
pub struct State {
    /// The pod's ReadWriteOncePod claims (namespace, name).
    rwop: Vec<(Sym, Box<str>)>,
    /// How many of them another scheduled pod uses.
    pub conflicts: usize,
}

pub(crate) fn uses(pod: &Pod, namespace: Sym, claim: &str) -> bool {
    pod.namespace == namespace
        && pod
            .volumes
            .claims
            .iter()
            .any(|c| !c.ephemeral && &*c.claim == claim)
}

/// PreFilter: `Ok(None)` when there is nothing to check (Skip).
pub fn pre_filter(cluster: &ClusterState, pod: &Pod) -> Result<Option<State>, Status> {
    if pod.volumes.is_empty() {
        return Ok(None);
    }
    let storage = cluster.storage();
    let mut rwop = Vec::new();
    for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        let Some(claim) = storage.pod_claim(pod, c) else {
            return Err(Status::reject(
                Code::UnschedulableAndUnresolvable,
                Plugin::VolumeRestrictions,
                format!("persistentvolumeclaim {:?} not found", &*c.claim),
            ));
        };
        if claim.access_modes.read_write_once_pod() {
            rwop.push((pod.namespace, c.claim.clone()));
        }
    }
    let mut conflicts = 0;
    for (ns, name) in &rwop {
        if cluster
            .bound_pods()
            .any(|(id, _)| uses(cluster.pod(id), *ns, name))
        {
            conflicts += 1;
        }
    }
    if pod.volumes.disks.is_empty() && conflicts == 0 {
        return Ok(None);
    }
    Ok(Some(State { rwop, conflicts }))
}

/// Preemption's RemovePod: a victim holding one of the claims frees it.
pub fn remove_pod(state: &mut State, victim: &Pod) {
    for (ns, name) in &state.rwop {
        if uses(victim, *ns, name) {
            state.conflicts = state.conflicts.saturating_sub(1);
        }
    }
}

/// Filter.
pub fn filter(cluster: &ClusterState, state: &State, pod: &Pod, info: &NodeInfo) -> Status {
    if !pod.volumes.disks.is_empty() {
        for &other in &info.pods {
            let existing = &cluster.pod(other).volumes.disks;
            if pod
                .volumes
                .disks
                .iter()
                .any(|d| existing.iter().any(|e| d.conflicts(e)))
            {
                return Status::reject(
                    Code::Unschedulable,
                    Plugin::VolumeRestrictions,
                    REASON_DISK_CONFLICT,
                );
            }
        }
    }
    if state.conflicts > 0 {
        return Status::reject(
            Code::Unschedulable,
            Plugin::VolumeRestrictions,
            REASON_RWOP_CONFLICT,
        );
    }
    Status::success()
}
