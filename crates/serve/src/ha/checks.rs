//! The per-workload checks over the live state: each reads the engine's
//! indexes (matching counts per domain, spread counts per node) once per
//! workload and term, never per pod pair.

use std::collections::{BTreeMap, BTreeSet};

use podplace_engine::plugins::node_resources_fit;
use podplace_engine::state::terms::incoming_term_matches;
use podplace_engine::{ClusterState, NodeId, PodId, TermId};
use podplace_model::intern::Sym;
use podplace_model::objects::{SpreadConstraint, WhenUnsatisfiable};
use podplace_model::workloads::WorkloadRef;
use podplace_rebalance::strategies::{min_moves, node_takes, term_text};
use podplace_sim::findings::{high_availability as sim_high_availability, Spread};
use podplace_world::World;
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Groups, HaFinding, HaKind, WorkloadDomains, HOSTNAME, ZONE};

fn finding(
    kind: HaKind,
    workload: &WorkloadRef,
    key: Option<&str>,
    domain: Option<&str>,
    message: String,
    fix: Option<String>,
) -> HaFinding {
    HaFinding {
        kind,
        workload: workload.clone(),
        topology_key: key.map(str::to_string),
        domain: domain.map(str::to_string),
        message,
        fix,
    }
}

/// Node name → zone, for the nodes that carry the zone label.
fn zones(state: &ClusterState) -> BTreeMap<String, String> {
    let mut zones = BTreeMap::new();
    if let Some(key) = state.interner().lookup(ZONE) {
        for node in state.nodes() {
            if let Some(z) = node.labels.get(key) {
                zones.insert(
                    node.name.to_string(),
                    state.interner().resolve(z).to_string(),
                );
            }
        }
    }
    zones
}

/// HALost, as `simulate` finds it (podplace-sim's `high_availability`).
pub(crate) fn high_availability(
    world: &World,
    groups: &Groups<'_>,
    only: &dyn Fn(&WorkloadRef) -> bool,
) -> Vec<HaFinding> {
    let state = world.state();
    let zones = zones(state);
    let mut by_name: FxHashMap<String, &WorkloadRef> = FxHashMap::default();
    let zone_key = state.interner().lookup(ZONE);
    let zone = |n: NodeId| zone_key.and_then(|k| state.node(n).labels.get(k));
    // Only workloads on one node or one zone can have lost HA: the others
    // are not handed to the check (no node names to copy).
    let spreads: Vec<Spread> = groups
        .bound
        .iter()
        .filter(|(w, _)| only(w))
        .filter(|(_, pods)| {
            let first = pods[0].1;
            pods.iter().all(|&(_, n)| n == first)
                || (zone(first).is_some() && pods.iter().all(|&(_, n)| zone(n) == zone(first)))
        })
        .map(|(w, pods)| {
            let display = w.to_string();
            by_name.insert(display.clone(), w.as_ref());
            Spread {
                workload: display,
                desired: groups.desired(w, pods.len()),
                nodes: pods
                    .iter()
                    .map(|&(_, n)| state.node(n).name.to_string())
                    .collect(),
            }
        })
        .collect();
    sim_high_availability(&spreads, &zones, state.nodes().len())
        .into_iter()
        .filter_map(|f| {
            let w = *by_name.get(f.workload.as_deref()?)?;
            let (key, domain) = match &f.node {
                Some(node) => (HOSTNAME, node.clone()),
                None => {
                    let first = groups.bound.get(w)?.first()?.1;
                    (ZONE, zones.get(&*state.node(first).name)?.clone())
                }
            };
            let fix = format!(
                "evict replicas from {domain} so the scheduler places them elsewhere (`podplace rebalance` plans the evictions and proves where each lands), and keep them apart with a topologySpreadConstraint on {key} with whenUnsatisfiable: DoNotSchedule"
            );
            Some(finding(
                HaKind::HALost,
                w,
                Some(key),
                Some(&domain),
                f.message,
                Some(fix),
            ))
        })
        .collect()
}

