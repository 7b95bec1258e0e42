//! Every reason each node rejects a pod. kube-scheduler's Filter stops at
//! the first failing plugin (and InterPodAffinity at its first failing
//! check); here every plugin, and every check within it, is asked on its
//! own, always through the engine's own functions.

use std::collections::hash_map::Entry;

use k8s_openapi::api::core::v1 as core;
use podplace_engine::explain_support::{port_conflicts, untolerated_taints};
use podplace_engine::plugins::inter_pod_affinity::filter::{
    self as ipa_filter, satisfies_affinity, satisfies_anti_affinity,
    satisfies_existing_anti_affinity,
};
use podplace_engine::plugins::inter_pod_affinity::{
    REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
};
use podplace_engine::plugins::pod_topology_spread::{self, FilterState, REASON_MISSING_LABEL};
use podplace_engine::plugins::{
    node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable, taint_toleration,
};
use podplace_engine::state::terms::{existing_term_matches, incoming_term_matches};
use podplace_engine::status::{Code, Plugin, Status};
use podplace_engine::{ClusterState, NodeId, PodId, PodTerms, TermId};
use podplace_model::intern::{Interner, Sym};
use podplace_model::objects::{AffinityTerm, Node, Pod, Taint};
use podplace_model::selector::{LabelSelector, NodeSelector, NodeSelectorTerm, Requirement};
use podplace_model::terms::TermKind as HeldKind;
use podplace_world::{WhatIf, World as Base};
use rustc_hash::FxHashMap;
use serde_json::Value;
use smallvec::smallvec;

use crate::model::{
    AffinityMiss, Blocker, BlockerCount, Detail, DomainCount, LabelMiss, NodeVerdict, PortView,
    Reason, RuleOwner, Shared, ShortageView, TaintView, TermKind, TermView,
};
use crate::yaml::to_yaml;
use crate::MAX_BLOCKERS;

/// The terms an explanation refers to, each rendered once.
#[derive(Debug, Default)]
pub(crate) struct Terms {
    pub views: Vec<TermView>,
    index: FxHashMap<(TermKind, TermId, String), usize>,
}

/// Where a term is written: the API pod holding it, or the compiled form.
pub(crate) struct TermSource<'a> {
    pub api_pod: Option<&'a core::Pod>,
    pub kind: TermKind,
    pub index: usize,
    pub compiled: &'a AffinityTerm,
}

impl Terms {
    /// The index of a term, rendering it on first sight.
    pub fn intern(
        &mut self,
        id: TermId,
        workload: &str,
        source: TermSource<'_>,
        interner: &Interner,
    ) -> usize {
        let key = (source.kind, id, workload.to_string());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let value = source
            .api_pod
            .and_then(|p| api_term(p, source.kind, source.index))
            .unwrap_or_else(|| compiled_term(source.compiled, interner));
        let selector = value
            .get("labelSelector")
            .map(|s| to_yaml(s).trim_end().to_string())
            .unwrap_or_else(|| "null".to_string());
        let view = TermView {
            kind: source.kind,
            owner_workload: workload.to_string(),
            index: source.index,
            selector,
            topology_key: interner.resolve(source.compiled.topology_key).to_string(),
            yaml: to_yaml(&value),
        };
        let i = self.views.len();
        self.views.push(view);
        self.index.insert(key, i);
        i
    }
}

/// The API term at `index` of a pod's rule list, as JSON.
pub(crate) fn api_term(pod: &core::Pod, kind: TermKind, index: usize) -> Option<Value> {
    let affinity = pod.spec.as_ref()?.affinity.as_ref()?;
    let term = match kind {
        TermKind::RequiredAffinity => affinity
            .pod_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?
            .get(index)
            .cloned(),
        TermKind::RequiredAntiAffinity => affinity
            .pod_anti_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?
            .get(index)
            .cloned(),
        TermKind::PreferredAffinity => affinity
            .pod_affinity
            .as_ref()?
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()?
            .get(index)
            .map(|w| w.pod_affinity_term.clone()),
        TermKind::PreferredAntiAffinity => affinity
            .pod_anti_affinity
            .as_ref()?
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()?
            .get(index)
            .map(|w| w.pod_affinity_term.clone()),
    }?;
    serde_json::to_value(term).ok()
}

