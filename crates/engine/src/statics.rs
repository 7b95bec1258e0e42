//! Per-node verdicts and scores that depend only on the pod's spec and the
//! node, never on other pods: NodeUnschedulable, NodeName, TaintToleration
//! and NodeAffinity filters, TaintToleration, NodeAffinity and
//! ImageLocality raw scores, and the node-inclusion policies of topology
//! spread.
//!
//! The replicas of a workload share one spec, so these are computed once
//! per distinct pod template (and node set) instead of once per pod and
//! node: for a 500-replica workload on 5,000 nodes that is 2.5 million
//! taint, selector and image evaluations saved.

use std::sync::Arc;

use podplace_model::intern::{Interner, Sym};
use podplace_model::objects::{Node, Pod, Resources, Taint, TaintEffect, Toleration};
use podplace_model::selector::{NodeSelector, NodeSelectorTerm, Requirement};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::cache::AddedAffinity;
use crate::ids::NodeId;
use crate::plugins::{
    image_locality, node_affinity, node_name, node_unschedulable, taint_toleration,
};
use crate::profile::Profile;
use crate::state::ClusterState;
use crate::status::{Plugin, Status};

/// The parts of a pod's spec the static verdicts read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TemplateKey {
    node_name: Option<Box<str>>,
    tolerations: Vec<Toleration>,
    node_selector: Vec<Requirement>,
    required_node_affinity: Option<NodeSelector>,
    preferred_node_affinity: Vec<(i32, NodeSelectorTerm)>,
    images: SmallVec<[Sym; 2]>,
    container_count: usize,
}

impl TemplateKey {
    fn of(pod: &Pod) -> Self {
        TemplateKey {
            node_name: pod.node_name.clone(),
            tolerations: pod.tolerations.clone(),
            node_selector: pod.node_selector.clone(),
            required_node_affinity: pod.required_node_affinity.clone(),
            preferred_node_affinity: pod.preferred_node_affinity.clone(),
            images: pod.images.clone(),
            container_count: pod.container_count,
        }
    }

    fn matches(&self, pod: &Pod) -> bool {
        self.node_name == pod.node_name
            && self.tolerations == pod.tolerations
            && self.node_selector == pod.node_selector
            && self.required_node_affinity == pod.required_node_affinity
            && self.preferred_node_affinity == pod.preferred_node_affinity
            && self.images == pod.images
            && self.container_count == pod.container_count
    }
}

/// Spec-only results for every node, indexed by node index.
#[derive(Debug, Clone)]
pub struct NodeStatics {
    /// The first rejection among NodeUnschedulable, NodeName,
    /// TaintToleration and NodeAffinity (the filters that run before any
    /// that look at other pods), or `None` when all four pass.
    pub reject: Vec<Option<Status>>,
    /// The node satisfies nodeSelector and required node affinity.
    pub node_affinity_ok: Vec<bool>,
    /// The pod tolerates every NoSchedule/NoExecute taint of the node.
    pub taints_tolerated: Vec<bool>,
    /// TaintToleration's raw score (untolerated PreferNoSchedule taints).
    pub taint_score: Vec<i64>,
    /// NodeAffinity's raw score (weights of matching preferred terms).
    pub node_affinity_score: Vec<i64>,
    /// ImageLocality's score.
    pub image_score: Vec<i64>,
}

impl NodeStatics {
    /// Evaluates the spec-only plugins of `pod` on every node, as the
    /// default profile runs them.
    pub fn compute(
        state: &ClusterState,
        images: &FxHashMap<Sym, (u32, i64)>,
        pod: &Pod,
        unschedulable_taint: &Taint,
    ) -> Self {
        Self::compute_with(
            state,
            images,
            pod,
            unschedulable_taint,
            &Profile::default(),
            None,
        )
    }