/// Distinct hostname domains (and zones, when nodes carry zones) per
/// workload with running replicas.
pub(crate) fn domains(
    world: &World,
    groups: &Groups<'_>,
    only: &dyn Fn(&WorkloadRef) -> bool,
) -> Vec<WorkloadDomains> {
    let state = world.state();
    let zone_key = state.interner().lookup(ZONE);
    let mut out = Vec::new();
    for (w, pods) in groups.bound.iter().filter(|(w, _)| only(w)) {
        let nodes: FxHashSet<NodeId> = pods.iter().map(|&(_, n)| n).collect();
        out.push(WorkloadDomains {
            workload: w.as_ref().clone(),
            running: pods.len(),
            topology_key: HOSTNAME.to_string(),
            domains: nodes.len(),
        });
        if let Some(key) = zone_key {
            let zones: FxHashSet<Sym> = nodes
                .iter()
                .filter_map(|&n| state.node(n).labels.get(key))
                .collect();
            out.push(WorkloadDomains {
                workload: w.as_ref().clone(),
                running: pods.len(),
                topology_key: ZONE.to_string(),
                domains: zones.len(),
            });
        }
    }
    out
}

/// Per topology key: each node's domain (an index into `values`).
struct KeyDomains {
    of_node: Vec<Option<u32>>,
    values: Vec<Sym>,
}

impl KeyDomains {
    fn of(state: &ClusterState, key: Sym, eligible: impl Fn(NodeId) -> bool) -> KeyDomains {
        let mut position: FxHashMap<Sym, u32> = FxHashMap::default();
        let mut values = Vec::new();
        let of_node = state
            .node_ids()
            .map(|n| {
                let v = state.node(n).labels.get(key)?;
                if !eligible(n) {
                    return None;
                }
                Some(*position.entry(v).or_insert_with(|| {
                    values.push(v);
                    values.len() as u32 - 1
                }))
            })
            .collect();
        KeyDomains { of_node, values }
    }
}

