//! Fixes: concrete patches, each applied to a copy of the world and
//! verified by scheduling the pod again. Only fixes the engine shows to
//! work are offered, with the node the pod then lands on.
//!
//! Candidates, in order of preference:
//! 0. a topologyKey no node carries replaced by the close key the nodes
//!    carry (a typo, as lint PP007 finds: [`crate::topology_typo`]);
//! 1. a required podAffinity with a negative selector rewritten as the
//!    podAntiAffinity its author meant (story 3);
//! 2. another workload's over-broad anti-affinity selector narrowed to its
//!    own pods (story 1);
//! 3. the pod's own over-broad anti-affinity narrowed to its own pods;
//! 4. a Deployment strategy that lets an old pod go first when old pods'
//!    anti-affinity holds every node (story 4);
//! 5. when the pod's own workload holds it off every node: a node like an
//!    existing one, the workload scaled to the domains it can use, the
//!    rule made preferred ([`crate::self_block`]);
//! 6. uncordoning a node, tolerating a taint, labelling a node; tolerating
//!    a control-plane taint comes last (it moves the workload onto
//!    control-plane nodes).

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use podplace_engine::{ClusterState, NodeId, Outcome, PodId, TermId};
use podplace_model::intstr::resolve_fenceposts;
use podplace_model::objects::Pod;
use podplace_model::workloads::{WorkloadKind, WorkloadRef};
use podplace_world::{WhatIf, World};
use serde_json::{json, Map, Value};

use crate::analyze::{api_term, Prepared};
use crate::model::{Detail, Fix, NodeVerdict, Note, NoteKind, RuleOwner, TermKind};
use crate::notes::only_negative;
use crate::yaml::{selector_summary, to_yaml};

/// Taints kubeadm and managed offerings put on control-plane nodes.
const CONTROL_PLANE_TAINTS: [&str; 2] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// At most this many fixes are verified and offered.
pub const MAX_FIXES: usize = 4;

/// Labels controllers add to the pods they create; never part of a
/// workload's own identity.
const CONTROLLER_LABELS: &[&str] = &[
    "pod-template-hash",
    "controller-revision-hash",
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "pod-template-generation",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "job-name",
    "batch.kubernetes.io/job-completion-index",
];

/// A node added by a fix: a copy of `like` under `name`, with `labels` set.
#[derive(Debug, Clone)]
pub(crate) struct NewNode {
    /// The node it copies (size, labels, taints).
    pub like: NodeId,
    /// Its name (and hostname).
    pub name: String,
    /// Labels set on the copy.
    pub labels: Vec<(String, String)>,
}

/// A change to the world, applied to a copy for verification.
#[derive(Debug, Default, Clone)]
pub(crate) struct Change {
    /// The explained pod as it would be recreated.
    pub incoming: Option<core::Pod>,
    /// Existing pods replaced by patched versions (on the same node).
    pub replace: Vec<(PodId, core::Pod)>,
    /// Pods removed.
    pub remove: Vec<PodId>,
    /// Nodes uncordoned.
    pub uncordon: Vec<NodeId>,
    /// Node labels set.
    pub label: Vec<(NodeId, String, String)>,
    /// A node added.
    pub add_node: Option<NewNode>,
    /// The workload scaled to this many replicas, those still running:
    /// the explained pod is not created, so it is not scheduled.
    pub scale_to: Option<(usize, Vec<PodId>)>,
}

/// Describes a verification run, given where the pod landed.
pub(crate) type Describe = Box<dyn Fn(&ClusterState, &Outcome, NodeId) -> String>;

/// A fix before verification.
pub(crate) struct Candidate {
    pub title: String,
    pub target: String,
    pub patch: Value,
    pub command: String,
    pub rationale: String,
    pub change: Change,
    /// Describes the verification run.
    pub describe: Describe,
}

/// What the fix builders read.
pub(crate) struct Context<'a> {
    pub world: &'a World,
    /// The explanation's what-if state (the pod taken off its node).
    pub state: &'a ClusterState,
    pub pod_id: PodId,
    pub pod: &'a Pod,
    pub api_pod: Option<&'a core::Pod>,
    pub workload: WorkloadRef,
    pub verdicts: &'a [(NodeId, NodeVerdict)],
    pub prepared: &'a Prepared,
    pub pending: bool,
}

/// The candidate fixes for one pod, with the notes their analysis
/// produced (a stalled rollout). Nothing is verified yet.
pub(crate) fn candidates(ctx: &Context<'_>) -> (Vec<Candidate>, Vec<Note>) {
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut notes = Vec::new();
    candidates.extend(rewrite_negative_affinity(ctx));
    if ctx.pending {
        candidates.extend(crate::topology_typo::candidates(ctx));
        candidates.extend(narrow_existing(ctx));
        candidates.extend(narrow_own(ctx));
        candidates.extend(rollout_strategy(ctx, &mut notes));
        candidates.extend(crate::self_block::candidates(ctx));
        candidates.extend(uncordon(ctx));
        // Tolerating a control-plane taint moves the workload onto
        // control-plane nodes: every other fix comes first.
        let (control_plane, other): (Vec<Candidate>, Vec<Candidate>) = tolerate(ctx)
            .into_iter()
            .partition(|c| CONTROL_PLANE_TAINTS.iter().any(|t| c.title.contains(t)));
        candidates.extend(other);
        candidates.extend(label_node(ctx));
        candidates.extend(control_plane);
    }
    (candidates, notes)
}