/// A requirement as written in a selector expression.
pub(crate) fn requirement_text(r: &Requirement, interner: &Interner) -> String {
    let list = |vs: &[Sym]| {
        vs.iter()
            .map(|v| interner.resolve(*v))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match r {
        Requirement::In(k, vs) => format!("{} In [{}]", interner.resolve(*k), list(vs)),
        Requirement::NotIn(k, vs) => format!("{} NotIn [{}]", interner.resolve(*k), list(vs)),
        Requirement::Exists(k) => format!("{} Exists", interner.resolve(*k)),
        Requirement::DoesNotExist(k) => format!("{} DoesNotExist", interner.resolve(*k)),
        Requirement::Gt(k, b) => format!("{} Gt {b}", interner.resolve(*k)),
        Requirement::Lt(k, b) => format!("{} Lt {b}", interner.resolve(*k)),
    }
}

/// The label key a requirement is about.
pub(crate) fn requirement_key(r: &Requirement) -> Sym {
    match r {
        Requirement::In(k, _)
        | Requirement::NotIn(k, _)
        | Requirement::Exists(k)
        | Requirement::DoesNotExist(k)
        | Requirement::Gt(k, _)
        | Requirement::Lt(k, _) => *k,
    }
}

/// A compiled selector back in API form (matchExpressions only).
pub(crate) fn selector_value(selector: &LabelSelector, interner: &Interner) -> Value {
    if selector.is_nothing() {
        return Value::Null;
    }
    let exprs: Vec<Value> = selector
        .requirements()
        .iter()
        .map(|r| {
            let (key, op, values): (Sym, &str, Vec<String>) = match r {
                Requirement::In(k, vs) => (
                    *k,
                    "In",
                    vs.iter()
                        .map(|v| interner.resolve(*v).to_string())
                        .collect(),
                ),
                Requirement::NotIn(k, vs) => (
                    *k,
                    "NotIn",
                    vs.iter()
                        .map(|v| interner.resolve(*v).to_string())
                        .collect(),
                ),
                Requirement::Exists(k) => (*k, "Exists", Vec::new()),
                Requirement::DoesNotExist(k) => (*k, "DoesNotExist", Vec::new()),
                Requirement::Gt(k, b) => (*k, "Gt", vec![b.to_string()]),
                Requirement::Lt(k, b) => (*k, "Lt", vec![b.to_string()]),
            };
            let mut e = serde_json::json!({"key": interner.resolve(key), "operator": op});
            if !values.is_empty() {
                e["values"] = serde_json::json!(values);
            }
            e
        })
        .collect();
    if exprs.is_empty() {
        serde_json::json!({})
    } else {
        serde_json::json!({ "matchExpressions": exprs })
    }
}

/// A compiled term back in API form, for pods whose API object is unknown.
fn compiled_term(term: &AffinityTerm, interner: &Interner) -> Value {
    let mut v = serde_json::json!({
        "labelSelector": selector_value(&term.selector, interner),
        "topologyKey": interner.resolve(term.topology_key),
    });
    if !term.namespaces.is_empty() {
        v["namespaces"] = serde_json::json!(term
            .namespaces
            .iter()
            .map(|n| interner.resolve(*n))
            .collect::<Vec<_>>());
    }
    if !term.namespace_selector.is_nothing() {
        v["namespaceSelector"] = selector_value(&term.namespace_selector, interner);
    }
    v
}

/// What the analysis prepared once for all nodes.
pub(crate) struct Prepared {
    unschedulable_taint: Taint,
    narrowed: node_affinity::PreFilter,
    spread: Option<FilterState>,
    spread_single: Vec<FilterState>,
    spread_domains: Vec<Vec<DomainCount>>,
    /// InterPodAffinity's PreFilter state (`None`: skipped).
    pub ipa: Option<ipa_filter::State>,
    /// Per required affinity term: pods matching it anywhere.
    pub affinity_anywhere: Vec<i64>,
    /// The pod's terms as the cluster's shared term ids.
    pub terms: PodTerms,
    /// Per required anti-affinity term: pods matching it anywhere, and
    /// whether the pod matches it itself.
    pub anti_anywhere: Vec<(i64, bool)>,
    /// Per preferred affinity term: pods matching it anywhere.
    pub preferred_affinity_anywhere: Vec<i64>,
    /// Per preferred anti-affinity term: pods matching it anywhere.
    pub preferred_anti_anywhere: Vec<i64>,
    /// The volume and claim plugins' PreFilter states (or the PreFilter
    /// rejection).
    pub storage: crate::storage::Prepared,
    /// The serving profile's `addedAffinity` required terms, when its
    /// NodeAffinity filter runs (see [`Enforced`]).
    enforced: Option<Enforced>,
    /// The serving profile's enabled Filter plugins (`None`: no profile
    /// serves the pod, every plugin is asked). kube-scheduler never asks a
    /// disabled plugin, so a reason from one would blame the wrong thing.
    filters: Option<Vec<Plugin>>,
}

impl Prepared {
    /// Whether the serving profile runs the Filter plugin named `plugin`
    /// (a reason without a plugin name is always kept).
    fn filters_with(&self, plugin: &str) -> bool {
        plugin.is_empty()
            || self
                .filters
                .as_ref()
                .is_none_or(|f| f.iter().any(|p| p.name() == plugin))
    }
}

/// The required terms of the serving profile's `addedAffinity`, which
/// kube-scheduler's NodeAffinity filter checks on every node before the
/// pod's own rules: the node is rejected as "scheduler-enforced", whatever
/// the pod asks for.
struct Enforced {
    /// The profile's schedulerName.
    profile: String,
    /// The terms, compiled against `interner`.
    required: NodeSelector,
    /// The state's names plus the ones only addedAffinity uses (a node
    /// label value the state does not know can only be missed).
    interner: Interner,
}

/// Pods matching one term anywhere (on nodes carrying its topology key).
fn anywhere(cluster: &ClusterState, t: TermId) -> i64 {
    let term = cluster.term(t);
    cluster
        .matching_counts(&[term])
        .domains(term.topology_key)
        .map_or(0, |d| d.values().sum())
}

/// Runs the PreFilters the explanation needs on the what-if (they fill its
/// scheduler cache, hence `&mut`). The pod is in the what-if's state
/// (pending), so its terms are registered and its groups kept there.
pub(crate) fn prepare(what_if: &mut WhatIf<'_>, pod: &Pod) -> Prepared {
    let storage = crate::storage::prepare(what_if, pod);
    let (cluster, cache) = what_if.parts();
    let unschedulable_taint = podplace_engine::statics::unschedulable_taint(cluster);
    let spread = pod_topology_spread::pre_filter_with(cluster, cache, pod);
    let spread_single = spread.as_ref().map(FilterState::split).unwrap_or_default();
    let spread_domains = spread
        .as_ref()
        .map(|s| {
            (0..s.constraints.len())
                .map(|i| {
                    let mut d: Vec<DomainCount> = s
                        .domain_counts(i, cluster)
                        .into_iter()
                        .map(|(v, n)| DomainCount {
                            domain: cluster.interner().resolve(v).to_string(),
                            pods: n,
                        })
                        .collect();
                    d.sort_by(|a, b| a.pods.cmp(&b.pods).then_with(|| a.domain.cmp(&b.domain)));
                    d
                })
                .collect()
        })
        .unwrap_or_default();
    let ipa = ipa_filter::pre_filter_with(cluster, cache, pod);
    let filters = cache
        .serving(&pod.scheduler_name)
        .map(|c| c.profile().filters.clone());
    let enforced = cache
        .serving(&pod.scheduler_name)
        .map(|c| c.profile().clone())
        .filter(|p| p.filters_with(Plugin::NodeAffinity))
        .and_then(|p| {
            let required = p
                .added_affinity
                .as_ref()?
                .required_during_scheduling_ignored_during_execution
                .as_ref()?;
            let mut interner = cluster.interner().clone();
            Some(Enforced {
                profile: p.scheduler_name.clone(),
                required: NodeSelector::compile(required, &mut interner),
                interner,
            })
        });
    let terms = cluster.lookup_pod_terms(pod).unwrap_or_default();
    let affinity_anywhere = terms
        .required_affinity
        .iter()
        .map(|&t| anywhere(cluster, t))
        .collect();
    let anti_anywhere = terms
        .required_anti_affinity
        .iter()
        .map(|&t| {
            let own = incoming_term_matches(
                cluster.term(t),
                pod,
                cluster.namespaces(),
                cluster.interner(),
            );
            (anywhere(cluster, t), own)
        })
        .collect();
    let preferred_affinity_anywhere = terms
        .preferred_affinity
        .iter()
        .map(|&(t, _)| anywhere(cluster, t))
        .collect();
    let preferred_anti_anywhere = terms
        .preferred_anti_affinity
        .iter()
        .map(|&(t, _)| anywhere(cluster, t))
        .collect();
    Prepared {
        storage,
        terms,
        anti_anywhere,
        preferred_affinity_anywhere,
        preferred_anti_anywhere,
        unschedulable_taint,
        narrowed: node_affinity::pre_filter(pod),
        spread,
        spread_single,
        spread_domains,
        ipa,
        affinity_anywhere,
        enforced,
        filters,
    }
}

/// Existing holders of a matching required anti-affinity term per
/// (topology key, value): (holder, term, the term's position in its list).
type HoldersByDomain = FxHashMap<(Sym, Sym), Vec<(PodId, TermId, usize)>>;

/// Blockers of a node (or of one domain): the first few in full, all counted.
#[derive(Debug, Clone, Default)]
struct Blocked {
    blockers: Shared<Blocker>,
    counts: Shared<BlockerCount>,
}

impl Blocked {
    /// `other`'s blockers after these (up to [`MAX_BLOCKERS`]) and its
    /// counts after these. A node blocked in one domain only (the usual
    /// case) shares that domain's lists instead of copying them.
    fn extend(&mut self, other: &Blocked) {
        if other.blockers.is_empty() && other.counts.is_empty() {
            return;
        }
        if self.blockers.is_empty() && self.counts.is_empty() {
            *self = other.clone();
            return;
        }
        let room = MAX_BLOCKERS.saturating_sub(self.blockers.len());
        self.blockers = self
            .blockers
            .iter()
            .chain(other.blockers.iter().take(room))
            .cloned()
            .collect();
        self.counts = self
            .counts
            .iter()
            .chain(other.counts.iter())
            .cloned()
            .collect();
    }
}

/// Pods blocking by domain, built on first need.
#[derive(Default)]
struct BlockerIndex {
    /// Blockers per (own term, domain value), computed once per domain.
    incoming_domains: FxHashMap<(usize, Sym), Blocked>,
    /// Blockers per (topology key, value), computed once per domain.
    existing_domains: FxHashMap<(Sym, Sym), Blocked>,
    /// Existing pods' required anti-affinity matching the pod: (key, value) → (holder, term).
    existing: Option<HoldersByDomain>,
    /// The pod's own required anti-affinity terms: per term, value → matching pods.
    incoming: Option<Vec<FxHashMap<Sym, Vec<PodId>>>>,
}

/// Everything needed to explain nodes for one pod.
pub(crate) struct Analyzer<'a> {
    pub cluster: &'a ClusterState,
    pub base: &'a Base,
    pub pod: &'a Pod,
    /// The pod's API object (its terms as written).
    pub api_pod: Option<&'a core::Pod>,
    /// The pod's workload, `Kind/ns/name`.
    pub workload: &'a str,
    pub prepared: &'a Prepared,
    pub terms: &'a mut Terms,
    index: BlockerIndex,
    workload_cache: FxHashMap<PodId, String>,
}