    /// Evaluates the spec-only plugins of `pod` on every node as `profile`
    /// runs them (disabled filters pass; addedAffinity, compiled for this
    /// state, is ANDed into NodeAffinity's filter and added to its score).
    pub fn compute_with(
        state: &ClusterState,
        images: &FxHashMap<Sym, (u32, i64)>,
        pod: &Pod,
        unschedulable_taint: &Taint,
        profile: &Profile,
        added: Option<&AddedAffinity>,
    ) -> Self {
        let nodes = state.nodes();
        let interner = state.interner();
        let mut s = NodeStatics {
            reject: Vec::with_capacity(nodes.len()),
            node_affinity_ok: Vec::with_capacity(nodes.len()),
            taints_tolerated: Vec::with_capacity(nodes.len()),
            taint_score: Vec::with_capacity(nodes.len()),
            node_affinity_score: Vec::with_capacity(nodes.len()),
            image_score: Vec::with_capacity(nodes.len()),
        };
        let scores_affinity =
            node_affinity::scores(pod) || added.is_some_and(|a| !a.preferred.is_empty());
        for node in nodes {
            let added_ok = added
                .and_then(|a| a.required.as_ref())
                .is_none_or(|r| r.matches(&node.labels, node.name_sym, interner));
            let affinity_ok = node_affinity::matches(pod, node, interner) && added_ok;
            let tolerated = taint_toleration::untolerated_taint(pod, node).is_none();
            let reject =
                static_rejection_with(pod, node, interner, unschedulable_taint, profile, added_ok);
            s.reject.push(reject);
            s.node_affinity_ok.push(affinity_ok);
            s.taints_tolerated.push(tolerated);
            s.taint_score.push(taint_toleration::score(pod, node));
            s.node_affinity_score.push(if scores_affinity {
                node_affinity::score(pod, node, interner)
                    + added.map_or(0, |a| {
                        a.preferred
                            .iter()
                            .filter(|(w, t)| {
                                *w != 0 && t.matches(&node.labels, node.name_sym, interner)
                            })
                            .map(|(w, _)| i64::from(*w))
                            .sum()
                    })
            } else {
                0
            });
            s.image_score
                .push(image_locality::score(pod, node, images, nodes.len()));
        }
        s
    }
}

/// The first rejection among the filters that read only the pod's spec and
/// the node (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, in
/// profile order), or `None` when all pass.
pub fn static_rejection(
    pod: &Pod,
    node: &Node,
    interner: &Interner,
    unschedulable_taint: &Taint,
) -> Option<Status> {
    let failed = |status: Status| (!status.is_success()).then_some(status);
    failed(node_unschedulable::filter(pod, node, unschedulable_taint))
        .or_else(|| failed(node_name::filter(pod, node)))
        .or_else(|| failed(taint_toleration::filter(pod, node)))
        .or_else(|| failed(node_affinity::filter(pod, node, interner)))
}

/// [`static_rejection`] as `profile` runs it: disabled filters pass, and
/// `added_ok` is whether the node matches addedAffinity's required terms
/// (checked before the pod's own, with a reason of its own).
pub fn static_rejection_with(
    pod: &Pod,
    node: &Node,
    interner: &Interner,
    unschedulable_taint: &Taint,
    profile: &Profile,
    added_ok: bool,
) -> Option<Status> {
    let on = |p: Plugin| profile.filters_with(p);
    let failed = |status: Status| (!status.is_success()).then_some(status);
    let unschedulable = || {
        on(Plugin::NodeUnschedulable)
            .then(|| failed(node_unschedulable::filter(pod, node, unschedulable_taint)))
            .flatten()
    };
    let name = || {
        on(Plugin::NodeName)
            .then(|| failed(node_name::filter(pod, node)))
            .flatten()
    };
    let taints = || {
        on(Plugin::TaintToleration)
            .then(|| failed(taint_toleration::filter(pod, node)))
            .flatten()
    };
    let affinity = || {
        if !on(Plugin::NodeAffinity) {
            return None;
        }
        if !added_ok {
            return Some(Status::reject(
                crate::status::Code::UnschedulableAndUnresolvable,
                Plugin::NodeAffinity,
                node_affinity::REASON_ENFORCED,
            ));
        }
        failed(node_affinity::filter(pod, node, interner))
    };
    unschedulable()
        .or_else(name)
        .or_else(taints)
        .or_else(affinity)
}

/// How many templates are kept: more distinct specs than this between two
/// pods of one template only cost a recomputation.
const CAPACITY: usize = 64;