/// Verifies candidates in order and keeps the first [`MAX_FIXES`] that
/// work. Each change is applied to the explanation's what-if, the pod is
/// scheduled, and the change is undone, so the what-if ends as it began
/// (copying a 150,000-pod state per candidate would cost more than the
/// answer).
pub(crate) fn verify_all(
    what_if: &mut WhatIf<'_>,
    pod: &Pod,
    candidates: Vec<Candidate>,
) -> Vec<Fix> {
    let mut out = Vec::new();
    for c in candidates {
        if out.len() >= MAX_FIXES {
            break;
        }
        if let Some(fix) = verify(what_if, pod, c) {
            out.push(fix);
        }
    }
    out
}

/// Applies one candidate, schedules the pod, and undoes the change.
fn verify(what_if: &mut WhatIf<'_>, pod: &Pod, c: Candidate) -> Option<Fix> {
    if let Some((replicas, running)) = &c.change.scale_to {
        // The pod is not created: what is checked is that every replica
        // left still runs.
        let state = what_if.state();
        let nodes: Vec<String> = running
            .iter()
            .filter_map(|&id| state.pod_node(id))
            .map(|n| state.node(n).name.to_string())
            .collect();
        if nodes.len() != *replicas {
            return None;
        }
        return Some(Fix {
            title: c.title,
            target: c.target,
            patch: to_yaml(&c.patch),
            command: c.command,
            rationale: c.rationale,
            lands_on: "nowhere: the pod is not created".to_string(),
            verification: format!(
                "with {replicas} replica(s) every pod of the workload is placed ({}) and none stays Pending",
                nodes.join(", ")
            ),
        });
    }
    let undo = apply(what_if.state_mut(), &c.change);
    let result = (|| {
        let pod = match &c.change.incoming {
            Some(api) => {
                let mut p = what_if.state_mut().compile_pod(api).ok()?;
                p.node_name = None;
                p
            }
            None => pod.clone(),
        };
        let outcome = what_if.schedule(&pod);
        let node = outcome.chosen?;
        let state = what_if.state();
        Some((
            (c.describe)(state, &outcome, node),
            state.node(node).name.to_string(),
        ))
    })();
    revert(what_if.state_mut(), undo);
    let (verification, lands_on) = result?;
    Some(Fix {
        title: c.title,
        target: c.target,
        patch: to_yaml(&c.patch),
        command: c.command,
        rationale: c.rationale,
        lands_on,
        verification,
    })
}

/// What [`apply`] did, for [`revert`].
#[derive(Default)]
struct Undo {
    /// Pods taken off their nodes (removed or replaced): bound again.
    unbound: Vec<(PodId, NodeId)>,
    /// Replacement pods added: removed.
    added: Vec<PodId>,
    /// Nodes uncordoned: cordoned again.
    uncordoned: Vec<NodeId>,
    /// Nodes relabelled, with their labels before.
    relabelled: Vec<(NodeId, podplace_model::labels::Labels)>,
    /// A node added: removed.
    added_node: Option<NodeId>,
}

/// Applies a change through the cluster's own bind/unbind, so every index
/// follows; a pod that fails to compile is left out (verification fails).
fn apply(cluster: &mut ClusterState, change: &Change) -> Undo {
    let mut undo = Undo::default();
    for &id in &change.remove {
        if let Some(node) = cluster.pod_node(id) {
            cluster.unbind(id);
            undo.unbound.push((id, node));
        }
    }
    for (id, api) in &change.replace {
        let Some(node) = cluster.pod_node(*id) else {
            continue;
        };
        cluster.unbind(*id);
        undo.unbound.push((*id, node));
        let Ok(mut p) = cluster.compile_pod(api) else {
            continue;
        };
        // A name of its own, so the original keeps its name in the cluster.
        p.name = format!("{}~patched", p.name).into();
        p.node_name = Some(cluster.node(node).name.clone());
        undo.added.push(cluster.add_pod(p));
    }
    for &n in &change.uncordon {
        if cluster.node(n).unschedulable {
            set_unschedulable(cluster, n, false);
            undo.uncordoned.push(n);
        }
    }
    for (n, k, v) in &change.label {
        let before = cluster.node(*n).labels.clone();
        let (k, v) = (cluster.intern(k), cluster.intern(v));
        relabel(cluster, *n, |labels| labels.insert(k, v));
        undo.relabelled.push((*n, before));
    }
    if let Some(new) = &change.add_node {
        let mut node = cluster.node(new.like).clone();
        node.name = new.name.as_str().into();
        node.name_sym = cluster.intern(&new.name);
        for (k, v) in &new.labels {
            let (k, v) = (cluster.intern(k), cluster.intern(v));
            node.labels.insert(k, v);
        }
        undo.added_node = Some(cluster.insert_node(node));
    }
    undo
}

/// Changes a node's labels: a changed copy of the node is put back, so
/// every group counts its pods under the new labels.
fn relabel(
    cluster: &mut ClusterState,
    n: NodeId,
    change: impl FnOnce(&mut podplace_model::labels::Labels),
) {
    let mut node = cluster.node(n).clone();
    change(&mut node.labels);
    cluster.replace_node(n, node);
}

