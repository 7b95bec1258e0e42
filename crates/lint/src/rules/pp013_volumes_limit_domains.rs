//! PP013 volumes-limit-domains: the workload's volumes reach fewer
//! topology domains than its required anti-affinity or DoNotSchedule
//! spread needs. A StatefulSet's claims (its `volumeClaimTemplates`, or a
//! claim its pods share) can only be provisioned or bound where their
//! storage reaches: a StorageClass whose `allowedTopologies` name one zone,
//! or local PersistentVolumes on a few nodes. Required zone anti-affinity
//! then places one replica per reachable zone, and a zone spread with
//! `maxSkew: 1` one per reachable zone too (the unreachable zones stay
//! empty, so the global minimum is 0): the other replicas stay Pending with
//! `didn't match PersistentVolume's node affinity` or `didn't find
//! available persistent volumes to bind`, although PP006 counts enough
//! domains among the nodes.
//!
//! The verdict is the engine's: the manifests applied and placed with the
//! volume plugins (VolumeBinding, VolumeZone) must leave replicas Pending.
//! The fix, scaling to the replicas the storage can hold, and the ways out
//! in the notes (the StorageClass reaching every eligible domain, the term
//! made preferred) are each verified by applying the change to the
//! manifests and placing everything again.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{PodSpec, WeightedPodAffinityTerm};
use podplace_engine::NodeId;
use podplace_model::intern::Sym;
use podplace_model::inventory::Inventory;
use podplace_model::objects::WhenUnsatisfiable;
use podplace_model::selector::{NodeSelector, Requirement};
use podplace_model::storage::Storage;
use podplace_model::validate::FieldPath;
use podplace_model::workloads::WorkloadRef;
use serde_json::Value;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list};
use crate::world::{Subject, World};
use crate::{LintError, LintOptions, Sink};

/// PP013.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP013",
    name: "volumes-limit-domains",
    summary:
        "anti-affinity or spread needs more topology domains than the workload's volumes reach",
    default_severity: Severity::Error,
};

/// The provisioner of static volumes (local PersistentVolumes).
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// Where one claim of the workload can have its volume.
struct Reach {
    /// The nodes (among all) its volume can be on or reach.
    nodes: BTreeSet<NodeId>,
    /// What limits it, in words.
    why: String,
    /// The StorageClass that limits it by `allowedTopologies`, if that is
    /// what does.
    class: Option<String>,
    /// A class without a provisioner: its name and the static volumes a
    /// claim of the workload may bind (each replica needs one).
    volumes: Option<(String, Vec<podplace_model::storage::VolumeId>)>,
}

