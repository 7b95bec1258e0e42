//! RemoveDuplicates: pods of one owner (and the same images) piled on one
//! node beyond an even share. Objective: the pods above
//! `ceil(pods / eligible nodes)` on each node, summed over owners — the
//! number of evictions the descheduler would make, so every kept eviction
//! removes exactly one.

use podplace_engine::ClusterState;
use podplace_engine::{NodeId, PodId};
use podplace_model::intern::Sym;
use rustc_hash::FxHashMap;

use podplace_model::workloads::WorkloadKind;

use super::{node_takes, Cx, Nomination, Strategy};
use crate::policy::{Namespaces, RemoveDuplicatesArgs};
use crate::world::PodFacts;

type Key = (String, WorkloadKind, String, Vec<Sym>);

#[derive(Debug, Clone)]
struct Group {
    owner: String,
    members: Vec<PodId>,
    targets: usize,
}

/// The RemoveDuplicates strategy.
#[derive(Debug)]
pub struct RemoveDuplicates {
    namespaces: Option<Namespaces>,
    exclude_owner_kinds: Vec<WorkloadKind>,
    groups: Vec<Group>,
    by_key: FxHashMap<Key, usize>,
    group_of: FxHashMap<PodId, usize>,
    seen: usize,
    /// Eligible node counts by what decides them (tolerations, node
    /// selector, required node affinity): thousands of owners share a few
    /// such shapes, and counting costs a pass over every node.
    targets_by_shape: Vec<(Shape, usize)>,
    /// One count per node, all zero between calls:
    /// [`Self::count_members`] counts a group's pods per node here.
    per_node_scratch: Vec<u32>,
    /// The nodes [`Self::count_members`] counted on, to zero them again.
    touched_scratch: Vec<NodeId>,
}

/// What makes a node eligible for a pod, besides the node itself.
type Shape = (
    Vec<podplace_model::objects::Toleration>,
    Vec<podplace_model::selector::Requirement>,
    Option<podplace_model::selector::NodeSelector>,
);

impl RemoveDuplicates {
    /// Groups the world's pods by owner and images.
    pub fn new(args: &RemoveDuplicatesArgs, cluster: &ClusterState, facts: &[PodFacts]) -> Self {
        let mut s = RemoveDuplicates {
            namespaces: args.namespaces.clone(),
            exclude_owner_kinds: args
                .exclude_owner_kinds
                .iter()
                .map(|k| WorkloadKind::of(k))
                .collect(),
            groups: Vec::new(),
            by_key: FxHashMap::default(),
            group_of: FxHashMap::default(),
            seen: 0,
            targets_by_shape: Vec::new(),
            per_node_scratch: Vec::new(),
            touched_scratch: Vec::new(),
        };
        s.catch_up(cluster, facts);
        s
    }

    fn key(&self, cluster: &ClusterState, facts: &[PodFacts], pod: PodId) -> Option<Key> {
        let f = facts.get(pod.index())?;
        let owner = f.owner.as_ref()?;
        if owner.kind == WorkloadKind::DaemonSet || self.exclude_owner_kinds.contains(&owner.kind) {
            return None;
        }
        if let Some(ns) = &self.namespaces {
            if !ns.admits(&f.namespace) {
                return None;
            }
        }
        let mut images: Vec<Sym> = cluster.pod(pod).images.to_vec();
        images.sort_unstable();
        Some((
            f.namespace.clone(),
            owner.kind.clone(),
            owner.name.clone(),
            images,
        ))
    }

    /// Takes in pods added since the last call (replacements).
    fn catch_up(&mut self, cluster: &ClusterState, facts: &[PodFacts]) {
        let upto = cluster.pod_slots().min(facts.len());
        for i in self.seen..upto {
            let id = PodId(i as u32);
            let Some(key) = self.key(cluster, facts, id) else {
                continue;
            };
            let g = match self.by_key.get(&key) {
                Some(&g) => g,
                None => {
                    let g = self.groups.len();
                    let pod = cluster.pod(id);
                    let shape: Shape = (
                        pod.tolerations.clone(),
                        pod.node_selector.clone(),
                        pod.required_node_affinity.clone(),
                    );
                    let known = self.targets_by_shape.iter().find(|(s, _)| *s == shape);
                    let targets = match known {
                        Some(&(_, targets)) => targets,
                        None => {
                            let targets = cluster
                                .node_ids()
                                .filter(|&n| node_takes(pod, cluster, n))
                                .count();
                            self.targets_by_shape.push((shape, targets));
                            targets
                        }
                    };
                    self.groups.push(Group {
                        owner: format!("{} {}/{}", key.1, key.0, key.2),
                        members: Vec::new(),
                        targets,
                    });
                    self.by_key.insert(key, g);
                    g
                }
            };
            self.groups[g].members.push(id);
            self.group_of.insert(id, g);
        }
        self.seen = upto;
    }