/// Cordons or uncordons a node (a changed copy put back).
fn set_unschedulable(cluster: &mut ClusterState, n: NodeId, unschedulable: bool) {
    let mut node = cluster.node(n).clone();
    node.unschedulable = unschedulable;
    cluster.replace_node(n, node);
}

/// Undoes [`apply`], last change first.
fn revert(cluster: &mut ClusterState, undo: Undo) {
    if let Some(n) = undo.added_node {
        cluster.remove_node(n);
    }
    for (n, before) in undo.relabelled.into_iter().rev() {
        relabel(cluster, n, |labels| *labels = before);
    }
    for n in undo.uncordoned {
        set_unschedulable(cluster, n, true);
    }
    for id in undo.added {
        cluster.remove_pod(id);
    }
    for (id, node) in undo.unbound.into_iter().rev() {
        cluster.bind(id, node);
    }
}

// ---------------------------------------------------------------------------
// Where a workload's pod spec lives, and patches against it.

/// A workload's pod template (or a bare pod's spec) and the JSON path to
/// its pod spec.
pub(crate) struct SpecAt {
    pub labels: Vec<(String, String)>,
    pub spec: core::PodSpec,
    pub path: &'static [&'static str],
}

pub(crate) fn spec_of(
    world: &World,
    w: &WorkloadRef,
    fallback: Option<&core::Pod>,
) -> Option<SpecAt> {
    let inv = world.inventory();
    let same = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.as_deref() == Some(w.name.as_str())
            && m.namespace.as_deref().unwrap_or("default") == w.namespace
    };
    const TEMPLATE: &[&str] = &["spec", "template", "spec"];
    let template: Option<(core::PodTemplateSpec, &'static [&'static str])> = match &w.kind {
        WorkloadKind::Deployment => inv
            .deployments
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .map(|s| (s.template.clone(), TEMPLATE)),
        WorkloadKind::StatefulSet => inv
            .stateful_sets
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .map(|s| (s.template.clone(), TEMPLATE)),
        WorkloadKind::DaemonSet => inv
            .daemon_sets
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .map(|s| (s.template.clone(), TEMPLATE)),
        WorkloadKind::ReplicaSet => inv
            .replica_sets
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .and_then(|s| s.template.clone())
            .map(|t| (t, TEMPLATE)),
        WorkloadKind::Job => inv
            .jobs
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .map(|s| (s.template.clone(), TEMPLATE)),
        WorkloadKind::CronJob => inv
            .cron_jobs
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.job_template.spec.as_ref())
            .map(|s| {
                (
                    s.template.clone(),
                    &["spec", "jobTemplate", "spec", "template", "spec"][..],
                )
            }),
        WorkloadKind::ReplicationController => inv
            .replication_controllers
            .iter()
            .find(|d| same(&d.object.metadata))
            .and_then(|d| d.object.spec.as_ref())
            .and_then(|s| s.template.clone())
            .map(|t| (t, TEMPLATE)),
        _ => None,
    };
    if let Some((t, path)) = template {
        let labels = own_labels(t.metadata.as_ref().and_then(|m| m.labels.as_ref()));
        return Some(SpecAt {
            labels,
            spec: t.spec.unwrap_or_default(),
            path,
        });
    }
    // The workload object was not loaded (or it is a bare pod): use a pod.
    let pod = fallback?;
    Some(SpecAt {
        labels: own_labels(pod.metadata.labels.as_ref()),
        spec: pod.spec.clone().unwrap_or_default(),
        path: if w.kind == WorkloadKind::Pod {
            &["spec"]
        } else {
            TEMPLATE
        },
    })
}

