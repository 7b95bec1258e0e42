//! Reasons about the pod itself rather than any node: a PreFilter plugin
//! that rejects it outright (a missing, deleted or lost claim, an unbound
//! Immediate claim, a ResourceClaim that is missing or needs devices
//! allocated), which kube-scheduler reports alike for every node without
//! looking at one, and a PreBind refusal once a node is chosen (a
//! ResourceClaim whose `reservedFor` is full).

use podplace_engine::plugins::{dynamic_resources, volume_binding};
use podplace_engine::status::{Plugin, Status};
use podplace_engine::ClusterState;
use podplace_model::objects::Pod;
use podplace_model::storage::RESERVED_FOR_MAX;

use crate::model::{PodReason, PodReasonKind};
use crate::storage::full;

/// The first `"quoted"` name in a message.
fn quoted(message: &str) -> Option<&str> {
    let start = message.find('"')? + 1;
    let len = message[start..].find('"')?;
    Some(&message[start..start + len])
}

/// The pod-level reason for a PreFilter rejection (`None`: NodeAffinity's
/// conflicting terms, which every node's verdict already shows).
pub(crate) fn pod_reason(cluster: &ClusterState, pod: &Pod, status: &Status) -> Option<PodReason> {
    let plugin = status.plugin?;
    if plugin == Plugin::NodeAffinity {
        return None;
    }
    let message = status.reasons.join(", ");
    let storage = cluster.storage();
    let named = |m: &str| {
        quoted(m)
            .map(|n| vec![full(cluster, pod, n)])
            .unwrap_or_default()
    };
    let dra = plugin == Plugin::DynamicResources;
    let (kind, claims) = if dynamic_resources::is_not_modelled(status) {
        (PodReasonKind::NotModelled, named(&message))
    } else if message == volume_binding::REASON_UNBOUND_IMMEDIATE {
        let claims = pod
            .volumes
            .claims
            .iter()
            .filter_map(|c| {
                let claim = storage.pod_claim(pod, c)?;
                let waits = storage.delays_binding(&claim) && claim.volume_name.is_empty();
                (!claim.fully_bound && !waits).then(|| full(cluster, pod, &claim.name))
            })
            .collect();
        (PodReasonKind::UnboundImmediate, claims)
    } else if dra && message == dynamic_resources::REASON_IN_USE {
        let claims = pod
            .resource_claims
            .iter()
            .filter_map(|rc| {
                let name = rc.claim.as_deref()?;
                let claim = storage.resource_claim(pod.namespace, name)?;
                (claim.allocated && claim.reserved_for.len() >= RESERVED_FOR_MAX)
                    .then(|| full(cluster, pod, name))
            })
            .collect();
        (PodReasonKind::ResourceClaimInUse, claims)
    } else if dra && message.ends_with("ResourceClaim not created yet") {
        let claims = pod
            .resource_claims
            .iter()
            .filter(|rc| !rc.skipped && rc.claim.is_none())
            .map(|rc| format!("{} (spec.resourceClaims entry)", rc.name))
            .collect();
        (PodReasonKind::ResourceClaimNotFound, claims)
    } else {
        let kind = match () {
            _ if message.contains("(pod is not owner)") => {
                if dra {
                    PodReasonKind::ResourceClaimNotOwned
                } else {
                    PodReasonKind::ClaimNotOwned
                }
            }
            _ if message.ends_with("is being deleted") => {
                if dra {
                    PodReasonKind::ResourceClaimBeingDeleted
                } else {
                    PodReasonKind::ClaimBeingDeleted
                }
            }
            _ if message.starts_with("waiting for ephemeral volume controller") => {
                PodReasonKind::EphemeralClaimNotCreated
            }
            _ if message.contains("bound to non-existent persistentvolume") => {
                PodReasonKind::ClaimLost
            }
            _ if dra && message.ends_with("not found") => PodReasonKind::ResourceClaimNotFound,
            _ if message.starts_with("persistentvolumeclaim") && message.ends_with("not found") => {
                PodReasonKind::ClaimNotFound
            }
            _ => PodReasonKind::VolumeUnreadable,
        };
        let claims = if kind == PodReasonKind::ClaimNotOwned
            || kind == PodReasonKind::ResourceClaimNotOwned
        {
            // "PVC ns/claim was not created for pod ns/pod": the claim's own name.
            message
                .split_whitespace()
                .nth(1)
                .map(|c| vec![c.to_string()])
                .unwrap_or_default()
        } else {
            named(&message)
        };
        (kind, claims)
    };
    let held = matches!(
        kind,
        PodReasonKind::ResourceClaimNotFound | PodReasonKind::ResourceClaimBeingDeleted
    );
    let list = claims.join(", ");
    let text = match kind {
        PodReasonKind::ClaimNotFound => format!(
            "The pod mounts PersistentVolumeClaim {list}, which does not exist. The {} \
             plugin's PreFilter rejects the pod before any node is looked at, so no node, \
             eviction or node change can help: create the claim (a StatefulSet's \
             volumeClaimTemplates create it with the pod), or fix the claim name in the pod.",
            plugin.name()
        ),
        PodReasonKind::EphemeralClaimNotCreated => format!(
            "The ephemeral volume controller has not created claim {list} for the pod yet; \
             kube-scheduler tries again once it exists."
        ),
        PodReasonKind::ClaimBeingDeleted => format!(
            "PersistentVolumeClaim {list} has a deletionTimestamp, so no pod may start using \
             it: wait until it is gone and recreate it, or point the pod at another claim."
        ),
        PodReasonKind::ClaimLost => format!(
            "PersistentVolumeClaim {list} is Lost: the PersistentVolume it is bound to does \
             not exist. Restore the volume, or recreate the claim."
        ),
        PodReasonKind::ClaimNotOwned | PodReasonKind::ResourceClaimNotOwned => format!(
            "Claim {list} exists but was not created for this pod (the pod is not its \
             controlling owner), so the pod may not use it."
        ),
        PodReasonKind::UnboundImmediate => format!(
            "Claim(s) {list} bind Immediately (their StorageClass's volumeBindingMode, or no \
             class) and are not bound yet: kube-scheduler waits for the PersistentVolume \
             controller to bind them to a volume or a provisioner to create one; no node can \
             help until then."
        ),
        PodReasonKind::VolumeUnreadable => {
            "VolumeZone cannot read the volume of a bound claim, so it rejects the pod before \
             any node is looked at."
                .to_string()
        }
        PodReasonKind::ResourceClaimNotFound => format!(
            "ResourceClaim {list} does not exist (yet). kube-scheduler's DynamicResources \
             holds the pod before scheduling (PreEnqueue): it is never tried and gets no \
             FailedScheduling event until the claim exists; podplace words the reason as \
             the plugin's PreFilter would."
        ),
        PodReasonKind::ResourceClaimBeingDeleted => format!(
            "ResourceClaim {list} is being deleted. kube-scheduler's DynamicResources holds \
             the pod before scheduling (PreEnqueue): it is never tried and gets no \
             FailedScheduling event while the claim is going."
        ),
        PodReasonKind::ResourceClaimInUse => format!(
            "ResourceClaim {list} is allocated and its status.reservedFor already lists \
             {RESERVED_FOR_MAX} consumers (the most it holds), none of them this pod: no \
             further pod can use it until one of them ends."
        ),
        PodReasonKind::NotModelled => format!(
            "ResourceClaim {list} is not allocated: kube-scheduler would allocate devices for \
             it from ResourceSlices (DeviceClass CEL selectors), which podplace does not \
             model. podplace does not place the pod and cannot say where kube-scheduler \
             would; the message is podplace's own."
        ),
    };
    Some(PodReason {
        plugin: plugin.name(),
        code: status.code.as_str(),
        message,
        kind,
        claims,
        held,
        text,
    })
}

/// The pod-level reason when every filter passes but PreBind refuses the
/// pod: an allocated ResourceClaim whose `status.reservedFor` already holds
/// the most consumers the API allows (v1.36 does not check this before
/// binding, so the pod stays Pending with the API's error).
pub(crate) fn pre_bind_reason(
    cluster: &ClusterState,
    pod: &Pod,
    message: &str,
) -> Option<PodReason> {
    let name = dynamic_resources::full_claim(cluster, pod)?;
    let claim = full(cluster, pod, name);
    Some(PodReason {
        plugin: Plugin::DynamicResources.name(),
        code: "Error",
        message: message.to_string(),
        kind: PodReasonKind::ResourceClaimInUse,
        text: format!(
            "ResourceClaim {claim} is allocated and its status.reservedFor already lists \
             {RESERVED_FOR_MAX} consumers (the most the API allows), none of them this pod. \
             Every filter passes (kube-scheduler v1.36 does not limit sharing before binding), \
             but PreBind's update adding the pod to reservedFor is refused, so the pod stays \
             Pending until one of those consumers ends."
        ),
        claims: vec![claim],
        held: false,
    })
}