/// ScheduleAnyway constraints past their maxSkew (SpreadSkewed) and
/// DoNotSchedule ones past theirs (RuleViolated), on the workloads whose
/// running pods carry them. Skew is counted as PodTopologySpread counts it:
/// matching pods of the namespace per domain of the nodes eligible for the
/// carrying pod (node affinity honoured, taints when the constraint says
/// so), the global minimum 0 when fewer domains than minDomains. A
/// workload's pods share a template: the constraints of a pod equal to the
/// previous one's are not looked at again.
pub(crate) fn spread(
    world: &World,
    groups: &Groups<'_>,
    dirty: &dyn Fn(Sym, &SpreadConstraint, &BTreeSet<&WorkloadRef>) -> bool,
) -> Vec<(SpreadKey, Option<Vec<HaFinding>>)> {
    let state = world.state();
    // (namespace, constraint) → a carrying pod and the workloads.
    let mut carriers: FxHashMap<(Sym, &SpreadConstraint), (PodId, BTreeSet<&WorkloadRef>)> =
        FxHashMap::default();
    for (w, pods) in &groups.bound {
        let mut previous: Option<&[SpreadConstraint]> = None;
        for &(p, _) in pods {
            let pod = state.pod(p);
            if pod.spread.is_empty() || previous == Some(&pod.spread[..]) {
                continue;
            }
            previous = Some(&pod.spread[..]);
            for c in &pod.spread {
                carriers
                    .entry((pod.namespace, c))
                    .or_insert_with(|| (p, BTreeSet::new()))
                    .1
                    .insert(w.as_ref());
            }
        }
    }
    let r = |s: Sym| state.interner().resolve(s).to_string();
    let mut plain: FxHashMap<Sym, KeyDomains> = FxHashMap::default();
    let mut keyed = Vec::new();
    let mut keys: Vec<_> = carriers.into_iter().collect();
    keys.sort_by_key(|((_, _), (p, _))| *p);
    for ((namespace, c), (carrier, workloads)) in keys {
        let key = (namespace, c.clone());
        if !dirty(namespace, c, &workloads) {
            keyed.push((key, None));
            continue;
        }
        let out = keyed_findings(&mut keyed, key);
        let pod = state.pod(carrier);
        let filtered = (c.honor_node_affinity
            && (!pod.node_selector.is_empty() || pod.required_node_affinity.is_some()))
            || c.honor_node_taints;
        let own;
        let domains = if filtered {
            own = KeyDomains::of(state, c.topology_key, |n| {
                let node = state.node(n);
                (!c.honor_node_affinity
                    || podplace_engine::plugins::node_affinity::matches(
                        pod,
                        node,
                        state.interner(),
                    ))
                    && (!c.honor_node_taints
                        || podplace_engine::plugins::taint_toleration::untolerated_taint(pod, node)
                            .is_none())
            });
            &own
        } else {
            plain
                .entry(c.topology_key)
                .or_insert_with(|| KeyDomains::of(state, c.topology_key, |_| true))
        };
        if domains.values.len() < 2 {
            continue;
        }
        let node_counts = state.spread_counts(namespace, &c.selector);
        let mut counts = vec![0i64; domains.values.len()];
        for &n in node_counts.occupied() {
            if let Some(Some(d)) = domains.of_node.get(n.index()) {
                counts[*d as usize] += i64::from(node_counts.get(n));
            }
        }
        let (hi, &max) = counts
            .iter()
            .enumerate()
            .max_by_key(|&(i, c)| (*c, std::cmp::Reverse(i)))
            .expect("two domains");
        let (lo, &min) = counts
            .iter()
            .enumerate()
            .min_by_key(|&(i, c)| (*c, i))
            .expect("two domains");
        // Fewer eligible domains than minDomains: the global minimum is 0.
        let min = match c.min_domains {
            Some(m) if (counts.len() as i64) < i64::from(m) => 0,
            _ => min,
        };
        let skew = max - min;
        if skew <= i64::from(c.max_skew) {
            continue;
        }
        let key = r(c.topology_key);
        let (moves, _, _) = min_moves(&counts, i64::from(c.max_skew));
        let high = r(domains.values[hi]);
        let low = r(domains.values[lo]);
        for w in workloads {
            let (kind, what, fix) = match c.when_unsatisfiable {
                WhenUnsatisfiable::ScheduleAnyway => (
                    HaKind::SpreadSkewed,
                    "ScheduleAnyway",
                    format!("move {moves} pod(s) out of {high} (`podplace rebalance` with SoftRules plans it); ScheduleAnyway only scores, so it drifts again — whenUnsatisfiable: DoNotSchedule keeps it"),
                ),
                WhenUnsatisfiable::DoNotSchedule => (
                    HaKind::RuleViolated,
                    "DoNotSchedule",
                    format!("move {moves} pod(s) out of {high} (`podplace rebalance` with RemovePodsViolatingTopologySpreadConstraint plans it)"),
                ),
            };
            out.push(finding(
                kind,
                w,
                Some(&key),
                Some(&high),
                format!(
                    "{what} topology spread of {w} on {key} is skewed by {skew}, past maxSkew {}: {high} holds {max} matching pods, {low} holds {min}",
                    c.max_skew
                ),
                Some(fix),
            ));
        }
    }
    keyed
}

/// A spread constraint as the watch keeps its findings: the namespace of
/// the pods carrying it and the constraint.
pub(crate) type SpreadKey = (Sym, SpreadConstraint);

/// The (empty) findings of `key`, pushed last in `keyed`, to fill.
fn keyed_findings(
    keyed: &mut Vec<(SpreadKey, Option<Vec<HaFinding>>)>,
    key: SpreadKey,
) -> &mut Vec<HaFinding> {
    keyed.push((key, Some(Vec::new())));
    keyed
        .last_mut()
        .and_then(|(_, f)| f.as_mut())
        .expect("just pushed")
}

