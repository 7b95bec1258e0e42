//! Fixes for a pod its own workload keeps off every node: its replicas'
//! required anti-affinity, or a DoNotSchedule spread constraint over its
//! own pods, leaves no domain for it (argocd-redis-ha-haproxy's third
//! replica on a two-node cluster). Three ways out, each verified on the
//! explanation's what-if, in the order of how little they change the
//! workload:
//! 1. add a node like an existing one (the best-fitting node the pod is
//!    held off only by its own workload), with a fresh hostname and, for a
//!    rule over another topology key, a fresh value of that key: the pod is
//!    scheduled again with that node added;
//! 2. scale the workload to the replicas that run (the domains it can
//!    use): the Pending pod is not created, and every other replica keeps
//!    its node;
//! 3. make the rule preferred (or the constraint ScheduleAnyway): the pod
//!    is scheduled again with the changed rule, and the cost is said (two
//!    replicas then share a node).

use k8s_openapi::api::core::v1 as core;
use podplace_engine::{ClusterState, NodeId, PodId};
use podplace_model::intern::Sym;
use podplace_model::objects::{Pod, WhenUnsatisfiable};
use podplace_model::workloads::WorkloadKind;
use serde_json::{json, Value};

use crate::analyze::requirement_key;
use crate::fixes::{
    affinity_value, command, lands_sentence, list_at, nest, pod_id_by_name, spec_of, with_list,
    Candidate, Change, Context, NewNode,
};
use crate::model::{Detail, Reason, TermKind};

/// Whether `r` is the pod's own workload (the same controller's pods, or
/// a spread constraint that counts them) holding it off a node.
fn own_reason(ctx: &Context<'_>, r: &Reason) -> bool {
    match &r.detail {
        Detail::PodAntiAffinity | Detail::ExistingAntiAffinity => {
            !r.blockers.is_empty()
                && r.blockers.len() == r.blockers_total
                && r.blockers.iter().all(|b| {
                    pod_id_by_name(ctx.state, &b.pod).is_some_and(|id| same_controller(ctx, id))
                })
        }
        Detail::SpreadSkew { self_match, .. } => *self_match,
        _ => false,
    }
}

/// Whether pod `id` belongs to the explained pod's controller (not an old
/// ReplicaSet of its Deployment: that is a rollout, with fixes of its own).
fn same_controller(ctx: &Context<'_>, id: PodId) -> bool {
    *ctx.world.workload(id) == ctx.workload
        && ctx.state.pod(id).owner.as_ref().map(|o| &o.name)
            == ctx.pod.owner.as_ref().map(|o| &o.name)
}

/// The topology keys of the pod's own hard rules: required anti-affinity
/// terms that select its own pods, DoNotSchedule constraints that count them.
fn own_keys(state: &ClusterState, pod: &Pod) -> Vec<Sym> {
    let interner = state.interner();
    let mut keys: Vec<Sym> = Vec::new();
    for t in &pod.affinity.required_anti_affinity {
        if t.selector.matches(&pod.labels, interner) && !keys.contains(&t.topology_key) {
            keys.push(t.topology_key);
        }
    }
    for c in &pod.spread {
        if c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule
            && c.selector.matches(&pod.labels, interner)
            && !keys.contains(&c.topology_key)
        {
            keys.push(c.topology_key);
        }
    }
    keys
}

/// The candidates, when the pod's own workload is what keeps it off every
/// node it could otherwise use.
pub(crate) fn candidates(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let replicated = matches!(
        ctx.workload.kind,
        WorkloadKind::Deployment | WorkloadKind::StatefulSet | WorkloadKind::ReplicaSet
    );
    if !ctx.pending || !replicated || ctx.pod.owner.is_none() {
        return out;
    }
    // Another workload's pods holding the pod off a node is a different
    // story (story 1: narrow that workload's selector), not this one.
    let inter_pod = |r: &Reason| {
        matches!(
            r.detail,
            Detail::PodAntiAffinity
                | Detail::ExistingAntiAffinity
                | Detail::PodAffinity { .. }
                | Detail::SpreadSkew { .. }
        )
    };
    if ctx.verdicts.iter().any(|(_, v)| {
        v.reasons
            .iter()
            .any(|r| inter_pod(r) && !own_reason(ctx, r))
    }) {
        return out;
    }
    // Nodes held back by the workload's own pods and nothing else.
    let only_own: Vec<NodeId> = ctx
        .verdicts
        .iter()
        .filter(|(_, v)| v.reasons.iter().all(|r| own_reason(ctx, r)))
        .map(|(n, _)| *n)
        .collect();
    let Some(&template) = only_own.first() else {
        return out;
    };
    let keys = own_keys(ctx.state, ctx.pod);
    if keys.is_empty() {
        return out;
    }
    out.extend(honor_taints(ctx));
    out.extend(fewer_min_domains(ctx));
    out.extend(add_node(ctx, template, &keys));
    out.extend(scale(ctx));
    out.extend(make_preferred(ctx));
    out
}

