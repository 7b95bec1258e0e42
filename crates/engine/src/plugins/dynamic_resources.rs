//! DynamicResources, first part: a pod's ResourceClaims must exist (a
//! template's claim must have been created for the pod) and must not be
//! being deleted; an allocated claim restricts the pod to the nodes of its
//! allocation. v1.36 puts no limit on sharing at PreFilter
//! (`CanBeReserved` is always true): a claim whose `reservedFor` already
//! holds 256 other consumers passes every filter, and PreBind's update
//! adding the pod is refused by the API ([`pre_bind`]), so the pod stays
//! Pending with that error. Allocating devices from ResourceSlices
//! (DeviceClass CEL selectors) is not modelled: a pod with an unallocated
//! claim is not placed and is reported as [`NOT_MODELLED`].

use podplace_model::objects::Pod;
use podplace_model::selector::NodeSelector;
use podplace_model::storage::RESERVED_FOR_MAX;

use crate::ids::NodeId;
use crate::state::ClusterState;
use crate::status::{Code, Plugin, Status};

/// Filter reason: an allocated claim's node selector excludes the node.
pub const REASON_NOT_AVAILABLE: &str = "resourceclaim not available on the node";
/// PreFilter reason for an allocated claim that cannot take another
/// consumer. v1.36 never gives it (`CanBeReserved` is always true; a full
/// claim fails at PreBind: [`pre_bind`]); kept for older wording.
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
        if claim.allocated {
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

/// The first allocated claim of the pod (in `spec.resourceClaims` order)
/// whose `status.reservedFor` is full (256) without the pod: PreBind's
/// reservation fails on it.
pub fn full_claim<'a>(cluster: &ClusterState, pod: &'a Pod) -> Option<&'a str> {
    let storage = cluster.storage();
    pod.resource_claims
        .iter()
        .filter(|rc| !rc.skipped)
        .filter_map(|rc| rc.claim.as_deref())
        .find(|name| {
            storage
                .resource_claim(pod.namespace, name)
                .is_some_and(|c| {
                    c.allocated && !c.can_be_reserved() && !c.is_reserved_for(&pod.name, &pod.uid)
                })
        })
}

/// PreBind: adding the pod to each allocated claim's `status.reservedFor`
/// (what [`ClusterState::bind`] assumes). A claim already holding 256
/// consumers is refused by the API's validation, and the FailedScheduling
/// message is that error, as kube-scheduler v1.36 reports it.
pub fn pre_bind(cluster: &ClusterState, pod: &Pod) -> Result<(), String> {
    let Some(name) = full_claim(cluster, pod) else {
        return Ok(());
    };
    let ns = cluster.interner().resolve(pod.namespace);
    let count = cluster
        .storage()
        .resource_claim(pod.namespace, name)
        .map_or(0, |c| c.reserved_for.len());
    Err(format!(
        "running PreBind plugin \"DynamicResources\": add reservation to claim {ns}/{name}: \
         ResourceClaim.resource.k8s.io {name:?} is invalid: status.reservedFor: Too many: {}: \
         must have at most {RESERVED_FOR_MAX} items",
        count + 1
    ))
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
