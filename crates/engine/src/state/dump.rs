//! A canonical text of a state, for tests and diagnostics: independent of
//! slot order and of how strings were interned, so two states that answer
//! alike dump alike.

use podplace_model::intern::Sym;
use podplace_model::labels::Labels;
use podplace_model::objects::{AffinityTerm, Resources};
use podplace_model::selector::LabelSelector;

use super::ClusterState;
use crate::groups::{Counts, GroupKey, TopologyGroup};
use crate::ids::TermId;

impl ClusterState {
    /// A canonical text of everything observable in the state (nodes, live
    /// pods by name with their node and accounting, every group's counts by
    /// what it counts), independent of slot order: two states that answer
    /// alike dump alike.
    pub fn canonical_dump(&self) -> String {
        use std::fmt::Write;
        let r = |s: Sym| self.interner.resolve(s).to_string();
        let labels = |l: &Labels| {
            let mut v: Vec<String> = l
                .iter()
                .map(|(k, v)| format!("{}={}", r(k), r(v)))
                .collect();
            v.sort();
            v.join(",")
        };
        let mut out = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let info = &self.node_infos[i];
            let mut pods: Vec<String> = info
                .pods
                .iter()
                .map(|p| {
                    let pod = &self.pods[p.index()].pod;
                    format!("{}/{}", r(pod.namespace), pod.name)
                })
                .collect();
            pods.sort();
            let _ = writeln!(
                out,
                "node {} [{}] taints={:?} unsched={} alloc={} req={} nz={:?} ports={} aff={} pods={:?}",
                node.name,
                labels(&node.labels),
                node.taints
                    .iter()
                    .map(|t| format!(
                        "{}={}:{:?}",
                        self.interner.resolve(t.key),
                        self.interner.resolve(t.value),
                        t.effect
                    ))
                    .collect::<Vec<_>>(),
                node.unschedulable,
                self.resources_text(&node.allocatable),
                self.resources_text(&info.requested),
                info.non_zero_requested,
                info.used_ports.len(),
                self.pods_with_affinity[i],
                pods
            );
        }
        let mut pods: Vec<String> = self
            .live_pods()
            .map(|(_, e)| {
                format!(
                    "pod {}/{} [{}] node={:?} term={} fin={}",
                    r(e.pod.namespace),
                    e.pod.name,
                    labels(&e.pod.labels),
                    e.node.map(|n| self.nodes[n.index()].name.to_string()),
                    e.pod.terminating,
                    e.pod.finished
                )
            })
            .collect();
        pods.sort();
        for p in pods {
            let _ = writeln!(out, "{p}");
        }
        let mut groups: Vec<String> = self
            .groups
            .iter()
            .filter(|g| match g.key() {
                GroupKey::Held { .. } => !g.holders().is_empty(),
                _ => true,
            })
            .map(|g| self.describe_group(g))
            .collect();
        groups.sort();
        for g in groups {
            let _ = writeln!(out, "{g}");
        }
        out.push_str(&self.storage_dump());
        out
    }

    fn describe_group(&self, g: &TopologyGroup) -> String {
        let r = |s: Sym| self.interner.resolve(s).to_string();
        let term = |t: TermId| self.term_text(self.terms.get(t));
        let key = match g.key() {
            GroupKey::Held {
                term: t,
                kind,
                weight,
            } => format!("held {kind:?} {weight} {}", term(*t)),
            GroupKey::Matching(set) => {
                format!(
                    "match {:?}",
                    set.iter().map(|&t| term(t)).collect::<Vec<_>>()
                )
            }
            GroupKey::Spread {
                namespace,
                selector,
            } => format!("spread {} {}", r(*namespace), self.selector_text(selector)),
        };
        let counts = match g.counts() {
            Counts::PerDomain(d) => {
                let mut v: Vec<String> = d
                    .by_key
                    .iter()
                    .flat_map(|(k, m)| m.iter().map(move |(v, c)| (*k, *v, *c)))
                    .map(|(k, v, c)| format!("{}={}:{c}", r(k), r(v)))
                    .collect();
                v.sort();
                v.join(",")
            }
            Counts::PerNode(n) => {
                let mut v: Vec<String> = n
                    .occupied()
                    .iter()
                    .map(|&id| format!("{}:{}", self.nodes[id.index()].name, n.get(id)))
                    .collect();
                v.sort();
                v.join(",")
            }
        };
        format!("{key} -> {counts}")
    }
}

impl ClusterState {
    pub(super) fn selector_text(&self, s: &LabelSelector) -> String {
        if s.is_nothing() {
            return "nil".into();
        }
        let mut reqs: Vec<String> = s
            .requirements()
            .iter()
            .map(|q| self.requirement_text(q))
            .collect();
        reqs.sort();
        format!("{{{}}}", reqs.join(","))
    }

    /// One selector requirement, strings resolved.
    pub(super) fn requirement_text(&self, q: &podplace_model::selector::Requirement) -> String {
        use podplace_model::selector::Requirement;
        let r = |s: Sym| self.interner.resolve(s).to_string();
        let vs = |v: &[Sym]| v.iter().map(|&s| r(s)).collect::<Vec<_>>().join("|");
        match q {
            Requirement::In(k, v) => format!("{} in {}", r(*k), vs(v)),
            Requirement::NotIn(k, v) => format!("{} notin {}", r(*k), vs(v)),
            Requirement::Exists(k) => format!("{} exists", r(*k)),
            Requirement::DoesNotExist(k) => format!("!{}", r(*k)),
            Requirement::Gt(k, b) => format!("{} > {b}", r(*k)),
            Requirement::Lt(k, b) => format!("{} < {b}", r(*k)),
        }
    }

    fn resources_text(&self, r: &Resources) -> String {
        let mut scalar: Vec<String> = r
            .scalar
            .iter()
            .map(|&(k, v)| format!("{}={v}", self.interner.resolve(k)))
            .collect();
        scalar.sort();
        format!(
            "cpu={} mem={} eph={} pods={} {}",
            r.milli_cpu,
            r.memory,
            r.ephemeral_storage,
            r.pods,
            scalar.join(",")
        )
    }

    fn term_text(&self, t: &AffinityTerm) -> String {
        let mut ns: Vec<String> = t
            .namespaces
            .iter()
            .map(|&s| self.interner.resolve(s).to_string())
            .collect();
        ns.sort();
        format!(
            "({} ns={:?} nssel={} key={})",
            self.selector_text(&t.selector),
            ns,
            self.selector_text(&t.namespace_selector),
            self.interner.resolve(t.topology_key)
        )
    }
}
