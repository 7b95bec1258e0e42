//! VolumeBinding: a pod's PersistentVolumeClaims. PreFilter rejects pods
//! whose claims are missing, being deleted, lost, or unbound with
//! Immediate binding (v1.36.2 does not narrow the nodes to those of bound
//! local volumes at PreFilter: every node is filtered). Filter checks bound volumes' node affinity, finds the smallest
//! fitting available volume for claims that wait for their first consumer
//! (class, size, access modes, volume mode, selector, node affinity), and
//! else checks dynamic provisioning (provisioner, `allowedTopologies`,
//! CSIStorageCapacity where the CSIDriver asks for it). When a pod is bound
//! the choice is assumed ([`assume`]) so the next pod is not offered the
//! same volume. v1.36 enables no VolumeBinding score by default
//! (StorageCapacityScoring is off), so it does not score.

use podplace_model::objects::{Node, Pod};
use podplace_model::selector::{NodeSelector, NodeSelectorTerm, Requirement};
use podplace_model::storage::{Claim, Storage, VolumeId};
use smallvec::SmallVec;

use crate::ids::{NodeId, PodId};
use crate::state::ClusterState;
use crate::status::{Code, Plugin, Reason, Status};

/// Filter reason: a bound volume's node affinity excludes the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// Filter reason: no available volume fits and provisioning is not possible.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// Filter reason: the storage capacity reachable from the node is too small.
pub const REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// Filter reason: a bound claim's volume does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter reason: an Immediate claim is not bound yet.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// What PreFilter found about the pod's claims.
#[derive(Debug, Clone)]
pub struct State {
    /// Bound claims.
    bound: SmallVec<[Claim; 1]>,
    /// Unbound claims that wait for their first consumer, smallest request first.
    delayed: SmallVec<[Claim; 1]>,
    /// Volumes pre-bound to each of `delayed` (parallel to it).
    prebound: SmallVec<[Vec<VolumeId>; 1]>,
    /// The hostname and zone label keys (the volume index's).
    keys: (
        Option<podplace_model::intern::Sym>,
        Option<podplace_model::intern::Sym>,
    ),
}

/// The claim a pod's volume names, or why the pod cannot be scheduled
/// (the checks VolumeBinding's and VolumeRestrictions' PreFilters share).
pub(crate) fn lookup<'a>(
    storage: &'a Storage,
    pod: &Pod,
    namespace_name: &str,
    claim: &podplace_model::storage::PodClaim,
) -> Result<std::borrow::Cow<'a, Claim>, String> {
    let Some(c) = storage.pod_claim(pod, claim) else {
        return Err(if claim.ephemeral {
            format!(
                "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                &*claim.claim
            )
        } else {
            format!("persistentvolumeclaim {:?} not found", &*claim.claim)
        });
    };
    if c.lost {
        return Err(format!(
            "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
            &*c.name, &*c.volume_name
        ));
    }
    if c.deleting {
        return Err(format!(
            "persistentvolumeclaim {:?} is being deleted",
            &*c.name
        ));
    }
    if claim.ephemeral {
        let owned = c.owner.as_ref().is_some_and(|(kind, name, uid)| {
            &**kind == "Pod"
                && **name == *pod.name
                && (uid.is_empty() || pod.uid.is_empty() || **uid == *pod.uid)
        });
        if !owned {
            return Err(format!(
                "PVC {namespace_name}/{} was not created for pod {namespace_name}/{} (pod is not owner)",
                &*c.name, &*pod.name
            ));
        }
    }
    Ok(c)
}

