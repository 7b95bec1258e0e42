//! PP006 replicas-exceed-domains: required anti-affinity on the workload's
//! own pods allows one pod per topology domain, and fewer domains are
//! eligible (nodes passing its nodeSelector, node affinity, taints and
//! cordons, as the engine's filters decide) than it has replicas: the rest
//! stay Pending for good.
//!
//! Every way out is verified by placing the workload's replicas again on a
//! what-if of the applied world (its own pods taken out first): the fix,
//! scaling to the domains it can use, and, as notes, adding nodes like an
//! eligible one in domains of their own (the workload unchanged) and
//! making the term preferred (what it costs: replicas sharing a domain).
//!
//! A DoNotSchedule topology spread constraint over the workload's own pods
//! that leaves replicas Pending when they are placed again is reported
//! too: a domain whose only nodes have taints the pods do not tolerate
//! still counts, empty, under the default `nodeTaintsPolicy: Ignore` (a
//! kubeadm control-plane node alone in its zone), and `minDomains` beyond
//! the domains that exist makes the global minimum 0. Each gets the fix
//! that places every replica again (`nodeTaintsPolicy: Honor`, a
//! `minDomains` the domains can meet), verified the same way.
//!
//! A host port allows one pod per node: a workload with more replicas
//! than the nodes that can run them (placed again, some stay Pending, and
//! without the host port all are placed) gets the fix of scaling to the
//! nodes that take a replica, and as a note the nodes to add.

use std::collections::BTreeMap;

use podplace_engine::NodeId;
use podplace_model::intern::Sym;
use podplace_model::objects::WeightedTerm;
use podplace_model::validate::FieldPath;
use serde_json::Value;

use crate::finding::{Fix, Related, RuleInfo, Severity};
use crate::patch::MergePatch;
use crate::rules::{finding, list};
use crate::world::{NewNode, Subject, World};
use crate::{LintError, LintOptions, Sink};

/// PP006.
pub static INFO: RuleInfo = RuleInfo {
    id: "PP006",
    name: "replicas-exceed-domains",
    summary: "required anti-affinity on a topology key with fewer eligible domains than replicas",
    default_severity: Severity::Error,
};

/// Reports replica counts that required anti-affinity cannot place.
pub fn check(world: &World<'_>, _: &LintOptions, sink: &mut Sink) -> Result<(), LintError> {
    if !world.has_nodes() {
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
        spread_keeps_pending(world, s, replicas, &eligible, sink);
        host_ports_exceed_nodes(world, s, replicas, &eligible, sink);
        for t in s
            .terms()
            .iter()
            .filter(|t| t.kind.is_anti() && t.kind.is_required())
        {
            if !world.term_selects(t.compiled, &s.pod) {
                continue;
            }
            let key = world.text(t.compiled.topology_key).to_string();
            let domains: Vec<String> = world
                .domains(&eligible, t.compiled.topology_key)
                .into_iter()
                .collect();
            let n = domains.len() as i32;
            if n == 0 || n >= replicas {
                continue;
            }
            let pending = replicas - n;
            let mut f = finding(
                &INFO,
                &s.id,
                world.locate(&s.origin, &t.item_path),
                format!("at most one pod per {key} domain"),
                format!(
                    "{replicas} replicas but only {n} eligible {key} domain(s): {pending} pod(s) will stay Pending"
                ),
            );
            f.notes.push(format!(
                "eligible {key} domains (nodes passing node selector, node affinity, taints and cordons): {}",
                list(&domains, 8)
            ));
            let replicas_path = FieldPath::of(&["spec", "replicas"]);
            if world.is_written(&s.origin, &replicas_path) {
                f.related.push(Related {
                    message: format!("{replicas} replicas"),
                    object: s.id.clone(),
                    location: Some(world.locate(&s.origin, &replicas_path)),
                });
            }
            f.help = Some(format!(
                "or keep {replicas} replicas with a DoNotSchedule topology spread constraint (maxSkew: 1) instead of \
                 anti-affinity: it allows more pods than domains while keeping them even"
            ));
            let v = verify(
                world,
                s,
                t.index,
                t.compiled.topology_key,
                &eligible,
                replicas,
                n,
            );
            f.fix = Some(Fix {
                description: format!("run {n} replicas, one per eligible {key} domain"),
                patch: MergePatch::new()
                    .set(&replicas_path, Value::from(n))
                    .to_yaml(),
                verified: v.scale,
            });
            if !v.alternatives.is_empty() {
                f.notes.push(format!(
                    "other verified ways out, least change to the workload first: {}",
                    v.alternatives.join("; ")
                ));
            }
            sink.push(&s.ignored, f);
        }
    }
    Ok(())
}