/// The distinct term ids of one kind the workload's running pods hold.
fn held_terms(
    state: &ClusterState,
    pods: &[(PodId, NodeId)],
    pick: impl Fn(&podplace_engine::PodTerms) -> Vec<TermId>,
) -> Vec<TermId> {
    let mut seen = Vec::new();
    for &(p, _) in pods {
        if let Some(e) = state.pod_entry(p) {
            for t in pick(&e.terms) {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
    }
    seen
}

/// Preferred pod anti-affinity among a workload's own replicas collapsed:
/// two replicas share a domain of the term's key while some domain holds no
/// matching pod and has a node that takes one (cordon, node affinity,
/// taints and resources checked).
/// `room` gets the workloads whose answer looked for a node with room
/// (it may change with any pod bound or removed anywhere).
pub(crate) fn anti_affinity_collapsed(
    world: &World,
    groups: &Groups<'_>,
    only: &dyn Fn(&WorkloadRef) -> bool,
    room_sensitive: &mut FxHashSet<WorkloadRef>,
) -> Vec<HaFinding> {
    let state = world.state();
    let mut domains_of_key: FxHashMap<Sym, KeyDomains> = FxHashMap::default();
    let r = |s: Sym| state.interner().resolve(s).to_string();
    let mut out = Vec::new();
    for (w, pods) in groups.bound.iter().filter(|(w, _)| only(w)) {
        if pods.len() < 2 {
            continue;
        }
        let terms = held_terms(state, pods, |t| {
            t.preferred_anti_affinity.iter().map(|&(t, _)| t).collect()
        });
        for tid in terms {
            let term = state.term(tid);
            let key = term.topology_key;
            // Only terms that select the workload's own replicas.
            let own: Vec<(PodId, NodeId)> = pods
                .iter()
                .copied()
                .filter(|&(p, _)| {
                    incoming_term_matches(term, state.pod(p), state.namespaces(), state.interner())
                })
                .collect();
            if own.len() < 2 {
                continue;
            }
            // Matching pods per domain: from the engine's label index when
            // the selector names a label pair; otherwise (a scan of every
            // pod) the workload's own matching replicas stand in.
            let per_domain: FxHashMap<Sym, i64> = if term.selector.necessary_pair().is_some() {
                let counts = state.matching_counts(&[term]);
                match counts.domains(key) {
                    Some(d) => d.clone(),
                    None => continue,
                }
            } else {
                let mut d = FxHashMap::default();
                for &(_, n) in &own {
                    if let Some(v) = state.node(n).labels.get(key) {
                        *d.entry(v).or_insert(0) += 1;
                    }
                }
                d
            };
            let per_domain = &per_domain;
            let mut crowded: Option<(Sym, i64)> = None;
            for &(_, n) in &own {
                if let Some(v) = state.node(n).labels.get(key) {
                    let c = per_domain.get(&v).copied().unwrap_or(0);
                    if c >= 2 && crowded.is_none_or(|(_, best)| c > best) {
                        crowded = Some((v, c));
                    }
                }
            }
            let Some((domain, count)) = crowded else {
                continue;
            };
            // A domain holding no matching pod must exist before any node
            // is looked at (all occupied is the common case for zones).
            let all = domains_of_key
                .entry(key)
                .or_insert_with(|| KeyDomains::of(state, key, |_| true));
            let occupied = per_domain.values().filter(|&&c| c > 0).count();
            if all.values.len() <= occupied {
                continue;
            }
            room_sensitive.insert(w.as_ref().clone());
            let sample = state.pod(own[0].0);
            let room = state.node_ids().find(|&n| {
                let node = state.node(n);
                node.labels
                    .get(key)
                    .is_some_and(|v| per_domain.get(&v).copied().unwrap_or(0) == 0)
                    && node_takes(sample, state, n)
                    && node_resources_fit::fits(sample, node, state.node_info(n))
            });
            let Some(room) = room else {
                continue;
            };
            let room_domain = r(state.node(room).labels.get(key).expect("room has the key"));
            let key_text = r(key);
            let domain_text = r(domain);
            out.push(finding(
                HaKind::AntiAffinityCollapsed,
                w,
                Some(&key_text),
                Some(&domain_text),
                format!(
                    "{count} pods matching the preferred anti-affinity of {w} ({}) share {domain_text} while {room_domain} holds none and node {} has room: preferred rules are only scored at scheduling time",
                    term_text(term, state),
                    state.node(room).name
                ),
                Some(format!(
                    "evict one replica from {domain_text} so it is rescheduled onto {room_domain} (`podplace rebalance` with SoftRules plans it), or make the anti-affinity required"
                )),
            ));
        }
    }
    out
}

/// Running pods that break a required rule of their own: required pod
/// anti-affinity matching another pod in the pod's domain, or required pod
/// affinity with no matching pod left in it (the first pod of a group,
/// matching its own terms with no other match anywhere, is allowed as the
/// scheduler allows it).
pub(crate) fn required_rules(
    world: &World,
    groups: &Groups<'_>,
    only: &dyn Fn(&WorkloadRef) -> bool,
) -> Vec<HaFinding> {
    let state = world.state();
    let r = |s: Sym| state.interner().resolve(s).to_string();
    let mut out = Vec::new();
    for (w, pods) in groups.bound.iter().filter(|(w, _)| only(w)) {
        // Anti-affinity: one count per term, every holder checked.
        for tid in held_terms(state, pods, |t| t.required_anti_affinity.to_vec()) {
            let term = state.term(tid);
            let counts = state.matching_counts(&[term]);
            let Some(per_domain) = counts.domains(term.topology_key) else {
                continue;
            };
            let hit = pods.iter().find_map(|&(p, n)| {
                let e = state.pod_entry(p)?;
                if !e.terms.required_anti_affinity.contains(&tid) {
                    return None;
                }
                let v = state.node(n).labels.get(term.topology_key)?;
                let own = incoming_term_matches(term, &e.pod, state.namespaces(), state.interner());
                let others = per_domain.get(&v).copied().unwrap_or(0) - i64::from(own);
                (others > 0).then_some((p, v, others))
            });
            if let Some((p, v, others)) = hit {
                let key = r(term.topology_key);
                let domain = r(v);
                out.push(finding(
                    HaKind::RuleViolated,
                    w,
                    Some(&key),
                    Some(&domain),
                    format!(
                        "pod {} runs in {key}={domain} with {others} other pod(s) its required anti-affinity ({}) forbids there",
                        world.pod_name(p),
                        term_text(term, state)
                    ),
                    Some(format!(
                        "evict {} so it is rescheduled where the rule holds (`podplace rebalance` with RemovePodsViolatingInterPodAntiAffinity plans it)",
                        world.pod_name(p)
                    )),
                ));
            }
        }
        // Affinity: the pod's terms together, as the scheduler counts them.
        let mut seen: Vec<&[TermId]> = Vec::new();
        for &(p, n) in pods {
            let Some(e) = state.pod_entry(p) else {
                continue;
            };
            let ids = &e.terms.required_affinity[..];
            if ids.is_empty() || seen.contains(&ids) {
                continue;
            }
            let terms: Vec<_> = ids.iter().map(|&t| state.term(t)).collect();
            let counts = state.matching_counts(&terms);
            let own = terms
                .iter()
                .all(|t| incoming_term_matches(t, &e.pod, state.namespaces(), state.interner()));
            let broken = terms.iter().find(|t| {
                let Some(per_domain) = counts.domains(t.topology_key) else {
                    return true;
                };
                let total: i64 = per_domain.values().sum::<i64>() - i64::from(own);
                let here = state
                    .node(n)
                    .labels
                    .get(t.topology_key)
                    .and_then(|v| per_domain.get(&v).copied())
                    .unwrap_or(0)
                    - i64::from(own);
                here <= 0 && !(own && total <= 0)
            });
            if let Some(t) = broken {
                seen.push(ids);
                let key = r(t.topology_key);
                let domain = state
                    .node(n)
                    .labels
                    .get(t.topology_key)
                    .map(r)
                    .unwrap_or_else(|| format!("node {} (no {key} label)", state.node(n).name));
                out.push(finding(
                    HaKind::RuleViolated,
                    w,
                    Some(&key),
                    Some(&domain),
                    format!(
                        "pod {} runs in {key}={domain} where no pod matches its required affinity ({})",
                        world.pod_name(p),
                        term_text(t, state)
                    ),
                    Some(format!(
                        "evict {} so it is rescheduled next to a matching pod, or restore the pods it requires",
                        world.pod_name(p)
                    )),
                ));
            }
        }
    }
    out
}