/// A name no node has: `base` with a numbered suffix.
fn fresh(taken: impl Fn(&str) -> bool, base: &str) -> String {
    (2..)
        .map(|i| format!("{base}-{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| format!("{base}-new"))
}

/// 1. A node like `template`, with a fresh hostname and fresh values of the
///    other topology keys the pod's own rules spread over.
fn add_node(ctx: &Context<'_>, template: NodeId, keys: &[Sym]) -> Option<Candidate> {
    let state = ctx.state;
    let interner = state.interner();
    let node = state.node(template);
    let name = fresh(|n| state.node_id(n).is_some(), &node.name);
    let mut labels: Vec<(String, String)> = Vec::new();
    let hostname = "kubernetes.io/hostname";
    labels.push((hostname.to_string(), name.clone()));
    for &k in keys {
        let key = interner.resolve(k);
        if key == hostname {
            continue;
        }
        let Some(v) = node.labels.get(k) else {
            continue;
        };
        let used = |candidate: &str| {
            state.nodes().iter().any(|n| {
                n.labels
                    .get(k)
                    .is_some_and(|x| interner.resolve(x) == candidate)
            })
        };
        labels.push((key.to_string(), fresh(used, interner.resolve(v))));
    }
    // The labels the pod's node selector asks for, as the template has them.
    for r in &ctx.pod.node_selector {
        let k = requirement_key(r);
        if let Some(v) = node.labels.get(k) {
            let key = interner.resolve(k).to_string();
            if !labels.iter().any(|(x, _)| *x == key) {
                labels.push((key, interner.resolve(v).to_string()));
            }
        }
    }
    let template_name = node.name.to_string();
    let stated: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let fresh_keys: Vec<String> = labels
        .iter()
        .filter(|(k, _)| k != hostname && keys.iter().any(|&s| interner.resolve(s) == k))
        .map(|(k, _)| k.clone())
        .collect();
    let patch = json!({"metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<String, Value>>()}});
    let new_name = name.clone();
    let mut domain_note = String::new();
    if !fresh_keys.is_empty() {
        domain_note = format!(
            " in a {} of its own (a domain none of the replicas uses)",
            fresh_keys.join(", ")
        );
    }
    Some(Candidate {
        title: format!("Add a node like {template_name}{domain_note}"),
        target: format!("Node/{name}"),
        command: format!(
            "add a node to {template_name}'s node pool (same size, labels and taints); its kubelet sets kubernetes.io/hostname, and it must carry {}",
            stated.join(", ")
        ),
        patch,
        rationale: format!(
            "{} keeps one pod per domain and every domain it may use already runs one: only a new domain makes room. \
             Nothing of the workload changes.",
            ctx.workload
        ),
        change: Change {
            add_node: Some(NewNode {
                like: template,
                name: name.clone(),
                labels,
            }),
            ..Change::default()
        },
        describe: Box::new(move |cluster, outcome, n| {
            let mut s = format!(
                "re-ran the scheduler with {new_name} added (a copy of {template_name}): {}",
                lands_sentence(cluster, outcome, n)
            );
            if *cluster.node(n).name != *new_name {
                s.push_str(&format!(" (not on {new_name})"));
            }
            s
        }),
    })
}

/// 2. Scale the workload to the replicas that run.
fn scale(ctx: &Context<'_>) -> Option<Candidate> {
    let running = own_replicas(ctx);
    let n = running.len();
    if n == 0 {
        return None;
    }
    let w = &ctx.workload;
    let kind = w.kind.as_str().to_lowercase();
    let patch = json!({"spec": {"replicas": n}});
    Some(Candidate {
        title: format!("Scale {w} to {n} replica(s), the domains it can use"),
        target: w.to_string(),
        command: format!("kubectl scale {kind} {} -n {} --replicas={n}", w.name, w.namespace),
        patch,
        rationale: format!(
            "the {n} running replica(s) already hold every domain the rule lets them use; with {n} replica(s) \
             the controller does not create this pod and nothing stays Pending. It costs a replica."
        ),
        change: Change {
            scale_to: Some((n, running)),
            ..Change::default()
        },
        describe: Box::new(|_, _, _| String::new()),
    })
}

/// 3. The pod's own hard rules made soft.
fn make_preferred(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Some(api) = ctx.api_pod else { return out };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return out;
    };
    let interner = ctx.state.interner();
    let own_ids = own_replicas(ctx);
    let w = ctx.workload.clone();
    // By name: a verification puts patched copies (`name~patched`) in
    // place of the replicas.
    let names: Vec<String> = own_ids
        .iter()
        .map(|&id| ctx.state.pod(id).name.to_string())
        .collect();
    let cost = move |cluster: &ClusterState, node: NodeId| -> String {
        let here = cluster
            .node_info(node)
            .pods
            .iter()
            .filter(|&&id| {
                let name = &*cluster.pod(id).name;
                let name = name.strip_suffix("~patched").unwrap_or(name);
                names.iter().any(|n| n == name)
            })
            .count();
        if here == 0 {
            String::new()
        } else {
            format!(
                "; it costs the spread: {} replicas of {w} then share {}",
                here + 1,
                cluster.node(node).name
            )
        }
    };
    for (i, t) in ctx.pod.affinity.required_anti_affinity.iter().enumerate() {
        if !t.selector.matches(&ctx.pod.labels, interner) {
            continue;
        }
        let key = interner.resolve(t.topology_key).to_string();
        // Move term i from the required list to the preferred one.
        let moved = |affinity: &Value| -> (Vec<Value>, Vec<Value>) {
            let mut required = list_at(affinity, TermKind::RequiredAntiAffinity);
            let term = (i < required.len()).then(|| required.remove(i));
            let mut preferred = list_at(affinity, TermKind::PreferredAntiAffinity);
            if let Some(term) = term {
                preferred.push(json!({"weight": 100, "podAffinityTerm": term}));
            }
            (required, preferred)
        };
        let (t_req, t_pref) = moved(&affinity_value(&at.spec));
        let required = if t_req.is_empty() {
            Value::Null
        } else {
            Value::Array(t_req)
        };
        let patch = nest(
            at.path,
            json!({"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": required,
                "preferredDuringSchedulingIgnoredDuringExecution": t_pref,
            }}}),
        );
        let patch_pod = |api: &core::Pod| -> Option<core::Pod> {
            let (p_req, p_pref) = moved(&affinity_value(api.spec.as_ref()?));
            with_list(api, TermKind::RequiredAntiAffinity, &p_req)
                .and_then(|p| with_list(&p, TermKind::PreferredAntiAffinity, &p_pref))
        };
        let Some(patched) = patch_pod(api) else {
            continue;
        };
        let replace = replicas_patched(ctx, &own_ids, patch_pod);
        let cost = cost.clone();
        out.push(Candidate {
            title: format!("Make the pod's own anti-affinity over {key} preferred (weight 100)"),
            target: ctx.workload.to_string(),
            command: command(&ctx.workload, &patch),
            patch,
            rationale: format!(
                "as a preferred term the scheduler still spreads the replicas over {key} while it can, \
                 and places the rest beside one when it cannot, instead of leaving them Pending."
            ),
            change: Change {
                incoming: Some(patched),
                replace,
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, node| {
                format!(
                    "re-ran the scheduler with the term preferred in every replica: {}{}",
                    lands_sentence(cluster, outcome, node),
                    cost(cluster, node)
                )
            }),
        });
    }
    let template_spread = at
        .spec
        .topology_spread_constraints
        .clone()
        .unwrap_or_default();
    let hard: Vec<usize> = ctx
        .pod
        .spread
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule
                && c.selector.matches(&ctx.pod.labels, interner)
        })
        .map(|(i, _)| i)
        .collect();
    for i in hard {
        let key = interner.resolve(ctx.pod.spread[i].topology_key).to_string();
        let Some((patch, patched, replace)) =
            change_spread(ctx, at.path, &template_spread, &own_ids, api, i, move |c| {
                c.when_unsatisfiable = "ScheduleAnyway".to_string();
            })
        else {
            continue;
        };
        let cost = cost.clone();
        out.push(Candidate {
            title: format!("Make the spread over {key} ScheduleAnyway"),
            target: ctx.workload.to_string(),
            command: command(&ctx.workload, &patch),
            patch,
            rationale: format!(
                "with whenUnsatisfiable: ScheduleAnyway the scheduler still prefers the emptiest {key} domain, \
                 and places the pod when none keeps the skew, instead of leaving it Pending."
            ),
            change: Change {
                incoming: Some(patched),
                replace,
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, node| {
                format!(
                    "re-ran the scheduler with the constraint ScheduleAnyway in every replica: {}{}",
                    lands_sentence(cluster, outcome, node),
                    cost(cluster, node)
                )
            }),
        });
    }
    out
}