fn code_str(code: Code) -> &'static str {
    code.as_str()
}

impl<'a> Analyzer<'a> {
    /// An analyzer for one pod.
    pub fn new(
        cluster: &'a ClusterState,
        base: &'a Base,
        pod: &'a Pod,
        api_pod: Option<&'a core::Pod>,
        workload: &'a str,
        prepared: &'a Prepared,
        terms: &'a mut Terms,
    ) -> Self {
        Analyzer {
            cluster,
            base,
            pod,
            api_pod,
            workload,
            prepared,
            terms,
            index: BlockerIndex::default(),
            workload_cache: FxHashMap::default(),
        }
    }

    /// Every node that rejects the pod, each with every reason.
    pub fn verdicts(&mut self) -> Vec<(NodeId, NodeVerdict)> {
        let nodes: Vec<NodeId> = self.cluster.node_ids().collect();
        nodes
            .into_iter()
            .filter_map(|n| {
                let reasons = self.reasons(n);
                (!reasons.is_empty()).then(|| {
                    (
                        n,
                        NodeVerdict {
                            node: self.cluster.node(n).name.to_string(),
                            reasons,
                        },
                    )
                })
            })
            .collect()
    }

    fn reason(status: &Status, detail: Detail) -> Reason {
        Reason {
            plugin: status.plugin.map_or("", |p| p.name()),
            code: code_str(status.code),
            message: status
                .reasons
                .first()
                .map(|r| r.to_string())
                .unwrap_or_default(),
            detail,
            blockers: Shared::default(),
            blockers_total: 0,
            counts: Shared::default(),
        }
    }