/// PreFilter. `Ok(None)`: the pod has no claims (Skip).
pub fn pre_filter(cluster: &ClusterState, pod: &Pod) -> Result<Option<State>, Status> {
    if pod.volumes.claims.is_empty() {
        return Ok(None);
    }
    let storage = cluster.storage();
    let ns = cluster.interner().resolve(pod.namespace);
    let reject =
        |r: String| Status::reject(Code::UnschedulableAndUnresolvable, Plugin::VolumeBinding, r);
    let mut claims: SmallVec<[std::borrow::Cow<'_, Claim>; 1]> = SmallVec::new();
    for c in &pod.volumes.claims {
        claims.push(lookup(storage, pod, ns, c).map_err(reject)?);
    }
    let interner = cluster.interner();
    let mut state = State {
        bound: SmallVec::new(),
        delayed: SmallVec::new(),
        prebound: SmallVec::new(),
        keys: (
            interner.lookup(crate::names::HOSTNAME),
            interner.lookup(crate::names::ZONE),
        ),
    };
    let mut immediate = false;
    for c in claims {
        if c.fully_bound {
            state.bound.push(c.into_owned());
        } else if storage.delays_binding(&c) && c.volume_name.is_empty() {
            state.delayed.push(c.into_owned());
        } else {
            immediate = true;
        }
    }
    if immediate {
        return Err(reject(REASON_UNBOUND_IMMEDIATE.into()));
    }
    state.delayed.sort_by_key(|c| c.request.unwrap_or(0));
    state.prebound = state
        .delayed
        .iter()
        .map(|c| storage.prebound_to(c).to_vec())
        .collect();
    Ok(Some(state))
}

/// What the binder decided for one node.
#[derive(Debug, Clone, Default)]
pub struct Decision<'a> {
    /// Claims bound to available volumes (inline: Filter decides for
    /// every node, without a heap allocation).
    pub bindings: SmallVec<[(&'a Claim, VolumeId); 2]>,
    /// Claims to provision.
    pub provisions: SmallVec<[&'a Claim; 2]>,
}

/// The smallest available volume that fits the claim on the node, not in `chosen`.
fn find_volume(
    storage: &Storage,
    state: &State,
    claim: &Claim,
    prebound: &[VolumeId],
    node: &Node,
    interner: &podplace_model::intern::Interner,
    chosen: &[VolumeId],
) -> Option<VolumeId> {
    let fits = |id: VolumeId| {
        let v = storage.volume(id);
        !chosen.contains(&id)
            && v.capacity >= claim.request.unwrap_or(0)
            && v.block == claim.block
            && v.attributes_class == claim.attributes_class
            && !v.deleting
            && v.reaches(&node.labels, node.name_sym, interner)
    };
    // A volume pre-bound to this claim is taken whatever its size rank.
    for &id in prebound {
        let v = storage.volume(id);
        if chosen.contains(&id)
            || v.capacity < claim.request.unwrap_or(0)
            || v.block != claim.block
            || v.attributes_class != claim.attributes_class
            || v.deleting
        {
            continue;
        }
        return fits(id).then_some(id);
    }
    let mut best: Option<VolumeId> = None;
    let label = |key: Option<podplace_model::intern::Sym>| key.and_then(|k| node.labels.get(k));
    let (host, zone) = (label(state.keys.0), label(state.keys.1));
    for list in storage.candidates(&claim.class, host, zone) {
        let start =
            list.partition_point(|&id| storage.volume(id).capacity < claim.request.unwrap_or(0));
        for &id in &list[start..] {
            if best.is_some_and(|b| storage.volume(b).capacity <= storage.volume(id).capacity) {
                break;
            }
            let v = storage.volume(id);
            if !fits(id)
                || !claim.access_modes.within(v.access_modes)
                || claim
                    .selector
                    .as_ref()
                    .is_some_and(|s| !s.matches(&v.labels, interner))
            {
                continue;
            }
            best = Some(id);
            break;
        }
    }
    best
}

/// Whether a class can provision for the claim on the node: `Ok(true)`,
/// `Ok(false)` (no provisioner, or the node is outside its topology), or
/// `Err(())` when the reachable storage capacity is too small.
fn can_provision(
    storage: &Storage,
    claim: &Claim,
    node: &Node,
    interner: &podplace_model::intern::Interner,
) -> Result<bool, ()> {
    let Some(class) = (!claim.class.is_empty())
        .then(|| storage.classes.get(&claim.class))
        .flatten()
    else {
        return Ok(false);
    };
    if class.provisioner.is_empty()
        || &*class.provisioner == podplace_model::storage::NO_PROVISIONER
    {
        return Ok(false);
    }
    if class
        .allowed_topologies
        .as_ref()
        .is_some_and(|t| !t.matches(&node.labels, node.name_sym, interner))
    {
        return Ok(false);
    }
    let Some(size) = claim.request else {
        return Ok(true);
    };
    if !storage.capacity_drivers.contains(&class.provisioner) {
        return Ok(true);
    }
    let enough = storage.capacities.iter().any(|c| {
        *c.class == *claim.class
            && c.limit.is_some_and(|l| l >= size)
            && c.topology
                .as_ref()
                .is_some_and(|t| t.matches(&node.labels, interner))
    });
    if enough {
        Ok(true)
    } else {
        Err(())
    }
}

/// The binder's verdict on one node: the reasons (in kube-scheduler's
/// order) or its decision.
pub fn find_pod_volumes<'a>(
    cluster: &ClusterState,
    state: &'a State,
    node: NodeId,
) -> Result<Decision<'a>, SmallVec<[Reason; 1]>> {
    let storage = cluster.storage();
    let interner = cluster.interner();
    let n = cluster.node(node);
    let mut bound_ok = true;
    let mut pv_found = true;
    let mut unbound_ok = true;
    let mut space_ok = true;
    let mut decision = Decision::default();
    'bound: for c in &state.bound {
        if let Some(reach) = &c.provisioned_reach {
            if !reach.matches(&n.labels, n.name_sym, interner) {
                bound_ok = false;
                break 'bound;
            }
            continue;
        }
        match storage.volume_named(&c.volume_name) {
            None => {
                pv_found = false;
                break 'bound;
            }
            Some(v) if !storage.volume(v).reaches(&n.labels, n.name_sym, interner) => {
                bound_ok = false;
                break 'bound;
            }
            Some(_) => {}
        }
    }
    'unbound: {
        if state.delayed.is_empty() {
            break 'unbound;
        }
        let mut to_match: SmallVec<[(&Claim, &[VolumeId]); 1]> = SmallVec::new();
        let mut to_provision: SmallVec<[&Claim; 1]> = SmallVec::new();
        for (c, prebound) in state.delayed.iter().zip(&state.prebound) {
            if !c.selected_node.is_empty() {
                if *c.selected_node != *n.name {
                    unbound_ok = false;
                    break 'unbound;
                }
                to_provision.push(c);
            } else {
                to_match.push((c, prebound.as_slice()));
            }
        }
        let mut chosen: SmallVec<[VolumeId; 2]> = SmallVec::new();
        for (c, prebound) in to_match {
            match find_volume(storage, state, c, prebound, n, interner, &chosen) {
                Some(v) => {
                    chosen.push(v);
                    decision.bindings.push((c, v));
                }
                None => {
                    unbound_ok = false;
                    to_provision.push(c);
                }
            }
        }
        if !to_provision.is_empty() {
            unbound_ok = true;
            for c in to_provision {
                match can_provision(storage, c, n, interner) {
                    Ok(true) => decision.provisions.push(c),
                    Ok(false) => {
                        unbound_ok = false;
                        decision.provisions.clear();
                        break;
                    }
                    Err(()) => {
                        space_ok = false;
                        decision.provisions.clear();
                        break;
                    }
                }
            }
        }
    }
    let mut reasons: SmallVec<[Reason; 1]> = SmallVec::new();
    if !bound_ok {
        reasons.push(REASON_NODE_CONFLICT.into());
    }
    if !unbound_ok {
        reasons.push(REASON_BIND_CONFLICT.into());
    }
    if !space_ok {
        reasons.push(REASON_NOT_ENOUGH_SPACE.into());
    }
    if !pv_found {
        reasons.push(REASON_PV_NOT_EXIST.into());
    }
    if reasons.is_empty() {
        Ok(decision)
    } else {
        Err(reasons)
    }
}

