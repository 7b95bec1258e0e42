//! SoftRules (podplace's own; the descheduler has no strategy for preferred
//! rules, see its issue #1863): preferred pod anti-affinity and affinity,
//! ScheduleAnyway topology spread, preferred node affinity and
//! PreferNoSchedule taints — the rules kube-scheduler only scores, and
//! forgets once a pod runs ("IgnoredDuringExecution").
//!
//! The objective is the scheduler's own soft score, summed over the world:
//! for pod affinity, the weights of the preferred terms each pod pair in one
//! domain satisfies (affinity, counted negative) or breaks (anti-affinity);
//! for spread, 100 per pod move still needed to meet maxSkew; for node
//! affinity, the preferred weight the pods' nodes miss; for taints, 100 per
//! untolerated PreferNoSchedule taint. The planner keeps a move only when
//! this drops and no other strategy's objective rises.

use podplace_engine::plugins::node_affinity;
use podplace_engine::topology::Topology;
use podplace_engine::{ClusterState, GroupKey, HeldKind, NodeId, PodId};
use podplace_model::objects::{TaintEffect, WhenUnsatisfiable};
use podplace_model::selector::NodeSelectorTerm;
use rustc_hash::FxHashMap;

use super::remove_pods_violating_topology_spread_constraint::nominate_group;
use super::{
    node_takes, pair_cost, spread_groups, term_text, Cx, Nomination, Scope, SpreadGroup, Strategy,
};
use crate::policy::{SoftRulesArgs, SOFT_RULES};

/// What one spread move or one PreferNoSchedule taint weighs against
/// preferred-term weights (which go up to 100).
pub const UNIT_WEIGHT: i64 = 100;

/// The fewest pods any of `domains` domains holds, from the non-empty
/// domains' counts: 0 when some domain has none.
fn emptiest(domains: usize, counts: &[i64]) -> i64 {
    let occupied = counts.iter().copied().filter(|&c| c > 0);
    if occupied.clone().count() < domains {
        0
    } else {
        occupied.min().unwrap_or(0)
    }
}

/// The SoftRules strategy.
#[derive(Debug)]
pub struct SoftRules {
    scope: Scope,
    affinity: bool,
    anti_affinity: bool,
    node_affinity: bool,
    taints: bool,
    groups: Vec<SpreadGroup>,
    best: FxHashMap<Vec<(i32, NodeSelectorTerm)>, i64>,
}

impl SoftRules {
    /// Reads which soft rules to look after.
    pub fn new(args: &SoftRulesArgs, cluster: &mut ClusterState) -> Self {
        let on = |r: &str| args.rules.is_empty() || args.rules.iter().any(|x| x == r);
        debug_assert!(SOFT_RULES.iter().all(|r| !r.is_empty()));
        let spread = on("TopologySpread");
        SoftRules {
            scope: Scope::new(&args.namespaces, &args.label_selector, cluster),
            affinity: on("PodAffinity"),
            anti_affinity: on("PodAntiAffinity"),
            node_affinity: on("NodeAffinity"),
            taints: on("Taints"),
            groups: if spread {
                spread_groups(cluster, &[WhenUnsatisfiable::ScheduleAnyway])
            } else {
                Vec::new()
            },
            best: FxHashMap::default(),
        }
    }

    fn kinds(&self) -> Vec<HeldKind> {
        let mut k = Vec::new();
        if self.anti_affinity {
            k.push(HeldKind::PreferredAntiAffinity);
        }
        if self.affinity {
            k.push(HeldKind::PreferredAffinity);
        }
        k
    }

    fn ipa(&self, cluster: &ClusterState, pod: PodId) -> i64 {
        let kinds = self.kinds();
        if kinds.is_empty() {
            return 0;
        }
        pair_cost(cluster, pod, &kinds, |k| match k {
            HeldKind::PreferredAntiAffinity => 1,
            _ => -1,
        })
    }

    fn prefer_no_schedule(cluster: &ClusterState, pod: PodId, node: NodeId) -> i64 {
        let p = cluster.pod(pod);
        cluster
            .node(node)
            .taints
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
            .filter(|t| {
                !p.tolerations.iter().any(|tol| {
                    matches!(tol.effect, None | Some(TaintEffect::PreferNoSchedule))
                        && tol.tolerates(t)
                })
            })
            .count() as i64
    }

    fn missed_weight(cluster: &ClusterState, pod: PodId, node: NodeId) -> i64 {
        let p = cluster.pod(pod);
        let total: i64 = p
            .preferred_node_affinity
            .iter()
            .map(|(w, _)| i64::from(*w))
            .sum();
        total - node_affinity::score(p, cluster.node(node), cluster.interner())
    }

