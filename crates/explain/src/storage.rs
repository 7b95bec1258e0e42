//! Volumes and claims in an explanation, node by node. The reasons of
//! VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone and
//! DynamicResources name the claim, its PersistentVolume and exactly what
//! the node misses (PreFilter rejections, reasons about the pod itself, are
//! in [`crate::pod_level`]).
//!
//! Every verdict comes from the plugins' own functions; what is computed
//! here only says which claim, volume or label made them fail. To tell the
//! pod's claims apart, each plugin's PreFilter is also run on a copy of the
//! pod holding one claim alone.

use podplace_engine::cycle::CycleState;
use podplace_engine::explain_support;
use podplace_engine::plugins::{
    dynamic_resources, node_volume_limits, volume_binding, volume_restrictions, volume_zone,
};
use podplace_engine::status::{Code, Plugin, Status};
use podplace_engine::{ClusterState, NodeId};
use podplace_model::intern::Interner;
use podplace_model::objects::{Node, Pod};
use podplace_model::storage::{Claim, Storage, NO_PROVISIONER};
use podplace_world::{WhatIf, World as Base};
use smallvec::smallvec;

use crate::analyze::selector_misses;
use crate::model::{
    ClaimNodes, Detail, NodeVerdict, Note, NoteKind, Reason, Shared, UnboundClaim, VolumeLimitView,
    VolumeReach, ZoneMiss,
};

/// What the explanation prepared once about the pod's volumes and claims.
pub(crate) struct Prepared {
    /// The cycle's PreFilter: the Filter plugins' states, or the status of
    /// the PreFilter plugin that rejected the pod.
    pub cycle: Result<CycleState, Status>,
    /// Per claim of the pod, in spec order: its name and VolumeBinding's
    /// PreFilter state for the pod with that claim alone.
    binding: Vec<(String, Option<volume_binding::State>)>,
    /// The same for VolumeZone.
    zone: Vec<(String, Option<volume_zone::State>)>,
    /// Per claim waiting for its first consumer: the available volumes of
    /// its class, and the names of those that fit it apart from the node
    /// (the same on every node: counted once).
    fitting: Vec<(String, (usize, Vec<String>))>,
    /// The ReadWriteOncePod claims' holders: (claim, pod `ns/name`, node).
    rwop: Vec<(String, String, String)>,
}

/// Runs the PreFilters the storage reasons need.
pub(crate) fn prepare(what_if: &mut WhatIf<'_>, pod: &Pod) -> Prepared {
    let base = what_if.base();
    let (cluster, cache) = what_if.parts();
    let cycle = explain_support::pre_filter(cluster, cache, pod);
    let mut binding = Vec::new();
    let mut zone = Vec::new();
    let mut fitting = Vec::new();
    let mut rwop = Vec::new();
    if let Ok(state) = &cycle {
        let storage = cluster.storage();
        for c in &pod.volumes.claims {
            if let Some(claim) = storage.pod_claim(pod, c) {
                if !claim.fully_bound {
                    fitting.push((
                        c.claim.to_string(),
                        fitting_volumes(storage, &claim, cluster.interner()),
                    ));
                }
            }
            let mut single = pod.clone();
            single.volumes.claims = smallvec![c.clone()];
            let name = c.claim.to_string();
            binding.push((
                name.clone(),
                volume_binding::pre_filter(cluster, &single).ok().flatten(),
            ));
            zone.push((
                name,
                volume_zone::pre_filter(cluster, &single).ok().flatten(),
            ));
        }
        if state.restrictions.as_ref().is_some_and(|r| r.conflicts > 0) {
            rwop = explain_support::read_write_once_pod_holders(cluster, pod)
                .into_iter()
                .map(|(claim, holder)| {
                    let on = cluster
                        .pod_node(holder)
                        .map(|h| cluster.node(h).name.to_string())
                        .unwrap_or_default();
                    (full(cluster, pod, &claim), base.pod_name(holder), on)
                })
                .collect();
        }
    }
    Prepared {
        cycle,
        binding,
        zone,
        fitting,
        rwop,
    }
}

