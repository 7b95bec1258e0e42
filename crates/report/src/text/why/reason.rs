//! One reason of a group of nodes, as text: the detail of the first node
//! and, where nodes differ (label values, free resources, spread domains,
//! blocking pods), the values of all of them.

use std::collections::BTreeMap;
use std::io::{Result, Write};

use podplace_explain::{
    group::short_message, Detail, Explanation, Group, NodeVerdict, Reason, RuleOwner,
};

use super::{quantity, Printed, BLOCKERS_SHOWN};
use crate::text::{few, indent, thousands};

/// The lines of one reason shared by a group of nodes (`ri` is its index in
/// each node's reasons): what the node misses, with the values of every node
/// of the group.
pub(super) fn render(
    out: &mut impl Write,
    e: &Explanation,
    g: &Group,
    ri: usize,
    reason: &Reason,
    printed: &mut Printed,
) -> Result<()> {
    writeln!(
        out,
        "    {}: {}",
        paint!(reason.plugin, yellow),
        short_message(&reason.message)
    )?;
    // The same reason on every node of the group.
    let across: Vec<(&NodeVerdict, &Reason)> = g
        .members
        .iter()
        .map(|&i| &e.nodes[i])
        .filter_map(|v| v.reasons.get(ri).map(|r| (v, r)))
        .collect();
    match &reason.detail {
        Detail::Cordoned => writeln!(out, "      the node is cordoned (spec.unschedulable: true)")?,
        Detail::NodeName { wanted } => {
            writeln!(out, "      the pod's spec.nodeName asks for {wanted}")?
        }
        Detail::Taints { taints } => {
            for t in taints {
                writeln!(
                    out,
                    "      taint {} (key {}, value {:?}, effect {}) is not tolerated",
                    t.display(),
                    t.key,
                    t.value,
                    t.effect
                )?;
            }
        }
        Detail::NodeAffinity {
            node_selector,
            terms,
            excluded_by_name,
        } => {
            if *excluded_by_name {
                writeln!(
                    out,
                    "      not among the nodes the pod's required node affinity names (matchFields metadata.name)"
                )?;
            }
            for (mi, m) in node_selector.iter().enumerate() {
                let values = node_values(&across, |d| match d {
                    Detail::NodeAffinity { node_selector, .. } => node_selector.get(mi),
                    _ => None,
                });
                writeln!(
                    out,
                    "      nodeSelector {} not matched: {values}",
                    m.requirement
                )?;
            }
            for (ti, (index, misses)) in terms.iter().enumerate() {
                writeln!(
                    out,
                    "      required node affinity term {} fails:",
                    index + 1
                )?;
                for (mi, m) in misses.iter().enumerate() {
                    let values = node_values(&across, |d| match d {
                        Detail::NodeAffinity { terms, .. } => {
                            terms.get(ti).and_then(|(_, ms)| ms.get(mi))
                        }
                        _ => None,
                    });
                    writeln!(out, "        {}: {values}", m.requirement)?;
                }
            }
        }
        Detail::EnforcedAffinity { profile, terms } => {
            writeln!(
                out,
                "      scheduler profile {profile}'s addedAffinity (NodeAffinityArgs, --scheduler-config) \
                 excludes the node"
            )?;
            writeln!(
                out,
                "      kube-scheduler enforces it on every pod of the profile: no change to the pod lifts it"
            )?;
            for (ti, (index, misses)) in terms.iter().enumerate() {
                writeln!(out, "      addedAffinity required term {} fails:", index + 1)?;
                for (mi, m) in misses.iter().enumerate() {
                    let values = node_values(&across, |d| match d {
                        Detail::EnforcedAffinity { terms, .. } => {
                            terms.get(ti).and_then(|(_, ms)| ms.get(mi))
                        }
                        _ => None,
                    });
                    writeln!(out, "        {}: {values}", m.requirement)?;
                }
            }
        }
        Detail::Ports { ports } => {
            // Each node of the group has its own holder: name them per node.
            for p in ports {
                let mut holders: Vec<String> = Vec::new();
                for (v, r) in &across {
                    let Detail::Ports { ports: theirs } = &r.detail else {
                        continue;
                    };
                    for q in theirs
                        .iter()
                        .filter(|q| (q.port, &q.protocol, &q.ip) == (p.port, &p.protocol, &p.ip))
                    {
                        holders.push(if across.len() > 1 {
                            format!("{} on {}", q.used_by, v.node)
                        } else {
                            q.used_by.clone()
                        });
                    }
                }
                writeln!(
                    out,
                    "      host port {}/{} on {} is held by {}",
                    p.port,
                    p.protocol,
                    p.ip,
                    few(&holders)
                )?;
            }
        }
        Detail::Resource(s) => {
            let free: Vec<i64> = across
                .iter()
                .filter_map(|(_, r)| match &r.detail {
                    Detail::Resource(x) => Some(x.free),
                    _ => None,
                })
                .collect();
            let (lo, hi) = (
                free.iter().copied().min().unwrap_or(s.free),
                free.iter().copied().max().unwrap_or(s.free),
            );
            let q = |v| quantity(&s.resource, v);
            let free_text = if lo == hi {
                q(lo)
            } else {
                format!("{} to {}", q(lo), q(hi))
            };
            let short_text = if lo == hi {
                q(s.requested - lo)
            } else {
                format!("{} to {}", q(s.requested - hi), q(s.requested - lo))
            };
            if s.resource == "pods" {
                writeln!(
                    out,
                    "      the node already runs {} pods, its limit (allocatable pods)",
                    s.used
                )?;
            } else {
                writeln!(
                    out,
                    "      {}: the pod requests {}, the node has {} free of {} allocatable: short by {}{}",
                    s.resource,
                    q(s.requested),
                    free_text,
                    q(s.allocatable),
                    short_text,
                    if s.exceeds_node {
                        " (more than the whole node: preemption cannot help)"
                    } else {
                        ""
                    }
                )?;
            }
        }
        Detail::SpreadMissingLabel { topology_key, .. } => writeln!(
            out,
            "      the node has no {topology_key} label, which a DoNotSchedule spread constraint needs"
        )?,
        Detail::SpreadSkew {
            constraint,
            topology_key,
            min,
            min_domains,
            max_skew,
            domains,
            domain_total,
            ..
        } => {
            // The node's domain, its count and the skew are per node: one
            // line per domain among the group's nodes.
            let mut per_domain: BTreeMap<(&str, i64, bool, i64), Vec<&str>> = BTreeMap::new();
            for (v, r) in &across {
                if let Detail::SpreadSkew {
                    constraint: c,
                    domain,
                    matching,
                    self_match,
                    skew,
                    ..
                } = &r.detail
                {
                    if c == constraint {
                        per_domain
                            .entry((domain.as_str(), *matching, *self_match, *skew))
                            .or_default()
                            .push(&v.node);
                    }
                }
            }
            let below_min_domains =
                *min == 0 && (*domain_total as i64) < i64::from(*min_domains);
            const DOMAIN_LINES: usize = 3;
            for ((domain, matching, self_match, skew), nodes) in
                per_domain.iter().take(DOMAIN_LINES)
            {
                let on = if g.members.len() > 1 {
                    format!(" ({})", few(&nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>()))
                } else {
                    String::new()
                };
                let least = if below_min_domains {
                    "the global minimum 0 (minDomains)".to_string()
                } else {
                    format!("the emptiest domain {min}")
                };
                writeln!(
                    out,
                    "      {topology_key}={domain}{on} has {matching} matching pod(s){}, {least}: skew {skew} > maxSkew {max_skew}",
                    if *self_match { " (+1 with this pod)" } else { "" }
                )?;
            }
            if per_domain.len() > DOMAIN_LINES {
                let rest: Vec<i64> = per_domain
                    .keys()
                    .skip(DOMAIN_LINES)
                    .map(|&(_, _, _, skew)| skew)
                    .collect();
                let (lo, hi) = (
                    rest.iter().min().copied().unwrap_or(0),
                    rest.iter().max().copied().unwrap_or(0),
                );
                let nodes: usize = per_domain.values().skip(DOMAIN_LINES).map(Vec::len).sum();
                writeln!(
                    out,
                    "      and {} more {topology_key} domains ({} nodes): skew {} > maxSkew {max_skew}",
                    thousands(per_domain.len() - DOMAIN_LINES),
                    thousands(nodes),
                    if lo == hi { lo.to_string() } else { format!("{lo} to {hi}") }
                )?;
            }
            if below_min_domains {
                writeln!(
                    out,
                    "      minDomains is {min_domains} but only {domain_total} {topology_key} domain(s) exist, so kube-scheduler takes the global minimum as 0: every domain may hold at most maxSkew {max_skew} matching pod(s) until {min_domains} domains exist"
                )?;
            }
            let list: Vec<String> = domains
                .iter()
                .map(|d| format!("{}={}", d.domain, d.pods))
                .collect();
            writeln!(
                out,
                "      matching pods per domain{}: {}",
                if *domain_total > domains.len() {
                    format!(" (fewest first, {} of {})", domains.len(), domain_total)
                } else {
                    String::new()
                },
                list.join(", ")
            )?;
        }
        Detail::PodAffinity { misses } => {
            for m in misses {
                let t = &e.terms[m.term];
                // The nodes' own domains (a group may span several).
                let mut in_domains: BTreeMap<&str, Vec<String>> = BTreeMap::new();
                for (v, r) in &across {
                    if let Detail::PodAffinity { misses: theirs } = &r.detail {
                        if let Some(d) = theirs
                            .iter()
                            .find(|x| x.term == m.term)
                            .and_then(|x| x.domain.as_deref())
                        {
                            in_domains.entry(d).or_default().push(v.node.clone());
                        }
                    }
                }
                let where_ = match (&m.domain, in_domains.len()) {
                    (None, _) => format!("the node has no {} label", t.topology_key),
                    (Some(d), 0 | 1) => format!(
                        "no pod matching it runs in {}={d}",
                        t.topology_key
                    ),
                    (Some(_), _) => {
                        let list: Vec<String> = in_domains
                            .iter()
                            .map(|(d, nodes)| {
                                format!("{}={d} ({})", t.topology_key, few(nodes))
                            })
                            .collect();
                        format!("no pod matching it runs in any of {}", list.join(", "))
                    }
                };
                writeln!(
                    out,
                    "      the pod's podAffinity term {}: {where_} ({} matching pod(s) in the whole cluster)",
                    t.index + 1,
                    m.matching_anywhere
                )?;
                if printed.first_time(m.term) {
                    write!(out, "{}", indent(&t.yaml, 8))?;
                }
            }
        }
        Detail::PodAntiAffinity | Detail::ExistingAntiAffinity => {
            render_blockers(out, e, &across, printed)?;
        }
        Detail::Conflict => writeln!(
            out,
            "      the pod's required node affinity terms pin disjoint sets of node names"
        )?,
        Detail::VolumeNodeAffinity { .. }
        | Detail::VolumeUnbound { .. }
        | Detail::VolumeCapacity { .. }
        | Detail::VolumeMissing { .. }
        | Detail::VolumeZone { .. }
        | Detail::ReadWriteOncePod { .. }
        | Detail::DiskConflict { .. }
        | Detail::VolumeLimit { .. }
        | Detail::ResourceClaimNodes { .. } => super::storage::render(out, &across, &reason.detail)?,
    }
    Ok(())
}