    /// Every reason one node rejects the pod, in profile order.
    pub fn reasons(&mut self, id: NodeId) -> Vec<Reason> {
        let cluster = self.cluster;
        let pod = self.pod;
        let node = cluster.node(id);
        let info = cluster.node_info(id);
        let interner = cluster.interner();
        let mut out = Vec::new();

        if self.prepared.narrowed == node_affinity::PreFilter::Conflict
            && self.prepared.filters_with(Plugin::NodeAffinity.name())
        {
            out.push(Reason {
                plugin: "NodeAffinity",
                code: code_str(Code::UnschedulableAndUnresolvable),
                message: node_affinity::REASON_CONFLICT.to_string(),
                detail: Detail::Conflict,
                blockers: Shared::default(),
                blockers_total: 0,
                counts: Shared::default(),
            });
            return out;
        }

        let s = node_unschedulable::filter(pod, node, &self.prepared.unschedulable_taint);
        if !s.is_success() {
            out.push(Self::reason(&s, Detail::Cordoned));
        }
        let s = node_name::filter(pod, node);
        if !s.is_success() {
            out.push(Self::reason(
                &s,
                Detail::NodeName {
                    wanted: pod.node_name.as_deref().unwrap_or("").to_string(),
                },
            ));
        }
        let s = taint_toleration::filter(pod, node);
        if !s.is_success() {
            let taints = untolerated_taints(pod, node)
                .into_iter()
                .map(|t| TaintView {
                    key: interner.resolve(t.key).to_string(),
                    value: interner.resolve(t.value).to_string(),
                    effect: t.effect.as_str().to_string(),
                })
                .collect();
            out.push(Self::reason(&s, Detail::Taints { taints }));
        }
        if let Some(enforced) = &self.prepared.enforced {
            let names = &enforced.interner;
            if !enforced
                .required
                .matches(&node.labels, node.name_sym, names)
            {
                out.push(Reason {
                    plugin: "NodeAffinity",
                    code: code_str(Code::UnschedulableAndUnresolvable),
                    message: node_affinity::REASON_ENFORCED.to_string(),
                    detail: Detail::EnforcedAffinity {
                        profile: enforced.profile.clone(),
                        terms: selector_misses(&enforced.required, node, names),
                    },
                    blockers: Shared::default(),
                    blockers_total: 0,
                    counts: Shared::default(),
                });
            }
        }
        let excluded = matches!(&self.prepared.narrowed,
            node_affinity::PreFilter::Only(names) if !names.contains(&node.name_sym));
        let s = node_affinity::filter(pod, node, interner);
        if !s.is_success() || excluded {
            let (node_selector, terms) = node_affinity_misses(pod, node, interner);
            let mut r = Self::reason(
                &s,
                Detail::NodeAffinity {
                    node_selector,
                    terms,
                    excluded_by_name: excluded,
                },
            );
            if excluded {
                r.plugin = "NodeAffinity";
                r.code = code_str(Code::UnschedulableAndUnresolvable);
                r.message = node_affinity::REASON_EXCLUDED.to_string();
            }
            out.push(r);
        }
        let wildcard = interner.lookup("0.0.0.0").or_else(|| interner.lookup(""));
        if let Some(wildcard) = wildcard {
            let s = node_ports::filter(pod, info, wildcard);
            if !s.is_success() {
                let ports = port_conflicts(cluster, pod, id)
                    .into_iter()
                    .map(|c| PortView {
                        port: c.wanted.port,
                        protocol: interner.resolve(c.wanted.protocol).to_string(),
                        ip: interner.resolve(c.wanted.ip).to_string(),
                        used_by: self.base.pod_name(c.holder),
                    })
                    .collect();
                out.push(Self::reason(&s, Detail::Ports { ports }));
            }
        }
        let s = node_resources_fit::filter(pod, node, info, interner);
        if !s.is_success() {
            for sh in node_resources_fit::shortages(pod, node, info, interner) {
                let resource = if sh.reason == "Too many pods" {
                    "pods".to_string()
                } else {
                    sh.reason.trim_start_matches("Insufficient ").to_string()
                };
                let free = sh.capacity - sh.used;
                out.push(Reason {
                    plugin: "NodeResourcesFit",
                    code: code_str(if sh.unresolvable {
                        Code::UnschedulableAndUnresolvable
                    } else {
                        Code::Unschedulable
                    }),
                    message: sh.reason.to_string(),
                    detail: Detail::Resource(ShortageView {
                        resource,
                        requested: sh.requested,
                        allocatable: sh.capacity,
                        used: sh.used,
                        free,
                        short_by: sh.requested - free,
                        exceeds_node: sh.unresolvable,
                    }),
                    blockers: Shared::default(),
                    blockers_total: 0,
                    counts: Shared::default(),
                });
            }
        }
        out.extend(crate::storage::volume_reasons(
            cluster,
            self.base,
            pod,
            &self.prepared.storage,
            id,
        ));
        if let Some(state) = &self.prepared.spread {
            for (i, single) in self.prepared.spread_single.iter().enumerate() {
                let s = pod_topology_spread::filter(single, cluster, id);
                if s.is_success() {
                    continue;
                }
                let c = &state.constraints[i];
                let key = c.spec.topology_key;
                let detail = if s.reasons.iter().any(|r| r == REASON_MISSING_LABEL) {
                    Detail::SpreadMissingLabel {
                        constraint: i,
                        topology_key: interner.resolve(key).to_string(),
                    }
                } else {
                    let value = node.labels.get(key);
                    let matching = value.map_or(0, |v| state.domain_count(i, v, cluster));
                    let min = state.min_match(i);
                    let all = &self.prepared.spread_domains[i];
                    Detail::SpreadSkew {
                        constraint: i,
                        topology_key: interner.resolve(key).to_string(),
                        domain: value
                            .map(|v| interner.resolve(v).to_string())
                            .unwrap_or_default(),
                        matching,
                        self_match: c.self_match,
                        min,
                        min_domains: c.spec.min_domains.unwrap_or(1),
                        skew: matching + i64::from(c.self_match) - min,
                        max_skew: c.spec.max_skew,
                        domains: all.iter().take(12).cloned().collect(),
                        domain_total: all.len(),
                    }
                };
                out.push(Self::reason(&s, detail));
            }
        }
        if let Some(state) = &self.prepared.ipa {
            if !satisfies_affinity(state, cluster, node) {
                let misses = self.affinity_misses(state, node);
                out.push(Reason {
                    plugin: "InterPodAffinity",
                    code: code_str(Code::UnschedulableAndUnresolvable),
                    message: REASON_AFFINITY.to_string(),
                    detail: Detail::PodAffinity { misses },
                    blockers: Shared::default(),
                    blockers_total: 0,
                    counts: Shared::default(),
                });
            }
            if !satisfies_anti_affinity(state, cluster, node) {
                let blockers = self.incoming_blockers(state, node);
                out.push(with_blockers(
                    Reason {
                        plugin: "InterPodAffinity",
                        code: code_str(Code::Unschedulable),
                        message: REASON_ANTI_AFFINITY.to_string(),
                        detail: Detail::PodAntiAffinity,
                        blockers: Shared::default(),
                        blockers_total: 0,
                        counts: Shared::default(),
                    },
                    blockers,
                ));
            }
            if !satisfies_existing_anti_affinity(state, node) {
                let blockers = self.existing_blockers(state, node);
                out.push(with_blockers(
                    Reason {
                        plugin: "InterPodAffinity",
                        code: code_str(Code::Unschedulable),
                        message: REASON_EXISTING_ANTI_AFFINITY.to_string(),
                        detail: Detail::ExistingAntiAffinity,
                        blockers: Shared::default(),
                        blockers_total: 0,
                        counts: Shared::default(),
                    },
                    blockers,
                ));
            }
        }
        out.extend(crate::storage::claim_reasons(
            cluster,
            pod,
            &self.prepared.storage,
            id,
        ));
        out.retain(|r| self.prepared.filters_with(r.plugin));
        out
    }

