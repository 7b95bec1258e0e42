//! `why -o json` (schema in docs/why-json.md): the explanation as typed rows
//! with every object's keys in alphabetical order. The HTML report embeds
//! this same object, so the page shows exactly what JSON consumers see.

use std::collections::BTreeMap;

use podplace_explain::{Detail, Phase, Reason, TermKind, TermView};
use serde::Serialize;
use serde_json::{json, Value};

use crate::why::{unit, WhyAnswer};

/// `why -o json`'s object, borrowed from the answer: typed rather than
/// built with `json!`, since at 5,000 nodes it holds tens of thousands of
/// rows.
#[derive(Serialize)]
pub struct WhyJson<'a> {
    pod: &'a str,
    workload: &'a str,
    phase: &'static str,
    node: Option<&'a str>,
    placed_by_podplace: bool,
    gates: &'a [String],
    message: &'a str,
    node_count: usize,
    would_land_on: Option<&'a str>,
    pod_reasons: Vec<Value>,
    nodes: Vec<JsonNode<'a>>,
    groups: Vec<JsonGroup<'a>>,
    scores: Vec<JsonScore<'a>>,
    tied: &'a [String],
    terms: Vec<Value>,
    notes: Vec<JsonNote<'a>>,
    fixes: Vec<JsonFix<'a>>,
    unreadable: &'a [String],
}

#[derive(Serialize)]
struct JsonNode<'a> {
    node: &'a str,
    reasons: Vec<JsonReason<'a>>,
}

#[derive(Serialize)]
struct JsonReason<'a> {
    plugin: &'a str,
    code: &'a str,
    reason: &'a str,
    detail: Value,
    blockers: Vec<JsonBlocker<'a>>,
    blockers_total: usize,
    blocker_counts: Vec<JsonCount<'a>>,
}

// Typed (not `json!`) because a 5,000-node answer holds tens of thousands
// of these; fields in alphabetical order, as the other objects print.
#[derive(Serialize)]
struct JsonBlocker<'a> {
    node: &'a str,
    pod: &'a str,
    rule_owner: &'a str,
    term: JsonBlockerTerm<'a>,
    workload: &'a str,
}

#[derive(Serialize)]
struct JsonBlockerTerm<'a> {
    domain: &'a str,
    id: usize,
    kind: &'a str,
    selector: &'a str,
    topology_key: &'a str,
}

#[derive(Serialize)]
struct JsonCount<'a> {
    domain: &'a str,
    pods: usize,
    rule_owner: &'a str,
    term: usize,
    workload: &'a str,
}

#[derive(Serialize)]
struct JsonGroup<'a> {
    nodes: Vec<&'a str>,
    count: usize,
    reasons: &'a [String],
}

#[derive(Serialize)]
struct JsonScore<'a> {
    node: &'a str,
    total: i64,
    plugins: BTreeMap<&'a str, i64>,
}

#[derive(Serialize)]
struct JsonNote<'a> {
    kind: &'a str,
    term: Option<usize>,
    text: &'a str,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    title: &'a str,
    target: &'a str,
    patch: &'a str,
    command: &'a str,
    rationale: &'a str,
    lands_on: &'a str,
    verification: &'a str,
}

/// The same value with every object's keys sorted, whatever map type
/// serde_json was built with, so the output never depends on features.
fn canonical(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

fn kind_name(kind: TermKind) -> &'static str {
    match kind {
        TermKind::RequiredAffinity | TermKind::PreferredAffinity => "podAffinity",
        TermKind::RequiredAntiAffinity | TermKind::PreferredAntiAffinity => "podAntiAffinity",
    }
}

fn term_json(id: usize, t: &TermView) -> Value {
    let v = json!({
        "id": id,
        "kind": kind_name(t.kind),
        "required": matches!(t.kind, TermKind::RequiredAffinity | TermKind::RequiredAntiAffinity),
        "owner_workload": t.owner_workload,
        "index": t.index,
        "selector": t.selector,
        "topology_key": t.topology_key,
        "yaml": t.yaml,
    });
    canonical(v)
}

fn detail_json(detail: &Detail) -> Value {
    canonical(detail_value(detail))
}