/// Filter: every reason is UnschedulableAndUnresolvable (evicting pods
/// frees no volume).
pub fn filter(cluster: &ClusterState, state: &State, node: NodeId) -> Status {
    match find_pod_volumes(cluster, state, node) {
        Ok(_) => Status::success(),
        Err(reasons) => Status {
            code: Code::UnschedulableAndUnresolvable,
            plugin: Some(Plugin::VolumeBinding),
            reasons,
        },
    }
}

/// The reach of a volume provisioned for a node: the node's values of the
/// topology keys its CSI driver reports on the node's CSINode, else the
/// node itself.
fn provisioned_reach(cluster: &ClusterState, claim: &Claim, node: &Node) -> NodeSelector {
    let storage = cluster.storage();
    let driver = storage
        .classes
        .get(&claim.class)
        .map(|c| c.provisioner.clone())
        .unwrap_or_default();
    let keys = storage
        .csi_nodes
        .get(&node.name)
        .and_then(|n| n.drivers.iter().find(|d| d.name == driver))
        .map(|d| d.topology_keys.clone())
        .unwrap_or_default();
    let mut term = NodeSelectorTerm {
        labels: SmallVec::new(),
        names: SmallVec::new(),
        never: false,
    };
    for k in keys {
        if let Some(v) = node.labels.get(k) {
            term.labels.push(Requirement::In(k, smallvec::smallvec![v]));
        }
    }
    if term.labels.is_empty() {
        term.names.push(Requirement::In(
            node.name_sym,
            smallvec::smallvec![node.name_sym],
        ));
    }
    NodeSelector { terms: vec![term] }
}

/// Reserve: binds the pod's waiting claims to the volumes chosen for the
/// node, or marks them provisioned there.
pub fn assume(cluster: &mut ClusterState, id: PodId, node: NodeId) {
    let pod = cluster.pod(id);
    let Ok(Some(state)) = pre_filter(cluster, pod) else {
        return;
    };
    if state.delayed.is_empty() {
        return;
    }
    let Ok(decision) = find_pod_volumes(cluster, &state, node) else {
        return;
    };
    let n = cluster.node(node).clone();
    let bindings: Vec<(Claim, VolumeId)> = decision
        .bindings
        .iter()
        .map(|(c, v)| ((*c).clone(), *v))
        .collect();
    let provisions: Vec<(Claim, NodeSelector)> = decision
        .provisions
        .iter()
        .map(|c| ((*c).clone(), provisioned_reach(cluster, c, &n)))
        .collect();
    let storage = cluster.storage_mut();
    for (claim, volume) in bindings {
        storage.assume_bound(&claim, volume);
    }
    for (claim, reach) in provisions {
        storage.assume_provisioned(&claim, &n.name, reach);
    }
}