    fn workload_of(&mut self, id: PodId) -> String {
        if let Some(w) = self.workload_cache.get(&id) {
            return w.clone();
        }
        let w = self.base.workload(id).to_string();
        self.workload_cache.insert(id, w.clone());
        w
    }

    /// The incoming pod's own term, by its position in its rule list.
    pub fn incoming_term(&mut self, kind: TermKind, index: usize) -> Option<usize> {
        let state_terms = &self.prepared.terms;
        let (id, compiled) = match kind {
            TermKind::RequiredAffinity => (
                *state_terms.required_affinity.get(index)?,
                self.pod.affinity.required_affinity.get(index)?,
            ),
            TermKind::RequiredAntiAffinity => (
                *state_terms.required_anti_affinity.get(index)?,
                self.pod.affinity.required_anti_affinity.get(index)?,
            ),
            TermKind::PreferredAffinity => (
                state_terms.preferred_affinity.get(index)?.0,
                &self.pod.affinity.preferred_affinity.get(index)?.term,
            ),
            TermKind::PreferredAntiAffinity => (
                state_terms.preferred_anti_affinity.get(index)?.0,
                &self.pod.affinity.preferred_anti_affinity.get(index)?.term,
            ),
        };
        Some(self.terms.intern(
            id,
            self.workload,
            TermSource {
                api_pod: self.api_pod,
                kind,
                index,
                compiled,
            },
            self.cluster.interner(),
        ))
    }