/// Replicas with a change, each to be put back on its node.
type Replicas = Vec<(PodId, core::Pod)>;

/// The running replicas of the pod's own workload, but for the pod.
fn own_replicas(ctx: &Context<'_>) -> Vec<PodId> {
    ctx.state
        .bound_pods()
        .map(|(id, _)| id)
        .filter(|&id| id != ctx.pod_id && same_controller(ctx, id))
        .collect()
}

/// The workload's `i`th spread constraint changed by `change`: the patch
/// that sets the whole list at `path` (`template` with the change: a
/// strategic merge patch replaces the list), the pod `api` with the change,
/// and the replicas `own` with it. None when `api` has no spec.
fn change_spread(
    ctx: &Context<'_>,
    path: &[&str],
    template: &[core::TopologySpreadConstraint],
    own: &[PodId],
    api: &core::Pod,
    i: usize,
    change: impl Fn(&mut core::TopologySpreadConstraint),
) -> Option<(Value, core::Pod, Replicas)> {
    let changed = |list: &[core::TopologySpreadConstraint]| -> Vec<core::TopologySpreadConstraint> {
        let mut l = list.to_vec();
        if let Some(c) = l.get_mut(i) {
            change(c);
        }
        l
    };
    let patch = nest(
        path,
        json!({"topologySpreadConstraints": serde_json::to_value(changed(template)).unwrap_or(Value::Null)}),
    );
    let patch_pod = |api: &core::Pod| -> Option<core::Pod> {
        let mut patched = api.clone();
        let spec = patched.spec.as_mut()?;
        let list = spec.topology_spread_constraints.clone().unwrap_or_default();
        spec.topology_spread_constraints = Some(changed(&list));
        Some(patched)
    };
    let patched = patch_pod(api)?;
    let replace = replicas_patched(ctx, own, patch_pod);
    Some((patch, patched, replace))
}