fn detail_value(detail: &Detail) -> Value {
    match detail {
        Detail::Cordoned => json!({"kind": "cordoned"}),
        Detail::NodeName { wanted } => json!({"kind": "node_name", "wanted": wanted}),
        Detail::Taints { taints } => json!({
            "kind": "taints",
            "taints": taints.iter().map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect})).collect::<Vec<_>>(),
        }),
        Detail::NodeAffinity {
            node_selector,
            terms,
            excluded_by_name,
        } => {
            let miss = |m: &podplace_explain::LabelMiss| json!({"requirement": m.requirement, "key": m.key, "node_value": m.node_value});
            json!({
                "kind": "node_affinity",
                "node_selector": node_selector.iter().map(miss).collect::<Vec<_>>(),
                "terms": terms.iter().map(|(i, ms)| json!({"index": i, "failing": ms.iter().map(miss).collect::<Vec<_>>()})).collect::<Vec<_>>(),
                "excluded_by_name": excluded_by_name,
            })
        }
        Detail::EnforcedAffinity { profile, terms } => {
            let miss = |m: &podplace_explain::LabelMiss| json!({"requirement": m.requirement, "key": m.key, "node_value": m.node_value});
            json!({
                "kind": "enforced_node_affinity",
                "profile": profile,
                "terms": terms.iter().map(|(i, ms)| json!({"index": i, "failing": ms.iter().map(miss).collect::<Vec<_>>()})).collect::<Vec<_>>(),
            })
        }
        Detail::Ports { ports } => json!({
            "kind": "ports",
            "ports": ports.iter().map(|p| json!({"port": p.port, "protocol": p.protocol, "ip": p.ip, "used_by": p.used_by})).collect::<Vec<_>>(),
        }),
        Detail::Resource(s) => json!({
            "kind": "resource",
            "resource": s.resource,
            "requested": s.requested,
            "allocatable": s.allocatable,
            "used": s.used,
            "free": s.free,
            "short_by": s.short_by,
            "exceeds_node": s.exceeds_node,
            "unit": unit(&s.resource),
        }),
        Detail::SpreadMissingLabel {
            constraint,
            topology_key,
        } => {
            json!({"kind": "spread_missing_label", "constraint": constraint, "topology_key": topology_key})
        }
        Detail::SpreadSkew {
            constraint,
            topology_key,
            domain,
            matching,
            self_match,
            min,
            min_domains,
            skew,
            max_skew,
            domains,
            domain_total,
        } => json!({
            "kind": "spread_skew",
            "constraint": constraint,
            "topology_key": topology_key,
            "domain": domain,
            "matching": matching,
            "self_match": self_match,
            "min": min,
            "min_domains": min_domains,
            "skew": skew,
            "max_skew": max_skew,
            "domains": domains.iter().map(|d| json!({"domain": d.domain, "pods": d.pods})).collect::<Vec<_>>(),
            "domain_total": domain_total,
        }),
        Detail::PodAffinity { misses } => json!({
            "kind": "pod_affinity",
            "misses": misses.iter().map(|m| json!({
                "term": m.term,
                "domain": m.domain,
                "matching_here": m.matching_here,
                "matching_anywhere": m.matching_anywhere,
            })).collect::<Vec<_>>(),
        }),
        Detail::PodAntiAffinity => json!({"kind": "pod_anti_affinity"}),
        Detail::ExistingAntiAffinity => json!({"kind": "existing_anti_affinity"}),
        Detail::Conflict => json!({"kind": "node_affinity_conflict"}),
        Detail::VolumeNodeAffinity { volumes } => json!({
            "kind": "volume_node_affinity",
            "volumes": volumes.iter().map(|v| json!({
                "claim": v.claim,
                "volume": v.volume,
                "terms": terms_json(&v.terms),
            })).collect::<Vec<_>>(),
        }),
        Detail::VolumeUnbound { claims } => json!({
            "kind": "volume_unbound",
            "claims": claims.iter().map(unbound_json).collect::<Vec<_>>(),
        }),
        Detail::VolumeCapacity { claims } => json!({
            "kind": "volume_capacity",
            "claims": claims.iter().map(unbound_json).collect::<Vec<_>>(),
        }),
        Detail::VolumeMissing { claims } => json!({
            "kind": "volume_missing",
            "claims": claims.iter().map(|(c, v)| json!({"claim": c, "volume": v})).collect::<Vec<_>>(),
        }),
        Detail::VolumeZone { volumes } => json!({
            "kind": "volume_zone",
            "volumes": volumes.iter().map(|v| json!({
                "claim": v.claim,
                "volume": v.volume,
                "labels": v.labels.iter().map(|(k, value, node)| json!({"key": k, "volume_value": value, "node_value": node})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
        Detail::ReadWriteOncePod { holders } => json!({
            "kind": "read_write_once_pod",
            "holders": holders.iter().map(|(c, p, n)| json!({"claim": c, "pod": p, "node": n})).collect::<Vec<_>>(),
        }),
        Detail::DiskConflict { pods } => json!({"kind": "disk_conflict", "pods": pods}),
        Detail::VolumeLimit { drivers } => json!({
            "kind": "volume_limit",
            "drivers": drivers.iter().map(|d| json!({"driver": d.driver, "limit": d.limit, "attached": d.attached, "adding": d.adding})).collect::<Vec<_>>(),
        }),
        Detail::ResourceClaimNodes { claims } => json!({
            "kind": "resource_claim_nodes",
            "claims": claims.iter().map(|c| json!({"claim": c.claim, "terms": terms_json(&c.terms)})).collect::<Vec<_>>(),
        }),
    }
}

/// Failing node selector terms, as `node_affinity`'s `terms` prints them.
fn terms_json(terms: &[(usize, Vec<podplace_explain::LabelMiss>)]) -> Value {
    let miss = |m: &podplace_explain::LabelMiss| json!({"requirement": m.requirement, "key": m.key, "node_value": m.node_value});
    json!(terms
        .iter()
        .map(|(i, ms)| json!({"index": i, "failing": ms.iter().map(miss).collect::<Vec<_>>()}))
        .collect::<Vec<_>>())
}

fn unbound_json(c: &podplace_explain::UnboundClaim) -> Value {
    json!({"claim": c.claim, "class": c.class, "request": c.request, "causes": c.causes})
}

fn pod_reason_json(r: &podplace_explain::PodReason) -> Value {
    canonical(json!({
        "plugin": r.plugin,
        "code": r.code,
        "reason": r.message,
        "kind": r.kind.as_str(),
        "claims": r.claims,
        "held": r.held,
        "text": r.text,
    }))
}

/// The JSON object of a `why` answer, ready for serde_json (pretty for
/// `-o json`, as a value for the HTML page).
pub fn why<'a>(answer: &WhyAnswer<'a>) -> WhyJson<'a> {
    let (e, unreadable) = (answer.explanation, answer.unreadable);
    let mut gates: &[String] = &[];
    let (phase, node, by_podplace) = match &e.phase {
        Phase::Pending => ("Pending", None, false),
        Phase::Gated { gates: g } => {
            gates = g;
            ("Gated", None, false)
        }
        Phase::Placed { node, by_podplace } => ("Placed", Some(node.as_str()), *by_podplace),
        Phase::OtherScheduler { .. } => ("OtherScheduler", None, false),
        Phase::Finished { node, .. } => ("Finished", node.as_deref(), false),
    };
    let reason = |r: &'a Reason| JsonReason {
        plugin: r.plugin,
        code: r.code,
        reason: &r.message,
        detail: detail_json(&r.detail),
        blockers: r
            .blockers
            .iter()
            .map(|b| JsonBlocker {
                node: &b.node,
                pod: &b.pod,
                rule_owner: b.rule_owner.as_str(),
                term: JsonBlockerTerm {
                    domain: &b.domain,
                    id: b.term,
                    kind: kind_name(e.terms[b.term].kind),
                    selector: &e.terms[b.term].selector,
                    topology_key: &e.terms[b.term].topology_key,
                },
                workload: &b.workload,
            })
            .collect(),
        blockers_total: r.blockers_total,
        blocker_counts: r
            .counts
            .iter()
            .map(|c| JsonCount {
                domain: &c.domain,
                pods: c.pods,
                rule_owner: c.rule_owner.as_str(),
                term: c.term,
                workload: &c.workload,
            })
            .collect(),
    };
    WhyJson {
        pod: &e.pod,
        workload: &e.workload,
        phase,
        node,
        placed_by_podplace: by_podplace,
        gates,
        message: &e.message,
        node_count: e.node_count,
        would_land_on: e.would_land_on.as_deref(),
        pod_reasons: e.pod_reasons.iter().map(pod_reason_json).collect(),
        nodes: e
            .nodes
            .iter()
            .map(|v| JsonNode {
                node: &v.node,
                reasons: v.reasons.iter().map(reason).collect(),
            })
            .collect(),
        groups: e
            .groups
            .iter()
            .map(|g| JsonGroup {
                nodes: g
                    .members
                    .iter()
                    .map(|&i| e.nodes[i].node.as_str())
                    .collect(),
                count: g.members.len(),
                reasons: &g.summaries,
            })
            .collect(),
        scores: e
            .scores
            .iter()
            .map(|s| JsonScore {
                node: &s.node,
                total: s.total,
                plugins: s.plugins.iter().map(|(p, v)| (*p, *v)).collect(),
            })
            .collect(),
        tied: &e.tied,
        terms: e
            .terms
            .iter()
            .enumerate()
            .map(|(i, t)| term_json(i, t))
            .collect(),
        notes: e
            .notes
            .iter()
            .map(|n| JsonNote {
                kind: n.kind.as_str(),
                term: n.term,
                text: &n.text,
            })
            .collect(),
        fixes: e
            .fixes
            .iter()
            .map(|f| JsonFix {
                title: &f.title,
                target: &f.target,
                patch: &f.patch,
                command: &f.command,
                rationale: &f.rationale,
                lands_on: &f.lands_on,
                verification: &f.verification,
            })
            .collect(),
        unreadable,
    }
}
