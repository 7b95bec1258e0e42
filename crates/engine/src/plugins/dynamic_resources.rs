//! DynamicResources, first part: a pod's ResourceClaims must exist (a
//! template's claim must have been created for the pod), must not be
//! being deleted, and an allocated claim whose `reservedFor` is full of
//! other consumers is in use; an allocated claim restricts the pod to the
//! nodes of its allocation. Allocating devices from ResourceSlices
//! (DeviceClass CEL selectors) is not modelled: a pod with an unallocated
//! claim is not placed and is reported as [`NOT_MODELLED`].

use podplace_model::objects::Pod;
use podplace_model::selector::NodeSelector;

use crate::ids::NodeId;
use crate::state::ClusterState;
use crate::status::{Code, Plugin, Status};

/// Filter reason: an allocated claim's node selector excludes the node.
pub const REASON_NOT_AVAILABLE: &str = "resourceclaim not available on the node";
/// PreFilter reason: an allocated claim cannot take another consumer.
pub const REASON_IN_USE: &str = "resourceclaim in use";
/// What podplace reports for a pod whose claim still needs devices allocated.
pub const NOT_MODELLED: &str = "not modelled: device allocation";
/// PostFilter message for a pod with claims when nothing can be deallocated.
pub const STILL_NOT_SCHEDULABLE: &str = "still not schedulable";
/// PostFilter message when an allocated claim nobody reserved is
/// deallocated (kube-scheduler writes that to the API; podplace does not
/// change the claim).
pub const DEALLOCATED: &str = "deallocation of ResourceClaim completed";

/// What PreFilter found: the allocated claims' node selectors.
#[derive(Debug, Clone)]
pub struct State {
    /// One per allocated claim with a node selector.
    pub available_on: Vec<NodeSelector>,
    /// Whether an allocated claim has no consumer reserved: PostFilter
    /// would deallocate it.
    pub deallocatable: bool,
}

/// PreFilter: `Ok(None)` for pods without claims (Skip).
pub fn pre_filter(cluster: &ClusterState, pod: &Pod) -> Result<Option<State>, Status> {
    if pod.resource_claims.is_empty() {
        return Ok(None);
    }
    let storage = cluster.storage();
    let ns = cluster.interner().resolve(pod.namespace);
    let reject = |r: String| {
        Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::DynamicResources,
            r,
        )
    };
    let mut claims = Vec::new();
    for rc in &pod.resource_claims {
        if rc.skipped {
            continue;
        }
        let Some(name) = &rc.claim else {
            return Err(reject(format!(
                "pod \"{ns}/{}\": ResourceClaim not created yet",
                &*pod.name
            )));
        };
        let Some(claim) = storage.resource_claim(pod.namespace, name) else {
            return Err(reject(format!(
                "resourceclaim.resource.k8s.io {:?} not found",
                &**name
            )));
        };
        if claim.deleting {
            return Err(reject(format!(
                "resourceclaim {:?} is being deleted",
                &**name
            )));
        }
        if rc.from_template {
            let owned = claim.owner.as_ref().is_some_and(|(kind, owner, uid)| {
                &**kind == "Pod"
                    && **owner == *pod.name
                    && (uid.is_empty() || pod.uid.is_empty() || **uid == *pod.uid)
            });
            if !owned {
                return Err(reject(format!(
                    "ResourceClaim {ns}/{} was not created for pod {ns}/{} (pod is not owner)",
                    &**name, &*pod.name
                )));
            }
        }
        claims.push((name, claim));
    }
    if claims.is_empty() {
        return Ok(None);
    }
    let mut state = State {
        available_on: Vec::new(),
        deallocatable: false,
    };
    for (name, claim) in claims {
        let reserved_for_pod = claim.is_reserved_for(&pod.name, &pod.uid);
        if claim.allocated {
            if !claim.can_be_reserved() && !reserved_for_pod {
                return Err(reject(REASON_IN_USE.into()));
            }
            state.deallocatable |= claim.reserved_for.is_empty();
            if let Some(s) = &claim.allocation_nodes {
                state.available_on.push(s.clone());
            }
        } else {
            return Err(reject(format!(
                "{NOT_MODELLED} (ResourceClaim {:?} is not allocated)",
                &**name
            )));
        }
    }
    Ok(Some(state))
}

/// Whether a PreFilter rejection is podplace's "not modelled" report
/// rather than kube-scheduler's own.
pub fn is_not_modelled(status: &Status) -> bool {
    status.plugin == Some(Plugin::DynamicResources)
        && status.reasons.iter().any(|r| r.starts_with(NOT_MODELLED))
}

/// Filter.
pub fn filter(cluster: &ClusterState, state: &State, node: NodeId) -> Status {
    let n = cluster.node(node);
    if state
        .available_on
        .iter()
        .any(|s| !s.matches(&n.labels, n.name_sym, cluster.interner()))
    {
        return Status::reject(
            Code::UnschedulableAndUnresolvable,
            Plugin::DynamicResources,
            REASON_NOT_AVAILABLE,
        );
    }
    Status::success()
}