/// The running replicas with the template change applied, each to be put
/// back on its node (the rule is the template's: every replica carries it
/// once the controller rolls the change out).
fn replicas_patched(
    ctx: &Context<'_>,
    ids: &[PodId],
    patch: impl Fn(&core::Pod) -> Option<core::Pod>,
) -> Vec<(PodId, core::Pod)> {
    ids.iter()
        .filter_map(|&id| {
            let api = ctx.world.api_pod(id)?;
            Some((id, patch(api)?))
        })
        .collect()
}

/// 0. A DoNotSchedule spread under the default `nodeTaintsPolicy: Ignore`
///    counts domains whose nodes the pod does not tolerate (a control-plane
///    node alone in its zone): Honor drops them from the count. Changes
///    only how the workload's own rule counts, so it comes first.
fn honor_taints(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let tainted = ctx.verdicts.iter().any(|(_, v)| {
        v.reasons
            .iter()
            .any(|r| matches!(r.detail, Detail::Taints { .. }))
    });
    if !tainted {
        return out;
    }
    let Some(api) = ctx.api_pod else { return out };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return out;
    };
    let interner = ctx.state.interner();
    let own_ids = own_replicas(ctx);
    let template_spread = at
        .spec
        .topology_spread_constraints
        .clone()
        .unwrap_or_default();
    for (i, c) in ctx.pod.spread.iter().enumerate() {
        if c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule
            || c.honor_node_taints
            || !c.selector.matches(&ctx.pod.labels, interner)
        {
            continue;
        }
        let key = interner.resolve(c.topology_key).to_string();
        let Some((patch, patched, replace)) =
            change_spread(ctx, at.path, &template_spread, &own_ids, api, i, move |c| {
                c.node_taints_policy = Some("Honor".to_string());
            })
        else {
            continue;
        };
        out.push(Candidate {
            title: format!("Set nodeTaintsPolicy: Honor on the spread over {key}"),
            target: ctx.workload.to_string(),
            command: command(&ctx.workload, &patch),
            patch,
            rationale: format!(
                "under the default nodeTaintsPolicy: Ignore, a {key} domain whose nodes have taints the pods do not \
                 tolerate (a control-plane node alone in its zone) still counts, empty, so the skew can never be met; \
                 with Honor it no longer counts. The spread itself is kept."
            ),
            change: Change {
                incoming: Some(patched),
                replace,
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, node| {
                format!(
                    "re-ran the scheduler with nodeTaintsPolicy: Honor in every replica: {}",
                    lands_sentence(cluster, outcome, node)
                )
            }),
        });
    }
    out
}