    fn affinity_misses(&mut self, state: &ipa_filter::State, node: &Node) -> Vec<AffinityMiss> {
        let mut misses = Vec::new();
        for (i, &t) in state.terms.required_affinity.iter().enumerate() {
            let key = self.cluster.term(t).topology_key;
            let value = node.labels.get(key);
            let here = value
                .map(|v| state.affinity.get(&(key, v)).copied().unwrap_or(0))
                .unwrap_or(0);
            if value.is_some() && here > 0 {
                continue;
            }
            let Some(term) = self.incoming_term(TermKind::RequiredAffinity, i) else {
                continue;
            };
            misses.push(AffinityMiss {
                term,
                domain: value.map(|v| self.cluster.interner().resolve(v).to_string()),
                matching_here: here,
                matching_anywhere: self.prepared.affinity_anywhere.get(i).copied().unwrap_or(0),
            });
        }
        misses
    }

    fn incoming_blockers(&mut self, state: &ipa_filter::State, node: &Node) -> Blocked {
        if self.index.incoming.is_none() {
            let cluster = self.cluster;
            let mut per_term = Vec::new();
            for &t in &state.terms.required_anti_affinity {
                let term = cluster.term(t);
                let mut by_value: FxHashMap<Sym, Vec<PodId>> = FxHashMap::default();
                // Only the pods carrying the selector's required pairs can
                // match (the label index), in id order as a walk would be.
                let pairs = term
                    .selector
                    .requirements()
                    .iter()
                    .filter_map(Requirement::necessary_pair);
                for (other, n) in cluster.bound_pods_carrying(pairs) {
                    let Some(v) = cluster.node(n).labels.get(term.topology_key) else {
                        continue;
                    };
                    if incoming_term_matches(
                        term,
                        cluster.pod(other),
                        cluster.namespaces(),
                        cluster.interner(),
                    ) {
                        by_value.entry(v).or_default().push(other);
                    }
                }
                per_term.push(by_value);
            }
            self.index.incoming = Some(per_term);
        }
        let mut out = Blocked::default();
        for (i, &t) in state.terms.required_anti_affinity.iter().enumerate() {
            let key = self.cluster.term(t).topology_key;
            let Some(v) = node.labels.get(key) else {
                continue;
            };
            if !self.index.incoming_domains.contains_key(&(i, v)) {
                let pods: Vec<PodId> = self
                    .index
                    .incoming
                    .as_ref()
                    .and_then(|per_term| per_term[i].get(&v))
                    .cloned()
                    .unwrap_or_default();
                let domain = self.domain_blockers(
                    pods.into_iter().map(|p| (p, None)),
                    v,
                    RuleOwner::Incoming,
                    Some(i),
                );
                self.index.incoming_domains.insert((i, v), domain);
            }
            out.extend(&self.index.incoming_domains[&(i, v)]);
        }
        out
    }