    fn best_preferred(&mut self, cluster: &ClusterState, pod: PodId) -> i64 {
        let p = cluster.pod(pod);
        if let Some(&b) = self.best.get(&p.preferred_node_affinity) {
            return b;
        }
        let b = cluster
            .node_ids()
            .filter(|&n| node_takes(p, cluster, n))
            .map(|n| node_affinity::score(p, cluster.node(n), cluster.interner()))
            .max()
            .unwrap_or(0);
        self.best.insert(p.preferred_node_affinity.clone(), b);
        b
    }

    fn per_pod(&self, cluster: &ClusterState, pod: PodId, node: NodeId) -> i64 {
        let mut c = self.ipa(cluster, pod);
        if self.node_affinity {
            c += Self::missed_weight(cluster, pod, node);
        }
        if self.taints {
            c += UNIT_WEIGHT * Self::prefer_no_schedule(cluster, pod, node);
        }
        c
    }

    /// The preferred anti-affinity rule `pod` breaks where it runs, if a
    /// move could mend it: some domain of the term's key holds fewer
    /// matching pods (or fewer pods holding a term that matches it) than the
    /// pod's own. Where every domain holds as many — 300 replicas avoiding
    /// each other over 3 zones — no move lowers the cost, and nominating the
    /// pods would only cost proofs that fail. `topology` keeps each key's
    /// domains once counted, for as long as the nodes stay as they are.
    fn anti_rule(&self, cx: &Cx<'_>, pod: PodId, topology: &mut Topology) -> Option<String> {
        if !self.anti_affinity {
            return None;
        }
        let node = cx.node_of(pod)?;
        let own_terms = cx.state.pod(pod).affinity.preferred_anti_affinity.clone();
        for w in &own_terms {
            let key = w.term.topology_key;
            let Some(v) = cx.state.node(node).labels.get(key) else {
                continue;
            };
            let own = podplace_engine::state::terms::incoming_term_matches(
                &w.term,
                cx.state.pod(pod),
                cx.state.namespaces(),
                cx.state.interner(),
            );
            let (here, counts) = {
                let matching = cx.state.matching_counts(&[&w.term]);
                let Some(domains) = matching.domains(key) else {
                    continue;
                };
                (
                    domains.get(&v).copied().unwrap_or(0) - i64::from(own),
                    domains.values().copied().collect::<Vec<_>>(),
                )
            };
            if here
                > emptiest(
                    topology.ensure(key, cx.state.nodes()).domain_count(),
                    &counts,
                )
            {
                return Some(format!(
                    "preferred pod anti-affinity {} (weight {}): {here} matching pod(s) share its {}",
                    term_text(&w.term, cx.state),
                    w.weight,
                    cx.state.interner().resolve(key)
                ));
            }
        }
        // Others' preferred anti-affinity terms that match this pod.
        let cluster = cx.state;
        let p = cluster.pod(pod);
        let empty = podplace_model::labels::Labels::default();
        let ns_labels = cluster.namespace_labels(p.namespace).unwrap_or(&empty);
        let held_terms = cluster
            .pod_entry(pod)
            .map_or(&[][..], |e| e.terms.preferred_anti_affinity.as_slice());
        let mut movable = Vec::new();
        for g in cluster.held_groups_for(&p.labels) {
            if g.kind != HeldKind::PreferredAntiAffinity {
                continue;
            }
            let term = cluster.term(g.term);
            let Some(v) = cluster.node(node).labels.get(term.topology_key) else {
                continue;
            };
            if !podplace_engine::state::terms::existing_term_matches(
                term,
                p,
                ns_labels,
                cluster.interner(),
            ) {
                continue;
            }
            let holds = held_terms.contains(&(g.term, g.weight));
            let here = g.domains.get(&v).copied().unwrap_or(0) - i64::from(holds);
            let counts: Vec<i64> = g.domains.values().copied().collect();
            movable.push((term.topology_key, here, counts));
        }
        for (key, here, counts) in movable {
            if here
                > emptiest(
                    topology.ensure(key, cx.state.nodes()).domain_count(),
                    &counts,
                )
            {
                return Some(format!(
                    "{here} pod(s) sharing its {} prefer not to run beside it (preferred pod anti-affinity)",
                    cx.state.interner().resolve(key)
                ));
            }
        }
        None
    }