/// 0. A DoNotSchedule spread whose minDomains exceeds the domains that
///    exist: the global minimum is 0, so no domain that has a replica takes
///    another. Lowering minDomains to the domains there are (lint PP006
///    drops it) changes only how the rule counts, so it comes before adding
///    nodes.
fn fewer_min_domains(ctx: &Context<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    let Some(api) = ctx.api_pod else { return out };
    let Some(at) = spec_of(ctx.world, &ctx.workload, Some(api)) else {
        return out;
    };
    let own_ids = own_replicas(ctx);
    let template_spread = at
        .spec
        .topology_spread_constraints
        .clone()
        .unwrap_or_default();
    for (i, c) in ctx.pod.spread.iter().enumerate() {
        // The domains that exist, when fewer than minDomains asks for.
        let below = ctx.verdicts.iter().find_map(|(_, v)| {
            v.reasons.iter().find_map(|r| match &r.detail {
                Detail::SpreadSkew {
                    constraint,
                    min: 0,
                    min_domains,
                    domain_total,
                    ..
                } if *constraint == i && (*domain_total as i64) < i64::from(*min_domains) => {
                    i32::try_from(*domain_total).ok().filter(|&d| d > 0)
                }
                _ => None,
            })
        });
        let Some(domains) = below else { continue };
        if c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule {
            continue;
        }
        let key = ctx.state.interner().resolve(c.topology_key).to_string();
        let Some((patch, patched, replace)) =
            change_spread(ctx, at.path, &template_spread, &own_ids, api, i, move |c| {
                // A strategic merge patch keeps a field the patch leaves
                // out: lower it to the domains there are instead.
                c.min_domains = Some(domains);
            })
        else {
            continue;
        };
        out.push(Candidate {
            title: format!(
                "Lower minDomains to {domains}, the {key} domains that exist"
            ),
            target: ctx.workload.to_string(),
            command: command(&ctx.workload, &patch),
            patch,
            rationale: format!(
                "minDomains asks for more {key} domains than exist, so kube-scheduler takes the global minimum as 0 \
                 and no domain that already has a replica may take another; with minDomains at most the domains \
                 there are, the emptiest domain counts (as lint PP006 says). The spread itself is kept."
            ),
            change: Change {
                incoming: Some(patched),
                replace,
                ..Change::default()
            },
            describe: Box::new(move |cluster, outcome, node| {
                format!(
                    "re-ran the scheduler with minDomains {domains} in every replica: {}",
                    lands_sentence(cluster, outcome, node)
                )
            }),
        });
    }
    out
}