/// What placing the replicas again showed for each way out.
struct Verified {
    /// The scale fix's verification, when it holds.
    scale: Option<String>,
    /// Other ways out that hold, least change to the workload first.
    alternatives: Vec<String>,
}

/// Where placed pods went, as domain -> pods.
fn by_domain(placed: &[Option<(String, String)>]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (_, domain) in placed.iter().flatten() {
        *out.entry(domain.clone()).or_insert(0) += 1;
    }
    out
}

/// A name no node has and no other new node takes: `base-2`, `base-3`...
fn fresh(taken: &dyn Fn(&str) -> bool, base: &str) -> String {
    (2..)
        .map(|i| format!("{base}-{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| format!("{base}-new"))
}

/// A name for one more node like `template` that neither a node of the
/// cluster nor one of `new_nodes` has.
fn fresh_node_name(world: &World<'_>, new_nodes: &[NewNode], template: &str) -> String {
    let taken = |name: &str| {
        world.state.node_id(name).is_some() || new_nodes.iter().any(|x| x.name == name)
    };
    fresh(&taken, template)
}

fn verify(
    world: &World<'_>,
    s: &Subject<'_>,
    term: usize,
    key: Sym,
    eligible: &[NodeId],
    replicas: i32,
    n: i32,
) -> Verified {
    let key_text = world.text(key).to_string();
    let total = usize::try_from(replicas).unwrap_or(0);
    let mut alternatives = Vec::new();
    // Nodes like the first eligible one, each in a domain of its own.
    if let Some(&like) = eligible.first() {
        let missing = usize::try_from(replicas - n).unwrap_or(0);
        let template = world.node_name(like).to_string();
        let mut new_nodes: Vec<NewNode> = Vec::new();
        for _ in 0..missing {
            let name = fresh_node_name(world, &new_nodes, &template);
            let mut labels = vec![("kubernetes.io/hostname".to_string(), name.clone())];
            if key_text != "kubernetes.io/hostname" {
                if let Some(v) = world.state.node(like).labels.get(key) {
                    let used = |value: &str| {
                        world
                            .state
                            .nodes()
                            .iter()
                            .any(|x| x.labels.get(key).is_some_and(|y| world.text(y) == value))
                            || new_nodes
                                .iter()
                                .any(|x| x.labels.iter().any(|(k, v)| *k == key_text && v == value))
                    };
                    labels.push((key_text.clone(), fresh(&used, world.text(v))));
                }
            }
            new_nodes.push(NewNode { like, name, labels });
        }
        let placed = world.place_replicas(&s.workload, &s.pod, total, &new_nodes, key);
        if placed.iter().all(Option::is_some) && !new_nodes.is_empty() {
            let stated: Vec<String> = new_nodes
                .iter()
                .map(|x| {
                    let labels: Vec<String> =
                        x.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    labels.join(", ")
                })
                .collect();
            alternatives.push(format!(
                "add {missing} node(s) like {template} (its pool, size and taints) labelled {}: placing the {replicas} replicas again puts them in {} {key_text} domains, none Pending",
                stated.join(" and "),
                by_domain(&placed).len()
            ));
        }
    }
    // The term made preferred.
    let mut soft = s.pod.clone();
    if term < soft.affinity.required_anti_affinity.len() {
        let t = soft.affinity.required_anti_affinity.remove(term);
        soft.affinity.preferred_anti_affinity.push(WeightedTerm {
            weight: 100,
            term: t,
        });
        let placed = world.place_replicas(&s.workload, &soft, total, &[], key);
        if placed.iter().all(Option::is_some) {
            let domains = by_domain(&placed);
            let crowded: Vec<String> = domains
                .iter()
                .filter(|(_, &c)| c > 1)
                .map(|(d, c)| format!("{c} share {d}"))
                .collect();
            alternatives.push(format!(
                "make the term preferred (weight 100): placing the {replicas} replicas again places them all, at a cost to the spread ({})",
                crowded.join(", ")
            ));
        }
    }
    let scaled = world.place_replicas(
        &s.workload,
        &s.pod,
        usize::try_from(n).unwrap_or(0),
        &[],
        key,
    );
    let scale = scaled.iter().all(Option::is_some).then(|| {
        format!(
            "placing {n} replicas again (the engine, on the nodes given) puts one in each of {} {key_text} domain(s), none Pending",
            by_domain(&scaled).len()
        )
    });
    Verified {
        scale,
        alternatives,
    }
}

/// Spread constraints that keep replicas Pending: placed again, some stay
/// Pending; the change that places them all is the fix.
fn spread_keeps_pending(
    world: &World<'_>,
    s: &Subject<'_>,
    replicas: i32,
    eligible: &[NodeId],
    sink: &mut Sink,
) {
    let total = usize::try_from(replicas).unwrap_or(0);
    let api_list = s.spec.topology_spread_constraints.as_deref().unwrap_or(&[]);
    for (i, c, path) in s.spread() {
        if c.when_unsatisfiable != podplace_model::objects::WhenUnsatisfiable::DoNotSchedule
            || !c.selector.matches(&s.pod.labels, world.state.interner())
        {
            continue;
        }
        let key = c.topology_key;
        let key_text = world.text(key).to_string();
        let placed = world.place_replicas(&s.workload, &s.pod, total, &[], key);
        let pending = total - placed.iter().flatten().count();
        if pending == 0 {
            continue;
        }
        let domains = world.domains(eligible, key);
        // Which change places them all.
        let mut honor = s.pod.clone();
        honor.spread[i].honor_node_taints = true;
        let honored = !c.honor_node_taints
            && world
                .place_replicas(&s.workload, &honor, total, &[], key)
                .iter()
                .all(Option::is_some);
        let min_domains = c.min_domains.filter(|&m| m > 1);
        let mut fewer = s.pod.clone();
        fewer.spread[i].min_domains = None;
        let without_min = min_domains.is_some()
            && world
                .place_replicas(&s.workload, &fewer, total, &[], key)
                .iter()
                .all(Option::is_some);
        let (label, message, field, value, description) = if honored {
            // Domains counted although no node there takes the pods.
            let all: std::collections::BTreeSet<String> = world
                .state
                .nodes()
                .iter()
                .filter(|n| {
                    podplace_engine::plugins::node_affinity::matches(
                        &s.pod,
                        n,
                        world.state.interner(),
                    )
                })
                .filter_map(|n| n.labels.get(key))
                .map(|v| world.text(v).to_string())
                .collect();
            let phantom: Vec<String> = all.difference(&domains).cloned().collect();
            (
                format!("counts {key_text} domain(s) no node there takes the pods in"),
                format!(
                    "{pending} of {replicas} replicas stay Pending: the spread over {key_text} counts {} (nodes whose taints the pods do not tolerate) as empty domain(s) under the default nodeTaintsPolicy: Ignore",
                    phantom.join(", ")
                ),
                "nodeTaintsPolicy",
                Value::from("Honor"),
                format!("set nodeTaintsPolicy: Honor: domains whose nodes the pods cannot tolerate no longer count, and the {replicas} replicas are all placed"),
            )
        } else if without_min {
            let m = min_domains.unwrap_or(0);
            (
                format!("minDomains {m} but {} {key_text} domain(s) exist", domains.len()),
                format!(
                    "{pending} of {replicas} replicas stay Pending: minDomains {m} exceeds the {} eligible {key_text} domain(s), so the global minimum counts as 0 and every domain that already has a pod is over maxSkew {}",
                    domains.len(),
                    c.max_skew
                ),
                "minDomains",
                Value::Null,
                format!("drop minDomains (or lower it to {} or fewer, the domains that exist): the {replicas} replicas are all placed", domains.len()),
            )
        } else {
            continue;
        };
        let mut f = finding(&INFO, &s.id, world.locate(&s.origin, &path), label, message);
        f.notes.push(format!(
            "placing the {replicas} replicas again (the engine, on the nodes given) leaves {pending} Pending"
        ));
        let mut items: Vec<Value> = api_list
            .iter()
            .map(|a| serde_json::to_value(a).unwrap_or(Value::Null))
            .collect();
        if let Some(obj) = items.get_mut(i).and_then(Value::as_object_mut) {
            if value.is_null() {
                obj.remove(field);
            } else {
                obj.insert(field.to_string(), value);
            }
            f.fix = Some(Fix {
                description,
                patch: MergePatch::new()
                    .set(&s.spec_path.child("topologySpreadConstraints"), Value::Array(items))
                    .to_yaml(),
                verified: Some(format!(
                    "placing the {replicas} replicas again with the fix (the engine, on the nodes given) places every one"
                )),
            });
        }
        sink.push(&s.ignored, f);
    }
}

/// Host ports: one replica per node. Placed again, replicas beyond the
/// nodes that take one stay Pending; reported only when the host port is
/// the cause (without it every replica is placed).
fn host_ports_exceed_nodes(
    world: &World<'_>,
    s: &Subject<'_>,
    replicas: i32,
    eligible: &[NodeId],
    sink: &mut Sink,
) {
    let Some(first) = s.pod.host_ports.first() else {
        return;
    };
    let Some(hostname) = world.state.interner().lookup("kubernetes.io/hostname") else {
        return;
    };
    let total = usize::try_from(replicas).unwrap_or(0);
    let placed = world.place_replicas(&s.workload, &s.pod, total, &[], hostname);
    let pending = total - placed.iter().flatten().count();
    if pending == 0 {
        return;
    }
    let mut portless = s.pod.clone();
    portless.host_ports.clear();
    if !world
        .place_replicas(&s.workload, &portless, total, &[], hostname)
        .iter()
        .all(Option::is_some)
    {
        // Something else keeps them Pending too (resources, affinity).
        return;
    }
    let running = total - pending;
    let ports: Vec<String> = s
        .pod
        .host_ports
        .iter()
        .map(|p| p.port.to_string())
        .collect();
    let path = crate::rules::pp003_rollout_deadlock::host_port_path(s, first.port);
    let mut f = finding(
        &INFO,
        &s.id,
        world.locate(&s.origin, &path),
        format!("hostPort {}: one pod per node", first.port),
        format!(
            "{replicas} replicas but only {running} node(s) can run one (hostPort {} is taken once per node): {pending} pod(s) will stay Pending",
            ports.join(", ")
        ),
    );
    f.notes.push(format!(
        "placing the {replicas} replicas again (the engine, on the nodes given) leaves {pending} Pending; without the host port every one is placed"
    ));
    let replicas_path = FieldPath::of(&["spec", "replicas"]);
    if world.is_written(&s.origin, &replicas_path) {
        f.related.push(Related {
            message: format!("{replicas} replicas"),
            object: s.id.clone(),
            location: Some(world.locate(&s.origin, &replicas_path)),
        });
    }
    // Nodes like the first one that takes a replica, with fresh hostnames.
    let like = placed
        .iter()
        .flatten()
        .find_map(|(node, _)| world.state.node_id(node))
        .or_else(|| eligible.first().copied());
    if let Some(like) = like {
        let template = world.node_name(like).to_string();
        let mut new_nodes: Vec<NewNode> = Vec::new();
        for _ in 0..pending {
            let name = fresh_node_name(world, &new_nodes, &template);
            new_nodes.push(NewNode {
                like,
                labels: vec![("kubernetes.io/hostname".to_string(), name.clone())],
                name,
            });
        }
        let grown = world.place_replicas(&s.workload, &s.pod, total, &new_nodes, hostname);
        if grown.iter().all(Option::is_some) {
            let names: Vec<&str> = new_nodes.iter().map(|x| x.name.as_str()).collect();
            f.notes.push(format!(
                "other verified way out: add {pending} node(s) like {template} (its pool, size and taints), e.g. {}: placing the {replicas} replicas again places every one",
                names.join(", ")
            ));
        }
    }
    let scaled = world.place_replicas(&s.workload, &s.pod, running, &[], hostname);
    let n = i32::try_from(running).unwrap_or(i32::MAX);
    f.fix = Some(Fix {
        description: format!("run {running} replicas, one per node that can run one"),
        patch: MergePatch::new()
            .set(&replicas_path, Value::from(n))
            .to_yaml(),
        verified: (running > 0 && scaled.iter().all(Option::is_some)).then(|| {
            format!(
                "placing {running} replicas again (the engine, on the nodes given) puts one on each of {} node(s), none Pending",
                by_domain(&scaled).len()
            )
        }),
    });
    sink.push(&s.ignored, f);
}