/// Recently used [`NodeStatics`], most recent last.
#[derive(Debug, Clone, Default)]
pub struct StaticsCache {
    entries: Vec<(TemplateKey, Arc<NodeStatics>)>,
}

impl StaticsCache {
    /// Forgets everything (nodes changed).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The statics of a pod with the same template, if kept.
    pub fn get(&mut self, pod: &Pod) -> Option<Arc<NodeStatics>> {
        let i = self.entries.iter().rposition(|(k, _)| k.matches(pod))?;
        let entry = self.entries.remove(i);
        let statics = entry.1.clone();
        self.entries.push(entry);
        Some(statics)
    }

    /// Keeps the statics of a pod's template.
    pub fn insert(&mut self, pod: &Pod, statics: Arc<NodeStatics>) {
        if self.entries.len() >= CAPACITY {
            self.entries.remove(0);
        }
        self.entries.push((TemplateKey::of(pod), statics));
    }
}

pub use crate::names::UNSCHEDULABLE_TAINT_KEY;

/// The taint NodeUnschedulable checks tolerations against (its key is
/// interned by every state).
pub fn unschedulable_taint(state: &ClusterState) -> Taint {
    let interner = state.interner();
    let empty = interner
        .lookup("")
        .unwrap_or_else(|| Interner::new().intern(""));
    Taint {
        key: interner.lookup(UNSCHEDULABLE_TAINT_KEY).unwrap_or(empty),
        value: empty,
        effect: TaintEffect::NoSchedule,
    }
}

/// NodeResourcesFit's and NodeResourcesBalancedAllocation's raw scores of
/// every node for one request shape, recomputed only for nodes whose
/// accounting changed since: between two replicas of a workload only the
/// node the first was bound to changes.
#[derive(Debug, Clone, Default)]
pub struct ResourceScores {
    /// (non-zero CPU, non-zero memory, requested CPU, requested memory),
    /// and the other requests when the profile weighs other resources.
    shape: Option<(i64, i64, i64, i64, Option<Resources>)>,
    /// The node's accounting version each score was computed at.
    computed_at: Vec<u64>,
    /// LeastAllocated raw score per node.
    pub fit: Vec<i64>,
    /// BalancedAllocation raw score per node.
    pub balanced: Vec<i64>,
}

impl ResourceScores {
    /// Brings the scores of `nodes` up to date for `pod`; `versions` holds
    /// each node's accounting version.
    /// `profile` gives the scoring strategies and their resources (a cache
    /// serves one profile; switching clears it).
    pub fn refresh(
        &mut self,
        state: &ClusterState,
        pod: &Pod,
        nodes: &[NodeId],
        versions: &[u64],
        profile: &Profile,
    ) {
        let (cpu, mem) = pod.non_zero_ignoring_pod_level;
        let others = profile
            .fit
            .resources
            .iter()
            .chain(&profile.balanced)
            .any(|r| r.name != "cpu" && r.name != "memory")
            .then(|| pod.requests.clone());
        let shape = Some((
            cpu,
            mem,
            pod.requests.milli_cpu,
            pod.requests.memory,
            others,
        ));
        let count = state.nodes().len();
        if self.shape != shape || self.computed_at.len() != count {
            self.shape = shape;
            self.computed_at = vec![u64::MAX; count];
            self.fit = vec![0; count];
            self.balanced = vec![0; count];
        }
        for &n in nodes {
            let i = n.index();
            if self.computed_at[i] == versions[i] {
                continue;
            }
            let node = state.node(n);
            let info = state.node_info(n);
            let interner = state.interner();
            self.fit[i] = crate::plugins::node_resources_fit::score_with(
                &profile.fit,
                pod,
                node,
                info,
                interner,
            );
            self.balanced[i] = crate::plugins::node_resources_balanced_allocation::score_with(
                &profile.balanced,
                pod,
                node,
                info,
                interner,
            );
            self.computed_at[i] = versions[i];
        }
    }

    /// Forgets everything (nodes changed).
    pub fn clear(&mut self) {
        self.shape = None;
    }
}