/// A node selector in words (`topology.kubernetes.io/zone=a`).
fn selector_text(world: &World<'_>, s: &NodeSelector) -> String {
    let req = |r: &Requirement| match r {
        Requirement::In(k, vs) => format!(
            "{} in ({})",
            world.text(*k),
            vs.iter()
                .map(|v| world.text(*v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Requirement::NotIn(k, vs) => format!(
            "{} notin ({})",
            world.text(*k),
            vs.iter()
                .map(|v| world.text(*v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Requirement::Exists(k) => world.text(*k).to_string(),
        Requirement::DoesNotExist(k) => format!("!{}", world.text(*k)),
        Requirement::Gt(k, b) => format!("{}>{b}", world.text(*k)),
        Requirement::Lt(k, b) => format!("{}<{b}", world.text(*k)),
    };
    s.terms
        .iter()
        .map(|t| t.labels.iter().map(req).collect::<Vec<_>>().join(", "))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Where a claim of `class` asking for `request` bytes can have its volume:
/// `None` when nothing limits it (a provisioner without
/// `allowedTopologies` provisions in any domain) or the class is unknown.
/// Static volumes count when available or bound to one of the workload's
/// own claims (`own`: the manifests' placement bound them).
fn class_reach(
    world: &World<'_>,
    storage: &Storage,
    class: &str,
    request: Option<i64>,
    own: &dyn Fn(&podplace_model::storage::ClaimRef) -> bool,
) -> Option<Reach> {
    let sc = storage.classes.get(class)?;
    let all: Vec<NodeId> = world.state.node_ids().collect();
    if let Some(allowed) = &sc.allowed_topologies {
        let nodes = all
            .iter()
            .copied()
            .filter(|&n| {
                let node = world.state.node(n);
                allowed.matches(&node.labels, node.name_sym, world.state.interner())
            })
            .collect();
        return Some(Reach {
            nodes,
            why: format!(
                "StorageClass {class} provisions only where its allowedTopologies allow ({})",
                selector_text(world, allowed)
            ),
            class: Some(class.to_string()),
            volumes: None,
        });
    }
    if &*sc.provisioner != NO_PROVISIONER {
        return None;
    }
    // Static volumes: only where an available one of the class (big
    // enough) reaches.
    let volumes: Vec<_> = storage
        .volumes
        .iter()
        .enumerate()
        .map(|(i, v)| (podplace_model::storage::VolumeId(i as u32), v))
        .filter(|(_, v)| {
            &*v.class == class
                && !v.deleting
                && match &v.claim_ref {
                    None => v.available,
                    Some(r) => own(r),
                }
                && request.is_none_or(|r| v.capacity >= r)
        })
        .collect();
    let nodes = all
        .iter()
        .copied()
        .filter(|&n| {
            let node = world.state.node(n);
            volumes
                .iter()
                .any(|(_, v)| v.reaches(&node.labels, node.name_sym, world.state.interner()))
        })
        .collect();
    Some(Reach {
        nodes,
        why: format!(
            "StorageClass {class} has no provisioner: its {} available PersistentVolume(s) are its only volumes",
            volumes.len()
        ),
        class: None,
        volumes: Some((class.to_string(), volumes.iter().map(|(id, _)| *id).collect())),
    })
}

/// The reach of every claim of the workload's pods that is limited.
fn workload_reach(world: &World<'_>, s: &Subject<'_>) -> Vec<Reach> {
    let storage = world.state.storage();
    let ns = world.state.interner().lookup(&s.namespace);
    let mut out = Vec::new();
    let sts_claim = |r: &podplace_model::storage::ClaimRef| {
        Some(r.namespace) == ns
            && r.name.rsplit_once('-').is_some_and(|(base, ordinal)| {
                ordinal.parse::<u32>().is_ok() && base.ends_with(&format!("-{}", s.name))
            })
    };
    let templates = ns.and_then(|ns| {
        storage
            .claim_templates
            .get(&(ns, Box::from(s.name.as_str())))
    });
    if matches!(s.controller, crate::world::Controller::StatefulSet) {
        for (_, c) in templates.into_iter().flatten() {
            let class = if c.default_class {
                storage.default_class.clone().unwrap_or_default()
            } else {
                c.class.clone()
            };
            if let Some(r) = class_reach(world, storage, &class, c.request, &sts_claim) {
                out.push(r);
            }
        }
    }
    // Claims the pods name (shared by every replica).
    for pc in s.pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
        let Some(c) = ns.and_then(|ns| storage.claim(ns, &pc.claim)) else {
            continue;
        };
        if !c.volume_name.is_empty() {
            let Some(v) = storage.volume_named(&c.volume_name) else {
                continue;
            };
            let v = storage.volume(v);
            let Some(affinity) = &v.node_affinity else {
                continue;
            };
            let nodes = world
                .state
                .node_ids()
                .filter(|&n| {
                    let node = world.state.node(n);
                    affinity.matches(&node.labels, node.name_sym, world.state.interner())
                })
                .collect();
            out.push(Reach {
                nodes,
                why: format!(
                    "claim {} is bound to PersistentVolume {}, which reaches only {}",
                    c.name,
                    v.name,
                    selector_text(world, affinity)
                ),
                class: None,
                volumes: None,
            });
        } else if let Some(r) = class_reach(world, storage, &c.class, c.request, &|_| false) {
            out.push(r);
        }
    }
    out
}

/// Placing the manifests again with `edit` applied: how many of the
/// workload's pods were placed, of how many.
fn replay(
    world: &World<'_>,
    workload: &WorkloadRef,
    edit: impl FnOnce(&mut Inventory),
) -> Option<(usize, usize)> {
    let mut manifests = world.manifests.clone();
    edit(&mut manifests);
    let mut applied = crate::rollout::merge(&manifests, world.snapshot);
    podplace_model::expand::expand_workloads(&mut applied);
    applied.warnings.clear();
    applied.notices.clear();
    let placed = podplace_world::World::build(applied, world.placed.setup(), world.seed).ok()?;
    world.record_sampling(placed.cache().sampling_tally());
    let state = placed.state();
    let mut n = (0, 0);
    for (id, _) in state.live_pods() {
        if state.pod(id).finished || placed.workload(id).as_ref() != workload {
            continue;
        }
        n.1 += 1;
        if state.pod_node(id).is_some() {
            n.0 += 1;
        }
    }
    Some(n)
}

/// The replica count and pod spec of subject `s` in `inv` (its
/// Deployment's, StatefulSet's, ReplicaSet's or ReplicationController's).
fn workload_mut<'i>(
    inv: &'i mut Inventory,
    s: &Subject<'_>,
) -> Option<(&'i mut Option<i32>, &'i mut PodSpec)> {
    let is = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.as_deref() == Some(s.name.as_str())
            && m.namespace.as_deref().unwrap_or("default") == s.namespace
    };
    use podplace_model::workloads::WorkloadKind as K;
    match s.kind {
        K::StatefulSet => inv
            .stateful_sets
            .iter_mut()
            .find(|x| is(&x.object.metadata))
            .and_then(|x| x.object.spec.as_mut())
            .and_then(|x| Some((&mut x.replicas, x.template.spec.as_mut()?))),
        K::Deployment => inv
            .deployments
            .iter_mut()
            .find(|x| is(&x.object.metadata))
            .and_then(|x| x.object.spec.as_mut())
            .and_then(|x| Some((&mut x.replicas, x.template.spec.as_mut()?))),
        K::ReplicaSet => inv
            .replica_sets
            .iter_mut()
            .find(|x| is(&x.object.metadata))
            .and_then(|x| x.object.spec.as_mut())
            .and_then(|x| Some((&mut x.replicas, x.template.as_mut()?.spec.as_mut()?))),
        K::ReplicationController => inv
            .replication_controllers
            .iter_mut()
            .find(|x| is(&x.object.metadata))
            .and_then(|x| x.object.spec.as_mut())
            .and_then(|x| Some((&mut x.replicas, x.template.as_mut()?.spec.as_mut()?))),
        _ => None,
    }
}

/// What limits the replicas: a term or a spread constraint.
struct Need {
    /// Topology key.
    key: Sym,
    /// Where it is written.
    path: FieldPath,
    /// The label at that place.
    label: String,
    /// Replicas the reachable domains hold.
    capacity: usize,
    /// Index of the required anti-affinity term, when it is one.
    term: Option<usize>,
}

/// Reports anti-affinity and spread the workload's volumes cannot satisfy.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes()
        || world.state.storage().is_empty() && world.state.storage().classes.is_empty()
    {
        return Ok(());
    }
    for s in &world.subjects {
        let replicas = s.replicas.unwrap_or(1);
        if !s.is_replicated() || replicas < 2 {
            continue;
        }
        let eligible = world.eligible_nodes(&s.pod);
        if eligible.is_empty() {
            continue;
        }
        let reaches = workload_reach(world, s);
        if reaches.is_empty() {
            continue;
        }
        let reachable: Vec<NodeId> = eligible
            .iter()
            .copied()
            .filter(|n| reaches.iter().all(|r| r.nodes.contains(n)))
            .collect();
        let mut needs = Vec::new();
        for t in s
            .terms()
            .iter()
            .filter(|t| t.kind.is_anti() && t.kind.is_required())
        {
            if !world.term_selects(t.compiled, &s.pod) {
                continue;
            }
            let key = t.compiled.topology_key;
            needs.push(Need {
                key,
                path: t.item_path.clone(),
                label: format!("at most one pod per {} domain", world.text(key)),
                capacity: world.domains(&reachable, key).len(),
                term: Some(t.index),
            });
        }
        for (_, c, path) in s.spread() {
            if c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule
                || !c.selector.matches(&s.pod.labels, world.state.interner())
            {
                continue;
            }
            let key = c.topology_key;
            let reached = world.domains(&reachable, key).len();
            // Unreachable domains stay empty: the global minimum is 0.
            if world.domains(&eligible, key).len() <= reached {
                continue;
            }
            needs.push(Need {
                key,
                path,
                label: format!(
                    "maxSkew {} over {} with domains the volumes cannot reach",
                    c.max_skew,
                    world.text(key)
                ),
                capacity: reached * usize::try_from(c.max_skew.max(1)).unwrap_or(1),
                term: None,
            });
        }
        let replicas_n = usize::try_from(replicas).unwrap_or(0);
        let mut reported = false;
        for need in needs {
            let key_text = world.text(need.key).to_string();
            let all_domains = world.domains(&eligible, need.key);
            let reached = world.domains(&reachable, need.key);
            if reached.len() >= all_domains.len() || replicas_n <= need.capacity {
                continue;
            }
            // The engine's verdict on the manifests as written.
            let (placed, total) = world.placement_of(&s.workload);
            if total == 0 || placed >= total {
                continue;
            }
            let pending = total - placed;
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &need.path),
                need.label.clone(),
                format!(
                    "{replicas} replicas but the workload's volumes reach only {} of the {} eligible {key_text} domain(s): placed with its volumes, {pending} pod(s) stay Pending",
                    reached.len(),
                    all_domains.len()
                ),
            );
            for r in &reaches {
                f.notes.push(r.why.clone());
            }
            f.notes.push(format!(
                "{key_text} domains the volumes reach: {}; eligible (node selector, affinity, taints, cordons): {}",
                if reached.is_empty() {
                    "none".to_string()
                } else {
                    list(&reached.iter().cloned().collect::<Vec<_>>(), 8)
                },
                list(&all_domains.iter().cloned().collect::<Vec<_>>(), 8)
            ));
            let templates_path = FieldPath::of(&["spec", "volumeClaimTemplates"]);
            if world.is_written(&s.origin, &templates_path) {
                f.related.push(Related {
                    message: "the claims are made from these templates".to_string(),
                    object: s.id.clone(),
                    location: Some(world.locate(&s.origin, &templates_path)),
                });
            }
            for r in reaches.iter().filter_map(|r| r.class.as_ref()) {
                if let Some(sc) = world
                    .manifests
                    .storage_classes
                    .iter()
                    .find(|c| c.object.metadata.name.as_deref() == Some(r.as_str()))
                {
                    f.related.push(Related {
                        message: format!("StorageClass {r} reaches only these topologies"),
                        object: format!("StorageClass/{r}"),
                        location: Some(
                            world.locate(&sc.origin, &FieldPath::of(&["allowedTopologies"])),
                        ),
                    });
                }
            }
            let capacity = need.capacity;
            let replicas_path = FieldPath::of(&["spec", "replicas"]);
            let scaled = replay(world, &s.workload, |inv| {
                if let Some((replicas, _)) = workload_mut(inv, s) {
                    *replicas = Some(i32::try_from(capacity).unwrap_or(0));
                }
            });
            let verified = scaled.filter(|&(p, t)| p == t && t == capacity).map(|_| {
                format!(
                    "placing the manifests again with {capacity} replica(s) (the engine, with the volumes) places every one"
                )
            });
            if capacity > 0 {
                f.fix = Some(Fix {
                    description: format!(
                        "run {capacity} replica(s), as many as the {key_text} domains the volumes reach can hold"
                    ),
                    patch: MergePatch::new()
                        .set(&replicas_path, Value::from(capacity))
                        .to_yaml(),
                    verified,
                });
            }
            let mut ways = Vec::new();
            // The StorageClass reaching every eligible domain.
            for class in reaches.iter().filter_map(|r| r.class.clone()) {
                let missing: Vec<String> = all_domains.difference(&reached).cloned().collect();
                let key_owned = key_text.clone();
                let widened = replay(world, &s.workload, |inv| {
                    for sc in &mut inv.storage_classes {
                        if sc.object.metadata.name.as_deref() != Some(class.as_str()) {
                            continue;
                        }
                        for t in sc.object.allowed_topologies.iter_mut().flatten() {
                            for e in t.match_label_expressions.iter_mut().flatten() {
                                if e.key == key_owned {
                                    e.values.extend(missing.iter().cloned());
                                }
                            }
                        }
                    }
                });
                if widened.is_some_and(|(p, t)| p == t && t > 0) {
                    ways.push(format!(
                        "a StorageClass whose allowedTopologies also allow {key_text} {} (StorageClasses cannot be edited: create one and point the claim templates at it): placing again places all {replicas}",
                        missing.join(", ")
                    ));
                }
            }
            // The anti-affinity term made preferred.
            if let Some(i) = need.term {
                let soft = replay(world, &s.workload, |inv| {
                    let Some((_, spec)) = workload_mut(inv, s) else {
                        return;
                    };
                    let Some(anti) = spec
                        .affinity
                        .as_mut()
                        .and_then(|a| a.pod_anti_affinity.as_mut())
                    else {
                        return;
                    };
                    let Some(required) = anti
                        .required_during_scheduling_ignored_during_execution
                        .as_mut()
                    else {
                        return;
                    };
                    if i < required.len() {
                        let t = required.remove(i);
                        anti.preferred_during_scheduling_ignored_during_execution
                            .get_or_insert_with(Vec::new)
                            .push(WeightedPodAffinityTerm {
                                weight: 100,
                                pod_affinity_term: t,
                            });
                    }
                });
                if soft.is_some_and(|(p, t)| p == t && t > 0) {
                    ways.push(format!(
                        "make the term preferred (weight 100): placing again places all {replicas}, several in a {key_text} domain"
                    ));
                }
            }
            if !ways.is_empty() {
                f.notes
                    .push(format!("other verified ways out: {}", ways.join("; ")));
            }
            f.help = Some(
                "a volume cannot follow its pod out of the nodes it reaches: give the workload storage in every domain its rules spread it over, or fewer replicas".to_string(),
            );
            sink.push(&s.ignored, f);
            reported = true;
            break;
        }
        if !reported && matches!(s.controller, crate::world::Controller::StatefulSet) {
            volumes_run_out(world, s, &reaches, &eligible, replicas_n, sink);
        }
    }
    Ok(())
}

/// A StatefulSet whose claims bind static volumes (a class without a
/// provisioner), with more replicas than such volumes the nodes its pods
/// may use can mount: each replica needs one of its own, so the rest stay
/// Pending (`didn't find available persistent volumes to bind`), whatever
/// the spread rules.
fn volumes_run_out(
    world: &World<'_>,
    s: &Subject<'_>,
    reaches: &[Reach],
    eligible: &[NodeId],
    replicas: usize,
    sink: &mut Sink,
) {
    let storage = world.state.storage();
    for r in reaches {
        let Some((class, volumes)) = &r.volumes else {
            continue;
        };
        let usable = volumes
            .iter()
            .filter(|&&v| {
                eligible.iter().any(|&n| {
                    let node = world.state.node(n);
                    storage
                        .volume(v)
                        .reaches(&node.labels, node.name_sym, world.state.interner())
                })
            })
            .count();
        if replicas <= usable {
            continue;
        }
        let (placed, total) = world.placement_of(&s.workload);
        if total == 0 || placed >= total {
            return;
        }
        let templates_path = FieldPath::of(&["spec", "volumeClaimTemplates"]);
        let path = world.first_written(
            &s.origin,
            &[templates_path, FieldPath::of(&["spec", "replicas"])],
        );
        let mut f = finding(
            &INFO,
            &s.id,
            world.locate(&s.origin, &path),
            "each replica needs a volume of its own",
            format!(
                "{replicas} replicas but only {usable} available PersistentVolume(s) of StorageClass {class} can be mounted on the nodes its pods may use: placed with its volumes, {} pod(s) stay Pending",
                total - placed
            ),
        );
        f.notes.push(r.why.clone());
        let replicas_path = FieldPath::of(&["spec", "replicas"]);
        let scaled = replay(world, &s.workload, |inv| {
            if let Some((n, _)) = workload_mut(inv, s) {
                *n = Some(i32::try_from(usable).unwrap_or(0));
            }
        });
        if usable > 0 {
            f.fix = Some(Fix {
                description: format!("run {usable} replica(s), one per available volume"),
                patch: MergePatch::new()
                    .set(&replicas_path, Value::from(usable))
                    .to_yaml(),
                verified: scaled.filter(|&(p, t)| p == t && t == usable).map(|_| {
                    format!("placing the manifests again with {usable} replica(s) (the engine, with the volumes) places every one")
                }),
            });
        }
        f.help = Some(format!(
            "or add PersistentVolumes of StorageClass {class} on the nodes the pods may use (a local volume provisioner makes one per disk)"
        ));
        sink.push(&s.ignored, f);
        return;
    }
}