fn reason(plugin: Plugin, code: Code, message: &str, detail: Detail) -> Reason {
    Reason {
        plugin: plugin.name(),
        code: code.as_str(),
        message: message.to_string(),
        detail,
        blockers: Shared::default(),
        blockers_total: 0,
        counts: Shared::default(),
    }
}

/// `ns/name`.
pub(crate) fn full(cluster: &ClusterState, pod: &Pod, name: &str) -> String {
    format!("{}/{name}", cluster.interner().resolve(pod.namespace))
}

/// A byte count as kubectl shows a storage request (`10Gi`).
pub fn bytes(v: i64) -> String {
    for (suffix, size) in [
        ("Ti", 1i64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if v != 0 && v % size == 0 {
            return format!("{}{suffix}", v / size);
        }
    }
    v.to_string()
}

/// The reasons of VolumeRestrictions, NodeVolumeLimits, VolumeBinding and
/// VolumeZone on one node, in profile order (they run after
/// NodeResourcesFit and before PodTopologySpread).
pub(crate) fn volume_reasons(
    cluster: &ClusterState,
    base: &Base,
    pod: &Pod,
    prepared: &Prepared,
    node: NodeId,
) -> Vec<Reason> {
    let mut out = Vec::new();
    let Ok(cycle) = &prepared.cycle else {
        return out;
    };
    let info = cluster.node_info(node);
    let n = cluster.node(node);
    let interner = cluster.interner();
    if let Some(state) = &cycle.restrictions {
        let disks = explain_support::disk_conflicts(cluster, pod, info);
        if !disks.is_empty() {
            out.push(reason(
                Plugin::VolumeRestrictions,
                Code::Unschedulable,
                volume_restrictions::REASON_DISK_CONFLICT,
                Detail::DiskConflict {
                    pods: disks.into_iter().map(|p| base.pod_name(p)).collect(),
                },
            ));
        }
        if state.conflicts > 0 {
            let holders = prepared.rwop.clone();
            out.push(reason(
                Plugin::VolumeRestrictions,
                Code::Unschedulable,
                volume_restrictions::REASON_RWOP_CONFLICT,
                Detail::ReadWriteOncePod { holders },
            ));
        }
    }
    if cycle.volume_limits && !node_volume_limits::filter(cluster, pod, node, info).is_success() {
        let drivers = explain_support::volume_limit_excess(cluster, pod, node, info)
            .into_iter()
            .map(|x| VolumeLimitView {
                driver: x.driver,
                limit: x.limit,
                attached: x.attached,
                adding: x.adding,
            })
            .collect();
        out.push(reason(
            Plugin::NodeVolumeLimits,
            Code::Unschedulable,
            node_volume_limits::REASON,
            Detail::VolumeLimit { drivers },
        ));
    }
    if let Some(state) = &cycle.volumes {
        let status = volume_binding::filter(cluster, state, node);
        for message in &status.reasons {
            let message: &str = message;
            // The claims that fail this way alone.
            let failing = prepared.binding.iter().filter_map(|(name, single)| {
                let single = single.as_ref()?;
                let fails = volume_binding::find_pod_volumes(cluster, single, node)
                    .err()
                    .is_some_and(|rs| rs.iter().any(|r| **r == *message));
                fails.then_some(name.as_str())
            });
            let storage = cluster.storage();
            let claim_of = |name: &str| {
                pod.volumes
                    .claims
                    .iter()
                    .find(|c| &*c.claim == name)
                    .and_then(|c| storage.pod_claim(pod, c))
            };
            let detail = match message {
                volume_binding::REASON_NODE_CONFLICT => Detail::VolumeNodeAffinity {
                    volumes: failing
                        .filter_map(|name| {
                            let claim = claim_of(name)?;
                            Some(volume_reach(cluster, pod, &claim, n))
                        })
                        .collect(),
                },
                volume_binding::REASON_BIND_CONFLICT => Detail::VolumeUnbound {
                    claims: failing
                        .filter_map(|name| {
                            let claim = claim_of(name)?;
                            let fitting = prepared
                                .fitting
                                .iter()
                                .find(|(c, _)| c == name)
                                .map(|(_, f)| f);
                            Some(unbound_claim(cluster, pod, &claim, n, fitting))
                        })
                        .collect(),
                },
                volume_binding::REASON_NOT_ENOUGH_SPACE => Detail::VolumeCapacity {
                    claims: failing
                        .filter_map(|name| {
                            let claim = claim_of(name)?;
                            Some(short_capacity(cluster, pod, &claim, n))
                        })
                        .collect(),
                },
                _ => Detail::VolumeMissing {
                    claims: failing
                        .filter_map(|name| {
                            let claim = claim_of(name)?;
                            Some((full(cluster, pod, name), claim.volume_name.to_string()))
                        })
                        .collect(),
                },
            };
            out.push(reason(
                Plugin::VolumeBinding,
                Code::UnschedulableAndUnresolvable,
                message,
                detail,
            ));
        }
    }
    if let Some(state) = &cycle.zone {
        if !volume_zone::filter(cluster, state, node).is_success() {
            let volumes = prepared
                .zone
                .iter()
                .filter_map(|(name, single)| {
                    let single = single.as_ref()?;
                    if volume_zone::filter(cluster, single, node).is_success() {
                        return None;
                    }
                    zone_miss(cluster, pod, name, n, interner)
                })
                .collect();
            out.push(reason(
                Plugin::VolumeZone,
                Code::UnschedulableAndUnresolvable,
                volume_zone::REASON,
                Detail::VolumeZone { volumes },
            ));
        }
    }
    out
}

/// A bound claim's volume and the node affinity requirements the node misses.
fn volume_reach(cluster: &ClusterState, pod: &Pod, claim: &Claim, node: &Node) -> VolumeReach {
    let storage = cluster.storage();
    let interner = cluster.interner();
    let (volume, selector) = match &claim.provisioned_reach {
        Some(reach) => (String::new(), Some(reach.clone())),
        None => match storage.volume_named(&claim.volume_name) {
            Some(v) => (
                claim.volume_name.to_string(),
                storage.volume(v).node_affinity.clone(),
            ),
            None => (claim.volume_name.to_string(), None),
        },
    };
    VolumeReach {
        claim: full(cluster, pod, &claim.name),
        volume,
        terms: selector
            .map(|s| selector_misses(&s, node, interner))
            .unwrap_or_default(),
    }
}

/// Available volumes of the claim's class that fit it apart from the node
/// (size, volume mode, attributes class, access modes, selector): the
/// binder's checks, less node affinity.
fn fitting_volumes(storage: &Storage, claim: &Claim, interner: &Interner) -> (usize, Vec<String>) {
    let mut available = 0;
    let mut fitting = Vec::new();
    for v in &storage.volumes {
        if *v.class != *claim.class || !v.available || v.deleting {
            continue;
        }
        if v.claim_ref.as_ref().is_some_and(|_| !v.bound_to(claim)) {
            continue;
        }
        available += 1;
        if v.capacity >= claim.request.unwrap_or(0)
            && v.block == claim.block
            && v.attributes_class == claim.attributes_class
            && claim.access_modes.within(v.access_modes)
            && claim
                .selector
                .as_ref()
                .is_none_or(|s| s.matches(&v.labels, interner))
        {
            fitting.push(v.name.to_string());
        }
    }
    (available, fitting)
}

/// Why a claim waiting for its first consumer gets neither a volume nor a
/// provisioned one on the node.
fn unbound_claim(
    cluster: &ClusterState,
    pod: &Pod,
    claim: &Claim,
    node: &Node,
    fitting: Option<&(usize, Vec<String>)>,
) -> UnboundClaim {
    let storage = cluster.storage();
    let interner = cluster.interner();
    let mut causes = Vec::new();
    let class = claim.class.to_string();
    if !claim.selected_node.is_empty() {
        causes.push(format!(
            "the claim is being provisioned for node {} (annotation volume.kubernetes.io/selected-node)",
            claim.selected_node
        ));
    } else {
        let size = claim
            .request
            .map(|r| format!(" of at least {}", bytes(r)))
            .unwrap_or_default();
        let counted;
        let (available, fitting) = match fitting {
            Some((a, f)) => (*a, f),
            None => {
                counted = fitting_volumes(storage, claim, interner);
                (counted.0, &counted.1)
            }
        };
        causes.push(match (available, fitting.len()) {
            (0, _) => format!("no available PersistentVolume of class {class:?}"),
            (_, 0) => format!(
                "none of the {available} available PersistentVolume(s) of class {class:?} fits the claim (size{size}, access modes, volume mode, selector)"
            ),
            (_, n) => {
                let mut names = fitting[..n.min(3)].join(", ");
                if n > 3 {
                    names.push_str(&format!(" and {} more", n - 3));
                }
                format!(
                    "the available PersistentVolume(s) of class {class:?} that fit the claim ({names}) do not reach the node (their node affinity)"
                )
            }
        });
        causes.push(match storage.classes.get(&claim.class) {
            _ if class.is_empty() => "the claim has no StorageClass to provision from".to_string(),
            None => format!("StorageClass {class:?} does not exist, so nothing is provisioned"),
            Some(c) if c.provisioner.is_empty() || &*c.provisioner == NO_PROVISIONER => format!(
                "StorageClass {class:?} does not provision (provisioner {})",
                if c.provisioner.is_empty() { "unset" } else { NO_PROVISIONER }
            ),
            Some(c) => match &c.allowed_topologies {
                Some(t) if !t.matches(&node.labels, node.name_sym, interner) => {
                    // The requirements only: the node's values vary across
                    // a group and are shown by the other reasons' lines.
                    let misses: Vec<String> = selector_misses(t, node, interner)
                        .into_iter()
                        .flat_map(|(_, ms)| ms)
                        .map(|m| m.requirement)
                        .collect();
                    format!(
                        "StorageClass {class:?} provisions only within its allowedTopologies, which the node is outside of: {}",
                        misses.join("; ")
                    )
                }
                _ => format!("StorageClass {class:?} would provision with {}", c.provisioner),
            },
        });
    }
    UnboundClaim {
        claim: full(cluster, pod, &claim.name),
        class,
        request: claim.request,
        causes,
    }
}

/// A claim whose class's driver tracks capacity and no reachable
/// CSIStorageCapacity is large enough.
fn short_capacity(cluster: &ClusterState, pod: &Pod, claim: &Claim, node: &Node) -> UnboundClaim {
    let storage = cluster.storage();
    let interner = cluster.interner();
    let driver = storage
        .classes
        .get(&claim.class)
        .map(|c| c.provisioner.to_string())
        .unwrap_or_default();
    let largest = storage
        .capacities
        .iter()
        .filter(|c| {
            *c.class == *claim.class
                && c.topology
                    .as_ref()
                    .is_some_and(|t| t.matches(&node.labels, interner))
        })
        .filter_map(|c| c.limit)
        .max();
    let need = claim.request.map(bytes).unwrap_or_default();
    let cause = match largest {
        Some(l) => format!(
            "CSIDriver {driver} tracks storage capacity: the largest CSIStorageCapacity of class {:?} reachable from the node offers {}, the claim asks for {need}",
            claim.class,
            bytes(l)
        ),
        None => format!(
            "CSIDriver {driver} tracks storage capacity, and no CSIStorageCapacity of class {:?} with a size is reachable from the node; the claim asks for {need}",
            claim.class
        ),
    };
    UnboundClaim {
        claim: full(cluster, pod, &claim.name),
        class: claim.class.to_string(),
        request: claim.request,
        causes: vec![cause],
    }
}

/// A bound claim's volume's zone and region labels the node does not match,
/// as VolumeZone compares them (the node's label under the volume's key,
/// else under the GA key; `a__b` lists several values).
fn zone_miss(
    cluster: &ClusterState,
    pod: &Pod,
    name: &str,
    node: &Node,
    interner: &Interner,
) -> Option<ZoneMiss> {
    let storage = cluster.storage();
    let c = pod.volumes.claims.iter().find(|c| &*c.claim == name)?;
    let claim = storage.pod_claim(pod, c)?;
    let v = storage.volume(storage.volume_named(&claim.volume_name)?);
    let node_label = |key: &str| {
        interner
            .lookup(key)
            .and_then(|k| node.labels.get(k))
            .map(|v| interner.resolve(v).to_string())
    };
    let mut labels = Vec::new();
    for (key, ga) in volume_zone::TOPOLOGY_LABELS {
        let Some(value) = interner.lookup(key).and_then(|k| v.labels.get(k)) else {
            continue;
        };
        let value = interner.resolve(value);
        let here = node_label(key).or_else(|| node_label(ga));
        if !here
            .as_deref()
            .is_some_and(|h| value.split("__").any(|x| x == h))
        {
            labels.push((key.to_string(), value.to_string(), here));
        }
    }
    Some(ZoneMiss {
        claim: full(cluster, pod, name),
        volume: v.name.to_string(),
        labels,
    })
}

/// DynamicResources' Filter on one node: the allocated claims whose
/// allocation the node is outside of (it runs last, after InterPodAffinity).
pub(crate) fn claim_reasons(
    cluster: &ClusterState,
    pod: &Pod,
    prepared: &Prepared,
    node: NodeId,
) -> Vec<Reason> {
    let Ok(cycle) = &prepared.cycle else {
        return Vec::new();
    };
    let Some(state) = &cycle.claims else {
        return Vec::new();
    };
    if dynamic_resources::filter(cluster, state, node).is_success() {
        return Vec::new();
    }
    let n = cluster.node(node);
    let interner = cluster.interner();
    let storage = cluster.storage();
    let claims = pod
        .resource_claims
        .iter()
        .filter(|rc| !rc.skipped)
        .filter_map(|rc| {
            let name = rc.claim.as_deref()?;
            let selector = storage
                .resource_claim(pod.namespace, name)?
                .allocation_nodes
                .as_ref()?;
            (!selector.matches(&n.labels, n.name_sym, interner)).then(|| ClaimNodes {
                claim: full(cluster, pod, name),
                terms: selector_misses(selector, n, interner),
            })
        })
        .collect();
    vec![reason(
        Plugin::DynamicResources,
        Code::UnschedulableAndUnresolvable,
        dynamic_resources::REASON_NOT_AVAILABLE,
        Detail::ResourceClaimNodes { claims },
    )]
}

/// When the pod's volumes keep it off some nodes: which nodes they reach
/// at all (no VolumeBinding or VolumeZone reason there), since only those
/// can ever run it, whatever else changes.
pub(crate) fn reach_note(cluster: &ClusterState, pod: &Pod, nodes: &[NodeVerdict]) -> Option<Note> {
    let volume = |v: &NodeVerdict| {
        v.reasons
            .iter()
            .any(|r| r.plugin == "VolumeBinding" || r.plugin == "VolumeZone")
    };
    if !nodes.iter().any(volume) {
        return None;
    }
    let blocked: rustc_hash::FxHashSet<&str> = nodes
        .iter()
        .filter(|v| volume(v))
        .map(|v| v.node.as_str())
        .collect();
    let reach: Vec<&str> = cluster
        .nodes()
        .iter()
        .map(|n| &*n.name)
        .filter(|n| !blocked.contains(n))
        .collect();
    let claims: Vec<String> = pod
        .volumes
        .claims
        .iter()
        .map(|c| full(cluster, pod, &c.claim))
        .collect();
    let total = cluster.nodes().len();
    const SHOWN: usize = 5;
    let mut names = reach[..reach.len().min(SHOWN)].join(", ");
    if reach.len() > SHOWN {
        names.push_str(&format!(" and {} more", reach.len() - SHOWN));
    }
    let text = if reach.is_empty() {
        format!(
            "The pod's volumes (claim {}) reach none of the {total} nodes: no change to pods or \
             rules can place it; only a node its volumes reach (or other volumes) can.",
            claims.join(", ")
        )
    } else {
        format!(
            "The pod's volumes (claim {}) reach {} of the {total} nodes: {names}. Only those, \
             or a node added where they are, can ever run it.",
            claims.join(", "),
            reach.len()
        )
    };
    Some(Note {
        kind: NoteKind::Info,
        term: None,
        text,
    })
}