/// `hermes has no stokesnet/vault label` / `zone=b on 2,100 nodes, zone=c on 3 nodes`.
pub(super) fn node_values<'a>(
    across: &[(&'a NodeVerdict, &'a Reason)],
    pick: impl Fn(&'a Detail) -> Option<&'a podplace_explain::LabelMiss>,
) -> String {
    let mut counts: BTreeMap<Option<&str>, (usize, &str)> = BTreeMap::new();
    let mut key = "";
    for (v, r) in across {
        if let Some(m) = pick(&r.detail) {
            key = &m.key;
            let e = counts
                .entry(m.node_value.as_deref())
                .or_insert((0, &v.node));
            e.0 += 1;
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(value, (n, first))| {
            let what = match value {
                None => format!("no {key} label"),
                Some(v) if key == "metadata.name" => format!("name {v}"),
                Some(v) => format!("{key}={v}"),
            };
            if *n == 1 {
                format!("{first} has {what}")
            } else {
                format!("{what} on {} nodes", thousands(*n))
            }
        })
        .collect();
    parts.join(", ")
}

/// The pods that block by (anti-)affinity, per workload and term, with the
/// rule they break written out once.
fn render_blockers(
    out: &mut impl Write,
    e: &Explanation,
    across: &[(&NodeVerdict, &Reason)],
    printed: &mut Printed,
) -> Result<()> {
    // (workload, term, owner) → the blocking pods kept (distinct, in order)
    // and the exact count per distinct domain across the group's nodes.
    type Key<'k> = (&'k str, usize, RuleOwner);
    struct Seen<'k> {
        key: Key<'k>,
        pods: Vec<String>,
        domains: BTreeMap<&'k str, usize>,
        domain: &'k str,
    }
    let mut by: Vec<Seen<'_>> = Vec::new();
    for (_, r) in across {
        for c in &r.counts {
            let key = (c.workload.as_str(), c.term, c.rule_owner);
            let i = match by.iter().position(|s| s.key == key) {
                Some(i) => i,
                None => {
                    by.push(Seen {
                        key,
                        pods: Vec::new(),
                        domains: BTreeMap::new(),
                        domain: &c.domain,
                    });
                    by.len() - 1
                }
            };
            by[i].domains.insert(&c.domain, c.pods);
        }
        for b in &r.blockers {
            let key = (b.workload.as_str(), b.term, b.rule_owner);
            if let Some(s) = by.iter_mut().find(|s| s.key == key) {
                let text = format!("{} on {}", b.pod, b.node);
                if !s.pods.contains(&text) {
                    s.pods.push(text);
                }
            }
        }
    }
    for Seen {
        key: (workload, term, owner),
        pods,
        domains,
        domain,
    } in by
    {
        let t = &e.terms[term];
        let total = domains.values().sum::<usize>().max(pods.len());
        let mut list: Vec<String> = pods.into_iter().take(BLOCKERS_SHOWN).collect();
        if total > list.len() {
            list.push(format!("and {} more", thousands(total - list.len())));
        }
        writeln!(
            out,
            "      blocked by {} ({})",
            paint!(list.join(", "), bold),
            workload
        )?;
        let whose = super::cause::rule_whose(e, term, owner);
        let met = if across.len() > 1 {
            format!("met in each node's {} domain", t.topology_key)
        } else {
            format!("met in domain {}={domain}", t.topology_key)
        };
        if printed.first_time(term) {
            writeln!(out, "        rule: {whose}; {met}:")?;
            write!(out, "{}", indent(&t.yaml, 10))?;
        } else {
            writeln!(out, "        rule: {whose}; {met} (term shown above)")?;
        }
    }
    Ok(())
}