    fn existing_blockers(&mut self, state: &ipa_filter::State, node: &Node) -> Blocked {
        if self.index.existing.is_none() {
            let cluster = self.cluster;
            let mut map = HoldersByDomain::default();
            for group in cluster.held_groups_for(&self.pod.labels) {
                if group.kind != HeldKind::RequiredAntiAffinity {
                    continue;
                }
                let term = cluster.term(group.term);
                if !existing_term_matches(
                    term,
                    self.pod,
                    &state.namespace_labels,
                    cluster.interner(),
                ) {
                    continue;
                }
                for &holder in &group.holders {
                    let Some(entry) = cluster.pod_entry(holder) else {
                        continue;
                    };
                    let Some(n) = entry.node else { continue };
                    let Some(v) = cluster.node(n).labels.get(term.topology_key) else {
                        continue;
                    };
                    let index = entry
                        .terms
                        .required_anti_affinity
                        .iter()
                        .position(|&t| t == group.term)
                        .unwrap_or(0);
                    map.entry((term.topology_key, v))
                        .or_default()
                        .push((holder, group.term, index));
                }
            }
            for list in map.values_mut() {
                list.sort();
            }
            self.index.existing = Some(map);
        }
        let mut out = Blocked::default();
        // Domains in label-key order: what is listed first must not hang on
        // the order the world interned its strings in.
        let interner = self.cluster.interner();
        let mut pairs: Vec<_> = node.labels.iter().collect();
        pairs.sort_by(|a, b| interner.resolve(a.0).cmp(interner.resolve(b.0)));
        for pair in pairs {
            if !self.index.existing_domains.contains_key(&pair) {
                let Some(holders) = self.index.existing.as_ref().and_then(|m| m.get(&pair)) else {
                    continue;
                };
                let holders: Vec<(PodId, Option<(TermId, usize)>)> = holders
                    .iter()
                    .map(|&(h, t, index)| (h, Some((t, index))))
                    .collect();
                let domain =
                    self.domain_blockers(holders.into_iter(), pair.1, RuleOwner::Existing, None);
                self.index.existing_domains.insert(pair, domain);
            }
            out.extend(&self.index.existing_domains[&pair]);
        }
        out
    }

    /// The blockers of one domain: the first [`MAX_BLOCKERS`] in full, and
    /// all of them counted per workload and term. `incoming` is the pod's own
    /// term index; existing holders carry (term, index in their list).
    fn domain_blockers(
        &mut self,
        pods: impl Iterator<Item = (PodId, Option<(TermId, usize)>)>,
        domain: Sym,
        owner: RuleOwner,
        incoming: Option<usize>,
    ) -> Blocked {
        let (mut blockers, mut counts): (Vec<Blocker>, Vec<BlockerCount>) =
            (Vec::new(), Vec::new());
        // Where each (term, workload) is counted in `counts`, which keeps
        // the order they first appear in.
        let mut at: FxHashMap<(usize, String), usize> = FxHashMap::default();
        let own_term = incoming.and_then(|i| self.incoming_term(TermKind::RequiredAntiAffinity, i));
        for (p, held) in pods {
            let workload = self.workload_of(p);
            let term = match held {
                None => own_term,
                Some((t, index)) => {
                    let cluster = self.cluster;
                    let compiled = cluster.pod(p).affinity.required_anti_affinity.get(index);
                    compiled.map(|compiled| {
                        self.terms.intern(
                            t,
                            &workload,
                            TermSource {
                                api_pod: self.base.api_pod(p),
                                kind: TermKind::RequiredAntiAffinity,
                                index,
                                compiled,
                            },
                            cluster.interner(),
                        )
                    })
                }
            };
            let Some(term) = term else { continue };
            match at.entry((term, workload)) {
                Entry::Occupied(e) => counts[*e.get()].pods += 1,
                Entry::Vacant(e) => {
                    counts.push(BlockerCount {
                        workload: e.key().1.clone(),
                        term,
                        rule_owner: owner,
                        domain: self.cluster.interner().resolve(domain).to_string(),
                        pods: 1,
                    });
                    e.insert(counts.len() - 1);
                }
            }
            if blockers.len() < MAX_BLOCKERS {
                blockers.push(self.blocker(p, term, domain, owner));
            }
        }
        Blocked {
            blockers: blockers.into(),
            counts: counts.into(),
        }
    }