    /// Counts group `g`'s running pods per node into the per-node scratch
    /// (the nodes counted on listed in `touched_scratch`) and returns their
    /// total. The caller drains `touched_scratch`, taking each count it
    /// reads, so the scratch is all zero again. One pass over the members,
    /// no sort and no map: the planner asks for a group's counts twice per
    /// candidate it ranks.
    fn count_members(&mut self, cx: &Cx<'_>, g: usize) -> i64 {
        let nodes = cx.state.nodes().len();
        if self.per_node_scratch.len() < nodes {
            self.per_node_scratch.resize(nodes, 0);
        }
        let mut total = 0i64;
        for &m in &self.groups[g].members {
            let Some(n) = cx.node_of(m) else { continue };
            let count = &mut self.per_node_scratch[n.index()];
            if *count == 0 {
                self.touched_scratch.push(n);
            }
            *count += 1;
            total += 1;
        }
        total
    }

    /// Group `g`'s running pods per node, sorted by node, and the even
    /// share.
    fn counts(&mut self, cx: &Cx<'_>, g: usize) -> (PerNode, i64) {
        let total = self.count_members(cx, g);
        let scratch = &mut self.per_node_scratch;
        let mut per_node: Vec<(NodeId, i64)> = self
            .touched_scratch
            .drain(..)
            .map(|n| (n, i64::from(std::mem::take(&mut scratch[n.index()]))))
            .collect();
        per_node.sort_unstable_by_key(|&(n, _)| n);
        (PerNode(per_node), self.even_share(g, total))
    }

    /// The most pods of group `g` a node may hold when `total` run: an
    /// even share over its target nodes, rounded up (no bound with fewer
    /// than two targets).
    fn even_share(&self, g: usize, total: i64) -> i64 {
        let targets = self.groups[g].targets as i64;
        if targets < 2 {
            i64::MAX
        } else {
            (total + targets - 1) / targets
        }
    }

    /// The pods of group `g` above the even share, summed over its nodes
    /// (what [`Self::counts`] gives, without collecting it).
    fn group_cost(&mut self, cx: &Cx<'_>, g: usize) -> i64 {
        let total = self.count_members(cx, g);
        let upper = self.even_share(g, total);
        let scratch = &mut self.per_node_scratch;
        self.touched_scratch
            .drain(..)
            .map(|n| (i64::from(std::mem::take(&mut scratch[n.index()])) - upper).max(0))
            .sum()
    }
}

/// Pods of one group per node, sorted by node.
struct PerNode(Vec<(NodeId, i64)>);

impl PerNode {
    /// The group's pods on node `n`.
    fn on(&self, n: NodeId) -> i64 {
        self.0
            .binary_search_by_key(&n, |&(node, _)| node)
            .map_or(0, |i| self.0[i].1)
    }
}

impl Strategy for RemoveDuplicates {
    fn name(&self) -> &'static str {
        "RemoveDuplicates"
    }

    fn measures(&self) -> String {
        "pods above an even share".to_string()
    }

    fn explain(&mut self, cx: &Cx<'_>, pod: PodId) -> Option<String> {
        self.catch_up(cx.state, cx.facts);
        let &g = self.group_of.get(&pod)?;
        let n = cx.node_of(pod)?;
        let (per_node, upper) = self.counts(cx, g);
        let c = per_node.on(n);
        (c > upper).then(|| {
            format!(
                "{c} pods of {} on {}; an even share over {} nodes is {upper}",
                self.groups[g].owner,
                cx.state.node(n).name,
                self.groups[g].targets
            )
        })
    }

    fn nominate(&mut self, cx: &Cx<'_>) -> Vec<Nomination> {
        self.catch_up(cx.state, cx.facts);
        let mut out = Vec::new();
        for g in 0..self.groups.len() {
            let (per_node, upper) = self.counts(cx, g);
            if upper == i64::MAX {
                continue;
            }
            for &m in &self.groups[g].members {
                let Some(n) = cx.node_of(m) else { continue };
                let c = per_node.on(n);
                if c > upper {
                    out.push(Nomination {
                        pod: m,
                        rule: format!(
                            "{c} pods of {} on {}; an even share over {} nodes is {upper}",
                            self.groups[g].owner,
                            cx.state.node(n).name,
                            self.groups[g].targets
                        ),
                    });
                }
            }
        }
        out
    }

    fn pod_cost(&mut self, cx: &Cx<'_>, pod: PodId) -> i64 {
        self.catch_up(cx.state, cx.facts);
        match self.group_of.get(&pod) {
            Some(&g) => self.group_cost(cx, g),
            None => 0,
        }
    }

    fn total(&mut self, cx: &Cx<'_>) -> i64 {
        self.catch_up(cx.state, cx.facts);
        (0..self.groups.len()).map(|g| self.group_cost(cx, g)).sum()
    }
}