fn own_labels(
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Vec<(String, String)> {
    labels
        .into_iter()
        .flatten()
        .filter(|(k, _)| !CONTROLLER_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `leaf` nested under `path`.
pub(crate) fn nest(path: &[&str], leaf: Value) -> Value {
    path.iter()
        .rev()
        .fold(leaf, |acc, key| json!({ *key: acc }))
}

/// How to apply a patch to a target.
pub(crate) fn command(w: &WorkloadRef, patch: &Value) -> String {
    if w.kind == WorkloadKind::Pod {
        return format!(
            "a Pod's spec cannot be changed in place: apply the patch to its manifest and \
             recreate it (kubectl replace --force -f pod.yaml -n {})",
            w.namespace
        );
    }
    let json = serde_json::to_string(patch).unwrap_or_default();
    format!(
        "kubectl patch {} {} -n {} --type=strategic -p '{}'",
        w.kind.as_str().to_lowercase(),
        w.name,
        w.namespace,
        json.replace('\'', "'\\''")
    )
}

pub(crate) fn affinity_value(spec: &core::PodSpec) -> Value {
    spec.affinity
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
        .unwrap_or_else(|| json!({}))
}

pub(crate) fn list_at(affinity: &Value, kind: TermKind) -> Vec<Value> {
    let (outer, inner) = field_of(kind);
    affinity
        .get(outer)
        .and_then(|o| o.get(inner))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn field_of(kind: TermKind) -> (&'static str, &'static str) {
    (kind.affinity_field(), kind.list_field())
}

/// A copy of an API pod with one of its rule lists replaced.
pub(crate) fn with_list(pod: &core::Pod, kind: TermKind, list: &[Value]) -> Option<core::Pod> {
    let mut value = serde_json::to_value(pod).ok()?;
    let (outer, inner) = field_of(kind);
    let spec = value.get_mut("spec")?.as_object_mut()?;
    let affinity = spec.entry("affinity").or_insert_with(|| json!({}));
    let o = affinity
        .as_object_mut()?
        .entry(outer)
        .or_insert_with(|| json!({}));
    if list.is_empty() {
        o.as_object_mut()?.remove(inner);
    } else {
        o.as_object_mut()?
            .insert(inner.to_string(), Value::Array(list.to_vec()));
    }
    serde_json::from_value(value).ok()
}

fn labels_value(labels: &[(String, String)]) -> Value {
    Value::Object(
        labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<String, Value>>(),
    )
}

pub(crate) fn pod_id_by_name(cluster: &ClusterState, full: &str) -> Option<PodId> {
    let (ns, name) = full.split_once('/')?;
    cluster.pod_id(ns, name)
}

/// Bound pods holding a required anti-affinity term, and of a given workload.
fn holders_of(ctx: &Context<'_>, term: TermId, w: &WorkloadRef) -> Vec<PodId> {
    let cluster = ctx.state;
    let mut out: Vec<PodId> = Vec::new();
    for (id, _) in cluster.bound_pods() {
        let Some(entry) = cluster.pod_entry(id) else {
            continue;
        };
        if entry.terms.required_anti_affinity.contains(&term) && *ctx.world.workload(id) == *w {
            out.push(id);
        }
    }
    out
}

pub(crate) fn lands_sentence(cluster: &ClusterState, outcome: &Outcome, node: NodeId) -> String {
    let others: Vec<&str> = outcome
        .best
        .iter()
        .filter(|&&n| n != node)
        .map(|&n| &*cluster.node(n).name)
        .collect();
    let name = &cluster.node(node).name;
    match others.len() {
        0 => format!("the pod lands on {name}"),
        1..=5 => format!("the pod lands on {name} (tied with {})", others.join(", ")),
        n => format!(
            "the pod lands on {name} (tied with {}, and {} more)",
            others[..5].join(", "),
            n - 5
        ),
    }
}

// ---------------------------------------------------------------------------
// 1. Required podAffinity with a negative selector → podAntiAffinity.

fn rewrite_negative_affinity(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Some(api) = ctx.api_pod else {
        return out;
    };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return out;
    };
    for (i, term) in ctx.pod.affinity.required_affinity.iter().enumerate() {
        if !only_negative(term.selector.requirements()) {
            continue;
        }
        let Some(original) = api_term(api, TermKind::RequiredAffinity, i) else {
            continue;
        };
        let Some(rewritten) = negate(&original) else {
            continue;
        };
        // The template's lists (the patch) and the pod's lists (the verification).
        let build = |affinity: &Value| -> (Vec<Value>, Vec<Value>) {
            let mut affinity_list = list_at(affinity, TermKind::RequiredAffinity);
            if i < affinity_list.len() {
                affinity_list.remove(i);
            }
            let mut anti = list_at(affinity, TermKind::RequiredAntiAffinity);
            anti.extend(rewritten.iter().cloned());
            (affinity_list, anti)
        };
        let (t_aff, t_anti) = build(&affinity_value(&at.spec));
        let mut pod_affinity = json!({});
        if t_aff.is_empty() {
            pod_affinity = json!({"requiredDuringSchedulingIgnoredDuringExecution": null});
        } else {
            pod_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = Value::Array(t_aff);
        }
        let patch = nest(
            at.path,
            json!({"affinity": {
                "podAffinity": pod_affinity,
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": t_anti},
            }}),
        );
        let (p_aff, p_anti) = build(&affinity_value(
            api.spec.as_ref().unwrap_or(&core::PodSpec::default()),
        ));
        let Some(patched) = with_list(api, TermKind::RequiredAffinity, &p_aff)
            .and_then(|p| with_list(&p, TermKind::RequiredAntiAffinity, &p_anti))
        else {
            continue;
        };
        let was = selector_summary(original.get("labelSelector"));
        let now: Vec<String> = rewritten
            .iter()
            .map(|t| selector_summary(t.get("labelSelector")))
            .collect();
        let placed_on = ctx.state.pod(ctx.pod_id).node_name.clone();
        out.push(Candidate {
            title: format!(
                "Replace podAffinity `{was}` with podAntiAffinity `{}`",
                now.join("` + `")
            ),
            target: ctx.workload.to_string(),
            command: command(&ctx.workload, &patch),
            patch,
            rationale: format!(
                "podAffinity `{was}` asks for a domain that already holds a pod WITHOUT those \
                 labels; it never keeps the pod away from labelled pods. The rule meant here is \
                 podAntiAffinity `{}`: stay out of any domain running a pod that has them.",
                now.join("` + `")
            ),
            change: Change {
                incoming: Some(patched),
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, node| {
                let rejected: Vec<&str> = outcome
                    .statuses
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| {
                        s.plugin == Some(podplace_engine::status::Plugin::InterPodAffinity)
                    })
                    .map(|(n, _)| &*cluster.node(podplace_engine::NodeId(n as u32)).name)
                    .collect();
                let mut s = if rejected.is_empty() {
                    "with the rewrite no node is rejected by it yet (no pod carries the labels)"
                        .to_string()
                } else {
                    format!(
                        "with the rewrite the rule now rejects {} (pods there carry the labels)",
                        rejected.join(", ")
                    )
                };
                s.push_str("; ");
                s.push_str(&lands_sentence(cluster, outcome, node));
                if let Some(was) = &placed_on {
                    if **was == *cluster.node(node).name {
                        s.push_str(" (the same node, now for the right reason)");
                    }
                }
                s
            }),
        });
    }
    out
}

/// The anti-affinity terms meaning what a negative affinity term's author
/// meant: one term per requirement, `DoesNotExist` → `Exists`, `NotIn` → `In`.
fn negate(term: &Value) -> Option<Vec<Value>> {
    let selector = term.get("labelSelector")?;
    let mut requirements: Vec<Value> = Vec::new();
    if let Some(Value::Array(exprs)) = selector.get("matchExpressions") {
        for e in exprs {
            let key = e.get("key")?.clone();
            match e.get("operator")?.as_str()? {
                "DoesNotExist" => requirements.push(json!({"key": key, "operator": "Exists"})),
                "NotIn" => requirements.push(
                    json!({"key": key, "operator": "In", "values": e.get("values")?.clone()}),
                ),
                _ => return None,
            }
        }
    }
    if requirements.is_empty() {
        return None;
    }
    Some(
        requirements
            .into_iter()
            .map(|r| {
                let mut t = term.clone();
                t["labelSelector"] = json!({"matchExpressions": [r]});
                t
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// 2./3. Over-broad anti-affinity selectors narrowed to the owner's own pods.

/// Distinct (workload, term) pairs among the blockers, with one holder.
fn blocking_terms(ctx: &Context<'_>, owner: RuleOwner) -> Vec<(WorkloadRef, String, usize)> {
    let cluster = ctx.state;
    let mut seen: Vec<(String, usize)> = Vec::new();
    // A list shared by many nodes adds nothing the second time.
    let mut lists = rustc_hash::FxHashSet::default();
    let mut out = Vec::new();
    for (_, v) in ctx.verdicts {
        for r in &v.reasons {
            if !lists.insert(r.blockers.id()) {
                continue;
            }
            for b in &r.blockers {
                if b.rule_owner != owner || seen.contains(&(b.workload.clone(), b.term)) {
                    continue;
                }
                seen.push((b.workload.clone(), b.term));
                let Some(id) = pod_id_by_name(cluster, &b.pod) else {
                    continue;
                };
                let w = ctx.world.workload(id).into_owned();
                if w == ctx.workload {
                    continue;
                }
                out.push((w, b.pod.clone(), b.term));
            }
        }
    }
    out
}

fn narrow_existing(ctx: &Context<'_>) -> Vec<Candidate> {
    let cluster = ctx.state;
    let mut out = Vec::new();
    let mut done: Vec<(WorkloadRef, TermId)> = Vec::new();
    for (w, holder_name, _) in blocking_terms(ctx, RuleOwner::Existing) {
        let Some(holder) = pod_id_by_name(cluster, &holder_name) else {
            continue;
        };
        let Some(entry) = cluster.pod_entry(holder) else {
            continue;
        };
        let Some(holder_api) = ctx.world.api_pod(holder) else {
            continue;
        };
        // The holder's terms that match the pending pod.
        let ns_labels = ctx
            .prepared
            .ipa
            .as_ref()
            .map(|s| s.namespace_labels.clone())
            .unwrap_or_default();
        for (i, &t) in entry.terms.required_anti_affinity.iter().enumerate() {
            if done.contains(&(w.clone(), t)) {
                continue;
            }
            let term = cluster.term(t);
            if !podplace_engine::state::terms::existing_term_matches(
                term,
                ctx.pod,
                &ns_labels,
                cluster.interner(),
            ) {
                continue;
            }
            done.push((w.clone(), t));
            if let Some(c) = narrowed(ctx, &w, holder, holder_api, i, t, false) {
                out.push(c);
            }
        }
    }
    out
}

fn narrow_own(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    if blocking_terms(ctx, RuleOwner::Incoming).is_empty() {
        return out;
    }
    let Some(api) = ctx.api_pod else { return out };
    for (i, &t) in ctx.prepared.terms.required_anti_affinity.iter().enumerate() {
        if let Some(c) = narrowed(ctx, &ctx.workload, ctx.pod_id, api, i, t, true) {
            out.push(c);
        }
    }
    out
}

/// The anti-affinity term `index` of workload `w` narrowed to `w`'s own
/// template labels; `own` when `w` is the explained pod's workload.
fn narrowed(
    ctx: &Context<'_>,
    w: &WorkloadRef,
    holder: PodId,
    holder_api: &core::Pod,
    index: usize,
    term_id: TermId,
    own: bool,
) -> Option<Candidate> {
    let cluster = ctx.state;
    let holder_pod = cluster.pod(holder);
    let compiled = holder_pod.affinity.required_anti_affinity.get(index)?;
    // Only rules meant to keep the workload's own replicas apart.
    if !compiled
        .selector
        .matches(&holder_pod.labels, cluster.interner())
    {
        return None;
    }
    let at = spec_of(ctx.world, w, Some(holder_api))?;
    if at.labels.is_empty() {
        return None;
    }
    let original = api_term(holder_api, TermKind::RequiredAntiAffinity, index)?;
    let mut term = original.clone();
    term["labelSelector"] = json!({"matchLabels": labels_value(&at.labels)});
    if term == original {
        return None;
    }
    let template_list = {
        let mut l = list_at(&affinity_value(&at.spec), TermKind::RequiredAntiAffinity);
        if index < l.len() {
            l[index] = term.clone();
        } else {
            l.push(term.clone());
        }
        l
    };
    let patch = nest(
        at.path,
        json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": template_list
        }}}),
    );
    let patch_pod = |api: &core::Pod| -> Option<core::Pod> {
        let spec = api.spec.as_ref()?;
        let mut l = list_at(&affinity_value(spec), TermKind::RequiredAntiAffinity);
        *l.get_mut(index)? = term.clone();
        with_list(api, TermKind::RequiredAntiAffinity, &l)
    };
    let mut change = Change::default();
    for p in holders_of(ctx, term_id, w) {
        if p == ctx.pod_id {
            continue;
        }
        let api = ctx.world.api_pod(p)?;
        change.replace.push((p, patch_pod(api)?));
    }
    if own {
        change.incoming = Some(patch_pod(ctx.api_pod?)?);
    }
    let was = selector_summary(original.get("labelSelector"));
    let now = selector_summary(term.get("labelSelector"));
    let replicas = change.replace.len();
    let title = if own {
        format!("Narrow the pod's own podAntiAffinity `{was}` to its own pods `{now}`")
    } else {
        format!("Narrow {w}'s podAntiAffinity `{was}` to its own pods `{now}`")
    };
    let rationale = if own {
        format!(
            "The pod's required podAntiAffinity selects `{was}`, which also matches pods of \
             other workloads; matching only {w}'s own labels keeps its replicas apart without \
             avoiding everyone else."
        )
    } else {
        format!(
            "{w}'s required podAntiAffinity selects `{was}`: every pod with those labels in its \
             namespace, this pod ({}) included. Required anti-affinity is symmetric: an existing \
             pod's rule also keeps matching newcomers off its domain. Matching only {w}'s own \
             template labels keeps its replicas apart without blocking other workloads. \
             Changing the template rolls its pods; the verification keeps them where they run.",
            ctx.workload
        )
    };
    Some(Candidate {
        title,
        target: w.to_string(),
        command: command(w, &patch),
        patch,
        rationale,
        change,
        describe: Box::new(move |cluster, outcome, node| {
            format!(
                "re-ran the scheduler with {replicas} running pod(s) of the workload patched: {}",
                lands_sentence(cluster, outcome, node)
            )
        }),
    })
}

// ---------------------------------------------------------------------------
// 4. A rolling update that waits forever for a node.

fn rollout_strategy(ctx: &Context<'_>, notes: &mut Vec<Note>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let world = ctx.world;
    let cluster = ctx.state;
    let w = &ctx.workload;
    if w.kind != WorkloadKind::Deployment {
        return out;
    }
    let Some(owner) = &ctx.pod.owner else {
        return out;
    };
    if WorkloadKind::of(&owner.kind) != WorkloadKind::ReplicaSet {
        return out;
    }
    // Nodes rejected only because of old pods of the same Deployment.
    let mut stalled: Vec<(NodeId, Vec<PodId>)> = Vec::new();
    for (n, v) in ctx.verdicts {
        let mut old: Vec<PodId> = Vec::new();
        let only_old = v.reasons.iter().all(|r| {
            matches!(
                r.detail,
                Detail::PodAntiAffinity | Detail::ExistingAntiAffinity
            ) && r.blockers.len() == r.blockers_total
                && r.blockers.iter().all(|b| {
                    let Some(id) = pod_id_by_name(cluster, &b.pod) else {
                        return false;
                    };
                    let is_old = *world.workload(id) == *w
                        && cluster
                            .pod(id)
                            .owner
                            .as_ref()
                            .is_some_and(|o| o.name != owner.name);
                    if is_old && !old.contains(&id) {
                        old.push(id);
                    }
                    is_old
                })
        });
        if only_old && !old.is_empty() {
            stalled.push((*n, old));
        }
    }
    if stalled.is_empty() {
        return out;
    }
    let inv = world.inventory();
    let deployment = inv.deployments.iter().find(|d| {
        d.object.metadata.name.as_deref() == Some(w.name.as_str())
            && d.object.metadata.namespace.as_deref().unwrap_or("default") == w.namespace
    });
    let spec = deployment.and_then(|d| d.object.spec.as_ref());
    if spec
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("Recreate")
    {
        return out;
    }
    let rolling = spec
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let surge = rolling.and_then(|r| r.max_surge.as_ref());
    let unavailable = rolling.and_then(|r| r.max_unavailable.as_ref());
    let replicas = match spec.and_then(|s| s.replicas) {
        Some(r) => r,
        None if spec.is_some() => 1,
        None => inv
            .replica_sets
            .iter()
            .filter(|rs| {
                let m = &rs.object.metadata;
                m.namespace.as_deref().unwrap_or("default") == w.namespace
                    && m.name.as_deref() != Some(&*owner.name)
                    && m.owner_references.iter().flatten().any(|o| {
                        WorkloadKind::of(&o.kind) == WorkloadKind::Deployment && o.name == w.name
                    })
            })
            .filter_map(|rs| rs.object.spec.as_ref().and_then(|s| s.replicas))
            .sum(),
    };
    if replicas < 1 {
        return out;
    }
    let Ok((cur_surge, cur_unavail)) = resolve_fenceposts(surge, unavailable, replicas) else {
        return out;
    };
    if cur_unavail > 0 {
        return out;
    }
    let show = |v: Option<&IntOrString>| match v {
        Some(IntOrString::Int(i)) => i.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
        None => "25%".to_string(),
    };
    let origin = if deployment.is_some() {
        String::new()
    } else {
        " (the Deployment object was not loaded: its default strategy and the old ReplicaSets' \
         replicas are assumed)"
            .to_string()
    };
    notes.push(Note {
        kind: NoteKind::RolloutStalled,
        term: None,
        text: format!(
            "With {replicas} replicas, maxSurge {} rounds up to {cur_surge} and maxUnavailable {} \
         rounds down to {cur_unavail}: the controller adds {cur_surge} new pod(s) and may not \
         remove an old one until a new one is available, but the old pods' required \
         anti-affinity holds every node the new pod could use, so the rollout waits \
         forever{origin}.",
            show(surge),
            show(unavailable)
        ),
    });
    let percent = (100 + replicas - 1) / replicas;
    let new_unavailable = match unavailable {
        Some(IntOrString::Int(_)) => IntOrString::Int(1),
        _ => IntOrString::String(format!("{percent}%")),
    };
    let options: [(&str, IntOrString, bool); 2] = [
        ("maxUnavailable", new_unavailable, false),
        ("maxSurge", IntOrString::Int(0), true),
    ];
    for (field, value, is_surge) in options {
        let (s, u) = if is_surge {
            resolve_fenceposts(Some(&value), unavailable, replicas)
        } else {
            resolve_fenceposts(surge, Some(&value), replicas)
        }
        .unwrap_or((0, 0));
        if u < 1 {
            continue;
        }
        // The controller deletes old pods first: pick a node it can free.
        let Some((node, old)) = stalled.iter().find(|(_, old)| old.len() <= u as usize) else {
            continue;
        };
        let freed: Vec<String> = old.iter().map(|&p| world.pod_name(p)).collect();
        let node_name = cluster.node(*node).name.to_string();
        // The controller deletes the newest old pod first; old pods created
        // in the same second tie, and it may take any of them.
        let created = |p: PodId| {
            world
                .api_pod(p)
                .and_then(|a| a.metadata.creation_timestamp.clone())
        };
        let tied: Vec<String> = match old.as_slice() {
            [one] => stalled
                .iter()
                .filter(|(n, o)| n != node && o.len() == 1 && created(o[0]) == created(*one))
                .map(|(n, o)| format!("{} on {}", world.pod_name(o[0]), cluster.node(*n).name))
                .collect(),
            _ => Vec::new(),
        };
        let shown = match &value {
            IntOrString::Int(i) => i.to_string(),
            IntOrString::String(s) => s.clone(),
        };
        let patch = json!({"spec": {"strategy": {"rollingUpdate": {field: value}}}});
        let u_now = u;
        out.push(Candidate {
            title: format!("Set the Deployment's strategy.rollingUpdate.{field} to {shown}"),
            target: w.to_string(),
            command: command(w, &patch),
            patch,
            rationale: format!(
                "With {field} {shown} the controller's limits for {replicas} replicas become \
                 maxSurge {s}, maxUnavailable {u}: it removes an old pod first, which frees \
                 that pod's node for a new one."
            ),
            change: Change {
                remove: old.clone(),
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, landed| {
                let deletes = if tied.is_empty() {
                    format!("it deletes {} on {node_name}", freed.join(", "))
                } else {
                    format!(
                        "it deletes one of the old pods created in the same second ({} on {node_name}, {}), \
                         say {} on {node_name}",
                        freed.join(", "),
                        tied.join(", "),
                        freed.join(", ")
                    )
                };
                format!(
                    "simulated the controller's first step (maxUnavailable {u_now}): {deletes}; then {}",
                    lands_sentence(cluster, outcome, landed)
                )
            }),
        });
    }
    out
}

// ---------------------------------------------------------------------------
// 5. Nodes held back by one thing only.

/// Nodes whose every reason satisfies `only`.
fn nodes_only<'a>(
    ctx: &'a Context<'_>,
    only: impl Fn(&Detail) -> bool + 'a,
) -> impl Iterator<Item = &'a (NodeId, NodeVerdict)> + 'a {
    ctx.verdicts
        .iter()
        .filter(move |(_, v)| v.reasons.iter().all(|r| only(&r.detail)))
}

fn uncordon(ctx: &Context<'_>) -> Vec<Candidate> {
    let Some((n, v)) = nodes_only(ctx, |d| matches!(d, Detail::Cordoned)).next() else {
        return Vec::new();
    };
    let name = v.node.clone();
    vec![Candidate {
        title: format!("Uncordon {name}"),
        target: format!("Node/{name}"),
        patch: json!({"spec": {"unschedulable": false}}),
        command: format!("kubectl uncordon {name}"),
        rationale: format!(
            "{name} is cordoned and nothing else keeps the pod off it; uncordon it only if \
             whatever it was cordoned for is over."
        ),
        change: Change {
            uncordon: vec![*n],
            ..Change::default()
        },
        describe: Box::new(|cluster, outcome, node| {
            format!(
                "re-ran the scheduler with the node uncordoned: {}",
                lands_sentence(cluster, outcome, node)
            )
        }),
    }]
}

fn tolerate(ctx: &Context<'_>) -> Vec<Candidate> {
    let Some(api) = ctx.api_pod else {
        return Vec::new();
    };
    // The most common set of taints among nodes held back by taints alone.
    let mut sets: Vec<(Vec<crate::model::TaintView>, usize)> = Vec::new();
    for (_, v) in nodes_only(ctx, |d| matches!(d, Detail::Taints { .. })) {
        let Detail::Taints { taints } = &v.reasons[0].detail else {
            continue;
        };
        match sets.iter_mut().find(|(t, _)| t == taints) {
            Some(e) => e.1 += 1,
            None => sets.push((taints.clone(), 1)),
        }
    }
    let Some((taints, count)) = sets.into_iter().max_by_key(|(_, c)| *c) else {
        return Vec::new();
    };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return Vec::new();
    };
    let new: Vec<Value> = taints
        .iter()
        .map(|t| {
            if t.value.is_empty() {
                json!({"key": t.key, "operator": "Exists", "effect": t.effect})
            } else {
                json!({"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect})
            }
        })
        .collect();
    let existing = |spec: Option<&core::PodSpec>| -> Vec<Value> {
        spec.and_then(|s| s.tolerations.as_ref())
            .and_then(|t| serde_json::to_value(t).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    };
    // The tolerations DefaultTolerationSeconds admission adds come back on
    // their own: the patch leaves them out.
    let admitted = |t: &Value| {
        matches!(
            t.get("key").and_then(Value::as_str),
            Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
        ) && t.get("effect").and_then(Value::as_str) == Some("NoExecute")
            && t.get("tolerationSeconds").and_then(Value::as_i64) == Some(300)
    };
    let mut template_list: Vec<Value> = existing(Some(&at.spec))
        .into_iter()
        .filter(|t| !admitted(t))
        .collect();
    template_list.extend(new.iter().cloned());
    let patch = nest(at.path, json!({ "tolerations": template_list }));
    let mut pod_list = existing(api.spec.as_ref());
    pod_list.extend(new.iter().cloned());
    let mut value = serde_json::to_value(api).ok();
    if let Some(spec) = value.as_mut().and_then(|v| v.get_mut("spec")) {
        spec["tolerations"] = Value::Array(pod_list);
    }
    let Some(patched) = value.and_then(|v| serde_json::from_value::<core::Pod>(v).ok()) else {
        return Vec::new();
    };
    let shown: Vec<String> = taints.iter().map(|t| t.display()).collect();
    vec![Candidate {
        title: format!("Tolerate {}", shown.join(", ")),
        target: ctx.workload.to_string(),
        command: command(&ctx.workload, &patch),
        patch,
        rationale: format!(
            "{count} node(s) reject the pod only for {}. Taints reserve nodes for particular \
             pods: add the toleration only if this pod belongs there.",
            shown.join(", ")
        ),
        change: Change {
            incoming: Some(patched),
            ..Change::default()
        },
        describe: Box::new(|cluster, outcome, node| {
            format!(
                "re-ran the scheduler with the toleration: {}",
                lands_sentence(cluster, outcome, node)
            )
        }),
    }]
}

fn label_node(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (n, v) in nodes_only(ctx, |d| matches!(d, Detail::NodeAffinity { .. })).take(1) {
        let Detail::NodeAffinity {
            node_selector,
            terms,
            excluded_by_name,
        } = &v.reasons[0].detail
        else {
            continue;
        };
        if *excluded_by_name || !terms.is_empty() {
            continue;
        }
        let mut labels: Vec<(String, String)> = Vec::new();
        for m in node_selector {
            let Some((k, val)) = m.requirement.split_once('=') else {
                continue;
            };
            labels.push((k.to_string(), val.to_string()));
        }
        if labels.is_empty() {
            continue;
        }
        let name = v.node.clone();
        let shown: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push(Candidate {
            title: format!("Label {name} {}", shown.join(" ")),
            target: format!("Node/{name}"),
            patch: json!({"metadata": {"labels": labels_value(&labels)}}),
            command: format!("kubectl label node {name} {}", shown.join(" ")),
            rationale: format!(
                "{name} fails only the pod's nodeSelector; labelling it admits this workload \
                 there (and every other pod selecting those labels)."
            ),
            change: Change {
                label: labels
                    .iter()
                    .map(|(k, v)| (*n, k.clone(), v.clone()))
                    .collect(),
                ..Change::default()
            },
            describe: Box::new(|cluster, outcome, node| {
                format!(
                    "re-ran the scheduler with the label: {}",
                    lands_sentence(cluster, outcome, node)
                )
            }),
        });
    }
    out
}