    fn blocker(&mut self, pod: PodId, term: usize, domain: Sym, owner: RuleOwner) -> Blocker {
        let cluster = self.cluster;
        Blocker {
            pod: self.base.pod_name(pod),
            workload: self.workload_of(pod),
            node: cluster
                .pod_node(pod)
                .map(|n| cluster.node(n).name.to_string())
                .unwrap_or_default(),
            term,
            domain: cluster.interner().resolve(domain).to_string(),
            rule_owner: owner,
        }
    }
}

fn with_blockers(mut reason: Reason, blocked: Blocked) -> Reason {
    reason.blockers_total = blocked.counts.iter().map(|c| c.pods).sum();
    reason.blockers = blocked.blockers;
    reason.counts = blocked.counts;
    reason
}

/// The nodeSelector entries and, per required node affinity term, the
/// requirements the node fails (each asked of the selector code alone).
fn node_affinity_misses(
    pod: &Pod,
    node: &Node,
    interner: &Interner,
) -> (Vec<LabelMiss>, Vec<(usize, Vec<LabelMiss>)>) {
    let value_of = |k: Sym| node.labels.get(k).map(|v| interner.resolve(v).to_string());
    let holds =
        |r: &Requirement| LabelSelector::All(smallvec![r.clone()]).matches(&node.labels, interner);
    let selector = pod
        .node_selector
        .iter()
        .filter(|r| !holds(r))
        .map(|r| {
            let key = requirement_key(r);
            let text = match r {
                Requirement::In(k, vs) if vs.len() == 1 => {
                    format!("{}={}", interner.resolve(*k), interner.resolve(vs[0]))
                }
                other => requirement_text(other, interner),
            };
            LabelMiss {
                requirement: text,
                key: interner.resolve(key).to_string(),
                node_value: value_of(key),
            }
        })
        .collect();
    let terms = pod
        .required_node_affinity
        .as_ref()
        .map(|required| selector_misses(required, node, interner))
        .unwrap_or_default();
    (selector, terms)
}

/// Per term of a node selector that the node fails (all of them, when the
/// selector rejects the node, since terms are ORed): its index and the
/// requirements it fails, each asked of the selector code alone. Pods'
/// required node affinity, PersistentVolumes' node affinity, StorageClass
/// `allowedTopologies` and ResourceClaim allocations share it.
pub(crate) fn selector_misses(
    selector: &NodeSelector,
    node: &Node,
    interner: &Interner,
) -> Vec<(usize, Vec<LabelMiss>)> {
    let value_of = |k: Sym| node.labels.get(k).map(|v| interner.resolve(v).to_string());
    let holds =
        |r: &Requirement| LabelSelector::All(smallvec![r.clone()]).matches(&node.labels, interner);
    let mut terms = Vec::new();
    for (i, term) in selector.terms.iter().enumerate() {
        if term.matches(&node.labels, node.name_sym, interner) {
            continue;
        }
        let mut misses = Vec::new();
        if term.never {
            misses.push(LabelMiss {
                requirement: "an empty or malformed term (matches no node)".to_string(),
                key: String::new(),
                node_value: None,
            });
        }
        for r in &term.labels {
            if !holds(r) {
                let key = requirement_key(r);
                misses.push(LabelMiss {
                    requirement: requirement_text(r, interner),
                    key: interner.resolve(key).to_string(),
                    node_value: value_of(key),
                });
            }
        }
        for r in &term.names {
            let alone = NodeSelectorTerm {
                labels: smallvec![],
                names: smallvec![r.clone()],
                never: false,
            };
            if !alone.matches(&node.labels, node.name_sym, interner) {
                misses.push(LabelMiss {
                    requirement: requirement_text(r, interner),
                    key: "metadata.name".to_string(),
                    node_value: Some(node.name.to_string()),
                });
            }
        }
        terms.push((i, misses));
    }
    terms
}