    /// The preferred pod affinity rule `pod` breaks where it runs, if some
    /// other domain holds more of the pods it prefers than its own.
    fn affinity_rule(&self, cx: &Cx<'_>, pod: PodId) -> Option<String> {
        if !self.affinity {
            return None;
        }
        let node = cx.node_of(pod)?;
        let terms = cx.state.pod(pod).affinity.preferred_affinity.clone();
        for w in &terms {
            let own = podplace_engine::state::terms::incoming_term_matches(
                &w.term,
                cx.state.pod(pod),
                cx.state.namespaces(),
                cx.state.interner(),
            );
            let here_value = cx.state.node(node).labels.get(w.term.topology_key);
            let counts = cx.state.matching_counts(&[&w.term]);
            let Some(domains) = counts.domains(w.term.topology_key) else {
                continue;
            };
            let total: i64 = domains.values().sum::<i64>() - i64::from(own && here_value.is_some());
            let here = here_value
                .and_then(|v| domains.get(&v).copied())
                .unwrap_or(0)
                - i64::from(own && here_value.is_some());
            // A move helps only towards a domain holding more of them.
            let best_elsewhere = domains
                .iter()
                .filter(|(v, _)| Some(**v) != here_value)
                .map(|(_, &c)| c)
                .max()
                .unwrap_or(0);
            if best_elsewhere > here {
                return Some(format!(
                    "preferred pod affinity {} (weight {}): {here} of {total} matching pods share its {}",
                    term_text(&w.term, cx.state),
                    w.weight,
                    cx.state.interner().resolve(w.term.topology_key)
                ));
            }
        }
        None
    }
}

impl Strategy for SoftRules {
    fn name(&self) -> &'static str {
        "SoftRules"
    }

    fn measures(&self) -> String {
        "soft-rule cost".to_string()
    }

    fn groups(&self, state: &ClusterState) -> Vec<GroupKey> {
        let mut keys = super::term_groups(state, &self.kinds());
        keys.extend(self.groups.iter().map(SpreadGroup::key));
        keys
    }

    fn explain(&mut self, cx: &Cx<'_>, pod: PodId) -> Option<String> {
        self.anti_rule(cx, pod, &mut Topology::default())
            .or_else(|| self.affinity_rule(cx, pod))
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        let mut out = Vec::new();
        // Each topology key's domains, counted once for the whole pass (a
        // walk over every node, asked for every pod with a preferred
        // anti-affinity term).
        let mut topology = Topology::default();
        for (p, n) in super::bound(cx.state) {
            if !self.scope.admits(cx, p) {
                continue;
            }
            let pod = cx.state.pod(p);
            let has_own = !pod.affinity.preferred_affinity.is_empty()
                || !pod.affinity.preferred_anti_affinity.is_empty();
            let held = cx.state.held_groups_for(&pod.labels).any(|g| {
                matches!(
                    g.kind,
                    HeldKind::PreferredAffinity | HeldKind::PreferredAntiAffinity
                )
            });
            if has_own || held {
                if let Some(rule) = self.anti_rule(cx, p, &mut topology) {
                    out.push(Nomination { pod: p, rule });
                    continue;
                }
                if let Some(rule) = self.affinity_rule(cx, p) {
                    out.push(Nomination { pod: p, rule });
                    continue;
                }
            }
            if self.node_affinity && !cx.state.pod(p).preferred_node_affinity.is_empty() {
                let here =
                    node_affinity::score(cx.state.pod(p), cx.state.node(n), cx.state.interner());
                let best = self.best_preferred(cx.state, p);
                if best > here {
                    out.push(Nomination {
                        pod: p,
                        rule: format!(
                            "preferred node affinity: node {} matches weight {here}, another node {best}",
                            cx.state.node(n).name
                        ),
                    });
                    continue;
                }
            }
            if self.taints && Self::prefer_no_schedule(cx.state, p, n) > 0 {
                out.push(Nomination {
                    pod: p,
                    rule: format!(
                        "node {} has a PreferNoSchedule taint the pod does not tolerate",
                        cx.state.node(n).name
                    ),
                });
            }
        }
        let groups = std::mem::take(&mut self.groups);
        for g in &groups {
            out.extend(nominate_group(
                cx,
                g,
                &self.scope,
                "topology spread (ScheduleAnyway)",
            ));
        }
        self.groups = groups;
        out
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        // An unbound pod contributes no pairs and no node of its own, but
        // the spread of its groups still counts (the planner measures a
        // pod's leaving this way).
        let mut c = match cx.node_of(pod) {
            Some(node) => self.per_pod(cx.state, pod, node),
            None => 0,
        };
        let p = cx.state.pod(pod);
        for g in &self.groups {
            if g.counts_pod(p, cx.state) {
                c += UNIT_WEIGHT * g.cost(cx.state).0;
            }
        }
        c
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        let mut per_pod = 0;
        let mut pairs = 0;
        for (p, n) in super::bound(cx.state) {
            pairs += self.ipa(cx.state, p);
            let mut c = 0;
            if self.node_affinity {
                c += Self::missed_weight(cx.state, p, n);
            }
            if self.taints {
                c += UNIT_WEIGHT * Self::prefer_no_schedule(cx.state, p, n);
            }
            per_pod += c;
        }
        // Each pair is counted from both of its pods.
        let spread: i64 = self
            .groups
            .iter()
            .map(|g| UNIT_WEIGHT * g.cost(cx.state).0)
            .sum();
        pairs / 2 + per_pod + spread
    }
}
